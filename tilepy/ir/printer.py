"""The textual `cuda_tile` syntax (spec chapter 8 examples).

Generic ops follow the `syntax` of their row; ops with regions (entry, for, if, loop, reduce,
scan) and make_tensor_view (mixed static/dynamic lists) have a printer function here.
"""
from __future__ import annotations

import re
from typing import Callable


from .core import Block, Module, Operation, Value
from .opdef import EnumKind, format_scalar


class Namer:
    """Deterministic SSA names: the value's hint when it has one (made unique), else a number."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def __call__(self, v: Value) -> str:
        key = id(v)
        if key not in self.names:
            self.names[key] = self._fresh(v.hint)
        return self.names[key]

    def _fresh(self, hint: str | None) -> str:
        if hint:
            base = re.sub(r"[^A-Za-z0-9_$.]", "_", hint)
            if base[0].isdigit():
                base = "_" + base
            name, i = base, 0
            while name in self.used:
                i += 1
                name = f"{base}_{i}"
        else:
            while str(self.counter) in self.used:
                self.counter += 1
            name = str(self.counter)
            self.counter += 1
        self.used.add(name)
        return "%" + name


class Printer:
    def __init__(self, marks: dict[int, str] | None = None):
        self.lines: list[str] = []
        self.name = Namer()
        self.indent = 0
        self.marks = marks or {}     # id(op) -> message printed under that op (verifier errors)

    def emit(self, text: str):
        for line in text.split("\n"):
            self.lines.append("  " * self.indent + line)

    # ------------------------------------------------------------------ values, types, attrs
    def vals(self, vs) -> str:
        return ", ".join(self.name(v) for v in vs)

    def attr(self, kind, v) -> str:
        if isinstance(kind, EnumKind) or kind == "symbol_ref":
            return str(v)
        if kind == "flag":
            return ""
        if kind in ("int",):
            return str(v)
        if kind == "bool":
            return "true" if v else "false"
        if kind == "ints":
            return "[" + ", ".join(str(x) for x in v) + "]"
        if kind == "string":
            return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
        if kind == "symbol":
            return "@" + str(v)
        if kind == "dense":
            return str(v)
        if kind == "identities":
            return "[" + ", ".join(f"{format_scalar(d.array[()], d.elem)} : {d.elem}" for d in v) + "]"
        if kind == "type":
            return str(v)
        return str(v)

    # ------------------------------------------------------------------ generic syntax
    def generic(self, op: Operation) -> str:
        pieces: list[tuple[str, bool]] = []
        toks = op.opdef.syntax_tokens()
        self._format(op, toks, 0, len(toks), pieces)
        out = ""
        for text, space in pieces:
            if not text:
                continue
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
            return self.attr(op.opdef.attr_spec(name).kind, op.attrs[name])
        raise KeyError(f"{op.name}: syntax refers to unknown member ${name}")

    def _types(self, op, name, first_only=False) -> str:
        kind = op.opdef.member_kind(name)
        vs = op.operand_group(name) if kind == "operand" else op.result_group(name)
        if first_only:
            vs = vs[:1]
        return ", ".join(str(v.type) for v in vs)

    def _format(self, op, toks, i, end, pieces):
        while i < end:
            tok, space = toks[i]
            if tok == "?(":
                j, depth = i + 1, 1
                while depth:
                    depth += {"?(": 1, ")?": -1}.get(toks[j][0], 0)
                    j += 1
                anchor = next((t[1:] for t, _ in toks[i + 1:j] if t.startswith("$")), None)
                if anchor is None or self._present(op, anchor):
                    self._format(op, toks, i + 1, j - 1, pieces)
                i = j
                continue
            if tok.startswith("$"):
                pieces.append((self._ref(op, tok[1:]), space))
            elif tok.startswith("type(") or tok.startswith("type1("):
                name = tok[tok.index("$") + 1:-1]
                pieces.append((self._types(op, name, tok.startswith("type1")), space))
            else:
                pieces.append((tok, space))
            i += 1

    # ------------------------------------------------------------------ ops and blocks
    def op(self, op: Operation):
        custom = CUSTOM.get(op.name)
        if custom is not None:
            custom(self, op)
        else:
            lhs = f"{self.vals(op.results)} = " if op.results else ""
            body = self.generic(op)
            self.emit(f"{lhs}{op.name}{' ' + body if body else ''}")
        if id(op) in self.marks:
            self.emit("// error: " + self.marks[id(op)])

    def block(self, block: Block):
        self.indent += 1
        for o in block.ops:
            self.op(o)
        self.indent -= 1

    def region_body(self, header: str, block: Block, trailer: str = "}"):
        self.emit(header + " {")
        self.block(block)
        self.emit(trailer)


# ---------------------------------------------------------------------- custom printers
def _print_entry(p: Printer, op: Operation):
    blk = op.body.block
    args = ", ".join(f"{p.name(a)}: {a.type}" for a in blk.args)
    p.region_body(f"entry @{op.sym_name}({args})", blk)


def _print_for(p: Printer, op: Operation):
    blk = op.body.block
    iv, carried = blk.args[0], blk.args[1:]
    lhs = f"{p.vals(op.results)} = " if op.results else ""
    head = (f"{lhs}for {p.name(iv)} in ({p.name(op.lowerBound)} to {p.name(op.upperBound)}, "
            f"step {p.name(op.step)}) : {op.lowerBound.type}")
    if op.attrs.get("unsignedCmp"):
        head += " unsigned"
    if carried:
        inits = ", ".join(f"{p.name(a)} = {p.name(v)}" for a, v in zip(carried, op.initValues))
        head += f" iter_values({inits}) -> ({', '.join(str(r.type) for r in op.results)})"
    p.region_body(head, blk)


def _print_loop(p: Printer, op: Operation):
    blk = op.body.block
    lhs = f"{p.vals(op.results)} = " if op.results else ""
    head = f"{lhs}loop"
    if blk.args:
        inits = ", ".join(f"{p.name(a)} = {p.name(v)}" for a, v in zip(blk.args, op.initValues))
        head += (f" iter_values({inits}) : {', '.join(str(v.type) for v in op.initValues)}"
                 f" -> {', '.join(str(r.type) for r in op.results)}")
    elif op.results:
        head += f" : -> {', '.join(str(r.type) for r in op.results)}"
    p.region_body(head, blk)


def _print_if(p: Printer, op: Operation):
    lhs = f"{p.vals(op.results)} = " if op.results else ""
    head = f"{lhs}if {p.name(op.condition)}"
    if op.results:
        head += f" -> ({', '.join(str(r.type) for r in op.results)})"
    then_b = op.thenRegion.block
    else_r = op.elseRegion
    has_else = bool(else_r.blocks) and (else_r.block.ops and not (
        len(else_r.block.ops) == 1 and else_r.block.ops[0].name == "yield"
        and not else_r.block.ops[0].operands))
    p.emit(head + " {")
    p.block(then_b)
    if has_else:
        p.emit("} else {")
        p.block(else_r.block)
    p.emit("}")


def _print_reduce_like(p: Printer, op: Operation):
    lhs = f"{p.vals(op.results)} = " if op.results else ""
    blk = op.body.block
    head = f"{lhs}{op.name} {p.vals(op.operands)} dim={op.dim}"
    if op.name == "scan":
        head += f" reverse={'true' if op.reverse else 'false'}"
    head += (f" identities={p.attr('identities', op.identities)} : "
             f"{', '.join(str(v.type) for v in op.operands)} -> "
             f"{', '.join(str(r.type) for r in op.results)}")
    p.emit(head)
    args = ", ".join(f"{p.name(a)}: {a.type}" for a in blk.args)
    p.region_body(f"({args})", blk)


def _print_make_tensor_view(p: Printer, op: Operation):
    t = op.result.type
    dyn_shape, dyn_strides = iter(op.dynamicShape), iter(op.dynamicStrides)
    shape = ", ".join(p.name(next(dyn_shape)) if d is None else str(d) for d in t.shape)
    strides = ", ".join(p.name(next(dyn_strides)) if s is None else str(s) for s in t.strides)
    dyn = list(op.dynamicShape) + list(op.dynamicStrides)
    types = f"{dyn[0].type} -> {t}" if dyn else str(t)
    p.emit(f"{p.name(op.result)} = make_tensor_view {p.name(op.base)}, shape = [{shape}], "
           f"strides = [{strides}] : {types}")


CUSTOM: dict[str, Callable[[Printer, Operation], None]] = {
    "entry": _print_entry, "for": _print_for, "loop": _print_loop, "if": _print_if,
    "reduce": _print_reduce_like, "scan": _print_reduce_like,
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
