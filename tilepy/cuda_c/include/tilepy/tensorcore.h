// tilepy/tensorcore.h -- matrix multiply-accumulate on tensor cores, fed from shared memory.
//
//   SmemOp<T, Bt, R, C, Tr>          an (Bt x) R x C mma operand in shared memory (swizzled)
//   stage(x, op)                     a register tile (any layout) -> shared memory
//   load_async<S, DM, Vec>(v, idx, pad, op)   a tile of a partition view -> shared memory with
//                                    16-byte cp.async where the chunk is inside and aligned
//                                    (Vec: proven; otherwise checked once per call, with an
//                                    unrolled gather where it fails)
//   pipe_commit(), pipe_wait<N>()    cp.async groups (nothing to do where copies are synchronous)
//   mma_tc<Bt, M, N, K, Kind, Flags>(a, b, acc, scratch)
//                                    acc (layout MmaAcc) + a @ b; a and b are SmemOps or register
//                                    tiles (staged into `scratch` first)
//
// Kinds: 0 SIMT (f32, f64), 1 f16, 2 bf16, 3 tf32, 4 i8, 5 e4m3, 6 e5m2 (Flags bit 0: lhs signed, bit 1: rhs
// signed), with Flags bit 2 / bit 3: round lhs / rhs to tf32 as the fragments are read. Where the
// GPU has the instruction (f16: sm_75 as two m16n8k8, the others sm_80) and in the faithful CPU
// mode, every warp loads its fragments with ldmatrix (or, where ldmatrix cannot transpose, with
// per-element loads following the PTX ISA fragment tables) and issues mma.sync; elsewhere (fast
// CPU mode, older GPUs, f32/f64) the same layout is computed with scalar multiply-adds.
//
// Shared-memory layout: the operand is stored row-major as R x C (or C x R when Tr: the
// transposed tile a load with a transposing dimension map gives with contiguous rows), each
// storage row cut in 16-byte chunks whose index is XORed with (row / rows-per-128-bytes) % 8, so
// the 8 rows one ldmatrix reads (and the 8 chunks a warp's cp.async writes) hit distinct banks.
#pragma once

namespace tp {

template <class T, int Bt, int R, int C, bool Tr = false> struct SmemOp {
  typedef T elem_t;
  static constexpr int bt = Bt, rows = R, cols = C;
  static constexpr bool tr = Tr;
  static constexpr int SR = Tr ? C : R, SC = Tr ? R : C;          // storage rows, columns
  static constexpr int EPC = 16 / (int)sizeof(T), CPR = SC / EPC;  // elements, chunks per row
  static constexpr int SW = CPR >= 8 ? 8 : CPR, RPL = CPR >= 8 ? 1 : (CPR > 0 ? 8 / CPR : 1);
  static constexpr int elems = Bt * R * C;
  T* p;
  TP_DEV static int soff(int b, int sr, int sc) {   // (no swizzle in the fast CPU mode)
    if constexpr (CPR <= 1 || TP_CPU_FAST) return (b * SR + sr) * SC + sc;
    else return (b * SR + sr) * SC + (((sc / EPC) ^ ((sr / RPL) % SW)) * EPC) + sc % EPC;
  }
  TP_DEV T* srow(int b, int sr, int sc) const { return p + soff(b, sr, sc); }
#if defined(TP_GPU)   // a 32-bit shared address: the row offset stays one add (not merged and rescaled)
  TP_DEV SharedAddr saddr(int b, int sr, int sc) const {
    return {smem_addr(p) + (uint32_t)soff(b, sr, sc) * (uint32_t)sizeof(T)};
  }
#else
  TP_DEV T* saddr(int b, int sr, int sc) const { return srow(b, sr, sc); }
#endif
  TP_DEV T& at(int b, int r, int c) const { return Tr ? p[soff(b, c, r)] : p[soff(b, r, c)]; }
};

template <class X> struct is_smem_op { static constexpr bool value = false; };
template <class T, int Bt, int R, int C, bool Tr> struct is_smem_op<SmemOp<T, Bt, R, C, Tr>> {
  static constexpr bool value = true;
};

// Element (b, r, c) of an R x C operand: in shared memory, or in a register tile held whole by
// the one thread of the fast CPU mode (identity layout).
template <int R, int C, class T, int Bt, int R2, int C2, bool Tr>
TP_DEV T elem_at(const SmemOp<T, Bt, R2, C2, Tr>& x, int b, int r, int c) { return x.at(b, r, c); }
template <int R, int C, class T, int N, class L>
TP_DEV T elem_at(const Tile<T, N, L>& x, int b, int r, int c) { return x.v[(b * R + r) * C + c]; }

// A thread's store into operand d that tp::stage makes: nothing here; for an operand warpgroup
// MMA reads through the async proxy (wgmma_ops.h's WgOp overload) the faithful CPU mode tracks
// it, so that a wgmma reading it before the thread's fence.proxy.async is reported.
template <class Op> TP_DEV void staged_write(const Op&, const void*, int) {}

template <class Op, class T, int N, class L> TP_DEV void stage(const Tile<T, N, L>& x, const Op& d) {
  static_assert(N == Op::elems, "operand of another size");
  constexpr int W = L::vec < Op::EPC ? L::vec : Op::EPC;   // slots per vector store
  if constexpr (!Op::tr && W >= 2 && W * sizeof(T) >= 4 && Op::cols % W == 0 && !L::replicated) {
    TP_UNROLL   // runs of W consecutive elements stay together in a swizzled row
    for (int s = 0; s < L::K; s += W) {
      if (!L::valid(s)) continue;
      const int e = L::elem(s);
      T* const p = d.srow(e / (Op::rows * Op::cols), (e / Op::cols) % Op::rows, e % Op::cols);
      vstore<W>(p, &x.v[s]);
      staged_write(d, p, W * (int)sizeof(T));
    }
  } else {
    TP_UNROLL
    for (int s = 0; s < L::K; ++s) {
      if (!L::owner(s)) continue;
      const int e = L::elem(s);
      T& r = d.at(e / (Op::rows * Op::cols), (e / Op::cols) % Op::rows, e % Op::cols);
      r = x.v[s];
      staged_write(d, &r, (int)sizeof(T));
    }
  }
}

TP_DEV void pipe_commit() {
#if TP_WARP_OPS
  cp_async_commit();
#endif
}
template <int N> TP_DEV void pipe_wait() {
#if TP_WARP_OPS
  cp_async_wait<N>();
#endif
#if TP_WGMMA
  fence_proxy_async();   // wgmma.h: wgmma (the async proxy) reads what landed
#endif
}

// Whether x is all zero bits (+0, not -0): the padding a zero-filling copy gives.
template <class T> TP_DEV bool zero_bits(T x) {
  unsigned char b[sizeof(T)];
  memcpy(b, &x, sizeof(T));
  bool z = true;
  TP_UNROLL
  for (unsigned i = 0; i < sizeof(T); ++i) z &= b[i] == 0;
  return z;
}

// 16 bytes to shared memory when guard: from src, or zeros when !src_in (src not read).
template <class T> TP_DEV void copy16_pred(T* dst, const T* src, bool guard, bool src_in) {
#if TP_WARP_OPS
  cp_async16_pred(dst, src, guard, src_in);
#else
  if (guard) copy16_zfill(dst, src, src_in ? 16 : 0);
#endif
}

// 16 bytes to shared memory: the first `bytes` from src, zeros after them (src is not read
// past them).
template <class T> TP_DEV void copy16_zfill(T* dst, const T* src, int bytes) {
#if TP_WARP_OPS
  cp_async_zfill<16>(dst, src, bytes);
#else
  memcpy(dst, src, bytes);
  memset((char*)dst + bytes, 0, 16 - bytes);
#endif
}

// Chunk `ch` of operand `d` (16 bytes of a storage row): its batch, storage row and column, and
// the tile's linear index of its first element.
template <class Op> TP_DEV int chunk_at(int ch, int& b, int& sr, int& sc) {
  constexpr int EPC = Op::EPC, SC = Op::SC, RC = Op::rows * Op::cols;
  b = ch / (RC / EPC);
  const int rem = ch % (RC / EPC);
  sr = rem / (SC / EPC), sc = (rem % (SC / EPC)) * EPC;
  return b * RC + (Op::tr ? sc * Op::cols + sr : sr * Op::cols + sc);
}

// The tile of shape S at `idx` of a partition view into the operand `d` (the tile's linear index
// is the operand's), its chunks aligned in memory. Each thread copies 16-byte chunks of storage
// rows; a chunk inside the tensor is one cp.async, one at the edge is copied element by element
// with padding (zero padding: a zero-filling cp.async). Visible to the block after pipe_wait and
// __syncthreads().
template <class S, class DM, class Op, class T, int R>
TP_DEV void load_async_chunks(const View<T, R>& v, const int64_t (&idx)[R], T pad, const Op& d
                              TP_VIEW_AT) {
  constexpr int EPC = Op::EPC;
  constexpr int CD = Op::tr ? S::rank - 2 : S::rank - 1;    // the tile dimension of a storage row
  constexpr int NCH = Op::elems / EPC, ITER = (NCH + NT - 1) / NT;
  TP_UNROLL
  for (int k = 0; k < ITER; ++k) {
    const int ch = k * NT + tid();
    if (NCH % NT != 0 && ch >= NCH) break;
    int b, sr, sc;
    const int e0 = chunk_at<Op>(ch, b, sr, sc);
    T* dst = d.srow(b, sr, sc);
    int64_t off;
    const int n = chunk_span<S, DM, EPC, CD>(v, idx, e0, off);
    if (n == EPC || zero_bits(pad)) {   // zero padding: the copy fills it in
      copy16_zfill(dst, n ? TP_VADDR(v, off, n, "a cp.async read") : v.base,
                   n * (int)sizeof(T));
    } else {
      const int64_t stride = v.stride[DM::map[CD]];
      TP_ROLLED   // a chunk at the tensor's edge (rare): a loop, not EPC copies of a branch
      for (int j = 0; j < EPC; ++j)
        dst[j] = j < n ? *TP_VADDR(v, off + j * stride, 1, "a load") : pad;
    }
  }
}

// load_async where 16-byte chunks are not aligned in memory (a stride or base address that is
// not a multiple of 16 bytes: the documented fallback of ARCHITECTURE.md decision 10). Unrolled:
// each thread first reads every element of its chunks into registers (all loads in flight at
// once), then writes each chunk with one 16-byte shared-memory store. Synchronous copies: the
// tile is in place after __syncthreads(), as a cp.async one is after pipe_wait too.
template <class S, class DM, class Op, class T, int R>
TP_DEV void gather_chunks(const View<T, R>& v, const int64_t (&idx)[R], T pad, const Op& d
                          TP_VIEW_AT) {
  constexpr int EPC = Op::EPC, CD = Op::tr ? S::rank - 2 : S::rank - 1;
  constexpr int NCH = Op::elems / EPC, ITER = (NCH + NT - 1) / NT;
  const int64_t stride = v.stride[DM::map[CD]];
  T vals[ITER][EPC];
  TP_UNROLL
  for (int k = 0; k < ITER; ++k) {
    const int ch = k * NT + tid();
    int b, sr, sc;
    int64_t off = 0;
    const int n = NCH % NT == 0 || ch < NCH
                      ? chunk_span<S, DM, EPC, CD>(v, idx, chunk_at<Op>(ch, b, sr, sc), off) : 0;
    TP_UNROLL
    for (int j = 0; j < EPC; ++j)
      vals[k][j] = j < n ? *TP_VADDR(v, off + j * stride, 1, "a load") : pad;
  }
  TP_UNROLL
  for (int k = 0; k < ITER; ++k) {
    const int ch = k * NT + tid();
    if (NCH % NT != 0 && ch >= NCH) break;
    int b, sr, sc;
    chunk_at<Op>(ch, b, sr, sc);
    vstore<EPC>(d.srow(b, sr, sc), vals[k]);
  }
}

// Whether 16-byte chunks along tile dimension CD are aligned in this tensor's memory, checked at
// run time (Vec states it where the specialization proved it): the base address a multiple of
// 16 bytes, that dimension of unit stride, every other stride a multiple of 16 bytes. It reads
// the arguments only, so every thread of the block takes the same branch.
template <class DM, int CD, class T, int R> TP_DEV bool chunks_aligned(const View<T, R>& v) {
  bool ok = ((size_t)v.base & 15) == 0;
  TP_UNROLL
  for (int i = 0; i < R; ++i)
    ok &= i == DM::map[CD] ? v.stride[i] == 1 : (v.stride[i] * (int64_t)sizeof(T)) % 16 == 0;
  return ok;
}

// load_async's common case, the K loop of a GEMM: one 2-D operand (batch 1) whose storage rows
// a whole number of threads cover (each thread the same column chunk in every row it copies),
// with a row step that keeps the swizzle, and aligned contiguous chunks (Vec). Bounds and
// addresses are worked out once per tile; each chunk is then a pointer step, a row compare and
// one predicated cp.async (no branch): a row outside is zero-filled. A thread whose column chunk
// straddles the tensor's edge copies its part of each row after that, in a rolled loop (zero
// padding is the only padding this form takes; other paddings go chunk by chunk). Whole: the
// specialization proved the contiguous extent a multiple of 16 bytes, so no chunk straddles it.
template <class Op> constexpr bool rows_form() {
  constexpr int CPR = Op::SC / Op::EPC;
  if constexpr (Op::bt != 1 || Op::SC % Op::EPC != 0 || CPR == 0 || NT % CPR != 0) return false;
  else return (NT / CPR) % (Op::RPL * Op::SW) == 0 || CPR <= 1;
}
// Where the copy of row r0 + k * RS lands, from row r0's: RS storage rows on in this file's
// operands; wgmma_ops.h's swizzled operands give their own step (WgStep).
template <class Op> struct RowStep {
  static constexpr int at(int k) { return k * (NT / (Op::SC / Op::EPC)) * Op::SC; }
};
template <class S, class DM, bool Whole, template <class> class Step = RowStep, class Op, class T,
          int R>
TP_DEV void load_async_rows(const View<T, R>& v, const int64_t (&idx)[R], T pad, const Op& d
                            TP_VIEW_AT) {
  constexpr int EPC = Op::EPC, CPR = Op::SC / EPC, RS = NT / CPR, SR = Op::SR;
  constexpr int CD = Op::tr ? S::rank - 2 : S::rank - 1, RD = Op::tr ? S::rank - 1 : S::rank - 2;
  if (!zero_bits(pad)) return load_async_chunks<S, DM>(v, idx, pad, d TP_PASS_AT);
  bool others_in = true;   // the tile's other dimensions have extent 1
  TP_UNROLL
  for (int i = 0; i < S::rank; ++i)
    if (i != CD && i != RD) others_in &= in_extent(idx[i], v.shape[DM::map[i]]);
  // a tile index below 0 is a tile wholly outside (runtime.h in_extent): no row, no column in
  const int64_t rows_left =
      idx[RD] < 0 ? 0 : v.shape[DM::map[RD]] - idx[RD] * (int64_t)S::dims[RD];
  const int rows = others_in ? (rows_left < SR ? (rows_left > 0 ? (int)rows_left : 0) : SR) : 0;
  const int t = tid(), r0 = t / CPR, sc = (t % CPR) * EPC;
  const int64_t cols_left =
      idx[CD] < 0 ? 0 : v.shape[DM::map[CD]] - idx[CD] * (int64_t)S::dims[CD] - sc;
  const int nbytes = (cols_left >= EPC ? EPC : cols_left > 0 ? (int)cols_left : 0) * (int)sizeof(T);
  const int64_t rstride = v.stride[DM::map[RD]];
  const T* src = v.base + tile_origin<S, DM>(v, idx) + r0 * rstride + sc;
  T* dst = d.srow(0, r0, sc);
  const bool whole = Whole || nbytes == 16 || nbytes == 0;   // this thread's column chunk: in or out
  TP_UNROLL
  for (int k = 0; k * RS < SR; ++k) {
    if (SR % RS != 0 && r0 + k * RS >= SR) break;
    if (nbytes && r0 + k * RS < rows)
      TP_CHECK_VIEW(v, src + k * RS * rstride, nbytes, "a cp.async read");
    copy16_pred(dst + Step<Op>::at(k), src + k * RS * rstride, whole, nbytes && r0 + k * RS < rows);
  }
  if (!whole) {   // the chunk straddles the tensor's edge (rare): copy its part, zeros after it
    TP_ROLLED
    for (int k = 0; k * RS < SR; ++k) {
      if (SR % RS != 0 && r0 + k * RS >= SR) break;
      copy16_zfill(dst + Step<Op>::at(k), src + k * RS * rstride, r0 + k * RS < rows ? nbytes : 0);
    }
  }
}

template <class S, class DM, bool Vec, bool Whole = false, class Op, class T, int R>
TP_DEV void load_async(const View<T, R>& v, const int64_t (&idx)[R], T pad, const Op& d TP_VIEW_AT) {
  static_assert(S::numel == Op::elems && S::rank >= 2, "operand of another shape");
#if TP_CPU_FAST
  if constexpr (!Op::tr) return load_rows<S, DM>(d.p, v, idx, pad);   // unswizzled, row-major
#endif
  if constexpr (!Vec && Op::SC % Op::EPC == 0) {   // not proven: choose at run time
    if (chunks_aligned<DM, Op::tr ? S::rank - 2 : S::rank - 1>(v))
      load_async<S, DM, true, Whole>(v, idx, pad, d TP_PASS_AT);
    else
      gather_chunks<S, DM>(v, idx, pad, d TP_PASS_AT);
  } else if constexpr (Vec && rows_form<Op>()) {
    load_async_rows<S, DM, Whole>(v, idx, pad, d TP_PASS_AT);
  } else if constexpr (Op::SC % Op::EPC == 0) {
    load_async_chunks<S, DM>(v, idx, pad, d TP_PASS_AT);
  } else {
    constexpr int RC = Op::rows * Op::cols, ITER = (Op::elems + NT - 1) / NT;
    TP_UNROLL
    for (int k = 0; k < ITER; ++k) {
      const int e = k * NT + tid();
      if (Op::elems % NT != 0 && e >= Op::elems) break;
      const int64_t off = part_offset<S, DM>(v, idx, e);
      d.at(e / RC, (e / Op::cols) % Op::rows, e % Op::cols) =
          off >= 0 ? *TP_VADDR(v, off, 1, "a load") : pad;
    }
  }
}

// f32 -> tf32, round to nearest even (what ftof to tf32 does); NaN stays NaN.
TP_DEV float tf32_rne(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return f32_from_bits(u | 0x00400000u);
  u += 0xfffu + ((u >> 13) & 1u);
  return f32_from_bits(u & 0xffffe000u);
}

// ------------------------------------------------------------------------------ kinds
template <int Kind> constexpr bool tc_available() {
#if TP_WARP_OPS && defined(TP_GPU)
  return (Kind == 1 && TP_ARCH >= 750) || ((Kind == 2 || Kind == 3 || Kind == 4) && TP_ARCH >= 800) ||
         ((Kind == 5 || Kind == 6) && TP_ARCH >= 890);
#elif TP_WARP_OPS
  return Kind >= 1 && Kind <= 6;
#else
  return false;
#endif
}
template <int Kind> struct kstep { static constexpr int value = Kind == 3 ? 8 : Kind >= 4 ? 32 : 16; };
template <int Kind> constexpr bool is_8bit_kind() { return Kind >= 4; }   // i8, e4m3, e5m2

// An operand element as the value the multiply uses (Acc: float, double or int32 as uint32).
template <int Kind, bool Signed, bool RoundTf32, class Acc, class T> TP_DEV Acc mul_value(T x) {
  if constexpr (Kind == 4) {
    return Signed ? (Acc)(int32_t)(int8_t)x : (Acc)(uint32_t)(uint8_t)x;
  } else if constexpr (RoundTf32) {
    return (Acc)tf32_rne(cvt<float>(x));
  } else {
    return cvt<Acc>(x);
  }
}

// The bits of one operand element in a fragment register.
template <int Kind, bool RoundTf32, class T> TP_DEV uint32_t frag_bits(T x) {
  if constexpr (sizeof(T) == 2) {
    uint16_t u;
    memcpy(&u, &x, 2);
    return u;
  } else if constexpr (sizeof(T) == 1) {
    uint8_t u;
    memcpy(&u, &x, 1);
    return u;
  } else {
    return f32_bits(RoundTf32 ? tf32_rne(x) : x);
  }
}

// PTX ISA fragment coordinates, lane l (g = l / 4, t = l % 4), element i: {row or k, k or n}.
struct FragCoord { int r, c; };
template <int Kind> struct frag;
template <> struct frag<1> {   // m16n8k16 .f16/.bf16 (and k8 twice)
  static constexpr int NA = 8, NB = 4, RA = 4, RB = 2;
  TP_DEV static FragCoord a(int l, int i) {
    return {l / 4 + 8 * ((i >> 1) & 1), 2 * (l % 4) + (i & 1) + 8 * (i >> 2)};
  }
  TP_DEV static FragCoord b(int l, int i) { return {2 * (l % 4) + (i & 1) + 8 * (i >> 1), l / 4}; }
};
template <> struct frag<2> : frag<1> {};
template <> struct frag<3> {   // m16n8k8 .tf32
  static constexpr int NA = 4, NB = 2, RA = 4, RB = 2;
  TP_DEV static FragCoord a(int l, int i) { return {l / 4 + 8 * (i & 1), l % 4 + 4 * (i >> 1)}; }
  TP_DEV static FragCoord b(int l, int i) { return {l % 4 + 4 * i, l / 4}; }
};
template <> struct frag<4> {   // m16n8k32 .s8/.u8 (and .e4m3/.e5m2: frag<5>, frag<6>)
  static constexpr int NA = 16, NB = 8, RA = 4, RB = 2;
  TP_DEV static FragCoord a(int l, int i) {
    return {l / 4 + 8 * ((i >> 2) & 1), 4 * (l % 4) + (i & 3) + 16 * (i >> 3)};
  }
  TP_DEV static FragCoord b(int l, int i) { return {4 * (l % 4) + (i & 3) + 16 * (i >> 2), l / 4}; }
};
template <> struct frag<5> : frag<4> {};
template <> struct frag<6> : frag<4> {};

// The A fragment of rows i * 16.., k k0..k0+15 from a tile in the accumulator layout of the same
// warps (MmaAcc<Bt, M, K, WM, 1, WG>): the C fragments of n-tiles k0 / 8 and k0 / 8 + 1 are, pairwise
// packed, the A fragment of mma.m16n8k16 (no data moves between threads).
template <class X> struct a_in_regs {
  static constexpr bool value = false;
  static constexpr int fm = 0, wg = 0;
};
template <class T, int N, int Bt, int M, int K, int WM, int WG>
struct a_in_regs<Tile<T, N, MmaAcc<Bt, M, K, WM, 1, WG>>> {
  static constexpr bool value = sizeof(T) == 2 && MmaAcc<Bt, M, K, WM, 1, WG>::real;
  static constexpr int fm = MmaAcc<Bt, M, K, WM, 1, WG>::FM, wg = WG;
};
template <class T, int N, class LA>
TP_DEV void frag_a_regs(uint32_t (&r)[4], const Tile<T, N, LA>& a, int b, int i, int k0) {
  const int base = (b * LA::FM + i) * LA::FN * 4 + (k0 / 8) * 4;
  r[0] = pack2(a.v[base + 0], a.v[base + 1]);
  r[1] = pack2(a.v[base + 2], a.v[base + 3]);
  r[2] = pack2(a.v[base + 4], a.v[base + 5]);
  r[3] = pack2(a.v[base + 6], a.v[base + 7]);
}

#if TP_WARP_OPS
// Fragments element by element (any kind, any storage).
template <int Kind, bool Round, class Op>
TP_DEV void frag_a_elems(uint32_t (&r)[frag<Kind>::RA], const Op& A, int b, int m0, int k0) {
  constexpr int bits = 32 * frag<Kind>::RA / frag<Kind>::NA;
  const int l = lane_of();
  TP_UNROLL
  for (int q = 0; q < frag<Kind>::RA; ++q) r[q] = 0;
  TP_UNROLL
  for (int i = 0; i < frag<Kind>::NA; ++i) {
    const FragCoord c = frag<Kind>::a(l, i);
    r[i * bits / 32] |= frag_bits<Kind, Round>(A.at(b, m0 + c.r, k0 + c.c)) << (i * bits % 32);
  }
}
template <int Kind, bool Round, class Op>
TP_DEV void frag_b_elems(uint32_t (&r)[frag<Kind>::RB], const Op& B, int b, int k0, int n0) {
  constexpr int bits = 32 * frag<Kind>::RB / frag<Kind>::NB;
  const int l = lane_of();
  TP_UNROLL
  for (int q = 0; q < frag<Kind>::RB; ++q) r[q] = 0;
  TP_UNROLL
  for (int i = 0; i < frag<Kind>::NB; ++i) {
    const FragCoord c = frag<Kind>::b(l, i);
    r[i * bits / 32] |= frag_bits<Kind, Round>(B.at(b, k0 + c.r, n0 + c.c)) << (i * bits % 32);
  }
}

// A fragment of rows m0..m0+15, k0..k0+kstep-1: ldmatrix where the storage allows it.
template <int Kind, bool Round, class Op>
TP_DEV void frag_a(uint32_t (&r)[frag<Kind>::RA], const Op& A, int b, int m0, int k0) {
  const int l = lane_of();
  if constexpr ((Kind == 1 || Kind == 2) && !Op::tr) {
    ldmatrix<4>(r, A.saddr(b, m0 + l % 16, k0 + (l / 16) * 8));
  } else if constexpr ((Kind == 1 || Kind == 2) && Op::tr) {
    ldmatrix<4, true>(r, A.saddr(b, k0 + l % 8 + (l / 16) * 8, m0 + ((l / 8) % 2) * 8));
  } else if constexpr (is_8bit_kind<Kind>() && !Op::tr) {
    ldmatrix<4>(r, A.saddr(b, m0 + l % 16, k0 + (l / 16) * 16));
  } else {
    frag_a_elems<Kind, Round>(r, A, b, m0, k0);
  }
}

// The fragments of n-tiles n0 and n0 + 8 (Two) or of n0 alone.
template <int Kind, bool Round, bool Two, class Op>
TP_DEV void frag_b(uint32_t (&r0)[frag<Kind>::RB], uint32_t (&r1)[frag<Kind>::RB], const Op& B,
                   int b, int k0, int n0) {
  const int l = lane_of();
  constexpr bool b16 = Kind == 1 || Kind == 2;
  if constexpr ((b16 && !Op::tr) || ((b16 || is_8bit_kind<Kind>()) && Op::tr)) {
    uint32_t t[4];
    if constexpr (b16 && !Op::tr) {
      if constexpr (Two) ldmatrix<4, true>(t, B.saddr(b, k0 + l % 16, n0 + (l / 16) * 8));
      else ldmatrix<2, true>(*(uint32_t(*)[2])t, B.saddr(b, k0 + l % 16, n0));
    } else {
      constexpr int kc = b16 ? 8 : 16;   // elements of k per 16-byte row piece
      if constexpr (Two) ldmatrix<4>(t, B.saddr(b, n0 + l % 8 + (l / 16) * 8, k0 + ((l / 8) % 2) * kc));
      else ldmatrix<2>(*(uint32_t(*)[2])t, B.saddr(b, n0 + l % 8, k0 + ((l / 8) % 2) * kc));
    }
    r0[0] = t[0];
    r0[1] = t[1];
    if constexpr (Two) {
      r1[0] = t[2];
      r1[1] = t[3];
    }
  } else {
    frag_b_elems<Kind, Round>(r0, B, b, k0, n0);
    if constexpr (Two) frag_b_elems<Kind, Round>(r1, B, b, k0, n0 + 8);
  }
}

template <int Kind, int Flags, class Acc>
TP_DEV void mma_step(Acc (&d)[4], const uint32_t (&a)[frag<Kind>::RA], const uint32_t (&b)[frag<Kind>::RB]) {
  if constexpr (Kind == 1) {
#if defined(TP_GPU) && TP_ARCH < 800
    const uint32_t a0[2] = {a[0], a[1]}, a1[2] = {a[2], a[3]}, b0[1] = {b[0]}, b1[1] = {b[1]};
    mma_m16n8k8_f16_f32(d, a0, b0, d);
    mma_m16n8k8_f16_f32(d, a1, b1, d);
#else
    mma_m16n8k16_f16_f32(d, a, b, d);
#endif
  } else if constexpr (Kind == 2) {
    mma_m16n8k16_bf16_f32(d, a, b, d);
  } else if constexpr (Kind == 3) {
    mma_m16n8k8_tf32_f32(d, a, b, d);
  } else if constexpr (Kind == 5) {
    mma_m16n8k32_e4m3_f32(d, a, b, d);
  } else if constexpr (Kind == 6) {
    mma_m16n8k32_e5m2_f32(d, a, b, d);
  } else {
    int32_t (&di)[4] = *(int32_t(*)[4])d;
    mma_m16n8k32_i8_s32<(Flags & 1) != 0, (Flags & 2) != 0>(di, a, b, di);
  }
}
#endif

template <int Kind, class TC> struct acc_of {
  typedef typename cond<Kind == 4, uint32_t,
                        typename cond<same<TC, double>::value, double, float>::type>::type type;
};


}  // namespace tp
#include "tilepy/cpu_gemm.h"
namespace tp {

// ------------------------------------------------------------------------------ compute
template <int Bt, int M, int N, int K, int Kind, int Flags, class TC, class LC, class OA, class OB>
TP_DEV Tile<TC, Bt * M * N, LC> mma_compute(const OA& A, const OB& B, const Tile<TC, Bt * M * N, LC>& c) {
  typedef typename acc_of<Kind, TC>::type Acc;
  constexpr bool SA = (Flags & 1) != 0, SB = (Flags & 2) != 0, RA = (Flags & 4) != 0,
                 RB = (Flags & 8) != 0;
  Tile<TC, Bt * M * N, LC> r;
#if TP_CPU_FAST
  // products exact in f32 are summed a tensor core's k step at a time (cpu_gemm.h)
  constexpr int KC = Kind == 0 || Kind == 4 || K % kstep<Kind>::value ? 0 : kstep<Kind>::value;
  mma_fast<Bt, M, N, K, Acc, Kind != 4 && !RA, Kind != 4 && !RB, KC>(
      A, B, c, r, [](auto x) { return mul_value<Kind, SA, RA, Acc>(x); },
      [](auto x) { return mul_value<Kind, SB, RB, Acc>(x); });
  return r;
#else
  {
    constexpr int FM = LC::FM, FN = LC::FN, WN = N / (FN * 8);
    const int l = lane_of(), w = warp_of();
    const int wn0 = (w % WN) * (FN * 8);
    Acc acc[Bt][FM][FN][4];
    TP_UNROLL
    for (int s = 0; s < LC::K; ++s) (&acc[0][0][0][0])[s] = to_acc<Acc>(c.v[s]);
    constexpr bool tc = tc_available<Kind>() && K % kstep<Kind>::value == 0;
    if constexpr (tc) {
#if TP_WARP_OPS
      constexpr int KS = kstep<Kind>::value;
      TP_UNROLL
      for (int b = 0; b < Bt; ++b) {
        TP_UNROLL
        for (int k0 = 0; k0 < K; k0 += KS) {
          uint32_t af[FM][frag<Kind>::RA], bf[FN][frag<Kind>::RB];
          TP_UNROLL
          for (int i = 0; i < FM; ++i) {
            if constexpr (a_in_regs<OA>::value) frag_a_regs(af[i], A, b, i, k0);
            else frag_a<Kind, RA>(af[i], A, b, LC::row0(i), k0);
          }
          TP_UNROLL
          for (int j = 0; j < FN; j += 2) {
            if (j + 1 < FN) frag_b<Kind, RB, true>(bf[j], bf[j + 1], B, b, k0, wn0 + j * 8);
            else frag_b<Kind, RB, false>(bf[j], bf[j], B, b, k0, wn0 + j * 8);
          }
          TP_UNROLL
          for (int i = 0; i < FM; ++i) {
            TP_UNROLL
            for (int j = 0; j < FN; ++j) mma_step<Kind, Flags>(acc[b][i][j], af[i], bf[j]);
          }
        }
      }
#endif
    } else {
      const int g = l / 4, t = l % 4;
      TP_UNROLL
      for (int b = 0; b < Bt; ++b) {
        for (int k = 0; k < K; ++k) {
          Acc av[FM][2], bv[FN][2];
          TP_UNROLL
          for (int i = 0; i < FM; ++i) {
            av[i][0] = mul_value<Kind, SA, RA, Acc>(A.at(b, LC::row0(i) + g, k));
            av[i][1] = mul_value<Kind, SA, RA, Acc>(A.at(b, LC::row0(i) + g + 8, k));
          }
          TP_UNROLL
          for (int j = 0; j < FN; ++j) {
            bv[j][0] = mul_value<Kind, SB, RB, Acc>(B.at(b, k, wn0 + j * 8 + 2 * t));
            bv[j][1] = mul_value<Kind, SB, RB, Acc>(B.at(b, k, wn0 + j * 8 + 2 * t + 1));
          }
          TP_UNROLL
          for (int i = 0; i < FM; ++i) {
            TP_UNROLL
            for (int j = 0; j < FN; ++j) {
              TP_UNROLL
              for (int q = 0; q < 4; ++q) acc[b][i][j][q] += av[i][q >> 1] * bv[j][q & 1];
            }
          }
        }
      }
    }
    TP_UNROLL
    for (int s = 0; s < LC::K; ++s) r.v[s] = from_acc<TC>((&acc[0][0][0][0])[s]);
    return r;
  }
#endif
}

// A register operand staged at `where`, or the operand itself: one in shared memory, or a
// register A operand the mma reads from registers (Op is then the register tile's own type).
template <class Op, class X> TP_DEV Op as_operand(const X& x, unsigned char* where) {
  if constexpr (is_smem_op<X>::value || !is_smem_op<Op>::value) {
    return x;
  } else {
    Op op{(typename Op::elem_t*)where};
    stage(x, op);
    return op;
  }
}

template <class LC> constexpr bool a_regs_fit(int fm, int wg) {
  if constexpr (is_mma_acc<LC>::value) return LC::real && LC::WN == 1 && LC::FM == fm && LC::wg == wg;
  else return false;
}

template <class X> struct operand_t { typedef typename X::elem_t type; };
template <class T, int N, class L> struct operand_t<Tile<T, N, L>> { typedef T type; };

template <int Bt, int M, int N, int K, int Kind, int Flags, class TC, class LC, class OA, class OB>
TP_DEV Tile<TC, Bt * M * N, LC> mma_tc(const OA& a, const OB& b, const Tile<TC, Bt * M * N, LC>& c,
                                      unsigned char* scratch) {
  typedef typename operand_t<OA>::type TA;
  typedef typename operand_t<OB>::type TB;
  constexpr bool a_regs = a_in_regs<OA>::value && (Kind == 1 || Kind == 2) && tc_available<Kind>() &&
                         a_regs_fit<LC>(a_in_regs<OA>::fm, a_in_regs<OA>::wg);
  constexpr bool sa = is_smem_op<OA>::value || a_regs || !LC::real;
  constexpr bool sb = is_smem_op<OB>::value || !LC::real;
  typedef typename cond<sa, OA, SmemOp<TA, Bt, M, K>>::type A_t;
  typedef typename cond<sb, OB, SmemOp<TB, Bt, K, N>>::type B_t;
  if constexpr (sa && sb) {
    return mma_compute<Bt, M, N, K, Kind, Flags>(a, b, c);
  } else {
    constexpr int a_bytes = sa ? 0 : (Bt * M * K * (int)sizeof(TA) + 127) / 128 * 128;
    __syncthreads();   // the scratch buffer's previous readers are done
    const A_t A = as_operand<A_t>(a, scratch);
    const B_t B = as_operand<B_t>(b, scratch + a_bytes);
    __syncthreads();
    return mma_compute<Bt, M, N, K, Kind, Flags>(A, B, c);
  }
}

}  // namespace tp
