// kernel: ragged_matmul
// shape: 48 64 32
// expect: deadlock
// Bug: threads whose output row is past M return before the K loop, so in the last block row
// only some threads reach the __syncthreads() inside it (a barrier in divergent code; on a GPU
// this hangs or silently misbehaves).
#include "tilepy/runtime.h"

extern "C" __global__ void ragged_matmul(const __half* A, const __half* B, float* C, int M, int N, int K) {
  __shared__ float As[32][16];
  __shared__ float Bs[16][32];
  const int t = threadIdx.x, m0 = blockIdx.y * 32, n0 = blockIdx.x * 32;
  const int row = t / 4, col = (t % 4) * 8;          // each thread owns 8 outputs of one row
#ifndef TP_FIX
  if (m0 + row >= M) return;
#endif
  float acc[8] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = t; i < 512; i += TP_NT) {
      const int ar = m0 + i / 16;
      As[i / 16][i % 16] = ar < M ? __half2float(A[ar * K + k0 + i % 16]) : 0.0f;
      Bs[i / 32][i % 32] = __half2float(B[(k0 + i / 32) * N + n0 + i % 32]);
    }
    __syncthreads();
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 16; ++k) acc[j] += As[row][k] * Bs[k][col + j];
    __syncthreads();
  }
  if (m0 + row < M)
    for (int j = 0; j < 8; ++j) C[(m0 + row) * N + n0 + col + j] = acc[j];
}
