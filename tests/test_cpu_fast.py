"""The fast CPU mode compiled for the host's ISA (issue 21): flags and cache key, numerics of the
vectorized paths (mma micro-kernel, lane-parallel reductions, one-pass scans, row-wise loads and
stores, chunked block scheduling) against numpy."""
import platform

import numpy as np
import pytest

import tilepy as ct
from tilepy.launch import cpu, cpu_isa

rng = np.random.default_rng(21)
X86 = platform.machine() in ("x86_64", "AMD64")


@pytest.fixture(autouse=True)
def fast_mode():
    with ct.cpu_mode("fast"):
        yield


def run(kernel, grid, *args):
    ct.launch(None, grid, kernel, args)


# ----------------------------------------------------------------------------- flags
AVX2 = frozenset("cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3 avx avx2 bmi1 bmi2 f16c fma abm "
                 "movbe xsave".split())


@pytest.mark.parametrize("flags,level", [
    (frozenset(), None),
    (AVX2 - {"fma"}, "x86-64-v2"),
    (AVX2, "x86-64-v3"),
    (AVX2 | {"avx512f", "avx512bw", "avx512cd", "avx512dq"}, "x86-64-v3"),   # no avx512vl
    (AVX2 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}, "x86-64-v4"),
])
def test_x86_level_from_cpu_flags(flags, level):
    assert cpu_isa.x86_level(flags) == level


def test_fast_flags_name_the_isa_and_keep_two_roundings(monkeypatch):
    fast = cpu.flags("fast")
    assert "-O3" in fast and "-ffp-contract=off" in fast
    assert "-falign-loops=64" in fast          # hot loops placed alike whatever code surrounds them
    if X86:
        levels = {}
        for isa in ("x86-64-v3", "x86-64-v4"):
            monkeypatch.setattr(cpu_isa, "host_isa", lambda isa=isa: isa)
            levels[isa] = cpu.flags("fast")
            assert f"-march={isa}" in levels[isa]
        # the flags are part of the library's cache key: an AVX-512 build is never served to
        # an AVX2 host
        assert levels["x86-64-v3"] != levels["x86-64-v4"]
    faithful = cpu.flags("faithful", 128)
    assert "-O2" in faithful and not any(f.startswith("-march") for f in faithful)


@pytest.mark.skipif(not X86, reason="x86-64 levels")
def test_host_level_is_detected():
    assert cpu_isa.host_isa().startswith("x86-64")


# ----------------------------------------------------------------------------- element-wise
@ct.kernel
def mul_add(a, b, c, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    x = ct.load(a, (i,), (TILE,))
    y = ct.load(b, (i,), (TILE,))
    ct.store(out, (i,), x * y + ct.load(c, (i,), (TILE,)))


def test_multiply_add_is_not_contracted():
    n = 4096
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = np.zeros(n, np.float32)
    run(mul_add, (n // 256,), a, b, c, out, 256)
    np.testing.assert_array_equal(out, a * b + c)     # numpy rounds the product, then the sum


@ct.kernel
def minmax_rows(x, mx, mn, mx_nan, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i, 0), (1, TILE))
    ct.store(mx, (i,), ct.max(t, axis=1))
    ct.store(mn, (i,), ct.min(t, axis=1))
    ct.store(mx_nan, (i,), ct.max(t, axis=1, propagate_nan=True))


def test_max_min_rows_nan_and_signed_zero():
    x = rng.standard_normal((4, 256)).astype(np.float32)
    x[1, 17] = np.nan
    x[2] = np.nan
    x[3] = 0.0
    x[3, ::3] = -0.0
    mx, mn, mxn = (np.zeros(4, np.float32) for _ in range(3))
    run(minmax_rows, (4,), x, mx, mn, mxn, 256)
    # NaN-ignoring (maximumNumber): a NaN is skipped, a row of NaN alone is NaN (as cuTile's, and
    # the interpreter's); +0 > -0
    np.testing.assert_array_equal(mx, [np.nanmax(x[0]), np.nanmax(x[1]), np.nan, 0.0])
    np.testing.assert_array_equal(mn, [np.nanmin(x[0]), np.nanmin(x[1]), np.nan, -0.0])
    np.testing.assert_array_equal(mxn, np.max(x, axis=1))
    assert not np.signbit(mx[3]) and np.signbit(mn[3])


# ----------------------------------------------------------------------------- reduce, scan
@ct.kernel
def sums_and_scans(x, rows, cols, csum_r, csum_c, rev):
    t = ct.load(x, (0, 0), (8, 512))
    ct.store(rows, (0,), ct.sum(t, axis=1))
    ct.store(cols, (0,), ct.sum(t, axis=0))
    ct.store(csum_r, (0, 0), ct.cumsum(t, axis=1))
    ct.store(csum_c, (0, 0), ct.cumsum(t, axis=0))
    ct.store(rev, (0, 0), ct.cumsum(t, axis=1, reverse=True))


def test_reductions_and_scans_along_both_axes():
    x = rng.integers(-8, 8, (8, 512)).astype(np.float32)     # exact in any order
    rows, cols = np.zeros(8, np.float32), np.zeros(512, np.float32)
    cr, cc, rev = (np.zeros((8, 512), np.float32) for _ in range(3))
    run(sums_and_scans, (1,), x, rows, cols, cr, cc, rev)
    np.testing.assert_array_equal(rows, x.sum(axis=1))
    np.testing.assert_array_equal(cols, x.sum(axis=0))
    np.testing.assert_array_equal(cr, np.cumsum(x, axis=1))
    np.testing.assert_array_equal(cc, np.cumsum(x, axis=0))
    np.testing.assert_array_equal(rev, np.cumsum(x[:, ::-1], axis=1)[:, ::-1])


# ----------------------------------------------------------------------------- mma
@ct.kernel
def mm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


@pytest.mark.parametrize("dt,acc,tiles", [
    (np.float32, np.float32, (64, 64, 32)), (np.float32, np.float32, (16, 2, 8)),
    (np.float32, np.float32, (8, 32, 16)), (np.float16, np.float32, (64, 64, 32)),
    (np.float64, np.float64, (8, 32, 16)), (np.int8, np.int32, (16, 16, 32))])
def test_mma_micro_kernel(dt, acc, tiles):
    TM, TN, TK = tiles
    M, N, K = 70, 45, 40                                    # ragged in every dimension
    if dt == np.int8:
        A, B = (rng.integers(-128, 128, s).astype(dt) for s in ((M, K), (K, N)))
    else:
        A, B = (rng.standard_normal(s).astype(dt) for s in ((M, K), (K, N)))
    C = np.zeros((M, N), acc)
    run(mm, (ct.cdiv(M, TM), ct.cdiv(N, TN)), A, B, C, TM, TN, TK)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    if dt == np.int8:
        np.testing.assert_array_equal(C, ref.astype(np.int32))
    else:
        scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
        assert (np.abs(C - ref) / scale).max() <= 8 * np.finfo(acc).eps


def _k_step_sums(A, B, KC):
    """A @ B in float32 as a tensor core sums it: KC exact products at a time, in order from
    zero, each chunk's sum added to the accumulator."""
    a, b = A.astype(np.float32), B.astype(np.float32)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], KC):
        part = np.zeros_like(acc)
        for k in range(k0, k0 + KC):
            part += np.outer(a[:, k], b[k])          # exact products (f16 x f16 fits in f32)
        acc += part
    return acc


@pytest.mark.parametrize("tiles", [(64, 64, 32), (32, 16, 64)])
def test_f16_mma_sums_by_tensor_core_k_steps(tiles):
    """f16 operands: the products of each k step of 16 are summed before they meet the
    accumulator, as mma.sync (the faithful mode) and a GPU sum them; bit for bit this model,
    and nearer the exact sum than a product-by-product f32 sum (MatMul.py's check, issue 31)."""
    M, N, K = 48, 40, 768
    A, B = (rng.standard_normal(s).astype(np.float16) for s in ((M, K), (K, N)))
    C = np.zeros((M, N), np.float32)
    run(mm, (ct.cdiv(M, tiles[0]), ct.cdiv(N, tiles[1])), A, B, C, *tiles)
    np.testing.assert_array_equal(C, _k_step_sums(A, B, 16))
    exact = A.astype(np.float64) @ B.astype(np.float64)
    by_product = _k_step_sums(A, B, 1)
    assert np.abs(C - exact).sum() < np.abs(by_product - exact).sum()


# ----------------------------------------------------------------------------- loads, stores
@ct.kernel
def copy_t(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (j, i), ct.transpose(t))


@pytest.mark.parametrize("order", ["C", "F"])
def test_row_wise_loads_and_stores_at_ragged_edges(order):
    x = np.asarray(rng.standard_normal((37, 70)).astype(np.float32), order=order)
    y = np.zeros((70, 37), np.float32)
    run(copy_t, (ct.cdiv(37, 16), ct.cdiv(70, 32)), x, y, 16, 32)
    np.testing.assert_array_equal(y, x.T)


# ----------------------------------------------------------------------------- scheduling
@ct.kernel
def count_blocks(hits):
    b = (ct.bid(2) * ct.num_blocks(1) + ct.bid(1)) * ct.num_blocks(0) + ct.bid(0)
    ct.atomic_add(hits, b, 1)


@pytest.mark.parametrize("grid", [(1, 1, 1), (7, 1, 1), (37, 5, 3), (4096, 1, 1)])
def test_every_block_runs_once_in_chunks(grid):
    hits = np.zeros(int(np.prod(grid)), np.int32)
    run(count_blocks, grid, hits)
    np.testing.assert_array_equal(hits, 1)


# ----------------------------------------------------------------------------- broadcast, permute
@ct.kernel
def bcast_perm(x, row, col, out_b, out_p):
    t = ct.load(x, (0, 0, 0), (2, 4, 8))
    r = ct.load(row, (0, 0), (1, 8))
    c = ct.load(col, (0, 0), (4, 1))
    ct.store(out_b, (0, 0, 0), t + ct.broadcast_to(r, (2, 4, 8)) * ct.broadcast_to(c, (2, 4, 8)))
    ct.store(out_p, (0, 0, 0), ct.permute(t, (2, 0, 1)))


def test_broadcast_and_permute_by_strides():
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    row, col = rng.standard_normal((1, 8)).astype(np.float32), rng.standard_normal((4, 1)).astype(np.float32)
    out_b, out_p = np.zeros((2, 4, 8), np.float32), np.zeros((8, 2, 4), np.float32)
    run(bcast_perm, (1,), x, row, col, out_b, out_p)
    np.testing.assert_array_equal(out_b, x + row * col)
    np.testing.assert_array_equal(out_p, np.transpose(x, (2, 0, 1)))
