"""The disk index of traced kernels (tilepy/launch/index.py, frontend/identity.py): a new process
reuses a trace only when nothing it read has changed. Each case writes a kernel module to a temp
dir, compiles it in a child process, edits one thing, and compiles again: the child reports
whether it traced (tilepy's tracer module loaded) and what C++ it got."""
import enum
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilepy as ct
from tilepy.api.compiler import compile_for_args
from tilepy.frontend.identity import Deps, fingerprint
from tilepy.api import index
from tilepy.host.intake import infos_for
from tilepy.launch import cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import kmod
args = kmod.ARGS() if hasattr(kmod, "ARGS") else (np.zeros(64, np.float32), np.zeros(64, np.float32))
src = kmod.k.cuda_source(*args)
print(json.dumps({"traced": "tilepy.frontend.tracer" in sys.modules, "source": src,
                  "mlir": kmod.k.mlir(*args)}))
"""

BASE = """
import tilepy as ct
{extra}

@ct.kernel
def k(a, b):
    t = ct.load(a, (0,), (16,))
    ct.store(b, (0,), {expr})
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(d))
    return d


def run(moddir) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(moddir)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write(moddir, text, name="kmod.py"):
    path = moddir / name
    path.write_text(textwrap.dedent(text))
    st = path.stat()                     # a new mtime even within the file system's granularity
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    for d in moddir.rglob("__pycache__"):
        for f in d.iterdir():
            f.unlink()


def kernel_module(moddir, expr, extra=""):
    write(moddir, BASE.format(expr=expr, extra=textwrap.dedent(extra).strip()))


def second_run_is_a_hit(moddir) -> dict:
    first = run(moddir)
    assert first["traced"]
    again = run(moddir)
    assert not again["traced"], "the second process should have found the trace on disk"
    assert again["source"] == first["source"] and again["mlir"] == first["mlir"]
    return first


def edited_run_recompiles(moddir, before: dict) -> dict:
    after = run(moddir)
    assert after["traced"], "an edit must not be served from the index"
    assert after["source"] != before["source"]
    return after


# ----------------------------------------------------------------------------- hits
def test_a_new_process_reuses_the_trace(cache_dir, tmp_path):
    kernel_module(tmp_path, "t + 1.0")
    second_run_is_a_hit(tmp_path)
    assert list((cache_dir / "spec").rglob("*")), "no index entry was written"


def test_cache_off_writes_no_index(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    kernel_module(tmp_path, "t + 1.0")
    assert run(tmp_path)["traced"] and run(tmp_path)["traced"]


# ----------------------------------------------------------------------------- staleness
def test_editing_the_kernel_recompiles(cache_dir, tmp_path):
    kernel_module(tmp_path, "t + 1.0")
    before = second_run_is_a_hit(tmp_path)
    kernel_module(tmp_path, "t + 2.0")
    after = edited_run_recompiles(tmp_path, before)
    assert "2.0" in after["source"] or "0x1p+1" in after["source"] or "2.0f" in after["source"]


def test_editing_a_helper_in_another_module_recompiles(cache_dir, tmp_path):
    write(tmp_path, "def bump(x):\n    return x + 1.0\n", "helpers.py")
    kernel_module(tmp_path, "helpers.bump(t)", "import helpers")
    before = second_run_is_a_hit(tmp_path)
    write(tmp_path, "def bump(x):\n    return x * 3.0\n", "helpers.py")
    edited_run_recompiles(tmp_path, before)


def test_changing_a_global_recompiles(cache_dir, tmp_path):
    # the same source text, another value: the global is set when the module is imported
    kernel_module(tmp_path, "t + SCALE", "import os\nSCALE = float(os.environ.get('K_SCALE', '1.5'))")
    before = second_run_is_a_hit(tmp_path)
    os.environ["K_SCALE"] = "2.5"
    try:
        edited_run_recompiles(tmp_path, before)
    finally:
        del os.environ["K_SCALE"]
    assert not run(tmp_path)["traced"]                  # the first value's trace is still there


def test_a_global_read_through_a_module_attribute_is_a_dependency(cache_dir, tmp_path):
    write(tmp_path, "import os\nTILE = int(os.environ.get('K_TILE', '16'))\n", "cfg.py")
    write(tmp_path, """
        import numpy as np
        import tilepy as ct
        import cfg

        @ct.kernel
        def k(a, b):
            ct.store(b, (0,), ct.load(a, (0,), (cfg.TILE,)))
        """)
    before = second_run_is_a_hit(tmp_path)
    os.environ["K_TILE"] = "32"          # cfg.py's text is unchanged: only the value differs
    try:
        edited_run_recompiles(tmp_path, before)
    finally:
        del os.environ["K_TILE"]


def test_closure_values_are_dependencies_and_variants_coexist(cache_dir, tmp_path):
    write(tmp_path, """
        import os
        import tilepy as ct

        def make(n):
            @ct.kernel
            def k(a, b):
                ct.store(b, (0,), ct.load(a, (0,), (16,)) * n)
            return k

        k = make(float(os.environ.get("K_N", "2.0")))
        """)
    two = second_run_is_a_hit(tmp_path)
    os.environ["K_N"] = "3.0"
    try:
        three = edited_run_recompiles(tmp_path, two)
        assert not run(tmp_path)["traced"]       # both variants are now on disk
    finally:
        del os.environ["K_N"]
    again = run(tmp_path)
    assert not again["traced"] and again["source"] == two["source"] != three["source"]


def test_a_helper_default_is_a_dependency(cache_dir, tmp_path):
    write(tmp_path, "import os\nD = float(os.environ.get('K_D', '1.0'))\n"
                    "def bump(x, d=D):\n    return x + d\n", "helpers.py")
    kernel_module(tmp_path, "helpers.bump(t)", "import helpers")
    before = second_run_is_a_hit(tmp_path)
    os.environ["K_D"] = "4.0"
    try:
        edited_run_recompiles(tmp_path, before)
    finally:
        del os.environ["K_D"]


def test_kernel_options_are_part_of_the_identity(cache_dir, tmp_path):
    write(tmp_path, """
        import os
        import tilepy as ct

        def body(a, b):
            ct.store(b, (0,), ct.load(a, (0,), (64,)) + 1.0)

        k = ct.kernel(body, num_worker_warps=int(os.environ.get("K_W", "4")))
        """)
    second_run_is_a_hit(tmp_path)
    os.environ["K_W"] = "2"              # (the emitted C++ does not depend on it yet)
    try:
        assert run(tmp_path)["traced"]
    finally:
        del os.environ["K_W"]


# ----------------------------------------------------------------------------- not persisted
def test_an_unfingerprintable_global_disables_the_index(cache_dir, tmp_path):
    kernel_module(tmp_path, "t + CFG.scale", """
        class Config:
            scale = 1.0
        CFG = Config()
        """)
    assert run(tmp_path)["traced"] and run(tmp_path)["traced"]
    assert not list((cache_dir / "spec").rglob("*.*")) and not any(
        p.is_file() for p in (cache_dir / "spec").rglob("*"))


def test_static_eval_calling_python_code_disables_the_index(cache_dir, tmp_path):
    kernel_module(tmp_path, "t + ct.static_eval(half(3.0))", """
        def half(x):
            return x / 2
        """)
    assert run(tmp_path)["traced"] and run(tmp_path)["traced"]


def test_static_eval_of_plain_values_is_persisted(cache_dir, tmp_path):
    kernel_module(tmp_path, "t + ct.static_eval(SCALE * 2)", "SCALE = 1.5")
    second_run_is_a_hit(tmp_path)


# ----------------------------------------------------------------------------- in process
@ct.kernel
def _double(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (32,)) * 2.0)


@pytest.fixture
def fresh(cache_dir):
    """An empty disk cache, and _double compiled in no earlier test of this process."""
    _double.cache.clear()
    _double.__dict__.pop("_tp_plans", None)
    return cache_dir


def test_a_loaded_kernel_is_the_traced_one(fresh):
    a = np.arange(32, dtype=np.float32)
    b = np.zeros(32, np.float32)
    traced = compile_for_args(_double, (a, b))
    _double.cache.clear()
    loaded = compile_for_args(_double, (a, b))
    assert loaded is not traced and loaded._module is None          # from the disk index
    assert loaded.mlir == traced.mlir and loaded.cuda_source == traced.cuda_source
    assert loaded.compile_source() == traced.compile_source()
    assert str(loaded.module) == str(traced.module)                  # traced again on demand
    _double.cache.clear()
    ct.launch(None, (1,), _double, (a, b))                           # launches from the index
    np.testing.assert_array_equal(b, a * 2)


def test_a_corrupt_index_entry_is_a_miss(fresh):
    a = np.zeros(32, np.float32)
    compile_for_args(_double, (a, a.copy()))
    (entry,) = [p for p in (fresh / "spec").rglob("*") if p.is_file()]
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])
    _double.cache.clear()
    ck = compile_for_args(_double, (a, a.copy()))
    assert ck._module is not None                                    # traced, not loaded
    _double.cache.clear()
    assert compile_for_args(_double, (a, a.copy()))._module is None  # and stored again


def test_a_record_of_another_format_is_a_miss(fresh):
    a = np.zeros(32, np.float32)
    key, params = _double.specialize(infos_for((a, a)))
    slot = index.slot_key(_double, params)
    cache.put(index.KIND, slot, json.dumps([{"deps": [], "name": 3}]).encode(), {})
    _double.cache.clear()
    assert compile_for_args(_double, (a, a.copy()))._module is not None


# ----------------------------------------------------------------------------- fingerprints
class _Color(enum.Enum):
    RED = 1


def test_fingerprints_tell_apart_what_a_trace_can_tell_apart():
    assert fingerprint(0.0) != fingerprint(-0.0)
    assert fingerprint(1) != fingerprint(True) != fingerprint(1.0)
    assert fingerprint((1, 2)) != fingerprint([1, 2])
    assert fingerprint({"a": 1}) == fingerprint({"a": 1}) != fingerprint({"a": 2})
    assert fingerprint(ct.float16) != fingerprint(ct.bfloat16)
    assert fingerprint(np.float32(1)) != fingerprint(np.float64(1))
    assert fingerprint(ct.PaddingMode.ZERO) != fingerprint(ct.PaddingMode.NAN)
    assert fingerprint(_Color.RED) is not None and fingerprint(math) == "module:math"
    assert fingerprint(math.ceil) is not None and fingerprint(ct.load) is not None
    assert fingerprint(object()) is None and fingerprint((1, object())) is None
    assert fingerprint(np.zeros(3)) is None
    assert fingerprint(lambda: 0) is not None           # source file, line, defaults
    assert fingerprint(lambda x=object(): 0) is None    # a default it cannot fingerprint


def test_deps_hold_only_while_the_values_are_the_same():
    g = {"X": 1}
    exec("def f():\n    return X\n", g)            # noqa: S102  (a function with globals)
    f = g["f"]
    d = Deps(f)
    d.env(f, "X", 1)
    d.env(f, "len", len)
    assert d.why is None and Deps.hold(d.items, f)
    g["X"] = 2
    assert not Deps.hold(d.items, f)
    g["X"] = 1
    g["len"] = max                                     # a global now shadows the builtin
    assert not Deps.hold(d.items, f)
    d.env(lambda: 0, "Y", 1)                           # a function it did not reach
    assert d.why is not None
