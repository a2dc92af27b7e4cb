# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 8: debugging kernels
#
# Four tools, from the first you meet to the most thorough:
#
# 1. **Located errors.** A kernel that tilepy cannot compile raises a `TileError` subclass
#    (`TileTypeError`, `TileSyntaxError`, `TileValueError`, `TileUnsupportedFeatureError`, ...)
#    whose message names the problem and points at your line and column, with a caret under the
#    expression. The traceback stops at the tilepy call you made (no compiler internals).
# 2. **`ct.printf` and `print` inside a kernel**, and `ct.assert_` checks that fail the launch.
# 3. **The faithful CPU mode**, which runs every thread of a block (barriers, warps) instead of
#    one thread per block.
# 4. **The reference interpreter** (`tilepy.interpret`), which executes the Tile IR itself with
#    numpy, op by op, reports undefined behavior (a race between tile blocks, an index outside
#    an array) with the line, and calls a hook of yours after every op.

# %%
import inspect
import sys

import numpy as np

import tilepy as ct
from tilepy.tools.plotting import new_figure, save


def marked_line(kernel, marker: str = "# <- error here") -> int:
    """The file line number of the line in `kernel`'s source that carries `marker`."""
    lines, first = inspect.getsourcelines(kernel.func)
    return first + next(i for i, line in enumerate(lines) if marker in line)


# %% [markdown]
# ## 1. Located errors
#
# Compilation happens at the first launch (or at `kernel.mlir(...)`, `kernel.compile(...)`), so
# that is where the error is raised. Three common mistakes:

# %%
@ct.kernel
def narrowing_store(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,)).astype(ct.float32)
    ct.store(y, index=(ct.bid(0),), tile=ct.sqrt(t))   # <- error here


@ct.kernel
def not_a_power_of_two(x, y):
    t = ct.load(x, index=(ct.bid(0),), shape=(100,))   # <- error here
    ct.store(y, index=(ct.bid(0),), tile=t)


@ct.kernel
def python_only_syntax(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    try:                                             # <- error here
        t = t + 1
    except ValueError:
        pass
    ct.store(y, index=(ct.bid(0),), tile=t)


x16 = np.arange(256, dtype=np.float16)
y16 = np.zeros_like(x16)
cases = [(narrowing_store, (x16, y16, 128), ct.TileTypeError),
         (not_a_power_of_two, (x16, y16), ct.TileTypeError),
         (python_only_syntax, (x16, y16, 128), ct.TileSyntaxError)]
for kernel, args, expected in cases:
    try:
        ct.launch(None, (2,), kernel, args)
    except ct.TileError as e:
        print(f"{type(e).__name__}: {e}\n")
        assert isinstance(e, expected)
        assert e.loc.line == marked_line(kernel), (e.loc, marked_line(kernel))
    else:
        raise AssertionError(f"{kernel.name} compiled")
print("each error names the problem and points at the marked line")

# %% [markdown]
# The error object carries the location as data too (`e.loc.file`, `e.loc.line`, `e.loc.col`,
# and `e.message` without the snippet), for tools and tests; the check above uses it.
#
# ## 2. Printing from a kernel, and assertions
#
# `ct.printf` takes a C format and tile arguments (0-d tiles print as one number); `print`
# (the builtin, f-strings included) prints tiles whole. Every tile block prints, so print from a
# small grid, or guard with an `if` on `ct.bid`. Each print op of each block is one record that
# the compiled code writes into a log; after the launch tilepy formats the records, in the order
# the blocks wrote them, and prints them to Python's standard output (in Jupyter, under the cell).
# So a print op comes out whole even when blocks run in parallel, and reads the same on a GPU,
# on the CPU backend and in the interpreter.

# %%
@ct.kernel
def row_norms(x, out, TILE: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
    norm = ct.sqrt(ct.sum(t * t))
    ct.printf("row %d: norm %.4f\n", row, norm)
    if row == 0:
        print("row 0 tile:", t)
    ct.store(out, index=(row,), tile=norm)


x = np.arange(12, dtype=np.float32).reshape(3, 4)
norms = np.zeros(3, np.float32)
sys.stdout.flush()                 # Python's buffered output first, then the kernel's
ct.launch(None, (3,), row_norms, (x, norms, 4))
np.testing.assert_allclose(norms, np.linalg.norm(x, axis=1), rtol=1e-6)
print("row_norms: matches numpy")

# %% [markdown]
# `ct.assert_(condition, message)` checks a condition on every element; a failing one prints
# the message with the element and the block to standard error, and the launch raises
# `TileLaunchError` when the kernel is done.

# %%
@ct.kernel
def checked_sqrt(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.assert_(t >= 0, "sqrt of a negative number")
    ct.store(y, index=(ct.bid(0),), tile=ct.sqrt(t))


x = np.linspace(0, 1, 300, dtype=np.float32)
y = np.zeros_like(x)
ct.launch(None, (ct.cdiv(300, 128),), checked_sqrt, (x, y, 128))
np.testing.assert_allclose(y, np.sqrt(x), rtol=1e-6)
print("checked_sqrt on valid input: matches numpy")
x[200] = -1.0
sys.stderr.flush()
try:
    ct.launch(None, (ct.cdiv(300, 128),), checked_sqrt, (x, y, 128))
except ct.TileLaunchError as e:
    print(f"TileLaunchError: {e}")
else:
    raise AssertionError("the assertion did not fire")

# %% [markdown]
# ## 3. The faithful CPU mode
#
# The CPU backend's default *fast* mode runs one thread per tile block. A tile kernel never
# names threads, so that is enough to get its results; but the generated code distributes
# every tile over the block's threads, moves data through shared memory and synchronizes with
# barriers, and a mistake there (a missing barrier, a wrong warp shuffle) only shows when the
# block's real threads run. `ct.cpu_mode("faithful")` (or `TILEPY_CPU_MODE=faithful`) runs
# them, as fibers in a deterministic order that makes such mistakes visible; a deadlock is
# reported as a `TileLaunchError`. It compiles a separate library and runs slower.

# %%
x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
fast, faithful = np.zeros(3, np.float32), np.zeros(3, np.float32)
ct.launch(None, (3,), row_norms, (x, fast, 4))
with ct.cpu_mode("faithful"):
    ct.launch(None, (3,), row_norms, (x, faithful, 4))
np.testing.assert_allclose(faithful, np.linalg.norm(x, axis=1), rtol=1e-6)
np.testing.assert_allclose(faithful, fast, rtol=1e-6)
print("row_norms in faithful mode: matches numpy (and the fast mode, up to the order in which "
      "the threads' partial sums are added)")

# %% [markdown]
# ## 4. The reference interpreter
#
# `tilepy.interpret.launch(grid, kernel, args)` (or `ct.launch(..., backend="interpret")`, or
# `TILEPY_INTERPRET=1` for every launch) runs the kernel's Tile IR directly with numpy, one tile
# block after another, following the Tile IR spec rather than the generated C++. It is slow
# and meant for small inputs; what it gives in exchange:
#
# - an independent second opinion on a result (it shares no code with the C++ backend below
#   the Tile IR);
# - undefined behavior reported with your line instead of a plausible wrong answer: a data race
#   between tile blocks, a tile index outside an array, an endless loop, reading padding that
#   the load left undefined;
# - `on_op=hook`: your function is called after every op with the op, its source location, the
#   tile block and the actual input and output values (`tilepy.interpret.print_ops` prints
#   them all).

# %%
import tilepy.interpret as interpret

# %% [markdown]
# A second opinion: the row norms again, interpreted (its `printf` prints too).

# %%
x = np.arange(12, dtype=np.float32).reshape(3, 4)
norms = np.zeros(3, np.float32)
sys.stdout.flush()
interpret.launch((3,), row_norms, (x, norms, 4))
np.testing.assert_allclose(norms, np.linalg.norm(x, axis=1), rtol=1e-6)
print("row_norms in the interpreter: matches numpy")

# %% [markdown]
# A race. Each tile block adds its partial sum into `out[0]` by loading it, adding and storing
# it back. On a GPU the blocks run at the same time and overwrite each other's sums; the CPU
# backend may or may not show it, depending on how the blocks land on its threads. The
# interpreter says what is wrong: which tile blocks touched which address. `ct.atomic_add` is
# the fix.

# %%
@ct.kernel
def racy_total(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    partial = ct.load(out, index=(0,), shape=(1,))
    ct.store(out, index=(0,), tile=partial + ct.sum(t))   # <- error here


@ct.kernel
def atomic_total(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.atomic_add(out, 0, ct.sum(t))


x = np.ones(1000, np.float32)
out = np.zeros(1, np.float32)
try:
    interpret.launch((ct.cdiv(1000, 128),), racy_total, (x, out, 128))
except ct.TileError as e:
    print(f"{type(e).__name__}: {e}\n")
    assert "race" in e.message
    assert e.loc is None or e.loc.line == marked_line(racy_total), e.loc
else:
    raise AssertionError("the interpreter did not report the race")
out[:] = 0
interpret.launch((ct.cdiv(1000, 128),), atomic_total, (x, out, 128))
assert out[0] == 1000.0
out[:] = 0
ct.launch(None, (ct.cdiv(1000, 128),), atomic_total, (x, out, 128))
assert out[0] == 1000.0
print("atomic_total, interpreted and compiled: matches numpy")

# %% [markdown]
# Watching a value. A row's log-sum-exp computed in tiles with a running maximum, the
# building block of the online softmax of tutorial 5. The hook records the running maximum
# `m_new` of every row at every iteration of the loop: the `(1, 1)` result of the `maxf` op on
# the marked line (`ct.max`'s reduction runs `maxf` on that line too, inside its body).

# %%
@ct.kernel
def row_logsumexp(x, out, TILE: ct.Constant[int]):
    row = ct.bid(0)
    m = ct.full((1, 1), -np.inf, dtype=ct.float32)
    s = ct.zeros((1, 1), dtype=ct.float32)
    for j in range(ct.num_tiles(x, axis=1, shape=(1, TILE))):
        t = ct.load(x, index=(row, j), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
        m_new = ct.maximum(m, ct.max(t, axis=1, keepdims=True))   # <- watch
        s = s * ct.exp(m - m_new) + ct.sum(ct.exp(t - m_new), axis=1, keepdims=True)
        m = m_new
    ct.store(out, index=(row,), tile=(m + ct.log(s)).reshape((1,)))


rng = np.random.default_rng(1)
rows, cols, TILE = 4, 512, 32
x = (rng.standard_normal((rows, cols)) * np.linspace(1, 3, cols)).astype(np.float32)
out = np.zeros(rows, np.float32)
watch = marked_line(row_logsumexp, "# <- watch")
running_max = {r: [] for r in range(rows)}


def record(event):
    if event.op.name == "maxf" and event.loc is not None and event.loc.line == watch \
            and np.shape(event.outputs[0]) == (1, 1):
        running_max[event.block[0]].append(float(event.outputs[0][0, 0]))


interpret.launch((rows,), row_logsumexp, (x, out, TILE), on_op=record)
x64 = x.astype(np.float64)
ref = x64.max(axis=1) + np.log(np.exp(x64 - x64.max(axis=1, keepdims=True)).sum(axis=1))
np.testing.assert_allclose(out, ref, rtol=1e-5)
for r in range(rows):
    assert len(running_max[r]) == cols // TILE
    np.testing.assert_allclose(running_max[r], np.maximum.accumulate(
        x[r].reshape(-1, TILE).max(axis=1)))
print("row_logsumexp in the interpreter: matches numpy; the hook saw every running maximum")

# %%
fig = new_figure("the running maximum of each row, per loop iteration")
if fig:
    ax = fig.axes[0]
    for r in range(rows):
        ax.plot(range(1, cols // TILE + 1), running_max[r], marker=".", drawstyle="steps-post",
                label=f"row {r}")
    ax.set_xlabel(f"loop iteration (tiles of {TILE} columns read)")
    ax.set_ylabel("m_new (running max)")
    ax.set_title("values seen by an on_op hook in the interpreter")
    ax.legend()
    save(fig, "08_interpreter_running_max.png")
