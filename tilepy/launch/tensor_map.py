"""Tensor maps of a kernel's TMA operands, built on the host at launch and cached per array
geometry.

The sm_90a class of a kernel (lowering/wgmma.py `TmaBox`) takes one `const __grid_constant__
tp::TensorMap` parameter per map after its other parameters; the artifact lists them
(`artifact.tma`: array parameter, element type, box in the view's dimension order, swizzle bytes).
A launch of that class builds each map from its array's pointer, shape and strides -- the
arguments of the driver's cuTensorMapEncodeTiled (`encode_args`: dimensions innermost first,
byte strides of the outer dimensions, zero fill) -- through the driver seam
(`host/driver.py` `tensor_map`), and keeps it per plan by pointer (`TmaArgs`): the plan fixes the
rest of the geometry, so a warm launch pays one dict lookup per map.

`cpu_tensor_map` is the CPU backend's encoding of the same arguments (include/tilepy/cpu_tma.h
reads it), with cuTensorMapEncodeTiled's checks: what the fake driver of the tests returns, so
the CPU build of the sm_90a class runs with the maps a launch built.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import TileLaunchError

# CUtensorMapDataType by element type (TMA copies bits: signless integers as unsigned)
DATA_TYPE = {"i8": 0, "e4m3": 0, "e5m2": 0, "i16": 1, "i32": 3, "i64": 5, "f16": 6, "f32": 7,
             "f64": 8, "bf16": 9, "tf32": 7}
ELEM_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}
SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}         # bytes -> CUtensorMapSwizzle
L2_PROMOTION_128B = 2                           # CU_TENSOR_MAP_L2_PROMOTION_L2_128B
CPU_MAGIC = 0x4D545054                          # "TPTM" (cpu_tma.h)
_CPU_LAYOUT = struct.Struct("<IBBBBQ5I4x4Q5H5BBB39x")


@dataclass(frozen=True)
class EncodeArgs:
    """cuTensorMapEncodeTiled's arguments (innermost dimension first, as the driver takes them)."""
    dtype: int
    base: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]        # bytes, of dims 1..rank-1
    box: tuple[int, ...]
    swizzle: int                    # CUtensorMapSwizzle
    estrides: tuple[int, ...] = ()
    interleave: int = 0
    l2: int = L2_PROMOTION_128B
    oob_fill: int = 0               # zeros

    @property
    def rank(self) -> int:
        return len(self.dims)


def encode_args(spec, ptr: int, shape, strides, itemsize: int) -> EncodeArgs:
    """The map of `spec` ((array, elem, box, swizzle bytes)) over an array at `ptr` with `shape`
    and element `strides` (the view's order)."""
    _, elem, box, swizzle = spec
    return EncodeArgs(DATA_TYPE[elem], int(ptr), tuple(int(d) for d in shape[::-1]),
                      tuple(int(s) * itemsize for s in strides[:-1][::-1]),
                      tuple(int(b) for b in box[::-1]), SWIZZLE[swizzle], (1,) * len(shape))


def check_encode(a: EncodeArgs) -> str | None:
    """What cuTensorMapEncodeTiled refuses in `a` (CUDA_ERROR_INVALID_VALUE), or None."""
    eb = ELEM_BYTES.get(a.dtype)
    swb = {v: k for k, v in SWIZZLE.items()}.get(a.swizzle)
    if eb is None or swb is None or not 1 <= a.rank <= 5:
        return f"data type {a.dtype}, swizzle {a.swizzle} or rank {a.rank}"
    if a.base % 16:
        return f"globalAddress {a.base:#x} is not 16-byte aligned"
    if len(a.strides) != a.rank - 1 or len(a.box) != a.rank or len(a.estrides) != a.rank:
        return "strides, box or element strides of another rank"
    for d in a.dims:
        if not 0 < d <= 2**32:
            return f"globalDim {d} outside (0, 2^32]"
    for s in a.strides:
        if s % 16 or not 0 <= s < 2**40:
            return f"globalStride {s} is not a multiple of 16 below 2^40"
    for b in a.box:
        if not 0 < b <= 256:
            return f"boxDim {b} outside (0, 256]"
    if a.box[0] * eb % 16:
        return f"the inner box dimension is {a.box[0] * eb} bytes, not a multiple of 16"
    if swb and a.box[0] * eb > swb:
        return f"the inner box dimension ({a.box[0] * eb} bytes) exceeds the {swb}-byte swizzle"
    if any(not 0 < e <= 8 for e in a.estrides):
        return "elementStrides outside (0, 8]"
    return None


def cpu_tensor_map(a: EncodeArgs) -> bytes:
    """The CPU backend's 128-byte encoding of a map (cpu_tma.h); ValueError as the driver refuses."""
    why = check_encode(a)
    if why is not None:
        raise ValueError(why)
    pad = lambda xs, n: list(xs) + [0] * (n - len(xs))     # noqa: E731
    return _CPU_LAYOUT.pack(CPU_MAGIC, a.rank, a.dtype, a.swizzle, a.oob_fill, a.base,
                            *pad(a.dims, 5), *pad(a.strides, 4), *pad(a.box, 5),
                            *pad(a.estrides, 5), a.interleave, a.l2)


class TmaArgs:
    """A plan's tensor maps: per map, the index of its array among the call's values and the
    geometry the plan fixes; `maps(vals, drv)` gives the call's map arguments, built through the
    driver on a pointer not seen before (the device's context current), else from the cache."""
    __slots__ = ("items", "cache", "scratch")

    def __init__(self, specs, names: list[str], infos):
        self.items = []
        for spec in specs:
            if spec[0] not in names:
                raise TileLaunchError(f"the kernel's tensor map reads array '{spec[0]}', which is "
                                      f"not one of its arguments")
            k = names.index(spec[0])
            info = infos[k]
            self.items.append((k, spec, tuple(info.shape), tuple(info.strides),
                               info.dtype.elem.storage_bytes))
        self.cache: dict = {}
        self.scratch = 0        # 16 device bytes the maps of empty arrays point at (_build)

    def maps(self, vals, drv) -> list:
        out = []
        for n, (k, spec, shape, strides, itemsize) in enumerate(self.items):
            ptr = vals[k]
            m = self.cache.get((n, ptr))
            if m is None:
                if len(self.cache) >= 1024:
                    self.cache.clear()
                m = self.cache[(n, ptr)] = self._build(drv, spec, ptr, shape, strides, itemsize)
            out.append(m)
        return out

    def _build(self, drv, spec, ptr, shape, strides, itemsize):
        if 0 in shape:     # the kernel's copies lie outside the map: any valid map will do,
            # over memory the driver knows (cuda.core asks it about the map's pointer, and an
            # empty array's is often 0): 16 bytes of the plan's device, allocated once
            shape, strides = (1,) * len(shape), (16 // itemsize,) * len(shape)
            if not self.scratch:
                self.scratch = drv.alloc(16)
            ptr = self.scratch
        a = encode_args(spec, ptr, shape, strides, itemsize)
        try:
            return drv.tensor_map(a)
        except drv.errors as e:
            raise TileLaunchError(f"cuTensorMapEncodeTiled refused the tensor map of array "
                                  f"'{spec[0]}' (shape {shape}, strides {strides}, box "
                                  f"{spec[2]}): {e}") from None
