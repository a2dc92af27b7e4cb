// tilepy/cpu_gemm.h -- the fast CPU mode's mma (TP_CPU_FAST): a register-blocked SIMD micro-kernel.
//
// MR rows x NV vectors of the accumulator stay in registers over the K loop (8 x 2 zmm with
// AVX-512, 4 x 2 ymm with AVX2); the A element of a row is broadcast, the B row is loaded as
// vectors. f16/bf16/tf32/i8 operands are widened (rounded) once per call into row-major buffers,
// f32/f64 operands are read in place; products accumulate in f32 (f64, i32) with fused
// multiply-adds where the ISA has them (the spec leaves mma's rounding open). Operands whose
// products are exact in f32 (f16, bf16, tf32, fp8: tensor-core types) are summed as a tensor
// core sums them: KC products at a time (its k step), the chunk's sum then added to the
// accumulator (`KC`; half the rows in registers, for the chunk's sums), which keeps the fast
// mode as close to the faithful mode's mma.sync, the interpreter and a GPU as they are to each
// other (a product-by-product f32 sum rounded 618 of 512x512 f16 outputs of a K=768 GEMM
// differently from the exact sum; by chunks of 16, 264; the faithful mode 189).
#pragma once

#if TP_CPU_FAST
// gemm_block contracts its multiply-adds into fmas (the rest of the build keeps two roundings);
// GCC takes a per-function option, Clang a pragma in the body. (No intrinsics: <immintrin.h>
// would cost every kernel's build a third more compile time.)
#if defined(__clang__)
#define TP_CONTRACT_FN
#define TP_CONTRACT_BODY _Pragma("clang fp contract(fast)")
#else
#define TP_CONTRACT_FN __attribute__((optimize("fp-contract=fast")))
#define TP_CONTRACT_BODY
#endif

namespace tp { namespace cpu {

// C = C0 + A[M x K] @ B[K x N], all row-major, with leading dimensions lda, ldb (C, C0: N; C0
// may be C). KC > 0: the products are summed KC at a time from zero, each chunk's sum then added
// to C (K % KC == 0).
template <class Acc, int M, int N, int K, int KC = 0>
TP_CONTRACT_FN void gemm_block(Acc* C, const Acc* C0, const Acc* __restrict A, int lda,
                               const Acc* __restrict B, int ldb) {
  TP_CONTRACT_BODY
  constexpr int lanes = kVecBytes / (int)sizeof(Acc);
  constexpr int VL = lanes < N ? lanes : N;                   // N is a power of two
  constexpr int NV = N / VL >= 2 ? 2 : 1, NR = NV * VL;
  constexpr int MR0 = (kVecBytes == 64 ? 8 : 4) / (KC ? 2 : 1), MR = MR0 < M ? MR0 : M;
  constexpr int KS = KC ? KC : K;                             // products per chunk
  typedef typename vec<Acc, VL>::type V;
  for (int i0 = 0; i0 < M; i0 += MR) {
    for (int j0 = 0; j0 < N; j0 += NR) {
      V c[MR][NV];
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) memcpy(&c[r][v], C0 + (i0 + r) * N + j0 + v * VL, sizeof(V));
      const Acc* a = A + i0 * lda;
      for (int k0 = 0; k0 < K; k0 += KS) {
        V p[MR][NV];                                          // the chunk's sums (KC), or C
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) p[r][v] = KC ? (V){} : c[r][v];
        for (int k = k0; k < k0 + KS; ++k) {
          V b[NV];
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) memcpy(&b[v], B + k * ldb + j0 + v * VL, sizeof(V));
#pragma GCC unroll 16
          for (int r = 0; r < MR; ++r) {
            const V ar = a[r * lda + k] - (V){};              // a broadcast (x - +0 is x)
#pragma GCC unroll 2
            for (int v = 0; v < NV; ++v) p[r][v] = ar * b[v] + p[r][v];
          }
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) c[r][v] = KC ? c[r][v] + p[r][v] : p[r][v];
      }
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) memcpy(C + (i0 + r) * N + j0 + v * VL, &c[r][v], sizeof(V));
    }
  }
}

// Scalar fallback (tiles narrower than 4 columns, integer accumulators of odd widths).
template <class Acc, int M, int N, int K>
inline void gemm_scalar(Acc* C, const Acc* C0, const Acc* A, int lda, const Acc* B, int ldb) {
  if (C != C0) memcpy(C, C0, sizeof(Acc) * M * N);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) {
      const Acc a = A[m * lda + k];
      for (int n = 0; n < N; ++n) C[m * N + n] += a * B[k * ldb + n];
    }
}

// An R x C operand (batch b) as row-major Acc values with leading dimension `ld`: read in place
// when it already is (Plain: its elements are used unconverted), else widened/rounded by `mv`
// into `buf`.
template <class Op> constexpr bool row_major_smem() {
  if constexpr (is_smem_op<Op>::value) return !Op::tr; else return false;
}
template <int R, int C, bool Plain, class Acc, class MulValue, class Op>
inline const Acc* operand_rows(const Op& x, int b, Acc* buf, int& ld, MulValue mv) {
  typedef decltype(elem_at<R, C>(x, 0, 0, 0)) T;
  ld = C;
  if constexpr (Plain && same<T, Acc>::value && !is_smem_op<Op>::value) {
    return x.v + b * R * C;                                   // a register tile, row-major
  } else if constexpr (Plain && same<T, Acc>::value && row_major_smem<Op>()) {
    return x.p + b * R * C;                                   // unswizzled in the fast mode
  } else {
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) buf[r * C + c] = mv(elem_at<R, C>(x, b, r, c));
    return buf;
  }
}

}}  // namespace tp::cpu

namespace tp {

// r = c + A @ B (batched) in the fast mode; `mv_a`, `mv_b` turn an operand element into an Acc,
// and are the identity when PlainA / PlainB; KC: products summed KC at a time (gemm_block).
template <int Bt, int M, int N, int K, class Acc, bool PlainA, bool PlainB, int KC, class TC,
          class L, class OA, class OB, class FA, class FB>
TP_DEV void mma_fast(const OA& A, const OB& B, const Tile<TC, Bt * M * N, L>& c,
                     Tile<TC, Bt * M * N, L>& r, FA mv_a, FB mv_b) {
  alignas(64) Acc acc_buf[same<TC, Acc>::value ? 1 : Bt * M * N];
  Acc* acc = acc_buf;             // the result, accumulated from acc0
  const Acc* acc0 = acc_buf;
  if constexpr (same<TC, Acc>::value) {
    acc = r.v;
    acc0 = c.v;
  } else {
    for (int e = 0; e < Bt * M * N; ++e) acc[e] = to_acc<Acc>(c.v[e]);
  }
  alignas(64) Acc abuf[M * K], bbuf[K * N];
  static_assert(KC == 0 || (N % 4 == 0 && same<Acc, float>::value), "k-step sums: gemm_block");
  for (int b = 0; b < Bt; ++b) {
    int lda, ldb;
    const Acc* a = cpu::operand_rows<M, K, PlainA, Acc>(A, b, abuf, lda, mv_a);
    const Acc* bb = cpu::operand_rows<K, N, PlainB, Acc>(B, b, bbuf, ldb, mv_b);
    if constexpr (N % 4 == 0 && (same<Acc, float>::value || same<Acc, double>::value ||
                                 same<Acc, uint32_t>::value))
      cpu::gemm_block<Acc, M, N, K, KC>(acc + b * M * N, acc0 + b * M * N, a, lda, bb, ldb);
    else    // (KC is 0 here: tensor-core shapes have N % 8 == 0, and float accumulators)
      cpu::gemm_scalar<Acc, M, N, K>(acc + b * M * N, acc0 + b * M * N, a, lda, bb, ldb);
  }
  if constexpr (!same<TC, Acc>::value)
    for (int e = 0; e < Bt * M * N; ++e) r.v[e] = from_acc<TC>(acc[e]);
}

}  // namespace tp
#endif
