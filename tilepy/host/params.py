"""The parameters of one specialization of a kernel (specialize.py makes them): what each
argument is compiled as. Kept apart from the tracer so that specializing a call (a cache lookup)
does not load the compiler."""
from __future__ import annotations

from dataclasses import dataclass

from ..types.dtype import DType


@dataclass(frozen=True)
class ArrayParam:
    name: str
    dtype: DType
    ndim: int
    unit_stride: tuple[bool, ...]       # per dim: stride specialized to 1
    aligned16: bool = False             # base address divisible by 16 bytes
    shape_div16: tuple[bool, ...] = ()  # per dim: extent divisible by 16
    stride_div16: tuple[bool, ...] = ()  # per dim: stride (in elements) divisible by 16
    disjoint: bool = False              # its memory overlaps no other array argument's

    def c_params(self) -> list[tuple[str, object]]:
        """The scalar kernel parameters this array becomes, in order: (name, tile type)."""
        from ..types import I32, PtrType, scalar_tile
        out = [(self.name, scalar_tile(PtrType(self.dtype.elem)))]
        out += [(f"{self.name}_shape_{i}", scalar_tile(I32)) for i in range(self.ndim)]
        out += [(f"{self.name}_stride_{i}", scalar_tile(I32))
                for i in range(self.ndim) if not self.unit_stride[i]]
        return out


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: DType

    def c_params(self):
        from ..types import scalar_tile
        return [(self.name, scalar_tile(self.dtype.elem))]


@dataclass(frozen=True)
class ConstParam:
    name: str
    value: object

    def c_params(self):
        return []
