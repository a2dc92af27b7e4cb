"""The driver seams of the test suite, as a pytest plugin (tests/conftest.py loads it).

A test never depends on whether the machine it runs on has a GPU (issue 26: tests that assumed
"no driver" failed on a GPU machine). It arranges what it needs:
- `no_driver` (fixture): no NVIDIA driver, whatever the machine (`NoDriver` in the seam).
- `FakeDriver` (tests/fake_driver.py): GPUs whose launches run the CPU build of each kernel.
- `needs_real_gpu` (mark): the few tests of the real cuda.core path; skipped without a GPU.

`pytest --as-gpu-machine` runs the suite as on a GPU machine: the driver seam's base is then
`SimulatedGpu`, a fake driver that reports a GPU and, like the real driver, refuses pointers
that are not device memory (the fake CUDA arrays of tests/fake_arrays.py), so a test that
silently needs "no driver" fails here as it would there. Both ways must pass.

Every test must leave the seams as it found them (a fake driver left in place broke every later
GPU test of its xdist worker on that machine): `_seams_restored` checks it after each test,
fails the test that did not, and puts them back.
"""
from __future__ import annotations

import pytest

from tilepy.host import driver as gpu_driver
from tilepy.launch import nvrtc, tileiras

OPTION = "--as-gpu-machine"


class NoDriver(gpu_driver.CoreDriver):
    """The real driver seam as on a machine without an NVIDIA driver: the probe says no (what
    needs no driver, cuda.core's DLPack reader, still works)."""
    name = "no driver (tests)"

    def available(self) -> bool:
        return False


def simulated_gpu():
    """The base driver of `pytest --as-gpu-machine` (see the module docstring)."""
    from fake_driver import CudaArray, FakeCUDAError, FakeDriver

    class SimulatedGpu(FakeDriver):
        name = "simulated GPU machine (tests --as-gpu-machine)"

        def view(self, obj, source: str, stream_ptr: int):
            ptr = obj.__cuda_array_interface__["data"][0] if source == "cai" else None
            if ptr is not None and not isinstance(obj, CudaArray) and ptr not in self.memory:
                raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: {ptr:#x} is not device memory "
                                    f"(cuPointerGetAttribute, as the real driver answers)")
            return super().view(obj, source, stream_ptr)
    return SimulatedGpu(devices=1)


def needs_real_gpu(reason: str = "needs a real NVIDIA GPU and driver"):
    """Skip unless the real driver has a GPU (tests of cuda.core itself, torch/cupy CUDA)."""
    return pytest.mark.skipif(not gpu_driver.probe(), reason=reason)


@pytest.fixture
def no_driver():
    with gpu_driver.use(NoDriver()) as drv:
        yield drv


# ----------------------------------------------------------------------------- the plugin
def pytest_addoption(parser):
    parser.addoption(OPTION, action="store_true",
                     help="run as on a GPU machine: the driver probe says yes and launches run "
                          "on a strict fake driver (tests/gpu_machine.py)")


def pytest_configure(config):
    if config.getoption(OPTION):
        base = simulated_gpu()
        base._spy = spy = __import__("fake_driver")._CompileSpy(base)
        spy.install()
        gpu_driver._active[0] = base


def pytest_report_header(config):
    if config.getoption(OPTION):
        return f"driver seam: {gpu_driver.current().name}"


def _seams():
    return {"host.driver._active": list(gpu_driver._active),
            "launch.nvrtc.compile_cubin": nvrtc.compile_cubin,
            "launch.tileiras.assemble": tileiras.assemble}


def restore(before: dict) -> list[str]:
    """The seams not as they were in `before` (put back now)."""
    after = _seams()
    left = [name for name in before if after[name] != before[name]]
    gpu_driver._active[:] = before["host.driver._active"]
    nvrtc.compile_cubin = before["launch.nvrtc.compile_cubin"]
    tileiras.assemble = before["launch.tileiras.assemble"]
    return left


@pytest.fixture(autouse=True)
def _seams_restored():
    before = _seams()
    yield
    left = restore(before)
    if left:
        pytest.fail(f"the test left seams replaced: {', '.join(left)} (restore what a test "
                    f"replaces: `with FakeDriver():`, monkeypatch)", pytrace=False)
