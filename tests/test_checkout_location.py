"""The tests hold wherever the repository lives: `git clone` names the folder `tilepy`, so a
path test that looks for "/tilepy/" to find tilepy's own frames would also find the test file
(80 failures once). The tests that reason about paths run here in a copy named `tilepy`."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PATH_TESTS = ["tests/test_errors.py", "tests/test_error_display.py"]


def test_the_path_tests_pass_in_a_checkout_named_tilepy(tmp_path):
    clone = tmp_path / "tilepy"
    skip = shutil.ignore_patterns("__pycache__", ".pytest_cache", "figures", "*.so")
    for part in ("tilepy", "tests", "tutorials"):
        shutil.copytree(os.path.join(ROOT, part), clone / part, ignore=skip)
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), clone)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "-W", "error", *PATH_TESTS], cwd=clone, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(clone)}, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "warning" not in proc.stdout, proc.stdout[-2000:]
