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
