"""Tutorial 2: row-wise softmax.

One tile block per row. The row is loaded as a (1, BLOCK) tile with BLOCK the next power of two
above the row length; the padding is -inf, which the max ignores and exp turns into 0, so the
ragged end of each row does not disturb the result. Reductions (`ct.max`, `ct.sum` with
keepdims) and broadcasting work like numpy.

Run it:  python tutorials/02_softmax.py
"""
import numpy as np

import tilepy as ct


@ct.kernel
def softmax(x, y, BLOCK: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK), padding_mode=ct.PaddingMode.NEG_INF)
    t = t.astype(ct.float32)                      # compute in f32 whatever the input dtype
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    out = e / ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=out.astype(y.dtype))


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(0)
    rows, cols = 123, 1000                        # cols is not a power of two: ragged tiles
    block = next_pow2(cols)
    for dtype, rtol in ((np.float32, 1e-5), (np.float16, 1e-2)):
        x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
        y = np.zeros_like(x)
        if dtype == np.float32:
            print(softmax.mlir(x, y, block))
        ct.launch(None, (rows,), softmax, (x, y, block))
        np.testing.assert_allclose(y.astype(np.float64), reference(x), rtol=rtol, atol=rtol * 1e-2)
        print(f"softmax {np.dtype(dtype).name}: {rows}x{cols} matches numpy (rtol {rtol})")


if __name__ == "__main__":
    main()
