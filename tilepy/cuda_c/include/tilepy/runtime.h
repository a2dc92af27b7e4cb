// tilepy/runtime.h -- the C++ that emitted tile kernels call.
//
// One source, two compilers:
//   * NVRTC (device): __CUDACC_RTC__ is defined; CUDA's cuda_fp16.h / cuda_bf16.h give the half types.
//   * g++ (CPU):      tilepy/cpu_shim.h makes the same source a host program (threadIdx, __shared__,
//                     __syncthreads, half types) so the kernel can be checked without a GPU.
//
// Execution model: one tile block = one CUDA thread block of TP_NT threads. A tile of N elements
// (row-major linear index e) is distributed cyclically: element e lives in thread e % TP_NT, slot
// e / TP_NT of a `Tile<T, N>`. A tile with one element (0-d and 1x1.. tiles) is a plain scalar held
// by every thread. Element-wise ops are thread-local loops; ops that move data between threads
// (broadcast, permute, reduce, mma) go through shared memory between __syncthreads().
#pragma once

#ifndef TP_NT
#define TP_NT 128
#endif

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define TP_GPU 1
#include <cuda_fp16.h>
#include <cuda_bf16.h>
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
#else
#include "tilepy/cpu_shim.h"
#define TP_DEV inline
#define TP_UNROLL
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

// ------------------------------------------------------------------------------ conversions
// Every conversion goes through `cvt<To>(from)`; half types travel through float (exact).
template <class T> struct is_half { static constexpr bool value = false; };
template <> struct is_half<__half> { static constexpr bool value = true; };
template <> struct is_half<__nv_bfloat16> { static constexpr bool value = true; };

TP_DEV float to_f32(__half x) { return __half2float(x); }
TP_DEV float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> TP_DEV T from_f32(float x);
template <> TP_DEV __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> TP_DEV __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

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
template <class T, int N> struct Tile {
  static constexpr int K = (N + NT - 1) / NT;
  T v[K];
  TP_DEV static bool valid(int s) { return N % NT == 0 || s * NT + tid() < N; }
  TP_DEV static int elem(int s) { return s * NT + tid(); }
};

// Element-wise application over tiles (or over scalars: one-element tiles).
template <class F, class T, int N, class... Ts>
TP_DEV auto ew(F f, const Tile<T, N>& a, const Tile<Ts, N>&... b) {
  typedef decltype(f(a.v[0], b.v[0]...)) R;
  Tile<R, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s)) r.v[s] = f(a.v[s], b.v[s]...);
  return r;
}
template <class F, class... Ts> TP_DEV auto ew(F f, const Ts&... x) { return f(x...); }

template <int N, class T> TP_DEV Tile<T, N> splat(T x) {
  Tile<T, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s) r.v[s] = x;
  return r;
}

template <class T, int N> TP_DEV Tile<T, N> iota() {
  Tile<T, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s) r.v[s] = (T)Tile<T, N>::elem(s);
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
template <class T, int N, class B> TP_DEV Tile<T, N> from_table(const B* table) {
  Tile<T, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s)) r.v[s] = from_bits<T>(table[Tile<T, N>::elem(s)]);
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

// i1 is a byte in memory; a nonzero byte reads as 1 (spec 8.6.2).
template <class T> TP_DEV T read_elem(const T* p) {
  if constexpr (same<T, bool>::value) return *(const unsigned char*)p != 0; else return *p;
}

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
    if (g >= v.shape[d]) return -1;
    off += g * v.stride[d];
  }
  return off;
}

template <class S, class DM, class T, int R>
TP_DEV Tile<T, S::numel> load(const View<T, R>& v, const int64_t (&idx)[R], T pad) {
  Tile<T, S::numel> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, S::numel>::K; ++s) {
    if (!Tile<T, S::numel>::valid(s)) continue;
    const int64_t off = part_offset<S, DM>(v, idx, Tile<T, S::numel>::elem(s));
    r.v[s] = off >= 0 ? read_elem(v.base + off) : pad;
  }
  return r;
}

template <class S, class DM, class T, int R>
TP_DEV T load_scalar(const View<T, R>& v, const int64_t (&idx)[R], T pad) {
  const int64_t off = part_offset<S, DM>(v, idx, 0);
  return off >= 0 ? read_elem(v.base + off) : pad;
}

template <class S, class DM, class T, int R>
TP_DEV void store(const View<T, R>& v, const int64_t (&idx)[R], const Tile<T, S::numel>& x) {
  TP_UNROLL
  for (int s = 0; s < Tile<T, S::numel>::K; ++s) {
    if (!Tile<T, S::numel>::valid(s)) continue;
    const int64_t off = part_offset<S, DM>(v, idx, Tile<T, S::numel>::elem(s));
    if (off >= 0) v.base[off] = x.v[s];
  }
}

template <class S, class DM, class T, int R>
TP_DEV void store_scalar(const View<T, R>& v, const int64_t (&idx)[R], T x) {
  if (tid() != 0) return;
  const int64_t off = part_offset<S, DM>(v, idx, 0);
  if (off >= 0) v.base[off] = x;
}

// ------------------------------------------------------------------------------ shared memory
// Each op below starts with a barrier (the previous user of the buffer is done reading), writes
// its operand, synchronizes, and reads what the calling thread needs.
template <class T, int N> TP_DEV void to_smem(T* buf, const Tile<T, N>& x) {
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s)) buf[Tile<T, N>::elem(s)] = x.v[s];
  __syncthreads();
}

// broadcast: size-1 source dimensions are repeated to the result's extent.
template <class Src, class Dst, class T>
TP_DEV Tile<T, Dst::numel> broadcast(const Tile<T, Src::numel>& x, unsigned char* smem) {
  T* buf = (T*)smem;
  to_smem(buf, x);
  Tile<T, Dst::numel> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, Dst::numel>::K; ++s) {
    if (!Tile<T, Dst::numel>::valid(s)) continue;
    int c[Dst::rank];
    unravel<Dst>(Tile<T, Dst::numel>::elem(s), c);
    int src = 0;
    TP_UNROLL
    for (int i = 0; i < Dst::rank; ++i) src = src * Src::dims[i] + (Src::dims[i] == 1 ? 0 : c[i]);
    r.v[s] = buf[src];
  }
  return r;
}

// permute: result dim i is source dim P[i].
template <class Src, class P, class Dst, class T>
TP_DEV Tile<T, Dst::numel> permute(const Tile<T, Src::numel>& x, unsigned char* smem) {
  T* buf = (T*)smem;
  to_smem(buf, x);
  Tile<T, Dst::numel> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, Dst::numel>::K; ++s) {
    if (!Tile<T, Dst::numel>::valid(s)) continue;
    int c[Dst::rank], sc[Src::rank];
    unravel<Dst>(Tile<T, Dst::numel>::elem(s), c);
    TP_UNROLL
    for (int i = 0; i < Dst::rank; ++i) sc[P::map[i]] = c[i];
    int src = 0;
    TP_UNROLL
    for (int i = 0; i < Src::rank; ++i) src = src * Src::dims[i] + sc[i];
    r.v[s] = buf[src];
  }
  return r;
}

// reduce along dimension D of shape Src with combiner f(element, accumulator) -> accumulator.
// The result has Src::numel / Src::dims[D] elements: a scalar (every thread folds the whole
// tile) when that is 1, else a distributed tile.
template <class Src, int D, class T, class F>
TP_DEV T reduce_one(const T* buf, int out_e, T ident, F f) {
  constexpr int inner_n = [] { int n = 1; for (int i = D + 1; i < Src::rank; ++i) n *= Src::dims[i]; return n; }();
  const int outer = out_e / inner_n, inner = out_e % inner_n;
  const int base = outer * Src::dims[D] * inner_n + inner;
  T acc = ident;
  for (int k = 0; k < Src::dims[D]; ++k) acc = f(buf[base + k * inner_n], acc);
  return acc;
}

template <class Src, int D, class T, class F>
TP_DEV auto reduce(const Tile<T, Src::numel>& x, T ident, unsigned char* smem, F f) {
  constexpr int M = Src::numel / Src::dims[D];
  T* buf = (T*)smem;
  to_smem(buf, x);
  if constexpr (M == 1) {
    return reduce_one<Src, D>(buf, 0, ident, f);
  } else {
    Tile<T, M> r;
    TP_UNROLL
    for (int s = 0; s < Tile<T, M>::K; ++s)
      if (Tile<T, M>::valid(s)) r.v[s] = reduce_one<Src, D>(buf, Tile<T, M>::elem(s), ident, f);
    return r;
  }
}

// C[MxN] = A[MxK] @ B[KxN] + C, products and sums in float (double for f64).
template <int M, int N, int K, class TA, class TC>
TP_DEV Tile<TC, M * N> mma(const Tile<TA, M * K>& a, const Tile<TA, K * N>& b,
                           const Tile<TC, M * N>& c, unsigned char* smem) {
  typedef typename cond<same<TC, double>::value, double, float>::type Acc;
  TA* A = (TA*)smem;
  TA* B = A + M * K;
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < Tile<TA, M * K>::K; ++s)
    if (Tile<TA, M * K>::valid(s)) A[Tile<TA, M * K>::elem(s)] = a.v[s];
  TP_UNROLL
  for (int s = 0; s < Tile<TA, K * N>::K; ++s)
    if (Tile<TA, K * N>::valid(s)) B[Tile<TA, K * N>::elem(s)] = b.v[s];
  __syncthreads();
  Tile<TC, M * N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<TC, M * N>::K; ++s) {
    if (!Tile<TC, M * N>::valid(s)) continue;
    const int e = Tile<TC, M * N>::elem(s), m = e / N, n = e % N;
    Acc acc = cvt<Acc>(c.v[s]);
    for (int k = 0; k < K; ++k) acc += cvt<Acc>(A[m * K + k]) * cvt<Acc>(B[k * N + n]);
    r.v[s] = cvt<TC>(acc);
  }
  return r;
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
template <bool Max, bool PropagateNan> struct minmaxf {
  template <class T> TP_DEV T operator()(T a_, T b_) const {
    auto a = wide(a_), b = wide(b_);
    if (is_nan(a) || is_nan(b)) {   // a canonical NaN (spec 8.7.16)
      if (PropagateNan || (is_nan(a) && is_nan(b))) return narrow<T>((decltype(a))nan_f32());
      return is_nan(a) ? b_ : a_;
    }
    if (a == b) return (signbit(a) == Max) ? b_ : a_;
    return (Max ? a > b : a < b) ? a_ : b_;
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

namespace op {
struct offset {  // ptr + offset elements
  template <class P, class I> TP_DEV P operator()(P p, I o) const { return p + (int64_t)o; }
};
struct load_ptr {  // masked-off elements take the padding value
  template <class T> TP_DEV T operator()(T* p) const { return ld(p); }
  template <class T> TP_DEV T operator()(T* p, bool m) const { return m ? ld(p) : T(); }
  template <class T> TP_DEV T operator()(T* p, bool m, T pad) const { return m ? ld(p) : pad; }
};
}  // namespace op

// store_ptr: each thread stores its own elements; a one-element tile is stored by thread 0.
template <class T, int N> TP_DEV void store_ptr(const Tile<T*, N>& p, const Tile<T, N>& v) {
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s)) st(p.v[s], v.v[s]);
}
template <class T, int N>
TP_DEV void store_ptr(const Tile<T*, N>& p, const Tile<T, N>& v, const Tile<bool, N>& m) {
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s) && m.v[s]) st(p.v[s], v.v[s]);
}
template <class T> TP_DEV void store_ptr(T* p, T v) { if (tid() == 0) st(p, v); }
template <class T> TP_DEV void store_ptr(T* p, T v, bool m) { if (tid() == 0 && m) st(p, v); }

// ------------------------------------------------------------------------------ atomics
// Modes (atomic_rmw_tko): 0 and, 1 or, 2 xor, 3 add, 4 addf, 5 max, 6 min, 7 umax, 8 umin, 9 xchg.
// Orders: 0 relaxed, 1 acquire, 2 release, 3 acq_rel. Scopes: 0 tile block, 1 device (device-scope
// atomics serve both: they are at least as strong as block scope; the emitter rejects system scope).
// On the GPU an ordering is the relaxed atomic plus __threadfence() before (release) / after
// (acquire), the PTX memory model's fence-based release and acquire patterns.
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
template <int Order> TP_DEV void fence_before() { if (Order == 2 || Order == 3) __threadfence(); }
template <int Order> TP_DEV void fence_after() { if (Order == 1 || Order == 3) __threadfence(); }

template <int Mode, class T> TP_DEV T gpu_rmw(T* p, T v) {
  typedef unsigned long long ull;
  if constexpr (same<T, int32_t>::value) {
    unsigned* u = (unsigned*)p;
    switch (Mode) {
      case 0: return atomicAnd(p, v);
      case 1: return atomicOr(p, v);
      case 2: return atomicXor(p, v);
      case 3: return atomicAdd(p, v);
      case 5: return atomicMax(p, v);
      case 6: return atomicMin(p, v);
      case 7: return (T)atomicMax(u, (unsigned)v);
      case 8: return (T)atomicMin(u, (unsigned)v);
      default: return atomicExch(p, v);
    }
  } else if constexpr (same<T, int64_t>::value) {
    ull* u = (ull*)p;
    switch (Mode) {
      case 0: return (T)atomicAnd(u, (ull)v);
      case 1: return (T)atomicOr(u, (ull)v);
      case 2: return (T)atomicXor(u, (ull)v);
      case 3: return (T)atomicAdd(u, (ull)v);
      case 5: return (T)atomicMax((long long*)p, (long long)v);
      case 6: return (T)atomicMin((long long*)p, (long long)v);
      case 7: return (T)atomicMax(u, (ull)v);
      case 8: return (T)atomicMin(u, (ull)v);
      default: return (T)atomicExch(u, (ull)v);
    }
  } else if constexpr (same<T, double>::value) {
    if constexpr (Mode == 4) return atomicAdd(p, v);
    else return __longlong_as_double((long long)atomicExch((ull*)p, (ull)__double_as_longlong(v)));
  } else {
    static_assert(Mode == 4 || Mode == 9, "atomic mode not supported for this type");
    if constexpr (Mode == 4) return atomicAdd(p, v);      // float, __half
    else return atomicExch(p, v);                           // float
  }
}

template <class T> TP_DEV T gpu_cas(T* p, T cmp, T val) {
  typedef unsigned long long ull;
  if constexpr (same<T, int32_t>::value) return atomicCAS(p, cmp, val);
  else if constexpr (same<T, int64_t>::value) return (T)atomicCAS((ull*)p, (ull)cmp, (ull)val);
  else if constexpr (same<T, float>::value)
    return __int_as_float(atomicCAS((int*)p, __float_as_int(cmp), __float_as_int(val)));
  else
    return __longlong_as_double((long long)atomicCAS((ull*)p, (ull)__double_as_longlong(cmp),
                                                     (ull)__double_as_longlong(val)));
}
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
  fence_before<Order>();
  const T r = gpu_rmw<Mode>(p, v);
  fence_after<Order>();
  return r;
#else
  return cpu_rmw<Mode, Order>(p, v);
#endif
}

template <int Order, int Scope, class T> TP_DEV T atomic_cas1(T* p, T cmp, T val) {
#ifdef TP_GPU
  fence_before<Order>();
  const T r = gpu_cas(p, cmp, val);
  fence_after<Order>();
  return r;
#else
  return cpu_cas<Order>(p, cmp, val);
#endif
}

// Tiles: each thread updates its own elements. Masked-off elements return 0 (rmw) or the
// compared value (cas), as the spec allows.
template <int Mode, int Order, int Scope, class T, int N>
TP_DEV Tile<T, N> atomic_rmw(const Tile<T*, N>& p, const Tile<T, N>& v) {
  Tile<T, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s)) r.v[s] = atomic_rmw1<Mode, Order, Scope>(p.v[s], v.v[s]);
  return r;
}
template <int Mode, int Order, int Scope, class T, int N>
TP_DEV Tile<T, N> atomic_rmw(const Tile<T*, N>& p, const Tile<T, N>& v, const Tile<bool, N>& m) {
  Tile<T, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s))
      r.v[s] = m.v[s] ? atomic_rmw1<Mode, Order, Scope>(p.v[s], v.v[s]) : T();
  return r;
}
template <int Order, int Scope, class T, int N>
TP_DEV Tile<T, N> atomic_cas(const Tile<T*, N>& p, const Tile<T, N>& c, const Tile<T, N>& v) {
  Tile<T, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s)) r.v[s] = atomic_cas1<Order, Scope>(p.v[s], c.v[s], v.v[s]);
  return r;
}
template <int Order, int Scope, class T, int N>
TP_DEV Tile<T, N> atomic_cas(const Tile<T*, N>& p, const Tile<T, N>& c, const Tile<T, N>& v,
                             const Tile<bool, N>& m) {
  Tile<T, N> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, N>::K; ++s)
    if (Tile<T, N>::valid(s))
      r.v[s] = m.v[s] ? atomic_cas1<Order, Scope>(p.v[s], c.v[s], v.v[s]) : c.v[s];
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
TP_DEV T atomic_rmw_s(T* p, T v, bool m, unsigned char* smem) {
  T r = T();
  if (tid() == 0 && m) r = atomic_rmw1<Mode, Order, Scope>(p, v);
  return share_from_thread0(r, tid() == 0, smem);
}
template <int Order, int Scope, class T>
TP_DEV T atomic_cas_s(T* p, T c, T v, bool m, unsigned char* smem) {
  T r = c;
  if (tid() == 0 && m) r = atomic_cas1<Order, Scope>(p, c, v);
  return share_from_thread0(r, tid() == 0, smem);
}

// ------------------------------------------------------------------------------ extract / cat
// extract: the sub-tile of shape Dst at sub-tile grid index idx (a one-element result is a scalar).
template <class Src, class Dst, class T>
TP_DEV auto extract(const Tile<T, Src::numel>& x, const int (&idx)[Src::rank], unsigned char* smem) {
  T* buf = (T*)smem;
  to_smem(buf, x);
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
    Tile<T, Dst::numel> r;
    TP_UNROLL
    for (int s = 0; s < Tile<T, Dst::numel>::K; ++s)
      if (Tile<T, Dst::numel>::valid(s)) r.v[s] = buf[src_of(Tile<T, Dst::numel>::elem(s))];
    return r;
  }
}

// cat: a and b (shape Src) joined along dimension D into shape Dst.
template <class Src, class Dst, int D, class T>
TP_DEV Tile<T, Dst::numel> cat(const Tile<T, Src::numel>& a, const Tile<T, Src::numel>& b,
                               unsigned char* smem) {
  T* buf = (T*)smem;
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < Tile<T, Src::numel>::K; ++s) {
    if (!Tile<T, Src::numel>::valid(s)) continue;
    buf[Tile<T, Src::numel>::elem(s)] = a.v[s];
    buf[Src::numel + Tile<T, Src::numel>::elem(s)] = b.v[s];
  }
  __syncthreads();
  Tile<T, Dst::numel> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, Dst::numel>::K; ++s) {
    if (!Tile<T, Dst::numel>::valid(s)) continue;
    int c[Dst::rank];
    unravel<Dst>(Tile<T, Dst::numel>::elem(s), c);
    const bool second = c[D] >= Src::dims[D];
    if (second) c[D] -= Src::dims[D];
    int src = 0;
    for (int i = 0; i < Src::rank; ++i) src = src * Src::dims[i] + c[i];
    r.v[s] = buf[(second ? Src::numel : 0) + src];
  }
  return r;
}

// ------------------------------------------------------------------------------ scan
// Inclusive scan along dimension D: r[j] = f(x[j], r[j-1]) with r[-1] = ident (f(element,
// accumulator), as in the reduce combiner); Reverse runs from the last index down.
template <class Src, int D, bool Reverse, class T, class F>
TP_DEV Tile<T, Src::numel> scan(const Tile<T, Src::numel>& x, T ident, unsigned char* smem, F f) {
  constexpr int inner_n = [] { int n = 1; for (int i = D + 1; i < Src::rank; ++i) n *= Src::dims[i]; return n; }();
  constexpr int n = Src::dims[D];
  T* buf = (T*)smem;
  to_smem(buf, x);
  Tile<T, Src::numel> r;
  TP_UNROLL
  for (int s = 0; s < Tile<T, Src::numel>::K; ++s) {
    if (!Tile<T, Src::numel>::valid(s)) continue;
    const int e = Tile<T, Src::numel>::elem(s);
    const int outer = e / (n * inner_n), inner = e % inner_n, j = (e / inner_n) % n;
    const int base = outer * n * inner_n + inner;
    T acc = ident;
    if (Reverse) {
      for (int k = n - 1; k >= j; --k) acc = f(buf[base + k * inner_n], acc);
    } else {
      for (int k = 0; k <= j; ++k) acc = f(buf[base + k * inner_n], acc);
    }
    r.v[s] = acc;
  }
  return r;
}

// ------------------------------------------------------------------------------ reduce of two tiles
// Like reduce() for a pair of tiles reduced together (argmax: values and indices); the combiner
// takes (x0, acc0, x1, acc1) and returns Pair{acc0, acc1}.
template <class A, class B> struct Pair { A a; B b; };

template <class Src, int D, class T0, class T1, class F>
TP_DEV auto reduce2(const Tile<T0, Src::numel>& x0, const Tile<T1, Src::numel>& x1, T0 id0, T1 id1,
                    unsigned char* smem, F f) {
  constexpr int N = Src::numel, M = N / Src::dims[D];
  constexpr int inner_n = [] { int n = 1; for (int i = D + 1; i < Src::rank; ++i) n *= Src::dims[i]; return n; }();
  T0* buf0 = (T0*)smem;
  T1* buf1 = (T1*)(smem + (N * (int)sizeof(T0) + 15) / 16 * 16);
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < Tile<T0, N>::K; ++s) {
    if (!Tile<T0, N>::valid(s)) continue;
    buf0[Tile<T0, N>::elem(s)] = x0.v[s];
    buf1[Tile<T0, N>::elem(s)] = x1.v[s];
  }
  __syncthreads();
  auto fold = [&](int out_e) {
    const int outer = out_e / inner_n, inner = out_e % inner_n;
    const int base = outer * Src::dims[D] * inner_n + inner;
    Pair<T0, T1> acc{id0, id1};
    for (int k = 0; k < Src::dims[D]; ++k)
      acc = f(buf0[base + k * inner_n], acc.a, buf1[base + k * inner_n], acc.b);
    return acc;
  };
  if constexpr (M == 1) {
    return fold(0);
  } else {
    Pair<Tile<T0, M>, Tile<T1, M>> r;
    TP_UNROLL
    for (int s = 0; s < Tile<T0, M>::K; ++s) {
      if (!Tile<T0, M>::valid(s)) continue;
      const Pair<T0, T1> p = fold(Tile<T0, M>::elem(s));
      r.a.v[s] = p.a;
      r.b.v[s] = p.b;
    }
    return r;
  }
}

// ------------------------------------------------------------------------------ printing
// Thread 0 prints; arguments travel as printf's types (ints as int / long long, floats as double).
TP_DEV int pcast(bool x) { return x ? 1 : 0; }
TP_DEV int pcast(int32_t x) { return x; }
TP_DEV long long pcast(int64_t x) { return (long long)x; }
TP_DEV double pcast(float x) { return x; }
TP_DEV double pcast(double x) { return x; }
TP_DEV double pcast(__half x) { return to_f32(x); }
TP_DEV double pcast(__nv_bfloat16 x) { return to_f32(x); }

TP_DEV void print_flush() {
#ifndef TP_GPU
  fflush(stdout);
#endif
}

template <class... A> TP_DEV void print_scalars(const char* fmt, A... args) {
  if (tid() == 0) {
    printf(fmt, args...);
    print_flush();
  }
}

// A tile prints like a nested Python list: [[a, b], [c, d]].
template <class S, class T>
TP_DEV void print_tile(const char* spec, const Tile<T, S::numel>& x, unsigned char* smem) {
  T* buf = (T*)smem;
  to_smem(buf, x);
  if (tid() != 0) return;
  for (int e = 0; e < S::numel; ++e) {
    int c[S::rank];
    unravel<S>(e, c);
    if (e) printf(", ");
    for (int i = S::rank - 1; i >= 0 && (e == 0 || c[i] == 0); --i) printf("[");
    printf(spec, pcast(buf[e]));
    for (int i = S::rank - 1; i >= 0 && c[i] == S::dims[i] - 1; --i) printf("]");
  }
  print_flush();
}

// ------------------------------------------------------------------------------ assertions
#ifndef TP_GPU
inline std::atomic<int> assert_failures{0};
#endif

TP_DEV void assert_fail(const char* msg, int e) {
#ifdef TP_GPU
  printf("tilepy assertion failed: %s (tile element %d, block (%d, %d, %d))\n", msg, e,
         (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);
  __trap();
#else
  fprintf(stderr, "tilepy assertion failed: %s (tile element %d, block (%d, %d, %d))\n", msg, e,
          (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);
  assert_failures.fetch_add(1);
#endif
}

template <int N> TP_DEV void tile_assert(const Tile<bool, N>& c, const char* msg) {
  TP_UNROLL
  for (int s = 0; s < Tile<bool, N>::K; ++s)
    if (Tile<bool, N>::valid(s) && !c.v[s]) assert_fail(msg, Tile<bool, N>::elem(s));
}
TP_DEV void tile_assert(bool c, const char* msg) {
  if (tid() == 0 && !c) assert_fail(msg, 0);
}

}  // namespace tp

#ifndef TP_GPU
// The CPU runner reads (and resets) the number of failed assertions after a launch.
extern "C" int tp_assert_status(int reset) {
  const int n = tp::assert_failures.load();
  if (reset) tp::assert_failures.store(0);
  return n;
}
#endif

// Warp-level building blocks (shuffles, ldmatrix, mma.sync, cp.async) behind tp:: wrappers.
#include "tilepy/warp.h"
