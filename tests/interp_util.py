"""Small Tile IR modules for interpreter tests: an entry taking 1-d arrays, element-wise bodies."""
from __future__ import annotations

import numpy as np

import tilepy.interpret as interp
from tilepy.ir import Block, Builder, Module, Region, make_op
from tilepy.ir.opdef import DenseValue
from tilepy.types import (NUMPY_DTYPE, PartitionViewType, PtrType, TensorViewType, TileType,
                          element_type, scalar_tile)


def pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def t(text: str) -> TileType:
    """'4xf32' -> tile<4xf32>, 'i1' -> tile<i1>."""
    *dims, elem = text.split("x")
    return TileType(tuple(int(d) for d in dims), element_type(elem))


class Kernel:
    """An entry whose parameters are pointers (1-d arrays of static length) and scalars."""

    def __init__(self, params: list[str], name: str = "k"):
        types = []
        for p in params:
            types.append(scalar_tile(PtrType(element_type(p[1:]))) if p.startswith("*")
                         else t(p))
        self.module = Module(name)
        self.block = Block(types)
        self.module.append(make_op("entry", regions=[Region([self.block])], sym_name=name))
        self.b = Builder(self.block)
        self.args = self.block.args

    def const(self, elem: str, value, shape=()) -> object:
        e = element_type(elem)
        arr = np.array(value, dtype=NUMPY_DTYPE[e])
        if arr.dtype.kind == "u":
            arr = arr.view(f"i{arr.dtype.itemsize}")
        return self.b.value("constant", value=DenseValue(e, arr), result_types=[TileType(shape, e)])

    def view(self, ptr, n: int, tile: int | None = None, padding=None):
        e = ptr.type.elem.pointee
        tv = self.b.value("make_tensor_view", ptr, [], [],
                          result_types=[TensorViewType(e, (n,), (1,))])
        pv = PartitionViewType((tile or pow2(n),), tv.type, None, padding)
        return self.b.value("make_partition_view", tv, result_types=[pv])

    def load(self, ptr, n: int, index=0, tile=None, padding=None):
        v = self.view(ptr, n, tile, padding)
        return self.b.create("load_view_tko", v, [self.const("i32", index)],
                             memory_ordering_semantics="weak").results[0]

    def store(self, value, ptr, n: int, index=0):
        v = self.view(ptr, n, value.type.shape[0])
        self.b.create("store_view_tko", value, v, [self.const("i32", index)],
                      memory_ordering_semantics="weak")

    def op(self, name, *operands, **kw):
        return self.b.value(name, *operands, **kw)

    def done(self) -> Module:
        self.b.create("return")
        return self.module


def elementwise(name: str, src: list[str], dst: str, n: int, **attrs) -> Module:
    """k(*src0, *src1, ..., *dst): dst = name(src...) on n elements."""
    k = Kernel([f"*{s}" for s in src] + [f"*{dst}"])
    ins = [k.load(a, n) for a in k.args[:len(src)]]
    r = k.op(name, *ins, result_types=[TileType((pow2(n),), element_type(dst))], **attrs)
    k.store(r, k.args[len(src)], n)
    return k.done()


def run1(name: str, *inputs: np.ndarray, dst: np.dtype | None = None, to: str | None = None,
         **attrs) -> np.ndarray:
    """Interpret one element-wise op on numpy inputs; returns the output array."""
    from tilepy.types.element import DATA_LAYOUT, ELEMENT_TYPES
    rev = {NUMPY_DTYPE[e]: e.name for e in ELEMENT_TYPES.values() if e in DATA_LAYOUT}
    src = [rev[np.dtype(a.dtype)] if np.dtype(a.dtype) in rev else _unsigned(a) for a in inputs]
    to = to or src[0]
    out = np.zeros(len(inputs[0]), dtype=dst or NUMPY_DTYPE[element_type(to)])
    interp.run(elementwise(name, src, to, len(inputs[0]), **attrs), 1, [*inputs, out])
    return out


def _unsigned(a) -> str:
    return f"i{np.dtype(a.dtype).itemsize * 8}"
