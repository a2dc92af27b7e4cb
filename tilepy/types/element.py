"""Tile IR element types (spec 5.1) and their mappings to numpy, DLPack, torch and C++.

Element types are signless: i32 is "32 bits interpreted by the op", signedness lives on the ops
that need it (cmpi, divi, exti, ...). The user-facing dtypes with signedness are in `dtype.py`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from ..errors import TileTypeError


@dataclass(frozen=True)
class ElementType:
    name: str            # spec spelling: "f32", "i1", "e4m3", ...
    bits: int            # size in bits (i1 is 1 bit, stored in one byte)
    kind: str            # "int" or "float"
    storage_bytes: int   # bytes per element in memory (spec 6.3.1 data layout)
    # Floating-point format parameters (0 for integers): exponent and explicit mantissa bits.
    exp_bits: int = 0
    mant_bits: int = 0
    alternative: bool = field(default=False, compare=False)   # spec 5.1.2 restricted types

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"ElementType({self.name})"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"


I1 = ElementType("i1", 1, "int", 1)
I8 = ElementType("i8", 8, "int", 1)
I16 = ElementType("i16", 16, "int", 2)
I32 = ElementType("i32", 32, "int", 4)
I64 = ElementType("i64", 64, "int", 8)
F16 = ElementType("f16", 16, "float", 2, 5, 10)
BF16 = ElementType("bf16", 16, "float", 2, 8, 7, alternative=True)
F32 = ElementType("f32", 32, "float", 4, 8, 23)
F64 = ElementType("f64", 64, "float", 8, 11, 52)
TF32 = ElementType("tf32", 32, "float", 4, 8, 10, alternative=True)
E4M3 = ElementType("e4m3", 8, "float", 1, 4, 3, alternative=True)
E5M2 = ElementType("e5m2", 8, "float", 1, 5, 2, alternative=True)

ELEMENT_TYPES: dict[str, ElementType] = {
    t.name: t for t in (I1, I8, I16, I32, I64, F16, BF16, F32, F64, TF32, E4M3, E5M2)
}
INT_TYPES = (I1, I8, I16, I32, I64)
FLOAT_TYPES = (F16, BF16, F32, F64, TF32, E4M3, E5M2)
# Types the floating-point arithmetic ops accept (spec 8.7: tile<f16 | bf16 | f32 | f64>).
ARITH_FLOAT_TYPES = (F16, BF16, F32, F64)

# Alternative spellings accepted when parsing (the spec uses both, e.g. in mmaf and pack).
_ALIASES = {"f8E4M3FN": E4M3, "fp8e4m3fn": E4M3, "f8E5M2": E5M2, "fp8e5m2": E5M2}


def element_type(name: str) -> ElementType:
    try:
        return ELEMENT_TYPES.get(name) or _ALIASES[name]
    except KeyError:
        raise TileTypeError(f"unknown element type '{name}' (expected one of "
                            f"{', '.join(ELEMENT_TYPES)})") from None


# ----------------------------------------------------------------------------- mappings
# Storage numpy dtype of each element type (spec 6.3.1 table; ml_dtypes for the low-precision
# floats). tf32 is stored as a 4-byte float.
NUMPY_DTYPE: dict[ElementType, np.dtype] = {
    I1: np.dtype(np.bool_), I8: np.dtype(np.int8), I16: np.dtype(np.int16),
    I32: np.dtype(np.int32), I64: np.dtype(np.int64), F16: np.dtype(np.float16),
    BF16: np.dtype(ml_dtypes.bfloat16), F32: np.dtype(np.float32), F64: np.dtype(np.float64),
    TF32: np.dtype(np.float32), E4M3: np.dtype(ml_dtypes.float8_e4m3fn),
    E5M2: np.dtype(ml_dtypes.float8_e5m2),
}

# DLPack (type code, bits): kDLInt=0, kDLUInt=1, kDLFloat=2, kDLBfloat=4, kDLBool=6,
# kDLFloat8_e4m3fn=10, kDLFloat8_e5m2=12 (dlpack.h v1.0+).
DLPACK_CODE: dict[ElementType, tuple[int, int]] = {
    I1: (6, 8), I8: (0, 8), I16: (0, 16), I32: (0, 32), I64: (0, 64),
    F16: (2, 16), F32: (2, 32), F64: (2, 64), BF16: (4, 16), E4M3: (10, 8), E5M2: (12, 8),
}

TORCH_DTYPE_NAME: dict[ElementType, str] = {
    I1: "bool", I8: "int8", I16: "int16", I32: "int32", I64: "int64", F16: "float16",
    BF16: "bfloat16", F32: "float32", F64: "float64", E4M3: "float8_e4m3fn", E5M2: "float8_e5m2",
}

# C++ spelling used by the emitted code (types defined by the tilepy runtime header).
CPP_TYPE: dict[ElementType, str] = {
    I1: "bool", I8: "int8_t", I16: "int16_t", I32: "int32_t", I64: "int64_t",
    F16: "__half", BF16: "__nv_bfloat16", F32: "float", F64: "double", TF32: "float",
    E4M3: "__nv_fp8_e4m3", E5M2: "__nv_fp8_e5m2",
}
