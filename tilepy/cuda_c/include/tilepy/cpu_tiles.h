// tilepy/cpu_tiles.h -- the fast CPU mode's (TP_CPU_FAST) reductions and scans.
//
// In the fast mode one thread holds a whole tile in row-major order (every layout is the
// identity; ops that go through shared memory read the tile itself, tile_buf in runtime.h), so
// lines of a tile are folded with contiguous loops the compiler vectorizes:
//   * reduce_fast  along a non-last dimension the lines are folded side by side (the same order
//                  per result as the generic code); along the last one a commutative combiner
//                  keeps one partial result per vector lane, then folds the lanes in order (an
//                  order the spec leaves open; the GPU folds in a butterfly), any other in
//                  element order;
//   * scan_fast    one pass per line (the generic code folds each prefix anew);
//   * gather_strided (broadcast, permute)   the result row by row, each source element found by
//                  per-dimension strides (the generic code unravels every element's index);
//   * load_fast, store_fast (and load_async's copy)   a tile row by row (rows of its last dimension): a row inside the
//                  tensor is one contiguous loop (unit stride) or one strided loop, only a row
//                  at the tensor's edge checks each element.
#pragma once

#if TP_CPU_FAST
namespace tp {

// The tile into dst[0..numel), row-major.
template <class S, class DM, class T, int R>
TP_DEV void load_rows(T* __restrict dst_tile, const View<T, R>& v, const int64_t (&idx)[R], T pad) {
  constexpr int n = S::dims[S::rank - 1];
  const int64_t st = v.stride[DM::map[S::rank - 1]];
  for (int row = 0; row < S::numel / n; ++row) {
    int64_t off;
    const int cnt = chunk_span<S, DM, n, S::rank - 1>(v, idx, row * n, off);
    const T* src = v.base + off;
    T* dst = dst_tile + row * n;
    if (cnt == n && st == 1) {
      for (int j = 0; j < n; ++j) dst[j] = read_elem(src + j);
    } else if (cnt == n) {
      for (int j = 0; j < n; ++j) dst[j] = read_elem(src + j * st);
    } else {
      for (int j = 0; j < n; ++j) dst[j] = j < cnt ? read_elem(src + j * st) : pad;
    }
  }
}

template <class S, class DM, class L, class T, int R>
TP_DEV Tile<T, S::numel, L> load_fast(const View<T, R>& v, const int64_t (&idx)[R], T pad) {
  Tile<T, S::numel, L> r;
  load_rows<S, DM>(r.v, v, idx, pad);
  return r;
}

template <class S, class DM, class T, int R, class L>
TP_DEV void store_fast(const View<T, R>& v, const int64_t (&idx)[R], const Tile<T, S::numel, L>& x) {
  constexpr int n = S::dims[S::rank - 1];
  const int64_t st = v.stride[DM::map[S::rank - 1]];
  for (int row = 0; row < S::numel / n; ++row) {
    int64_t off;
    const int cnt = chunk_span<S, DM, n, S::rank - 1>(v, idx, row * n, off);
    T* dst = v.base + off;
    const T* src = x.v + row * n;
    if (cnt == n && st == 1) {
      for (int j = 0; j < n; ++j) dst[j] = src[j];
    } else {
      for (int j = 0; j < cnt; ++j) dst[j * st] = src[j];
    }
  }
}

// Strides (in elements of the row-major source) of each result dimension.
template <int R> struct Strides { int s[R]; };
template <class S> constexpr int row_major_stride(int i) {
  int s = 1;
  for (int j = i + 1; j < S::rank; ++j) s *= S::dims[j];
  return s;
}
template <class Src, class Dst> constexpr Strides<Dst::rank> broadcast_strides() {
  Strides<Dst::rank> st{};
  for (int i = 0; i < Dst::rank; ++i) st.s[i] = Src::dims[i] == 1 ? 0 : row_major_stride<Src>(i);
  return st;
}
template <class Src, class P, class Dst> constexpr Strides<Dst::rank> permute_strides() {
  Strides<Dst::rank> st{};
  for (int i = 0; i < Dst::rank; ++i) st.s[i] = row_major_stride<Src>(P::map[i]);
  return st;
}

// The tile of shape Dst whose element at coordinates c is src[sum of c[i] * st[i]].
template <class Dst, class Lr, class T>
TP_DEV Tile<T, Dst::numel, Lr> gather_strided(const T* src, const Strides<Dst::rank> st) {
  constexpr int last = Dst::rank - 1, n = Dst::dims[last];
  Tile<T, Dst::numel, Lr> r;
  for (int row = 0; row < Dst::numel / n; ++row) {
    int c[Dst::rank];
    unravel<Dst>(row * n, c);
    int base = 0;
    for (int i = 0; i < last; ++i) base += c[i] * st.s[i];
    const int step = st.s[last];
    T* out = r.v + row * n;
    for (int j = 0; j < n; ++j) out[j] = src[base + j * step];
  }
  return r;
}

// Fold p[0..n) with a commutative combiner: one partial result per vector lane, then the lanes
// in order.
template <class T, class F> TP_DEV T fold_lanes(const T* p, int n, T ident, F f) {
  constexpr int W = cpu::kVecBytes / (int)sizeof(T) > 1 ? cpu::kVecBytes / (int)sizeof(T) : 1;
  if (n < 2 * W) {
    T acc = ident;
    for (int i = 0; i < n; ++i) acc = f(p[i], acc);
    return acc;
  }
  T part[W];
  for (int j = 0; j < W; ++j) part[j] = ident;
  int i = 0;
  for (; i + W <= n; i += W)
    for (int j = 0; j < W; ++j) part[j] = f(p[i + j], part[j]);
  for (int j = 0; i + j < n; ++j) part[j] = f(p[i + j], part[j]);
  T acc = ident;
  for (int j = 0; j < W; ++j) acc = f(part[j], acc);
  return acc;
}

// reduce along D (see reduce_to); the result a scalar when it has one element.
template <class Src, int D, class Lr, bool Comm, class T, class L, class F>
TP_DEV auto reduce_fast(const Tile<T, Src::numel, L>& x, T ident, F f) {
  constexpr int n = Src::dims[D], M = Src::numel / n;
  constexpr int inner_n = [] { int q = 1; for (int i = D + 1; i < Src::rank; ++i) q *= Src::dims[i]; return q; }();
  Tile<T, M, Lr> r;
  for (int o = 0; o < M / inner_n; ++o) {
    const T* line = x.v + o * n * inner_n;
    T* out = r.v + o * inner_n;
    if constexpr (inner_n == 1 && Comm) {
      out[0] = fold_lanes(line, n, ident, f);
    } else {
      for (int i = 0; i < inner_n; ++i) out[i] = ident;
      for (int k = 0; k < n; ++k)
        for (int i = 0; i < inner_n; ++i) out[i] = f(line[k * inner_n + i], out[i]);
    }
  }
  if constexpr (M == 1) return r.v[0]; else return r;
}

// Inclusive scan along D, as scan() in runtime.h, one pass per line.
template <class Src, int D, bool Reverse, class Lr, class T, class L, class F>
TP_DEV Tile<T, Src::numel, Lr> scan_fast(const Tile<T, Src::numel, L>& x, T ident, F f) {
  constexpr int n = Src::dims[D];
  constexpr int inner_n = [] { int q = 1; for (int i = D + 1; i < Src::rank; ++i) q *= Src::dims[i]; return q; }();
  Tile<T, Src::numel, Lr> r;
  for (int o = 0; o < Src::numel / (n * inner_n); ++o) {
    const T* line = x.v + o * n * inner_n;
    T* out = r.v + o * n * inner_n;
    T acc[inner_n];
    for (int i = 0; i < inner_n; ++i) acc[i] = ident;
    for (int kk = 0; kk < n; ++kk) {
      const int k = Reverse ? n - 1 - kk : kk;
      for (int i = 0; i < inner_n; ++i) out[k * inner_n + i] = acc[i] = f(line[k * inner_n + i], acc[i]);
    }
  }
  return r;
}

}  // namespace tp
#endif
