"""Column masks in registers: a broadcast of a row that is a function of the column alone is
rebuilt at the full shape.

Attention's `where(key.reshape((1, BN)) < seq_len, s, -inf)` broadcasts a (1, BN) row into the
(BM, BN) scores, whose layout is the mma accumulator's; the row's own layout is another, so the
broadcast went through shared memory every step (a store, two barriers, byte loads). When the row
is computed from `iota`, scalars and element-wise ops only, this pass moves the broadcast to the
leaves instead: the scalars are splatted, the element-wise ops run on the full tile (in the mma
layout, per fragment slot), and the iota becomes `broadcast(reshape(iota))`, which the emitter
computes from each slot's own column (emitter.py `column_iota`). The old row dies: the pass
runs dce after a rewrite (a dead broadcast still went through shared memory: a store and two
barriers per KV step, which the GPU compiler cannot remove).
Runs on the module before its lowering plan (plan.py), in place.
"""
from __future__ import annotations

from ..ir import Module, Operation, Value, make_op
from .dce import dce


def _def(v: Value) -> Operation | None:
    return getattr(v, "op", None)


def _column_fn(v: Value) -> bool:
    """v (a row (1, ..., 1, n) or a 1-D (n)) is a function of its column index alone."""
    o = _def(v)
    if o is None:
        return False
    if o.name == "iota":
        return True
    if o.name == "broadcast":
        return o.source.type.numel == 1
    if o.name == "reshape":
        return o.source.type.rank >= 1 and o.source.type.shape[-1] == v.type.shape[-1] \
            and _column_fn(o.source)
    return bool(o.opdef.elementwise) and o.results[0] is v and \
        all(_column_fn(x) for x in o.operands)


def _rebuild(v: Value, shape: tuple, emit) -> Value:
    """v as a tile of `shape` (its columns repeated down the rows), built with `emit`."""
    o = _def(v)
    ones = (1,) * len(shape)
    if o.name == "iota":
        return emit("broadcast", emit("reshape", v, ones[:-1] + shape[-1:]), shape)
    if o.name == "broadcast":
        return emit("broadcast", emit("reshape", o.source, ones), shape)
    if o.name == "reshape":
        return _rebuild(o.source, shape, emit)
    args = [_rebuild(x, shape, emit) for x in o.operands]
    return emit(o.name, *args, attrs=o.attrs, result=v.type.with_shape(shape))


def column_iota(op: Operation) -> bool:
    """`op` broadcasts reshape(iota) to (1, ..., 1, n) (a row of column indices) along its
    rows: the leaf this pass leaves. (A column `iota[:, None]` broadcast along the columns
    varies by row: not this.)"""
    src = _def(op.source)
    if src is None or src.name != "reshape" or _def(src.source) is None \
            or _def(src.source).name != "iota":
        return False
    s = tuple(op.source.type.shape)
    return s[:-1] == (1,) * (len(s) - 1) and s[-1] == op.result.type.shape[-1]


def _candidates(module: Module):
    for op in module.walk():
        if op.name != "broadcast" or column_iota(op):
            continue
        s, t = op.source.type, op.result.type
        if s.rank >= 2 and s.numel > 1 and s.shape[:-1] == (1,) * (s.rank - 1) \
                and t.numel > s.numel and _column_fn(op.source):
            yield op


def sink_broadcasts(module: Module) -> Module:
    """Rebuild every column broadcast at its full shape; the rows they replaced are removed
    (dce): a dead broadcast would still go through shared memory (a store and two barriers)."""
    found = list(_candidates(module))
    for b in found:
        block = b.parent
        at = block.ops.index(b)

        def emit(name, *operands, attrs=None, result=None):
            if name in ("reshape", "broadcast"):     # (source, shape)
                src, shape = operands
                if tuple(src.type.shape) == tuple(shape):
                    return src
                new = make_op(name, src, result_types=[src.type.with_shape(shape)])
            else:                                    # an element-wise op at the full shape
                new = make_op(name, *operands, result_types=[result], **(attrs or {}))
            nonlocal at
            block.ops.insert(at, new)
            new.parent = block
            at += 1
            return new.results[0]

        new = _rebuild(b.source, tuple(b.result.type.shape), emit)
        for op in module.walk():
            op.operands = [new if x is b.result else x for x in op.operands]
    return dce(module) if found else module
