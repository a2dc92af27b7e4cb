"""Memory hazards between the threads of a tile block: where the emitter puts `__syncthreads()`.

A tile op touches global memory from many threads; the tile program orders memory ops by tokens
(the emitted code keeps program order), but two ops of one block only see each other's effects
across threads after a barrier. Two memory ops *conflict* when
  * at least one of them writes (store, scatter, atomic),
  * they may touch the same memory: the same array, arrays that may overlap (`may_alias`: the
    specialization proves array arguments disjoint at launch), or pointers of unknown origin,
  * and an element may be touched by different threads in the two: unless both are tile
    accesses of the same partition (tensor view, tile shape, dimension map) in the same
    non-replicated layout (then element e of tile i is always thread T(e)'s, and different tile
    indices are disjoint tiles), or both are one-element writes (thread 0 does them).
A barrier goes before every op that conflicts with an access since the last barrier on some
path. The pass runs over the structured control flow: an `if` joins its branches, a loop is
iterated to a fixed point through the back edge (continue) and exits (break, the loop end).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module, Operation, Value
from ..types import TileType
from .assign_layouts import LayoutPlan
from .memfacts import root_arg, tensor_view_op


def memory_op(op: Operation) -> bool:
    """Does `op` read or write memory (the op table's `reads`/`writes`)?"""
    return op.opdef.reads is not None or op.opdef.writes is not None


@dataclass(frozen=True)
class Access:
    write: bool
    root: Value | None          # the entry argument the memory comes from (None: unknown)
    pattern: tuple              # ("tile", view, shape, dim map, layout) | ("thread0",) | ("all",) | ("any",)


def alias_oracle(disjoint: frozenset = frozenset()):
    """may_alias(a, b) for roots (entry arguments): the same argument, an unknown root, or two
    arguments not both proven disjoint from every other array argument."""
    ids = {id(v) for v in disjoint}

    def may_alias(a: Value | None, b: Value | None) -> bool:
        if a is None or b is None or a is b:
            return True
        return not (id(a) in ids and id(b) in ids)
    return may_alias


def access(op: Operation, layouts: LayoutPlan) -> Access:
    write = op.opdef.writes is not None
    if (op.opdef.writes or op.opdef.reads) == "view":
        t: TileType = op.tile.type
        root = root_arg(op.view)
        if t.numel == 1:
            return Access(write, root, ("thread0",) if write else ("all",))
        lay = layouts.layout(op.tile)
        if lay is None or lay.replicated:
            return Access(write, root, ("any",))
        pv = op.view.type
        return Access(write, root, ("tile", id(tensor_view_op(op.view)), pv.tile_shape,
                                    pv.effective_dim_map, lay))
    ptr = op.operands[0]
    root = _pointer_root(ptr)
    if ptr.type.numel == 1:
        return Access(write, root, ("thread0",) if write else ("all",))
    return Access(write, root, ("any",))


def _pointer_root(v: Value) -> Value | None:
    """The scalar pointer argument a tile of pointers is computed from (offset / broadcast /
    reshape / assume of one pointer), or None."""
    while getattr(v, "op", None) is not None:
        o = v.op
        if o.name == "offset" or o.name in ("broadcast", "reshape", "assume"):
            v = o.operands[0]
        else:
            return None
    return root_arg(v)


def conflict(a: Access, b: Access, may_alias) -> bool:
    if not (a.write or b.write) or not may_alias(a.root, b.root):
        return False
    return not (a.pattern == b.pattern and a.pattern[0] in ("tile", "thread0"))


def barrier_ops(module: Module, layouts: LayoutPlan, may_alias) -> set[int]:
    """ids of the memory ops that need a __syncthreads() before them."""
    acc = {id(o): access(o, layouts) for o in module.walk() if memory_op(o)}
    marks: set[int] = set()

    def visit(block, pending: frozenset):
        """-> (pending at the end or None if the block ends in continue/break, continues, breaks)"""
        conts: list[frozenset] = []
        brks: list[frozenset] = []
        for op in block.ops:
            if memory_op(op):
                a = acc[id(op)]
                if any(conflict(acc[p], a, may_alias) for p in pending):
                    marks.add(id(op))
                    pending = frozenset()
                pending = pending | {id(op)}
            elif op.name == "continue":
                conts.append(pending)
                return None, conts, brks
            elif op.name == "break":
                brks.append(pending)
                return None, conts, brks
            elif op.name == "if":
                outs = []
                for region in op.regions:
                    if region.blocks:
                        out, c, b = visit(region.block, pending)
                        conts += c
                        brks += b
                        if out is not None:
                            outs.append(out)
                    else:
                        outs.append(pending)
                if len(op.regions) < 2 or not op.regions[1].blocks:
                    outs.append(pending)
                if not outs:
                    return None, conts, brks
                pending = frozenset().union(*outs)
            elif op.name in ("for", "loop"):
                head = pending
                while True:
                    out, c, b = visit(op.body.block, head)
                    new = head.union(*c, *([out] if out is not None else []))
                    if new == head:
                        break
                    head = new
                exits = [head] if op.name == "for" else []
                pending = frozenset().union(*exits, *b)
        return pending, conts, brks

    for entry in module.items:
        if entry.name == "entry":
            visit(entry.body.block, frozenset())
    return marks
