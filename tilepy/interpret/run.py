"""`run(module, grid, args)`: bind the entry's parameters, map memory, run every tile block."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import TileError, TileTypeError, TileUnsupportedFeatureError, TileValueError, for_user
from ..host.grid import normalize_grid
from ..ir import Module, Operation, verify
from ..types import PtrType, TileType
from ..types import element as E
from .machine import (BlockExec, KernelAssertionError, Machine, OpEvent, race_report,
                      unsupported_ops)
from .memory import Memory, flat_span
from .tileops import dense_storage

MAX_TILE_ELEMENTS = 1 << 24  # the interpreter's own limit (a tile is a numpy array)


def _synchronizes(entry: Operation) -> bool:
    """Acquire/release memory ops order tile blocks (a lock, a flag): the race check, which
    does not model that happens-before relation, is skipped for such kernels."""
    return any(op.attrs.get("memory_ordering_semantics") in ("acquire", "release", "acq_rel")
               for op in entry.walk())


def _check_sizes(entry: Operation):
    for op in entry.walk():
        for v in op.results:
            if isinstance(v.type, TileType) and v.type.numel > MAX_TILE_ELEMENTS:
                raise TileValueError(f"{op.name}: a tile of {v.type.numel} elements ({v.type}) is "
                                     f"too large for the interpreter (at most {MAX_TILE_ELEMENTS})",
                                     op.loc)


def _pointer_arg(value, pointee, what: str) -> tuple[np.ndarray, int]:
    """(the memory an array argument spans, its first element's byte offset in it)."""
    offset = 0
    if isinstance(value, tuple) and len(value) == 2:
        value, offset = value
    if not isinstance(value, np.ndarray):
        raise TileTypeError(f"{what}: a tile<ptr<{pointee}>> parameter takes a numpy array or "
                            f"(array, element offset) (got {type(value).__name__})")
    want = E.NUMPY_DTYPE[pointee]
    if value.dtype.itemsize != want.itemsize or value.dtype.kind not in _KINDS[pointee.kind]:
        raise TileTypeError(f"{what}: expected an array of {pointee} ({want}) (got {value.dtype})")
    if any(s < 0 or s % value.dtype.itemsize for s in value.strides):
        raise TileValueError(f"{what}: array strides {value.strides} must be non-negative "
                             f"multiples of the element size")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise TileValueError(f"{what}: the element offset must be a non-negative int (got {offset!r})")
    return flat_span(value), int(offset) * want.itemsize


_KINDS = {"int": "iub", "float": "fV"}


def bind_args(memory: Memory, entry: Operation, args: Sequence[Any]) -> list:
    from .values import scalar_value
    params = entry.body.block.args
    if not isinstance(args, (list, tuple)):
        raise TileTypeError(f"args must be a list or tuple (got {type(args).__name__})")
    if len(args) != len(params):
        raise TileTypeError(f"kernel '{entry.sym_name}' has {len(params)} parameter(s) but "
                            f"{len(args)} argument(s) were given")
    out, arrays = [], {}
    for i, (p, v) in enumerate(zip(params, args)):
        what = f"argument {i} ({p.hint or 'param'}: {p.type})"
        t = p.type
        if not isinstance(t, TileType) or t.rank != 0:
            raise TileTypeError(f"{what}: kernel parameters must be 0-d tiles")
        if isinstance(t.elem, PtrType):
            arrays[i] = (what, *_pointer_arg(v, t.elem.pointee, what))
            out.append(None)
        else:
            out.append(scalar_value(v, t.elem, what))
    bases = memory.add_all([(what, flat) for what, flat, _ in arrays.values()])
    for (i, (_, _, offset)), base in zip(arrays.items(), bases):
        out[i] = np.array(base + offset, dtype=np.uint64)
    return out


def _globals(memory: Memory, module: Module) -> dict[str, int]:
    out = {}
    for item in module.items:
        if item.name == "global":
            dv = item.value
            shape = item.type.shape if isinstance(item.attrs.get("type"), TileType) else \
                np.shape(dv.array)
            arr = dense_storage(dv, dv.elem, shape).reshape(-1)
            out[item.sym_name] = memory.add(f"@{item.sym_name}", arr.copy(),
                                            readonly=bool(item.attrs.get("constant")))
    return out


def run(module: Module, grid, args: Sequence[Any], *, entry: str | None = None,
        on_op: Callable[[OpEvent], Any] | None = None, check_races: bool = True,
        max_loop_iterations: int = 1 << 20) -> None:
    """Execute `module`'s entry over `grid` with `args`, one per entry parameter: a numpy array
    (or `(array, element offset)`) for each tile<ptr<E>>, a Python/numpy scalar otherwise.
    Stores land in the given arrays. See the package docstring for the semantics."""
    try:
        if not isinstance(module, Module):
            raise TileTypeError(f"run() expects a tilepy.ir.Module (got {type(module).__name__})")
        verify(module)
        try:
            ent = module.entry(entry)
        except KeyError:
            raise TileValueError(f"the module has no entry named {entry!r}") from None
        _check_sizes(ent)
        bad = unsupported_ops(ent)
        if bad:
            raise TileUnsupportedFeatureError(f"'{bad[0].name}' is not supported by the interpreter",
                                              bad[0].loc)
        g = normalize_grid(grid)
        memory = Memory()
        values = bind_args(memory, ent, args)
        m = Machine(memory, g, _globals(memory, module), on_op, max_loop_iterations, check_races)
        body = ent.body.block
        linear = 0
        for z in range(g[2]):
            for y in range(g[1]):
                for x in range(g[0]):
                    ex = BlockExec(m, (x, y, z), linear)
                    for a, v in zip(body.args, values):
                        ex.bind(a, v)
                    ex.run_block(body)
                    linear += 1
        if m.assert_failures:
            op, block, e = m.assert_failures[0]
            raise KernelAssertionError(
                f"{len(m.assert_failures)} assertion failure(s); the first: {op.message} (tile "
                f"element {e}, tile block {block})", op.loc)
        race = race_report(m) if check_races and not _synchronizes(ent) else None
        if race:
            where, store = race
            raise TileValueError(f"data race: weak memory accesses of different tile blocks to "
                                 f"{where}, at least one a store (undefined behavior, spec 8.6)",
                                 store.loc)
    except TileError as e:
        for_user(e)
        raise
