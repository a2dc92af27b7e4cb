// tilepy/tma.h -- sm_90a's tensor memory accelerator (TMA) and the mbarriers its copies complete on.
//
//   TensorMap                    a CUtensorMap (128 bytes, 64-byte aligned): a kernel parameter
//                                `const __grid_constant__ tp::TensorMap`, encoded on the host at
//                                launch (launch/tensor_map.py: cuTensorMapEncodeTiled)
//   tma_kept(p)                  p, its address worked out once (a K loop's maps and mbarriers)
//   tma_leader()                 thread 0: it initializes and invalidates the mbarriers
//   tma_issuer()                 the thread that issues a stage's copies: one lane of warp 0
//                                (elect.sync), thread 0 on the CPU
//   mbar_init(bars, n)           thread 0: n mbarriers expecting one arrival each, then
//                                fence.mbarrier_init (the caller's __syncthreads publishes them)
//   mbar_expect_tx(bar, bytes)   mbarrier.expect_tx: the phase also waits for `bytes` of copies
//   mbar_arrive(bar)             mbarrier.arrive (release)
//   mbar_wait(bar, parity)       mbarrier.try_wait.parity until the phase of that parity completed
//   mbar_inval(bars, n)          thread 0: mbarrier.inval (before the memory is used otherwise)
//   tma_copy<R>(map, dst, bar, c)   cp.async.bulk.tensor.Rd.shared::cluster.global.mbarrier::
//                                complete_tx::bytes: the map's box at coordinates c (innermost
//                                first) into shared memory at dst, its bytes completing on bar
//   tma_store_copy<R>(map, src, c)   cp.async.bulk.tensor.Rd.global.shared::cta.bulk_group: the
//                                map's box from shared memory at src to coordinates c; elements
//                                outside the tensor are not written (the box is clipped)
//   bulk_commit()                cp.async.bulk.commit_group: the thread's TMA stores so far, a group
//   bulk_wait_read<N>()          cp.async.bulk.wait_group.read N: all but the newest N groups have
//                                read their shared memory (it may be written again)
//   smem_write<V>(dst, src)      V elements into shared memory that a TMA store reads next: a
//                                fence_proxy_async() of the writing thread must come between
//
// Available in the sm_90a class (TP_WGMMA); elsewhere calling them is an error. On the CPU both
// modes run them (tilepy/cpu_tma.h): the map the CPU backend's host code encoded, the copy with
// its swizzle and zero fill, mbarrier phases; the faithful mode reports a wait on the wrong
// parity (wgmma reading bytes not yet landed), a wait that can never complete, a copy in flight
// at exit; a TMA store of shared memory that a thread wrote (smem_write) without a
// fence.proxy.async since, shared memory written or loaded into while a TMA store still reads
// it (no bulk_wait_read retired its group), a thread exiting with a TMA store in flight.
#pragma once

#if !defined(TP_GPU)
#include "tilepy/cpu_tma.h"
#else
namespace tp {
struct alignas(64) TensorMap { unsigned long long opaque[16]; };
}
#endif

namespace tp {

TP_DEV bool tma_leader() { return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0; }

// The warp index goes through a shuffle so that ptxas knows it is the same across the warp, and
// the lane is elect.sync's: with both, ptxas issues each UTMALDG once, where a plain
// `threadIdx.x == 0` makes it loop over the warp's active lanes (ELECT / BRA.U.ANY per copy).
TP_DEV bool elect_one() {   // elect.sync over the full warp: true in one lane
#if defined(TP_GPU) && TP_WGMMA
  uint32_t elected;
  asm volatile("{\n.reg .pred p;\n.reg .b32 r;\nelect.sync r|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}"
               : "=r"(elected));
  return elected;
#else
  return lane_of() == 0;
#endif
}
TP_DEV bool tma_issuer() {
#if defined(TP_GPU) && TP_WGMMA
  return (__shfl_sync(0xffffffffu, (int)(threadIdx.x / 32), 0) == 0) & elect_one();
#else
  return tma_leader();
#endif
}

// p, its address worked out once (emit_pipeline.py keeps a K loop's tensor maps and mbarriers
// before the loop): p plus an opaque zero, bit 31 of %ctaid.z (a grid has at most 65535 blocks
// along z), which ptxas cannot work out. Without it ptxas recomputes the address next to every
// use in the loop: a parameter's (a tensor map's) generic address is the parameter space's base
// plus an offset, a 64-bit add (4 of the f16 128x128x32 loop's 62 instructions for its two
// maps), the mbarriers' the dynamic shared memory's base plus their offset. (One asm per
// pointer: with a shared zero NVVM makes one map's address from the other's.)
template <class T> TP_DEV T* tma_kept(T* p) {
#if defined(TP_GPU) && TP_WGMMA
  uint32_t zero;
  asm volatile("{\n.reg .u32 z;\nmov.u32 z, %%ctaid.z;\nand.b32 %0, z, 0x80000000;\n}" : "=r"(zero));
  return reinterpret_cast<T*>(reinterpret_cast<unsigned long long>(p) + zero);
#else
  return p;
#endif
}

TP_DEV void mbar_init(uint64_t* bars, int n TP_AT_CALLER) {
  if (!tma_leader()) return;
#if defined(TP_GPU) && TP_WGMMA
  for (int i = 0; i < n; ++i)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(bars + i)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  for (int i = 0; i < n; ++i) cpu::mbar_init(bars + i, 1, at);
#endif
}

TP_DEV void mbar_inval(uint64_t* bars, int n) {
  if (!tma_leader()) return;
#if defined(TP_GPU) && TP_WGMMA
  for (int i = 0; i < n; ++i)
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(smem_addr(bars + i)) : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  for (int i = 0; i < n; ++i) cpu::mbar_inval(bars + i);
#endif
}

TP_DEV void mbar_expect_tx(uint64_t* bar, uint32_t bytes TP_AT_CALLER) {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
               :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::mbar_update(bar, 0, (int32_t)bytes, "mbarrier.expect_tx", at);
#endif
}

TP_DEV void mbar_arrive(uint64_t* bar TP_AT_CALLER) {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.release.cta.shared::cta.b64 st, [%0];\n}"
               :: "r"(smem_addr(bar)) : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::mbar_update(bar, 1, 0, "mbarrier.arrive", at);
#endif
}

TP_DEV void mbar_wait(uint64_t* bar, uint32_t parity TP_AT_CALLER) {
#if defined(TP_GPU) && TP_WGMMA
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::mbar_wait(bar, parity, at);
#endif
}

template <int R>
TP_DEV void tma_copy(const TensorMap& map, void* dst, uint64_t* bar, const int32_t (&c)[R] TP_AT_CALLER) {
  static_assert(R >= 1 && R <= 5, "a tensor map has 1 to 5 dimensions");
#if defined(TP_GPU) && TP_WGMMA
  const uint64_t m = (uint64_t)&map;
  const uint32_t d = smem_addr(dst), b = smem_addr(bar);
  if constexpr (R == 1)
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3}], [%2];" :: "r"(d), "l"(m), "r"(b), "r"(c[0]) : "memory");
  else if constexpr (R == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4}], [%2];" :: "r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]) : "memory");
  else if constexpr (R == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4, %5}], [%2];"
                 :: "r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  else if constexpr (R == 4)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4, %5, %6}], [%2];"
                 :: "r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
                 :: "r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
                 : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::bulk_copy(map, (unsigned char*)dst, bar, c, R, at);
#endif
}

// The TMA store (the staged epilogue, wgmma_ops.h tma_store): R 1 to 5, coordinates innermost first.
template <int R>
TP_DEV void tma_store_copy(const TensorMap& map, const void* src, const int32_t (&c)[R] TP_AT_CALLER) {
  static_assert(R >= 1 && R <= 5, "a tensor map has 1 to 5 dimensions");
#if defined(TP_GPU) && TP_WGMMA
  const uint64_t m = (uint64_t)&map;
  const uint32_t s = smem_addr(src);
  if constexpr (R == 1)
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];"
                 :: "l"(m), "r"(s), "r"(c[0]) : "memory");
  else if constexpr (R == 2)
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"(m), "r"(s), "r"(c[0]), "r"(c[1]) : "memory");
  else if constexpr (R == 3)
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];"
                 :: "l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  else if constexpr (R == 4)
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
                 :: "l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
                 :: "l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::bulk_store(map, (const unsigned char*)src, c, R, at);
#endif
}

TP_DEV void bulk_commit() {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::bulk_commit();
#endif
}

template <int N> TP_DEV void bulk_wait_read(int = 0 TP_AT_CALLER) {
#if defined(TP_GPU) && TP_WGMMA
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
#elif defined(TP_GPU)
  tp_error_instruction_needs_sm90a();
#else
  cpu::bulk_wait_read(N, at);
#endif
}

template <int V, class T> TP_DEV void smem_write(T* dst, const T* src TP_AT_CALLER) {
#if !defined(TP_GPU) && defined(TP_FAITHFUL)
  cpu::smem_written(dst, V * (int)sizeof(T), at);
#endif
  vstore<V>(dst, src);
}

}  // namespace tp
