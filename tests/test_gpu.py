"""Real-GPU tests: skipped cleanly when no NVIDIA driver/GPU is present."""
import os
import subprocess
import sys

import pytest

import tilepy as ct
from gpu_machine import needs_real_gpu

pytestmark = pytest.mark.gpu


PROBE = "from tilepy.launch.gpu import driver_available as d; print(d(), d())"
ORACLE = """
import ctypes
try:
    lib = ctypes.CDLL("libcuda.so.1")
except OSError:
    print(False)
else:
    n = ctypes.c_int(0)
    print(lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0)
"""


def _python(code: str) -> subprocess.CompletedProcess:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)


def test_driver_probe_is_safe_without_a_driver():
    """In a fresh process the probe neither hangs nor raises, answers the same twice, and agrees
    with asking libcuda directly through ctypes (no driver here: False; on a GPU machine: True)."""
    probe, oracle = _python(PROBE), _python(ORACLE)
    assert probe.returncode == 0, probe.stderr[-2000:]
    first, second = probe.stdout.split()
    assert first == second == oracle.stdout.strip(), (probe.stdout, oracle.stdout, oracle.stderr)


@needs_real_gpu()
def test_vector_add_on_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")

    @ct.kernel
    def vadd(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
    a = torch.randn(10_000, device="cuda")
    b = torch.randn(10_000, device="cuda")
    c = torch.zeros_like(a)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(10_000, 256),), vadd, (a, b, c, 256))
    torch.cuda.synchronize()
    assert torch.allclose(c, a + b)
