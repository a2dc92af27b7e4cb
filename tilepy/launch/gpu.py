"""Launching on an NVIDIA GPU through cuda.core (needs the driver; probed once per process).

Without a driver, cuda.core calls that load modules fail and can leave the process unable to
make any later driver call (../shared/ARCHITECTURE.md, facts; /work/notes: the get_kernel
hang), so nothing here touches the driver before `driver_available()` said yes.

Target: the device's exact arch as a cubin when NVRTC knows it; a device newer than NVRTC gets
PTX for the newest arch NVRTC has, which the driver JIT-compiles (only if the driver is at least
as new as NVRTC, or it rejects the PTX). A driver of an older CUDA major than NVRTC cannot load
NVRTC's output at all: that asks for the `cu12` extra.
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from ..errors import TileLaunchError, TileValueError
from ..host.driver import driver_available  # noqa: F401  (also imported from here)


@functools.lru_cache(maxsize=None)
def driver_version() -> int:
    """CUDA version the driver supports, e.g. 12080 for 12.8 (needs the driver)."""
    from cuda.bindings import driver
    err, v = driver.cuDriverGetVersion()
    if err != driver.CUresult.CUDA_SUCCESS:
        raise TileLaunchError(f"cuDriverGetVersion failed: {err}")
    return int(v)


def _ver(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def choose_target(cc: tuple[int, int], driver: int, nvrtc: tuple[int, int],
                  supported: tuple[int, ...]) -> str:
    """The NVRTC target for a device of compute capability `cc`: "sm_XX" (a cubin for that exact
    arch) or "compute_XX" (PTX for the driver to JIT); TileLaunchError when nothing loads."""
    nv = nvrtc[0] * 1000 + nvrtc[1] * 10
    if driver // 1000 < nvrtc[0]:
        raise TileLaunchError(
            f"the NVIDIA driver supports CUDA {_ver(driver)}, older than tilepy's NVRTC "
            f"(CUDA {_ver(nv)}), so it cannot load what NVRTC compiles: install the CUDA "
            f"{driver // 1000} wheels (pip install 'tilepy[cu{driver // 1000}]') or update the driver")
    arch = cc[0] * 10 + cc[1]
    if arch in supported:
        return f"sm_{arch}"
    older = [a for a in supported if a < arch]
    if not older:
        raise TileLaunchError(f"this GPU (sm_{arch}) is older than the oldest arch NVRTC "
                              f"{nvrtc[0]}.{nvrtc[1]} supports (sm_{min(supported)}); use the "
                              f"CUDA 12 wheels (pip install 'tilepy[cu12]')")
    if driver < nv:
        raise TileLaunchError(
            f"this GPU (sm_{arch}) is newer than NVRTC {nvrtc[0]}.{nvrtc[1]} knows, and the driver "
            f"(CUDA {_ver(driver)}) is too old to JIT its PTX: update tilepy's CUDA wheels")
    return f"compute_{max(older)}"


# ----------------------------------------------------------------------------- streams
class StreamHandle:
    """A foreign stream handle in the `__cuda_stream__` protocol (version 0)."""
    __slots__ = ("handle",)

    def __init__(self, handle: int):
        self.handle = int(handle)

    def __cuda_stream__(self):
        return (0, self.handle)


def is_cuda_stream(stream) -> bool:
    """Does `stream` name a CUDA stream (as opposed to None)?"""
    return stream is not None and (hasattr(stream, "__cuda_stream__") or hasattr(stream, "cuda_stream")
                                   or isinstance(stream, (int, np.integer)) or hasattr(stream, "ptr"))


def resolve_stream(stream, infos, dev):
    """The stream to launch on: the argument (a cuda.core Stream, anything with
    `__cuda_stream__`, a torch/cupy stream, an int handle), else torch's current stream when
    any argument is a torch tensor, else the device's default stream."""
    if stream is None:
        if any(getattr(i, "source", "") == "torch" for i in infos):
            torch = sys.modules["torch"]
            return StreamHandle(torch.cuda.current_stream(dev.device_id).cuda_stream)
        return dev.default_stream
    if hasattr(stream, "__cuda_stream__"):
        return stream
    if hasattr(stream, "cuda_stream"):           # torch.cuda.Stream without the protocol
        return StreamHandle(stream.cuda_stream)
    if hasattr(stream, "ptr") and isinstance(getattr(stream, "ptr"), int):   # cupy.cuda.Stream
        return StreamHandle(stream.ptr)
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return StreamHandle(int(stream))
    raise TileValueError(f"cannot use a {type(stream).__name__} as a CUDA stream (pass a cuda.core "
                         f"Stream, a torch.cuda.Stream, an object with __cuda_stream__, an int "
                         f"handle, or None)")


# ----------------------------------------------------------------------------- launch
_KERNELS: dict = {}


def device_target(dev) -> str:
    from . import toolchain
    tc = toolchain.info()
    major, minor = (int(x) for x in tc.nvrtc_version.split("."))
    return choose_target(tuple(dev.compute_capability), driver_version(), (major, minor),
                         tc.supported_archs)


def loaded_kernel(ck, dev):
    """The cuda.core Kernel of `ck` on `dev`: compiled for the device's arch, loaded once."""
    key = (ck.key, dev.device_id)
    kern = _KERNELS.get(key)
    if kern is None:
        from cuda.core import ObjectCode

        target = device_target(dev)
        code = ck.binary(target)             # the compiled kernel's GPU code (api/compiler.py)
        if code.kind == "cubin":
            oc = ObjectCode.from_cubin(code.data, name=ck.name)
        else:
            oc = ObjectCode.from_ptx(code.data, name=ck.name)
        kern = _KERNELS[key] = oc.get_kernel(ck.name)
    return kern


def gpu_arg(v):
    """A packed ctypes value as cuda.core packs it: pointers as ints, scalars at exact width."""
    import ctypes
    if isinstance(v, ctypes.c_void_p):
        return int(v.value or 0)
    return NP_SCALAR[type(v)](v.value)


def _np_table():
    import ctypes
    return {ctypes.c_int32: np.int32, ctypes.c_int64: np.int64, ctypes.c_int8: np.int8,
            ctypes.c_int16: np.int16, ctypes.c_uint8: np.uint8, ctypes.c_uint16: np.uint16,
            ctypes.c_uint32: np.uint32, ctypes.c_uint64: np.uint64, ctypes.c_float: np.float32,
            ctypes.c_double: np.float64, ctypes.c_bool: np.bool_}


NP_SCALAR = _np_table()
