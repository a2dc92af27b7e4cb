"""LayerNorm forward over the rows of X (M x N): Y = (X - mean) / sqrt(var + eps) * W + B,
walking each row in tiles of TILE_N (the pattern of cuTile's layer_norm test kernel)."""
import tilepy as ct


@ct.kernel
def layernorm(X, W, B, Y, eps, N: ct.Constant[int], TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    tiles = N // TILE_N
    acc = ct.zeros((1, TILE_N), dtype=ct.float32)
    for j in range(tiles):
        acc += ct.load(X, index=(row, j), shape=(1, TILE_N)).astype(ct.float32)
    mean = ct.sum(acc, axis=1, keepdims=True) / N
    var = ct.zeros((1, TILE_N), dtype=ct.float32)
    for j in range(tiles):
        d = ct.load(X, index=(row, j), shape=(1, TILE_N)).astype(ct.float32) - mean
        var += d * d
    rstd = 1.0 / ct.sqrt(ct.sum(var, axis=1, keepdims=True) / N + eps)
    for j in range(tiles):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N)).astype(ct.float32)
        w = ct.load(W, index=(j,), shape=(TILE_N,)).astype(ct.float32)
        b = ct.load(B, index=(j,), shape=(TILE_N,)).astype(ct.float32)
        y = (x - mean) * rstd * ct.reshape(w, (1, TILE_N)) + ct.reshape(b, (1, TILE_N))
        ct.store(Y, index=(row, j), tile=y.astype(Y.dtype))
