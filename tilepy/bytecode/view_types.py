"""Bytecode of the 13.3 tile views (types/views.py), both ways: a bitfield of optional parts
(bit 0: a padding value), the tile shape (i32 list), then
  gather_scatter_view (tag 0x14): the tensor_view's type id, sparse_dim, [padding byte];
  strided_view (tag 0x15): traversal strides (i32 list), the tensor_view's type id, dim_map
  (i32 list; tilepy's strided views map dimensions in order), [padding byte].
Facts from NVIDIA's cuda-tile type encodings and cuTile's writer, written as tilepy code."""
from __future__ import annotations

from ..errors import TileUnsupportedFeatureError
from ..types import GatherScatterViewType, StridedViewType
from .stream import int_list, varint

GATHER_SCATTER_VIEW, STRIDED_VIEW = 0x14, 0x15
PADDING = {"zero": 0, "neg_zero": 1, "nan": 2, "pos_inf": 3, "neg_inf": 4}   # every view's
PADDING_BY_BYTE = {b: name for name, b in PADDING.items()}


def encode_view(table, t) -> bytearray | None:
    """The encoding of a 13.3 view type (None for other types); `table` interns the tensor_view."""
    if not isinstance(t, (GatherScatterViewType, StridedViewType)):
        return None
    if table.version < (13, 3):
        raise TileUnsupportedFeatureError(f"bytecode: {t} needs bytecode 13.3 or later")
    gather = isinstance(t, GatherScatterViewType)
    buf = bytearray([GATHER_SCATTER_VIEW if gather else STRIDED_VIEW])
    varint(int(t.padding_value is not None), buf)
    int_list(t.tile_shape, 4, buf)
    if gather:
        varint(table.id(t.view), buf)
        varint(t.sparse_dim, buf)
    else:
        int_list(t.traversal_strides, 4, buf)
        varint(table.id(t.view), buf)
        int_list(range(t.view.rank), 4, buf)
    if t.padding_value is not None:
        buf.append(PADDING[t.padding_value])
    return buf


def decode_view(reader, tag: int, c):
    """The view type of tag at cursor c (None for other tags); `reader.type` reads type ids."""
    if tag not in (GATHER_SCATTER_VIEW, STRIDED_VIEW):
        return None
    has_pad = c.varint() & 1
    tile = tuple(c.ints(4))
    if tag == GATHER_SCATTER_VIEW:
        view, sparse_dim = reader.type(c.varint()), c.varint()
        pad = PADDING_BY_BYTE[c.byte()] if has_pad else None
        return GatherScatterViewType(tile, view, sparse_dim, pad)
    strides = tuple(c.ints(4))
    view = reader.type(c.varint())
    if tuple(c.ints(4)) != tuple(range(view.rank)):
        raise TileUnsupportedFeatureError("bytecode: a strided_view with a dim_map is not read")
    pad = PADDING_BY_BYTE[c.byte()] if has_pad else None
    return StridedViewType(tile, strides, view, pad)
