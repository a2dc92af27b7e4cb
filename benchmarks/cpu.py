"""tilepy's fast CPU mode against numpy and torch (CPU), in one run, on real sizes.

    python benchmarks/cpu.py [--repeat N] [--only NAME,...] [--small]

One row per kernel: every tutorial kernel that computes something worth timing (vector add,
axpy, GELU, softmax, layernorm, row logsumexp, checked sqrt, atomic total, matmul f32 and f16,
fused attention) and a tile transpose, at real sizes (GEMM 1024-2048, 4096-wide rows, attention
with d=64). Each tool runs the same computation on the same inputs; tilepy's result is checked
against numpy's. Throughput is GB/s (the bytes a single pass must move: inputs read once, outputs
written once) or GFLOP/s (2*M*N*K for a GEMM), from the best of N timed runs after an untimed
one, the tools taking turns in every round so that load from other work hits them alike.
Ratios are tilepy's throughput over the other tool's: above 1, tilepy is faster. Tile sizes are
the tutorials' own where they launch the kernel (256 for the 1-D and row kernels): a few KiB per
tile keeps a block's tiles in the L1 cache (each op of a block is a pass over its tiles).
`--clock cpu` runs every tool on one thread and times the process's CPU time instead: on a
machine shared with other work (which delays a process but does not add to its CPU time) it
gives the steadier comparison, per core.

tilepy runs with TILEPY_CPU_WORKERS (default: every core) worker threads, torch with
torch.set_num_threads(the same), numpy with its BLAS's own threads (for matmul). On a machine
running other work the absolute numbers move between runs: compare the ratios of one run.
OpenBLAS reads OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which some machines set for old OpenBLAS
builds and which slow a current numpy: unset them in the command that runs this benchmark.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tutorials"))
sys.path.insert(0, ROOT)

import tilepy as ct  # noqa: E402
from definitions import load  # noqa: E402
from tests.reference_kernels.transpose import transpose  # noqa: E402




@dataclass
class Row:
    name: str
    size: str
    unit: str                      # "GB/s" or "GFLOP/s"
    work: float                    # bytes or flops of one run
    make: Callable[[np.random.Generator], dict]
    tilepy: Callable[[dict], object]
    numpy: Callable[[dict], object]
    torch: Callable[[dict], object] | None
    out: str                       # the array tilepy writes, compared with numpy's result
    tol: float


def _cdiv(a, b):
    return -(-a // b)


def _t(d):
    import torch
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in d.items()}


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _np_layernorm(x, w, b, eps):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _np_gelu(t):
    return 0.5 * t * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (t + 0.044715 * t * t * t)))


def _np_attention(q, k, v, scale):
    s = np.matmul(q.astype(np.float32), np.swapaxes(k.astype(np.float32), 1, 2)) * scale
    return np.matmul(_np_softmax(s.reshape(-1, s.shape[-1])).reshape(s.shape),
                     v.astype(np.float32))


def _torch_attention(t):
    import torch
    q, k, v = (t[n].float() for n in "QKV")
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=t["scale"])


def _logsumexp(x):
    m = x.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]


def rows(small: bool) -> list[Row]:
    tut = {n: load(n) for n in ("01_vector_add", "02_softmax", "03_matmul", "04_layernorm",
                                "05_attention", "06_torch_interop", "07_inspect_code",
                                "08_debugging")}
    V = 1 << (20 if small else 24)                      # vector length
    R, C = (256, 4096) if small else (4096, 4096)       # row kernels: 4096-wide rows
    f4 = np.float32
    launch = ct.launch

    def vec(rng, *names):
        return {n: rng.standard_normal(V).astype(f4) for n in names}

    def mat(rng, m, n, dt=f4):
        return rng.standard_normal((m, n)).astype(dt)

    out = [
        Row("vector_add (tutorial 1)", f"f32 n=2^{V.bit_length() - 1}, tile 256", "GB/s", 12 * V,
            lambda r: {**vec(r, "a", "b"), "c": np.zeros(V, f4)},
            lambda d: launch(None, (_cdiv(V, 256),), tut["01_vector_add"].vector_add,
                             (d["a"], d["b"], d["c"], 256)),
            lambda d: np.add(d["a"], d["b"], out=d["c"]),
            lambda t: __import__("torch").add(t["a"], t["b"], out=t["c"]), "c", 0),
        Row("axpy (tutorial 7)", f"f32 n=2^{V.bit_length() - 1}, tile 256", "GB/s", 12 * V,
            lambda r: {**vec(r, "x", "y0"), "y": np.zeros(V, f4)},
            lambda d: (np.copyto(d["y"], d["y0"]),
                       launch(None, (_cdiv(V, 256),), tut["07_inspect_code"].axpy,
                              (np.float32(2.5), d["x"], d["y"], 256))),
            lambda d: np.float32(2.5) * d["x"] + d["y0"],
            lambda t: __import__("torch").add(t["y0"], t["x"], alpha=2.5), "y", 1e-6),
        Row("gelu (tutorial 6)", f"f32 {R}x{C}, tile 16x64", "GB/s", 8 * R * C,
            lambda r: {"x": mat(r, R, C), "y": np.zeros((R, C), f4)},
            lambda d: launch(None, (_cdiv(R, 16), _cdiv(C, 64)),
                             tut["06_torch_interop"].gelu_forward_kernel,
                             (d["x"], d["y"], ct.float32, 16, 64)),
            lambda d: _np_gelu(d["x"]),
            lambda t: __import__("torch").nn.functional.gelu(t["x"], approximate="tanh"), "y", 1e-5),
        Row("softmax (tutorial 2)", f"f32 {R}x{C}, a row per block", "GB/s", 8 * R * C,
            lambda r: {"x": mat(r, R, C) * 3, "y": np.zeros((R, C), f4)},
            lambda d: launch(None, (R,), tut["02_softmax"].softmax, (d["x"], d["y"], C)),
            lambda d: _np_softmax(d["x"]),
            lambda t: __import__("torch").softmax(t["x"], dim=1), "y", 1e-5),
        Row("layernorm (tutorial 4)", f"f32 {R}x{C}, tile 1x256", "GB/s", 8 * R * C,
            lambda r: {"X": mat(r, R, C) * 2 + 1, "W": r.standard_normal(C).astype(f4),
                       "B": r.standard_normal(C).astype(f4), "Y": np.zeros((R, C), f4),
                       "Mean": np.zeros(R, f4), "Rstd": np.zeros(R, f4)},
            lambda d: launch(None, (R,), tut["04_layernorm"].layernorm,
                             (d["X"], d["W"], d["B"], d["Y"], d["Mean"], d["Rstd"], 1e-5, 256)),
            lambda d: _np_layernorm(d["X"], d["W"], d["B"], 1e-5),
            lambda t: __import__("torch").nn.functional.layer_norm(t["X"], (C,), t["W"], t["B"], 1e-5),
            "Y", 1e-4),
        Row("row_logsumexp (tutorial 8)", f"f32 {R}x{C}, tile 1x256", "GB/s", 4 * R * C,
            lambda r: {"x": mat(r, R, C), "out": np.zeros(R, f4)},
            lambda d: launch(None, (R,), tut["08_debugging"].row_logsumexp, (d["x"], d["out"], 256)),
            lambda d: _logsumexp(d["x"]),
            lambda t: __import__("torch").logsumexp(t["x"], dim=1), "out", 1e-5),
        Row("checked_sqrt (tutorial 8)", f"f32 n=2^{V.bit_length() - 1}, tile 256", "GB/s", 8 * V,
            lambda r: {"x": np.abs(vec(r, "x")["x"]), "y": np.zeros(V, f4)},
            lambda d: launch(None, (_cdiv(V, 256),), tut["08_debugging"].checked_sqrt,
                             (d["x"], d["y"], 256)),
            lambda d: np.sqrt(d["x"]),
            lambda t: __import__("torch").sqrt(t["x"]), "y", 1e-6),
        Row("atomic_total (tutorial 8)", f"f32 n=2^{V.bit_length() - 1}, tile 4096", "GB/s", 4 * V,
            lambda r: {**vec(r, "x"), "out": np.zeros(1, f4)},
            lambda d: (d["out"].fill(0), launch(None, (_cdiv(V, 4096),), tut["08_debugging"].atomic_total,
                                                (d["x"], d["out"], 4096))),
            lambda d: np.sum(d["x"], keepdims=True),
            lambda t: t["x"].sum(), "out", 1e-3),
        Row("transpose", f"f32 {R}x{C}, tile 64x64", "GB/s", 8 * R * C,
            lambda r: {"x": mat(r, R, C), "y": np.zeros((C, R), f4)},
            lambda d: launch(None, (_cdiv(R, 64), _cdiv(C, 64)), transpose, (d["x"], d["y"], 64)),
            lambda d: np.ascontiguousarray(d["x"].T),
            lambda t: t["x"].t().contiguous(), "y", 0),
    ]
    for n in ((256, 512) if small else (1024, 2048)):
        for dt, label in ((f4, "f32"), (np.float16, "f16->f32")):
            out.append(_matmul_row(tut["03_matmul"].matmul, n, dt, label))
    out.append(_attention_row(tut["05_attention"].attention, small))
    return out


def _matmul_row(kernel, n, dt, label) -> Row:
    def tp(d):
        ct.launch(None, (_cdiv(n, 64), _cdiv(n, 64)), kernel, (d["A"], d["B"], d["C"], 64, 64, 32))

    def npy(d):         # numpy has no f16 GEMM: widen, then f32 BLAS
        return d["A"].astype(np.float32) @ d["B"].astype(np.float32)

    def tor(t):
        return t["A"].float() @ t["B"].float()

    def make(r):
        return {"A": r.standard_normal((n, n)).astype(dt), "B": r.standard_normal((n, n)).astype(dt),
                "C": np.zeros((n, n), np.float32)}
    return Row(f"matmul (tutorial 3) {label}", f"{n}x{n}x{n}, 64x64x32 tiles", "GFLOP/s",
               2.0 * n ** 3, make, tp, npy, tor, "C", 1e-3)


def _attention_row(kernel, small) -> Row:
    BH, S, D = (4, 256, 64) if small else (16, 1024, 64)
    scale = 1 / math.sqrt(D)

    def make(r):
        return {**{k: r.standard_normal((BH, S, D)).astype(np.float16) for k in "QKV"},
                "Out": np.zeros((BH, S, D), np.float32), "scale": scale}

    def tp(d):
        ct.launch(None, (_cdiv(S, 64), BH), kernel,
                  (d["Q"], d["K"], d["V"], d["Out"], scale, 64, 64, D))
    return Row("attention (tutorial 5)", f"f16->f32 {BH} heads, seq {S}, d={D}", "GFLOP/s",
               4.0 * BH * S * S * D, make, tp, lambda d: _np_attention(d["Q"], d["K"], d["V"], scale),
               _torch_attention, "Out", 2e-3)


def _check(row: Row, d: dict, ref):
    got = d[row.out].astype(np.float64)
    ref = np.asarray(ref, np.float64).reshape(got.shape)
    err = np.max(np.abs(got - ref) / (1 + np.abs(ref)))
    if not err <= row.tol:
        raise AssertionError(f"{row.name}: tilepy differs from numpy by {err:.3g} (tolerance {row.tol})")


def measure(row: Row, repeat: int, clock) -> dict:
    """Best time of each tool; the tools take turns in each round."""
    d = row.make(np.random.default_rng(0))
    t = _t(d)
    tools = {"tilepy": lambda: row.tilepy(d), "numpy": lambda: row.numpy(d)}
    if row.torch is not None:
        tools["torch"] = lambda: row.torch(t)
    row.tilepy(d)                                       # compile, warm up
    _check(row, d, row.numpy(d))
    best = {k: math.inf for k in tools}
    for _ in range(repeat + 1):
        for name, fn in tools.items():
            t0 = clock()
            fn()
            best[name] = min(best[name], clock() - t0)
    return best


def _fmt(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def _ratio(a, b):
    return f"{a / b:.2f}" if b else "-"


def table(results: list[tuple[Row, dict]]) -> str:
    lines = ["| kernel | size | unit | tilepy fast | numpy | torch | tilepy/numpy | tilepy/torch |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    scale = {"GB/s": 1e9, "GFLOP/s": 1e9}
    for row, best in results:
        rate = {k: row.work / v / scale[row.unit] for k, v in best.items()}
        tr = rate.get("torch")
        lines.append(f"| {row.name} | {row.size} | {row.unit} | {_fmt(rate['tilepy'])} | "
                     f"{_fmt(rate['numpy'])} | {_fmt(tr) if tr else '-'} | "
                     f"{rate['tilepy'] / rate['numpy']:.2f} | "
                     f"{_ratio(rate['tilepy'], tr)} |")
    return "\n".join(lines)


def environment(workers: int) -> str:
    import platform

    from tilepy.launch import cpu
    blas = "?"
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        pass
    try:
        import torch
        torch.set_num_threads(workers)
        tv = f"torch {torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:
        tv = "no torch"
    env = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ]
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; tilepy fast mode, "
            f"{workers} workers, host ISA flags {' '.join(getattr(cpu, 'isa_flags', lambda: ['?'])()) or '(none)'}; numpy "
            f"{np.__version__} ({blas}); {tv}" + (f"; set: {' '.join(env)}" if env else ""))


@ct.kernel
def bump(a):
    """a[bid] += 1: a block that does (almost) nothing, to time a launch itself."""
    i = ct.bid(0)
    ct.store(a, (i,), ct.load(a, (i,), (1,)) + 1.0)


def launch_overhead(repeat: int) -> str:
    """Microseconds per tilepy.launch of near-empty blocks: 1 block runs on the calling thread,
    more start the other workers and hand the blocks out in chunks."""
    a = np.zeros(1 << 16, np.float32)
    lines = ["| grid (near-empty blocks) | us per launch (best of batches) | us per block |",
             "|---|---:|---:|"]
    for g in (1, 2, 64, 4096, 65536):
        ct.launch(None, (g,), bump, (a,))
        n = max(10, 20000 // g)
        best = math.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(n):
                ct.launch(None, (g,), bump, (a,))
            best = min(best, (time.perf_counter() - t0) / n)
        lines.append(f"| {g} | {best * 1e6:.1f} | {best * 1e6 / g:.3f} |")
    return "\n".join(lines)


# --clock cpu: every tool on one thread, timed by the process's CPU time (robust to other work
# on the machine, which only delays a process); these variables must be set before numpy loads.
ONE_THREAD = {"TILEPY_CPU_WORKERS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="timed runs per tool (best is kept)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall: wall time, every core; cpu: one thread per tool, CPU time")
    p.add_argument("--only", default="", help="comma-separated substrings of kernel names")
    p.add_argument("--small", action="store_true", help="small sizes (a quick check)")
    a = p.parse_args(argv)
    if a.clock == "cpu" and any(os.environ.get(k) != v for k, v in ONE_THREAD.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **ONE_THREAD})
    clock = time.perf_counter if a.clock == "wall" else time.process_time
    from tilepy.settings import settings
    workers = settings().cpu_workers
    with ct.cpu_mode("fast"):
        results = []
        for row in rows(a.small):
            if a.only and not any(s in row.name for s in a.only.split(",")):
                continue
            results.append((row, measure(row, a.repeat, clock)))
            print(f"  {row.name}: done", file=sys.stderr, flush=True)
    print(environment(workers))
    print(f"best of {a.repeat} runs per tool, tools interleaved, "
          f"{'wall time' if a.clock == 'wall' else 'CPU time of one thread per tool'}\n")
    print(table(results))
    with ct.cpu_mode("fast"):
        print("\nPer-launch overhead (tilepy fast mode):\n")
        print(launch_overhead(a.repeat))


if __name__ == "__main__":
    main()
