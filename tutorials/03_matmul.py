# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 3: matrix multiplication, float16 in, float32 out
#
# `C = A @ B`. Each tile block computes one `(TM, TN)` tile of C: it walks the K dimension in
# steps of `TK`, loading a `(TM, TK)` tile of A and a `(TK, TN)` tile of B, and accumulates
# `ct.mma(a, b, acc)`. The `for` loop over `range(ct.num_tiles(...))` becomes a Tile IR `for`
# with `acc` as a loop-carried value.
#
# M, N and K need not be multiples of the tile: zero padding makes the ragged K tile contribute
# nothing, and the store skips the out-of-bounds part of the ragged C tiles.
#
# The accumulator has C's dtype. With float16 inputs and a float32 C, the products and the
# running sum are float32 (what tensor cores do); with a float16 C the sum itself is rounded to
# float16 after every step, which the plot at the end shows.

# %%
import numpy as np

import tilepy as ct
from tilepy.tools.plotting import new_figure, save


# %%
@ct.kernel
def matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc)


# %% [markdown]
# A sum of K products is only as exact as its largest terms, so the check measures the error
# relative to `|A| @ |B|` (the scale of the terms), computed in float64.

# %%
def scaled_error(A, B, C) -> float:
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    return float(np.max(np.abs(C.astype(np.float64) - A64 @ B64) / (np.abs(A64) @ np.abs(B64))))


rng = np.random.default_rng(0)
M, N, K = 200, 150, 130                           # not multiples of the tile sizes
TM, TN, TK = 64, 64, 32
grid = (ct.cdiv(M, TM), ct.cdiv(N, TN))
A = rng.standard_normal((M, K)).astype(np.float16)
B = rng.standard_normal((K, N)).astype(np.float16)
C = np.zeros((M, N), dtype=np.float32)
ct.launch(None, grid, matmul, (A, B, C, TM, TN, TK))
err = scaled_error(A, B, C)
assert err < 1e-6, err                            # f16 products are exact in f32; sums round
print(f"matmul float16 -> float32: {M}x{K} @ {K}x{N} matches numpy "
      f"(max error {err:.1e} of the terms' scale)")

# %% [markdown]
# The Tile IR: the loop is a `for` whose body loads two tiles and does one `mmaf`.

# %%
print(matmul.mlir(A, B, C, TM, TN, TK))

# %% [markdown]
# ## Where the accumulator's precision shows: error against K
#
# The same kernel with a float16 C accumulates in float16: every step rounds the running sum to
# 11 significant bits, and the error grows with K (like sqrt(K) for random data). The float32
# accumulator, rounded to float16 only once at the end, stays at float16's rounding of the result
# (the dashed line: the best any float16 output can do). M = N = 64: one tile block.

# %%
def relative_error(C, ref) -> float:
    return float(np.linalg.norm(C.astype(np.float64) - ref) / np.linalg.norm(ref))


Ks = [32, 128, 512, 2048, 4096]
errors = {"f32 accumulator": [], "f32 accumulator, stored as f16": [], "f16 accumulator": []}
for k_len in Ks:
    A = rng.standard_normal((64, k_len)).astype(np.float16)
    B = rng.standard_normal((k_len, 64)).astype(np.float16)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    C32 = np.zeros((64, 64), dtype=np.float32)
    C16 = np.zeros((64, 64), dtype=np.float16)
    ct.launch(None, (1, 1), matmul, (A, B, C32, 64, 64, 32))
    ct.launch(None, (1, 1), matmul, (A, B, C16, 64, 64, 32))
    for name, C in zip(errors, (C32, C32.astype(np.float16), C16)):
        errors[name].append(relative_error(C, ref))
print(("K      " + "   ".join(errors)).rstrip())
for i, k_len in enumerate(Ks):
    print((f"{k_len:<6} " + "   ".join(f"{errors[n][i]:<{len(n)}.1e}" for n in errors)).rstrip())
assert max(errors["f32 accumulator"]) < 1e-5
assert errors["f16 accumulator"][-1] > 4 * errors["f32 accumulator, stored as f16"][-1]
print("matmul float16 -> float32 at every K: matches numpy")

# %%
fig = new_figure("matmul error against K for both accumulators")
if fig:
    ax = fig.axes[0]
    for (name, errs), style in zip(errors.items(), ("o-", "k--", "s-")):
        ax.loglog(Ks, errs, style, label=name)
    ax.set_xlabel("K")
    ax.set_ylabel("||C - A@B|| / ||A@B||  (float64 reference)")
    ax.set_title("float16 matmul: the accumulator's precision")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    save(fig, "03_matmul_error.png")
