"""reduce()/scan() with Python combiners as cuTile has them (issue 31): a combiner that reads a
tile of the kernel, reductions and scans of several tiles (any count, shapes broadcast to one),
and a reduction of a tile too large to stage in shared memory. Each kernel (tests/
cutile_kernels/combiners.py) runs in the interpreter and both CPU modes and matches numpy, and
compiles with NVRTC for sm_80/sm_90."""
import numpy as np
import pytest

import tilepy as ct
from cutile_cases import case_tests, compile_case, registry, run_case
from cutile_kernels import combiners
from tilepy.api.compiler import compile_for_args
from tilepy.cuda_c.emitter import FOLD_SCRATCH
from tilepy.launch import tileiras

rng = np.random.default_rng(31)
CASES, case = registry()


@case
def row_combiners():
    rows, n = 5, 100
    x = rng.integers(-20, 50, (rows, n)).astype(np.float32)
    w = rng.integers(0, 100, (rows, n)).astype(np.float32)
    w[2, :] = 0                                          # where(w_ab == 0) of Welford's merge
    w[2, 7] = 5
    p = np.array(7, np.int32)
    sums, prefix = np.zeros(rows, np.int32), np.zeros((rows, n), np.int32)
    stats = np.zeros((rows, 3), np.float32)
    best, where = np.zeros((rows, n), np.float32), np.zeros((rows, n), np.int32)

    def check():
        xi, mod = x.astype(np.int64), 7 + np.arange(rows)[:, None]
        np.testing.assert_array_equal(sums, np.mod(xi.sum(1), mod[:, 0]))   # (a+b) % m: Python's
        np.testing.assert_array_equal(prefix, np.mod(np.cumsum(xi, 1), mod))
        x64, w64 = x.astype(np.float64), w.astype(np.float64)
        mean = (x64 * w64).sum(1) / w64.sum(1)
        np.testing.assert_allclose(stats[:, 0], mean, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stats[:, 1], (w64 * (x64 - mean[:, None]) ** 2).sum(1),
                                   rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(stats[:, 2], w.sum(1))
        np.testing.assert_array_equal(best, np.maximum.accumulate(x, 1))
        np.testing.assert_array_equal(where, [[int(np.argmax(r[:j + 1])) for j in range(n)]
                                              for r in x])
    return combiners.row_combiners, (rows,), (x, w, p, sums, prefix, stats, best, where, 128), \
        check


@case
def reverse_scan_four_tiles():
    x = rng.integers(-9, 9, (16, 8)).astype(np.float32)
    out = np.zeros((4, 16, 8), np.float32)

    def check():
        def suffix(f, a):
            return f(a[::-1], 0)[::-1]
        np.testing.assert_array_equal(out[0], suffix(np.cumsum, x))
        np.testing.assert_array_equal(out[1], suffix(np.maximum.accumulate, x))
        np.testing.assert_array_equal(out[2], suffix(np.cumsum, (x > 0).astype(np.float32)))
        np.testing.assert_array_equal(out[3], suffix(np.minimum.accumulate, x))
    return combiners.suffix_stats, (1,), (x, out, 16, 8), check


def argmax_of(n):
    x = rng.standard_normal(n).astype(np.float16)
    x[n // 3] = x[n - 2] = 9.0                           # ties: the first index wins
    out = np.zeros(2, np.int32)
    return combiners.argmax_whole, (1,), (x, out, n), \
        lambda: np.testing.assert_array_equal(out, [n // 3, int(np.argmin(x))])


test_kernel_matches_numpy, test_kernel_compiles_with_nvrtc = case_tests(CASES)


@pytest.mark.parametrize("mode", ["fast", "faithful"])
def test_argmax_of_a_tile_larger_than_shared_memory(mode):
    """cuTile's argmax over a tile<65536xf16> (values and indices: 384 KiB): the fold reads
    them through a bounded scratch (it staged the whole tile, refused as more than any GPU gives
    a block)."""
    kernel, grid, args, check = c = argmax_of(65536)
    assert compile_for_args(kernel, args).emitted.smem_bytes <= FOLD_SCRATCH + 1024
    run_case(c, mode)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_chunked_argmax_compiles_with_nvrtc(arch):
    """4096 f16 values and i32 indices (24 KiB): two chunks (65536 elements compile the same
    code, in about a minute of NVRTC for its 512 registers' worth of tile per thread)."""
    compile_case(argmax_of(4096), arch)


@pytest.mark.skipif(tileiras.unusable() is not None, reason=str(tileiras.unusable()))
@pytest.mark.parametrize("name", ["row_combiners", "reverse_scan_four_tiles"])
def test_nvidia_compiler_takes_the_bytecode(name):
    """The spec (13.1) restricts `scan` to one tile; NVIDIA's tileiras compiles scans of several
    tiles and combiners that read values of the kernel, as cuTile emits them, so tilepy's
    verifier takes them too."""
    kernel, _, args, _ = CASES[name]()
    c = kernel.compile(*args, arch="sm_90", compiler="tileiras")
    assert c.kind == "cubin" and c.data[:4] == b"\x7fELF"


FOLD_SRC = r"""
#include "tilepy/runtime.h"
extern __shared__ __align__(16) unsigned char smem[];
typedef tp::Shape<64, 128> S;
// A reduce along 1 and a reverse scan along 0 of a (64, 128) float tile and an int tile in other
// layouts (64 KiB: four chunks of the fold's scratch), results in two other layouts each; the
// int combiner is not commutative (acc * 3 + x), so its order shows.
extern "C" __global__ void folds(const float* x, const int* y, float* rx, int* ry, float* sx,
                                  int* sy) {
  const auto a = tp::gather_elems<float, 8192, tp::Cyclic<8192>>([&](int e) { return x[e]; });
  const auto b = tp::gather_elems<int, 8192, tp::Blocked<8192, 4>>([&](int e) { return y[e]; });
  auto f = [](const tp::Tup<float, int>& e, const tp::Tup<float, int>& acc) {
    return tp::tup<float, int>(tp::tget<0>(acc) + tp::tget<0>(e),
                               tp::tget<1>(acc) * 3 + tp::tget<1>(e));
  };
  const auto id = tp::tup<float, int>(0.0f, 1);
  typedef tp::Blocked<64, 2> B64;
  typedef tp::Cyclic<64> C64;
  typedef tp::Blocked<8192, 2> B8k;
  typedef tp::Cyclic<8192> C8k;
  const auto r = tp::fold_tiles<S, 1, false, false, tp::Lays<B64, C64>>(id, smem, f, a, b);
  const auto s = tp::fold_tiles<S, 0, true, true, tp::Lays<C8k, B8k>>(id, smem, f, a, b);
  for (int k = 0; k < B64::K; ++k) if (B64::owner(k)) rx[B64::elem(k)] = tp::tget<0>(r).v[k];
  for (int k = 0; k < C64::K; ++k) if (C64::owner(k)) ry[C64::elem(k)] = tp::tget<1>(r).v[k];
  for (int k = 0; k < C8k::K; ++k) if (C8k::owner(k)) sx[C8k::elem(k)] = tp::tget<0>(s).v[k];
  for (int k = 0; k < B8k::K; ++k) if (B8k::owner(k)) sy[B8k::elem(k)] = tp::tget<1>(s).v[k];
}
"""


@pytest.mark.parametrize("mode", ["fast", "faithful"])
def test_fold_tiles_chunks_and_result_layouts(mode):
    """runtime.h fold_tiles itself: several chunks, results in layouts other than the first
    result's (staged back through the chunk buffers), element order kept."""
    from tilepy.cuda_c.emitter import fold_scratch
    from tilepy.launch.cpu import compile_kernel
    x = rng.integers(-9, 9, (64, 128)).astype(np.float32)
    y = rng.integers(-5, 5, (64, 128)).astype(np.int32)
    outs = [np.zeros(64, np.float32), np.zeros(64, np.int32), np.zeros((64, 128), np.float32),
            np.zeros((64, 128), np.int32)]
    k = compile_kernel(FOLD_SRC, "folds", threads=128 if mode == "faithful" else 1, mode=mode)
    k((1,), x, y, *outs, smem=fold_scratch(8192, [4, 4]))

    def fold(v, axis):               # acc * 3 + v from 1 in element order, wrapping like int32
        v = np.moveaxis(v.astype(np.int64), axis, 0)
        acc, out = np.ones(v.shape[1:], np.int64), []
        for row in v:
            acc = (acc * 3 + row + 2**31) % 2**32 - 2**31
            out.append(acc)
        return np.moveaxis(np.array(out), 0, axis)
    np.testing.assert_array_equal(outs[0], x.sum(1))
    np.testing.assert_array_equal(outs[1], fold(y, 1)[:, -1])
    np.testing.assert_array_equal(outs[2], np.cumsum(x[::-1], 0)[::-1])
    np.testing.assert_array_equal(outs[3], fold(y[::-1], 0)[::-1])
