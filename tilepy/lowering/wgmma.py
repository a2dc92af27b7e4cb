"""The sm_90a class of a kernel (ARCHITECTURE.md decision 8): K-loop mmas as warpgroup MMA.

The class is the same kernel planned again with every mma accumulator's warps along the rows
(`assign_layouts(rows=True)`: MmaAcc with warps_n 1, warp w holding FM fragments of 16 rows),
which is wgmma's accumulator layout up to a permutation of A's rows in shared memory
(cuda_c/include/tilepy/wgmma_ops.h). An mma takes wgmma (`mark_wgmma` marks both of its
pipelined operands, `Operand.wg`; the emitter spells them `tp::WgOp` and the mma `tp::wgmma_tc`)
when all of this holds, else it stays mma.sync in that class too:

- f16 x f16 or bf16 x bf16 into an f32 accumulator (`mmaf`), batch 1, K a multiple of 16;
- the accumulator is MmaAcc over all the block's warps along M, whole warpgroups (nt % 128);
- both operands are loads of the same K-loop pipeline, A not transposed (wgmma's K-major A);
  B stored N x K (transposed, K-major) or K x N (N-major), N one of wgmma's n tilepy spells
  (16, 32, 64, 128, 256);
- every storage row is 32, 64 or a multiple of 128 bytes (the swizzle widths), and every
  pipeline buffer of the kernel a multiple of 1024 bytes (so each starts where the swizzle
  patterns repeat: descriptors with base offset 0).

`sm90a_layouts` returns None when no mma of the kernel qualifies: its source has no sm_90a class.
"""
from __future__ import annotations

from ..ir import Module
from ..types import BF16, F16, F32
from .assign_layouts import LayoutPlan, assign_layouts
from .layouts import MmaAcc
from .pipeline import Pipeline, StagedLoad, plan_pipelines

WGMMA_N = (16, 32, 64, 128, 256)


def _row_ok(nbytes: int) -> bool:
    return nbytes in (32, 64) or nbytes % 128 == 0


def _operand_ok(s: StagedLoad, is_a: bool) -> bool:
    o = s.operand
    bt, r, c = o.shape
    if bt != 1 or o.round_tf32 or (is_a and o.trans):
        return False
    rows, cols = (c, r) if o.trans else (r, c)
    return rows % 8 == 0 and _row_ok(cols * o.elem.storage_bytes)


def _buffers_aligned(pipes: dict) -> bool:
    return all(s.operand.elems * s.operand.elem.storage_bytes % 1024 == 0
               for p in pipes.values() for s in p.loads) and \
        all(h.elems * h.elem.storage_bytes % 1024 == 0 for p in pipes.values() for h in p.hoisted)


def _wgmma_pair(op, pipe: Pipeline, layouts: LayoutPlan) -> tuple[StagedLoad, StagedLoad] | None:
    """The staged loads of op's A and B when op can be a warpgroup MMA, else None."""
    lay = layouts.layout(op.result)
    a, b = op.lhs.type, op.rhs.type
    if op.name != "mmaf" or op.acc.type.elem != F32 or a.elem not in (F16, BF16) or b.elem != a.elem:
        return None
    if not isinstance(lay, MmaAcc) or lay.batch != 1 or lay.warps_n != 1 or lay.warps_m % 4 or \
            layouts.nt != 32 * lay.warps_m:
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    if a.rank != 2 or k % 16 or n not in WGMMA_N:
        return None
    sa = next((s for s in pipe.loads if s.operand.value is op.lhs), None)
    sb = next((s for s in pipe.loads if s.operand.value is op.rhs), None)
    if sa is None or sb is None or not _operand_ok(sa, True) or not _operand_ok(sb, False):
        return None
    return sa, sb


def mark_wgmma(pipes: dict, layouts: LayoutPlan) -> int:
    """Mark the operands of the mmas that become warpgroup MMAs (Operand.wg); how many did."""
    if not _buffers_aligned(pipes):
        return 0
    count = 0
    for pipe in pipes.values():
        for op in pipe.loop.body.block.ops:
            pair = _wgmma_pair(op, pipe, layouts) if op.opdef.mma else None
            if pair is not None:
                pair[0].operand.wg = layouts.layout(op.result).frags[0]
                pair[1].operand.wg = 1
                count += 1
    return count


def sm90a_layouts(module: Module, nt: int, may_alias) -> LayoutPlan | None:
    """The sm_90a class's layouts, or None when no mma of `module` would be a warpgroup MMA."""
    if nt % 128 or not any(op.opdef.mma for op in module.walk()):
        return None
    layouts = assign_layouts(module, nt, rows=True)
    return layouts if mark_wgmma(plan_pipelines(module, layouts, may_alias, 2), layouts) else None
