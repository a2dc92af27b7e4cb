"""tests/conftest.py's CPU-time budget: a test over it fails the run and is named at the end; a
test marked `budget(seconds)` may take that long (run here in a pytest of its own)."""
import ast
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

BURN = """
import time
import pytest

def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_over_the_default():
    burn(0.4)

@pytest.mark.budget(5)
def test_marked_longer():
    burn(0.4)
"""


def conftest_and_its_modules() -> list[str]:
    """conftest.py and the modules of this folder it imports or loads as plugins."""
    with open(os.path.join(HERE, "conftest.py")) as f:
        tree = ast.parse(f.read())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    names |= {e.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
              and any(getattr(t, "id", "") == "pytest_plugins" for t in n.targets)
              for e in ast.walk(n.value) if isinstance(e, ast.Constant)}
    return ["conftest.py"] + sorted(f"{m}.py" for m in names
                                    if os.path.isfile(os.path.join(HERE, f"{m}.py")))


def test_a_test_over_its_budget_fails_the_run(tmp_path):
    for name in conftest_and_its_modules():
        shutil.copy(os.path.join(HERE, name), tmp_path)
    (tmp_path / "test_burn.py").write_text(BURN)
    shutil.copy(os.path.join(os.path.dirname(HERE), "pyproject.toml"), tmp_path)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "test_burn.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TILEPY_TEST_BUDGET": "0.2"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout, proc.stdout
    assert "tests over their CPU-time budget" in proc.stderr, proc.stderr
    assert "test_burn.py::test_over_the_default: " in proc.stderr
    assert "test_marked_longer" not in proc.stderr, proc.stderr
