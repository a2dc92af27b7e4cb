// tilepy/warp.h -- warp-level building blocks behind small tp:: wrappers.
//
// Every wrapper has two bodies: inline PTX for the GPU (NVRTC: __CUDACC_RTC__), and the CPU
// emulation of tilepy/cpu_warp.h, which follows the PTX ISA's fragment layouts lane by lane.
// Register fragments are `uint32_t` arrays exactly as the PTX instructions take them (two 16-bit
// or four 8-bit elements per register, the lower-numbered element in the low bits).
//
//   lane_id(), warp_id()                      lane and warp of the calling thread
//   shfl_sync / shfl_up_sync / shfl_down_sync / shfl_xor_sync (mask, value, lane|delta, width)
//   syncwarp(mask), ballot_sync, any_sync, all_sync
//   ldmatrix<Num, Trans>(r, smem_row)         ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.b16
//   mma_m16n8k16_{f16,bf16}_f32, mma_m16n8k8_{f16,bf16,tf32}_f32,
//   mma_m16n8k32_i8_s32<ASigned, BSigned, Satfinite>, mma_m16n8k32_{e4m3,e5m2}_f32
//   cp_async<Bytes>(smem, gmem), cp_async_zfill<Bytes>(smem, gmem, src_bytes),
//   cp_async_commit(), cp_async_wait<N>(), cp_async_wait_all()
//   tf32_bits / to_tf32 (cvt.rna.tf32.f32), e4m3_from_f32 / e5m2_from_f32 (cvt.rn.satfinite),
//   e4m3_to_f32 / e5m2_to_f32, pack_half2 / pack_bf162
//
// TP_WARP_OPS is 1 where warp-level code can run (GPU, faithful CPU mode) and 0 in the fast CPU
// mode, where a kernel takes its SIMT path instead (calling a wrapper there is a compile error).
// On a GPU older than an instruction needs, calling its wrapper fails to link (tp_error_*).
#pragma once
#include "tilepy/runtime.h"

#if defined(TP_GPU) || defined(TP_FAITHFUL)
#define TP_WARP_OPS 1
#else
#define TP_WARP_OPS 0
#endif

#if defined(TP_GPU)
#define TP_ARCH __CUDA_ARCH__
extern "C" __device__ void tp_error_instruction_needs_sm75(void);
extern "C" __device__ void tp_error_instruction_needs_sm80(void);
extern "C" __device__ void tp_error_instruction_needs_sm89(void);
#endif

namespace tp {

// ------------------------------------------------------------------------------ numerics
TP_DEV uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
TP_DEV float f32_from_bits(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
TP_DEV float pow2(int e) { return f32_from_bits((uint32_t)(e + 127) << 23); }   // -126 <= e <= 127

// cvt.rna.tf32.f32: round to nearest, ties away from zero, to 10 mantissa bits (low 13 bits 0).
TP_DEV uint32_t tf32_bits(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return u | 0x00400000u;   // NaN stays a (quiet) NaN
  return (u + 0x1000u) & 0xffffe000u;
}
TP_DEV float to_tf32(float x) { return f32_from_bits(tf32_bits(x)); }

// f32 -> 8-bit float, round to nearest even, .satfinite: beyond the largest finite value
// (infinities included) the result is that value with the input's sign; NaN gives NaN (0x7f).
template <int M, int EMIN, int BIAS>
TP_DEV uint8_t f8_from_f32(float x, float maxv) {
  const uint32_t u = f32_bits(x);
  const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint8_t)(sign | 0x7f);
  float a = f32_from_bits(u & 0x7fffffffu);
  if (a > maxv) a = maxv;
  int e = (int)((f32_bits(a) >> 23) & 0xff) - 127;
  if (e < EMIN) e = EMIN;
  float r = rintf(a / pow2(e - M)) * pow2(e - M);   // exact scaling, one rounding (to even)
  if (r > maxv) r = maxv;
  const int er = (int)((f32_bits(r) >> 23) & 0xff) - 127;
  if (r == 0.0f) return sign;
  if (er < EMIN) return (uint8_t)(sign | (uint8_t)(r / pow2(EMIN - M)));   // subnormal
  const uint32_t mant = (f32_bits(r) >> (23 - M)) & ((1u << M) - 1u);
  return (uint8_t)(sign | (uint8_t)((er + BIAS) << M) | (uint8_t)mant);
}
template <int M, int EMIN, int BIAS, bool HasInf>
TP_DEV float f8_to_f32(uint8_t v) {
  const int e = (v & 0x7f) >> M, m = v & ((1 << M) - 1), emax = (0x7f >> M);
  const float s = (v & 0x80) ? -1.0f : 1.0f;
  if (e == emax && (HasInf || m == (1 << M) - 1)) {
    if (HasInf && m == 0) return s * f32_from_bits(0x7f800000u);
    return f32_from_bits(0x7fc00000u);
  }
  if (e == 0) return s * (float)m * pow2(EMIN - M);
  return s * (1.0f + (float)m / (float)(1 << M)) * pow2(e - BIAS);
}
TP_DEV uint8_t e4m3_from_f32(float x) { return f8_from_f32<3, -6, 7>(x, 448.0f); }
TP_DEV uint8_t e5m2_from_f32(float x) { return f8_from_f32<2, -14, 15>(x, 57344.0f); }
TP_DEV float e4m3_to_f32(uint8_t v) { return f8_to_f32<3, -6, 7, false>(v); }
TP_DEV float e5m2_to_f32(uint8_t v) { return f8_to_f32<2, -14, 15, true>(v); }

template <class H> TP_DEV uint32_t pack2(H lo, H hi) {
  uint16_t a, b;
  memcpy(&a, &lo, 2);
  memcpy(&b, &hi, 2);
  return (uint32_t)a | (uint32_t)b << 16;
}
#if TP_FP16
TP_DEV uint32_t pack_half2(__half lo, __half hi) { return pack2(lo, hi); }
#endif
#if TP_BF16
TP_DEV uint32_t pack_bf162(__nv_bfloat16 lo, __nv_bfloat16 hi) { return pack2(lo, hi); }
#endif

}  // namespace tp

#if !defined(TP_GPU)
#include "tilepy/cpu_warp.h"
#endif

namespace tp {

// ------------------------------------------------------------------------------ lanes
#if defined(TP_GPU)
TP_DEV int lane_id() { unsigned l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return (int)l; }
TP_DEV int warp_id() {
  return (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32);
}
#else
TP_DEV int lane_id() { return cpu::cur->lane; }
TP_DEV int warp_id() { return cpu::cur->warp; }
#endif

// ------------------------------------------------------------------------------ shuffles
// Any trivially copyable value of at most 8 bytes; width is a power of two in [1, 32].
// The c operand of shfl.sync: segment mask (32 - width) << 8, clamp 31 (0 for shfl.up).
template <int Mode, class T> TP_DEV T shfl_any(unsigned mask, T v, int b, int width) {
  static_assert(sizeof(T) <= 8, "shuffles move values of at most 8 bytes");
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
#if defined(TP_GPU)
  const unsigned lo = (unsigned)bits, hi = (unsigned)(bits >> 32);
  unsigned rlo, rhi = 0;
  if constexpr (Mode == 0) rlo = __shfl_sync(mask, lo, b, width);
  else if constexpr (Mode == 1) rlo = __shfl_up_sync(mask, lo, (unsigned)b, width);
  else if constexpr (Mode == 2) rlo = __shfl_down_sync(mask, lo, (unsigned)b, width);
  else rlo = __shfl_xor_sync(mask, lo, b, width);
  if constexpr (sizeof(T) > 4) {
    if constexpr (Mode == 0) rhi = __shfl_sync(mask, hi, b, width);
    else if constexpr (Mode == 1) rhi = __shfl_up_sync(mask, hi, (unsigned)b, width);
    else if constexpr (Mode == 2) rhi = __shfl_down_sync(mask, hi, (unsigned)b, width);
    else rhi = __shfl_xor_sync(mask, hi, b, width);
  }
  bits = (uint64_t)rlo | (uint64_t)rhi << 32;
#else
#if defined(TP_FAITHFUL)
  if (width < 1 || width > 32 || (width & (width - 1)))
    cpu::bad_shuffle_width(width);
#endif
  const int c = (32 - width) << 8 | (Mode == 1 ? 0 : 31);
  bits = cpu::shfl(Mode, mask, bits, b, c);
#endif
  T r;
  memcpy(&r, &bits, sizeof(T));
  return r;
}
template <class T> TP_DEV T shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return shfl_any<0>(mask, v, src_lane, width);
}
template <class T> TP_DEV T shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return shfl_any<1>(mask, v, (int)delta, width);
}
template <class T> TP_DEV T shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return shfl_any<2>(mask, v, (int)delta, width);
}
template <class T> TP_DEV T shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return shfl_any<3>(mask, v, lane_mask, width);
}

#if defined(TP_GPU)
TP_DEV void syncwarp(unsigned mask = 0xffffffffu) { __syncwarp(mask); }
TP_DEV unsigned ballot_sync(unsigned mask, bool pred) { return __ballot_sync(mask, pred); }
TP_DEV bool any_sync(unsigned mask, bool pred) { return __any_sync(mask, pred) != 0; }
TP_DEV bool all_sync(unsigned mask, bool pred) { return __all_sync(mask, pred) != 0; }
#else
TP_DEV void syncwarp(unsigned mask = 0xffffffffu) { cpu::syncwarp(mask); }
TP_DEV unsigned ballot_sync(unsigned mask, bool pred) { return cpu::ballot(mask, pred, nullptr); }
TP_DEV bool any_sync(unsigned mask, bool pred) { return cpu::ballot(mask, pred, nullptr) != 0; }
TP_DEV bool all_sync(unsigned mask, bool pred) {
  uint32_t lanes = 0;
  const uint32_t votes = cpu::ballot(mask, pred, &lanes);
  return votes == lanes;
}
#endif

// ------------------------------------------------------------------------------ ldmatrix
#if defined(TP_GPU)
TP_DEV uint32_t smem_addr(const void* p) {   // the intrinsic (not asm): folds with the offset math
  return (uint32_t)__cvta_generic_to_shared(p);
}
struct SharedAddr { uint32_t a; };   // an address in the shared window (SmemOp::saddr)
TP_DEV uint32_t smem_addr(SharedAddr s) { return s.a; }
#endif

template <int Num, bool Trans = false, class P> TP_DEV void ldmatrix(uint32_t (&r)[Num], P smem_row) {
  static_assert(Num == 1 || Num == 2 || Num == 4, "ldmatrix loads 1, 2 or 4 matrices");
#if defined(TP_GPU)
#if TP_ARCH >= 750
  const uint32_t a = smem_addr(smem_row);
  if constexpr (Num == 1 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(a));
  else if constexpr (Num == 1)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(a));
  else if constexpr (Num == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  else if constexpr (Num == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  else if constexpr (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
#else
  tp_error_instruction_needs_sm75();
#endif
#else
  cpu::ldmatrix(r, Num, Trans, smem_row);
#endif
}

// ------------------------------------------------------------------------------ mma.sync
// D = A * B + C for one warp: A row-major (16 x K), B column-major (K x 8), C and D 16 x 8.
#if !defined(TP_GPU)
template <class Spec, class D, class A, class B, class C>
TP_DEV void cpu_mma(D (&d)[4], const A& a, const B& b, const C (&c)[4]) {
  uint32_t dd[4], cc[4];
  memcpy(cc, c, 16);
  cpu::mma<Spec>(dd, a, b, cc);
  memcpy(d, dd, 16);
}
#define TP_MMA(ARCH, PTX, SPEC, ...) cpu_mma<SPEC>(d, a, b, c)
#elif defined(TP_GPU)
#define TP_MMA(ARCH, PTX, SPEC, ...) TP_MMA_##ARCH(PTX, __VA_ARGS__)
#if TP_ARCH >= 750
#define TP_MMA_75(PTX, ...) asm volatile(PTX : __VA_ARGS__)
#else
#define TP_MMA_75(PTX, ...) tp_error_instruction_needs_sm75()
#endif
#if TP_ARCH >= 800
#define TP_MMA_80(PTX, ...) asm volatile(PTX : __VA_ARGS__)
#else
#define TP_MMA_80(PTX, ...) tp_error_instruction_needs_sm80()
#endif
#if TP_ARCH >= 890
#define TP_MMA_89(PTX, ...) asm volatile(PTX : __VA_ARGS__)
#else
#define TP_MMA_89(PTX, ...) tp_error_instruction_needs_sm89()
#endif
#endif
#define TP_COMMA ,
#define TP_OPS_F(A, B) "=f"(d[0]) TP_COMMA "=f"(d[1]) TP_COMMA "=f"(d[2]) TP_COMMA "=f"(d[3]) : A TP_COMMA B \
  TP_COMMA "f"(c[0]) TP_COMMA "f"(c[1]) TP_COMMA "f"(c[2]) TP_COMMA "f"(c[3])
#define TP_OPS_I(A, B) "=r"(d[0]) TP_COMMA "=r"(d[1]) TP_COMMA "=r"(d[2]) TP_COMMA "=r"(d[3]) : A TP_COMMA B \
  TP_COMMA "r"(c[0]) TP_COMMA "r"(c[1]) TP_COMMA "r"(c[2]) TP_COMMA "r"(c[3])
#define TP_A4 "r"(a[0]) TP_COMMA "r"(a[1]) TP_COMMA "r"(a[2]) TP_COMMA "r"(a[3])
#define TP_A2 "r"(a[0]) TP_COMMA "r"(a[1])
#define TP_B2 "r"(b[0]) TP_COMMA "r"(b[1])
#define TP_B1 "r"(b[0])
#define TP_SIG_442 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
#define TP_SIG_421 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"

TP_DEV void mma_m16n8k16_f16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                 const float (&c)[4]) {
  TP_MMA(80, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " TP_SIG_442,
         cpu::Mma<cpu::M16N8K16 TP_COMMA cpu::F16 TP_COMMA cpu::F16 TP_COMMA false>,
         TP_OPS_F(TP_A4, TP_B2));
}
TP_DEV void mma_m16n8k16_bf16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                  const float (&c)[4]) {
  TP_MMA(80, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 " TP_SIG_442,
         cpu::Mma<cpu::M16N8K16 TP_COMMA cpu::BF16 TP_COMMA cpu::BF16 TP_COMMA false>,
         TP_OPS_F(TP_A4, TP_B2));
}
TP_DEV void mma_m16n8k8_f16_f32(float (&d)[4], const uint32_t (&a)[2], const uint32_t (&b)[1],
                                const float (&c)[4]) {
  TP_MMA(75, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 " TP_SIG_421,
         cpu::Mma<cpu::M16N8K8 TP_COMMA cpu::F16 TP_COMMA cpu::F16 TP_COMMA false>,
         TP_OPS_F(TP_A2, TP_B1));
}
TP_DEV void mma_m16n8k8_bf16_f32(float (&d)[4], const uint32_t (&a)[2], const uint32_t (&b)[1],
                                 const float (&c)[4]) {
  TP_MMA(80, "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 " TP_SIG_421,
         cpu::Mma<cpu::M16N8K8 TP_COMMA cpu::BF16 TP_COMMA cpu::BF16 TP_COMMA false>,
         TP_OPS_F(TP_A2, TP_B1));
}
// tf32 operands are f32 bit patterns; convert with to_tf32/tf32_bits (the low 13 bits are not used).
TP_DEV void mma_m16n8k8_tf32_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                 const float (&c)[4]) {
  TP_MMA(80, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 " TP_SIG_442,
         cpu::Mma<cpu::M16N8K8Tf32 TP_COMMA cpu::TF32 TP_COMMA cpu::TF32 TP_COMMA false>,
         TP_OPS_F(TP_A4, TP_B2));
}
TP_DEV void mma_m16n8k32_e4m3_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                  const float (&c)[4]) {
  TP_MMA(89, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 " TP_SIG_442,
         cpu::Mma<cpu::M16N8K32 TP_COMMA cpu::E4M3 TP_COMMA cpu::E4M3 TP_COMMA false>,
         TP_OPS_F(TP_A4, TP_B2));
}
TP_DEV void mma_m16n8k32_e5m2_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                  const float (&c)[4]) {
  TP_MMA(89, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 " TP_SIG_442,
         cpu::Mma<cpu::M16N8K32 TP_COMMA cpu::E5M2 TP_COMMA cpu::E5M2 TP_COMMA false>,
         TP_OPS_F(TP_A4, TP_B2));
}

// 8-bit integers: s8/u8 operands (per matrix), s32 accumulators that wrap, or saturate with
// Satfinite.
#define TP_I8(TYPES) TP_MMA(80, "mma.sync.aligned.m16n8k32.row.col" TYPES " " TP_SIG_442,             \
                            cpu::Mma<cpu::M16N8K32 TP_COMMA typename cpu_i8<AS>::type TP_COMMA        \
                                     typename cpu_i8<BS>::type TP_COMMA true TP_COMMA Sat>,           \
                            TP_OPS_I(TP_A4, TP_B2))
#if !defined(TP_GPU)
template <bool S> struct cpu_i8 { typedef cpu::S8 type; };
template <> struct cpu_i8<false> { typedef cpu::U8 type; };
#endif
template <bool AS = true, bool BS = true, bool Sat = false>
TP_DEV void mma_m16n8k32_i8_s32(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                const int32_t (&c)[4]) {
  if constexpr (!Sat && AS && BS) TP_I8(".s32.s8.s8.s32");
  else if constexpr (!Sat && AS) TP_I8(".s32.s8.u8.s32");
  else if constexpr (!Sat && BS) TP_I8(".s32.u8.s8.s32");
  else if constexpr (!Sat) TP_I8(".s32.u8.u8.s32");
  else if constexpr (AS && BS) TP_I8(".satfinite.s32.s8.s8.s32");
  else if constexpr (AS) TP_I8(".satfinite.s32.s8.u8.s32");
  else if constexpr (BS) TP_I8(".satfinite.s32.u8.s8.s32");
  else TP_I8(".satfinite.s32.u8.u8.s32");
}
#undef TP_I8

// ------------------------------------------------------------------------------ cp.async
// Copies Bytes (4, 8 or 16) from global to shared memory asynchronously; the data may be read
// only after the cp_async_wait that covers its group. _zfill copies src_bytes and zero-fills
// the rest (src_bytes = 0 for an out-of-bounds element). Before sm_80 the copy is synchronous.
template <int Bytes> TP_DEV void cp_async_zfill(void* smem, const void* gmem, int src_bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(TP_GPU)
#if TP_ARCH >= 800
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(smem_addr(smem)), "l"(gmem), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;"
                 :: "r"(smem_addr(smem)), "l"(gmem), "n"(Bytes), "r"(src_bytes) : "memory");
#else
  for (int i = 0; i < Bytes; ++i)
    ((char*)smem)[i] = i < src_bytes ? ((const char*)gmem)[i] : 0;
#endif
#else
  cpu::cp_async(smem, gmem, Bytes, src_bytes);
#endif
}
// 16 bytes, or 16 zero bytes without reading the source when !src_in; no copy when !guard. Both
// conditions are instruction predicates on sm_80+ (no branch).
TP_DEV void cp_async16_pred(void* smem, const void* gmem, bool guard, bool src_in) {
#if defined(TP_GPU) && TP_ARCH >= 800
  asm volatile("{ .reg .pred g, z;\n setp.ne.b32 g, %2, 0;\n setp.eq.b32 z, %3, 0;\n"
               " @g cp.async.cg.shared.global [%0], [%1], 16, z;\n}"
               :: "r"(smem_addr(smem)), "l"(gmem), "r"((int)guard), "r"((int)src_in) : "memory");
#else
  if (guard) cp_async_zfill<16>(smem, gmem, src_in ? 16 : 0);
#endif
}
template <int Bytes> TP_DEV void cp_async(void* smem, const void* gmem) {
  cp_async_zfill<Bytes>(smem, gmem, Bytes);
}
TP_DEV void cp_async_commit() {
#if defined(TP_GPU)
#if TP_ARCH >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
#else
  cpu::cp_async_commit();
#endif
}
// Wait until at most N of this thread's committed groups are still in flight.
template <int N> TP_DEV void cp_async_wait() {
#if defined(TP_GPU)
#if TP_ARCH >= 800
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#endif
#else
  cpu::cp_async_wait(N);
#endif
}
TP_DEV void cp_async_wait_all() {
  cp_async_commit();
  cp_async_wait<0>();
}

}  // namespace tp

#if !defined(TP_GPU)
// ------------------------------------------------------------------------------ CUDA names (CPU)
template <class T> inline T __shfl_sync(unsigned m, T v, int src, int w = 32) {
  return tp::shfl_sync(m, v, src, w);
}
template <class T> inline T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) {
  return tp::shfl_up_sync(m, v, d, w);
}
template <class T> inline T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) {
  return tp::shfl_down_sync(m, v, d, w);
}
template <class T> inline T __shfl_xor_sync(unsigned m, T v, int lm, int w = 32) {
  return tp::shfl_xor_sync(m, v, lm, w);
}
inline void __syncwarp(unsigned m = 0xffffffffu) { tp::syncwarp(m); }
inline unsigned __ballot_sync(unsigned m, int p) { return tp::ballot_sync(m, p != 0); }
inline int __any_sync(unsigned m, int p) { return tp::any_sync(m, p != 0); }
inline int __all_sync(unsigned m, int p) { return tp::all_sync(m, p != 0); }
#endif
