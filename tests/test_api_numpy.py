"""Every element-wise builtin, operator and reduction of the kernel language against an
independent numpy/ml_dtypes reference (api_reference.py), in the interpreter and both CPU modes,
on inputs that bite: NaN, ±0, ±inf, denormals, the dtype's extremes, integer overflow, division
by negative numbers, all-negative rows for max and all-positive rows for min, every float type.

Few compiles: one kernel runs every function on every dtype of its family (four float types,
eight integer types); the modes reuse it, and each function's rows are checked separately.
Every output array has guard bytes (guarded.py).
"""
import numpy as np
import pytest

import api_reference as R
import tilepy as ct
from guarded import MODES, RunsByMode

N = 256
UNARY_F = tuple(getattr(ct, n) for n in R.UNARY_FLOAT)
BINARY_F = tuple(getattr(ct, n) for n in R.BINARY_FLOAT)
PRED = tuple(getattr(ct, n) for n in R.PREDICATES)
U, B = len(UNARY_F), len(BINARY_F)
# rows of a float dtype's value output: the named functions, then these
FLOAT_EXTRA = ("maximum_nan", "minimum_nan", "op+", "op-", "op*", "op/", "op//", "op%", "op**",
               "op-x")          # no divmod: cuTile refuses it on floats (test_frontend_language)
FLOAT_ROWS = tuple(R.UNARY_FLOAT) + tuple(R.BINARY_FLOAT) + FLOAT_EXTRA
PRED_ROWS = tuple(R.PREDICATES) + ("isnan", "op==", "op!=", "op<", "op<=", "op>", "op>=")


def float_rows(xy, vals, preds, N):
    x = ct.load(xy, (0, 0), (1, N))
    y = ct.load(xy, (1, 0), (1, N))
    for j in ct.static_iter(range(U)):
        ct.store(vals, (j, 0), UNARY_F[j](x))
    for j in ct.static_iter(range(B)):
        ct.store(vals, (U + j, 0), BINARY_F[j](x, y))
    extra = (ct.maximum(x, y, propagate_nan=True), ct.minimum(x, y, propagate_nan=True),
             x + y, x - y, x * y, x / y, x // y, x % y, x ** y, -x)
    for j in ct.static_iter(range(len(extra))):
        ct.store(vals, (U + B + j, 0), extra[j])
    for j in ct.static_iter(range(len(PRED))):
        ct.store(preds, (j, 0), PRED[j](x, y))
    ops = (ct.isnan(x), x == y, x != y, x < y, x <= y, x > y, x >= y)
    for j in ct.static_iter(range(len(ops))):
        ct.store(preds, (len(PRED) + j, 0), ops[j])


@ct.kernel
def float_suite(a0, v0, p0, a1, v1, p1, a2, v2, p2, a3, v3, p3, N: ct.Constant[int]):
    float_rows(a0, v0, p0, N)
    float_rows(a1, v1, p1, N)
    float_rows(a2, v2, p2, N)
    float_rows(a3, v3, p3, N)


def _float_args():
    args = []
    for dt in R.FLOATS:
        x, y = R.float_inputs(dt, N)
        args += [np.stack([x, y]), np.zeros((len(FLOAT_ROWS), N), dt),
                 np.zeros((len(PRED_ROWS), N), np.bool_)]
    return tuple(args) + (N,)


def _float_refs(name):
    ref, *_ = R.BINARY_FLOAT.get(name) or R.UNARY_FLOAT.get(name) or (None,)
    alias = {"op+": "add", "op-": "sub", "op*": "mul", "op/": "truediv", "op//": "floordiv",
             "op%": "mod", "op**": "pow", "op-x": "negative"}
    if name in alias:
        return _float_refs(alias[name])
    if name == "maximum_nan":
        return R.same(R.maximum_nan), 0, 0
    if name == "minimum_nan":
        return R.same(R.minimum_nan), 0, 0
    return (R.BINARY_FLOAT.get(name) or R.UNARY_FLOAT[name])


@pytest.fixture(scope="module")
def float_results():
    return _float_args(), RunsByMode((1,), float_suite, _float_args())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.FLOATS)), ids=[str(d) for d in R.FLOATS])
@pytest.mark.parametrize("name", FLOAT_ROWS)
def test_float_function(float_results, mode, d, name):
    args, runs = float_results
    xy = args[3 * d]
    got = runs[mode][3 * d + 1][FLOAT_ROWS.index(name)]
    ref, ulps, half_ulps = _float_refs(name)
    dt = R.FLOATS[d]
    binary = name not in R.UNARY_FLOAT and name != "op-x"
    want = ref(xy[0], xy[1]) if binary else ref(xy[0])
    bad = R.float_mismatch(got, want, half_ulps if dt.itemsize == 2 else ulps)
    assert not bad.any(), R.report(f"{name} {dt} ({mode})", xy[0], got, want, bad,
                                   xy[1] if binary else None)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.FLOATS)), ids=[str(d) for d in R.FLOATS])
@pytest.mark.parametrize("name", PRED_ROWS)
def test_float_predicate(float_results, mode, d, name):
    args, runs = float_results
    x, y = args[3 * d].astype(np.float64)
    got = runs[mode][3 * d + 2][PRED_ROWS.index(name)]
    ops = {"==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
           ">=": "greater_equal"}
    want = np.isnan(x) if name == "isnan" else R.PREDICATES[ops.get(name[2:], name)](x, y)
    bad = got != want
    assert not bad.any(), R.report(f"{name} {R.FLOATS[d]} ({mode})", x, got, want, bad, y)


# --------------------------------------------------------------------------------- integers
BINARY_I = tuple(getattr(ct, n) for n in R.BINARY_INT)
UNARY_I = (ct.negative, ct.abs, ct.bitwise_not)
INT_ROWS = tuple(R.BINARY_INT) + ("negative", "abs", "bitwise_not", "pow3", "bitwise_lshift",
                                  "bitwise_rshift", "op+", "op-", "op*", "op//", "op%", "op&",
                                  "op|", "op^", "op<<", "op>>", "op~", "op-x", "divmod0",
                                  "divmod1")
INT_ALIAS = {"op+": "add", "op-": "sub", "op*": "mul", "op//": "floordiv", "op%": "mod",
             "op&": "bitwise_and", "op|": "bitwise_or", "op^": "bitwise_xor",
             "op<<": "bitwise_lshift", "op>>": "bitwise_rshift", "op~": "bitwise_not",
             "op-x": "negative", "divmod0": "floordiv", "divmod1": "mod"}


def int_rows(xys, vals, preds, N):
    x = ct.load(xys, (0, 0), (1, N))
    y = ct.load(xys, (1, 0), (1, N))
    s = ct.load(xys, (2, 0), (1, N))
    for j in ct.static_iter(range(len(BINARY_I))):
        ct.store(vals, (j, 0), BINARY_I[j](x, y))
    q, r = ct.divmod(x, y)
    rest = (ct.negative(x), ct.abs(x), ct.bitwise_not(x), x ** 3, ct.bitwise_lshift(x, s),
            ct.bitwise_rshift(x, s), x + y, x - y, x * y, x // y, x % y, x & y, x | y, x ^ y,
            x << s, x >> s, ~x, -x, q, r)
    for j in ct.static_iter(range(len(rest))):
        ct.store(vals, (len(BINARY_I) + j, 0), rest[j])
    for j in ct.static_iter(range(len(PRED))):
        ct.store(preds, (j, 0), PRED[j](x, y))


@ct.kernel
def int_suite(a0, v0, p0, a1, v1, p1, a2, v2, p2, a3, v3, p3, a4, v4, p4, a5, v5, p5, a6, v6, p6,
              a7, v7, p7, N: ct.Constant[int]):
    int_rows(a0, v0, p0, N)
    int_rows(a1, v1, p1, N)
    int_rows(a2, v2, p2, N)
    int_rows(a3, v3, p3, N)
    int_rows(a4, v4, p4, N)
    int_rows(a5, v5, p5, N)
    int_rows(a6, v6, p6, N)
    int_rows(a7, v7, p7, N)


def _int_args():
    args = []
    for dt in R.INTS:
        x, y, s = R.int_inputs(dt)
        x, y = R.divisor(x, y)          # division rows: no 0 divisor, no MIN // -1
        args += [np.stack([x, y, s]), np.zeros((len(INT_ROWS), N), dt),
                 np.zeros((len(R.PREDICATES), N), np.bool_)]
    return tuple(args) + (N,)


@pytest.fixture(scope="module")
def int_results():
    return _int_args(), RunsByMode((1,), int_suite, _int_args())


def _int_ref(name):
    name = INT_ALIAS.get(name, name)
    return R.BINARY_INT.get(name) or R.UNARY_INT.get(name) or R.SHIFTS[name], name


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.INTS)), ids=[str(d) for d in R.INTS])
@pytest.mark.parametrize("name", INT_ROWS)
def test_int_function(int_results, mode, d, name):
    args, runs = int_results
    x, y, s = args[3 * d]
    got = runs[mode][3 * d + 1][INT_ROWS.index(name)]
    ref, base = _int_ref(name)
    with np.errstate(all="ignore"):
        want = (ref(x) if base in R.UNARY_INT else ref(x, s) if base in R.SHIFTS else ref(x, y))
    bad = got != want
    assert not bad.any(), R.report(f"{name} {R.INTS[d]} ({mode})", x, got, want, bad,
                                   None if base in R.UNARY_INT else s if base in R.SHIFTS else y)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.INTS)), ids=[str(d) for d in R.INTS])
def test_int_predicates(int_results, mode, d):
    args, runs = int_results
    x, y, _ = args[3 * d]
    for j, (name, fn) in enumerate(R.PREDICATES.items()):
        got, want = runs[mode][3 * d + 2][j], fn(x, y)
        assert np.array_equal(got, want), R.report(f"{name} {R.INTS[d]} ({mode})", x, got,
                                                   want, got != want, y)
