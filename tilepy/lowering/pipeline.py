"""K-loop pipelining: loads that only feed tensor-core mmas in a `for` loop become multi-stage
asynchronous copies into shared memory; loop-invariant register operands are staged once.

A load qualifies when it is an op of the loop body (not nested), its tile reaches an mma operand
of the same body through single-use reshapes (that keep the last two dimensions) and f32 -> tf32
conversions (done while the fragments are read), the mma's accumulator has the mma.sync layout,
its indices are the induction variable, values defined outside the loop, or pure ops of those,
and nothing in the loop may write the memory it reads (`may_alias`). The emitter then issues the
copies of iteration i + stages - 1 while iteration i computes (emit_pipeline.py):

    prologue: copies of iterations 0 .. stages-2, one cp.async group each
    iteration i: wait until group i landed, __syncthreads(), copy iteration i + stages - 1 into
                 the stage iteration i - 1 used, then the body reads stage i % stages

An mma operand defined outside the loop (the query tile of attention) is staged into shared
memory once, before the loop, instead of in every iteration.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ..ir import Module, Operation, Value
from ..types import TF32, TileType
from .assign_layouts import LayoutPlan
from .layouts import MmaAcc
from .memfacts import contiguous_along, root_arg



@dataclass
class Operand:
    """An mma operand living in shared memory: (bt, rows, cols), stored transposed if `trans`."""
    value: Value           # the value the mma reads
    buffer: str            # C++ name of the __shared__ array
    elem: object           # element type
    shape: tuple[int, int, int]
    trans: bool = False
    round_tf32: bool = False
    wg: bool = False       # a warpgroup MMA's operand (lowering/wgmma.py): a tp::WgOp, else
                           # a tp::SmemOp

    @property
    def elems(self) -> int:
        return prod(self.shape)


@dataclass
class StagedLoad:
    load: Operation
    operand: Operand
    skipped: list[Operation]   # the load and the chain up to the mma: not emitted in the body
    vec: bool
    swap: bool = False         # the chain transposes the tile's last two dimensions
    tma: object = None         # the sm_90a class: a TMA copy (lowering/wgmma.py TmaBox)


@dataclass
class Pipeline:
    loop: Operation
    stages: int
    loads: list[StagedLoad] = field(default_factory=list)
    index_ops: list[Operation] = field(default_factory=list)   # pure body ops the indices need
    hoisted: list[Operand] = field(default_factory=list)
    wg_deferred: list[Operation] = field(default_factory=list)   # lowering/wgmma.py `deferred`
    wg_mmas: list[Operation] = field(default_factory=list)       # its warpgroup MMAs (mark_wgmma)

    def bytes(self) -> int:
        staged = sum(s.operand.elems * s.operand.elem.storage_bytes for s in self.loads)
        return self.stages * staged + sum(h.elems * h.elem.storage_bytes for h in self.hoisted)


def _uses(module: Module) -> dict[int, list[Operation]]:
    out: dict[int, list[Operation]] = {}
    for op in module.walk():
        for v in op.operands:
            out.setdefault(id(v), []).append(op)
    return out


def _defined_in(v: Value, block) -> bool:
    """Whether v is defined inside `block` (at any depth)."""
    o = getattr(v, "op", None)
    b = o.parent if o is not None else getattr(v, "block", None)
    while b is not None:
        if b is block:
            return True
        p = b.parent_op
        b = p.parent if p is not None else None
    return False


def _index_ops(load: Operation, body, iv: Value) -> list[Operation] | None:
    """The pure body ops the load's indices need (in body order), or None when an index depends
    on anything but the induction variable, outside values and such ops."""
    need: dict[int, Operation] = {}
    stack = list(load.index)
    while stack:
        v = stack.pop()
        if v is iv or not _defined_in(v, body):
            continue
        o = getattr(v, "op", None)
        if o is None or o.parent is not body or not o.opdef.pure or o.regions:
            return None
        if id(o) not in need:
            need[id(o)] = o
            stack.extend(o.operands)
    return [o for o in body.ops if id(o) in need]


def swaps_last_two(perm) -> bool:
    """A permutation that transposes the last two dimensions and keeps the others."""
    n = len(perm)
    return n >= 2 and tuple(perm) == (*range(n - 2), n - 1, n - 2)


def _chain_to_mma(v: Value, uses) -> tuple[list[Operation], Operation, bool, bool] | None:
    """Follow single uses through reshape / ftof-to-tf32 / one transpose of the last two
    dimensions to an mma: (chain, mma, round_tf32, transposed)."""
    chain, rnd, swap = [], False, False
    while True:
        us = uses.get(id(v), [])
        if len(us) != 1:
            return None
        u = us[0]
        if u.opdef.mma and v is not u.acc:
            return chain, u, rnd, swap
        if u.name == "reshape" and u.result.type.shape[-2:] == v.type.shape[-2:]:
            pass
        elif u.name == "ftof" and u.result.type.elem == TF32 and str(v.type.elem) == "f32":
            rnd = True
        elif u.name == "permute" and not swap and swaps_last_two(u.permutation):
            swap = True
        else:
            return None
        chain.append(u)
        v = u.results[0]


def streamed(v: Value, mma: Operation) -> bool:
    """Whether mma operand `v` is loaded in the mma's own loop body (through the reshapes, tf32
    conversions and transposes `_chain_to_mma` follows): a K-loop operand, read from shared
    memory a fragment at a time, not held in registers whole (what qualifies it for a pipeline;
    indices and aliasing aside)."""
    loop = mma.parent.parent_op if mma.parent is not None else None
    if loop is None or loop.name != "for":
        return False
    while getattr(v, "op", None) is not None and (
            v.op.name in ("reshape", "permute") or (v.op.name == "ftof" and v.type.elem == TF32)):
        v = v.op.operands[0]
    o = getattr(v, "op", None)
    return o is not None and o.name == "load_view_tko" and o.parent is mma.parent


def _operand_shape(mma: Operation, v: Value) -> tuple[int, int, int]:
    t: TileType = v.type
    bt = t.shape[0] if t.rank == 3 else 1
    return bt, t.shape[-2], t.shape[-1]


class _Names:
    def __init__(self):
        self.n = 0

    def __call__(self, kind: str) -> str:
        self.n += 1
        return f"tp_{kind}{self.n - 1}"


def _writes_alias(body_op: Operation, load: Operation, may_alias) -> bool:
    src = root_arg(load.view)
    for o in body_op.walk():
        if o.opdef.writes is not None:
            dst = root_arg(o.view if o.name == "store_view_tko" else o.operands[0])
            if may_alias(src, dst):
                return True
    return False


def _static_trips(loop: Operation) -> int | None:
    """The trip count of a `for` whose bounds and step are constants (None otherwise): more
    stages than iterations only take shared memory."""
    vals = []
    for v in (loop.lowerBound, loop.upperBound, loop.step):
        op = getattr(v, "op", None)
        if op is None or op.name != "constant" or not op.value.is_splat:
            return None
        vals.append(int(op.value.array.flat[0]))
    lb, ub, step = vals
    return max(0, -(-(ub - lb) // step)) if step > 0 else None


def plan_pipelines(module: Module, layouts: LayoutPlan, may_alias, stages: int = 3,
                   hoist: bool = True) -> dict[int, Pipeline]:
    """id(for op) -> its Pipeline; `hoist` False: loop-invariant operands stay in registers."""
    uses = _uses(module)
    names = _Names()
    out: dict[int, Pipeline] = {}
    for loop in module.walk():
        if loop.name != "for":
            continue
        body = loop.body.block
        iv = body.args[0]
        trips = _static_trips(loop)
        p = Pipeline(loop, stages if trips is None else max(2, min(stages, trips)))
        for op in body.ops:
            if hoist and op.opdef.mma and isinstance(layouts.layout(op.result), MmaAcc):
                for v in (op.lhs, op.rhs):
                    if not _defined_in(v, body) and isinstance(v.type, TileType) and v.type.numel > 1 \
                            and not any(h.value is v for h in p.hoisted):
                        p.hoisted.append(Operand(v, names("hoist"), v.type.elem,
                                                 _operand_shape(op, v)))
            if op.name != "load_view_tko" or op.tile.type.numel == 1:
                continue
            if op.attrs.get("memory_ordering_semantics") != "weak" or loop.body.block is not op.parent:
                continue
            found = _chain_to_mma(op.tile, uses)
            idx_ops = _index_ops(op, body, iv)
            if found is None or idx_ops is None or _writes_alias(loop, op, may_alias):
                continue
            chain, mma, rnd, swap = found
            if mma.parent is not body or not isinstance(layouts.layout(mma.result), MmaAcc):
                continue
            v = chain[-1].results[0] if chain else op.tile
            shape = _operand_shape(mma, v)
            t = op.tile.type
            if t.rank < 2 or (t.shape[-2:][::-1] if swap else t.shape[-2:]) != shape[1:]:
                continue
            # memory contiguous along the operand's rows (last dim) or columns: a transpose in
            # the chain swaps which tile dimension is which
            along = [contiguous_along(op.view, t.rank - 1), contiguous_along(op.view, t.rank - 2)]
            rows, cols = along[::-1] if swap else along
            operand = Operand(v, names("pipe"), t.elem, shape, not rows and cols, rnd)
            p.loads.append(StagedLoad(op, operand, [op, *chain], rows or cols, swap))
            p.index_ops += [o for o in idx_ops if o not in p.index_ops]
        p.index_ops.sort(key=body.ops.index)
        if p.loads or p.hoisted:
            out[id(loop)] = p
    return out
