"""Argument intake: anything array-like becomes an `ArrayInfo` (pointer, shape, strides, dtype).

CPU arrays come through numpy's `__array_interface__` or DLPack (torch CPU tensors and other
DLPack producers are viewed as numpy arrays without a copy). CUDA arrays are recognized by
`__cuda_array_interface__` or a CUDA DLPack device.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TileTypeError, TileValueError
from ..types import DType
from ..types import dtype as D

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13


@dataclass
class ArrayInfo:
    obj: object                    # the caller's object (kept alive during the launch)
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]       # in elements
    dtype: DType
    device: str                    # "cpu" or "cuda"
    device_id: int = 0
    readonly: bool = False
    host_array: np.ndarray | None = None   # the numpy view of a CPU array


def _torch_dtype_numpy(t):
    """numpy view of a torch tensor whose dtype numpy has no DLPack code for (bf16, fp8)."""
    import ml_dtypes
    name = str(t.dtype).replace("torch.", "")
    table = {"bfloat16": (ml_dtypes.bfloat16, "int16"), "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, "uint8"),
             "float8_e5m2": (ml_dtypes.float8_e5m2, "uint8")}
    if name not in table:
        return None
    import torch
    target, carrier = table[name]
    return np.from_dlpack(t.detach().view(getattr(torch, carrier))).view(target)


def _from_numpy(obj, arr: np.ndarray) -> ArrayInfo:
    dtype = D.from_numpy(arr.dtype)
    item = arr.dtype.itemsize
    strides = []
    for s in arr.strides:
        if s % item:
            raise TileValueError(f"array strides {arr.strides} are not multiples of the element "
                                 f"size {item}")
        strides.append(s // item)
    if any(s < 0 for s in strides):
        raise TileValueError(f"arrays with negative strides {tuple(strides)} are not supported; "
                             f"pass a contiguous copy (numpy.ascontiguousarray)")
    return ArrayInfo(obj, arr.__array_interface__["data"][0], tuple(arr.shape), tuple(strides),
                     dtype, "cpu", 0, not arr.flags.writeable, arr)


def intake(obj) -> ArrayInfo | None:
    """ArrayInfo for an array-like argument, None for anything else."""
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cuda_interface(obj)
    if hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
        dev_type, dev_id = obj.__dlpack_device__()
        if int(dev_type) in (KDL_CUDA, KDL_CUDA_MANAGED):
            return _from_cuda_dlpack(obj, int(dev_id))
        if int(dev_type) not in (KDL_CPU, KDL_CUDA_HOST):
            raise TileValueError(f"arrays on DLPack device type {int(dev_type)} are not supported")
        try:
            arr = np.from_dlpack(obj)
        except (BufferError, TypeError, RuntimeError) as e:
            arr = _torch_dtype_numpy(obj) if type(obj).__module__.startswith("torch") else None
            if arr is None:
                raise TileTypeError(f"cannot read a {type(obj).__name__} through DLPack: {e}") from None
        return _from_numpy(obj, arr)
    if hasattr(obj, "__array_interface__"):
        return _from_numpy(obj, np.asarray(obj))
    return None


def _from_cuda_interface(obj) -> ArrayInfo:
    cai = obj.__cuda_array_interface__
    dt = np.dtype(cai["typestr"])
    dtype = D.from_numpy(dt)
    shape = tuple(cai["shape"])
    if cai.get("strides") is None:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= d
        strides = tuple(reversed(strides))
    else:
        strides = tuple(s // dt.itemsize for s in cai["strides"])
    ptr, readonly = cai["data"]
    return ArrayInfo(obj, int(ptr), shape, strides, dtype, "cuda", 0, bool(readonly))


def _from_cuda_dlpack(obj, dev_id: int) -> ArrayInfo:
    try:
        from cuda.core.utils import StridedMemoryView
        v = StridedMemoryView.from_dlpack(obj, -1)
    except Exception as e:
        raise TileTypeError(f"cannot read a CUDA {type(obj).__name__} through DLPack: {e}") from None
    dtype = D.from_numpy(v.dtype)
    strides = tuple(v.strides) if v.strides is not None else None
    if strides is None:
        acc, out = 1, []
        for d in reversed(v.shape):
            out.append(acc)
            acc *= d
        strides = tuple(reversed(out))
    return ArrayInfo(obj, int(v.ptr), tuple(v.shape), strides, dtype, "cuda", dev_id,
                     bool(getattr(v, "readonly", False)))
