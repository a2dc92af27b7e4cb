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
3. Dispatch (issue 32): the host time of one `tilepy.launch` of a cached 1-block kernel with 1,
   4 and 12 array arguments: numpy and torch CPU arrays (CPU backend, fast mode), and torch
   tensors seen as CUDA tensors with a torch stream on the fake driver of tests/fake_driver.py
   (up to where cuda.core's launch would be called; device 0's context current, as torch has
   it, and once more from a thread without a current context); beside torch's eager torch.add
   on two 256-element CPU tensors and NVIDIA Warp's CPU `wp.launch`, in the same process,
   measured in alternating batches (wall and the launching thread's CPU time). Warm launches
   are served by the C warm path (tilepy/launch/warm.py) where it is built (torch tensors read
   by its torch reader, warm_torch.cpp, where torch's headers are; GPU plans run in C up to
   cuda.core's launch); the 4-array rows are measured again on the Python path alone
   (`warm.python_only()`, its fallback), in the same rounds.
Needs the `bench` extra for Warp (pip install -e '.[bench]'); without it, its row says so.
`--skip-compile` runs the dispatch rows only.

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
# Per-launch host time of a cached 1-block kernel with 1, 4 and 12 array arguments: numpy and
# torch CPU arrays on the CPU backend, torch tensors seen as CUDA tensors on the fake driver
# (tests/fake_driver.py) with a torch stream, beside torch's eager torch.add on two 256-element
# CPU tensors and Warp's CPU launch. Every timed launch is checked to have run (CPU: the
# output's value; fake GPU: the driver's launch count); timings alternate between the rows in
# rounds, so all see the same load; each row gives the median wall time and the median CPU time
# of the launching thread (time.thread_time: less sensitive to other processes).
def _kernels():
    import tilepy as ct

    @ct.kernel
    def bump1(a):
        ct.store(a, (0,), ct.load(a, (0,), (256,)) + 1.0)

    @ct.kernel
    def add4(a, b, c, out):
        ct.store(out, (0,), ct.load(a, (0,), (256,)) + ct.load(b, (0,), (256,))
                 + ct.load(c, (0,), (256,)) + ct.load(out, (0,), (256,)) + 1.0)

    @ct.kernel
    def add12(a, b, c, d, e, f, g, h, i, j, k, out):
        t = ct.load(a, (0,), (256,)) + ct.load(b, (0,), (256,)) + ct.load(c, (0,), (256,))
        t = t + ct.load(d, (0,), (256,)) + ct.load(e, (0,), (256,)) + ct.load(f, (0,), (256,))
        t = t + ct.load(g, (0,), (256,)) + ct.load(h, (0,), (256,)) + ct.load(i, (0,), (256,))
        t = t + ct.load(j, (0,), (256,)) + ct.load(k, (0,), (256,))
        ct.store(out, (0,), t + ct.load(out, (0,), (256,)) + 1.0)
    return {1: bump1, 4: add4, 12: add12}


def _timer(call, python_only=False, before=None):
    """`python_only`: the batch runs on the Python warm path (the C one set aside); `before`:
    called before each batch, untimed (the state the row's launches need)."""
    import contextlib

    from tilepy.launch import warm

    def batch(n):
        if before is not None:
            before()
        with warm.python_only() if python_only else contextlib.nullcontext():
            t, c = time.perf_counter(), time.thread_time()
            for _ in range(n):
                call()
            return (time.perf_counter() - t) / n, (time.thread_time() - c) / n
    batch.call, batch.before = call, before
    return batch


def _with_python_rows(rows: dict) -> dict:
    """Beside each 4-array row, the same launches on the Python path alone."""
    out = {}
    for (what, nargs), (batch, value) in rows.items():
        out[(what, nargs)] = (batch, value)
        if nargs == 4 and "," not in what:
            out[(f"{what}, Python path", nargs)] = (_timer(batch.call, True, batch.before),
                                                     value)
    return out


def _arrays(make, nargs):
    """`nargs` arrays of 256 float32 zeros; the last one is the output, which each launch
    increments by 1 (the others are 0)."""
    return tuple(make() for _ in range(nargs))


def cpu_rows(kernels, lib: str):
    import tilepy as ct
    if lib == "torch":
        import torch
        make = lambda: torch.zeros(256)      # noqa: E731
    else:
        import numpy as np
        make = lambda: np.zeros(256, np.float32)    # noqa: E731
    out = {}
    for nargs, k in kernels.items():
        args = _arrays(make, nargs)
        ct.launch(None, (1,), k, args)
        out[(lib, nargs)] = (_timer(lambda k=k, args=args: ct.launch(None, (1,), k, args)),
                             lambda args=args: float(args[-1][0]))
    return out


def fake_gpu_rows(kernels):
    """tilepy's host path of a GPU launch: torch tensors seen as CUDA tensors, an explicit torch
    stream, the fake driver in place of cuda.core. The fake's own launch (packing the
    parameters and running the CPU build) is replaced by a counter while timing: what is timed
    ends where a real launch would call cuda.core.launch. The launching thread has device 0's
    context current, as in a torch process whose tensors are on device 0 (torch made it
    current); the "no current context" row times the same launches from a thread without one
    (each launch then makes the device's current and puts none back: four more driver calls).
    The fake's call log is emptied before each batch (a real driver keeps none)."""
    import pytest
    import torch

    import tilepy as ct
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from fake_driver import FakeDriver, torch_on_the_fake_gpu
    patch = pytest.MonkeyPatch()
    drv = FakeDriver().install(patch)
    torch_on_the_fake_gpu(patch, torch, current=0x5100)

    def context(ctx):
        def before():
            drv.set_context(ctx)
            drv.calls.clear()
        return before
    torch_like, none = context(drv.context_of(drv.core.Device(0))), context(0)
    out, counted = {}, [0]
    for nargs, k in kernels.items():
        k = k.replace_hints()              # its own plans (the CPU rows' tensors have its signature)
        args = _arrays(lambda: torch.zeros(256), nargs)
        stream = torch.cuda.current_stream()
        ct.launch(stream, (1,), k, args)            # compiled, loaded, really run once
        assert float(args[-1][0]) == 1.0 and drv.launches[-1].stream == 0x5100
        call = lambda k=k, args=args, s=stream: ct.launch(s, (1,), k, args)     # noqa: E731
        out[("fake GPU", nargs)] = (_timer(call, before=torch_like), lambda: counted[0])
        if nargs == 4:
            out[("fake GPU, no current context", nargs)] = (_timer(call, before=none),
                                                            lambda: counted[0])

    def count(*a):
        counted[0] += 1
    patch.setattr(drv.core, "launch", count)
    return out, patch


def torch_add_row():
    import torch
    x, y = torch.zeros(256), torch.ones(256)
    return _timer(lambda: torch.add(x, y)), lambda: 0.0


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
    return _timer(lambda: launch(bump, dim=1, inputs=inputs, device="cpu")), \
        lambda: float(a.numpy()[0])


TARGETS = {("numpy", 4): 5.0, ("torch", 4): 7.0, ("fake GPU", 4): 8.0}


def dispatch_rows(rounds: int, n: int) -> list[tuple]:
    kernels = _kernels()
    timers = _with_python_rows({**cpu_rows(kernels, "numpy"), **cpu_rows(kernels, "torch")})
    gpu, patch = fake_gpu_rows(kernels)
    timers.update(_with_python_rows(gpu))
    timers[("torch.add", 2)] = torch_add_row()
    try:
        timers[("warp", 1)] = warp_dispatch()
        why = ""
    except ImportError as e:
        why = f"warp-lang not installed ({e}); pip install -e '.[bench]'"
    try:
        times = {key: [] for key in timers}
        for _ in range(rounds):                # alternate, so every row sees the same load
            for key, (batch, _) in timers.items():
                times[key].append(batch(n))
    finally:
        patch.undo()
    for key, (_, value) in timers.items():     # every timed launch ran
        if key[0].split(",")[0] in ("numpy", "torch", "warp"):
            runs = 2 if key[1] == 4 and key[0] != "warp" else 1     # (with its Python-path row)
            assert value() == 1 + runs * rounds * n, (key, value())
        elif key[0].startswith("fake GPU"):
            assert value() >= rounds * n, key
    add_us = statistics.median(w for w, _ in times[("torch.add", 2)]) * 1e6
    rows = []
    for key, ts in times.items():
        wall = statistics.median(w for w, _ in ts) * 1e6
        cpu = statistics.median(c for _, c in ts) * 1e6
        what, nargs = key
        label = {"torch.add": "torch.add of two 256-element CPU tensors (eager)",
                 "warp": f"warp.launch, CPU, 1 array (warp-lang {_warp_version()})"}.get(
            what, f"tilepy.launch, {what}, {nargs} array{'s' * (nargs > 1)}")
        target = TARGETS.get(key)
        met = (wall <= target and wall <= 1.1 * add_us) if target else None
        rows.append((label, f"{wall:.1f} us", f"CPU {cpu:.1f} us; median of {rounds} batches of "
                     f"{n}; {wall / add_us:.1f}x torch.add",
                     f"<= {target:.0f} us, <= 1.1x torch.add" if target else "", met))
    if why:
        rows.append(("warp.launch, CPU", "n/a", why, "", None))
    from tilepy.launch import warm
    rows.append(("C warm path", "in use" if warm.launch is not None else "not in use",
                 warm.why() or "tilepy/launch/warm.py", "", None))
    if warm.launch is not None:
        reader = warm._state.get("torch_reader")
        rows.append(("C warm path's torch reader", "in use" if reader else "not in use",
                     warm.torch_why() or "tilepy/launch/warm_torch.cpp (torch's headers)", "",
                     None))
    return rows


def _warp_version() -> str:
    return getattr(sys.modules.get("warp"), "__version__", "?")


def table(rows) -> str:
    head = ("measurement", "value", "details", "target", "met")
    body = [head] + [(*r[:4], "-" if r[4] is None else "yes" if r[4] else "NO") for r in rows]
    widths = [max(len(str(r[i])) for r in body) for i in range(5)]
    lines = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in body]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--skip-compile", action="store_true", help="dispatch only")
    args = ap.parse_args(argv)
    before = _load()
    rows = [] if args.skip_compile else compile_rows(1 if args.quick else 3)
    rows += dispatch_rows(7 if args.quick else 21, 2000 if args.quick else 10000)
    print(table(rows))
    print(f"\n{os.cpu_count()} CPUs, load average {before} before, {_load()} after (1, 5, 15 "
          f"min; other processes inflate every wall time above, CPU times less; numpy's import "
          f"time is a gauge)")


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
