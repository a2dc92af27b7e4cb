"""The kernel language's shape, factory, conversion, memory, grid, matmul, atomic and
compile-time builtins against numpy, in the interpreter and both CPU modes (guard bytes on every
array), and the test that every public builtin of `tilepy.frontend.api` has a numpy check.

Results of one kernel are flattened into rows of one output per dtype, so one compile covers
many builtins; `ROWS_*` name the rows.
"""
import inspect
import os
import pathlib

import ml_dtypes
import numpy as np
import pytest

import api_reference as R
import tilepy as ct
import test_api_numpy as NUM
import test_api_reductions as RED
from guarded import MODES, RunsByMode
from tilepy.frontend import api

rng = np.random.default_rng(5)
F_ROWS = ("reshape", "permute", "transpose", "T", "broadcast_to", "expand_dims", "cat", "where",
          "full", "zeros", "ones", "arange", "astile", "astype_f16", "astype_bf16", "astype_f64",
          "matmul", "mma", "@", "static_eval", "ensure_constant", "assume_divisible_by")
I_ROWS = ("bitcast", "astype_i32", "astype_u8", "astype_i8_wrap", "gather", "gather_masked",
          "item", "extract", "grid", "load_zero", "load_plain", "atomic_add", "atomic_and",
          "atomic_or", "atomic_xor", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas")
PADS = (ct.PaddingMode.ZERO, ct.PaddingMode.NEG_ZERO, ct.PaddingMode.NAN,
        ct.PaddingMode.POS_INF, ct.PaddingMode.NEG_INF)


def row(t):
    return t.reshape((1, 32))


@ct.kernel
def structure(x, a16, b16, ints, f, i, pads, sc, at, T: ct.Constant[int]):
    t = ct.load(x, (0, 0), (4, 8))
    h = ct.astype(t, ct.float16)
    ct.static_assert(T == 32, "T is the row length")
    fr = (ct.reshape(t, (8, 4)), ct.permute(ct.reshape(t, (2, 2, 8)), (2, 0, 1)),
          ct.transpose(t), t.T, ct.broadcast_to(ct.load(x, (0, 0), (1, 8)), (4, 8)),
          ct.broadcast_to(ct.expand_dims(ct.load(x, (1, 0), (1, 8)).reshape((8,)), 0), (4, 8)),
          ct.cat((ct.load(x, (1, 0), (2, 8)), ct.load(x, (0, 0), (2, 8))), 0),
          ct.where(t > 0, t, -1.0), ct.full((32,), 2.5, ct.float32),
          ct.zeros((32,), ct.float32), ct.ones((32,), ct.float32),
          ct.arange(32, dtype=ct.float32), ct.broadcast_to(ct.astile(3.0), (32,)),
          h.astype(ct.float32), t.astype(ct.bfloat16).astype(ct.float32),
          t.astype(ct.float64).astype(ct.float32),
          ct.matmul(ct.load(a16, (0, 0), (4, 16)), ct.load(b16, (0, 0), (16, 8))),
          ct.mma(ct.load(a16, (0, 0), (4, 16)), ct.load(b16, (0, 0), (16, 8)), t),
          ct.load(a16, (0, 0), (4, 16)) @ ct.load(b16, (0, 0), (16, 8)),
          ct.full((32,), ct.static_eval(T * 2 + 1), ct.float32),
          ct.full((32,), ct.ensure_constant(T), ct.float32),
          ct.full((32,), ct.assume_divisible_by(ct.bid(0) + T, 4), ct.float32))
    for j in ct.static_iter(range(len(fr))):
        ct.store(f, (j, 0), row(fr[j].astype(ct.float32)))
    k = ct.arange(32, dtype=ct.int32)
    flat = ct.load(ints, (0,), (32,))
    cell = ct.extract(t, (1, 0), (2, 8)).reshape((16,))
    ir = (ct.bitcast(t, ct.int32), t.astype(ct.int32), t.astype(ct.uint8).astype(ct.int32),
          flat.astype(ct.int8).astype(ct.int32), ct.gather(ints, 31 - k),
          ct.gather(ints, k * 2, mask=k % 3 != 0, padding_value=-5),
          ct.broadcast_to(ct.extract(flat, (5,), (1,)).item(), (32,)),
          ct.cat((ct.bitcast(cell, ct.int32), ct.bitcast(cell, ct.int32) * 2), 0),
          ct.full((32,), ct.bid(0) * 100 + ct.num_blocks(0) * 10 + ct.cdiv(T, 3), ct.int32)
          + ct.num_tiles(x, 1, (4, 8)),
          ct.load(ints, (1,), (32,), padding_mode=ct.PaddingMode.ZERO),
          ct.load(ints, (0,), (32,)))
    for j in ct.static_iter(range(len(ir))):
        ct.store(i, (j, 0), row(ir[j]))
    for j in ct.static_iter(range(len(PADS))):
        ct.store(pads, (j, 0), ct.load(x, (1, 0), (1, 32), padding_mode=PADS[j]))
    ct.scatter(sc, (31 - k) * 2, k, mask=k % 4 != 1)
    atom = (ct.atomic_add(at, k, 5), ct.atomic_and(at, k + 32, 6), ct.atomic_or(at, k + 64, 6),
            ct.atomic_xor(at, k + 96, 6), ct.atomic_max(at, k + 128, 3),
            ct.atomic_min(at, k + 160, 3), ct.atomic_xchg(at, k + 192, k),
            ct.atomic_cas(at, k + 224, 2, 100))
    for j in ct.static_iter(range(len(atom))):
        ct.store(i, (len(ir) + j, 0), row(atom[j]))


def _args():
    x = (rng.standard_normal((4, 8)) * 4).astype(np.float32)
    x[0, :4] = [0.5, -0.0, 300.0, -1e-3]
    a16 = rng.standard_normal((4, 16)).astype(np.float16)
    b16 = rng.standard_normal((16, 8)).astype(np.float16)
    ints = np.arange(40, dtype=np.int32) * 37 - 700
    at = rng.integers(-9, 10, 256).astype(np.int32)
    return (x, a16, b16, ints, np.zeros((len(F_ROWS), 32), np.float32),
            np.zeros((len(I_ROWS), 32), np.int32), np.zeros((len(PADS), 32), np.float32),
            np.full(64, -1, np.int32), at, 32)


@pytest.fixture(scope="module")
def runs():
    args = _args()
    return args, RunsByMode((1,), structure, args)


def _tf32(v):
    """Round-to-nearest-even to 10 mantissa bits, on the float32 bit pattern."""
    b = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)
    return b.astype(np.uint32).view(np.float32)


def float_refs(x, a16, b16):
    mm = a16.astype(np.float64) @ b16.astype(np.float64)
    return {
        "reshape": x.reshape(8, 4), "permute": np.transpose(x.reshape(2, 2, 8), (2, 0, 1)),
        "transpose": x.T, "T": x.T, "broadcast_to": np.broadcast_to(x[0], (4, 8)),
        "expand_dims": np.broadcast_to(x[1][None], (4, 8)),
        "cat": np.concatenate([x[2:4], x[0:2]]), "where": np.where(x > 0, x, -1.0),
        "full": np.full(32, 2.5), "zeros": np.zeros(32), "ones": np.ones(32),
        "arange": np.arange(32), "astile": np.full(32, 3.0),
        "astype_f16": x.astype(np.float16), "astype_bf16": x.astype(ml_dtypes.bfloat16),
        "astype_f64": x, "matmul": mm.astype(np.float16), "mma": mm + x, "@": mm.astype(np.float16),
        "static_eval": np.full(32, 65.0), "ensure_constant": np.full(32, 32.0),
        "assume_divisible_by": np.full(32, 32.0)}


TOL = {"matmul": 1e-3, "mma": 1e-5, "@": 1e-3}      # matmul of f16 is f16


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", F_ROWS)
def test_float_structure(runs, mode, name):
    args, out = runs
    got = out[mode][4][F_ROWS.index(name)]
    want = np.asarray(float_refs(*args[:3])[name]).astype(np.float64).reshape(-1)
    if name in TOL:
        np.testing.assert_allclose(got, want, rtol=TOL[name], atol=1e-5, err_msg=f"{name} ({mode})")
    else:
        assert not R.float_mismatch(got, want.astype(np.float32), 0).any(), (name, mode, got, want)


def int_refs(x, ints, at0):
    k = np.arange(32)
    with np.errstate(invalid="ignore"):
        sat = lambda v, lo, hi: np.clip(np.trunc(v.astype(np.float64)), lo, hi)   # noqa: E731
    cell = x[2:4].reshape(-1).view(np.int32)
    seg = [at0[j * 32:(j + 1) * 32] for j in range(8)]
    return {
        "bitcast": x.view(np.int32), "astype_i32": sat(x, -2**31, 2**31 - 1),
        "astype_u8": sat(x, 0, 255), "astype_i8_wrap": ints[:32].astype(np.int8),
        "gather": ints[31 - k],
        "gather_masked": np.where((k % 3 != 0) & (k * 2 < 40), ints[np.minimum(k * 2, 39)], -5),
        "item": np.full(32, ints[5]), "extract": np.concatenate([cell, cell * 2]),
        "grid": np.full(32, 0 * 100 + 1 * 10 + 11 + 1),
        "load_zero": np.pad(ints[32:], (0, 24)), "load_plain": ints[:32],
        "atomic_add": seg[0], "atomic_and": seg[1], "atomic_or": seg[2], "atomic_xor": seg[3],
        "atomic_max": seg[4], "atomic_min": seg[5], "atomic_xchg": seg[6], "atomic_cas": seg[7]}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", I_ROWS)
def test_int_structure(runs, mode, name):
    args, out = runs
    got = out[mode][5][I_ROWS.index(name)]
    want = np.asarray(int_refs(args[0], args[3], args[8])[name]).reshape(-1)
    assert np.array_equal(got, want), (name, mode, got, want)


@pytest.mark.parametrize("mode", MODES)
def test_padding_scatter_and_atomic_memory(runs, mode):
    args, out = runs
    x, at0 = args[0], args[8]
    pads = out[mode][6]
    for j, fill in enumerate((0.0, -0.0, np.nan, np.inf, -np.inf)):
        want = np.concatenate([x[1], np.full(24, fill, np.float32)])
        assert not R.float_mismatch(pads[j], want, 0).any(), (PADS[j], mode, pads[j])
    k = np.arange(32)
    sc = np.full(64, -1, np.int32)
    keep = k % 4 != 1
    sc[((31 - k) * 2)[keep]] = k[keep]
    assert np.array_equal(out[mode][7], sc), mode
    ref = at0.copy()
    seg = lambda j: slice(j * 32, (j + 1) * 32)   # noqa: E731
    ref[seg(0)] += 5
    ref[seg(1)] &= 6
    ref[seg(2)] |= 6
    ref[seg(3)] ^= 6
    ref[seg(4)] = np.maximum(ref[seg(4)], 3)
    ref[seg(5)] = np.minimum(ref[seg(5)], 3)
    ref[seg(6)] = k
    ref[seg(7)] = np.where(ref[seg(7)] == 2, 100, ref[seg(7)])
    assert np.array_equal(out[mode][8], ref), mode


@ct.kernel
def narrow_floats(x, out):
    t = ct.load(x, (0, 0), (4, 8))
    rows = (t.astype(ct.float8_e4m3fn), t.astype(ct.float8_e5m2), t.astype(ct.tfloat32),
            t.astype(ct.bfloat16).astype(ct.tfloat32), t.astype(ct.tfloat32).astype(ct.bfloat16),
            t.astype(ct.float16).astype(ct.tfloat32))          # bf16/f16 <-> tf32: issue 31
    for j in ct.static_iter(range(len(rows))):
        ct.store(out, (j, 0), row(rows[j].astype(ct.float32)))


def test_fp8_and_tf32_conversions():
    """The interpreter rounds like ml_dtypes (and tf32 to 10 mantissa bits, nearest even); the
    CPU backend (both modes) gives the same bits."""
    x = _args()[0]
    x[1, :4] = [1000.0, -1e-9, 1 + 2**-11, 1 + 3 * 2**-11]
    out = np.zeros((6, 32), np.float32)
    from guarded import launch
    launch((1,), narrow_floats, (x, out), "interpret")
    sat = np.clip(x, -448, 448)             # ftof to fp8 saturates finite values (spec)
    bf16 = lambda v: v.astype(ml_dtypes.bfloat16).astype(np.float32)  # noqa: E731
    want = [sat.astype(ml_dtypes.float8_e4m3fn), x.astype(ml_dtypes.float8_e5m2), _tf32(x),
            bf16(x), bf16(_tf32(x)), x.astype(np.float16)]   # bf16 and f16 are exact in tf32
    for j, w in enumerate(want):
        w = np.asarray(w).astype(np.float32).reshape(-1)
        assert not R.float_mismatch(out[j], w, 0).any(), (j, out[j], w)
    for mode in ("fast", "faithful"):          # the C++ backend rounds the same way
        out[:] = 0
        launch((1,), narrow_floats, (x, out), mode)
        for j, w in enumerate(want):
            w = np.asarray(w).astype(np.float32).reshape(-1)
            assert not R.float_mismatch(out[j], w, 0).any(), (mode, j, out[j], w)


# ------------------------------------------------------------------------------- coverage
# Builtins checked against numpy by existing tests elsewhere (file, test): each must exist and
# its file must call the builtin.
ELSEWHERE = {
    "printf": ("test_frontend_runtime.py", "test_printf_print_and_fstrings"),
    "print": ("test_frontend_runtime.py", "test_printf_print_and_fstrings"),
    "assert_": ("test_frontend_runtime.py", "test_assert_passes_and_fails"),
    "static_exception": ("test_errors.py", None),       # a compile-time error, no values
    "mma_scaled": ("test_cutile_features.py", "mma_scaled_block_scaled_matmul"),
    "pack_to_bytes": ("test_cutile_dtypes.py", "roundtrip_case"),
    "unpack_from_bytes": ("test_cutile_dtypes.py", "roundtrip_case"),
    "insert": ("test_dialect_ops.py", "test_insert_matches_numpy"),
    "Slice": ("test_dialect_ops.py", "test_advanced_indexing_gathers_and_scatters_rows"),
    "load_advanced_indexing": ("test_dialect_ops.py",
                               "test_advanced_indexing_gathers_and_scatters_rows"),
    "store_advanced_indexing": ("test_dialect_ops.py",
                                "test_advanced_indexing_gathers_and_scatters_rows"),
    "grid_dependency_control_wait": ("test_dialect_ops.py",
                                     "test_grid_dependency_control_is_ordered_and_runs"),
    "grid_dependency_control_launch_dependents": (
        "test_dialect_ops.py", "test_grid_dependency_control_is_ordered_and_runs"),
}


def _checked_here() -> set[str]:
    """The builtins whose numpy check this suite runs: the tables' names and the names that
    `structure`, `float_rows`, `int_rows` and `reduction_rows` call."""
    names = set(R.UNARY_FLOAT) | set(R.BINARY_FLOAT) | set(R.PREDICATES) | set(R.BINARY_INT)
    names |= set(R.UNARY_INT) | set(R.SHIFTS) | {"isnan", "divmod", "pow"}
    for fn in (structure.func, NUM.float_rows, NUM.int_rows, RED.reduction_rows):
        src = inspect.getsource(fn)
        names |= {n for n in api.__all__ if f"ct.{n}(" in src or f".{n}(" in src}
    return names


def test_every_public_builtin_has_a_numpy_check():
    public = {n for n in api.__all__ if getattr(getattr(api, n), "__tilepy_builtin__", False)}
    here = os.path.dirname(os.path.abspath(__file__))
    missing = sorted(public - _checked_here() - set(ELSEWHERE))
    assert not missing, f"public builtins without a numpy check: {missing}"
    for name, (path, test) in ELSEWHERE.items():
        text = pathlib.Path(here, path).read_text()
        assert f"ct.{name}" in text and (test is None or f"def {test}(" in text), (name, path)
