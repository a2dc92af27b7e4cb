"""The sm_90a class's warpgroup MMA, TMA and mbarriers held against NVIDIA's documents, not
against each other.

The emitted C++ (include/tilepy/wgmma.h, wgmma_ops.h, tma.h) and the CPU emulation of it
(cpu_wgmma.h, cpu_tma.h) were written together; each test here states a documented fact in this
file's own words (Python models written from the documents, never from tilepy's code) and checks
one side against it: the layouts and descriptors tilepy emits, what the emulation makes of
descriptors and tensor maps built by hand, the host's tensor-map arguments. Sources: the PTX ISA
(sections "Asynchronous Warpgroup Level Matrix Shared Memory Layout" -- its matrix descriptor and
canonical layouts --, "Register Fragments and Shared Memory Matrix Layouts" for wgmma
.m64nNk16, wgmma.mma_async, cp.async.bulk.tensor, mbarrier), the CUDA driver API's
cuTensorMapEncodeTiled, and CUTLASS's cute GMMA descriptor (`make_gmma_desc`), which states the
same canonical layouts as CuTe layouts. The `gpu` test at the end runs the same kernel on an
H100/H200, where the hardware settles what the documents leave open.
"""
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

import tilepy as ct
from faithful_util import build
from gpu_machine import needs_real_gpu

# Every mode of one kernel, built once (one g++ compile of the faithful mode, ~5 CPU-s).
DOCS_KERNELS = r"""#define TP_WGMMA 1
#include "tilepy/runtime.h"

// Mode 0: the byte offset of every element (r, c) of a tp::WgOp (r < rows, c < cols) and the
// descriptors tilepy gives it: B's for every k16 step, A's for every 64-row block and k16 step.
template <class Op, bool B> __device__ void layout(unsigned char* smem, long long* out) {
  const Op x{(typename Op::elem_t*)smem};
  if (threadIdx.x != 0) return;
  int n = 0;
  for (int r = 0; r < Op::rows; ++r)
    for (int c = 0; c < Op::cols; ++c) out[n++] = (long long)((unsigned char*)&x.at(0, r, c) - smem);
  if constexpr (B) {
    for (int k0 = 0; k0 < Op::rows; k0 += 16) out[n++] = (long long)tp::wg_desc_b(x, k0);
  } else {
    for (int blk = 0; blk < Op::rows / 64; ++blk)
      for (int k0 = 0; k0 < Op::cols; k0 += 16) out[n++] = (long long)tp::wg_desc_a(x, blk, k0);
  }
}

// The accumulator of one warpgroup's m64nN MMAs, written out by the PTX ISA's fragment layout
// of wgmma .m64nNk16 D (f32): register i of lane l of warp w holds row 16 w + l / 4 + 8 ((i % 4) / 2),
// column 8 (i / 4) + 2 (l % 4) + i % 2.
template <int N> __device__ void put_d(const float* d, float* out) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  for (int i = 0; i < N / 2; ++i)
    out[(16 * w + l / 4 + 8 * (i % 4 / 2)) * N + 8 * (i / 4) + 2 * (l % 4) + i % 2] = d[i];
}

// Mode 1: two k16 steps of wgmma.mma_async m64n128k16 (kind 1 f16, 2 bf16) on a shared-memory
// image and descriptors the test made from the documents (desc: A0, B0, A1, B1); trans_b 1:
// B is N-major.
template <int Kind, int TransB> __device__ void raw_mma(const long long* desc, float* out) {
  float d[64] = {};
  tp::wgmma_fence();
  for (int s = 0; s < 2; ++s)
    tp::wgmma_async<128, Kind, TransB>(d, (uint64_t)desc[2 * s], (uint64_t)desc[2 * s + 1], 1);
  tp::wgmma_commit();
  tp::wgmma_wait<0>();
  put_d<128>(d, out);
}
__device__ void raw(unsigned char* smem, const unsigned char* img, int bytes, const long long* desc,
                    float* out, int kind, int trans_b) {
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) smem[i] = img[i];
  tp::fence_proxy_async();   // the threads' stores, seen by wgmma's async proxy
  __syncthreads();
  if (kind == 1 && trans_b) raw_mma<1, 1>(desc, out);
  else if (kind == 1) raw_mma<1, 0>(desc, out);
  else if (trans_b) raw_mma<2, 1>(desc, out);
  else raw_mma<2, 0>(desc, out);
}

// Mode 2: one cp.async.bulk.tensor.2d of map m's box at coordinates (crd[0], crd[1]) (innermost
// first) into shared memory at byte 0, expecting `bytes` on the mbarrier; the bytes come back.
__device__ void box(unsigned char* smem, const long long* crd, int bytes, unsigned char* out,
                    const tp::TensorMap& m) {
  uint64_t* bar = (uint64_t*)(smem + 32768);
  tp::mbar_init(bar, 1);
  __syncthreads();
  if (tp::tma_leader()) {
    tp::mbar_expect_tx(bar, bytes);
    tp::tma_copy<2>(m, smem, bar, {(int32_t)crd[0], (int32_t)crd[1]});
    tp::mbar_arrive(bar);
  }
  tp::mbar_wait(bar, 0);
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) out[i] = smem[i];
}

// Mode 3: A (64 x 32) and B (32 x 64) staged by the threads' stores (tp::stage, as a
// loop-invariant operand is), then multiplied by wgmma; seed 1 leaves out the fence.proxy.async.
__device__ void staged(unsigned char* smem, const __half* a, const __half* b, float* out, int seed) {
  const tp::WgOp<__half, 64, 32> A{(__half*)smem};
  const tp::WgOp<__half, 32, 64> B{(__half*)(smem + 4096)};
  tp::Tile<__half, 2048, tp::Blocked<2048, 8>> x, y;
  for (int s = 0; s < x.K; ++s)
    if (x.valid(s)) { x.v[s] = a[x.elem(s)]; y.v[s] = b[y.elem(s)]; }
  tp::stage(x, A);
  tp::stage(y, B);
  if (seed != 1) tp::fence_proxy_async();
  __syncthreads();
  float d[32] = {};
  tp::wgmma_fence();
  for (int k0 = 0; k0 < 32; k0 += 16)
    tp::wgmma_async<64, 1, 1>(d, tp::wg_desc_a(A, 0, k0), tp::wg_desc_b(B, k0), 1);
  tp::wgmma_commit();
  tp::wgmma_wait<0>();
  put_d<64>(d, out);
}

extern "C" __global__ void docs_kernels(const unsigned char* in, const long long* in64, float* out,
                                        long long* out64, int mode, int which, int arg,
                                        const __grid_constant__ tp::TensorMap m) {
  extern __shared__ __align__(1024) unsigned char smem[];
  if (mode == 0) {
    if (which == 0) layout<tp::WgOp<__half, 128, 128>, false>(smem, out64);        // A, 2 panels
    else if (which == 1) layout<tp::WgOp<__half, 64, 32>, false>(smem, out64);     // A, 64 B
    else if (which == 2) layout<tp::WgOp<__nv_bfloat16, 64, 16>, false>(smem, out64);   // A, 32 B
    else if (which == 3) layout<tp::WgOp<__half, 32, 256>, true>(smem, out64);     // B N-major, 4 panels
    else if (which == 4) layout<tp::WgOp<__half, 32, 32>, true>(smem, out64);      // B N-major, 64 B
    else if (which == 5) layout<tp::WgOp<__half, 32, 16>, true>(smem, out64);      // B N-major, 32 B
    else layout<tp::WgOp<__half, 128, 64, true>, true>(smem, out64);               // B K-major, 2 panels
  } else if (mode == 1) {
    raw(smem, in, which, in64, out, arg / 2, arg % 2);
  } else if (mode == 2) {
    box(smem, in64, which, (unsigned char*)out, m);
  } else if (mode == 3) {
    staged(smem, (const __half*)in, (const __half*)in64, out, arg);
  } else {
#if defined(TP_GPU)
    if (threadIdx.x == 0) out64[0] = (long long)tp::smem_addr(smem);   // the GPU's shared address
#endif
  }
}
"""
NO_MAP = bytes(128)
SMEM = 48 * 1024
LAYOUTS = [  # (dtype, rows, cols, role, transposed) of mode 0's `which`
    (np.float16, 128, 128, "A", False), (np.float16, 64, 32, "A", False),
    (ml_dtypes.bfloat16, 64, 16, "A", False), (np.float16, 32, 256, "B", False),
    (np.float16, 32, 32, "B", False), (np.float16, 32, 16, "B", False), (np.float16, 128, 64, "B", True)]


@pytest.fixture(scope="module")
def docs_kernels():
    return build(DOCS_KERNELS, "docs_kernels", threads=128)


# ----------------------------------------------------------------------------- the documents' models
# Matrix descriptor (PTX ISA, "Matrix Descriptor Format" for wgmma): bits 0-13 the start address,
# 16-29 the leading dimension byte offset, 32-45 the stride dimension byte offset, each in units
# of 16 bytes (the address >> 4); 49-51 the base offset (0 where the pattern starts aligned);
# 62-63 the swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte.
SWIZZLE_OF_MODE = {0: 0, 1: 128, 2: 64, 3: 32}


def decode(desc: int) -> dict:
    desc &= (1 << 64) - 1
    return {"start": (desc & 0x3fff) << 4, "lbo": (desc >> 16 & 0x3fff) << 4,
            "sbo": (desc >> 32 & 0x3fff) << 4, "base": desc >> 49 & 7,
            "swizzle": SWIZZLE_OF_MODE[desc >> 62]}


def encode(start: int, lbo: int, sbo: int, swizzle: int) -> int:
    mode = {v: k for k, v in SWIZZLE_OF_MODE.items()}[swizzle]
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | mode << 62


def swizzled(addr: int, swizzle: int) -> int:
    """The swizzle modes on a shared-memory byte address: the 16-byte chunk index within the
    swizzle width (bits 4..) XORed with the address's 128-byte line (bits 7..), as many bits as
    the width has chunks (128 B: 3, 64 B: 2, 32 B: 1); the pattern repeats every 8 lines (1024,
    512, 256 bytes). cute's Swizzle<3,4,3> / <2,4,3> / <1,4,3> on byte addresses, the same for
    TMA's CU_TENSOR_MAP_SWIZZLE_* and wgmma's descriptors."""
    if not swizzle:
        return addr
    return addr ^ ((addr >> 7) & (swizzle // 16 - 1)) << 4


def canonical(d: dict, mn: int, k: int, mn_major: bool, eb: int = 2) -> int:
    """The shared-memory byte address of element (mn, k) (mn: A's row or B's column; k < 16) of
    an operand by its decoded descriptor: the PTX ISA's canonical layouts for 16-bit types, in
    cute's words (T = 8 elements, one 16-byte unit; strides in elements but LBO/SBO):
      K-major, no swizzle:  ((8, m), (T, 2k)) : ((1T, SBO), (1, LBO))
      K-major, W swizzle:   ((8, m), (T, 2k)) : ((W/16 T, SBO), (1, T))   (LBO unused)
      MN-major, no swizzle: ((T, 1, m), (8, k)) : ((1, T, SBO), (1T, LBO))
      MN-major, W swizzle:  ((T, W/16, m), (8, k)) : ((1, T, LBO), (W/16 T, SBO))
    so for a swizzled MN-major operand LBO is the stride between W-byte panels along MN and SBO
    the stride between groups of 8 rows along K; unswizzled, the two trade places."""
    w, s, lbo, sbo = d["swizzle"], d["start"], d["lbo"], d["sbo"]
    if not mn_major and not w:
        a = s + (mn % 8) * 16 + (mn // 8) * sbo + (k % 8) * eb + (k // 8) * lbo
    elif not mn_major:
        a = s + (mn % 8) * w + (mn // 8) * sbo + k * eb
    elif not w:
        a = s + (mn % 8) * eb + (mn // 8) * sbo + (k % 8) * 16 + (k // 8) * lbo
    else:
        a = s + (mn % (w // eb)) * eb + (mn // (w // eb)) * lbo + (k % 8) * w + (k // 8) * sbo
    return swizzled(a, w)


# ----------------------------------------------------------------------------- what tilepy emits
def _check_layout(which: int, out) -> None:
    """Mode 0's dump of LAYOUTS[which] (element addresses, then descriptors) against the
    canonical layouts, read through the descriptors decoded by the documented fields."""
    dtype, rows, cols, role, tr = LAYOUTS[which]
    addr = out[:rows * cols].reshape(rows, cols)
    descs = [int(x) for x in out[rows * cols:] if x]
    eb = np.dtype(dtype).itemsize
    if role == "A":        # A is M x K, K-major (imm-trans-a 0): blocks of 64 rows, k16 steps
        steps = [(blk, k0) for blk in range(rows // 64) for k0 in range(0, cols, 16)]
    else:                  # B is K x N: N-major (imm-trans-b 1) unless stored N x K
        steps = [(0, k0) for k0 in range(0, rows, 16)]
    assert len(descs) == len(steps)
    for desc, (blk, k0) in zip(descs, steps):
        d = decode(desc)
        assert d["base"] == 0 and d["swizzle"] in (32, 64, 128)
        assert d["sbo"] == 8 * d["swizzle"]       # 8 rows of one swizzle width apart (dense)
        for mn in range(64 if role == "A" else cols):
            for k in range(16):
                want = addr[blk * 64 + mn, k0 + k] if role == "A" else addr[k0 + k, mn]
                got = canonical(d, mn, k, mn_major=role == "B" and not tr, eb=eb)
                assert got == want, (which, blk, k0, mn, k, d)


@pytest.mark.parametrize("which", range(len(LAYOUTS)))
def test_emitted_layouts_and_descriptors_are_the_canonical_ones(docs_kernels, which):
    """tp::WgOp's element addresses, read through the descriptors tilepy makes for it (decoded
    by the documented bit fields), are the canonical layout's: every element of every k16 step.
    Also the fields' documented constraints: base offset 0 (every buffer starts 1024-aligned,
    where all three patterns repeat), and the start address where the swizzle needs it."""
    _, rows, cols, _, _ = LAYOUTS[which]
    out = np.zeros(rows * cols + 64, np.int64)
    docs_kernels((1,), 0, 0, 0, out, 0, which, 0, NO_MAP, smem=SMEM)
    _check_layout(which, out)


def test_emitted_transpose_and_scale_immediates(docs_kernels):
    """wgmma.mma_async's operands as NVIDIA orders them: d, a-desc, b-desc, scale-d, imm-scale-a,
    imm-scale-b, imm-trans-a, imm-trans-b (A from registers: no imm-trans-a). Transposes exist for
    .f16/.bf16 only; 0 is the default K-major (A row-major M x K, B column-major K x N), 1 the
    MN-major one. tilepy's A is K-major (0); its B is K-major (0) stored N x K, else N-major (1)."""
    import re

    import tilepy
    with open(tilepy.__path__[0] + "/cuda_c/include/tilepy/wgmma.h") as f:
        src = f.read()
    for n in (16, 32, 64, 128, 256):
        desc_form = re.search(rf'#define TP_WG_ASM_{n} TP_WG_D_{n} '
                              rf'", %(\d+), %(\d+), p, 1, 1, 0, %(\d+);"', src)
        reg_form = re.search(rf'#define TP_WGR_ASM_{n} TP_WG_D_{n} ", \{{%(\d+), %(\d+), %(\d+), %(\d+)\}}, '
                             rf'%(\d+), p, 1, 1, %(\d+);"', src)
        assert desc_form and reg_form, n
        a, b, trans = map(int, desc_form.groups())
        # operands: N/2 accumulators, then a, b, the scale-d register, TransB
        assert (a, b, trans) == (n // 2, n // 2 + 1, n // 2 + 3)
        regs = list(map(int, reg_form.groups()))
        assert regs == [n // 2, n // 2 + 1, n // 2 + 2, n // 2 + 3, n // 2 + 4, n // 2 + 6]


# ----------------------------------------------------------------------------- what the emulation does
def _image(a, b, a_layout, b_layout, b_mn_major):
    """A shared-memory image holding A (64 x 32) and B (32 x 128) at the canonical addresses of
    the descriptors given, and those descriptors for the two k16 steps."""
    img = np.full(SMEM // 2, np.nan, a.dtype).view(np.uint8)   # (what no element lands on: NaN)
    da = [encode(*a_layout[0](s), *a_layout[1:]) for s in range(2)]
    db = [encode(*b_layout[0](s), *b_layout[1:]) for s in range(2)]
    used = set()

    def put(off, x):
        assert off not in used and off % 2 == 0    # (the test's strides keep elements apart)
        used.add(off)
        img[off:off + 2] = np.array([x]).view(np.uint8)

    for s in range(2):
        for k in range(16):
            for m in range(64):
                put(canonical(decode(da[s]), m, k, False), a[m, 16 * s + k])
            for n in range(128):
                put(canonical(decode(db[s]), n, k, b_mn_major), b[16 * s + k, n])
    return img, np.array([da[0], db[0], da[1], db[1]], np.uint64).view(np.int64)


# Each case: A's (start, lbo, sbo) per k16 step and swizzle, B's, B's major-ness. The strides
# are not the dense ones tp::WgOp uses (gaps between 8-row groups and panels), so the
# emulation is seen to follow the fields, not tilepy's layout.
RAW = {
    "A K-major 128B, B N-major 128B": (
        (lambda s: (32 * s, 16, 2048), 128), (lambda s: (16384 + 2 * 2048 * s, 5120, 2048), 128), True),
    "A K-major 64B, B N-major 64B": (
        (lambda s: (32 * s, 16, 1024), 64), (lambda s: (16384 + 2 * 1024 * s, 5120, 1024), 64), True),
    "A K-major 32B, B N-major 32B": (
        (lambda s: (4096 * s, 16, 512), 32), (lambda s: (16384 + 2 * 512 * s, 2048, 512), 32), True),
    "A K-major 128B, B K-major 64B": (
        (lambda s: (32 * s, 16, 1024), 128), (lambda s: (16384 + 32 * s, 16, 1024), 64), False),
    "no swizzle, K-major A and B": (
        (lambda s: (4096 * s, 256, 512), 0), (lambda s: (16384 + 8192 * s, 256, 512), 0), False),
    "no swizzle, N-major B": (
        (lambda s: (4096 * s, 256, 512), 0), (lambda s: (16384 + 8192 * s, 4096, 256), 0), True),
}


@pytest.mark.parametrize("case", RAW)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_emulated_wgmma_reads_the_canonical_layouts(docs_kernels, case, dtype):
    """The CPU's wgmma.mma_async, given shared memory laid out by the documented canonical
    layouts and descriptors encoded by the documented bit fields (this file's model), computes
    A @ B; the accumulator is read out by the documented register fragment layout."""
    rng = np.random.default_rng(29)
    a = rng.standard_normal((64, 32)).astype(dtype)
    b = rng.standard_normal((32, 128)).astype(dtype)
    img, desc = _image(a, b, *RAW[case])
    c = np.zeros((64, 128), np.float32)
    kind = 1 if dtype == np.float16 else 2
    docs_kernels((1,), img, desc, c, 0, 1, img.size, 2 * kind + RAW[case][2], NO_MAP, smem=SMEM)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-6, atol=1e-5)


BOX_AT = [(0, 0), (-3, -5), (92, 35), (100, 40)]   # in; above, left; right, below; all outside


def _box_want(g, crd, swizzle: int):
    """The documented box of 24 rows by one swizzle width of f16 `g` at coordinates `crd`
    (innermost first) as shared-memory bytes."""
    cols = swizzle // 2
    want = np.zeros(24 * cols * 2, np.uint8)
    for i1 in range(24):
        for i0 in range(cols):
            y, x = crd[1] + i1, crd[0] + i0
            v = g[y, x] if 0 <= y < g.shape[0] and 0 <= x < g.shape[1] else np.float16(0)
            off = swizzled((i1 * cols + i0) * 2, swizzle)
            want[off:off + 2] = np.array([v], np.float16).view(np.uint8)
    return want


def _box_run(kernel, g, crd, box, swizzle):
    from tilepy.launch.tensor_map import cpu_tensor_map, encode_args
    m = cpu_tensor_map(encode_args(("g", "f16", box, swizzle), g.ctypes.data, g.shape,
                                   (g.strides[0] // 2, 1), 2))
    nbytes = box[0] * box[1] * 2
    out = np.zeros(nbytes // 4, np.float32)
    kernel((1,), 0, np.array(crd, np.int64), out, 0, 2, nbytes, 0, m, smem=SMEM)
    return out.view(np.uint8)


@pytest.mark.parametrize("swizzle", [128, 64, 32])
def test_emulated_tma_box_is_the_documented_one(docs_kernels, swizzle):
    """cp.async.bulk.tensor's box in shared memory: coordinates innermost first, in elements,
    signed; the box row-major (dimension 0 fastest), each element at its linear byte offset
    swizzled by the map's mode on the shared-memory address (the inner box dimension is the
    swizzle width, at most that); elements outside the tensor -- a negative coordinate, or past
    the extent -- are zeros (OOB fill NONE), and the transaction count the mbarrier completes on
    is the whole box's bytes, zeros included (the wait would never end otherwise)."""
    g = np.random.default_rng(7).standard_normal((40, 200)).astype(np.float16)[:, :100]
    for crd in BOX_AT:                  # (g's row stride is 200: not dense)
        got = _box_run(docs_kernels, g, crd, (24, swizzle // 2), swizzle)
        np.testing.assert_array_equal(got, _box_want(g, crd, swizzle), err_msg=str(crd))


def _staged_run(kernel, seed):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((64, 32)).astype(np.float16), rng.standard_normal((32, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel((1,), a, b.view(np.int64), c, 0, 3, 0, seed, NO_MAP, smem=SMEM)
    return c, a.astype(np.float64) @ b.astype(np.float64)


def test_threads_stores_read_by_wgmma_need_the_proxy_fence(docs_kernels):
    """The PTX ISA (wgmma.mma_async, "async proxy"): wgmma reads its shared-memory operands
    through the async proxy, so the generic proxy's writes to them (a thread's st.shared, as
    tp::stage makes when a loop-invariant A is staged) must be followed by fence.proxy.async
    before the MMA; the faithful mode reports a read of bytes a thread stored without one."""
    c, ref = _staged_run(docs_kernels, 0)
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-5)
    with pytest.raises(ct.TileLaunchError, match=r"wrote \(a cp\.async that landed, or a store\), "
                       r"and that thread has not executed fence\.proxy\.async since"):
        _staged_run(docs_kernels, 1)


# ----------------------------------------------------------------------------- the host's tensor maps
def test_tensor_map_arguments_are_the_drivers():
    """cuTensorMapEncodeTiled(map, dataType, rank, globalAddress, globalDim, globalStrides,
    boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill): dimensions innermost
    first; globalStrides rank - 1 byte strides of dimensions 1.. (dimension 0 is contiguous);
    the enums' values (CUtensorMapDataType FLOAT16 6, BFLOAT16 9, FLOAT32 7; CUtensorMapSwizzle
    NONE 0, 32B 1, 64B 2, 128B 3; L2 promotion 128B 2; OOB fill NONE 0, zeros)."""
    from tilepy.launch.tensor_map import EncodeArgs, encode_args
    a = encode_args(("x", "bf16", (1, 64, 64), 128), 0x10000, (3, 500, 300), (160000, 320, 1), 2)
    assert a == EncodeArgs(9, 0x10000, (300, 500, 3), (640, 320000), (64, 64, 1), 3, (1, 1, 1), 0, 2, 0)
    assert encode_args(("x", "f16", (64, 32), 64), 0, (8, 8), (8, 1), 2).swizzle == 2
    assert encode_args(("x", "f32", (64, 8), 32), 0, (8, 8), (8, 1), 4).dtype == 7


def test_cuda_core_takes_the_tensor_maps_array():
    """The GPU path encodes maps through cuda.core (StridedMemoryView.as_tensor_map, row-major
    box and element strides; the view from the array's __cuda_array_interface__): the view's
    shape, byte strides and type are the map's in row-major order, and its stream argument is
    one cuda.core takes for CUDA memory -- it refuses None with a BufferError, which every first
    TMA launch on a GPU raised (-1: no stream order; without a driver here cuda.core gets as far
    as asking the driver about the pointer)."""
    from cuda.core.utils import StridedMemoryView

    from tilepy.host.driver import TMA_VIEW_STREAM, tma_array
    from tilepy.launch.tensor_map import encode_args
    a = encode_args(("x", "bf16", (1, 64, 64), 128), 0x10000, (3, 500, 300), (160000, 320, 1), 2)
    cai = tma_array(a).__cuda_array_interface__
    assert cai["shape"] == (3, 500, 300) and cai["strides"] == (320000, 640, 2)
    assert cai["typestr"] == "<u2" and cai["data"] == (0x10000, False)
    with pytest.raises(BufferError, match="stream=None is ambiguous"):
        StridedMemoryView.from_cuda_array_interface(tma_array(a), None)
    try:
        StridedMemoryView.from_cuda_array_interface(tma_array(a), TMA_VIEW_STREAM)
    except BufferError as e:        # pragma: no cover -- the refusal this pins
        pytest.fail(f"cuda.core refuses the tensor map's view: {e}")
    except Exception:               # no driver (or no such pointer): past the stream's check
        pass


def test_an_empty_arrays_map_points_at_device_memory():
    """A map over an array with no elements (the kernel's copies then lie outside it) still
    needs a pointer the driver knows: cuda.core asks the driver about the view's pointer before
    encoding, and an empty CUDA array's is often 0 (refused; the fake driver refuses it too).
    tilepy points such maps at 16 bytes of the device it allocates once per plan."""
    from types import SimpleNamespace

    from fake_driver import FakeCUDAError, FakeDriver
    from tilepy.launch.tensor_map import TmaArgs
    info = SimpleNamespace(shape=(128, 0), strides=(0, 1), dtype=SimpleNamespace(
        elem=SimpleNamespace(storage_bytes=2)))
    maps = TmaArgs([("a", "f16", (128, 64), 128)], ["a"], [info])
    with FakeDriver() as drv:
        maps.maps([0], drv)
        maps.maps([0x100], drv)          # (another empty array: the same 16 bytes)
        first, second = (m.args for m in drv.tensor_maps)
        assert first.base == second.base == maps.scratch and maps.scratch % 16 == 0
        assert first.dims == (1, 1) and first.strides == (16,)
        with pytest.raises(FakeCUDAError, match="pointer 0"):
            drv.tensor_map(replace(first, base=0))


# ----------------------------------------------------------------------------- on a GPU
@pytest.mark.gpu
@needs_real_gpu()
def test_documented_facts_on_the_gpu():  # pragma: no cover -- runs where a GPU is lent
    """The kernel above on an sm_90 GPU (NVRTC sm_90a, cuda.core), checked against the same
    models: what the CPU checks against the documents, the hardware settles. Also what no CPU
    can show: the dynamic shared memory's shared-window address is 1024-aligned (the swizzle
    patterns are functions of the address, tilepy's 1 KiB-aligned buffers assume it), and a map
    encoded through tilepy's driver seam (cuda.core) is accepted and read as documented."""
    from cuda.core import Device, LaunchConfig, ObjectCode, launch

    from tilepy.host.driver import CoreDriver
    from tilepy.launch.nvrtc import compile_cubin
    from tilepy.launch.tensor_map import encode_args
    dev = Device()
    if dev.compute_capability != (9, 0):
        pytest.skip("needs an sm_90 GPU (wgmma, TMA)")
    dev.set_current()
    drv, stream = CoreDriver(), dev.create_stream()
    kern = ObjectCode.from_cubin(compile_cubin(DOCS_KERNELS, "sm_90a", "docs_kernels").data) \
        .get_kernel("docs_kernels")
    zero_map = None

    def run(host_in, host_in64, out, out64, mode, which, arg, tmap=None):
        bufs = []
        for h in (host_in, host_in64, out, out64):
            if h is None:
                bufs.append(0)
                continue
            p = drv.alloc(max(h.nbytes, 16))
            drv.to_device(p, h)
            bufs.append(p)
        args = [*bufs, np.int32(mode), np.int32(which), np.int32(arg), tmap or zero_map]
        launch(stream, LaunchConfig(grid=1, block=128, shmem_size=SMEM), kern, *args)
        stream.sync()
        for h, p in zip((out, out64), bufs[2:]):
            if h is not None:
                drv.to_host(h, p)
        for p in bufs:
            if p:
                drv.free(p)

    g = np.zeros((8, 64), np.float16)
    gp = drv.alloc(g.nbytes)
    zero_map = drv.tensor_map(encode_args(("g", "f16", (8, 64), 128), gp, g.shape, (64, 1), 2))
    base = np.zeros(1, np.int64)
    run(None, None, None, base, 4, 0, 0)
    assert base[0] % 1024 == 0, f"dynamic shared memory at shared address {base[0]}"
    for which, (_, rows, cols, _, _) in enumerate(LAYOUTS):           # the emitted side
        out = np.zeros(rows * cols + 64, np.int64)
        run(None, None, None, out, 0, which, 0)
        _check_layout(which, out)
    for case, (al, bl, mn_major) in RAW.items():                      # wgmma itself
        rng = np.random.default_rng(29)
        a = rng.standard_normal((64, 32)).astype(np.float16)
        b = rng.standard_normal((32, 128)).astype(np.float16)
        img, desc = _image(a, b, al, bl, mn_major)
        c = np.zeros((64, 128), np.float32)
        run(img, desc, c, None, 1, img.size, 2 + mn_major)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                                   atol=1e-2, err_msg=case)
    host = np.random.default_rng(7).standard_normal((40, 200)).astype(np.float16)
    gp2 = drv.alloc(host.nbytes)
    drv.to_device(gp2, host)
    for swizzle in (128, 64, 32):                                     # TMA through cuda.core
        box = (24, swizzle // 2)
        m = drv.tensor_map(encode_args(("g", "f16", box, swizzle), gp2, (40, 100), (200, 1), 2))
        for crd in BOX_AT:
            out = np.zeros(box[0] * box[1] // 2, np.float32)
            run(None, np.array(crd, np.int64), out, None, 2, box[0] * box[1] * 2, 0, m)
            np.testing.assert_array_equal(out.view(np.uint8), _box_want(host[:, :100], crd, swizzle),
                                          err_msg=f"{swizzle} {crd}")
    drv.free(gp2)
    drv.free(gp)


@pytest.mark.gpu
@needs_real_gpu()
@pytest.mark.parametrize("dtype,shape,tiles", [
    ("float16", (256, 256, 128), (128, 128, 64)),     # 128-byte swizzles, whole tiles
    ("bfloat16", (200, 136, 240), (128, 64, 32)),     # ragged: TMA's zero fill, clipped stores
    ("float16", (256, 256, 128), (256, 128, 32)),     # two warpgroups, 64-byte swizzle of A
    ("bfloat16", (128, 128, 0), (128, 128, 64)),      # K = 0: empty operands (pointer 0)
])
def test_sm90a_gemm_on_the_gpu(dtype, shape, tiles, monkeypatch):  # pragma: no cover -- GPU
    """The tutorial GEMM in the sm_90a class (TILEPY_SM90A=1) on an sm_90 GPU against float64:
    wgmma, TMA loads through maps encoded by cuda.core, the staged epilogue's TMA stores."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs torch with an sm_90 GPU")
    from definitions import load
    monkeypatch.setenv("TILEPY_SM90A", "1")
    M, N, K = shape
    g = torch.Generator().manual_seed(29)
    a = torch.randn(M, K, generator=g).to(getattr(torch, dtype))
    b = torch.randn(K, N, generator=g).to(getattr(torch, dtype))
    c = torch.full((M, N), float("nan"), device="cuda")
    ct.launch(None, (ct.cdiv(M, tiles[0]), ct.cdiv(N, tiles[1])), load("03_matmul").matmul,
              (a.cuda(), b.cuda(), c) + tiles)
    torch.cuda.synchronize()
    ref = a.double().numpy() @ b.double().numpy()
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-3, atol=1e-2)


@pytest.mark.gpu
@needs_real_gpu()
@pytest.mark.parametrize("d,bm,bn,seq_major", [(64, 128, 64, False), (128, 64, 64, False),
                                               (64, 128, 64, True)])
def test_sm90a_attention_on_the_gpu(d, bm, bn, seq_major, monkeypatch):  # pragma: no cover -- GPU
    """The tutorial's attention in the sm_90a class on an sm_90 GPU (register-A wgmma for P V,
    the hoisted Q staged by the threads and fenced for the async proxy), 200 keys: ragged.
    seq_major: Q, K, V are (S, BH, D) arrays seen as (BH, S, D), so their maps' globalStrides do
    not grow with the dimension (D * 2 bytes for BH, BH * D * 2 for S): the driver API's text
    shows each stride including the previous one ("globalStrides[i] = globalStrides[i - 1] *
    (globalDim[i] + padding[i])") without saying whether it refuses others; tilepy's views
    take such maps (the fake driver accepts them), and this case settles it."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs torch with an sm_90 GPU")
    from definitions import load
    attention = load("05_attention")
    monkeypatch.setenv("TILEPY_SM90A", "1")
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 200, d)).astype(np.float16) for _ in range(3))
    out = torch.zeros((2, 200, d), dtype=torch.float16, device="cuda")
    scale = d ** -0.5
    dev = [torch.from_numpy(np.ascontiguousarray(x.transpose(1, 0, 2)) if seq_major else x).cuda()
           for x in (q, k, v)]
    if seq_major:
        dev = [x.transpose(0, 1) for x in dev]
    ct.launch(None, (ct.cdiv(200, bm), 2), attention.attention, (*dev, out, scale, bm, bn, d))
    torch.cuda.synchronize()
    ref, _ = attention.reference(q, k, v, scale)
    np.testing.assert_allclose(out.cpu().numpy().astype(np.float64), ref, atol=2e-3, rtol=1e-2)
