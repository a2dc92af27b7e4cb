# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Tutorial 6: tilepy kernels as torch operators
#
# `ct.launch` takes torch tensors as they are: no copy, no conversion. A kernel reads a tensor's
# storage through its data pointer, shape and strides, and writes into it in place. CPU tensors
# run on the CPU backend, CUDA tensors on their GPU, on torch's current stream.
#
# `tilepy.torch` goes one step further: it declares a function that launches tilepy kernels as
# a real torch operator (`torch.library.custom_op`). Such an op has a schema, a fake
# implementation (so `torch.compile` traces through it without a graph break), and, given a
# backward made of other tilepy ops, a gradient. This tutorial builds GELU that way, forward and
# backward, checks it against `torch.nn.functional.gelu` and torch's autograd, runs torch's own
# checkers on it (`opcheck`, `gradcheck`), and compiles a function that uses it with
# `torch.compile(fullgraph=True)`.
#
# It needs torch (the `test` extra installs a CPU build on Linux x86-64 with CPython 3.11);
# without torch it says so and stops.

# %%
import math

import tilepy as ct
from tilepy.tools.plotting import new_figure, save

try:
    import torch
except ImportError:
    torch = None
if torch is None:
    print("torch is not installed: skipping this tutorial (pip install torch to run it)")
    raise SystemExit(0)
import tilepy.torch as tpt


# %% [markdown]
# ## Two kernels: GELU and its derivative
#
# GELU with the tanh approximation, element-wise over a 2-D tensor in `(TM, TN)` tiles on a 2-D
# grid: `gelu(x) = x/2 (1 + tanh(u))` with `u = sqrt(2/pi) (x + 0.044715 x^3)`. Its derivative
# is `(1 + tanh(u))/2 + x/2 (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)`; the backward
# kernel multiplies it by the incoming gradient `dy`. Both compute in `CT`, a `Constant` dtype:
# float32 for 16- and 32-bit tensors, float64 for float64 ones (the gradient check below needs
# double precision). Results are stored in the output's dtype.

# %%
@ct.kernel
def gelu_forward_kernel(x, y, CT: ct.Constant[ct.DType], TM: ct.Constant[int],
                        TN: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(bm, bn), shape=(TM, TN)).astype(CT)
    u = math.sqrt(2.0 / math.pi) * (t + 0.044715 * t * t * t)
    ct.store(y, index=(bm, bn), tile=(0.5 * t * (1.0 + ct.tanh(u))).astype(y.dtype))


@ct.kernel
def gelu_backward_kernel(dy, x, dx, CT: ct.Constant[ct.DType], TM: ct.Constant[int],
                         TN: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(bm, bn), shape=(TM, TN)).astype(CT)
    g = ct.load(dy, index=(bm, bn), shape=(TM, TN)).astype(CT)
    c = math.sqrt(2.0 / math.pi)
    th = ct.tanh(c * (t + 0.044715 * t * t * t))
    slope = 0.5 * (1.0 + th) + 0.5 * t * (1.0 - th * th) * c * (1.0 + 3 * 0.044715 * t * t)
    ct.store(dx, index=(bm, bn), tile=(g * slope).astype(dx.dtype))


# %% [markdown]
# ## Two ops
#
# An op is an ordinary function of torch tensors that allocates its outputs and launches
# kernels with `tpt.launch` (the same arguments as `ct.launch`; `stream=None` means the
# tensors' device and torch's current stream). `tpt.op(name, fn, ...)` registers it with torch:
# the schema comes from the annotations. The fake implementation is, by default, the
# function itself with `tpt.launch` launching nothing: `torch.empty_like(x)` on a tensor without
# data makes an output without data, which is all a tracer needs (a `fake=` function can say it
# instead). The forward op names its gradient: `backward=gelu_backward` is called with the
# output's gradient and what `save` names (here the input `x`), and returns one gradient per
# tensor argument.

# %%
TM, TN = 16, 64


def compute_dtype(x):
    return ct.float64 if x.dtype == torch.float64 else ct.float32


def gelu_grid(x):
    return (ct.cdiv(x.shape[0], TM), ct.cdiv(x.shape[1], TN))


def gelu_backward(dy: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tpt.launch(None, gelu_grid(x), gelu_backward_kernel, (dy, x, dx, compute_dtype(x), TM, TN))
    return dx


def gelu(x: torch.Tensor) -> torch.Tensor:
    """tilepy's GELU (tanh approximation) of a 2-D tensor, any layout."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tpt.launch(None, gelu_grid(x), gelu_forward_kernel, (x, y, compute_dtype(x), TM, TN))
    return y


gelu_backward = tpt.op("tilepy_tutorial::gelu_backward", gelu_backward)
gelu = tpt.op("tilepy_tutorial::gelu", gelu, backward=gelu_backward, save=("x",))
print(torch.ops.tilepy_tutorial.gelu.default._schema)

# %% [markdown]
# The op against torch's GELU in three dtypes, on a transposed view (a view with swapped
# strides, read in place: the kernel's specialization records that its last dimension is not
# unit-stride), and its gradient against torch's autograd of `torch.nn.functional.gelu`.

# %%
torch.manual_seed(0)
base = torch.randn(320, 512) * 3
for dtype, tol in ((torch.float32, 1e-6), (torch.float16, 2e-3), (torch.bfloat16, 1e-2)):
    x = base.to(dtype)
    ref = torch.nn.functional.gelu(x.float(), approximate="tanh")
    torch.testing.assert_close(gelu(x).float(), ref, rtol=tol, atol=tol)
    print(f"gelu {dtype}: {tuple(x.shape)} matches torch")
xt = base.t()                                    # (512, 320) view, strides (1, 512)
torch.testing.assert_close(gelu(xt), torch.nn.functional.gelu(xt, approximate="tanh"),
                           rtol=1e-6, atol=1e-6)
print("gelu on a transposed view (no copy): matches torch")

x = base.clone().requires_grad_()
dy = torch.randn_like(base)
(grad,) = torch.autograd.grad(gelu(x), x, dy)
x_ref = base.clone().requires_grad_()
(grad_ref,) = torch.autograd.grad(torch.nn.functional.gelu(x_ref, approximate="tanh"), x_ref, dy)
torch.testing.assert_close(grad, grad_ref, rtol=1e-5, atol=1e-5)
print("gelu backward (autograd through the op): matches torch")

# %% [markdown]
# ## torch's checkers
#
# `torch.library.opcheck` runs an op through torch's own tests: the schema matches what the op
# does (no undeclared mutation or aliasing), autograd is registered correctly, the fake
# implementation agrees with the real one, and the op works under AOT autograd with dynamic
# shapes. `torch.autograd.gradcheck` compares the backward with finite differences of the
# forward, in float64.

# %%
small = torch.randn(24, 80, dtype=torch.float64)
for op, args in ((gelu, (small,)), (gelu_backward, (torch.randn_like(small), small))):
    result = torch.library.opcheck(op, args)
    assert set(result.values()) == {"SUCCESS"}, result
    print(f"opcheck {op._qualname}: {', '.join(result)} passed")

x64 = torch.randn(5, 70, dtype=torch.float64, requires_grad=True)
assert torch.autograd.gradcheck(gelu, (x64,))
print("gradcheck of gelu in float64: passed")

# %% [markdown]
# ## Inside torch.compile
#
# A small block: a linear layer, tilepy's GELU, a residual add. `fullgraph=True` makes any
# graph break an error, so compiling at all shows that dynamo traced through the op. A custom
# backend shows the graph dynamo hands over: the op is one node in it, between torch's own ops.
# Then the default backend (inductor) compiles the forward and the backward (which calls
# `gelu_backward`), and both are checked against the same block with torch's GELU.

# %%
def block(x, w):
    return x + gelu(x @ w)


def block_reference(x, w):
    return x + torch.nn.functional.gelu(x @ w, approximate="tanh")


def show_graph(gm, example_inputs):
    ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    print("dynamo's graph:", ", ".join(ops))
    return gm.forward


w = torch.randn(512, 512) / 512 ** 0.5
torch.compile(block, fullgraph=True, backend=show_graph)(base, w)

compiled = torch.compile(block, fullgraph=True)
x1, x2 = base.clone().requires_grad_(), base.clone().requires_grad_()
out = compiled(x1, w)
ref = block_reference(x2, w)
torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-4)
out.square().sum().backward()
ref.square().sum().backward()
torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-4, atol=1e-3)
print("torch.compile(fullgraph=True) of a block with the op: forward and gradient match torch")

# %% [markdown]
# ## The curves and the error
#
# GELU and its derivative from the two kernels over a range of inputs, and their error against
# torch (float32 math, on the same rounded inputs). What is left of the forward error in 16-bit
# dtypes is the rounding of the output, at most half a unit in the last place: 2^-11 (5e-4)
# relative for float16, 2^-8 (4e-3) for bfloat16; in float32 the forward agrees with torch to
# about 1e-7. The derivative's relative error grows to 1e-4 for x < -2, where the derivative
# is small and `1 + tanh(u)` cancels: both sides round it in float32, in different orders.
# Points where the kernels and torch agree to the bit are not drawn (log scale).

# %%
xs = torch.linspace(-6, 6, 1024).reshape(16, 64)   # 2-D, like the tensors above
ones = torch.ones_like(xs)
curves = {"gelu": gelu(xs), "gelu'": gelu_backward(ones, xs)}
xr = xs.clone().requires_grad_()
yr = torch.nn.functional.gelu(xr, approximate="tanh")
refs = {"gelu": yr.detach(), "gelu'": torch.autograd.grad(yr, xr, ones)[0]}
errors = {}
for d in (torch.float32, torch.float16, torch.bfloat16):
    y = gelu(xs.to(d)).float()
    r = torch.nn.functional.gelu(xs.to(d).float(), approximate="tanh")
    errors[f"gelu {d}"] = ((y - r).abs() / r.abs().clamp(min=1e-3)).flatten()
errors["gelu' torch.float32"] = ((curves["gelu'"] - refs["gelu'"]).abs()
                                 / refs["gelu'"].abs().clamp(min=1e-3)).flatten()
for name, e in errors.items():
    assert float(e.max()) < 2 ** -7, name
print("gelu and its derivative over [-6, 6]: match torch")
fig = new_figure("GELU and its derivative from the kernels, and their error against torch",
                 ncols=2)
if fig:
    left, right = fig.axes
    x_axis = xs.flatten()
    for name, c in curves.items():
        left.plot(x_axis, c.flatten(), label=f"{name} (tilepy kernel)")
        left.plot(x_axis, refs[name].flatten(), ":", color="k", lw=1)
    left.plot([], [], ":", color="k", lw=1, label="torch (autograd of F.gelu)")
    left.set_xlabel("x")
    left.set_title("GELU (tanh approximation) and its derivative")
    left.legend()
    for name, e in errors.items():
        nz = e > 0
        right.semilogy(x_axis[nz], e[nz], ".", ms=2, label=name)
    right.set_xlabel("x")
    right.set_ylabel("relative error vs torch (float32 math)")
    right.set_title("error per input")
    right.legend()
    save(fig, "06_torch_gelu.png")

# %% [markdown]
# ## On a GPU: streams and CUDA graphs
#
# With CUDA tensors the same ops run on the GPU, on torch's current stream. A launch whose
# kernel and argument signature ran before is a cached launch: it does no host
# synchronization, no allocation and no driver query (see `tilepy.torch`'s documentation), so
# after one warm-up call the op can be captured in a CUDA graph and replayed. (The output
# tensor comes from torch's caching allocator, which serves a captured graph from its own
# pool.) This cell runs only where torch sees a GPU.

# %%
if torch.cuda.is_available():
    xg = base.cuda()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        gelu(xg)                                  # warm-up: compiles and loads the kernel
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        yg = gelu(xg)
    xg.copy_(base.cuda() * -1)
    graph.replay()
    torch.testing.assert_close(yg.cpu(), torch.nn.functional.gelu(-base, approximate="tanh"),
                               rtol=1e-5, atol=1e-5)
    print("gelu captured in a CUDA graph and replayed on new input: matches torch")
