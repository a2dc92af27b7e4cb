"""Tutorial 1: vector addition.

The smallest complete tilepy program. Each tile block (the kernel instance at grid position
`ct.bid(0)`) loads one tile of `TILE` elements from `a` and `b`, adds them and stores the sum to
`c`. Indices are in *tile space*: tile `i` covers elements [i*TILE, (i+1)*TILE). The last tile
is ragged (n is not a multiple of TILE): loads pad it, stores skip the elements past the end.

Run it:  python tutorials/01_vector_add.py      (on the CPU backend when there is no GPU)
"""
import numpy as np

import tilepy as ct


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    a_tile = ct.load(a, index=(i,), shape=(TILE,))
    b_tile = ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=a_tile + b_tile)


def main():
    n, TILE = 10_000, 256
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = np.zeros_like(a)

    # What the kernel became: Tile IR (the cuda_tile dialect) ...
    print(vector_add.mlir(a, b, c, TILE))
    # ... and CUDA C++ (kernel.cuda_source(...) shows it; the tests compile it with NVRTC).

    grid = (ct.cdiv(n, TILE),)        # one tile block per tile, the last one ragged
    ct.launch(None, grid, vector_add, (a, b, c, TILE))

    np.testing.assert_allclose(c, a + b, rtol=1e-5)
    print(f"vector_add: {n} elements in {grid[0]} tile blocks: matches numpy")


if __name__ == "__main__":
    main()
