"""Loads, stores and atomic reductions through NVIDIA's 13.3 tile views (gather_scatter_view,
strided_view) as pointer loads, stores and atomics, for the C++ backend (which emits partition
views and pointer tiles).

A `load_view_tko`/`store_view_tko` on such a view addresses, per tensor dimension d, the element
coordinates types/views.py defines (the interpreter's interpret/views.py computes the same):
  - gather_scatter_view: at `sparse_dim` the 1-d index tile's rows, elsewhere
    [start_d, start_d + T_d) from the 0-d start;
  - strided_view: [I_d * traversal_strides[d], + T_d) for tile index I_d.
Indices are read unsigned (zero-extended to 64 bits). The rewrite computes each coordinate as a
tile<i64> of the tile's shape, a mask of the coordinates inside the tensor (elements outside read
the view's padding and are not written, as with partition views), the element offsets
sum(c_d * stride_d) (masked-off elements at offset 0: never an invalid address), and then a
`load_ptr_tko`/`store_ptr_tko` with the mask, keeping the op's memory ordering, scope, token and
location. The view ops become dead and dce removes them. The module is marked
`views_as_pointers`: the Tile IR given to NVIDIA's compiler is traced again, views included.
"""
from __future__ import annotations

import numpy as np

from ..errors import TileUnsupportedFeatureError, at
from ..ir import DenseValue, Module
from ..ir.builder import make_op
from ..types import GatherScatterViewType, I1, I64, StridedViewType, TileType
from ..types.dtype import default_signed

# a view's padding value -> the float it reads (integer arrays only take "zero")
PADDING = {"zero": 0.0, "neg_zero": -0.0, "nan": float("nan"), "pos_inf": float("inf"),
           "neg_inf": float("-inf")}
VIEWS = (GatherScatterViewType, StridedViewType)


class _Emitter:
    """Ops made for one rewritten load/store, in order, at its location."""

    def __init__(self, loc):
        self.ops, self.loc = [], loc

    def op(self, name, *operands, result_types=None, **attrs):
        o = make_op(name, *operands, result_types=result_types, **attrs)
        o.loc = self.loc
        self.ops.append(o)
        return o

    def value(self, name, *operands, result_types=None, **attrs):
        return self.op(name, *operands, result_types=result_types, **attrs).results[0]

    def const(self, value, elem, shape=()):
        """A splat constant of `elem` (storage as the frontend's: signed ints, numpy floats)."""
        arr = np.array(value, dtype=default_signed(elem).numpy)
        return self.value("constant", value=DenseValue(elem, arr),
                          result_types=[TileType(tuple(shape), elem)])

    def to_i64(self, v):
        """A scalar/tile integer value zero-extended to i64 (indices are read unsigned)."""
        t = v.type
        if t.elem == I64:
            return v
        return self.value("exti", v, signedness="unsigned",
                          result_types=[t.with_elem(I64)])

    def along(self, v, shape, d):
        """A 1-d tile<i64> (or 0-d) spread along dimension d of `shape`, broadcast to it."""
        rank = len(shape)
        dims = tuple(shape[d] if i == d and v.type.shape else 1 for i in range(rank))
        if v.type.shape != dims:
            v = self.value("reshape", v, result_types=[TileType(dims, I64)])
        if dims != tuple(shape):
            v = self.value("broadcast", v, result_types=[TileType(tuple(shape), I64)])
        return v

    def binary(self, name, a, b, elem=I64, **attrs):
        return self.value(name, a, b, result_types=[a.type.with_elem(elem)], **attrs)


def _tensor_view_operands(view):
    """(base, [extent per dim], [stride per dim]) of a view value's tensor_view: Values for
    dynamic entries, ints for static ones."""
    tv_op = getattr(view, "op", None)
    if tv_op is None or tv_op.name != "make_tensor_view":
        return None
    t = view.type
    dyn_shape, dyn_strides = list(tv_op.dynamicShape), list(tv_op.dynamicStrides)
    shape = [s if s is not None else dyn_shape.pop(0) for s in t.shape]
    strides = [s if s is not None else dyn_strides.pop(0) for s in t.strides]
    return tv_op.base, shape, strides


def _coords(e: _Emitter, vt, index, shape):
    """Per tensor dimension, the element coordinate of every tile element (tile<i64>)."""
    out = []
    for d, n in enumerate(shape):
        i = e.to_i64(index[d])
        if isinstance(vt, GatherScatterViewType) and d == vt.sparse_dim:
            out.append(e.along(i, shape, d))
            continue
        if isinstance(vt, StridedViewType) and vt.traversal_strides[d] != 1:
            i = e.binary("muli", i, e.const(vt.traversal_strides[d], I64))
        ramp = e.value("iota", result_types=[TileType((n,), I64)])
        out.append(e.binary("addi", e.along(ramp, shape, d), e.along(i, shape, d)))
    return out


def _pointers(e: _Emitter, view_value, vt, index):
    """(pointer tile, in-bounds mask) of the elements a load/store through `vt` addresses."""
    found = _tensor_view_operands(view_value)
    if found is None:
        raise TileUnsupportedFeatureError(
            f"a {str(vt).split('<')[0]} of a tensor_view that is not made in this kernel body "
            f"is not supported by the CUDA C++ backend yet")
    base, extents, strides = found
    shape = vt.tile_shape
    coords = _coords(e, vt, index, shape)
    mask = off = None
    for c, ext, stride in zip(coords, extents, strides):
        bound = e.along(e.const(ext, I64) if isinstance(ext, int) else e.to_i64(ext), shape, 0)
        ok = e.binary("cmpi", c, bound, I1, comparison_predicate="less_than",
                      signedness="unsigned")
        mask = ok if mask is None else e.binary("andi", mask, ok, I1)
        if stride != 1:
            s = e.const(stride, I64) if isinstance(stride, int) else e.value(
                "exti", stride, signedness="signed", result_types=[stride.type.with_elem(I64)])
            c = e.binary("muli", c, e.along(s, shape, 0))
        off = c if off is None else e.binary("addi", off, c)
    off = e.value("select", mask, off, e.const(0, I64, shape), result_types=[off.type])
    ptr_t = base.type.with_shape(shape)
    ptrs = e.value("broadcast", e.value("reshape", base, result_types=[
        base.type.with_shape((1,) * len(shape))]), result_types=[ptr_t]) \
        if shape != base.type.shape else base
    return e.value("offset", ptrs, off, result_types=[ptr_t]), mask


def _rewrite(op):
    """(new ops, {old value: new value}) for one load/store/atomic reduction through a
    gather/strided view."""
    e = _Emitter(op.loc)
    memory = {k: op.attrs[k] for k in ("memory_ordering_semantics", "memory_scope")
              if k in op.attrs}
    if op.name == "load_view_tko":
        view, index, token = op.operands[0], op.operand_group("index"), op.operand_group("token")
        vt = view.type
        ptrs, mask = _pointers(e, vt_view(view), vt, index)
        pad = None
        if vt.padding_value is not None:
            pad = e.const(PADDING[vt.padding_value], vt.view.elem, vt.tile_shape)
        new = e.op("load_ptr_tko", ptrs, mask, pad, *token, result_types=[
            TileType(vt.tile_shape, vt.view.elem), op.results[1].type], **memory)
        return e.ops, {op.results[0]: new.results[0], op.results[1]: new.results[1]}
    if op.name == "atomic_red_view_tko":         # an atomic_rmw_tko whose old values go unused
        view, value = op.operands[0], op.tile
        index, token = op.operand_group("index"), op.operand_group("token")
        ptrs, mask = _pointers(e, vt_view(view), view.type, index)
        new = e.op("atomic_rmw_tko", ptrs, value, mask, *token, mode=op.attrs["mode"],
                   result_types=[value.type, op.results[0].type], **memory)
        return e.ops, {op.results[0]: new.results[1]}
    value, view = op.operands[0], op.operands[1]
    index, token = op.operand_group("index"), op.operand_group("token")
    ptrs, mask = _pointers(e, vt_view(view), view.type, index)
    new = e.op("store_ptr_tko", ptrs, value, mask, *token, result_types=[op.results[0].type],
               **memory)
    return e.ops, {op.results[0]: new.results[0]}


def vt_view(view_value):
    """The tensor_view a gather_scatter/strided view value is made of."""
    made = getattr(view_value, "op", None)
    if made is None or made.name not in ("make_gather_scatter_view", "make_strided_view"):
        raise TileUnsupportedFeatureError(
            "a gather_scatter_view or strided_view that is not made in this kernel body is "
            "not supported by the CUDA C++ backend yet")
    return made.operands[0]


def views_to_pointers(module: Module) -> Module:
    """Rewrite, in place, every load/store/atomic_red_view through a gather_scatter_view or
    strided_view."""
    replaced = {}
    for op in list(module.walk()):
        if op.name not in ("load_view_tko", "store_view_tko", "atomic_red_view_tko"):
            continue
        view = op.operands[1 if op.name == "store_view_tko" else 0]
        if not isinstance(view.type, VIEWS):
            continue
        with at(op.loc):
            new_ops, mapping = _rewrite(op)
        block = op.parent
        i = block.ops.index(op)
        for o in new_ops:
            o.parent = block
        block.ops[i:i + 1] = new_ops
        replaced.update({id(k): v for k, v in mapping.items()})
    if replaced:
        for op in module.walk():
            op.operands = [replaced.get(id(v), v) for v in op.operands]
        module.views_as_pointers = True       # no longer the traced Tile IR (api/compiler.tile_ir)
    return module
