"""A random kernel as plain data (`Case`), and its materialization into Tile IR.

A case is what one random kernel does in one tile block: load tiles of its input arrays, run a
list of `Step`s (one Tile IR op each; `for`/`if`/`reduce`/`scan` steps hold region bodies), and
store some values to its output arrays. Keeping it as data lets the same case be built alone
(for the interpreter, for emitter support checks, for regression tests, where it is written as
a Python literal) or batched with others into one entry (one C++ build, one CPU launch).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from tilepy.ir import Block, Builder, Module, Region, make_op
from tilepy.ir.opdef import DenseValue
from tilepy.types import (I32, PartitionViewType, PtrType, TensorViewType, TileType, TOKEN,
                          element_type, scalar_tile)

from .memsteps import MEMORY_STEPS, MemorySteps


@dataclass
class ArraySpec:
    """A kernel array: `shape` (row-major logical), `tile` shape, its view's dim_map, layout."""
    name: str
    elem: str
    shape: tuple[int, ...]
    tile: tuple[int, ...]
    role: str                        # "in" | "out"
    dim_map: tuple[int, ...] | None = None
    col_major: bool = False          # 2-d only: strides [1, ?] instead of [?, 1]
    pad: int = 0                     # extra elements per row/column of the allocation
    padding: str | None = None       # partition view padding_value (loads)
    flip: tuple[bool, ...] = ()      # per tile dim: index G-1-b instead of b
    values: list | None = None       # inputs: these storage values (row-major) instead of random


@dataclass
class Step:
    op: str
    args: tuple[int, ...]            # value ids
    results: tuple[tuple[int, str], ...]    # (value id, type text)
    attrs: dict = field(default_factory=dict)
    regions: tuple = ()              # tuple of (arg (id, type) pairs, steps, (terminator, ids))


@dataclass
class Case:
    arrays: list[ArraySpec]
    loads: list[tuple[int, int]]     # (value id, array index)
    steps: list[Step]
    stores: list[tuple[int, int]]    # (value id, array index)
    grid: tuple[int, int]
    inexact: set = field(default_factory=set)     # ids of values the spec does not pin down
    weights: dict = field(default_factory=dict)   # step index path -> error weight (ulps)


# ------------------------------------------------------------------------------ types as text
_TILE = re.compile(r"tile<(?:((?:\d+x)*))(ptr<(\w+)>|\w+)>$")


def parse_type(text: str) -> TileType:
    m = _TILE.match(text)
    if not m:
        raise ValueError(text)
    dims = tuple(int(d) for d in m.group(1).split("x") if d) if m.group(1) else ()
    elem = PtrType(element_type(m.group(3))) if m.group(3) else element_type(m.group(2))
    return TileType(dims, elem)


def dense(elem: str, values) -> DenseValue:
    """A DenseValue from storage values (ints as written, floats as hex bit patterns)."""
    e = element_type(elem)
    from tilepy.types import NUMPY_DTYPE
    dt = NUMPY_DTYPE[e]
    if e.is_float:
        bits = np.array(values, dtype=np.uint64).astype(f"u{dt.itemsize}")
        arr = bits.view(dt)
    elif e.name == "i1":
        arr = np.array(values, dtype=bool)
    else:
        arr = np.array(values, dtype=np.int64).astype(dt)
    return DenseValue(e, arr)


def dense_literal(arr: np.ndarray, elem) -> object:
    """Storage values as a Python literal (`dense` reads it back)."""
    a = np.asarray(arr)
    if elem.is_float:
        return a.view(f"u{a.dtype.itemsize}").astype(np.uint64).tolist()
    if elem.name == "i1":
        return a.astype(bool).tolist()
    return a.astype(np.int64).tolist()


# ------------------------------------------------------------------------------ materialize
class _Env(dict):
    def __missing__(self, k):
        raise KeyError(f"value %{k} used before it is defined")


def _attrs(step: Step) -> dict:
    out = {}
    for k, v in step.attrs.items():
        if k in ("value",):
            out[k] = dense(*v)
        elif k == "identities":
            out[k] = [dense(*x) for x in v]
        else:
            out[k] = v
    return out


def build_steps(b: Builder, env: _Env, steps, op_steps: dict, mem=None):
    for st in steps:
        if st.op in MEMORY_STEPS:          # pseudo-steps: several ops on the case's arrays
            out = mem(st, [env[i] for i in st.args])
            for (vid, _), v in zip(st.results, out):
                env[vid] = v
            continue
        operands = [env[i] for i in st.args]
        rtypes = [parse_type(t) for _, t in st.results]
        regions = []
        for (rargs, rsteps, (term, tids)) in st.regions:
            blk = Block([parse_type(t) for _, t in rargs])
            for (vid, _), a in zip(rargs, blk.args):
                env[vid] = a
            with b.at_end(blk):
                build_steps(b, env, rsteps, op_steps)
                b.create(term, [env[i] for i in tids])
            regions.append(Region([blk]))
        op = b.create(st.op, *_group(st.op, operands), result_types=rtypes, regions=regions,
                      **_attrs(st))
        op_steps[id(op)] = st
        for (vid, _), r in zip(st.results, op.results):
            env[vid] = r


def _group(name: str, operands: list) -> list:
    """Positional operand groups of the op row from a flat operand list."""
    if name in ("for",):
        return [*operands[:3], operands[3:]]
    if name in ("loop", "reduce", "scan", "join_tokens"):
        return [operands]
    if name == "extract":
        return [operands[0], operands[1:]]
    return operands


def _params(cases) -> tuple[list, list]:
    types, hints = [], []
    for ci, c in enumerate(cases):
        for a in c.arrays:
            types.append(scalar_tile(PtrType(element_type(a.elem))))
            hints.append(f"c{ci}_{a.name}")
            for d in range(len(a.shape)):
                types.append(scalar_tile(I32))
                hints.append(f"c{ci}_{a.name}_shape_{d}")
            if len(a.shape) == 2:
                types.append(scalar_tile(I32))
                hints.append(f"c{ci}_{a.name}_stride")
    return types, hints


def materialize(cases: list[Case], name: str = "fuzz") -> tuple[Module, dict]:
    """One entry running every case; returns (module, id(op) -> Step)."""
    module = Module(name)
    types, hints = _params(cases)
    blk = Block(types, hints)
    module.append(make_op("entry", regions=[Region([blk])], sym_name=name))
    b = Builder(blk)
    args = iter(blk.args)
    op_steps: dict = {}
    views = []
    for c in cases:
        views.append([_make_view(b, a, args) for a in c.arrays])
    bx, by, _ = b.create("get_tile_block_id").results
    state = {"tok": b.value("make_token")}
    for c, vs in zip(cases, views):
        env = _Env()
        idx = _block_index(b, c, bx, by)
        for vid, ai in c.loads:
            a = c.arrays[ai]
            tile, state["tok"] = b.create("load_view_tko", vs[ai][1], idx(a), state["tok"],
                                          memory_ordering_semantics="weak").results
            env[vid] = tile
        build_steps(b, env, c.steps, op_steps, MemorySteps(b, c, vs, idx, state))
        for vid, ai in c.stores:
            state["tok"] = b.value("store_view_tko", env[vid], vs[ai][1], idx(c.arrays[ai]),
                                   state["tok"], memory_ordering_semantics="weak")
    b.create("return")
    return module, op_steps


def _make_view(b: Builder, a: ArraySpec, args):
    base = next(args)
    shape = [next(args) for _ in a.shape]
    elem = element_type(a.elem)
    if len(a.shape) == 2:
        stride = next(args)
        strides = (1, None) if a.col_major else (None, 1)
    else:
        stride, strides = None, (1,)
    tv = TensorViewType(elem, (None,) * len(a.shape), strides)
    view = b.value("make_tensor_view", base, shape, [stride] if stride is not None else [],
                   result_types=[tv])
    pv = PartitionViewType(tuple(a.tile), tv, a.dim_map, a.padding)
    return view, b.value("make_partition_view", view, result_types=[pv]), base, shape


def _block_index(b: Builder, c: Case, bx, by):
    """Index of each array's tile for this block: rank 1 -> bx + gx*by, rank 2 -> (bx, by)."""
    gx, gy = c.grid
    cache = {}

    def const(v):
        if v not in cache:
            cache[v] = b.value("constant", value=DenseValue(I32, np.array(v, dtype=np.int32)),
                               result_types=[scalar_tile(I32)])
        return cache[v]

    def flipped(v, g, flip):
        return b.value("subi", const(g - 1), v) if flip else v

    def idx(a: ArraySpec):
        flip = a.flip or (False,) * len(a.tile)
        if len(a.tile) == 1:
            lin = b.value("addi", bx, b.value("muli", const(gx), by)) if gy > 1 else bx
            return [flipped(lin, gx * gy, flip[0])]
        return [flipped(bx, gx, flip[0]), flipped(by, gy, flip[1])]
    return idx


__all__ = ["ArraySpec", "Step", "Case", "materialize", "parse_type", "dense", "dense_literal",
           "TOKEN"]
