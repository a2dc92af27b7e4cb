"""One measurement in a fresh process, for compare.py; prints one JSON object on its last line.

    python benchmarks/bench_child.py compile tilepy|cutile|triton KERNEL
    python benchmarks/bench_child.py cpu tilepy-fast|tilepy-faithful|triton-interp|numba-sim K1,K2,..

`compile`: import the framework, then time the compilation of one tutorial kernel to an sm_90
cubin (the cache is wherever the parent pointed the framework's cache variable). `cpu`: run each
kernel on the CPU backend / interpreter / simulator, check the result against numpy, and time
the launches after a first, untimed one (unless that one alone took longer than the budget: then
it is the only sample; tilepy's compilation happens before that first launch). Environment variables that select an interpreter (TRITON_INTERPRET,
NUMBA_ENABLE_CUDASIM) are set by the parent, since they must be set before the import.
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tutorials")]

import numpy as np  # noqa: E402  (imported before any timing: every tool needs it)

import definitions  # noqa: E402  (tutorials/definitions.py: a tutorial's kernels, cells not run)
import problems  # noqa: E402

ELF = b"\x7fELF"


def _kernel(name, ct):
    """The tutorial's kernel, decorated by `ct` (tilepy, or cuda.tile: the same source)."""
    return getattr(definitions.load(problems.TUTORIAL[name], ct), name)


def _inputs(name):
    p = problems.PROBLEMS[name]
    return p, p.make(np.random.default_rng(0))


# ----------------------------------------------------------------------------- compile
def compile_tilepy(name):
    t0 = time.perf_counter()
    import tilepy as ct
    t1 = time.perf_counter()
    kernel = _kernel(name, ct)
    p, d = _inputs(name)
    _, args = p.tilepy(d)
    t2 = time.perf_counter()
    compiled = kernel.compile(*args, arch="sm_90")
    t3 = time.perf_counter()
    assert compiled.data[:4] == ELF
    return {"import": t1 - t0, "compile": t3 - t2, "bytes": len(compiled.data)}


def compile_cutile(name):
    import io
    t0 = time.perf_counter()
    import cuda.tile as ct
    from cuda.tile import compilation as C
    t1 = time.perf_counter()
    kernel = _kernel(name, ct)              # the tutorial's source, unchanged
    p, d = _inputs(name)
    sig = C.KernelSignature(p.cutile_sig(ct, C, d), C.CallingConvention.cutile_python_v1())
    buf = io.BytesIO()
    t2 = time.perf_counter()
    C.export_kernel(kernel, [sig], buf, gpu_code="sm_90", output_format="cubin")
    t3 = time.perf_counter()
    assert buf.getvalue()[:4] == ELF
    return {"import": t1 - t0, "compile": t3 - t2, "bytes": len(buf.getvalue())}


def compile_triton(name):
    t0 = time.perf_counter()
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    t1 = time.perf_counter()
    import triton_kernels
    p, d = _inputs(name)
    _, _, constexprs = p.triton(d)
    src = ASTSource(fn=getattr(triton_kernels, name), signature=p.triton_sig,
                    constexprs=constexprs)
    t2 = time.perf_counter()
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    t3 = time.perf_counter()
    cubin = compiled.asm["cubin"]
    assert cubin[:4] == ELF
    return {"import": t1 - t0, "compile": t3 - t2, "bytes": len(cubin)}


# ----------------------------------------------------------------------------- CPU runners
def _tilepy_runner(mode):
    def make(p, d):
        import tilepy as ct
        kernel = _kernel(p.name, ct)
        grid, args = p.tilepy(d)

        def run():
            with ct.cpu_mode(mode):
                ct.launch(None, grid, kernel, args)
        run()               # compile (or load from the cache): timed in the compile rows
        return run
    return make


def _triton_runner(p, d):
    import torch
    import triton_kernels
    kernel = getattr(triton_kernels, p.name)
    grid, args, constexprs = p.triton(d)
    args = tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)
    return lambda: kernel[grid](*args, **constexprs)


def _numba_runner(p, d):
    import numba_kernels
    kernel = getattr(numba_kernels, p.name)
    grid, block, args = p.numba(d)
    return lambda: kernel[grid, block](*args)


RUNNERS = {"tilepy-fast": _tilepy_runner("fast"), "tilepy-faithful": _tilepy_runner("faithful"),
           "triton-interp": _triton_runner, "numba-sim": _numba_runner}


def _zero_outputs(p, d):
    for name in p.outputs:
        d[name][...] = 0


def cpu_one(tool, name, budget, max_runs=5):
    p, d = _inputs(name)
    run = RUNNERS[tool](p, d)
    t = time.perf_counter()
    run()
    first = time.perf_counter() - t
    max_error = problems.check(p, d)
    if first > budget:                   # too slow to repeat: the first launch is the sample
        return {"time": first, "runs": 1, "first": first, "max_error": max_error}
    times = []
    while not times or (len(times) < max_runs and sum(times) < budget):
        _zero_outputs(p, d)
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    problems.check(p, d)
    return {"time": min(times), "runs": len(times), "first": first, "max_error": max_error}


def cpu_all(tool, names, budget):
    out = {}
    for name in names:
        try:
            out[name] = cpu_one(tool, name, budget)
        except Exception as e:           # one kernel failing leaves the others measured
            out[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    return out


def main(argv):
    what, tool, names = argv[0], argv[1], argv[2]
    try:
        if what == "compile":
            out = {"compile_tilepy": compile_tilepy, "compile_cutile": compile_cutile,
                   "compile_triton": compile_triton}["compile_" + tool](names)
        else:
            budget = float(os.environ.get("BENCH_BUDGET_S", "3"))
            out = cpu_all(tool, names.split(","), budget)
    except ModuleNotFoundError as e:
        out = {"error": f"not installed ({e.name})"}
    except Exception as e:
        out = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
