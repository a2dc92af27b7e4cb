"""Helpers for tests of hand-written CUDA C++ kernels on the CPU backend."""
import os

from tilepy.launch.cpu import compile_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
WARP_KERNELS = os.path.join(HERE, "warp_kernels")
BROKEN_KERNELS = os.path.join(HERE, "broken_kernels")


def kernel_source(path: str) -> str:
    with open(path) as f:
        return f.read()


def build(source: str, name: str, threads: int = 128, mode: str = "faithful"):
    """Build `source` (a string of CUDA C++) for the CPU; returns a callable kernel."""
    return compile_kernel(source, name, threads=threads, mode=mode)


def build_file(path: str, name: str, threads: int = 128, mode: str = "faithful", prefix: str = ""):
    return build(prefix + kernel_source(path), name, threads, mode)
