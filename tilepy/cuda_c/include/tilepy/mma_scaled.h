// tilepy/mma_scaled.h -- block-scaled matrix multiply-accumulate (mmaf_scaled, cuTile's
// mma_scaled), the generic shared-memory way: every product x[m, k] * y[k, n] is scaled by the
// e8m0 scales of its 32-element blocks along K and summed in float, as the interpreter does.
// (Block-scaled tensor cores are a Blackwell (sm_100) feature; this path runs on every target.)
#pragma once

namespace tp {

template <int M, int N, int K, int Batch, class TA, class TB, class TS, class TC, class LA,
          class LB, class LSA, class LSB, class LC>
TP_DEV Tile<TC, Batch * M * N, LC> mma_scaled(
    const Tile<TA, Batch * M * K, LA>& a, const Tile<TB, Batch * K * N, LB>& b,
    const Tile<TC, Batch * M * N, LC>& c, const Tile<TS, Batch * M * (K / 32), LSA>& sa,
    const Tile<TS, Batch * (K / 32) * N, LSB>& sb, unsigned char* smem) {
  constexpr int KS = K / 32;
  float* A = (float*)smem;                   // x and y, each element times its block's scale
  float* B = A + Batch * M * K;
  float* SA = B + Batch * K * N;
  float* SB = SA + Batch * M * KS;
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < LSA::K; ++s)
    if (LSA::owner(s)) SA[LSA::elem(s)] = to_f32(sa.v[s]);
  TP_UNROLL
  for (int s = 0; s < LSB::K; ++s)
    if (LSB::owner(s)) SB[LSB::elem(s)] = to_f32(sb.v[s]);
  __syncthreads();
  TP_UNROLL
  for (int s = 0; s < LA::K; ++s) {
    if (!LA::owner(s)) continue;
    const int e = LA::elem(s);               // [i, m, k] -> scale [i, m, k / 32]
    A[e] = cvt<float>(a.v[s]) * SA[e / K * KS + e % K / 32];
  }
  TP_UNROLL
  for (int s = 0; s < LB::K; ++s) {
    if (!LB::owner(s)) continue;
    const int e = LB::elem(s), i = e / (K * N), k = e / N % K, n = e % N;   // -> [i, k / 32, n]
    B[e] = cvt<float>(b.v[s]) * SB[(i * KS + k / 32) * N + n];
  }
  __syncthreads();
  Tile<TC, Batch * M * N, LC> r;
  TP_UNROLL
  for (int s = 0; s < LC::K; ++s) {
    if (!LC::valid(s)) continue;
    const int e = LC::elem(s), i = e / (M * N), m = e / N % M, n = e % N;
    const float* Ai = A + i * M * K;
    const float* Bi = B + i * K * N;
    float acc = c.v[s];
    for (int k = 0; k < K; ++k) acc += Ai[m * K + k] * Bi[k * N + n];
    r.v[s] = acc;
  }
  return r;
}

}  // namespace tp
