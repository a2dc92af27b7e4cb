// tilepy/fp8.h -- the 8-bit float element types e4m3 (float8_e4m3fn) and e5m2 (float8_e5m2).
//
// A value is its byte. Like the half types, an fp8 value computes in float and rounds once
// (is_half / to_f32 / from_f32): exact for conversions (every fp8 value is a float) and correctly
// rounded into fp8 (float has more than 2p + 2 bits). Conversions into fp8 round to nearest even
// and saturate to the largest finite value (spec 5.1.3, as the interpreter does); NaN converts to
// +448 for e4m3 (which has no NaN in conversions) and stays NaN for e5m2.
#pragma once

namespace tp {

struct f8e4m3 { uint8_t bits; };
struct f8e5m2 { uint8_t bits; };
template <> struct is_half<f8e4m3> { static constexpr bool value = true; };
template <> struct is_half<f8e5m2> { static constexpr bool value = true; };
TP_DEV float to_f32(f8e4m3 x) { return e4m3_to_f32(x.bits); }
TP_DEV float to_f32(f8e5m2 x) { return e5m2_to_f32(x.bits); }
template <> TP_DEV f8e4m3 from_f32<f8e4m3>(float x) {
  return {x != x ? (uint8_t)0x7e : e4m3_from_f32(x)};
}
template <> TP_DEV f8e5m2 from_f32<f8e5m2>(float x) { return {e5m2_from_f32(x)}; }

}  // namespace tp

namespace tp {

// e8m0 (float8_e8m0fnu): 2^(bits - 127), 0xff is NaN. Conversions into it take an explicit
// rounding (op::to_e8m0), so it has no from_f32.
struct f8e8m0 { uint8_t bits; };
template <> struct is_half<f8e8m0> { static constexpr bool value = true; };
TP_DEV float to_f32(f8e8m0 x) {
  if (x.bits == 0xff) return f32_from_bits(0x7fc00000u);
  return x.bits ? f32_from_bits((uint32_t)x.bits << 23) : f32_from_bits(0x00400000u);  // 2^-127
}

namespace op {
// Into e8m0 rounding toward zero (Up = false) or +inf (Up = true), saturating to 2^-127..2^127
// (+inf gives 2^127); zero, negative values and NaN give NaN (as the interpreter).
template <bool Up> struct to_e8m0 {
  template <class T> TP_DEV f8e8m0 operator()(T a) const {
    const double d = (double)wide(a);
    if (!(d > 0)) return {0xff};
    if (d > 1.7014118346046923e38) return {254};
    int e;
    const double m = frexp(d, &e);                  // d = m * 2^e, 0.5 <= m < 1
    int k = e - 1 + ((Up && m != 0.5) ? 1 : 0);
    k = k < -127 ? -127 : k > 127 ? 127 : k;
    return {(uint8_t)(k + 127)};
  }
};
}  // namespace op

}  // namespace tp

namespace tp {

// e2m1 (float4_e2m1fn): one value in the low 4 bits of a byte (memory holds two per byte: pack
// and unpack), sign in bit 3; 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, no Inf, no NaN.
// Into it: round to nearest even, saturating to +-6 (infinities too); NaN gives +6, as the
// interpreter (spec 5.1.3's rule for e4m3, the other type without NaN).
struct f4e2m1 { uint8_t bits; };
template <> struct is_half<f4e2m1> { static constexpr bool value = true; };
template <> struct is_nibble<f4e2m1> { static constexpr bool value = true; };
TP_DEV float to_f32(f4e2m1 x) {
  const int e = (x.bits >> 1) & 3, m = x.bits & 1;
  const float a = e ? (float)(2 + m) * pow2(e - 2) : 0.5f * (float)m;
  return (x.bits & 8) ? -a : a;
}
template <> TP_DEV f4e2m1 from_f32<f4e2m1>(float x) {
  if (x != x) return {0x7};
  const uint8_t v = f8_from_f32<1, 0, 1>(x, 6.0f);     // sign in bit 7, magnitude in bits 0-2
  return {(uint8_t)((v & 0x7) | ((v >> 4) & 0x8))};
}

// e5m3 (float8_e5m3fnu): no sign bit, 2^(e-15) * (1 + m/8) (e = 0: m * 2^-17), 0xff is NaN, no
// Inf. Into it: round to nearest even, saturating to 114688 (+Inf too); negative values and -0
// give +0 (the nearest value it has); NaN stays NaN.
struct f8e5m3 { uint8_t bits; };
template <> struct is_half<f8e5m3> { static constexpr bool value = true; };
TP_DEV float to_f32(f8e5m3 x) {
  if (x.bits == 0xff) return f32_from_bits(0x7fc00000u);
  const int e = x.bits >> 3, m = x.bits & 7;
  return e ? (float)(8 + m) * pow2(e - 18) : (float)m * pow2(-17);
}
template <> TP_DEV f8e5m3 from_f32<f8e5m3>(float x) {
  if (x != x) return {0xff};
  if (!(x > 0.0f)) return {0};
  return {f8_from_f32<3, -14, 15>(x, 114688.0f)};
}

}  // namespace tp
