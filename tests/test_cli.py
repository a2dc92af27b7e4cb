"""`python -m tilepy`: help when called alone; `cache list` groups the entries of one kernel,
shows the most recently used kernels first, at most --limit of them, filtered by --kernel."""
import io
import os
import subprocess
import sys

import pytest

from tilepy import __main__ as cli
from tilepy.launch import cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def filled(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    for i, (kind, name, extra) in enumerate([
            ("spec", "vector_add", {}), ("cpu", "vector_add", {"mode": "fast"}),
            ("cubin", "vector_add", {"arch": "sm_90"}), ("spec", "matmul", {}),
            ("cubin", "matmul", {"arch": "sm_80"}), ("cpu", "softmax", {"mode": "faithful"})]):
        path = cache.put(kind, f"{i:02d}" * 20, b"x" * 100, {"kind": kind, "name": name, **extra})
        os.utime(path, (1000 + i, 1000 + i))           # softmax used last, vector_add first
    return tmp_path / "cache"


def _list(*args) -> str:
    out = io.StringIO()
    assert cli.main(["cache", "list", *args], out) == 0
    return out.getvalue()


def test_python_m_tilepy_alone_prints_help():
    proc = subprocess.run([sys.executable, "-m", "tilepy"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m tilepy") and "cache" in proc.stdout
    out = io.StringIO()
    assert cli.main(["cache"], out) == 0 and "list" in out.getvalue() and "clear" in out.getvalue()


def test_cache_list_groups_entries_by_kernel_most_recent_first(filled):
    text = _list()
    heads = [line.split(":")[0] for line in text.splitlines() if line.endswith("ago")
             and not line.startswith(" ")]
    assert heads == ["softmax", "matmul", "vector_add"], text
    block = text.split("vector_add: 3 entries")[1].splitlines()[1:4]
    assert [b.split()[0] for b in block] == ["cubin", "cpu", "spec"], text
    assert "vector_add sm_90" in text and "softmax faithful" in text
    assert "6 entries" in text


def test_cache_list_limit_and_kernel_filter(filled):
    text = _list("--limit", "1")
    assert "softmax: 1 entry" in text and "matmul" not in text
    assert "showing 1 of 3 kernels" in text
    text = _list("--kernel", "vec")
    assert "vector_add: 3 entries" in text and "matmul" not in text and "softmax" not in text
    last = text.strip().splitlines()[-1]
    assert last.startswith("3 entries, ") and last.endswith(" B (of 6 in the cache)"), text
    assert "matmul: 2 entries" in _list("--kernel", "m*l")
    assert "no entries for kernels matching 'nothing'" in _list("--kernel", "nothing")


def test_cache_clear_of_a_folder_that_does_not_exist_says_so(tmp_path, monkeypatch):
    missing = tmp_path / "no-such-cache"
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(missing))
    out = io.StringIO()
    assert cli.main(["cache", "clear"], out) == 0
    assert out.getvalue() == f"{missing} does not exist: nothing to clear\n"
    assert not missing.exists()


def test_the_suite_compiles_into_a_cache_of_its_own():
    """tests/conftest.py: the user's cache stays as it was (`cache list` shows no test kernel);
    the process that started the run made a private temporary folder, and the processes the
    tests start (here `python -m tilepy cache dir`) inherit it."""
    import tempfile

    from tilepy.settings import _default_cache_dir
    mine = cache.cache_dir()
    if not os.environ.get("TILEPY_TEST_CACHE_DIR"):
        assert os.path.basename(mine).startswith("tilepy-test-cache-"), mine
        assert os.path.dirname(mine) == tempfile.gettempdir(), mine
    assert mine != _default_cache_dir()
    proc = subprocess.run([sys.executable, "-m", "tilepy", "cache", "dir"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=60)
    assert proc.stdout.strip() == mine, proc.stdout + proc.stderr
