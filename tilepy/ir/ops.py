"""The op table: one `OpDef` row per Tile IR op (spec chapter 8), in `OPS`.

The rows are declared by topic in `ops_arith.py` (element-wise float/integer/compare/convert),
`ops_core.py` (tile construction, shape ops, mma, assume, print), `ops_memory.py` (tokens,
views, pointer memory, atomics) and `ops_control.py` (control flow, reduce/scan, module
items); `ops_dialect.py` the ops of NVIDIA's dialect newer than the spec (13.4). Adding an op is adding a row there (plus, where needed, its emitter function in
cuda_c/ and, for ops with regions or irregular text, a custom printer and parser).
"""
from __future__ import annotations

from . import ops_arith, ops_control, ops_core, ops_dialect, ops_memory  # noqa: F401  (register the rows)
from .opdef import OPS  # noqa: F401
from .ops_control import MODULE_RULES, fold_identities  # noqa: F401
from .ops_core import MMAF_TYPES  # noqa: F401
from .ops_memory import ATOMIC_MODE_TYPES  # noqa: F401
