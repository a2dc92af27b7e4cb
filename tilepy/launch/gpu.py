"""Launching on an NVIDIA GPU through cuda.core (needs the driver; probed once per process).

Without a driver, cuda.core calls that load modules fail and can leave the process unable to
make any later driver call (ARCHITECTURE.md, facts), so nothing here touches the driver before
`driver_available()` said yes.
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import TileLaunchError
from .nvrtc import compile_cubin


@functools.lru_cache(maxsize=None)
def driver_available() -> bool:
    try:
        import cuda.pathfinder
        cuda.pathfinder.load_nvidia_dynamic_lib("cuda")
    except Exception:
        return False
    try:
        from cuda.bindings import driver
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, n = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and n > 0
    except Exception:
        return False


class _StreamProtocol:
    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _stream(stream, dev):
    if stream is None:
        return dev.default_stream
    if hasattr(stream, "__cuda_stream__"):
        return stream
    if hasattr(stream, "cuda_stream"):          # torch.cuda.Stream without the protocol
        return _StreamProtocol(int(stream.cuda_stream))
    if isinstance(stream, int):
        return _StreamProtocol(stream)
    raise TileLaunchError(f"cannot use a {type(stream).__name__} as a CUDA stream (pass a "
                          f"cuda.core Stream, a torch.cuda.Stream, an object with __cuda_stream__, "
                          f"an int handle or None)")


_KERNELS: dict = {}


def launch_gpu(stream, grid, ck, infos):
    if not driver_available():
        raise TileLaunchError("CUDA arrays were passed but no NVIDIA driver/GPU was found; "
                              "pass CPU arrays (numpy, torch CPU) to run on the CPU backend")
    from cuda.core import Device, LaunchConfig, ObjectCode, launch
    dev_ids = {i.device_id for i in infos if hasattr(i, "device_id") and hasattr(i, "ptr")}
    if len(dev_ids) > 1:
        raise TileLaunchError(f"arrays are on different GPUs {sorted(dev_ids)}")
    dev = Device(dev_ids.pop() if dev_ids else 0)
    dev.set_current()
    arch = f"sm_{dev.arch}"
    key = (ck.key, arch)
    kern = _KERNELS.get(key)
    if kern is None:
        cubin = compile_cubin(ck.compile_source(), arch, ck.name)
        kern = ObjectCode.from_cubin(cubin.data, name=ck.name).get_kernel(ck.name)
        _KERNELS[key] = kern
    config = LaunchConfig(grid=grid, block=(ck.emitted.nt, 1, 1))
    launch(_stream(stream, dev), config, kern, *_gpu_args(ck.params, infos))


def _gpu_args(params, infos) -> list:
    from .launcher import pack_args
    return [_np_scalar(v) for v in pack_args(params, infos)]


def _np_scalar(v):
    import ctypes
    table = {ctypes.c_int32: np.int32, ctypes.c_int64: np.int64, ctypes.c_int8: np.int8,
             ctypes.c_int16: np.int16, ctypes.c_uint8: np.uint8, ctypes.c_uint16: np.uint16,
             ctypes.c_uint32: np.uint32, ctypes.c_uint64: np.uint64, ctypes.c_float: np.float32,
             ctypes.c_double: np.float64, ctypes.c_bool: np.bool_}
    if isinstance(v, ctypes.c_void_p):
        return int(v.value or 0)
    return table[type(v)](v.value)
