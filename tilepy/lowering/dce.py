"""Dead-code elimination: drop pure ops none of whose results are used (in every region)."""
from __future__ import annotations

from ..ir import Module, Operation


def _used(module: Module) -> set[int]:
    used = set()
    for op in module.walk():
        used.update(id(v) for v in op.operands)
    return used


def _removable(op: Operation, used: set[int]) -> bool:
    d = op.opdef
    return (d.pure and not d.terminator and op.results
            and not any(id(r) in used for r in op.results))


def dce(module: Module) -> Module:
    changed = True
    while changed:
        used = _used(module)
        changed = False
        for op in list(module.walk()):
            for region in op.regions:
                for block in region.blocks:
                    keep = [o for o in block.ops if not _removable(o, used)]
                    if len(keep) != len(block.ops):
                        block.ops = keep
                        changed = True
    return module
