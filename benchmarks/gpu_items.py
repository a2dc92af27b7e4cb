"""What a child of `doctor --gpu` runs (benchmarks/gpu_isolate.py): one item at a time, each a
generator of result rows.

- `tutorial:NAME`, `cutile:NAME`: a case of tests/tutorial_cases.py or tests/test_cutile_suite.py
  on device 0 (its arrays copied there and back through the driver seam, no torch needed) and,
  from copies of the same inputs, on the CPU backend: the GPU's results must pass the case's
  numpy check; the row says how far they are from the CPU's.
- `fuzz:K/N/PER/SEED`: batch K of the N random batches (tests/fuzz) of PER kernels, drawn by
  hypothesis deterministically, run on the GPU as one more execution compared with the
  interpreter.
- `speed:I`: problem I of benchmarks/gpu_speed.py, a row per tool (tilepy, cuTile, Triton, torch).
"""
from __future__ import annotations

import inspect
import json
import sys

import numpy as np

import tilepy as ct
from gpu_isolate import emit
from tilepy.doctor.backends import DeviceArray, on_device


def row(item: str, status: str, detail: str = "", name: str | None = None, **more) -> dict:
    suite, _, spec = item.partition(":")
    return {"item": item, "suite": suite, "name": name or spec, "status": status,
            "detail": detail, **more}


def kernel_source(kernel) -> str:
    try:
        return inspect.getsource(kernel.func)
    except (OSError, TypeError, AttributeError):
        return repr(kernel)


# ----------------------------------------------------------------------------- validation
def run_case(make, started=lambda source: None):
    """A case (make() -> kernel, grid, args, check) on device 0 and on the CPU backend:
    (GPU arrays, CPU arrays) after the launches; raises if the GPU's results fail the check."""
    kernel, grid, args, check = make()
    started(kernel_source(kernel))
    cpu_args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    dev_args = on_device(lambda drv: [DeviceArray(drv, a) if isinstance(a, np.ndarray) else a
                                      for a in args])
    ct.launch(None, grid, kernel, tuple(dev_args))
    on_device(lambda drv: [d.back() for d in dev_args if isinstance(d, DeviceArray)])
    check()
    ct.launch(None, grid, kernel, cpu_args)
    return ([a for a in args if isinstance(a, np.ndarray)],
            [a for a in cpu_args if isinstance(a, np.ndarray)])


def difference(gpu_out, cpu_out) -> float:
    worst = 0.0
    for g, c in zip(gpu_out, cpu_out):
        g64, c64 = g.astype(np.float64), c.astype(np.float64)
        both = np.isfinite(g64) & np.isfinite(c64)
        if both.any():
            worst = max(worst, float(np.max(np.abs(g64[both] - c64[both]) / (1 + np.abs(c64[both])))))
    return worst


def cases(suite: str) -> dict:
    if suite == "tutorial":
        from tutorial_cases import CASES
    else:
        from test_cutile_suite import CASES
    return CASES


def validation_item(item: str, started):
    suite, _, name = item.partition(":")
    g, c = run_case(cases(suite)[name], started)
    yield row(item, "ok", f"max relative difference GPU vs CPU {difference(g, c):.2g}")


# ----------------------------------------------------------------------------- fuzz
def fuzz_items(batches: int, per_batch: int = 8, seed: int = 15) -> list[str]:
    return [f"fuzz:{k}/{batches}/{per_batch}/{seed}" for k in range(batches)]


def fuzz_batch(k: int, batches: int, per_batch: int):
    """Batch `k` of the `batches` hypothesis draws (derandomized: the same in every process)."""
    from hypothesis import HealthCheck, Phase, given, settings

    from fuzz import batches as draw_batches
    drawn = []

    @settings(max_examples=batches, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(draw_batches(per_batch))
    def one(batch):
        drawn.append(batch)
    one()
    return drawn[k]


def fuzz_item(item: str, started):
    from fuzz.case import materialize
    from fuzz.gpu_execution import GpuExecution
    from fuzz.runner import run_batch
    k, batches, per_batch, seed = (int(x) for x in item.partition(":")[2].split("/"))
    cases_, s = fuzz_batch(k, batches, per_batch)
    started(str(materialize(cases_, "fuzz_batch")[0]))
    outcomes = run_batch(cases_, [s + seed], {"gpu": GpuExecution()})
    bad = [f"case {i}: {o.status} {o.detail[:200]}" for i, o in enumerate(outcomes)
           if o.status not in ("agree", "interpreter-only")]
    yield row(item, "FAILED" if bad else "ok",
              "; ".join(bad) if bad else f"{len(outcomes)} random kernels agree with the "
                                         f"interpreter",
              name=f"batch {k} of {batches} (seed {seed})", kernels=len(outcomes))


# ----------------------------------------------------------------------------- the child
def run_item(item: str, started):
    suite = item.partition(":")[0]
    if suite == "fuzz":
        return fuzz_item(item, started)
    if suite == "speed":
        import gpu_speed
        return gpu_speed.speed_item(item, started, row, alive=context_alive)
    return validation_item(item, started)


def context_alive() -> bool:
    """Is device 0's CUDA context still usable? (After an illegal address every driver call,
    cuMemAlloc first, fails with the same sticky error.)"""
    try:
        on_device(lambda drv: drv.free(drv.alloc(1)))
        return True
    except Exception:
        return False


def child_main(items_path: str, out=sys.stdout) -> int:
    with open(items_path) as f:
        items = json.load(f)
    for item in items:
        emit(out, start=item)
        try:
            for r in run_item(item, lambda source, item=item: emit(out, start=item, source=source)):
                emit(out, row=r)
        except Exception as e:
            error = f"{type(e).__name__}: {str(e)[:600]}"
            if not context_alive():
                emit(out, fatal=item, error=error)
                return 3
            emit(out, row=row(item, "FAILED", error))
    return 0
