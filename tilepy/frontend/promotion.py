"""Numeric promotion (cuTile's rules) as data.

Within a category (bool < integer < float) dtypes form a lattice given by `WIDENS` edges: the
promotion of two dtypes is their least common upper bound. Across categories, the higher
category's dtype wins (int + float -> float). Signed with unsigned integers, f16 with bf16, and
any restricted float (tf32, fp8) with anything else have no bound: that is a TileTypeError.
"""
from __future__ import annotations

from ..errors import TileTypeError, TileValueError
from ..types import DType
from ..types import dtype as D

CATEGORY = {D.bool_: 0, D.int8: 1, D.int16: 1, D.int32: 1, D.int64: 1, D.uint8: 1, D.uint16: 1,
            D.uint32: 1, D.uint64: 1, D.float16: 2, D.bfloat16: 2, D.float32: 2, D.float64: 2}

# a -> b: a promotes implicitly to b (same category). The lattice is the transitive closure.
WIDENS = [
    (D.int8, D.int16), (D.int16, D.int32), (D.int32, D.int64),
    (D.uint8, D.uint16), (D.uint16, D.uint32), (D.uint32, D.uint64),
    (D.float16, D.float32), (D.bfloat16, D.float32), (D.float32, D.float64),
]


def _closure() -> dict[DType, set[DType]]:
    up = {d: {d} for d in CATEGORY}
    changed = True
    while changed:
        changed = False
        for a, b in WIDENS:
            for d, s in up.items():
                if a in s and b not in s:
                    s.add(b)
                    changed = True
    return up


UPPER = _closure()   # dtype -> every dtype it promotes to (itself included)

# Pairs that share upper bounds but must not mix implicitly (cuTile: f16 + bf16 is an error).
INCOMPATIBLE = {frozenset((D.float16, D.bfloat16))}


def promote(a: DType, b: DType) -> DType:
    """The common dtype of two tile dtypes, or TileTypeError."""
    if a == b:
        return a
    ca, cb = CATEGORY.get(a), CATEGORY.get(b)
    if ca is None or cb is None:
        restricted = a if ca is None else b
        raise TileTypeError(f"Implicit promotion of {a.name} and {b.name} is not supported "
                            f"({restricted.name} never promotes implicitly; use astype())")
    if ca != cb:
        return a if ca > cb else b
    common = UPPER[a] & UPPER[b]
    if not common or frozenset((a, b)) in INCOMPATIBLE:
        raise TileTypeError(f"Implicit promotion of {a.name} and {b.name} is not supported "
                            f"(no common type; convert one of them with astype())")
    # least upper bound: the common upper bound below every other one (it has the most bounds)
    return max(common, key=lambda d: len(UPPER[d]))


def can_cast_implicitly(src: DType, dst: DType) -> bool:
    """Whether src converts to dst without an explicit astype (store, loop-carried values)."""
    try:
        return promote(src, dst) == dst
    except TileTypeError:
        return False


def literal_dtype(value, other: DType | None) -> DType:
    """The dtype a Python literal takes when combined with a tile of dtype `other`."""
    if isinstance(value, bool):
        cat, default = 0, D.bool_
    elif isinstance(value, int):
        if not -2**63 <= value < 2**64 and (other is None or CATEGORY.get(other, 2) < 1):
            raise TileValueError(f"Integer constant {value} is out of range of any supported "
                                 f"integer type")
        cat, default = 1, D.int32 if -2**31 <= value < 2**31 else (
            D.int64 if -2**63 <= value < 2**63 else D.uint64)
    elif isinstance(value, float):
        cat, default = 2, D.float32
    else:
        raise TileTypeError(f"{type(value).__name__} values cannot be used as numbers in kernels")
    if other is None:
        return default
    ocat = CATEGORY.get(other, 2)
    if cat <= ocat:
        return other     # same or lower category: the tile's dtype wins
    return default
