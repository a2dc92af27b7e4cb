// tilepy/runtime.h -- the C++ that emitted tile kernels call.
//
// One source, two compilers:
//   * NVRTC (device): __CUDACC_RTC__ is defined; CUDA's cuda_fp16.h / cuda_bf16.h give the half types.
//   * g++ (CPU):      tilepy/cpu_shim.h makes the same source a host program (threadIdx, __shared__,
//                     __syncthreads, half types) so the kernel can be checked without a GPU.
//
// Execution model: one tile block = one CUDA thread block of TP_NT threads. A tile of N elements
// (row-major linear index e) is a `Tile<T, N, L>`: its layout L (tilepy/layout.h) says which
// thread holds which element in which slot; the default, Cyclic<N>, puts element e in thread
// e % TP_NT, slot e / TP_NT. A tile with one element (0-d and 1x1.. tiles) is a plain scalar held
// by every thread. Element-wise ops are thread-local loops over slots (their operands share one
// layout); the ops here that move data between threads (broadcast, permute, reduce, mma, ...) go
// through shared memory between __syncthreads() and accept any layout; the register and warp-level
// fast paths of layout_ops.h and tensorcore.h are chosen where the layouts allow them.
#pragma once

#ifndef TP_NT
#define TP_NT 128
#endif

// TP_FP16 / TP_BF16 (default 1): the half types' support. NVRTC parses CUDA's cuda_fp16.h and
// cuda_bf16.h in ~10 ms each, so tilepy sets them to 0 for kernels that do not use the type
// (launch/nvrtc.py); nothing else depends on them.
#ifndef TP_FP16
#define TP_FP16 1
#endif
#ifndef TP_WGMMA   // the sm_90a class (wgmma.h); the emitted source defines it where it has one
#define TP_WGMMA 0
#endif
#ifndef TP_BF16
#define TP_BF16 1
#endif

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define TP_GPU 1
#if TP_FP16
#include <cuda_fp16.h>
#endif
#if TP_BF16
#include <cuda_bf16.h>
#endif
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define TP_DEV __device__ __forceinline__
#define TP_UNROLL _Pragma("unroll")
// TP_ROLLED: a loop kept rolled -- a rare path (a chunk at a tensor's edge) whose unrolled
// guarded loads cost NVVM and ptxas more than they save; never over a register tile's slots
// (a runtime index puts the tile in local memory).
#define TP_ROLLED _Pragma("unroll 1")
#else
#include "tilepy/cpu_shim.h"
#define TP_DEV inline
#if !defined(TP_FAITHFUL)
#define TP_CPU_FAST 1   // one thread holds each tile, row-major (tilepy/cpu_fast.h)
#endif
#define TP_UNROLL
#define TP_ROLLED
#endif
#ifndef TP_CPU_FAST
#define TP_CPU_FAST 0
#endif

namespace tp {

constexpr int NT = TP_NT;

// ------------------------------------------------------------------------------ small traits
template <bool B, class A, class C> struct cond { typedef A type; };
template <class A, class C> struct cond<false, A, C> { typedef C type; };
template <class A, class B> struct same { static constexpr bool value = false; };
template <class A> struct same<A, A> { static constexpr bool value = true; };
template <class T> struct unsigned_of;
template <> struct unsigned_of<bool> { typedef bool type; };
template <> struct unsigned_of<int8_t> { typedef uint8_t type; };
template <> struct unsigned_of<int16_t> { typedef uint16_t type; };
template <> struct unsigned_of<int32_t> { typedef uint32_t type; };
template <> struct unsigned_of<int64_t> { typedef uint64_t type; };

TP_DEV int tid() { return (int)threadIdx.x; }
// A `loop` op runs until it breaks, possibly forever (spec 8.7). C++ lets a compiler assume that
// a loop without side effects ends (the forward-progress rule) and delete it; every emitted
// `loop` calls this once per iteration: an empty volatile asm is a side effect and no instruction.
TP_DEV void progress() { asm volatile(""); }
// memory_fence_alias_tko: each thread's earlier accesses are ordered before its later ones also
// through another virtual address of the same memory (PTX fence.proxy.alias), then the block
// barrier orders them across the block's threads (a tile block's accesses are spread over them).
TP_DEV void fence_alias() {
#if TP_GPU
  asm volatile("fence.proxy.alias;" ::: "memory");
#endif
  __syncthreads();
}
TP_DEV float inf_f32() { return __int_as_float(0x7f800000); }
TP_DEV float nan_f32() { return __int_as_float(0x7fc00000); }

// Signless integers read signed or unsigned; i1 (bool) reads 0/-1 signed, 0/1 unsigned (spec
// 8.8.1), and results wrap modulo 2^bits (for i1: the low bit).
template <class T> TP_DEV auto sread(T a) {
  if constexpr (same<T, bool>::value) return (int)(a ? -1 : 0); else return a;
}
template <class T> TP_DEV auto uread(T a) {   // at least 32 bits: no promotion to signed int
  if constexpr (same<T, bool>::value) return (unsigned)a;
  else if constexpr (sizeof(T) < 4) return (unsigned)(typename unsigned_of<T>::type)a;
  else return (typename unsigned_of<T>::type)a;
}
template <class T> TP_DEV constexpr int int_bits() { return same<T, bool>::value ? 1 : (int)sizeof(T) * 8; }
template <class T, class V> TP_DEV T wrap_to(V v) {
  if constexpr (same<T, bool>::value) return (v & 1) != 0; else return (T)v;
}

}  // namespace tp
#include "tilepy/layout.h"
namespace tp {

// ------------------------------------------------------------------------------ conversions
// Every conversion goes through `cvt<To>(from)`; half types travel through float (exact).
template <class T> struct is_half { static constexpr bool value = false; };
template <class T> TP_DEV T from_f32(float x);
#if TP_FP16
template <> struct is_half<__half> { static constexpr bool value = true; };
TP_DEV float to_f32(__half x) { return __half2float(x); }
template <> TP_DEV __half from_f32<__half>(float x) { return __float2half_rn(x); }
#endif
#if TP_BF16
template <> struct is_half<__nv_bfloat16> { static constexpr bool value = true; };
TP_DEV float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> TP_DEV __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
#endif

// Round to odd into float: a float64 (or integer) value rounded to 24 bits with the last bit set
// when inexact. Rounding that once more into f16/bf16 (<= 22 bits) is correctly rounded, where
// going through a round-to-nearest float would round twice (wrong near f16/bf16 halfway points).
TP_DEV float ro_f32(double d) {
  float f = (float)d;
  if ((double)f != d && d == d) {
    int bits;
    memcpy(&bits, &f, 4);
    if ((bits & 1) == 0) bits += (fabs(d) > fabs((double)f)) ? 1 : -1;
    memcpy(&f, &bits, 4);
  }
  return f;
}
TP_DEV int clz64(uint64_t m) {
#ifdef TP_GPU
  return __clzll((long long)m);
#else
  return __builtin_clzll(m);
#endif
}
TP_DEV float ro_f32(uint64_t m) {
  if (m < (1ull << 24)) return (float)m;
  const int drop = 63 - clz64(m) - 23;
  uint64_t t = m >> drop;
  if (m & ((1ull << drop) - 1)) t |= 1;
  return ldexpf((float)t, drop);
}

template <class To, class From> TP_DEV To cvt(From x) {
  if constexpr (same<To, From>::value) {
    return x;
  } else if constexpr (is_half<From>::value) {
    return cvt<To>(to_f32(x));
  } else if constexpr (is_half<To>::value) {
    if constexpr (same<From, double>::value) {
      return from_f32<To>(ro_f32(x));
    } else {
      return from_f32<To>((float)x);
    }
  } else {
    return (To)x;
  }
}

// Integers to floats with one rounding (float and double conversions are correctly rounded).
template <class To> TP_DEV To from_uint(uint64_t m) {
  if constexpr (is_half<To>::value) return from_f32<To>(ro_f32(m)); else return (To)m;
}
template <class To> TP_DEV To from_int(int64_t v) {
  if constexpr (is_half<To>::value) {
    const float f = ro_f32(v < 0 ? uint64_t(0) - (uint64_t)v : (uint64_t)v);
    return from_f32<To>(v < 0 ? -f : f);
  } else {
    return (To)v;
  }
}

// ------------------------------------------------------------------------------ tiles
template <class T, int N, class L = Cyclic<N>> struct Tile {
  static_assert(L::N == N, "layout of another element count");
  typedef L layout;
  static constexpr int K = L::K;
  T v[K];
  TP_DEV static bool valid(int s) { return L::valid(s); }
  TP_DEV static int elem(int s) { return L::elem(s); }
};

// Element-wise application over tiles of one layout (or over scalars: one-element tiles).
template <class F, class T, int N, class L, class... Ts>
TP_DEV auto ew(F f, const Tile<T, N, L>& a, const Tile<Ts, N, L>&... b) {
  typedef decltype(f(a.v[0], b.v[0]...)) R;
  Tile<R, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::valid(s)) r.v[s] = f(a.v[s], b.v[s]...);
  return r;
}
template <class F, class... Ts> TP_DEV auto ew(F f, const Ts&... x) { return f(x...); }

template <int N, class L = Cyclic<N>, class T> TP_DEV Tile<T, N, L> splat(T x) {
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) r.v[s] = x;
  return r;
}

template <class T, int N, class L = Cyclic<N>> TP_DEV Tile<T, N, L> iota() {
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) r.v[s] = (T)L::elem(s);
  return r;
}

// The column index (last dimension, C wide) of every element: a row of iota broadcast down a
// tile, computed in each slot's registers whatever the layout. An mma accumulator's slots know
// their column without their row (the slots of rows g and g + 8 share it: half the integer work
// of an attention mask, and none of the row arithmetic).
template <class L, int C> TP_DEV constexpr bool acc_columns() {
  if constexpr (is_mma_acc<L>::value) return L::real && L::NC == C;
  else return false;
}
template <class T, int N, int C, class L = Cyclic<N>> TP_DEV Tile<T, N, L> iota_cols() {
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) {
    if constexpr (acc_columns<L, C>()) r.v[s] = (T)L::col(s);
    else r.v[s] = (T)(L::elem(s) % C);
  }
  return r;
}

// A value from its storage bits (float constants are emitted as bit patterns).
template <class T, class B> TP_DEV T from_bits(B b) {
  if constexpr (same<T, B>::value) {
    return b;
  } else {
    static_assert(sizeof(T) == sizeof(B), "from_bits needs equal sizes");
    T r;
    memcpy(&r, &b, sizeof(T));
    return r;
  }
}

// A constant table (emitted at file scope, values or bit patterns) as a tile.
template <class T, int N, class L = Cyclic<N>, class B>
TP_DEV Tile<T, N, L> from_table(const B* table) {
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::valid(s)) r.v[s] = from_bits<T>(table[L::elem(s)]);
  return r;
}

// ------------------------------------------------------------------------------ shapes
template <int... S> struct Shape {
  static constexpr int rank = sizeof...(S);
  static constexpr int numel = (1 * ... * S);
  static constexpr int dims[rank > 0 ? rank : 1] = {S...};
};
template <int... M> struct DimMap {
  static constexpr int map[sizeof...(M) > 0 ? sizeof...(M) : 1] = {M...};
};

// Row-major unravel of linear index e into coordinates of shape S.
template <class S> TP_DEV void unravel(int e, int (&c)[S::rank > 0 ? S::rank : 1]) {
  TP_UNROLL
  for (int i = S::rank - 1; i >= 0; --i) {
    c[i] = e % S::dims[i];
    e /= S::dims[i];
  }
}

// ------------------------------------------------------------------------------ memory
template <class T, int R> struct View {
  T* base;
  int64_t shape[R];
  int64_t stride[R];
};

// Faithful CPU mode: every global access through view v (`bytes` at p) is checked against the
// bytes the view spans (cpu_fiber.h bad_view_access names the array and the kernel's line `at`,
// a default argument of the view ops there: TP_VIEW_AT, passed on by TP_PASS_AT). TP_VADDR(v,
// off, n, what) is the address of element `off` for an access of n elements. Elsewhere nothing
// is checked: v.base + off.
#if defined(TP_FAITHFUL)
#define TP_VIEW_AT , cpu::Caller at = cpu::caller()
#define TP_PASS_AT , at
#define TP_CHECK_VIEW(v, p, bytes, what) check_view(v, p, bytes, what, at)
#define TP_VADDR(v, off, n, what) view_addr(v, off, n, what, at)
template <class T, int R>
inline void check_view(const View<T, R>& v, const void* p, size_t bytes, const char* what,
                       const cpu::Caller& at) {
  const cpu::Extent e = cpu::extent_of(v.base, sizeof(T), v.shape, v.stride, R, "");
  if (__builtin_expect(!cpu::inside(e, (uintptr_t)p, bytes), 0))
    cpu::bad_view_access(v.base, e, (uintptr_t)p, bytes, what, at);
}
template <class T, int R>
inline T* view_addr(const View<T, R>& v, int64_t off, int n, const char* what,
                    const cpu::Caller& at) {
  check_view(v, v.base + off, n * sizeof(T), what, at);
  return v.base + off;
}
#else
#define TP_VIEW_AT
#define TP_PASS_AT
#define TP_CHECK_VIEW(v, p, bytes, what) ((void)0)
#define TP_VADDR(v, off, n, what) ((v).base + (off))
#endif

// i1 is a byte in memory; a nonzero byte reads as 1 (spec 8.6.2).
template <class T> TP_DEV T read_elem(const T* p) {
  if constexpr (same<T, bool>::value) return *(const unsigned char*)p != 0; else return *p;
}

// Whether coordinate g lies in [0, n): one unsigned compare. A tile index below 0 puts every
// coordinate of its tile below 0 (g = idx * dim + c with 0 <= c < dim), so such a tile is
// wholly outside the tensor: padding on load, no store (ARCHITECTURE decision 9; the spec calls
// it undefined, cuTile's load/store fill or mask every element outside the array). A coordinate
// (an i32 tile index times a tile dimension) fits int64; the offset of an element outside is
// never dereferenced.
TP_DEV bool in_extent(int64_t g, int64_t n) { return (uint64_t)g < (uint64_t)n; }

// Offset of element `e` of the tile at tile-space index `idx` of a partition view, or -1 when
// the element is outside the tensor (padding on load, masked on store).
template <class S, class DM, class T, int R>
TP_DEV int64_t part_offset(const View<T, R>& v, const int64_t (&idx)[R], int e) {
  int c[S::rank > 0 ? S::rank : 1];
  unravel<S>(e, c);
  int64_t off = 0;
  TP_UNROLL
  for (int i = 0; i < S::rank; ++i) {
    const int d = DM::map[i];
    const int64_t g = idx[i] * (int64_t)S::dims[i] + c[i];
    if (!in_extent(g, v.shape[d])) return -1;
    off += g * v.stride[d];
  }
  return off;
}

// The offset of the first element of the tile at `idx`.
template <class S, class DM, class T, int R>
TP_DEV int64_t tile_origin(const View<T, R>& v, const int64_t (&idx)[R]) {
  int64_t off = 0;
  TP_UNROLL
  for (int i = 0; i < S::rank; ++i) off += idx[i] * (int64_t)S::dims[i] * v.stride[DM::map[i]];
  return off;
}

// The V consecutive elements along tile dimension CD from element e (all in one tile): the
// offset of the first, and how many of them (0..V) lie inside the tensor. (This form, not an
// early `continue`, keeps the fast mode's row copies as fast as before: 16% on a transpose.)
template <class S, class DM, int V, int CD, class T, int R>
TP_DEV int chunk_span(const View<T, R>& v, const int64_t (&idx)[R], int e, int64_t& off) {
  int c[S::rank > 0 ? S::rank : 1];
  unravel<S>(e, c);
  off = 0;
  int n = V;
  TP_UNROLL
  for (int i = 0; i < S::rank; ++i) {
    const int d = DM::map[i];
    const int64_t g = idx[i] * (int64_t)S::dims[i] + c[i];
    if (i == CD) {   // g < 0: the whole tile is below the tensor (in_extent)
      const int64_t left = g < 0 ? 0 : v.shape[d] - g;
      if (left < n) n = left > 0 ? (int)left : 0;
    } else if (!in_extent(g, v.shape[d])) {
      n = 0;
    }
    off += g * v.stride[d];
  }
  return n;
}

}  // namespace tp
#include "tilepy/cpu_tiles.h"
namespace tp {

// Vector accesses of V elements (V * sizeof(T) in 2..16 bytes, the address aligned to it).
template <int B> struct bits_t;
#ifdef TP_GPU
template <> struct bits_t<16> { typedef uint4 type; };
template <> struct bits_t<8> { typedef uint2 type; };
#else
struct alignas(16) u128_t { uint32_t w[4]; };
struct alignas(8) u64x1_t { uint32_t w[2]; };
template <> struct bits_t<16> { typedef u128_t type; };
template <> struct bits_t<8> { typedef u64x1_t type; };
#endif
template <> struct bits_t<4> { typedef uint32_t type; };
template <> struct bits_t<2> { typedef uint16_t type; };
template <int V, class T> TP_DEV void vload(T* dst, const T* src) {
  typedef typename bits_t<V * (int)sizeof(T)>::type B;
  const B b = *(const B*)src;
  memcpy(dst, &b, sizeof(B));
}
template <int V, class T> TP_DEV void vstore(T* dst, const T* src) {
  typedef typename bits_t<V * (int)sizeof(T)>::type B;
  B b;
  memcpy(&b, src, sizeof(B));
  *(B*)dst = b;
}
// A store to global memory. NVVM splits the 16-byte store of vstore into 32-bit stores when
// the words come from separate loads (a permuted tile gathered from shared memory: 4 STG
// instead of one STG.128), so on the GPU a 16-byte one is one st.global.v4 (weak, default
// caching: the plain STG.E.128; __stwb's explicit .wb would make it a strong store).
template <int V, class T> TP_DEV void vstore_global(T* dst, const T* src) {
#ifdef TP_GPU
  if constexpr (V * sizeof(T) == 16) {
    uint32_t w[4];
    memcpy(w, src, 16);
    asm volatile("{ .reg .u64 g; cvta.to.global.u64 g, %0; st.global.v4.b32 [g], {%1, %2, %3, %4}; }"
                 :: "l"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
    return;
  }
#endif
  vstore<V>(dst, src);
}

// The vector width of a load/store of a tile of shape S in layout L: L::vec slots hold
// consecutive elements of the last dimension; Vec says the lowering proved the tensor's last
// dimension contiguous, its base 16-byte aligned and its other strides multiples of 16 elements.
template <class S, class L, class T, bool Vec> constexpr int vec_width() {
  if constexpr (!Vec || same<T, bool>::value || S::rank == 0) {
    return 1;
  } else {
    constexpr int w = L::vec < 16 / (int)sizeof(T) ? L::vec : 16 / (int)sizeof(T);
    return (w >= 2 && S::dims[S::rank - 1] % w == 0 && L::vec % w == 0) ? w : 1;
  }
}

template <class S, class DM, class L = Cyclic<S::numel>, bool Vec = false, class T, int R>
TP_DEV Tile<T, S::numel, L> load(const View<T, R>& v, const int64_t (&idx)[R],
                                 T pad TP_VIEW_AT) {
#if TP_CPU_FAST
  if constexpr (S::rank > 0) return load_fast<S, DM, L>(v, idx, pad);
#endif
  constexpr int V = vec_width<S, L, T, Vec>();
  Tile<T, S::numel, L> r;
  TP_UNROLL
  for (int s0 = 0; s0 < L::K; s0 += V) {
    if (!L::valid(s0)) continue;
    if constexpr (V > 1) {   // the last dimension has unit stride
      int64_t off;
      const int n = chunk_span<S, DM, V, S::rank - 1>(v, idx, L::elem(s0), off);
      if (n == V) {
        vload<V>(&r.v[s0], TP_VADDR(v, off, V, "a load"));
      } else {
        TP_UNROLL
        for (int j = 0; j < V; ++j) r.v[s0 + j] = j < n ? *TP_VADDR(v, off + j, 1, "a load") : pad;
      }
    } else {
      const int64_t off = part_offset<S, DM>(v, idx, L::elem(s0));
      r.v[s0] = off >= 0 ? read_elem(TP_VADDR(v, off, 1, "a load")) : pad;
    }
  }
  return r;
}

template <class S, class DM, class T, int R>
TP_DEV T load_scalar(const View<T, R>& v, const int64_t (&idx)[R], T pad TP_VIEW_AT) {
  const int64_t off = part_offset<S, DM>(v, idx, 0);
  return off >= 0 ? read_elem(TP_VADDR(v, off, 1, "a load")) : pad;
}

template <class S, class DM, bool Vec = false, class T, int R, class L>
TP_DEV void store(const View<T, R>& v, const int64_t (&idx)[R], const Tile<T, S::numel, L>& x
                  TP_VIEW_AT) {
#if TP_CPU_FAST
  if constexpr (S::rank > 0) return store_fast<S, DM>(v, idx, x);
#endif
  constexpr int V = L::replicated ? 1 : vec_width<S, L, T, Vec>();
  TP_UNROLL
  for (int s0 = 0; s0 < L::K; s0 += V) {
    if (!L::owner(s0)) continue;
    if constexpr (V > 1) {   // the last dimension has unit stride
      int64_t off;
      const int n = chunk_span<S, DM, V, S::rank - 1>(v, idx, L::elem(s0), off);
      if (n == V) {
        vstore_global<V>(TP_VADDR(v, off, V, "a store"), &x.v[s0]);
      } else {   // n < V: the last element is outside
        TP_UNROLL
        for (int j = 0; j < V - 1; ++j)
          if (j < n) *TP_VADDR(v, off + j, 1, "a store") = x.v[s0 + j];
      }
    } else {
      const int64_t off = part_offset<S, DM>(v, idx, L::elem(s0));
      if (off >= 0) *TP_VADDR(v, off, 1, "a store") = x.v[s0];
    }
  }
}

template <class S, class DM, class T, int R>
TP_DEV void store_scalar(const View<T, R>& v, const int64_t (&idx)[R], T x TP_VIEW_AT) {
  if (tid() != 0) return;
  const int64_t off = part_offset<S, DM>(v, idx, 0);
  if (off >= 0) *TP_VADDR(v, off, 1, "a store") = x;
}

}  // namespace tp
// Undetermined padding: 0 here, a poison in the faithful CPU mode (tp::undetermined, check_stored).
#include "tilepy/poison.h"
namespace tp {

// ------------------------------------------------------------------------------ shared memory
// Each op below starts with a barrier (the previous user of the buffer is done reading), writes
// its operand, synchronizes, and reads what the calling thread needs. Operands may have any
// layout; results take the layout Lr the lowering asks for.
template <class T, int N, class L> TP_DEV void to_smem(T* buf, const Tile<T, N, L>& x) {
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::owner(s)) buf[L::elem(s)] = x.v[s];
  __syncthreads();
}

// The row-major elements of x, for an op that reads its operand through shared memory: in the
// fast CPU mode (identity layouts) the tile itself, elsewhere x copied into `buf`.
template <class T, int N, class L> TP_DEV const T* tile_buf(T* buf, const Tile<T, N, L>& x) {
#if TP_CPU_FAST
  return x.v;
#else
  to_smem(buf, x);
  return buf;
#endif
}
// A tile of layout Lr whose element e is get(e).
template <class T, int N, class Lr, class G> TP_DEV Tile<T, N, Lr> gather_elems(G get) {
  Tile<T, N, Lr> r;
  TP_UNROLL
  for (int s = 0; s < Lr::K; ++s)
    if (Lr::valid(s)) r.v[s] = get(Lr::elem(s));
  return r;
}

// broadcast: size-1 source dimensions are repeated to the result's extent.
template <class Src, class Dst, class Lr = Cyclic<Dst::numel>, class T, class L>
TP_DEV Tile<T, Dst::numel, Lr> broadcast(const Tile<T, Src::numel, L>& x, unsigned char* smem) {
#if TP_CPU_FAST
  if constexpr (Dst::rank > 0) return gather_strided<Dst, Lr>(x.v, broadcast_strides<Src, Dst>());
#endif
  const T* buf = tile_buf((T*)smem, x);
  return gather_elems<T, Dst::numel, Lr>([&](int e) {
    int c[Dst::rank];
    unravel<Dst>(e, c);
    int src = 0;
    TP_UNROLL
    for (int i = 0; i < Dst::rank; ++i) src = src * Src::dims[i] + (Src::dims[i] == 1 ? 0 : c[i]);
    return buf[src];
  });
}

// permute: result dim i is source dim P[i].
template <class Src, class P, class Dst, class Lr = Cyclic<Dst::numel>, class T, class L>
TP_DEV Tile<T, Dst::numel, Lr> permute(const Tile<T, Src::numel, L>& x, unsigned char* smem) {
#if TP_CPU_FAST
  if constexpr (Dst::rank > 0) return gather_strided<Dst, Lr>(x.v, permute_strides<Src, P, Dst>());
#endif
  const T* buf = tile_buf((T*)smem, x);
  return gather_elems<T, Dst::numel, Lr>([&](int e) {
    int c[Dst::rank], sc[Src::rank];
    unravel<Dst>(e, c);
    TP_UNROLL
    for (int i = 0; i < Dst::rank; ++i) sc[P::map[i]] = c[i];
    int src = 0;
    TP_UNROLL
    for (int i = 0; i < Src::rank; ++i) src = src * Src::dims[i] + sc[i];
    return buf[src];
  });
}

// The same tile in another layout, through shared memory.
template <class Lr, class T, int N, class L>
TP_DEV Tile<T, N, Lr> convert(const Tile<T, N, L>& x, unsigned char* smem) {
  if constexpr (same<L, Lr>::value) {
    return x;
  } else {
    const T* buf = tile_buf((T*)smem, x);
    return gather_elems<T, N, Lr>([&](int e) { return buf[e]; });
  }
}

// pack / unpack: a rank-1 tile's bytes as memory holds them, read as a rank-1 tile of another
// element type (one side is i8). A nibble type (e2m1, fp8.h) holds one value per register byte and
// two per memory byte, the first in the low 4 bits.
template <class T> struct is_nibble { static constexpr bool value = false; };
template <class T> constexpr int value_bits() { return is_nibble<T>::value ? 4 : 8 * (int)sizeof(T); }
// Element e of the result, from the source's row-major elements.
template <class R, class T> TP_DEV R repack_elem(const T* buf, int e) {
  if constexpr (is_nibble<T>::value) {            // pack: two values into byte e
    return (R)((buf[2 * e].bits & 15) | (buf[2 * e + 1].bits << 4));
  } else if constexpr (is_nibble<R>::value) {     // unpack: value e from a half of byte e / 2
    const uint8_t b = (uint8_t)buf[e / 2];
    return R{(uint8_t)((e & 1) ? b >> 4 : b & 15)};
  } else {
    R r;
    memcpy(&r, (const unsigned char*)buf + (size_t)e * sizeof(R), sizeof(R));
    return r;
  }
}
template <class R, int Nr, class Lr, class T>
TP_DEV auto repack_from(const T* buf) {
  if constexpr (Nr == 1) {
    return repack_elem<R>(buf, 0);
  } else {
    return gather_elems<R, Nr, Lr>([&](int e) { return repack_elem<R>(buf, e); });
  }
}
template <class R, int Nr, class Lr, class T, int N, class L>
TP_DEV auto repack(const Tile<T, N, L>& x, unsigned char* smem) {
  static_assert(N * value_bits<T>() == Nr * value_bits<R>(), "pack/unpack keeps the size");
  return repack_from<R, Nr, Lr>(tile_buf((T*)smem, x));
}
template <class R, int Nr, class Lr, class T>         // a one-element source: every thread's own
TP_DEV auto repack(const T& x, unsigned char*) {
  static_assert(value_bits<T>() == Nr * value_bits<R>(), "pack/unpack keeps the size");
  return repack_from<R, Nr, Lr>(&x);
}

// ------------------------------------------------------------------------------ folds: reduce, scan
// Tup<T...>: the values of several tiles' elements folded together (a reduce or scan of several
// tiles); a combiner of several tiles takes (Tup elements, Tup accumulators) and returns a Tup.
template <int... I> struct iseq {};
template <int N, int... I> struct iseq_of : iseq_of<N - 1, N - 1, I...> {};
template <int... I> struct iseq_of<0, I...> { typedef iseq<I...> type; };
template <int I, class T> struct TupLeaf { T v; };
template <class S, class... T> struct TupBase;
template <int... I, class... T> struct TupBase<iseq<I...>, T...> : TupLeaf<I, T>... {};
template <class... T> struct Tup : TupBase<typename iseq_of<sizeof...(T)>::type, T...> {};
template <int I, class T> TP_DEV T& tget(TupLeaf<I, T>& l) { return l.v; }
template <int I, class T> TP_DEV const T& tget(const TupLeaf<I, T>& l) { return l.v; }
template <class... T, int... I> TP_DEV void tup_fill(Tup<T...>& r, iseq<I...>, const T&... v) {
  ((tget<I>(r) = v), ...);
}
template <class... T> TP_DEV Tup<T...> tup(const T&... v) {
  Tup<T...> r;
  tup_fill<T...>(r, typename iseq_of<sizeof...(T)>::type(), v...);
  return r;
}
template <class... Lr> struct Lays {};
template <class Lrs, int R, class... T> struct FoldResult;
template <class... Lr, int R, class... T> struct FoldResult<Lays<Lr...>, R, T...> {
  typedef Tup<Tile<T, R, Lr>...> type;
};
template <class Lrs> struct first_lay;
template <class L0, class... Lr> struct first_lay<Lays<L0, Lr...>> { typedef L0 type; };

// A fold reads its operands through shared memory in chunks of fold_chunk elements (the whole
// tile when it fits kFoldScratch bytes), operand i's chunk at byte fold_off(i): the scratch is
// bounded whatever the tile's size (cuda_c/emitter.py fold_scratch computes the same bytes).
constexpr int kFoldScratch = 16384;
template <int N, class... T> constexpr int fold_chunk() {
  constexpr int per = (0 + ... + (int)sizeof(T));
  return N * per <= kFoldScratch ? N : kFoldScratch / per;
}
template <int CH> constexpr int fold_off(int) { return 0; }
template <int CH, class H, class... R> constexpr int fold_off(int i) {
  return i == 0 ? 0 : (CH * (int)sizeof(H) + 15) / 16 * 16 + fold_off<CH, R...>(i - 1);
}

// The elements [c0, c0 + CH) of x (row-major) that this thread owns, into buf.
template <int CH, class T, int N, class L>
TP_DEV void stage_range(T* buf, const Tile<T, N, L>& x, int c0) {
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) {
    if (!L::owner(s)) continue;
    const int e = L::elem(s) - c0;
    if (e >= 0 && e < CH) buf[e] = x.v[s];
  }
}
template <int CH, class... T, int N, class... L, int... I>
TP_DEV void stage_tiles(const Tup<T*...>& bufs, int c0, iseq<I...>, const Tile<T, N, L>&... xs) {
  __syncthreads();
  (stage_range<CH>(tget<I>(bufs), xs, c0), ...);
  __syncthreads();
}
template <int CH, class... T, int... I> TP_DEV Tup<T*...> fold_bufs(unsigned char* smem, iseq<I...>) {
  return tup<T*...>((T*)(smem + fold_off<CH, T...>(I))...);
}
template <class B, class... T, int... I>
TP_DEV Tup<T...> tup_load(const B& bufs, int e, iseq<I...>) {
  return tup<T...>(tget<I>(bufs)[e]...);
}
template <int R, class La, class... T, int... I>
TP_DEV Tup<T...> slot_get(const Tup<Tile<T, R, La>...>& a, int s, iseq<I...>) {
  return tup<T...>(tget<I>(a).v[s]...);
}
template <class Tiles, class V, int... I>
TP_DEV void slot_set(Tiles& a, int s, const V& v, iseq<I...>) {
  ((tget<I>(a).v[s] = tget<I>(v)), ...);
}

// A result folded in layout La, in layout Lr: through `buf` (CH elements) in chunks.
template <int CH, class La, class T, int R, class Lr>
TP_DEV void relayout(Tile<T, R, Lr>& r, const Tile<T, R, La>& a, T* buf) {
  if constexpr (same<La, Lr>::value) {
    r = a;
  } else if constexpr (TP_CPU_FAST) {        // identity layouts: slot e holds element e
    r = gather_elems<T, R, Lr>([&](int e) { return a.v[e]; });
  } else {
    for (int c0 = 0; c0 < R; c0 += CH) {
      __syncthreads();
      stage_range<CH>(buf, a, c0);
      __syncthreads();
      TP_UNROLL
      for (int s = 0; s < Lr::K; ++s) {
        const int e = Lr::elem(s) - c0;
        if (Lr::valid(s) && e >= 0 && e < CH) r.v[s] = buf[e];
      }
    }
  }
}
template <int CH, class La, class Res, class Acc, class B, int... I>
TP_DEV void relayout_all(Res& r, const Acc& acc, const B& bufs, iseq<I...>) {
  (relayout<CH, La>(tget<I>(r), tget<I>(acc), tget<I>(bufs)), ...);
}

// Fold several tiles of shape Src along D together with f(Tup elements, Tup accumulators), from
// `ident`: a reduce (Scan false: one result per line, a Tup of scalars when there is one line)
// or an inclusive scan (Scan true: r[j] = f(x[j], r[j-1]), Reverse from the last index down);
// results in the layouts Lrs. Each result folds its line in element order, as the interpreter
// (a whole-tile reduce: every thread folds every element), so a combiner that is not associative
// gives the same result on every backend.
template <class Src, int D, bool Scan, bool Reverse, class Lrs, class... T, class F, class... L>
TP_DEV auto fold_tiles(const Tup<T...>& ident, unsigned char* smem, F f,
                       const Tile<T, Src::numel, L>&... xs) {
  constexpr int N = Src::numel, n = Src::dims[D], R = Scan ? N : N / n;
  constexpr int inner_n = [] { int q = 1; for (int i = D + 1; i < Src::rank; ++i) q *= Src::dims[i]; return q; }();
  typedef typename iseq_of<sizeof...(T)>::type Is;
#if TP_CPU_FAST
  constexpr int CH = N;                        // one chunk: the tiles themselves, row-major
  const Tup<const T*...> bufs = tup<const T*...>(xs.v...);
  Tup<T*...> wbufs;                            // relayout needs none (identity layouts)
  auto stage = [&](int) {};
  (void)smem;
#else
  constexpr int CH = fold_chunk<N, T...>();
  const Tup<T*...> wbufs = fold_bufs<CH, T...>(smem, Is());
  const Tup<T*...>& bufs = wbufs;
  auto stage = [&](int c0) { stage_tiles<CH>(wbufs, c0, Is(), xs...); };
#endif
  constexpr int chunks = (N + CH - 1) / CH;
#if TP_CPU_FAST
  if constexpr (Scan) {          // one pass per line, as scan_fast (identity layouts)
    typename FoldResult<Lrs, R, T...>::type r;
    for (int o = 0; o < N / (n * inner_n); ++o)
      for (int i = 0; i < inner_n; ++i) {
        Tup<T...> v = ident;
        for (int kk = 0; kk < n; ++kk) {
          const int e = (o * n + (Reverse ? n - 1 - kk : kk)) * inner_n + i;
          v = f(tup_load<decltype(bufs), T...>(bufs, e, Is()), v);
          slot_set(r, e, v, Is());
        }
      }
    return r;
  }
#endif
  if constexpr (!Scan && R == 1) {
    Tup<T...> total = ident;
    for (int c = 0; c < chunks; ++c) {
      const int c0 = c * CH, len = N - c0 < CH ? N - c0 : CH;
      stage(c0);
      for (int e = 0; e < len; ++e) total = f(tup_load<decltype(bufs), T...>(bufs, e, Is()), total);
    }
    return total;
  } else {
    typedef typename first_lay<Lrs>::type La;
    Tup<Tile<T, R, La>...> acc;
    TP_UNROLL
    for (int s = 0; s < La::K; ++s) slot_set(acc, s, ident, Is());
    // Slot s's line and the part of it [k_lo, k_hi) it folds.
    auto step = [&](int s, int c0, int len) {
      if (!La::valid(s)) return;
      const int o = La::elem(s), inner = o % inner_n;
      const int outer = Scan ? o / (n * inner_n) : o / inner_n, j = (o / inner_n) % n;
      const int k_lo = Scan && Reverse ? j : 0, k_hi = Scan && !Reverse ? j + 1 : n;
      const int base = outer * n * inner_n + inner;
      const int a = c0 <= base ? 0 : (c0 - base + inner_n - 1) / inner_n;
      const int b = c0 + len <= base ? 0 : (c0 + len - base + inner_n - 1) / inner_n;
      const int lo = a > k_lo ? a : k_lo, hi = b < k_hi ? b : k_hi;
      if (lo >= hi) return;
      Tup<T...> v = slot_get<R, La>(acc, s, Is());
      if (Reverse)
        for (int k = hi - 1; k >= lo; --k) v = f(tup_load<decltype(bufs), T...>(bufs, base + k * inner_n - c0, Is()), v);
      else
        for (int k = lo; k < hi; ++k) v = f(tup_load<decltype(bufs), T...>(bufs, base + k * inner_n - c0, Is()), v);
      slot_set(acc, s, v, Is());
    };
    for (int cc = 0; cc < chunks; ++cc) {
      const int c0 = (Reverse ? chunks - 1 - cc : cc) * CH, len = N - c0 < CH ? N - c0 : CH;
      stage(c0);
      if constexpr (La::K <= 32) {
        TP_UNROLL
        for (int s = 0; s < La::K; ++s) step(s, c0, len);
      } else {
        TP_ROLLED
        for (int s = 0; s < La::K; ++s) step(s, c0, len);
      }
    }
    typename FoldResult<Lrs, R, T...>::type r;
    relayout_all<CH, La>(r, acc, wbufs, Is());
    return r;
  }
}

// reduce of one tile along D with f(element, accumulator): a scalar when one line, else a tile of
// layout Lr (layout_ops.h reduce_to takes this path where no register path applies).
template <class Src, int D, class Lr = Cyclic<Src::numel / Src::dims[D]>, class T, class L, class F>
TP_DEV auto reduce(const Tile<T, Src::numel, L>& x, T ident, unsigned char* smem, F f) {
  auto g = [&](const Tup<T>& e, const Tup<T>& a) { return tup<T>(f(tget<0>(e), tget<0>(a))); };
  return tget<0>(fold_tiles<Src, D, false, false, Lays<Lr>>(tup<T>(ident), smem, g, x));
}

// Inclusive scan of one tile along D: r[j] = f(x[j], r[j-1]) with r[-1] = ident; Reverse runs
// from the last index down.
template <class Src, int D, bool Reverse, class Lr = Cyclic<Src::numel>, class T, class L, class F>
TP_DEV Tile<T, Src::numel, Lr> scan(const Tile<T, Src::numel, L>& x, T ident, unsigned char* smem, F f) {
#if TP_CPU_FAST
  return scan_fast<Src, D, Reverse, Lr>(x, ident, f);
#endif
  auto g = [&](const Tup<T>& e, const Tup<T>& a) { return tup<T>(f(tget<0>(e), tget<0>(a))); };
  return tget<0>(fold_tiles<Src, D, true, Reverse, Lays<Lr>>(tup<T>(ident), smem, g, x));
}

// C[MxN] = A[MxK] @ B[KxN] + C, products and sums in float (double for f64; for i8 operands in
// 32-bit integers that wrap, Flags bit 0 / 1: lhs / rhs signed): the generic path for
// accumulators in any layout (tensorcore.h has the mma.sync one).
template <class TC, class Acc> TP_DEV TC from_acc(Acc x) {
  if constexpr (same<Acc, uint32_t>::value) return (TC)(int32_t)x;
  else return cvt<TC>(x);
}
template <class Acc, class TC> TP_DEV Acc to_acc(TC x) {
  if constexpr (same<Acc, uint32_t>::value) return (uint32_t)(int32_t)x;
  else return cvt<Acc>(x);
}
template <class Acc, bool Signed, class T> TP_DEV Acc mma_operand(T x) {
  if constexpr (same<Acc, uint32_t>::value) {
    return Signed ? (Acc)(int32_t)x : (Acc)(uint8_t)x;
  } else {
    return cvt<Acc>(x);
  }
}
#if TP_CPU_FAST
template <int Bt, int M, int N, int K, class Acc, bool PlainA, bool PlainB, int KC, class TC,
          class L, class OA, class OB, class FA, class FB>
TP_DEV void mma_fast(const OA& A, const OB& B, const Tile<TC, Bt * M * N, L>& c,
                     Tile<TC, Bt * M * N, L>& r, FA mv_a, FB mv_b);   // tilepy/cpu_gemm.h
#endif
// The operands of a generic (shared-memory) mma as row-major arrays in their own types, at A and
// B, then a barrier: every element is written. The caller's barrier before it keeps the
// scratch's earlier readers apart (generic mma, mma_scaled.h).
template <class TA, int NA, class LA, class TB, int NB, class LB>
TP_DEV void stage_operands(TA* A, TB* B, const Tile<TA, NA, LA>& a, const Tile<TB, NB, LB>& b) {
  TP_UNROLL
  for (int s = 0; s < LA::K; ++s)
    if (LA::owner(s)) A[LA::elem(s)] = a.v[s];
  TP_UNROLL
  for (int s = 0; s < LB::K; ++s)
    if (LB::owner(s)) B[LB::elem(s)] = b.v[s];
  __syncthreads();
}
// Batch > 1: Batch independent products of [Batch x M x K] @ [Batch x K x N] (batched mma).
template <int M, int N, int K, int Flags = 3, int Batch = 1, class TA, class TC, class LA,
          class LB, class LC>
TP_DEV Tile<TC, Batch * M * N, LC> mma(const Tile<TA, Batch * M * K, LA>& a,
                                       const Tile<TA, Batch * K * N, LB>& b,
                                       const Tile<TC, Batch * M * N, LC>& c, unsigned char* smem) {
  typedef typename cond<same<TC, int32_t>::value, uint32_t,
                        typename cond<same<TC, double>::value, double, float>::type>::type Acc;
#if TP_CPU_FAST
  Tile<TC, Batch * M * N, LC> out;
  mma_fast<Batch, M, N, K, Acc, false, false, 0>(   // summed in order, as the GPU's loop below
      a, b, c, out, [](TA x) { return mma_operand<Acc, (Flags & 1) != 0>(x); },
      [](TA x) { return mma_operand<Acc, (Flags & 2) != 0>(x); });
  return out;
#endif
  TA* A = (TA*)smem;
  TA* B = A + Batch * M * K;
  __syncthreads();
  stage_operands(A, B, a, b);
  Tile<TC, Batch * M * N, LC> r;
  TP_UNROLL
  for (int s = 0; s < LC::K; ++s) {
    if (!LC::valid(s)) continue;
    const int e = LC::elem(s), i = e / (M * N), m = e / N % M, n = e % N;
    const TA* Ai = A + i * M * K;
    const TA* Bi = B + i * K * N;
    Acc acc = to_acc<Acc>(c.v[s]);
    for (int k = 0; k < K; ++k)
      acc += mma_operand<Acc, (Flags & 1) != 0>(Ai[m * K + k]) *
             mma_operand<Acc, (Flags & 2) != 0>(Bi[k * N + n]);
    r.v[s] = from_acc<TC>(acc);
  }
  return r;
}

// mma whose accumulator has one element (a [1 x K] @ [K x 1] product: cuTile's matmul of two
// vectors): every thread sums the K products in order, as mma() above, and holds the result.
template <int K, int Flags, class TA, class LA, class LB, class TC>
TP_DEV TC mma_dot(const Tile<TA, K, LA>& a, const Tile<TA, K, LB>& b, TC c, unsigned char* smem) {
  typedef typename cond<same<TC, int32_t>::value, uint32_t,
                        typename cond<same<TC, double>::value, double, float>::type>::type Acc;
  const TA* A = tile_buf((TA*)smem, a);
  const TA* B = tile_buf((TA*)smem + K, b);
  Acc acc = to_acc<Acc>(c);
  for (int k = 0; k < K; ++k)
    acc += mma_operand<Acc, (Flags & 1) != 0>(A[k]) * mma_operand<Acc, (Flags & 2) != 0>(B[k]);
  return from_acc<TC>(acc);
}

// ------------------------------------------------------------------------------ scalar ops
// Functors applied element-wise by ew(). Half types compute in float and round once, which is
// exactly what IEEE f16/bf16 arithmetic gives for + - * / and sqrt.
template <class T> TP_DEV auto wide(T x) {
  if constexpr (is_half<T>::value) return to_f32(x); else return x;
}
template <class T, class W> TP_DEV T narrow(W x) {
  if constexpr (is_half<T>::value) return from_f32<T>(x); else return (T)x;
}
TP_DEV bool is_nan(float x) { return x != x; }
TP_DEV bool is_nan(double x) { return x != x; }
// The sign bit, read from the bits: g++ 12 crashes (ICE in FRE's eliminate_stmt) on signbit() of
// a value it knows is fabs(y) once the loops around both are vectorized, as in minf(absf(y), y).
TP_DEV bool sign_bit(float x) { return __float_as_int(x) < 0; }
TP_DEV bool sign_bit(double x) { return __double_as_longlong(x) < 0; }

namespace op {
#define TP_FBIN(NAME, EXPR)                                                           \
  struct NAME {                                                                       \
    template <class T> TP_DEV T operator()(T a_, T b_) const {                        \
      auto a = wide(a_); auto b = wide(b_); return narrow<T>(EXPR);                   \
    }                                                                                 \
  };
#define TP_FUN(NAME, F32, F64)                                                        \
  struct NAME {                                                                       \
    template <class T> TP_DEV T operator()(T a_) const {                              \
      auto a = wide(a_);                                                              \
      if constexpr (same<decltype(a), double>::value) return F64(a);                  \
      else return narrow<T>(F32(a));                                                  \
    }                                                                                 \
  };
TP_FBIN(addf, a + b)
TP_FBIN(subf, a - b)
TP_FBIN(mulf, a * b)
TP_FBIN(divf, a / b)
TP_FBIN(remf, fmod(a, b))
TP_FBIN(pow, ::pow(a, b))
TP_FBIN(atan2, ::atan2(a, b))
// fpowi (dialect 13.4): a float raised to a signed integer power; i1 is signed (true is -1).
struct fpowi {
  template <class T, class I> TP_DEV T operator()(T a_, I e) const {
    auto a = wide(a_);
    using W = decltype(a);
    const W n = same<I, bool>::value ? (e ? W(-1) : W(0)) : W(e);
    return narrow<T>(::pow(a, n));
  }
};
// fma rounds once: f32/f64 natively; f16/bf16 as the exact product (in double) plus c, rounded
// to odd in double (two-sum error), then to odd in float, then to nearest in the half type.
struct fma {
  template <class T> TP_DEV T operator()(T a, T b, T c) const {
    if constexpr (is_half<T>::value) {
      const double p = (double)to_f32(a) * (double)to_f32(b), z = (double)to_f32(c);
      double s = p + z;
      const double bb = s - p, e = (p - (s - bb)) + (z - bb);
      if (e != 0 && e == e && s - s == 0) {
        long long bits;
        memcpy(&bits, &s, 8);
        if ((bits & 1) == 0) bits += ((e > 0) == (s > 0)) ? 1 : -1;
        memcpy(&s, &bits, 8);
      }
      return from_f32<T>(ro_f32(s));
    } else if constexpr (same<T, float>::value) {
      return fmaf(a, b, c);
    } else {
      return ::fma(a, b, c);
    }
  }
};
TP_FUN(exp, expf, ::exp)
TP_FUN(exp2, exp2f, ::exp2)
TP_FUN(log, logf, ::log)
TP_FUN(log2, log2f, ::log2)
TP_FUN(sqrt, sqrtf, ::sqrt)
TP_FUN(rsqrt, rsqrtf, 1.0 / ::sqrt)
TP_FUN(sin, sinf, ::sin)
TP_FUN(cos, cosf, ::cos)
TP_FUN(tan, tanf, ::tan)
TP_FUN(sinh, sinhf, ::sinh)
TP_FUN(cosh, coshf, ::cosh)
TP_FUN(tanh, tanhf, ::tanh)
TP_FUN(floor, floorf, ::floor)
TP_FUN(ceil, ceilf, ::ceil)
TP_FUN(absf, fabsf, ::fabs)
struct negf {
  template <class T> TP_DEV T operator()(T a) const { return narrow<T>(-wide(a)); }
};
// maxf/minf: IEEE 754-2019 maximumNumber (NaN-ignoring) or maximum (propagate_nan); +0 > -0.
// Written as selects, not branches, so that loops of it vectorize. On sm_80+ GPUs f32 (and f16 /
// bf16, exactly widened) is one instruction: PTX max/min return the non-NaN operand and order
// -0 below +0, and their .NaN form returns NaN if either operand is NaN; the NaN they return is
// the GPU's canonical one (0x7fffffff).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <bool Max, bool PropagateNan> TP_DEV float minmax_f32(float a, float b) {
  if constexpr (!PropagateNan) return Max ? fmaxf(a, b) : fminf(a, b);
  float r;
  if constexpr (Max) asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  else asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif
template <bool Max, bool PropagateNan> struct minmaxf {
  template <class T> TP_DEV T operator()(T a_, T b_) const {
#if defined(TP_FAITHFUL)            // undetermined padding's poison is kept (poison.h)
    if (poison::site_of(a_)) return a_;
    if (poison::site_of(b_)) return b_;
#endif
    auto a = wide(a_), b = wide(b_);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (same<decltype(a), float>::value) return narrow<T>(minmax_f32<Max, PropagateNan>(a, b));
#endif
    const bool na = is_nan(a), nb = is_nan(b);
    const T nan = narrow<T>((decltype(a))nan_f32());   // a canonical NaN (spec 8.7.16)
    T r = (Max ? a > b : a < b) ? a_ : b_;
    r = a == b ? ((sign_bit(a) == Max) ? b_ : a_) : r;
    r = nb ? (PropagateNan ? nan : a_) : r;
    return na ? ((PropagateNan || nb) ? nan : b_) : r;
  }
};
template <bool N> using maxf = minmaxf<true, N>;
template <bool N> using minf = minmaxf<false, N>;

// Integers are signless: signedness is a template argument; wrap-around arithmetic is done in
// the unsigned type (signed overflow is undefined in C++).
#define TP_IBIN(NAME, EXPR)                                                           \
  struct NAME {                                                                       \
    template <class T> TP_DEV T operator()(T a_, T b_) const {                        \
      auto a = uread(a_), b = uread(b_); return wrap_to<T>(EXPR);                     \
    }                                                                                 \
  };
TP_IBIN(addi, a + b)
TP_IBIN(subi, a - b)
TP_IBIN(muli, a * b)
TP_IBIN(andi, a & b)
TP_IBIN(ori, a | b)
TP_IBIN(xori, a ^ b)
struct negi {
  template <class T> TP_DEV T operator()(T a) const {
    return wrap_to<T>(decltype(uread(a))(0) - uread(a));
  }
};
struct absi {
  template <class T> TP_DEV T operator()(T a) const { return a < 0 ? negi{}(a) : a; }
};
// Shift amounts are read unsigned; amounts >= the bit width clamp (as PTX shl/shr do).
struct shli {
  template <class T> TP_DEV T operator()(T a, T b) const {
    return uread(b) >= (unsigned)int_bits<T>() ? T(0) : wrap_to<T>(uread(a) << uread(b));
  }
};
template <bool Signed> struct shri {
  template <class T> TP_DEV T operator()(T a, T b) const {
    const bool big = uread(b) >= (unsigned)int_bits<T>();
    if (Signed) return wrap_to<T>(sread(a) >> (big ? int_bits<T>() - 1 : (int)uread(b)));
    return big ? T(0) : wrap_to<T>(uread(a) >> uread(b));
  }
};
// Rounding: 0 toward zero, 1 toward -inf (floor division), 2 toward +inf (ceiling division).
// Division by zero is undefined in Tile IR; here it gives 0 instead of trapping on the CPU.
template <bool Signed, int Rounding> struct divi {
  template <class T> TP_DEV T operator()(T a, T b) const {
    if (b == 0) return T(0);
    if (!Signed) {
      const auto q = uread(a) / uread(b), r = uread(a) % uread(b);
      return wrap_to<T>((Rounding == 2 && r) ? q + 1 : q);
    }
    const auto x = sread(a), y = sread(b);
    if (y == -1) return negi{}(a);
    auto q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) { if (Rounding == 1) q -= 1; }
    else if (r != 0 && Rounding == 2) q += 1;
    return wrap_to<T>(q);
  }
};
template <bool Signed> struct remi {
  template <class T> TP_DEV T operator()(T a, T b) const {
    if (b == 0) return T(0);
    if (!Signed) return wrap_to<T>(uread(a) % uread(b));
    if (sread(b) == -1) return T(0);
    return wrap_to<T>(sread(a) % sread(b));
  }
};
template <bool Max, bool Signed> struct minmaxi {
  template <class T> TP_DEV T operator()(T a, T b) const {
    typedef typename unsigned_of<T>::type U;
    const bool less = Signed ? sread(a) < sread(b) : uread(a) < uread(b);
    return (less == Max) ? b : a;
  }
};
template <bool S> using maxi = minmaxi<true, S>;
template <bool S> using mini = minmaxi<false, S>;

// Comparisons. Predicates: 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=.
template <int P, bool Ordered> struct cmpf {
  template <class T> TP_DEV bool operator()(T a_, T b_) const {
    auto a = wide(a_), b = wide(b_);
    if (is_nan(a) || is_nan(b)) return !Ordered;
    switch (P) {
      case 0: return a == b; case 1: return a != b; case 2: return a < b;
      case 3: return a <= b; case 4: return a > b; default: return a >= b;
    }
  }
};
template <int P, bool Signed> struct cmpi {
  template <class T> TP_DEV bool operator()(T a, T b) const {
    if (!Signed) return cmp(uread(a), uread(b));
    return cmp(sread(a), sread(b));
  }
  template <class V> TP_DEV static bool cmp(V a, V b) {
    switch (P) {
      case 0: return a == b; case 1: return a != b; case 2: return a < b;
      case 3: return a <= b; case 4: return a > b; default: return a >= b;
    }
  }
};
struct select {
  template <class T> TP_DEV T operator()(bool c, T a, T b) const { return c ? a : b; }
};

// Conversions (signless integers carry signedness in the template argument).
template <class To> struct ftof {
  template <class T> TP_DEV To operator()(T a) const { return cvt<To>(wide(a)); }
};
template <class To, bool Signed> struct itof {
  template <class T> TP_DEV To operator()(T a) const {
    if (Signed) return from_int<To>((int64_t)sread(a)); else return from_uint<To>((uint64_t)uread(a));
  }
};
// ftoi: round toward zero, saturate to the target range, NaN -> 0 (spec 8.4.4).
template <class To, bool Signed> struct ftoi {
  template <class T> TP_DEV To operator()(T a_) const {
    constexpr int B = int_bits<To>();
    const double a = (double)wide(a_);
    if (a != a) return To(0);
    const double lo = Signed ? -ldexp(1.0, B - 1) : 0.0;              // representable bounds
    const double hi = Signed ? ldexp(1.0, B - 1) : ldexp(1.0, B);     // (exclusive)
    if (a <= lo) return Signed ? wrap_to<To>(uint64_t(1) << (B - 1)) : To(0);
    if (a >= hi) return Signed ? wrap_to<To>((uint64_t(1) << (B - 1)) - 1) : wrap_to<To>(~uint64_t(0));
    return Signed ? wrap_to<To>((int64_t)a) : wrap_to<To>((uint64_t)a);
  }
};
template <class To, bool Signed> struct exti {
  template <class T> TP_DEV To operator()(T a) const {
    return Signed ? (To)sread(a) : (To)uread(a);
  }
};
template <class To> struct trunci {
  template <class T> TP_DEV To operator()(T a) const {
    typedef typename unsigned_of<T>::type U;
    if constexpr (same<To, bool>::value) return ((U)a & 1) != 0; else return (To)(U)a;
  }
};
// f32/f16/bf16 -> tf32 (kept in a float): round to nearest even to 10 mantissa bits (f16 and
// bf16 values are exact in a float); NaN stays NaN. f64 -> tf32 rounds once, from the double:
// to 10 mantissa bits where tf32 is normal, to multiples of 2^-136 below 2^-126 (its subnormals:
// adding and taking back 1.5 * 2^-84, whose ulp that is); a result past tf32's range is +-Inf.
struct to_tf32 {
  TP_DEV float operator()(double a) const {
    if (is_nan(a)) return (float)a;
    if (a < 0x1p-126 && a > -0x1p-126) {
      const double magic = 0x1.8p-84;
      return (float)((a + magic) - magic);
    }
    uint64_t u;
    memcpy(&u, &a, 8);
    u = (u + 0x1ffffffffffull + ((u >> 42) & 1u)) & ~0x3ffffffffffull;
    double r;
    memcpy(&r, &u, 8);
    return (float)r;
  }
  template <class T> TP_DEV float operator()(T a_) const {
    const float a = wide(a_);
    uint32_t u;
    memcpy(&u, &a, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;
    else u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    float r;
    memcpy(&r, &u, 4);
    return r;
  }
};
template <class To> struct bitcast {
  template <class T> TP_DEV To operator()(T a) const {
    static_assert(sizeof(T) == sizeof(To), "bitcast needs equal sizes");
    To r; memcpy(&r, &a, sizeof(To)); return r;
  }
};
}  // namespace op

// Padding values of partition views.
template <class T> TP_DEV T pad_value(float x) {
  if constexpr (is_half<T>::value) return from_f32<T>(x);
  else return (T)x;
}

// ==============================================================================================
// The sections below serve the rest of the kernel language: element-space memory (gather /
// scatter through tiles of pointers), atomics, extract / cat, scan, reductions of two tiles
// (argmax), printing and assertions. Like the ops above they work for any TP_NT: data moves
// between threads only through shared memory, between barriers that every thread reaches.
// ==============================================================================================

// ------------------------------------------------------------------------------ pointers
// Pointer values are spelled tp::ptr<T> so that `const tp::ptr<T> p` (how the emitter declares
// values) is a constant pointer to writable memory, not a pointer to const.
template <class T> using ptr = T*;

// Loading i1 reads a byte (nonzero is true); storing writes 0 or 1 (spec 8.6.2).
template <class T> TP_DEV T ld(const T* p) {
  if constexpr (same<T, bool>::value) return *(const unsigned char*)p != 0; else return *p;
}
template <class T> TP_DEV void st(T* p, T v) {
  if constexpr (same<T, bool>::value) *(unsigned char*)p = v ? 1 : 0; else *p = v;
}

// On the CPU every element-space access (load_ptr, store_ptr, atomics) is checked against the
// array arguments (cpu_shim.h: check_address) and reported at the user's line (`at`, taken at
// the call site); on a GPU there is no check (out of bounds is undefined, as the spec says).
#ifdef TP_GPU
#define TP_AT
#define TP_AT_MEMBER
#define TP_OK(p) true
#else
#define TP_AT , cpu::Caller at = cpu::caller()
#define TP_AT_MEMBER cpu::Caller at = cpu::caller();
#define TP_OK(p) cpu::check_address(p, sizeof(*(p)), at)
#endif

// Tile IR's `alloca ... global`: `bytes` of device memory any tile block may reach, aligned to
// `align`, alive until the end of the Tile IR block the alloca is in (this object's C++ scope,
// left by every thread of the block together). Thread 0 takes it from the heap (device malloc
// on a GPU) and hands it to the block through a shared-memory `slot`; a request the heap cannot
// meet traps (the dialect's rule; on the CPU an error at the user's line, the pointer null).
template <class T> struct GlobalAlloca {
  void* raw;
  T* ptr;
  TP_DEV GlobalAlloca(unsigned long long bytes, unsigned long long align, void** slot TP_AT) {
    if (tid() == 0) {
      void* r = malloc(bytes + align);
#ifdef TP_GPU
      if (r == nullptr) __trap();
#else
      if (r == nullptr) cpu::alloca_failed(bytes, at);
#endif
      *slot = r;
    }
    __syncthreads();
    raw = *slot;  // the op runs again (a loop) only after the destructor's barrier
    const unsigned long long a = reinterpret_cast<unsigned long long>(raw) + align - 1;
    ptr = raw == nullptr ? nullptr : reinterpret_cast<T*>(a & ~(align - 1));
  }
  TP_DEV ~GlobalAlloca() {
    __syncthreads();  // every thread of the block is done with it
    if (tid() == 0) free(raw);
  }
  GlobalAlloca(const GlobalAlloca&) = delete;
  GlobalAlloca& operator=(const GlobalAlloca&) = delete;
};

namespace op {
struct offset {  // ptr + offset elements (the CPU tracks the array it came from: cpu_shim.h)
#ifdef TP_GPU
  template <class P, class I> TP_DEV P operator()(P p, I o) const { return p + (int64_t)o; }
#else
  template <class P, class I> P operator()(P p, I o) const { return cpu::offset_ptr(p, (int64_t)o); }
#endif
};
// load_ptr_as / store_ptr<A>: A is the access, plain_access here (ld, st); ordered.h's
// strong_access makes the same loads and stores strong (load_ptr_strong, store_ptr<strong_access>)
template <class A> struct load_ptr_as {  // masked-off elements take the padding value
  TP_AT_MEMBER
  template <class T> TP_DEV T operator()(T* p) const { return TP_OK(p) ? A::load(p) : T(); }
  template <class T> TP_DEV T operator()(T* p, bool m) const {
    return m && TP_OK(p) ? A::load(p) : T();
  }
  template <class T> TP_DEV T operator()(T* p, bool m, T pad) const {
    return !m ? pad : TP_OK(p) ? A::load(p) : T();
  }
};
}  // namespace op

struct plain_access {
  template <class T> static TP_DEV T load(const T* p) { return ld(p); }
  template <class T> static TP_DEV void store(T* p, T v) { st(p, v); }
};
namespace op { typedef load_ptr_as<plain_access> load_ptr; }

// store_ptr: each thread stores its own elements; a one-element tile is stored by thread 0.
template <class A = plain_access, class T, int N, class L>
TP_DEV void store_ptr(const Tile<T*, N, L>& p, const Tile<T, N, L>& v TP_AT) {
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::owner(s) && TP_OK(p.v[s])) A::store(p.v[s], v.v[s]);
}
template <class A = plain_access, class T, int N, class L>
TP_DEV void store_ptr(const Tile<T*, N, L>& p, const Tile<T, N, L>& v,
                      const Tile<bool, N, L>& m TP_AT) {
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::owner(s) && m.v[s] && TP_OK(p.v[s])) A::store(p.v[s], v.v[s]);
}
template <class A = plain_access, class T> TP_DEV void store_ptr(T* p, T v TP_AT) {
  if (tid() == 0 && TP_OK(p)) A::store(p, v);
}
template <class A = plain_access, class T> TP_DEV void store_ptr(T* p, T v, bool m TP_AT) {
  if (tid() == 0 && m && TP_OK(p)) A::store(p, v);
}

// ------------------------------------------------------------------------------ atomics
// Modes (atomic_rmw_tko): 0 and, 1 or, 2 xor, 3 add, 4 addf, 5 max, 6 min, 7 umax, 8 umin, 9 xchg.
// Orders: 0 relaxed, 1 acquire, 2 release, 3 acq_rel. Scopes: 0 tile block, 1 device (device-scope
// atomics serve both: they are at least as strong as block scope), 2 system (atomic*_system, atom
// .sys: atomic also against the host and peer GPUs; the CPU backend's atomics are process-wide).
// On the GPU an ordering is the relaxed atomic plus a fence of the scope (__threadfence or
// __threadfence_system) before (release) / after (acquire), the PTX memory model's fence-based
// release and acquire patterns.
template <int S> struct bits_of;
template <> struct bits_of<2> { typedef uint16_t type; };
template <> struct bits_of<4> { typedef uint32_t type; };
template <> struct bits_of<8> { typedef uint64_t type; };

template <int Mode, class T> TP_DEV T rmw_apply(T x, T v) {
  typedef typename bits_of<sizeof(T)>::type U;
  if constexpr (Mode == 4) {
    return narrow<T>(wide(x) + wide(v));
  } else if constexpr (Mode == 9) {
    return v;
  } else {
    const U a = (U)x, b = (U)v;
    switch (Mode) {
      case 0: return (T)(a & b);
      case 1: return (T)(a | b);
      case 2: return (T)(a ^ b);
      case 3: return (T)(a + b);
      case 5: return x > v ? x : v;
      case 6: return x < v ? x : v;
      case 7: return a > b ? x : v;
      default: return a < b ? x : v;
    }
  }
}

#ifdef TP_GPU
template <int Scope> TP_DEV void fence() { if (Scope == 2) __threadfence_system(); else __threadfence(); }
template <int Order, int Scope> TP_DEV void fence_before() { if (Order == 2 || Order == 3) fence<Scope>(); }
template <int Order, int Scope> TP_DEV void fence_after() { if (Order == 1 || Order == 3) fence<Scope>(); }

// F(args), or F_system(args) at system scope
#define TP_ATOM(F, ...) (Scope == 2 ? F##_system(__VA_ARGS__) : F(__VA_ARGS__))
// f16/bf16 add at system scope (CUDA has no atomicAdd_system for them): PTX atom.sys
template <class T> TP_DEV T atom_add_sys(T* p, T v) {
  unsigned short r, b = *(unsigned short*)&v;
  if constexpr (same<T, __half>::value)
    asm volatile("atom.sys.add.noftz.f16 %0, [%1], %2;" : "=h"(r) : "l"(p), "h"(b) : "memory");
  else
    asm volatile("atom.sys.add.noftz.bf16 %0, [%1], %2;" : "=h"(r) : "l"(p), "h"(b) : "memory");
  return *(T*)&r;
}

template <int Mode, int Scope, class T> TP_DEV T gpu_rmw(T* p, T v) {
  typedef unsigned long long ull;
  if constexpr (same<T, int32_t>::value) {
    unsigned* u = (unsigned*)p;
    switch (Mode) {
      case 0: return TP_ATOM(atomicAnd, p, v);
      case 1: return TP_ATOM(atomicOr, p, v);
      case 2: return TP_ATOM(atomicXor, p, v);
      case 3: return TP_ATOM(atomicAdd, p, v);
      case 5: return TP_ATOM(atomicMax, p, v);
      case 6: return TP_ATOM(atomicMin, p, v);
      case 7: return (T)TP_ATOM(atomicMax, u, (unsigned)v);
      case 8: return (T)TP_ATOM(atomicMin, u, (unsigned)v);
      default: return TP_ATOM(atomicExch, p, v);
    }
  } else if constexpr (same<T, int64_t>::value) {
    ull* u = (ull*)p;
    switch (Mode) {
      case 0: return (T)TP_ATOM(atomicAnd, u, (ull)v);
      case 1: return (T)TP_ATOM(atomicOr, u, (ull)v);
      case 2: return (T)TP_ATOM(atomicXor, u, (ull)v);
      case 3: return (T)TP_ATOM(atomicAdd, u, (ull)v);
      case 5: return (T)TP_ATOM(atomicMax, (long long*)p, (long long)v);
      case 6: return (T)TP_ATOM(atomicMin, (long long*)p, (long long)v);
      case 7: return (T)TP_ATOM(atomicMax, u, (ull)v);
      case 8: return (T)TP_ATOM(atomicMin, u, (ull)v);
      default: return (T)TP_ATOM(atomicExch, u, (ull)v);
    }
  } else if constexpr (same<T, double>::value) {
    if constexpr (Mode == 4) return TP_ATOM(atomicAdd, p, v);
    else return __longlong_as_double((long long)TP_ATOM(atomicExch, (ull*)p,
                                                        (ull)__double_as_longlong(v)));
  } else if constexpr (same<T, float>::value) {
    static_assert(Mode == 4 || Mode == 9, "atomic mode not supported for this type");
    if constexpr (Mode == 4) return TP_ATOM(atomicAdd, p, v);
    else return TP_ATOM(atomicExch, p, v);
  } else {
    static_assert(Mode == 4, "atomic mode not supported for this type");
    if constexpr (Scope == 2) return atom_add_sys(p, v);
    else return atomicAdd(p, v);                          // __half, __nv_bfloat16
  }
}

template <int Scope, class T> TP_DEV T gpu_cas(T* p, T cmp, T val) {
  typedef unsigned long long ull;
  if constexpr (same<T, int32_t>::value) return TP_ATOM(atomicCAS, p, cmp, val);
  else if constexpr (same<T, int64_t>::value) return (T)TP_ATOM(atomicCAS, (ull*)p, (ull)cmp, (ull)val);
  else if constexpr (same<T, float>::value)
    return __int_as_float(TP_ATOM(atomicCAS, (int*)p, __float_as_int(cmp), __float_as_int(val)));
  else
    return __longlong_as_double((long long)TP_ATOM(atomicCAS, (ull*)p, (ull)__double_as_longlong(cmp),
                                                   (ull)__double_as_longlong(val)));
}
#undef TP_ATOM
#else
constexpr int cpu_order(int o) {
  return o == 1 ? __ATOMIC_ACQUIRE : o == 2 ? __ATOMIC_RELEASE : o == 3 ? __ATOMIC_ACQ_REL
                                                                        : __ATOMIC_RELAXED;
}
constexpr int cpu_fail_order(int o) { return (o == 1 || o == 3) ? __ATOMIC_ACQUIRE : __ATOMIC_RELAXED; }

// Compare-and-swap on the bits; returns the value found. (Bitwise compare, as the spec asks for
// floats.)
template <int Order, class T> inline T cpu_cas(T* p, T cmp, T val) {
  typedef typename bits_of<sizeof(T)>::type U;
  U expected, desired;
  memcpy(&expected, &cmp, sizeof(T));
  memcpy(&desired, &val, sizeof(T));
  __atomic_compare_exchange_n((U*)p, &expected, desired, false, cpu_order(Order),
                              cpu_fail_order(Order));
  T found;
  memcpy(&found, &expected, sizeof(T));
  return found;
}

template <int Mode, int Order, class T> inline T cpu_rmw(T* p, T v) {
  typedef typename bits_of<sizeof(T)>::type U;
  U old = __atomic_load_n((U*)p, __ATOMIC_RELAXED);
  for (;;) {
    T x, y;
    memcpy(&x, &old, sizeof(T));
    y = rmw_apply<Mode>(x, v);
    U nb;
    memcpy(&nb, &y, sizeof(T));
    if (__atomic_compare_exchange_n((U*)p, &old, nb, false, cpu_order(Order), __ATOMIC_RELAXED))
      return x;
  }
}
#endif

template <int Mode, int Order, int Scope, class T> TP_DEV T atomic_rmw1(T* p, T v) {
#ifdef TP_GPU
  fence_before<Order, Scope>();
  const T r = gpu_rmw<Mode, Scope>(p, v);
  fence_after<Order, Scope>();
  return r;
#else
  return cpu_rmw<Mode, Order>(p, v);
#endif
}

// atomic_red_view_tko (dialect 13.3) through a partition view: each element of the tile at idx
// updated atomically with x's (Mode as atomic_rmw), once, by the thread owning it; elements
// outside the tensor are not touched.
template <class S, class DM, int Mode, int Order, int Scope, class T, int R, class L>
TP_DEV void atomic_red(const View<T, R>& v, const int64_t (&idx)[R], const Tile<T, S::numel, L>& x
                       TP_VIEW_AT) {
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) {
    if (!L::owner(s)) continue;
    const int64_t off = part_offset<S, DM>(v, idx, L::elem(s));
    if (off >= 0)
      atomic_rmw1<Mode, Order, Scope>(TP_VADDR(v, off, 1, "an atomic update"), x.v[s]);
  }
}

template <int Order, int Scope, class T> TP_DEV T atomic_cas1(T* p, T cmp, T val) {
#ifdef TP_GPU
  fence_before<Order, Scope>();
  const T r = gpu_cas<Scope>(p, cmp, val);
  fence_after<Order, Scope>();
  return r;
#else
  return cpu_cas<Order>(p, cmp, val);
#endif
}

// Tiles: each thread updates its own elements. Masked-off elements return 0 (rmw) or the
// compared value (cas), as the spec allows.
// (Atomic tiles are never in a replicated layout: the lowering gives them their own.)
template <int Mode, int Order, int Scope, class T, int N, class L>
TP_DEV Tile<T, N, L> atomic_rmw(const Tile<T*, N, L>& p, const Tile<T, N, L>& v TP_AT) {
  static_assert(!L::replicated, "atomics on a replicated layout");
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::valid(s)) r.v[s] = TP_OK(p.v[s]) ? atomic_rmw1<Mode, Order, Scope>(p.v[s], v.v[s]) : T();
  return r;
}
template <int Mode, int Order, int Scope, class T, int N, class L>
TP_DEV Tile<T, N, L> atomic_rmw(const Tile<T*, N, L>& p, const Tile<T, N, L>& v,
                                const Tile<bool, N, L>& m TP_AT) {
  static_assert(!L::replicated, "atomics on a replicated layout");
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::valid(s))
      r.v[s] = m.v[s] && TP_OK(p.v[s]) ? atomic_rmw1<Mode, Order, Scope>(p.v[s], v.v[s]) : T();
  return r;
}
template <int Order, int Scope, class T, int N, class L>
TP_DEV Tile<T, N, L> atomic_cas(const Tile<T*, N, L>& p, const Tile<T, N, L>& c,
                                const Tile<T, N, L>& v TP_AT) {
  static_assert(!L::replicated, "atomics on a replicated layout");
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::valid(s)) r.v[s] = TP_OK(p.v[s]) ? atomic_cas1<Order, Scope>(p.v[s], c.v[s], v.v[s]) : c.v[s];
  return r;
}
template <int Order, int Scope, class T, int N, class L>
TP_DEV Tile<T, N, L> atomic_cas(const Tile<T*, N, L>& p, const Tile<T, N, L>& c,
                                const Tile<T, N, L>& v, const Tile<bool, N, L>& m TP_AT) {
  static_assert(!L::replicated, "atomics on a replicated layout");
  Tile<T, N, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::valid(s))
      r.v[s] = m.v[s] && TP_OK(p.v[s]) ? atomic_cas1<Order, Scope>(p.v[s], c.v[s], v.v[s]) : c.v[s];
  return r;
}

// One-element atomics: thread 0 does the update; every thread gets the old value (a scalar is
// uniform) through shared memory.
template <class T> TP_DEV T share_from_thread0(T x, bool mine, unsigned char* smem) {
  T* buf = (T*)smem;
  __syncthreads();
  if (mine) buf[0] = x;
  __syncthreads();
  return buf[0];
}
template <int Mode, int Order, int Scope, class T>
TP_DEV T atomic_rmw_s(T* p, T v, bool m, unsigned char* smem TP_AT) {
  T r = T();
  if (tid() == 0 && m && TP_OK(p)) r = atomic_rmw1<Mode, Order, Scope>(p, v);
  return share_from_thread0(r, tid() == 0, smem);
}
template <int Order, int Scope, class T>
TP_DEV T atomic_cas_s(T* p, T c, T v, bool m, unsigned char* smem TP_AT) {
  T r = c;
  if (tid() == 0 && m && TP_OK(p)) r = atomic_cas1<Order, Scope>(p, c, v);
  return share_from_thread0(r, tid() == 0, smem);
}

// ------------------------------------------------------------------------------ extract / cat
// extract: the sub-tile of shape Dst at sub-tile grid index idx (a one-element result is a scalar).
template <class Src, class Dst, class Lr = Cyclic<Dst::numel>, class T, class L>
TP_DEV auto extract(const Tile<T, Src::numel, L>& x, const int (&idx)[Src::rank], unsigned char* smem) {
  const T* buf = tile_buf((T*)smem, x);
  auto src_of = [&](int e) {
    int c[Dst::rank];
    unravel<Dst>(e, c);
    int src = 0;
    for (int i = 0; i < Src::rank; ++i) src = src * Src::dims[i] + idx[i] * Dst::dims[i] + c[i];
    return src;
  };
  if constexpr (Dst::numel == 1) {
    return buf[src_of(0)];
  } else {
    return gather_elems<T, Dst::numel, Lr>([&](int e) { return buf[src_of(e)]; });
  }
}

// The elements of x this thread owns, written row-major into buf (callers synchronize).
template <class T, int N, class L>
TP_DEV void stage_owned(T* buf, const Tile<T, N, L>& x) {
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::owner(s)) buf[L::elem(s)] = x.v[s];
}

// insert (dialect 13.4): x (shape Dst) with its sub-tile at sub-tile grid index idx (shape Src)
// replaced by v; the inverse of extract.
template <class Src, class Dst, class Lr = Cyclic<Dst::numel>, class T, class LS, class LD>
TP_DEV Tile<T, Dst::numel, Lr> insert(const Tile<T, Src::numel, LS>& v, const Tile<T, Dst::numel, LD>& x,
                                      const int (&idx)[Dst::rank], unsigned char* smem) {
  T* buf = (T*)smem;
  __syncthreads();
  stage_owned(buf, x);
  stage_owned(buf + Dst::numel, v);
  __syncthreads();
  return gather_elems<T, Dst::numel, Lr>([&](int e) {
    int c[Dst::rank];
    unravel<Dst>(e, c);
    bool inside = true;
    int src = 0;
    for (int i = 0; i < Dst::rank; ++i) {
      inside = inside && c[i] / Src::dims[i] == idx[i];
      src = src * Src::dims[i] + c[i] % Src::dims[i];
    }
    return inside ? buf[Dst::numel + src] : buf[e];
  });
}

// cat: a and b (shape Src) joined along dimension D into shape Dst.
template <class Src, class Dst, int D, class Lr = Cyclic<Dst::numel>, class T, class LA, class LB>
TP_DEV Tile<T, Dst::numel, Lr> cat(const Tile<T, Src::numel, LA>& a, const Tile<T, Src::numel, LB>& b,
                                   unsigned char* smem) {
  T* buf = (T*)smem;
  __syncthreads();
  stage_owned(buf, a);
  stage_owned(buf + Src::numel, b);
  __syncthreads();
  return gather_elems<T, Dst::numel, Lr>([&](int e) {
    int c[Dst::rank];
    unravel<Dst>(e, c);
    const bool second = c[D] >= Src::dims[D];
    if (second) c[D] -= Src::dims[D];
    int src = 0;
    for (int i = 0; i < Src::rank; ++i) src = src * Src::dims[i] + c[i];
    return buf[(second ? Src::numel : 0) + src];
  });
}

// ------------------------------------------------------------------------------ printing
// A print op is one binary record in the kernel's print log, the same code on the GPU and the
// CPU: the host formats the records after the launch (tilepy/launch/print_log.py, with the
// interpreter's formatter), so a print op comes out whole whatever the other blocks do, and in
// the same format on every backend. A kernel that prints defines the log and the description of
// its print ops (`tp_print_log`, `tp_print_ops`: emit_ops.py, print_globals).
//   log:    used, dropped, capacity, end (i64 each; the host writes {0, 0, capacity, capacity}
//           before each launch), then the records.
//   record: size, op, block x, y, z, 0 (u32 each), then each argument's bytes (a tile's elements
//           row-major), each argument padded to 8 bytes; `size` counts it all.
// Thread 0 of a block reserves a record with one atomic add; a record that does not fit is not
// written: `dropped` counts it and `end` keeps the lowest offset refused, so the host reads the
// records below it only and a full log never corrupts.
#ifndef TP_PRINT_LOG_BYTES
#define TP_PRINT_LOG_BYTES (16 << 20)
#endif
struct PrintLog {
  int64_t used, dropped, capacity, end;
  unsigned char data[TP_PRINT_LOG_BYTES];
};
constexpr int kPrintHead = 24;
constexpr int pad8(int n) { return (n + 7) / 8 * 8; }
template <class A> struct PrintBytes { static constexpr int value = pad8(sizeof(A)); };
template <class T, int N, class L> struct PrintBytes<Tile<T, N, L>> {
  static constexpr int value = pad8(N * (int)sizeof(T));
};

TP_DEV unsigned char* print_reserve(PrintLog& log, unsigned op, int bytes) {
  const int64_t cap = log.capacity < TP_PRINT_LOG_BYTES ? log.capacity : TP_PRINT_LOG_BYTES;
  const int64_t at = atomic_rmw1<3, 0, 1>(&log.used, (int64_t)bytes);
  if (at + bytes > cap) {
    atomic_rmw1<3, 0, 1>(&log.dropped, (int64_t)1);
    atomic_rmw1<8, 0, 1>(&log.end, at);
    return nullptr;
  }
  const unsigned head[6] = {(unsigned)bytes, op, (unsigned)blockIdx.x, (unsigned)blockIdx.y,
                            (unsigned)blockIdx.z, 0u};
  memcpy(log.data + at, head, sizeof head);
  return log.data + at + kPrintHead;
}

template <class T> TP_DEV unsigned char* print_put(unsigned char* r, const T& v, unsigned char*) {
  if (!r) return r;
  memcpy(r, &v, sizeof(T));
  return r + PrintBytes<T>::value;
}
template <class T, int N, class L>
TP_DEV unsigned char* print_put(unsigned char* r, const Tile<T, N, L>& x, unsigned char* smem) {
  const T* buf = tile_buf((T*)smem, x);          // every thread takes part (barriers)
  if (!r) return r;
  memcpy(r, buf, N * sizeof(T));
  return r + PrintBytes<Tile<T, N, L>>::value;
}

// One print op: op number `op` of the kernel, its arguments (scalars and tiles) in order.
template <class... A>
TP_DEV void print_record(PrintLog& log, unsigned op, unsigned char* smem, const A&... args) {
  constexpr int bytes = kPrintHead + (0 + ... + PrintBytes<A>::value);
  unsigned char* r = tid() == 0 ? print_reserve(log, op, bytes) : nullptr;
  ((r = print_put(r, args, smem)), ...);
}

// ------------------------------------------------------------------------------ assertions
TP_DEV void assert_fail(const char* msg, int e) {
#ifdef TP_GPU
  printf("tilepy assertion failed: %s (tile element %d, block (%d, %d, %d))\n", msg, e,
         (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);
  __trap();
#else
  fprintf(stderr, "tilepy assertion failed: %s (tile element %d, block (%d, %d, %d))\n", msg, e,
          (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);
  cpu::assert_failures.fetch_add(1);
#endif
}

template <int N, class L> TP_DEV void tile_assert(const Tile<bool, N, L>& c, const char* msg) {
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::owner(s) && !c.v[s]) assert_fail(msg, L::elem(s));
}
TP_DEV void tile_assert(bool c, const char* msg) {
  if (tid() == 0 && !c) assert_fail(msg, 0);
}

}  // namespace tp

// Float op modifiers: flush_to_zero, approx/full rounding.
#include "tilepy/modifiers.h"
// Loads and stores ordered relaxed, acquire or release.
#include "tilepy/ordered.h"
// Warp-level building blocks (shuffles, ldmatrix, mma.sync, cp.async) behind tp:: wrappers.
#include "tilepy/warp.h"
// sm_90a's wgmma, its descriptors and fences, and the async-proxy fence.
#include "tilepy/wgmma.h"
// sm_90a's TMA (cp.async.bulk.tensor over tensor maps) and mbarriers.
#include "tilepy/tma.h"
// 8-bit floats (their conversions are warp.h's numerics).
#include "tilepy/fp8.h"
// Block-scaled mma (mmaf_scaled), generic.
#include "tilepy/mma_scaled.h"
// Fast paths that depend on layouts: warp-shuffle reductions, register broadcasts.
#include "tilepy/layout_ops.h"
// Tensor cores: shared-memory operands, cp.async staging, mma.sync over MmaAcc layouts.
#include "tilepy/tensorcore.h"
// sm_90a: warpgroup MMA over wgmma's swizzled shared-memory operands (the TP_WGMMA class).
#include "tilepy/wgmma_ops.h"
