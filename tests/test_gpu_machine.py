"""The driver seams of the suite (tests/gpu_machine.py): "no driver" and "a GPU" whatever the
machine, `--as-gpu-machine`, the check that every test leaves the seams as it found them, and
a missing tool's skip."""
import sys

import numpy as np
import pytest

import conftest
import gpu_machine
from fake_arrays import FakeCAI
from fake_driver import FakeDriver, FakeCUDAError, cuda_array
from tilepy.cuda_c.names import kernel_symbol
from tilepy.host import driver as gpu_driver
from tilepy.launch import nvrtc


def test_no_driver_whatever_the_machine(no_driver):
    assert not gpu_driver.driver_available() and gpu_driver.current() is no_driver


def test_the_simulated_gpu_refuses_host_pointers_as_the_driver_does():
    drv = gpu_machine.simulated_gpu()
    with pytest.raises(FakeCUDAError, match="is not device memory"):
        drv.view(FakeCAI((4,)), "cai", -1)
    a = np.arange(4, dtype=np.float32)
    assert drv.view(cuda_array(a), "cai", -1).shape == (4,)
    ptr = drv.alloc(16)
    dev = type("A", (), {"__cuda_array_interface__": {"shape": (4,), "typestr": "<f4",
                                                      "data": (ptr, False), "version": 3}})()
    assert drv.view(dev, "cai", -1).ptr == ptr


def test_a_seam_left_replaced_is_named_and_put_back():
    before = gpu_machine._seams()
    gpu_driver._active.append(FakeDriver())          # as a test that never left its fake
    nvrtc.compile_cubin = lambda *a: None
    assert gpu_machine.restore(before) == ["host.driver._active", "launch.nvrtc.compile_cubin"]
    assert gpu_machine._seams() == before and nvrtc.compile_cubin is before["launch.nvrtc.compile_cubin"]


def test_a_missing_filecheck_skips(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(pytest.skip.Exception, match="filecheck is not installed"):
        conftest.filecheck("x", "# CHECK: x")


def test_as_gpu_machine():
    """What `pytest --as-gpu-machine` installs: a GPU is found, launches run on the simulated
    one (the seams are put back after)."""
    import types

    import tilepy as ct
    from tutorial_cases import CASES
    before = gpu_machine._seams()
    try:
        gpu_machine.pytest_configure(types.SimpleNamespace(getoption=lambda name: True))
        assert gpu_driver.driver_available() and gpu_driver.current().name.startswith("simulated")
        kernel, grid, args, check = CASES["vector_add"]()
        ct.launch(None, grid, kernel, tuple(cuda_array(a) if isinstance(a, np.ndarray) else a
                                            for a in args))
        check()
        assert gpu_driver.current().launches[-1].kernel == kernel_symbol("vector_add")
    finally:
        assert sorted(gpu_machine.restore(before)) == ["host.driver._active",
                                                       "launch.nvrtc.compile_cubin",
                                                       "launch.tileiras.assemble"]
