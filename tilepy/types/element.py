"""Tile IR element types (spec 5.1) and their mappings to numpy, DLPack, torch and C++.

Element types are signless: i32 is "32 bits interpreted by the op", signedness lives on the ops
that need it (cmpi, divi, exti, ...). The user-facing dtypes with signedness are in `dtype.py`;
the conversion semantics (rounding, saturation) are in `convert.py`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TileTypeError


@dataclass(frozen=True)
class ElementType:
    name: str            # spec spelling: "f32", "i1", "e4m3", ...
    bits: int            # size in bits (spec 5.1); i1 is 1 bit, stored in one byte
    kind: str            # "int" or "float"
    storage_bytes: int   # bytes per element in memory (spec 6.3.1 data layout)
    # Floating-point format (0 for integers): exponent bits and explicit mantissa bits.
    exp_bits: int = 0
    mant_bits: int = 0
    alternative: bool = field(default=False, compare=False)   # spec 5.1.2 restricted types
    # Float encodings without infinities use the all-ones exponent for finite values (e4m3fn:
    # only S.1111.111 is NaN), which moves the largest finite value up.
    has_inf: bool = field(default=True, compare=False)
    # Formats with no NaN at all (e2m1fn): the all-ones mantissa of the top exponent is finite.
    has_nan: bool = field(default=True, compare=False)
    signed: bool = field(default=True, compare=False)   # unsigned floats (e5m3fnu): no sign bit

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

    # ------------------------------------------------------------------ float format
    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def min_exp(self) -> int:
        """Exponent of the smallest normal number (e8m0: exponent field 0 is 2^-127, no
        subnormals)."""
        return -self.bias if self.mant_bits == 0 else 1 - self.bias

    @property
    def max_exp(self) -> int:
        """Exponent of the largest finite number."""
        if self.mant_bits == 0:
            return self.bias
        return self.bias + (0 if self.has_inf else 1)

    @property
    def max_finite(self) -> float:
        """MAX_NORM: the largest finite value (spec 5.1.3)."""
        if self.is_int:
            raise TileTypeError(f"{self} is not a floating-point type")
        if self.mant_bits == 0:        # e8m0: powers of two, the top exponent is NaN
            return 2.0 ** self.max_exp
        frac = 2.0 - 2.0 ** -self.mant_bits
        if not self.has_inf and self.has_nan:   # the all-ones mantissa of the top exponent is NaN
            frac -= 2.0 ** -self.mant_bits
        return frac * 2.0 ** self.max_exp

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (self.min_exp - self.mant_bits)

    @property
    def satfinite(self) -> bool:
        """Conversions to this type saturate to +-MAX_NORM instead of producing Inf (5.1.3)."""
        return self.name in ("e4m3", "e5m2", "e2m1", "e5m3")

    @property
    def nan_to_max(self) -> bool:
        """NaN converts to +MAX_NORM (spec 5.1.3: e4m3; e2m1, which has no NaN, the same way)."""
        return self.name in ("e4m3", "e2m1")

    # ------------------------------------------------------------------ integer ranges
    def int_range(self, signed: bool) -> tuple[int, int]:
        """[min, max] of the signed or unsigned interpretation (i1: 0/-1 signed, 0/1 unsigned)."""
        if not self.is_int:
            raise TileTypeError(f"{self} is not an integer type")
        if signed:
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, (1 << self.bits) - 1


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
E4M3 = ElementType("e4m3", 8, "float", 1, 4, 3, alternative=True, has_inf=False)
E5M2 = ElementType("e5m2", 8, "float", 1, 5, 2, alternative=True)
# f8E8M0FNU (NVIDIA's dialect 13.2+, block scales of mmaf_scaled): unsigned powers of two
# 2^-127..2^127, 0xff is NaN; no zero, no infinity.
E8M0 = ElementType("e8m0", 8, "float", 1, 8, 0, alternative=True, has_inf=False)
# f4E2M1FN (dialect 13.3, NVFP4's values): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; no
# infinity, no NaN. A tile holds one per byte (the low 4 bits); memory holds two per byte (pack).
E2M1 = ElementType("e2m1", 4, "float", 1, 2, 1, alternative=True, has_inf=False, has_nan=False)
# f8E5M3FNU (dialect 13.4, block scales of fp4 mmaf_scaled): no sign bit, bias 15, 2^-17..114688,
# 0xff is NaN; no infinity.
E5M3 = ElementType("e5m3", 8, "float", 1, 5, 3, alternative=True, has_inf=False, signed=False)

ELEMENT_TYPES: dict[str, ElementType] = {
    t.name: t for t in (I1, I8, I16, I32, I64, F16, BF16, F32, F64, TF32, E4M3, E5M2, E8M0,
                        E2M1, E5M3)
}
INT_TYPES = (I1, I8, I16, I32, I64)
FLOAT_TYPES = (F16, BF16, F32, F64, TF32, E4M3, E5M2, E8M0, E2M1, E5M3)
# Types the floating-point arithmetic ops accept (spec 8.7: tile<f16 | bf16 | f32 | f64>).
ARITH_FLOAT_TYPES = (F16, BF16, F32, F64)

# Alternative spellings accepted when parsing (the spec uses both, e.g. in mmaf and pack).
ALIASES = {"f8E4M3FN": E4M3, "fp8e4m3fn": E4M3, "f8E5M2": E5M2, "fp8e5m2": E5M2,
           "f8E8M0FNU": E8M0, "f4E2M1FN": E2M1, "F4E2M1FN": E2M1, "f8E5M3FNU": E5M3,
           "fnv8E5M3FNU": E5M3}


def element_type(name: str) -> ElementType:
    try:
        return ELEMENT_TYPES.get(name) or ALIASES[name]
    except KeyError:
        raise TileTypeError(f"unknown element type '{name}' (expected one of "
                            f"{', '.join(ELEMENT_TYPES)})") from None


# ----------------------------------------------------------------------------- data layout
@dataclass(frozen=True)
class Layout:
    """One row of the spec's data-layout table (6.3.1): how an allocation of E is encoded."""
    dlpack_code: int          # DLDataTypeCode (dlpack.h)
    dlpack_bits: int
    dlpack_lanes: int
    numpy_name: str           # numpy dtype name (bf16 and fp8: the ml_dtypes types)
    torch: str | None         # torch dtype name; None where the spec says N/A

    @property
    def numpy(self) -> np.dtype:
        return NUMPY_DTYPE[ELEMENT_OF_NUMPY_NAME[self.numpy_name]]


# DLPack type codes (dlpack.h v1.1): kDLInt=0, kDLFloat=2, kDLBfloat=4, kDLBool=6,
# kDLFloat8_e4m3fn=10, kDLFloat8_e5m2=12. The spec lists i1 as 8-bit storage with no torch type.
DATA_LAYOUT: dict[ElementType, Layout] = {
    I1: Layout(6, 8, 1, "bool", None),
    I8: Layout(0, 8, 1, "int8", "int8"),
    I16: Layout(0, 16, 1, "int16", "int16"),
    I32: Layout(0, 32, 1, "int32", "int32"),
    I64: Layout(0, 64, 1, "int64", "int64"),
    F16: Layout(2, 16, 1, "float16", "float16"),
    F32: Layout(2, 32, 1, "float32", "float32"),
    F64: Layout(2, 64, 1, "float64", "float64"),
    BF16: Layout(4, 16, 1, "bfloat16", "bfloat16"),
    E4M3: Layout(10, 8, 1, "float8_e4m3fn", "float8_e4m3fn"),
    E5M2: Layout(12, 8, 1, "float8_e5m2", "float8_e5m2"),
    E8M0: Layout(14, 8, 1, "float8_e8m0fnu", "float8_e8m0fnu"),   # kDLFloat8_e8m0fnu=14
}
ELEMENT_OF_NUMPY_NAME = {row.numpy_name: e for e, row in DATA_LAYOUT.items()}
# Element types whose numpy dtype is an ml_dtypes type: that package (~40 ms to import) is
# loaded the first time one of them is needed (an array of it has already loaded it).
ML_DTYPES = frozenset(e for e, row in DATA_LAYOUT.items() if row.dlpack_code in (4, 10, 12, 14))


class _NumpyDtypes(dict):
    """Storage numpy dtype of each element type; the ml_dtypes rows are added on first use."""

    def __missing__(self, elem):
        if elem not in ML_DTYPES:
            raise KeyError(elem)
        load_ml_dtypes()
        return dict.__getitem__(self, elem)


def load_ml_dtypes():
    """Add the bf16/fp8 rows (ml_dtypes types) to the numpy maps."""
    import ml_dtypes
    for e in ML_DTYPES:
        dt = np.dtype(getattr(ml_dtypes, DATA_LAYOUT[e].numpy_name))
        NUMPY_DTYPE[e] = dt
        _FROM_NUMPY[dt] = e


# Storage numpy dtype of each element type. tf32 has no row in the spec's table: it is stored
# in 4 bytes (5.1.2), as a float32 whose low 13 mantissa bits are zero.
NUMPY_DTYPE: dict[ElementType, np.dtype] = _NumpyDtypes(
    {e: np.dtype(row.numpy_name) for e, row in DATA_LAYOUT.items() if e not in ML_DTYPES})
NUMPY_DTYPE[TF32] = np.dtype(np.float32)
# e2m1 and e5m3 have no row either: no array holds them (cuTile reads them from uint8 arrays with
# unpack_from_bytes). The interpreter keeps their tile values in float32, as tf32's (every value
# is exact there); pack/unpack encode the bits (interpret/tileops.py).
NUMPY_DTYPE[E2M1] = NUMPY_DTYPE[E5M3] = np.dtype(np.float32)

DLPACK_CODE: dict[ElementType, tuple[int, int]] = {
    e: (row.dlpack_code, row.dlpack_bits) for e, row in DATA_LAYOUT.items()}

TORCH_DTYPE_NAME: dict[ElementType, str] = {
    e: row.torch for e, row in DATA_LAYOUT.items() if row.torch is not None}

_FROM_DLPACK = {(row.dlpack_code, row.dlpack_bits, row.dlpack_lanes): e
                for e, row in DATA_LAYOUT.items()}
_FROM_NUMPY = {NUMPY_DTYPE[e]: e for e in DATA_LAYOUT if e not in ML_DTYPES}


def elem_from_dlpack(code: int, bits: int, lanes: int = 1) -> ElementType:
    try:
        return _FROM_DLPACK[(code, bits, lanes)]
    except KeyError:
        raise TileTypeError(f"no Tile IR element type for DLPack dtype (code={code}, bits={bits}, "
                            f"lanes={lanes})") from None


def elem_from_numpy(dt) -> ElementType:
    """The element type stored as numpy dtype `dt` (unsigned ints map to their signless type)."""
    dt = np.dtype(dt)
    if dt.kind == "u" and dt.itemsize in (1, 2, 4, 8):
        dt = np.dtype(f"i{dt.itemsize}")
    hit = _FROM_NUMPY.get(dt)
    if hit is None:
        load_ml_dtypes()            # free when `dt` is an ml_dtypes type: the caller imported it
        hit = _FROM_NUMPY.get(dt)
    if hit is None:
        raise TileTypeError(f"no Tile IR element type for numpy dtype {dt}")
    return hit


# C++ spelling used by the emitted code (types defined by the tilepy runtime header).
CPP_TYPE: dict[ElementType, str] = {
    I1: "bool", I8: "int8_t", I16: "int16_t", I32: "int32_t", I64: "int64_t",
    F16: "__half", BF16: "__nv_bfloat16", F32: "float", F64: "double", TF32: "float",
    E4M3: "tp::f8e4m3", E5M2: "tp::f8e5m2", E8M0: "tp::f8e8m0",      # runtime's fp8.h
    E2M1: "tp::f4e2m1", E5M3: "tp::f8e5m3",
}
