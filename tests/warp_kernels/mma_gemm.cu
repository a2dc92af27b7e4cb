// C[M, N] (f32) = A[M, K] (f16, row-major) @ B[K, N] (f16, row-major), hand-written with the
// tp:: warp wrappers: the shape of what tilepy's emitter produces for ct.mma on tensor cores.
//
// One block of 128 threads computes a 64x64 tile of C, walking K in steps of 32 through a
// two-stage cp.async pipeline (tile k+1 is in flight while tile k is multiplied).
//   TP_WARP_OPS (GPU, faithful CPU mode): 4 warps in a 2x2 grid, each owns 32x32 of C as 2x4
//     m16n8k16 accumulators; A fragments come from ldmatrix.x4, B from ldmatrix.x4.trans.
//   otherwise (fast CPU mode, one thread per block): the SIMT path, same tiling, plain loads.
// Needs M % 64 == N % 64 == K % 32 == 0.
#include "tilepy/runtime.h"

#define BM 64
#define BN 64
#define BK 32
#define PAD 8   // halves of padding per smem row: rows stay 16-byte aligned, banks spread

extern "C" __global__ void __launch_bounds__(TP_NT)
mma_gemm(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
         int M, int N, int K) {
  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
#if TP_WARP_OPS
  static_assert(TP_NT == 128, "the tensor-core path is written for 4 warps");
  __shared__ __align__(16) __half As[2][BM][BK + PAD];
  __shared__ __align__(16) __half Bs[2][BK][BN + PAD];
  const int lane = tp::lane_id(), warp = tp::warp_id();
  const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
  float acc[2][4][4] = {};

  // Stage `s` <- tile `kt`: 256 16-byte chunks of A and of B, 2 + 2 per thread.
  auto load_tile = [&](int s, int kt) {
    const int k0 = kt * BK;
    for (int i = 0; i < 2; ++i) {
      const int c = tid + i * TP_NT;
      const int ar = c / (BK / 8), ac = (c % (BK / 8)) * 8;
      tp::cp_async<16>(&As[s][ar][ac], A + (size_t)(m0 + ar) * K + k0 + ac);
      const int br = c / (BN / 8), bc = (c % (BN / 8)) * 8;
      tp::cp_async<16>(&Bs[s][br][bc], B + (size_t)(k0 + br) * N + n0 + bc);
    }
    tp::cp_async_commit();
  };

  const int ktiles = K / BK;
  load_tile(0, 0);
  for (int kt = 0; kt < ktiles; ++kt) {
    const int s = kt & 1;
    if (kt + 1 < ktiles) {
      load_tile(s ^ 1, kt + 1);
      tp::cp_async_wait<1>();      // tile kt has landed, tile kt + 1 may still be in flight
    } else {
      tp::cp_async_wait<0>();
    }
    __syncthreads();
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t af[2][4], bf[4][2];
      for (int i = 0; i < 2; ++i)   // rows 0-15 (lanes 0-15) at k, k + 8 (lanes 16-31)
        tp::ldmatrix<4>(af[i], &As[s][wm + i * 16 + (lane % 16)][kk + (lane / 16) * 8]);
      for (int j = 0; j < 4; j += 2) {   // two n8 B fragments per ldmatrix.x4.trans
        uint32_t t[4];
        tp::ldmatrix<4, true>(t, &Bs[s][kk + (lane % 16)][wn + j * 8 + (lane / 16) * 8]);
        bf[j][0] = t[0]; bf[j][1] = t[1]; bf[j + 1][0] = t[2]; bf[j + 1][1] = t[3];
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) tp::mma_m16n8k16_f16_f32(acc[i][j], af[i], bf[j], acc[i][j]);
    }
    __syncthreads();                 // stage s is overwritten by the next iteration's copies
  }
  // Accumulator fragment: c0, c1 at (g, 2t..2t+1), c2, c3 at (g + 8, 2t..2t+1).
  const int g = lane / 4, t4 = lane % 4;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      const int row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t4;
      C[(size_t)row * N + col] = acc[i][j][0];
      C[(size_t)row * N + col + 1] = acc[i][j][1];
      C[(size_t)(row + 8) * N + col] = acc[i][j][2];
      C[(size_t)(row + 8) * N + col + 1] = acc[i][j][3];
    }
#else
  // SIMT: thread `tid` owns elements tid, tid + TP_NT, ... of the 64x64 tile; operands are
  // widened to f32 once, in shared memory.
  __shared__ float Af[BM][BK];
  __shared__ float Bf[BK][BN];
  constexpr int PER = BM * BN / TP_NT;
  float acc[PER] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int c = tid; c < BM * BK; c += TP_NT)
      Af[c / BK][c % BK] = __half2float(A[(size_t)(m0 + c / BK) * K + k0 + c % BK]);
    for (int c = tid; c < BK * BN; c += TP_NT)
      Bf[c / BN][c % BN] = __half2float(B[(size_t)(k0 + c / BN) * N + n0 + c % BN]);
    __syncthreads();
    if (TP_NT == 1) {                // one thread: row-major loops the host compiler vectorizes
      for (int r = 0; r < BM; ++r)
        for (int k = 0; k < BK; ++k) {
          const float a = Af[r][k];
          for (int c = 0; c < BN; ++c) acc[r * BN + c] += a * Bf[k][c];
        }
    } else {
      for (int e = 0; e < PER; ++e) {
        const int idx = tid + e * TP_NT, r = idx / BN, c = idx % BN;
        float sum = acc[e];
        for (int k = 0; k < BK; ++k) sum += Af[r][k] * Bf[k][c];
        acc[e] = sum;
      }
    }
    __syncthreads();
  }
  for (int e = 0; e < PER; ++e) {
    const int idx = tid + e * TP_NT;
    C[(size_t)(m0 + idx / BN) * N + n0 + idx % BN] = acc[e];
  }
#endif
}
