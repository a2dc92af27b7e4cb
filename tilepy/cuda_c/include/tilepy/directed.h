// tilepy/directed.h -- the directed rounding modes of addf, subf, mulf, divf, fma and sqrt
// (rounding<zero>, <negative_inf>, <positive_inf>; spec 8.7) on f16, bf16, f32 and f64, as the
// functors tp::op::<op>_dir<M> (M: 0 toward zero, 1 toward -inf, 2 toward +inf), and of ftof
// (NVIDIA's 13.4 dialect) into f32, f16, bf16 and tf32 in those and to nearest with ties away
// (M = 3): tp::op::ftof_dir<To, M>, to_tf32_dir<M> (from f64 through f32 in the same mode;
// widening conversions are exact).
//
//   * GPU: f32 and f64 are CUDA's intrinsics of that rounding (__fadd_rz, __dmul_rd, ...: one
//     FADD.RZ / DMUL.RM ... in SASS); f16 and bf16 compute the f32 op in the same mode and convert
//     in the same mode (__float2half_rd, ...). Directed roundings nest: f16 values are f32 values,
//     so rounding toward -inf to f32 and then to f16 is rounding toward -inf to f16, and likewise
//     toward +inf and toward zero (which keeps the sign).
//   * CPU: exact, without the floating-point environment (no fesetround: thread state the
//     compiler may ignore): the result rounded to nearest in the type, g, and the sign of
//     (exact - g), computed exactly, then at most one step to g's neighbor. The exact value is a
//     double pair s + e (error-free transformations) for f16/bf16/f32 operands, whose products
//     are exact in a double, and a comparison in binary128 (software, libgcc) for f64.
#pragma once

#ifndef TP_DIRECTED     // 0: left out (launch/nvrtc.py, for a kernel that does not use it)
#define TP_DIRECTED 1
#endif
#if TP_DIRECTED

namespace tp {
namespace dir {

// x's neighbor in T toward +inf (up) or -inf; x is not NaN, and not the infinity it moves from.
template <class T> TP_DEV T next(T x, bool up) {
  typedef typename bits_of<sizeof(T)>::type U;
  const U sign = U(1) << (8 * sizeof(T) - 1);
  U b;
  memcpy(&b, &x, sizeof(T));
  if ((b & U(~sign)) == 0) b = up ? U(1) : U(sign | 1);     // a zero: the smallest subnormal
  else if (((b & sign) == 0) == up) b = U(b + 1);              // away from zero
  else b = U(b - 1);
  memcpy(&x, &b, sizeof(T));
  return x;
}

template <class W> TP_DEV int sgn(W x) { return (x > 0) - (x < 0); }

// g: the exact result rounded to nearest (its sign is the exact value's, also when it is a
// zero or an infinity); c: the sign of (exact - g). The exact result rounded in mode M.
template <int M, class T> TP_DEV T finish(T g, int c) {
  static_assert(M < 3, "nearest-away rounds by from_f32_away");
  if (c == 0) return g;
  if constexpr (M == 1) return c < 0 ? next(g, false) : g;
  else if constexpr (M == 2) return c > 0 ? next(g, true) : g;
  else {                                  // toward zero: back where nearest went away from it
    const auto w = wide(g);
    return (w > 0 && c < 0) || (w < 0 && c > 0) ? next(g, c > 0) : g;
  }
}

template <class... W> TP_DEV bool finite(W... x) { return ((x - x == 0) && ...); }

// x (finite or not) to T rounding to nearest, ties away from zero: the nearest, or on a tie the
// neighbor of larger magnitude (x - g and the other distance are exact: Sterbenz)
template <class T> TP_DEV T from_f32_away(float x) {
  const T g = narrow<T>(x);
  const float d = x - (float)wide(g);
  if (!finite(x) || d == 0) return g;
  const T o = next(g, d > 0);
  const float w = wide(o);
  return w - x == d && fabsf(w) > fabsf((float)wide(g)) ? o : g;
}

#ifdef TP_GPU
#define TP_DIR_PICK(RZ, RD, RU, ARGS)                                                 \
  if constexpr (M == 0) return RZ ARGS;                                                \
  else if constexpr (M == 1) return RD ARGS;                                           \
  else return RU ARGS;

// a float rounded to T in mode M (3: to nearest, ties away)
template <int M, class T> TP_DEV T from_f32(float x) {
  if constexpr (same<T, float>::value) {
    return x;
  } else if constexpr (M == 3) {
    return from_f32_away<T>(x);
#if TP_FP16
  } else if constexpr (same<T, __half>::value) {
    TP_DIR_PICK(__float2half_rz, __float2half_rd, __float2half_ru, (x))
#endif
#if TP_BF16
  } else if constexpr (same<T, __nv_bfloat16>::value) {
    TP_DIR_PICK(__float2bfloat16_rz, __float2bfloat16_rd, __float2bfloat16_ru, (x))
#endif
  }
}

// NAME<M>(T...): f64 through D_rz/_rd/_ru, the others through F_rz/... on floats
#define TP_DIR_OP(NAME, F, D, PARAMS, ARGS, WIDE)                                      \
  template <int M, class T> TP_DEV T NAME PARAMS {                                      \
    if constexpr (same<T, double>::value) {                                             \
      TP_DIR_PICK(D##_rz, D##_rd, D##_ru, ARGS)                                         \
    } else {                                                                            \
      const float r = [&]() -> float { TP_DIR_PICK(F##_rz, F##_rd, F##_ru, WIDE) }();   \
      return from_f32<M, T>(r);                                                         \
    }                                                                                   \
  }
TP_DIR_OP(add, __fadd, __dadd, (T a, T b), (a, b), (wide(a), wide(b)))
TP_DIR_OP(sub, __fsub, __dsub, (T a, T b), (a, b), (wide(a), wide(b)))
TP_DIR_OP(mul, __fmul, __dmul, (T a, T b), (a, b), (wide(a), wide(b)))
TP_DIR_OP(div, __fdiv, __ddiv, (T a, T b), (a, b), (wide(a), wide(b)))
TP_DIR_OP(fma, __fmaf, __fma, (T a, T b, T c), (a, b, c), (wide(a), wide(b), wide(c)))
TP_DIR_OP(sqrt, __fsqrt, __dsqrt, (T a), (a), (wide(a)))
#undef TP_DIR_OP

template <int M> TP_DEV float f64_to_f32(double x) {
  static_assert(M < 3, "no nearest-away from f64 but into f64 (NVIDIA's table)");
  TP_DIR_PICK(__double2float_rz, __double2float_rd, __double2float_ru, (x))
}
#undef TP_DIR_PICK

#else  // CPU

#if defined(__SIZEOF_FLOAT128__)
typedef __float128 quad;
#else
typedef long double quad;
static_assert(__LDBL_MANT_DIG__ == 113, "the CPU backend's directed rounding of f64 needs binary128");
#endif

// f16/bf16/f32: the exact value s + e (a double pair, |e| <= half an ulp of s; e only by its
// sign) rounded in mode M. g = s to nearest; s - g is exact (g is s rounded, within a factor
// of 2 of it or zero) and no T value lies strictly between s and the exact value.
template <int M, class T> TP_DEV T round_pair(double s, double e) {
  const T g = cvt<T>(s);
  const double d = s - (double)wide(g);
  return finish<M>(g, d != 0 ? sgn(d) : sgn(e));
}


// conversions: the value rounded to nearest, then stepped (x - g is exact: Sterbenz, or g = 0)
template <int M> TP_DEV float f64_to_f32(double x) {
  const float g = (float)x;
  return finish<M>(g, finite(x) ? sgn(x - (double)g) : 0);
}
template <int M, class T> TP_DEV T from_f32(float x) {
  if constexpr (M == 3) {
    return from_f32_away<T>(x);
  } else {
    const T g = narrow<T>(x);
    return finish<M>(g, finite(x) ? sgn(x - (float)wide(g)) : 0);
  }
}

// An exactly zero sum s = x + y is -0 toward -inf unless both addends are +0 (IEEE 754 6.3),
// from the addends' sign bits (-((-x) + (-y)) says the same, but GCC folds the negations).
template <int M, class W> TP_DEV W zero_sum(W s, bool x_neg, bool y_neg) {
  return (M == 1 && s == 0) ? (x_neg || y_neg ? -W(0) : W(0)) : s;
}

// s + e = x + y exactly (two-sum; W double, or binary128)
template <class W> TP_DEV W two_sum(W x, W y, W& e) {
  const W s = x + y, bb = s - x;
  e = (x - (s - bb)) + (y - bb);
  return s;
}

template <int M, class T> TP_DEV T add(T a_, T b_) {
  const auto a = wide(a_), b = wide(b_);
  if (!finite(a, b)) return narrow<T>(a + b);
  double e;
  const double s = zero_sum<M, double>(two_sum<double>(a, b, e), sign_bit(a), sign_bit(b));
  if constexpr (same<T, double>::value) return finish<M>(s, finite(s) ? sgn(e) : -sgn(s));
  else return round_pair<M, T>(s, e);
}
template <int M, class T> TP_DEV T sub(T a, T b) {
  return add<M>(a, narrow<T>(-wide(b)));
}

template <int M, class T> TP_DEV T mul(T a_, T b_) {
  const auto a = wide(a_), b = wide(b_);
  if (!finite(a, b)) return narrow<T>(a * b);
  if constexpr (same<T, double>::value) {
    const double g = a * b;            // the product is exact in binary128 (106 bits)
    return finish<M>(g, sgn((quad)a * (quad)b - (quad)g));
  } else {
    return round_pair<M, T>((double)a * (double)b, 0.0);    // exact (<= 48 bits)
  }
}

template <int M, class T> TP_DEV T div(T a_, T b_) {
  const auto a = wide(a_), b = wide(b_);
  if (!finite(a, b) || b == 0) return narrow<T>(a / b);
  if constexpr (same<T, double>::value) {
    const double g = a / b;            // a/b vs g as a vs g*b (exact in binary128; b != 0)
    const quad gb = (quad)g * (quad)b;
    return finish<M>(g, ((a > gb) - (a < gb)) * sgn(b));
  } else {
    const double q = (double)a / (double)b;
    const double r = ::fma(-q, (double)b, (double)a);      // the remainder, exact
    return round_pair<M, T>(q, r * sgn(b));
  }
}

template <int M, class T> TP_DEV T sqrt(T a_) {
  const auto a = wide(a_);
  if (!finite(a) || a <= 0) return narrow<T>(::sqrt(a));
  if constexpr (same<T, double>::value) {
    const double g = ::sqrt(a);
    const quad gg = (quad)g * (quad)g;
    return finish<M>(g, (a > gg) - (a < gg));
  } else {
    const double s = ::sqrt((double)a);
    return round_pair<M, T>(s, ::fma(-s, s, (double)a));      // the residual, exact
  }
}

template <int M, class T> TP_DEV T fma(T a_, T b_, T c_) {
  const auto a = wide(a_), b = wide(b_), c = wide(c_);
  if (!finite(a, b, c)) return op::fma{}(a_, b_, c_);
  if constexpr (same<T, double>::value) {
    const quad p = (quad)a * (quad)b, qc = c;
    quad e;
    const quad s = two_sum(p, qc, e);                        // p + c = s + e, exactly
    const double g = ::fma(a, b, c);
    if (s == 0) return zero_sum<M>(g, sign_bit(a) != sign_bit(b), sign_bit(c));  // exactly
    if (!finite(g)) return finish<M>(g, -sgn(g));
    const quad d = s - (quad)g;                              // exact (Sterbenz, or g = 0)
    return finish<M>(g, d != 0 ? sgn(d) : sgn(e));
  } else {
    const double p = (double)a * (double)b;                 // exact (<= 48 bits)
    double e;
    const double s = zero_sum<M, double>(two_sum<double>(p, c, e), sign_bit(p), sign_bit(c));
    return round_pair<M, T>(s, e);
  }
}

#endif

// float -> tf32 (kept in a float) in mode M: the low 13 bits cut, then one tf32 ulp away from
// zero where the mode rounds that way and they were not 0 (a carry into the exponent, up to
// inf); nearest-away adds half a tf32 ulp to the magnitude first (PTX's cvt.rna.tf32.f32)
template <int M> TP_DEV float to_tf32(float a) {
  uint32_t u;
  memcpy(&u, &a, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    u |= 0x00400000u;                               // NaN stays (quiet) NaN
  } else if ((u & 0x7fffffffu) < 0x7f800000u) {
    if (M == 3) u += 0x1000u;
    const bool neg = u >> 31, inexact = (u & 0x1fffu) != 0;
    u &= 0xffffe000u;
    if (inexact && ((M == 1 && neg) || (M == 2 && !neg))) u += 0x2000u;
  }
  memcpy(&a, &u, 4);
  return a;
}
}  // namespace dir

namespace op {
template <class To, int M> struct ftof_dir {
  template <class T> TP_DEV To operator()(T a) const {
    const auto w = wide(a);
    if constexpr (same<To, double>::value) {
      return (double)w;                             // exact
    } else {
      float f;
      if constexpr (same<decltype(w), const double>::value) f = dir::f64_to_f32<M>(w);
      else f = (float)w;                            // exact: the source is narrower than f32
      return dir::from_f32<M, To>(f);
    }
  }
};
template <int M> struct to_tf32_dir {
  template <class T> TP_DEV float operator()(T a) const {
    return dir::to_tf32<M>(ftof_dir<float, M>{}(a));
  }
};
#define TP_DIR_FUNCTOR(NAME, OP)                                                       \
  template <int M> struct NAME {                                                        \
    template <class T, class... R> TP_DEV T operator()(T a, R... r) const {             \
      return dir::OP<M, T>(a, r...);                                                    \
    }                                                                                   \
  };
TP_DIR_FUNCTOR(addf_dir, add)
TP_DIR_FUNCTOR(subf_dir, sub)
TP_DIR_FUNCTOR(mulf_dir, mul)
TP_DIR_FUNCTOR(divf_dir, div)
TP_DIR_FUNCTOR(fma_dir, fma)
TP_DIR_FUNCTOR(sqrt_dir, sqrt)
#undef TP_DIR_FUNCTOR
}  // namespace op

}  // namespace tp
#endif  // TP_DIRECTED
