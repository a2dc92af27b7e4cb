"""Shapes and strides of multi-dimensional, non-contiguous arrays reach the kernel in the right
order (launch packing): 3-d views with two or three non-unit strides, read by tile loads and
gathers and written by tile stores and scatters, in the interpreter and both CPU modes."""
import numpy as np
import pytest

import tilepy as ct
from guarded import MODES, launch


@ct.kernel
def strided(x, y, w, g):
    t = ct.load(x, (0, 0, 0), (4, 4, 8), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (0, 0, 0), t * 2.0 + 1.0)
    ct.store(w, (0, 0, 0), ct.permute(t, (2, 1, 0)))
    i = ct.arange(8, dtype=ct.int32)
    a = ct.broadcast_to(ct.reshape(i % 3, (8, 1)), (8, 4))
    b = ct.broadcast_to(ct.reshape(ct.arange(4, dtype=ct.int32), (1, 4)), (8, 4))
    c = ct.broadcast_to(ct.reshape(7 - i, (8, 1)), (8, 4))
    ct.scatter(g, (a, b, c), ct.gather(x, (a, b, c)) - 5.0)


@pytest.mark.parametrize("mode", MODES)
def test_three_dimensional_views_keep_their_strides(mode):
    rng = np.random.default_rng(11)
    xb = rng.standard_normal((6, 8, 16)).astype(np.float32)
    x = xb[::2, ::2, :8]                         # (3, 4, 8), strides (2*8*16, 2*16, 1) elements
    yb = np.zeros((3, 5, 8), np.float32)
    y = yb[:, 1:, :]                             # (3, 4, 8), a unit-stride view with an offset
    wb = np.zeros((8, 4, 6), np.float32)
    w = wb[:, :, ::2]                            # (8, 4, 3), every stride non-unit
    gb = np.zeros((3, 4, 16), np.float32)
    g = gb[:, :, ::2]                            # (3, 4, 8)
    launch((1,), strided, (x, y, w, g), mode)
    assert np.array_equal(y, x * 2 + 1) and not yb[:, 0].any()
    assert np.array_equal(w, np.transpose(x, (2, 1, 0))) and not wb[:, :, 1::2].any()
    ref = np.zeros_like(g)
    i = np.arange(8)
    a, b, c = np.broadcast_arrays((i % 3)[:, None], np.arange(4)[None], (7 - i)[:, None])
    ref[a, b, c] = x[a, b, c] - 5
    assert np.array_equal(g, ref) and not gb[:, :, 1::2].any()
