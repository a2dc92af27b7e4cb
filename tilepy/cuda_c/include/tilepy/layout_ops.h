// tilepy/layout_ops.h -- reductions and broadcasts that layouts let stay in registers.
//
//   reduce_to<Src, D, Lr, Comm>(x, ident, smem, f)   reduce along D into layout Lr
//   broadcast_to<Src, Dst, Lr>(x, smem)              broadcast into layout Lr
//
// Each picks, at compile time, the fastest path the (operand layout, result layout) pair allows
// and falls back to the shared-memory templates of runtime.h, which accept any layouts:
//   * a whole tile to one value (Comm): fold own slots, butterfly over the warp's lanes with
//     shfl.xor, then one value per warp through shared memory (every thread folds them in order);
//   * the rows of an MmaAcc tile (Lr = MmaRows): fold own slots, butterfly over the 4 lanes of a
//     quad, and over the WN warps of a warp row through shared memory when WN > 1;
//   * the rows of a Blocked tile whose row lies in Q <= 32 lanes (Lr = BlockedRows): fold the
//     vector, butterfly over the Q lanes;
//   * broadcasting those rows back (MmaRows -> MmaAcc, BlockedRows -> Blocked) reads the row's
//     slot in the same thread: no data moves.
// Butterflies need a commutative combiner (the emitter says so with Comm: add, mul, max, min, and,
// or, xor); other combiners fold in element order through shared memory. Every thread that holds
// a result computes it from the same values in the same order, so replicas agree bit for bit.
#pragma once

namespace tp {

#if TP_WARP_OPS
// All lanes of each aligned group of Width lanes end with the fold of the group's values.
template <int Width, class T, class F> TP_DEV T warp_allreduce(T x, F f) {
  TP_UNROLL
  for (int o = Width / 2; o >= 1; o /= 2) x = f(shfl_xor_sync(0xffffffffu, x, o), x);
  return x;
}
#endif

// One value per warp (lane 0's) folded in warp order by every thread.
template <class T, class F> TP_DEV T fold_warps(T x, unsigned char* smem, F f) {
  constexpr int NW = NT / 32;
  if constexpr (NW <= 1) {
    return x;
  } else {
    T* buf = (T*)smem;
    __syncthreads();
    if (lane_of() == 0) buf[warp_of()] = x;
    __syncthreads();
    T acc = buf[0];
    TP_UNROLL
    for (int w = 1; w < NW; ++w) acc = f(buf[w], acc);
    return acc;
  }
}

template <class T, int N, class L, class F>
TP_DEV T reduce_all(const Tile<T, N, L>& x, T ident, unsigned char* smem, F f) {
  T acc = ident;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s)
    if (L::owner(s)) acc = f(x.v[s], acc);
#if TP_WARP_OPS
  acc = warp_allreduce<32>(acc, f);
  acc = fold_warps(acc, smem, f);
#else
  static_assert(NT == 1, "without warp operations a tile block is one thread");
#endif
  return acc;
}

// Which register path a reduction (operand layout L, result layout Lr, dimension D) can take.
template <class Src, int D, class L, class Lr> struct rows_path { static constexpr int value = 0; };
template <class Src, int D, int Bt, int M, int N, int WM, int WN, int WG>
struct rows_path<Src, D, MmaAcc<Bt, M, N, WM, WN, WG>, MmaRows<Bt, M, WM, WN, WG>> {
  static constexpr int value = (D == Src::rank - 1 && Src::dims[D] == N) ? 1 : 0;
};
template <class Src, int D, int NN, int V, int M, int Q>
struct rows_path<Src, D, Blocked<NN, V>, BlockedRows<M, Q>> {
  static constexpr int value = (D == Src::rank - 1 && Src::dims[D] == Q * V && Q <= 32 &&
                                NN == M * Q * V) ? 2 : 0;
};

template <class T, int Bt, int M, int N, int WM, int WN, int WG, class F>
TP_DEV Tile<T, Bt * M, MmaRows<Bt, M, WM, WN, WG>> reduce_mma_rows(
    const Tile<T, Bt * M * N, MmaAcc<Bt, M, N, WM, WN, WG>>& x, T ident, unsigned char* smem, F f) {
  typedef MmaAcc<Bt, M, N, WM, WN, WG> L;
  typedef MmaRows<Bt, M, WM, WN, WG> Lr;
  Tile<T, Bt * M, Lr> r;
  TP_UNROLL
  for (int s = 0; s < Lr::K; ++s) r.v[s] = ident;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) r.v[L::row_slot(s)] = f(x.v[s], r.v[L::row_slot(s)]);
#if TP_WARP_OPS
  TP_UNROLL
  for (int s = 0; s < Lr::K; ++s) r.v[s] = warp_allreduce<4>(r.v[s], f);
  if constexpr (WN > 1) {   // the warps of a warp row hold other columns of the same rows
    T* buf = (T*)smem;
    __syncthreads();
    if (lane_of() % 4 == 0) {
      TP_UNROLL
      for (int s = 0; s < Lr::K; ++s) buf[(warp_of() % WN) * Lr::N + Lr::elem(s)] = r.v[s];
    }
    __syncthreads();
    TP_UNROLL
    for (int s = 0; s < Lr::K; ++s) {
      T acc = buf[Lr::elem(s)];
      TP_UNROLL
      for (int w = 1; w < WN; ++w) acc = f(buf[w * Lr::N + Lr::elem(s)], acc);
      r.v[s] = acc;
    }
  }
#endif
  return r;
}

template <int M, int Q, class T, int N, int V, class F>
TP_DEV Tile<T, M, BlockedRows<M, Q>> reduce_blocked_rows(const Tile<T, N, Blocked<N, V>>& x, T ident,
                                                        F f) {
  typedef BlockedRows<M, Q> Lr;
  Tile<T, M, Lr> r;
#if TP_WARP_OPS
  TP_UNROLL
  for (int g = 0; g < Lr::K; ++g) {
    T acc = ident;
    TP_UNROLL
    for (int j = 0; j < V; ++j)
      if (Blocked<N, V>::valid(g * V + j)) acc = f(x.v[g * V + j], acc);
    r.v[g] = warp_allreduce<Q>(acc, f);
  }
#else
  TP_UNROLL
  for (int row = 0; row < M; ++row) {
    T acc = ident;
    for (int k = 0; k < Q * V; ++k) acc = f(x.v[row * Q * V + k], acc);
    r.v[row] = acc;
  }
#endif
  return r;
}

template <class Src, int D, class Lr, bool Comm, class T, class L, class F>
TP_DEV auto reduce_to(const Tile<T, Src::numel, L>& x, T ident, unsigned char* smem, F f) {
  constexpr int M = Src::numel / Src::dims[D];
  constexpr int path = Comm ? rows_path<Src, D, L, Lr>::value : 0;
#if TP_CPU_FAST
  return reduce_fast<Src, D, Lr, Comm>(x, ident, f);
#endif
  if constexpr (Comm && M == 1) {
    return reduce_all(x, ident, smem, f);
  } else if constexpr (path == 1) {
    return reduce_mma_rows(x, ident, smem, f);
  } else if constexpr (path == 2) {
    return reduce_blocked_rows<M, Lr::lanes>(x, ident, f);
  } else {
    return reduce<Src, D, Lr>(x, ident, smem, f);
  }
}

// Which register path a broadcast of a (..., 1) tile in layout Ls to (..., n) in Lr can take.
template <class Ls, class Lr> struct bcast_path { static constexpr int value = 0; };
template <int Bt, int M, int N, int WM, int WN, int WG>
struct bcast_path<MmaRows<Bt, M, WM, WN, WG>, MmaAcc<Bt, M, N, WM, WN, WG>> {
  static constexpr int value = 1;
};
template <int M, int Q, int V>
struct bcast_path<BlockedRows<M, Q>, Blocked<M * Q * V, V>> { static constexpr int value = 2; };

template <class Src, class Dst> constexpr bool rows_broadcast() {
  if constexpr (Src::rank != Dst::rank || Src::rank == 0) return false;
  else return Src::dims[Src::rank - 1] == 1 && Src::numel * Dst::dims[Dst::rank - 1] == Dst::numel;
}

template <class Src, class Dst, class Lr, class T, class L>
TP_DEV Tile<T, Dst::numel, Lr> broadcast_to(const Tile<T, Src::numel, L>& x, unsigned char* smem) {
  constexpr int path = rows_broadcast<Src, Dst>() ? bcast_path<L, Lr>::value : 0;
  constexpr int n = Dst::dims[Dst::rank > 0 ? Dst::rank - 1 : 0];
  if constexpr (path == 1) {
    Tile<T, Dst::numel, Lr> r;
    TP_UNROLL
    for (int s = 0; s < Lr::K; ++s) r.v[s] = x.v[Lr::row_slot(s)];
    return r;
  } else if constexpr (path == 2) {
    Tile<T, Dst::numel, Lr> r;
    TP_UNROLL
    for (int s = 0; s < Lr::K; ++s) r.v[s] = x.v[L::real ? s / Lr::vec : s / n];
    return r;
  } else {
    return broadcast<Src, Dst, Lr>(x, smem);
  }
}

}  // namespace tp
