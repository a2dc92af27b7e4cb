"""The first session on a GPU, in one command (`python -m tilepy doctor --gpu`, or this file):

1. validation: every tutorial kernel (tests/tutorial_cases.py) and every kernel of the
   cuTile-style suite (tests/test_cutile_suite.py) runs on the GPU and, from the same inputs, on
   the CPU backend; the GPU's results must pass the case's numpy check, and the row says how far
   they are from the CPU's. Then `fuzz_batches` random batches (tests/fuzz) run on the GPU as one
   more execution compared with the interpreter (benchmarks/gpu_items.py).
2. speed: the tutorial kernels by tilepy (NVRTC C++; tileiras when usable), cuTile and Triton
   (when installed) beside torch, every output checked before it is timed
   (benchmarks/gpu_speed.py), printed as rows and as a Markdown table, written to JSON.

Each row is printed as soon as it is known. Every item runs in a child process
(benchmarks/gpu_isolate.py), the validation in `workers` children at once: after a CUDA error
(or a crash, or a hang) the faulting item is named with its kernel source and the rest runs in a
fresh process. The GPU is reached through tilepy's driver seam with arrays of its own, so
validation needs neither torch nor cupy; the speed table needs torch with CUDA. Without a GPU
it says so and returns 1; the tests run it on the fake driver (tests/fake_driver.py, the child
tests/gpu_child.py) at small sizes.

Peaks: DRAM bandwidth = 2 x memory clock x bus width; dense f16/bf16 tensor-core FLOP/s = SMs x
clock x the per-SM rate of the arch (PEAK_TC_FLOP_PER_CLK_SM; approximate, boost clocks vary).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _d in (HERE, ROOT, os.path.join(ROOT, "tutorials"), os.path.join(ROOT, "tests")):
    if _d in sys.path:
        sys.path.remove(_d)
    sys.path.insert(0, _d)       # tests/ first: its `fuzz` package, not benchmarks/fuzz.py

from gpu_isolate import run_isolated, run_parallel  # noqa: E402
from gpu_items import fuzz_items  # noqa: E402
from gpu_speed import ATTENTION_TILES, MATMUL_TILES, TOOLS, problems, table_compilers  # noqa: E402,F401

from tilepy.host import driver as gpu_driver  # noqa: E402

NO_TORCH_CUDA = "torch has no CUDA device here: every tool ran on CPU tensors"
PEAK_TC_FLOP_PER_CLK_SM = {70: 1024, 75: 1024, 80: 2048, 86: 1024, 87: 1024, 89: 1024,
                           90: 4096, 100: 8192, 103: 8192, 120: 1024, 121: 1024}
CHILD = [sys.executable, os.path.abspath(__file__), "--child"]


def peaks(info: dict) -> dict:
    """{"TFLOP/s": dense f16 tensor-core peak, "GB/s": DRAM bandwidth} of a device."""
    cc = info["cc"][0] * 10 + info["cc"][1]
    tc = info["sms"] * info["clock_mhz"] * 1e6 * PEAK_TC_FLOP_PER_CLK_SM.get(cc, 1024) / 1e12
    bw = 2 * info["memory_clock_mhz"] * 1e6 * info["bus_width"] / 8 / 1e9
    return {"TFLOP/s": tc, "GB/s": bw}


def validation_items(fuzz_batches: int = 4, cases=None, per_batch: int = 8) -> list[str]:
    """The validation's items: `cases` (["tutorial:NAME", ...]) or every case, then the fuzz."""
    if cases is None:
        from test_cutile_suite import CASES as CUTILE
        from tutorial_cases import CASES as TUTORIAL
        cases = [f"tutorial:{n}" for n in sorted(TUTORIAL)] + [f"cutile:{n}" for n in sorted(CUTILE)]
    return list(cases) + fuzz_items(fuzz_batches, per_batch)


def printer(out):
    def on_row(r):
        what = r["name"] if r["suite"] != "speed" else f"{r.get('problem', r['name'])} [{r.get('tool', '')}]"
        print(f"  {r['suite']:<8} {what:<48} {r['status']:<7} {r['detail']}", file=out, flush=True)
        if r.get("source"):
            print("    the faulting kernel:\n" + "\n".join(f"      {ln}" for ln in
                                                        r["source"].splitlines()[:80]),
                  file=out, flush=True)
    return on_row


def markdown(rows: list[dict], info: dict) -> str:
    """The speed rows as one table: a row per problem, a column per tool present."""
    by_problem: dict = {}
    for r in rows:
        if r["suite"] == "speed" and "tool" in r:
            by_problem.setdefault(r["problem"], {})[r["tool"]] = r
    tools = [t for t in TOOLS if any(t in cells for cells in by_problem.values())]
    p = peaks(info)
    on_cpu = any(r.get("device") == "cpu" for r in rows if r["suite"] == "speed")
    lines = [f"tilepy, cuTile, Triton and torch on {info['name']} (sm_{info['cc'][0]}{info['cc'][1]}, "
             f"{info['sms']} SMs); peaks: {p['TFLOP/s']:.0f} TFLOP/s f16 tensor cores, "
             f"{p['GB/s']:.0f} GB/s", ""]
    if on_cpu:
        lines += [f"{NO_TORCH_CUDA}: not GPU timings", ""]
    lines += ["| problem | " + " | ".join(tools) + " | tilepy % of peak | tilepy/torch | tilepy/Triton |",
              "|---|" + "---:|" * (len(tools) + 3)]
    for name, cells in by_problem.items():
        def rate(t):
            c = cells.get(t)
            return c.get("rate") if c and c["status"] == "ok" else None
        shown = [("—" if t not in cells else f"{cells[t]['rate']:.1f} ({cells[t]['ms']:.3f} ms)"
                  if rate(t) else cells[t]["status"].lower()) for t in tools]
        unit = next(iter(cells.values())).get("unit", "")
        ours = rate("tilepy")
        pct = f"{100 * ours / p[unit]:.0f}%" if ours and p.get(unit) else "—"
        ratio = [f"{ours / rate(t):.2f}" if ours and rate(t) else "—" for t in ("torch", "Triton")]
        lines.append(f"| {name} ({unit}) | " + " | ".join(shown) + f" | {pct} | " + " | ".join(ratio) + " |")
    return "\n".join(lines) + "\n"


def main(out=sys.stdout, json_path: str | None = "gpu-report.json",
         markdown_path: str | None = "gpu-report.md", scale: int = 1, fuzz_batches: int = 4,
         speed: bool = True, cases=None, child=None, workers: int | None = None,
         timeout: float = 120, per_batch: int = 8, speed_only=None) -> int:
    drv = gpu_driver.current()
    if not drv.available():
        print("no GPU: no NVIDIA driver/GPU found, nothing to run on a GPU", file=out)
        return 1
    info = drv.device_info(drv.core.Device(0))
    child = child or CHILD
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    workers = workers or max(1, min(8, (os.cpu_count() or 2) // 2))
    on_row = printer(out)
    checks = validation_items(fuzz_batches, cases, per_batch)
    if checks:
        print(f"validation on {info['name']}: each case and fuzz batch in a child process "
              f"({workers} at once)", file=out, flush=True)
    rows = run_parallel(child, checks, on_row, workers, timeout=timeout, env=env)
    table = ""
    if speed:
        print("\nspeed: every output checked against float64, then timed", file=out, flush=True)
        items = [f"speed:{i}/{scale}" for i in (speed_only if speed_only is not None
                                                 else range(len(problems(scale))))]
        speed_rows = run_isolated(child, items, on_row, timeout=timeout, env=env)
        rows += speed_rows
        table = markdown(speed_rows, info)
        print("\n" + table, file=out, flush=True)
        if markdown_path:
            with open(markdown_path, "w") as f:
                f.write(table)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": {**info, "cc": list(info["cc"])}, "peaks": peaks(info),
                       "rows": rows}, f, indent=1)
    failed = [r for r in rows if r["status"] != "ok" and r.get("tool", "tilepy").startswith("tilepy")]
    checked = [r for r in rows if r["suite"] != "speed"]
    if checks or not speed:
        said = f"validation: {sum(r['status'] == 'ok' for r in checked)} of {len(checked)} ok"
    else:
        said = f"speed: {sum(r['status'] == 'ok' for r in rows)} of {len(rows)} cells ok"
    print(f"{said}; {len(failed)} row(s) not ok", file=out, flush=True)
    return 1 if failed else 0


def cli(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", metavar="ITEMS_JSON", help=argparse.SUPPRESS)
    ap.add_argument("--scale", type=int, default=1, help="divide the speed table's sizes")
    ap.add_argument("--fuzz-batches", type=int, default=4)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-validation", action="store_true", help="the speed table only")
    ap.add_argument("--cases", help="the validation's cases, comma-separated (tutorial:NAME, "
                                    "cutile:NAME); default: every case")
    ap.add_argument("--problems", help="the speed problems whose names start with one of these "
                                       "comma-separated prefixes; default: every problem")
    ap.add_argument("--workers", type=int)
    ap.add_argument("--json", default="gpu-report.json")
    ap.add_argument("--markdown", default="gpu-report.md")
    args = ap.parse_args(argv)
    if args.child:
        from gpu_items import child_main
        return child_main(args.child)
    cases = [] if args.no_validation else args.cases.split(",") if args.cases else None
    fuzz_batches = 0 if args.no_validation else args.fuzz_batches
    return main(sys.stdout, args.json, args.markdown, args.scale, fuzz_batches,
                not args.no_speed, cases=cases, workers=args.workers,
                speed_only=speed_problems(args.problems, args.scale))


def speed_problems(prefixes: str | None, scale: int = 1) -> list[int] | None:
    """The indices of the speed problems named by `prefixes` ("matmul,attention"), None: all."""
    if not prefixes:
        return None
    wanted = tuple(p.strip() for p in prefixes.split(",") if p.strip())
    return [i for i, p in enumerate(problems(scale)) if p.name.startswith(wanted)]


if __name__ == "__main__":
    sys.exit(cli())
