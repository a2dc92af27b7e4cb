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



def define_cell() -> str:
    """The first cell: the kernels of tutorials 01 (vector add) and 03 (f16 matmul), defined in
    the notebook itself (their source copied from the tutorials)."""
    import ast
    parts = ["import json, sys, time\nimport numpy as np\nimport tilepy as ct"]
    for name, fn in (("01_vector_add.py", "vector_add"), ("03_matmul.py", "matmul")):
        with open(os.path.join(ROOT, "tutorials", name)) as f:
            text = f.read()
        node = next(n for n in ast.parse(text).body
                    if isinstance(n, ast.FunctionDef) and n.name == fn)
        parts.append("@ct.kernel\n" + ast.get_source_segment(text, node))
    return "\n\n".join(parts) + "\n"


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
    nb = execute(notebook(define_cell(), MEASURE), workdir, {"TILEPY_CACHE_DIR": cache_dir})
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
