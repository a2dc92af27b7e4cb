"""The interpreter's arithmetic against independent oracles (numpy, ml_dtypes from float32,
exact rationals) and the spec's own examples."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from interp_util import run1
from tilepy.errors import TileTypeError, TileUnsupportedFeatureError
from tilepy.interpret import floats as F
from tilepy.types import element as E

rng = np.random.default_rng(7)
BF16, E4M3, E5M2 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2


def bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def floats(n, dtype, scale=10.0):
    x = (rng.standard_normal(n) * scale).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-7]
    return x.astype(dtype)


# ---------------------------------------------------------------------------- rounding
def test_f64_to_formats_rounds_once():
    """float64 -> bf16/e4m3/e5m2 directly, not through float32 (ml_dtypes rounds twice)."""
    x = np.array([1 + 2**-8 + 2**-40, 1 + 2**-4 + 2**-40, 1 + 2**-3 + 2**-40])
    assert F.round_f64(x[:1], E.BF16)[0] == 1 + 2**-7          # just above halfway: up
    assert F.round_f64(x[1:2], E.E4M3)[0] == 1 + 2**-3
    assert F.round_f64(x[2:], E.E5M2)[0] == 1 + 2**-2
    y = rng.standard_normal(20000) * np.exp2(rng.integers(-20, 15, 20000))
    assert np.array_equal(F.round_f64(y, E.F16), y.astype(np.float16).astype(np.float64))
    y32 = y.astype(np.float32)      # from float32, ml_dtypes rounds once: an independent oracle
    for dt, el in ((BF16, E.BF16), (E5M2, E.E5M2)):
        ref = y32.astype(dt).astype(np.float64)
        got = F.round_f64(y32.astype(np.float64), el)
        fin = np.isfinite(ref)
        assert np.array_equal(got[fin], ref[fin])


def test_fp8_conversions_saturate_as_the_spec_table_says():
    """Spec 5.1.3: e5m2 keeps NaN, e4m3 turns NaN into +MAX; both saturate Inf and overflow."""
    src = np.array([1e6, -1e6, np.inf, -np.inf, np.nan], dtype=np.float32)
    got = run1("ftof", src, to="e5m2").astype(np.float64)
    assert got[:4].tolist() == [57344.0, -57344.0, 57344.0, -57344.0] and np.isnan(got[4])
    got = run1("ftof", src, to="e4m3").astype(np.float64)
    assert got.tolist() == [448.0, -448.0, 448.0, -448.0, 448.0]


def test_tf32_conversion_keeps_10_mantissa_bits():
    x = np.array([1 + 2**-11, 1 + 2**-11 + 2**-20, 1 + 3 * 2**-11, 3.0e38], dtype=np.float32)
    got = run1("ftof", x, to="tf32", dst=np.float32)
    # 3.0e38 = 0x7f61b1e6: the 13 dropped bits 0x11e6 are above half (0x1000), so it rounds
    # up to 0x7f61c000, still finite
    big = np.array([0x7F61C000], np.uint32).view(np.float32)[0]
    assert np.float32(3.0e38).view(np.uint32) == 0x7F61B1E6
    assert got.tolist() == [1.0, 1 + 2**-10, 1 + 2**-9, big]
    assert (bits(got) & 0x1FFF == 0).all()


# ---------------------------------------------------------------------------- float arithmetic
@pytest.mark.parametrize("op,fn", [("addf", np.add), ("subf", np.subtract), ("mulf", np.multiply),
                                   ("divf", np.divide)])
def test_f16_arithmetic_is_ieee(op, fn):
    a, b = floats(500, np.float16), floats(500, np.float16)
    with np.errstate(all="ignore"):
        ref = fn(a, b)          # numpy computes f16 in float32 and rounds once: IEEE f16
    got = run1(op, a, b)
    nan = np.isnan(ref)
    assert np.array_equal(bits(got)[~nan], bits(ref)[~nan]) and np.isnan(got[nan]).all()


@pytest.mark.parametrize("op,fn", [("addf", np.add), ("mulf", np.multiply), ("divf", np.divide)])
def test_bf16_arithmetic_rounds_once(op, fn):
    a, b = floats(500, BF16), floats(500, BF16)
    with np.errstate(all="ignore"):
        ref = fn(a.astype(np.float32), b.astype(np.float32)).astype(BF16)   # 24 >= 2*8+2 bits
    got = run1(op, a, b)
    nan = np.isnan(ref.astype(np.float32))
    assert np.array_equal(bits(got)[~nan], bits(ref)[~nan])


def _exact_f16(q: Fraction) -> float:
    """The f16 nearest to q, ties to even, by comparing exact neighbors (independent oracle)."""
    c = np.float16(float(q))
    cands = [c, np.nextafter(c, np.float16(np.inf)), np.nextafter(c, np.float16(-np.inf))]
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - q), int(bits(v)) & 1))
    return float(best)


def test_f16_fma_rounds_once():
    """a*b + c where rounding the float32 sum first would land on an f16 halfway point."""
    a = np.array([1 + 2**-10, 2049 / 2048, 3.0], dtype=np.float16)
    b = np.array([1 + 2**-10, 1.0, 5.0], dtype=np.float16)
    c = np.array([2**-24, -2**-24, 2**-20], dtype=np.float16)
    got = run1("fma", a, b, c)
    for i in range(3):
        q = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        assert float(got[i]) == _exact_f16(q)
    x, y, z = floats(300, np.float16, 3), floats(300, np.float16, 3), floats(300, np.float16, 3)
    got = run1("fma", x, y, z)
    for i in range(6, 300):
        q = Fraction(float(x[i])) * Fraction(float(y[i])) + Fraction(float(z[i]))
        assert float(got[i]) == _exact_f16(q) or abs(float(q)) > 65504


def test_f64_fma_is_exact():
    a = np.array([1 + 2**-52, 0.1, 1e308])
    b = np.array([1 - 2**-52, 10.0, 10.0])
    c = np.array([-1.0, -1.0, -1e308])
    got = run1("fma", a, b, c)
    assert got[0] == -2.0**-104                       # the product's tail survives
    assert got[1] == float(Fraction(0.1) * 10 - 1)
    assert got[2] == 9e308 or np.isinf(got[2])


@pytest.mark.parametrize("mode", ["zero", "negative_inf", "positive_inf"])
def test_directed_rounding_brackets_the_exact_sum(mode):
    a, b = floats(200, np.float32)[6:], floats(200, np.float32)[6:] * np.float32(1e-5)
    got = run1("addf", a, b, rounding_mode=mode).astype(np.float64)
    exact = [Fraction(float(x)) + Fraction(float(y)) for x, y in zip(a, b)]
    for g, q in zip(got, exact):
        up = Fraction(float(np.nextafter(np.float32(g), np.float32(np.inf))))
        down = Fraction(float(np.nextafter(np.float32(g), np.float32(-np.inf))))
        if mode == "negative_inf" or (mode == "zero" and q > 0):
            assert Fraction(g) <= q < up
        else:
            assert down < q <= Fraction(g)


def test_exact_zero_sums_are_negative_when_rounding_down():
    a = np.array([1.0, 0.0, 0.0, -0.0], dtype=np.float32)
    b = np.array([-1.0, 0.0, -0.0, -0.0], dtype=np.float32)
    down = run1("addf", a, b, rounding_mode="negative_inf")
    near = run1("addf", a, b)
    assert np.signbit(down).tolist() == [True, False, True, True]
    assert np.signbit(near).tolist() == [False, False, False, True]


def test_maxf_minf_zeros_nans_and_canonical_nan():
    nan_payload = np.array([0x7FC00123], dtype=np.uint32).view(np.float32)[0]
    a = np.array([0.0, -0.0, nan_payload, 1.0, np.nan], dtype=np.float32)
    b = np.array([-0.0, 0.0, 2.0, nan_payload, np.nan], dtype=np.float32)
    mx = run1("maxf", a, b)
    assert bits(mx[:4]).tolist() == [0, 0, bits(np.float32(2.0)), bits(np.float32(1.0))]
    assert bits(mx[4]) == 0x7FC00000
    mn = run1("minf", a, b)
    assert np.signbit(mn[:2]).all()
    mxp = run1("maxf", a, b, propagate_nan=True)
    assert (bits(mxp[2:]) == 0x7FC00000).all()


def test_cmpf_ordering():
    a = np.array([1.0, np.nan, 2.0, np.nan], dtype=np.float32)
    b = np.array([1.0, 1.0, np.nan, np.nan], dtype=np.float32)
    o = run1("cmpf", a, b, to="i1", comparison_predicate="equal", comparison_ordering="ordered")
    u = run1("cmpf", a, b, to="i1", comparison_predicate="less_than",
             comparison_ordering="unordered")
    assert o.tolist() == [True, False, False, False] and u.tolist() == [False, True, True, True]


def test_remf_special_cases():
    a = np.array([7.5, -7.5, np.inf, 3.0, 1.0], dtype=np.float32)
    b = np.array([2.0, 2.0, 2.0, np.inf, 0.0], dtype=np.float32)
    got = run1("remf", a, b)
    assert got[:2].tolist() == [1.5, -1.5] and np.isnan(got[2]) and got[3] == 3.0
    assert np.isnan(got[4])


def test_math_functions_are_within_two_ulp():
    x = floats(300, np.float32, 3)[6:]
    for op, fn in (("exp", np.exp), ("log", np.log), ("sin", np.sin), ("tanh", np.tanh)):
        got = run1(op, np.abs(x) if op == "log" else x).astype(np.float64)
        with np.errstate(all="ignore"):
            ref = fn(np.abs(x.astype(np.float64)) if op == "log" else x.astype(np.float64))
        fin = np.isfinite(ref) & (ref != 0)
        ulp = np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
        assert (np.abs(got[fin] - ref[fin]) <= 2 * ulp).all(), op


def test_modifiers_the_spec_does_not_list_are_rejected():
    a = np.ones(4, np.float32)
    with pytest.raises(TileTypeError, match="take rounding<nearest_even>"):
        run1("ftof", a, to="bf16", rounding_mode="positive_inf")   # not in NVIDIA's 13.4 table
    with pytest.raises((TileTypeError, TileUnsupportedFeatureError), match="flush_to_zero"):
        run1("addf", a.astype(np.float16), a.astype(np.float16), flush_to_zero=True)


def test_flush_to_zero_flushes_subnormal_inputs_and_results():
    tiny = np.float32(1e-40)
    a = np.array([tiny, -tiny, 1e-30, 1.0], dtype=np.float32)
    b = np.array([0.0, -0.0, 1e-10, 0.0], dtype=np.float32)
    got = run1("addf", a, b, flush_to_zero=True)
    assert bits(got[:2]).tolist() == [0, 0x80000000] and got[3] == 1.0
    assert run1("mulf", a[2:3], b[2:3], flush_to_zero=True)[0] == 0.0


def test_fma_on_scalars_rounds_once():
    """0-d operands (numpy scalars inside) took a different path: found by the long fuzz run."""
    from interp_util import Kernel, t
    import tilepy.interpret as interp
    k = Kernel(["*f32"])
    a = k.const("f32", 1 + 2**-23)
    r = k.op("fma", a, a, k.const("f32", -1.0), result_types=[t("f32")])
    k.store(k.op("reshape", r, result_types=[t("1xf32")]), k.args[0], 1)
    out = np.zeros(1, np.float32)
    interp.run(k.done(), 1, [out])
    assert out[0] == np.float32(2**-22 + 2**-46)
