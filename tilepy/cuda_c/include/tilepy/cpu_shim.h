// tilepy/cpu_shim.h -- compile tilepy's emitted CUDA C++ with a host C++ compiler.
//
// Fast mode (TP_NT == 1): one thread per block, __syncthreads() is a no-op, blocks are spread over
// worker threads; `__shared__` is thread_local storage of the worker running the block.
// CUDA's keywords become host C++, the built-in index variables read a thread-local context, and
// the half types are 2-byte structs converted with correctly rounded host code.
#pragma once
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#if TP_NT != 1
#error "the CPU fast mode runs one thread per block: compile with -DTP_NT=1"
#endif

// ---------------------------------------------------------------------------- CUDA keywords
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
#define __restrict__ __restrict

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace tp { namespace cpu {
struct Ctx {
  dim3 tid{0, 0, 0};
  dim3 bid{0, 0, 0};
};
inline thread_local Ctx* cur = nullptr;
inline dim3 grid_dim, block_dim;
}}  // namespace tp::cpu

#define threadIdx (tp::cpu::cur->tid)
#define blockIdx (tp::cpu::cur->bid)
#define blockDim (tp::cpu::block_dim)
#define gridDim (tp::cpu::grid_dim)

static inline void __syncthreads() {}

// ---------------------------------------------------------------------------- math
using std::signbit;
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
static inline int __float_as_int(float f) { int x; std::memcpy(&x, &f, 4); return x; }

// ---------------------------------------------------------------------------- half types
// f16 and bf16 storage with round-to-nearest-even conversions from float (as __float2half_rn).
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };

#ifndef __FLT16_MAX__
#error "the CPU backend needs a host compiler with _Float16 (GCC >= 12 or Clang >= 15)"
#endif
// _Float16 conversions are IEEE correctly rounded (to nearest even), like __float2half_rn.
static inline float __half2float(__half h) { _Float16 f; std::memcpy(&f, &h.x, 2); return (float)f; }
static inline __half __float2half_rn(float x) {
  const _Float16 f = (_Float16)x;
  __half h; std::memcpy(&h.x, &f, 2); return h;
}

static inline float __bfloat162float(__nv_bfloat16 b) {
  const uint32_t bits = (uint32_t)b.x << 16;
  float f; std::memcpy(&f, &bits, 4); return f;
}

static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  __nv_bfloat16 b;
  if ((x & 0x7fffffffu) > 0x7f800000u) { b.x = (uint16_t)((x >> 16) | 0x40u); return b; }  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  b.x = (uint16_t)(x >> 16);
  return b;
}

// ---------------------------------------------------------------------------- launch
namespace tp { namespace cpu {
inline dim3 block_index(long b, dim3 g) {
  return dim3(unsigned(b % g.x), unsigned((b / g.x) % g.y), unsigned(b / ((long)g.x * g.y)));
}

// Run every block of `grid` (one thread each) on `workers` OS threads.
inline int launch(dim3 grid, int workers, const std::function<void()>& kernel) {
  grid_dim = grid;
  block_dim = dim3(1, 1, 1);
  const long nblocks = (long)grid.x * grid.y * grid.z;
  if (workers < 1) workers = 1;
  if (workers > nblocks) workers = (int)(nblocks > 0 ? nblocks : 1);
  std::atomic<long> next{0};
  auto worker = [&] {
    Ctx ctx;
    cur = &ctx;
    for (long b; (b = next.fetch_add(1)) < nblocks;) {
      ctx.bid = block_index(b, grid);
      kernel();
    }
    cur = nullptr;
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return 0;
}
}}  // namespace tp::cpu
