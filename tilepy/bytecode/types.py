"""Types in the bytecode's type table: a tag byte, then the fields of the type (element types and
nested types by their index in the same table). Tags as data; `TypeTable.id(t)` interns a tilepy type.

13.1 spec vs NVIDIA's 13.4 format, as handled here:
- 13.3 put a bitfield of optional parts first in partition_view (13.1/13.2: a 0/1 varint "has
  padding" just before the padding byte); 13.4 does the same for ptr and tensor_view (their new
  optional pointer attribute, which tilepy does not have: always absent).
"""
from __future__ import annotations

from ..errors import TileUnsupportedFeatureError
from ..types import PartitionViewType, PtrType, TensorViewType, TileType, TokenType
from ..types.dtype import default_signed
from .stream import Interned, int_list, varint
from .view_types import PADDING, encode_view  # noqa: F401  (PADDING: one table)

# Element type -> its one-tag encoding (tilepy spells fp8 e4m3/e5m2, NVIDIA f8E4M3FN/f8E5M2).
SIMPLE = {"i1": 0x00, "i8": 0x01, "i16": 0x02, "i32": 0x03, "i64": 0x04, "f16": 0x05,
          "bf16": 0x06, "f32": 0x07, "tf32": 0x08, "f64": 0x09, "e4m3": 0x0A, "e5m2": 0x0B,
          "e8m0": 0x12,                       # f8E8M0FNU, since 13.2
          "e2m1": 0x13, "e5m3": 130}          # f4E2M1FN since 13.3, f8E5M3FNU (a varint) 13.4
SIMPLE_SINCE = {"e8m0": (13, 2), "e2m1": (13, 3), "e5m3": (13, 4)}
TOKEN_TAG = 0x11
POINTER, TILE, TENSOR_VIEW, PARTITION_VIEW, FUNCTION = 0x0C, 0x0D, 0x0E, 0x0F, 0x10
DYNAMIC = -1 << 63          # a `?` extent or stride (MLIR's kDynamic)


class TypeTable(Interned):
    def __init__(self, version: tuple[int, int]):
        super().__init__()
        self.version = version
        for name in ("i1", "i32"):           # NVIDIA's writers fix i1 = 0 and i32 = 1
            self[bytes([SIMPLE[name]])]

    def id(self, t) -> int:
        return self[bytes(self.encode(t))]

    def function(self, params, results) -> int:
        buf = bytearray([FUNCTION])
        for group in (params, results):
            varint(len(group), buf)
            for t in group:
                varint(self.id(t), buf)
        return self[bytes(buf)]

    def encode(self, t) -> bytearray:
        if isinstance(t, TokenType):
            return bytearray([TOKEN_TAG])
        if isinstance(t, TileType):
            buf = bytearray([TILE])
            varint(self.elem(t.elem), buf)
            int_list(t.shape, 8, buf)
            return buf
        if isinstance(t, TensorViewType):
            buf = bytearray([TENSOR_VIEW])
            self._flags_13_4(buf)
            varint(self.elem(t.elem), buf)
            int_list([DYNAMIC if d is None else d for d in t.shape], 8, buf)
            int_list([DYNAMIC if s is None else s for s in t.strides], 8, buf)
            return buf
        if isinstance(t, PartitionViewType):
            return self._partition_view(t)
        view = encode_view(self, t)
        if view is not None:
            return view
        if isinstance(t, PtrType) or getattr(t, "name", None) in SIMPLE:
            return bytearray(self._scalar(t))
        raise TileUnsupportedFeatureError(f"bytecode: no encoding for type {t}")

    def elem(self, e) -> int:
        return self[bytes(self._scalar(e))]

    def _scalar(self, e) -> bytearray:
        if isinstance(e, PtrType):
            buf = bytearray([POINTER])
            self._flags_13_4(buf)
            varint(self.elem(e.pointee), buf)
            return buf
        if e.name not in SIMPLE:
            raise TileUnsupportedFeatureError(f"bytecode: no encoding for element type {e}")
        since = SIMPLE_SINCE.get(e.name, (13, 1))
        if self.version < since:
            raise TileUnsupportedFeatureError(
                f"bytecode: element type {e} needs bytecode {since[0]}.{since[1]} or later "
                f"(writing {self.version[0]}.{self.version[1]}): {default_signed(e).name} "
                f"requires tileiras {since[0]}.{since[1]} or later")
        buf = bytearray()
        varint(SIMPLE[e.name], buf)
        return buf

    def _flags_13_4(self, buf: bytearray) -> None:
        if self.version >= (13, 4):
            varint(0, buf)                   # no optional pointer attribute

    def _partition_view(self, t: PartitionViewType) -> bytearray:
        buf = bytearray([PARTITION_VIEW])
        has_pad = t.padding_value is not None
        if self.version >= (13, 3):
            varint(int(has_pad), buf)
        int_list(t.tile_shape, 4, buf)
        varint(self.id(t.view), buf)
        int_list(t.effective_dim_map, 4, buf)
        if self.version < (13, 3):
            varint(int(has_pad), buf)
        if has_pad:
            buf.append(PADDING[t.padding_value])
        return buf
