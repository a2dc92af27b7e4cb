"""Conversion semantics (spec 5.1.3, 8.4) checked against independent oracles: the sorted list
of every finite value of the small float types, numpy's float32/float64 casts, Python ints."""
import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilepy.errors import TileValueError
from tilepy.types import BF16, E4M3, E5M2, F16, F32, F64, I1, I8, I16, I32, I64, NUMPY_DTYPE, TF32
from tilepy.types import convert as C

MODES = ("nearest_even", "zero", "negative_inf", "positive_inf")
SMALL = (F16, BF16, E4M3, E5M2, TF32)


def _all_values(elem):
    """Every finite value of `elem` (sorted, -0.0 dropped) and the bit pattern of each."""
    with np.errstate(invalid="ignore"):
        if elem == TF32:
            bits = (np.arange(1 << 19, dtype=np.uint32) << np.uint32(13))
            vals = bits.view(np.float32).astype(np.float64)
        else:
            bits = np.arange(1 << elem.bits, dtype=f"u{elem.storage_bytes}")
            vals = bits.view(NUMPY_DTYPE[elem]).astype(np.float64)
    ok = np.isfinite(vals) & ~((vals == 0) & np.signbit(vals))
    order = np.argsort(vals[ok], kind="stable")
    return vals[ok][order], bits[ok][order].astype(np.int64)


TABLES = {e: _all_values(e) for e in SMALL}


def oracle(x: float, elem, mode: str) -> float:
    """Round `x` to `elem` by searching the table of its values; 5.1.3 overflow rules."""
    vals, bits = TABLES[elem]
    top = vals[-1]
    if math.isnan(x):
        return top if elem == E4M3 else math.nan
    if math.isinf(x):
        return math.copysign(top if elem.satfinite else math.inf, x)
    i = np.searchsorted(vals, x)
    if i < len(vals) and vals[i] == x:
        r = vals[i]
    elif i == 0 or i == len(vals):                 # beyond +-MAX_NORM
        r = math.copysign(math.inf, x)
    else:
        lo, hi = vals[i - 1], vals[i]
        if mode == "negative_inf":
            r = lo
        elif mode == "positive_inf":
            r = hi
        elif mode == "zero":
            r = lo if x > 0 else hi
        elif x - lo != hi - x:
            r = lo if x - lo < hi - x else hi
        else:
            r = lo if bits[i - 1] % 2 == 0 else hi
    if math.isinf(r):        # overflow: IEEE rules, or saturation for the fp8 types
        toward = {"nearest_even": True, "zero": False, "positive_inf": x > 0, "negative_inf": x < 0}[mode]
        r = math.copysign(math.inf if toward and not elem.satfinite else top, x)
    if r == 0:
        r = math.copysign(0.0, x)
    return float(r)


finite_or_special = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-600.0, max_value=600.0),
    st.floats(min_value=-1e-3, max_value=1e-3),
)


@pytest.mark.parametrize("elem", SMALL, ids=str)
@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=60, deadline=None)
@given(xs=st.lists(finite_or_special, min_size=1, max_size=16))
def test_round_float_matches_the_value_table(elem, mode, xs):
    got = C.round_float(np.array(xs), elem, mode)
    want = np.array([oracle(x, elem, mode) for x in xs])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@settings(max_examples=200, deadline=None)
@given(xs=st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=32))
def test_f64_to_f32_nearest_matches_numpy_and_directed_modes_bracket(xs):
    x = np.array(xs)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(C.ftof(x, F64, F32), x.astype(np.float32))
    lo = C.ftof(x, F64, F32, "negative_inf").astype(np.float64)
    hi = C.ftof(x, F64, F32, "positive_inf").astype(np.float64)
    tz = C.ftof(x, F64, F32, "zero").astype(np.float64)
    finite = np.abs(x) <= np.finfo(np.float32).max
    assert np.all(lo[finite] <= x[finite]) and np.all(x[finite] <= hi[finite])
    exact = lo == hi
    with np.errstate(over="ignore"):
        representable = x.astype(np.float32).astype(np.float64) == x
    np.testing.assert_array_equal(exact[finite], representable[finite])
    gap = ~exact & finite
    np.testing.assert_array_equal(np.nextafter(lo[gap].astype(np.float32), np.float32(np.inf)),
                                  hi[gap].astype(np.float32))
    np.testing.assert_array_equal(tz, np.where(x >= 0, lo, hi))


def test_no_double_rounding_through_f32():
    """ml_dtypes rounds float64 through float32; these inputs sit just above a tie after that."""
    x = np.array([1.125 + 2 ** -40, 1.0625 + 2 ** -40, 1.0 + 2 ** -8 + 2 ** -40])
    assert C.ftof(x[:1], F64, E5M2).astype(float)[0] == 1.25
    assert C.ftof(x[1:2], F64, E4M3).astype(float)[0] == 1.125
    assert C.ftof(x[2:], F64, BF16).astype(float)[0] == 1.0 + 2 ** -7
    assert np.array(x[2:]).astype(ml_dtypes.bfloat16).astype(float)[0] == 1.0   # the pitfall


def test_special_values_table_of_5_1_3():
    """Out-of-range, Inf and NaN sources for each target (spec table 'Special Value and
    Saturation Behavior')."""
    m = 2.0 ** 20
    src = np.array([m, -m, np.inf, -np.inf, np.nan])
    for elem in (F16, BF16, F32, TF32):
        out = C.ftof(src, F64, elem).astype(np.float64)
        big = elem.max_finite < m
        np.testing.assert_array_equal(out[:4], [np.inf if big else m, -np.inf if big else -m,
                                                np.inf, -np.inf])
        assert np.isnan(out[4])
    e5 = C.ftof(src, F64, E5M2).astype(np.float64)
    np.testing.assert_array_equal(e5[:4], [57344, -57344, 57344, -57344])
    assert np.isnan(e5[4])
    e4 = C.ftof(src, F64, E4M3).astype(np.float64)
    np.testing.assert_array_equal(e4, [448, -448, 448, -448, 448])    # NaN -> +MAX_NORM


def test_a_signaling_nan_converts_like_a_quiet_one_without_a_warning():
    """A signaling NaN (f32 0x7f810000, f16 0x7c01, bf16 0x7f81) widens to a quiet NaN (numpy
    would warn 'invalid value encountered in cast', from tilepy's code, at every such conversion)."""
    for src, bits in ((F32, 0x7F810000), (F16, 0x7C01), (BF16, 0x7F81)):
        x = np.array([bits], dtype=f"u{src.storage_bytes}").view(NUMPY_DTYPE[src])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for dst in (F64, F32, F16, BF16, TF32, E5M2):
                assert np.isnan(C.ftof(x, src, dst).astype(np.float64)).all(), (src, dst)
            if src == F32:
                assert np.isnan(C.to_tf32(x)).all()


def test_max_norm_and_formats():
    assert (E4M3.max_finite, E5M2.max_finite, F16.max_finite) == (448.0, 57344.0, 65504.0)
    assert BF16.max_finite == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert TF32.max_finite == (2 - 2 ** -10) * 2.0 ** 127
    assert E4M3.smallest_subnormal == 2.0 ** -9 and E5M2.smallest_subnormal == 2.0 ** -16
    assert TABLES[E4M3][0][-1] == 448.0 and TABLES[E5M2][0][-1] == 57344.0


@pytest.mark.parametrize("elem,signed", [(I8, True), (I8, False), (I32, True), (I32, False),
                                         (I64, True), (I64, False), (I1, True), (I1, False)])
@settings(max_examples=50, deadline=None)
@given(xs=st.lists(st.floats(allow_infinity=False, width=64), min_size=1, max_size=16))
def test_ftoi_truncates_saturates_and_maps_nan_to_zero(elem, signed, xs):
    lo, hi = elem.int_range(signed)
    want = [0 if math.isnan(x) else min(max(math.trunc(x), lo), hi) for x in xs]
    got = C.int_values(C.ftoi(np.array(xs), F64, elem, signed), elem, signed)
    assert [int(v) for v in got] == want


@pytest.mark.parametrize("dst", [F64, F32, F16, BF16, E4M3])
@pytest.mark.parametrize("signed", [True, False])
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_itof_rounds_the_exact_integer(dst, signed, data):
    lo, hi = I64.int_range(signed)
    vals = data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=16))
    storage = np.array([v % 2 ** 64 for v in vals], dtype=np.uint64).view(np.int64)
    got = C.itof(storage, I64, dst, signed).astype(np.float64)
    if dst == F64:
        want = [float(v) for v in vals]                 # Python rounds ints half-to-even
    elif dst == F32:
        want = [float(np.float32(float(v))) if abs(v) < 2 ** 53 else None for v in vals]
    else:
        want = [oracle(float(v), dst, "nearest_even") if abs(v) < 2 ** 53 else None for v in vals]
    for g, w, v in zip(got, want, vals):
        if w is not None:
            assert g == w, (v, g, w)


def test_itof_directed_rounding_of_large_integers():
    v = np.array([2 ** 62 + 1, -(2 ** 62 + 1)], dtype=np.int64)
    up = C.itof(v, I64, F32, True, "positive_inf").astype(np.float64)
    down = C.itof(v, I64, F32, True, "negative_inf").astype(np.float64)
    ulp = 2.0 ** (62 - 23)
    np.testing.assert_array_equal(up, [2.0 ** 62 + ulp, -(2.0 ** 62)])
    np.testing.assert_array_equal(down, [2.0 ** 62, -(2.0 ** 62 + ulp)])
    i1 = C.itof(np.array([True, False]), I1, F32, signed=True).astype(np.float64)
    np.testing.assert_array_equal(i1, [-1.0, 0.0])     # signed i1 reads 0/-1 (spec 8.8.1)


def test_exti_trunci_bitcast():
    x = np.array([-1, 127, -128], dtype=np.int8)
    np.testing.assert_array_equal(C.exti(x, I8, I32, signed=True), [-1, 127, -128])
    np.testing.assert_array_equal(C.exti(x, I8, I32, signed=False), [255, 127, 128])
    np.testing.assert_array_equal(C.exti(np.array([True]), I1, I16, signed=True), [-1])
    np.testing.assert_array_equal(C.exti(np.array([True]), I1, I16, signed=False), [1])
    np.testing.assert_array_equal(C.trunci(np.array([300, -1, 2 ** 40 + 5], np.int64), I64, I8),
                                  np.array([44, -1, 5], np.int8))
    np.testing.assert_array_equal(C.trunci(np.array([2, 3], np.int32), I32, I1), [False, True])
    f = C.bitcast(np.array([0x3F800000], np.int32), I32, F32)
    assert f.dtype == np.float32 and f[0] == 1.0
    assert C.bitcast(np.array([1.0], np.float32), TF32, I32)[0] == 0x3F800000
    with pytest.raises(TileValueError):
        C.bitcast(np.array([1], np.int32), I32, F16)


def test_to_tf32_and_convert_dispatch():
    x = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20], np.float32)
    np.testing.assert_array_equal(C.to_tf32(x), np.array([1, 1 + 2 ** -9, 1 + 2 ** -10], np.float32))
    np.testing.assert_array_equal(C.to_tf32(x, "zero"), np.array([1, 1 + 2 ** -10, 1], np.float32))
    out = C.convert("ftoi", np.array([2.7, -2.7], np.float32), F32, I16, signedness="signed")
    np.testing.assert_array_equal(out, np.array([2, -2], np.int16))
    with pytest.raises(TileValueError, match="does not apply to conversions"):
        C.ftof(np.array([1.0]), F64, F32, "approx")
    with pytest.raises(TileValueError, match="not a conversion op"):
        C.convert("addf", np.array([1.0]), F64, F32)
