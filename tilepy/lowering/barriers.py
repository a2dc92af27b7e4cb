"""Which loads must wait for earlier stores of the same tile block.

Memory ops are ordered by tokens. A load whose token (transitively) follows a store may read
data that *other threads* of the block wrote, so the emitter puts a `__syncthreads()` before it.
A token is "after a store" if it is a store's result token, or flows from one through loads,
join_tokens, loop-carried values or if results (computed to a fixed point).
"""
from __future__ import annotations

from ..ir import Module
from ..types import TokenType


def loads_after_stores(module: Module) -> set[int]:
    dirty: set[int] = set()

    def mark(v) -> bool:
        if id(v) in dirty:
            return False
        dirty.add(id(v))
        return True

    changed = True
    while changed:
        changed = False
        for op in module.walk():
            if op.name in ("store_view_tko", "store_ptr_tko", "atomic_rmw_tko", "atomic_cas_tko"):
                changed |= any(mark(r) for r in op.results if isinstance(r.type, TokenType))
            elif op.name in ("load_view_tko", "load_ptr_tko", "join_tokens"):
                if any(id(v) in dirty for v in op.operands if isinstance(v.type, TokenType)):
                    changed |= any(mark(r) for r in op.results if isinstance(r.type, TokenType))
            if op.name in ("for", "loop"):
                blk = op.body.block
                off = 1 if op.name == "for" else 0
                inits = op.initValues
                for i, (init, arg, res) in enumerate(zip(inits, blk.args[off:], op.results)):
                    if not isinstance(init.type, TokenType):
                        continue
                    carried = [t.operands[i] for t in _terminators(blk, ("continue", "break"))
                               if i < len(t.operands)]
                    if id(init) in dirty or any(id(c) in dirty for c in carried):
                        changed |= mark(arg) | mark(res)
            if op.name == "if":
                for region in op.regions:
                    for b in region.blocks:
                        t = b.ops[-1] if b.ops else None
                        if t is not None and t.name == "yield":
                            for v, res in zip(t.operands, op.results):
                                if id(v) in dirty:
                                    changed |= mark(res)
    return {id(op) for op in module.walk()
            if op.name in ("load_view_tko", "load_ptr_tko") and op.token is not None
            and id(op.token) in dirty}


def _terminators(block, names):
    for o in block.ops:
        if o.name in names:
            yield o
        elif o.name == "if":
            for r in o.regions:
                for b in r.blocks:
                    yield from _terminators(b, names)
