"""The tutorial kernels written in Triton, for the benchmarks: AOT-compiled to sm_90 cubins
(`triton.compile` of an `ASTSource` with a `GPUTarget`, no GPU needed) and run on Triton's
interpreter (TRITON_INTERPRET=1). Written from Triton's documentation (language reference:
`program_id`, `arange`, masked `load`/`store`, `dot`, `trans`, reductions, `where`).

Each mirrors its tile kernel: one program per tile of the output, the same tile sizes, float32
accumulation, masks where the tile kernel relies on padding. Arrays are passed as pointers plus
the strides the kernel needs; the last dimension is contiguous (as in the tutorials).
"""
import triton
import triton.language as tl


@triton.jit
def vector_add(a, b, c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


@triton.jit
def softmax(x, y, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    t = tl.load(x + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(t - tl.max(t, axis=0))
    out = e / tl.sum(e, axis=0)
    tl.store(y + row * stride_y + cols, out.to(y.dtype.element_ty), mask=mask)


@triton.jit
def matmul(A, B, C, M, N, K, stride_a, stride_b, stride_c,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(A + rm[:, None] * stride_a + ks[None, :],
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(B + ks[:, None] * stride_b + rn[None, :],
                    mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * stride_c + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def layernorm(X, W, B, Y, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = X + row * stride
    y_row = Y + row * stride
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((x - mean) * rstd * w + b).to(Y.dtype.element_ty), mask=mask)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)


@triton.jit
def attention(Q, K, V, Out, seq_len, qk_scale, stride_bh, stride_s,
              BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    base = tl.program_id(1) * stride_bh
    rd = tl.arange(0, D)
    q = tl.load(Q + base + rm[:, None] * stride_s + rd[None, :], mask=rm[:, None] < seq_len,
                other=0.0)
    m = tl.full((BM,), -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, seq_len, BN):
        rn = start + tl.arange(0, BN)
        kv_mask = rn[:, None] < seq_len
        k = tl.load(K + base + rn[:, None] * stride_s + rd[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + base + rn[:, None] * stride_s + rd[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k))
        s = tl.where(rn[None, :] < seq_len, s * qk_scale, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        row_sum = row_sum * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m = m_new
    out = (acc / row_sum[:, None]).to(Out.dtype.element_ty)
    tl.store(Out + base + rm[:, None] * stride_s + rd[None, :], out, mask=rm[:, None] < seq_len)
