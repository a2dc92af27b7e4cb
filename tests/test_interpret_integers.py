"""Signless integers in the interpreter: signedness flags, i1, wrap-around, division rounding,
shifts, conversions, and the undefined behavior it reports (spec 8.8, 8.4)."""
import numpy as np
import pytest

from interp_util import Kernel, run1, t
import tilepy.interpret as interp
from tilepy.errors import TileTypeError, TileValueError

rng = np.random.default_rng(3)


def ints(n, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, endpoint=True, dtype=np.int64).astype(dtype)
    x[:4] = [0, 1, info.min, info.max]
    return x


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_wraparound_arithmetic(dtype):
    a, b = ints(200, dtype), ints(200, dtype)
    with np.errstate(over="ignore"):
        assert np.array_equal(run1("addi", a, b), a + b)
        assert np.array_equal(run1("subi", a, b), a - b)
        assert np.array_equal(run1("muli", a, b), a * b)
        assert np.array_equal(run1("negi", a), -a)
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    assert np.array_equal(run1("xori", a, b), a ^ b)
    assert np.array_equal(run1("maxi", a, b, signedness="unsigned").view(u),
                          np.maximum(a.view(u), b.view(u)))
    assert np.array_equal(run1("mini", a, b, signedness="signed"), np.minimum(a, b))


def test_absi_reads_signed_writes_unsigned():
    a = np.array([-5, 5, -128, 0], dtype=np.int8)
    assert run1("absi", a).view(np.uint8).tolist() == [5, 5, 128, 0]


def test_division_rounding_modes():
    a = np.array([7, -7, 7, -7, 6, -128], dtype=np.int8)
    b = np.array([2, 2, -2, -2, 3, 3], dtype=np.int8)
    assert run1("divi", a, b, signedness="signed").tolist() == [3, -3, -3, 3, 2, -42]
    assert run1("divi", a, b, signedness="signed", rounding="negative_inf").tolist() == \
        [3, -4, -4, 3, 2, -43]
    assert run1("divi", a, b, signedness="signed", rounding="positive_inf").tolist() == \
        [4, -3, -3, 4, 2, -42]
    u = run1("divi", a, b, signedness="unsigned", rounding="positive_inf").view(np.uint8)
    assert u.tolist() == [4, (249 + 1) // 2, 0 + (7 % 254 > 0), 1, 2, (128 + 2) // 3]
    with pytest.raises(TileTypeError, match="unsigned"):
        run1("divi", a, b, signedness="unsigned", rounding="negative_inf")


def test_remainder_takes_the_dividends_sign():
    """Spec 8.8.11's examples."""
    a = np.array([7, 7, -7, -7], dtype=np.int32)
    b = np.array([3, -3, 3, -3], dtype=np.int32)
    assert run1("remi", a, b, signedness="signed").tolist() == [1, 1, -1, -1]
    assert run1("remi", a, b, signedness="unsigned").view(np.uint32).tolist() == \
        [1, 7, (2**32 - 7) % 3, (2**32 - 7) % (2**32 - 3)]


def test_division_undefined_behavior_is_reported():
    with pytest.raises(TileValueError, match="division by zero"):
        run1("divi", np.array([1, 2], np.int32), np.array([1, 0], np.int32), signedness="signed")
    with pytest.raises(TileValueError, match="signed division overflow"):
        run1("divi", np.array([-128], np.int8), np.array([-1], np.int8), signedness="signed")
    with pytest.raises(TileValueError, match="remainder by zero"):
        run1("remi", np.array([1], np.int8), np.array([0], np.int8), signedness="unsigned")


def test_shifts_read_the_amount_unsigned_and_clamp():
    a = np.array([-16, -16, 1, 1, 64], dtype=np.int8)
    s = np.array([2, 9, 7, -1, 1], dtype=np.int8)    # -1 reads as 255: shifts everything out
    assert run1("shri", a, s, signedness="signed").tolist() == [-4, -1, 0, 0, 32]
    assert run1("shri", a, s, signedness="unsigned").view(np.uint8).tolist() == [60, 0, 0, 0, 32]
    assert run1("shli", a, s).tolist() == [-64, 0, -128, 0, -128]


def test_mulhii_spec_example():
    a = np.array([2**31, 3, -1], dtype=np.int64).astype(np.uint32).view(np.int32)
    b = np.array([2, 5, -1], dtype=np.int32)
    assert run1("mulhii", a, b).view(np.uint32).tolist() == [1, 0, 2**32 - 2]
    big = np.array([-(2**63), 2**62], dtype=np.int64)       # unsigned: 2^63 * 2^63 = 2^126
    assert run1("mulhii", big, big).tolist() == [2**62, 2**60]


def test_i1_reads_minus_one_when_signed():
    """Spec 8.8.1: signed i1 is 0/-1, unsigned 0/1."""
    a = np.array([True, False, True, False])
    b = np.array([False, False, True, True])
    assert run1("exti", a, to="i32", signedness="signed").tolist() == [-1, 0, -1, 0]
    assert run1("exti", a, to="i32", signedness="unsigned").tolist() == [1, 0, 1, 0]
    assert run1("itof", a, to="f32", signedness="signed").tolist() == [-1.0, 0.0, -1.0, 0.0]
    assert run1("cmpi", a, b, comparison_predicate="less_than",
                signedness="signed").tolist() == [True, False, False, False]
    assert run1("maxi", a, b, signedness="signed").tolist() == [False, False, True, False]
    assert run1("addi", a, b).tolist() == [True, False, False, True]
    assert run1("shri", a, a, signedness="signed").tolist() == [True, False, True, False]


def test_conversions_saturate_and_truncate():
    x = np.array([1e10, -1e10, np.nan, -0.9, 255.9, 2.5], dtype=np.float32)
    assert run1("ftoi", x, to="i8", signedness="signed").tolist() == [127, -128, 0, 0, 127, 2]
    assert run1("ftoi", x, to="i8", signedness="unsigned").view(np.uint8).tolist() == \
        [255, 0, 0, 0, 255, 2]
    assert run1("ftoi", x, to="i1", signedness="signed").tolist() == [False, True, False, False,
                                                                      False, False]
    with pytest.raises(TileValueError, match="Inf"):
        run1("ftoi", np.array([np.inf], np.float32), to="i32", signedness="signed")
    i = np.array([-1, 300, -129], dtype=np.int16)
    assert run1("trunci", i, to="i8").tolist() == [-1, 44, 127]
    assert run1("exti", i, to="i64", signedness="unsigned").tolist() == [65535, 300, 65407]


def test_itof_rounds_once_from_64_bits():
    v = np.array([2**60 + 2**36 + 1, 2**24 + 2**16 + 1, -(2**53) - 1, 2**63 - 1], dtype=np.int64)
    f32 = run1("itof", v, to="f32", signedness="signed")
    assert f32[0] == np.float32(2**60 + 2**37)          # not float64 first (tie -> even)
    bf = run1("itof", v, to="bf16", signedness="signed").astype(np.float64)
    assert bf[1] == 2**24 + 2**17
    u = run1("itof", np.array([-1], np.int64), to="f64", signedness="unsigned")
    assert u[0] == 2.0**64


def test_overflow_promises_are_checked():
    a = np.array([100, 1], dtype=np.int8)
    with pytest.raises(TileValueError, match="overflow<no_signed_wrap>"):
        run1("addi", a, a, overflow="no_signed_wrap")
    assert run1("addi", a, a, overflow="no_unsigned_wrap").tolist() == [-56, 2]
    with pytest.raises(TileValueError, match="no_unsigned_wrap"):
        run1("subi", a[1:], a[:1], overflow="no_unsigned_wrap")


def test_bitcast_and_iota():
    x = np.array([1.0, -2.0], dtype=np.float32)
    assert run1("bitcast", x, to="i32").tolist() == x.view(np.int32).tolist()
    k = Kernel(["*i8"])
    k.store(k.op("iota", result_types=[t("128xi8")]), k.args[0], 128)
    out = np.zeros(128, np.int8)
    interp.run(k.done(), 1, [out])
    assert out.tolist() == list(range(128))


@pytest.mark.parametrize("sign, want", [("signed", True), ("unsigned", False)])
def test_shri_of_0d_i1_tiles(sign, want):
    """A 0-d i1 shri (found by the fuzzer: the 0-d i1 value became an `int`, without reshape):
    true >> true is -1 >> 1 = -1 signed, 1 >> 1 = 0 unsigned."""
    from tilepy.ir import parse_module
    text = ("cuda_tile.module @m {\nentry @k() {\n%a = constant <i1: true> : tile<i1>\n"
            f"%r = shri %a, %a {sign} : tile<i1>\n" "return\n}\n}\n")
    seen = {}
    interp.run(parse_module(text), 1, [], on_op=lambda e: seen.update({e.op.name: e.outputs}))
    assert bool(np.asarray(seen["shri"][0])) is want
