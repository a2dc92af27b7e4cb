// kernel: mma_matmul
// shape: 32 64 32
// expect: mismatch
// Bug: the epilogue reads the m16n8 accumulator as if c0, c1 were consecutive rows of one
// column (they are two columns of row groupID; c2, c3 are row groupID + 8).
#include "tilepy/runtime.h"

extern "C" __global__ void mma_matmul(const __half* A, const __half* B, float* C, int M, int N, int K) {
  __shared__ __align__(16) __half As[32][16 + 8];
  __shared__ __align__(16) __half Bs[16][32 + 8];
  const int t = threadIdx.x, lane = tp::lane_id(), warp = tp::warp_id();
  const int m0 = blockIdx.y * 32, n0 = blockIdx.x * 32;
  const int wm = (warp / 2) * 16, wn = (warp % 2) * 16;
  float acc[2][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = t; i < 512; i += TP_NT) {
      As[i / 16][i % 16] = A[(m0 + i / 16) * K + k0 + i % 16];
      Bs[i / 32][i % 32] = B[(k0 + i / 32) * N + n0 + i % 32];
    }
    __syncthreads();
    uint32_t a[4], b[4];
    tp::ldmatrix<4>(a, &As[wm + lane % 16][(lane / 16) * 8]);
    tp::ldmatrix<4, true>(b, &Bs[lane % 16][wn + (lane / 16) * 8]);
    uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
    tp::mma_m16n8k16_f16_f32(acc[0], a, b0, acc[0]);
    tp::mma_m16n8k16_f16_f32(acc[1], a, b1, acc[1]);
    __syncthreads();
  }
  const int g = lane / 4, q = lane % 4;
  for (int j = 0; j < 2; ++j) {
#ifdef TP_FIX
    const int r = m0 + wm + g, c = n0 + wn + j * 8 + 2 * q;
    C[r * N + c] = acc[j][0];
    C[r * N + c + 1] = acc[j][1];
    C[(r + 8) * N + c] = acc[j][2];
    C[(r + 8) * N + c + 1] = acc[j][3];
#else
    const int r = m0 + wm + 2 * (g % 4) + 8 * (g / 4), c = n0 + wn + j * 8 + 2 * q;
    C[r * N + c] = acc[j][0];
    C[(r + 1) * N + c] = acc[j][1];
    C[r * N + c + 1] = acc[j][2];
    C[(r + 1) * N + c + 1] = acc[j][3];
#endif
  }
}
