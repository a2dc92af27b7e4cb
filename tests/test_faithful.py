"""The faithful CPU mode: mode selection, real thread blocks (barriers, shared memory static and
dynamic, 2-d blocks, partial warps), cp.async visibility, many blocks over worker threads, and
the errors it reports instead of hanging or crashing."""
import numpy as np
import pytest

import tilepy as ct
from tilepy.api.compiler import compile_for_args
from tilepy.launch import cpu
from faithful_util import build

rng = np.random.default_rng(11)


# ---------------------------------------------------------------------------- mode selection
def test_mode_comes_from_env_and_context_manager(monkeypatch):
    monkeypatch.delenv("TILEPY_CPU_MODE", raising=False)
    assert cpu.current_mode() == "fast"
    monkeypatch.setenv("TILEPY_CPU_MODE", "faithful")
    assert cpu.current_mode() == "faithful"
    with ct.cpu_mode("fast"):
        assert cpu.current_mode() == "fast"
        with ct.cpu_mode("faithful"):
            assert cpu.current_mode() == "faithful"
        assert cpu.current_mode() == "fast"
    assert cpu.current_mode() == "faithful"


def test_bad_mode_is_rejected(monkeypatch):
    with pytest.raises(ct.TileValueError, match="fast, faithful"), ct.cpu_mode("threads"):
        pass
    monkeypatch.setenv("TILEPY_CPU_MODE", "fibres")
    with pytest.raises(ct.TileValueError, match="TILEPY_CPU_MODE='fibres' is not valid"):
        cpu.current_mode()


@ct.kernel
def scale_rows(x, y):
    i = ct.bid(0)
    t = ct.load(x, (i, 0), (4, 64))
    ct.store(y, (i, 0), t * ct.sum(t, axis=1, keepdims=True))


def test_emitted_kernel_runs_its_real_thread_count_in_faithful_mode():
    x = rng.standard_normal((8, 64)).astype(np.float32)
    ck = compile_for_args(scale_rows, (x, x))
    assert ck.emitted.nt == 128
    assert cpu.build(ck.emitted, ck.compile_source(), "faithful").threads == 128
    assert cpu.build(ck.emitted, ck.compile_source(), "fast").threads == 1
    for mode in cpu.MODES:
        y = np.zeros_like(x)
        with ct.cpu_mode(mode):
            ct.launch(None, (2,), scale_rows, (x, y))
        # the order of a sum is unspecified (warp shuffles in faithful mode): the error bound is
        # relative to the terms, not to a row sum that may nearly cancel
        scale = np.abs(x) * np.abs(x).sum(1, keepdims=True)
        np.testing.assert_allclose(y, x * x.sum(1, keepdims=True), rtol=1e-5, atol=1e-6 * scale.max())


# The tutorials run in the faithful mode as notebooks (tests/test_tutorials_jupyter.py).


# ---------------------------------------------------------------------------- thread blocks
DYN_SRC = r"""
#include "tilepy/runtime.h"
extern __shared__ __align__(16) unsigned char raw[];        // namespace scope: all kernels
// Tree reduction of each block's n inputs through dynamic shared memory.
extern "C" __global__ void dyn_sum(const float* x, float* out, int n) {
  extern __shared__ float part[];
  const int t = threadIdx.x;
  float s = 0.0f;
  for (int i = t; i < n; i += TP_NT) s += x[blockIdx.x * n + i];
  part[t] = s;
  __syncthreads();
  for (int stride = TP_NT / 2; stride > 0; stride /= 2) {
    if (t < stride) part[t] += part[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = part[0];
  if (t == 0) ((float*)raw)[TP_NT] = 1.0f;    // both names are the same memory
  __syncthreads();
  out[gridDim.x + blockIdx.x * TP_NT + t] = part[TP_NT];
}
// What a block finds in dynamic shared memory it never wrote.
extern "C" __global__ void dyn_peek(unsigned* out) {
  out[blockIdx.x * TP_NT + threadIdx.x] = ((unsigned*)raw)[threadIdx.x];
}
// Both in one library (one compile): `which` 0 runs dyn_sum, 1 dyn_peek (into out).
extern "C" __global__ void dyn(int which, const float* x, float* out, int n) {
  if (which == 0) dyn_sum(x, out, n);
  else dyn_peek((unsigned*)out);
}
"""


def test_dynamic_shared_memory_per_block_over_many_blocks():
    k = build(DYN_SRC, "dyn", threads=128)
    blocks, n = 64, 1000
    x = rng.standard_normal((blocks, n)).astype(np.float32)
    results = []
    for workers in (1, 2):
        out = np.zeros(blocks + blocks * 128, np.float32)
        k((blocks,), 0, x, out, n, smem=129 * 4, workers=workers)
        results.append(out)
        np.testing.assert_allclose(out[:blocks], x.sum(1), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(out[blocks:], 1.0)
    np.testing.assert_array_equal(results[0], results[1])      # deterministic across workers


def test_portable_fiber_switch_gives_the_same_results():
    k = build("#define TP_FIBER_UCONTEXT 1\n" + DYN_SRC, "dyn_sum", threads=64)
    x = rng.standard_normal((4, 100)).astype(np.float32)
    out = np.zeros(4 + 4 * 64, np.float32)
    k((4,), x, out, 100, smem=65 * 4)
    np.testing.assert_allclose(out[:4], x.sum(1), rtol=1e-5)


def test_dynamic_shared_memory_starts_poisoned():
    k = build(DYN_SRC, "dyn", threads=128)     # dyn_peek
    out = np.zeros(4 * 128, np.uint32)
    k((4,), 1, 0, out, 0, smem=128 * 4)
    assert (out == 0xFFFFFFFF).all()


def test_dynamic_shared_memory_limit():
    k = build(DYN_SRC, "dyn", threads=128)     # dyn_peek
    with pytest.raises(ct.TileValueError, match="dynamic shared memory"):
        k((1,), 1, 0, np.zeros(128, np.uint32), 0, smem=228 * 1024)


BLOCK2D_SRC = r"""
#include "tilepy/runtime.h"
// A 32x3 block with a 48-thread variant: lanes, warps and barriers follow the linear index.
extern "C" __global__ void ids(int* out) {
  __shared__ int seen[TP_NT];
  const int lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  seen[lin] = lin * 10;
  __syncthreads();
  const int other = seen[TP_NT - 1 - lin];
  const unsigned mask = (TP_NT % 32 && tp::warp_id() == TP_NT / 32) ? (1u << (TP_NT % 32)) - 1 : ~0u;
  const int nb = tp::shfl_xor_sync(mask, lin, 1);
  int* o = out + (blockIdx.x * TP_NT + lin) * 5;
  o[0] = tp::lane_id(); o[1] = tp::warp_id(); o[2] = other; o[3] = nb;
  o[4] = threadIdx.x * 10000 + threadIdx.y * 100 + blockDim.y;
}
"""


@pytest.mark.parametrize("block", [(32, 3), (48,), (16, 3)])
def test_multi_dimensional_and_partial_warp_blocks(block):
    nt = int(np.prod(block))
    k = build(BLOCK2D_SRC, "ids", threads=nt)
    out = np.zeros((2, nt, 5), np.int32)
    k((2,), out, block=block)
    lin = np.arange(nt)
    for b in range(2):
        np.testing.assert_array_equal(out[b, :, 0], lin % 32)
        np.testing.assert_array_equal(out[b, :, 1], lin // 32)
        np.testing.assert_array_equal(out[b, :, 2], (nt - 1 - lin) * 10)
        np.testing.assert_array_equal(out[b, :, 3], lin ^ 1)
        by = block[1] if len(block) > 1 else 1
        np.testing.assert_array_equal(out[b, :, 4], (lin % block[0]) * 10000 + (lin // block[0]) * 100 + by)


def test_launch_with_the_wrong_block_size_is_an_error():
    k = build(BLOCK2D_SRC, "ids", threads=96)
    with pytest.raises(ct.TileLaunchError, match="built for 96 threads per block"):
        k((1,), np.zeros(96 * 5, np.int32), block=(64,))


DEADLOCK_SRC = r"""
#include "tilepy/runtime.h"
extern "C" __global__ void half_barrier(float* out) {
  if (threadIdx.x >= 64) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}
"""


RACE_SRC = r"""
#include "tilepy/runtime.h"
// Warp 0 produces, warp 1 consumes: without the barrier, warp 1 may read before warp 0 wrote.
extern "C" __global__ void producer_consumer(const float* x, float* y, int fixed) {
  __shared__ float buf[32];
  const int t = threadIdx.x;
  if (t < 32) buf[t] = x[blockIdx.x * 32 + t] * 2.0f;
  if (fixed) __syncthreads();
  if (t >= 32) y[blockIdx.x * 32 + t - 32] = buf[63 - t];
}
"""
# RACE_SRC and CP_SRC (both 64 threads) are one library: `which` 0 runs producer_consumer, 1
# groups (cp.async).
PROBE64 = r"""
extern "C" __global__ void probe64(int which, const float* x, float* y, int fixed) {
  if (which == 0) producer_consumer(x, y, fixed);
  else groups(x, y);
}
"""


def test_schedule_exposes_a_missing_barrier_in_either_direction():
    k = build(RACE_SRC + CP_SRC + PROBE64, "probe64", threads=64)    # producer_consumer
    x = rng.standard_normal(2 * 32).astype(np.float32)
    want = (x.reshape(2, 32)[:, ::-1] * 2).reshape(-1)
    y = np.zeros_like(x)
    k((2,), 0, x, y, 1)
    np.testing.assert_array_equal(y, want)
    y[:] = 0
    k((2,), 0, x, y, 0)       # block 1 runs warp 1 first: it reads before warp 0 wrote
    assert not np.array_equal(y, want)


def test_deadlock_report_says_what_each_thread_waits_at():
    k = build(DEADLOCK_SRC, "half_barrier", threads=128)
    with pytest.raises(ct.TileLaunchError) as e:
        k((3,), np.zeros(128, np.float32))
    msg = str(e.value)
    assert "kernel 'half_barrier', block (0, 0, 0): deadlock" in msg
    assert "threads 0-63 wait at __syncthreads(); threads 64-127 have exited" in msg
    out = np.zeros(128, np.float32)           # the library is usable after a failed launch
    with pytest.raises(ct.TileLaunchError):
        k((1,), out)


# ---------------------------------------------------------------------------- cp.async
CP_SRC = r"""
#include "tilepy/runtime.h"
// Three committed groups, then waits that leave 2, 1 and 0 groups in flight; then a zero-fill.
extern "C" __global__ void groups(const float* src, float* seen) {
  __shared__ __align__(16) float buf[3][TP_NT * 4];
  const int t = threadIdx.x;
  for (int g = 0; g < 3; ++g) {
    tp::cp_async<16>(&buf[g][t * 4], src + (g * TP_NT + t) * 4);
    tp::cp_async_commit();
  }
  auto record = [&](int stage) {
    for (int g = 0; g < 3; ++g)
      for (int e = 0; e < 4; ++e) seen[((stage * 3 + g) * TP_NT + t) * 4 + e] = buf[g][t * 4 + e];
  };
  tp::cp_async_wait<2>(); record(0);
  tp::cp_async_wait<1>(); record(1);
  tp::cp_async_wait<0>(); record(2);
  tp::cp_async_zfill<16>(&buf[0][t * 4], src + t * 4, 4 * (t % 5));
  tp::cp_async_zfill<8>(&buf[1][t * 4], src + t * 4, 0);
  tp::cp_async<4>(&buf[2][t * 4 + 3], src + t * 4 + 1);
  tp::cp_async_wait_all();
  record(3);
}
"""


def test_cp_async_data_is_visible_only_after_its_wait():
    nt = 64
    k = build(RACE_SRC + CP_SRC + PROBE64, "probe64", threads=nt)     # groups
    src = rng.standard_normal(3 * nt * 4).astype(np.float32)
    seen = np.zeros((4, 3, nt, 4), np.float32)
    k((1,), 1, src, seen, 0)
    data = src.reshape(3, nt, 4)
    poison = seen.view(np.uint32) == 0xFFFFFFFF
    for stage, landed in enumerate([1, 2, 3]):
        np.testing.assert_array_equal(seen[stage, :landed], data[:landed])
        assert poison[stage, landed:].all()
    for t in range(nt):
        n = t % 5
        np.testing.assert_array_equal(seen[3, 0, t, :n], data[0, t, :n])
        assert (seen[3, 0, t, n:] == 0).all()
    assert (seen[3, 1, :, :2] == 0).all()
    np.testing.assert_array_equal(seen[3, 2, :, 3], data[0, :, 1])


def test_warp_ops_in_fast_mode_fail_to_compile_with_a_reason():
    src = ('#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* o) '
           '{ o[0] = tp::shfl_xor_sync(0xffffffffu, o[0], 1); }\n')
    with pytest.raises(ct.TileCompileError) as e:
        build(src, "k", threads=32, mode="fast")
    assert "warp-level operations need the faithful CPU mode" in e.value.log
