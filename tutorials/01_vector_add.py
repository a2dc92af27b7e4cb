# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 1: vector addition
#
# The smallest complete tilepy program. A kernel is a Python function decorated with
# `@ct.kernel`; a launch runs one instance of it, a *tile block*, per grid position. Block
# `ct.bid(0)` loads one tile of `TILE` elements from `a` and `b`, adds them and stores the sum
# to `c`. Indices are in *tile space*: tile `i` covers elements `[i*TILE, (i+1)*TILE)`. The last
# tile is ragged (`n` is not a multiple of `TILE`): the load pads it and the store skips the
# elements past the end.
#
# Run it as a script (`python tutorials/01_vector_add.py`) or open it as a notebook
# (`jupytext --to notebook`, or Jupyter with jupytext installed). Without a GPU, numpy arrays
# run on tilepy's CPU backend: the same generated CUDA C++, compiled by the host C++ compiler.

# %%
import time

import numpy as np

import tilepy as ct
from tilepy.tools.plotting import new_figure, save


# %%
@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    a_tile = ct.load(a, index=(i,), shape=(TILE,))
    b_tile = ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=a_tile + b_tile)


# %% [markdown]
# `TILE` is a `ct.Constant[int]`: its value is part of the compiled kernel (one compilation per
# distinct value), which is why tile shapes may use it. The grid has one block per tile,
# `ct.cdiv(n, TILE)` of them. The first launch compiles the kernel (about a second on the CPU
# backend, then it comes from the disk cache).

# %%
n, TILE = 10_000, 256
rng = np.random.default_rng(0)
a = rng.standard_normal(n).astype(np.float32)
b = rng.standard_normal(n).astype(np.float32)
c = np.zeros_like(a)

grid = (ct.cdiv(n, TILE),)
ct.launch(None, grid, vector_add, (a, b, c, TILE))

np.testing.assert_array_equal(c, a + b)          # float32 addition is exact to the bit
print(f"vector_add: {n} elements in {grid[0]} tile blocks: matches numpy")

# %% [markdown]
# What the kernel became: the Tile IR (MLIR `cuda_tile` dialect) of this specialization.
# Tutorial 7 reads it, and the CUDA C++, line by line.

# %%
print(vector_add.mlir(a, b, c, TILE))

# %% [markdown]
# ## Time against size
#
# On the CPU backend a launch has a fixed cost (argument intake, a call into the compiled
# library, spreading blocks over the cores) plus the work. Small vectors show the fixed cost,
# large ones the memory bandwidth. numpy's `a + b` is the yardstick. (On a GPU the same call runs
# the kernel on the device; this plot is about the CPU backend.)

# %%
def best_time(fn, repeat=5):
    fn()                                              # warm up (compile, first touch)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


sizes = [1 << k for k in range(10, 22, 2)]
t_tilepy, t_numpy = [], []
for size in sizes:
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    z = np.empty_like(x)
    g = (ct.cdiv(size, 1024),)
    t_tilepy.append(best_time(lambda: ct.launch(None, g, vector_add, (x, y, z, 1024))))
    t_numpy.append(best_time(lambda: np.add(x, y, out=z)))
    ct.launch(None, g, vector_add, (x, y, z, 1024))
    np.testing.assert_array_equal(z, x + y)
for size, tt, tn in zip(sizes, t_tilepy, t_numpy):
    print(f"n = {size:>9,}: tilepy CPU {tt * 1e6:9.1f} us   numpy {tn * 1e6:9.1f} us")
print("vector_add at every size: matches numpy")

# %%
fig = new_figure("launch time against vector size")
if fig:
    ax = fig.axes[0]
    ax.loglog(sizes, t_tilepy, "o-", label="tilepy (CPU backend), TILE=1024")
    ax.loglog(sizes, t_numpy, "s--", label="numpy a + b")
    ax.set_xlabel("elements")
    ax.set_ylabel("seconds per call (best of 5)")
    ax.set_title("vector add on the CPU")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    save(fig, "01_vector_add_time.png")
