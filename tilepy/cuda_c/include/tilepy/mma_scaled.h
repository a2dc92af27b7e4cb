// tilepy/mma_scaled.h -- block-scaled matrix multiply-accumulate (mmaf_scaled, cuTile's
// mma_scaled), the generic way: every element of x and y is multiplied by the scale of its
// BS-element block along K (e8m0, e4m3 or e5m3; fp8 or fp4 operands: the product of an operand
// and its scale is exact in float), then the products are summed in float, as the interpreter
// does. The scales go through shared memory (an element's scale may be held by another thread),
// and on a GPU the operands too, in their own type (issue 31: a 256x128 e4m3 tile pair as floats
// needed 256 KiB).
// (Block-scaled tensor cores are a Blackwell (sm_100) feature; this path runs on every target.)
#pragma once

namespace tp {

template <int M, int N, int K, int Batch, int BS, class TA, class TB, class TS, class TC,
          class LA, class LB, class LSA, class LSB, class LC>
TP_DEV Tile<TC, Batch * M * N, LC> mma_scaled(
    const Tile<TA, Batch * M * K, LA>& a, const Tile<TB, Batch * K * N, LB>& b,
    const Tile<TC, Batch * M * N, LC>& c, const Tile<TS, Batch * M * (K / BS), LSA>& sa,
    const Tile<TS, Batch * (K / BS) * N, LSB>& sb, unsigned char* smem) {
  constexpr int KS = K / BS;
  float* SA = (float*)smem;
  float* SB = SA + Batch * M * KS;
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < LSA::K; ++s)
    if (LSA::owner(s)) SA[LSA::elem(s)] = to_f32(sa.v[s]);
  TP_UNROLL
  for (int s = 0; s < LSB::K; ++s)
    if (LSB::owner(s)) SB[LSB::elem(s)] = to_f32(sb.v[s]);
#if TP_CPU_FAST
  // one thread holds the whole tiles: scale them in registers, then the SIMD micro-kernel
  Tile<float, Batch * M * K, LA> xa;
  TP_UNROLL
  for (int s = 0; s < LA::K; ++s) {
    const int e = LA::elem(s);               // [i, m, k] -> scale [i, m, k / BS]
    if (LA::valid(s)) xa.v[s] = cvt<float>(a.v[s]) * SA[e / K * KS + e % K / BS];
  }
  Tile<float, Batch * K * N, LB> xb;
  TP_UNROLL
  for (int s = 0; s < LB::K; ++s) {
    const int e = LB::elem(s), i = e / (K * N), k = e / N % K, n = e % N;   // -> [i, k / BS, n]
    if (LB::valid(s)) xb.v[s] = cvt<float>(b.v[s]) * SB[(i * KS + k / BS) * N + n];
  }
  return mma<M, N, K, 3, Batch>(xa, xb, c, smem);
#else
  // the operands go to shared memory in their own (narrow) type after the scales: the scratch
  // is the operand tiles' bytes plus the scales' floats, not the tiles as floats
  TA* A = (TA*)(SB + Batch * KS * N);
  TB* B = (TB*)(A + Batch * M * K);
  stage_operands(A, B, a, b);
  Tile<TC, Batch * M * N, LC> r;
  TP_UNROLL
  for (int s = 0; s < LC::K; ++s) {
    if (!LC::valid(s)) continue;
    const int e = LC::elem(s), i = e / (M * N), m = e / N % M, n = e % N;
    const TA* Ai = A + (i * M + m) * K;
    const float* SAi = SA + (i * M + m) * KS;
    const TB* Bi = B + i * K * N + n;
    const float* SBi = SB + i * KS * N + n;
    float acc = cvt<float>(c.v[s]);
    for (int k = 0; k < K; ++k)
      acc += (cvt<float>(Ai[k]) * SAi[k / BS]) * (cvt<float>(Bi[k * N]) * SBi[k / BS * N]);
    r.v[s] = cvt<TC>(acc);
  }
  __syncthreads();                           // the next user of the scratch waits for the reads
  return r;
#endif
}

}  // namespace tp
