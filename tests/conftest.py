import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "tutorials"))     # definitions.load: a tutorial's kernels


def filecheck(text: str, checks: str):
    """Run the `filecheck` tool (LLVM FileCheck clone) on `text` with `# CHECK:` lines."""
    exe = shutil.which("filecheck") or os.path.join(os.path.dirname(sys.executable), "filecheck")
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"checks-{os.getpid()}.txt"), "w") as f:
        f.write(checks)
        path = f.name
    proc = subprocess.run([exe, path], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, f"FileCheck failed:\n{proc.stdout}{proc.stderr}\n--- input ---\n{text}"


@pytest.fixture
def check():
    return filecheck
