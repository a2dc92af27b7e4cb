"""Is there an NVIDIA driver with a GPU? Asked once per process, before any other driver call
(launch/gpu.py says why), by argument intake (a CUDA array interface is read differently
without a driver) and by the GPU launch path."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def driver_available() -> bool:
    """Is there a loadable NVIDIA driver with at least one GPU? Asked once per process."""
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
