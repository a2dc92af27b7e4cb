"""Emission of a warpgroup MMA (the sm_90a class, lowering/wgmma.py): an mma whose B the K-loop
pipeline staged in wgmma's layout (`tp::WgOp`), and A too (in the loop, or once before it), or
whose A is a 16-bit register tile in the accumulator's layout (wgmma's register A), becomes one
line calling
include/tilepy/wgmma_ops.h: `tp::wgmma_tc` (wgmma.fence, the m64nNk16 MMAs of the tile as one
group, commit, wait_group 0), or, for an mma lowering/wgmma.py `deferred`, `tp::wgmma_acc` into
the carried accumulator in place with wait_group 1: the accumulator's values (the loop's block
argument, the mma's result, the loop's result) are then read through `tp::wgmma_read` (checked
by the faithful CPU mode), and emit_pipeline.py retires the last group after the loop. The
accumulator keeps the MmaAcc layout the plan gave it (all warps along M)."""
from __future__ import annotations

from .emitter import EmitContext


def emit_wgmma(ctx: EmitContext, op, kind: int):
    (m, k), n = op.lhs.type.shape[-2:], op.rhs.type.shape[-1]
    (ea, _), (eb, _) = ctx.operand(op.lhs), ctx.operand(op.rhs)
    if id(op) in ctx.wg_deferred:
        ctx.alias(op.result, op.acc)
        ctx.wg_in_flight.update((id(op.acc), id(op.result)))
        ctx.w.line(f"tp::wgmma_acc<{m}, {n}, {k}, {kind}>({ea}, {eb}, {ctx.names[id(op.acc)]});  "
                   f"// its group stays in flight", op.loc)
        return
    name = ctx.define(op.result)
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::wgmma_tc<{m}, {n}, {k}, {kind}>({ea}, {eb}, "
               f"{ctx(op.acc)});", op.loc)
