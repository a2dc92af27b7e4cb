// tilepy/wgmma.h -- sm_90a's warpgroup MMA: wgmma.mma_async over shared-memory matrix
// descriptors, its fence and groups, and the async-proxy fence in front of it.
//
//   fence_proxy_async()          fence.proxy.async.shared::cta: this thread's earlier shared-memory
//                                writes (cp.async copies that landed included) become visible to
//                                the async proxy, through which wgmma reads its operands
//   wgmma_fence()                wgmma.fence.sync.aligned: the accumulator registers are ready
//   wgmma_wrote_a()              the thread wrote A fragment registers (a fence must follow)
//   wgmma_commit(), wgmma_wait<N>()   wgmma.commit_group / wgmma.wait_group N
//   wgmma_regs(d)                the registers d (accumulators, or A fragments) as an empty asm's
//                                operands: the compiler keeps their reads and writes on their
//                                side of the asynchronous MMAs
//   wgmma_read(x)                x, where an MMA may still be writing it (faithful CPU: checked)
//   wgmma_desc(p, lbo, sbo, swizzle_bytes)   the 64-bit matrix descriptor of shared memory at p
//                                (PTX ISA "Matrix Descriptor Format"; swizzle 128/64/32, 0 none):
//                                wgmma_desc_lo(p, lbo) | wgmma_desc_hi(sbo, swizzle_bytes)
//   wgmma_async<N, Kind, TransB>(d, a, desc_b, accumulate)
//                                wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}
//                                (Kind 1 / 2): A K-major by its descriptor, or from registers
//                                (a: uint32_t[4], the thread's fragment); B K-major or (TransB)
//                                N-major; d is the thread's N/2 accumulators; accumulate 0:
//                                d = A B, 1: d += A B
//
// TP_WGMMA is 1 in the sm_90a class of a kernel's source (NVRTC defines __CUDA_ARCH_FEAT_SM90_ALL
// for -arch=sm_90a; the CPU build of that class defines TP_WGMMA itself, cuda_c/targets.py) and
// 0 elsewhere, where calling these is an error (fence_proxy_async is then nothing). On the CPU
// they run in the faithful mode (tilepy/cpu_wgmma.h); the fast mode takes the SIMT path of the
// templates that use them (wgmma_ops.h).
#pragma once

#if defined(TP_GPU) && TP_WGMMA
#define TP_WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
  "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define TP_WG_D_16 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define TP_WG_OPS_16 TP_WG_D8(0)
#define TP_WG_ASM_16 TP_WG_D_16 ", %8, %9, p, 1, 1, 0, %11;"
#define TP_WG_SCALE_16 "%10"
#define TP_WGR_ASM_16 TP_WG_D_16 ", {%8, %9, %10, %11}, %12, p, 1, 1, %14;"
#define TP_WGR_SCALE_16 "%13"
#define TP_WG_D_32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define TP_WG_OPS_32 TP_WG_D8(0), TP_WG_D8(8)
#define TP_WG_ASM_32 TP_WG_D_32 ", %16, %17, p, 1, 1, 0, %19;"
#define TP_WG_SCALE_32 "%18"
#define TP_WGR_ASM_32 TP_WG_D_32 ", {%16, %17, %18, %19}, %20, p, 1, 1, %22;"
#define TP_WGR_SCALE_32 "%21"
#define TP_WG_D_64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define TP_WG_OPS_64 TP_WG_D8(0), TP_WG_D8(8), TP_WG_D8(16), TP_WG_D8(24)
#define TP_WG_ASM_64 TP_WG_D_64 ", %32, %33, p, 1, 1, 0, %35;"
#define TP_WG_SCALE_64 "%34"
#define TP_WGR_ASM_64 TP_WG_D_64 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;"
#define TP_WGR_SCALE_64 "%37"
#define TP_WG_D_128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define TP_WG_OPS_128 TP_WG_D8(0), TP_WG_D8(8), TP_WG_D8(16), TP_WG_D8(24), TP_WG_D8(32), TP_WG_D8(40), TP_WG_D8(48), TP_WG_D8(56)
#define TP_WG_ASM_128 TP_WG_D_128 ", %64, %65, p, 1, 1, 0, %67;"
#define TP_WG_SCALE_128 "%66"
#define TP_WGR_ASM_128 TP_WG_D_128 ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;"
#define TP_WGR_SCALE_128 "%69"
#define TP_WG_D_256 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define TP_WG_OPS_256 TP_WG_D8(0), TP_WG_D8(8), TP_WG_D8(16), TP_WG_D8(24), TP_WG_D8(32), TP_WG_D8(40), TP_WG_D8(48), TP_WG_D8(56), TP_WG_D8(64), TP_WG_D8(72), TP_WG_D8(80), TP_WG_D8(88), TP_WG_D8(96), TP_WG_D8(104), TP_WG_D8(112), TP_WG_D8(120)
#define TP_WG_ASM_256 TP_WG_D_256 ", %128, %129, p, 1, 1, 0, %131;"
#define TP_WG_SCALE_256 "%130"
#define TP_WGR_ASM_256 TP_WG_D_256 ", {%128, %129, %130, %131}, %132, p, 1, 1, %134;"
#define TP_WGR_SCALE_256 "%133"
#define TP_WG_MMA(N, TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " TP_WG_SCALE_##N ", 0;\n"                    \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " TP_WG_ASM_##N    \
               "\n}\n"                                                                          \
               : TP_WG_OPS_##N : "l"(a), "l"(b), "r"(acc), "n"(TransB))
// The form with A in registers (four .f16x2 / .bf16x2: the thread's fragment, wgmma_ops.h)
#define TP_WGR_MMA(N, TY)                                                                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " TP_WGR_SCALE_##N ", 0;\n"                  \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " TP_WGR_ASM_##N   \
               "\n}\n"                                                                         \
               : TP_WG_OPS_##N : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc),  \
                 "n"(TransB))
#elif defined(TP_GPU)
extern "C" __device__ void tp_error_instruction_needs_sm90a(void);
#endif

#if !defined(TP_GPU)   // the user's line of a call, for the CPU emulation's errors
#define TP_AT_CALLER , cpu::Caller at = cpu::caller()
#define TP_PASS_CALLER , at
#else
#define TP_AT_CALLER
#define TP_PASS_CALLER
#endif

#if !defined(TP_GPU)
#include "tilepy/cpu_wgmma.h"
#endif

namespace tp {

#if !defined(TP_GPU)
TP_DEV uint32_t wg_smem_addr(const void* p) {   // the offset in the block's dynamic shared memory
  return (uint32_t)((const unsigned char*)p - cpu::dynamic_smem());
}
#else
TP_DEV uint32_t wg_smem_addr(const void* p) { return smem_addr(p); }
#endif

TP_DEV void fence_proxy_async() {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#elif !defined(TP_GPU) && TP_WARP_OPS && TP_WGMMA
  cpu::proxy_fence();
#endif
}

TP_DEV void wgmma_fence() {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::wgmma_fence();
#endif
}

TP_DEV void wgmma_commit() {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::wgmma_commit();
#endif
}

// (the unnamed int only carries TP_AT_CALLER: the user's line, for the CPU emulation's errors)
template <int N> TP_DEV void wgmma_wait(int = 0 TP_AT_CALLER) {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::wgmma_wait(N, at);
#endif
}

// The thread wrote registers that a later wgmma.mma_async reads as its A fragment: the PTX ISA
// wants a wgmma.fence between the two (the faithful CPU mode reports an MMA issued before one).
TP_DEV void wgmma_wrote_a() {
#if !defined(TP_GPU) && defined(TP_FAITHFUL)
  cpu::wgmma_wrote_a();
#endif
}

// Registers (accumulators, or A fragments) as an asm's operands: the compiler may not move their
// reads or writes across this point (around the asynchronous MMAs: before their fence, after
// their wait).
template <class T, int N> TP_DEV void wgmma_regs(T (&d)[N]) {
#if defined(TP_GPU) && TP_WGMMA
  TP_UNROLL
  for (int i = 0; i < N; ++i) {
    if constexpr (same<T, uint32_t>::value) asm volatile("" : "+r"(d[i]) :: "memory");
    else asm volatile("" : "+f"(d[i]) :: "memory");
  }
#else
  (void)d;
#endif
}

// A read of an accumulator that a K loop's wgmma_acc may have left in flight (the emitter spells
// every read of such a value outside its MMAs so): the value itself; the faithful CPU mode
// reports a read of registers that an MMA in flight still writes.
template <class T> TP_DEV const T& wgmma_read(const T& x TP_AT_CALLER) {
#if !defined(TP_GPU) && defined(TP_FAITHFUL)
  cpu::wgmma_read(&x, sizeof(T), at);
#endif
  return x;
}

// Swizzle bytes (128 / 64 / 32; 0: none) -> the descriptor's mode field (bits 63-62).
constexpr uint64_t wgmma_swizzle_mode(int bytes) {
  return bytes == 128 ? 1 : bytes == 64 ? 2 : bytes == 32 ? 3 : 0;
}
// A descriptor's low word (start address and leading byte offset) and its high word's bits
// (stride byte offset, swizzle mode): wgmma_desc is their `|`.
// (The start address needs no mask: a shared-memory offset is below 228 KiB < 2^18, its 14-bit
// field's reach; one instruction fewer per operand and stage in the K loop.)
TP_DEV uint32_t wgmma_desc_lo(const void* p, uint32_t lbo) {
  return wg_smem_addr(p) >> 4 | ((lbo & 0x3ffffu) >> 4) << 16;
}
constexpr uint64_t wgmma_desc_hi(uint32_t sbo, int swizzle_bytes) {
  return (uint64_t)((sbo & 0x3ffffu) >> 4) << 32 | wgmma_swizzle_mode(swizzle_bytes) << 62;
}
TP_DEV uint64_t wgmma_desc(const void* p, uint32_t lbo, uint32_t sbo, int swizzle_bytes) {
  return wgmma_desc_lo(p, lbo) | wgmma_desc_hi(sbo, swizzle_bytes);
}

// A: the descriptor of A in shared memory (uint64_t), or the thread's A fragment in registers
// (uint32_t[4], four .f16x2 / .bf16x2: wgmma_ops.h packs it from an accumulator-layout tile).
template <int N, int Kind, int TransB, class A>
TP_DEV void wgmma_async(float (&d)[N / 2], const A& a, uint64_t b, int acc) {
  static_assert(Kind == 1 || Kind == 2, "wgmma here takes f16 or bf16 operands");
  static_assert(N == 16 || N == 32 || N == 64 || N == 128 || N == 256, "wgmma n of tilepy's tiles");
  constexpr bool desc_a = same<A, uint64_t>::value;
  static_assert(desc_a || same<A, uint32_t[4]>::value, "wgmma's A: a descriptor or 4 registers");
#if defined(TP_GPU) && TP_WGMMA
#define TP_WG_EACH(MMA)                                                                         \
  if constexpr (Kind == 1) {                                                                    \
    if constexpr (N == 16) MMA(16, "f16");                                                      \
    else if constexpr (N == 32) MMA(32, "f16");                                                 \
    else if constexpr (N == 64) MMA(64, "f16");                                                 \
    else if constexpr (N == 128) MMA(128, "f16");                                               \
    else MMA(256, "f16");                                                                       \
  } else {                                                                                      \
    if constexpr (N == 16) MMA(16, "bf16");                                                     \
    else if constexpr (N == 32) MMA(32, "bf16");                                                \
    else if constexpr (N == 64) MMA(64, "bf16");                                                \
    else if constexpr (N == 128) MMA(128, "bf16");                                              \
    else MMA(256, "bf16");                                                                      \
  }
  if constexpr (desc_a) { TP_WG_EACH(TP_WG_MMA) } else { TP_WG_EACH(TP_WGR_MMA) }
#undef TP_WG_EACH
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  if constexpr (desc_a) cpu::wgmma_async(d, N, Kind, TransB, a, b, acc);
  else cpu::wgmma_async_ra(d, N, Kind, TransB, a, b, acc);
#endif
}

}  // namespace tp
