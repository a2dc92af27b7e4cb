"""Long differential-fuzzing run: random valid Tile IR kernels through the reference interpreter,
the CPU backend in fast and faithful mode (and an NVRTC compile of every batch); with the
nvidia-cuda-tileiras wheel installed, every batch's bytecode also through NVIDIA's verifier
(tileirdisasm), whose rejections are findings too (skipped, and said, without the wheel).

    python benchmarks/fuzz.py                    # 2400 kernels, seed 0
    python benchmarks/fuzz.py --kernels 10000 --seed 7 --batch 12 --inputs 2

Prints a table of what was tried and what was found; every disagreement (or compiler error) is
written as a reproducible `Case` literal to --out (default fuzz-findings.txt), for a regression
test in tests/test_fuzz_regressions.py. CI runs the short version: tests/test_fuzz.py.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from fuzz import batches  # noqa: E402
from fuzz.runner import EXECUTIONS, run_batch  # noqa: E402


def _ir_ops(case, dce: bool) -> set[str]:
    """The Tile IR ops of a case's module (after dead-code elimination: what the backend ran)."""
    from fuzz.case import materialize
    from tilepy.lowering.dce import dce as eliminate
    module, _ = materialize([case])
    if dce:
        eliminate(module)
    return {op.name for op in module.walk()} - {"entry", "return", "yield", "continue"}


def run(kernels: int, batch: int, inputs: int, rng_seed: int, out: str):
    stats, ops, compared_ops = Counter(), Counter(), Counter()
    findings = []
    t0 = time.time()

    @settings(max_examples=max(1, kernels // batch), database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(batches(batch))
    def one_batch(b):
        cases, s = b
        try:
            outcomes = run_batch(cases, [s + k for k in range(inputs)])
        except Exception as e:          # a crash of the harness itself is a finding too
            stats["harness-error"] += len(cases)
            findings.append(("harness-error", "", f"{type(e).__name__}: {e}", cases))
            return
        for o in outcomes:
            stats[o.status] += 1
            ops.update(_ir_ops(o.case, dce=False))
            if o.status == "agree":
                compared_ops.update(_ir_ops(o.case, dce=True))
            if o.status in ("mismatch", "compile-error"):
                findings.append((o.status, o.execution, o.detail, o.case))
            stats["nvidia-" + (o.nvidia.split(":")[0] or "unchecked")] += 1
            if o.nvidia.startswith("rejected"):
                findings.append(("nvidia-rejected", "tileirdisasm", o.nvidia, o.case))
        done = _tried(stats)
        print(f"\r{done} kernels, {len(findings)} finding(s), {time.time() - t0:.0f} s",
              end="", file=sys.stderr, flush=True)

    seed(rng_seed)(one_batch)()
    print(file=sys.stderr)
    elapsed = time.time() - t0
    _table(stats, ops, compared_ops, findings, elapsed, inputs)
    with open(out, "w") as f:
        for status, ex, detail, case in findings:
            f.write(f"# {status} {ex}: {detail}\n{case!r}\n\n")
    print(f"\nfindings written to {out}" if findings else "\nno disagreement found")
    return stats, findings


def _tried(stats) -> int:
    """Kernels tried (the nvidia-* counts are verdicts on the same kernels)."""
    return sum(n for k, n in stats.items() if not k.startswith("nvidia-"))


def _table(stats, ops, compared_ops, findings, elapsed, inputs):
    total = _tried(stats)
    import bytecode_util
    verifier = "each batch" if bytecode_util.TILEIRDISASM else "skipped (no nvidia-cuda-tileiras)"
    rows = [
        ("kernels tried", total),
        ("  agree across " + " + ".join(["interpreter", *EXECUTIONS]), stats["agree"]),
        ("  interpreter only (CUDA C++ backend lacks an op)", stats["interpreter-only"]),
        ("  mismatches", stats["mismatch"]),
        ("  compiler errors (g++ or NVRTC)", stats["compile-error"]),
        ("  harness errors", stats["harness-error"]),
        (f"NVIDIA's verifier (tileirdisasm): {verifier}", ""),
        ("  accepted", stats["nvidia-accepted"]),
        ("  rejected", stats["nvidia-rejected"]),
        ("input sets per kernel", inputs),
        ("executions compared per kernel", len(EXECUTIONS)),
        ("wall time (s)", f"{elapsed:.0f}"),
        ("kernels per second", f"{total / max(elapsed, 1e-9):.2f}"),
        ("distinct ops generated", len(ops)),
        ("distinct ops compared with the backend", len(compared_ops)),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'differential fuzzing':<{width}}  value")
    print("-" * (width + 10))
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print("\nTile IR ops (kernels containing the op: generated / compared with the backend)")
    for name, n in sorted(ops.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<24} {n:>6} / {compared_ops[name]:<6}")
    for status, ex, detail, _ in findings[:20]:
        print(f"\n{status} [{ex}] {detail[:2000]}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", type=int, default=2400)
    p.add_argument("--batch", type=int, default=12, help="kernels per compiled module")
    p.add_argument("--inputs", type=int, default=2, help="random input sets per kernel")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="fuzz-findings.txt")
    a = p.parse_args(argv)
    stats, findings = run(a.kernels, a.batch, a.inputs, a.seed, a.out)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
