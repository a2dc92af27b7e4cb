"""Independent numpy/ml_dtypes references for the kernel language's builtins, the inputs that
bite (special values of every dtype), and the comparison of results in ulps.

Nothing here imports tilepy's implementation: the references are written from the API's
documented meaning (and the Tile IR spec for NaN and signed-zero rules), in numpy.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))
INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64))
MANTISSA = {np.dtype(np.float16): 10, BF16: 7, np.dtype(np.float32): 23, np.dtype(np.float64): 52}
rng = np.random.default_rng(22)


def finfo(dt):
    return ml_dtypes.finfo(dt)


# ------------------------------------------------------------------------------ inputs
def float_specials(dt) -> np.ndarray:
    """16 values that bite: NaN, ±0, ±inf, the extremes, the smallest normal and denormal."""
    fi = finfo(dt)
    den = float(fi.smallest_subnormal)
    vals = [np.nan, 0.0, -0.0, np.inf, -np.inf, float(fi.max), -float(fi.max),
            float(fi.smallest_normal), -den, den * 3, 1.0, -1.0, 0.5, -2.5, 3.0, -7.25]
    return np.array(vals, np.float64).astype(dt)


def float_inputs(dt, n=256) -> tuple[np.ndarray, np.ndarray]:
    """x, y: every pair of the specials (16 x 16), then random values of mixed magnitude."""
    s = float_specials(dt)
    x, y = np.repeat(s, 16), np.tile(s, 16)
    if n > 256:
        r = (rng.standard_normal((2, n - 256)) * np.exp2(rng.integers(-6, 7, (2, n - 256))))
        x, y = np.concatenate([x, r[0].astype(dt)]), np.concatenate([y, r[1].astype(dt)])
    return x.astype(dt), y.astype(dt)


def int_specials(dt) -> np.ndarray:
    ii = np.iinfo(dt)
    vals = [ii.min, ii.max, 0, 1, ii.max - 1, ii.min + 1, 7, 100, 2, 3]
    if ii.min < 0:
        vals += [-1, -2, -7, -100, -3, ii.min // 2]
    else:
        vals += [ii.max // 2, ii.max // 2 + 1, 5, 6, 64, 200]
    return np.array(vals, dtype=object).astype(dt)


def int_inputs(dt) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, y (every pair of the specials), and shift amounts in [0, bits)."""
    s = int_specials(dt)
    x, y = np.repeat(s, 16), np.tile(s, 16)
    bits = dt.itemsize * 8
    sh = np.arange(256) % bits
    return x, y, sh.astype(dt)


def divisor(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) made safe for integer division: no 0 divisor, no MIN / -1 (undefined in C)."""
    y = np.where(y == 0, np.array(3, y.dtype), y)
    if x.dtype.kind == "i":
        bad = (x == np.iinfo(x.dtype).min) & (y == -1)
        x = np.where(bad, np.array(5, x.dtype), x)
    return x, y


def reduction_rows(dt, cols=32) -> np.ndarray:
    """Rows that bite a reduction: all negative, all positive, -0.0 only, ±0, one NaN, all NaN,
    ±inf, ties at the maximum, random."""
    r = rng.uniform(0.5, 2.0, cols)
    rows = [-r, r, np.full(cols, -0.0), np.where(np.arange(cols) % 2, 0.0, -0.0),
            np.where(np.arange(cols) == 5, np.nan, -r), np.full(cols, np.nan),
            np.where(np.arange(cols) == 3, np.inf, np.where(np.arange(cols) == 9, -np.inf, r)),
            np.where(np.arange(cols) % 7 == 2, 4.0, -r)]
    return np.array(rows).astype(dt)


def int_reduction_rows(dt, cols=32) -> np.ndarray:
    """All negative (max), all positive (min), the extremes, ties, wrap-around sums."""
    ii = np.iinfo(dt)
    lo, hi = int(ii.min), int(ii.max)
    pos = [int(v) for v in rng.integers(1, min(hi, 1000) - 3, cols)]
    at = lambda k, v, row: [v if i == k else r for i, r in enumerate(row)]   # noqa: E731
    ties = [11 if i % 5 == 1 else r for i, r in enumerate(pos)]
    if lo < 0:
        neg = [-p for p in pos]
        rows = [neg, pos, [lo] * cols, [hi] * cols, [11 if i % 5 == 1 else r for i, r in
                                                     enumerate(neg)], [-1] * cols,
                at(0, hi, pos), at(7, lo, neg)]
    else:
        rows = [pos, [p + 3 for p in pos], [0] * cols, [hi] * cols, ties, [1] * cols,
                at(0, hi, pos), at(7, 0, pos)]
    return np.array(rows, dtype=object).astype(dt)


# -------------------------------------------------------------------------- references
@np.errstate(invalid="ignore")
def max_number(a, b):
    """IEEE maximumNumber (Tile IR maxf without propagate_nan): NaN only if both are; +0 > -0."""
    r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.where(a > b, a, b)))
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a) & np.signbit(b), a, abs_zero(a)), r)


@np.errstate(invalid="ignore")
def min_number(a, b):
    r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.where(a < b, a, b)))
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a) | np.signbit(b), -abs_zero(a), a), r)


def abs_zero(a):
    return np.zeros_like(a)


def maximum_nan(a, b):
    """IEEE maximum (propagate_nan): NaN if either is."""
    return np.where(np.isnan(a) | np.isnan(b), np.nan, max_number(a, b)).astype(a.dtype)


def minimum_nan(a, b):
    return np.where(np.isnan(a) | np.isnan(b), np.nan, min_number(a, b)).astype(a.dtype)


def in64(fn):
    """A float reference computed in float64 and rounded once to the operand dtype."""
    def ref(*xs):
        with np.errstate(all="ignore"):
            return fn(*[x.astype(np.float64) for x in xs]).astype(xs[0].dtype)
    return ref


def same(fn):
    """A reference computed in the operand dtype itself (numpy and ml_dtypes round IEEE)."""
    def ref(*xs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*xs)).astype(xs[0].dtype)
    return ref


# name -> (reference, tolerance in ulps for f32/f64, for f16/bf16)
UNARY_FLOAT = {
    "exp": (in64(np.exp), 4, 1), "exp2": (in64(np.exp2), 4, 1), "log": (in64(np.log), 4, 1),
    "log2": (in64(np.log2), 4, 1), "sqrt": (in64(np.sqrt), 0, 0),
    "rsqrt": (in64(lambda x: 1 / np.sqrt(x)), 2, 1), "sin": (in64(np.sin), 4, 1),
    "cos": (in64(np.cos), 4, 1), "tan": (in64(np.tan), 4, 1), "sinh": (in64(np.sinh), 4, 1),
    "cosh": (in64(np.cosh), 4, 1), "tanh": (in64(np.tanh), 4, 1),
    "floor": (same(np.floor), 0, 0), "ceil": (same(np.ceil), 0, 0),
    "abs": (same(np.abs), 0, 0), "negative": (same(np.negative), 0, 0),
}

BINARY_FLOAT = {
    "add": (same(np.add), 0, 0), "sub": (same(np.subtract), 0, 0),
    "mul": (same(np.multiply), 0, 0), "truediv": (same(np.divide), 0, 0),
    # floor of the rounded quotient (not Python's exact floor division: 1 // 0.1 is 10 here)
    "floordiv": (same(lambda x, y: np.floor(np.divide(x, y))), 0, 0),
    "mod": (same(np.mod), 0, 0), "pow": (in64(np.power), 4, 1),
    "atan2": (in64(np.arctan2), 4, 1),
    "maximum": (same(max_number), 0, 0), "minimum": (same(min_number), 0, 0),
}

PREDICATES = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
              "less_equal": np.less_equal, "greater": np.greater,
              "greater_equal": np.greater_equal}


def _floordiv_int(x, y):
    x, y = divisor(x, y)
    return x // y


def _mod_int(x, y):
    x, y = divisor(x, y)
    return x % y


def wrap_to(exact, dt) -> np.ndarray:
    """Python ints (any array shape) wrapped to the width of integer dtype `dt`."""
    bits = dt.itemsize * 8
    u = [int(v) % (1 << bits) for v in np.ravel(exact)]
    if dt.kind == "i":
        u = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in u]
    return np.array(u, dtype=object).astype(dt).reshape(np.shape(exact))


def _wrap(fn):
    """An integer reference computed exactly in Python ints, wrapped to the dtype's width."""
    def ref(*xs):
        return wrap_to(fn(*[x.astype(object) for x in xs]), xs[0].dtype)
    return ref


BINARY_INT = {
    "add": _wrap(lambda x, y: x + y), "sub": _wrap(lambda x, y: x - y),
    "mul": _wrap(lambda x, y: x * y), "floordiv": _floordiv_int, "mod": _mod_int,
    "maximum": np.maximum, "minimum": np.minimum, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
}
UNARY_INT = {"negative": _wrap(lambda x: -x), "abs": _wrap(lambda x: abs(x)),
             "bitwise_not": np.invert, "pow3": _wrap(lambda x: x ** 3)}
SHIFTS = {"bitwise_lshift": _wrap(lambda x, s: x << s),
          "bitwise_rshift": lambda x, s: x >> s}


# ------------------------------------------------------------------------- comparison
def ulp(ref: np.ndarray) -> np.ndarray:
    """The spacing of the dtype at each reference value (at least the smallest denormal)."""
    dt = ref.dtype
    m = MANTISSA[dt]
    fi = finfo(dt)
    a = np.abs(ref.astype(np.float64))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    return np.maximum(np.exp2(e - m), float(fi.smallest_subnormal))


def float_mismatch(got: np.ndarray, ref: np.ndarray, ulps: int) -> np.ndarray:
    """Mask of elements where `got` is not `ref` within `ulps` (NaN matches NaN; exact results
    also match the sign of zero; an infinity matches only itself)."""
    g, r = got.astype(np.float64), ref.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(r)
    with np.errstate(invalid="ignore"):
        exact = (g == r) & (np.signbit(g) == np.signbit(r))
        inf = np.isinf(g) | np.isinf(r)
        near = ~inf & (np.abs(g - r) <= ulps * ulp(ref)) & (ulps > 0)
    return ~(both_nan | exact | near)


def report(what: str, x, got, ref, bad, y=None) -> str:
    idx = np.nonzero(np.ravel(bad))[0][:8]
    rows = []
    for i in idx:
        arg = f"x={np.ravel(x)[i]!r}" + (f", y={np.ravel(y)[i]!r}" if y is not None else "")
        rows.append(f"  [{i}] {arg}: got {np.ravel(got)[i]!r}, expected {np.ravel(ref)[i]!r}")
    return f"{what}: {int(np.sum(bad))} elements differ\n" + "\n".join(rows)
