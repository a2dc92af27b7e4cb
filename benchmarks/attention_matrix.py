"""Attention over head dim x BM x BN, without a GPU: every configuration on the CPU backend in
both modes against numpy, and compiled by NVRTC for sm_80 and sm_90 (registers, spills).

    python benchmarks/attention_matrix.py [--d 32 64 128 256] [--arch [sm_80 sm_90]] [--no-cpu]

The kernel is tests/reference_kernels/attention.py `attention_ragged` (keys past the end masked
to -inf): on the CPU at the shortest sequence with more than one key block and ragged last
blocks (cases.case_attention_ragged), on NVRTC specialized for 16 heads of 4096. The test suite
runs a subset (tests/test_tile_matrix.py); this is the whole matrix (about 2 minutes). Exits 1
when a configuration fails to compile or to match.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tilepy as ct  # noqa: E402
from tests.reference_kernels import attention, cases  # noqa: E402
from tilepy.api.compiler import compile_for_args  # noqa: E402
from tilepy.launch.nvrtc import compile_cubin  # noqa: E402
from tilepy.tools.sass_stats import stats  # noqa: E402


def on_cpu(d, bm, bn, mode) -> str:
    kernel, args, grid, check = cases.case_attention_ragged(np.random.default_rng(d), d, bm, bn)
    with ct.cpu_mode(mode):
        ct.launch(None, grid, kernel, args)
    check()
    return "ok"


def on_nvrtc(d, bm, bn, arch) -> str:
    q = np.zeros((16, 4096, d), np.float16)
    ck = compile_for_args(attention.attention_ragged, (q, q, q, q.copy(), 0.1, bm, bn, d))
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    (r,) = stats(cb.data, cb.log).values()
    return (f"{ck.emitted.nt} thr, {r['registers']} regs, {r['spill_bytes']} B spill, "
            f"{r['counts']['LDL/STL']} LDL/STL, {r['counts']['LDGSTS']} LDGSTS")


def _cell(fn, *args) -> tuple[str, bool]:
    try:
        return fn(*args), True
    except Exception as e:                     # noqa: BLE001 (reported in the table)
        return f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:80]}", False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--d", nargs="+", type=int, default=[32, 64, 128, 256])
    p.add_argument("--arch", nargs="*", default=["sm_80", "sm_90"], help="none: CPU only")
    p.add_argument("--no-cpu", action="store_true")
    opts = p.parse_args(argv)
    modes = [] if opts.no_cpu else ["fast", "faithful"]
    head = ["d", "BM", "BN", *modes, *opts.arch]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    ok = True
    for d in opts.d:
        for bm in (64, 128):
            for bn in (32, 64, 128):
                cells = [_cell(on_cpu, d, bm, bn, m) for m in modes]
                cells += [_cell(on_nvrtc, d, bm, bn, a) for a in opts.arch]
                ok &= all(good for _, good in cells)
                print(f"| {d} | {bm} | {bn} | " + " | ".join(c for c, _ in cells) + " |",
                      flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
