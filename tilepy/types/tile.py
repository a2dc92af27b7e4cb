"""Tile IR value types (spec 5.2-5.4): ptr<E>, tile, tensor_view, partition_view, token.

All are frozen dataclasses: equality is structural (spec 5.4) and they hash, so they can key
caches. `str(t)` is the spec's textual syntax.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..errors import TileTypeError
from .element import ElementType


def is_power_of_two(n: int) -> bool:
    return isinstance(n, int) and n > 0 and (n & (n - 1)) == 0


@dataclass(frozen=True)
class PtrType:
    """ptr<E>: a pointer to elements of the non-pointer element type E."""
    pointee: ElementType

    def __post_init__(self):
        if not isinstance(self.pointee, ElementType):
            raise TileTypeError(f"ptr<E> needs a non-pointer element type E (got {self.pointee})")

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


Scalar = Union[ElementType, PtrType]


def _dims(shape) -> str:
    return "x".join(str(d) for d in shape)


@dataclass(frozen=True)
class TileType:
    """tile<MxNx...xE>: static power-of-two shape (rank 0 = scalar) of elements or pointers."""
    shape: tuple[int, ...]
    elem: Scalar

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        if not isinstance(self.elem, (ElementType, PtrType)):
            raise TileTypeError(f"tile element type must be an element type or ptr<E> (got {self.elem})")
        bad = [d for d in self.shape if not is_power_of_two(d)]
        if bad:
            raise TileTypeError(f"tile shape must have power-of-two extents in every dimension "
                                f"(got {self.shape_str()})")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def shape_str(self) -> str:
        return "(" + ", ".join(str(d) for d in self.shape) + ("," if len(self.shape) == 1 else "") + ")"

    def with_shape(self, shape) -> "TileType":
        return TileType(tuple(shape), self.elem)

    def with_elem(self, elem: Scalar) -> "TileType":
        return TileType(self.shape, elem)

    def __str__(self) -> str:
        return f"tile<{_dims(self.shape) + 'x' if self.shape else ''}{self.elem}>"


def scalar_tile(elem: Scalar) -> TileType:
    return TileType((), elem)


DYNAMIC = None   # a `?` extent or stride in a tensor_view


def _dyn(v) -> str:
    return "?" if v is None else str(v)


@dataclass(frozen=True)
class TensorViewType:
    """tensor_view<SxTxE, strides=[a,b]>: a strided global tensor; None means dynamic (`?`)."""
    elem: ElementType
    shape: tuple[int | None, ...]
    strides: tuple[int | None, ...]

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "strides", tuple(self.strides))
        if len(self.shape) != len(self.strides):
            raise TileTypeError(f"tensor_view: shape and strides must have the same rank "
                                f"(got {len(self.shape)} and {len(self.strides)})")
        if not isinstance(self.elem, ElementType):
            raise TileTypeError(f"tensor_view element type must be an element type (got {self.elem})")
        if any(not (d is None or (isinstance(d, int) and 0 <= d < 2 ** 63)) for d in self.shape):
            raise TileTypeError(f"tensor_view extents must be non-negative 64-bit integers or ? "
                                f"(got {self.shape})")
        if any(not (d is None or (isinstance(d, int) and -2 ** 63 <= d < 2 ** 63))
               for d in self.strides):
            raise TileTypeError(f"tensor_view strides must be 64-bit integers or ? (got {self.strides})")

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = "x".join(_dyn(d) for d in self.shape)
        body = f"{dims}x{self.elem}" if self.shape else f"{self.elem}"
        if not self.shape:
            return f"tensor_view<{body}>"
        return f"tensor_view<{body}, strides=[{','.join(_dyn(s) for s in self.strides)}]>"


PADDING_VALUES = ("zero", "neg_zero", "nan", "pos_inf", "neg_inf")


@dataclass(frozen=True)
class PartitionViewType:
    """partition_view<tile=(AxB), tensor_view<...>, dim_map=[..], padding_value=..>."""
    tile_shape: tuple[int, ...]
    view: TensorViewType
    dim_map: tuple[int, ...] | None = None     # tile dim i <-> view dim dim_map[i]; None = identity
    padding_value: str | None = None           # one of PADDING_VALUES, or None (unspecified)

    def __post_init__(self):
        object.__setattr__(self, "tile_shape", tuple(self.tile_shape))
        if self.dim_map is not None:
            object.__setattr__(self, "dim_map", tuple(self.dim_map))
        bad = [d for d in self.tile_shape if not is_power_of_two(d)]
        if bad:
            raise TileTypeError(f"partition_view tile shape must have power-of-two extents "
                                f"(got ({', '.join(map(str, self.tile_shape))}))")
        if len(self.tile_shape) != self.view.rank:
            raise TileTypeError(f"partition_view: tile rank {len(self.tile_shape)} must equal the "
                                f"tensor_view rank {self.view.rank}")
        if self.dim_map is not None and sorted(self.dim_map) != list(range(self.view.rank)):
            raise TileTypeError(f"partition_view: dim_map must be a permutation of "
                                f"0..{self.view.rank - 1} (got {list(self.dim_map)})")
        if self.padding_value is not None and self.padding_value not in PADDING_VALUES:
            raise TileTypeError(f"partition_view: padding_value must be one of "
                                f"{', '.join(PADDING_VALUES)} (got {self.padding_value})")

    @property
    def rank(self) -> int:
        """Rank of the index space (that of the underlying view)."""
        return self.view.rank

    @property
    def effective_dim_map(self) -> tuple[int, ...]:
        return self.dim_map if self.dim_map is not None else tuple(range(self.view.rank))

    def tile_type(self) -> TileType:
        return TileType(self.tile_shape, self.view.elem)

    def __str__(self) -> str:
        s = f"partition_view<tile=({_dims(self.tile_shape)}), {self.view}"
        if self.dim_map is not None:
            s += f", dim_map=[{', '.join(map(str, self.dim_map))}]"
        if self.padding_value is not None:
            s += f", padding_value={self.padding_value}"
        return s + ">"


@dataclass(frozen=True)
class TokenType:
    def __str__(self) -> str:
        return "token"


TOKEN = TokenType()

Type = Union[TileType, TensorViewType, PartitionViewType, TokenType]
