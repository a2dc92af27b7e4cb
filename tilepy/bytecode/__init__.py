"""Tile IR bytecode: tilepy's own writer of NVIDIA's Tile IR bytecode format (the format that
`tileiras` and `tileirdisasm` read). Layouts per op are data (`layouts.py`); `writer.py` walks an
`ir.Module` and lays each op out by its row. This part sits beside frontend/lowering/interpret:
it imports only `ir` and below."""
from .reader import read_module  # noqa: F401
from .writer import VERSIONS, DEFAULT_VERSION, write_module  # noqa: F401
