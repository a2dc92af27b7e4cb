"""Reusable op constraints, phrased like the spec's constraint lists.

Each factory returns a function `op -> None | str`; the string is the broken rule with the
offending types, e.g. "lhs and rhs must have the same element type (got f16, f32)". The
builder raises it as TileTypeError, the verifier as TileVerificationError, both prefixed
with the op name. Each function carries `.rule` (an id) and `.phrase` (the fixed part of its
message), see `opdef.rule`.
"""
from __future__ import annotations

from ..types import PtrType, TensorViewType, TileType, TokenType
from .opdef import describe, rule


def member_types(op, name: str) -> list:
    kind = op.opdef.member_kind(name)
    if kind == "operand":
        return [v.type for v in op.operand_group(name)]
    if kind == "result":
        return [v.type for v in op.result_group(name)]
    raise KeyError(f"{op.name}: no operand or result '{name}'")


def names_text(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _gather(op, names):
    """(name, type) pairs of the named members that are present."""
    return [(n, t) for n in names for t in member_types(op, n)]


def _tiles(op, names):
    return [t for _, t in _gather(op, names) if isinstance(t, TileType)]


def all_tiles(*names):
    @rule(f"tiles({','.join(names)})", "must be a tile")
    def check(op):
        for n, t in _gather(op, names):
            if not isinstance(t, TileType):
                return f"{n} must be a tile (got {t})"
    return check


def same_elem(*names):
    phrase = f"{names_text(names)} must have the same element type"

    @rule(f"same_elem({','.join(names)})", phrase)
    def check(op):
        ts = _tiles(op, names)
        if len({t.elem for t in ts}) > 1:
            return f"{phrase} (got {', '.join(str(t.elem) for t in ts)})"
    return check


def same_shape(*names):
    phrase = f"{names_text(names)} must have the same shape"

    @rule(f"same_shape({','.join(names)})", phrase)
    def check(op):
        ts = _tiles(op, names)
        if len({t.shape for t in ts}) > 1:
            return f"{phrase} (got {', '.join(t.shape_str() for t in ts)})"
    return check


def same_rank(*names):
    phrase = f"{names_text(names)} must have the same rank"

    @rule(f"same_rank({','.join(names)})", phrase)
    def check(op):
        ts = _tiles(op, names)
        if len({t.rank for t in ts}) > 1:
            return f"{phrase} (got {', '.join(str(t.rank) for t in ts)})"
    return check


def same_type(*names):
    phrase = f"{names_text(names)} must have the same type"

    @rule(f"same_type({','.join(names)})", phrase)
    def check(op):
        ts = [t for _, t in _gather(op, names)]
        if len(set(ts)) > 1:
            return f"{phrase} (got {', '.join(map(str, ts))})"
    return check


def elem_in(allowed, *names):
    allowed = tuple(allowed)

    @rule(f"elem_in({','.join(names)})", "must have element type")
    def check(op):
        for n, t in _gather(op, names):
            if isinstance(t, TileType) and t.elem not in allowed:
                return f"{n} must have element type {describe(allowed)} (got {t.elem})"
    return check


def elem_is_ptr(*names):
    @rule(f"ptr({','.join(names)})", "must be a tile of pointers")
    def check(op):
        for n, t in _gather(op, names):
            if not (isinstance(t, TileType) and isinstance(t.elem, PtrType)):
                return f"{n} must be a tile of pointers (got {t})"
    return check


def rank_in(ranks, *names):
    ranks = tuple(ranks)

    @rule(f"rank_in({','.join(names)})", "must have rank")
    def check(op):
        for n, t in _gather(op, names):
            if isinstance(t, TileType) and t.rank not in ranks:
                want = " or ".join(str(r) for r in ranks)
                return f"{n} must have rank {want} (got rank {t.rank}, {t})"
    return check


def scalar(*names):
    """0-d tiles (what kernel parameters, loop bounds and indices are)."""
    @rule(f"scalar({','.join(names)})", "must be a 0-d tile")
    def check(op):
        for n, t in _gather(op, names):
            if not (isinstance(t, TileType) and t.rank == 0):
                return f"{n} must be a 0-d tile (got {t})"
    return check


def scalar_int(*names):
    """0-d integer tiles (indices, shapes, bounds)."""
    @rule(f"scalar_int({','.join(names)})", "must be a 0-d integer tile")
    def check(op):
        for n, t in _gather(op, names):
            if not (isinstance(t, TileType) and t.rank == 0 and not isinstance(t.elem, PtrType)
                    and t.elem.is_int):
                return f"{n} must be a 0-d integer tile (got {t})"
    return check


def is_token(*names):
    @rule(f"token({','.join(names)})", "must be a token")
    def check(op):
        for n, t in _gather(op, names):
            if not isinstance(t, TokenType):
                return f"{n} must be a token (got {t})"
    return check


def is_tensor_view(*names):
    @rule(f"tensor_view({','.join(names)})", "must be a tensor_view")
    def check(op):
        for n, t in _gather(op, names):
            if not isinstance(t, TensorViewType):
                return f"{n} must be a tensor_view (got {t})"
    return check


def count_is(name: str, want, what: str):
    """The number of values of variadic member `name` must equal `want(op)` (or be skipped
    when `want` returns None)."""
    @rule(f"count({name})", f"{what}")
    def check(op):
        n, w = len(member_types(op, name)), want(op)
        if w is not None and n != w:
            return f"{what} (expected {w}, got {n})"
    return check


def first_failure(op, constraints) -> tuple[str, str] | None:
    """(rule id, message) of the first constraint `op` breaks, or None."""
    for c in constraints:
        msg = c(op)
        if msg:
            return c.rule, msg
    return None


def check_all(op, constraints) -> str | None:
    failure = first_failure(op, constraints)
    return failure[1] if failure else None
