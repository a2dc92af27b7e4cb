"""Conversion semantics of the Tile IR element types (spec 5.1.3 and 8.4), on numpy arrays.

Every function takes and returns *storage* arrays (the numpy dtype `NUMPY_DTYPE[elem]`: signless
integers in intN, i1 as bool, tf32 as float32, bf16/fp8 as ml_dtypes) and computes what the op
of the same name computes:

- `ftof`/`itof`: the exact source value rounded to the target with one of the IEEE rounding
  modes; out-of-range values become Inf for f16/bf16/f32/f64/tf32 and +-MAX_NORM for e4m3/e5m2
  (satfinite); NaN stays NaN except for e4m3, which has none and gets +MAX_NORM.
- `ftoi`: rounded towards zero, saturated to the signed or unsigned range, NaN -> 0 (8.4.4).
  Inf is undefined behaviour in the spec; here it saturates like any out-of-range value.
- `exti`/`trunci`/`bitcast`: sign/zero extension, truncation and reinterpretation of bits.

Rounding is done on the exact value (no double rounding: numpy and ml_dtypes round float64 to
bf16/fp8 through float32, which is wrong for some inputs), so `round_float` is the reference.
"""
from __future__ import annotations

import numpy as np

from ..errors import TileValueError
from .element import F32, F64, I1, NUMPY_DTYPE, TF32, ElementType

IEEE_MODES = ("nearest_even", "zero", "negative_inf", "positive_inf")
_TWO53 = 2 ** 53


def _check_mode(mode: str, allowed=IEEE_MODES):
    if mode not in allowed:
        raise TileValueError(f"rounding mode '{mode}' does not apply to conversions "
                             f"(expected one of {', '.join(allowed)})")


def _round_magnitude(s: np.ndarray, mode: str, neg: np.ndarray) -> np.ndarray:
    """Round non-negative `s` (in units of the target ulp) to an integer under `mode`."""
    if mode == "nearest_even":
        return np.rint(s)
    if mode == "zero":
        return np.trunc(s)
    up = ~neg if mode == "positive_inf" else neg      # magnitude rounds away from zero
    return np.where(up, np.ceil(s), np.floor(s))


def _finish(mag: np.ndarray, neg: np.ndarray, dst: ElementType, mode: str) -> np.ndarray:
    """Apply the overflow rule of `dst` to rounded magnitudes and put the sign back."""
    over = mag > dst.max_finite
    if dst.satfinite:
        to_inf = np.zeros_like(over)
    elif mode == "nearest_even":
        to_inf = over
    elif mode == "zero":
        to_inf = np.zeros_like(over)
    else:
        to_inf = over & (~neg if mode == "positive_inf" else neg)
    mag = np.where(over, np.where(to_inf, np.inf, dst.max_finite), mag)
    return np.where(neg, -mag, mag)


def round_float(x, dst: ElementType, mode: str = "nearest_even") -> np.ndarray:
    """Round float64 values to the values of float type `dst`; returns float64 (exactly
    representable in `dst`), with the special-value rules of spec 5.1.3 applied."""
    _check_mode(mode)
    x = np.asarray(x, dtype=np.float64)
    if dst == F64:
        return x.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        neg = np.signbit(x)
        ax = np.abs(x)
        _, e = np.frexp(ax)
        q = np.maximum(e - 1, dst.min_exp) - dst.mant_bits      # exponent of one ulp
        mag = np.ldexp(_round_magnitude(np.ldexp(ax, -q), mode, neg), q)
        special = ~np.isfinite(x)
        out = _finish(np.where(special, 0.0, mag), neg, dst, mode)
    # Infinity is exact, not an overflow: +-Inf, or +-MAX_NORM for the satfinite types.
    inf = np.where(neg, -1.0, 1.0) * (dst.max_finite if dst.satfinite else np.inf)
    out = np.where(np.isinf(x), inf, out)
    nan = np.isnan(x)
    if nan.any():
        out = np.where(nan, dst.max_finite if dst.nan_to_max else np.nan, out)
    if not dst.signed:                # no sign bit (e5m3): negative values saturate to +0
        out = np.where(~nan & (np.signbit(out) | (out < 0)), 0.0, out)
    return out


def _round_int_scalar(v: int, dst: ElementType, mode: str) -> float:
    """Round a Python int with |v| > 2**53 to `dst` (magnitude only, before overflow rules)."""
    a = abs(v)
    q = a.bit_length() - 1 - dst.mant_bits
    if q <= 0:
        return float(a)
    n, rem = divmod(a, 1 << q)
    half = 1 << (q - 1)
    if mode == "nearest_even":
        n += rem > half or (rem == half and n & 1)
    elif rem and (mode == "positive_inf") == (v > 0) and mode != "zero":
        n += 1
    return float(n << q)


def to_storage(values_f64: np.ndarray, dst: ElementType) -> np.ndarray:
    """Exactly representable float64 values -> the storage array of `dst`."""
    return np.asarray(values_f64, dtype=np.float64).astype(NUMPY_DTYPE[dst])


def float_values(x, src: ElementType) -> np.ndarray:
    """The values of a float storage array as float64 (exact for every float type; a signaling
    NaN becomes a quiet one, as a GPU's conversions do, without numpy's 'invalid' warning)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(x, dtype=NUMPY_DTYPE[src]).astype(np.float64)


def int_values(x, src: ElementType, signed: bool) -> np.ndarray:
    """The signed (int64) or unsigned (uint64) reading of a signless integer storage array."""
    x = np.asarray(x, dtype=NUMPY_DTYPE[src])
    if src == I1:
        return np.where(x, -1 if signed else 1, 0).astype(np.int64)
    if signed:
        return x.astype(np.int64)
    return x.view(np.dtype(f"u{src.storage_bytes}")).astype(np.uint64)


def wrap_int(values, dst: ElementType) -> np.ndarray:
    """Integers (int64/uint64 arrays) -> storage of `dst`, keeping the low `dst.bits` bits."""
    v = np.asarray(values)
    if v.dtype == np.uint64:
        v = v.view(np.int64)
    v = v.astype(np.int64)
    if dst == I1:
        return (v & 1).astype(np.bool_)
    return v.astype(NUMPY_DTYPE[dst])


# ------------------------------------------------------------------------------ the ops
def ftof(x, src: ElementType, dst: ElementType, rounding: str = "nearest_even") -> np.ndarray:
    return to_storage(round_float(float_values(x, src), dst, rounding), dst)


def itof(x, src: ElementType, dst: ElementType, signed: bool = True,
         rounding: str = "nearest_even") -> np.ndarray:
    _check_mode(rounding)
    v = int_values(x, src, signed)
    big = np.abs(v.astype(np.float64)) >= _TWO53
    f = v.astype(np.float64)
    if not big.any():
        return to_storage(round_float(f, dst, rounding), dst)
    small = round_float(np.where(big, 0.0, f), dst, rounding)
    mags = np.array([_round_int_scalar(int(b), dst, rounding) for b in v[big]], dtype=np.float64)
    out = small.copy()
    out[big] = _finish(mags, v[big].astype(np.float64) < 0, dst, rounding)
    return to_storage(out, dst)


_TO_INT = {"nearest_int_to_zero": np.trunc, "zero": np.trunc, "nearest_even": np.rint,
           "negative_inf": np.floor, "positive_inf": np.ceil}


def ftoi(x, src: ElementType, dst: ElementType, signed: bool = True,
         rounding: str = "nearest_int_to_zero") -> np.ndarray:
    _check_mode(rounding, tuple(_TO_INT))
    f = float_values(x, src)
    lo, hi = dst.int_range(signed)
    nan = np.isnan(f)
    t = _TO_INT[rounding](np.where(nan, 0.0, f))
    above, below = t >= float(hi) + 1, t < float(lo)        # both bounds are powers of two
    mid = np.where(above | below, 0.0, t)
    v = mid.astype(np.uint64 if not signed and dst.bits == 64 else np.int64)
    v = np.where(above, np.array(hi).astype(v.dtype), np.where(below, np.array(lo).astype(v.dtype), v))
    return wrap_int(v, dst)


def exti(x, src: ElementType, dst: ElementType, signed: bool = True) -> np.ndarray:
    return wrap_int(int_values(x, src, signed), dst)


def trunci(x, src: ElementType, dst: ElementType) -> np.ndarray:
    return wrap_int(int_values(x, src, True), dst)


def bitcast(x, src: ElementType, dst: ElementType) -> np.ndarray:
    if src.bits != dst.bits:
        raise TileValueError(f"bitcast needs types of the same bit width (got {src}, {dst})")
    x = np.asarray(x, dtype=NUMPY_DTYPE[src])
    return x.copy() if src == dst else x.view(NUMPY_DTYPE[dst])


def to_tf32(x, mode: str = "nearest_even") -> np.ndarray:
    """Round float32 values to tf32 (10 mantissa bits), stored as float32."""
    return to_storage(round_float(float_values(x, F32), TF32, mode), TF32)


def convert(op: str, x, src: ElementType, dst: ElementType, **attrs) -> np.ndarray:
    """Apply conversion op `op` ("ftof", "itof", ...) with the op's attribute names."""
    signed = attrs.get("signedness", "signed") == "signed"
    rounding = attrs.get("rounding_mode")
    if op == "ftof":
        return ftof(x, src, dst, rounding or "nearest_even")
    if op == "itof":
        return itof(x, src, dst, signed, rounding or "nearest_even")
    if op == "ftoi":
        return ftoi(x, src, dst, signed, rounding or "nearest_int_to_zero")
    if op == "exti":
        return exti(x, src, dst, signed)
    if op == "trunci":
        return trunci(x, src, dst)
    if op == "bitcast":
        return bitcast(x, src, dst)
    raise TileValueError(f"'{op}' is not a conversion op")


# The element types whose values live in float32 outside memory (element.NUMPY_DTYPE): their bits
# are encoded here, for pack/unpack and the C++ constants.
_BIT_TYPES = {"e2m1", "e5m3"}


def has_encoded_bits(elem: ElementType) -> bool:
    return elem.name in _BIT_TYPES


def _codes(elem: ElementType) -> np.ndarray:
    """The value of every bit pattern of `elem` (index = bits), float64."""
    n = 1 << elem.bits
    codes = np.arange(n)
    mag_bits = elem.bits - (1 if elem.signed else 0)
    mag = codes & ((1 << mag_bits) - 1)
    e, m = mag >> elem.mant_bits, mag & ((1 << elem.mant_bits) - 1)
    scale = 2.0 ** elem.mant_bits
    v = np.where(e == 0, m / scale * 2.0 ** elem.min_exp,
                 (1 + m / scale) * 2.0 ** (e - elem.bias))
    if elem.signed:
        v = np.where(codes >> mag_bits, -v, v)
    if elem.has_nan:
        v[n - 1] = np.nan                    # e5m3: 0xff (no sign bit, no infinity)
    return v


def encode_bits(values, elem: ElementType) -> np.ndarray:
    """Values already representable in e2m1/e5m3 -> their bit patterns (uint8, one per value)."""
    codes = _codes(elem)
    x = np.asarray(values, dtype=np.float64)
    finite = codes[~np.isnan(codes)]
    order = np.argsort(finite, kind="stable")
    idx = np.searchsorted(finite[order], x)
    idx = np.clip(idx, 0, len(finite) - 1)
    bits = np.nonzero(~np.isnan(codes))[0][order][idx]
    neg_zero = (x == 0) & np.signbit(x) & elem.signed
    bits = np.where(neg_zero, 1 << (elem.bits - 1), np.where(x == 0, 0, bits))
    if elem.has_nan:
        bits = np.where(np.isnan(x), (1 << elem.bits) - 1, bits)
    return bits.astype(np.uint8)


def decode_bits(bits, elem: ElementType) -> np.ndarray:
    """Bit patterns of e2m1/e5m3 (uint8, one per value) -> their values, float32."""
    return _codes(elem)[np.asarray(bits).astype(np.int64) & ((1 << elem.bits) - 1)].astype(
        np.float32)
