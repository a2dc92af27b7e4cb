"""User-facing dtypes (cuTile names): a Tile IR element type plus signedness for integers.

`tilepy.uint32` and `tilepy.int32` are both i32 in Tile IR; the frontend keeps the dtype next to
each value so that comparisons, division, shifts and conversions get the right signedness flag.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TileTypeError
from . import element as E


@dataclass(frozen=True)
class DType:
    name: str                 # cuTile spelling: "float32", "uint8", "bool_", ...
    elem: E.ElementType
    signed: bool = True       # meaningful for integers only

    def __repr__(self) -> str:
        return f"tilepy.{self.name}"

    def __str__(self) -> str:
        return self.name                 # cuTile's: str(ct.float32) is "float32"

    @property
    def __name__(self) -> str:           # cuTile's DType has one: its name
        return self.name

    def __reduce__(self):
        """A dtype pickles (and copies) as the one of its name, as cuTile's: `is` holds."""
        if globals().get(self.name) == self:
            return (_named, (self.name,))
        return (DType, (self.name, self.elem, self.signed))

    @property
    def is_float(self) -> bool:
        return self.elem.is_float

    @property
    def is_int(self) -> bool:
        return self.elem.is_int and self.elem is not E.I1

    @property
    def is_bool(self) -> bool:
        return self.elem == E.I1

    @property
    def bits(self) -> int:
        return self.elem.bits

    @property
    def numpy(self) -> np.dtype:
        if self.elem.is_int and self.elem != E.I1 and not self.signed:
            return np.dtype(f"uint{self.elem.bits}")
        return E.NUMPY_DTYPE[self.elem]

    @property
    def itemsize(self) -> int:
        return self.elem.storage_bytes


def _named(name: str) -> DType:
    return globals()[name]


bool_ = DType("bool_", E.I1, signed=False)
int8 = DType("int8", E.I8)
int16 = DType("int16", E.I16)
int32 = DType("int32", E.I32)
int64 = DType("int64", E.I64)
uint8 = DType("uint8", E.I8, signed=False)
uint16 = DType("uint16", E.I16, signed=False)
uint32 = DType("uint32", E.I32, signed=False)
uint64 = DType("uint64", E.I64, signed=False)
float16 = DType("float16", E.F16)
bfloat16 = DType("bfloat16", E.BF16)
float32 = DType("float32", E.F32)
float64 = DType("float64", E.F64)
tfloat32 = DType("tfloat32", E.TF32)
float8_e4m3fn = DType("float8_e4m3fn", E.E4M3)
float8_e5m2 = DType("float8_e5m2", E.E5M2)
float8_e8m0fnu = DType("float8_e8m0fnu", E.E8M0)
float8_e5m3fnu = DType("float8_e5m3fnu", E.E5M3)
float4_e2m1fn = DType("float4_e2m1fn", E.E2M1)

ALL_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16,
              float32, float64, tfloat32, float8_e4m3fn, float8_e5m2, float8_e8m0fnu,
              float8_e5m3fnu, float4_e2m1fn)
BY_NAME = {d.name: d for d in ALL_DTYPES}

# numpy dtype -> DType; bf16/fp8 (ml_dtypes types) are added when ml_dtypes is first needed.
# Element types without a data-layout row (tf32, e2m1, e5m3) have no arrays: a float32 array is
# float32.
_FROM_NUMPY = {d.numpy: d for d in ALL_DTYPES
               if d.elem in E.DATA_LAYOUT and d.elem not in E.ML_DTYPES}


def _add_ml_dtypes():
    for d in ALL_DTYPES:
        if d.elem in E.ML_DTYPES:
            _FROM_NUMPY[d.numpy] = d


def from_numpy(dt) -> DType:
    """The dtype of a numpy (or ml_dtypes) dtype; TileTypeError when there is none."""
    dt = np.dtype(dt)
    hit = _FROM_NUMPY.get(dt)
    if hit is None:
        _add_ml_dtypes()         # free when `dt` is an ml_dtypes type: the caller imported it
        hit = _FROM_NUMPY.get(dt)
    if hit is None:
        hint = ("; fp4 data goes in uint8 arrays, two values a byte, read with "
                "unpack_from_bytes" if "float4" in str(dt) else "")
        raise TileTypeError(f"arrays of dtype {dt} are not supported (supported: "
                            f"{', '.join(sorted(str(k) for k in _FROM_NUMPY))}){hint}")
    return hit


def foreign(x) -> DType | None:
    """The dtype a numpy or torch dtype object stands for, as cuTile accepts them wherever it
    takes a dtype: `np.float32`, `np.dtype("int32")`, `np.bool_`, `torch.int32`, `torch.bool`.
    None when `x` is none of these (or a dtype tilepy has no counterpart for)."""
    if isinstance(x, DType):
        return x
    if type(x).__name__ == "dtype" and type(x).__module__ == "torch":
        name = str(x).removeprefix("torch.")
        return BY_NAME.get("bool_" if name == "bool" else name)
    if isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic)):
        try:
            return from_numpy(x)
        except (TileTypeError, TypeError):
            return None
    return None


def default_signed(elem: E.ElementType) -> DType:
    """The dtype a signless element type reads as by default (ints signed, i1 as bool)."""
    for d in ALL_DTYPES:
        if d.elem == elem and (d.signed or elem == E.I1):
            return d
    raise TileTypeError(f"no dtype for element type {elem}")
