"""Batch-broadcast matmul and batched 3-d mma, as in cuTile's batch matmul samples."""
import tilepy as ct

ConstInt = ct.Constant[int]


@ct.kernel
def shared_filter(Fil, X, Out, BATCH: ConstInt, F: ConstInt, K: ConstInt):
    """Out[b] = Fil[0] @ X[b] for a block of BATCH problems: (1, F, F) @ (BATCH, F, K)."""
    bid = ct.bid(0)
    f = ct.load(Fil, (0, 0, 0), shape=(1, F, F))
    x = ct.load(X, (bid, 0, 0), shape=(BATCH, F, K), padding_mode=ct.PaddingMode.ZERO)
    ct.store(Out, (bid, 0, 0), tile=ct.matmul(f, x))


@ct.kernel
def batched_small_mma(A, B, C, BATCH: ConstInt, M: ConstInt, N: ConstInt, K: ConstInt):
    """C[b] = A[b] @ B[b] + C[b] with tiles too small for tensor-core fragments."""
    bid = ct.bid(0)
    a = ct.load(A, (bid, 0, 0), shape=(BATCH, M, K))
    b = ct.load(B, (bid, 0, 0), shape=(BATCH, K, N))
    acc = ct.load(C, (bid, 0, 0), shape=(BATCH, M, N)).astype(ct.float32)
    acc = ct.mma(a, b, acc)
    ct.store(C, (bid, 0, 0), tile=acc.astype(C.dtype))


@ct.kernel
def matvec_rows(W, v, out, M: ConstInt, K: ConstInt):
    """out = W @ v with a 1-d right operand (cuTile's matmul rule for vectors)."""
    bid = ct.bid(0)
    w = ct.load(W, (bid, 0), shape=(M, K))
    x = ct.load(v, (0,), shape=(K,))
    ct.store(out, (bid,), tile=ct.matmul(w, x))
