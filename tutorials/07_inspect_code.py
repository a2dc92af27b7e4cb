# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 7: reading the Tile IR and the CUDA C++ of a kernel
#
# tilepy compiles a kernel in stages you can look at:
#
# 1. the Python function is traced into **Tile IR**, NVIDIA's `cuda_tile` MLIR dialect, checked
#    against the Tile IR spec (`kernel.mlir(*args)` prints it in NVIDIA's 13.4 syntax, exactly
#    as NVIDIA's `tileirdisasm` prints the kernel's bytecode; `kernel.mlir(*args,
#    dialect="spec")` gives the 13.1 spec chapters' spelling);
# 2. the Tile IR is lowered to **CUDA C++**, one line per op calling small templates of
#    `tilepy/runtime.h` (`kernel.cuda_source(*args)`);
# 3. that C++ is compiled by **NVRTC** into a cubin for a GPU (`kernel.compile(*args,
#    arch="sm_90")`, no GPU needed), or by the host C++ compiler for the CPU backend.
#
# Every view takes the launch arguments, because a kernel is compiled per *specialization*:
# the dtypes and ranks of the arrays, which dimensions have unit stride, 16-byte alignment and
# divisibility, and the values of `ct.Constant` parameters.

# %%
import difflib
import os
import tempfile

import numpy as np

import tilepy as ct


@ct.kernel
def axpy(alpha, x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    xt = ct.load(x, index=(i,), shape=(TILE,))
    yt = ct.load(y, index=(i,), shape=(TILE,))
    ct.store(y, index=(i,), tile=alpha * xt + yt)


# %%
n = 1000
x = np.linspace(-1, 1, n, dtype=np.float32)
y = np.ones(n, np.float32)
mlir = axpy.mlir(2.0, x, y, 128)
print(mlir)

# %% [markdown]
# Reading it from the top:
#
# - `entry @axpy(...)`: the kernel's parameters. `alpha` (a Python float) is a 0-d `tile<f32>`;
#   each array is a pointer plus its runtime shape; a stride appears only where the array's
#   stride is not 1. `TILE` is gone: it is a constant baked into the types (`tile<128xf32>`).
# - `assume div_by<16>`: the arrays' base addresses were 16-byte aligned, which the compiler may
#   use for vector loads. An unaligned array gives another specialization without it.
# - `make_tensor_view` / `make_partition_view`: the array seen as a tensor, then cut into
#   tiles of 128: `load_view_tko ... [%i]` reads tile `%i`; padding and bounds come from there.
# - `get_tile_block_id`: `ct.bid(0)` (with the other two grid coordinates).
# - `token`s order memory operations: the store is ordered after both loads.
# - `alpha * xt` broadcasts the scalar (`reshape`, `broadcast`) before `mulf`; the SSA names
#   come from the Python variables where there is one (`%xt`, `%yt`, `%i`).

# %%
for op in ("get_tile_block_id", "load_view_tko", "mulf", "addf", "store_view_tko"):
    assert op in mlir, op
print("the Tile IR has the block id, two tile loads, mulf, addf and the store")

# %% [markdown]
# ## Specialization: what changes with the arguments
#
# The same kernel on every other element of the arrays (a strided view) gets stride parameters
# and a dynamic stride in the tensor view (`strides=[?]`); float64 arrays change every type.
# (float16 arrays would not compile: `alpha`, a float32 scalar, makes `alpha * xt` float32,
# which the store will not narrow silently. Tutorial 8 shows such errors.)

# %%
def show_diff(a: str, b: str, label_a: str, label_b: str) -> list[str]:
    diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), label_a, label_b, n=0,
                                     lineterm=""))
    print("\n".join(diff))
    return diff


strided = axpy.mlir(2.0, x[::2], y[::2], 128)
diff = show_diff(mlir, strided, "contiguous", "x[::2], y[::2]")
assert any("x_stride_0" in line for line in diff if line.startswith("+"))

# %%
x64, y64 = x.astype(np.float64), y.astype(np.float64)
diff = show_diff(mlir, axpy.mlir(2.0, x64, y64, 128), "float32", "float64")
assert any("f64" in line for line in diff if line.startswith("+"))

# %% [markdown]
# ## The CUDA C++
#
# One line per Tile IR op, each calling a template of `tilepy/runtime.h` (`tp::load`,
# `tp::ew(tp::op::mulf{}, ...)`, `tp::store`); the comment at the end of a line names the
# Python line it came from (the compiled source carries `#line` directives instead, so NVRTC
# and host-compiler messages point at your file). A tile block is a CUDA thread block of
# `TP_NT` threads; a tile's elements are spread over them by its *layout*, the last template
# argument of `tp::Tile` (e.g. `tp::Blocked<128, 4>`: runs of 4 consecutive elements per thread,
# which an aligned array lets each thread load with one 128-bit access).

# %%
cuda = axpy.cuda_source(2.0, x, y, 128)
print(cuda)
assert 'extern "C"' in cuda and "axpy" in cuda
assert os.path.basename(axpy.func.__code__.co_filename) in cuda     # this file (a notebook: the cell)

# %% [markdown]
# ## Compiling for a GPU without one
#
# `kernel.compile(..., arch="sm_90")` runs the whole pipeline and NVRTC, and returns the cubin
# with what a loader needs: the entry symbol, the block size, the C parameter list, and ptxas's
# resource usage. `arch="compute_90"` gives PTX text instead; `save(prefix)` writes the binary
# beside a JSON file, and `tilepy.aot.load(prefix)` reads it back. In the PTX below, the
# `.loc` lines (left out) map each instruction back to this file's lines. Each load and store
# appears twice: one 128-bit access (`ld.global.v4`) for a run of 4 elements in bounds, and
# element by element for the array's ragged end; `alpha * xt + yt` became `fma.rn.f32`.

# %%
cubin = axpy.compile(2.0, x, y, 128, arch="sm_90")
assert cubin.data[:4] == b"\x7fELF"
print(f"{cubin.name}: {len(cubin.data)} bytes of sm_90 cubin, block {cubin.block}")
print("signature:", cubin.signature)
print("resources:", cubin.resource_usage())

ptx = axpy.compile(2.0, x, y, 128, arch="compute_90")
text = ptx.data.decode()
lines = [line for line in text.splitlines() if line.strip()]
start = next(i for i, line in enumerate(lines) if f".entry {ptx.symbol}" in line)
body = [line.strip() for line in lines[start:] if not line.strip().startswith(".loc")]
print("\n".join(body[:12]))          # the entry point and its parameters
print(f"... {len(body)} lines; the global memory accesses and the arithmetic:")
print("\n".join(line for line in body if line.startswith(("ld.global", "st.global", "fma"))))
assert any(line.startswith("fma.rn.f32") for line in body)
assert ptx.symbol == "tp_kernel_axpy" and f".entry {ptx.symbol}" in text

with tempfile.TemporaryDirectory() as d:
    paths = cubin.save(os.path.join(d, "axpy"))
    print("saved:", [os.path.basename(p) for p in paths])

# %% [markdown]
# ## Everything side by side
#
# `kernel.inspect(*args)` gathers all of the above for one specialization: the Tile IR, the
# CUDA C++, the PTX and the SASS statistics of the sm_90 cubin (registers, spills, shared
# memory, instruction counts). In a notebook it shows as panes side by side with syntax
# highlighting; `print(view)` gives the same as plain text.

# %%
view = axpy.inspect(2.0, x, y, 128)
print(f"inspect: {view.sass.registers} registers, {view.sass.spill_bytes} spill bytes, "
      f"{view.sass.instructions} SASS instructions")
view

# %% [markdown]
# ## NVIDIA's Tile IR compiler on the same IR
#
# The Tile IR above is also what NVIDIA's own Tile IR compiler reads: `kernel.bytecode(...)`
# writes it in NVIDIA's Tile IR bytecode format, and `kernel.compile(..., compiler="tileiras")`
# (extra `tilepy[tileiras]`) hands that to `tileiras` and returns its cubin, with no CUDA C++ in
# between. Side by side, the registers and the SASS instructions (nvdisasm) of the two cubins.
# Launches on a GPU use tileiras' cubins for a kernel declared `@ct.kernel(compiler="tileiras")`
# (or for every kernel with `TILEPY_GPU_COMPILER=tileiras`; a driver r580+ runs them).

# %%
bytecode = axpy.bytecode(2.0, x, y, 128)
print(f"Tile IR bytecode: {len(bytecode)} bytes, format version {bytecode[8]}.{bytecode[9]}")
from tilepy.launch.tileiras import unusable  # noqa: E402
from tilepy.tools import sass_stats  # noqa: E402

if unusable() or not sass_stats.available():
    print(f"not compared: {unusable() or 'nvdisasm is not installed'} (pip install "
          "'tilepy[tileiras]' nvidia-cuda-nvdisasm)")
else:
    second = axpy.compile(2.0, x, y, 128, arch="sm_90", compiler="tileiras")
    for who, c in (("NVRTC (tilepy's C++)", cubin), ("tileiras (tilepy's Tile IR)", second)):
        (r,) = sass_stats.stats(c.data, c.log).values()
        print(f"{who:28} block {c.block[0]:4}, {r['registers']:3} registers, "
              f"{len(r['ops'])} SASS instructions")

# %% [markdown]
# ## And it runs
#
# Here on the CPU backend: the very C++ above, compiled by the host compiler.

# %%
expected = 2.0 * x + y
ct.launch(None, (ct.cdiv(n, 128),), axpy, (2.0, x, y, 128))
np.testing.assert_allclose(y, expected, rtol=1e-6)
print("axpy: matches numpy")
