"""The verifier: every rule of an op's row, region structure, terminators and SSA scoping.

A broken rule raises `TileVerificationError("<op>: <rule> (got ...)")` located at the op's
source location, with the module printed and the message under the failing op; the error's
`rule` attribute is the id of the broken rule (see `opdef.rule`). The rules
themselves live in the rows (`constraints`, then `region_rules` once the op's regions have
been checked); this file only walks the module and checks what is common to all ops.
"""
from __future__ import annotations

from ..errors import TileVerificationError
from .constraints import first_failure
from .core import Block, Module, Operation
from .opdef import attr_failure
from .ops import MODULE_RULES


class _Fail(Exception):
    def __init__(self, op, msg, rule="structure"):
        self.op, self.msg, self.rule = op, msg, rule


def _structure(op: Operation) -> str | None:
    d = op.opdef
    specs = d.operands
    if len(op.segments) != len(specs) or sum(op.segments) != len(op.operands):
        return f"expected {len(specs)} operand groups (got {len(op.segments)})"
    for spec, n in zip(specs, op.segments):
        if not spec.variadic and not (n == 1 or (spec.optional and n == 0)):
            return f"operand '{spec.name}' must be given exactly once (got {n})"
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


def _verify_block(block: Block, visible: set[int]):
    visible = set(visible) | {id(a) for a in block.args}
    for i, op in enumerate(block.ops):
        for v in op.operands:
            if id(v) not in visible:
                raise _Fail(op, f"operand {v.hint or ''} of type {v.type} is used before it is "
                                f"defined or outside its scope")
        if op.opdef.terminator and i != len(block.ops) - 1:
            raise _Fail(op, "a terminator must be the last op of its block")
        msg = _structure(op)
        if msg:
            raise _Fail(op, msg)
        failure = attr_failure(op.opdef, op.attrs) or first_failure(op, op.opdef.constraints)
        if failure:
            raise _Fail(op, failure[1], failure[0])
        # Regions are isolated from above for module items (entry), open for the others.
        inner = set() if op.name in ("entry", "global", "module") else visible
        for r in op.regions:
            for b in r.blocks:
                _verify_block(b, inner)
        failure = first_failure(op, op.opdef.region_rules)
        if failure:
            raise _Fail(op, failure[1], failure[0])
        visible |= {id(r) for r in op.results}


def verify(module: Module) -> Module:
    """Check the module; raise TileVerificationError naming the op and the rule."""
    from .printer import print_module
    try:
        failure = first_failure(module, MODULE_RULES)
        if failure:
            raise _Fail(None, failure[1], failure[0])
        for item in module.items:
            top = Block()
            top.ops = [item]
            _verify_block(top, set())        # `top.ops = [...]` leaves item.parent unset
    except _Fail as f:
        prefix = f"{f.op.name}: " if f.op is not None else "module: "
        err = TileVerificationError(prefix + f.msg, f.op.loc if f.op is not None else None)
        err.rule = f.rule
        marks = {id(f.op): prefix + f.msg} if f.op is not None else {}
        try:
            err.notes.append("in this module:\n" + print_module(module, marks))
        except Exception:  # printing a broken module must not hide the real error
            pass
        raise err from None
    return module
