"""The tutorials run as a newcomer runs them, each checking its own result against numpy."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = sorted(glob.glob(os.path.join(ROOT, "tutorials", "[0-9]*.py")))


@pytest.mark.parametrize("path", TUTORIALS, ids=[os.path.basename(p) for p in TUTORIALS])
def test_tutorial_runs(path):
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "matches numpy" in proc.stdout
    assert "cuda_tile.module" in proc.stdout      # each tutorial prints its Tile IR


def test_there_are_tutorials():
    assert len(TUTORIALS) >= 3
