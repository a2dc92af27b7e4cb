"""Layout assignment: one layout (layouts.py) for every tile value of more than one element.

Values that an op needs in one layout form a *group* (union-find): the operands and result of an
element-wise op, a reshape's source and result (layouts map row-major linear indices, so a
reshape never moves data), loop-carried values with their inits and the values that continue or
break carry, `if` results with what the branches yield, the operands of gathers, scatters and
atomics, an mma's accumulator and result. Every other op (loads, stores, reductions, broadcasts,
permutes, mma operands, ...) accepts any layout on its operands and produces any layout, so a
group's layout is free to choose, and groups are decided in this order:

1. anchors: a group holding an mma result gets the mma.sync accumulator layout (MmaAcc), its
   warps along the rows when any row of an mma result is reduced (so the rows stay in a warp);
2. derived: a group holding the result of a butterfly-able reduction (commutative combiner,
   last dimension) of a decided group gets that group's row layout (MmaRows, BlockedRows), so
   the reduction is warp shuffles and broadcasting the rows back moves no data;
3. the rest: Blocked, with the widest vector (16 bytes of the narrowest element type of the
   group) that divides every member's last dimension and leaves at least a warp of chunks.

Tiles of one element are scalars (no layout); the C++ templates pick their fast paths from the
layout types alone, and fall back to shared memory for any other combination.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Module, Operation, Value
from ..types import PtrType, TileType
from .layouts import Blocked, Layout, mma_warps, rows_of

def same_layout(op: Operation) -> bool:
    """Ops whose operands and results share one layout: element-wise ops, memory ops through
    tiles of pointers (per element too; the op table's `reads`/`writes` name the operand), a
    row-major reshape (moves nothing) and assume (the identity)."""
    through = op.opdef.reads or op.opdef.writes
    return op.opdef.elementwise or (through is not None and through != "view") or \
        op.name in ("reshape", "assume")


def distributed(v: Value) -> bool:
    return isinstance(v.type, TileType) and v.type.numel > 1


def commutative(reduce_op: Operation) -> bool:
    """A one-tile reduce whose body is `yield f(x, acc)` with f commutative (butterflies are
    then exact reorderings of the fold)."""
    blk = reduce_op.body.block
    if len(reduce_op.operands) != 1 or len(blk.ops) != 2:
        return False
    f, y = blk.ops
    return (f.opdef.commutative and y.name == "yield" and list(y.operands) == [f.results[0]]
            and {id(v) for v in f.operands} == {id(a) for a in blk.args})


@dataclass
class LayoutPlan:
    nt: int
    of: dict[int, Layout] = field(default_factory=dict)

    def layout(self, v: Value) -> Layout | None:
        return self.of.get(id(v))


class _Groups:
    def __init__(self):
        self.parent: dict[int, int] = {}
        self.values: dict[int, Value] = {}
        self.order: list[int] = []               # values in program order of definition

    def add(self, v: Value):
        if distributed(v) and id(v) not in self.parent:
            self.parent[id(v)] = id(v)
            self.values[id(v)] = v
            self.order.append(id(v))

    def find(self, k: int) -> int:
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, *vals: Value):
        ks = [id(v) for v in vals if id(v) in self.parent]
        for k in ks[1:]:
            a, b = self.find(ks[0]), self.find(k)
            if a != b:
                self.parent[b] = a

    def members(self) -> dict[int, list[Value]]:
        out: dict[int, list[Value]] = {}
        for k in self.order:
            out.setdefault(self.find(k), []).append(self.values[k])
        return out


def _loop_of(op: Operation) -> Operation:
    o = op.parent.parent_op
    while o.name not in ("for", "loop"):
        o = o.parent.parent_op
    return o


def _collect(module: Module) -> _Groups:
    g = _Groups()
    for op in module.walk():
        for r in op.regions:
            for b in r.blocks:
                for a in b.args:
                    g.add(a)
        for r in op.results:
            g.add(r)
    for op in module.walk():
        n = op.name
        if same_layout(op):
            g.union(*op.operands, *op.results)
        elif op.opdef.mma:
            g.union(op.acc, op.result)
        elif n in ("for", "loop"):
            args = op.body.block.args[1:] if n == "for" else op.body.block.args
            for i, (init, arg) in enumerate(zip(op.initValues, args)):
                g.union(init, arg, *([op.results[i]] if n == "for" else []))
        elif n in ("continue", "break"):
            loop = _loop_of(op)
            if n == "continue":
                targets = loop.body.block.args[1 if loop.name == "for" else 0:]
            else:
                targets = loop.results
            for t, v in zip(targets, op.operands):
                g.union(t, v)
        elif n == "yield" and op.parent.parent_op.name == "if":
            for t, v in zip(op.parent.parent_op.results, op.operands):
                g.union(t, v)
    return g


def _elem_bytes(v: Value) -> int:
    e = v.type.elem
    return 8 if isinstance(e, PtrType) else max(1, e.storage_bytes)


def _blocked(members: list[Value], nt: int) -> Blocked:
    numel = members[0].type.numel
    data = [v for v in members if getattr(v.type.elem, "name", "") != "i1"] or members  # not masks
    vec = 16 // min(_elem_bytes(v) for v in data)
    for v in members:
        if v.type.rank:
            vec = min(vec, v.type.shape[-1])
    vec = max(1, min(vec, numel // 32))
    return Blocked(numel, vec)


class _Assigner:
    def __init__(self, module: Module, nt: int, rows: bool = False, warpgroups: bool = False):
        self.nt, self.warpgroups = nt, warpgroups
        self.groups = g = _collect(module)
        self.members = g.members()
        self.decided: dict[int, Layout] = {}
        self.ops = ops = list(module.walk())
        self.reduces = [o for o in ops if o.name == "reduce" and len(o.operands) == 1
                        and distributed(o.operands[0])]
        mma_groups = {g.find(id(o.result)) for o in ops if o.opdef.mma and distributed(o.result)}
        self.rows_reduced = rows or any(g.find(id(o.operands[0])) in mma_groups and
                                        o.dim == o.operands[0].type.rank - 1 for o in self.reduces)
        self.atomic_groups = {g.find(id(o.results[0])) for o in ops
                              if o.opdef.category == "atomic" and distributed(o.results[0])}

    def anchors(self):
        for o in self.ops:
            if o.opdef.mma and distributed(o.result):
                k, shape = self.groups.find(id(o.result)), o.result.type.shape
                acc = mma_warps(shape[0] if len(shape) == 3 else 1, shape[-2], shape[-1], self.nt,
                                self.rows_reduced, self.warpgroups)
                if k not in self.decided and acc is not None:
                    self.decided[k] = acc

    def derivable(self, o) -> bool:
        return (distributed(o.results[0]) and commutative(o) and o.dim == o.operands[0].type.rank - 1
                and self.groups.find(id(o.results[0])) not in self.atomic_groups)

    def derive(self) -> bool:
        changed = False
        for o in filter(self.derivable, self.reduces):
            k, src = self.groups.find(id(o.results[0])), self.groups.find(id(o.operands[0]))
            if k in self.decided or src not in self.decided:
                continue
            rows = rows_of(self.decided[src], o.operands[0].type.shape[-1])
            if rows is not None and rows.numel == o.results[0].type.numel:
                self.decided[k] = rows
                changed = True
        return changed

    def rest(self):
        """Groups in program order; one holding a derivable reduction of an undecided group waits
        for it (derivations run after each decision)."""
        while True:
            while self.derive():
                pass
            waiting = {self.groups.find(id(o.results[0])) for o in self.reduces
                       if self.derivable(o) and self.groups.find(id(o.operands[0])) not in self.decided}
            todo = [k for k in self.members if k not in self.decided]
            if not todo:
                return
            k = next((k for k in todo if k not in waiting), todo[0])
            self.decided[k] = _blocked(self.members[k], self.nt)


def assign_layouts(module: Module, nt: int = 128, rows: bool = False,
                   warpgroups: bool = False) -> LayoutPlan:
    """`rows`: every mma accumulator takes its warps along the rows, as when its rows are
    reduced; `warpgroups`: those warps interleaved by warpgroups where they make whole ones, as
    wgmma's accumulator (MmaAcc's wg; both: the sm_90a class's plan, lowering/wgmma.py)."""
    a = _Assigner(module, nt, rows, warpgroups)
    a.anchors()         # 1. mma accumulators
    a.rest()            # 2. derived row layouts and 3. blocked, interleaved in program order
    plan = LayoutPlan(nt)
    for k, vals in a.members.items():
        for v in vals:
            plan.of[id(v)] = a.decided[k]
    return plan
