// tilepy/layout.h -- how the elements of a tile are spread over the threads of a block.
//
// A layout L of a tile with L::N elements gives every thread L::K slots; slot s of the calling
// thread holds the element of row-major linear index L::elem(s) when L::valid(s). A layout may
// replicate an element in several threads (the rows of a reduction, held by every lane that took
// part in it); L::owner(s) picks the one copy that stores and prints it. L::vec consecutive slots
// (starting at a multiple of vec) hold consecutive elements of the tile's last dimension: the
// width of a vector memory access. The lowering (tilepy/lowering/layouts.py) mirrors each layout
// and decides which value gets which one; every op accepts any layout.
//
// In the fast CPU mode (TP_NT == 1) every layout is the identity: the one thread holds the tile
// in row-major order, so the same emitted source runs there unchanged.
#pragma once

namespace tp {

TP_DEV int lane_of() { return tid() % 32; }
TP_DEV int warp_of() { return tid() / 32; }

// Element e of an N-element tile in thread e % NT, slot e / NT (the fallback layout).
template <int N_> struct Cyclic {
  static constexpr int N = N_, K = (N + NT - 1) / NT, vec = 1;
  static constexpr bool replicated = false;
  TP_DEV static int elem(int s) { return s * NT + tid(); }
  TP_DEV static bool valid(int s) { return N % NT == 0 || elem(s) < N; }
  TP_DEV static bool owner(int s) { return valid(s); }
};

// Blocked: chunks of V consecutive elements, chunk c in thread c % NT (slots c / NT * V ...).
// Consecutive threads read consecutive 16-byte pieces of a row: coalesced vector accesses.
template <int N_, int V> struct Blocked {
  static constexpr int N = N_, vec = V, G = (N + NT * V - 1) / (NT * V), K = G * V;
  static constexpr bool replicated = false;
  TP_DEV static int elem(int s) { return ((s / V) * NT + tid()) * V + s % V; }
  TP_DEV static bool valid(int s) { return N % (NT * V) == 0 || elem(s) < N; }
  TP_DEV static bool owner(int s) { return valid(s); }
};

// The rows of a Blocked<M * Q * V, V> tile reduced along its last dimension, when a row's Q
// chunks (Q <= 32) lie in Q consecutive lanes: slot g holds row (g * NT + tid) / Q, replicated in
// those Q lanes.
template <int M, int Q> struct BlockedRows {
  static constexpr bool real = NT > 1;
  static constexpr int N = M, K = real ? (M * Q + NT - 1) / NT : M, vec = 1, lanes = Q;
  static constexpr bool replicated = real && Q > 1;
  TP_DEV static int elem(int s) { return real ? (s * NT + tid()) / Q : s; }
  TP_DEV static bool valid(int s) { return !real || (M * Q) % NT == 0 || elem(s) < M; }
  TP_DEV static bool owner(int s) { return valid(s) && (!real || tid() % Q == 0); }
};

// The accumulator of mma.sync m16n8: WM x WN warps (warp w at (w / WN, w % WN)) each own a
// (M / WM) x (N / WN) block of every batch as FM x FN fragments of 16 x 8; lane l holds, per
// fragment, (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) with g = l / 4, t = l % 4 (the
// PTX ISA's "Matrix Fragments for mma.m16n8k16", accumulator D). Slot s = ((b * FM + i) * FN + j)
// * 4 + q. WG (all warps along M, WN 1, WM a multiple of 4): the warps of each warpgroup are
// interleaved by 16 rows, as wgmma's m64 accumulator has them: fragment i of warp w = 4g + j
// holds rows ((g * FM + i) * 4 + j) * 16.. (wgmma_ops.h), instead of (w * FM + i) * 16...
template <int Bt, int M, int WM, int WN, int WG> TP_DEV int mma_row0(int i) {   // fragment i's
  if constexpr (WG) {                                                      // first row (the warp's)
    constexpr int FM = M / WM / 16;
    return (((warp_of() / 4) * FM + i) * 4 + warp_of() % 4) * 16;
  } else {
    return (warp_of() / WN) * (M / WM) + i * 16;
  }
}

template <int Bt, int M, int N_, int WM, int WN_, int WG = 0> struct MmaAcc {
  static constexpr bool real = NT == 32 * WM * WN_;
  static constexpr int FM = M / WM / 16, FN = N_ / WN_ / 8, PB = FM * FN * 4, WN = WN_;
  static constexpr int NC = N_;   // columns (the last dimension)
  static constexpr int wg = WG;
  static constexpr int N = Bt * M * N_, K = real ? Bt * PB : N, vec = real ? 2 : 1;
  static constexpr bool replicated = false;
  static_assert(!real || (FM * WM * 16 == M && FN * WN * 8 == N_), "mma tile does not fit the warps");
  static_assert(!WG || (WN == 1 && WM % 4 == 0), "warps interleaved by warpgroups along M");
  TP_DEV static int row0(int i) { return mma_row0<Bt, M, WM, WN, WG>(i); }
  TP_DEV static int row(int s) {   // within the batch
    const int r = s % PB;
    return row0(r / (FN * 4)) + lane_of() / 4 + 8 * ((r % 4) >> 1);
  }
  TP_DEV static int col(int s) {
    const int r = s % PB;
    return (warp_of() % WN) * (N_ / WN) + ((r / 4) % FN) * 8 + 2 * (lane_of() % 4) + (r & 1);
  }
  TP_DEV static int elem(int s) {
    if constexpr (!real) return s;
    else return (s / PB) * M * N_ + row(s) * N_ + col(s);
  }
  TP_DEV static bool valid(int) { return true; }
  TP_DEV static bool owner(int) { return true; }
  // The slot of MmaRows<Bt, M, WM, WN> that holds the row of slot s (same thread).
  TP_DEV static constexpr int row_slot(int s) {
    return real ? (s / PB) * FM * 2 + ((s % PB) / (FN * 4)) * 2 + ((s % 4) >> 1) : s / N_;
  }
};

// The rows of an MmaAcc<Bt, M, N, WM, WN> tile reduced along N: slot (b * FM + i) * 2 + h holds
// row i * 16 + g + 8h of the warp's block (WG: of fragment i, as MmaAcc's), replicated in the 4
// lanes of a quad and the WN warps of a warp row.
template <int Bt, int M, int WM, int WN, int WG = 0> struct MmaRows {
  static constexpr bool real = NT == 32 * WM * WN;
  static constexpr int FM = M / WM / 16, N = Bt * M, K = real ? Bt * FM * 2 : N, vec = 1;
  static constexpr bool replicated = real;
  TP_DEV static int elem(int s) {
    if constexpr (!real) return s;
    else
      return (s / (FM * 2)) * M + mma_row0<Bt, M, WM, WN, WG>((s % (FM * 2)) / 2) +
             lane_of() / 4 + 8 * (s % 2);
  }
  TP_DEV static bool valid(int) { return true; }
  TP_DEV static bool owner(int) { return !real || (lane_of() % 4 == 0 && warp_of() % WN == 0); }
};

template <class L> struct is_mma_acc { static constexpr bool value = false; };
template <int Bt, int M, int N, int WM, int WN, int WG> struct is_mma_acc<MmaAcc<Bt, M, N, WM, WN, WG>> {
  static constexpr bool value = true;
};

}  // namespace tp
