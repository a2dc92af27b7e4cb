"""Attention forward (flash-attention style) for Q, K, V of shape (batch*heads, S, D): one tile
of BM queries per block walks the keys in tiles of BN with an online softmax. K is loaded
transposed through the load's `order`."""
import tilepy as ct


@ct.kernel
def attention(Q, K, V, O, qk_scale, BM: ct.Constant[int], BN: ct.Constant[int],
              D: ct.Constant[int]):
    bm, bh = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(bh, bm, 0), shape=(1, BM, D)).reshape((BM, D))
    m_i = ct.full((BM, 1), -float("inf"), dtype=ct.float32)
    l_i = ct.zeros((BM, 1), dtype=ct.float32)
    acc = ct.zeros((BM, D), dtype=ct.float32)
    for j in range(ct.num_tiles(K, axis=1, shape=(1, BN, D))):
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1)).reshape((D, BN))
        s = ct.mma(q, kt, ct.zeros((BM, BN), dtype=ct.float32)) * qk_scale
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D)).reshape((BN, D))
        acc = ct.mma(p.astype(V.dtype), v, acc * alpha)
        m_i = m_new
    out = (acc / l_i).reshape((1, BM, D))
    ct.store(O, index=(bh, bm, 0), tile=out.astype(O.dtype))


@ct.kernel
def attention_ragged(Q, K, V, O, qk_scale, BM: ct.Constant[int], BN: ct.Constant[int],
                     D: ct.Constant[int]):
    """`attention` for any sequence length: the keys past the end of K get a score of -inf."""
    bm, bh = ct.bid(0), ct.bid(1)
    zero = ct.PaddingMode.ZERO
    q = ct.load(Q, index=(bh, bm, 0), shape=(1, BM, D), padding_mode=zero).reshape((BM, D))
    m_i = ct.full((BM, 1), -float("inf"), dtype=ct.float32)
    l_i = ct.zeros((BM, 1), dtype=ct.float32)
    acc = ct.zeros((BM, D), dtype=ct.float32)
    for j in range(ct.num_tiles(K, axis=1, shape=(1, BN, D))):
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1),
                     padding_mode=zero).reshape((D, BN))
        s = ct.mma(q, kt, ct.zeros((BM, BN), dtype=ct.float32)) * qk_scale
        key = (j * BN + ct.arange(BN, dtype=ct.int32)).reshape((1, BN))
        s = ct.where(key < K.shape[1], s, -float("inf"))
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D), padding_mode=zero).reshape((BN, D))
        acc = ct.mma(p.astype(V.dtype), v, acc * alpha)
        m_i = m_new
    out = (acc / l_i).reshape((1, BM, D))
    ct.store(O, index=(bh, bm, 0), tile=out.astype(O.dtype))
