"""Reusable op constraints, phrased like the spec's constraint lists.

Each factory returns a function `op -> None | str`; the string is the broken rule with the
offending types, e.g. "lhs and rhs must have the same element type (got f16, f32)". The
builder raises it as TileTypeError, the verifier as TileVerificationError, both prefixed
with the op name.
"""
from __future__ import annotations

from ..types import PtrType, TileType, is_power_of_two
from .opdef import describe


def member_types(op, name: str) -> list:
    kind = op.opdef.member_kind(name)
    if kind == "operand":
        return [v.type for v in op.operand_group(name)]
    if kind == "result":
        return [v.type for v in op.result_group(name)]
    raise KeyError(f"{op.name}: no operand or result '{name}'")


def _names(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _gather(op, names):
    """(name, type) pairs of the named members that are present, tiles only."""
    out = []
    for n in names:
        for t in member_types(op, n):
            out.append((n, t))
    return out


def all_tiles(*names):
    def check(op):
        for n, t in _gather(op, names):
            if not isinstance(t, TileType):
                return f"{n} must be a tile (got {t})"
    return check


def same_elem(*names):
    def check(op):
        ts = [t for _, t in _gather(op, names) if isinstance(t, TileType)]
        if len({t.elem for t in ts}) > 1:
            return (f"{_names(names)} must have the same element type "
                    f"(got {', '.join(str(t.elem) for t in ts)})")
    return check


def same_shape(*names):
    def check(op):
        ts = [t for _, t in _gather(op, names) if isinstance(t, TileType)]
        if len({t.shape for t in ts}) > 1:
            return (f"{_names(names)} must have the same shape "
                    f"(got {', '.join(t.shape_str() for t in ts)})")
    return check


def same_rank(*names):
    def check(op):
        ts = [t for _, t in _gather(op, names) if isinstance(t, TileType)]
        if len({t.rank for t in ts}) > 1:
            return (f"{_names(names)} must have the same rank "
                    f"(got {', '.join(str(t.rank) for t in ts)})")
    return check


def elem_in(allowed, *names):
    allowed = tuple(allowed)

    def check(op):
        for n, t in _gather(op, names):
            if isinstance(t, TileType) and t.elem not in allowed:
                return f"{n} must have element type {describe(allowed)} (got {t.elem})"
    return check


def elem_is_ptr(*names):
    def check(op):
        for n, t in _gather(op, names):
            if isinstance(t, TileType) and not isinstance(t.elem, PtrType):
                return f"{n} must be a tile of pointers (got {t})"
    return check


def rank_in(ranks, *names):
    ranks = tuple(ranks)

    def check(op):
        for n, t in _gather(op, names):
            if isinstance(t, TileType) and t.rank not in ranks:
                want = " or ".join(str(r) for r in ranks)
                return f"{n} must have rank {want} (got rank {t.rank}, {t})"
    return check


def scalar(*names):
    """0-d tiles (what kernel parameters and loop bounds are)."""
    def check(op):
        for n, t in _gather(op, names):
            if not (isinstance(t, TileType) and t.rank == 0):
                return f"{n} must be a 0-d tile (got {t})"
    return check


def same_type(*names):
    def check(op):
        ts = [t for _, t in _gather(op, names)]
        if len(set(ts)) > 1:
            return f"{_names(names)} must have the same type (got {', '.join(map(str, ts))})"
    return check


def pow2_shapes(op):
    for r in op.results:
        t = r.type
        if isinstance(t, TileType) and not all(is_power_of_two(d) for d in t.shape):
            return f"result shape must have power-of-two extents (got {t.shape_str()})"


def check_all(op, constraints) -> str | None:
    for c in constraints:
        msg = c(op)
        if msg:
            return msg
    return None
