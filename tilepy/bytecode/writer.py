"""ir.Module -> Tile IR bytecode bytes.

File: magic `\\x7fTileIR\\x00`, version (major, minor byte; tag u16), then sections, each a
byte id (|0x80 when aligned), a varint length, [a varint alignment and padding], the body:
functions, globals, constants, debug info, types, strings; a 0 byte ends the file.
A function: name (string id), signature (type id), flags (2: entry, 4: has hints), debug index,
[hints], the byte length of its body, then its ops. Since 13.5 (`ENTRY_ATTRS_SINCE`) an entry
always carries its hints (possibly none; no 4 flag) and then its argument attributes (an array
attribute; tilepy's entries have none: empty). Values are numbered per function: the
parameters first, then results in order; a region's block arguments and ops take the numbers
after the enclosing op's operands, and the op's results come after its regions (numbers used
inside a region are free again once it ends).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import TileUnsupportedFeatureError, TileValueError, at
from ..ir.attrs import OptimizationHints
from ..ir.opdef import ROUNDING
from ..ir.ops_memory import adds_to_bf16
from ..types import I32
from ..types.convert import encode_bits, has_encoded_bits
from .debuginfo import DebugInfo
from .layouts import LAYOUTS, Field, Layout
from .stream import Constants, Strings, pad, signed_varint, varint
from .types import TypeTable

VERSIONS = ((13, 1), (13, 2), (13, 3), (13, 4), (13, 5))
DEFAULT_VERSION = (13, 4)
MAGIC = b"\x7fTileIR\x00"
SEC_END, SEC_STRING, SEC_FUNC, SEC_DEBUG, SEC_CONST, SEC_TYPE, SEC_GLOBAL = range(7)
ENTRY, ENTRY_HINTS = 0x02, 0x04
TAG_INT, TAG_FLOAT, TAG_BOOL, TAG_DICT, TAG_HINTS = 0x01, 0x02, 0x03, 0x0A, 0x0B
TAG_DIV_BY, TAG_SAME, TAG_BOUNDED, TAG_ARRAY = 0x08, 0x09, 0x0C, 0x06
ENTRY_ATTRS_SINCE = (13, 5)
WORKER_WARPS_SINCE = (13, 3)         # the num_worker_warps_per_cta hint


def as_version(version) -> tuple[int, int]:
    """(13, 5) or "13.5" -> (13, 5)."""
    if isinstance(version, str):
        parts = version.split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise TileValueError(f"bytecode version {version!r} is not 'MAJOR.MINOR' (e.g. '13.4')")
        return int(parts[0]), int(parts[1])
    return tuple(version)


def write_module(module, version: tuple[int, int] | str = DEFAULT_VERSION) -> bytes:
    """`module` as Tile IR bytecode of `version`, (13, 5) or "13.5"."""
    version = as_version(version)
    if version not in VERSIONS:
        raise TileUnsupportedFeatureError(
            f"bytecode version {version[0]}.{version[1]} is not written by tilepy "
            f"(writes {', '.join(f'{a}.{b}' for a, b in VERSIONS)})")
    return bytes(_File(version).write(module))


class _File:
    def __init__(self, version):
        self.version = version
        self.strings, self.constants = Strings(), Constants()
        self.types = TypeTable(version)
        self.debug = DebugInfo(self.strings, version)

    def write(self, module) -> bytearray:
        funcs = bytearray()
        entries = [op for op in module.items if op.name == "entry"]
        globals_ = [op for op in module.items if op.name == "global"]
        varint(len(entries), funcs)
        for e in entries:
            self.function(e, funcs)
        out = bytearray(MAGIC)
        out += bytes([self.version[0], self.version[1], 0, 0])
        _section(SEC_FUNC, 8, funcs, out)
        if globals_:
            _section(SEC_GLOBAL, 1, self.global_section(globals_), out)
        consts = bytearray()
        self.constants.write(8, consts)
        _section(SEC_CONST, 8, consts, out)
        _section(SEC_DEBUG, 8, self.debug.section(), out)
        types = bytearray()
        self.types.write(4, types)
        _section(SEC_TYPE, 4, types, out)
        strings = bytearray()
        self.strings.write(4, strings)
        _section(SEC_STRING, 4, strings, out)
        out.append(SEC_END)
        return out

    # ------------------------------------------------------------------ functions
    def function(self, entry, buf: bytearray) -> None:
        block = entry.regions[0].block
        params = [a.type for a in block.args]
        hints = self.supported_hints(entry.attrs.get("optimization_hints"))
        varint(self.strings.id(entry.sym_name), buf)
        varint(self.types.function(params, []), buf)
        always = self.version >= ENTRY_ATTRS_SINCE
        buf.append(ENTRY | (ENTRY_HINTS if hints and not always else 0))
        varint(self.debug.function(entry), buf)
        if hints or always:
            buf.append(TAG_HINTS)           # tagged here, untagged as an op's attribute
            self.hints(hints, buf)
        if always:
            buf += bytes([TAG_ARRAY, 0])    # the argument attributes: none
        body = _Body(self, {a: i for i, a in enumerate(block.args)},
                     {v for o in entry.walk() for v in o.operands})
        for op in block.ops:
            body.op(op)
        varint(len(body.buf), buf)
        buf += body.buf

    def global_section(self, globals_) -> bytearray:
        """Each global: name, type, value (constant id), alignment; since 13.3 also its symbol
        visibility (public 0, private 1) and whether it is constant."""
        buf = bytearray()
        varint(len(globals_), buf)
        for g in globals_:
            varint(self.strings.id(g.sym_name), buf)
            varint(self.types.id(g.type), buf)
            varint(self.constants.id(dense_bytes(g.value)), buf)
            varint(g.attrs.get("alignment") or 0, buf)
            private = g.attrs.get("symbol_visibility") == "private"
            if self.version >= (13, 3):
                buf.append(int(private))
                varint(int(bool(g.attrs.get("constant"))), buf)
            elif private or g.attrs.get("constant"):
                raise TileUnsupportedFeatureError(
                    f"bytecode: global @{g.sym_name}'s private/constant needs bytecode 13.3 "
                    f"(writing {self.version[0]}.{self.version[1]})")
        return buf

    # ------------------------------------------------------------------ attributes
    def supported_hints(self, hints):
        """The entry's hints this version has: before 13.3 tileiras has no worker-warp count,
        which is then dropped with cuTile's warning (a hint, not a requirement)."""
        if hints is None or self.version >= WORKER_WARPS_SINCE:
            return hints
        kept = {arch: {k: v for k, v in kv.items() if k != "num_worker_warps_per_cta"}
                for arch, kv in hints.as_dict().items()}
        if any(len(kv) != len(kept[arch]) for arch, kv in hints.as_dict().items()):
            warnings.warn(f"num_worker_warps is ignored: requires tileiras "
                          f"{WORKER_WARPS_SINCE[0]}.{WORKER_WARPS_SINCE[1]}, but current version "
                          f"is {self.version[0]}.{self.version[1]}.", UserWarning, stacklevel=2)
        kept = {arch: kv for arch, kv in kept.items() if kv}
        return OptimizationHints.of(kept) if kept else None

    def hints(self, hints, buf: bytearray) -> None:
        entries = hints.entries if hints else ()
        varint(len(entries), buf)
        for arch, items in entries:
            varint(self.strings.id(arch), buf)
            buf.append(TAG_DICT)
            varint(len(items), buf)
            for key, value in items:
                varint(self.strings.id(key), buf)
                if isinstance(value, bool):
                    buf += bytes([TAG_BOOL, int(value)])
                elif isinstance(value, int):
                    buf.append(TAG_INT)
                    varint(self.types.elem(I32), buf)
                    varint(value & 0xFFFFFFFF, buf)
                else:
                    raise TileUnsupportedFeatureError(
                        f"bytecode: optimization hint {key} = {value!r} is not an integer or bool")

    def predicate(self, p, buf: bytearray) -> None:
        if p.kind == "div_by":
            buf.append(TAG_DIV_BY)
            varint(p.divisor, buf)
            buf.append((p.every is not None) | ((p.along is not None) << 1))
            for v in (p.every, p.along):
                if v is not None:
                    signed_varint(v, buf)
        elif p.kind == "bounded":
            buf.append(TAG_BOUNDED)
            buf.append((p.lower is not None) | ((p.upper is not None) << 1))
            for v in (p.lower, p.upper):
                if v is not None:
                    signed_varint(v, buf)
        else:
            buf.append(TAG_SAME)
            varint(len(p.values), buf)
            for v in p.values:
                buf += int(v).to_bytes(8, "little", signed=True)

    def scalar_attr(self, dense, buf: bytearray) -> None:
        """A typed integer or float scalar attribute (a reduce/scan identity)."""
        elem, width = dense.elem, dense.elem.bits
        bits = int.from_bytes(dense_bytes(dense)[:max(1, (width + 7) // 8)], "little")
        if elem.is_float:
            buf.append(TAG_FLOAT)
            varint(self.types.elem(elem), buf)
            if width <= 8:
                buf.append(bits)
            else:                           # the bits as an int64, zig-zag (NVIDIA's APInt)
                signed_varint(bits - (1 << 64) if bits >> 63 else bits, buf)
        else:
            buf.append(TAG_INT)
            varint(self.types.elem(elem), buf)
            varint(bits & ((1 << width) - 1), buf)


def _section(sid: int, alignment: int, body: bytearray, out: bytearray) -> None:
    out.append(sid | (0x80 if alignment > 1 else 0))
    varint(len(body), out)
    if alignment > 1:
        varint(alignment, out)
        pad(alignment, out)
    out += body


class _Body:
    """The ops of one function, numbering values as the reader will."""

    def __init__(self, file: _File, ids: dict, used: set):
        self.file, self.ids, self.buf, self.used = file, ids, bytearray(), used
        self.next = len(ids)

    def op(self, op) -> None:
        layout = LAYOUTS.get(op.name)
        if layout is None:
            raise TileUnsupportedFeatureError(f"bytecode: op '{op.name}' has no bytecode layout")
        f, buf = self.file, self.buf
        if f.version < layout.since:
            raise _too_old_op(op.name, layout.since, f.version)
        if f.version < (13, 3) and adds_to_bf16(op):
            with at(op.loc):
                raise TileUnsupportedFeatureError(
                    f"bfloat16 on atomic add requires tileiras 13.3 or later. Current version "
                    f"is {f.version[0]}.{f.version[1]}.")
        results = op.results if f.version >= layout.results_since else ()
        if len(results) < len(op.results) and any(r in self.used for r in op.results):
            raise _too_old_op(f"{op.name} with its results used", layout.results_since, f.version)
        f.debug.op(op)
        varint(layout.opcode, buf)
        types = [f.types.id(r.type) for r in results]
        if layout.results == "sized":
            varint(len(types), buf)
        for t in types:
            varint(t, buf)
        self.flags(op, layout)
        for field in layout.attrs:
            self.attr(op, field, layout)
        self.operands(op, layout)
        if layout.regions:
            self.regions(op, layout)
        for r in results:
            self.ids[r] = self.next
            self.next += 1

    # ------------------------------------------------------------------ parts of an op
    def flags(self, op, layout: Layout) -> None:
        if not layout.flags:
            return
        bits, written = 0, False
        for i, field in enumerate(layout.flags):
            present = self.present(op, field.name)
            if self.file.version < field.since:
                if present:
                    raise _too_old(op, field, self.file.version)
                continue
            written = True
            bits |= int(present) << i
        if written:
            varint(bits, self.buf)

    def present(self, op, name: str) -> bool:
        kind = op.opdef.member_kind(name)
        if kind == "operand":
            return bool(op.operand_group(name))
        if kind == "attr":
            return op.attrs.get(name) not in (None, False)
        return False                        # a field tilepy's op does not have: unset

    def attr(self, op, field: Field, layout: Layout) -> None:
        value = op.attrs.get(field.name)
        if value is None:
            value = field.default
        if self.file.version < field.since:
            if value != field.default and not _all_false(field, value):
                raise _too_old(op, field, self.file.version, value)
            return
        if value is None:
            if any(f.name == field.name for f in layout.flags):
                return                      # an optional attribute, absent: its flag says so
            raise TileUnsupportedFeatureError(
                f"bytecode: {op.name} has no '{field.name}' and the bytecode needs one")
        if self.file.version < DIRECTED_FTOF and op.name == "ftof" and \
                value in ("zero", "negative_inf", "positive_inf", "nearest_away") and \
                op.result.type.elem.name != "e8m0":
            v = self.file.version
            raise TileUnsupportedFeatureError(         # (the sentence is cuTile's)
                f"bytecode: ftof rounding_mode={value} into {op.result.type.elem} needs bytecode "
                f"{DIRECTED_FTOF[0]}.{DIRECTED_FTOF[1]} or later (writing {v[0]}.{v[1]}): The "
                f"requested conversion and rounding_mode require tileiras {DIRECTED_FTOF[0]}."
                f"{DIRECTED_FTOF[1]} or later. Current version is {v[0]}.{v[1]}.")
        _ATTR_WRITERS[field.enc](self, op, field, value)

    def operands(self, op, layout: Layout) -> None:
        buf, ids = self.buf, self.ids
        if layout.operands == "counted":
            varint(len(op.operands), buf)
            for v in op.operands:
                varint(ids[v], buf)
            return
        for spec in op.opdef.operands:
            group = op.operand_group(spec.name)
            if spec.variadic and layout.operands == "groups":
                varint(len(group), buf)
            for v in group:
                varint(ids[v], buf)

    def regions(self, op, layout: Layout) -> None:
        regions = list(op.regions) + [None] * (layout.regions - len(op.regions))
        varint(layout.regions, self.buf)
        for region in regions:
            blocks = region.blocks if region is not None else []
            varint(len(blocks), self.buf)
            for block in blocks:
                self.block(block)

    def block(self, block) -> None:
        outer_buf, outer_next = self.buf, self.next
        varint(len(block.args), self.buf)
        for a in block.args:
            varint(self.file.types.id(a.type), self.buf)
        for a in block.args:
            self.ids[a] = self.next
            self.next += 1
        self.buf = bytearray()
        for inner in block.ops:
            self.op(inner)
        body, self.buf = self.buf, outer_buf
        varint(len(block.ops), self.buf)
        self.buf += body
        self.next = outer_next


def _all_false(field: Field, value) -> bool:
    """`inbounds = [false, ...]` says what an older version's absent field says."""
    return field.enc == "inbounds" and not any(value)


DIRECTED_FTOF = (13, 4)     # ftof's other modes than nearest even but into e8m0 (cuTile's table)


def _too_old_op(what: str, since, version) -> TileUnsupportedFeatureError:
    return TileUnsupportedFeatureError(
        f"bytecode: {what} needs bytecode {since[0]}.{since[1]} or later (writing "
        f"{version[0]}.{version[1]}): {what} requires tileiras {since[0]}.{since[1]} or later")


def _too_old(op, field: Field, version, value=None) -> TileUnsupportedFeatureError:
    """`value`: the attribute's, named as cuTile names it (`tanh rounding_mode=approx`)."""
    what = f"{op.name} {field.name}" if value is None else \
        f"{op.name} {field.name}={str(getattr(value, 'value', value)).lower()}"
    return TileUnsupportedFeatureError(
        f"bytecode: {op.name}'s '{field.name}' needs bytecode {field.since[0]}.{field.since[1]} "
        f"or later (writing {version[0]}.{version[1]}): {what} requires tileiras "
        f"{field.since[0]}.{field.since[1]} or later")


def _enum(body: _Body, op, field: Field, value) -> None:
    """An enum's byte is its index in the attribute kind's values (tilepy's kinds list them in
    NVIDIA's order); a field the op's row lacks is a RoundingMode."""
    own = op.opdef.member_kind(field.name) == "attr"
    kind = op.opdef.attr_spec(field.name).kind if own else ROUNDING
    body.buf.append(kind.values.index(value))


def _inbounds(body: _Body, op, field: Field, value) -> None:
    """One bool per index (an op without the attribute: every index may be out of bounds)."""
    n = len(op.operand_group("index"))
    flags = value if isinstance(value, tuple) else (False,) * n
    varint(n, body.buf)
    body.buf += bytes(int(bool(b)) for b in flags)


def dense_bytes(value) -> bytes:
    """A dense constant's payload (MLIR's raw buffer): little-endian elements, one element for a
    splat; i1 packs eight elements a byte (LSB first), a splat i1 is one byte 0x00 or 0xFF; tf32
    (19 bits, float32 storage in tilepy) takes 3 bytes an element; e2m1 and e5m3 (float32 values
    in tilepy) a byte an element, their codes (MLIR rounds sub-byte widths up to a byte)."""
    arr = np.ascontiguousarray(value.array)
    if has_encoded_bits(value.elem):
        return encode_bits(arr.reshape(-1), value.elem).tobytes()
    if value.elem.name == "tf32":
        bits = arr.reshape(-1).astype(np.float32).view(np.uint32) >> 13
        return b"".join(int(b).to_bytes(3, "little") for b in bits)
    if value.elem.name != "i1":
        return arr.tobytes()
    bits = arr.reshape(-1).astype(bool)
    if value.is_splat or bits.all() or not bits.any():
        return b"\xff" if bits.all() else b"\x00"
    return np.packbits(bits, bitorder="little").tobytes()


def _dense(body: _Body, op, field: Field, value) -> None:
    varint(body.file.constants.id(dense_bytes(value)), body.buf)


def _ints32(body: _Body, op, field: Field, value) -> None:
    varint(len(value), body.buf)
    for v in value:
        body.buf += int(v).to_bytes(4, "little", signed=True)


def _identities(body: _Body, op, field: Field, value) -> None:
    varint(len(value), body.buf)
    for ident in value:
        body.file.scalar_attr(ident, body.buf)


_ATTR_WRITERS = {
    "enum": _enum,
    "int": lambda b, op, f, v: varint(int(v), b.buf),
    "bool": lambda b, op, f, v: b.buf.append(int(bool(v))),
    "str": lambda b, op, f, v: varint(b.file.strings.id(v), b.buf),
    "predicate": lambda b, op, f, v: b.file.predicate(v, b.buf),
    "hints": lambda b, op, f, v: b.file.hints(v, b.buf),
    "dense": _dense,
    "ints32": _ints32,
    "identities": _identities,
    "inbounds": _inbounds,
}
