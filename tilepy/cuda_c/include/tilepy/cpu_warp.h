// tilepy/cpu_warp.h -- warp-level operations on the CPU, behind the tp:: wrappers of warp.h.
//
// Faithful mode: each operation is a collective over the lanes of a warp (cpu_fiber.h); the
// fragment layouts are those the PTX ISA documents ("Matrix Fragments for mma.m16n8k16 / k8 /
// k32", "Warp-level matrix load instruction: ldmatrix"), with groupID g = lane >> 2 and
// threadID_in_group t = lane % 4; element i of a fragment is the i-th from the low bits of the
// registers. Shuffles follow shfl.sync's definition (source lane, clamp and segment mask).
// cp.async copies land at the matching wait (the latest the PTX ISA allows); until then the
// destination holds poison, so reading it early gives wrong values, not lucky ones.
//
// Fast mode (one thread per block) cannot run any of this: the functions are declared with an
// error attribute, so a kernel that calls one fails to compile with a message saying why.
#pragma once

namespace tp { namespace cpu {

// ---------------------------------------------------------------------------- mma specs
// A spec gives the operand element types and, for element i of lane l's fragment, its (row,
// column) in A (M x K), (k, n) in B (K x N) and (row, n) in C/D (M x N), from the PTX ISA.
struct Coord { int r, c; };
inline Coord c_coord(int l, int i) { return {l / 4 + 8 * (i >> 1), 2 * (l % 4) + (i & 1)}; }

// Operand values: every element type here is exact in float (products of two are exact too).
inline float half_value(uint32_t x) { __half h; h.x = (uint16_t)x; return __half2float(h); }
inline float bf16_value(uint32_t x) { return f32_from_bits(x << 16); }

#define TP_ELEM(NAME, BITS, CODE, VALUE) \
  struct NAME { static constexpr int bits = BITS, code = CODE; static float value(uint32_t x) { return VALUE; } };
TP_ELEM(F16, 16, 1, half_value(x))
TP_ELEM(BF16, 16, 2, bf16_value(x))
TP_ELEM(TF32, 32, 3, f32_from_bits(x & 0xffffe000u))   // tensor cores read the upper 19 bits
TP_ELEM(S8, 8, 4, (float)(int8_t)(uint8_t)x)
TP_ELEM(U8, 8, 5, (float)(uint8_t)x)
TP_ELEM(E4M3, 8, 6, e4m3_to_f32((uint8_t)x))
TP_ELEM(E5M2, 8, 7, e5m2_to_f32((uint8_t)x))
#undef TP_ELEM

struct M16N8K16 {   // .f16 / .bf16
  static constexpr int K = 16, NA = 8, NB = 4;
  static Coord a(int l, int i) {
    return {l / 4 + 8 * ((i >> 1) & 1), 2 * (l % 4) + (i & 1) + 8 * (i >> 2)};
  }
  static Coord b(int l, int i) { return {2 * (l % 4) + (i & 1) + 8 * (i >> 1), l / 4}; }
};
struct M16N8K8 {    // .f16 / .bf16
  static constexpr int K = 8, NA = 4, NB = 2;
  static Coord a(int l, int i) { return {l / 4 + 8 * (i >> 1), 2 * (l % 4) + (i & 1)}; }
  static Coord b(int l, int i) { return {2 * (l % 4) + i, l / 4}; }
};
struct M16N8K8Tf32 {
  static constexpr int K = 8, NA = 4, NB = 2;
  static Coord a(int l, int i) { return {l / 4 + 8 * (i & 1), l % 4 + 4 * (i >> 1)}; }
  static Coord b(int l, int i) { return {l % 4 + 4 * i, l / 4}; }
};
struct M16N8K32 {   // .s8 / .u8 / .e4m3 / .e5m2
  static constexpr int K = 32, NA = 16, NB = 8;
  static Coord a(int l, int i) {
    return {l / 4 + 8 * ((i >> 2) & 1), 4 * (l % 4) + (i & 3) + 16 * (i >> 3)};
  }
  static Coord b(int l, int i) { return {4 * (l % 4) + (i & 3) + 16 * (i >> 2), l / 4}; }
};

// d = c + sum_k a[k] b[k]. Products are exact; floats are summed in double and rounded once to
// f32 (the order and internal precision of the hardware's sum are not specified by the PTX ISA);
// integers are summed exactly and wrap to 32 bits, or saturate with .satfinite.
template <class Shape, class EA, class EB, bool Integer, bool Satfinite = false>
struct Mma : Shape {
  typedef EA A;
  typedef EB B;
  static constexpr bool integer = Integer;
  static constexpr int a_regs = Shape::NA * EA::bits / 32, b_regs = Shape::NB * EB::bits / 32;
  static constexpr uint32_t id = Shape::K << 8 | EA::code << 4 | EB::code | (Satfinite ? 1u << 14 : 0u);
  static uint32_t element(const uint32_t* regs, int i, int bits) {
    return (regs[i * bits / 32] >> (i * bits % 32)) & (bits == 32 ? ~0u : (1u << bits) - 1u);
  }
  // Floats are summed in double and rounded once; integers in int64 (products of 8-bit values
  // are exact in float), then wrapped or saturated to 32 bits.
  typedef typename cond<Integer, int64_t, double>::type Sum;
  static Sum load_c(uint32_t c) {
    if constexpr (Integer) return (int32_t)c; else return f32_from_bits(c);
  }
  static uint32_t store_d(Sum d) {
    if constexpr (!Integer) {
      return f32_bits((float)d);
    } else {
      if (Satfinite) d = d > INT32_MAX ? INT32_MAX : d < INT32_MIN ? INT32_MIN : d;
      return (uint32_t)(uint64_t)d;
    }
  }
};

#if !defined(TP_FAITHFUL)
#define TP_FAST_ONLY_ERROR                                                                       \
  __attribute__((error("warp-level operations need the faithful CPU mode "                       \
                       "(TILEPY_CPU_MODE=faithful or tilepy.cpu_mode('faithful')); the fast mode " \
                       "runs one thread per block")))
TP_FAST_ONLY_ERROR uint64_t shfl(int mode, unsigned mask, uint64_t v, int b, int c);
TP_FAST_ONLY_ERROR uint32_t ballot(unsigned mask, bool pred, uint32_t* lanes);
TP_FAST_ONLY_ERROR void syncwarp(unsigned mask);
TP_FAST_ONLY_ERROR void ldmatrix(uint32_t* r, int num, bool trans, const void* row);
template <class Spec> TP_FAST_ONLY_ERROR void mma(uint32_t* d, const uint32_t* a, const uint32_t* b,
                                                  const uint32_t* c);
TP_FAST_ONLY_ERROR void cp_async(void* dst, const void* src, int bytes, int src_bytes);
TP_FAST_ONLY_ERROR void cp_async_commit();
TP_FAST_ONLY_ERROR void cp_async_wait(int n);
#undef TP_FAST_ONLY_ERROR
#else

#if TP_WGMMA
inline void proxy_landed(void* dst, int bytes);   // cpu_wgmma.h
#endif

enum : uint32_t { kShfl = 1, kSyncwarp = 8, kBallot = 9, kLdmatrix = 16, kMma = 64 };

// ---------------------------------------------------------------------------- shuffles
// shfl.sync: b = source lane / delta / lane mask, c = ((32 - width) << 8) | clamp.
#if TP_SUPPORT_BODY
TP_SUPPORT void shfl_complete(Warp& W, uint32_t lanes) {
  for (uint32_t m = lanes; m; m &= m - 1) {
    const int l = __builtin_ctz(m);
    Slot& s = W.slot[l];
    const int mode = (int)(s.kind - kShfl), b = s.arg0 & 31, c = s.arg1;
    const int seg = (c >> 8) & 31, cval = c & 31;
    const int max_lane = (l & seg) | (cval & ~seg), min_lane = l & seg;
    int j = l;
    bool p = true;
    switch (mode) {
      case 0: j = min_lane | (b & ~seg); p = j <= max_lane; break;   // idx
      case 1: j = l - b; p = j >= max_lane; break;                  // up
      case 2: j = l + b; p = j <= max_lane; break;                  // down
      default: j = l ^ b; p = j <= max_lane; break;                 // bfly (xor)
    }
    if (!p) j = l;
    if (!(lanes >> j & 1u))
      fail(std::string(s.name) + ": lane " + std::to_string(l) + " of warp " +
           std::to_string(W.index) + " reads lane " + std::to_string(j) + ", which does not take "
           "part (mask " + hex(s.mask) + "; the value is undefined)");
    s.out[0] = W.slot[j].in[0];
    s.out[1] = W.slot[j].in[1];
  }
}
#else
TP_SUPPORT void shfl_complete(Warp& W, uint32_t lanes);
#endif

inline uint64_t shfl(int mode, unsigned mask, uint64_t v, int b, int c) {
  static const char* names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                "__shfl_xor_sync"};
  Slot& s = warp_slot();
  s.in[0] = (uint32_t)v;
  s.in[1] = (uint32_t)(v >> 32);
  s.arg0 = b;
  s.arg1 = c;
  warp_collective(kShfl + mode, names[mode], mask, false, shfl_complete);
  return (uint64_t)s.out[0] | (uint64_t)s.out[1] << 32;
}

inline void nothing_complete(Warp&, uint32_t) {}
inline void syncwarp(unsigned mask) {
  warp_collective(kSyncwarp, "__syncwarp", mask, false, nothing_complete);
}

#if TP_SUPPORT_BODY
TP_SUPPORT void ballot_complete(Warp& W, uint32_t lanes) {
  uint32_t votes = 0;
  for (uint32_t m = lanes; m; m &= m - 1)
    if (W.slot[__builtin_ctz(m)].in[0]) votes |= 1u << __builtin_ctz(m);
  for (uint32_t m = lanes; m; m &= m - 1) {
    W.slot[__builtin_ctz(m)].out[0] = votes;
    W.slot[__builtin_ctz(m)].out[1] = lanes;
  }
}
#else
TP_SUPPORT void ballot_complete(Warp& W, uint32_t lanes);
#endif
inline uint32_t ballot(unsigned mask, bool pred, uint32_t* lanes) {
  Slot& s = warp_slot();
  s.in[0] = pred;
  warp_collective(kBallot, "__ballot_sync", mask, false, ballot_complete);
  if (lanes) *lanes = s.out[1];
  return s.out[0];
}

// ---------------------------------------------------------------------------- ldmatrix
// .m8n8 .b16: lanes 8j..8j+7 give the row addresses of matrix j. Lane l receives, in register
// j, row l/4 elements 2(l%4) and 2(l%4)+1 of matrix j (.trans: column l/4, rows 2(l%4), +1).
#if TP_SUPPORT_BODY
TP_SUPPORT void ldmatrix_complete(Warp& W, uint32_t lanes) {
  const int num = (int)(W.slot[0].kind - kLdmatrix) >> 1;
  const bool trans = (W.slot[0].kind - kLdmatrix) & 1;
  for (int a = 0; a < 8 * num; ++a)
    if ((uintptr_t)W.slot[a].ptr % 16)
      fail("ldmatrix: the row address of lane " + std::to_string(a) + " of warp " +
           std::to_string(W.index) + " is not 16-byte aligned");
  for (uint32_t m = lanes; m; m &= m - 1) {
    const int l = __builtin_ctz(m);
    for (int j = 0; j < num; ++j) {
      uint16_t e[2];
      for (int h = 0; h < 2; ++h) {
        const int row = trans ? 2 * (l % 4) + h : l / 4, col = trans ? l / 4 : 2 * (l % 4) + h;
        std::memcpy(&e[h], (const char*)W.slot[8 * j + row].ptr + 2 * col, 2);
      }
      W.slot[l].out[j] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
    }
  }
}
#else
TP_SUPPORT void ldmatrix_complete(Warp& W, uint32_t lanes);
#endif

inline void ldmatrix(uint32_t* r, int num, bool trans, const void* row) {
  static const char* names[] = {"", "ldmatrix.x1", "ldmatrix.x2", "", "ldmatrix.x4"};
  static const char* tnames[] = {"", "ldmatrix.x1.trans", "ldmatrix.x2.trans", "", "ldmatrix.x4.trans"};
  Slot& s = warp_slot();
  s.ptr = row;
  warp_collective(kLdmatrix + 2 * num + trans, trans ? tnames[num] : names[num], 0xffffffffu, true,
                  ldmatrix_complete);
  for (int j = 0; j < num; ++j) r[j] = s.out[j];
}

// ---------------------------------------------------------------------------- mma.sync
template <class Spec> inline void mma_complete(Warp& W, uint32_t) {
  constexpr int K = Spec::K, ar = Spec::a_regs, br = Spec::b_regs;
  float A[16][K], B[K][8];
  typename Spec::Sum D[16][8];
  for (int l = 0; l < 32; ++l) {
    const uint32_t* in = W.slot[l].in;
    for (int i = 0; i < Spec::NA; ++i) {
      const Coord p = Spec::a(l, i);
      A[p.r][p.c] = Spec::A::value(Spec::element(in, i, Spec::A::bits));
    }
    for (int i = 0; i < Spec::NB; ++i) {
      const Coord p = Spec::b(l, i);
      B[p.r][p.c] = Spec::B::value(Spec::element(in + ar, i, Spec::B::bits));
    }
    for (int i = 0; i < 4; ++i) {
      const Coord p = c_coord(l, i);
      D[p.r][p.c] = Spec::load_c(in[ar + br + i]);
    }
  }
  for (int r = 0; r < 16; ++r)        // D[r][n] = C[r][n] + sum over k in order, products exact
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < 8; ++n) D[r][n] += (typename Spec::Sum)(A[r][k] * B[k][n]);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const Coord p = c_coord(l, i);
      W.slot[l].out[i] = Spec::store_d(D[p.r][p.c]);
    }
}

template <class Spec> inline void mma(uint32_t* d, const uint32_t* a, const uint32_t* b,
                                      const uint32_t* c) {
  Slot& s = warp_slot();
  for (int i = 0; i < Spec::a_regs; ++i) s.in[i] = a[i];
  for (int i = 0; i < Spec::b_regs; ++i) s.in[Spec::a_regs + i] = b[i];
  for (int i = 0; i < 4; ++i) s.in[Spec::a_regs + Spec::b_regs + i] = c[i];
  warp_collective(kMma + Spec::id, "mma.sync", 0xffffffffu, true, mma_complete<Spec>);
  for (int i = 0; i < 4; ++i) d[i] = s.out[i];
}

// ---------------------------------------------------------------------------- cp.async
#if TP_SUPPORT_BODY
TP_SUPPORT void cp_async(void* dst, const void* src, int bytes, int src_bytes) {
  if ((bytes != 4 && bytes != 8 && bytes != 16) || src_bytes < 0 || src_bytes > bytes)
    fail("cp.async: copy size " + std::to_string(bytes) + " (source size " +
         std::to_string(src_bytes) + ") is not supported (4, 8 or 16 bytes)");
  if ((uintptr_t)dst % bytes || (uintptr_t)src % bytes)
    fail("cp.async: addresses must be aligned to the copy size (" + std::to_string(bytes) + ")");
  std::memset(dst, 0xff, bytes);   // undefined until the wait: poison
  cur->cp_pending.push_back(CpAsync{dst, src, bytes, src_bytes});
}
TP_SUPPORT void cp_async_commit() {
  cur->cp_groups.push_back(std::move(cur->cp_pending));
  cur->cp_pending.clear();
}
// Wait until at most n committed groups are pending: the older ones land now, each told to
// `landed` (the sm_90a class's proxy_landed) when there is one.
TP_SUPPORT void cp_async_land(int n, void (*landed)(void* dst, int bytes)) {
  auto& g = cur->cp_groups;
  size_t done = g.size() > (size_t)n ? g.size() - (size_t)n : 0;
  for (size_t i = 0; i < done; ++i)
    for (const CpAsync& c : g[i]) {
      std::memcpy(c.dst, c.src, (size_t)c.src_bytes);
      std::memset((char*)c.dst + c.src_bytes, 0, (size_t)(c.bytes - c.src_bytes));
      if (landed) landed(c.dst, c.bytes);
    }
  g.erase(g.begin(), g.begin() + (long)done);
}

// A shuffle's width that is not a power of two in [1, 32] (warp.h).
[[noreturn]] TP_REPORT TP_SUPPORT void bad_shuffle_width(int width) {
  fail("shuffle width " + std::to_string(width) + " is not a power of two in [1, 32]");
}
#else
TP_SUPPORT void cp_async(void* dst, const void* src, int bytes, int src_bytes);
TP_SUPPORT void cp_async_commit();
TP_SUPPORT void cp_async_land(int n, void (*landed)(void* dst, int bytes));
[[noreturn]] TP_REPORT TP_SUPPORT void bad_shuffle_width(int width);
#endif
#if TP_WGMMA
inline void cp_async_wait(int n) {   // cpu_wgmma.h: wgmma sees a copy after a fence.proxy.async
  cp_async_land(n, proxy_landed);
}
#else
inline void cp_async_wait(int n) { cp_async_land(n, nullptr); }
#endif
#endif  // TP_FAITHFUL

}}  // namespace tp::cpu
