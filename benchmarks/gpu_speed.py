"""The speed table of `doctor --gpu`: the tutorial kernels launched by tilepy (C++ through NVRTC,
and tilepy's Tile IR through tileiras when it is usable), the same tutorial source through
NVIDIA's cuTile (`cuda.tile`, when installed), the Triton versions with the same tiles
(benchmarks/triton_kernels.py, when Triton is installed) and torch, on one GPU.

Every output is checked against a float64 reference before it is timed (a wrong one is said,
not timed). Times: triton.testing.do_bench (CUDA events, L2 flushed, median) when Triton is
present, else CUDA events around each call after writing a 256 MiB buffer (the L2 flushed),
median; on CPU tensors (the tests, on the fake driver) the wall clock. Attention's torch
reference gets (B, H, S, D) tensors, so torch takes its flash kernel.

The problems and tiles are those of ../shared/gpu/side_by_side.py (BASELINE.md's table)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import tilepy as ct

TOOLS = ("tilepy", "tilepy tileiras", "cuTile", "Triton", "torch")
MATMUL_TILES = ((128, 128, 32), (128, 256, 64), (128, 128, 64))    # f16, f16, bf16 (4096^3)
ATTENTION_TILES = {64: (128, 64), 128: (64, 64)}                   # d -> (BM, BN)
L2_FLUSH_BYTES = 256 << 20


@dataclass
class Setup:
    """One problem's tensors: a thunk per tool, what each wrote, the reference."""
    tools: dict
    outputs: dict                   # tool -> () -> the tensor it wrote
    ref: object                     # float64
    scale: object = 1.0             # errors are |out - ref| / scale
    reset: object = None


@dataclass
class Problem:
    name: str
    unit: str                       # "TFLOP/s" | "GB/s"
    work: float                     # FLOPs or bytes
    tol: float                      # largest error an output may have
    setup: object = field(repr=False)   # (env) -> Setup


class Env:
    """What the problems launch with: torch, its device, the tools present."""

    def __init__(self, torch, dev: str, compilers=("nvrtc",), cutile=None, triton_kernels=None):
        self.torch, self.dev, self.compilers = torch, dev, compilers
        self.cutile, self.tk = cutile, triton_kernels
        self._kernels: dict = {}

    def stream(self):
        return self.torch.cuda.current_stream() if self.dev == "cuda" else None

    def kernel(self, tutorial: str, name: str, compiler: str):
        key = (tutorial, name, compiler)
        if key not in self._kernels:
            from definitions import load
            module = load(tutorial, self.cutile) if compiler == "cutile" else load(tutorial)
            k = getattr(module, name)
            self._kernels[key] = k.replace_hints(compiler=compiler) if compiler == "tileiras" else k
        return self._kernels[key]

    def tile_tools(self, tutorial: str, name: str, grid, args) -> dict:
        """tool -> thunk launching the tutorial's tile kernel `name`."""
        out = {}
        for comp in self.compilers:
            tool = "tilepy" if comp == "nvrtc" else f"tilepy {comp}"
            out[tool] = (lambda comp=comp: ct.launch(self.stream(), grid,
                                                      self.kernel(tutorial, name, comp), args))
        if self.cutile is not None:
            out["cuTile"] = lambda: self.cutile.launch(self.stream(), grid,
                                                       self.kernel(tutorial, name, "cutile"), args)
        return out

    def triton(self, name: str):
        return getattr(self.tk, name, None) if self.tk is not None else None


def cdiv(a, b):
    return -(-a // b)


# ----------------------------------------------------------------------------- problems
def matmul(dt, m, n, k, tiles):
    def setup(env):
        torch, dev = env.torch, env.dev
        tm, tn, tk_ = tiles
        tdt = getattr(torch, dt)
        a, b = torch.randn(m, k, device=dev).to(tdt), torch.randn(k, n, device=dev).to(tdt)
        c, c2 = torch.zeros(m, n, device=dev), torch.empty(m, n, device=dev, dtype=tdt)
        grid = (cdiv(m, tm), cdiv(n, tn))
        tools = env.tile_tools("03_matmul", "matmul", grid, (a, b, c, tm, tn, tk_))
        if env.triton("matmul"):
            tools["Triton"] = lambda: env.tk.matmul[grid](a, b, c, m, n, k, k, n, n, BM=tm, BN=tn,
                                                          BK=tk_)
        tools["torch"] = lambda: torch.matmul(a, b, out=c2)
        outs = {t: (lambda: c) for t in tools}
        outs["torch"] = lambda: c2
        return Setup(tools, outs, a.double() @ b.double(), a.double().abs() @ b.double().abs(),
                     c.zero_)
    return setup


def _rows(kind):
    """softmax and layernorm: one program per row, reference from torch in float64."""
    def make(rows, w, tile=None):
        def setup(env):
            torch, dev = env.torch, env.dev
            F = torch.nn.functional
            x = torch.randn(rows, w, device=dev) * 2 + 1
            y = torch.zeros_like(x)
            held = [None]
            if kind == "softmax":
                blk = 1 << (w - 1).bit_length()
                tools = env.tile_tools("02_softmax", "softmax", (rows,), (x, y, blk))
                if env.triton("softmax"):
                    tools["Triton"] = lambda: env.tk.softmax[(rows,)](x, y, w, w, w, BLOCK=blk)
                tools["torch"] = lambda: held.__setitem__(0, torch.softmax(x, dim=1))
                ref = torch.softmax(x.double(), dim=1)
            else:
                wt, b = torch.rand(w, device=dev) + 0.5, torch.rand(w, device=dev) - 0.5
                mean, rstd = torch.zeros(rows, device=dev), torch.zeros(rows, device=dev)
                args = (x, wt, b, y, mean, rstd, 1e-5, tile)
                tools = env.tile_tools("04_layernorm", "layernorm", (rows,), args)
                if env.triton("layernorm"):
                    tools["Triton"] = lambda: env.tk.layernorm[(rows,)](x, wt, b, y, mean, rstd, w,
                                                                        w, 1e-5, BLOCK=tile)
                tools["torch"] = lambda: held.__setitem__(0, F.layer_norm(x, (w,), wt, b, 1e-5))
                ref = F.layer_norm(x.double(), (w,), wt.double(), b.double(), 1e-5)
            outs = {t: (lambda: y) for t in tools}
            outs["torch"] = lambda: held[0]
            return Setup(tools, outs, ref, 1.0, y.zero_)
        return setup
    return make


softmax, layernorm = _rows("softmax"), _rows("layernorm")


def attention(bh, s, d, bm, bn):
    def setup(env):
        torch, dev = env.torch, env.dev
        F = torch.nn.functional
        q, k, v = (torch.randn(bh, s, d, device=dev).half() for _ in range(3))
        o = torch.zeros_like(q)
        scale = 1 / math.sqrt(d)
        grid = (cdiv(s, bm), bh)
        tools = env.tile_tools("05_attention", "attention", grid, (q, k, v, o, scale, bm, bn, d))
        if env.triton("attention"):
            tools["Triton"] = lambda: env.tk.attention[grid](q, k, v, o, s, scale, s * d, d, BM=bm,
                                                             BN=bn, D=d)
        q4, k4, v4 = (t.view(1, bh, s, d) for t in (q, k, v))     # (B, H, S, D): flash
        held = [None]
        tools["torch"] = lambda: held.__setitem__(0, F.scaled_dot_product_attention(q4, k4, v4))
        outs = {t: (lambda: o) for t in tools}
        outs["torch"] = lambda: held[0].view(bh, s, d)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float()).double()
        return Setup(tools, outs, ref, 1.0, o.zero_)
    return setup


def vector_add(n, tile=1024):
    def setup(env):
        torch, dev = env.torch, env.dev
        a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        c, c2 = torch.zeros_like(a), torch.empty_like(a)
        grid = (cdiv(n, tile),)
        tools = env.tile_tools("01_vector_add", "vector_add", grid, (a, b, c, tile))
        if env.triton("vector_add"):
            tools["Triton"] = lambda: env.tk.vector_add[grid](a, b, c, n, BLOCK=tile)
        tools["torch"] = lambda: torch.add(a, b, out=c2)
        outs = {t: (lambda: c) for t in tools}
        outs["torch"] = lambda: c2
        return Setup(tools, outs, a.double() + b.double(), 1.0, c.zero_)
    return setup


def problems(scale: int = 1) -> list[Problem]:
    """side_by_side.py's problems and tiles; `scale` divides the sizes (tests)."""
    S = scale
    m4 = 4096 // S
    out = [Problem(f"matmul {dt} {m4}^3 t{'x'.join(map(str, t))}", "TFLOP/s", 2.0 * m4 ** 3,
                   1e-2, matmul(dt, m4, m4, m4, t))
           for dt, t in zip(("float16", "float16", "bfloat16"), MATMUL_TILES)]
    m, n, k = 4000 // S, 3000 // S, 5000 // S
    out.append(Problem(f"matmul float16 {m}x{n}x{k} t128x128x32", "TFLOP/s", 2.0 * m * n * k,
                       1e-2, matmul("float16", m, n, k, (128, 128, 32))))
    out.append(Problem(f"softmax f32 {m4}x{m4}", "GB/s", 2.0 * m4 * m4 * 4, 1e-5,
                       softmax(m4, m4)))
    out.append(Problem(f"layernorm f32 {m4}x{m4}", "GB/s", 2.0 * m4 * m4 * 4, 1e-4,
                       layernorm(m4, m4, 1024)))
    bh, s = max(32 // S, 1), 4096 // S
    for d, (bm, bn) in ATTENTION_TILES.items():
        out.append(Problem(f"attention f16 bh={bh} s={s} d={d} t{bm}x{bn}", "TFLOP/s",
                           4.0 * bh * s * s * d, 2e-2, attention(bh, s, d, bm, bn)))
    n = (1 << 26) // S
    out.append(Problem(f"vector add f32 n={n}", "GB/s", 3.0 * n * 4, 1e-5, vector_add(n)))
    return out


# ----------------------------------------------------------------------------- timing
def bench(env, fn) -> float:
    """Milliseconds of one call of `fn` (see the module docstring)."""
    try:
        import triton.testing
    except ImportError:
        triton = None
    if triton is not None:
        return float(triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median"))
    if env.dev == "cuda":
        return events(env.torch, fn)
    return wall_clock(fn)


def events(torch, fn, reps: int = 20) -> float:
    """Median of CUDA-event times of `fn`, each after the L2 was flushed."""
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    fn()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def wall_clock(fn, reps: int = 3) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def measure(env, problem: Problem, setup: Setup, tool: str) -> dict:
    """One cell: the tool's first call (compiling included), its output checked, then timed."""
    fn = setup.tools[tool]
    sync = env.torch.cuda.synchronize if env.dev == "cuda" else (lambda: None)
    if setup.reset is not None:
        setup.reset()
    t0 = time.perf_counter()
    fn()
    sync()
    first = time.perf_counter() - t0
    got = setup.outputs[tool]().double()
    err = float(((got - setup.ref).abs() / setup.scale).max())
    cell = {"tool": tool, "err": err, "first_s": first, "unit": problem.unit}
    if not err <= problem.tol:
        return {**cell, "status": "WRONG", "detail": f"error {err:.3g} > {problem.tol:g}: not timed"}
    ms = bench(env, fn)
    rate = problem.work / (ms * 1e-3) / (1e12 if problem.unit == "TFLOP/s" else 1e9)
    return {**cell, "status": "ok", "ms": ms, "rate": rate,
            "detail": f"{ms:.4f} ms, {rate:.1f} {problem.unit}, error {err:.1e}"}


def speed_item(item: str, started, row, env=None, scale: int | None = None,
               alive=lambda: True):
    """`speed:I[/SCALE]`: the cells of problem I, one row per tool as each is measured. A tool
    that fails (a kernel one compiler refuses, cuTile's or Triton's own error) is said and the
    next one runs -- unless the CUDA context died (`alive()`): then the item ends there."""
    spec = item.partition(":")[2].split("/")
    index, scale = int(spec[0]), scale or (int(spec[1]) if len(spec) > 1 else 1)
    env = env or default_env()
    problem = problems(scale)[index]
    started(problem.name)
    setup = problem.setup(env)
    for tool in [t for t in TOOLS if t in setup.tools]:
        try:
            cell = measure(env, problem, setup, tool)
        except Exception as e:
            if not isinstance(e, ct.TileError) and not alive():
                raise
            cell = {"tool": tool, "status": "FAILED",
                    "detail": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"}
        yield row(item, cell.pop("status"), cell.pop("detail"), problem=problem.name,
                  device=env.dev, **cell)


def table_compilers(drv) -> list[str]:
    """The GPU compilers the table compares: those usable whose cubins the driver loads."""
    from tilepy.doctor.backends import _tileiras_skip, gpu_compilers
    return [c for c in gpu_compilers() if c == "nvrtc" or _tileiras_skip(drv) is None]


def default_env() -> Env:
    """torch on CUDA, the GPU compilers usable, cuTile and Triton when installed."""
    import torch

    from tilepy.host import driver as gpu_driver
    compilers = table_compilers(gpu_driver.current())
    try:
        import cuda.tile as cutile
    except Exception:                  # not installed, or no driver it accepts
        cutile = None
    try:
        import triton_kernels
    except Exception:
        triton_kernels = None
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    return Env(torch, dev, compilers, cutile if dev == "cuda" else None,
               triton_kernels if dev == "cuda" else None)
