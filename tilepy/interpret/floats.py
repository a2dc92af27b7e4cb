"""Exact floating-point rounding for every Tile IR float format (spec 5.1, 5.1.3).

The interpreter computes in float64 and rounds once into the result format with `round_f64`,
its own rounding (numpy's casts are right for f16/f32, but ml_dtypes converts float64 to bf16 and
fp8 through float32, which rounds twice). This is exact where the float64 value is:

* the exact result (conversions, products of formats of at most 26 significand bits, fmod), or
* the correctly rounded float64 result of + - * / sqrt on operands of at most 24 significand bits:
  53 >= 2p + 2, so rounding twice gives the correctly rounded result (Figueroa's theorem), or
* a round-to-odd float64 value of the exact result (`ro_sum`), which rounds correctly into any
  format of at most 51 bits in every rounding mode.

Directed rounding modes and f64 fused multiply-add go through exact rationals (`round_fraction`).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..types import element as E


@dataclass(frozen=True)
class Fmt:
    p: int              # significand bits, hidden bit included
    emin: int           # exponent of the smallest normal number
    max: float          # largest finite value
    has_inf: bool
    satfinite: bool     # conversions into it saturate (spec 5.1.3: e4m3, e5m2)
    nan_to_max: bool    # NaN converts to +max (e4m3 has no NaN in conversions, spec 5.1.3)
    unsigned: bool = False   # no sign bit (e5m3fnu): negative values saturate to +0


FORMATS: dict[E.ElementType, Fmt] = {
    E.F16: Fmt(11, -14, 65504.0, True, False, False),
    E.BF16: Fmt(8, -126, float(np.ldexp(255.0, 120)), True, False, False),
    E.TF32: Fmt(11, -126, float(np.ldexp(2047.0, 117)), True, False, False),
    E.F32: Fmt(24, -126, float(np.finfo(np.float32).max), True, False, False),
    E.F64: Fmt(53, -1022, float(np.finfo(np.float64).max), True, False, False),
    E.E4M3: Fmt(4, -6, 448.0, False, True, True),
    E.E5M2: Fmt(3, -14, 57344.0, True, True, False),
    # e2m1 has neither NaN nor Inf: NaN converts to +MAX_NORM as for e4m3 (spec 5.1.3's rule for
    # a target without NaN); e5m3 keeps NaN (0xff) and saturates below at +0 (no sign bit)
    E.E2M1: Fmt(2, 0, 6.0, False, True, E.E2M1.nan_to_max),
    E.E5M3: Fmt(4, -14, 114688.0, False, True, False, unsigned=True),
}

MODES = ("nearest_even", "zero", "negative_inf", "positive_inf")
_NUMPY_RNE = {E.F32: np.float32, E.F16: np.float16}


def storage(elem) -> np.dtype:
    return E.NUMPY_DTYPE[elem]


def to_f64(a: np.ndarray) -> np.ndarray:
    """Exact float64 values of a float tile (every format widens exactly)."""
    return np.asarray(a).astype(np.float64)


def encode(x: np.ndarray, elem) -> np.ndarray:
    """Storage array of float64 values that are already representable in `elem`."""
    x = np.asarray(x, dtype=np.float64)
    if elem in (E.BF16, E.E4M3, E.E5M2, E.E8M0):
        return x.astype(np.float32).astype(storage(elem))   # exact: the value is representable
    return x.astype(storage(elem))


def round_e8m0(x, mode: str) -> np.ndarray:
    """float64 values into e8m0 (powers of two 2^-127..2^127) rounding toward zero or +inf,
    saturating to that range (+inf gives 2^127); zero, negative values and NaN have no e8m0 value
    and give NaN."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    pos = np.isfinite(x) & (x > 0)
    m, e = np.frexp(x[pos])                      # x = m * 2^e, 0.5 <= m < 1
    k = e - 1 + ((m != 0.5) if mode == "positive_inf" else 0)
    out[pos] = np.ldexp(1.0, np.clip(k, -127, 127))
    out[np.isposinf(x)] = 2.0 ** 127
    return out


def round_f64(x, elem, mode: str = "nearest_even", satfinite: bool | None = None) -> np.ndarray:
    """Round float64 values (exact, or round-to-odd) into `elem`; returns float64 values."""
    x = np.asarray(x, dtype=np.float64)
    fmt = FORMATS[elem]
    if elem == E.F64:
        return x.copy()
    if elem in _NUMPY_RNE and mode == "nearest_even" and not satfinite:
        with np.errstate(over="ignore"):      # numpy's float64 -> f32/f16 casts round once
            return x.astype(_NUMPY_RNE[elem]).astype(np.float64)
    sat = fmt.satfinite if satfinite is None else satfinite
    out = np.array(x, dtype=np.float64, copy=True)
    a = np.abs(x)
    neg = np.signbit(x)
    fin = np.isfinite(x) & (a != 0)
    if fin.any():
        m, e = np.frexp(a[fin])
        q = np.maximum(e - fmt.p, fmt.emin - fmt.p + 1)
        s = np.ldexp(m, e - q)                    # exact: a power-of-two scaling
        r = np.floor(s)
        frac = s - r
        ng = neg[fin]
        if mode == "nearest_even":
            up = (frac > 0.5) | ((frac == 0.5) & (np.fmod(r, 2) == 1))
        elif mode == "zero":
            up = np.zeros_like(frac, dtype=bool)
        elif mode == "positive_inf":
            up = (frac > 0) & ~ng
        elif mode == "negative_inf":
            up = (frac > 0) & ng
        else:
            raise ValueError(mode)
        with np.errstate(over="ignore"):
            v = np.ldexp(r + up, q)
        big = v > fmt.max
        if big.any():
            v[big] = _overflow(ng[big], fmt, mode, sat)
        out[fin] = np.where(ng, -v, v)
    inf = np.isinf(x)
    if inf.any() and (sat or not fmt.has_inf):
        out[inf] = np.where(neg[inf], -fmt.max, fmt.max)
    nan = np.isnan(x)
    if nan.any() and fmt.nan_to_max:
        out[nan] = fmt.max
    if fmt.unsigned:
        out[~nan & (np.signbit(out) | (out < 0))] = 0.0   # the nearest value with no sign: +0
    return out


def _overflow(neg, fmt: Fmt, mode: str, sat: bool):
    """Magnitudes of overflowing results (IEEE 754 7.4, or saturation)."""
    if sat or not fmt.has_inf:
        return np.full(neg.shape, fmt.max)
    to_inf = {"nearest_even": np.ones_like(neg), "nearest_away": np.ones_like(neg),
              "zero": np.zeros_like(neg),
              "positive_inf": ~neg, "negative_inf": neg}[mode]
    return np.where(to_inf, np.inf, fmt.max)


def flush_subnormals(x: np.ndarray, elem) -> np.ndarray:
    """Sign-preserving flush of subnormal values to zero (flush_to_zero modifier)."""
    tiny = np.ldexp(1.0, FORMATS[elem].emin)
    x = np.asarray(x, dtype=np.float64)
    return np.where((np.abs(x) < tiny) & (x != 0), np.copysign(0.0, x), x)


# ---------------------------------------------------------------------------- round to odd
def two_sum(a: np.ndarray, b: np.ndarray):
    """s = fl(a + b) and the exact error e = (a + b) - s (Knuth), for finite s."""
    s = a + b
    bb = s - a
    with np.errstate(invalid="ignore"):
        e = (a - (s - bb)) + (b - bb)
    return s, e


def ro_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b rounded to odd in float64 (exact input to any rounding of at most 51 bits)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    a = np.atleast_1d(np.asarray(a, dtype=np.float64))    # 0-d arithmetic gives numpy scalars
    b = np.atleast_1d(np.asarray(b, dtype=np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        s, e = two_sum(a, b)
    inexact = np.isfinite(s) & (e != 0) & np.isfinite(e)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    fix = inexact & even
    if fix.any():
        s = s.copy()
        s[fix] = np.nextafter(s[fix], np.where(e[fix] > 0, np.inf, -np.inf))
    return s.reshape(shape)


# ---------------------------------------------------------------------------- exact rationals
def round_fraction(q: Fraction, elem, mode: str = "nearest_even", neg_zero: bool = False) -> float:
    """The exact rational `q` rounded into `elem` (a float64 value). `neg_zero`: sign of a 0."""
    fmt = FORMATS[elem]
    if q == 0:
        return -0.0 if neg_zero else 0.0
    neg = q < 0
    a = -q if neg else q
    exp = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** exp > a:
        exp -= 1                                   # now 2**exp <= a < 2**(exp + 1)
    qexp = max(exp - (fmt.p - 1), fmt.emin - fmt.p + 1)
    scaled = a / Fraction(2) ** qexp
    r = scaled.numerator // scaled.denominator
    frac = scaled - r
    if mode == "nearest_even":
        up = frac > Fraction(1, 2) or (frac == Fraction(1, 2) and r % 2 == 1)
    elif mode == "zero":
        up = False
    elif mode == "positive_inf":
        up = frac > 0 and not neg
    elif mode == "negative_inf":
        up = frac > 0 and neg
    elif mode == "nearest_away":
        up = frac >= Fraction(1, 2)
    else:
        raise ValueError(mode)
    r += int(up)
    try:
        v = float(np.ldexp(float(r), qexp))
    except OverflowError:
        v = float("inf")
    if v > fmt.max:
        v = float(_overflow(np.array([neg]), fmt, mode, fmt.satfinite)[0])
    return -v if neg else v


def fraction(x: float) -> Fraction:
    return Fraction(float(x))


def exact_elementwise(fn, arrays, elem, mode: str, zero_sign=None) -> np.ndarray:
    """Apply `fn` to exact rationals element by element and round once into `elem`.

    Inputs with inf/NaN use float math instead (IEEE rules for specials are exact). The sign of an
    exact zero result is `zero_sign(*floats)` when given, else that of the float computation.
    """
    flat = [np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays]
    out = np.empty(flat[0].shape, dtype=np.float64)
    for i in range(out.size):
        xs = [np.float64(f[i]) for f in flat]
        with np.errstate(all="ignore"):
            approx = fn(*xs)
        if not all(np.isfinite(xs)):
            out[i] = approx
            continue
        try:
            r = fn(*[fraction(x) for x in xs])
        except ZeroDivisionError:          # x / 0: an infinity or NaN, exact in every mode
            out[i] = approx
            continue
        if r == 0:
            neg = zero_sign(*xs) if zero_sign is not None else bool(np.signbit(approx))
            out[i] = -0.0 if neg else 0.0
        else:
            out[i] = round_fraction(r, elem, mode)
    return out.reshape(np.shape(arrays[0]))
