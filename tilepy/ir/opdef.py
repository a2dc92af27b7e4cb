"""How an op is declared: operands, attributes, results, regions, syntax, type rule, constraints.

An `OpDef` row is all the rest of the compiler knows about an op: the builder infers result
types with `infer` and checks `constraints`, the verifier re-checks the same constraints, the
printer (and parser) follow `syntax`, and the CUDA emitter looks the op up by name.

Syntax strings use a small format language, read in both directions:
  $x            an operand (variadic: comma list), an attribute, or a flag (prints nothing)
  type($x)      the type(s) of operand or result x
  ?( ... )?     an optional group, present when its first $-reference is present
  anything else a literal; whitespace in the format is whitespace in the output, so
                "$view[$index]" prints "%v[%a, %b]" and "rounding<$rounding_mode>" "rounding<zero>".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..types import ElementType, TileType, Type
from ..types import element as E


# ---------------------------------------------------------------------------- attribute kinds
@dataclass(frozen=True)
class EnumKind:
    name: str
    values: tuple[str, ...]


ROUNDING = EnumKind("RoundingMode", ("nearest_even", "zero", "negative_inf", "positive_inf",
                                     "approx", "full", "nearest_int_to_zero"))
CMP_PREDICATE = EnumKind("ComparisonPredicate", ("equal", "not_equal", "less_than",
                                                 "less_than_or_equal", "greater_than",
                                                 "greater_than_or_equal"))
CMP_ORDERING = EnumKind("ComparisonOrdering", ("unordered", "ordered"))
SIGNEDNESS = EnumKind("Signedness", ("unsigned", "signed"))
MEMORY_ORDERING = EnumKind("MemoryOrderingSemantics", ("weak", "relaxed", "acquire", "release",
                                                       "acq_rel"))
MEMORY_SCOPE = EnumKind("MemoryScope", ("tl_blk", "device", "sys"))
OVERFLOW = EnumKind("IntegerOverflow", ("none", "no_signed_wrap", "no_unsigned_wrap", "no_wrap"))


@dataclass(frozen=True)
class DenseValue:
    """A DenseConstant: element type plus a numpy array (0-d for a splat) of storage values."""
    elem: ElementType
    array: np.ndarray = field(compare=False)

    @property
    def is_splat(self) -> bool:
        return self.array.ndim == 0

    def __eq__(self, other):
        return (isinstance(other, DenseValue) and self.elem == other.elem
                and self.array.shape == other.array.shape
                and np.array_equal(self.array.view(np.uint8), other.array.view(np.uint8)))

    def __hash__(self):
        return hash((self.elem, self.array.shape, self.array.tobytes()))

    def __str__(self) -> str:
        return f"<{self.elem}: {format_elements(self.array, self.elem)}>"


def format_scalar(v, elem: ElementType) -> str:
    if elem == E.I1:
        return "true" if bool(v) else "false"
    if elem.is_int:
        return str(int(v))
    f = float(v)
    if np.isfinite(f):
        r = repr(f)
        return r if ("." in r or "e" in r) else r + ".0"
    # Inf/NaN have no decimal spelling: print the bit pattern (MLIR style).
    bits = np.asarray(v, dtype=E.NUMPY_DTYPE[elem]).view(f"u{elem.storage_bytes}")
    return f"0x{int(bits):0{2 * elem.storage_bytes}X}"


def format_elements(arr: np.ndarray, elem: ElementType) -> str:
    if arr.ndim == 0:
        return format_scalar(arr[()], elem)
    return "[" + ", ".join(format_elements(a, elem) for a in arr) + "]"


# ---------------------------------------------------------------------------- declarations
@dataclass(frozen=True)
class OperandSpec:
    name: str
    variadic: bool = False
    optional: bool = False


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: Any            # EnumKind, or one of "flag", "int", "ints", "dense", "string",
    #                      "symbol", "identities", "type", "bool", "hints"
    optional: bool = True


@dataclass(frozen=True)
class ResultSpec:
    name: str
    variadic: bool = False


# A constraint returns None when satisfied, else the broken rule as text (no op name prefix).
Constraint = Callable[["Operation"], "str | None"]  # noqa: F821


@dataclass
class OpDef:
    name: str
    operands: tuple[OperandSpec, ...] = ()
    attrs: tuple[AttrSpec, ...] = ()
    results: tuple[ResultSpec, ...] = ()
    regions: tuple[str, ...] = ()
    syntax: str | None = None          # None: printed/parsed by a custom function
    infer: Callable | None = None      # (operand types, attrs) -> result types
    constraints: tuple[Constraint, ...] = ()
    region_rules: tuple[Constraint, ...] = ()   # checked by the verifier once regions are built
    terminator: bool = False
    pure: bool = True
    elementwise: bool = False
    category: str = "core"
    tokens: Any = None                 # parsed syntax, filled in lazily

    def member_kind(self, name: str) -> str | None:
        if any(o.name == name for o in self.operands):
            return "operand"
        if any(a.name == name for a in self.attrs):
            return "attr"
        if any(r.name == name for r in self.results):
            return "result"
        if name in self.regions:
            return "region"
        return None

    def operand_spec(self, name: str) -> OperandSpec:
        return next(o for o in self.operands if o.name == name)

    def attr_spec(self, name: str) -> AttrSpec:
        return next(a for a in self.attrs if a.name == name)

    def syntax_tokens(self) -> list[tuple[str, bool]]:
        """The syntax as (token, preceded-by-space) pairs."""
        if self.tokens is None:
            self.tokens = tokenize_syntax(self.syntax or "")
        return self.tokens


_SYNTAX_TOKEN = re.compile(r"\s*(\?\(|\)\?|type1?\(\$\w+\)|\$\w+|->|[A-Za-z_][\w.]*|\S)")


def tokenize_syntax(fmt: str) -> list[tuple[str, bool]]:
    out, pos = [], 0
    while pos < len(fmt):
        m = _SYNTAX_TOKEN.match(fmt, pos)
        if not m or not m.group(1):
            break
        out.append((m.group(1), m.start(1) > pos))
        pos = m.end()
    return out


# ---------------------------------------------------------------------------- type predicates
def elem_of(t: Type):
    return t.elem if isinstance(t, TileType) else None


def describe(types) -> str:
    return "tile<" + " | ".join(str(t) for t in types) + ">"
