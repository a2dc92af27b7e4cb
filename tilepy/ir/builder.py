"""Building ops: operand grouping, result-type inference and the op's constraints.

`Builder.create("addf", a, b)` infers the result type from the op's row, checks every
constraint of the row, and raises `TileTypeError("addf: lhs and rhs must have the same element
type (got f16, f32)")` at the ambient source location when one is broken. The verifier runs
the very same constraints, so a module that was built is a module that verifies.
"""
from __future__ import annotations

import contextlib
from typing import Any, Sequence

from ..errors import TileTypeError, current_loc
from ..types import Type
from .constraints import check_all
from .core import Block, Operation, Region, Value
from .ops import OPS


def group_operands(opdef, args: Sequence[Any]) -> tuple[list[Value], list[int]]:
    """Match positional args to the declared operands: lists for variadics, None for absent."""
    if len(args) > len(opdef.operands):
        raise TileTypeError(f"{opdef.name}: expected at most {len(opdef.operands)} operand groups "
                            f"(got {len(args)})")
    flat, segments = [], []
    for i, spec in enumerate(opdef.operands):
        a = args[i] if i < len(args) else None
        if spec.variadic:
            vals = list(a or ())
        elif a is None:
            if not spec.optional:
                raise TileTypeError(f"{opdef.name}: missing operand '{spec.name}'")
            vals = []
        else:
            vals = [a]
        for v in vals:
            if not isinstance(v, Value):
                raise TileTypeError(f"{opdef.name}: operand '{spec.name}' must be an IR value "
                                    f"(got {type(v).__name__})")
        flat.extend(vals)
        segments.append(len(vals))
    return flat, segments


def make_op(name: str, *operands, result_types: Sequence[Type] | None = None,
            regions: Sequence[Region] = (), check: bool = True, **attrs) -> Operation:
    opdef = OPS[name]
    flat, segments = group_operands(opdef, operands)
    for spec in opdef.attrs:
        if not spec.optional and attrs.get(spec.name) is None:
            raise TileTypeError(f"{name}: missing attribute '{spec.name}'")
    unknown = set(attrs) - {a.name for a in opdef.attrs}
    if unknown:
        raise TileTypeError(f"{name}: unknown attribute(s) {sorted(unknown)}")
    flags = {a.name for a in opdef.attrs if a.kind == "flag"}    # False = absent for flags only
    attrs = {k: v for k, v in attrs.items() if v is not None and not (v is False and k in flags)}
    if result_types is None and not opdef.results:
        result_types = []
    if result_types is None:
        if opdef.infer is None:
            raise TileTypeError(f"{name}: the result type cannot be inferred; pass result_types")
        result_types = opdef.infer([v.type for v in flat], attrs)
    op = Operation(opdef, flat, segments, attrs, list(result_types), list(regions), current_loc())
    if check:
        msg = check_all(op, opdef.constraints)
        if msg:
            raise TileTypeError(f"{name}: {msg}")
    return op


class Builder:
    """Appends ops at an insertion point (the end of a block)."""

    def __init__(self, block: Block | None = None):
        self.block = block

    @contextlib.contextmanager
    def at_end(self, block: Block):
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    def insert(self, op: Operation) -> Operation:
        assert self.block is not None, "builder has no insertion block"
        return self.block.append(op)

    def create(self, name: str, *operands, result_types=None, regions=(), **attrs) -> Operation:
        return self.insert(make_op(name, *operands, result_types=result_types, regions=regions,
                                   **attrs))

    def value(self, name: str, *operands, **kw) -> Value:
        """Create a single-result op and return its result."""
        return self.create(name, *operands, **kw).result
