"""The IR data structures: Value, Operation, Block, Region, Module.

One `Operation` class serves every op; what an op *is* (operands, attributes, results, regions,
syntax, type rules, constraints) lives in its `OpDef` row of the table in `ops.py`. Accessors
like `op.lhs` or `op.rounding_mode` are resolved through that row.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..errors import Loc
from ..types import Type

if TYPE_CHECKING:
    from .opdef import OpDef


class Value:
    """An SSA value. `hint` is a readable name for printing (e.g. the user's variable name)."""
    __slots__ = ("type", "hint")

    def __init__(self, type: Type, hint: str | None = None):
        self.type = type
        self.hint = hint

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.hint or ''}: {self.type}>"


class OpResult(Value):
    __slots__ = ("op", "index")

    def __init__(self, type: Type, op: "Operation", index: int):
        super().__init__(type)
        self.op = op
        self.index = index


class BlockArg(Value):
    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: "Block", index: int, hint: str | None = None):
        super().__init__(type, hint)
        self.block = block
        self.index = index


class Block:
    def __init__(self, arg_types: list[Type] = (), arg_hints: list[str | None] | None = None):
        self.args: list[BlockArg] = []
        self.ops: list[Operation] = []
        self.parent: Region | None = None
        hints = arg_hints or [None] * len(arg_types)
        for t, h in zip(arg_types, hints):
            self.add_arg(t, h)

    def add_arg(self, t: Type, hint: str | None = None) -> BlockArg:
        a = BlockArg(t, self, len(self.args), hint)
        self.args.append(a)
        return a

    def append(self, op: "Operation") -> "Operation":
        op.parent = self
        self.ops.append(op)
        return op

    @property
    def terminator(self) -> "Operation | None":
        return self.ops[-1] if self.ops and self.ops[-1].opdef.terminator else None

    @property
    def parent_op(self) -> "Operation | None":
        return self.parent.parent if self.parent else None


class Region:
    def __init__(self, blocks: list[Block] | None = None):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks or []:
            self.add_block(b)

    def add_block(self, b: Block) -> Block:
        b.parent = self
        self.blocks.append(b)
        return b

    @property
    def block(self) -> Block:
        """Tile IR regions hold exactly one block."""
        return self.blocks[0]


class Operation:
    """An op instance. Operands are flat; `segments` gives each declared operand's count."""

    def __init__(self, opdef: "OpDef", operands: list[Value], segments: list[int],
                 attrs: dict[str, Any], result_types: list[Type], regions: list[Region],
                 loc: Loc | None = None):
        self.opdef = opdef
        self.operands = list(operands)
        self.segments = list(segments)
        self.attrs = dict(attrs)
        self.results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.regions = list(regions)
        for r in self.regions:
            r.parent = self
        self.loc = loc
        self.parent: Block | None = None
        self.owner: Module | None = None     # the module of a module-level item

    @property
    def name(self) -> str:
        return self.opdef.name

    # ------------------------------------------------------------------ named access
    def operand_group(self, name: str) -> list[Value]:
        start = 0
        for spec, n in zip(self.opdef.operands, self.segments):
            if spec.name == name:
                return self.operands[start:start + n]
            start += n
        raise AttributeError(f"{self.name} has no operand '{name}'")

    def result_group(self, name: str) -> list[OpResult]:
        specs = self.opdef.results
        fixed = sum(1 for s in specs if not s.variadic)
        nvar = len(self.results) - fixed
        start = 0
        for spec in specs:
            n = nvar if spec.variadic else 1
            if spec.name == name:
                return self.results[start:start + n]
            start += n
        raise AttributeError(f"{self.name} has no result '{name}'")

    def __getattr__(self, name: str):
        # Only called when normal lookup fails: resolve declared operand/attr/result/region names.
        opdef = self.__dict__.get("opdef")
        if opdef is None:
            raise AttributeError(name)
        kind = opdef.member_kind(name)
        if kind == "operand":
            spec = opdef.operand_spec(name)
            vals = self.operand_group(name)
            if spec.variadic:
                return vals
            return vals[0] if vals else None
        if kind == "attr":
            return self.attrs.get(name)
        if kind == "result":
            spec = next(s for s in opdef.results if s.name == name)
            vals = self.result_group(name)
            return vals if spec.variadic else vals[0]
        if kind == "region":
            return self.regions[opdef.regions.index(name)]
        raise AttributeError(f"'{self.name}' op has no member '{name}'")

    @property
    def result(self) -> OpResult:
        """The single result, or the result declared as `result` (load_ptr_tko, atomics)."""
        if len(self.results) != 1 and any(r.name == "result" for r in self.opdef.results):
            return self.result_group("result")[0]
        assert len(self.results) == 1, f"{self.name} has {len(self.results)} results"
        return self.results[0]

    def walk(self) -> Iterator["Operation"]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for r in self.regions:
            for b in r.blocks:
                for op in b.ops:
                    yield from op.walk()

    def __repr__(self) -> str:
        return f"<op {self.name} {', '.join(str(r.type) for r in self.results)}>"


class Module:
    """A `cuda_tile.module`: named items (entries, globals)."""

    def __init__(self, name: str = "kernels"):
        self.name = name
        self.items: list[Operation] = []

    def append(self, op: Operation) -> Operation:
        op.owner = self
        self.items.append(op)
        return op

    def walk(self) -> Iterator[Operation]:
        for it in self.items:
            yield from it.walk()

    def entry(self, name: str | None = None) -> Operation:
        for it in self.items:
            if it.name == "entry" and (name is None or it.sym_name == name):
                return it
        raise KeyError(name)

    def __str__(self) -> str:
        return TEXT["module"](self)


# How a module prints (`str(module)`): printer.py, which imports this module, registers its
# print_module here; `tilepy.ir` loads the printer, so every Module can print.
TEXT: dict[str, Callable] = {}
