# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 5: fused attention forward
#
# `Out = softmax(Q @ K^T * scale) @ V` for each (batch, head), without ever holding the whole
# `S x S` score matrix. A tile block owns `BM` query rows and walks the keys and values in tiles
# of `BN` rows, keeping for each query row a running maximum `m`, a running sum `row_sum` of
# `exp(score - m)` and an unnormalized output `acc`. When a new tile raises the maximum, what was
# accumulated so far is rescaled by `exp(m_old - m_new)`: the *online softmax*. At the end
# `acc / row_sum` is the softmax-weighted sum of the values.
#
# Q, K and V are `(batch*heads, S, D)` float16 arrays; the two products use `ct.mma` with float16
# inputs and float32 accumulators. The sequence length need not be a multiple of `BN`: scores of
# the padded key rows are set to `-inf` with `ct.where`, so they get zero weight.
#
# The exponentials are base 2: `exp(x) = exp2(x * log2(e))`, so the kernel folds `log2(e)` into
# the scale once and works with scores in base-2 units (the maxima and their differences scale
# alike, and the softmax is unchanged). `ct.exp2(..., flush_to_zero=True)` is one hardware
# instruction per score on a GPU (`ex2.approx.ftz`); weights below 2^-126 of the row's largest
# become 0, far below float16's resolution of `p`.

# %%
import math

import numpy as np

import tilepy as ct
from tilepy.tools.plotting import new_figure, save


# %%
@ct.kernel
def attention(Q, K, V, Out, qk_scale, BM: ct.Constant[int], BN: ct.Constant[int],
              D: ct.Constant[int]):
    bm, bh = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(bh, bm, 0), shape=(1, BM, D), padding_mode=ct.PaddingMode.ZERO)
    q = q.reshape((BM, D))
    scale = qk_scale * 1.4426950408889634                  # * log2(e): base-2 units
    m = ct.full((BM, 1), -math.inf, dtype=ct.float32)      # running max of each row
    row_sum = ct.zeros((BM, 1), dtype=ct.float32)          # running sum of exp2(score - m)
    acc = ct.zeros((BM, D), dtype=ct.float32)              # running sum of exp2(score - m) * v
    seq_len = K.shape[1]
    for j in range(ct.num_tiles(K, axis=1, shape=(1, BN, D))):
        k = ct.load(K, index=(bh, j, 0), shape=(1, BN, D), padding_mode=ct.PaddingMode.ZERO)
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D), padding_mode=ct.PaddingMode.ZERO)
        s = ct.mma(q, ct.transpose(k.reshape((BN, D))), ct.zeros((BM, BN), dtype=ct.float32))
        key = j * BN + ct.arange(BN, dtype=ct.int32)
        s = ct.where(key.reshape((1, BN)) < seq_len, s * scale, -math.inf)
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new, flush_to_zero=True)
        alpha = ct.exp2(m - m_new, flush_to_zero=True)     # rescales what came before
        row_sum = row_sum * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p.astype(ct.float16), v.reshape((BN, D)), acc * alpha)
        m = m_new
    out = (acc / row_sum).astype(Out.dtype)
    ct.store(Out, index=(bh, bm, 0), tile=out.reshape((1, BM, D)))


# %% [markdown]
# `m` starts at `-inf`; the first key tile always has at least one real key, so `m_new` is finite
# after it and `exp2(m - m_new)` is 0 for the empty history. The reference computes the whole
# score matrix in float64.

# %%
def reference(Q, K, V, scale):
    q, k, v = (t.astype(np.float64) for t in (Q, K, V))
    s = q @ k.transpose(0, 2, 1) * scale
    p = np.exp(s - s.max(axis=2, keepdims=True))
    return (p / p.sum(axis=2, keepdims=True)) @ v, p / p.sum(axis=2, keepdims=True)


rng = np.random.default_rng(0)
BH, S, D, BM, BN = 4, 200, 64, 64, 32              # S = 200: a ragged last tile of keys
scale = 1.0 / math.sqrt(D)
Q = rng.standard_normal((BH, S, D))
K = 0.5 * Q + rng.standard_normal((BH, S, D))     # each key resembles its own query
Q, K = Q.astype(np.float16), K.astype(np.float16)
V = rng.standard_normal((BH, S, D)).astype(np.float16)
Out = np.zeros((BH, S, D), np.float16)
grid = (ct.cdiv(S, BM), BH)
ct.launch(None, grid, attention, (Q, K, V, Out, scale, BM, BN, D))
ref, weights = reference(Q, K, V, scale)
err = np.abs(Out.astype(np.float64) - ref)
np.testing.assert_allclose(Out.astype(np.float64), ref, atol=2e-3, rtol=1e-2)
print(f"attention: {BH} heads, S={S}, D={D}, float16: matches numpy "
      f"(max |error| {err.max():.1e})")

# %% [markdown]
# ## The scores and the error
#
# Left: the attention weights of head 0 (what each query row attends to; the keys were made to
# resemble their own query, hence the diagonal). Right: the largest
# error of each query row of the output against float64. Most of it is the float16 rounding of `p` before
# the second product and of the output.

# %%
fig = new_figure("attention weights and error per query row", ncols=2)
if fig:
    left, right = fig.axes
    im = left.imshow(weights[0], cmap="viridis", aspect="auto")
    fig.colorbar(im, ax=left)
    left.set_xlabel("key")
    left.set_ylabel("query")
    left.set_title("softmax(Q K^T / sqrt(D)), head 0")
    for h in range(BH):
        right.semilogy(err[h].max(axis=1), ".", label=f"head {h}")
    right.set_xlabel("query row")
    right.set_ylabel("max |O - reference|")
    right.set_title("output error (float16 output)")
    right.legend()
    save(fig, "05_attention.png")
