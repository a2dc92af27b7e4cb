// kernel: async_matmul
// shape: 64 64 64
// expect: mismatch
// Bug: the shared tiles are filled with cp.async, committed, and read after __syncthreads()
// without cp.async.wait_group: the barrier orders the threads, not the asynchronous copies.
#include "tilepy/runtime.h"

extern "C" __global__ void async_matmul(const __half* A, const __half* B, float* C, int M, int N, int K) {
  __shared__ __align__(16) __half As[32][16];
  __shared__ __align__(16) __half Bs[16][32];
  const int t = threadIdx.x, m0 = blockIdx.y * 32, n0 = blockIdx.x * 32;
  float acc[1024 / TP_NT] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int c = t; c < 128; c += TP_NT) {        // 8-byte chunks: 4 halves
      const int ar = c / 4, ac = (c % 4) * 4, br = c / 8, bc = (c % 8) * 4;
      tp::cp_async<8>(&As[ar][ac], A + (m0 + ar) * K + k0 + ac);
      tp::cp_async<8>(&Bs[br][bc], B + (k0 + br) * N + n0 + bc);
    }
    tp::cp_async_commit();
#ifdef TP_FIX
    tp::cp_async_wait<0>();
#endif
    __syncthreads();
    for (int e = 0; e < 1024 / TP_NT; ++e) {
      const int idx = t + e * TP_NT, r = idx / 32, c = idx % 32;
      for (int k = 0; k < 16; ++k) acc[e] += __half2float(As[r][k]) * __half2float(Bs[k][c]);
    }
    __syncthreads();
  }
  for (int e = 0; e < 1024 / TP_NT; ++e) {
    const int idx = t + e * TP_NT;
    C[(m0 + idx / 32) * N + n0 + idx % 32] = acc[e];
  }
}
