"""The hand-written tensor-core GEMM (tests/warp_kernels/mma_gemm.cu: cp.async pipeline,
ldmatrix, mma.sync m16n8k16) matches numpy in the faithful mode, and its SIMT path in the fast
mode. benchmarks/cpu_modes.py times the same kernel."""
import os

import numpy as np
import pytest

from faithful_util import WARP_KERNELS, build_file

GEMM = os.path.join(WARP_KERNELS, "mma_gemm.cu")


@pytest.mark.parametrize("mode", ["faithful", "fast"])
@pytest.mark.parametrize("mnk", [(256, 256, 256), (128, 192, 96)])
def test_f16_gemm_matches_numpy(mode, mnk):
    M, N, K = mnk
    rng = np.random.default_rng(M + N + K)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float32)
    k = build_file(GEMM, "mma_gemm", threads=128, mode=mode)
    k((N // 64, M // 64), A, B, C, M, N, K)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    err = np.abs(C - A64 @ B64) / (np.abs(A64) @ np.abs(B64))
    assert err.max() < 1e-5
