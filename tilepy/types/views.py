"""The tile views of NVIDIA's dialect 13.3 beside partition_view (tile.py): gather_scatter_view
and strided_view. Frozen like the other types; `str(t)` is NVIDIA's printed syntax.

- gather_scatter_view<tile=(..), [padding_value = P,] tensor_view<..>, sparse_dim=D>: the
  index of a load/store has one entry per tensor dimension; at `sparse_dim` it is a 1-d integer
  tile of tile_shape[D] element indices (the rows gathered or scattered, in that order), every
  other entry a 0-d element offset: the tile covers [start, start + tile_shape[d]) there.
- strided_view<tile=(..), traversal_strides=[..], [padding_value = P,] tensor_view<..>>: the
  tile at index (I_0, ..) starts at element I_d * traversal_strides[d] in dimension d (tiles may
  overlap or leave gaps).
Elements outside the tensor read the padding value (unspecified without one) and are not
written, as with partition_view.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import TileTypeError
from .tile import PADDING_VALUES, TensorViewType, TileType, _dims, is_power_of_two


def _check(kind: str, tile_shape, view: TensorViewType, padding):
    if not tile_shape or any(not is_power_of_two(d) for d in tile_shape):
        raise TileTypeError(f"{kind} tile shape must have power-of-two extents "
                            f"(got ({', '.join(map(str, tile_shape))}))")
    if len(tile_shape) != view.rank:
        raise TileTypeError(f"{kind}: tile rank {len(tile_shape)} must equal the tensor_view rank "
                            f"{view.rank}")
    if padding is not None and padding not in PADDING_VALUES:
        raise TileTypeError(f"{kind}: padding_value must be one of {', '.join(PADDING_VALUES)} "
                            f"(got {padding})")
    if padding not in (None, "zero") and not view.elem.is_float:
        raise TileTypeError(f"{kind}: padding_value {padding} needs a float element type "
                            f"(got {view.elem})")


def _padding_text(padding) -> str:
    return f"padding_value = {padding}, " if padding is not None else ""


class _TileView:
    """What the two views share: the index space's rank and the tile type of a load."""
    @property
    def rank(self) -> int:
        return self.view.rank

    def tile_type(self) -> TileType:
        return TileType(self.tile_shape, self.view.elem)


@dataclass(frozen=True)
class GatherScatterViewType(_TileView):
    tile_shape: tuple[int, ...]
    view: TensorViewType
    sparse_dim: int
    padding_value: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "tile_shape", tuple(self.tile_shape))
        _check("gather_scatter_view", self.tile_shape, self.view, self.padding_value)
        if not 0 <= self.sparse_dim < self.view.rank:
            raise TileTypeError(f"gather_scatter_view: sparse_dim {self.sparse_dim} must be less "
                                f"than the tensor_view rank {self.view.rank}")

    def __str__(self) -> str:
        return (f"gather_scatter_view<tile=({_dims(self.tile_shape)}), "
                f"{_padding_text(self.padding_value)}{self.view}, sparse_dim={self.sparse_dim}>")


@dataclass(frozen=True)
class StridedViewType(_TileView):
    tile_shape: tuple[int, ...]
    traversal_strides: tuple[int, ...]
    view: TensorViewType
    padding_value: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "tile_shape", tuple(self.tile_shape))
        object.__setattr__(self, "traversal_strides", tuple(self.traversal_strides))
        _check("strided_view", self.tile_shape, self.view, self.padding_value)
        if len(self.traversal_strides) != self.view.rank or \
                any(s <= 0 for s in self.traversal_strides):
            raise TileTypeError(f"strided_view: traversal_strides must be {self.view.rank} positive "
                                f"integers (got {list(self.traversal_strides)})")

    def __str__(self) -> str:
        return (f"strided_view<tile=({_dims(self.tile_shape)}), traversal_strides="
                f"[{','.join(map(str, self.traversal_strides))}], "
                f"{_padding_text(self.padding_value)}{self.view}>")
