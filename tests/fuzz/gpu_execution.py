"""A fuzz execution on the GPU (a row for runner.run_batch's executions): the batch's cubin for
the device's target, loaded through tilepy's GPU path; each allocation copied to the device,
the kernel launched with the pointers moved into device memory, the allocations copied back.
Used by `python -m tilepy doctor --gpu` (benchmarks/gpu.py); runs on the fake driver too.

The launch passes the kernel's dynamic shared memory for the device's target, as tilepy's own
launches do (issue 26: without it every shared-memory access of the batch was an illegal address
on an H200; the faithful CPU mode reports a write past the launch's shared memory)."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

from tilepy.host import driver as gpu_driver
from tilepy.launch import gpu, nvrtc


@dataclass(frozen=True)
class GpuExecution:
    device_id: int = 0
    device_memory = True

    def build(self, cm):
        drv = gpu_driver.current()
        dev = drv.core.Device(self.device_id)
        ctx = gpu.DeviceContext(dev, drv)
        prev = ctx.enter()
        try:
            target = gpu.device_target(dev)
            code = nvrtc.compile_cubin(cm.compile_source(), target, cm.emitted.name)
            kernel = gpu.load_code(code.kind, code.data, cm.symbol, cm.name, drv)
            gpu.allow_dynamic_smem(kernel, dev, cm.emitted, target, drv)
            return kernel, ctx, cm.emitted.nt, cm.emitted.smem_for(target)
        finally:
            ctx.leave(prev)

    def run(self, lib, grid, values, bases):
        kernel, ctx, nt, smem = lib
        drv = ctx.drv
        prev = ctx.enter()
        try:
            dev_ptrs = [drv.alloc(b.nbytes) for b in bases]
            for p, b in zip(dev_ptrs, bases):
                drv.to_device(p, b)
            args = [_moved(v, bases, dev_ptrs) for v in values]
            stream = ctx.dev.default_stream
            drv.core.launch(stream, drv.core.LaunchConfig(grid=grid, block=(nt, 1, 1),
                                                          shmem_size=smem), kernel, *args)
            stream.sync()
            for p, b in zip(dev_ptrs, bases):
                drv.to_host(b, p)
                drv.free(p)
        finally:
            ctx.leave(prev)


def _moved(v, bases, dev_ptrs):
    """A ctypes argument as cuda.core's launch takes it, host pointers moved to the device."""
    import numpy as np
    if isinstance(v, ctypes.c_void_p):
        ptr = v.value or 0
        for b, d in zip(bases, dev_ptrs):
            lo = b.__array_interface__["data"][0]
            if lo <= ptr <= lo + b.nbytes:
                return d + (ptr - lo)
        raise ValueError(f"pointer {ptr:#x} is in no allocation of the batch")
    return np.int32(v.value)
