# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 6: torch tensors in and out
#
# `ct.launch` takes torch tensors as they are: no copy, no conversion. A kernel reads a tensor's
# storage through its data pointer, shape and strides, and writes into it in place. CPU tensors
# run on the CPU backend, CUDA tensors on their GPU (the launch uses the tensor's device and,
# with `stream=None`, torch's current stream). Any DLPack producer works the same way.
#
# This tutorial wraps a kernel in an ordinary function that takes and returns torch tensors,
# like a custom op, and checks it against `torch.nn.functional`. It needs torch (the `test`
# extra installs a CPU build on Linux x86-64 with CPython 3.11); without torch it says so and
# stops.

# %%
import math

import numpy as np

import tilepy as ct
from tilepy.tools.plotting import new_figure, save

try:
    import torch
except ImportError:
    torch = None
if torch is None:
    print("torch is not installed: skipping this tutorial (pip install torch to run it)")
    raise SystemExit(0)


# %% [markdown]
# GELU with the tanh approximation, element-wise over a 2-D tensor: `(TM, TN)` tiles, a 2-D
# grid. Computed in float32 whatever the tensor's dtype, stored back in the output's dtype.

# %%
@ct.kernel
def gelu_kernel(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(bm, bn), shape=(TM, TN)).astype(ct.float32)
    inner = math.sqrt(2.0 / math.pi) * (t + 0.044715 * t * t * t)
    ct.store(y, index=(bm, bn), tile=(0.5 * t * (1.0 + ct.tanh(inner))).astype(y.dtype))


def gelu(x: "torch.Tensor") -> "torch.Tensor":
    """tilepy's GELU as a torch function: a new tensor like `x` (any 2-D layout)."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    TM, TN = 16, 64
    ct.launch(None, (ct.cdiv(x.shape[0], TM), ct.cdiv(x.shape[1], TN)), gelu_kernel,
              (x, y, TM, TN))
    return y


# %% [markdown]
# Tensors of several dtypes, and a non-contiguous one: the transpose of a tensor is a view
# with swapped strides, which the kernel reads in place (its specialization records that the
# last dimension is not unit-stride).

# %%
torch.manual_seed(0)
base = torch.randn(320, 512) * 3
for dtype, tol in ((torch.float32, 1e-6), (torch.float16, 2e-3), (torch.bfloat16, 1e-2)):
    x = base.to(dtype)
    y = gelu(x)
    ref = torch.nn.functional.gelu(x.float(), approximate="tanh")
    torch.testing.assert_close(y.float(), ref, rtol=tol, atol=tol)
    print(f"gelu {dtype}: {tuple(x.shape)} matches torch")

xt = base.t()                                    # (512, 320) view, strides (1, 512)
assert not xt.is_contiguous()
torch.testing.assert_close(gelu(xt), torch.nn.functional.gelu(xt, approximate="tanh"),
                           rtol=1e-6, atol=1e-6)
print("gelu on a transposed view (no copy): matches torch")

# %% [markdown]
# Writing into an existing tensor: the kernel's output is the tensor's own storage, so a slice
# of a bigger tensor can be filled in place. numpy arrays and torch tensors mix in one launch
# (here a numpy view of `base` in, a torch view out); numpy's GELU checks it too.

# %%
big = torch.zeros(320, 1024)
window = big[:, 256:768]                          # a view into `big`
ct.launch(None, (320 // 16, 512 // 64), gelu_kernel, (base.numpy(), window, 16, 64))
assert big[:, :256].abs().max() == 0 and big[:, 768:].abs().max() == 0
torch.testing.assert_close(big[:, 256:768], torch.nn.functional.gelu(base, approximate="tanh"),
                           rtol=1e-6, atol=1e-6)
x64 = base.numpy().astype(np.float64)
gelu_np = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
np.testing.assert_allclose(window.numpy(), gelu_np, rtol=1e-5, atol=1e-6)
print("gelu into a slice of a larger tensor: matches torch and matches numpy; the rest is "
      "untouched")

# %% [markdown]
# ## The curve and the error
#
# The kernel's GELU over a range of inputs in each dtype, against torch's float32 GELU of the
# same (rounded) inputs. What is left is the rounding of the output: at most half a unit in the
# last place, 2^-11 (5e-4) relative for float16 and 2^-8 (4e-3) for bfloat16, and around 1e-7
# for float32. Past x = 3 the float16 and bfloat16 outputs round to x itself, so their error is
# GELU's own small deficit there. Points where the kernel and torch agree to the bit are not
# drawn (log scale).

# %%
xs = torch.linspace(-6, 6, 1024).reshape(16, 64)   # 2-D, like the tensors above
curves, errors = {}, {}
for d in (torch.float32, torch.float16, torch.bfloat16):
    xd = xs.to(d)
    curves[d] = gelu(xd).float()
    ref = torch.nn.functional.gelu(xd.float(), approximate="tanh")
    errors[d] = ((curves[d] - ref).abs() / ref.abs().clamp(min=1e-3)).flatten()
    assert float(errors[d].max()) < 2 ** -7, d
print("gelu over [-6, 6] in three dtypes: matches torch")
fig = new_figure("GELU from the kernel and its error against torch", ncols=2)
if fig:
    left, right = fig.axes
    x_axis = xs.flatten()
    left.plot(x_axis, curves[torch.float32].flatten(), label="tilepy kernel (float32)")
    left.plot(x_axis, torch.relu(x_axis), "--", color="0.6", label="relu, for comparison")
    left.set_xlabel("x")
    left.set_ylabel("gelu(x)")
    left.set_title("GELU (tanh approximation)")
    left.legend()
    for d, e in errors.items():
        nz = e > 0
        right.semilogy(x_axis[nz], e[nz], ".", ms=2, label=str(d))
    right.set_xlabel("x")
    right.set_ylabel("relative error vs torch (float32 math)")
    right.set_title("error per input")
    right.legend()
    save(fig, "06_torch_gelu.png")

# %% [markdown]
# On a machine with a GPU, `gelu(x.cuda())` runs the same kernel on the device (the CUDA C++
# compiled by NVRTC, cached on disk like the CPU libraries).
