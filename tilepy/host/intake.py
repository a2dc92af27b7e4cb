"""Argument intake: anything array-like becomes an `ArrayInfo` (pointer, shape, strides, dtype,
device), with a clear error for what a kernel cannot take.

Sources, in the order they are tried:
- numpy arrays (the CPU backend's own type; read without building `__array_interface__`);
- torch tensors (CPU and CUDA; torch stays optional and is never imported here);
- DLPack producers (`__dlpack__` + `__dlpack_device__`: cupy, jax, ...): CPU ones are viewed as
  numpy arrays, CUDA ones through cuda.core's StridedMemoryView;
- `__cuda_array_interface__` producers (numba, older cupy): through StridedMemoryView when the
  driver is there (it asks the driver which GPU holds the pointer), parsed directly otherwise;
- `__array_interface__` producers (viewed as numpy arrays).
Strides are in elements. Negative strides and byte strides that are not a multiple of the
element size are rejected here; stride 0 is fine to read, and rejected for arrays the kernel
stores to (launcher.py), where it would make blocks race on one element.
"""
from __future__ import annotations

import ctypes
import dataclasses
import sys
from dataclasses import dataclass

import numpy as np

from ..errors import TileTypeError, TileValueError
from ..types import DType
from ..types import dtype as D

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_DL_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI",
             10: "ROCm", 11: "ROCm host", 13: "CUDA managed", 14: "oneAPI"}


@dataclass
class ArrayInfo:
    obj: object                    # the caller's object (kept alive during the launch)
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]       # in elements
    dtype: DType
    device: str                    # "cpu" or "cuda"
    device_id: int | None = 0      # CUDA ordinal; None when unknown (no driver to ask)
    readonly: bool = False
    host_array: np.ndarray | None = None   # the numpy view of a CPU array
    source: str = "numpy"          # numpy | torch | dlpack | cai | array_interface
    index_dtype: DType | None = None   # the index dtype an AOT/export signature gives it (None:
                                       # its parameter's annotation decides)


# ----------------------------------------------------------------------------- numpy
def _probe_data_offset() -> int | None:
    """Offset of `data` in numpy's array object (PyArrayObject_fields: PyObject_HEAD, then
    `char *data`), so a launch reads the pointer in ~0.2 us instead of ~2 us through
    __array_interface__. Checked against __array_interface__ on views; None if it disagrees."""
    off = object.__basicsize__
    base = np.arange(64, dtype=np.float32)
    for a in (base, base[3:], base[::2][5:], np.zeros((3, 4), np.int8)[1:, 2:]):
        if ctypes.c_void_p.from_address(id(a) + off).value != a.__array_interface__["data"][0]:
            return None
    return off


_DATA_OFFSET = _probe_data_offset()


def numpy_ptr(a: np.ndarray) -> int:
    if _DATA_OFFSET is not None:
        return ctypes.c_void_p.from_address(id(a) + _DATA_OFFSET).value or 0
    return a.__array_interface__["data"][0]


def element_strides(byte_strides, itemsize: int, name: str = "") -> tuple[int, ...]:
    out = []
    for s in byte_strides:
        if s % itemsize:
            raise TileValueError(f"{_arg(name)}unsupported strides: byte strides {tuple(byte_strides)} "
                                 f"are not multiples of the element size {itemsize}; pass a "
                                 f"contiguous copy")
        out.append(s // itemsize)
    if any(s < 0 for s in out):
        raise TileValueError(f"{_arg(name)}unsupported strides: negative strides {tuple(out)} "
                             f"(a reversed view); pass a contiguous copy "
                             f"(numpy.ascontiguousarray / tensor.contiguous())")
    return tuple(out)


def _arg(name: str) -> str:
    return f"argument '{name}': " if name else ""


def _dtype(np_dtype, name: str) -> DType:
    try:
        return D.from_numpy(np_dtype)
    except TileTypeError as e:
        raise TileTypeError(_arg(name) + e.message) from None


def from_numpy(obj, arr: np.ndarray, name: str = "", source: str = "numpy") -> ArrayInfo:
    dtype = _dtype(arr.dtype, name)
    strides = element_strides(arr.strides, arr.dtype.itemsize, name)
    return ArrayInfo(obj, numpy_ptr(arr), arr.shape, strides, dtype, "cpu", 0,
                     not arr.flags.writeable, arr, source)


# ----------------------------------------------------------------------------- torch
def _is_torch(obj) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


_torch_tensor: list = [None]        # torch.Tensor, once intake has seen one (torch is optional)
_cupy_array: list = [None]          # cupy.ndarray, once intake has seen one (the fast path too)


def torch_dtype(dt, name: str = "") -> DType:
    """tilepy's dtype for a torch dtype (TileTypeError for one a kernel cannot take)."""
    dtype = D.BY_NAME.get(str(dt).replace("torch.", "").replace("bool", "bool_"))
    if dtype is None:
        raise TileTypeError(f"{_arg(name)}tensors of dtype {dt} are not supported "
                            f"(supported: "
                            f"{', '.join(d.name for d in D.ALL_DTYPES if d is not D.tfloat32)})")
    return dtype


def from_torch(t, name: str = "") -> ArrayInfo:
    _torch_tensor[0] = sys.modules["torch"].Tensor        # (the launch fast path compares types)
    dev = t.device
    if t.layout is not sys.modules["torch"].strided:
        raise TileTypeError(f"{_arg(name)}{t.layout} tensors are not supported (only dense, "
                            f"strided tensors); pass tensor.to_dense()")
    if t.is_neg() or t.is_conj():
        raise TileValueError(f"{_arg(name)}the tensor has a pending negation/conjugation bit; "
                             f"pass tensor.resolve_neg() / resolve_conj()")
    dtype = torch_dtype(t.dtype, name)
    strides = tuple(t.stride())
    if any(s < 0 for s in strides):
        raise TileValueError(f"{_arg(name)}unsupported strides: negative strides {strides}")
    if dev.type not in ("cpu", "cuda"):
        raise TileValueError(f"{_arg(name)}tensors on device '{dev}' are not supported (CPU and "
                             f"CUDA only)")
    ptr = 0 if type(t).__name__ == "FakeTensor" else t.data_ptr()
    if ptr == 0 and t.numel():
        raise TileValueError(f"{_arg(name)}the tensor has no data (a fake tensor: torch.compile "
                             f"or FakeTensorMode is tracing this code); launch kernels from a "
                             f"function declared with tilepy.torch.op")
    if dev.type == "cuda":
        return ArrayInfo(t, ptr, tuple(t.shape), strides, dtype, "cuda",
                         dev.index if dev.index is not None else 0, False, None, "torch")
    return ArrayInfo(t, ptr, tuple(t.shape), strides, dtype, "cpu", 0, False, None, "torch")


# ----------------------------------------------------------------------------- DLPack, CAI
def byte_extent(info: ArrayInfo) -> int:
    """Bytes from the array's first element to one past its last (0 when empty)."""
    if any(d == 0 for d in info.shape):
        return 0
    last = sum((d - 1) * s for d, s in zip(info.shape, info.strides))
    return (last + 1) * info.dtype.elem.storage_bytes


def disjoint_flags(ranges) -> tuple[bool, ...]:
    """Per (start, length) byte range: does it share no byte with any other? (An empty range
    shares none.) O(n log n), not pairwise: in the order of their starts, a range overlaps an
    earlier one iff it starts before the furthest end so far, and a later one iff it ends
    after the next start (the nearest of the later starts)."""
    flags = [True] * len(ranges)
    order = sorted([(lo, lo + n, i) for i, (lo, n) in enumerate(ranges) if n > 0])
    reach = -1
    for k, (lo, hi, i) in enumerate(order, 1):
        if lo < reach or (k < len(order) and order[k][0] < hi):
            flags[i] = False
        if hi > reach:
            reach = hi
    return tuple(flags)


def _from_dlpack(obj, name: str, consumer) -> ArrayInfo:
    try:
        dev_type, dev_id = obj.__dlpack_device__()
    except Exception as e:
        raise TileTypeError(f"{_arg(name)}__dlpack_device__() failed: {e}") from None
    dev_type, dev_id = int(dev_type), int(dev_id)
    if dev_type in (KDL_CUDA, KDL_CUDA_MANAGED):
        return _from_cuda_view(obj, dev_id, name, "dlpack", consumer)
    if dev_type not in (KDL_CPU, KDL_CUDA_HOST):
        raise TileValueError(f"{_arg(name)}arrays on DLPack device "
                             f"{_DL_NAMES.get(dev_type, dev_type)} are not supported (CPU and CUDA "
                             f"only)")
    try:
        arr = np.from_dlpack(obj)
    except (BufferError, TypeError, RuntimeError, ValueError) as e:
        raise TileTypeError(f"{_arg(name)}cannot read a {type(obj).__name__} through DLPack: "
                            f"{e}") from None
    return from_numpy(obj, arr, name, "dlpack")


def _from_cuda_view(obj, dev_id: int | None, name: str, source: str, consumer) -> ArrayInfo:
    """A CUDA array through cuda.core's StridedMemoryView. `consumer(device_id)` is the launch
    stream's handle: the producer's pending work is ordered before it (DLPack's `stream`, CAI's
    `stream` field); without one (compiling, AOT) nothing is ordered."""
    from .driver import current
    drv = current()
    stream_ptr = -1 if consumer is None else consumer(dev_id)
    try:
        v = drv.view(obj, source, stream_ptr)
    except Exception as e:
        raise TileTypeError(f"{_arg(name)}cannot read a CUDA {type(obj).__name__}: "
                            f"{type(e).__name__}: {e}") from None
    dtype = _dtype(v.dtype, name)
    shape = tuple(v.shape)
    strides = tuple(v.strides) if v.strides is not None else _c_strides(shape)
    if any(s < 0 for s in strides):
        raise TileValueError(f"{_arg(name)}unsupported strides: negative strides {strides}")
    did = v.device_id if getattr(v, "device_id", None) not in (None, -1) else dev_id
    if type(obj).__module__.startswith("cupy"):
        _cupy_array[0] = type(obj)                          # (the launch fast path compares types)
        source = "cupy"
    return ArrayInfo(obj, int(v.ptr), shape, strides, dtype, "cuda", did,
                     bool(getattr(v, "readonly", False)), None, source)


def _c_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def _from_cai(obj, name: str, consumer) -> ArrayInfo:
    from .driver import driver_available
    if driver_available():
        return _from_cuda_view(obj, None, name, "cai", consumer)
    # No driver: read the interface ourselves (StridedMemoryView would ask the driver which GPU
    # holds the pointer). The launch then fails with "no GPU" -- or "mixed devices" first.
    try:
        cai = obj.__cuda_array_interface__
        dt = np.dtype(cai["typestr"]) if not cai.get("descr") or len(cai["descr"]) <= 1 else None
        shape = tuple(int(d) for d in cai["shape"])
        ptr, readonly = cai["data"]
    except Exception as e:
        raise TileTypeError(f"{_arg(name)}malformed __cuda_array_interface__: {e}") from None
    if dt is None:
        raise TileTypeError(f"{_arg(name)}structured dtypes are not supported")
    if cai.get("mask") is not None:
        raise TileValueError(f"{_arg(name)}masked CUDA arrays are not supported")
    dtype = _dtype(dt, name)
    strides = (element_strides(cai["strides"], dt.itemsize, name)
               if cai.get("strides") is not None else _c_strides(shape))
    return ArrayInfo(obj, int(ptr or 0), shape, strides, dtype, "cuda", None, bool(readonly), None,
                     "cai")


def intake(obj, name: str = "", consumer=None) -> ArrayInfo | None:
    """ArrayInfo for an array-like argument, None for anything else (scalars, constants).
    `consumer`: device id -> the launch stream's handle, for CUDA producers (gpu.consumer_stream)."""
    if isinstance(obj, np.ndarray):
        return aligned(from_numpy(obj, obj, name), name)
    if isinstance(obj, (np.generic, int, float, complex, str, bytes)) or obj is None:
        return None                   # numpy scalars have __array_interface__ too
    if _is_torch(obj):
        return aligned(from_torch(obj, name), name)
    if hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
        return aligned(_from_dlpack(obj, name, consumer), name)
    if hasattr(obj, "__cuda_array_interface__"):
        return aligned(_from_cai(obj, name, consumer), name)
    if hasattr(obj, "__array_interface__"):
        return aligned(from_numpy(obj, np.asarray(obj), name, "array_interface"), name)
    return None


class ArrayInfoList(tuple):
    """The ArrayInfos of a list of arrays passed as one argument."""


class ArgTuple(tuple):
    """What a tuple argument (cuTile's aggregate: exactly `tuple`, nested, of arrays, scalars,
    constants or lists) is to the specializer: each item's `intake_arg`."""


class ArgRecord(ArgTuple):
    """What a dataclass object given as an argument is to the specializer: its fields'
    `intake_arg`s in declaration order (flattened as a tuple's items), and its class `cls`."""

    def __new__(cls, record_cls, items):
        self = super().__new__(cls, items)
        self.cls = record_cls
        return self


def is_record_class(cls) -> bool:
    """A user's dataclass (not tilepy's own dataclasses, such as DType or ArraySpec, whose
    objects are values)."""
    return dataclasses.is_dataclass(cls) and not cls.__module__.startswith("tilepy.")


def is_record(obj) -> bool:
    """An object of a user's dataclass (not the class itself)."""
    return not isinstance(obj, type) and is_record_class(type(obj))


def record_fields(obj) -> list[tuple[str, object]] | None:
    """(name, value) of each field of a user's dataclass object, in declaration order; None for
    anything else."""
    if not is_record(obj):
        return None
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


def intake_arg(obj, name: str = "", consumer=None):
    """What a kernel argument is to the specializer: an ArrayInfo, an ArgTuple for a tuple, an
    ArrayInfoList for a non-empty list whose items are all arrays, else the value itself."""
    info = intake(obj, name, consumer)
    if info is not None:
        return info
    if type(obj) is tuple:
        return ArgTuple(intake_arg(x, f"{name}[{i}]", consumer) for i, x in enumerate(obj))
    fields = record_fields(obj)
    if fields is not None:
        return ArgRecord(type(obj), [intake_arg(x, f"{name}.{n}", consumer) for n, x in fields])
    if isinstance(obj, list) and obj:
        items = [intake(x, f"{name}[{i}]", consumer) for i, x in enumerate(obj)]
        if all(i is not None for i in items):
            return ArrayInfoList(items)
    return obj


def array_leaves(info, name: str = ""):
    """(name, ArrayInfo) for every array of an argument's info: itself, a list's items, a
    tuple's or a dataclass's (recursively); `name[i]` names an item."""
    if isinstance(info, ArrayInfo):
        yield name, info
    elif isinstance(info, ArgRecord):
        for f, x in zip(dataclasses.fields(info.cls), info):
            yield from array_leaves(x, f"{name}.{f.name}")
    elif isinstance(info, (ArgTuple, ArrayInfoList)):
        for i, x in enumerate(info):
            yield from array_leaves(x, f"{name}[{i}]")


def host_view(info: ArrayInfo) -> np.ndarray | None:
    """A numpy view of a CPU array's memory (numpy arrays are their own; a torch CPU tensor or
    DLPack array gets one built from its pointer, shape and strides); None off the CPU."""
    if info.host_array is not None or info.device != "cpu":
        return info.host_array
    dt = info.dtype.numpy
    if 0 in info.shape:
        return np.zeros(info.shape, dt)
    span = 1 + sum((d - 1) * s for d, s in zip(info.shape, info.strides))
    raw = (ctypes.c_char * (span * dt.itemsize)).from_address(info.ptr)
    flat = np.frombuffer(raw, dtype=dt)
    return np.lib.stride_tricks.as_strided(flat, info.shape,
                                           tuple(s * dt.itemsize for s in info.strides))


def aligned(info: ArrayInfo, name: str) -> ArrayInfo:
    """Elements must be aligned to their size (spec 6.3.1): a GPU faults on a misaligned load,
    so a misaligned view (e.g. a float32 view 2 bytes into a buffer) is rejected on every
    device, before any launch."""
    size = info.dtype.itemsize
    if info.ptr % size and 0 not in info.shape:
        raise TileValueError(f"{_arg(name)}the array's address 0x{info.ptr:x} is not a multiple of "
                             f"its {size}-byte element size (a misaligned view; a GPU would fault "
                             f"on it): pass an aligned copy (numpy.array(x) / tensor.clone())")
    return info


def infos_for(args) -> list:
    """Per argument: its ArrayInfo (an ArrayInfoList for a list of arrays), or the value
    itself (scalars, constants)."""
    return [intake_arg(a) for a in args]


def check_call(kernel, args):
    """launch() was given a kernel (what the frontend traces: it specializes and traces) and a
    tuple (or list) of arguments."""
    if not (callable(getattr(kernel, "specialize", None)) and callable(getattr(kernel, "trace", None))):
        raise TileTypeError(f"launch() expects a @tilepy.kernel (got {type(kernel).__name__})")
    if not isinstance(args, (tuple, list)):
        raise TileTypeError(f"launch() takes the kernel arguments as a tuple (got "
                            f"{type(args).__name__})")
