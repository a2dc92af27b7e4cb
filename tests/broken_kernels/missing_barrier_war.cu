// kernel: tiled_matmul
// shape: 64 96 64
// expect: mismatch
// Bug: no __syncthreads() at the end of the K loop. A warp that finishes its products starts
// overwriting the shared tiles with the next K step while other warps still read the current
// one (write-after-read race).
#include "tilepy/runtime.h"

extern "C" __global__ void tiled_matmul(const __half* A, const __half* B, float* C, int M, int N, int K) {
  __shared__ float As[32][16];
  __shared__ float Bs[16][32];
  const int t = threadIdx.x, m0 = blockIdx.y * 32, n0 = blockIdx.x * 32;
  float acc[1024 / TP_NT] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = t; i < 512; i += TP_NT) {
      As[i / 16][i % 16] = __half2float(A[(m0 + i / 16) * K + k0 + i % 16]);
      Bs[i / 32][i % 32] = __half2float(B[(k0 + i / 32) * N + n0 + i % 32]);
    }
    __syncthreads();
    for (int e = 0; e < 1024 / TP_NT; ++e) {
      const int idx = t + e * TP_NT, r = idx / 32, c = idx % 32;
      for (int k = 0; k < 16; ++k) acc[e] += As[r][k] * Bs[k][c];
    }
#ifdef TP_FIX
    __syncthreads();
#endif
  }
  for (int e = 0; e < 1024 / TP_NT; ++e) {
    const int idx = t + e * TP_NT;
    C[(m0 + idx / 32) * N + n0 + idx % 32] = acc[e];
  }
}
