# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 4: layer normalization
#
# `Y = (X - mean) / sqrt(var + eps) * W + B`, with the mean and the variance taken over each
# row. One tile block per row, but unlike the softmax of tutorial 2 the row does not have to fit
# in one tile: the kernel walks it in tiles of `TILE_N` columns, three times (sum for the mean,
# sum of squares for the variance, then normalize and store). It also writes each row's mean and
# `rstd = 1 / sqrt(var + eps)`, which a backward pass would need.
#
# New here: a runtime scalar argument (`eps`, a Python float, becomes a float32 value of the
# kernel), `X.shape[1]` read at run time, and `ct.where` with `ct.arange` to mask the ragged
# last tile of a row out of the variance.

# %%
import numpy as np

import tilepy as ct
from tilepy.tools.plotting import new_figure, save


# %%
@ct.kernel
def layernorm(X, W, B, Y, Mean, Rstd, eps, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    n_tiles = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    N = X.shape[1]

    acc = ct.zeros((1, TILE_N), dtype=ct.float32)
    for j in range(n_tiles):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        acc += x.astype(ct.float32)
    mean = ct.sum(acc, axis=1) / N

    acc = ct.zeros((1, TILE_N), dtype=ct.float32)
    for j in range(n_tiles):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        cols = j * TILE_N + ct.arange(TILE_N, dtype=ct.int32)
        d = ct.where(cols < N, x.astype(ct.float32) - mean, 0.0)   # padding is not data
        acc += d * d
    rstd = 1.0 / ct.sqrt(ct.sum(acc, axis=1) / N + eps)

    for j in range(n_tiles):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        w = ct.load(W, index=(j,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(j,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO)
        y = (x.astype(ct.float32) - mean) * rstd * w.astype(ct.float32) + b.astype(ct.float32)
        ct.store(Y, index=(row, j), tile=y.astype(Y.dtype))
    ct.store(Mean, index=(row,), tile=mean)
    ct.store(Rstd, index=(row,), tile=rstd)


# %% [markdown]
# Row statistics come out as 1-element tiles (`ct.sum(..., axis=1)` of a `(1, TILE_N)` tile),
# stored at tile index `row` of the 1-D `Mean` and `Rstd`. The `(TILE_N,)` tiles of `W` and `B`
# broadcast against the `(1, TILE_N)` row tile like numpy arrays do.

# %%
def reference(X, W, B, eps):
    x = X.astype(np.float64)
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * W + B, mean, rstd


rng = np.random.default_rng(0)
M, N, TILE_N, eps = 64, 1000, 256, 1e-5          # 1000 = 3 full tiles + a ragged one
results = {}
for dtype, tol in ((np.float32, 1e-5), (np.float16, 5e-3)):
    X = (rng.standard_normal((M, N)) * rng.uniform(0.5, 4, (M, 1)) + rng.uniform(-3, 3, (M, 1)))
    X = X.astype(dtype)
    W = rng.uniform(0.5, 1.5, N).astype(dtype)
    B = rng.uniform(-0.5, 0.5, N).astype(dtype)
    Y = np.zeros_like(X)
    Mean = np.zeros(M, np.float32)
    Rstd = np.zeros(M, np.float32)
    ct.launch(None, (M,), layernorm, (X, W, B, Y, Mean, Rstd, eps, TILE_N))
    y_ref, mean_ref, rstd_ref = reference(X, W, B, eps)
    np.testing.assert_allclose(Mean, mean_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Rstd, rstd_ref, rtol=1e-5)
    np.testing.assert_allclose(Y.astype(np.float64), y_ref, rtol=tol, atol=tol)
    results[np.dtype(dtype).name] = (Y, y_ref, Mean, mean_ref, Rstd, rstd_ref)
    print(f"layernorm {np.dtype(dtype).name}: {M}x{N} (TILE_N={TILE_N}) matches numpy")

# %% [markdown]
# ## Statistics and error at a glance
#
# Left: each row's mean and rstd from the kernel against numpy's (on the diagonal when they
# agree). Right: the largest error of each row of Y, float32 and float16 outputs.

# %%
fig = new_figure("layernorm statistics and error against numpy", ncols=2)
if fig:
    left, right = fig.axes
    _, _, Mean, mean_ref, Rstd, rstd_ref = results["float32"]
    left.plot(mean_ref, Mean, "o", label="mean")
    left.plot(rstd_ref, Rstd, "s", label="rstd")
    lo, hi = min(mean_ref.min(), rstd_ref.min()), max(mean_ref.max(), rstd_ref.max())
    left.plot([lo, hi], [lo, hi], "k-", lw=0.5)
    left.set_xlabel("numpy (float64)")
    left.set_ylabel("tilepy kernel")
    left.set_title("row statistics")
    left.legend()
    for name, (Y, y_ref, *_rest) in results.items():
        right.semilogy(np.max(np.abs(Y.astype(np.float64) - y_ref), axis=1), ".", label=name)
    right.set_xlabel("row")
    right.set_ylabel("max |Y - reference|")
    right.set_title("output error per row")
    right.legend()
    save(fig, "04_layernorm.png")
