"""Tiled matmul as in cuTile's samples/MatMul.py (f16 inputs, f32 accumulation)."""
import tilepy as ct


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2))
def matmul(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bidx = ct.bid(0)
    bidy = ct.bid(1)
    num_tiles_k = ct.num_tiles(A, axis=1, shape=(tm, tk))
    accumulator = ct.full((tm, tn), 0, dtype=ct.float32)
    zero_pad = ct.PaddingMode.ZERO
    dtype = ct.tfloat32 if A.dtype == ct.float32 else A.dtype     # folded at compile time
    for k in range(num_tiles_k):
        a = ct.load(A, index=(bidx, k), shape=(tm, tk), padding_mode=zero_pad).astype(dtype)
        b = ct.load(B, index=(k, bidy), shape=(tk, tn), padding_mode=zero_pad).astype(dtype)
        accumulator = ct.mma(a, b, accumulator)
    accumulator = ct.astype(accumulator, C.dtype)
    ct.store(C, index=(bidx, bidy), tile=accumulator)


@ct.kernel
def matmul_operator(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """The same with `@` (matmul: result in the inputs' dtype) and a persistent grid loop."""
    tiles_m = ct.num_tiles(C, axis=0, shape=(TM, TN))
    tiles_n = ct.num_tiles(C, axis=1, shape=(TM, TN))
    for t in range(ct.bid(0), tiles_m * tiles_n, ct.num_blocks(0)):
        bm, bn = t // tiles_n, t % tiles_n
        acc = ct.zeros((TM, TN), dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
            b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
            acc += (a @ b).astype(ct.float32)
        ct.store(C, (bm, bn), acc.astype(C.dtype))


@ct.kernel
def vector_products(x, y, Y, dot, outer, K: ct.Constant[int], N: ct.Constant[int]):
    """matmul of 1-D tiles (cuTile promotes a vector to a row or a column): x . y (one element:
    a dot product), x @ Y, and the outer product of x[:1] and Y's first row (K = 1)."""
    tx = ct.load(x, (0,), (K,))
    ct.store(dot, (0,), ct.reshape(ct.matmul(tx, ct.load(y, (0,), (K,))), (1,)))
    tY = ct.load(Y, (0, 0), (K, N))
    ct.store(outer, (0, 0), ct.reshape(ct.matmul(tx, tY), (1, N)))
    col = ct.reshape(ct.extract(tx, (0,), (1,)), (1, 1))
    ct.store(outer, (1, 0), ct.matmul(col, ct.extract(tY, (0, 0), (1, N))))
