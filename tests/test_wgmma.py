"""The sm_90a class (issue 29): the tutorial GEMM's K loop and attention's two mmas as warpgroup
MMA.

NVRTC's sm_90a cubin has HGMMA in the K loop and no HMMA, without spills, while sm_90's keeps
mma.sync; the faithful CPU mode runs the same class (the fake driver of a sm_90 device builds
the CPU library of what NVRTC compiled for sm_90a) against numpy; and the wgmma emulation
(cpu_wgmma.h) catches seeded mistakes in a hand-written kernel: a wrong swizzle in a
descriptor, a missing fence.proxy.async, wgmma.fence or wait_group."""
import ml_dtypes
import numpy as np
import pytest

import tilepy as ct
from definitions import load
from faithful_util import build
from kernels_util import by_nvrtc
from tilepy.api.compiler import compile_for_args
from tilepy.launch.nvrtc import compile_cubin
from tilepy.tools import sass_stats

matmul = load("03_matmul").matmul
needs_sass = pytest.mark.skipif(not sass_stats.available(), reason="nvdisasm/cuobjdump not installed")


def _sass(dtype, tiles, arch, k=4096):
    """NVRTC's cubin of the tutorial GEMM: its statistics, ptxas' report and the SASS text (one
    disassembly: nvdisasm takes 0.7 CPU-s on it)."""
    a, b = np.zeros((4096, k), dtype), np.zeros((k, 4096), dtype)
    ck = compile_for_args(matmul, (a, b, np.zeros((4096, 4096), np.float32), *tiles))
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    res, text = sass_stats.stats_and_text(cb.data, cb.log)
    ((name, r),) = res.items()
    r["log"], r["text"] = cb.log, text[name]
    return r


@needs_sass
@pytest.mark.parametrize("dtype,tiles,hgmma,per_hgmma,utmaldg", [
    (np.float16, (128, 128, 32), 4, 14.25, 3),        # 1 warpgroup: 2 m64 blocks x 2 k16 steps
    (ml_dtypes.bfloat16, (128, 128, 64), 8, 8.38, 3), # 1 warpgroup (4 warps: plan.threads_for): 2 x 4
    (np.float16, (128, 256, 64), 4, 16.5, 5),         # m64n256k16
    (np.float16, (256, 128, 32), 4, 14.5, 3),         # 2 warpgroups, 2 m64 blocks each
])
def test_sm90a_gemm_k_loop_is_hgmma(dtype, tiles, hgmma, per_hgmma, utmaldg):
    r = _sass(dtype, tiles, "sm_90a")
    loop = r["hot_loop"]
    assert loop is not None and loop["ops"].get("HGMMA") == hgmma, loop
    # both operands by TMA (4096^3: every view a tensor map describes), no cp.async; A as one
    # box (the accumulator's warps interleave by warpgroups), B one per 128-byte panel
    assert loop["ops"].get("UTMALDG") == utmaldg and loop["ops"].get("LDGSTS", 0) == 0, loop
    assert r["counts"]["HMMA"] == 0 and r["counts"]["LDGSTS"] == 0, r["counts"]
    assert r["spill_bytes"] == 0 and r["counts"]["LDL/STL"] == 0
    # one group in flight: per iteration one wgmma.fence and one wait_group 1, the MMAs not
    # serialized by ptxas (it says so in its report: C7514/C7515)
    warpgroup = {op: n for op, n in loop["full_ops"].items() if op.startswith("WARPGROUP")}
    assert warpgroup == {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1}, warpgroup
    assert "serialized" not in r["log"], r["log"]
    assert sum("WARPGROUP.DEPBAR.LE gsb0, 0x1" in line for line in r["text"]) == 1
    # each UTMALDG issued once by the lane elected before the loop: no ELECT / BRA.U.ANY loop
    # over the warp's lanes around each copy
    assert loop["ops"].get("ELECT", 0) == 0 and "BRA.U.ANY" not in loop["full_ops"], loop["full_ops"]
    # the static hot loop as NVRTC 13.5 gives it, instructions per HGMMA (20.0, 11.1, 26.5, 25.0
    # two stops ago; 16.5, 9.5, 23.25, 21.5 with the moving coordinates' extent tests, the
    # elected lane and the stage refilled worked out before the loop; now 14.25, 8.38, 16.5, 14.5
    # with the descriptors' low words, the tensor maps' and mbarriers' addresses and A's
    # warpgroup rows worked out before it too: issue 29; cuTile's f16 128x128x32 is 14.5). NVRTC
    # 13.0 gives the same (it gave 14.5, 8.5, 16.75, 14.75 while the TMA copies' stage offset
    # was an int product: emit_pipeline.py's fetch lambda)
    assert loop["per_mma"] <= per_hgmma, loop


@needs_sass
def test_sm90a_cp_async_k_loop_keeps_a_group_in_flight():
    """A's rows of 4090 f16 are not 16-byte aligned: no tensor map, cp.async brings A (TMA
    still B), and the MMAs still keep one group in flight, not serialized by ptxas."""
    r = _sass(np.float16, (128, 128, 32), "sm_90a", k=4090)
    loop = r["hot_loop"]
    assert loop["ops"].get("HGMMA") == 4 and loop["ops"].get("LDGSTS", 0) > 0, loop
    warpgroup = {op: n for op, n in loop["full_ops"].items() if op.startswith("WARPGROUP")}
    assert warpgroup == {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1}, warpgroup
    assert sum("WARPGROUP.DEPBAR.LE gsb0, 0x1" in line for line in r["text"]) == 1
    assert "serialized" not in r["log"] and "C7517" not in r["log"], r["log"]
    # (NVRTC 13.5: 328 instructions; 350 when it waited for 0: A's copies, alignment unknown,
    # are most of it. NVRTC 13.0: 340, its NVVM does the copies' shared-memory address arithmetic
    # in 64 bits, 13.5's in 32; the PTX of each through the same ptxas keeps the difference)
    assert r["spill_bytes"] == 0 and loop["per_mma"] <= by_nvrtc({(13, 0): 85, (13, 5): 82}), loop


def test_only_kernels_with_a_warpgroup_mma_get_the_class():
    from tests.reference_kernels.cases import CASES
    for name, has in (("matmul_f16", True), ("attention", True), ("batched_matmul", False)):
        kernel, args, _, _ = CASES[name](np.random.default_rng(0))
        assert ("#if TP_WGMMA" in compile_for_args(kernel, args).cuda_source) == has, name


@needs_sass
def test_sm90_keeps_mma_sync():
    c = _sass(np.float16, (128, 128, 32), "sm_90")["counts"]
    assert c["HGMMA"] == 0 and c["HMMA"] > 0 and c["LDSM"] > 0, c


@pytest.mark.parametrize("mode", ["faithful", "fast"])
@pytest.mark.parametrize("tiles,K", [((64, 64, 32), 80),      # 64-byte swizzle, FM 1
                                     ((128, 64, 16), 85)])    # 32-byte, FM 2, unaligned rows
def test_sm90a_class_runs_on_the_cpu(mode, tiles, K, monkeypatch):
    # (f16: the fake driver's CUDA arrays have no bf16; the bf16 class is the same template)
    from fake_driver import FakeDriver, cuda_array
    monkeypatch.setenv("TILEPY_SM90A", "1")     # sm_90 devices take the class when asked
    rng = np.random.default_rng(1)
    M, N = 100, 72                              # ragged: no tile divides them
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    with FakeDriver() as drv, ct.cpu_mode(mode):
        grid = (ct.cdiv(M, tiles[0]), ct.cdiv(N, tiles[1]))
        ct.launch(None, grid, matmul, tuple(cuda_array(x, "dlpack") for x in (a, b, c)) + tiles)
        drv.raise_sticky()     # a faithful-mode report, as the next synchronization would
        (source,) = drv.sources.values()
    # one MMA group stays in flight (wgmma_acc), whether TMA brings every operand (K 80) or
    # cp.async brings A (K 85): then a barrier before the MMAs too, and the commit after the fetch
    assert "#define TP_WGMMA 1" in source and "tp::wgmma_acc<" in source and "wgmma_tc" not in source
    assert ("everyone's copies landed (and were fenced for wgmma)" in source) == (K != 80)
    # ... retired after the loop, before the store reads the accumulator (checked: wgmma_read),
    # staged in the pipeline's buffers: the whole tile, or (128 x 64 f32 in 24 KiB) two passes
    drain = source.find("tp::wgmma_drain(acc")
    assert 0 <= drain < source.find("tp::tma_store<", drain) < source.find("tp::wgmma_read(acc", drain)
    assert ("2 passes of 64 rows" in source) == (tiles[0] == 128), source
    # B's rows (144 bytes) suit a tensor map: TMA brings it; A's (160 / 170 bytes) by K
    maps = {(m.args.dims, m.args.box, m.args.swizzle) for m in drv.tensor_maps}
    assert ((N, K), (64, tiles[2]), 3) in maps, maps
    # A as one box of all its rows: the accumulator's warps interleave as wgmma's m64 wants them
    assert (((K, M), (tiles[2], tiles[0]), tiles[2] // 16) in maps) == (K == 80)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode,dtype,shape,tiles", [
    *((m, "bfloat16", (256, 256, 128), (128, 128, 64)) for m in ("faithful", "fast")),  # tutorial-sized
    # ragged; 8 K steps: the 4 stages twice
    *((m, "bfloat16", (200, 136, 240), (128, 64, 32)) for m in ("faithful", "fast")),
    ("fast", "float16", (256, 256, 128), (128, 128, 32)),
    # two warpgroups (256 threads), each multiplying its own 64-row blocks of A: its descriptors
    # start at the warpgroup's rows (wgmma_ops.h wg_lo_rows), worked out before the K loop
    ("faithful", "float16", (256, 256, 128), (256, 128, 32))])
def test_sm90a_tma_gemm_on_the_cpu(mode, dtype, shape, tiles, monkeypatch):
    """bf16 and f16 (torch tensors as the fake GPU's): both operands by TMA, one MMA group in
    flight across iterations (wgmma_acc), maps built once per array and reused by the warm launch
    (one dict lookup; no encode call); bf16 in both CPU modes, f16 at 128x128 tiles in the fast
    one and at 256x128 (two warpgroups) in the faithful one. (f16 ragged:
    test_sm90a_class_runs_on_the_cpu.)"""
    torch = pytest.importorskip("torch")
    from fake_driver import FakeDriver, torch_on_the_fake_gpu
    monkeypatch.setenv("TILEPY_SM90A", "1")
    M, N, K = shape
    g = torch.Generator().manual_seed(4)
    a = torch.randn(M, K, generator=g).to(getattr(torch, dtype))
    b = torch.randn(K, N, generator=g).to(getattr(torch, dtype))
    c = torch.zeros(M, N)
    with FakeDriver() as drv, ct.cpu_mode(mode):
        torch_on_the_fake_gpu(monkeypatch, torch)
        grid = (ct.cdiv(M, tiles[0]), ct.cdiv(N, tiles[1]))
        for _ in range(2):
            c.zero_()
            ct.launch(None, grid, matmul, (a, b, c) + tiles)
        drv.raise_sticky()
        assert len(drv.tensor_maps) == 3 and len(drv.launches) == 2   # the warm launch: cached maps
        ptrs = [a.data_ptr(), b.data_ptr(), c.data_ptr()]
        (ma, mb, mc) = sorted((m.args for m in drv.tensor_maps), key=lambda m: ptrs.index(m.base))
    assert ma.base == a.data_ptr() and ma.dims == (K, M) and ma.strides == (2 * K,)
    assert mb.dims == (N, K) and mb.box == (64, tiles[2]) and mb.swizzle == 3
    assert ma.dtype == {"bfloat16": 9, "float16": 6}[dtype]
    # the staged epilogue's TMA stores: f32 panels of 128 bytes, the whole tile in one pass (the
    # pipeline's buffers hold it), or 256 x 128 (128 KiB) in two of 128 rows
    rows = min(tiles[0], 128)
    assert (mc.dtype, mc.dims, mc.box, mc.swizzle) == (7, (N, M), (32, rows), 3), mc
    source = next(iter(drv.sources.values()))
    assert "tp::wgmma_acc<" in source and "tp::tma_store<" in source
    assert ("2 passes of 128 rows" in source) == (tiles[0] == 256)
    assert (f"#define TP_NT {256 if tiles[0] == 256 else 128}\n") in source
    ref = a.double().numpy() @ b.double().numpy()
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-5, atol=1e-4)


# Three hand-written kernels, device functions of one entry (`kernel` picks one; one CPU build
# serves them all: the `wgmma_kernels` fixture). `seeded`: one warpgroup multiplies a 64 x 32 A
# (64-byte swizzle, K-major) by a 32 x 64 B (128-byte swizzle, N-major) staged by cp.async;
# `seed` leaves out one step or breaks the descriptor (5: the same bytes as bf16; 6: reads the
# accumulator while a wait_group 1 leaves an MMA running; 7: B's start address 16 bytes off).
SEEDED = r"""
__device__ void seeded(unsigned char* smem, const __half* a, const __half* b, float* c, int seed) {
  const tp::WgOp<__half, 64, 32> A{(__half*)smem};
  const tp::WgOp<__half, 32, 64> B{(__half*)(smem + 4096)};
  const int t = threadIdx.x, w = t / 32, l = t % 32;
  for (int ch = t; ch < 256; ch += 128) {
    tp::cp_async<16>(A.srow(0, ch / 4, ch % 4 * 8), a + ch * 8);
    tp::cp_async<16>(B.srow(0, ch / 8, ch % 8 * 8), b + ch * 8);
  }
  tp::cp_async_commit();
  tp::cp_async_wait<0>();
  if (seed != 1) tp::fence_proxy_async();
  __syncthreads();
  float d[32] = {};
  if (seed != 2) tp::wgmma_fence();
  for (int k0 = 0; k0 < 32; k0 += 16) {
    uint64_t db = tp::wg_desc_b(B, k0);
    if (seed == 3) db = (db & ~(3ull << 62)) | 2ull << 62;   // 64-byte swizzle, not 128
    if (seed == 7)   // as a K loop makes it (its low word worked out once), 16 bytes off
      db = (tp::wg_hi<tp::WgOp<__half, 32, 64>>() | (tp::wg_lo_once<true>(B) + 1u)) +
           tp::wg_b_units<tp::WgOp<__half, 32, 64>>(k0);
    if (seed == 5) tp::wgmma_async<64, 2, 1>(d, tp::wg_desc_a(A, 0, k0), db, 1);   // bf16 bits
    else tp::wgmma_async<64, 1, 1>(d, tp::wg_desc_a(A, 0, k0), db, 1);
    if (seed == 6) tp::wgmma_commit();     // a group per k16 step
  }
  if (seed != 6) tp::wgmma_commit();
  if (seed == 4) return;                   // 4: exits with the group in flight
  if (seed == 6) tp::wgmma_wait<1>();      // 6: the second group still runs
  else tp::wgmma_wait<0>();
  const float* r = tp::wgmma_read(d);      // the emitter reads an accumulator so
  for (int i = 0; i < 32; ++i)
    c[(16 * w + l / 4 + 8 * (i % 4 / 2)) * 64 + 8 * (i / 4) + 2 * (l % 4) + i % 2] = r[i];
}
"""


def _seeded_run(kernel, seed, dtype=np.float16):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((64, 32)).astype(dtype), rng.standard_normal((32, 64)).astype(dtype)
    c = np.zeros((64, 64), np.float32)
    kernel((1,), a, b, c, SEEDED_KERNELS.index("seeded"), seed, NO_MAP, NO_MAP, smem=8192)
    return c, a.astype(np.float64) @ b.astype(np.float64)




@pytest.mark.parametrize("seed,message", [
    (1, "has not executed fence.proxy.async"),
    (2, "without a wgmma.fence"),
    (4, "exits with wgmma.mma_async operations in flight"),
])
def test_missing_fence_or_wait_is_an_error(wgmma_kernels, seed, message):
    with pytest.raises(ct.TileLaunchError, match=message):
        _seeded_run(wgmma_kernels, seed)


def test_reading_an_accumulator_in_flight_is_an_error(wgmma_kernels):
    """wait_group 1 leaves the second k16 step's group running: the read of its registers (as
    the emitter spells one after a K loop that keeps a group in flight) is reported at its line."""
    line = next(i for i, text in enumerate(WGMMA_KERNELS.split("\n"), 1) if "tp::wgmma_read(d)" in text)
    with pytest.raises(ct.TileLaunchError, match=r"reading the accumulator of a wgmma\.mma_async "
                       r"still in flight: its group was committed") as e:
        _seeded_run(wgmma_kernels, 6)
    assert f"wgmma_kernels.cpp:{line}" in str(e.value)


# One warpgroup multiplies a 64 x 32 A by a 32 x 64 B that TMA brings into wgmma's layouts (A: a
# 64-byte swizzle, B: 128-byte), completing on one mbarrier: the maps as the host encodes them
# (launch/tensor_map.py, the fake driver's cuTensorMapEncodeTiled); `seed` seeds one mistake.
TMA_SEEDED = r"""
__device__ void tma_seeded(unsigned char* smem, float* c, int seed, const tp::TensorMap& ma,
                           const tp::TensorMap& mb) {
  const tp::WgOp<__half, 64, 32> A{(__half*)smem};
  const tp::WgOp<__half, 32, 64> B{(__half*)(smem + 4096)};
  uint64_t* bar = (uint64_t*)(smem + 8192);
  const int t = threadIdx.x, w = t / 32, l = t % 32;
  tp::mbar_init(bar, 1);
  __syncthreads();
  if (tp::tma_leader()) {
    tp::mbar_expect_tx(bar, seed == 4 ? 8192 + 16 : 8192);   // 4: more bytes than the copies bring
    tp::tma_copy<2>(ma, A.p, bar, {0, 0});
    tp::tma_copy<2>(mb, B.p, bar, {0, 0});
    tp::mbar_arrive(bar);
  }
  if (seed != 3) tp::mbar_wait(bar, seed == 2 ? 1 : 0);   // 2: the previous phase's parity
  float d[32] = {};
  tp::wgmma_fence();
  for (int k0 = 0; k0 < 32; k0 += 16) {
    if (seed == 5) tp::wgmma_async<64, 2, 1>(d, tp::wg_desc_a(A, 0, k0), tp::wg_desc_b(B, k0), 1);
    else tp::wgmma_async<64, 1, 1>(d, tp::wg_desc_a(A, 0, k0), tp::wg_desc_b(B, k0), 1);
  }
  tp::wgmma_commit();
  tp::wgmma_wait<0>();
  for (int i = 0; i < 32; ++i)
    c[(16 * w + l / 4 + 8 * (i % 4 / 2)) * 64 + 8 * (i / 4) + 2 * (l % 4) + i % 2] = d[i];
}
"""


def _tma_run(kernel, seed, dtype=np.float16, b_swizzle=128):
    from tilepy.launch.tensor_map import cpu_tensor_map, encode_args
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((64, 32)).astype(dtype), rng.standard_normal((32, 64)).astype(dtype)
    elem = "bf16" if dtype == ml_dtypes.bfloat16 else "f16"
    ma = cpu_tensor_map(encode_args(("a", elem, (64, 32), 64), a.ctypes.data, a.shape, (32, 1), 2))
    mb = cpu_tensor_map(encode_args(("b", elem, (32, 64), b_swizzle), b.ctypes.data, b.shape,
                                    (64, 1), 2))
    c = np.zeros((64, 64), np.float32)
    kernel((1,), 0, 0, c, SEEDED_KERNELS.index("tma_seeded"), seed, ma, mb, smem=9216)
    return c, a.astype(np.float64) @ b.astype(np.float64)


def _run(request, copy: str, seed: int, **kw):
    """The seeded kernel whose operands `copy` ("cp.async" or "tma") brings, run with `seed`."""
    kernel = request.getfixturevalue("wgmma_kernels")
    return (_tma_run if copy == "tma" else _seeded_run)(kernel, seed, **kw)


@pytest.mark.parametrize("copy", ["cp.async", "tma"])
@pytest.mark.parametrize("seed,dtype", [(0, np.float16), (5, ml_dtypes.bfloat16)])
def test_wgmma_emulation_matches_numpy(request, copy, seed, dtype):
    c, ref = _run(request, copy, seed, dtype=dtype)
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("copy,seed,kw", [
    ("cp.async", 3, {}),               # B's descriptor says a 64-byte swizzle, B has 128
    ("cp.async", 7, {}),               # B's low word (start address) one 16-byte unit off
    ("tma", 0, {"b_swizzle": 0}),      # B's tensor map lands it unswizzled; its descriptor: 128
])
def test_wrong_swizzle_gives_wrong_values(request, copy, seed, kw):
    c, ref = _run(request, copy, seed, **kw)
    assert not np.allclose(c, ref, atol=1e-2)


@pytest.mark.parametrize("seed,message", [
    (2, r"a cp\.async\.bulk\.tensor has not written yet.*wrong parity"),
    (3, r"a cp\.async\.bulk\.tensor has not written yet"),
    (4, r"deadlock: .*wait on the mbarrier at dynamic shared byte 8192 for phase parity 0.*"
        r"awaits 0 arrival\(s\) and 16 transaction byte\(s\)"),
])
def test_mbarrier_mistakes_are_errors(wgmma_kernels, seed, message):
    with pytest.raises(ct.TileLaunchError, match=message) as e:
        _tma_run(wgmma_kernels, seed)
    assert "wgmma_kernels" in str(e.value)


def test_tensor_maps_are_checked_as_the_driver_checks_them():
    """cuTensorMapEncodeTiled's refusals, as the fake driver (and the CPU encoding) make them."""
    from dataclasses import replace

    from tilepy.launch.tensor_map import EncodeArgs, cpu_tensor_map
    a = EncodeArgs(6, 0x1000, (64, 100), (128,), (64, 16), 3, (1, 1))
    assert len(cpu_tensor_map(a)) == 128
    for bad, message in [(replace(a, base=0x1008), "not 16-byte aligned"),
                         (replace(a, strides=(120,)), "not a multiple of 16"),
                         (replace(a, box=(72, 16)), "exceeds the 128-byte swizzle"),
                         (replace(a, box=(64, 300)), r"boxDim 300 outside \(0, 256\]")]:
        with pytest.raises(ValueError, match=message):
            cpu_tensor_map(bad)


@ct.kernel
def gemm_and_a_block_mma(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """The K loop's mma is a warpgroup MMA; the one after it (its operands not pipelined) stays
    mma.sync in the sm_90a class, on the same interleaved accumulator layout."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    a0 = ct.load(A, index=(bm, 0), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
    b0 = ct.load(B, index=(0, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(C, index=(bm, bn), tile=ct.mma(a0, b0, acc))


def test_mma_sync_on_the_interleaved_layout(monkeypatch):
    """Warps interleaved by warpgroups (MmaAcc wg 1: fragment i of warp j holds rows (4i + j) *
    16.. of a 128-row tile on 4 warps) are the layout of every accumulator of the class, also
    an mma.sync's: its A fragments come from those rows (faithful mode, numerics against numpy)."""
    from fake_driver import FakeDriver, cuda_array
    monkeypatch.setenv("TILEPY_SM90A", "1")
    rng = np.random.default_rng(5)
    M, N, K, tiles = 128, 64, 96, (128, 64, 32)
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    with FakeDriver() as drv, ct.cpu_mode("faithful"):
        ct.launch(None, (1, 1), gemm_and_a_block_mma, tuple(cuda_array(x) for x in (a, b, c)) + tiles)
        drv.raise_sticky()     # a faithful-mode report, as the next synchronization would
        (source,) = drv.sources.values()
    start = source.index("#if TP_WGMMA")
    wg = source[start:source.index("\n#el", start)]         # the sm_90a class's kernel
    assert "tp::wgmma_acc<" in wg and "tp::mma_tc<" in wg, wg
    assert "tp::MmaAcc<1, 128, 64, 4, 1, 1>" in wg and "tp::MmaAcc<1, 128, 64, 4, 1>" not in wg, wg
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(c, a64 @ b64 + a64[:, :32] @ b64[:32], rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------- attention
attention = load("05_attention")


@ct.kernel
def invariant_a_twice(A, B, C, Out, TM: ct.Constant[int], TN: ct.Constant[int],
                      TK: ct.Constant[int], TN2: ct.Constant[int]):
    """One loop-invariant A (staged once before the loop) read by two mmas of the K loop, the
    second of TN2 columns."""
    bm = ct.bid(0)
    a = ct.load(A, index=(bm, 0), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    acc2 = ct.zeros((TM, TN2), dtype=ct.float32)
    for j in range(ct.num_tiles(B, axis=1, shape=(TK, TN))):
        b = ct.load(B, index=(0, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        c = ct.load(C, index=(0, j), shape=(TK, TN2), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
        acc2 = ct.mma(a, c, acc2)
    ct.store(Out, index=(bm, 0), tile=acc + ct.sum(acc2, axis=1, keepdims=True))


@pytest.mark.parametrize("tn2,wgmma", [(64, 2), (8, 0)])     # 8: no wgmma n of tilepy's
def test_a_staged_operand_is_one_layout_for_all_its_readers(tn2, wgmma):
    """The staged A's one buffer has one layout: two mmas reading it are warpgroup MMAs both, or
    (the second cannot be one) mma.sync both (here no mma of the kernel is: no sm_90a class)."""
    x = np.zeros((128, 64), np.float16)
    args = (x, np.zeros((64, 192), np.float16), np.zeros((64, 3 * tn2), np.float16),
            np.zeros((128, 64), np.float32), 128, 64, 64, tn2)
    src = compile_for_args(invariant_a_twice, args).cuda_source
    assert src.count("tp::wgmma_acc<") == wgmma and ("#if TP_WGMMA" in src) == (wgmma > 0)


@needs_sass
@pytest.mark.parametrize("d,bm,hgmma,utmaldg,per_hgmma,blocks", [
    # per_hgmma by NVRTC version (kernels_util.by_nvrtc)
    (64, 128, 16, 2, {(13, 0): 40.56, (13, 5): 40.5}, 3),   # 2 m64 blocks: S 2 x 4 k16 steps
                                                            # (n64), O 2 x 4 (n64)
    (128, 64, 12, 4, {(13, 0): 35, (13, 5): 35}, 2),        # 1 m64 block: S 8 k16 steps (n64),
                                                            # O 4 (n128); K, V two panels
])
def test_sm90a_attention_kv_loop_is_hgmma(d, bm, hgmma, utmaldg, per_hgmma, blocks):
    """The tutorial's attention at `python -m tilepy doctor --gpu`'s tiles (BN 64): S = Q K^T
    with Q staged once and K by TMA, O += P V with P as wgmma's register A and V by TMA; no
    mma.sync left, no spills, the MMAs not serialized by ptxas; as many blocks per SM as the
    registers ptxas gave allow (d=64: 3 stages, 65 KiB, not 4 and 81 KiB: the class's register
    estimate, lowering/plan.py WG_REGS_OVERHEAD), the launch passing the class's own size."""
    # (four arrays, as a call has them: the specialization and so the source of
    # test_sm90a_attention_on_the_cpu's cases at these tiles, whose NVRTC build is this one)
    q = np.zeros((32, 4096, d), np.float16)
    ck = compile_for_args(attention.attention, (q, q.copy(), q.copy(), q.copy(), 0.125, bm, 64, d))
    cb = compile_cubin(ck.compile_source(), "sm_90a", ck.name)
    (r,) = sass_stats.stats(cb.data, cb.log).values()
    loop = r["hot_loop"]
    assert loop["ops"].get("HGMMA") == hgmma and loop["ops"].get("UTMALDG") == utmaldg, loop
    assert r["counts"]["HMMA"] == 0 and r["counts"]["LDGSTS"] == 0, r["counts"]
    assert r["spill_bytes"] == 0 and r["counts"]["LDL/STL"] == 0
    assert "serialized" not in cb.log, cb.log
    # each MMA's group is retired in its step (the softmax reads S, O is rescaled)
    warpgroup = {op: n for op, n in loop["full_ops"].items() if op.startswith("WARPGROUP")}
    assert warpgroup == {"WARPGROUP.ARRIVE": 2, "WARPGROUP.DEPBAR.LE": 2}, warpgroup
    # (NVRTC 13.5: 40.5 and 34.92 with the descriptors' low words worked out before the loop
    # (164 and 127 registers); 41.3 and 35.7, 42.1 and 36.6 before; mma.sync's loops on sm_90
    # are 851 and 719 instructions. NVRTC 13.0: 649 and 420 instructions, 40.56 and 35.0: the
    # wait's mbarrier address at the top of the loop takes a shift and an add where 13.5's
    # folds the buffer's offset into the SYNCS instruction, 64-bit shared-memory pointers in
    # 13.0's NVVM)
    assert loop["per_mma"] <= by_nvrtc(per_hgmma), loop
    # blocks per SM: by registers (allocated per warp in units of 8 per thread) and by shared
    # memory (228 KiB an SM, 1 KiB of it reserved per block)
    by_regs = 65536 // (-(-r["registers"] // 8) * 8 * 128)
    by_smem = 228 * 1024 // (ck.emitted.smem_for("sm_90a") + 1024)
    assert min(by_regs, by_smem) == blocks and by_smem <= by_regs, (by_regs, by_smem)


@pytest.mark.parametrize("mode,bh,s,d,bm,bn", [
    ("faithful", 2, 200, 64, 64, 32),    # the tutorial's tiles; 200 keys: a ragged last tile
    ("fast", 2, 200, 64, 64, 32),
    ("faithful", 2, 136, 128, 64, 64),   # K and V of two 128-byte panels, n128 for O
    ("faithful", 2, 200, 64, 128, 64),   # two m64 blocks per warp
])   # (the last two: the sources of test_sm90a_attention_kv_loop_is_hgmma, whose NVRTC builds
     # the fake driver's compiles read from the cache)
def test_sm90a_attention_on_the_cpu(mode, bh, s, d, bm, bn, monkeypatch):
    """The tutorial's attention in the sm_90a class (fake sm_90 device, TILEPY_SM90A) against
    float64 numpy: both mmas are warpgroup MMAs, the second with P from registers."""
    from fake_driver import FakeDriver, cuda_array
    monkeypatch.setenv("TILEPY_SM90A", "1")
    rng = np.random.default_rng(7)
    q = rng.standard_normal((bh, s, d))
    k = (0.5 * q + rng.standard_normal((bh, s, d))).astype(np.float16)
    q, v = q.astype(np.float16), rng.standard_normal((bh, s, d)).astype(np.float16)
    out = np.zeros((bh, s, d), np.float16)
    scale = d ** -0.5
    with FakeDriver() as drv, ct.cpu_mode(mode):
        ct.launch(None, (ct.cdiv(s, bm), bh), attention.attention,
                  tuple(cuda_array(x) for x in (q, k, v, out)) + (scale, bm, bn, d))
        drv.raise_sticky()     # a faithful-mode report, as the next synchronization would
        (source,) = drv.sources.values()
    start = source.index("#if TP_WGMMA")
    wg = source[start:source.index("\n#el", start)]         # the sm_90a class's kernel
    assert wg.count("tp::wgmma_tc<") == 2 and "tp::mma_tc<" not in wg, wg
    assert f"tp::WgOp<__half, {bm}, {d}, false>{{tp_hoist" in wg     # Q, staged once
    assert "tp::tma_store<" in wg and "tp::store<" not in wg, wg      # O: staged, TMA stores
    ref, _ = attention.reference(q, k, v, scale)
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-3, rtol=1e-2)


# One warpgroup multiplies a 64 x 32 A held in registers (each thread packs its fragments from
# global memory by the PTX ISA's register layout of wgmma's A) by a 32 x 64 B (128-byte swizzle,
# N-major) staged by cp.async; `seed` seeds one mistake: 1 the fragment's registers in the
# wrong order (rows and columns mixed up), 2 the fragments written after the wgmma.fence, 3
# a fragment register changed while its MMA is in flight.
REG_A = r"""
__device__ void reg_a(unsigned char* smem, const __half* a, const __half* b, float* c, int seed) {
  const tp::WgOp<__half, 32, 64> B{(__half*)smem};
  const int t = threadIdx.x, w = t / 32, l = t % 32;
  for (int ch = t; ch < 256; ch += 128) tp::cp_async<16>(B.srow(0, ch / 8, ch % 8 * 8), b + ch * 8);
  tp::cp_async_commit();
  tp::cp_async_wait<0>();
  tp::fence_proxy_async();
  __syncthreads();
  uint32_t af[2][4];   // k16 step s, register j: row 16w + l/4 + 8 (j % 2), columns 16s + 2 (l % 4) + 8 (j / 2), +1
  auto pack = [&]() {
    for (int s = 0; s < 2; ++s)
      for (int j = 0; j < 4; ++j) {
        const int r = 16 * w + l / 4 + 8 * (j % 2), col = 16 * s + 2 * (l % 4) + 8 * (j / 2);
        af[s][seed == 1 && j % 3 ? 3 - j : j] = tp::pack2(a[r * 32 + col], a[r * 32 + col + 1]);
      }
    tp::wgmma_wrote_a();
  };
  float d[32] = {};
  if (seed != 2) pack();
  tp::wgmma_fence();
  if (seed == 2) pack();
  for (int s = 0; s < 2; ++s) tp::wgmma_async<64, 1, 1>(d, af[s], tp::wg_desc_b(B, 16 * s), 1);
  tp::wgmma_commit();
  if (seed == 3) af[1][2] ^= 1;
  tp::wgmma_wait<0>();
  for (int i = 0; i < 32; ++i)
    c[(16 * w + l / 4 + 8 * (i % 4 / 2)) * 64 + 8 * (i / 4) + 2 * (l % 4) + i % 2] = d[i];
}
"""


# One warpgroup writes a 64 x 64 f32 tile (element e: e + 0.5) into shared memory in wgmma's
# layout (two 128-byte-swizzled panels, as the staged epilogue does) and one thread stores it by
# TMA at (0, 0) of a smaller array (the box clipped); `seed` seeds one mistake: 1 no
# fence.proxy.async after the threads' writes, 2 the tile written again before the store's read
# completed (no wait_group.read), 3 the block exits with the store in flight, 4 a cp.async of
# thread 1 into the tile still to land when the store is issued, 5 one landing there (waited
# for) while the store is in flight.
TMA_STORE = r"""
__device__ void tma_store_seeded(unsigned char* smem, int seed, const tp::TensorMap& mc,
                                 const float* g) {
  const tp::WgOp<float, 64, 64> S{(float*)smem};
  const int t = threadIdx.x;
  for (int e = 2 * t; e < 4096; e += 256) {
    const float v[2] = {e + 0.5f, e + 1.5f};
    tp::smem_write<2>(&S.at(0, e / 64, e % 64), v);
  }
  if (seed == 4 && t == 1) {
    tp::cp_async<16>(S.p + 64, g);
    tp::cp_async_commit();
  }
  if (seed != 1) tp::fence_proxy_async();
  __syncthreads();
  if (tp::tma_issuer()) {
    for (int p = 0; p < 2; ++p) tp::tma_store_copy<2>(mc, S.p + p * 64 * 32, {32 * p, 0});
    tp::bulk_commit();
    if (seed < 2) tp::bulk_wait_read<0>();
  }
  __syncthreads();
  if (seed == 2) {
    const float z[2] = {0.0f, 0.0f};
    tp::smem_write<2>(&S.at(0, t / 32, t % 32 * 2), z);
  }
  if (seed >= 4) {
    if (seed == 5 && t == 1) {
      tp::cp_async<16>(S.p + 64, g);
      tp::cp_async_commit();
    }
    if (t == 1) tp::cp_async_wait<0>();
    __syncthreads();
    if (tp::tma_issuer()) tp::bulk_wait_read<0>();
  }
}
"""


# The staged epilogue where no tensor map describes the view (tp::staged_store): a 128 x 64 f32
# tile in the class's accumulator layout (element e of the tile: e + 0.5) staged in 64-row
# passes, read back and stored with 16-byte stores at tile (0, 1) of a 100 x 72 array (ragged:
# 100 of its 128 rows, 8 of its 64 columns).
STAGED = r"""
__device__ void staged(unsigned char* smem, float* c) {
  using L = tp::MmaAcc<1, 128, 64, 4, 1, 1>;
  tp::Tile<float, 8192, L> x;
  for (int s = 0; s < L::K; ++s) x.v[s] = L::elem(s) + 0.5f;
  const tp::View<float, 2> v{c, {100, 72}, {72, 1}};
  tp::staged_store<tp::Shape<128, 64>, tp::Shape<64, 64>, tp::DimMap<0, 1>, true, 64>(
      v, {0, 1}, x, (float*)smem);
}
"""


# The K loop's TMA coordinates (tp::TmaAxis, made once before the loop) against tma_at's for tile
# indices at and around every boundary: INT32_MIN, the extent, an extent past INT32_MAX tiles,
# no elements (c[0]: how many differ; c[1]: how many were compared).
AXIS = r"""
template <class S, int D> __device__ int axis_mismatches(int64_t e, int& n) {
  const tp::View<float, 2> v{nullptr, {e, e}, {1, 1}};
  const auto ax = tp::tma_axis<S, D>(v);
  const int64_t td = S::dims[D], lim = (e + td - 1) / td;
  const int64_t ks[] = {INT32_MIN, INT32_MIN / td - 1, INT32_MIN / td, INT32_MIN / td + 1, -1, 0, 1,
                        lim - 1, lim, lim + 1, INT32_MAX / td, INT32_MAX / td + 1, INT32_MAX - 1, INT32_MAX};
  int bad = 0;
  for (int64_t k : ks) {
    if (k < INT32_MIN || k > INT32_MAX) continue;
    bad += ax.at((int32_t)k) != tp::tma_at<S, D>(v, k);
    ++n;
  }
  return bad;
}
__device__ void axis(float* c) {
  if (threadIdx.x) return;
  const int64_t es[] = {-3, 0, 1, 31, 32, 33, 4096, 5000, INT32_MAX, (int64_t)INT32_MAX * 48 + 5};
  int bad = 0, n = 0;
  for (int64_t e : es)
    bad += axis_mismatches<tp::Shape<32, 48>, 0>(e, n) + axis_mismatches<tp::Shape<32, 48>, 1>(e, n) +
           axis_mismatches<tp::Shape<1, 3>, 1>(e, n) + axis_mismatches<tp::Shape<1, 3>, 0>(e, n);
  c[0] = bad;
  c[1] = n;
}
"""


SEEDED_KERNELS = ("seeded", "tma_seeded", "reg_a", "tma_store_seeded", "staged", "axis")
WGMMA_KERNELS = r"""#define TP_WGMMA 1
#include "tilepy/runtime.h"
""" + SEEDED + TMA_SEEDED + REG_A + TMA_STORE + STAGED + AXIS + r"""
extern "C" __global__ void wgmma_kernels(const __half* a, const __half* b, float* c, int kernel,
                                         int seed, const __grid_constant__ tp::TensorMap ma,
                                         const __grid_constant__ tp::TensorMap mb) {
  extern __shared__ __align__(1024) unsigned char smem[];
  if (kernel == 0) seeded(smem, a, b, c, seed);
  else if (kernel == 1) tma_seeded(smem, c, seed, ma, mb);
  else if (kernel == 2) reg_a(smem, a, b, c, seed);
  else if (kernel == 3) tma_store_seeded(smem, seed, ma, c);
  else if (kernel == 4) staged(smem, c);
  else axis(c);
}
"""
NO_MAP = bytes(128)      # the tensor-map parameters of a kernel that reads none


@pytest.fixture(scope="module")
def wgmma_kernels():
    return build(WGMMA_KERNELS, "wgmma_kernels", threads=128)


def _reg_a_run(kernel, seed):
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((64, 32)).astype(np.float16), rng.standard_normal((32, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel((1,), a, b, c, SEEDED_KERNELS.index("reg_a"), seed, NO_MAP, NO_MAP, smem=4096)
    return c, a.astype(np.float64) @ b.astype(np.float64)


def test_register_a_emulation_matches_numpy_and_catches_a_wrong_fragment(wgmma_kernels):
    c, ref = _reg_a_run(wgmma_kernels, 0)
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-5)
    c, ref = _reg_a_run(wgmma_kernels, 1)        # registers 1 and 2 swapped: rows 8.. and columns 8..
    assert not np.allclose(c, ref, atol=1e-2)


@pytest.mark.parametrize("seed,message", [
    (2, "without a wgmma.fence since the thread wrote the registers of an A fragment"),
    (3, "A fragment registers of a wgmma.mma_async changed while it was in flight"),
])
def test_register_a_mistakes_are_errors(wgmma_kernels, seed, message):
    with pytest.raises(ct.TileLaunchError, match=message):
        _reg_a_run(wgmma_kernels, seed)


def _tma_store_run(kernel, seed):
    from tilepy.launch.tensor_map import cpu_tensor_map, encode_args
    c = np.zeros((50, 40), np.float32)        # ragged: the 64 x 64 tile's box is clipped
    mc = cpu_tensor_map(encode_args(("c", "f32", (64, 32), 128), c.ctypes.data, c.shape, (40, 1), 4))
    kernel((1,), 0, 0, c, SEEDED_KERNELS.index("tma_store_seeded"), seed, mc, NO_MAP, smem=16384)
    return c


def test_tma_store_writes_the_box_clipped(wgmma_kernels):
    """The TMA store reads the swizzled panels back as the load writes them and writes only the
    elements inside the array (50 x 40 of the 64 x 64 tile)."""
    c = _tma_store_run(wgmma_kernels, 0)
    np.testing.assert_array_equal(c, (np.arange(4096).reshape(64, 64) + 0.5)[:50, :40])


@pytest.mark.parametrize("seed,message", [
    (1, r"a TMA store \(cp\.async\.bulk\.tensor\) reads shared-memory bytes at offset \d+ that "
        r"thread \d+ wrote, and that thread has not executed fence\.proxy\.async since"),
    (2, r"a thread writes shared-memory bytes at offset \d+ that a TMA store \(cp\.async\.bulk\.tensor, "
        r"line \d+\) still reads: no cp\.async\.bulk\.wait_group\.read"),
    (3, r"exits with a TMA store \(cp\.async\.bulk\.tensor from shared memory\) in flight"),
    (4, r"a TMA store \(cp\.async\.bulk\.tensor\) reads shared-memory bytes at offset 256 that a "
        r"cp\.async of thread 1 has not written yet: no cp\.async\.wait_group of that thread"),
    (5, r"a cp\.async of thread 1 lands in shared-memory bytes at offset 256 that this TMA store "
        r"\(cp\.async\.bulk\.tensor\) still reads: no cp\.async\.bulk\.wait_group\.read"),
])
def test_tma_store_mistakes_are_errors(wgmma_kernels, seed, message):
    with pytest.raises(ct.TileLaunchError, match=message) as e:
        _tma_store_run(wgmma_kernels, seed)
    assert "wgmma_kernels" in str(e.value)


def test_staged_store_without_a_tensor_map(wgmma_kernels):
    """The 16-byte path of the staged epilogue: the passes read back in row order, clipped to
    the array by tp::store's masks."""
    c = np.zeros((100, 72), np.float32)
    wgmma_kernels((1,), 0, 0, c, SEEDED_KERNELS.index("staged"), 0, NO_MAP, NO_MAP, smem=16384)
    tile = np.arange(128 * 64).reshape(128, 64) + 0.5
    np.testing.assert_array_equal(c[:, 64:], tile[:100, :8])
    assert not c[:, :64].any()


def test_k_loop_tma_coordinates_are_tma_at(wgmma_kernels):
    """tp::TmaAxis (the coordinates of the K loop's int32 tile indices, the extent's tests done
    before the loop) gives tma_at's coordinate for indices at and around every boundary."""
    c = np.zeros(2, np.float32)
    wgmma_kernels((1,), 0, 0, c, SEEDED_KERNELS.index("axis"), 0, NO_MAP, NO_MAP, smem=0)
    assert c[0] == 0 and c[1] > 400, c
