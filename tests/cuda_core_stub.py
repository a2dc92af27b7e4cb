"""A recording stand-in for cuda.core and cuda.bindings.driver, for tests of the GPU launch path
without a GPU: every call into them is appended to `calls` as (name, details); anything not
modelled here raises AttributeError (and is recorded), so code that starts asking the driver
something new fails the tests that pin what a launch may do.

`install(monkeypatch, cc=(9, 0))` puts it in place of the real modules (and makes
`tilepy.launch.gpu` believe a driver is there) and returns the stub. It models only what
tilepy's launch path uses; a fuller fake driver can replace it behind the same `install`.
"""
from __future__ import annotations

import sys
import types


class CudaStub:
    def __init__(self, cc=(9, 0), driver_version=13000):
        self.calls: list[tuple] = []
        self.cc = cc
        self.driver_version = driver_version
        self.core = self._core_module()
        self.driver = self._driver_module()

    def record(self, name, *details):
        self.calls.append((name, *details))

    # ------------------------------------------------------------------ cuda.core
    def _core_module(self):
        stub = self

        class Device:
            def __init__(self, ordinal=0):
                stub.record("Device()", ordinal)
                self.device_id = ordinal

            @property
            def compute_capability(self):
                stub.record("Device.compute_capability", self.device_id)
                return stub.cc

            @property
            def default_stream(self):
                stub.record("Device.default_stream", self.device_id)
                return ("default stream", self.device_id)

            def set_current(self):
                stub.record("Device.set_current", self.device_id)

            def sync(self):
                stub.record("Device.sync", self.device_id)

            def allocate(self, size, stream=None):
                stub.record("Device.allocate", size)

        class LaunchConfig:
            def __init__(self, grid, block, **options):
                stub.record("LaunchConfig", grid, block)
                self.grid, self.block = grid, block

        class ObjectCode:
            def __init__(self, kind, data, name):
                self.kind, self.data, self.name = kind, data, name

            @classmethod
            def from_cubin(cls, data, name=""):
                stub.record("ObjectCode.from_cubin", name)
                return cls("cubin", data, name)

            @classmethod
            def from_ptx(cls, data, name=""):
                stub.record("ObjectCode.from_ptx", name)
                return cls("ptx", data, name)

            def get_kernel(self, name):
                stub.record("ObjectCode.get_kernel", name)
                return ("kernel", name)

        def launch(stream, config, kernel, *args):
            handle = stream.__cuda_stream__()[1] if hasattr(stream, "__cuda_stream__") else stream
            stub.record("launch", handle, config.grid, config.block, kernel, args)

        module = types.ModuleType("cuda.core")
        module.Device, module.LaunchConfig, module.ObjectCode = Device, LaunchConfig, ObjectCode
        module.launch = launch
        module.__getattr__ = self._unmodelled("cuda.core")
        return module

    # ------------------------------------------------------------------ cuda.bindings.driver
    def _driver_module(self):
        stub = self
        module = types.ModuleType("cuda.bindings.driver")
        module.CUresult = types.SimpleNamespace(CUDA_SUCCESS=0)

        def cuDriverGetVersion():
            stub.record("cuDriverGetVersion")
            return 0, stub.driver_version
        module.cuDriverGetVersion = cuDriverGetVersion
        module.__getattr__ = self._unmodelled("cuda.bindings.driver")
        return module

    def _unmodelled(self, where):
        def getattr_(name):
            if name.startswith("__"):
                raise AttributeError(name)
            self.record(f"{where}.{name} (not modelled)")
            raise AttributeError(f"the cuda stub does not model {where}.{name}")
        return getattr_


def install(monkeypatch, cc=(9, 0)) -> CudaStub:
    import cuda
    import cuda.bindings

    from tilepy.launch import gpu
    stub = CudaStub(cc)
    monkeypatch.setitem(sys.modules, "cuda.core", stub.core)
    monkeypatch.setattr(cuda, "core", stub.core, raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", stub.driver)
    monkeypatch.setattr(cuda.bindings, "driver", stub.driver, raising=False)
    monkeypatch.setattr(gpu, "driver_available", lambda: True)
    monkeypatch.setattr(gpu, "_KERNELS", {})
    monkeypatch.setattr(gpu, "driver_version", gpu.driver_version.__wrapped__)   # not cached
    return stub
