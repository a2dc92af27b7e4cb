"""Undefined lanes: which elements of each tile hold no defined value, and why.

Some elements are undefined without the program being wrong: a partition-view load without a
padding value reads unspecified values past the tensor's edge; a masked pointer load without a
padding value; an integer division whose divisor lane is 0 because it was padding. Real hardware
computes garbage there and the kernel never stores it. The interpreter therefore marks such lanes
instead of failing, carries the marks through every op (element-wise: a lane is undefined when any
operand's lane is; data movement moves the marks with the data; reductions and mma spread them),
and raises only when an undefined lane is *observed*: stored to memory, used as a pointer, an index,
a loop bound or a branch condition. The error names the op that made that lane undefined.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TileValueError
from .values import expand_scales

MAX_REASONS = 4


@dataclass
class Undef:
    mask: np.ndarray                                  # bool, the value's shape; True = undefined
    reasons: list = field(default_factory=list)       # (mask, why): what made those lanes so


def make(mask, why: str) -> Undef | None:
    mask = np.asarray(mask, dtype=bool)
    return Undef(mask.copy(), [(mask.copy(), why)]) if mask.any() else None


def merge(a: Undef | None, b: Undef | None, shape) -> Undef | None:
    if a is None or b is None:
        return a if b is None else b
    bc = lambda m: np.broadcast_to(m, shape)  # noqa: E731
    return Undef(bc(a.mask) | bc(b.mask),
                 [(bc(m), w) for m, w in (a.reasons + b.reasons)[:MAX_REASONS]])


def full(u: Undef | None, shape) -> np.ndarray:
    return np.zeros(shape, dtype=bool) if u is None else np.broadcast_to(u.mask, shape)


def require(u: Undef | None, what: str, lanes=None):
    """Raise when an undefined lane is observed (lanes: the bool mask of lanes that matter)."""
    if u is None:
        return
    m = u.mask if lanes is None else (np.broadcast_to(u.mask, np.shape(lanes)) & lanes)
    if not np.any(m):
        return
    first = tuple(int(i) for i in np.argwhere(np.asarray(m))[0]) if np.ndim(m) else ()
    why = next((w for rm, w in u.reasons if np.broadcast_to(rm, np.shape(m))[first]),
               u.reasons[0][1] if u.reasons else "unknown")
    at = f" (element {first})" if first else ""
    raise TileValueError(f"{what} uses an undefined value{at}: {why}")


def describe(op, what: str) -> str:
    loc = f" at {op.loc}" if op.loc is not None else ""
    return f"{what} in {op.name}{loc}"


_MOVE = {"reshape", "broadcast", "permute", "cat", "extract", "insert"}


def propagate(ex, op, inputs, undefs, outputs) -> list:
    """Undefined lanes of each result of an element-wise or data-movement op."""
    if all(u is None for u in undefs):
        return [None] * len(outputs)
    rule = _rule(ex, op, inputs, outputs)
    shapes = [np.shape(v) for v in inputs]

    def apply(masks):
        return [np.asarray(m, dtype=bool) for m in rule(masks)]
    unions = apply([full(u, s) for u, s in zip(undefs, shapes)])
    reasons = [[] for _ in outputs]
    for i, u in enumerate(undefs):
        for rm, why in (u.reasons if u is not None else []):
            only = [np.zeros(s, bool) for s in shapes]
            only[i] = np.broadcast_to(rm, shapes[i])
            for k, m in enumerate(apply(only)):
                if m.any() and len(reasons[k]) < MAX_REASONS:
                    reasons[k].append((m, why))
    return [Undef(m.copy(), r) if m.any() else None for m, r in zip(unions, reasons)]


def _rule(ex, op, inputs, outputs):
    """masks of the operands -> masks of the results."""
    from .arith import HANDLERS
    name = op.name
    out_shape = np.shape(outputs[0])
    if name == "select":
        c = np.asarray(inputs[0], dtype=bool)
        return lambda m: [np.broadcast_to(m[0], out_shape) | np.where(c, m[1], m[2])]
    if op.opdef.elementwise:
        return lambda m: [np.logical_or.reduce([np.broadcast_to(x, out_shape) for x in m])]
    if name in _MOVE:
        if name == "extract":
            return lambda m: HANDLERS[name](ex, op, [m[0], *inputs[1:]])
        if name == "insert":
            return lambda m: HANDLERS[name](ex, op, [m[0], m[1], *inputs[2:]])
        return lambda m: HANDLERS[name](ex, op, m)
    if name in ("reduce", "scan"):
        return lambda m: _fold(op, m, len(outputs))
    if name in ("mmaf", "mmai", "mmaf_scaled"):
        def mma(m):
            if name == "mmaf_scaled":                  # a scale's lanes reach its whole block
                sa, sb = expand_scales(m[3], m[4], np.shape(m[0])[-1])
                m = [m[0] | sa, m[1] | sb, m[2]]
            a, b, c = (x.astype(np.int64) for x in m)
            return [(np.matmul(a, np.ones_like(b)) > 0) | (np.matmul(np.ones_like(a), b) > 0)
                    | (c > 0)]
        return mma
    if name == "assume":
        return lambda m: [m[0]]
    return lambda m: [np.full(out_shape, bool(np.any(m[0])))]          # pack, unpack


def _fold(op, masks, n):
    m = np.logical_or.reduce(masks)
    dim = op.dim
    if op.name == "reduce":
        return [np.any(m, axis=dim)] * n
    moved = np.moveaxis(m, dim, 0)
    if op.reverse:
        moved = moved[::-1]
    acc = np.logical_or.accumulate(moved, axis=0)
    if op.reverse:
        acc = acc[::-1]
    return [np.moveaxis(acc, 0, dim)] * n
