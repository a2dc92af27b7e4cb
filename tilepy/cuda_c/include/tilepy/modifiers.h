// tilepy/modifiers.h -- float op modifiers (spec 8.7 modifier tables): flush_to_zero and the
// approximate / full-range rounding modes, as functors around the plain ones of runtime.h.
//
//   * ftz<F>: F on f32 operands with subnormal inputs and results flushed to a zero of the same
//     sign (what the interpreter does, and what PTX's .ftz does).
//   * approx / full rounding: on the GPU the PTX instructions of that name (div.approx.f32,
//     div.full.f32, sqrt.approx.f32, tanh.approx.f32); on the CPU the correctly rounded result,
//     which is within every error bound the spec gives for them.
#pragma once

namespace tp {

TP_DEV float flush_f32(float x) {
  return (x != 0.0f && fabsf(x) < 1.17549435e-38f) ? copysignf(0.0f, x) : x;
}
template <class T> TP_DEV T flush(T x) {
  if constexpr (same<T, float>::value) return flush_f32(x); else return x;
}

namespace op {
template <class F> struct ftz {
  template <class... T> TP_DEV auto operator()(T... a) const { return flush(F{}(flush(a)...)); }
};
// exp2 of f32 with flush_to_zero on the GPU: PTX's ex2.approx.ftz.f32, one MUFU.EX2. exp2f is
// ex2.approx.f32 (NVRTC emits exactly that), whose subnormal inputs and results cost three more
// instructions that the flush makes moot: the same value as flush(exp2f(flush(a))) everywhere.
// (Attention's softmax with log2(e) folded into its scale: one instruction per score.)
template <> struct ftz<exp2> {
  template <class T> TP_DEV T operator()(T a) const {
#ifdef TP_GPU
    if constexpr (same<T, float>::value) {
      float r;
      asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
      return r;
    } else
#endif
    return flush(exp2{}(flush(a)));
  }
};

#ifdef TP_GPU
#define TP_PTX_F32_1(NAME, INSN)                                                      \
  TP_DEV float NAME(float a) { float r; asm(INSN " %0, %1;" : "=f"(r) : "f"(a)); return r; }
#define TP_PTX_F32_2(NAME, INSN)                                                      \
  TP_DEV float NAME(float a, float b) {                                               \
    float r; asm(INSN " %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;           \
  }
TP_PTX_F32_2(ptx_div_approx, "div.approx.f32")
TP_PTX_F32_2(ptx_div_full, "div.full.f32")
TP_PTX_F32_1(ptx_sqrt_approx, "sqrt.approx.f32")
TP_PTX_F32_1(ptx_tanh_approx, "tanh.approx.f32")
TP_DEV float ptx_exp_approx(float a) { return __expf(a); }    // ex2.approx of a*log2(e)
#undef TP_PTX_F32_1
#undef TP_PTX_F32_2
#define TP_APPROX_F32(PTX, EXACT) PTX
#else
#define TP_APPROX_F32(PTX, EXACT) EXACT
#endif

// f32 only (the frontend and the emitter allow these modes on f32); other types compute exactly.
#define TP_APPROX(NAME, BASE, PTX)                                                    \
  struct NAME {                                                                       \
    template <class... T> TP_DEV auto operator()(T... a) const {                      \
      if constexpr ((same<T, float>::value && ...)) return TP_APPROX_F32(PTX(a...), BASE{}(a...)); \
      else return BASE{}(a...);                                                       \
    }                                                                                 \
  };
TP_APPROX(divf_approx, divf, ptx_div_approx)
TP_APPROX(divf_full, divf, ptx_div_full)
TP_APPROX(sqrt_approx, sqrt, ptx_sqrt_approx)
TP_APPROX(tanh_approx, tanh, ptx_tanh_approx)
TP_APPROX(exp_approx, exp, ptx_exp_approx)
#undef TP_APPROX
#undef TP_APPROX_F32
}  // namespace op

}  // namespace tp

// The directed rounding modes of + - * / fma sqrt (toward zero, -inf, +inf).
#include "tilepy/directed.h"
