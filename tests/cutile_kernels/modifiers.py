"""flush_to_zero and approximate division, as in cuTile's MoE (SiLU-and-mul) and attention
samples."""
import numpy as np

import tilepy as ct
from tilepy import RoundingMode as RMd

ConstInt = ct.Constant[int]


@ct.kernel
def silu_and_mul(A, B, C, TILE_N: ConstInt):
    bid_m = ct.bid(0)
    ta = ct.load(A, (bid_m, 0), (1, TILE_N)).astype(ct.float32)
    tb = ct.load(B, (bid_m, 0), (1, TILE_N)).astype(ct.float32)
    denom = ct.add(1, ct.exp(-ta), flush_to_zero=True)
    sigmoid_ta = ct.truediv(1.0, denom, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    silu_ta = ct.mul(ta, sigmoid_ta, flush_to_zero=True)
    tc = ct.mul(silu_ta, tb, flush_to_zero=True)
    ct.store(C, (bid_m, 0), tc.astype(C.dtype))


@ct.kernel
def online_softmax(X, Y, TILE_M: ConstInt, TILE_N: ConstInt):
    """Row softmax in base 2 with a running max (the attention sample's inner loop)."""
    bid = ct.bid(0)
    m_i = ct.full((TILE_M, 1), -np.inf, dtype=np.float32)
    l_i = ct.full((TILE_M, 1), 0.0, dtype=np.float32)
    n_tiles = ct.num_tiles(X, 1, (TILE_M, TILE_N))
    for j in range(n_tiles):
        x = ct.load(X, (bid, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
        m_ij = ct.maximum(m_i, ct.max(x, axis=1, keepdims=True))
        p = ct.exp2(x - m_ij, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_ij, flush_to_zero=True)
        l_i = ct.add(l_i * alpha, ct.sum(p, axis=1, keepdims=True), flush_to_zero=True)
        m_i = m_ij
    for j in range(n_tiles):
        x = ct.load(X, (bid, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
        p = ct.exp2(x - m_i, flush_to_zero=True)
        y = ct.truediv(p, l_i, flush_to_zero=True, rounding_mode=RMd.APPROX)
        ct.store(Y, (bid, j), tile=y)


@ct.kernel
def interval_bounds(X, Y, OUT, TILE: ConstInt):
    """Bounds of x*y + x/y by rounding each step down and up (interval arithmetic), and x - y
    truncated toward zero: OUT[0], OUT[1], OUT[2]."""
    bid = ct.bid(0)
    x = ct.load(X, (bid,), (TILE,))
    y = ct.load(Y, (bid,), (TILE,))
    lo = ct.add(ct.mul(x, y, rounding_mode=RMd.RM), ct.truediv(x, y, rounding_mode=RMd.RM),
                rounding_mode=RMd.RM)
    hi = ct.add(ct.mul(x, y, rounding_mode=RMd.RP), ct.truediv(x, y, rounding_mode=RMd.RP),
                rounding_mode=RMd.RP)
    ct.store(OUT, (0, bid), lo.reshape((1, TILE)))
    ct.store(OUT, (1, bid), hi.reshape((1, TILE)))
    ct.store(OUT, (2, bid), ct.sub(x, y, rounding_mode=RMd.RZ).reshape((1, TILE)))
