"""The doctor's vector add, on every backend available, checked against numpy."""
from __future__ import annotations

import time

import numpy as np

from ..api.kernel import kernel
from ..frontend.api import Constant, bid, cdiv, load, store

N, TILE = 1000, 128


@kernel
def doctor_vadd(a, b, c, TILE: Constant[int]):
    i = bid(0)
    store(c, (i,), load(a, (i,), (TILE,)) + load(b, (i,), (TILE,)))


def _inputs():
    rng = np.random.default_rng(15)
    return (rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32))


def _cpu(mode: str):
    def run(a, b, c):
        from ..api.launcher import launch
        from ..launch.cpu import cpu_mode
        with cpu_mode(mode):
            launch(None, (cdiv(N, TILE),), doctor_vadd, (a, b, c, TILE))
    return run


def _interpret(a, b, c):
    from ..api.launcher import launch
    launch(None, (cdiv(N, TILE),), doctor_vadd, (a, b, c, TILE), backend="interpret")


class DeviceArray:
    """A copy of a numpy array in device memory of the current context, by
    `__cuda_array_interface__` (no torch or cupy needed)."""

    def __init__(self, drv, host: np.ndarray):
        self.drv, self.host = drv, host
        self.ptr = drv.alloc(host.nbytes)
        drv.to_device(self.ptr, np.ascontiguousarray(host))
        self.__cuda_array_interface__ = {"shape": host.shape, "typestr": host.dtype.str,
                                         "data": (self.ptr, False), "strides": None,
                                         "version": 3, "stream": None}

    def back(self):
        """Copy the device memory back into the host array, and free it."""
        out = np.empty_like(self.host, order="C")
        self.drv.to_host(out, self.ptr)
        self.host[...] = out
        self.drv.free(self.ptr)


def on_device(fn, device_id: int = 0):
    """`fn(drv)` with the GPU `device_id` current (the caller's context back after)."""
    from ..host import driver as gpu_driver
    from ..launch import gpu
    drv = gpu_driver.current()
    ctx = gpu.DeviceContext(drv.core.Device(device_id), drv)
    prev = ctx.enter()
    try:
        return fn(drv)
    finally:
        ctx.leave(prev)


def gpu_compilers() -> list[str]:
    """The GPU compilers usable here: NVRTC, and tileiras when it is installed with its
    companions (the doctor says what it lacks otherwise)."""
    from ..launch.tileiras import unusable
    return ["nvrtc"] + (["tileiras"] if unusable() is None else [])


def _gpu(device_id: int, compiler: str = "nvrtc"):
    kern = doctor_vadd.replace_hints(compiler=compiler)

    def run(a, b, c):
        from ..api.launcher import launch
        arrays = on_device(lambda drv: [DeviceArray(drv, x) for x in (a, b, c)], device_id)
        launch(None, (cdiv(N, TILE),), kern, (*arrays, TILE))
        on_device(lambda drv: [x.back() for x in arrays], device_id)   # blocking copies
    return run


FIXES = {
    "CPU fast": "the host C++ compiler could not build or run the kernel: see the error; "
                "TILEPY_CXX picks another compiler",
    "CPU faithful": "as for CPU fast (the faithful mode also needs ucontext fibers)",
    "interpreter": "report it: the interpreter needs only numpy",
    "GPU": "check the driver and the target above; `pip install 'tilepy[cu12]'` for a CUDA 12 "
           "driver; run `python -m tilepy doctor --gpu` for the whole suite",
    "GPU tileiras": "see the error; tileiras' cubins need driver r580+; launches use NVRTC "
                    "unless a kernel or TILEPY_GPU_COMPILER asks for tileiras",
}


def _fix(name: str) -> str:
    """The fix for a failed backend "GPU 0", "GPU 0 tileiras", "CPU fast", ..."""
    if not name.startswith("GPU"):
        return FIXES[name]
    return FIXES["GPU tileiras" if name.endswith("tileiras") else "GPU"]


def _tileiras_skip(drv) -> str | None:
    """Why the GPUs do not run tileiras' cubins here, or None when they can."""
    from ..api.tileiras_kernel import MIN_DRIVER
    if drv.version() < MIN_DRIVER:
        v = drv.version()
        return (f"not run: the driver supports CUDA {v // 1000}.{v % 1000 // 10}; tileiras' "
                f"cubins need r580+ (CUDA 13.0)")
    return None


def backends():
    """(name, runner) of every backend available here."""
    from ..host import driver as gpu_driver
    out = [("CPU fast", _cpu("fast")), ("CPU faithful", _cpu("faithful")),
           ("interpreter", _interpret)]
    drv = gpu_driver.current()
    if drv.available():
        compilers = [c for c in gpu_compilers() if c == "nvrtc" or _tileiras_skip(drv) is None]
        out += [(f"GPU {i}" + ("" if c == "nvrtc" else f" {c}"), _gpu(i, c))
                for i in range(drv.device_count()) for c in compilers]
    return out


def check_all(report):
    report.section("vector add (n=1000, f32) on every backend, against numpy")
    a, b = _inputs()
    for name, runner in backends():
        c = np.zeros_like(a)
        t0 = time.perf_counter()
        try:
            runner(a, b, c)
        except Exception as e:
            report.line(name, f"FAILED: {type(e).__name__}: {e}")
            report.problem(f"{name}: the vector add failed ({type(e).__name__}: {e})", _fix(name))
            continue
        ms = (time.perf_counter() - t0) * 1e3
        if np.array_equal(c, a + b):
            report.line(name, f"ok ({ms:.0f} ms, compiling or loading from the cache included)")
        else:
            bad = int(np.sum(c != a + b))
            report.line(name, f"WRONG: {bad} of {N} elements differ from numpy")
            report.problem(f"{name}: the vector add gave wrong results", _fix(name))
    from ..host import driver as gpu_driver
    drv = gpu_driver.current()
    if not drv.available():
        report.line("GPU", "not run: no GPU")
    elif "tileiras" in gpu_compilers() and _tileiras_skip(drv):
        report.line("GPU tileiras", _tileiras_skip(drv))
