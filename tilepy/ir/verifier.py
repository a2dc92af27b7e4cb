"""The verifier: every rule of an op's row, region structure, terminators and SSA scoping.

A broken rule raises `TileVerificationError("<op>: <rule> (got ...)")` located at the op's
source location, with the module printed and the message under the failing op.
"""
from __future__ import annotations

from ..errors import TileVerificationError
from ..types import TileType, TokenType, scalar_tile
from .constraints import check_all
from .core import Block, Module, Operation
from .opdef import EnumKind

# Which terminators may end the body of each region-holding op.
_TERMINATORS = {
    "entry": {"return"}, "for": {"continue"}, "loop": {"continue", "break"},
    "if": {"yield", "continue", "break", "return"}, "reduce": {"yield"}, "scan": {"yield"},
}


class _Fail(Exception):
    def __init__(self, op, msg):
        self.op, self.msg = op, msg


def _structure(op: Operation) -> str | None:
    d = op.opdef
    specs = d.operands
    if len(op.segments) != len(specs):
        return f"expected {len(specs)} operand groups (got {len(op.segments)})"
    for spec, n in zip(specs, op.segments):
        if not spec.variadic and n != (n if spec.optional and n in (0, 1) else 1):
            return f"operand '{spec.name}' must be given exactly once (got {n})"
    for spec in d.attrs:
        v = op.attrs.get(spec.name)
        if v is None:
            if not spec.optional:
                return f"missing attribute '{spec.name}'"
            continue
        if isinstance(spec.kind, EnumKind) and v not in spec.kind.values:
            return (f"attribute '{spec.name}' must be one of {', '.join(spec.kind.values)} "
                    f"(got {v})")
    nfixed = sum(1 for r in d.results if not r.variadic)
    if len(op.results) < nfixed or (len(op.results) != nfixed
                                    and not any(r.variadic for r in d.results)):
        return f"expected {nfixed} result(s) (got {len(op.results)})"
    if len(op.regions) != len(d.regions):
        return f"expected {len(d.regions)} region(s) (got {len(op.regions)})"
    for name, region in zip(d.regions, op.regions):
        if len(region.blocks) > 1:
            return f"region '{name}' must contain exactly one block (got {len(region.blocks)})"
        if not region.blocks and not (op.name == "if" and name == "elseRegion"):
            return f"region '{name}' must contain exactly one block (got 0)"
    return None


def _types(vs):
    return [v.type for v in vs]


def _fmt(ts):
    return "(" + ", ".join(map(str, ts)) + ")"


def _terminator_check(op: Operation) -> str | None:
    allowed = _TERMINATORS.get(op.name)
    if not allowed:
        return None
    want = " or ".join(sorted(allowed))
    for name, region in zip(op.opdef.regions, op.regions):
        for b in region.blocks:
            term = b.ops[-1] if b.ops else None
            if term is None or not term.opdef.terminator:
                return f"region '{name}' must end with {want}"
            if term.name not in allowed:
                return f"region '{name}' must end with {want} (got {term.name})"
    return None


def _region_types(op: Operation) -> str | None:
    n = op.name
    if n == "entry":
        for a in op.body.block.args:
            if not (isinstance(a.type, TileType) and a.type.rank == 0):
                return f"kernel parameters must be 0-d tiles (got {a.type})"
        ret = op.body.block.ops[-1]
        if ret.operands:
            return "a kernel returns no values (return must have no operands)"
    elif n == "for":
        blk = op.body.block
        inits = _types(op.initValues)
        want = [op.lowerBound.type, *inits]
        if _types(blk.args) != want:
            return f"body arguments must be the induction variable and the iter_values {_fmt(want)} (got {_fmt(_types(blk.args))})"
        if _types(op.results) != inits:
            return f"results must have the types of the iter_values {_fmt(inits)} (got {_fmt(_types(op.results))})"
        for t in _yields(blk, "continue"):
            if _types(t.operands) != inits:
                return f"continue must yield the iter_values types {_fmt(inits)} (got {_fmt(_types(t.operands))})"
    elif n == "loop":
        blk = op.body.block
        inits = _types(op.initValues)
        if _types(blk.args) != inits:
            return f"body arguments must match the iter_values {_fmt(inits)} (got {_fmt(_types(blk.args))})"
        for t in _yields(blk, "continue"):
            if _types(t.operands) != inits:
                return f"continue must yield the iter_values types {_fmt(inits)} (got {_fmt(_types(t.operands))})"
        for t in _yields(blk, "break"):
            if _types(t.operands) != _types(op.results):
                return f"break must yield the result types {_fmt(_types(op.results))} (got {_fmt(_types(t.operands))})"
    elif n == "if":
        res = _types(op.results)
        if res and not op.elseRegion.blocks:
            return "an if with results needs an else region"
        for region in op.regions:
            for b in region.blocks:
                t = b.ops[-1]
                if t.name == "yield" and _types(t.operands) != res:
                    return f"yield must match the result types {_fmt(res)} (got {_fmt(_types(t.operands))})"
        if any(isinstance(t, TokenType) is False and not isinstance(t, TileType) for t in res):
            return "results of if must be tiles or tokens, not views"
    elif n in ("reduce", "scan"):
        ins = op.operands
        ids = op.identities or ()
        if len(ids) != len(ins):
            return f"expected one identity per operand ({len(ins)}, got {len(ids)})"
        for v, ident in zip(ins, ids):
            if ident.elem != v.type.elem:
                return f"identity type {ident.elem} must match the operand element type {v.type.elem}"
        rank = ins[0].type.rank if ins else 0
        if not 0 <= op.dim < rank:
            return f"dim must be in [0, {rank}) (got {op.dim})"
        want = []
        for v in ins:
            want += [scalar_tile(v.type.elem)] * 2
        blk = op.body.block
        if _types(blk.args) != want:
            return f"body arguments must be {_fmt(want)} (got {_fmt(_types(blk.args))})"
        y = blk.ops[-1]
        want_y = [scalar_tile(v.type.elem) for v in ins]
        if _types(y.operands) != want_y:
            return f"body must yield {_fmt(want_y)} (got {_fmt(_types(y.operands))})"
        expect = op.opdef.infer(_types(ins), op.attrs)
        if _types(op.results) != expect:
            return f"results must be {_fmt(expect)} (got {_fmt(_types(op.results))})"
    return None


def _yields(block: Block, name: str):
    """Terminators `name` that belong to this loop body (not to nested loops)."""
    for o in block.ops:
        if o.name == name:
            yield o
        elif o.name == "if":
            for r in o.regions:
                for b in r.blocks:
                    yield from _yields(b, name)


def _verify_block(block: Block, visible: set[int]):
    visible = set(visible) | {id(a) for a in block.args}
    for i, op in enumerate(block.ops):
        for v in op.operands:
            if id(v) not in visible:
                raise _Fail(op, f"operand {v.hint or ''} of type {v.type} is used before it is "
                                f"defined or outside its scope")
        if op.opdef.terminator and i != len(block.ops) - 1:
            raise _Fail(op, "a terminator must be the last op of its block")
        msg = (_structure(op) or check_all(op, op.opdef.constraints) or _terminator_check(op)
               or _region_types(op) or check_all(op, op.opdef.region_rules))
        if msg:
            raise _Fail(op, msg)
        inner = set() if op.name == "entry" else visible
        for r in op.regions:
            for b in r.blocks:
                _verify_block(b, inner)
        visible |= {id(r) for r in op.results}


def verify(module: Module) -> Module:
    """Check the module; raise TileVerificationError naming the op and the rule."""
    from .printer import print_module
    try:
        if not module.items:
            raise _Fail(None, "a module must contain at least one item")
        names = [it.attrs.get("sym_name") for it in module.items]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise _Fail(None, f"item names must be unique in a module (duplicated: {sorted(dup)})")
        for item in module.items:
            if item.name not in ("entry", "global"):
                raise _Fail(item, "only entry and global ops may appear at module level")
            top = Block()
            top.ops = [item]
            _verify_block(top, set())
    except _Fail as f:
        prefix = f"{f.op.name}: " if f.op is not None else "module: "
        err = TileVerificationError(prefix + f.msg, f.op.loc if f.op is not None else None)
        marks = {id(f.op): prefix + f.msg} if f.op is not None else {}
        try:
            err.notes.append("in this module:\n" + print_module(module, marks))
        except Exception:  # printing a broken module must not hide the real error
            pass
        raise err from None
    return module
