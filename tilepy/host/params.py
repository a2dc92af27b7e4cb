"""The parameters of one specialization of a kernel (specialize.py makes them): what each
argument is compiled as. Kept apart from the tracer so that specializing a call (a cache lookup)
does not load the compiler."""
from __future__ import annotations

from dataclasses import dataclass

from ..types.dtype import DType, int32


@dataclass(frozen=True)
class ArrayParam:
    name: str
    dtype: DType
    ndim: int
    unit_stride: tuple[bool, ...]       # per dim: stride specialized to 1
    # The specialization's divisibility facts (frontend/specialize.py): 16 if the base address
    # is a multiple of 16 bytes (else 1); per dim, in elements, a unit-stride extent's and the
    # other strides' (16 // itemsize if it spans a multiple of 16 bytes, else 1). Exact ones
    # (tileiras'): the largest powers of two, capped at 16 bytes, on every dim.
    align: int = 1
    shape_div: tuple[int, ...] = ()
    stride_div: tuple[int, ...] = ()
    disjoint: bool = False              # its memory overlaps no other array argument's
    index_dtype: DType = int32          # of its extents and strides: int64 (cuTile's
                                        # IndexedWithInt64) for arrays past 2^31 - 1
    # per dim, the extent / stride an ArrayAnnotation makes a compile-time constant (None: a
    # run-time value); () without one. The kernel parameters stay (the ABI does not change).
    static_shape: tuple = ()
    static_strides: tuple = ()

    def c_params(self) -> list[tuple[str, object]]:
        """The scalar kernel parameters this array becomes, in order: (name, tile type)."""
        from ..types import PtrType, scalar_tile
        out = [(self.name, scalar_tile(PtrType(self.dtype.elem)))]
        index = scalar_tile(self.index_dtype.elem)
        out += [(f"{self.name}_shape_{i}", index) for i in range(self.ndim)]
        out += [(f"{self.name}_stride_{i}", index)
                for i in range(self.ndim) if not self.unit_stride[i]]
        return out


@dataclass(frozen=True)
class ArrayListParam:
    """A list (or tuple) of arrays as one argument: each item is an array parameter of its own
    (named `<name>_<i>`), all of one dtype and rank; the length is part of the specialization."""
    name: str
    items: tuple[ArrayParam, ...]

    def c_params(self) -> list[tuple[str, object]]:
        return [c for p in self.items for c in p.c_params()]


@dataclass(frozen=True)
class TupleParam:
    """A tuple argument (cuTile's aggregate): each item is a parameter of its own (named
    `<name>_<i>`: an array, a scalar, a constant, a list of arrays or a tuple), its kernel
    parameters in item order; the length and every item's facts are part of the specialization."""
    name: str
    items: tuple

    def c_params(self) -> list[tuple[str, object]]:
        return [c for p in self.items for c in p.c_params()]


@dataclass(frozen=True)
class DataclassParam(TupleParam):
    """A dataclass object as an argument (cuTile's calling convention 3): a tuple of its fields
    in declaration order (items named `<name>_<i>`), and its class, part of the specialization
    with every field's facts."""
    cls: type = object


_GROUPS = (ArrayListParam, TupleParam)


def expand(params):
    """The params with every array list and tuple replaced by its items (recursively)."""
    for p in params:
        if isinstance(p, _GROUPS):
            yield from expand(p.items)
        else:
            yield p


def flat(params, infos):
    """(param, info) pairs with every array list and tuple expanded into its items' pairs (a
    tuple's recursively): what crosses the kernel boundary, one entry per array, scalar or
    constant."""
    for p, info in zip(params, infos):
        if isinstance(p, _GROUPS):
            yield from flat(p.items, info)
        else:
            yield p, info


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
