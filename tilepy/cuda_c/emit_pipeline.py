"""Emission of a pipelined `for` loop (lowering/pipeline.py): stage buffers, the fetch lambda,
the prologue, and the per-iteration wait / barrier / prefetch before the body.

    __syncthreads();                          // (in an outer loop) earlier readers are done
    auto tp_fetch0 = [&](const int32_t tp_k, const int tp_st) {
      ... the index ops, with the induction variable as tp_k ...
      tp::load_async<...>(A_tiles, {bm, tp_k}, pad, tp::SmemOp<...>{tp_pipe0 + tp_st * 2048});
    };
    for (int tp_s = 0; tp_s < S - 1; ++tp_s) { if (lb + tp_s * step < ub) tp_fetch0(...); tp::pipe_commit(); }
    int tp_it0 = 0;
    for (int32_t k = lb; k < ub; k += step, ++tp_it0) {
      tp::pipe_wait<S - 2>();                 // this thread's copies of iteration tp_it0 landed
      __syncthreads();                        // everyone's; and iteration tp_it0 - 1 is done
      if (k + (S - 1) * step < ub) tp_fetch0(k + (S - 1) * step, (tp_it0 + S - 1) % S);
      tp::pipe_commit();
      const int tp_stage0 = tp_it0 % S;
      ... the body; its mmas read tp::SmemOp<...>{tp_pipe0 + tp_stage0 * 2048} ...
    }
    tp::pipe_wait<0>();

In the sm_90a class, operands a tensor map describes (lowering/wgmma.py `TmaBox`) are brought by
TMA instead: the stages get an mbarrier each (`tp_full0`, a 1 KiB buffer of the dynamic shared
memory, initialized before the prologue), the fetch lambda's one issuing thread (a lane of warp 0
elected before the loop, `tp_issuer`) issues the stage's copies, which complete on the stage's
mbarrier, and arrives on it (the coordinates of indices the loop does not change,
`tp_at0 = tp::tma_at<...>(A_view, bm)`, worked out before the lambda, and for the int32 indices it
changes a `tp::TmaAxis` made there);
each iteration waits for the phase of its stage's fill (the n-th fill of a stage completes its phase n,
parity n % 2) before the barrier:

      if (tp_issuer) {   // one thread issues the stage's TMA copies
        tp::tma_load<tp::Shape<128, 32>, 128>(tp_tmap0, {tp_at0, tp_axis1.at(tp_k)},
                                              tp::WgOp<...>{...}, tp_full0 + tp_st);
        tp::mbar_arrive(tp_full0 + tp_st);
      }
      ...
      tp::mbar_wait(tp_full0 + tp_it0 % S, tp_it0 / S % 2);   // its TMA copies landed

Where the loop's warpgroup MMAs keep one group in flight (`Pipeline.wg_deferred`,
emit_wgmma.py), the barrier and the fetch move after the body: the stage refilled is the one the
previous iteration's MMAs read, which every warpgroup's wait_group 1 in this iteration's body
has retired; after the loop, `tp::wgmma_drain` retires the last group (where there was one).
Where cp.async brings an operand, a barrier stays before the body too (every thread's copies
landed and were fenced before any warpgroup's MMAs read them), and the commit follows the fetch:

    for (...) {
      tp::pipe_wait<S - 2>(); __syncthreads();     // (operands by cp.async)
      tp::mbar_wait(tp_full0 + tp_it0 % S, tp_it0 / S % 2);   // (operands by TMA)
      const int tp_stage0 = tp_it0 % S;
      tp::wgmma_acc<...>(A stage, B stage, acc);   // wait_group 1
      __syncthreads();
      if (k + (S - 1) * step < ub) tp_fetch0(k + (S - 1) * step, (tp_it0 + S - 1) % S);
      tp::pipe_commit();                           // (operands by cp.async)
    }
    if (tp_it0 > 0) { tp::wgmma_drain(acc); }

A loop whose operands TMA brings every one carries the stage, the stage refilled and the parity;
the others work them out from tp_it0. What ptxas would otherwise recompute at every use in the
loop is worked out before it: the tensor maps' and mbarriers' addresses (`tp::tma_kept`) and the
warpgroup MMAs' descriptors' low words (`tp_wd0 = tp::wg_lo_once<B>(stage 0's WgOp)`; the MMA
takes `tp::WgLo{tp_wd0 + tp_stage0 * units, ...}`, units: a stage's 16-byte units).
"""
from __future__ import annotations

from ..errors import TileInternalError
from ..lowering.memfacts import unit_extent_divisible
from ..lowering.pipeline import Operand, Pipeline
from ..types import CPP_TYPE, I32, I64, TileType
from .emit_wgmma import tma_map
from .emitter import EmitContext, _view_args, emit_op, pad_value, shape_t


def smem_op(o: Operand, offset: str = "") -> str:
    bt, r, c = o.shape
    tr = "true" if o.trans else "false"
    if o.wg:   # a warpgroup MMA's operand (lowering/wgmma.py, include/tilepy/wgmma_ops.h)
        return f"tp::WgOp<{CPP_TYPE[o.elem]}, {r}, {c}, {tr}>{{{o.buffer}{offset}}}"
    return f"tp::SmemOp<{CPP_TYPE[o.elem]}, {bt}, {r}, {c}, {tr}>{{{o.buffer}{offset}}}"


def _tile(o: Operand) -> str:
    bt, r, c = o.shape
    return f"{(bt, r, c) if bt > 1 else (r, c)} {o.elem}"


def _hoisted_coords(ctx: EmitContext, pipe: Pipeline) -> dict:
    """The TMA coordinates of the K loop's copies, worked out before the loop where they can be
    (ptxas leaves them in the fetch's branches otherwise): (load, dimension) -> a C++ expression.
    A tile index the loop does not change gets its coordinate (tp::tma_at) once (16 of the 97
    instructions of the f16 128x128x32 loop); one it changes, an int32, a tp::TmaAxis whose
    `at` takes it in the fetch (the extent's tests done once: 8 of its 80)."""
    blk, out = pipe.loop.body.block, {}
    for s in pipe.loads:
        if s.tma is None or id(s.load.view) not in ctx.names:    # (a view the body makes)
            continue
        shape = shape_t(s.load.view.type.tile_shape)
        for d, x in enumerate(s.load.index):
            if id(x) in ctx.names and x not in blk.args:          # defined before the loop
                out[(id(s), d)] = name = ctx.fresh("tp_at")
                ctx.w.line(f"const uint32_t {name} = tp::tma_at<{shape}, {d}>({ctx(s.load.view)}, "
                           f"(int64_t){ctx(x)});  // a TMA coordinate the loop keeps", s.load.loc)
            elif x.type.elem == I32:
                name = ctx.fresh("tp_axis")
                out[(id(s), d)] = lambda inner, x=x, name=name: f"{name}.at({inner(x)})"
                ctx.w.line(f"const auto {name} = tp::tma_axis<{shape}, {d}>({ctx(s.load.view)});  "
                           f"// the TMA coordinates of the loop's tile indices", s.load.loc)
    return out


def _coord(c, inner: EmitContext) -> str | None:
    return c(inner) if callable(c) else c


def _keeps(pipe: Pipeline) -> bool:
    """Whether the loop keeps its tensor maps' and mbarriers' addresses (tp::tma_kept): where
    every warpgroup MMA of it leaves its group in flight (a GEMM's K loop: 5 of the f16
    128x128x32 loop's 62 instructions). Not where the MMAs wait in their own step (attention:
    more uniform values live across the body, ptxas keeps the addresses in per-thread registers
    and moves them to uniform ones at every copy: no instruction saved, 4 registers more at
    d=128)."""
    return bool(pipe.wg_mmas) and len(pipe.wg_deferred) == len(pipe.wg_mmas)


def _kept_maps(ctx: EmitContext, pipe: Pipeline) -> dict:
    """The tensor maps of the K loop's TMA copies, each made a reference before the loop by
    tp::tma_kept where the loop `_keeps` them (its address worked out once, where ptxas
    recomputed it at every copy): id(load) -> its C++ name."""
    out, kept = {}, {}
    for s in pipe.loads:
        if s.tma is not None:
            param = tma_map(ctx, s.tma, s.operand.elem)
            if param not in kept and _keeps(pipe):
                kept[param] = ctx.fresh("tp_map")
                ctx.w.line(f"const tp::TensorMap& {kept[param]} = *tp::tma_kept(&{param});  // "
                           f"its address kept for the loop's copies", s.load.loc)
            out[id(s)] = kept.get(param, param)
    return out


def _fetch_lambda(ctx: EmitContext, pipe: Pipeline, name: str, iv, bars: str | None):
    hoisted = _hoisted_coords(ctx, pipe) if bars is not None else {}
    maps = _kept_maps(ctx, pipe)
    if bars is not None:   # the elected lane, once (ptxas still issues each copy once, no loop
        # over the warp's lanes; in the loop, its shuffle and elect.sync were 4 instructions)
        issuer = ctx.fresh("tp_issuer")
        ctx.w.line(f"const bool {issuer} = tp::tma_issuer();  // the lane that issues the TMA "
                   f"copies", pipe.loop.loc)
    inner = ctx.nested()
    inner.define(iv, "tp_k")
    for o in pipe.index_ops:
        emit_op(inner, o)
    for s in pipe.loads:
        _define_view(inner, s.load.view)
    for s in pipe.loads:
        if s.tma is not None:
            continue
        targs, view, idx = _view_args(inner, s.load, s.swap)
        t = s.load.tile.type
        pad = pad_value(inner, s.load)
        dst = smem_op(s.operand, f" + tp_st * {s.operand.elems}")
        vec = "true" if s.vec else "false"
        whole = unit_extent_divisible(s.load.view, 16 // s.operand.elem.storage_bytes)
        inner.w.line(f"tp::load_async<{targs}, {vec}, {'true' if whole else 'false'}>"
                     f"({view}, {{{idx}}}, {pad}, {dst});", s.load.loc)
    if bars is not None:
        with inner.w.indent(f"if ({issuer}) {{  // one thread issues the stage's TMA copies"):
            for s in pipe.loads:
                if s.tma is not None:   # (the stage's offset in 64 bits: NVVM 13.0, whose
                    # shared-memory pointers are 64-bit, made st << 12 then << 1 of the int
                    # product, an instruction more per copy than one shift; 13.5 is unchanged)
                    dst = smem_op(s.operand, f" + (int64_t)tp_st * {s.operand.elems}")
                    shape = shape_t(s.load.view.type.tile_shape)
                    at = ", ".join(_coord(hoisted.get((id(s), d)), inner) or
                                   f"tp::tma_at<{shape}, {d}>({inner(s.load.view)}, (int64_t){inner(x)})"
                                   for d, x in enumerate(s.load.index))
                    inner.w.line(f"tp::tma_load<{shape}, {s.tma.rows}>("
                                 f"{maps[id(s)]}, {{{at}}}, {dst}, {bars} + tp_st);", s.load.loc)
            inner.w.line(f"tp::mbar_arrive({bars} + tp_st);  // the stage's one arrival")
    ctx.counter, ctx.undetermined = inner.counter, inner.undetermined
    it = CPP_TYPE[iv.type.elem]
    with ctx.w.indent(f"auto {name} = [&](const {it} tp_k, const int tp_st) {{", closer="};",
                      loc=pipe.loop.loc):
        for depth, text, loc in inner.w.lines:
            ctx.w.lines.append((ctx.w.depth + depth, text, loc))


def _define_view(inner: EmitContext, v) -> None:
    """A view the loop body makes (the partition view of a list element, `As[g]`, is made at its
    first load) is made again inside the fetch lambda, from the pure ops that define it."""
    if id(v) in inner.names:
        return
    o = v.op
    if not o.opdef.pure or o.regions:
        raise TileInternalError(f"a pipelined load's view comes from '{o.name}' in the loop body")
    for x in o.operands:
        _define_view(inner, x)
    emit_op(inner, o)


def _descriptor_words(ctx: EmitContext, op, pipe: Pipeline, stage: str) -> None:
    """The low words of the loop's warpgroup-MMA operands' descriptors (start address and leading
    byte offset, wgmma_ops.h `wg_lo_once`), worked out once before the loop: a staged operand's
    of stage 0, a stage's being that plus the stage's offset in 16-byte units, and a hoisted
    operand's (ptxas recomputed each from its buffer's address in every iteration: 4 of the f16
    128x128x32 loop's 66 instructions). `ctx.wg_lo`: (operand, role B) -> its C++ expression."""
    staged = {id(s.operand.value): s.operand for s in pipe.loads if s.operand.wg}
    hoisted = {id(h.value): h for h in pipe.hoisted if h.wg}
    for mma in pipe.wg_mmas:
        for v, b in ((mma.lhs, False), (mma.rhs, True)):
            o = staged.get(id(v)) or hoisted.get(id(v))
            if o is None or (id(v), b) in ctx.wg_lo:
                continue
            name = ctx.fresh("tp_wd")
            ctx.w.line(f"const uint32_t {name} = tp::wg_lo_once<{'true' if b else 'false'}>("
                       f"{smem_op(o)});  // {'B' if b else 'A'}'s descriptors' low word", op.loc)
            units = o.elems * o.elem.storage_bytes // 16
            ctx.wg_lo[(id(v), b)] = name if id(v) in hoisted else \
                f"{name} + (uint32_t){stage} * {units}u"


def _in_loop(op) -> bool:
    o = op.parent.parent_op
    while o is not None and o.name != "entry":
        if o.name in ("for", "loop"):
            return True
        o = o.parent.parent_op
    return False


def emit_pipelined_for(ctx: EmitContext, op, pipe: Pipeline):
    blk = op.body.block
    iv, carried = blk.args[0], blk.args[1:]
    for arg, init, res in zip(carried, op.initValues, op.results):
        if isinstance(arg.type, TileType):
            n = ctx.define(arg)
            ctx.alias(res, arg)
            ctx.w.line(f"{ctx.ty(arg)} {n} = {ctx(init)};", op.loc)
    lb, ub, step = ctx(op.lowerBound), ctx(op.upperBound), ctx(op.step)
    if _in_loop(op):   # the buffers are refilled: the previous run's readers must be done
        ctx.w.line("__syncthreads();  // earlier readers of the loop's shared-memory operands are "
                   "done", op.loc)
    for h in pipe.hoisted:
        ctx.buffer(h.buffer, h.elem, h.elems, f"the loop-invariant {_tile(h)} mma operand", op.loc)
        ctx.w.line(f"tp::stage({ctx(h.value)}, {smem_op(h)});  // loop-invariant mma operand", op.loc)
        ctx.staged[id(h.value)] = (smem_op(h), 0)
        if h.wg:    # read by wgmma, through the async proxy: the threads' stores fenced for it
            ctx.wg_staged.add(id(h.value))
    if any(h.wg for h in pipe.hoisted):
        ctx.w.line("tp::fence_proxy_async();  // the staged operand's stores, seen by wgmma", op.loc)
    if pipe.hoisted and not pipe.loads:
        ctx.w.line("__syncthreads();", op.loc)
    ivn = ctx.define(iv)
    it = CPP_TYPE[iv.type.elem]
    if not pipe.loads:
        header = f"for ({it} {ivn} = {lb}; {ivn} < {ub}; {ivn} += {step}) {{"
        with ctx.w.indent(header, loc=op.loc):
            for o in blk.ops:
                emit_op(ctx, o)
        return
    S = pipe.stages
    fetch, count, stage = ctx.fresh("tp_fetch"), ctx.fresh("tp_it"), ctx.fresh("tp_stage")
    for s in pipe.loads:
        ctx.buffer(s.operand.buffer, s.operand.elem, S * s.operand.elems,
                   f"the {_tile(s.operand)} mma operand in {S} pipeline stage(s)", s.load.loc)
        ctx.skip.update(id(o) for o in s.skipped)
        ctx.staged[id(s.operand.value)] = (smem_op(s.operand, f" + {stage} * {s.operand.elems}"),
                                           int(s.operand.round_tf32))
        if s.operand.wg:
            ctx.wg_staged.add(id(s.operand.value))
    bars = ctx.fresh("tp_full") if any(s.tma is not None for s in pipe.loads) else None
    copies = any(s.tma is None for s in pipe.loads)     # cp.async copies, in groups
    commit = " tp::pipe_commit();" if copies else ""
    deferred = pipe.wg_deferred
    ctx.wg_deferred.update(id(o) for o in deferred)
    if bars is not None:   # (1 KiB: the buffers after it stay where the swizzle patterns repeat)
        ctx.buffer(bars, I64, 1024 // 8, f"the {S} stages' mbarriers", op.loc, "uint64_t")
        ctx.w.line(f"tp::mbar_init({bars}, {S});  // the stages' mbarriers: their TMA copies "
                   f"complete on them", op.loc)
        ctx.w.line("__syncthreads();  // the mbarriers are initialized", op.loc)
    uses = bars   # (init and inval: bars)
    if bars is not None and _keeps(pipe):
        uses = ctx.fresh("tp_bars")
        ctx.w.line(f"uint64_t* const {uses} = tp::tma_kept({bars});  // their address kept for "
                   f"the loop", op.loc)
    _fetch_lambda(ctx, pipe, fetch, iv, uses)
    ctx.w.line(f"for (int tp_s = 0; tp_s < {S - 1}; ++tp_s) {{ if ({lb} + tp_s * {step} < {ub}) "
               f"{fetch}({lb} + tp_s * {step}, tp_s);{commit} }}", op.loc)
    _descriptor_words(ctx, op, pipe, stage)
    ctx.w.line(f"int {count} = 0;", op.loc)
    _emit_rolled(ctx, op, pipe, fetch, uses, count, stage, copies)
    if deferred:   # the last group, before anything reads the accumulator; not where the loop
        # ran no iteration (the initial values reach the wait otherwise: ptxas serializes the
        # MMAs), and before the copies' last wait (after it, ptxas serializes them too)
        results = [op.results[blk.args.index(o.acc) - 1] for o in deferred]
        ctx.wg_in_flight.update(id(r) for r in results)
        drains = " ".join(f"tp::wgmma_drain({ctx.names[id(r)]});" for r in results)
        ctx.w.line(f"if ({count} > 0) {{ {drains} }}  // retires the last MMA group", op.loc)
    if copies:
        ctx.w.line("tp::pipe_wait<0>();", op.loc)
    if bars is not None and _in_loop(op):   # initialized again by the next run of the loop
        ctx.w.line("__syncthreads();  // every thread's last wait is done", op.loc)
        ctx.w.line(f"tp::mbar_inval({bars}, {S});", op.loc)


def _emit_rolled(ctx: EmitContext, op, pipe: Pipeline, fetch: str, bars: str | None, count: str,
                 stage: str, copies: bool):
    blk, S, deferred = op.body.block, pipe.stages, pipe.wg_deferred
    ivn, it = ctx(blk.args[0]), CPP_TYPE[blk.args[0].type.elem]
    lb, ub, step = ctx(op.lowerBound), ctx(op.upperBound), ctx(op.step)
    step_it = f"++{count}"
    at, phase, ahead_st = f"{count} % {S}", f"{count} / {S} % 2", f"({count} + {S - 1}) % {S}"
    if pipe.wg_mmas and not copies:   # TMA in the sm_90a class: the stage and parity carried
        ring, par, prev = ctx.fresh("tp_ring"), ctx.fresh("tp_phase"), ctx.fresh("tp_prev")
        ctx.w.line(f"int {ring} = 0;  // {count} % {S}, and {par}: {count} / {S} % 2", op.loc)
        ctx.w.line(f"uint32_t {par} = 0;", op.loc)
        ctx.w.line(f"int {prev} = {S - 1};  // ({count} + {S - 1}) % {S}: the stage refilled",
                   op.loc)
        step_it += f", {prev} = {ring}, {ring} = {ring} + 1 == {S} ? ({par} ^= 1u, 0) : {ring} + 1"
        at, phase, ahead_st = ring, par, prev
    header = f"for ({it} {ivn} = {lb}; {ivn} < {ub}; {ivn} += {step}, {step_it}) {{"
    with ctx.w.indent(header, loc=op.loc):
        if copies:
            ctx.w.line(f"tp::pipe_wait<{S - 2}>();  // this thread's copies for this iteration landed")
        if bars is not None:
            ctx.w.line(f"tp::mbar_wait({bars} + {at}, {phase});  // its TMA copies landed")
        ahead = f"{ivn} + {S - 1} * {step}"
        refill = f"if ({ahead} < {ub}) {fetch}({ahead}, {ahead_st});"
        if not deferred:
            ctx.w.line("__syncthreads();  // everyone's did, and the stage refilled next was read")
            ctx.w.line(refill)
            if copies:
                ctx.w.line("tp::pipe_commit();")
        elif copies:
            ctx.w.line("__syncthreads();  // everyone's copies landed (and were fenced for wgmma)")
        ctx.w.line(f"const int {stage} = {at};")
        for o in blk.ops:
            emit_op(ctx, o)
        if deferred:
            ctx.w.line("__syncthreads();  // the previous iteration's MMAs, which read the stage "
                       "refilled next, are retired in every warpgroup")
            ctx.w.line(refill)
            if copies:
                ctx.w.line("tp::pipe_commit();")


__all__ = ["emit_pipelined_for", "shape_t", "smem_op"]
