"""How an op is declared: operands, attributes, results, regions, syntax, type rule, constraints.

An `OpDef` row is all the rest of the compiler knows about an op: the builder infers result
types with `infer` and checks `constraints`, the verifier re-checks the same constraints (plus
`region_rules` once regions are built), the printer and the parser follow `syntax`, and the
CUDA emitter looks the op up by name. Rows live in `ops_*.py` and register into `OPS`.

Syntax strings use a small format language, read in both directions:
  $x            an operand (variadic: comma list), an attribute, or a flag (prints nothing)
  type($x)      the type(s) of operand or result x; type1($x): one type shared by all of x
  ?( ... )?     an optional group, present when its first $-reference is present
  anything else a literal; whitespace in the format is whitespace in the output, so
                "$view[$index]" prints "%v[%a, %b]" and "rounding<$rounding_mode>" "rounding<zero>".

Every constraint is a function `op -> None | str` tagged with a rule id and a phrase (`rule`):
the phrase is a fixed part of the message it returns, so tests and `tilepy.tools.coverage` can
check that an invalid instance is rejected by the very rule it breaks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ..types import TileType, Type
from .attrs import (AssumePredicate, DenseValue, OptimizationHints, format_elements,  # noqa: F401
                    format_scalar)


# ---------------------------------------------------------------------------- attribute kinds
@dataclass(frozen=True)
class EnumKind:
    name: str
    values: tuple[str, ...]


ROUNDING = EnumKind("RoundingMode", ("nearest_even", "zero", "negative_inf", "positive_inf",
                                     "approx", "full", "nearest_int_to_zero", "nearest_away"))
CMP_PREDICATE = EnumKind("ComparisonPredicate", ("equal", "not_equal", "less_than",
                                                 "less_than_or_equal", "greater_than",
                                                 "greater_than_or_equal"))
CMP_ORDERING = EnumKind("ComparisonOrdering", ("unordered", "ordered"))
SIGNEDNESS = EnumKind("Signedness", ("unsigned", "signed"))
MEMORY_ORDERING = EnumKind("MemoryOrderingSemantics", ("weak", "relaxed", "acquire", "release",
                                                       "acq_rel"))
MEMORY_SCOPE = EnumKind("MemoryScope", ("tl_blk", "device", "sys"))
OVERFLOW = EnumKind("IntegerOverflow", ("none", "no_signed_wrap", "no_unsigned_wrap", "no_wrap"))
SYMBOL_VISIBILITY = EnumKind("SymbolVisibility", ("public", "private"))   # NVIDIA 13.3 globals
ATOMIC_MODE = EnumKind("AtomicRMWMode", ("and", "or", "xor", "add", "addf", "max", "min", "umax",
                                         "umin", "xchg"))

# Non-enum attribute kinds: "flag", "int", "ints", "dense", "string", "symbol", "identities",
# "type", "bool", "bools" (a tuple of bools, `[true, false]`; absent when none is true), "hints",
# "predicate".
ATTR_KINDS = ("flag", "int", "ints", "dense", "string", "symbol", "identities", "type", "bool",
              "bools", "hints", "predicate")


# ---------------------------------------------------------------------------- declarations
@dataclass(frozen=True)
class OperandSpec:
    name: str
    variadic: bool = False
    optional: bool = False


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: Any                 # an EnumKind or one of ATTR_KINDS
    optional: bool = True
    allowed: tuple[str, ...] | None = None   # the enum values this op accepts (None: all)

    @property
    def values(self) -> tuple[str, ...]:
        return self.allowed if self.allowed is not None else self.kind.values

    @property
    def rule(self) -> str | None:
        """Rule id of the op-specific restriction of an enum attribute, if there is one."""
        return f"attr:{self.name}" if self.allowed is not None else None


@dataclass(frozen=True)
class ResultSpec:
    name: str
    variadic: bool = False


# A constraint returns None when satisfied, else the broken rule as text (no op name prefix).
Constraint = Callable[[Any], "str | None"]


def rule(rule_id: str, phrase: str):
    """Tag a constraint function with its rule id and the fixed phrase of its message."""
    def deco(fn):
        fn.rule, fn.phrase = rule_id, phrase
        return fn
    return deco


def attr_phrase(name: str) -> str:
    return f"attribute '{name}' must be one of"


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
    terminators: tuple[str, ...] = ()  # ops that may end the blocks of this op's regions
    terminator: bool = False
    pure: bool = True
    elementwise: bool = False
    commutative: bool = False          # a binary op whose operands may be swapped
    mma: bool = False                  # a matrix multiply-accumulate (lhs, rhs, acc)
    reads: str | None = None           # the operand group a memory op reads through
    writes: str | None = None          # the operand group a memory op writes through
    category: str = "core"
    section: str = ""                  # spec section, e.g. "8.7.4"
    tokens: Any = None                 # parsed syntax, filled in lazily

    @property
    def memory_effect(self) -> bool:
        """Reads or writes memory, the print log or the order of memory operations: an op
        neither pure nor control flow (cuTile's MemoryEffect LOAD/STORE)."""
        return not (self.pure or self.regions or self.terminator)

    def member_kind(self, name: str) -> str | None:
        """"operand", "attr", "result", "region" or None: what `name` is in this op (asked for
        every named operand an op's constraints, printer or writer read: from a table made at
        the first question)."""
        kinds = self.__dict__.get("_kinds")
        if kinds is None:
            kinds = {}
            for kind, names in (("region", self.regions), ("result", [r.name for r in self.results]),
                                ("attr", [a.name for a in self.attrs]),
                                ("operand", [o.name for o in self.operands])):
                kinds.update(dict.fromkeys(names, kind))   # operands over attrs over results
            self.__dict__["_kinds"] = kinds
        return kinds.get(name)

    def operand_spec(self, name: str) -> OperandSpec:
        return next(o for o in self.operands if o.name == name)

    def attr_spec(self, name: str) -> AttrSpec:
        return next(a for a in self.attrs if a.name == name)

    def syntax_tokens(self) -> list[tuple[str, bool]]:
        """The syntax as (token, preceded-by-space) pairs."""
        if self.tokens is None:
            self.tokens = tokenize_syntax(self.syntax or "")
        return self.tokens

    def rules(self) -> dict[str, str]:
        """rule id -> phrase, for every rule of this op (constraints, region rules, attributes)."""
        out = {a.rule: attr_phrase(a.name) for a in self.attrs if a.rule}
        for c in (*self.constraints, *self.region_rules):
            out[c.rule] = c.phrase
        return out


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


def attr_failure(opdef: "OpDef", attrs: dict) -> tuple[str, str] | None:
    """(rule id, message) of a missing required attribute or an enum value outside what this
    op accepts; None when the attributes are fine."""
    for spec in opdef.attrs:
        v = attrs.get(spec.name)
        if v is None:
            if not spec.optional:
                return "structure", f"missing attribute '{spec.name}'"
        elif isinstance(spec.kind, EnumKind) and v not in spec.values:
            return f"attr:{spec.name}", f"{attr_phrase(spec.name)} {', '.join(spec.values)} (got {v})"
    return None


def check_attrs(opdef: "OpDef", attrs: dict) -> str | None:
    failure = attr_failure(opdef, attrs)
    return failure[1] if failure else None


# ---------------------------------------------------------------------------- the registry
OPS: dict[str, OpDef] = {}


def op(opdef: OpDef) -> OpDef:
    assert opdef.name not in OPS, opdef.name
    for c in (*opdef.constraints, *opdef.region_rules):
        assert hasattr(c, "rule"), f"{opdef.name}: constraint {c} has no rule tag"
    OPS[opdef.name] = opdef
    return opdef


def O(name, variadic=False, optional=False):  # noqa: E743
    return OperandSpec(name, variadic, optional)


def A(name, kind, optional=True, allowed=None):
    return AttrSpec(name, kind, optional, tuple(allowed) if allowed is not None else None)


def R(name, variadic=False):
    return ResultSpec(name, variadic)


def same_as(operand_index=0):
    return lambda types, attrs: [types[operand_index]]


# ---------------------------------------------------------------------------- type predicates
def elem_of(t: Type):
    return t.elem if isinstance(t, TileType) else None


def describe(types) -> str:
    return "tile<" + " | ".join(str(t) for t in types) + ">"
