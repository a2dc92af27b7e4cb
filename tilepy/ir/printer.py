"""The textual `cuda_tile` syntax (spec chapter 8 examples).

Generic ops follow the `syntax` of their row; ops with regions (entry, for, if, loop, reduce,
scan), module items (global) and make_tensor_view (mixed static/dynamic lists) have a printer
function here. `parser.py` reads everything printed here back.
"""
from __future__ import annotations

import re
from typing import Callable

from .attrs import escape_string, format_scalar
from .core import TEXT, Block, Module, Operation, Value


class Namer:
    """Deterministic SSA names: the value's hint when it has one (made unique), else a number.
    Names are scoped like the regions: a name defined in a region is free again after it."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0
        self._saved: list[set[str]] = []

    def __call__(self, v: Value) -> str:
        key = id(v)
        if key not in self.names:
            self.names[key] = self._fresh(v.hint)
        return self.names[key]

    def push(self):
        self._saved.append(set(self.used))

    def pop(self):
        self.used = self._saved.pop()

    def _fresh(self, hint: str | None) -> str:
        name = None
        if hint and hint.isdigit():
            name = hint if hint not in self.used else None
        elif hint:
            base = re.sub(r"[^A-Za-z0-9_$.]", "_", hint)
            if base[0].isdigit():
                base = "_" + base
            name, i = base, 0
            while name in self.used:
                i += 1
                name = f"{base}_{i}"
        if name is None:
            while str(self.counter) in self.used:
                self.counter += 1
            name = str(self.counter)
            self.counter += 1
        self.used.add(name)
        return "%" + name


def syntax_anchor(toks) -> str | None:
    """The member an optional group depends on: its first `$x`, `type($x)` or `type1($x)`."""
    for t, _ in toks:
        if t.startswith("$"):
            return t[1:]
        if t.startswith("type"):
            return t[t.index("$") + 1:-1]
    return None


def typed_once(values) -> list:
    """The values `type1($x)` prints a type for: the first when all have one type, else each
    (NVIDIA's printer: a gather_scatter_view's index of 1-d and 0-d tiles)."""
    return list(values[:1]) if len({v.type for v in values}) <= 1 else list(values)


def group_end(toks, i: int) -> int:
    """Index just past the `)?` closing the optional group opened at `i`."""
    j, depth = i + 1, 1
    while depth:
        depth += {"?(": 1, ")?": -1}.get(toks[j][0], 0)
        j += 1
    return j


def attr_text(kind, v) -> str:
    if kind == "flag":
        return ""
    if kind == "bool":
        return "true" if v else "false"
    if kind == "ints":
        return "[" + ", ".join(str(x) for x in v) + "]"
    if kind == "string":
        return escape_string(str(v))
    if kind == "symbol":
        return "@" + str(v)
    if kind == "identities":
        return "[" + ", ".join(f"{format_scalar(d.array[()], d.elem)} : {d.elem}" for d in v) + "]"
    return str(v)      # enums, ints, dense, types, predicates, hints


class Printer:
    def __init__(self, marks: dict[int, str] | None = None):
        self.lines: list[str] = []
        self.name = Namer()
        self.indent = 0
        self.marks = marks or {}     # id(op) -> message printed under that op (verifier errors)

    def emit(self, text: str):
        for line in text.split("\n"):
            self.lines.append("  " * self.indent + line)

    def vals(self, vs) -> str:
        return ", ".join(self.name(v) for v in vs)

    def types(self, vs) -> str:
        return ", ".join(str(v.type) for v in vs)

    def results(self, op: Operation) -> str:
        return f"{self.vals(op.results)} = " if op.results else ""

    # ------------------------------------------------------------------ generic syntax
    def generic(self, op: Operation) -> str:
        pieces: list[tuple[str, bool]] = []
        toks = op.opdef.syntax_tokens()
        self._format(op, toks, 0, len(toks), pieces)
        out = ""
        for text, space in pieces:
            if text:
                out += (" " if space and out else "") + text
        return out

    def _present(self, op, name) -> bool:
        kind = op.opdef.member_kind(name)
        if kind == "operand":
            return bool(op.operand_group(name))
        if kind == "result":
            return bool(op.result_group(name))
        return op.attrs.get(name) not in (None, False)

    def _ref(self, op, name) -> str:
        kind = op.opdef.member_kind(name)
        if kind == "operand":
            return self.vals(op.operand_group(name))
        if kind == "attr":
            return attr_text(op.opdef.attr_spec(name).kind, op.attrs[name])
        raise KeyError(f"{op.name}: syntax refers to unknown member ${name}")

    def _types(self, op, name, first_only=False) -> str:
        kind = op.opdef.member_kind(name)
        vs = op.operand_group(name) if kind == "operand" else op.result_group(name)
        if first_only:       # type1: one type for a uniform group, else one each
            vs = typed_once(vs)
        return self.types(vs)

    def _format(self, op, toks, i, end, pieces):
        while i < end:
            tok, space = toks[i]
            if tok == "?(":
                j = group_end(toks, i)
                anchor = syntax_anchor(toks[i + 1:j - 1])
                if anchor is None or self._present(op, anchor):
                    self._format(op, toks, i + 1, j - 1, pieces)
                i = j
                continue
            if tok.startswith("$"):
                pieces.append((self._ref(op, tok[1:]), space))
            elif tok.startswith("type"):
                pieces.append((self._types(op, tok[tok.index("$") + 1:-1], tok.startswith("type1")),
                               space))
            else:
                pieces.append((tok, space and tok != ","))    # "x , y" prints "x, y"
            i += 1

    # ------------------------------------------------------------------ ops and blocks
    def op(self, op: Operation):
        custom = CUSTOM.get(op.name)
        if custom is not None:
            custom(self, op)
        else:
            body = self.generic(op)
            self.emit(f"{self.results(op)}{op.name}{' ' + body if body else ''}")
        if id(op) in self.marks:
            self.emit("// error: " + self.marks[id(op)])

    def block(self, block: Block):
        self.indent += 1
        for o in block.ops:
            self.op(o)
        self.indent -= 1

    def region(self, header: Callable[[], str], block: Block, trailer: str = "}"):
        """Print `header {`, the block, `trailer`; names made in `header()` are scoped inside."""
        self.name.push()
        self.emit(header() + " {")
        self.block(block)
        self.name.pop()
        self.emit(trailer)


# ---------------------------------------------------------------------- custom printers
def _print_entry(p: Printer, op: Operation):
    blk = op.body.block

    def head():
        args = ", ".join(f"{p.name(a)}: {a.type}" for a in blk.args)
        hints = op.attrs.get("optimization_hints")
        return f"entry @{op.sym_name}({args})" + (f" optimization_hints={hints}" if hints else "")
    p.region(head, blk)


def _print_global(p: Printer, op: Operation):
    align = f" alignment = {op.alignment}" if op.alignment is not None else ""
    p.emit(f"global @{op.sym_name}{align} {op.value} : {op.type}")


def _print_for(p: Printer, op: Operation):
    blk = op.body.block
    lhs = p.results(op)
    bounds = (f"({p.name(op.lowerBound)} to {p.name(op.upperBound)}, step {p.name(op.step)})"
              f" : {op.lowerBound.type}")

    def head():
        iv, carried = blk.args[0], blk.args[1:]
        text = f"{lhs}for {p.name(iv)} in {bounds}"
        if op.attrs.get("unsignedCmp"):
            text += " unsigned"
        if carried:
            inits = ", ".join(f"{p.name(a)} = {p.name(v)}" for a, v in zip(carried, op.initValues))
            text += f" iter_values({inits}) -> ({p.types(op.results)})"
        return text
    p.region(head, blk)


def _print_loop(p: Printer, op: Operation):
    blk = op.body.block
    lhs = p.results(op)

    def head():
        text = f"{lhs}loop"
        if blk.args:
            inits = ", ".join(f"{p.name(a)} = {p.name(v)}" for a, v in zip(blk.args, op.initValues))
            text += f" iter_values({inits}) : {p.types(op.initValues)}"
        if op.results:
            text += f"{'' if blk.args else ' :'} -> {p.types(op.results)}"
        return text
    p.region(head, blk)


def _print_if(p: Printer, op: Operation):
    head = f"{p.results(op)}if {p.name(op.condition)}"
    if op.results:
        head += f" -> ({p.types(op.results)})"
    else_r = op.elseRegion
    has_else = bool(else_r.blocks) and not (
        len(else_r.block.ops) == 1 and else_r.block.ops[0].name == "yield"
        and not else_r.block.ops[0].operands)
    if not has_else:
        p.region(lambda: head, op.thenRegion.block)
        return
    p.region(lambda: head, op.thenRegion.block, trailer="} else {")
    p.name.push()
    p.block(else_r.block)
    p.name.pop()
    p.emit("}")


def _print_reduce_like(p: Printer, op: Operation):
    blk = op.body.block
    head = f"{p.results(op)}{op.name} {p.vals(op.operands)} dim={op.dim}"
    if op.name == "scan":
        head += f" reverse={'true' if op.reverse else 'false'}"
    head += (f" identities={attr_text('identities', op.identities)} : "
             f"{p.types(op.operands)} -> {p.types(op.results)}")
    p.emit(head)
    p.region(lambda: "(" + ", ".join(f"{p.name(a)}: {a.type}" for a in blk.args) + ")", blk)


def _print_make_tensor_view(p: Printer, op: Operation):
    t = op.result.type
    shape_t, strides_t = (t.shape, t.strides) if hasattr(t, "strides") else ((), ())

    def items(static, dynamic):
        dyn = iter(dynamic)         # a malformed op (too few operands) prints `?`, never fails
        return ", ".join(str(d) if d is not None else
                         (p.name(v) if (v := next(dyn, None)) is not None else "?") for d in static)
    shape = items(shape_t, op.dynamicShape)
    strides = items(strides_t, op.dynamicStrides)
    dyn = list(op.dynamicShape) + list(op.dynamicStrides)
    types = f"{dyn[0].type} -> {t}" if dyn else str(t)
    p.emit(f"{p.results(op)}make_tensor_view {p.name(op.base)}, shape = [{shape}], "
           f"strides = [{strides}] : {types}")


CUSTOM: dict[str, Callable[[Printer, Operation], None]] = {
    "entry": _print_entry, "global": _print_global, "for": _print_for, "loop": _print_loop,
    "if": _print_if, "reduce": _print_reduce_like, "scan": _print_reduce_like,
    "make_tensor_view": _print_make_tensor_view,
}


def print_module(module: Module, marks: dict[int, str] | None = None) -> str:
    p = Printer(marks)
    p.emit(f"cuda_tile.module @{module.name} {{")
    p.indent += 1
    for item in module.items:
        p.op(item)
    p.indent -= 1
    p.emit("}")
    return "\n".join(p.lines) + "\n"


def print_op(op: Operation) -> str:
    p = Printer()
    p.op(op)
    return "\n".join(p.lines)


TEXT["module"] = print_module
