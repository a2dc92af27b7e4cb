"""Attribute values that are more than a string or an int: dense constants, assume predicates,
optimization hints; and the spelling of scalar literals (shared by printer and parser).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TileTypeError
from ..types import F64, I1, TF32, ElementType
from ..types import element as E
from ..types.convert import (decode_bits, encode_bits, has_encoded_bits, round_float, to_storage,
                             to_tf32)


# ----------------------------------------------------------------------------- scalars
def _float_text(f: float, elem: ElementType) -> str:
    """The shortest decimal that reads back as the same `elem` value, with a '.' (MLIR)."""
    if elem == F64:
        s = repr(f)
    else:
        for p in range(1, 18):
            s = f"{f:.{p}g}"
            if float(round_float(float(s), elem)) == f:
                break
    mant, _, exp = s.partition("e")
    if "." not in mant:
        mant += ".0"
    return mant + (f"e{exp}" if exp else "")


def format_scalar(v, elem: ElementType) -> str:
    if elem == I1:
        return "true" if bool(v) else "false"
    if elem.is_int:
        return str(int(v))
    f = float(v)
    if np.isfinite(f):
        return _float_text(f, elem)
    # Inf/NaN have no decimal spelling: print the bit pattern (MLIR style).
    if has_encoded_bits(elem):       # held in float32 outside memory: the type's own code
        bits = encode_bits([f], elem)[0]
    else:
        bits = np.asarray(v, dtype=E.NUMPY_DTYPE[elem]).view(f"u{elem.storage_bytes}")
    return f"0x{int(bits):0{2 * elem.storage_bytes}X}"


def format_elements(arr: np.ndarray, elem: ElementType) -> str:
    if arr.ndim == 0:
        return format_scalar(arr[()], elem)
    return "[" + ", ".join(format_elements(a, elem) for a in arr) + "]"


def scalar_storage(text: str, elem: ElementType) -> np.ndarray:
    """A literal ("1.5", "-3", "true", "0x7FC00000") as a 0-d storage array of `elem`.
    Integers may be given in their signed or unsigned reading; hex gives a float's bits."""
    t = text.strip()
    if elem.is_int:
        if t in ("true", "false"):
            v = int(t == "true")
        else:
            try:
                v = int(t, 0)
            except ValueError:
                raise TileTypeError(f"'{t}' is not an integer literal for {elem}") from None
        lo, hi = elem.int_range(True)[0], elem.int_range(False)[1]
        if not lo <= v <= hi:
            raise TileTypeError(f"{t} does not fit in {elem} (range {lo}..{hi})")
        if elem == I1:
            return np.array(bool(v & 1))
        return np.array(v % (1 << elem.bits)).astype(np.uint64).astype(
            f"u{elem.storage_bytes}").view(E.NUMPY_DTYPE[elem])
    if t.lower().startswith("0x"):
        bits = int(t, 16)
        width = elem.bits if has_encoded_bits(elem) else 8 * elem.storage_bytes
        if bits >= 1 << width:
            raise TileTypeError(f"bit pattern {t} is too wide for {elem}")
        if has_encoded_bits(elem):
            return decode_bits([bits], elem).reshape(())
        return np.array(bits, dtype=f"u{elem.storage_bytes}").view(E.NUMPY_DTYPE[elem])
    if t in ("true", "false"):
        raise TileTypeError(f"'{t}' is not a {elem} literal")
    try:
        f = float(t)
    except ValueError:
        raise TileTypeError(f"'{t}' is not a floating-point literal for {elem}") from None
    return to_storage(round_float(f, elem), elem)


# ----------------------------------------------------------------------------- dense
@dataclass(frozen=True)
class DenseValue:
    """A DenseConstant: element type plus a numpy array (0-d for a splat) of storage values."""
    elem: ElementType
    array: np.ndarray = field(compare=False)

    def __post_init__(self):
        if self.elem == TF32:     # a tf32 constant holds tf32 values (float32 storage, 10-bit mantissa)
            object.__setattr__(self, "array", to_tf32(np.asarray(self.array, np.float32)))

    @property
    def is_splat(self) -> bool:
        return self.array.ndim == 0

    def __eq__(self, other):
        return (isinstance(other, DenseValue) and self.elem == other.elem
                and self.array.shape == other.array.shape
                and self.array.tobytes() == np.asarray(other.array, self.array.dtype).tobytes())

    def __hash__(self):
        return hash((self.elem, self.array.shape, self.array.tobytes()))

    def __str__(self) -> str:
        return f"<{self.elem}: {format_elements(self.array, self.elem)}>"


def dense_from_literals(elem: ElementType, nested) -> DenseValue:
    """Nested lists of literal strings (or one string) -> DenseValue."""
    if isinstance(nested, str):
        return DenseValue(elem, scalar_storage(nested, elem))

    def shape_of(x):
        return (len(x),) + (shape_of(x[0]) if x and isinstance(x[0], list) else ())

    def flat(x):
        return [y for z in x for y in flat(z)] if isinstance(x, list) else [x]

    def check(x, shape):
        if isinstance(x, str):
            if shape:
                raise TileTypeError("dense constant is not rectangular")
            return
        if not shape or len(x) != shape[0]:
            raise TileTypeError("dense constant is not rectangular")
        for y in x:
            check(y, shape[1:])

    shape = shape_of(nested)
    check(nested, shape)
    vals = [scalar_storage(s, elem) for s in flat(nested)]
    arr = np.array(vals, dtype=E.NUMPY_DTYPE[elem]).reshape(shape)
    return DenseValue(elem, arr)


# ----------------------------------------------------------------------------- assume
@dataclass(frozen=True)
class AssumePredicate:
    """An AssumePredicate of `assume` (spec 8.12.1): bounded, div_by or same_elements."""
    kind: str                          # "bounded" | "div_by" | "same_elements"
    lower: int | None = None           # bounded (None: `?`)
    upper: int | None = None
    divisor: int | None = None         # div_by
    every: int | None = None
    along: int | None = None
    values: tuple[int, ...] = ()       # same_elements

    def __str__(self) -> str:
        if self.kind == "bounded":
            b = ["?" if x is None else str(x) for x in (self.lower, self.upper)]
            return f"bounded<{b[0]}, {b[1]}>"
        if self.kind == "div_by":
            tail = f", every {self.every} along {self.along}" if self.every is not None else ""
            return f"div_by<{self.divisor}{tail}>"
        return f"same_elements<[{', '.join(map(str, self.values))}]>"


PREDICATE_KINDS = ("bounded", "div_by", "same_elements")


# ----------------------------------------------------------------------------- hints
@dataclass(frozen=True)
class OptimizationHints:
    """optimization_hints=<sm_100 = {num_cta_in_cga = 8}, ...>: per-architecture dictionaries."""
    entries: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]

    @staticmethod
    def of(d: dict) -> "OptimizationHints":
        return OptimizationHints(tuple((arch, tuple(kv.items())) for arch, kv in d.items()))

    def as_dict(self) -> dict:
        return {arch: dict(kv) for arch, kv in self.entries}

    def __str__(self) -> str:
        def val(v):
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, str):
                return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            return str(v)
        parts = [f"{arch} = {{{', '.join(f'{k} = {val(v)}' for k, v in kv)}}}"
                 for arch, kv in self.entries]
        return "<" + ", ".join(parts) + ">"


def escape_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
