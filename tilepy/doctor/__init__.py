"""`python -m tilepy doctor`: what tilepy finds on this machine and whether each backend works.

It reports the versions (Python, tilepy, numpy, cuda-python, torch, ...), NVRTC and the CUDA
headers, the host C++ compiler, the disk cache, the NVIDIA driver and each GPU -- or "no GPU",
said plainly --, the target tilepy would compile for on each GPU and why, tileiras if installed;
then runs a vector add on every backend available (CPU fast, CPU faithful, the interpreter,
each GPU) and checks it against numpy. Each problem comes with its fix. The exit status is 0
when every available backend works.

`--gpu` then runs benchmarks/gpu.py from tilepy's source checkout (exit status 1 without a GPU):
every tutorial kernel, the cuTile-style suite and fuzz batches on the GPU against the CPU
backend, each in a child process (a CUDA error names its case and loses nothing else), and the
speed table beside cuTile, Triton and torch; each row printed as soon as it is known.
"""
from __future__ import annotations

import sys

from .report import Report


def run(out=sys.stdout, gpu: bool = False, json_path: str | None = None,
        markdown_path: str | None = None) -> int:
    from . import backends, environment
    report = Report(out)
    environment.describe(report)
    backends.check_all(report)
    if gpu:
        from .gpu_suite import run_gpu_suite
        run_gpu_suite(report, json_path, markdown_path)
    return report.finish()
