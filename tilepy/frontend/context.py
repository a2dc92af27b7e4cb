"""Per-kernel trace state: the module being built, the entry's parameters, the memory token.

`KernelContext.begin(params)` creates the `entry` op with one block argument per scalar that
crosses the kernel boundary (an array is a base pointer plus its dynamic shape and strides),
builds each array's `tensor_view` in the prologue, and returns the values the kernel's
parameter names are bound to.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..errors import Loc, TileSyntaxError, at
from ..ir import AssumePredicate, Block, Builder, Module, Region, Value, make_op
from ..types import PartitionViewType, TensorViewType
from ..host.params import (ArrayListParam, ArrayParam, ConstParam, DataclassParam,  # noqa: F401
                           ScalarParam, TupleParam)
from .records import make as make_record
from .values import Array, ArrayList, Tile


def _at(divs: tuple, i: int, missing=1):
    return divs[i] if i < len(divs) else missing


_BODY_RULES = {
    "nested": "Nested scan/reduction is not supported: a {} body cannot reduce or scan",
    "if": "Branching inside {} body is not supported; select with where() instead",
    "loop": "Loops inside {} body are not supported",
    "memory": "Operations with memory effects are not supported inside {} body",
}


@dataclass
class KernelContext:
    name: str
    module: Module = field(default_factory=Module)
    b: Builder = field(default_factory=Builder)
    token: Value | None = None
    entry_block: Block | None = None
    prologue_end: int = 0                        # ops before this index form the prologue
    call_stack: list = field(default_factory=list)
    recursive_calls: int = 0        # helper calls inlined inside a call of the same helper
    arg_locs: list[dict[str, Loc]] = field(default_factory=list)
    tracer: object = None                        # the kernel's FunctionTracer (calls combiners)
    deps: object = None                          # identity.Deps: what the trace read from outside
    hints: dict | None = None                    # the entry's optimization_hints (kernel options)
    body: str | None = None                      # "reduction"/"scan" while a combiner is traced

    # ------------------------------------------------------------------ entry and prologue
    def begin(self, params) -> dict[str, object]:
        types, hints = [], []
        for p in params:
            for n, t in p.c_params():
                types.append(t)
                hints.append(n)
        blk = Block(types, hints)
        entry = make_op("entry", regions=[Region([blk])], sym_name=self.name,
                        optimization_hints=self.hints)
        self.module.append(entry)
        self.entry_block = blk
        self.b.block = blk
        args = iter(blk.args)
        bound = {p.name: self._bind(p, args) for p in params}
        self.token = self.b.value("make_token")
        self.prologue_end = len(blk.ops)
        return bound

    def _bind(self, p, args):
        """The value parameter `p` is inside the kernel, from its entry arguments `args`: a
        tuple's is a tuple of its items' (an ArrayList when they are arrays of one dtype, rank
        and index dtype, so that a runtime index selects among them as in a list); a
        dataclass's, an object of its class holding its fields'."""
        if isinstance(p, ArrayParam):
            return self._array(p, args)
        if isinstance(p, ArrayListParam):
            return ArrayList(self._array(q, args) for q in p.items)
        if isinstance(p, DataclassParam):          # an object of the user's class (records.py)
            return make_record(p.cls, [self._bind(q, args) for q in p.items])
        if isinstance(p, TupleParam):
            items = tuple(self._bind(q, args) for q in p.items)
            kinds = {(a.dtype, a.ndim, a.index_dtype) if isinstance(a, Array) else None
                     for a in items}
            return ArrayList(items) if items and len(kinds) == 1 and None not in kinds else items
        if isinstance(p, ScalarParam):
            return Tile(next(args), p.dtype)
        return p.value

    def _array(self, p: ArrayParam, args) -> Array:
        natural = p.dtype.itemsize      # the pointer type says that much already
        base = self._assume_div(next(args), p.align if p.align > natural else 1,
                                f"{p.name}_aligned")
        shape = tuple(self._extent(next(args), _at(p.shape_div, i)) for i in range(p.ndim))
        strides = tuple(1 if p.unit_stride[i] else self._extent(next(args), _at(p.stride_div, i))
                        for i in range(p.ndim))
        tv_type = TensorViewType(p.dtype.elem, (None,) * p.ndim,
                                 tuple(1 if s == 1 else None for s in strides))
        view = self.b.value("make_tensor_view", base, list(shape),
                            [s for s in strides if s != 1], result_types=[tv_type])
        view.hint = f"{p.name}_view"
        # what the kernel sees of an annotated static extent or stride is the constant (the
        # view keeps the run-time value, equal to it: a zero stride cannot be static in a view)
        shape = tuple(v if _at(p.static_shape, i, None) is None else p.static_shape[i]
                      for i, v in enumerate(shape))
        strides = tuple(v if _at(p.static_strides, i, None) is None else p.static_strides[i]
                        for i, v in enumerate(strides))
        return Array(p.name, p.dtype, p.ndim, base, shape, strides, view,
                     index_dtype=p.index_dtype, static_strides=tuple(p.static_strides or ()))

    def _extent(self, v: Value, div: int) -> Value:
        """An extent or stride argument with the specialization's facts: divisible by `div`
        (a power of two, from specialize.divisors), and never negative (intake refuses negative
        strides; NVIDIA's cuTile states the same `bounded<0, ?>`, which lets tileiras describe
        the array to the TMA unit)."""
        name = v.hint
        r = self.b.value("assume", self._assume_div(v, div),
                         predicate=AssumePredicate("bounded", lower=0, upper=None))
        r.hint = f"{name}_nonneg"
        return r

    def _assume_div(self, v: Value, div: int, hint: str | None = None) -> Value:
        """`v` with the specialization's fact "divisible by `div`" attached (an `assume` op;
        none for 1)."""
        if div <= 1:
            return v
        r = self.b.value("assume", v, predicate=AssumePredicate("div_by", divisor=div))
        r.hint = hint or f"{v.hint}_div{div}"
        return r

    def partition_view(self, a: Array, shape, dim_map, padding) -> Value:
        """The partition view of `a` with this tile shape, made once, in the prologue."""
        key = (tuple(shape), dim_map, padding)
        hit = a.partitions.get(key)
        if hit is not None:
            return hit
        pv_type = PartitionViewType(tuple(shape), a.view.type, dim_map, padding)
        if a.local:
            return self.b.value("make_partition_view", a.view, result_types=[pv_type])
        op = make_op("make_partition_view", a.view, result_types=[pv_type])
        self.entry_block.ops.insert(self.prologue_end, op)
        op.parent = self.entry_block
        self.prologue_end += 1
        op.result.hint = f"{a.name}_tiles"
        a.partitions[key] = op.result
        return op.result

    # ------------------------------------------------------------------ combiner bodies
    @contextlib.contextmanager
    def combiner_body(self, kind: str):
        """Trace a reduce/scan combiner (`kind` "reduction" or "scan") under cuTile's rule for
        its body: no nested reduce/scan, branches, loops or memory effects (`refuse_in_body`)."""
        self.refuse_in_body("nested")
        saved, self.body = self.body, kind
        try:
            yield
        finally:
            self.body = saved

    def refuse_in_body(self, what: str, detail: str = "") -> None:
        """Raise cuTile's TileSyntaxError for `what` ("nested", "if", "loop", "memory") when a
        combiner is being traced; nothing otherwise. The location is the caller's."""
        if self.body is None:
            return
        raise TileSyntaxError(_BODY_RULES[what].format(self.body) + detail)

    # ------------------------------------------------------------------ retracing
    def checkpoint(self):
        """The current block's ops, to drop what a failed attempt (a loop retrace) added."""
        blk = self.b.block
        return blk, {id(o) for o in blk.ops}

    def rollback(self, checkpoint):
        blk, keep = checkpoint
        prologue = {id(o) for o in self.entry_block.ops[:self.prologue_end]} \
            if blk is self.entry_block else set()
        blk.ops = [o for o in blk.ops if id(o) in keep or id(o) in prologue]

    def finish(self):
        self.b.block = self.entry_block
        self.b.create("return")

    # ------------------------------------------------------------------ argument locations
    @contextlib.contextmanager
    def call_args(self, locs: dict[str, Loc]):
        self.arg_locs.append(locs)
        try:
            yield
        finally:
            self.arg_locs.pop()

    def arg(self, name: str):
        """Ambient location of a builtin's argument `name` (the call's, when unknown)."""
        loc = self.arg_locs[-1].get(name) if self.arg_locs else None
        return at(loc)
