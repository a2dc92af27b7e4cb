"""`tilepy.launch(stream, grid, kernel, args)`: specialize, compile (cached), pack, run.

The device of the array arguments picks the backend (ARCHITECTURE.md, decision 2): CPU arrays
run on the CPU backend; CUDA arrays need the GPU backend.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..errors import (TileError, TileTypeError, TileUnsupportedFeatureError,
                      TileValueError)
from ..frontend.context import ArrayParam, ScalarParam
from ..types import dtype as D
from .intake import ArrayInfo

GRID_LIMIT = 2**24 - 1     # spec 8.3.10: grid dimensions are limited to 2^24-1 per axis

_CTYPE = {D.bool_: ctypes.c_bool, D.int8: ctypes.c_int8, D.int16: ctypes.c_int16,
          D.int32: ctypes.c_int32, D.int64: ctypes.c_int64, D.uint8: ctypes.c_uint8,
          D.uint16: ctypes.c_uint16, D.uint32: ctypes.c_uint32, D.uint64: ctypes.c_uint64,
          D.float32: ctypes.c_float, D.float64: ctypes.c_double, D.float16: ctypes.c_uint16,
          D.bfloat16: ctypes.c_uint16}


def normalize_grid(grid) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (int(grid),)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise TileValueError(f"grid must be a tuple of 1 to 3 ints (got {grid!r})")
    out = []
    for g in grid:
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)):
            raise TileValueError(f"grid extents must be ints (got {grid!r})")
        if not 1 <= int(g) <= GRID_LIMIT:
            raise TileValueError(f"grid extent {int(g)} is out of range: each of the 3 grid "
                                 f"dimensions must be in [1, {GRID_LIMIT}]")
        out.append(int(g))
    return tuple(out + [1] * (3 - len(out)))


def _i32(v: int, what: str) -> ctypes.c_int32:
    if not -2**31 <= v < 2**31:
        raise TileUnsupportedFeatureError(f"{what} = {v} does not fit in 32 bits; arrays with more "
                                          f"than 2^31-1 elements per dimension are not supported yet")
    return ctypes.c_int32(v)


def pack_args(params, infos) -> list:
    """ctypes values for the kernel's C parameters, in order (see ArrayParam.c_params)."""
    values = []
    for p, info in zip(params, infos):
        if isinstance(p, ArrayParam):
            values.append(ctypes.c_void_p(info.ptr))
            values += [_i32(s, f"{p.name}.shape[{i}]") for i, s in enumerate(info.shape)]
            values += [_i32(st, f"{p.name}.strides[{i}]") for i, st in enumerate(info.strides)
                       if not p.unit_stride[i]]
        elif isinstance(p, ScalarParam):
            ct = _CTYPE.get(p.dtype)
            if ct is None:
                raise TileUnsupportedFeatureError(f"scalar arguments of dtype {p.dtype.name} are not "
                                                  f"supported yet")
            if p.dtype in (D.float16, D.bfloat16):
                values.append(ct(int(np.array(info, dtype=p.dtype.numpy).view(np.uint16))))
            else:
                values.append(ct(info.item() if hasattr(info, "item") else info))
    return values


def launch(stream, grid, kernel, args, *, backend=None):
    """Launch `kernel` over `grid` with `args` (a tuple) on the device of its array arguments.
    `backend="interpret"` (or TILEPY_INTERPRET=1) runs it in the reference interpreter."""
    from ..compiler import compile_specialization, infos_for
    from ..frontend.kernel import Kernel
    try:
        if not isinstance(kernel, Kernel):
            raise TileTypeError(f"launch() expects a @tilepy.kernel (got {type(kernel).__name__})")
        if not isinstance(args, (tuple, list)):
            raise TileTypeError(f"launch() takes the kernel arguments as a tuple (got "
                                f"{type(args).__name__})")
        g = normalize_grid(grid)
        infos = infos_for(args)
        arrays = [i for i in infos if isinstance(i, ArrayInfo)]
        devices = {a.device for a in arrays}
        if len(devices) > 1:
            raise TileValueError("kernel arguments are on different devices (CPU and CUDA arrays "
                                 "mixed); move them to one device")
        key, params = kernel.specialize(infos)
        if _interpret(backend):
            from ..interpret.kernel import launch_interpreted
            return launch_interpreted(kernel, key, params, infos, g)
        ck = compile_specialization(kernel, key, params)
        if devices == {"cuda"}:
            from .gpu import launch_gpu
            return launch_gpu(stream, g, ck, infos)
        _check_writable(ck, params, infos)
        from . import cpu
        lib = cpu.build(ck.emitted, ck.compile_source())
        cpu.run(lib, g, pack_args(params, infos))
    except TileError as e:
        raise e.with_traceback(None) from None


def _interpret(backend) -> bool:
    if backend not in (None, "interpret"):
        raise TileValueError(f"backend must be None or 'interpret' (got {backend!r})")
    from ..settings import settings
    return backend == "interpret" or settings().interpret


_WRITES = {"store_view_tko": "view", "store_ptr_tko": "destination", "atomic_rmw_tko": "pointers",
           "atomic_cas_tko": "pointers"}


def stored_arrays(module) -> set[str]:
    """Names of the array parameters the kernel writes to: the entry argument each written
    view or pointer tile derives from (through views, offset/broadcast/reshape and assume)."""
    out = set()
    for op in module.walk():
        if op.name in _WRITES:
            v = getattr(op, _WRITES[op.name])
            while getattr(v, "op", None) is not None and v.op.operands:
                v = v.op.operands[0]
            out.add(v.hint)
    return out


def _check_writable(ck, params, infos):
    stored = stored_arrays(ck.module)
    for p, info in zip(params, infos):
        if isinstance(p, ArrayParam) and info.readonly and p.name in stored:
            raise TileValueError(f"argument '{p.name}' is read-only but the kernel stores to it")
