"""Issue 13: the tile sizes users pick for speed. All shared memory is one dynamic array sized per
kernel (cuda_c/targets.py: up to what the target gives one block), so TK=64 GEMMs get a cp.async
pipeline, a 128x256x128 batched matmul or a 32x1024 f32 row block compiles, and attention runs
with head dim 128 and 256; the CPU backend gives the same sizes in both modes. A kernel needing
more than its target has gets a located error naming its largest shared-memory user."""
import numpy as np
import pytest

import tilepy as ct
from tests.kernels_util import assert_located, sass_of
from tests.reference_kernels import attention, batched_matmul, matmul
from tests.reference_kernels.cases import _close, _mm_check
from tilepy.api.compiler import compile_for_args
from tilepy.cuda_c.names import kernel_symbol
from tilepy.cuda_c.targets import MAX_SMEM, PIPELINE_SMEM, smem_limit


@pytest.fixture(params=["fast", "faithful"])
def mode(request):
    with ct.cpu_mode(request.param):
        yield request.param


def _bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16


def _gemm_args(dtype, m, n, k, tiles, rng=None, values=True):
    """A GEMM's arguments; `values=False`: zeros, for a test that only compiles (what a kernel
    is specialized for is its arguments' shapes, strides and alignment, not their values; random
    4096x4096 operands cost about 0.6 CPU-s)."""
    if not values:
        return np.zeros((m, k), dtype), np.zeros((k, n), dtype), np.zeros((m, n), np.float32), *tiles
    rng = rng or np.random.default_rng(13)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    return a, b, np.zeros((m, n), np.float32), *tiles


def test_target_table():
    assert [smem_limit(a) for a in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "compute_90")] \
        == [163 * 1024, 99 * 1024, 99 * 1024, 227 * 1024, 227 * 1024, 227 * 1024]
    assert smem_limit("sm_75") == 64 * 1024 and MAX_SMEM == 227 * 1024
    assert PIPELINE_SMEM == 99 * 1024


@pytest.mark.parametrize("dtype", [np.float16, "bf16"])
def test_tk64_gemm_is_pipelined_in_dynamic_shared_memory(dtype):
    dtype = _bf16() if dtype == "bf16" else dtype
    ck = compile_for_args(matmul.matmul, _gemm_args(dtype, 4096, 4096, 4096, (128, 128, 64),
                                                    values=False))
    src = ck.cuda_source
    assert "extern __shared__ __align__(128) unsigned char tp_dsmem[];" in src
    assert "tp::load_async" in src and "tp::pipe_wait<1>" in src     # 3 stages (on sm_86)
    # 96 KiB: over the old 48 (4 stages, 128 KiB, where a block has more: test_smem_classes.py)
    assert ck.emitted.smem_for("sm_86") == 3 * (128 * 64 + 64 * 128) * 2


@pytest.mark.parametrize("dtype", [np.float16, "bf16"])
def test_tk64_gemm_matches_numpy(dtype, mode):
    # 4 K steps: more than the 3 stages (99 KiB targets), so stages are refilled while others
    # are read; the CPU backend runs the 4-stage kernel (test_smem_classes.py: both)
    dtype = _bf16() if dtype == "bf16" else dtype
    a, b, c, *tiles = args = _gemm_args(dtype, 128, 128, 256, (128, 128, 64))
    ct.launch(None, (1, 1), matmul.matmul, args)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)


def test_batched_matmul_128x256x128(mode):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 128, 256)).astype(np.float16)
    b = rng.standard_normal((2, 256, 256)).astype(np.float16)
    c = np.zeros((2, 128, 256), np.float32)
    ct.launch(None, (2, 1, 1), batched_matmul.batched_matmul, (a, b, c, 1, 128, 256, 128))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)


@ct.kernel
def row_softmax(x, y, R: ct.Constant[int], C: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0), 0), shape=(R, C))
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(ct.bid(0), 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def row_block_transpose(x, y, R: ct.Constant[int], C: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0), 0), shape=(R, C))
    ct.store(y, index=(0, ct.bid(0)), tile=ct.transpose(t))


def test_32x1024_f32_row_block(mode):
    # the row block's reductions fold it through 16 KiB of shared memory (runtime.h fold_tiles;
    # it was staged whole, 128 KiB, and refused before that was allowed)
    x = np.random.default_rng(2).standard_normal((64, 1024)).astype(np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (2,), row_softmax, (x, y, 32, 1024))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    _close(y, e / e.sum(axis=1, keepdims=True), 1e-5, 1e-6)


def test_a_target_with_too_little_shared_memory_is_named():
    x = np.zeros((64, 1024), np.float32)
    with pytest.raises(ct.TileUnsupportedFeatureError) as e:
        row_block_transpose.compile(x, x.T.copy(), 32, 1024, arch="sm_86")   # 99 KiB per block
    msg = str(e.value)
    assert "needs 131072 bytes (128 KiB) of shared memory per block but sm_86 has 101376" in msg
    assert "tile<32x1024xf32>" in msg, msg
    assert e.value.loc is not None and e.value.loc.file == __file__


@ct.kernel
def too_big(x, y):
    t = ct.load(x, index=(0, 0), shape=(64, 1024))
    ct.store(y, index=(0, 0), tile=ct.transpose(t))  # TOO_BIG


def test_a_kernel_larger_than_any_target_is_located():
    x, y = np.zeros((64, 1024), np.float64), np.zeros((1024, 64), np.float64)
    with pytest.raises(ct.TileUnsupportedFeatureError) as e:
        compile_for_args(too_big, (x, y))
    assert_located(e.value, "TOO_BIG", "ct.transpose(t)",
                   __file__)
    assert "524288 bytes (512 KiB) of shared memory" in str(e.value)
    assert "tile<64x1024xf64>" in str(e.value)


# attention over head dim x BM x BN: tests/test_tile_matrix.py


def _sass(kernel, args, arch) -> dict:
    from tilepy.tools import sass_stats
    if not sass_stats.available():
        pytest.skip("nvdisasm/cuobjdump not installed")
    return sass_of(kernel, args, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", [np.float16, "bf16"])
def test_tk64_gemm_sass_has_a_cp_async_pipeline(dtype, arch):
    dtype = _bf16() if dtype == "bf16" else dtype
    r = _sass(matmul.matmul, _gemm_args(dtype, 4096, 4096, 4096, (128, 128, 64), values=False),
              arch)
    c = r["counts"]
    assert c["LDGSTS"] > 0 and c["HMMA"] > 0 and c["LDSM"] > 0, c
    assert r["spill_bytes"] == 0 and c["LDL/STL"] == 0, (r["registers"], c)    # 8 warps


@pytest.mark.parametrize("d, arch", [(128, "sm_80"), (128, "sm_90"), (64, "sm_80")])
def test_attention_head_dim_128_compiles(d, arch):
    # issue 13: d=128 did not compile (V not in shared memory); d=64 and 128 at 128 query rows
    # spilled at 4 warps
    q = np.zeros((16, 4096, d), np.float16)
    r = _sass(attention.attention, (q, q, q, q.copy(), 0.1, 128, 64, d), arch)
    c = r["counts"]
    assert c["HMMA"] > 0 and c["LDGSTS"] > 0, c
    assert r["spill_bytes"] == 0 and c["LDL/STL"] == 0, (r["registers"], c)


@pytest.mark.parametrize("tiles, nt", [((64, 64, 32), 128), ((128, 128, 32), 128),
                                       ((128, 128, 64), 128), ((128, 256, 64), 256),
                                       ((256, 128, 32), 256)])
def test_threads_per_block_follow_the_work(tiles, nt):
    ck = compile_for_args(matmul.matmul, _gemm_args(np.float16, 512, 512, 512, tiles))
    assert ck.emitted.nt == nt and f"#define TP_NT {nt}" in ck.cuda_source


@pytest.mark.parametrize("m, n, k, tiles", [(128, 256, 128, (128, 256, 64)),
                                            (256, 128, 64, (256, 128, 32))])
def test_eight_warp_gemms_match_numpy(m, n, k, tiles):
    # faithful mode only: the fast mode runs one thread per block (TP_NT=1), so the 8 warps
    # (256 threads sharing the tiles) exist only in the faithful mode; the fast mode's large
    # tiles are run by the tests above
    a, b, c, *_ = args = _gemm_args(np.float16, m, n, k, tiles)
    with ct.cpu_mode("faithful"):
        ct.launch(None, (1, 1), matmul.matmul, args)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)


def test_gpu_launch_allows_the_dynamic_shared_memory():
    # the GPU path (fake driver: the cubin NVRTC made, run on the CPU) raises the kernel's
    # max-dynamic-shared-memory attribute and launches with shmem_size; without the attribute
    # the fake refuses a launch above 48 KiB, as CUDA does
    from fake_driver import FakeDriver, cuda_array
    a, b, c, *tiles = args = _gemm_args(np.float16, 128, 128, 128, (128, 128, 64))
    with FakeDriver(cc=(8, 0)) as drv:
        ct.launch(None, (1, 1), matmul.matmul, tuple(
            cuda_array(x, "cai") if isinstance(x, np.ndarray) else x for x in args))
        # 2 stages of 32 KiB on sm_80: room for 2 blocks per SM (issue 28)
        assert ("kernel.max_dynamic_smem", (kernel_symbol("matmul"), 65536)) in drv.calls
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)


def test_gpu_launch_on_a_device_with_too_little_shared_memory():
    from fake_driver import FakeDriver, cuda_array
    x = np.zeros((64, 1024), np.float32)
    with FakeDriver(cc=(8, 6)):
        with pytest.raises(ct.TileUnsupportedFeatureError, match="sm_86 has 101376 bytes"):
            ct.launch(None, (2,), row_block_transpose, (cuda_array(x, "cai"),
                                                        cuda_array(x.T.copy(), "cai"), 32, 1024))
