import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "tutorials"))     # definitions.load: a tutorial's kernels
pytest_plugins = ["gpu_machine"]      # the driver seams: no_driver, --as-gpu-machine, their check


def filecheck(text: str, checks: str):
    """Run the `filecheck` tool (LLVM FileCheck clone) on `text` with `# CHECK:` lines."""
    exe = shutil.which("filecheck") or os.path.join(os.path.dirname(sys.executable), "filecheck")
    if not os.path.exists(exe):                   # (a GPU machine's image lacks it)
        pytest.skip("filecheck is not installed (pip install filecheck)")
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"checks-{os.getpid()}.txt"), "w") as f:
        f.write(checks)
        path = f.name
    proc = subprocess.run([exe, path], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, f"FileCheck failed:\n{proc.stdout}{proc.stderr}\n--- input ---\n{text}"


@pytest.fixture
def check():
    return filecheck


# ----------------------------------------------------------------------------- ABI coverage
# Every compile of the session records its parameter-ABI classes (abi_coverage.py); the run fails
# when one is not among those tests/test_gpu_abi.py checks against NVRTC's cubins. With xdist,
# each worker hands its record to the controller (workeroutput), which checks the union.
_ABI = None
_ABI_SEEN: dict = {}


def pytest_configure(config):
    global _ABI
    from abi_coverage import Recorder
    _ABI = Recorder()
    _ABI.install()


def pytest_testnodedown(node, error):
    for c, name in getattr(node, "workeroutput", {}).get("abi_classes", []):
        _ABI_SEEN.setdefault(tuple(c), name)


def pytest_sessionfinish(session, exitstatus):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:                       # an xdist worker: report to the controller
        workeroutput["abi_classes"] = [[list(c), n] for c, n in _ABI.seen.items()]
        return
    seen = {**_ABI.seen, **_ABI_SEEN}
    problems = _ABI.uncovered(seen)
    if problems:
        sys.stderr.write("\nparameter ABI classes that tests/test_gpu_abi.py does not check (add "
                         "an argument of that kind to its `every_parameter` kernel and the class "
                         "to tests/abi_coverage.py COVERED):\n  " + "\n  ".join(problems) + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
