// Every tp:: warp wrapper once, so NVRTC must assemble all their inline PTX
// (tests/test_warp_nvrtc.py) and the faithful CPU mode must compile them. fp8 mma.sync needs
// sm_89: define TP_WITH_FP8 there.
#include "tilepy/runtime.h"
extern "C" __global__ void __launch_bounds__(128)
allops(const __half* A, float* out, int* iout, unsigned char* q) {
  __shared__ __align__(16) __half sm[64 * 8];
  tp::cp_async<16>(&sm[threadIdx.x * 8 % 512], A + threadIdx.x * 8);
  tp::cp_async_zfill<8>(&sm[(threadIdx.x * 4 + 4) % 512], A, 0);
  tp::cp_async<4>(&sm[0], A);
  tp::cp_async_commit();
  tp::cp_async_wait<0>();
  tp::cp_async_wait_all();
  __syncthreads();
  uint32_t r1[1], r2[2], r4[4], t1[1], t2[2], t4[4];
  const int l = tp::lane_id();
  tp::ldmatrix<1>(r1, &sm[(l % 8) * 8]);
  tp::ldmatrix<2>(r2, &sm[(l % 16) * 8]);
  tp::ldmatrix<4>(r4, &sm[l * 8]);
  tp::ldmatrix<1, true>(t1, &sm[(l % 8) * 8]);
  tp::ldmatrix<2, true>(t2, &sm[(l % 16) * 8]);
  tp::ldmatrix<4, true>(t4, &sm[l * 8]);
  float c[4] = {0, 0, 0, 0}, d[4];
  tp::mma_m16n8k16_f16_f32(d, r4, r2, c);
  tp::mma_m16n8k16_bf16_f32(d, t4, t2, d);
  tp::mma_m16n8k8_f16_f32(d, r2, r1, d);
  tp::mma_m16n8k8_bf16_f32(d, t2, t1, d);
  tp::mma_m16n8k8_tf32_f32(d, r4, r2, d);
  int32_t ci[4] = {0, 0, 0, 0}, di[4];
  tp::mma_m16n8k32_i8_s32(di, r4, r2, ci);
  tp::mma_m16n8k32_i8_s32<false, true, true>(di, t4, t2, di);
  tp::mma_m16n8k32_i8_s32<false, false>(di, t4, t2, di);
  tp::mma_m16n8k32_i8_s32<true, false, true>(di, t4, t2, di);
#ifdef TP_WITH_FP8
  tp::mma_m16n8k32_e4m3_f32(d, r4, r2, d);
  tp::mma_m16n8k32_e5m2_f32(d, t4, t2, d);
#endif
  float v = d[0] + d[1] + d[2] + d[3] + tp::to_tf32(d[0]);
  v += tp::shfl_sync(0xffffffffu, v, 3);
  v += tp::shfl_up_sync(0xffffffffu, v, 1, 16);
  if (l < 16) v += tp::shfl_down_sync(0x0000ffffu, v, 2, 8);   // only the lanes in the mask
  v += tp::shfl_xor_sync(0xffffffffu, v, 4);
  double dv = tp::shfl_xor_sync(0xffffffffu, (double)v, 1);
  __half hv = tp::shfl_sync(0xffffffffu, __float2half(v), 0);
  tp::syncwarp();
  unsigned b = tp::ballot_sync(0xffffffffu, v > 0);
  bool an = tp::any_sync(0xffffffffu, v > 0), al = tp::all_sync(0xffffffffu, v > 0);
  q[threadIdx.x] = tp::e4m3_from_f32(v) ^ tp::e5m2_from_f32(v);
  out[threadIdx.x] = v + (float)dv + __half2float(hv) + tp::e4m3_to_f32(q[threadIdx.x]) +
                     tp::e5m2_to_f32(q[threadIdx.x]) + (float)tp::pack_half2(hv, hv);
  iout[threadIdx.x] = di[0] + di[3] + (int)b + an + al;
}
