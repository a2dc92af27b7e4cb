"""The disk cache and the index of traced kernels do not depend on where the source lives
(architecture decision 7): the same kernel from a moved module, or from a notebook cell in a
restarted kernel (a file under a new `ipykernel_<pid>` folder), is a hit; the source given to
compilers still names the file where the kernel is now."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import cache_seed
from tilepy.launch import cache
from tilepy.cuda_c.source_key import location_free, relocate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KMOD = """
import tilepy as ct


def bump(x):
    return x + 1.0


@ct.kernel
def k(a, b):
    t = ct.load(a, (0,), (16,))
    ct.store(b, (0,), bump(t) * 2.0)
"""

CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import kmod
import tilepy as ct
from tilepy.api.compiler import compile_for_args
a, b = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
ck = compile_for_args(kmod.k, (a, b))
ct.launch(None, (1,), kmod.k, (a, b))
kmod.k.compile(a, b, arch=sys.argv[2]) if sys.argv[2] != "-" else None
print(json.dumps({"traced": "tilepy.frontend.tracer" in sys.modules,
                  "lines": ck.compile_source(), "b": b[:16].tolist()}))
"""


def _run(moddir, arch="-") -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(moddir), arch], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _entries(kind: str) -> set[str]:
    return {e.key for e in cache.listing() if e.kind == kind}


def test_a_moved_module_hits_the_index_and_the_binaries(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    cache_seed.seed(tmp_path / "cache")          # the processes build only the kernel
    here, there = tmp_path / "here", tmp_path / "elsewhere" / "deeper"
    here.mkdir()
    (here / "kmod.py").write_text(textwrap.dedent(KMOD))
    first = _run(here, "sm_90")
    assert first["traced"] and first["b"] == [(i + 1.0) * 2.0 for i in range(16)]
    before = {k: _entries(k) for k in ("spec", "cpu", "cubin")}
    assert all(before.values()), before
    shutil.copytree(here, there)
    shutil.rmtree(here)                          # the old place is gone
    second = _run(there, "sm_90")
    assert not second["traced"], "the moved module should have found its trace on disk"
    assert second["b"] == first["b"]
    assert {k: _entries(k) for k in before} == before, "the move compiled something again"
    # errors and line info name the file where the kernel is now
    assert f'"{there / "kmod.py"}"' in second["lines"] and str(here) not in second["lines"]


def test_keys_leave_out_the_paths_of_line_directives_only():
    a = '#line 12 "/tmp/ipykernel_1/9.py"\n  x = 1;\n'
    b = '#line 12 "/tmp/ipykernel_2/9.py"\n  x = 1;\n'
    assert location_free(a) == location_free(b) == "#line 12\n  x = 1;\n"
    assert location_free('#line 13 "/a.py"\n') != location_free('#line 12 "/a.py"\n')
    assert location_free('auto s = "#line 1 \\"x\\"";\n') == 'auto s = "#line 1 \\"x\\"";\n'
    assert relocate(a, {"/tmp/ipykernel_1/9.py": "/tmp/ipykernel_2/9.py"}) == b


@pytest.mark.parametrize("cells", [("/tmp/ipykernel_101/4711.py", "/tmp/ipykernel_202/4711.py")])
def test_a_notebook_cell_in_a_restarted_kernel_hits(tmp_path, monkeypatch, cells):
    """Two kernel processes name the same cell differently; the second one finds the first
    one's trace (the Kernel objects stand for the two processes: each has its own memory)."""
    import linecache

    import numpy as np

    import tilepy as ct
    from tilepy.api.compiler import compile_for_args
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    cell = ("import tilepy as ct\n\n@ct.kernel\ndef k(a, b):\n"
            "    ct.store(b, (0,), ct.load(a, (0,), (16,)) * 3.0)\n")
    got = []
    for name in cells:
        linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
        ns = {}
        exec(compile(cell, name, "exec"), ns)              # noqa: S102  (as IPython runs a cell)
        a, b = np.ones(16, np.float32), np.zeros(16, np.float32)
        ck = compile_for_args(ns["k"], (a, b))
        got.append(ck)
        ct.launch(None, (1,), ns["k"], (a, b))
        assert (b == 3.0).all()
    assert got[0].module is not None and got[1]._module is None, "the second cell was traced again"
    assert f'"{cells[1]}"' in got[1].compile_source() and cells[0] not in got[1].compile_source()
