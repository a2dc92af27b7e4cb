"""The first `tilepy.launch` call of a process goes through a lazy stand-in: it must take the
same arguments as the real launch (backend= included)."""
import os
import subprocess
import sys

CODE = """
import numpy as np, tilepy as ct

@ct.kernel
def double(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (8,)) * 2)

x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
ct.launch(None, (1,), double, (x, y), backend="interpret")
assert (y == 2 * x).all()
print("OK")
"""


def test_the_first_launch_takes_backend(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = tmp_path / "first_launch.py"           # kernels need a source file
    script.write_text(CODE)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "OK", p.stderr[-2000:]
