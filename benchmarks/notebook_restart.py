"""The notebook "Done when" of issue 17: a notebook that defines a vector add and an f16 matmul,
executed twice in fresh Jupyter kernels (nbclient) with one cache dir. Prints, per run, the time
of the first launch of each kernel and of the two sm_90 compiles, and whether the run traced or
compiled anything (the second run should find everything on disk: the cells' files are named
after the kernel process, which the cache keys leave out).

    python benchmarks/notebook_restart.py [--cache DIR] [--runs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFINE = """\
import json, sys, time
import numpy as np
import tilepy as ct

@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,)) +
             ct.load(b, index=(i,), shape=(TILE,)))

@ct.kernel
def matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc)
"""

MEASURE = """\
from tilepy.launch import cache
before = {e.key for e in cache.listing()}
x = np.arange(10_000, dtype=np.float32); y = np.ones_like(x); z = np.zeros_like(x)
A = np.ones((128, 96), np.float16); B = np.ones((96, 128), np.float16)
C = np.zeros((128, 128), np.float32)
t = [time.perf_counter()]
ct.launch(None, (ct.cdiv(x.size, 256),), vector_add, (x, y, z, 256)); t.append(time.perf_counter())
ct.launch(None, (2, 2), matmul, (A, B, C, 64, 64, 32)); t.append(time.perf_counter())
vector_add.compile(x, y, z, 256, arch="sm_90"); t.append(time.perf_counter())
matmul.compile(A, B, C, 64, 64, 32, arch="sm_90"); t.append(time.perf_counter())
assert (z == x + 1).all() and (C == 96).all()
ms = [round(1000 * (b - a), 1) for a, b in zip(t, t[1:])]
print(json.dumps({"launch_vector_add_ms": ms[0], "launch_matmul_ms": ms[1],
                  "sm90_vector_add_ms": ms[2], "sm90_matmul_ms": ms[3], "total_ms": round(sum(ms), 1),
                  "traced": "tilepy.frontend.tracer" in sys.modules,
                  "new_cache_entries": len({e.key for e in cache.listing()} - before)}))
"""


def run_once(cache_dir: str, workdir: str) -> dict:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from notebook_util import execute, notebook, text_of
    nb = execute(notebook(DEFINE, MEASURE), workdir, {"TILEPY_CACHE_DIR": cache_dir})
    return json.loads(text_of(nb.cells[1]).strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="cache dir (default: a new empty one)")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = args.cache or os.path.join(tmp, "cache")
        results = [run_once(cache_dir, tmp) for _ in range(args.runs)]
    for i, r in enumerate(results, 1):
        print(f"run {i}: {json.dumps(r)}")
    return results


if __name__ == "__main__":
    main()
