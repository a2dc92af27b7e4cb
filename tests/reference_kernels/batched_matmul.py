"""C[b] = A[b] @ B[b] for a batch of matrices: 3-d tiles of BT matrices per block."""
import tilepy as ct


@ct.kernel
def batched_matmul(A, B, C, BT: ct.Constant[int], TM: ct.Constant[int], TN: ct.Constant[int],
                   TK: ct.Constant[int]):
    bb, bm, bn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((BT, TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=2, shape=(BT, TM, TK))):
        a = ct.load(A, index=(bb, bm, k), shape=(BT, TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(bb, k, bn), shape=(BT, TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bb, bm, bn), tile=acc.astype(C.dtype))
