"""The byte-level pieces of the bytecode format: LEB128 varints, little-endian integer lists,
and the interning tables (strings, types, constants) whose entries are referred to by index."""
from __future__ import annotations


def varint(x: int, buf: bytearray) -> None:
    """Unsigned LEB128."""
    if x < 0:
        raise ValueError(f"varint of a negative number {x}")
    while x > 0x7F:
        buf.append((x & 0x7F) | 0x80)
        x >>= 7
    buf.append(x)


def signed_varint(x: int, buf: bytearray) -> None:
    """Zig-zag then LEB128."""
    varint(~(x << 1) if x < 0 else x << 1, buf)


def int_list(values, width: int, buf: bytearray) -> None:
    """A count, then each value as `width` little-endian two's-complement bytes."""
    varint(len(values), buf)
    for v in values:
        buf.extend(int(v).to_bytes(width, "little", signed=True))


def pad(alignment: int, buf: bytearray) -> None:
    buf.extend(b"\xcb" * (-len(buf) % alignment))


class Interned:
    """Encoded entries -> index, in first-seen order (`start` is the first index)."""

    def __init__(self, start: int = 0):
        self.start = start
        self.ids: dict[bytes, int] = {}

    def __getitem__(self, encoded: bytes) -> int:
        if encoded not in self.ids:
            self.ids[encoded] = self.start + len(self.ids)
        return self.ids[encoded]

    def __len__(self) -> int:
        return len(self.ids)

    def write(self, index_width: int, buf: bytearray) -> None:
        """A table: the count, an offset per entry (aligned to index_width), then the entries."""
        varint(len(self.ids), buf)
        pad(index_width, buf)
        offset = 0
        for encoded in self.ids:
            buf.extend(offset.to_bytes(index_width, "little"))
            offset += len(encoded)
        for encoded in self.ids:
            buf.extend(encoded)


class Strings(Interned):
    def id(self, s: str) -> int:
        return self[s.encode()]


class Constants(Interned):
    def id(self, data: bytes) -> int:
        buf = bytearray()
        varint(len(data), buf)
        buf.extend(data)
        return self[bytes(buf)]
