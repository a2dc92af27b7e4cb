"""Pseudo-steps that touch a case's arrays in the middle of its op sequence (several ops each):

reload   store a 2-d value to a scratch output, load the same region back through a transposed
         (dim_map=[1, 0]) view, token-ordered after the store: each element comes back in another
         thread's place, so the emitted code needs a barrier there
gather   load_ptr_tko from a 1-d input at an i32 index tile: offset pointers, a mask of in-range
         indices, a padding value for the rest
scatter  store_ptr_tko of a value, flattened, into this block's own stretch of a 1-d output at a
         permuted position (a bijection: no duplicates), masked past the output's end
atomic   atomic_rmw_tko of a value into a 1-d output: shared by all tile blocks (a commutative
         integer mode; only the final memory is compared, the old values depend on the order of
         the blocks), or local to the block (any mode, addf and xchg too; the old values it
         returns are a result)
"""
from __future__ import annotations

import numpy as np

from tilepy.ir import Builder
from tilepy.ir.opdef import DenseValue
from tilepy.types import I1, I32, NUMPY_DTYPE, PartitionViewType, TileType, element_type

MEMORY_STEPS = {"reload", "gather", "scatter", "atomic"}
PERMUTE = 5          # pos = (iota * 5) mod N: odd, so a bijection of [0, N)


class MemorySteps:
    def __init__(self, b: Builder, case, views, idx, state):
        self.b, self.c, self.views, self.idx, self.state = b, case, views, idx, state

    def __call__(self, st, args):
        return getattr(self, st.op)(st, *args)

    # ------------------------------------------------------------------ helpers
    def const(self, elem, value, shape=()):
        arr = np.array(value).astype(NUMPY_DTYPE[elem])
        if elem.is_int and elem != I1:
            arr = arr.astype(np.int64).astype(NUMPY_DTYPE[elem])
        return self.b.value("constant", value=DenseValue(elem, arr),
                            result_types=[TileType(tuple(shape), elem)])

    def spread(self, v, shape):
        """A 0-d value broadcast to `shape`."""
        r = self.b.value("reshape", v, result_types=[v.type.with_shape((1,) * len(shape))])
        return self.b.value("broadcast", r, result_types=[v.type.with_shape(shape)])

    def pointers(self, k, index):
        """Pointer tile: the base of array k offset by the i32 `index` tile."""
        base = self.views[k][2]
        return self.b.value("offset", self.spread(base, index.type.shape), index,
                            result_types=[index.type.with_elem(base.type.elem)])

    def linear_block(self):
        from .case import ArraySpec
        return self.idx(ArraySpec("", "i32", (1,), (1,), "in"))[0]

    def permuted(self, n):
        it = self.b.value("iota", result_types=[TileType((n,), I32)])
        p = self.b.value("muli", it, self.const(I32, PERMUTE, (n,)), result_types=[it.type])
        return self.b.value("andi", p, self.const(I32, n - 1, (n,)), result_types=[it.type])

    def tok(self, op):
        self.state["tok"] = op.results[-1]
        return op

    # ------------------------------------------------------------------ steps
    def reload(self, st, value):
        k = st.attrs["array"]
        tv, pv, _, _ = self.views[k]
        ix = self.idx(self.c.arrays[k])
        self.tok(self.b.create("store_view_tko", value, pv, ix, self.state["tok"],
                               memory_ordering_semantics="weak"))
        m, n = value.type.shape
        tpv = PartitionViewType((n, m), tv.type, (1, 0), "zero")
        pv2 = self.b.value("make_partition_view", tv, result_types=[tpv])
        op = self.tok(self.b.create("load_view_tko", pv2, [ix[1], ix[0]], self.state["tok"],
                                    memory_ordering_semantics="weak"))
        return [op.results[0]]

    def gather(self, st, index):
        k = st.attrs["array"]
        shape = index.type.shape
        n = self.spread(self.views[k][3][0], shape)
        zero = self.const(I32, 0, shape)
        i1 = index.type.with_elem(I1)
        ge = self.b.value("cmpi", index, zero, result_types=[i1],
                          comparison_predicate="greater_than_or_equal", signedness="signed")
        lt = self.b.value("cmpi", index, n, result_types=[i1],
                          comparison_predicate="less_than", signedness="signed")
        mask = self.b.value("andi", ge, lt, result_types=[i1])
        elem = element_type(self.c.arrays[k].elem)
        pad = self.const(elem, st.attrs["pad"], shape)
        op = self.tok(self.b.create("load_ptr_tko", self.pointers(k, index), mask, pad,
                                    self.state["tok"], memory_ordering_semantics="weak"))
        return [op.results[0]]

    def scatter(self, st, value):
        k = st.attrs["array"]
        n = value.type.numel
        flat = self.b.value("reshape", value, result_types=[value.type.with_shape((n,))])
        start = self.b.value("muli", self.linear_block(), self.const(I32, n),
                             result_types=[TileType((), I32)])
        pos = self.b.value("addi", self.spread(start, (n,)), self.permuted(n),
                           result_types=[TileType((n,), I32)])
        mask = self.b.value("cmpi", pos, self.spread(self.views[k][3][0], (n,)),
                            result_types=[TileType((n,), I1)], comparison_predicate="less_than",
                            signedness="signed")
        self.tok(self.b.create("store_ptr_tko", self.pointers(k, pos), flat, mask,
                               self.state["tok"], memory_ordering_semantics="weak"))
        return []

    def atomic(self, st, value):
        """Shared: every block updates the same n elements. Local: this block's own stretch,
        each element once, so the old values it returns are deterministic (a result)."""
        k = st.attrs["array"]
        n = value.type.numel
        flat = self.b.value("reshape", value, result_types=[value.type.with_shape((n,))])
        pos = self.permuted(n)
        if st.attrs.get("local"):
            start = self.b.value("muli", self.linear_block(), self.const(I32, n),
                                 result_types=[TileType((), I32)])
            pos = self.b.value("addi", self.spread(start, (n,)), pos, result_types=[pos.type])
        op = self.tok(self.b.create("atomic_rmw_tko", self.pointers(k, pos), flat, None,
                                    self.state["tok"], memory_ordering_semantics="relaxed",
                                    memory_scope="device", mode=st.attrs["mode"]))
        if not st.results:
            return []
        return [self.b.value("reshape", op.results[0], result_types=[value.type])]
