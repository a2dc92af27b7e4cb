"""Launch-path benchmark: cold compile, warm start, and per-call dispatch cost.

    python benchmarks/launch.py [--quick]

1. Cold compile: a new process with an empty cache compiles the vector-add tutorial kernel and
   the f16 matmul tutorial kernel to sm_90 cubins (`kernel.compile(..., arch="sm_90")`).
   "compile" is trace + lowering + emission + NVRTC, timed inside the process after its
   imports (tilepy's compiler modules are imported lazily; the child imports them first, and
   their import time is shown apart); "process" is the whole child process.
2. Warm start: a new process with that cache gets the same cubins: from `import tilepy` to the
   cubin in hand -- import, the tutorial module's import (its `@ct.kernel`), the disk-index hit
   that replaces tracing, the cubin from the cache. Python and numpy start-up is shown apart
   (numpy's import time is a gauge of the machine's load).
3. Dispatch: end-to-end cost of one `tilepy.launch` of a cached 1-block kernel on the CPU
   backend (a[0] += 1 on a numpy array), beside NVIDIA Warp's CPU `wp.launch` of the same
   kernel on a Warp array, in the same process, measured in alternating batches.
Needs the `bench` extra for Warp (pip install -e '.[bench]'); without it, row 3 says so.

The child processes run with Python bytecode caching on (PYTHONPYCACHEPREFIX in a temp dir;
one untimed child compiles it first), as an installed package has it: pip writes the bytecode
at install time. With PYTHONDONTWRITEBYTECODE=1 every start would compile tilepy's sources.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
which, cold = sys.argv[1], sys.argv[2] == "cold"
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import tilepy as ct
t2 = time.perf_counter()
if cold:                      # the compiler's modules (a warm start does not load them)
    import tilepy.api.compiler, tilepy.frontend.tracer, tilepy.cuda_c.kernel, tilepy.aot
    import tilepy.launch.nvrtc
t3 = time.perf_counter()
sys.path.insert(0, ROOT + "/tutorials")
from definitions import load as tutorial   # the tutorial's kernels, without running its cells
if which == "vector_add":
    k = tutorial("01_vector_add").vector_add
    v = np.zeros(1 << 20, np.float32)
    args = (v, v, v, 1024)
else:
    k = tutorial("03_matmul").matmul
    A = np.zeros((512, 512), np.float16)
    C = np.zeros((512, 512), np.float32)
    args = (A, A, C, 64, 64, 32)
t4 = time.perf_counter()
from tilepy.api.compiler import compile_for_args
compile_for_args(k, args)     # trace + lowering + emission (a warm start: the disk index)
t5 = time.perf_counter()
cubin = k.compile(*args, arch="sm_90")      # NVRTC (a warm start: the cache)
t6 = time.perf_counter()
assert cubin.data[:4] == b"\x7fELF"
print(json.dumps({"numpy": t1 - t0, "import": t2 - t1, "compiler_import": t3 - t2,
                  "module": t4 - t3, "trace": t5 - t4, "nvrtc": t6 - t5, "compile": t6 - t4,
                  "start": t6 - t1, "bytes": len(cubin.data)}))
"""


def child(which: str, cache_dir: str, mode: str, env: dict) -> dict:
    env = {**env, "TILEPY_CACHE_DIR": cache_dir}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", f"ROOT = {ROOT!r}\n" + CHILD, which, mode],
                          capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process"] = wall
    return out


def child_env(pycache: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def compile_rows(repeat: int) -> list[tuple]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="tilepy-bench-pyc-") as pyc:
        env = child_env(pyc)
        with tempfile.TemporaryDirectory(prefix="tilepy-bench-") as d:
            child("vector_add", d, "cold", env)                  # writes the bytecode
        for which, cold_target in (("vector_add", 0.3), ("matmul", 0.5)):
            colds, warms = [], []
            for _ in range(repeat):
                with tempfile.TemporaryDirectory(prefix="tilepy-bench-") as d:
                    colds.append(child(which, d, "cold", env))
                    for _ in range(2):
                        warms.append(child(which, d, "warm", env))
            rows += _rows(which, cold_target, colds, warms)
    return rows


def _rows(which, cold_target, colds, warms) -> list[tuple]:
    cold = min(colds, key=lambda r: r["compile"])
    warm = min(warms, key=lambda r: r["start"])
    med = statistics.median(r["start"] for r in warms)
    label = "vector add f32" if which == "vector_add" else "matmul f16 64x64x32"
    return [(f"cold compile, {label} -> sm_90 cubin", f"{cold['compile'] * 1e3:.0f} ms",
             f"trace+emit {cold['trace'] * 1e3:.0f} ms, NVRTC {cold['nvrtc'] * 1e3:.0f} ms "
             f"(median of {len(colds)}: {statistics.median(r['compile'] for r in colds) * 1e3:.0f} "
             f"ms); compiler import {cold['compiler_import'] * 1e3:.0f} ms; process "
             f"{cold['process']:.2f} s", f"< {cold_target * 1e3:.0f} ms",
             cold["compile"] < cold_target),
            (f"warm start, {label} (cache hit)", f"{warm['start'] * 1e3:.0f} ms",
             f"import tilepy {warm['import'] * 1e3:.0f} ms, tutorial module "
             f"{warm['module'] * 1e3:.0f} ms, index {warm['trace'] * 1e3:.1f} ms, cubin "
             f"{warm['nvrtc'] * 1e3:.1f} ms (median of {len(warms)}: {med * 1e3:.0f} ms); "
             f"numpy import {warm['numpy'] * 1e3:.0f} ms", "< 50 ms", warm["start"] < 0.05)]


# ----------------------------------------------------------------------------- dispatch
def tilepy_dispatch():
    import numpy as np

    import tilepy as ct

    @ct.kernel
    def bump(a):
        ct.store(a, (0,), ct.load(a, (0,), (1,)) + 1.0)

    a = np.zeros(1, np.float32)
    ct.launch(None, (1,), bump, (a,))          # compile (or load from the cache) once
    launch = ct.launch
    grid = (1,)
    args = (a,)

    def batch(n):
        t = time.perf_counter()
        for _ in range(n):
            launch(None, grid, bump, args)
        return (time.perf_counter() - t) / n
    return batch, a


def warp_dispatch():
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):      # Warp's banner and module-load lines
        import warp as wp
        wp.config.quiet = True
        wp.init()

        @wp.kernel
        def bump(a: wp.array(dtype=wp.float32)):
            i = wp.tid()
            a[i] = a[i] + 1.0

        a = wp.zeros(1, dtype=wp.float32, device="cpu")
        wp.launch(bump, dim=1, inputs=[a], device="cpu")
    launch = wp.launch
    inputs = [a]

    def batch(n):
        t = time.perf_counter()
        for _ in range(n):
            launch(bump, dim=1, inputs=inputs, device="cpu")
        return (time.perf_counter() - t) / n
    return batch, a


def dispatch_rows(rounds: int, n: int) -> list[tuple]:
    tp_batch, tp_a = tilepy_dispatch()
    try:
        wp_batch, wp_a = warp_dispatch()
    except ImportError as e:
        wp_batch, why = None, f"warp-lang not installed ({e}); pip install -e '.[bench]'"
    tp, wp = [], []
    for _ in range(rounds):                    # alternate, so both see the same machine load
        tp.append(tp_batch(n))
        if wp_batch:
            wp.append(wp_batch(n))
    calls = 1 + rounds * n
    assert tp_a[0] == calls, "tilepy kernel did not run every time"
    tp_us = statistics.median(tp) * 1e6
    rows = [("CPU dispatch, cached 1-block kernel (tilepy.launch)", f"{tp_us:.1f} us",
             f"median of {rounds} batches of {n}; min {min(tp) * 1e6:.1f} us", "< 10 us",
             tp_us < 10)]
    if wp_batch:
        assert wp_a.numpy()[0] == calls, "warp kernel did not run every time"
        wp_us = statistics.median(wp) * 1e6
        rows.append(("CPU dispatch, same kernel (warp.launch, warp-lang "
                     f"{__import__('warp').__version__})", f"{wp_us:.1f} us",
                     f"median of {rounds} batches of {n}; min {min(wp) * 1e6:.1f} us",
                     "tilepy below", tp_us < wp_us))
    else:
        rows.append(("CPU dispatch, Warp", "n/a", why, "", False))
    return rows


def table(rows) -> str:
    head = ("measurement", "value", "details", "target", "met")
    body = [head] + [(r[0], r[1], r[2], r[3], "yes" if r[4] else "NO") for r in rows]
    widths = [max(len(str(r[i])) for r in body) for i in range(5)]
    lines = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in body]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--skip-compile", action="store_true", help="dispatch only")
    args = ap.parse_args(argv)
    rows = [] if args.skip_compile else compile_rows(1 if args.quick else 3)
    rows += dispatch_rows(7 if args.quick else 21, 2000 if args.quick else 10000)
    print(table(rows))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} CPUs, load average {load} (other processes inflate every time above; "
          f"numpy's import time is a gauge)")


if __name__ == "__main__":
    main()
