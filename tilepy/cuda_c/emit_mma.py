"""Emission of mmaf / mmai: tensor cores where the accumulator has the mma.sync layout.

An accumulator in an MmaAcc layout (lowering/assign_layouts.py) takes `tp::mma_tc` of
tensorcore.h: its operands are shared-memory operands (`tp::SmemOp`) when the K-loop pipeline
(lowering/pipeline.py) already put them there, else register tiles that the template stages into
the scratch buffer. Any other accumulator layout (tiles too small for whole 16 x 8 fragments)
takes the generic shared-memory template `tp::mma` (batched too; a one-element operand of an
outer product as a one-element tile), a one-element accumulator `tp::mma_dot` (every thread's).

Kinds (tensorcore.h): 0 scalar multiply-adds (f32, f64), 1 f16, 2 bf16, 3 tf32, 4 i8, 5 e4m3 and
6 e5m2 (tensor cores on sm_89 and newer, multiply-adds in float before); flags:
bit 0 / 1 lhs / rhs signed (mmai), bit 2 / 3 round lhs / rhs to tf32 while loading fragments.
"""
from __future__ import annotations

from ..errors import TileUnsupportedFeatureError
from ..lowering.layouts import MmaAcc
from ..lowering.wgmma import a_in_registers
from ..types import BF16, E4M3, E5M2, F16, F32, F64, I8, TF32, TileType
from .emit_ops import _one
from .emit_wgmma import emit_wgmma
from .emitter import EMIT, EmitContext, _bytes

KIND = {F16: 1, BF16: 2, TF32: 3, F32: 0, F64: 0, I8: 4, E4M3: 5, E5M2: 6}


def mma_kind(op) -> tuple[int, int]:
    e = op.lhs.type.elem
    if e not in KIND:
        raise TileUnsupportedFeatureError(f"mma on {e} is not supported by the CUDA C++ backend yet")
    flags = 0
    if op.name == "mmai":
        flags = (op.signedness_lhs == "signed") | (op.signedness_rhs == "signed") << 1
    return KIND[e], flags


def _staged_bytes(t: TileType) -> int:
    return (t.numel * _bytes(t) + 127) // 128 * 128


def emit_mma(ctx: EmitContext, op):
    a, b, c = op.lhs.type, op.rhs.type, op.acc.type
    kind, flags = mma_kind(op)
    batch = a.shape[0] if a.rank == 3 else 1
    (m, k), n = a.shape[-2:], b.shape[-1]
    if c.numel == 1:           # [1 x K] @ [K x 1]: a scalar every thread computes
        ctx.need_smem(2 * k * _bytes(a))
        ctx.w.line(f"const {ctx.ty(op.result)} {ctx.define(op.result)} = tp::mma_dot<{k}, {flags}>("
                   f"{_one(ctx, op.lhs)}, {_one(ctx, op.rhs)}, {ctx(op.acc)}, tp_smem);", op.loc)
        return
    lay = ctx.plan.layout(op.result)
    if id(op.rhs) in ctx.wg_staged:   # the sm_90a class (A staged, hoisted or in registers)
        return emit_wgmma(ctx, op, kind)
    name = ctx.define(op.result)
    if isinstance(lay, MmaAcc):
        (ea, fa), (eb, fb) = ctx.operand(op.lhs), ctx.operand(op.rhs)
        flags |= fa << 2 | fb << 3
        a_regs = kind == 1 and a_in_registers(ctx.plan.layout(op.lhs), lay)
        scratch = (0 if id(op.lhs) in ctx.staged or a_regs else _staged_bytes(a)) + \
                  (0 if id(op.rhs) in ctx.staged else _staged_bytes(b))
        ctx.need_smem(scratch)
        ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::mma_tc<{batch}, {m}, {n}, {k}, {kind}, "
                   f"{flags}>({ea}, {eb}, {ctx(op.acc)}, {'tp_smem' if scratch else 'nullptr'});",
                   op.loc)
        return
    ctx.need_smem((a.numel + b.numel) * _bytes(a))
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::mma<{m}, {n}, {k}, {flags}, {batch}>("
               f"{_one(ctx, op.lhs)}, {_one(ctx, op.rhs)}, {ctx(op.acc)}, tp_smem);", op.loc)


def emit_mma_scaled(ctx: EmitContext, op):
    """mma_scaled.h: the scales as floats, then the operands in their own type, through shared
    memory; the products of the scaled operands summed in float."""
    a, b = op.lhs.type, op.rhs.type
    if min(a.numel, b.numel, op.acc.type.numel, op.lhs_scale.type.numel,
           op.rhs_scale.type.numel) == 1:
        raise TileUnsupportedFeatureError("mma_scaled with single-element operands or scales is "
                                          "not supported by the CUDA C++ backend yet")
    batch = a.shape[0] if a.rank == 3 else 1
    (m, k), n = a.shape[-2:], b.shape[-1]
    scales = op.lhs_scale.type.numel + op.rhs_scale.type.numel     # floats, then the operands
    ctx.need_smem(4 * scales + a.numel * _bytes(a) + b.numel * _bytes(b))
    name = ctx.define(op.result)
    args = ", ".join(ctx(v) for v in (op.lhs, op.rhs, op.acc, op.lhs_scale, op.rhs_scale))
    block = k // op.lhs_scale.type.shape[-1]
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::mma_scaled<{m}, {n}, {k}, {batch}, {block}>("
               f"{args}, tp_smem);", op.loc)


EMIT_MMA = {"mmaf": emit_mma, "mmai": emit_mma, "mmaf_scaled": emit_mma_scaled}
EMIT.update(EMIT_MMA)
