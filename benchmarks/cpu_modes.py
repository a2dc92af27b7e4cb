"""Time the two CPU modes (fast: one thread per block; faithful: every thread a fiber).

    python benchmarks/cpu_modes.py [--repeat 5] [--workers N]

Kernels: the hand-written 256x256x256 f16 tensor-core GEMM (tests/warp_kernels/mma_gemm.cu:
cp.async + ldmatrix + mma.sync in faithful mode; the same kernel's SIMT path in fast mode, where
warp-level code cannot run), and the tutorial kernels (tutorials/01..03) through tilepy.launch.
Each row: time to build (or load from the cache), the best and median wall time of `--repeat`
launches after one warm-up launch, and the best CPU time of a launch (all worker threads; less
sensitive than wall time to other processes on the machine). Every result is checked against
numpy. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tutorials")]

import tilepy as ct  # noqa: E402
from tilepy.launch.cpu import compile_kernel  # noqa: E402
from tilepy.settings import settings  # noqa: E402
from definitions import load as tutorial  # noqa: E402

GEMM = os.path.join(ROOT, "tests", "warp_kernels", "mma_gemm.cu")


def timed(fn, repeat):
    """(best wall, median wall, best CPU time) in seconds."""
    fn()                                          # warm-up (and first-touch of buffers)
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), statistics.median(walls), min(cpus)


def gemm_case(mode, repeat, workers):
    M = N = K = 256
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    t = time.perf_counter()
    with open(GEMM) as f:
        k = compile_kernel(f.read(), "mma_gemm", threads=128, mode=mode)
    build = time.perf_counter() - t
    best, med, cpu = timed(lambda: k((N // 64, M // 64), A, B, C, M, N, K, workers=workers), repeat)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ok = np.abs(C - A64 @ B64).max() <= 1e-5 * np.abs(A64 @ B64).max() + 1e-4
    path = "mma.sync + ldmatrix + cp.async" if mode == "faithful" else "SIMT (1 thread/block)"
    return ("f16 GEMM 256x256x256", path, build, best, med, cpu, ok)


def tutorial_cases():
    rng = np.random.default_rng(0)
    vadd = tutorial("01_vector_add").vector_add
    n = 1 << 20
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = np.zeros_like(a)
    yield ("01 vector_add 2^20 f32", vadd, (ct.cdiv(n, 1024),), (a, b, c, 1024),
           lambda: np.allclose(c, a + b))
    sm = tutorial("02_softmax")
    x = (rng.standard_normal((256, 1000)) * 3).astype(np.float32)
    y = np.zeros_like(x)
    yield ("02 softmax 256x1000 f32", sm.softmax, (256,), (x, y, 1024),
           lambda: np.allclose(y, sm.reference(x), rtol=1e-5, atol=1e-7))
    mm = tutorial("03_matmul").matmul
    A = rng.standard_normal((256, 256)).astype(np.float16)
    B = rng.standard_normal((256, 256)).astype(np.float16)
    C = np.zeros((256, 256), np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    yield ("03 matmul 256^3 f16 (ct.mma)", mm, (4, 4), (A, B, C, 64, 64, 32),
           lambda: np.abs(C - ref).max() <= 1e-3)


def tutorial_case(case, mode, repeat, workers):
    label, kernel, grid, args, check = case
    os.environ["TILEPY_CPU_WORKERS"] = str(workers)
    with ct.cpu_mode(mode):
        t = time.perf_counter()
        ct.launch(None, grid, kernel, args)       # compile + build + first launch
        build = time.perf_counter() - t
        best, med, cpu = timed(lambda: ct.launch(None, grid, kernel, args), repeat)
    return (label, "emitted C++", build, best, med, cpu, check())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--workers", type=int, default=settings().cpu_workers)
    opts = p.parse_args(argv)
    rows = []
    for mode in ("fast", "faithful"):
        rows.append((mode,) + gemm_case(mode, opts.repeat, opts.workers))
    for case in tutorial_cases():
        for mode in ("fast", "faithful"):
            rows.append((mode,) + tutorial_case(case, mode, opts.repeat, opts.workers))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"CPU modes on {platform.machine()}, {os.cpu_count()} cores (load average {load:.1f}), "
          f"{opts.workers} worker thread(s); best / median of {opts.repeat} launches\n")
    print("| kernel | mode | path | build+load s | best ms | median ms | best CPU ms | matches numpy |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, label, path, build, best, med, cpu, ok in rows:
        print(f"| {label} | {mode} | {path} | {build:.2f} | {best * 1e3:.1f} | {med * 1e3:.1f} | "
              f"{cpu * 1e3:.1f} | {'yes' if ok else 'NO'} |")
    if not all(r[-1] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
