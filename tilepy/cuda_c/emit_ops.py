"""Emission of the ops the rest of the kernel language needs, beyond emitter.py's core set:
element-space memory (load_ptr_tko / store_ptr_tko), atomics, extract / cat, scan, reduce and
scan of several tiles, `loop` / `break`, print_tko, assert and assume. Same rules as emitter.py:
one line per op calling a `tp::` template of runtime.h; these functions are registered in its
EMIT table.
"""
from __future__ import annotations

import json

import numpy as np

from ..interpret.printf import elem_name, format_print, storage
from ..types import TileType
from .emit_control import _assign_results, _enclosing_loop
from .emitter import (EMIT, _ORDER, _SCOPE, EmitContext, _bytes, _lambda, barrier, ctype,
                      elem_ctype, emit_op, emit_reduce, fold_scratch, literal, ordering, shape_t)

_MODE = {"and": 0, "or": 1, "xor": 2, "add": 3, "addf": 4, "max": 5, "min": 6, "umax": 7,
         "umin": 8, "xchg": 9}


def _one(ctx, v) -> str:
    """A value as a `Tile<T, 1>` when a template wants a tile but the value is a scalar."""
    return f"tp::splat<1>({ctx(v)})" if v.type.numel == 1 else ctx(v)




# ----------------------------------------------------------------------------- pointers
def emit_assume(ctx: EmitContext, op):
    ctx.alias(op.result, op.value)      # a fact for the optimizer; the value is unchanged


def emit_load_ptr(ctx, op):
    barrier(ctx, op)
    args = ", ".join(ctx(v) for v in [op.source, op.mask, op.paddingValue] if v is not None)
    r = op.results[0]
    order = ordering(op)
    fn = "load_ptr" if order is None else "load_ptr_strong"
    ctx.w.line(f"const {ctx.ty(r)} {ctx.define(r)} = tp::ew(tp::op::{fn}{{}}, {args});",
               op.loc)
    if order is not None:
        ctx.w.line(f"tp::acquire_fence<{order[0]}, {order[1]}>();", op.loc)


def emit_store_ptr(ctx, op):
    barrier(ctx, op)
    args = ", ".join(ctx(v) for v in [op.destination, op.value, op.mask] if v is not None)
    order = ordering(op)
    if order is not None:
        ctx.w.line(f"tp::release_fence<{order[0]}, {order[1]}>();", op.loc)
    access = "" if order is None else "<tp::strong_access>"
    ctx.w.line(f"tp::store_ptr{access}({args});", op.loc)


def emit_atomic(ctx, op):
    barrier(ctx, op)
    order, scope = _ORDER[op.memory_ordering_semantics], _SCOPE[op.memory_scope]
    r = op.results[0]
    cas = op.name == "atomic_cas_tko"
    vals = [op.pointers, op.cmp, op.val] if cas else [op.pointers, op.arg]
    targs = f"{order}, {scope}" if cas else f"{_MODE[op.mode]}, {order}, {scope}"
    fn = "atomic_cas" if cas else "atomic_rmw"
    if r.type.numel == 1:
        ctx.need_smem(8)
        mask = ctx(op.mask) if op.mask is not None else "true"
        args = ", ".join(ctx(v) for v in vals)
        init = f"tp::{fn}_s<{targs}>({args}, {mask}, tp_smem)"
    else:
        args = ", ".join(ctx(v) for v in vals + ([op.mask] if op.mask is not None else []))
        init = f"tp::{fn}<{targs}>({args})"
    ctx.w.line(f"const {ctx.ty(r)} {ctx.define(r)} = {init};", op.loc)


# ------------------------------------------------------------------------- data movement
def emit_extract(ctx, op):
    s, t = op.source.type, op.result.type
    if s.numel == 1:
        ctx.alias(op.result, op.source)
        return
    ctx.need_smem(s.numel * _bytes(s))
    idx = ", ".join(f"(int){ctx(i)}" for i in op.indices)
    name = ctx.define(op.result)
    lr = f", {ctx.lay(op.result)}" if t.numel > 1 else ""
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::extract<{shape_t(s.shape)}, {shape_t(t.shape)}{lr}>("
               f"{ctx(op.source)}, {{{idx}}}, tp_smem);", op.loc)


def emit_cat(ctx, op):
    s, t = op.lhs.type, op.result.type
    ctx.need_smem(2 * s.numel * _bytes(s))
    name = ctx.define(op.result)
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::cat<{shape_t(s.shape)}, {shape_t(t.shape)}, "
               f"{op.dim}, {ctx.lay(op.result)}>({_one(ctx, op.lhs)}, {_one(ctx, op.rhs)}, tp_smem);",
               op.loc)


def emit_scan(ctx, op):
    if len(op.operands) != 1:
        return emit_fold(ctx, op)
    src, res = op.operands[0], op.results[0]
    s = src.type
    ident = literal(s.elem, op.identities[0].array[()])
    lam = _lambda(ctx, op.body.block)
    name = ctx.define(res)
    if s.numel == 1:
        ctx.w.line(f"const {ctype(s)} {name} = ({lam})({ctx(src)}, {ident});", op.loc)
        return
    ctx.need_smem(fold_scratch(s.numel, [_bytes(s)]))
    rev = "true" if op.reverse else "false"
    ctx.w.line(f"const {ctx.ty(res)} {name} = tp::scan<{shape_t(s.shape)}, {op.dim}, {rev}, "
               f"{ctx.lay(res)}>({ctx(src)}, {ident}, tp_smem, {lam});", op.loc)


def emit_fold(ctx, op):
    """reduce or scan of several tiles (argmax: values and indices; Welford: three tiles): one
    tp::fold_tiles call, its tp::Tup of results unpacked."""
    xs, rs = op.operands, op.results
    s = xs[0].type
    ids = [literal(v.type.elem, d.array[()]) for v, d in zip(xs, op.identities)]
    types = ", ".join(elem_ctype(v.type) for v in xs)
    ident = f"tp::tup<{types}>({', '.join(ids)})"
    lam = _lambda(ctx, op.body.block)
    out = ctx.fresh("folded")
    scan = op.name == "scan"
    if s.numel == 1:
        init = f"({lam})(tp::tup<{types}>({', '.join(ctx(x) for x in xs)}), {ident})"
    else:
        ctx.need_smem(fold_scratch(s.numel, [_bytes(x.type) for x in xs]))
        lays = ", ".join(ctx.lay(r) if r.type.numel > 1 else "tp::Cyclic<1>" for r in rs)
        rev = "true" if scan and op.reverse else "false"
        init = (f"tp::fold_tiles<{shape_t(s.shape)}, {op.dim}, {'true' if scan else 'false'}, "
                f"{rev}, tp::Lays<{lays}>>({ident}, tp_smem, {lam}, "
                f"{', '.join(ctx(x) for x in xs)})")
    ctx.w.line(f"const auto {out} = {init};", op.loc)
    for i, r in enumerate(rs):
        ctx.w.line(f"const {ctx.ty(r)} {ctx.define(r)} = tp::tget<{i}>({out});", op.loc)


# ------------------------------------------------------------------------------- loops
def emit_loop(ctx, op):
    blk = op.body.block
    for arg, init, res in zip(blk.args, op.initValues, op.results):
        if isinstance(arg.type, TileType):
            n = ctx.define(arg)
            ctx.alias(res, arg)
            ctx.w.line(f"{ctx.ty(arg)} {n} = {ctx(init)};", op.loc)
    with ctx.w.indent("while (true) {", loc=op.loc):
        ctx.w.line("tp::progress();", op.loc)       # the loop may not end: it must not be deleted
        for o in blk.ops:
            emit_op(ctx, o)


def emit_break(ctx, op):
    loop = _enclosing_loop(op)
    _assign_results(ctx, loop.body.block.args, op.operands, op.loc)
    ctx.w.line("break;", op.loc)


# ------------------------------------------------------------------------- print, assert
def c_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def emit_print(ctx, op):
    """One record in the kernel's print log (runtime.h: print_record); the host formats it after
    the launch (launch/print_log.py). The op's format and arguments become row `len(prints)`
    of the kernel's print-op table, checked here with the formatter the host will use."""
    fmt, args = op.attrs["str"], list(op.args)
    elems = [a.type.elem for a in args]
    row = [fmt, [[elem_name(e), list(a.type.shape)] for e, a in zip(elems, args)]]
    format_print(fmt, [np.zeros(a.type.shape, storage(e)[0]) for e, a in zip(elems, args)], elems)
    tiles = [a for a in args if a.type.numel > 1]
    for a in tiles:
        ctx.need_smem(a.type.numel * _bytes(a.type))
    vals = "".join(f", {ctx(a)}" for a in args)
    ctx.w.line(f"tp::print_record(tp_print_log, {len(ctx.prints)}, "
               f"{'tp_smem' if tiles else 'nullptr'}{vals});", op.loc)
    ctx.prints.append(row)


def print_globals(prints: list) -> list[str]:
    """The C++ of a printing kernel's log and print-op table (`extern "C"`: the host finds them
    by name in the cubin or the CPU library)."""
    table = json.dumps(prints, separators=(",", ":"))
    return ['extern "C" {', "__device__ tp::PrintLog tp_print_log;",
            f"__device__ char tp_print_ops[] = {c_string(table)};", "}"]


def emit_assert(ctx, op):
    ctx.w.line(f"tp::tile_assert({ctx(op.condition)}, {c_string(op.message)});", op.loc)


def emit_reduce_n(ctx, op):
    return emit_reduce(ctx, op) if len(op.operands) == 1 else emit_fold(ctx, op)


EMIT_MORE = {
    "reduce": emit_reduce_n, "assume": emit_assume, "load_ptr_tko": emit_load_ptr,
    "store_ptr_tko": emit_store_ptr,
    "atomic_rmw_tko": emit_atomic, "atomic_cas_tko": emit_atomic, "extract": emit_extract,
    "cat": emit_cat, "scan": emit_scan, "loop": emit_loop, "break": emit_break,
    "print_tko": emit_print, "assert": emit_assert,
}
EMIT.update(EMIT_MORE)
