# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 2: row-wise softmax
#
# One tile block per row. The row is loaded as a `(1, BLOCK)` tile, `BLOCK` being the next
# power of two above the row length (tile dimensions are powers of two). The padding of the
# ragged end is `-inf`: the max ignores it and `exp` turns it into 0, so it does not disturb the
# sum. Reductions (`ct.max`, `ct.sum` with `keepdims`) and broadcasting work like numpy's.

# %%
import numpy as np

import tilepy as ct
from tilepy.tools.plotting import new_figure, save


# %%
@ct.kernel
def softmax(x, y, BLOCK: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK), padding_mode=ct.PaddingMode.NEG_INF)
    t = t.astype(ct.float32)                      # compute in f32 whatever the input dtype
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    out = e / ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=out.astype(y.dtype))


# %% [markdown]
# Subtracting the row maximum before `exp` keeps it from overflowing; the result is the same.
# The reference computes in float64.

# %%
def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


rng = np.random.default_rng(0)
rows, cols = 123, 1000                            # cols is not a power of two: ragged tiles
block = next_pow2(cols)
results = {}
for dtype, rtol in ((np.float32, 1e-5), (np.float16, 1e-2)):
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    y = np.zeros_like(x)
    ct.launch(None, (rows,), softmax, (x, y, block))
    ref = reference(x)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=rtol, atol=rtol * 1e-2)
    np.testing.assert_allclose(y.astype(np.float64).sum(axis=1), 1.0, rtol=rtol * 10)
    results[np.dtype(dtype).name] = (x, y, ref)
    print(f"softmax {np.dtype(dtype).name}: {rows}x{cols} matches numpy (rtol {rtol})")

# %% [markdown]
# The Tile IR of the float32 version: one `load_view_tko` with its padding, the reductions as
# `reduce` ops with a body, `exp`, `divf`, the store.

# %%
x32, y32, _ = results["float32"]
print(softmax.mlir(x32, y32, block))

# %% [markdown]
# ## What it computed, and how far from float64
#
# Left: one row of the input and its softmax. Right: the largest absolute error of each row
# against the float64 reference. The outputs are probabilities below 1; the error stays within a
# few units of the output type's spacing near the row's largest value (`exp` and the sum each
# round): about 1e-7 for float32, about 1e-4 for float16 (11 significant bits).

# %%
fig = new_figure("softmax output and its error against numpy", ncols=2)
if fig:
    left, right = fig.axes
    x16, y16, _ = results["float16"]
    left.plot(x32[0], color="0.7", lw=0.8, label="x (row 0)")
    left2 = left.twinx()
    left2.plot(y32[0], color="C0", lw=0.8, label="softmax(x)")
    left.set_xlabel("column")
    left.set_ylabel("x")
    left2.set_ylabel("softmax(x)")
    left.set_title("row 0 and its softmax")
    for name, color in (("float32", "C0"), ("float16", "C1")):
        x, y, ref = results[name]
        err = np.max(np.abs(y.astype(np.float64) - ref), axis=1)
        right.semilogy(err, ".", color=color, label=name)
    right.set_xlabel("row")
    right.set_ylabel("max |error| vs float64")
    right.set_title("error per row")
    right.legend()
    save(fig, "02_softmax_error.png")
