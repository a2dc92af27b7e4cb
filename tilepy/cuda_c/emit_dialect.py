"""Emission of NVIDIA's 13.4 ops (ir/ops_dialect.py) that are not element-wise (fpowi is: its
functor `tp::op::fpowi` is in runtime.h).

- insert: `tp::insert` of runtime.h, through shared memory like extract/cat.
- memory_fence_alias_tko: a block barrier (every earlier access of the block's threads is done
  before any later one: the C++ backend's accesses of one tile block are spread over its
  threads) plus PTX `fence.proxy.alias` on the GPU (virtual aliases of the same memory).
- atomic_red_view_tko through a partition view: `tp::atomic_red`, each element's owner thread
  updates it with atomic_rmw's per-element atomics.
- alloca: block-private memory, a buffer of its own in the kernel's shared memory (counted in
  its size; on the CPU the worker's, one block at a time), aligned at run time where the
  alignment asks for more than the 128 bytes every buffer starts at. One buffer per op: an alloca
  that runs again (in a loop) finds the last allocation's contents, which Tile IR leaves
  unspecified. With `global` (memory other tile blocks may reach): heap memory of the block's
  (runtime.h GlobalAlloca: device malloc on a GPU), taken where the op runs and freed when the
  C++ scope of its Tile IR block ends; shared memory holds only the pointer thread 0 hands out.
- gdc_wait_tko / gdc_launch_dependents_tko: nothing. tilepy launches kernels without
  programmatic dependent launch, where both are no-ops: a kernel starts after its stream
  predecessor completed (wait has nothing to wait for) and no dependent grid can start early.
"""
from __future__ import annotations

from ..types import CPP_TYPE, I64
from .emit_control import emit_nothing
from .emit_ops import _MODE, _ORDER, _SCOPE, _one
from .emitter import EMIT, _bytes, _view_args, barrier, shape_t

BUFFER_ALIGN = 128          # every shared-memory buffer's offset is a multiple of this


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


def emit_alloca(ctx, op):
    elem, align = op.result.type.elem.pointee, op.attrs["alignment"]
    if op.attrs.get("global"):
        slot, ptr = ctx.fresh("tp_alloca_slot"), ctx.ty(op.result)
        ctx.buffer(slot, I64, 1, "the pointer of a global alloca", op.loc)
        guard = ctx.fresh("tp_galloca")
        ctx.w.line(f"tp::GlobalAlloca<{CPP_TYPE[elem]}> {guard}("
                   f"{op.attrs['num_elem'] * elem.storage_bytes}ull, {align}ull, "
                   f"reinterpret_cast<void**>({slot}));", op.loc)
        ctx.w.line(f"{ptr} const {ctx.define(op.result)} = {guard}.ptr;", op.loc)
        return
    extra = -(-max(0, align - BUFFER_ALIGN) // elem.storage_bytes)     # to align at run time
    buf = ctx.fresh("tp_alloca")
    ctx.buffer(buf, elem, max(1, op.attrs["num_elem"]) + extra,
               f"the alloca of {op.attrs['num_elem']} x {elem}", op.loc)
    ptr = ctx.ty(op.result)
    init = buf if align <= BUFFER_ALIGN else (
        f"reinterpret_cast<{ptr}>((reinterpret_cast<unsigned long long>({buf}) + {align - 1}ull) "
        f"& ~{align - 1}ull)")
    ctx.w.line(f"{ptr} const {ctx.define(op.result)} = {init};", op.loc)


EMIT.update({"alloca": emit_alloca, "atomic_red_view_tko": emit_atomic_red, "insert": emit_insert,
             "memory_fence_alias_tko": emit_fence_alias,
             "gdc_wait_tko": emit_nothing, "gdc_launch_dependents_tko": emit_nothing})
