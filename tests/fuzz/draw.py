"""Drawing whole cases: inputs, a random op sequence, outputs."""
from __future__ import annotations

import numpy as np

from tilepy.types import TileType, element_type

from . import genops as O
from . import genregions as R
from .case import ArraySpec, Case, dense_literal
from .values import random_values
from .gen import ALL, FLOATS, INTS, PADS, Draw, Gen, V

COMMON = FLOATS + INTS      # element types of most arrays (fp8/tf32 in 30% of draws)

KINDS = (  # (generator, weight)
    (O.float_binary, 10), (O.float_unary, 6), (O.fma, 3), (O.int_binary, 8), (O.int_unary, 2),
    (lambda g: O.compare(g) is not None, 5), (O.select, 5), (O.convert, 8), (O.reshape, 4),
    (O.broadcast, 4), (O.permute, 3), (O.extract, 2), (O.cat, 2), (O.iota, 1),
    (lambda g: R.reduce_or_scan(g, "reduce"), 5), (lambda g: R.reduce_or_scan(g, "scan"), 2),
    (R.mma, 4), (R.for_loop, 4), (R.if_else, 3), (R.block_scalar, 2),
    (lambda g: reload(g), 3), (lambda g: gather(g), 3), (lambda g: scatter(g), 2),
    (lambda g: atomic(g), 2),
)
_TABLE = [k for k, w in KINDS for _ in range(w)]


def _tile_shape(d: Draw, rank: int) -> tuple[int, ...]:
    if rank == 1:
        return (1 << d.int(0, 7),)
    a = d.int(0, 5)
    return (1 << a, 1 << d.int(0, min(5, 7 - a)))


def _array(d: Draw, name: str, elem: str, tile, grid, role: str) -> ArraySpec:
    rank = len(tile)
    dim_map = (1, 0) if rank == 2 and d.chance(25) else None
    blocks = (grid[0] * grid[1],) if rank == 1 else grid
    shape = [0] * rank
    ragged = False
    dm = dim_map or tuple(range(rank))
    for i, t in enumerate(tile):
        r = d.int(0, t - 1) if d.chance(40) else 0
        ragged |= r > 0
        shape[dm[i]] = blocks[i] * t - r
    el = element_type(elem)
    padding = None
    if role == "in" and (ragged or d.chance(30)):
        padding = d.choice(PADS) if el.is_float else "zero"
    return ArraySpec(name, elem, tuple(shape), tuple(tile), role, dim_map,
                     col_major=rank == 2 and d.chance(30), pad=d.choice((0, 0, 1, 3)),
                     padding=padding, flip=tuple(d.chance(25) for _ in tile))


def _output(g: Gen, v: V, k: int) -> tuple[int, ArraySpec]:
    if v.type.rank in (0, 3):
        shape = (v.type.numel,) if v.type.rank == 0 else (v.shape[0] * v.shape[1], v.shape[2])
        v = g.one("reshape", [v], [v.type.with_shape(shape)], exact=v.exact)
    spec = _array(g.d, f"out{k}", v.elem.name, v.shape, g.grid, "out")
    return v.id, spec


def reload(g: Gen) -> bool:
    """Store a 2-d value to a new scratch output and read it back transposed (case.py)."""
    if len(g.scopes) > 1:
        return False
    v = g.pick(lambda w: w.type.rank == 2 and w.type.numel > 1, recent=4)
    if v is None:
        return False
    spec = _array(g.d, f"scratch{len(g.arrays)}", v.elem.name, v.shape, g.grid, "out")
    spec.dim_map, spec.flip, spec.padding = None, (), None
    m, n = v.shape
    spec.shape = (g.grid[0] * m - g.d.int(0, m - 1), g.grid[1] * n - g.d.int(0, n - 1))
    g.arrays.append(spec)
    g.one("reload", [v], [v.type.with_shape((n, m))], {"array": len(g.arrays) - 1},
          exact=v.exact)
    return True


def _index_tile(g: Gen) -> V:
    """An i32 index tile: from the pool, or iota plus a (maybe negative) constant."""
    v = g.pick(lambda w: w.elem.name == "i32" and w.exact and w.type.rank >= 1, recent=6)
    if v is not None and g.d.chance(60):
        return v
    n = 1 << g.d.int(0, 6)
    it = g.one("iota", [], [TileType((n,), element_type("i32"))])
    return g.one("addi", [it, g.splat_like(it, g.d.int(-8, 40))], [it.type])


def gather(g: Gen) -> bool:
    ins = [k for k, a in enumerate(g.arrays) if a.role == "in" and len(a.shape) == 1]
    if len(g.scopes) > 1 or not ins:
        return False
    k = g.d.choice(ins)
    idx = _index_tile(g)
    elem = element_type(g.arrays[k].elem)
    pad = random_values(elem, (), np.random.default_rng(g.d.seed()))
    g.one("gather", [idx], [idx.type.with_elem(elem)],
          {"array": k, "pad": dense_literal(pad, elem)})
    return True


def _new_output(g: Gen, name: str, elem: str, n: int, length: int) -> int:
    g.arrays.append(ArraySpec(f"{name}{len(g.arrays)}", elem, (length,), (n,), "out",
                              pad=g.d.choice((0, 2))))
    return len(g.arrays) - 1


def scatter(g: Gen) -> bool:
    v = g.pick(lambda w: w.type.rank >= 1, recent=4)
    if len(g.scopes) > 1 or v is None:
        return False
    n = v.type.numel
    k = _new_output(g, "scatter", v.elem.name, n, g.grid[0] * g.grid[1] * n - g.d.int(0, n - 1))
    g.emit("scatter", [v], [], {"array": k})
    return True


_RMW = {"i32": ("add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg"),
        "f32": ("addf", "xchg"), "f64": ("addf", "xchg"), "f16": ("addf",)}
_RMW["i64"] = _RMW["i32"]
_SHARED = ("add", "max", "min", "umax", "umin", "and", "or", "xor")


def atomic(g: Gen) -> bool:
    v = g.pick(lambda w: w.elem.name in _RMW and w.exact and w.type.rank >= 1, recent=6)
    if len(g.scopes) > 1 or v is None:
        return False
    n = v.type.numel
    mode = g.d.choice(_RMW[v.elem.name])
    if mode in _SHARED and g.d.chance(50):
        k = _new_output(g, "atomic", v.elem.name, n, n)
        g.emit("atomic", [v], [], {"array": k, "mode": mode})
    else:
        k = _new_output(g, "atomic", v.elem.name, n, g.grid[0] * g.grid[1] * n)
        g.one("atomic", [v], [v.type], {"array": k, "mode": mode, "local": True})
    return True


def draw_case(d: Draw, grid: tuple[int, int]) -> Case:
    g = Gen(d, grid)
    arrays, loads = g.arrays, []
    for k in range(d.int(1, 3)):
        elem = d.choice(ALL) if d.chance(30) else d.choice(COMMON)
        spec = _array(d, f"in{k}", elem, _tile_shape(d, d.int(1, 2)), grid, "in")
        arrays.append(spec)
        loads.append((g.fresh(TileType(spec.tile, element_type(elem)), True).id, k))
    for _ in range(d.int(2, 12)):
        d.choice(_TABLE)(g)
    top = [v for v in g.scopes[0] if not isinstance(v.elem, type(None))]
    made = [v for v in top if v.id not in {i for i, _ in loads}] or top
    stores = []
    for k in range(d.int(1, min(3, len(made)))):
        v = made[-1 - k] if d.chance(70) else d.choice(made)
        vid, spec = _output(g, v, k)
        arrays.append(spec)
        stores.append((vid, len(arrays) - 1))
    return Case(arrays, loads, g.steps_stack[0], stores, grid, set(g.inexact), {"err": g.err})
