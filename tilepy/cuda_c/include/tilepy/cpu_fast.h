// tilepy/cpu_fast.h -- what the fast CPU mode (TP_NT == 1) adds to the host build for speed.
//
// * TP_MVEC (set by launch/cpu_isa.py where glibc's libmvec is linked): the float math
//   functions are declared with SIMD variants, so the compiler vectorizes a tile's exp, log,
//   tanh, ... loops into calls of libmvec's vector versions (without it, one call per element).
//   Which variants exist depends on the glibc version.
// * blocks_per_chunk: how many consecutive blocks a worker takes at a time.
#pragma once

#if defined(TP_MVEC) && defined(__GLIBC__) && defined(__x86_64__)
#define TP_SIMD_DECL(F) extern "C" float F(float) throw() __attribute__((__simd__("notinbranch")));
TP_SIMD_DECL(expf)
TP_SIMD_DECL(logf)
TP_SIMD_DECL(sinf)
TP_SIMD_DECL(cosf)
#if __GLIBC_PREREQ(2, 35)
TP_SIMD_DECL(exp2f)
TP_SIMD_DECL(log2f)
TP_SIMD_DECL(tanf)
TP_SIMD_DECL(sinhf)
TP_SIMD_DECL(coshf)
TP_SIMD_DECL(tanhf)
#endif
#undef TP_SIMD_DECL
#endif

namespace tp { namespace cpu {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

template <class T, int W> struct vec { typedef T type __attribute__((vector_size(W * sizeof(T)))); };

// Blocks are handed out in chunks of consecutive blocks (one atomic increment per chunk, not per
// block), about 16 chunks per worker so that uneven blocks still balance.
inline long blocks_per_chunk(long nblocks, int workers) {
  const long c = nblocks / ((long)workers * 16);
  return c < 1 ? 1 : c;
}

}}  // namespace tp::cpu
