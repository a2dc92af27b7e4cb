"""Emission of NVIDIA's 13.4 ops (ir/ops_dialect.py) that are not element-wise (fpowi is: its
functor `tp::op::fpowi` is in runtime.h).

- insert: `tp::insert` of runtime.h, through shared memory like extract/cat.
- memory_fence_alias_tko: a block barrier (every earlier access of the block's threads is done
  before any later one: the C++ backend's accesses of one tile block are spread over its
  threads) plus PTX `fence.proxy.alias` on the GPU (virtual aliases of the same memory).
- atomic_red_view_tko through a partition view: `tp::atomic_red`, each element's owner thread
  updates it with atomic_rmw's per-element atomics.
- gdc_wait_tko / gdc_launch_dependents_tko: nothing. tilepy launches kernels without
  programmatic dependent launch, where both are no-ops: a kernel starts after its stream
  predecessor completed (wait has nothing to wait for) and no dependent grid can start early.
"""
from __future__ import annotations

from ..errors import TileUnsupportedFeatureError
from .emit_control import emit_nothing
from .emit_ops import _MODE, _ORDER, _SCOPE, _one
from .emitter import EMIT, _bytes, _view_args, barrier, shape_t


def emit_insert(ctx, op):
    s, d = op.source.type, op.destination.type
    if d.numel == 1:
        ctx.alias(op.result, op.source)
        return
    ctx.need_smem((d.numel + s.numel) * _bytes(d))
    idx = ", ".join(f"(int){ctx(i)}" for i in op.indices)
    name = ctx.define(op.result)
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::insert<{shape_t(s.shape)}, "
               f"{shape_t(d.shape)}, {ctx.lay(op.result)}>({_one(ctx, op.source)}, "
               f"{_one(ctx, op.destination)}, {{{idx}}}, tp_smem);", op.loc)


def emit_fence_alias(ctx, op):
    ctx.w.line("tp::fence_alias();  // memory_fence_alias_tko", op.loc)


def emit_atomic_red(ctx, op):
    barrier(ctx, op)
    targs, view, idx = _view_args(ctx, op)
    modes = f"{_MODE[op.mode]}, {_ORDER[op.memory_ordering_semantics]}, {_SCOPE[op.memory_scope]}"
    ctx.w.line(f"tp::atomic_red<{targs}, {modes}>({view}, {{{idx}}}, {_one(ctx, op.tile)});",
               op.loc)


EMIT.update({"atomic_red_view_tko": emit_atomic_red, "insert": emit_insert, "memory_fence_alias_tko": emit_fence_alias,
             "gdc_wait_tko": emit_nothing, "gdc_launch_dependents_tko": emit_nothing})
