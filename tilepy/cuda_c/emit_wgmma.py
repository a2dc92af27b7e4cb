"""Emission of a warpgroup MMA (the sm_90a class, lowering/wgmma.py): an mma whose B the K-loop
pipeline staged in wgmma's layout (`tp::WgOp`), and A too (in the loop, or once before it), or
whose A is a 16-bit register tile in the accumulator's layout (wgmma's register A), becomes one
line calling
include/tilepy/wgmma_ops.h: `tp::wgmma_tc` (wgmma.fence, the m64nNk16 MMAs of the tile as one
group, commit, wait_group 0), or, for an mma lowering/wgmma.py `deferred`, `tp::wgmma_acc` into
the carried accumulator in place with wait_group 1: the accumulator's values (the loop's block
argument, the mma's result, the loop's result) are then read through `tp::wgmma_read` (checked
by the faithful CPU mode), and emit_pipeline.py retires the last group after the loop. The
accumulator keeps the MmaAcc layout the plan gave it (all warps along M).

The staged epilogue: a store lowering/wgmma.py `staged_stores` took becomes `tp::tma_store`
(wgmma_ops.h), staging the tile in the K loops' pipeline buffers (the longest run of them the
kernel has allocated by then, 1 KiB aligned) in passes of as many 64-row blocks as fit, each
written out by TMA stores through a tensor map of the store's view, or `tp::staged_store` where
no map describes the view (the threads read each pass back in row order and store 16-byte
chunks); where even 64 rows do not fit, the plain store stays."""
from __future__ import annotations

from dataclasses import replace

from ..types import CPP_TYPE
from .emitter import EMIT, EmitContext, _vec, _view_args, barrier, emit_store_view, shape_t


def tma_map(ctx: EmitContext, box, elem) -> str:
    """The kernel parameter of tensor map `box` (lowering/wgmma.py TmaBox) of `elem` elements,
    one per distinct map: a TMA load's or store's."""
    key = (box, elem)
    if key not in ctx.tma_maps:
        ctx.tma_maps.append(key)
    return f"tp_tmap{ctx.tma_maps.index(key)}"


def _stage_area(ctx: EmitContext) -> tuple[str, int]:
    """(first buffer, bytes) of the longest run of consecutive pipeline stage buffers allocated
    so far that starts 1 KiB aligned (wgmma's layouts repeat every 1 KiB); ("", 0) if none."""
    stages = {s.operand.buffer for p in ctx.pipelines.values() for s in p.loads}
    best, run, offset = ("", 0), ("", 0), 0
    for _, name, nbytes in ctx.buffers:
        if name not in stages:
            run = ("", 0)
        elif run[0]:
            run = (run[0], run[1] + nbytes)
        elif offset % 1024 == 0:
            run = (name, nbytes)
        if run[1] > best[1]:
            best = run
        offset += nbytes
    return best


def _pass_rows(m: int, row_bytes: int, area: int) -> int:
    """The rows of a staged store's pass: the most 64-row blocks dividing the tile's `m` rows that
    fit `area` bytes (more than 256 only in multiples of 256, TMA's largest box); 0: none fits."""
    fits = [r for r in range(64, m + 1, 64)
            if m % r == 0 and r * row_bytes <= area and (r <= 256 or r % 256 == 0)]
    return max(fits, default=0)


def emit_store(ctx: EmitContext, op):
    how = ctx.tma_stores.get(id(op))
    if how is None:
        return emit_store_view(ctx, op)
    t = op.tile.type
    (m, n), (stage, area) = t.shape[-2:], _stage_area(ctx)
    pr = _pass_rows(m, n * t.elem.storage_bytes, area)
    if not pr:
        return emit_store_view(ctx, op)
    barrier(ctx, op)
    targs, view, idx = _view_args(ctx, op)
    shape, buf = shape_t(t.shape), f"reinterpret_cast<{CPP_TYPE[t.elem]}*>({stage})"
    passes = f"{m // pr} passes of {pr} rows" if pr < m else "one pass"
    if how.box is not None:
        br = min(pr, 256)
        box = replace(how.box, box=how.box.box[:-2] + (br, how.box.box[-1]))
        at = ", ".join(f"tp::tma_at<{shape}, {d}>({view}, (int64_t){ctx(x)})" for d, x in enumerate(op.index))
        ctx.w.line(f"tp::tma_store<{shape}, {pr}, {br}>({tma_map(ctx, box, t.elem)}, {{{at}}}, "
                   f"{ctx(op.tile)}, {buf});  // staged in the pipeline's buffers ({passes}), TMA "
                   f"stores", op.loc)
    else:
        dm = f"tp::DimMap<{', '.join(map(str, range(t.rank)))}>"    # (the identity: staged_store)
        sub = shape_t(t.shape[:-2] + (pr, n))
        ctx.w.line(f"tp::staged_store<{shape}, {sub}, {dm}, {_vec(op.view, t)}, {pr}>("
                   f"{view}, {{{idx}}}, {ctx(op.tile)}, {buf});  // staged in the pipeline's "
                   f"buffers ({passes}), 16-byte stores", op.loc)
    if ctx.poison_checks:     # faithful mode: stored poison is an error; elsewhere nothing
        ctx.w.line(f"tp::check_stored<{targs}>({view}, {{{idx}}}, {ctx(op.tile)});", op.loc)


EMIT["store_view_tko"] = emit_store


def _descriptor_words(ctx: EmitContext, op) -> str:
    """`tp::WgLo{A's, B's}, `: the descriptors' low words the K loop worked out before it
    (emit_pipeline.py), A's 0 where A is in registers; "" where it has none (wgmma_ops.h then
    works them out from the operands)."""
    lo_b = ctx.wg_lo.get((id(op.rhs), True))
    lo_a = ctx.wg_lo.get((id(op.lhs), False)) or ("0u" if id(op.lhs) not in ctx.staged else None)
    return f"tp::WgLo{{{lo_a}, {lo_b}}}, " if lo_a and lo_b else ""


def emit_wgmma(ctx: EmitContext, op, kind: int):
    (m, k), n = op.lhs.type.shape[-2:], op.rhs.type.shape[-1]
    (ea, _), (eb, _) = ctx.operand(op.lhs), ctx.operand(op.rhs)
    lo = _descriptor_words(ctx, op)
    if id(op) in ctx.wg_deferred:
        ctx.alias(op.result, op.acc)
        ctx.wg_in_flight.update((id(op.acc), id(op.result)))
        ctx.w.line(f"tp::wgmma_acc<{m}, {n}, {k}, {kind}>({ea}, {eb}, {lo}"
                   f"{ctx.names[id(op.acc)]});  // its group stays in flight", op.loc)
        return
    name = ctx.define(op.result)
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::wgmma_tc<{m}, {n}, {k}, {kind}>({ea}, {eb}, "
               f"{lo}{ctx(op.acc)});", op.loc)
