"""Emission of structured control flow: for (pipelined ones in emit_pipeline.py), if, the
terminators continue / yield / return, and the parallel assignment of loop-carried values."""
from __future__ import annotations

from ..types import CPP_TYPE, TileType
from .emitter import EMIT, emit_op, emit_yield_in_lambda


def emit_for(ctx, op):
    pipe = ctx.pipelines.get(id(op))
    if pipe is not None:
        from .emit_pipeline import emit_pipelined_for
        return emit_pipelined_for(ctx, op, pipe)
    blk = op.body.block
    iv, carried = blk.args[0], blk.args[1:]
    for arg, init, res in zip(carried, op.initValues, op.results):
        if isinstance(arg.type, TileType):
            n = ctx.define(arg)
            ctx.alias(res, arg)
            ctx.w.line(f"{ctx.ty(arg)} {n} = {ctx(init)};", op.loc)
    ivn = ctx.define(iv)
    it = CPP_TYPE[iv.type.elem]
    with ctx.w.indent(f"for ({it} {ivn} = {ctx(op.lowerBound)}; {ivn} < {ctx(op.upperBound)}; "
                      f"{ivn} += {ctx(op.step)}) {{", loc=op.loc):
        for o in blk.ops:
            emit_op(ctx, o)


def _assign_results(ctx, targets, values, loc):
    pairs = [(t, v) for t, v in zip(targets, values)
             if isinstance(t.type, TileType) and ctx(t) != ctx(v)]
    if len(pairs) == 1:
        t, v = pairs[0]
        if ctx(t) != ctx(v):
            ctx.w.line(f"{ctx(t)} = {ctx(v)};", loc)
    elif pairs:      # parallel assignment: values may read targets
        tmps = [ctx.fresh("tmp") for _ in pairs]
        for tmp, (t, v) in zip(tmps, pairs):
            ctx.w.line(f"const {ctx.ty(t)} {tmp} = {ctx(v)};", loc)
        for tmp, (t, _) in zip(tmps, pairs):
            ctx.w.line(f"{ctx(t)} = {tmp};", loc)


def emit_continue(ctx, op):
    loop = _enclosing_loop(op)
    _assign_results(ctx, loop.body.block.args[1 if loop.name == "for" else 0:], op.operands, op.loc)
    if op.parent is not loop.body.block:
        ctx.w.line("continue;", op.loc)


def _enclosing_loop(op):
    o = op.parent.parent_op
    while o.name not in ("for", "loop"):
        o = o.parent.parent_op
    return o


def emit_if(ctx, op):
    for r in op.results:
        if isinstance(r.type, TileType):
            ctx.w.line(f"{ctx.ty(r)} {ctx.define(r)};", op.loc)
    with ctx.w.indent(f"if ({ctx(op.condition)}) {{", closer=None, loc=op.loc):
        for o in op.thenRegion.block.ops:
            emit_op(ctx, o)
    if op.elseRegion.blocks and op.elseRegion.block.ops and not (
            len(op.elseRegion.block.ops) == 1 and not op.elseRegion.block.ops[0].operands):
        with ctx.w.indent("} else {"):
            for o in op.elseRegion.block.ops:
                emit_op(ctx, o)
    else:
        ctx.w.line("}")


def emit_yield(ctx, op):
    parent = op.parent.parent_op
    if parent.name == "if":
        _assign_results(ctx, parent.results, op.operands, op.loc)
    else:
        emit_yield_in_lambda(ctx, op)


def emit_nothing(ctx, op):
    pass


def emit_return(ctx, op):
    if op.parent.parent_op.name != "entry" or op is not op.parent.ops[-1]:
        ctx.w.line("return;", op.loc)


EMIT_CONTROL = {"for": emit_for, "continue": emit_continue, "if": emit_if, "yield": emit_yield,
                "return": emit_return, "make_token": emit_nothing, "join_tokens": emit_nothing}
EMIT.update(EMIT_CONTROL)
