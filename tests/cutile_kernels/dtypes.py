"""numpy dtype objects where cuTile takes a dtype (arange, full, astype, dtype constructors),
and 0-d loads (`shape=()`) of one element, as in cuTile's attention and MoE samples."""
import numpy as np

import tilepy as ct

ConstInt = ct.Constant[int]


@ct.kernel
def causal_row_sums(X, Out, TILE_M: ConstInt, TILE_N: ConstInt):
    """Per row i, the sum of X[i, j] for j <= i (a causal mask built from np dtypes)."""
    bid = ct.bid(0)
    offs_m = bid * TILE_M + ct.arange(TILE_M, dtype=np.int32)
    acc = ct.full((TILE_M, 1), 0.0, dtype=np.float32)
    for j in range(ct.cdiv(X.shape[1], TILE_N)):
        offs_n = j * TILE_N + ct.arange(TILE_N, dtype=np.int32)
        mask = ct.full((TILE_M, TILE_N), True, dtype=np.bool_)
        mask = mask & (offs_m[:, None] >= offs_n[None, :])
        x = ct.load(X, (bid, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        x = ct.where(mask, x.astype(np.float32), np.float32(0))
        acc += ct.sum(x, axis=1, keepdims=True)
    ct.store(Out, (bid, 0), tile=acc.astype(Out.dtype))


@ct.kernel
def rounded_counts(X, Out, TILE: ConstInt):
    bid = ct.bid(0)
    x = ct.load(X, (bid,), shape=(TILE,))
    n = ct.astype(x * 4.0, np.int32) + (x > 0).astype(np.bool_).astype(np.dtype("int32"))
    ct.store(Out, (bid,), tile=n.astype(Out.dtype))


@ct.kernel
def segment_sums(indptr, values, scale, out, TILE: ConstInt):
    """out[s] = scale[0] * sum(values[indptr[s]:indptr[s+1]]): two 0-d loads per segment
    (scalar and 1-tuple indices) and one of a 1-element array."""
    seg = ct.bid(0)
    start = ct.load(indptr, index=seg, shape=())
    end = ct.load(indptr, index=(seg + 1,), shape=())
    s = ct.load(scale, index=0, shape=())
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for base in range(start, end, TILE):
        idx = base + ct.arange(TILE, dtype=ct.int32)
        v = ct.gather(values, idx)
        acc += ct.where(idx < end, v, 0.0)
    ct.store(out, index=seg, tile=ct.sum(acc) * s)


@ct.kernel
def expert_rows(W, expert_ids, X, Out, TILE: ConstInt):
    """Out[i, :] = X[i, :] * W[expert_ids[i], :]: a 0-d load picks a row, as the MoE sample."""
    i = ct.bid(0)
    e = ct.load(expert_ids, index=i, shape=())
    w = ct.load(W, (e, 0), shape=(1, TILE))
    x = ct.load(X, (i, 0), shape=(1, TILE))
    ct.store(Out, (i, 0), tile=x * w)


@ct.kernel
def tf32_of_f64(X, Y, TILE: ct.Constant[int]):
    """Y = X (float64) rounded to tf32 once, back in float64 (cuTile's astype f64 -> tf32)."""
    x = ct.load(X, (ct.bid(0),), (TILE,))
    ct.store(Y, (ct.bid(0),), x.astype(ct.tfloat32).astype(ct.float64))


@ct.kernel
def middle_times_length(x, out, TILE: ConstInt):
    """out[b] = (x's middle element of tile b + 5) * len(x): 0-d extract and num_tiles."""
    b = ct.bid(0)
    tx = ct.load(x, (b,), shape=(TILE,))
    s = ct.extract(tx, index=TILE // 2, shape=()) + 5
    n = ct.num_tiles(x, axis=0, shape=())
    ct.store(out, b, s * n)


@ct.kernel
def past_int32(out, big: ct.ScalarInt64):
    """out[b] = 1 where `big` (an int64 parameter) is past int32's range, as cuTile's int64 test."""
    if big > 2**31 - 1:
        ct.store(out, ct.bid(0), 1)


@ct.kernel
def bf16_histogram(x, out, TILE: ConstInt):
    """out[j] += every x[i] with i % TILE % len(out) == j: a bfloat16 atomic add (sm_90 on)."""
    t = ct.load(x, (ct.bid(0),), (TILE,))
    ct.atomic_add(out, ct.arange(TILE, dtype=ct.int32) % out.shape[0], t)  # BF16ADD


@ct.kernel
def relu_tf32(X, Y, TILE: ct.Constant[int]):
    """relu on tf32 values: where() picks between tf32 tiles (cuTile allows tf32 conversions,
    where and mma; arithmetic on them is a type error)."""
    x = ct.load(X, (ct.bid(0),), (TILE,))
    t = ct.where(x > 0, x.astype(ct.tfloat32), 0.0)
    ct.store(Y, (ct.bid(0),), t.astype(ct.float32))
