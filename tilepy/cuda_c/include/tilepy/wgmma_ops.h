// tilepy/wgmma_ops.h -- the sm_90a class's GEMM step: operands in wgmma's swizzled layouts,
// staged by the cp.async pipeline, multiplied by warpgroup MMA into an MmaAcc accumulator.
//
//   WgOp<T, R, C, Tr>               an R x C mma operand in shared memory (as SmemOp: stored R x C,
//                                   or C x R when Tr) in wgmma's canonical swizzled layout
//   load_async<S, DM, Vec>(v, idx, pad, op)   the cp.async copy of a tile into a WgOp
//   wgmma_tc<M, N, K, Kind>(a, b, [lo,] acc)  acc (MmaAcc<1, M, N, NW, 1>) + a @ b, b a WgOp,
//                                   a a WgOp or a 16-bit tile in acc's layout (wgmma's register
//                                   A); lo (WgLo): the descriptors' low words a K loop worked
//                                   out (wg_lo_once), else they are worked out from a and b
//   wgmma_acc<M, N, K, Kind, Wait>(a, b, [lo,] acc)   acc += a @ b in place, leaving `Wait`
//                                   groups in flight (1: the K loop's last group runs on)
//   wgmma_drain(acc)                wait_group 0: acc is the thread's again
//   tma_load<S, BR>(map, pos, op, bar)   the TMA copy of a tile into a WgOp (pos: tma_at's, or
//                                   a TmaAxis's `at` for the K loop's int32 indices)
//   tma_store<S, PR, BR>(map, pos, x, stage)   the staged epilogue: tile x (an accumulator's
//                                   layout) through shared memory at `stage` in passes of PR
//                                   rows, each written out by TMA stores of BR-row boxes
//
// Layout: a storage row of 32, 64 or 128 bytes is one row of a swizzle atom of that width (the
// PTX ISA's 32B / 64B / 128B swizzling: the 16-byte chunk index XORed with the row's 128-byte
// line, Swizzle<B, 4, 3>); wider rows are cut in 128-byte panels, each panel stored whole (all
// rows) after the previous one. The first is the layout SmemOp has for those widths; panels make
// a 128-byte-swizzled N-major B of any N a descriptor can walk (LBO: the panel stride). Buffers
// start at multiples of 1024 bytes (the emitter only takes such buffers), where the patterns
// repeat, so the descriptors' base offset is 0.
//
// Accumulator: all warps along M, interleaved by warpgroups (MmaAcc<1, M, N, NW, 1, 1>: FM
// fragments of 16 rows per warp, layout.h). Warpgroup g issues the m64nNk16 MMAs of its FM
// 64-row blocks of A, g * FM + i; the 16 rows warp j of the group holds there, ((g * FM + i) * 4
// + j) * 16.., are the rows warp 4g + j keeps in its fragment i, so A is stored in its own row
// order (one TMA box brings it). With wgmma's accumulator fragment being mma.m16n8's for every
// 8 columns, block i's N / 2 registers are slots i * N / 2.. of the tile, in order.
//
// Order in the K loop (emit_pipeline.py): the copies of this stage land (pipe_wait, which in this
// class also executes fence.proxy.async, or mbar_wait for TMA's), __syncthreads(), then
// wgmma_tc: wgmma.fence, the MMAs of every k16 step as one group, commit, wait_group 0 (the
// stage is refilled next iteration). Where the accumulator is only carried (lowering/wgmma.py
// `deferred`): the copies land (mbar_wait; pipe_wait and __syncthreads() for cp.async's),
// wgmma_acc with wait_group 1 (the previous iteration's group retires), __syncthreads(), the
// refill of the stage that group read; wgmma_drain after the loop.
// The fast CPU mode (one thread; the same swizzled operands) takes mma_compute's SIMT path.
#pragma once

namespace tp {

template <class T, int R, int C, bool Tr = false> struct WgOp {
  typedef T elem_t;
  static constexpr int bt = 1, rows = R, cols = C, elems = R * C;
  static constexpr bool tr = Tr;
  static constexpr int SR = Tr ? C : R, SC = Tr ? R : C;            // storage rows, columns
  static constexpr int EPC = 16 / (int)sizeof(T);
  static constexpr int PW = SC * (int)sizeof(T) >= 128 ? 128 / (int)sizeof(T) : SC;   // panel width
  static constexpr int SWB = PW * (int)sizeof(T);                    // swizzle bytes
  static_assert(SWB == 32 || SWB == 64 || SWB == 128, "a wgmma operand row is 32, 64 or n*128 bytes");
  static_assert(SC % PW == 0 && SR % 8 == 0, "wgmma operand of whole swizzle atoms");
  T* p;
  static constexpr int soff(int, int sr, int sc) {
    const int byte = sr * SWB + (sc % PW) * (int)sizeof(T);
    const int sw = byte ^ (((byte >> 7) & (SWB / 16 - 1)) << 4);
    return (sc / PW) * SR * PW + sw / (int)sizeof(T);
  }
  TP_DEV T* srow(int b, int sr, int sc) const { return p + soff(b, sr, sc); }
  TP_DEV T& at(int b, int r, int c) const { return Tr ? p[soff(b, c, r)] : p[soff(b, r, c)]; }
};

template <int R, int C, class T, int R2, int C2, bool Tr>
TP_DEV T elem_at(const WgOp<T, R2, C2, Tr>& x, int b, int r, int c) { return x.at(b, r, c); }

// tp::stage's stores into a WgOp (a loop-invariant A staged by the threads): wgmma reads them
// through the async proxy, so the faithful CPU mode tracks them until the thread's
// fence.proxy.async (PTX ISA, wgmma.mma_async: writes to the shared-memory matrices by the
// generic proxy need an async-proxy fence before the MMA reads them).
template <class T, int R, int C, bool Tr>
TP_DEV void staged_write(const WgOp<T, R, C, Tr>&, const void* dst, int bytes) {
#if !defined(TP_GPU) && defined(TP_FAITHFUL)
  cpu::smem_written(const_cast<void*>(dst), bytes, cpu::caller());
#else
  (void)dst, (void)bytes;
#endif
}

// The copy into a WgOp. Where NT threads cover whole storage rows (CPR chunks each, RS rows per
// step), thread t copies chunk column t % CPR of rows t / CPR + k * RS: in wgmma's layout the
// destination of row r0 + k * RS is row r0's plus an offset of k alone (`wg_rows_form` checks it
// for every r0 and column at compile time), so tensorcore.h's load_async_rows copies it with
// that step (WgStep): bounds and addresses worked out once, each chunk one predicated cp.async
// (zero padding). Any other case goes chunk by chunk (load_async_chunks).
template <class Op> constexpr int wg_step(int k) {
  return Op::soff(0, k * (NT / (Op::SC / Op::EPC)), 0) - Op::soff(0, 0, 0);
}
template <class Op> constexpr bool wg_rows_form() {
  constexpr int CPR = Op::SC / Op::EPC;
  if (TP_CPU_FAST || Op::SC % Op::EPC != 0 || NT % CPR != 0 || Op::SR % (NT / CPR) != 0) return false;
  for (int r0 = 0; r0 < NT / CPR; ++r0)
    for (int c = 0; c < Op::SC; c += Op::EPC)
      for (int k = 0; k * (NT / CPR) < Op::SR; ++k)
        if (Op::soff(0, r0 + k * (NT / CPR), c) - Op::soff(0, r0, c) != wg_step<Op>(k)) return false;
  return true;
}

template <class Op> struct WgStep {
  static constexpr int at(int k) { return wg_step<Op>(k); }
};

template <class S, class DM, bool Vec, bool Whole = false, class T, int R, class E, int R2, int C2,
          bool Tr>
TP_DEV void load_async(const View<T, R>& v, const int64_t (&idx)[R], T pad,
                       const WgOp<E, R2, C2, Tr>& d TP_VIEW_AT) {
  static_assert(S::numel == R2 * C2 && S::rank >= 2, "operand of another shape");
  using Op = WgOp<E, R2, C2, Tr>;
  static_assert(Op::SC % Op::EPC == 0, "wgmma rows are whole 16-byte chunks (lowering/wgmma.py)");
  if constexpr (!Vec) {   // alignment not proven: chosen at run time, as tensorcore.h's load_async
    if (chunks_aligned<DM, Tr ? S::rank - 2 : S::rank - 1>(v))
      return load_async<S, DM, true, Whole>(v, idx, pad, d TP_PASS_AT);
    return gather_chunks<S, DM>(v, idx, pad, d TP_PASS_AT);
  } else {
    if constexpr (wg_rows_form<Op>())   // (a padding other than zero goes chunk by chunk there)
      return load_async_rows<S, DM, Whole, WgStep>(v, idx, pad, d TP_PASS_AT);
    load_async_chunks<S, DM>(v, idx, pad, d TP_PASS_AT);
  }
}

// The TMA copy of a tile into a WgOp (lowering/wgmma.py took the view for a tensor map's, `map`,
// whose box is one panel's columns by BR storage rows; S is the tile in the view's dimension
// order, its last two the storage's rows and columns), issued by tma_issuer(): expect_tx of the
// tile's bytes on `bar`, then one cp.async.bulk.tensor per panel and per BR rows (BR: the storage
// rows, or 256 where there are more: TMA's largest box). `pos` is the tile's first element as
// TMA's coordinates (tma_at per view dimension, in the view's order), so a tile index however
// far outside gives zeros; the emitter works out those of indices the K loop does not change
// once, before the loop (ptxas does not hoist them out of the fetch's branches).
// A tile's first coordinate along a dimension of `extent` elements as TMA's 32-bit one: exact
// where it fits; below -2^31 the whole box is outside (INT32_MIN plus a box offset stays
// negative), at or past the extent the extent itself (offsets past it, wrapping to negative
// or not, stay outside): never an element that the 64-bit coordinate would not give. A view
// with no elements has a map of extent 1 in every dimension (launch/tensor_map.py, the driver
// takes no empty one): coordinate 1 puts the box outside it, so the copy is all fill, zeros, and
// reads no memory -- no branch in the K loop (one between a wgmma and its wait_group makes
// ptxas serialize the MMAs).
TP_DEV uint32_t tma_coord(int64_t x, int64_t extent) {
  return (uint32_t)(extent <= 0 ? 1 : x < -2147483647 - 1 ? -2147483647 - 1 : x >= extent ? extent : x);
}
// The coordinate along view dimension D of the tile of shape S at tile index x.
template <class S, int D, class T, int R> TP_DEV uint32_t tma_at(const View<T, R>& v, int64_t x) {
  static_assert(S::rank == R && D >= 0 && D < R, "a TMA tile has the view's dimensions");
  return tma_coord(x * S::dims[D], v.shape[D]);
}
// tma_at's coordinates along view dimension D for the K loop's int32 tile indices (the emitter
// makes one before the loop): the extent's tests worked out once, each coordinate then two
// compares and a multiply in 32 bits (tma_coord's 64-bit ones in each copy were 13 of the f16
// 128x128x32 loop's 80 instructions). `lim`: the first tile index whose coordinate is at or past
// the extent (INT32_MIN: a view with no elements), `fill`: tma_coord's value there; below `lo`
// a tile index times TD is below INT32_MIN. Equal to tma_at for every int32 index: where no
// int32 index reaches the extent, lim is INT32_MAX and fill that index's own coordinate.
template <int TD> struct TmaAxis {
  int32_t lim;
  uint32_t fill;
  TP_DEV uint32_t at(int32_t k) const {
    constexpr int32_t lo = (int32_t)-(2147483648ll / TD);
    return k >= lim ? fill : k < lo ? 0x80000000u : (uint32_t)k * (uint32_t)TD;
  }
};
template <class S, int D, class T, int R> TP_DEV TmaAxis<S::dims[D]> tma_axis(const View<T, R>& v) {
  constexpr int64_t TD = S::dims[D];
  const int64_t e = v.shape[D], lim = (e + TD - 1) / TD;
  if (e <= 0) return {-2147483647 - 1, 1u};
  if (lim > 2147483647) return {2147483647, (uint32_t)(2147483647 * TD)};
  return {(int32_t)lim, (uint32_t)e};
}
template <class S, int BR, int R, class E, int R2, int C2, bool Tr>
TP_DEV void tma_load(const TensorMap& map, const uint32_t (&pos)[R], const WgOp<E, R2, C2, Tr>& d,
                     uint64_t* bar TP_AT_CALLER) {
  using Op = WgOp<E, R2, C2, Tr>;
  static_assert(S::rank == R && R >= 2 && R <= 5 && S::dims[R - 2] == Op::SR &&
                S::dims[R - 1] == Op::SC && S::numel == Op::elems && Op::SR % BR == 0,
                "a TMA tile is the WgOp's storage");
  mbar_expect_tx(bar, Op::elems * (uint32_t)sizeof(E) TP_PASS_CALLER);
  TP_UNROLL
  for (int p = 0; p < Op::SC / Op::PW; ++p) {
    TP_UNROLL
    for (int r0 = 0; r0 < Op::SR; r0 += BR) {
      int32_t crd[R];   // innermost first
      TP_UNROLL
      for (int i = 0; i < R; ++i)
        crd[i] = (int32_t)(pos[R - 1 - i] + (i == 0 ? p * Op::PW : i == 1 ? r0 : 0));
      tma_copy<R>(map, d.p + p * Op::SR * Op::PW + r0 * Op::PW, bar, crd TP_PASS_CALLER);
    }
  }
}

// The staged epilogue (lowering/wgmma.py `staged_stores`, emit_wgmma.py). Tile x of shape S (the
// view's order; its last two dims the rows M and columns N) is written to shared memory at
// `stage` (the K loop's pipeline buffers, free once every warpgroup's MMAs retired) in passes of
// PR rows, in wgmma's layout of a PR x N operand (WgOp: panels of 128 bytes' columns, the
// 16-byte chunks XORed with the row's line), so a warp's fragment writes (8 rows by 4 lanes'
// pairs of columns) meet each bank at most as often as their bytes make necessary: an f32
// pair per lane is two wavefronts, a half2 one. Each pass is then stored by one thread with one
// TMA store per panel and BR rows (the map's box: `map`'s swizzle is the WgOp's), which clips
// what lies outside the array; the pass's shared memory is written again only after the
// store has read it (bulk_wait_read). The thread fences its writes for the async proxy before
// the barrier the issuing thread passes.
// (Async: the async proxy reads the rows next, smem_write's; else the threads do, plain stores)
template <bool Async, int V, class T> TP_DEV void stage_put(T* dst, const T* src TP_AT_CALLER) {
  if constexpr (Async) smem_write<V>(dst, src TP_PASS_CALLER);
  else vstore<V>(dst, src);
}
template <int PR, bool Async = true, class Op, class T, int NE, class L>
TP_DEV void stage_rows(const Op& d, const Tile<T, NE, L>& x, int p0 TP_AT_CALLER) {
  constexpr int N = Op::cols;
  if constexpr (is_mma_acc<L>::value && L::real) {   // fragment i of warpgroup g: block g FM + i
    static_assert(L::WN == 1 && L::wg, "an accumulator with all warps along M, by warpgroups");
    // The swizzle of a row is that of the row 8 above it (its XOR term changes every 8, 16 or 32
    // rows by multiples of its period), so the thread's G column blocks of a panel have one
    // address each, in its first row: every write is one of them plus a constant.
    constexpr int FM = L::FM, FN = L::FN, G = Op::PW / 8;
    const int g = NT == 128 ? 0 : warp_of() / 4, w = warp_of() % 4, l = lane_of();
    T* q[G];
    TP_UNROLL
    for (int j = 0; j < G; ++j) q[j] = &d.at(0, w * 16 + l / 4, 8 * j + 2 * (l % 4));
    TP_UNROLL
    for (int i = 0; i < FM; ++i) {
      const int blk = g * FM + i;      // (compile-time for one warpgroup)
      if (blk * 64 < p0 || blk * 64 >= p0 + PR) continue;
      TP_UNROLL
      for (int j = 0; j < FN; ++j) {
        TP_UNROLL
        for (int h = 0; h < 2; ++h)
          stage_put<Async, 2>(q[j % G] + (j / G) * PR * Op::PW + (blk * 64 + 8 * h - p0) * Op::PW,
                              &x.v[(i * FN + j) * 4 + 2 * h] TP_PASS_CALLER);
      }
    }
  } else {
    TP_UNROLL
    for (int s = 0; s < L::K; ++s) {
      if (!L::owner(s)) continue;
      const int e = L::elem(s), r = e / N - p0;
      if (r >= 0 && r < PR) stage_put<Async, 1>(&d.at(0, r, e % N), &x.v[s] TP_PASS_CALLER);
    }
  }
}

template <class S, int PR, int BR, int R, class T, int NE, class L>
TP_DEV void tma_store(const TensorMap& map, const uint32_t (&pos)[R], const Tile<T, NE, L>& x,
                      T* stage TP_AT_CALLER) {
  constexpr int M = S::dims[R - 2], N = S::dims[R - 1];
  using Op = WgOp<T, PR, N>;
  static_assert(S::rank == R && R >= 2 && S::numel == NE && NE == M * N && M % PR == 0 &&
                PR % BR == 0 && BR <= 256, "a staged store of whole passes of whole boxes");
  __syncthreads();   // every warpgroup's MMAs retired: the pipeline's buffers are free
  TP_UNROLL
  for (int p0 = 0; p0 < M; p0 += PR) {
    if (p0) __syncthreads();        // the previous pass's stores have read the stage
    stage_rows<PR>(Op{stage}, x, p0 TP_PASS_CALLER);
    fence_proxy_async();            // this thread's writes, seen by the TMA store
    __syncthreads();
    if (tma_issuer()) {
      TP_UNROLL
      for (int p = 0; p < N / Op::PW; ++p) {
        TP_UNROLL
        for (int r0 = 0; r0 < PR; r0 += BR) {
          int32_t crd[R];   // innermost first
          TP_UNROLL
          for (int i = 0; i < R; ++i)
            crd[i] = (int32_t)(pos[R - 1 - i] + (i == 0 ? p * Op::PW : i == 1 ? p0 + r0 : 0));
          tma_store_copy<R>(map, stage + p * PR * Op::PW + r0 * Op::PW, crd TP_PASS_CALLER);
        }
      }
      bulk_commit();
      bulk_wait_read<0>(0 TP_PASS_CALLER);   // (before the stage is written again or the block exits)
    }
  }
}

// The staged epilogue where no tensor map describes the view (emit_wgmma.py): the passes of
// tma_store, each read back by the threads as 16-byte chunks in row order (a Blocked tile of
// the pass's PR rows, shape SP) and written by tp::store: 128-bit stores where the view's
// alignment is proven (Vec), consecutive threads on consecutive chunks, masked at the edges.
template <class S, class SP, class DM, bool Vec, int PR, class T, int R, int NE, class L>
TP_DEV void staged_store(const View<T, R>& v, const int64_t (&idx)[R], const Tile<T, NE, L>& x,
                         T* stage TP_VIEW_AT) {
  constexpr int M = S::dims[R - 2], N = S::dims[R - 1], V = 16 / (int)sizeof(T);
  using Op = WgOp<T, PR, N>;
  using LB = Blocked<PR * N, V>;
  static_assert(S::rank == R && SP::rank == R && SP::dims[R - 2] == PR && SP::numel == PR * N &&
                NE == M * N && M % PR == 0 && N % V == 0, "a staged store of whole passes");
  __syncthreads();   // every warpgroup's MMAs retired: the pipeline's buffers are free
  TP_UNROLL
  for (int p0 = 0; p0 < M; p0 += PR) {
    if (p0) __syncthreads();        // every thread has read the previous pass back
    stage_rows<PR, false>(Op{stage}, x, p0);
    __syncthreads();
    Tile<T, PR * N, LB> y;
    TP_UNROLL
    for (int s = 0; s < LB::K; s += V) {
      if (!LB::valid(s)) continue;
      const int e = LB::elem(s);
      vload<V>(&y.v[s], &Op{stage}.at(0, e / N, e % N));   // (a 16-byte chunk: one swizzled chunk)
    }
    int64_t sub[R];   // the pass's PR rows as a tile index
    TP_UNROLL
    for (int d = 0; d < R; ++d) sub[d] = d == R - 2 ? idx[d] * (M / PR) + p0 / PR : idx[d];
    store<SP, DM, Vec>(v, sub, y TP_PASS_AT);
  }
}

// Descriptors. A (K-major): 64 storage rows from row 64 * blk, k0..k0+15. B: K-major when
// stored N x K (Tr), else N-major: rows k0..k0+15 of every panel (LBO: the panel stride). Each
// is its operand's base descriptor plus the start address's offset in 16-byte units (`*_units`,
// compile-time constants but for the warpgroup's rows): the address field is the shared-memory
// offset / 16 in 14 bits, which dynamic shared memory (< 256 KiB) never carries out of. The base
// is a high word the same for all of an operand's descriptors (wg_hi) and a low word, wg_lo:
// the start address and LBO, which role B (true) or A gives.
template <class Op> constexpr uint64_t k_major_units(int row, int k0) {
  return (uint64_t)(((k0 / Op::PW) * Op::SR * Op::PW + row * Op::PW + k0 % Op::PW) *
                    (int)sizeof(typename Op::elem_t) / 16);
}
template <class Op> constexpr uint64_t wg_b_units(int k0) {
  return Op::tr ? k_major_units<Op>(0, k0) : (uint64_t)(k0 * Op::SWB / 16);
}
template <class Op> constexpr uint64_t wg_hi() { return wgmma_desc_hi(8 * Op::SWB, Op::SWB); }
template <bool B, class Op> TP_DEV uint32_t wg_lo(const Op& x) {
  static_assert(B || !Op::tr, "wgmma's A here is K-major");
  return wgmma_desc_lo(x.p, B && !Op::tr ? Op::SR * Op::SWB : 16);
}
template <class Op> TP_DEV uint64_t wg_base_a(const Op& a) { return wg_hi<Op>() | wg_lo<false>(a); }
template <class Op> TP_DEV uint64_t wg_base_b(const Op& b) { return wg_hi<Op>() | wg_lo<true>(b); }
template <class Op> TP_DEV uint64_t wg_desc_a(const Op& a, int blk, int k0) {
  return wg_base_a(a) + k_major_units<Op>(blk * 64, k0);
}
template <class Op> TP_DEV uint64_t wg_desc_b(const Op& b, int k0) {
  return wg_base_b(b) + wg_b_units<Op>(k0);
}

// The thread's warpgroup as a value ptxas knows the warp shares (a shuffle from lane 0, as
// tma_issuer's warp index), so that what depends on it lives in uniform registers: A's
// descriptors, computed per thread and moved to uniform registers (R2UR) for every MMA otherwise.
TP_DEV int warpgroup_of() {
#if defined(TP_GPU)
  return NT == 128 ? 0 : __shfl_sync(0xffffffffu, warp_of() / 4, 0);
#else
  return NT == 128 ? 0 : warp_of() / 4;
#endif
}
// A's low word at the first row of the thread's warpgroup's 64-row blocks (warpgroup g's are
// g * FM.., FM the blocks per warpgroup: its rows / the warpgroups).
template <class Op> TP_DEV uint32_t wg_lo_rows(const Op& a) {
  return wg_lo<false>(a) + (uint32_t)k_major_units<Op>(warpgroup_of() * (Op::rows / (NT / 128)), 0);
}

// The K loop's descriptors (emit_pipeline.py): an operand's low word (A's: wg_lo_rows) in stage
// 0 (or where it is staged once before the loop) worked out before the loop by wg_lo_once, a
// stage's low word that plus the stage's offset in 16-byte units (one instruction per operand
// in the loop: ptxas recomputed the shared-memory address's shift and `|` from the buffer's
// address in every iteration, NVVM taking it for a constant). WgLo carries A's and B's into the
// MMAs (A's unused where A is in registers).
struct WgLo { uint32_t a, b; };
template <bool B, class Op> TP_DEV uint32_t wg_lo_once(const Op& x) {
  uint32_t lo;
  if constexpr (B) lo = wg_lo<true>(x);
  else lo = wg_lo_rows(x);
#if defined(TP_GPU) && TP_WGMMA
  asm("mov.b32 %0, %0;" : "+r"(lo));   // (opaque to NVVM: not sunk into the loop)
#endif
  return lo;
}
template <class OA, class OB> TP_DEV WgLo wg_lo_of(const OA& a, const OB& b) {
  if constexpr (TP_CPU_FAST) return {0u, 0u};   // (mma_compute's operands: no descriptors)
  else if constexpr (a_in_regs<OA>::value) return {0u, wg_lo<true>(b)};
  else return {wg_lo_rows(a), wg_lo<true>(b)};
}

// The MMAs of acc += a @ b issued as one group, on acc's registers in place: wgmma.fence, every
// k16 step's m64nNk16 per 64-row block, commit, then wgmma.wait_group Wait (1: this group stays
// in flight, and acc's registers are the hardware's until a later wait retires it). A is a WgOp
// (by its descriptors) or a 16-bit register tile in acc's own layout (a_in_regs: attention's P):
// then block i's A fragment of k16 step k0 is the tile's registers of its columns k0..k0+15,
// pairwise packed (frag_a_regs: an accumulator's two 8-column blocks are mma.m16n8k16's A
// fragment, which is wgmma's register A per warp), packed before the fence; they are read
// until the wait, so that form waits in its own step (Wait 0).
template <int M, int N, int K, int Kind, int Wait = 1, class TC, class LC, class OA, class OB>
TP_DEV void wgmma_acc(const OA& a, const OB& b, WgLo lo, Tile<TC, M * N, LC>& acc TP_AT_CALLER) {
#if TP_CPU_FAST
  acc = mma_compute<1, M, N, K, Kind, 0>(a, b, acc);
#else
  static_assert(same<TC, float>::value && LC::real && LC::WN == 1 && LC::wg && NT % 128 == 0 &&
                K % 16 == 0, "an accumulator wgmma does not take");
  constexpr int FM = LC::FM, NR = N / 2;
  constexpr bool ra = a_in_regs<OA>::value;
  static_assert(!ra || (a_in_regs<OA>::fm == FM && a_in_regs<OA>::wg && Wait == 0),
                "a register A in the accumulator's layout, retired in its own step");
  const uint64_t db = wg_hi<OB>() | lo.b;
  uint64_t da = 0;
  uint32_t af[ra ? FM : 1][ra ? K / 16 : 1][4];     // A's fragments, where A is in registers
  if constexpr (ra) {
    TP_UNROLL
    for (int i = 0; i < FM; ++i) {
      TP_UNROLL
      for (int k0 = 0; k0 < K; k0 += 16) frag_a_regs(af[i][k0 / 16], a, 0, i, k0);
    }
    wgmma_wrote_a();
    wgmma_regs(*(uint32_t(*)[FM * (K / 16) * 4])af);
  } else {
    static_assert(OA::rows == M && M == FM * 64 * (NT / 128), "A: the warpgroups' 64-row blocks");
    da = wg_hi<OA>() | lo.a;       // (at the warpgroup's first row: wg_lo_rows)
  }
  wgmma_regs(acc.v);
  wgmma_fence();
  TP_UNROLL
  for (int k0 = 0; k0 < K; k0 += 16) {
    TP_UNROLL
    for (int i = 0; i < FM; ++i) {
      float(&d)[NR] = *(float(*)[NR])(acc.v + i * NR);
      if constexpr (ra) wgmma_async<N, Kind, OB::tr ? 0 : 1>(d, af[i][k0 / 16], db + wg_b_units<OB>(k0), 1);
      else wgmma_async<N, Kind, OB::tr ? 0 : 1>(d, da + k_major_units<OA>(i * 64, k0),
                                                db + wg_b_units<OB>(k0), 1);
    }
  }
  wgmma_commit();
  wgmma_wait<Wait>(0 TP_PASS_CALLER);
  wgmma_regs(acc.v);
  if constexpr (ra) wgmma_regs(*(uint32_t(*)[FM * (K / 16) * 4])af);
#endif
}
template <int M, int N, int K, int Kind, int Wait = 1, class TC, class LC, class OA, class OB>
TP_DEV void wgmma_acc(const OA& a, const OB& b, Tile<TC, M * N, LC>& acc TP_AT_CALLER) {
  wgmma_acc<M, N, K, Kind, Wait>(a, b, wg_lo_of(a, b), acc TP_PASS_CALLER);
}

// The wait that retires every group in flight before the accumulator is read (after a K loop
// whose wgmma_acc left one group running): wgmma.wait_group 0, the registers then the thread's.
template <class TC, int NE, class LC> TP_DEV void wgmma_drain(Tile<TC, NE, LC>& acc TP_AT_CALLER) {
#if !TP_CPU_FAST
  wgmma_wait<0>(0 TP_PASS_CALLER);
  wgmma_regs(acc.v);
#endif
}

template <int M, int N, int K, int Kind, class TC, class LC, class OA, class OB>
TP_DEV Tile<TC, M * N, LC> wgmma_tc(const OA& a, const OB& b, WgLo lo,
                                    const Tile<TC, M * N, LC>& c TP_AT_CALLER) {
  Tile<TC, M * N, LC> r = c;
  wgmma_acc<M, N, K, Kind, 0>(a, b, lo, r TP_PASS_CALLER);
  return r;
}
template <int M, int N, int K, int Kind, class TC, class LC, class OA, class OB>
TP_DEV Tile<TC, M * N, LC> wgmma_tc(const OA& a, const OB& b, const Tile<TC, M * N, LC>& c
                                    TP_AT_CALLER) {
  return wgmma_tc<M, N, K, Kind>(a, b, wg_lo_of(a, b), c TP_PASS_CALLER);
}

}  // namespace tp
