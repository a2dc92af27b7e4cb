// Undetermined padding. A load without a padding value (cuTile's default padding_mode,
// UNDETERMINED) may read anything where its tile leaves the array. On a GPU and in the fast CPU
// mode those elements read 0. The faithful CPU mode reads a poison instead, so that a kernel whose
// result depends on them is caught rather than silently right on one machine:
//  - f16, bf16, f32, f64: a quiet NaN whose 6 bits below the quiet bit hold the load's site
//    (1..62) and, where the type has room, 0b110 below them (f32 0x7fc?dead); an f32 or f64
//    NaN counts as a poison only with the low bits a poison can have (site_of), so a NaN of
//    the data (a payload, a bitcast integer) is rarely taken for one. Arithmetic keeps
//    a NaN operand's payload, so do the conversions between these types, and maxf/minf return a
//    poison operand in this mode (they ignore every other NaN, as the spec says);
//  - 32- and 64-bit integers: 0x7ead.... holding the launch's serial number and the site (large
//    and positive: a max picks it); 16- and 8-bit integers 0x7ead / 0x7e, i1 false (no room to
//    tell them from data: they are not traced back).
// A store that writes a poison into its array (an element inside it) stops the launch with an
// error at the store's line naming the load's line (emitter.py emits `tp::check_stored` after
// each store of a kernel that has such a load; it does nothing on a GPU or in the fast mode).
#pragma once

namespace tp {
#if defined(TP_FAITHFUL)
namespace cpu {
// The report of a poison stored (check_stored), naming the load that made it where known
// (`file` null otherwise): in the support object of a split build (cpu_shim.h TP_SUPPORT).
#if TP_SUPPORT_BODY
TP_REPORT TP_SUPPORT void undetermined_stored(const char* file, int line, const Caller& at) {
  char load[600] = "a load without padding_mode";
  if (file) std::snprintf(load, sizeof load, "the load at %s:%d", file, line);
  char msg[1024];
  std::snprintf(msg, sizeof msg, "a value read from the undetermined padding of %s reaches this "
                "store: a ct.load without padding_mode leaves the elements outside the array "
                "undetermined (the faithful CPU mode reads them as NaN, or 0x7ead... for integers); "
                "pass padding_mode=ct.PaddingMode.ZERO (NEG_INF, ...) or keep those elements out of "
                "what is stored", load);
  set_error(msg, at.file, at.line);
}
#else
TP_REPORT TP_SUPPORT void undetermined_stored(const char* file, int line, const Caller& at);
#endif
}  // namespace cpu

namespace poison {
namespace {
constexpr int kLastSite = 62;   // 63 is all ones: a GPU's canonical NaN, not a site
struct Site { std::atomic<const char*> file{nullptr}; std::atomic<int> line{0}; };
Site sites[kLastSite + 1];

template <class U, class T> U bits(T x) { U u; memcpy(&u, &x, sizeof u); return u; }
template <class T, class U> T of_bits(U u) { T x; memcpy(&x, &u, sizeof x); return x; }

// The site a value's poison names, 0 when it is no poison.
template <class T> int site_of(T x) {
  int s = 0;
  if constexpr (same<T, float>::value) {
    // below the site: 0xdead (made here), 0xc000 (from an f16 poison, or tf32-rounded), 0 (from
    // a bf16 or f64 poison); any other NaN is data (a NaN payload, a bitcast integer)
    const uint32_t b = bits<uint32_t>(x), low = b & 0xffffu;
    s = (b & 0x7fc00000u) == 0x7fc00000u && (low == 0xdeadu || low == 0xc000u || low == 0)
            ? (int)(b >> 16) & 63 : 0;
  } else if constexpr (same<T, double>::value) {
    // below the site: 0xdead (made here), an f32 poison's low bits shifted by 29, or 0
    const uint64_t b = bits<uint64_t>(x), low = b & ((1ull << 45) - 1);
    s = (b & 0x7ff8000000000000ull) == 0x7ff8000000000000ull &&
            (low == 0xdeadull || low == 0xdeadull << 29 || low == 0xc000ull << 29 || low == 0)
            ? (int)(b >> 45) & 63 : 0;
  } else if constexpr (same<T, __half>::value) {
    s = (x.x & 0x7e00) == 0x7e00 ? (x.x >> 3) & 63 : 0;
  } else if constexpr (same<T, __nv_bfloat16>::value) {
    s = (x.x & 0x7fc0) == 0x7fc0 ? x.x & 63 : 0;
  } else if constexpr (same<T, int32_t>::value) {
    const uint32_t b = (uint32_t)x;
    s = b >> 16 == 0x7eadu && ((b >> 8) & 0xff) == (cpu::launch_serial & 0xff) ? b & 0xff : 0;
  } else if constexpr (same<T, int64_t>::value) {
    const uint64_t b = (uint64_t)x;
    s = b >> 32 == 0x7ead7eadu && ((b >> 8) & 0xffffff) == (cpu::launch_serial & 0xffffff)
            ? (int)(b & 0xff) : 0;
  }
  return s <= kLastSite ? s : 0;
}

template <class T> T make(T zero, int s) {
  if constexpr (same<T, float>::value) return of_bits<float>(0x7fc0dead | (uint32_t)s << 16);
  else if constexpr (same<T, double>::value)
    return of_bits<double>(0x7ff800000000deadull | (uint64_t)s << 45);
  else if constexpr (same<T, __half>::value) return T{(uint16_t)(0x7e06 | s << 3)};
  else if constexpr (same<T, __nv_bfloat16>::value) return T{(uint16_t)(0x7fc0 | s)};
  else if constexpr (same<T, int32_t>::value)
    return (int32_t)(0x7ead0000u | (cpu::launch_serial & 0xff) << 8 | (uint32_t)s);
  else if constexpr (same<T, int64_t>::value)
    return (int64_t)(0x7ead7ead00000000ull | (uint64_t)(cpu::launch_serial & 0xffffff) << 8 | (uint64_t)s);
  else if constexpr (same<T, int16_t>::value) return (int16_t)0x7ead;
  else if constexpr (same<T, int8_t>::value) return (int8_t)0x7e;
  else return zero;
}

TP_REPORT void report(int s, const cpu::Caller& at) {
  cpu::undetermined_stored(sites[s].file.load(std::memory_order_relaxed),
                           sites[s].line.load(std::memory_order_relaxed), at);
}
}  // namespace
}  // namespace poison

template <class T> TP_DEV T undetermined(T zero, int site, cpu::Caller at = cpu::caller()) {
  const int s = site < poison::kLastSite ? site : poison::kLastSite;
  poison::Site& where = poison::sites[s];
  if (!where.line.load(std::memory_order_relaxed)) {
    where.file.store(at.file, std::memory_order_relaxed);
    where.line.store(at.line, std::memory_order_relaxed);
  }
  return poison::make(zero, s);
}

template <class S, class DM, class T, int R, int N, class L>
TP_DEV void check_stored(const View<T, R>& v, const int64_t (&idx)[R], const Tile<T, N, L>& x,
                         cpu::Caller at = cpu::caller()) {
  for (int s = 0; s < L::K; ++s) {
    const int site = L::owner(s) ? poison::site_of(x.v[s]) : 0;
    if (site && part_offset<S, DM>(v, idx, L::elem(s)) >= 0) return poison::report(site, at);
  }
}
template <class S, class DM, class T, int R>
TP_DEV void check_stored(const View<T, R>& v, const int64_t (&idx)[R], T x,
                         cpu::Caller at = cpu::caller()) {
  const int site = tid() == 0 ? poison::site_of(x) : 0;
  if (site && part_offset<S, DM>(v, idx, 0) >= 0) poison::report(site, at);
}
#else
template <class T> TP_DEV T undetermined(T zero, int) { return zero; }
template <class S, class DM, class T, int R, class X>
TP_DEV void check_stored(const View<T, R>&, const int64_t (&)[R], const X&) {}
#endif
}  // namespace tp
