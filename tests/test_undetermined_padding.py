"""A load without padding_mode (cuTile's default, UNDETERMINED) reads 0 outside the array in the
fast CPU mode, and a poison in the faithful mode: a store that writes one into its array is a
TileLaunchError at the store's line naming the load's line (cuda_c/include/tilepy/poison.h)."""
import numpy as np
import pytest

import tilepy as ct
from kernels_util import marker_loc

HERE = __file__


@ct.kernel
def row_max(x, out, TN: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i, 0), shape=(1, TN))                 # LOAD
    ct.store(out, index=(i,), tile=ct.max(t, axis=1))           # STORE


@ct.kernel
def row_sum_f32(x, out, TN: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i, 0), shape=(1, TN)).astype(ct.float32)
    ct.store(out, index=(i,), tile=ct.sum(t, axis=1))


@ct.kernel
def copy_or_max(x, out, TN: ct.Constant[int], PAD: ct.Constant[int]):
    i = ct.bid(0)
    if PAD:
        t = ct.load(x, index=(i, 0), shape=(1, TN), padding_mode=ct.PaddingMode.NEG_INF)
        ct.store(out, index=(i,), tile=ct.max(t, axis=1))
    else:
        ct.store(out, index=(i, 0), tile=ct.load(x, index=(i, 0), shape=(1, TN)))


def _negative_rows(dtype):
    return -np.arange(1, 1 + 4 * 5).reshape(4, 5).astype(dtype)       # rows of 5, tiles of 8


def _faithful(kernel, args):
    with ct.cpu_mode("faithful"):
        ct.launch(None, (4,), kernel, args)


def test_the_row_max_of_negative_rows_is_reported_in_the_faithful_mode():
    x = _negative_rows(np.float32)
    out = np.ones(4, np.float32)
    ct.launch(None, (4,), row_max, (x, out, 8))          # the fast mode reads 0 (README says so)
    assert (out == 0).all()
    with pytest.raises(ct.TileLaunchError, match="undetermined padding") as info:
        _faithful(row_max, (x, out, 8))
    line, col = marker_loc(HERE, "STORE", "ct.store")
    assert (info.value.loc.file, info.value.loc.line, info.value.loc.col) == (HERE, line, col)
    load_line = marker_loc(HERE, "LOAD", "ct.load")[0]
    assert f"the load at {HERE}:{load_line} " in str(info.value)


@pytest.mark.parametrize("dtype", [np.int32, np.float16])
def test_integers_and_halves_are_poisoned_too(dtype):
    """0x7ead.... for a 32-bit integer (a max picks it); an f16 NaN keeps its payload through
    astype and sum."""
    x, out = _negative_rows(dtype), np.zeros(4, dtype)
    kernel, out = (row_max, out) if dtype == np.int32 else (row_sum_f32, out.astype(np.float32))
    with pytest.raises(ct.TileLaunchError, match="undetermined padding of the load at"):
        _faithful(kernel, (x, out, 8))


def test_padding_that_is_not_stored_or_is_determined_is_no_error():
    x = _negative_rows(np.float32)
    out = np.zeros_like(x)
    _faithful(copy_or_max, (x, out, 8, 0))              # the padded lanes fall outside `out`
    np.testing.assert_array_equal(out, x)
    m = np.zeros(4, np.float32)
    _faithful(copy_or_max, (x, m, 8, 1))
    np.testing.assert_array_equal(m, x.max(axis=1))


def test_a_nan_of_the_data_is_not_taken_for_a_poison():
    """A NaN whose payload has a site's bits (0x7fc1....: site 1) but not a poison's low bits
    is data (a NaN payload, a bitcast integer): copied through a kernel with an undetermined
    load, it is stored without a report (the fuzzer's random constants met this)."""
    x = np.array([0x7FC11234, 0x7FC7BEEF, 0x7FFFFFFF, 0x3F800000, 0xFFC20001] * 4,
                 np.uint32).view(np.float32).reshape(4, 5)
    out = np.zeros_like(x)
    _faithful(copy_or_max, (x, out, 8, 0))
    assert out.view(np.uint32).tolist() == x.view(np.uint32).tolist()
