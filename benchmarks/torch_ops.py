"""Overheads of a tilepy.torch op on the CPU: per call, and in torch.compile.

    python benchmarks/torch_ops.py [--quick]

The op is tutorial 6's GELU (forward kernel, f32, 16x64 tiles); the same kernel is also
launched with `tilepy.launch` directly. Per call (microseconds, best of several batches, warm:
kernel compiled, plans made):
  launch     `ct.launch` of the kernel into a preallocated output
  eager fn   the tutorial's plain function: allocate the output + `ct.launch`
  op         the op (torch.library.custom_op dispatch + the same function)
  op+grad    the op on an input that requires grad (autograd records the backward)
  compiled   a `torch.compile(fullgraph=True)` function that calls the op (inductor)
  torch      `torch.nn.functional.gelu` (for scale)
at a one-tile size (16x64: pure overhead) and a larger one.

Compile overhead (seconds): the first call of `torch.compile(fullgraph=True)` of
`f(x) = gelu(x) * 2 + 1` with the op, beside the same function with torch's GELU (what a
compile costs anyway); the fake implementation alone (the op on fake tensors: the tilepy trace
of the specialization on a cleared kernel cache, and warm); and the first eager call of the
kernel in a process (the CPU library from the disk cache).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tutorials")]

import torch  # noqa: E402

import tilepy as ct  # noqa: E402
import tilepy.torch as tpt  # noqa: E402
from definitions import load  # noqa: E402

t6 = load("06_torch_interop")
t6.gelu.__globals__.update(torch=torch, tpt=tpt, TM=16, TN=64)
gelu_backward = tpt.op("tilepy_bench::gelu_backward", t6.gelu_backward)
gelu = tpt.op("tilepy_bench::gelu", t6.gelu, backward=gelu_backward, save=("x",))
KERNEL = t6.gelu_forward_kernel


def per_call_us(fn, number: int, repeat: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def per_call_rows(shape, number, repeat):
    x = torch.randn(*shape)
    xg = x.clone().requires_grad_()
    y = torch.empty_like(x)
    grid = t6.gelu_grid(x)
    compiled = torch.compile(lambda t: gelu(t), fullgraph=True)
    compiled(x)
    cases = {
        "launch": lambda: ct.launch(None, grid, KERNEL, (x, y, ct.float32, 16, 64)),
        "eager fn": lambda: t6.gelu(x),
        "op": lambda: gelu(x),
        "op+grad": lambda: gelu(xg),
        "compiled": lambda: compiled(x),
        "torch": lambda: torch.nn.functional.gelu(x, approximate="tanh"),
    }
    return {k: per_call_us(f, number, repeat) for k, f in cases.items()}


def first_call_s(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def compile_rows(repeat: int):
    """First-call times of torch.compile, after one untimed compile (inductor's own start-up:
    imports, compile workers), alternating the two functions; best of `repeat`."""
    x = torch.randn(256, 512)
    torch.compile(lambda t: t.sin() + 1, fullgraph=True)(x)
    fns = {"torch.compile, torch's gelu":
           lambda t: torch.nn.functional.gelu(t, approximate="tanh") * 2 + 1,
           "torch.compile, tilepy op": lambda t: gelu(t) * 2 + 1}
    from torch._inductor import config
    times: dict = {}
    for graph_cache in (False, True):       # inductor's FX graph cache: off, then warm
        config.fx_graph_cache = graph_cache
        for _ in range(repeat):
            for k, f in fns.items():
                torch._dynamo.reset()
                row = f"{k} (inductor graph cache {'warm' if graph_cache else 'off'})"
                times.setdefault(row, []).append(first_call_s(torch.compile(f, fullgraph=True), x))
    rows = {k: min(v) for k, v in times.items()}
    from torch._subclasses.fake_tensor import FakeTensorMode
    KERNEL.cache.clear()                      # the trace comes from the disk index (or traces)
    with FakeTensorMode():
        xf = torch.empty(256, 512)
        rows["fake impl, first (specialization from the disk index)"] = first_call_s(gelu, xf)
        rows["fake impl, later"] = min(first_call_s(gelu, xf) for _ in range(20))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    number, repeat = (200, 3) if a.quick else (1000, 5)
    x = torch.randn(16, 64)
    print(f"first eager call of the kernel (CPU library from the disk cache): "
          f"{first_call_s(t6.gelu, x) * 1e3:.1f} ms")
    torch.set_num_threads(1)
    for shape in ((16, 64), (1024, 1024)):
        n = number if shape == (16, 64) else max(10, number // 50)
        rows = per_call_rows(shape, n, repeat)
        print(f"per call, {shape[0]}x{shape[1]} f32 (us): " +
              ", ".join(f"{k} {v:.1f}" for k, v in rows.items()))
    for k, v in compile_rows(2 if a.quick else 3).items():
        print(f"{k}: {v:.3f} s")


if __name__ == "__main__":
    main()
