"""The first session on a GPU, in one command (`python -m tilepy doctor --gpu`, or this file):

1. validation: every tutorial kernel (tests/tutorial_cases.py) and every kernel of the
   cuTile-style suite (tests/test_cutile_suite.py) runs on the GPU and, from the same inputs, on
   the CPU backend; the GPU's results must pass the case's numpy check, and the table shows how
   far they are from the CPU's. Then a
   fuzz batch (tests/fuzz) runs on the GPU as one more execution compared with the interpreter.
2. speed: one table of tilepy against torch on the same GPU -- f16 and bf16 matmul 4096^3 and a
   ragged size (torch.matmul, i.e. cuBLAS), softmax and layernorm over 4096-wide rows, attention
   forward d=64 and d=128 (torch's scaled_dot_product_attention), vector add 2^26 -- with time,
   TFLOP/s or GB/s, % of the device's peak and the ratio to torch, written as Markdown and JSON.
   tilepy's matmul writes an f32 C (it accumulates in C's dtype), torch's a C of the inputs'
   dtype (accumulated in f32 by cuBLAS). One row per problem and GPU compiler present: NVRTC
   C++, and tilepy's Tile IR through NVIDIA's tileiras when it is installed and the driver is
   r580+ (the same kernels with `compiler="tileiras"`).

The GPU is reached through tilepy's driver seam (tilepy.launch.gpu_driver), with arrays of its
own (device memory from the driver, `__cuda_array_interface__`), so neither torch nor cupy is
needed for part 1; part 2 needs torch with CUDA. Without a GPU it says so and stops; the tests
run it on the fake driver (tests/fake_driver.py) at small sizes.

Times: the median of `repeat` runs of `iters` launches each, synchronized, by the wall clock.
Peaks: DRAM bandwidth = 2 x memory clock x bus width; dense f16/bf16 tensor-core FLOP/s = SMs x
clock x the per-SM rate of the arch (PEAK_TC_FLOP_PER_CLK_SM; approximate, boost clocks vary).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _d in (ROOT, os.path.join(ROOT, "tutorials"), os.path.join(ROOT, "tests")):
    if _d in sys.path:
        sys.path.remove(_d)
    sys.path.insert(0, _d)       # tests/ first: its `fuzz` package, not benchmarks/fuzz.py

import tilepy as ct  # noqa: E402
from tilepy.doctor.backends import DeviceArray, on_device  # noqa: E402
from tilepy.host import driver as gpu_driver  # noqa: E402

# Tile sizes of the table's kernels (tests/test_gpu_abi.py checks them against the cubins);
MATMUL_TILES = (128, 128, 32)
ATTENTION_TILES = {64: (64, 64), 128: (64, 64)}
PEAK_TC_FLOP_PER_CLK_SM = {70: 1024, 75: 1024, 80: 2048, 86: 1024, 87: 1024, 89: 1024,
                           90: 4096, 100: 8192, 103: 8192, 120: 1024, 121: 1024}


# ----------------------------------------------------------------------------- device arrays
# ----------------------------------------------------------------------------- validation
@dataclass
class Row:
    suite: str
    name: str
    status: str          # ok | FAILED
    detail: str = ""


def run_case(make):
    """A case (make() -> kernel, grid, args, check) on device 0, its arrays copied there and
    back, and on the CPU backend from copies of the same inputs: (GPU arrays, CPU arrays)
    after the launches; raises if the GPU's results fail the case's numpy check."""
    kernel, grid, args, check = make()
    cpu_args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    dev_args = on_device(lambda drv: [DeviceArray(drv, a) if isinstance(a, np.ndarray) else a
                                      for a in args])
    ct.launch(None, grid, kernel, tuple(dev_args))
    on_device(lambda drv: [d.back() for d in dev_args if isinstance(d, DeviceArray)])
    check()
    ct.launch(None, grid, kernel, cpu_args)
    return ([a for a in args if isinstance(a, np.ndarray)],
            [a for a in cpu_args if isinstance(a, np.ndarray)])


def _difference(gpu_out, cpu_out) -> float:
    worst = 0.0
    for g, c in zip(gpu_out, cpu_out):
        g64, c64 = g.astype(np.float64), c.astype(np.float64)
        both = np.isfinite(g64) & np.isfinite(c64)
        if both.any():
            worst = max(worst, float(np.max(np.abs(g64[both] - c64[both]) / (1 + np.abs(c64[both])))))
    return worst


def validate(cases: dict, suite: str, names=None) -> list[Row]:
    rows = []
    for name in names or sorted(cases):
        try:
            g, c = run_case(cases[name])
            rows.append(Row(suite, name, "ok", f"max relative difference GPU vs CPU "
                                              f"{_difference(g, c):.2g}"))
        except Exception as e:
            rows.append(Row(suite, name, "FAILED", f"{type(e).__name__}: {str(e)[:300]}"))
    return rows


def fuzz_rows(batches: int = 4, per_batch: int = 8, seed: int = 15) -> list[Row]:
    """`batches` batches of random kernels on the GPU, compared with the interpreter."""
    from hypothesis import HealthCheck, Phase, given, settings

    from fuzz import batches as draw_batches
    from fuzz.gpu_execution import GpuExecution
    from fuzz.runner import run_batch
    rows: list[Row] = []

    @settings(max_examples=batches, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(draw_batches(per_batch))
    def one(batch):
        cases, s = batch
        for k, o in enumerate(run_batch(cases, [s + seed], {"gpu": GpuExecution()})):
            status = "ok" if o.status in ("agree", "interpreter-only") else "FAILED"
            rows.append(Row("fuzz", f"batch {len(rows) // per_batch} case {k}", status,
                            f"{o.status} {o.detail[:300]}".strip()))
    one()
    return rows


# ----------------------------------------------------------------------------- speed
@dataclass
class Speed:
    problem: str
    compiler: str
    tilepy_ms: float
    torch_ms: float | None
    rate: float            # TFLOP/s or GB/s of tilepy
    unit: str
    peak_pct: float | None
    vs_torch: float | None  # tilepy time / torch time (below 1: tilepy is faster)


def peaks(info: dict) -> dict:
    """{"TFLOP/s": dense f16 tensor-core peak, "GB/s": DRAM bandwidth} of a device."""
    cc = info["cc"][0] * 10 + info["cc"][1]
    tc = info["sms"] * info["clock_mhz"] * 1e6 * PEAK_TC_FLOP_PER_CLK_SM.get(cc, 1024) / 1e12
    bw = 2 * info["memory_clock_mhz"] * 1e6 * info["bus_width"] / 8 / 1e9
    return {"TFLOP/s": tc, "GB/s": bw}


def timed(fn, sync, iters: int, repeat: int) -> float:
    """Median milliseconds of one call of `fn`, over `repeat` runs of `iters` calls."""
    fn()
    sync()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / iters * 1e3)
    return float(np.median(runs))


COMPILER_NAMES = {"nvrtc": "NVRTC C++", "tileiras": "tileiras (Tile IR)"}


def table_compilers(drv) -> list[str]:
    """The GPU compilers the table compares: those present whose cubins the driver loads."""
    from tilepy.doctor.backends import _tileiras_skip, gpu_compilers
    return [c for c in gpu_compilers() if c == "nvrtc" or _tileiras_skip(drv) is None]


def problems(scale: int = 1, compiler: str = "nvrtc"):
    """(name, unit, work, make) per table row: `work` in FLOPs or bytes; make(torch, dev) ->
    (tilepy launch thunk, torch thunk). `scale` divides the sizes (tests); `compiler`: the GPU
    compiler of tilepy's kernels."""
    from definitions import load

    def kernels(name):
        module = load(name)
        return type("Kernels", (), {k: v.replace_hints(compiler=compiler)
                                    for k, v in vars(module).items() if isinstance(v, ct.Kernel)})
    t2, t3, t4, t5 = (kernels(n) for n in ("02_softmax", "03_matmul", "04_layernorm", "05_attention"))
    out = []
    for dt in ("float16", "bfloat16"):
        for m, n, k in ((4096, 4096, 4096), (4000, 3000, 5000)):
            m, n, k = m // scale, n // scale, k // scale
            out.append((f"matmul {dt} {m}x{n}x{k}", "TFLOP/s", 2 * m * n * k,
                        _matmul(t3.matmul, dt, m, n, k)))
    rows, w = 4096 // scale, 4096 // scale
    out.append((f"softmax f32 {rows}x{w}", "GB/s", 2 * rows * w * 4, _softmax(t2.softmax, rows, w)))
    out.append((f"layernorm f32 {rows}x{w}", "GB/s", 2 * rows * w * 4, _layernorm(t4.layernorm, rows, w)))
    for d in (64, 128):
        bh, s = 32 // min(scale, 32) or 1, 4096 // scale
        out.append((f"attention f16 bh={bh} s={s} d={d}", "TFLOP/s", 4 * bh * s * s * d,
                    _attention(t5.attention, bh, s, d)))
    n = (1 << 26) // scale
    out.append((f"vector add f32 n={n}", "GB/s", 3 * n * 4, _vadd(kernels("01_vector_add").vector_add, n)))
    return out


def _matmul(kernel, dt, m, n, k):
    def make(torch, dev):
        tdt = getattr(torch, dt)
        a, b = torch.randn(m, k, device=dev).to(tdt), torch.randn(k, n, device=dev).to(tdt)
        c = torch.empty(m, n, device=dev)     # f32: the kernel accumulates in C's dtype
        grid = (ct.cdiv(m, MATMUL_TILES[0]), ct.cdiv(n, MATMUL_TILES[1]))
        return (lambda: ct.launch(None, grid, kernel, (a, b, c, *MATMUL_TILES)),
                lambda: torch.matmul(a, b))
    return make


def _softmax(kernel, rows, w):
    def make(torch, dev):
        x = torch.randn(rows, w, device=dev)
        y = torch.empty_like(x)
        return (lambda: ct.launch(None, (rows,), kernel, (x, y, 1 << (w - 1).bit_length())),
                lambda: torch.softmax(x, dim=1))
    return make


def _layernorm(kernel, rows, w):
    def make(torch, dev):
        x, wt, b = torch.randn(rows, w, device=dev), torch.randn(w, device=dev), torch.randn(w, device=dev)
        y, mean, rstd = torch.empty_like(x), torch.empty(rows, device=dev), torch.empty(rows, device=dev)
        F = torch.nn.functional
        return (lambda: ct.launch(None, (rows,), kernel, (x, wt, b, y, mean, rstd, 1e-5, 1024)),
                lambda: F.layer_norm(x, (w,), wt, b, 1e-5))
    return make


def _attention(kernel, bh, s, d):
    def make(torch, dev):
        q, k, v = (torch.randn(bh, s, d, device=dev).half() for _ in range(3))
        o = torch.empty_like(q)
        F = torch.nn.functional
        scale = 1 / math.sqrt(d)
        bm, bn = ATTENTION_TILES[d]
        return (lambda: ct.launch(None, (ct.cdiv(s, bm), bh), kernel, (q, k, v, o, scale, bm, bn, d)),
                lambda: F.scaled_dot_product_attention(q, k, v))
    return make


def _vadd(kernel, n):
    def make(torch, dev):
        a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        c = torch.empty_like(a)
        return (lambda: ct.launch(None, (ct.cdiv(n, 1024),), kernel, (a, b, c, 1024)),
                lambda: torch.add(a, b))
    return make


def speed_table(torch, dev: str, info: dict, scale: int = 1, iters: int = 10,
                repeat: int = 5, compilers=("nvrtc",)) -> list[Speed]:
    """The table, per GPU compiler in `compilers`; `dev` is torch's device of the tensors
    ("cuda", or "cpu" on the fake driver)."""
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    peak = peaks(info)
    rows = []
    for compiler in compilers:
        for name, unit, work, make in problems(scale, compiler):
            ours, theirs = make(torch, dev)
            try:
                t_ours = timed(ours, sync, iters, repeat)
            except ct.TileError as e:        # a kernel one compiler refuses: said, not fatal
                print(f"  {name} ({COMPILER_NAMES[compiler]}): {type(e).__name__}: "
                      f"{str(e).splitlines()[0][:200]}", file=sys.stderr)
                continue
            t_torch = timed(theirs, sync, iters, repeat)
            rate = work / (t_ours * 1e-3) / (1e12 if unit == "TFLOP/s" else 1e9)
            rows.append(Speed(name, COMPILER_NAMES[compiler], t_ours, t_torch, rate, unit,
                              100 * rate / peak[unit] if peak[unit] else None, t_ours / t_torch))
    return rows


def markdown(rows: list[Speed], info: dict) -> str:
    lines = [f"tilepy vs torch on {info['name']} (sm_{info['cc'][0]}{info['cc'][1]}, "
             f"{info['sms']} SMs); peaks: {peaks(info)['TFLOP/s']:.0f} TFLOP/s f16 tensor cores, "
             f"{peaks(info)['GB/s']:.0f} GB/s", "",
             "| problem | compiler | tilepy ms | torch ms | tilepy rate | % of peak | tilepy/torch time |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.problem} | {r.compiler} | {r.tilepy_ms:.3f} | {r.torch_ms:.3f} | "
                     f"{r.rate:.1f} {r.unit} | {r.peak_pct:.0f}% | {r.vs_torch:.2f} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main
def main(out=sys.stdout, json_path: str | None = "gpu-report.json",
         markdown_path: str | None = "gpu-report.md", scale: int = 1, fuzz_batches: int = 4,
         torch_device: str = "cuda", speed: bool = True) -> int:
    drv = gpu_driver.current()
    if not drv.available():
        print("no GPU: no NVIDIA driver/GPU found, nothing to run on a GPU", file=out)
        return 1
    from test_cutile_suite import CASES as CUTILE
    from tutorial_cases import CASES as TUTORIAL
    info = drv.device_info(drv.core.Device(0))
    rows = validate(TUTORIAL, "tutorial") + validate(CUTILE, "cutile") + fuzz_rows(fuzz_batches)
    for r in rows:
        if r.status != "ok" or r.suite != "fuzz":
            print(f"  {r.suite:<9} {r.name:<36} {r.status:<7} {r.detail}", file=out)
    fuzz_ok = sum(r.status == "ok" for r in rows if r.suite == "fuzz")
    print(f"  fuzz: {fuzz_ok} of {sum(r.suite == 'fuzz' for r in rows)} random kernels agree "
          f"with the interpreter", file=out)
    failed = [r for r in rows if r.status != "ok"]
    table = []
    if speed:
        try:
            import torch
        except ImportError:
            torch = None
        if torch is None or (torch_device == "cuda" and not torch.cuda.is_available()):
            print("speed table: needs torch with CUDA (pip install torch)", file=out)
        else:
            table = speed_table(torch, torch_device, info, scale, compilers=table_compilers(drv))
            text = markdown(table, info)
            print("\n" + text, file=out)
            if markdown_path:
                with open(markdown_path, "w") as f:
                    f.write(text)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": {**info, "cc": list(info["cc"])}, "peaks": peaks(info),
                       "validation": [asdict(r) for r in rows],
                       "speed": [asdict(s) for s in table]}, f, indent=1)
    print(f"validation: {len(rows) - len(failed)} of {len(rows)} ok", file=out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
