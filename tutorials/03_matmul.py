"""Tutorial 3: matrix multiplication C = A @ B.

Each tile block computes one (TM, TN) tile of C: it walks the K dimension in steps of TK,
loading a (TM, TK) tile of A and a (TK, TN) tile of B and accumulating `ct.mma(a, b, acc)` in
float32. The `for` loop over `range(ct.num_tiles(...))` becomes a Tile IR `for` with `acc` as a
loop-carried value. M, N and K need not be multiples of the tile: zero padding makes the ragged
K tile contribute nothing, and the store skips the out-of-bounds part of the ragged C tiles.
With float16 inputs the products and the sum are computed in float32.

Run it:  python tutorials/03_matmul.py
"""
import numpy as np

import tilepy as ct


@ct.kernel
def matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


def main():
    rng = np.random.default_rng(0)
    M, N, K = 200, 150, 130                       # not multiples of the tile sizes
    TM, TN, TK = 64, 64, 32
    grid = (ct.cdiv(M, TM), ct.cdiv(N, TN))
    for dtype, rtol in ((np.float32, 1e-5), (np.float16, 1e-2)):
        A = rng.standard_normal((M, K)).astype(dtype)
        B = rng.standard_normal((K, N)).astype(dtype)
        C = np.zeros((M, N), dtype=np.float32)
        if dtype == np.float16:
            print(matmul.mlir(A, B, C, TM, TN, TK))
        ct.launch(None, grid, matmul, (A, B, C, TM, TN, TK))
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        ref = A64 @ B64
        # A sum of K products is only as exact as its largest terms: relative to |A| @ |B|
        # (the scale of the terms), the error must stay below rtol.
        scale = np.abs(A64) @ np.abs(B64)
        worst = float(np.max(np.abs(C - ref) / scale))
        assert worst <= rtol, f"matmul {np.dtype(dtype).name}: error {worst:.2e} > {rtol}"
        print(f"matmul {np.dtype(dtype).name} -> float32: {M}x{K} @ {K}x{N} matches numpy "
              f"(max error {worst:.1e} of the terms' scale, rtol {rtol})")


if __name__ == "__main__":
    main()
