"""mma.sync and ldmatrix in the faithful CPU mode, checked lane by lane against the fragment
layouts of the PTX ISA (tests/ptx_tables.py), and their numerics against numpy/ml_dtypes."""
import ml_dtypes
import numpy as np
import pytest

import ptx_tables as T
from faithful_util import build

rng = np.random.default_rng(7)

MMA_SRC = r"""
#include "tilepy/runtime.h"
// Each warp of the grid runs one mma: lane l of global warp w takes its fragment registers from
// A/B/C[(w * 32 + l) * regs + i] and stores D the same way.
extern "C" __global__ void frag(const uint32_t* A, const uint32_t* B, const uint32_t* C,
                                uint32_t* D, int variant) {
  const int g = (blockIdx.x * (TP_NT / 32) + tp::warp_id()) * 32 + tp::lane_id();
  uint32_t a[4] = {}, b[2] = {};
  for (int i = 0; i < 4; ++i) a[i] = A[g * 4 + i];
  for (int i = 0; i < 2; ++i) b[i] = B[g * 2 + i];
  float cf[4], df[4];
  int32_t ci[4], di[4];
  memcpy(cf, C + g * 4, 16);
  memcpy(ci, C + g * 4, 16);
  uint32_t (&a2)[2] = *(uint32_t(*)[2])a;
  uint32_t (&b1)[1] = *(uint32_t(*)[1])b;
  switch (variant) {
    case 0: tp::mma_m16n8k16_f16_f32(df, a, b, cf); break;
    case 1: tp::mma_m16n8k16_bf16_f32(df, a, b, cf); break;
    case 2: tp::mma_m16n8k8_f16_f32(df, a2, b1, cf); break;
    case 3: tp::mma_m16n8k8_bf16_f32(df, a2, b1, cf); break;
    case 4: tp::mma_m16n8k8_tf32_f32(df, a, b, cf); break;
    case 5: tp::mma_m16n8k32_e4m3_f32(df, a, b, cf); break;
    case 6: tp::mma_m16n8k32_e5m2_f32(df, a, b, cf); break;
    case 7: tp::mma_m16n8k32_i8_s32<true, true, false>(di, a, b, ci); break;
    case 8: tp::mma_m16n8k32_i8_s32<false, true, false>(di, a, b, ci); break;
    case 9: tp::mma_m16n8k32_i8_s32<true, false, true>(di, a, b, ci); break;
    case 10: tp::mma_m16n8k32_i8_s32<false, false, true>(di, a, b, ci); break;
  }
  if (variant >= 7) memcpy(D + g * 4, di, 16); else memcpy(D + g * 4, df, 16);
}
"""

# variant: (k, A element dtype, B element dtype, A table, B table, A regs, B regs)
F16, BF16 = np.float16, ml_dtypes.bfloat16
E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
VARIANTS = {
    "m16n8k16.f16": (0, 16, F16, F16, T.a_m16n8k16, T.b_m16n8k16, 4, 2),
    "m16n8k16.bf16": (1, 16, BF16, BF16, T.a_m16n8k16, T.b_m16n8k16, 4, 2),
    "m16n8k8.f16": (2, 8, F16, F16, T.a_m16n8k8, T.b_m16n8k8, 2, 1),
    "m16n8k8.bf16": (3, 8, BF16, BF16, T.a_m16n8k8, T.b_m16n8k8, 2, 1),
    "m16n8k8.tf32": (4, 8, np.float32, np.float32, T.a_m16n8k8_tf32, T.b_m16n8k8_tf32, 4, 2),
    "m16n8k32.e4m3": (5, 32, E4M3, E4M3, T.a_m16n8k32, T.b_m16n8k32, 4, 2),
    "m16n8k32.e5m2": (6, 32, E5M2, E5M2, T.a_m16n8k32, T.b_m16n8k32, 4, 2),
    "m16n8k32.s8.s8": (7, 32, np.int8, np.int8, T.a_m16n8k32, T.b_m16n8k32, 4, 2),
    "m16n8k32.u8.s8": (8, 32, np.uint8, np.int8, T.a_m16n8k32, T.b_m16n8k32, 4, 2),
    "m16n8k32.satfinite.s8.u8": (9, 32, np.int8, np.uint8, T.a_m16n8k32, T.b_m16n8k32, 4, 2),
    "m16n8k32.satfinite.u8.u8": (10, 32, np.uint8, np.uint8, T.a_m16n8k32, T.b_m16n8k32, 4, 2),
}
WARPS = 4      # 2 blocks of 64 threads


@pytest.fixture(scope="module")
def frag_kernel():
    return build(MMA_SRC, "frag", threads=64)


def bits_of(x):
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[x.dtype.itemsize]).astype(np.uint64)


def pack(matrix, table, nregs):
    """Fragment registers (WARPS*32, nregs) of `matrix` (WARPS, rows, cols) laid out by `table`."""
    bits = bits_of(matrix)
    width = matrix.dtype.itemsize * 8
    per = 32 // width
    regs = np.zeros((WARPS * 32, nregs), np.uint64)
    for w in range(WARPS):
        for lane in range(32):
            for i in range(nregs * per):
                r, c = table(lane, i)
                regs[w * 32 + lane, i // per] |= bits[w, r, c] << np.uint64(width * (i % per))
    return regs.astype(np.uint32)


def unpack_c(regs):
    """(WARPS, 16, 8) accumulator matrix from D registers (WARPS*32, 4) by the C/D table."""
    out = np.zeros((WARPS, 16, 8), regs.dtype)
    for w in range(WARPS):
        for lane in range(32):
            for i in range(4):
                r, c = T.c_m16n8(lane, i)
                out[w, r, c] = regs[w * 32 + lane, i]
    return out


def random_operand(dtype, shape):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, shape).astype(dtype)
    scale = 8.0 if dtype in (E4M3, E5M2) else 1.0
    return (rng.standard_normal(shape) * scale).astype(dtype)


def run_mma(kernel, name, A, B, C):
    variant, _, _, _, ta, tb, na, nb = VARIANTS[name]
    a_regs = np.zeros((WARPS * 32, 4), np.uint32)
    b_regs = np.zeros((WARPS * 32, 2), np.uint32)
    a_regs[:, :na] = pack(A, ta, na)
    b_regs[:, :nb] = pack(B, tb, nb)
    c_regs = np.zeros((WARPS * 32, 4), np.uint32)
    for w in range(WARPS):
        for lane in range(32):
            for i in range(4):
                c_regs[w * 32 + lane, i] = C[w][T.c_m16n8(lane, i)].view(np.uint32)
    d_regs = np.zeros((WARPS * 32, 4), np.uint32)
    kernel((2,), a_regs, b_regs, c_regs, d_regs, variant, block=(64,))
    return unpack_c(d_regs.view(C.dtype))


@pytest.mark.parametrize("name", [n for n in VARIANTS if VARIANTS[n][2] not in (np.int8, np.uint8)])
def test_float_mma_matches_ptx_layout(frag_kernel, name):
    _, k, ta, tb, *_ = VARIANTS[name]
    A = random_operand(ta, (WARPS, 16, k))
    B = random_operand(tb, (WARPS, k, 8))
    C = rng.standard_normal((WARPS, 16, 8)).astype(np.float32)
    D = run_mma(frag_kernel, name, A, B, C)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    if name.endswith("tf32"):    # the tensor cores use the upper 19 bits of a .tf32 operand
        A64 = (A.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
        B64 = (B.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
        full = A.astype(np.float64) @ B.astype(np.float64) + C
        assert np.abs(D - full).max() > 1e-5      # the low 13 bits really were dropped
    ref = A64 @ B64 + C
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in VARIANTS if VARIANTS[n][2] in (np.int8, np.uint8)])
def test_integer_mma_wraps_or_saturates(frag_kernel, name):
    _, k, ta, tb, *_ = VARIANTS[name]
    A = random_operand(ta, (WARPS, 16, k))
    B = random_operand(tb, (WARPS, k, 8))
    C = rng.integers(-1000, 1000, (WARPS, 16, 8)).astype(np.int32)
    C[0] += np.int32(2**31 - 1001)             # warp 0 overflows upwards,
    C[1] -= np.int32(2**31 - 1001)             # warp 1 downwards
    D = run_mma(frag_kernel, name, A, B, C)
    exact = A.astype(np.int64) @ B.astype(np.int64) + C
    if "satfinite" in name:
        ref = np.clip(exact, -2**31, 2**31 - 1)
    else:
        ref = ((exact + 2**31) % 2**32) - 2**31
    assert (exact[:2] != ref[:2]).any()        # the test reaches the overflow it checks
    np.testing.assert_array_equal(D, ref)


def test_mma_fragments_are_not_interchangeable(frag_kernel):
    """A B operand laid out row-wise (a typical bug) gives a different product."""
    A = random_operand(F16, (WARPS, 16, 16))
    B = random_operand(F16, (WARPS, 16, 8))
    C = np.zeros((WARPS, 16, 8), np.float32)
    wrong = run_mma(frag_kernel, "m16n8k16.f16", A, np.ascontiguousarray(
        B.reshape(WARPS, 8, 16).transpose(0, 2, 1)), C)
    assert not np.allclose(wrong, A.astype(np.float64) @ B.astype(np.float64), atol=1e-3)


LDM_SRC = r"""
#include "tilepy/runtime.h"
// Lane l points at row rowsel[2l + 1] of matrix rowsel[2l] in shared memory (rows padded to
// 16 halves) and loads its ldmatrix fragment registers into out[4l..4l+3].
extern "C" __global__ void ldm(const uint16_t* src, const int* rowsel, uint32_t* out, int variant) {
  __shared__ __align__(16) uint16_t sm[4][8][16];
  for (int i = threadIdx.x; i < 256; i += TP_NT) sm[i / 64][(i / 8) % 8][i % 8] = src[i];
  __syncthreads();
  const int l = tp::lane_id();
  const void* row = &sm[rowsel[2 * l]][rowsel[2 * l + 1]][0];
  uint32_t r[4] = {0, 0, 0, 0};
  uint32_t (&r1)[1] = *(uint32_t(*)[1])r;
  uint32_t (&r2)[2] = *(uint32_t(*)[2])r;
  switch (variant) {
    case 0: tp::ldmatrix<1>(r1, row); break;
    case 1: tp::ldmatrix<1, true>(r1, row); break;
    case 2: tp::ldmatrix<2>(r2, row); break;
    case 3: tp::ldmatrix<2, true>(r2, row); break;
    case 4: tp::ldmatrix<4>(r, row); break;
    case 5: tp::ldmatrix<4, true>(r, row); break;
  }
  for (int j = 0; j < 4; ++j) out[4 * l + j] = r[j];
}
"""


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_matches_ptx_layout(num, trans):
    k = build(LDM_SRC, "ldm", threads=32)
    data = rng.integers(0, 2**16, (4, 8, 8)).astype(np.uint16)
    mats, rows = rng.permutation(4), rng.permutation(8)
    rowsel = np.zeros((32, 2), np.int32)
    for lane in range(32):
        j, r = T.ldmatrix_row_provider(lane)
        rowsel[lane] = (mats[j], rows[r])
    out = np.zeros((32, 4), np.uint32)
    k((1,), data.reshape(-1), rowsel, out, {1: 0, 2: 2, 4: 4}[num] + trans, block=(32,))
    for lane in range(32):
        for j in range(4):
            want = 0
            if j < num:
                for h in range(2):
                    r, c = T.ldmatrix_fragment(lane, h, trans)
                    want |= int(data[mats[j], rows[r], c]) << (16 * h)
            assert out[lane, j] == want, (lane, j)


CONV_SRC = r"""
#include "tilepy/runtime.h"
extern "C" __global__ void conv(const float* x, uint32_t* tf, uint8_t* e4, uint8_t* e5, int n) {
  for (int i = threadIdx.x; i < n; i += TP_NT) {
    tf[i] = tp::tf32_bits(x[i]);
    e4[i] = tp::e4m3_from_f32(x[i]);
    e5[i] = tp::e5m2_from_f32(x[i]);
  }
}
extern "C" __global__ void decode(const uint8_t* codes, float* e4, float* e5) {
  for (int i = threadIdx.x; i < 256; i += TP_NT) {
    e4[i] = tp::e4m3_to_f32(codes[i]);
    e5[i] = tp::e5m2_to_f32(codes[i]);
  }
}
"""


def conversion_inputs():
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 465.0, 480.0, 1e30, -1e30,
               57344.0, 61439.0, 61440.0, 2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17,
               1.5 * 2.0**-17, 1e-40, 3.4e38]
    mags = 2.0 ** rng.uniform(-20, 17, 4000)
    x = np.concatenate([special, mags * rng.choice([-1, 1], mags.size)]).astype(np.float32)
    return np.concatenate([x, -x])


def test_tf32_and_fp8_conversions_round_as_ptx_cvt():
    x = conversion_inputs()
    k = build(CONV_SRC, "conv", threads=1, mode="fast")
    tf = np.zeros(x.size, np.uint32)
    e4, e5 = np.zeros(x.size, np.uint8), np.zeros(x.size, np.uint8)
    k((1,), x, tf, e4, e5, x.size, block=(1,))
    # cvt.rna.tf32.f32: nearest with 10 mantissa bits, ties away from zero (computed in f64).
    fin = np.isfinite(x) & (np.abs(x) >= 2.0**-126) & (np.abs(x) < 3.0e38)
    x64 = x[fin].astype(np.float64)
    q = 2.0 ** (np.floor(np.log2(np.abs(x64))) - 10)
    ref = np.sign(x64) * np.floor(np.abs(x64) / q + 0.5) * q
    np.testing.assert_array_equal(tf[fin].view(np.float32).astype(np.float64), ref)
    assert np.isnan(tf[np.isnan(x)].view(np.float32)).all()
    # fp8 with .satfinite: ml_dtypes' round-to-nearest-even inside the range, the largest finite
    # value (with the sign) beyond it and for infinities, NaN for NaN.
    for got, dt, limit in ((e4, E4M3, 464.0), (e5, E5M2, 61440.0)):
        mx = float(ml_dtypes.finfo(dt).max)
        inside = np.abs(x) < limit if dt is E5M2 else np.abs(x) <= limit
        np.testing.assert_array_equal(got[inside], x[inside].astype(dt).view(np.uint8))
        out = ~inside & ~np.isnan(x)
        np.testing.assert_array_equal(got[out].view(dt).astype(np.float32), np.sign(x[out]) * mx)
        assert np.isnan(got[np.isnan(x)].view(dt).astype(np.float32)).all()
    codes = np.arange(256, dtype=np.uint8)
    d4, d5 = np.zeros(256, np.float32), np.zeros(256, np.float32)
    build(CONV_SRC, "decode", threads=1, mode="fast")((1,), codes, d4, d5, block=(1,))
    np.testing.assert_array_equal(d4, codes.view(E4M3).astype(np.float32))
    np.testing.assert_array_equal(d5, codes.view(E5M2).astype(np.float32))
