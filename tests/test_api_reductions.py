"""Reductions and scans of the kernel language against numpy, in the interpreter and both CPU
modes: rows that are all negative (max), all positive (min), only -0.0, ±0, one NaN, all NaN,
±inf, ties; every float type and every integer type (wrap-around sums and products).

One kernel per dtype family; each function's rows are checked separately (api_reference.py
holds the inputs and the comparison, guarded.py the guard bytes).
"""
import functools
import itertools

import numpy as np
import pytest

import api_reference as R
import tilepy as ct
from guarded import MODES, RunsByMode

ROWS, COLS = 8, 32
FLOAT_RED = ("sum", "prod", "max", "min", "max_nan", "min_nan", "reduce_max", "reduce_add",
             "all_max", "all_min", "max_keepdims")
INT_RED = ("sum", "prod", "max", "min", "reduce_max", "reduce_add", "all_max", "all_min",
           "max_keepdims")
SCANS = ("cumsum", "cumprod", "cumsum_reverse", "scan_add", "cumprod_reverse")
ARGS = ("argmax", "argmin")


def combine_max(a, b):
    return ct.maximum(a, b)


def combine_add(a, b):
    return a + b


def reduction_rows(m, red, arg, scn, lowest, floats):
    x = ct.load(m, (0, 0), (8, 32))
    rows = (ct.sum(x, 1), ct.prod(x, 1), ct.max(x, 1), ct.min(x, 1))
    if floats:
        rows = rows + (ct.max(x, 1, propagate_nan=True), ct.min(x, 1, propagate_nan=True))
    rows = rows + (ct.reduce(x, 1, combine_max, lowest), ct.reduce(x, 1, combine_add, 0),
                   ct.broadcast_to(ct.max(x).reshape((1,)), (8,)),
                   ct.broadcast_to(ct.min(x).reshape((1,)), (8,)),
                   ct.max(x, 1, keepdims=True).reshape((8,)))
    for j in ct.static_iter(range(len(rows))):
        ct.store(red, (j, 0), rows[j].reshape((1, 8)))
    ct.store(arg, (0, 0), ct.argmax(x, 1).reshape((1, 8)))
    ct.store(arg, (1, 0), x.argmin(1).reshape((1, 8)))
    scans = (ct.cumsum(x, 1), ct.cumprod(x, 1), ct.cumsum(x, 1, reverse=True),
             ct.scan(x, 1, combine_add, 0), x.cumprod(1, reverse=True))
    for j in ct.static_iter(range(len(scans))):
        ct.store(scn, (j, 0), scans[j])


@ct.kernel
def float_reductions(m0, r0, a0, s0, m1, r1, a1, s1, m2, r2, a2, s2, m3, r3, a3, s3):
    reduction_rows(m0, r0, a0, s0, float("-inf"), True)
    reduction_rows(m1, r1, a1, s1, float("-inf"), True)
    reduction_rows(m2, r2, a2, s2, float("-inf"), True)
    reduction_rows(m3, r3, a3, s3, float("-inf"), True)


LOWEST = [int(np.iinfo(d).min) for d in R.INTS]


@ct.kernel
def int_reductions(m0, r0, a0, s0, m1, r1, a1, s1, m2, r2, a2, s2, m3, r3, a3, s3,
                   m4, r4, a4, s4, m5, r5, a5, s5, m6, r6, a6, s6, m7, r7, a7, s7):
    reduction_rows(m0, r0, a0, s0, -128, False)
    reduction_rows(m1, r1, a1, s1, -32768, False)
    reduction_rows(m2, r2, a2, s2, -2147483648, False)
    reduction_rows(m3, r3, a3, s3, -9223372036854775808, False)
    reduction_rows(m4, r4, a4, s4, 0, False)
    reduction_rows(m5, r5, a5, s5, 0, False)
    reduction_rows(m6, r6, a6, s6, 0, False)
    reduction_rows(m7, r7, a7, s7, 0, False)


def _args(dtypes, rows_of, names):
    out = []
    for dt in dtypes:
        out += [rows_of(dt, COLS), np.zeros((len(names), ROWS), dt),
                np.zeros((2, ROWS), np.int32), np.zeros((len(SCANS) * ROWS, COLS), dt)]
    return tuple(out)


@pytest.fixture(scope="module")
def float_runs():
    args = _args(R.FLOATS, R.reduction_rows, FLOAT_RED)
    return args, RunsByMode((1,), float_reductions, args)


@pytest.fixture(scope="module")
def int_runs():
    args = _args(R.INTS, R.int_reduction_rows, INT_RED)
    return args, RunsByMode((1,), int_reductions, args)


# ------------------------------------------------------------------------------ references
def fold(fn, identity):
    """Row-wise left fold from `identity`, as the reduction's definition reads."""
    def ref(m):
        acc = np.full(m.shape[0], identity, m.dtype)
        for c in range(m.shape[1]):
            acc = fn(acc, m[:, c]).astype(m.dtype)
        return acc
    return ref


def _everywhere(f):
    return lambda m: np.full(m.shape[0], f(m.reshape(1, -1))[0], m.dtype)


# A NaN-ignoring max/min folds from NaN, its exact identity: a row of NaNs gives NaN, as cuTile's
# fold of the elements on a GPU (from -inf it would give -inf; ir.ops.fold_identities).
FLOAT_REFS = {
    "max": fold(R.max_number, np.nan), "min": fold(R.min_number, np.nan),
    "max_nan": fold(R.maximum_nan, -np.inf), "min_nan": fold(R.minimum_nan, np.inf),
    "reduce_max": fold(R.max_number, np.nan), "max_keepdims": fold(R.max_number, np.nan),
    "all_max": _everywhere(fold(R.max_number, np.nan)),
    "all_min": _everywhere(fold(R.min_number, np.nan)),
}


def _sum_like(got, m, what, mode, cum=False):
    """Sums and products in any order: within 32 ulps of the magnitude sum (NaN, inf exact)."""
    m64 = m.astype(np.float64)
    with np.errstate(all="ignore"):
        if what.startswith("prod") or what.startswith("cumprod"):
            rev = what.endswith("reverse")
            mm = m64[:, ::-1] if rev else m64
            ref = np.cumprod(mm, 1) if cum else np.prod(mm, 1)
            ref = ref[:, ::-1] if rev and cum else ref
            scale = np.abs(ref)
        else:
            rev = what.endswith("reverse")
            mm = m64[:, ::-1] if rev else m64
            ref = np.cumsum(mm, 1) if cum else np.sum(mm, 1)
            ref = ref[:, ::-1] if rev and cum else ref
            mag = np.cumsum(np.abs(mm), 1) if cum else np.sum(np.abs(mm), 1)
            scale = mag[:, ::-1] if rev and cum else mag
    ref_dt = ref.astype(m.dtype)
    g = got.astype(np.float64)
    eps = 2.0 ** -R.MANTISSA[m.dtype]
    with np.errstate(invalid="ignore"):
        ok = (np.isnan(g) & np.isnan(ref_dt.astype(np.float64))) | (g == ref_dt) | \
             (np.isfinite(ref_dt.astype(np.float64)) & (np.abs(g - ref) <= 32 * eps * scale))
    return ok, ref_dt


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.FLOATS)), ids=[str(d) for d in R.FLOATS])
@pytest.mark.parametrize("name", FLOAT_RED)
def test_float_reduction(float_runs, mode, d, name):
    args, runs = float_runs
    m, got = args[4 * d], runs[mode][4 * d + 1][FLOAT_RED.index(name)]
    if name in FLOAT_REFS:
        want = FLOAT_REFS[name](m)
        bad = R.float_mismatch(got, want, 0)
    else:
        ok, want = _sum_like(got, m, {"reduce_add": "sum"}.get(name, name), mode)
        bad = ~ok
    assert not bad.any(), R.report(f"{name} {m.dtype} ({mode})", np.arange(ROWS), got, want, bad)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.FLOATS)), ids=[str(d) for d in R.FLOATS])
@pytest.mark.parametrize("name", SCANS)
def test_float_scan(float_runs, mode, d, name):
    args, runs = float_runs
    m = args[4 * d]
    j = SCANS.index(name)
    got = runs[mode][4 * d + 3][j * ROWS:(j + 1) * ROWS]
    ok, want = _sum_like(got, m, {"scan_add": "cumsum"}.get(name, name), mode, cum=True)
    assert ok.all(), R.report(f"{name} {m.dtype} ({mode})", m, got, want, ~ok)


def _nan_free_arg(m, largest):
    """argmax/argmin ignoring NaN (propagate_nan=False), the first of equal values; -0.0 and
    +0.0 are equal here; a row of NaN only has index 0."""
    m64 = m.astype(np.float64)
    key = np.where(np.isnan(m64), -np.inf if largest else np.inf, m64)
    return (np.argmax(key, 1) if largest else np.argmin(key, 1)).astype(np.int32)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.FLOATS)), ids=[str(d) for d in R.FLOATS])
def test_float_argmax_argmin(float_runs, mode, d):
    args, runs = float_runs
    m, got = args[4 * d], runs[mode][4 * d + 2]
    for k, largest in enumerate((True, False)):
        want = _nan_free_arg(m, largest)
        assert np.array_equal(got[k], want), (ARGS[k], m.dtype, mode, got[k], want)


def _int_ref(name, m):
    dt = m.dtype
    wrap = functools.partial(R.wrap_to, dt=dt)
    obj = m.astype(object)
    table = {
        "sum": lambda: wrap(obj.sum(1)), "reduce_add": lambda: wrap(obj.sum(1)),
        "prod": lambda: wrap(np.array([functools.reduce(lambda a, b: a * b, r, 1) for r in obj],
                                      dtype=object)),
        "max": lambda: m.max(1), "reduce_max": lambda: m.max(1), "max_keepdims": lambda: m.max(1),
        "min": lambda: m.min(1), "all_max": lambda: np.full(ROWS, m.max(), dt),
        "all_min": lambda: np.full(ROWS, m.min(), dt),
    }
    return np.asarray(table[name]()).astype(dt)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.INTS)), ids=[str(d) for d in R.INTS])
@pytest.mark.parametrize("name", INT_RED)
def test_int_reduction(int_runs, mode, d, name):
    args, runs = int_runs
    m, got = args[4 * d], runs[mode][4 * d + 1][INT_RED.index(name)]
    want = _int_ref(name, m)
    assert np.array_equal(got, want), R.report(f"{name} {m.dtype} ({mode})", np.arange(ROWS),
                                               got, want, got != want)


def _int_scan(name, m):
    rev = name.endswith("reverse")
    obj = m.astype(object)[:, ::-1] if rev else m.astype(object)
    op = (lambda a, b: a * b) if "prod" in name else (lambda a, b: a + b)
    out = np.array([list(itertools.accumulate(r, op)) for r in obj], dtype=object)
    return R.wrap_to(out[:, ::-1] if rev else out, m.dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", range(len(R.INTS)), ids=[str(d) for d in R.INTS])
def test_int_scans_and_args(int_runs, mode, d):
    args, runs = int_runs
    m = args[4 * d]
    for j, name in enumerate(SCANS):
        got = runs[mode][4 * d + 3][j * ROWS:(j + 1) * ROWS]
        want = _int_scan({"scan_add": "cumsum"}.get(name, name), m)
        assert np.array_equal(got, want), R.report(f"{name} {m.dtype} ({mode})", m, got, want,
                                                   got != want)
    got = runs[mode][4 * d + 2]
    assert np.array_equal(got[0], np.argmax(m, 1)) and np.array_equal(got[1], np.argmin(m, 1))
