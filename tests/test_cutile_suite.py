"""The cuTile compatibility suite: kernels written as cuTile code (tests/cutile_kernels/, where
`import tilepy as ct` is the only change) run on the CPU backend and match numpy; every one also
compiles with NVRTC for sm_80 and sm_90."""
import numpy as np

import tilepy as ct
from cutile_cases import case_tests, run_case
from cutile_kernels import (control, elementwise, indexing, layernorm, matmul, reductions,
                            softmax, transpose)

rng = np.random.default_rng(2024)
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


# Each case returns (kernel, grid, args, check): check() compares the outputs with numpy after
# the launch.
@case
def vector_add():
    a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    c = np.zeros_like(a)
    return elementwise.vector_add, (ct.cdiv(1000, 128),), (a, b, c, 128), \
        lambda: np.testing.assert_array_equal(c, a + b)


@case
def saxpy():
    x, y = rng.standard_normal(777).astype(np.float32), rng.standard_normal(777).astype(np.float32)
    out = np.zeros_like(x)
    return elementwise.saxpy, (ct.cdiv(777, 256),), (2.5, x, y, out, 256), \
        lambda: np.testing.assert_allclose(out, np.float32(2.5) * x + y, rtol=1e-6)


@case
def transpose_ragged():
    x = rng.standard_normal((37, 70)).astype(np.float32)
    y = np.zeros((70, 37), np.float32)
    return transpose.transpose, (ct.cdiv(37, 16), ct.cdiv(70, 32)), (x, y, 16, 32), \
        lambda: np.testing.assert_array_equal(y, x.T)


@case
def transpose_order():
    x = rng.standard_normal((64, 48)).astype(np.float16)
    y = np.zeros((48, 64), np.float16)
    return transpose.transpose_by_order, (ct.cdiv(64, 32), ct.cdiv(48, 16)), (x, y, 32, 16), \
        lambda: np.testing.assert_array_equal(y, x.T)


@case
def softmax_f16():
    x = (rng.standard_normal((13, 300)) * 4).astype(np.float16)
    y = np.zeros_like(x)

    def check():
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(1, keepdims=True))
        np.testing.assert_allclose(y.astype(np.float64), e / e.sum(1, keepdims=True),
                                   rtol=2e-3, atol=1e-4)
    return softmax.softmax, (13,), (x, y, next_pow2(300)), check


@case
def layer_norm():
    M, N = 9, 300
    X = rng.standard_normal((M, N)).astype(np.float32) * 2 + 1
    W, B = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    Y, mean, rstd = np.zeros_like(X), np.zeros(M, np.float32), np.zeros(M, np.float32)

    def check():
        mu = X.astype(np.float64).mean(1)
        var = X.astype(np.float64).var(1)
        r = 1 / np.sqrt(var + 1e-5)
        np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rstd, r, rtol=1e-5)
        np.testing.assert_allclose(Y, (X - mu[:, None]) * r[:, None] * W + B, rtol=1e-4, atol=1e-5)
    return layernorm.layer_norm_fwd, (M,), (X, W, B, Y, mean, rstd, 1e-5, 128), check


def _mm_check(A, B, C, rtol):
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    err = np.abs(C.astype(np.float64) - A64 @ B64) / (np.abs(A64) @ np.abs(B64) + 1e-30)
    assert err.max() <= rtol, err.max()


@case
def matmul_f16():
    A = rng.standard_normal((100, 70)).astype(np.float16)
    B = rng.standard_normal((70, 90)).astype(np.float16)
    C = np.zeros((100, 90), np.float32)
    return matmul.matmul, (ct.cdiv(100, 32), ct.cdiv(90, 32)), (A, B, C, 32, 32, 16), \
        lambda: _mm_check(A, B, C, 1e-5)


@case
def matmul_persistent():
    A = rng.standard_normal((64, 96)).astype(np.float16)
    B = rng.standard_normal((96, 48)).astype(np.float16)
    C = np.zeros((64, 48), np.float16)
    return matmul.matmul_operator, (3,), (A, B, C, 16, 16, 32), lambda: _mm_check(A, B, C, 5e-3)


@case
def argmax_rows():
    x = rng.integers(-4, 5, (11, 50)).astype(np.float32)      # many ties: first index wins
    x[3, :] = -np.inf
    imax, imin = np.zeros(11, np.int32), np.zeros(11, np.int32)

    def check():
        np.testing.assert_array_equal(imax, x.argmax(1))
        np.testing.assert_array_equal(imin, x.argmin(1))
    return reductions.row_argmax, (11,), (x, imax, imin, 64), check


@case
def cumsum_rows():
    x = rng.integers(-9, 10, (20, 30)).astype(np.int32)
    y = np.zeros_like(x)
    return reductions.cumsum_rows, (ct.cdiv(20, 8),), (x, y, 8, 32), \
        lambda: np.testing.assert_array_equal(y, np.cumsum(x, 1))


@case
def cumsum_whole_array():
    x = rng.integers(-100, 100, 1000).astype(np.int64)
    y = np.zeros_like(x)
    return reductions.cumsum_1d, (ct.cdiv(1000, 128),), (x, y, 128), \
        lambda: np.testing.assert_array_equal(y, np.cumsum(x))


@case
def custom_reduce_and_reverse_cumprod():
    x = rng.uniform(-1.5, 1.5, (5, 8)).astype(np.float32)
    absmax, rev = np.zeros(5, np.float32), np.zeros_like(x)

    def check():
        np.testing.assert_array_equal(absmax, np.abs(x).max(1))
        np.testing.assert_allclose(rev, np.cumprod(x[:, ::-1], 1)[:, ::-1], rtol=1e-5)
    return reductions.custom_reduce, (5,), (x, absmax, rev, 8), check


@case
def combiner_reads_block_id():
    x = rng.integers(0, 5, (6, 24)).astype(np.int32)       # below every modulus: x0 % m is x0
    sums, prefix = np.zeros(6, np.int32), np.zeros_like(x)
    mod = np.arange(6)[:, None] + 5

    def check():
        np.testing.assert_array_equal(sums, x.sum(1) % mod[:, 0])
        np.testing.assert_array_equal(prefix, np.cumsum(x, 1) % mod)
    return reductions.modular_row_sums, (6,), (x, sums, prefix, 32), check


@case
def embedding_gather_scatter():
    table = rng.standard_normal((40, 16)).astype(np.float32)
    ids = rng.integers(-3, 45, 50).astype(np.int32)               # some out of range
    out = np.full((50, 16), 9.0, np.float32)

    def check():
        ok = (ids >= 0) & (ids < 40)
        ref = np.where(ok[:, None], table[np.clip(ids, 0, 39)], 0)
        np.testing.assert_array_equal(out, ref)
    return indexing.embedding, (ct.cdiv(50, 32),), (table, ids, out, 16, 32), check


@case
def masked_scatter():
    x = rng.standard_normal(100).astype(np.float32)
    perm = rng.permutation(100).astype(np.int32)
    y = np.full(100, -7.0, np.float32)

    def check():
        ref = np.full(100, -7.0, np.float32)
        ref[perm[x > 0]] = 2 * x[x > 0]
        np.testing.assert_array_equal(y, ref)
    return indexing.scatter_add_permuted, (ct.cdiv(100, 64),), (x, perm, y, 64), check


@case
def atomic_histogram():
    x = rng.integers(0, 20, 5000).astype(np.int32)
    hist = np.zeros(20, np.int32)
    return indexing.histogram, (ct.cdiv(5000, 256),), (x, hist, 256), \
        lambda: np.testing.assert_array_equal(hist, np.bincount(x, minlength=20))


@case
def system_scope_atomics():
    x = rng.integers(-50, 50, 8 * 32).astype(np.int32)
    total, halves = np.zeros(32, np.int32), np.zeros(32, np.float16)
    count, last = np.zeros(1, np.int32), np.full(1, -1, np.int32)

    def check():
        want = x.reshape(8, 32).sum(0)
        np.testing.assert_array_equal(total, want)
        np.testing.assert_array_equal(halves, want.astype(np.float16))   # exact: |sums| < 2048
        assert count[0] == 8 and last[0] == 7
    return indexing.system_counters, (8,), (x, total, halves, count, last, 32), check


@case
def release_acquire_message():
    data, flag = np.zeros(32, np.int32), np.zeros(1, np.int32)
    out = np.full((3, 32), -1, np.int32)

    def check():
        np.testing.assert_array_equal(out, np.tile(np.arange(32) * 3, (3, 1)))
        assert flag[0] == 1
    return indexing.publish_then_read, (4,), (data, flag, out, 32), check


@case
def spin_lock():
    x = rng.integers(-5, 6, (64, 32)).astype(np.float32)
    acc = np.zeros((4, 32), np.float32)
    locks = np.zeros(4, np.int32)

    def check():
        np.testing.assert_array_equal(acc, np.stack([x[g::4].sum(0) for g in range(4)]))
        np.testing.assert_array_equal(locks, 0)
    return indexing.locked_accumulate, (64,), (x, acc, locks, 4, 32), check


@case
def loops_with_runtime_branches():
    x = rng.standard_normal(16 * 11).astype(np.float32) * 3
    out, stats = np.zeros(16, np.float32), np.zeros(4, np.float32)
    n, limit = 11, 2.0

    def check():
        tiles = x.reshape(-1, 16)
        acc, count = np.zeros(16, np.float64), 0
        for i in range(n):
            t = tiles[i].astype(np.float64)
            if i % 4 == 3:
                continue
            if i == 0:
                acc += t
            elif i % 2 == 0:
                acc -= 2 * t
            else:
                s = t.sum()
                acc += t * 0.5 if s > limit else -t if s < -limit else 0
            count += 1
        np.testing.assert_allclose(out, acc, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stats, [acc.min(), acc.max(), count, count], rtol=1e-5)
    return control.branchy, (1,), (x, out, stats, n, limit, 16), check


@case
def while_break():
    x = rng.uniform(0, 1, 200).astype(np.float32)
    x[130] = 5.0
    out = np.zeros(1, np.int32)
    return control.find_first_above, (1,), (x, out, 2.0, 16), \
        lambda: np.testing.assert_array_equal(out, [130 // 16])


@case
def data_dependent_while():
    starts = np.array([1, 6, 7, 27, 97, 871], np.int32)
    out = np.zeros(6, np.int32)

    def steps(v):
        k = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        return k
    return control.collatz_steps, (6,), (starts, out, 1), \
        lambda: np.testing.assert_array_equal(out, [steps(int(v)) for v in starts])


@case
def early_return_and_static_iter():
    x = rng.standard_normal(64).astype(np.float32)
    y = np.full(64, 3.0, np.float32)

    def check():
        np.testing.assert_allclose(y[:32], x[:32] * 6, rtol=1e-6)
        np.testing.assert_array_equal(y[32:], 3.0)
    return control.early_exit, (4,), (x, y, 2, 16), check


@case
def with_context_manager_cleanup():
    log = np.zeros(2 * control.LOG, np.int32)

    def check():
        loop = [e for i in range(3) for e in (100 + i, 1000 + 10 * i, 200 + i)]
        inner = [50, 52, 501, 53, 51, 54]
        for b, tail in ((0, [7]), (1, [])):
            want = loop + inner + tail
            row = log[b * control.LOG:(b + 1) * control.LOG]
            assert row[0] == len(want) and row[1:len(want) + 1].tolist() == want, row
    return control.with_cleanup, (2,), (log, 2), check


@case
def carried_aggregates():
    """Tuples, a tiled view and a number-and-tile tuple carried by loops, a tuple first defined
    at a `while True`'s break, closures and tiled views merged by a runtime `if`, a helper
    returning from inside a `while`, strictly typed constant folding (cutile_kernels/control.py)."""
    T, n, N = 8, 4, 3
    x = (np.arange(2 * T) % 5).astype(np.float32)
    y = (np.arange(2 * T) * 0.5 + 1).astype(np.float32)
    z = np.zeros(4 * T, np.float32)
    out = np.zeros(12 * T, np.float32)

    def check():
        x0, x1, y0 = x[:T], x[T:], y[:T]
        a, b = x0, x1
        for _ in range(n):
            a, b = b, a + b
        k = int(np.argmax(y[:n] > 2.2))
        for blk, captured in ((0, 1), (1, 10)):
            rows = out.reshape(12, T)[6 * blk:6 * blk + 6]
            np.testing.assert_array_equal(rows[0], b)
            np.testing.assert_array_equal(rows[1], y0 * n)
            np.testing.assert_array_equal(rows[2], x0 + 3)
            np.testing.assert_array_equal(rows[3], x0 + 3 * captured)
            np.testing.assert_array_equal(rows[4], np.arange(T) + N + 2 + k)
            np.testing.assert_array_equal(rows[5], (x1, y[T:])[blk])
        np.testing.assert_array_equal(z, np.tile(np.concatenate([x0, y0]) * 2, 2))
    return control.carried_aggregates, (2,), (x, y, z, out, n, T, N), check


def test_carried_aggregates_in_the_interpreter():
    run_case(CASES["carried_aggregates"](), "interpret")


def test_system_scope_atomics_in_the_interpreter():
    run_case(CASES["system_scope_atomics"](), "interpret")


def test_release_acquire_message_in_the_interpreter():
    run_case(CASES["release_acquire_message"](), "interpret")


def test_ordered_loads_and_stores_are_strong_in_sass():
    """ct.load/ct.store with a memory order: strong (volatile: .STRONG.SYS) accesses, the acquire
    and release fences of the device scope, and the barriers that order the block's threads."""
    from kernels_util import sass_of
    kernel, _, args, _ = CASES["release_acquire_message"]()
    ops = sass_of(kernel, args, "sm_90")["ops"]
    assert "LDG.E.STRONG.SYS" in ops and "STG.E.STRONG.SYS" in ops, ops
    assert "MEMBAR.SC.GPU" in ops and any(o.startswith("BAR.SYNC") for o in ops)


def test_system_scope_atomics_are_sys_in_sass():
    """Every atomic of the kernel is a .SYS one on sm_90 (atomic*_system, atom.sys for f16), and
    its acq_rel ordering a system-scope fence."""
    from kernels_util import sass_of
    kernel, _, args, _ = CASES["system_scope_atomics"]()
    ops = sass_of(kernel, args, "sm_90")["ops"]
    atomics = [o for o in ops if o.startswith(("ATOM", "RED"))]
    assert len(atomics) >= 4 and all(o.endswith(".SYS") for o in atomics), atomics
    assert "MEMBAR.SC.SYS" in ops


# Both CPU modes run a case only where the mode matters: a g++ compile per kernel and mode is
# most of this file's time. vector_add and saxpy are elementwise on one 1-D tile with no
# replicated or shared data, so the faithful run's 128 threads only split the tile between them;
# that split is checked in faithful mode elsewhere: a 128-wide 1-D load/add/store at ragged sizes
# by test_cpu_backend.py::test_vector_add_ragged, a 256-wide ragged 1-D load (two per thread) by
# atomic_histogram here; the cuTile spelling (index=/shape= keywords, a Python float scalar
# argument) is traced and passed the same in both modes: they run fast only. system_scope_atomics
# too: the CPU backend's atomics are one code path at every scope (process-wide), which
# atomic_histogram and spin_lock run in the faithful mode's threads.
FAST_ONLY = {"vector_add", "saxpy", "system_scope_atomics"}
MODE_CASES = [(name, mode) for name in CASES for mode in ("fast", "faithful")
              if mode == "fast" or name not in FAST_ONLY]


# fast: one thread per block; faithful: the block's 128 threads with real barriers
test_cutile_kernel_matches_numpy, test_cutile_kernel_compiles_with_nvrtc = case_tests(CASES,
                                                                                      MODE_CASES)
