"""Tile IR bytecode -> ir.Module: the inverse of writer.py, driven by the same layout rows (for
round trips, and to read what NVIDIA's tools write in the versions tilepy writes).

What tilepy's ops cannot hold is refused with a TileUnsupportedFeatureError naming it (an op
tilepy does not have, a 13.4 pointer attribute)."""
from __future__ import annotations

import numpy as np

from ..errors import Loc, TileUnsupportedFeatureError, TileValueError
from ..ir.attrs import AssumePredicate, DenseValue, OptimizationHints
from ..ir.builder import make_op
from ..ir.core import Block, Module, Region
from ..ir.opdef import ROUNDING
from ..ir.ops import OPS
from ..types import TOKEN, PartitionViewType, PtrType, TensorViewType, TileType, element_type
from ..types import element as E
from ..types.convert import decode_bits, has_encoded_bits
from . import types as T
from .view_types import PADDING_BY_BYTE, decode_view
from .debuginfo import DI_LOC
from .layouts import LAYOUTS, Field, Layout
from .writer import (ENTRY_ATTRS_SINCE, ENTRY_HINTS, MAGIC, SEC_CONST, SEC_DEBUG, SEC_END, SEC_FUNC, SEC_GLOBAL, SEC_STRING,
                     SEC_TYPE, TAG_BOOL, TAG_BOUNDED, TAG_DICT, TAG_DIV_BY, TAG_FLOAT, TAG_HINTS,
                     TAG_ARRAY, TAG_INT, TAG_SAME, VERSIONS)

BY_OPCODE = {layout.opcode: (name, layout) for name, layout in LAYOUTS.items()}
SIMPLE_BY_TAG = {tag: name for name, tag in T.SIMPLE.items()}



class _Cursor:
    def __init__(self, data: bytes, pos: int = 0, end: int | None = None):
        self.data, self.pos, self.end = data, pos, len(data) if end is None else end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise TileValueError(f"bytecode: truncated at offset {self.pos}")
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        value, shift = 0, 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    def signed(self) -> int:
        v = self.varint()
        return ~(v >> 1) if v & 1 else v >> 1

    def raw(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise TileValueError(f"bytecode: truncated at offset {self.pos}")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def ints(self, width: int) -> list[int]:
        return [int.from_bytes(self.raw(width), "little", signed=True) for _ in range(self.varint())]

    def align(self, alignment: int, base: int = 0) -> None:
        self.pos += -(self.pos - base) % alignment


def _table(data: bytes, width: int) -> list[bytes]:
    """The entries of a string/type/constant table section body."""
    c = _Cursor(data)
    n = c.varint()
    c.align(width)
    offsets = [int.from_bytes(c.raw(width), "little") for _ in range(n)] + [None]
    body = data[c.pos:]
    return [body[offsets[i]:offsets[i + 1]] for i in range(n)]


def read_module(data: bytes, name: str = "kernels") -> Module:
    if data[:8] != MAGIC:
        raise TileValueError("not Tile IR bytecode (no \\x7fTileIR magic)")
    version = (data[8], data[9])
    if version not in VERSIONS:
        raise TileUnsupportedFeatureError(
            f"bytecode version {version[0]}.{version[1]} is not read by tilepy")
    sections, c = {}, _Cursor(data, 12)
    while (sid := c.byte()) != SEC_END:
        length = c.varint()
        if sid & 0x80:
            c.align(c.varint())
        sections[sid & 0x7F] = c.raw(length)
    return _Reader(version, sections).module(name)


class _Reader:
    def __init__(self, version, sections: dict):
        self.version = version
        self.strings = [s.decode() for s in _table(sections.get(SEC_STRING, b"\0"), 4)]
        self.type_entries = _table(sections.get(SEC_TYPE, b"\0"), 4)
        self.constants = [self._constant(e) for e in _table(sections.get(SEC_CONST, b"\0"), 8)]
        self.sections, self.types = sections, {}
        self.locs = self._debug(sections.get(SEC_DEBUG))
        self.next_loc, self.functions_read = iter(()), 0

    def _debug(self, data: bytes | None) -> list[list]:
        """Per function, the Loc of each op (pre-order, the function first) from its DILoc."""
        if not data:
            return []
        c = _Cursor(data)
        n = c.varint()
        c.align(4)
        starts = [int.from_bytes(c.raw(4), "little") for _ in range(n)]
        total = c.varint()
        c.align(8)
        ids = [int.from_bytes(c.raw(8), "little") for _ in range(total)]
        entries = _table(data[c.pos:], 4)
        locs = {0: None}

        def loc(i):
            if i not in locs:
                e = _Cursor(entries[i - 1])
                if e.byte() != DI_LOC:
                    locs[i] = None
                else:
                    e.varint()                       # the scope: the function's subprogram
                    file, line, col = self.strings[e.varint()], e.varint(), e.varint()
                    locs[i] = Loc(file, line, max(col - 1, 0))
            return locs[i]
        bounds = starts + [total]
        return [[loc(i) for i in ids[bounds[f]:bounds[f + 1]]] for f in range(n)]

    @staticmethod
    def _constant(entry: bytes) -> bytes:
        c = _Cursor(entry)
        return c.raw(c.varint())

    # ------------------------------------------------------------------ types
    def type(self, tid: int):
        if tid not in self.types:
            self.types[tid] = self._decode_type(_Cursor(self.type_entries[tid]))
        return self.types[tid]

    def _decode_type(self, c: _Cursor):
        tag = c.varint()                 # one byte but for f8E5M3FNU's (130)
        if tag in SIMPLE_BY_TAG:
            return element_type(SIMPLE_BY_TAG[tag])
        if tag == T.TOKEN_TAG:
            return TOKEN
        if tag == T.POINTER:
            self._no_13_4_flags(c)
            return PtrType(self.type(c.varint()))
        if tag == T.TILE:
            elem = self.type(c.varint())
            return TileType(tuple(c.ints(8)), elem)
        if tag == T.TENSOR_VIEW:
            self._no_13_4_flags(c)
            elem = self.type(c.varint())
            dims = [tuple(None if d == T.DYNAMIC else d for d in c.ints(8)) for _ in range(2)]
            return TensorViewType(elem, *dims)
        if tag == T.PARTITION_VIEW:
            return self._partition_view(c)
        if tag == T.FUNCTION:
            return [[self.type(c.varint()) for _ in range(c.varint())] for _ in range(2)]
        view = decode_view(self, tag, c)
        if view is not None:
            return view
        raise TileUnsupportedFeatureError(f"bytecode: type tag {tag:#x} is not a tilepy type")

    def _no_13_4_flags(self, c: _Cursor) -> None:
        if self.version >= (13, 4) and c.varint():
            raise TileUnsupportedFeatureError("bytecode: pointer attributes (13.4) are not read")

    def _partition_view(self, c: _Cursor) -> PartitionViewType:
        has_pad = c.varint() if self.version >= (13, 3) else None
        tile = tuple(c.ints(4))
        view = self.type(c.varint())
        dim_map = tuple(c.ints(4))
        if has_pad is None:
            has_pad = c.varint()
        pad = PADDING_BY_BYTE[c.byte()] if has_pad else None
        identity = dim_map == tuple(range(len(dim_map)))
        return PartitionViewType(tile, view, None if identity else dim_map, pad)

    # ------------------------------------------------------------------ the module
    def module(self, name: str) -> Module:
        m = Module(name)
        if SEC_GLOBAL in self.sections:
            for g in self._globals(_Cursor(self.sections[SEC_GLOBAL])):
                m.append(g)
        c = _Cursor(self.sections.get(SEC_FUNC, b"\0"))
        for _ in range(c.varint()):
            m.append(self._function(c))
        return m

    def _globals(self, c: _Cursor):
        for _ in range(c.varint()):
            sym, t, const, align = (c.varint() for _ in range(4))
            private, constant = (c.byte(), c.varint()) if self.version >= (13, 3) else (0, 0)
            ty = self.type(t)
            yield make_op("global", sym_name=self.strings[sym], type=ty, check=False,
                          value=self.dense(self.constants[const], ty), alignment=align or None,
                          symbol_visibility="private" if private else None,
                          constant=bool(constant) or None)

    def _function(self, c: _Cursor):
        name = self.strings[c.varint()]
        params, _results = self.type(c.varint())
        flags = c.byte()
        c.varint()                               # debug index
        hints = None
        always = self.version >= ENTRY_ATTRS_SINCE
        if flags & ENTRY_HINTS or always:
            if c.byte() != TAG_HINTS:
                raise TileValueError("bytecode: entry hints without their tag")
            hints = self.hints(c)
            hints = hints if hints.entries else None     # 13.5 writes an entry's empty hints
        if always and (c.byte() != TAG_ARRAY or c.varint()):
            raise TileUnsupportedFeatureError(
                f"bytecode: entry @{name} has argument attributes, which tilepy does not read")
        end = c.varint() + c.pos
        index, self.functions_read = self.functions_read, self.functions_read + 1
        self.next_loc = iter(self.locs[index] if index < len(self.locs) else ())
        entry_loc = next(self.next_loc, None)
        block = Block(params)
        body = _Cursor(c.data, c.pos, end)
        values = list(block.args)
        while body.pos < end:
            block.append(self.op(body, values))
        c.pos = end
        entry = make_op("entry", regions=[Region([block])], sym_name=name,
                        optimization_hints=hints, check=False)
        entry.loc = entry_loc
        return entry

    # ------------------------------------------------------------------ ops
    def op(self, c: _Cursor, values: list):
        opcode = c.varint()
        if opcode not in BY_OPCODE:
            raise TileUnsupportedFeatureError(f"bytecode: opcode {opcode} is not a tilepy op")
        name, layout = BY_OPCODE[opcode]
        if self.version < layout.since:
            raise TileValueError(f"bytecode: opcode {opcode} ({layout.nvidia}) is not in bytecode "
                                 f"{self.version[0]}.{self.version[1]}")
        opdef = OPS[name]
        loc = next(self.next_loc, None)             # pre-order: before the region's ops
        nres = c.varint() if layout.results == "sized" else len(opdef.results)
        result_types = [self.type(c.varint()) for _ in range(nres)]
        if self.version < layout.results_since:     # 13.1's print: tilepy's op has its token
            result_types = [TOKEN for _ in opdef.results]
        flags = self.flags(c, layout)
        attrs = {}
        for field in layout.attrs:
            self.attr(c, opdef, field, flags, attrs, result_types)
        groups = self.operands(c, opdef, layout, flags, values)
        regions = [self.region(c, values) for _ in range(c.varint())] if layout.regions else []
        attrs.update({n: True for n, on in flags.items()           # unit attributes
                      if on and opdef.member_kind(n) == "attr" and opdef.attr_spec(n).kind == "flag"})
        op = make_op(name, *groups, result_types=result_types, regions=regions, check=False,
                     **attrs)
        op.loc = loc
        values += op.results
        return op

    def flags(self, c: _Cursor, layout: Layout) -> dict:
        live = [f for f in layout.flags if self.version >= f.since]
        bits = c.varint() if live else 0
        return {f.name: bool(bits >> i & 1) for i, f in enumerate(live)}

    def attr(self, c, opdef, field: Field, flags, attrs, result_types) -> None:
        if self.version < field.since:
            return
        if field.name in flags and not flags[field.name]:
            return                               # an optional attribute, absent
        value = _ATTR_READERS[field.enc](self, c, opdef, field, result_types)
        if opdef.member_kind(field.name) == "attr":
            if value is not None:
                attrs[field.name] = value
        elif value != field.default:
            raise TileUnsupportedFeatureError(
                f"bytecode: {opdef.name}'s '{field.name}' = {value} has no tilepy spelling")

    def operands(self, c, opdef, layout: Layout, flags, values) -> list:
        if layout.operands == "counted":
            ids = [c.varint() for _ in range(c.varint())]
            fixed = [s for s in opdef.operands if not s.variadic]
            groups = [values[i] for i in ids[:len(fixed)]]
            groups += [None] * (len(fixed) - len(groups))     # absent trailing optional ones
            return groups + ([[values[i] for i in ids[len(fixed):]]]
                             if len(fixed) < len(opdef.operands) else [])
        groups = []
        for spec in opdef.operands:
            if spec.variadic:
                groups.append([values[c.varint()] for _ in range(c.varint())])
            elif spec.optional and not flags.get(spec.name):
                groups.append(None)
            else:
                groups.append(values[c.varint()])
        return groups

    def region(self, c: _Cursor, values: list) -> Region:
        region = Region()
        for _ in range(c.varint()):
            block = Block([self.type(c.varint()) for _ in range(c.varint())])
            inner = values + list(block.args)
            for _ in range(c.varint()):
                block.append(self.op(c, inner))
            region.add_block(block)
        return region

    # ------------------------------------------------------------------ attributes
    def hints(self, c: _Cursor) -> OptimizationHints:
        entries = []
        for _ in range(c.varint()):
            arch = self.strings[c.varint()]
            if c.byte() != TAG_DICT:
                raise TileValueError("bytecode: optimization hints without a dictionary")
            items = tuple((self.strings[c.varint()], self.scalar(c)) for _ in range(c.varint()))
            entries.append((arch, items))
        return OptimizationHints(tuple(entries))

    def scalar(self, c: _Cursor, as_dense: bool = False):
        tag = c.byte()
        if tag == TAG_BOOL:
            return bool(c.byte())
        elem = self.type(c.varint())
        if tag == TAG_INT:
            bits = c.varint()
        elif tag == TAG_FLOAT:
            bits = c.byte() if elem.bits <= 8 else c.signed() & ((1 << 64) - 1)
        else:
            raise TileUnsupportedFeatureError(f"bytecode: attribute tag {tag:#x} is not read")
        if not as_dense:
            return bits - (1 << 32) if bits >> 31 else bits     # an i32 hint value
        width = max(1, (elem.bits + 7) // 8) if elem.name != "tf32" else 3
        return self.dense((bits & ((1 << 8 * width) - 1)).to_bytes(width, "little"),
                          TileType((), elem))

    def predicate(self, c: _Cursor) -> AssumePredicate:
        tag = c.byte()
        if tag == TAG_DIV_BY:
            divisor, present = c.varint(), c.byte()
            every = c.signed() if present & 1 else None
            along = c.signed() if present & 2 else None
            return AssumePredicate("div_by", divisor=divisor, every=every, along=along)
        if tag == TAG_BOUNDED:
            present = c.byte()
            lower = c.signed() if present & 1 else None
            upper = c.signed() if present & 2 else None
            return AssumePredicate("bounded", lower=lower, upper=upper)
        if tag == TAG_SAME:
            return AssumePredicate("same_elements", values=tuple(
                int.from_bytes(c.raw(8), "little", signed=True) for _ in range(c.varint())))
        raise TileUnsupportedFeatureError(f"bytecode: assume predicate tag {tag:#x}")

    def dense(self, data: bytes, ty: TileType) -> DenseValue:
        """A constant payload (writer.dense_bytes) as a DenseValue of the tile type's shape."""
        elem, n = ty.elem, int(np.prod(ty.shape, dtype=np.int64))
        if elem.name == "i1":
            bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
            arr = np.array(data[0] != 0) if len(data) == 1 and data[0] in (0, 0xFF) \
                else bits[:n].astype(bool).reshape(ty.shape)
            return DenseValue(elem, arr)
        if elem.name == "tf32":
            words = [int.from_bytes(data[i:i + 3], "little") << 13 for i in range(0, len(data), 3)]
            arr = np.array(words, np.uint32).view(np.float32)
        elif has_encoded_bits(elem):
            arr = decode_bits(np.frombuffer(data, np.uint8), elem)
        else:
            arr = np.frombuffer(data, E.NUMPY_DTYPE[elem]).copy()
        return DenseValue(elem, arr.reshape(ty.shape) if arr.size == n > 1 else arr.reshape(()))


def _enum(r: _Reader, c: _Cursor, opdef, field: Field, result_types):
    own = opdef.member_kind(field.name) == "attr"
    kind = opdef.attr_spec(field.name).kind if own else ROUNDING
    return kind.values[c.byte()]


def _inbounds(r: _Reader, c: _Cursor, opdef, field: Field, result_types):
    """The op's `inbounds` (a bool per index); None when no index is marked."""
    flags = tuple(bool(b) for b in c.ints(1))
    return flags if any(flags) else None


_ATTR_READERS = {
    "enum": _enum,
    "int": lambda r, c, *_: c.varint(),
    "bool": lambda r, c, *_: bool(c.byte()),
    "str": lambda r, c, *_: r.strings[c.varint()],
    "predicate": lambda r, c, *_: r.predicate(c),
    "hints": lambda r, c, *_: r.hints(c),
    "dense": lambda r, c, opdef, f, types: r.dense(r.constants[c.varint()], types[0]),
    "ints32": lambda r, c, *_: tuple(c.ints(4)),
    "identities": lambda r, c, *_: tuple(r.scalar(c, as_dense=True) for _ in range(c.varint())),
    "inbounds": _inbounds,
}
