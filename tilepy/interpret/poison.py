"""Undefined lanes: which elements of each tile hold no defined value, and why.

Some elements are undefined without the program being wrong: a partition-view load without a
padding value reads unspecified values past the tensor's edge; a masked pointer load without a
padding value; an integer division whose divisor lane is 0 because it was padding. Real hardware
computes garbage there and the kernel never stores it. The interpreter therefore marks such lanes
instead of failing, carries the marks through every op (element-wise: a lane is undefined when any
operand's lane is; data movement moves the marks with the data; reductions and mma spread them),
and raises only when an undefined lane is *observed*: stored to memory, used as a pointer, an index,
a loop bound or a branch condition. The error names the op that made the lane undefined.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TileValueError


@dataclass
class Undef:
    mask: np.ndarray        # bool, the value's shape; True = undefined
    why: str                # what made the first of them undefined (with its source location)


def merge(a: Undef | None, b: Undef | None, shape) -> Undef | None:
    if a is None:
        return b
    if b is None:
        return a
    return Undef(np.broadcast_to(a.mask, shape) | np.broadcast_to(b.mask, shape), a.why)


def full(u: Undef | None, shape) -> np.ndarray:
    return np.zeros(shape, dtype=bool) if u is None else np.broadcast_to(u.mask, shape)


def require(u: Undef | None, what: str, lanes=None):
    """Raise when an undefined lane is observed (lanes: the bool mask of lanes that matter)."""
    if u is None:
        return
    m = u.mask if lanes is None else (np.broadcast_to(u.mask, np.shape(lanes)) & lanes)
    if np.any(m):
        first = tuple(int(i) for i in np.argwhere(np.asarray(m))[0]) if np.ndim(m) else ()
        at = f" (element {first})" if first else ""
        raise TileValueError(f"{what} uses an undefined value{at}: {u.why}")


def describe(op, what: str) -> str:
    loc = f" at {op.loc}" if op.loc is not None else ""
    return f"{what} in {op.name}{loc}"


_MOVE = {"reshape", "broadcast", "permute", "cat", "extract"}


def propagate(ex, op, inputs, undefs, outputs) -> list:
    """Undefined lanes of each result of a non-control op (None: all defined)."""
    from .arith import HANDLERS
    if all(u is None for u in undefs):
        return [None] * len(outputs)
    name = op.name
    if name == "select":
        c, a, b = inputs
        shape = np.shape(outputs[0])
        m = full(undefs[0], shape) | np.where(c, full(undefs[1], shape), full(undefs[2], shape))
        return [_mk(m, undefs)]
    if op.opdef.elementwise:
        shape = np.shape(outputs[0])
        m = np.zeros(shape, dtype=bool)
        for u in undefs:
            m = m | full(u, shape)
        return [_mk(m, undefs)]
    if name in _MOVE:
        for u in undefs[1:] if name == "extract" else ():
            require(u, f"{name} index")
        arrays = [full(u, np.shape(v)) for u, v in zip(undefs, inputs)]
        args = arrays if name != "extract" else [arrays[0], *inputs[1:]]
        return [_mk(HANDLERS[name](ex, op, args)[0], undefs)]
    if name in ("reduce", "scan"):
        return _fold(op, inputs, undefs, outputs)
    if name in ("mmaf", "mmai"):
        a, b, c = (full(u, np.shape(v)) for u, v in zip(undefs, inputs))
        m = np.matmul(a.astype(np.int64), np.ones(np.shape(b), np.int64)) > 0
        m |= np.matmul(np.ones(np.shape(a), np.int64), b.astype(np.int64)) > 0
        return [_mk(m | c, undefs)]
    if name in ("assume",):
        return [undefs[0]]
    if name in ("pack", "unpack"):
        return [_mk(np.full(np.shape(outputs[0]), np.any(full(undefs[0], np.shape(inputs[0])))),
                    undefs)]
    return None            # other ops observe every operand: the caller requires them defined


def _fold(op, inputs, undefs, outputs):
    shape = np.shape(inputs[0])
    m = np.zeros(shape, dtype=bool)
    for u in undefs:
        m = m | full(u, shape)
    dim = op.dim
    if op.name == "reduce":
        r = np.any(m, axis=dim)
    else:
        moved = np.moveaxis(m, dim, 0)
        if op.reverse:
            moved = moved[::-1]
        acc = np.logical_or.accumulate(moved, axis=0)
        if op.reverse:
            acc = acc[::-1]
        r = np.moveaxis(acc, 0, dim)
    return [_mk(r, undefs) for _ in outputs]


def _mk(mask, undefs) -> Undef | None:
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return None
    why = next(u.why for u in undefs if u is not None)
    return Undef(mask.copy(), why)
