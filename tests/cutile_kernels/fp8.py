"""fp8 (float8_e4m3fn, float8_e5m2): per-row scaled quantization, dequantization and fp8
matmul, in the style of cuTile's fp8 samples (element-wise math goes through float32)."""
import tilepy as ct

ConstInt = ct.Constant[int]


@ct.kernel
def quantize_rows(X, Q, Scale, TILE_N: ConstInt):
    """Q[i] = X[i] / s (saturating to +-448), s = max|X[i]| / 448, per row."""
    i = ct.bid(0)
    x = ct.load(X, (i, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
    amax = ct.max(ct.abs(x), axis=1, keepdims=True)
    s = ct.maximum(amax, 1e-12) / 448.0
    ct.store(Q, (i, 0), tile=ct.astype(x / s, Q.dtype))
    ct.store(Scale, (i, 0), tile=s)


@ct.kernel
def dequantize_rows(Q, Scale, Y, TILE_N: ConstInt):
    i = ct.bid(0)
    q = ct.load(Q, (i, 0), shape=(1, TILE_N))
    s = ct.load(Scale, (i, 0), shape=(1, 1))
    ct.store(Y, (i, 0), tile=q.astype(ct.float32) * s)


@ct.kernel
def fp8_matmul(A, B, C, scale_a, scale_b, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    """C = (A @ B) * scale_a * scale_b with fp8 operands and a float32 accumulator."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (tm, tk))):
        a = ct.load(A, (i, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, j), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (i, j), tile=(acc * (scale_a * scale_b)).astype(C.dtype))


@ct.kernel
def mx_quantize(X, Q, S, TILE_M: ConstInt):
    """MX-style quantization: per 32-element block, an e8m0 scale 2^ceil(log2(amax / 448)) and
    the block divided by it in e4m3."""
    i = ct.bid(0)
    x = ct.load(X, (i, 0), shape=(TILE_M, 32))
    amax = ct.maximum(ct.max(ct.abs(x), axis=1, keepdims=True), 1e-30)
    s = ct.astype(amax / 448.0, ct.float8_e8m0fnu, rounding_mode=ct.RoundingMode.RP)
    q = ct.astype(x / s.astype(ct.float32), ct.float8_e4m3fn)
    ct.store(Q, (i, 0), tile=q)
    ct.store(S, (i, 0), tile=s)


@ct.kernel
def block_scaled_matmul(A, SA, B, SB, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    """C = (A * SA) @ (B * SB): fp8 operands with e8m0 scales per 32 elements of K."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (tm, tk))):
        a = ct.load(A, (i, k), shape=(tm, tk))
        sa = ct.load(SA, (i, k), shape=(tm, tk // 32))
        b = ct.load(B, (k, j), shape=(tk, tn))
        sb = ct.load(SB, (k, j), shape=(tk // 32, tn))
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, (i, j), tile=acc)
