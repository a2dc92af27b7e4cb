"""tilepy kernels as torch operators: `torch.compile` traces through them, autograd differentiates
them, and their launches can be captured in CUDA graphs.

    import tilepy.torch as tpt

    @tpt.op("mylib::gelu")
    def gelu(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        tpt.launch(None, grid_for(x), gelu_kernel, (x, y, 16, 64))
        return y

`op` declares the function as a `torch.library.custom_op` (the schema comes from its type
annotations). Its fake (meta) implementation, which `torch.compile` and the other tracing tools
run on tensors without data, is either the `fake=` function given (the output-shape function:
it returns empty tensors of the outputs' shapes and dtypes), or by default the op's own body, in
which `tpt.launch` then launches nothing: it checks the arguments against the kernel and, where
the shapes are static, specializes and traces the kernel for them (so a kernel's type error
shows up while compiling, at the kernel's line). `backward=` (with `save=`) registers a gradient
made of other ops (`register_autograd`). See `op` for the details.

Launches inside an op: `tpt.launch(stream, grid, kernel, args)` is `tilepy.launch` plus the fake
mode. Pass `stream=None`: a launch with torch tensors runs on torch's current stream of the
tensors' device (CPU tensors run on the CPU backend).

Launch guarantee (CUDA graphs, streams). A launch whose kernel and argument signature (dtype,
shape, strides, device, 16-byte alignment of each tensor; scalar types; Constant values) were
launched before in the process is a *cached launch*. It reads each tensor's pointer and metadata
on the host, asks torch for its current stream on the tensors' device (wrapped once per handle
as a cuda.core Stream), reads the thread's current context (cuCtxGetCurrent; the device's is
made current only when it is not, and the caller's put back after) and enqueues the kernel
(`cuda.core.launch`) on that stream, with the argument values in the launch's parameter
buffer. It does no host synchronization (no stream, event or device synchronize, no reading
back), no allocation (device, host-pinned or managed), and no driver query (device attributes,
pointer attributes, versions, module loads): so it can run inside `torch.cuda.graph` capture
and on any stream torch makes current. The first launch of a signature compiles the kernel,
loads the module and asks the device what it is: run each op once before capturing (torch's
graph capture wants a warm-up run anyway). Checked without a GPU on the fake driver of
tests/fake_driver.py (tests/test_torch_launch_hygiene.py).
"""
from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as e:                       # torch is optional for the rest of tilepy
    raise ImportError("tilepy.torch needs torch (pip install torch); the rest of tilepy works "
                      "without it") from e

from .op import launch, op

__all__ = ["op", "launch"]
