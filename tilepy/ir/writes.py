"""Which entry arguments a module writes: the facts a launch checks (a read-only or
broadcast array the kernel stores to is an error), asked of the op table (`OpDef.writes`)."""
from __future__ import annotations

from ..types.tile import PartitionViewType, PtrType, TensorViewType, TileType


def stored_arrays(module) -> set[str]:
    """Names of the array parameters the kernel writes (stores, scatters, atomics): the entry
    arguments reached backwards from a write's destination through view and pointer values."""
    def is_ref(t) -> bool:
        return (isinstance(t, (TensorViewType, PartitionViewType, PtrType))
                or (isinstance(t, TileType) and isinstance(t.elem, PtrType)))
    out = set()
    for op in module.walk():
        operand = op.opdef.writes
        if operand is None:
            continue
        todo, seen = list(op.operand_group(operand)), set()
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            d = getattr(v, "op", None)
            if d is None:
                if v.hint:
                    out.add(v.hint)
                continue
            todo += [o for o in d.operands if is_ref(o.type)]
    return out
