"""The tutorial kernels written for Numba CUDA (SIMT: one function per thread), run on Numba's
CUDA simulator (NUMBA_ENABLE_CUDASIM=1) by the benchmarks. Written from Numba's documentation:
`cuda.grid`, `cuda.threadIdx`/`blockIdx`, `cuda.shared.array`, `cuda.local.array`,
`cuda.syncthreads`, device functions.

Where a tile kernel reduces a row inside one tile block, these use one thread block per row and
a shared-memory tree reduction; matmul is one thread per output element (a shared-memory tiled
version adds barriers, which make the simulator slower still); attention is one thread per
query row with the online softmax over the keys.
"""
import math

from numba import cuda, float32

NT = 128          # threads per block, as a tilepy tile block
HEAD_DIM = 32     # attention: D is a compile-time size of the per-thread accumulator


@cuda.jit(device=True)
def _block_max(buf, tid, value):
    buf[tid] = value
    cuda.syncthreads()
    step = NT // 2
    while step > 0:
        if tid < step:
            buf[tid] = max(buf[tid], buf[tid + step])
        cuda.syncthreads()
        step //= 2
    out = buf[0]
    cuda.syncthreads()
    return out


@cuda.jit(device=True)
def _block_sum(buf, tid, value):
    buf[tid] = value
    cuda.syncthreads()
    step = NT // 2
    while step > 0:
        if tid < step:
            buf[tid] += buf[tid + step]
        cuda.syncthreads()
        step //= 2
    out = buf[0]
    cuda.syncthreads()
    return out


@cuda.jit
def vector_add(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


@cuda.jit
def softmax(x, y):
    row, tid = cuda.blockIdx.x, cuda.threadIdx.x
    buf = cuda.shared.array(NT, float32)
    n = x.shape[1]
    m = -math.inf
    for j in range(tid, n, NT):
        m = max(m, float32(x[row, j]))
    m = _block_max(buf, tid, m)
    s = float32(0)
    for j in range(tid, n, NT):
        s += math.exp(float32(x[row, j]) - m)
    s = _block_sum(buf, tid, s)
    for j in range(tid, n, NT):
        y[row, j] = math.exp(float32(x[row, j]) - m) / s


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = float32(0)
        for k in range(A.shape[1]):
            acc += float32(A[i, k]) * float32(B[k, j])
        C[i, j] = acc


@cuda.jit
def layernorm(X, W, B, Y, Mean, Rstd, eps):
    row, tid = cuda.blockIdx.x, cuda.threadIdx.x
    buf = cuda.shared.array(NT, float32)
    n = X.shape[1]
    s = float32(0)
    for j in range(tid, n, NT):
        s += X[row, j]
    mean = _block_sum(buf, tid, s) / n
    s = float32(0)
    for j in range(tid, n, NT):
        d = X[row, j] - mean
        s += d * d
    rstd = 1 / math.sqrt(_block_sum(buf, tid, s) / n + eps)
    for j in range(tid, n, NT):
        Y[row, j] = (X[row, j] - mean) * rstd * W[j] + B[j]
    if tid == 0:
        Mean[row] = mean
        Rstd[row] = rstd


@cuda.jit
def attention(Q, K, V, Out, scale):
    qi = cuda.blockIdx.x * NT + cuda.threadIdx.x
    bh = cuda.blockIdx.y
    seq_len = K.shape[1]
    if qi < Q.shape[1]:
        acc = cuda.local.array(HEAD_DIM, float32)
        for d in range(HEAD_DIM):
            acc[d] = 0
        m = -math.inf
        total = float32(0)
        for j in range(seq_len):
            s = float32(0)
            for d in range(HEAD_DIM):
                s += float32(Q[bh, qi, d]) * float32(K[bh, j, d])
            s *= scale
            m_new = max(m, s)
            alpha = math.exp(m - m_new)
            p = math.exp(s - m_new)
            total = total * alpha + p
            for d in range(HEAD_DIM):
                acc[d] = acc[d] * alpha + p * float32(V[bh, j, d])
            m = m_new
        for d in range(HEAD_DIM):
            Out[bh, qi, d] = acc[d] / total
