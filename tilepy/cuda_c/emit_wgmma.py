"""Emission of a warpgroup MMA (the sm_90a class, lowering/wgmma.py): an mma whose operands the
K-loop pipeline staged in wgmma's layouts (`tp::WgOp`) becomes one line calling `tp::wgmma_tc`
(include/tilepy/wgmma_ops.h): wgmma.fence, the m64nNk16 MMAs of the tile as one group, commit,
wait. Its accumulator keeps the MmaAcc layout the plan gave it (all warps along M)."""
from __future__ import annotations

from .emitter import EmitContext


def emit_wgmma(ctx: EmitContext, op, kind: int):
    (m, k), n = op.lhs.type.shape[-2:], op.rhs.type.shape[-1]
    (ea, _), (eb, _) = ctx.operand(op.lhs), ctx.operand(op.rhs)
    name = ctx.define(op.result)
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::wgmma_tc<{m}, {n}, {k}, {kind}>({ea}, {eb}, "
               f"{ctx(op.acc)});", op.loc)
