"""The debug section: for every op of every function, a debug attribute (0: none) out of a
table of DIFile / DICompileUnit / DISubprogram / DILoc entries, so that NVIDIA's tools (and
`tileiras --lineinfo`) point at the user's Python lines. Locations come from `op.loc`."""
from __future__ import annotations

import os

from .stream import Interned, Strings, pad, varint

DI_COMPILE_UNIT, DI_FILE, DI_LOC, DI_SUBPROGRAM = 0x01, 0x02, 0x04, 0x05
SUBPROGRAM_FLAGS_SINCE = (13, 5)     # a DISubprogram ends with a flags varint (none used: 0)


class DebugInfo:
    def __init__(self, strings: Strings, version: tuple[int, int]):
        self.strings = strings
        self.subprogram_flags = version >= SUBPROGRAM_FLAGS_SINCE
        self.table = Interned(start=1)          # id 0 is "no location"
        self.per_function: list[list[int]] = []
        self.scope = 0

    def _entry(self, tag: int, *fields: int) -> int:
        buf = bytearray([tag])
        for f in fields:
            varint(f, buf)
        return self.table[bytes(buf)]

    def function(self, entry) -> int:
        """Start a function: its subprogram becomes the scope of its ops' locations; returns the
        function's index in the debug section."""
        loc = entry.loc
        self.scope = 0
        if loc is not None:
            directory, name = os.path.split(loc.file)
            file = self._entry(DI_FILE, self.strings.id(name), self.strings.id(directory))
            unit = self._entry(DI_COMPILE_UNIT, file)
            symbol = self.strings.id(entry.sym_name)
            flags = (0,) if self.subprogram_flags else ()
            self.scope = self._entry(DI_SUBPROGRAM, file, loc.line, symbol, symbol, unit, loc.line,
                                     *flags)
        self.per_function.append([])
        self.op(entry)
        return len(self.per_function)

    def op(self, op) -> None:
        loc = op.loc
        if loc is None or not self.scope:
            self.per_function[-1].append(0)
            return
        self.per_function[-1].append(self._entry(DI_LOC, self.scope, self.strings.id(loc.file),
                                                 loc.line, loc.col + 1))   # MLIR columns from 1

    def section(self) -> bytearray:
        buf = bytearray()
        varint(len(self.per_function), buf)
        pad(4, buf)
        offset = 0
        for ids in self.per_function:
            buf += offset.to_bytes(4, "little")
            offset += len(ids)
        varint(offset, buf)
        pad(8, buf)
        for ids in self.per_function:
            for i in ids:
                buf += i.to_bytes(8, "little")
        table = self.table
        if not len(table):                      # NVIDIA's reader wants a non-empty table
            table = Interned(start=1)
            table[b"\x00"]
        table.write(4, buf)
        return buf
