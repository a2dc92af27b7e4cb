"""tilepy against cuTile, Triton and Numba on the tutorial kernels: one command, one table.

    python benchmarks/compare.py [--repeat N] [--budget S] [--kernels a,b] [--json FILE]

Everything is measured in this run, on this machine:

- **compile**: each tutorial kernel (vector add, softmax, matmul f16->f32, layernorm, fused
  attention) compiled to an sm_90 cubin in a new process, first with an empty cache ("cold"),
  then in another new process with the cache the first one filled ("warm"). tilepy:
  `kernel.compile(..., arch="sm_90")` (trace, Tile IR, CUDA C++, NVRTC); cuTile:
  `cuda.tile.compilation.export_kernel(..., gpu_code="sm_90", output_format="cubin")` of the
  *same* tutorial source (bytecode, then tileiras); Triton: `triton.compile(ASTSource(...),
  target=GPUTarget("cuda", 90, 32))` of benchmarks/triton_kernels.py. The time is the compile
  call alone, after the imports (import times are listed below the table). No GPU is needed.
- **CPU run**: the same kernels on the same inputs (benchmarks/problems.py, sized so that Numba's
  simulator finishes) on tilepy's CPU backend in its fast and faithful modes, Triton's
  interpreter (TRITON_INTERPRET=1) and Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1,
  benchmarks/numba_kernels.py); every result is checked against numpy. Best of up to 5 launches
  after a first one (a launch slower than the budget is timed once).

Ratios are the other tool's time divided by tilepy's: above 1, tilepy is faster. A tool that is
missing or cannot do something here gets a note in its cell, never a number.
Needs the `bench` extra (cuda-tile[tileiras], triton, numba-cuda) and torch (the `test` extra) for
Triton's interpreter: pip install -e ".[test,bench]".
"""
from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from launch import child_env  # noqa: E402  (bytecode caching on in the children)
from problems import PROBLEMS  # noqa: E402

COMPILERS = {  # tool -> the environment variable that holds its compile cache
    "tilepy": "TILEPY_CACHE_DIR", "cutile": "CUDA_TILE_CACHE_DIR", "triton": "TRITON_CACHE_DIR"}
CPU_TOOLS = {  # tool -> extra environment of its process
    "tilepy-fast": {}, "tilepy-faithful": {}, "triton-interp": {"TRITON_INTERPRET": "1"},
    "numba-sim": {"NUMBA_ENABLE_CUDASIM": "1"}}
NOTES = {
    "cutile-cpu": "cuTile has no CPU execution: its kernels run only on an NVIDIA GPU",
    "numba-compile": "Numba is compared on the CPU only (its CUDA simulator)",
}
QUIET = {"TRITON_DEFAULT_FP_FUSION": "1", "PYTHONWARNINGS": "ignore"}


# ----------------------------------------------------------------------------- running children
PYCACHE = tempfile.mkdtemp(prefix="bench-pyc-")
atexit.register(shutil.rmtree, PYCACHE, True)


def child(args: list[str], env: dict, timeout: float = 900) -> dict:
    """Run bench_child.py with `args`; its last stdout line is JSON. Failures become
    {"error": ...}. Python's bytecode cache is on (see launch.py: an installed package has it)."""
    full_env = {**child_env(PYCACHE), **QUIET, **env}
    try:
        proc = subprocess.run([sys.executable, os.path.join(HERE, "bench_child.py"), *args],
                              capture_output=True, text=True, env=full_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:200]}"}


def measure_compile(kernels, repeat: int, log) -> dict:
    """{(tool, kernel): {"cold": result, "warm": result}}, best of `repeat` by compile time."""
    out = {}
    for name in kernels:
        for tool, var in COMPILERS.items():
            best = {}
            with tempfile.TemporaryDirectory(prefix=f"bench-{tool}-") as cache:
                child(["compile", tool, name], {var: cache})     # writes the bytecode, untimed
            for _ in range(repeat):
                with tempfile.TemporaryDirectory(prefix=f"bench-{tool}-") as cache:
                    for phase in ("cold", "warm"):
                        r = child(["compile", tool, name], {var: cache})
                        if "error" in r or phase not in best or \
                                r["compile"] < best[phase].get("compile", math.inf):
                            best[phase] = r
            out[(tool, name)] = best
            log(f"compile {tool:7} {name:11} " + "  ".join(
                f"{ph} {_fmt_result(best[ph], 'compile')}" for ph in ("cold", "warm")))
    return out


def measure_cpu(kernels, budget: float, workers: int, log) -> dict:
    """{(tool, kernel): result} for every CPU tool, one process per tool."""
    out = {}
    for tool, env in CPU_TOOLS.items():
        env = {**env, "BENCH_BUDGET_S": str(budget), "TILEPY_CPU_WORKERS": str(workers)}
        r = child(["cpu", tool, ",".join(kernels)], env)
        for name in kernels:
            out[(tool, name)] = r if "error" in r else r[name]
            log(f"cpu     {tool:15} {name:11} {_fmt_result(out[(tool, name)], 'time')}")
    return out


# ----------------------------------------------------------------------------- formatting
def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms < 1000 else f"{ms:,.0f} ms"


def _fmt_result(r: dict, key: str) -> str:
    return f"({r['error']})" if "error" in r else _ms(r[key])


def _ratio(other: dict | None, base: dict | None, key: str) -> str:
    if not other or not base or "error" in other or "error" in base:
        return "—"
    return _times(other[key] / base[key])


def _times(r: float) -> str:
    return f"{r:,.0f}x" if r >= 1000 else f"{r:.3g}x"


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def table_rows(kernels, comp: dict, cpu: dict) -> list[list[str]]:
    rows, ratios = [], {}
    for name in kernels:
        for phase, what in (("cold", "compile -> sm_90 cubin, empty cache"),
                            ("warm", "compile -> sm_90 cubin, warm cache")):
            t, c, tr = (comp.get((tool, name), {}).get(phase) for tool in COMPILERS)
            cells = [_cell(t, "compile"), _cell(c, "compile"), _cell(tr, "compile"), "n/a [b]"]
            rr = [_ratio(c, t, "compile"), _ratio(tr, t, "compile"), "—"]
            rows.append([name, what] + cells + rr)
            _collect(ratios, what, (c, tr, None), t, "compile")
        for mode in ("fast", "faithful"):
            what = f"CPU run, tilepy {mode} mode"
            t, tr, nb = cpu.get((f"tilepy-{mode}", name)), cpu.get(("triton-interp", name)), \
                cpu.get(("numba-sim", name))
            cells = [_cell(t, "time"), "n/a [a]", _cell(tr, "time"), _cell(nb, "time")]
            rr = ["—", _ratio(tr, t, "time"), _ratio(nb, t, "time")]
            rows.append([name, what] + cells + rr)
            _collect(ratios, what, (None, tr, nb), t, "time")
    for what, per_tool in ratios.items():
        means = [_geomean(v) for v in per_tool]
        rows.append(["geomean", what, "", "", "", ""] +
                    [_times(m) if m else "—" for m in means])
    return rows


def _cell(r: dict | None, key: str) -> str:
    if r is None:
        return "not run"
    return f"n/a ({r['error']})" if "error" in r else _ms(r[key])


def _collect(ratios, what, others, base, key):
    per_tool = ratios.setdefault(what, ([], [], []))
    for i, other in enumerate(others):
        if other and base and "error" not in other and "error" not in base:
            per_tool[i].append(other[key] / base[key])


HEADER = ["kernel", "measurement", "tilepy", "cuTile", "Triton", "Numba",
          "cuTile ÷ tilepy", "Triton ÷ tilepy", "Numba ÷ tilepy"]


def markdown(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER] + rows) for i in range(len(HEADER))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(HEADER), sep] + [line(r) for r in rows])


# ----------------------------------------------------------------------------- context lines
def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def context_lines(kernels, comp: dict, workers: int) -> list[str]:
    versions = ", ".join(f"{d} {_version(d)}" for d in (
        "tilepy", "cuda-tile", "nvidia-cuda-tileiras", "triton", "numba-cuda", "torch", "numpy"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    imports = {}
    for (tool, _), phases in comp.items():
        r = phases.get("warm", {})
        if "import" in r:
            imports.setdefault(tool, []).append(r["import"])
    imp = ", ".join(f"{t} {_ms(min(v))}" for t, v in imports.items())
    return [f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {load} "
            f"(other processes inflate every time), Python {platform.python_version()}",
            f"versions: {versions}",
            f"CPU runs: tilepy with TILEPY_CPU_WORKERS={workers}; Triton's interpreter and "
            f"Numba's simulator are single-threaded Python; every result checked against numpy",
            "CPU inputs: " + "; ".join(PROBLEMS[k].label for k in kernels),
            f"import time (warm, best): {imp or 'not measured'}",
            "ratios: the other tool's time / tilepy's (above 1: tilepy is faster)",
            f"[a] {NOTES['cutile-cpu']}", f"[b] {NOTES['numba-compile']}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1, help="compile: best of N cold/warm pairs")
    ap.add_argument("--budget", type=float, default=3.0,
                    help="CPU: seconds of timed launches per kernel and tool (default 3)")
    ap.add_argument("--kernels", default=",".join(PROBLEMS), help="comma-separated subset")
    ap.add_argument("--cpu-workers", type=int, default=1,
                    help="tilepy's CPU worker threads (default 1, like the other two)")
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--json", help="also write the raw measurements to this file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    opts = ap.parse_args(argv)
    kernels = [k for k in opts.kernels.split(",") if k]
    unknown = set(kernels) - set(PROBLEMS)
    if unknown:
        ap.error(f"unknown kernels {sorted(unknown)}; known: {', '.join(PROBLEMS)}")
    log = (lambda s: None) if opts.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    comp = {} if opts.skip_compile else measure_compile(kernels, opts.repeat, log)
    cpu = {} if opts.skip_cpu else measure_cpu(kernels, opts.budget, opts.cpu_workers, log)
    print(markdown(table_rows(kernels, comp, cpu)))
    print()
    print("\n".join(context_lines(kernels, comp, opts.cpu_workers)))
    print(f"measured in {time.perf_counter() - t0:.0f} s")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"compile": {f"{t}/{k}": v for (t, k), v in comp.items()},
                       "cpu": {f"{t}/{k}": v for (t, k), v in cpu.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:          # `python benchmarks/compare.py | head`
        sys.exit(0)
