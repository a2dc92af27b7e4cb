"""A program that changes under a running process (issue 27 items 4 and 5): a module global, a
closure cell or a module attribute a kernel read, rebound after its first launch, is seen by the
next launch (the kernel is traced again, as a new process would); a kernel file edited on disk
after import compiles the kernel's own body or says the source changed, never another def's."""
import importlib.util
import os
import textwrap

import numpy as np
import pytest

import tilepy as ct
from tilepy.errors import TileSyntaxError

SCALE = 1.0


@ct.kernel
def scaled(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (8,)) * SCALE)


def test_a_global_rebound_after_the_first_launch_recompiles(monkeypatch):
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    ct.launch(None, (1,), scaled, (a, b))
    np.testing.assert_array_equal(b, a)
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    ct.launch(None, (1,), scaled, (a, b))              # the warm path's plan is not reused
    np.testing.assert_array_equal(b, 3 * a)
    assert "3.000000e+00" in scaled.mlir(a, b)         # nor the compiled specialization


def test_the_same_value_assigned_again_keeps_the_compiled_kernel(monkeypatch):
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    monkeypatch.setitem(globals(), "SCALE", float("2.5"))
    scaled.mlir(a, b)
    ck = next(iter(scaled.cache.values()))
    monkeypatch.setitem(globals(), "SCALE", float("2.5") + 0.0)     # another object, same value
    scaled.mlir(a, b)
    assert next(iter(scaled.cache.values())) is ck and not scaled.changed()


def _closure_kernel():
    k = 4.0

    @ct.kernel
    def add_k(a, b):
        ct.store(b, (0,), ct.load(a, (0,), (8,)) + k)

    def rebind(v):
        nonlocal k
        k = v
    return add_k, rebind


def test_a_closure_cell_rebound_is_seen():
    add_k, rebind = _closure_kernel()
    a, b = np.zeros(8, np.float32), np.zeros(8, np.float32)
    assert "4.000000e+00" in add_k.mlir(a, b)
    rebind(7.0)
    assert "7.000000e+00" in add_k.mlir(a, b)


# ----------------------------------------------------------------------------- edited files
BEFORE = """
import tilepy as ct

@ct.kernel
def kA(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (8,)) + 1)

@ct.kernel
def kB(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (8,)) * 5)
"""


def _import(tmp_path, text: str):
    path = tmp_path / "edited_kernels.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location("edited_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def _edit(path, text: str):
    path.write_text(textwrap.dedent(text))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))    # seen as edited


def test_a_kernel_moved_in_its_file_after_import_compiles_its_own_body(tmp_path):
    mod, path = _import(tmp_path, BEFORE)
    kA_def = BEFORE[BEFORE.index("@ct.kernel\ndef kA"):BEFORE.index("@ct.kernel\ndef kB")]
    _edit(path, BEFORE.replace(kA_def, "") + "\n" + kA_def)          # kA now below kB
    args = np.zeros(8, np.float32), np.zeros(8, np.float32)
    text = mod.kA.mlir(*args)
    assert "addf" in text and "mulf" not in text
    assert "mulf" in mod.kB.mlir(*args)


@pytest.mark.parametrize("edit", ["body changed", "renamed"])
def test_a_kernel_edited_after_import_is_refused_with_where(tmp_path, edit):
    mod, path = _import(tmp_path, BEFORE)
    after = (BEFORE.replace("+ 1)", "+ 2)").replace("def kA", "def kZ").replace("def kB", "def kA")
             if edit == "body changed" else BEFORE.replace("def kA", "def kRenamed"))
    _edit(path, after)
    with pytest.raises(TileSyntaxError, match="has changed since the function was defined") as e:
        mod.kA.mlir(np.zeros(8, np.float32), np.zeros(8, np.float32))
    assert e.value.loc.file == str(path) and e.value.loc.line == 4
