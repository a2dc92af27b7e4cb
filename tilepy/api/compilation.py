"""`tilepy.compilation` (cuTile's `ct.compilation`): a kernel's signature written as parameter
constraints, and `export_kernel`, which compiles a kernel for one signature ahead of time into a
cubin or NVIDIA's Tile IR bytecode. It is tilepy's AOT (api/aot.py) under cuTile's names: a
signature becomes the example arguments `kernel.compile` takes (an `ArraySpec` per array).

What tilepy does with each constraint field:
  - `ArrayConstraint`: dtype and rank; `stride_constant[i] == 1` (a unit stride),
    `base_addr_divisible_by`, `shape_divisible_by`/`stride_divisible_by` (and the
    constant shapes and strides) where they make 16 bytes, `alias_groups=()` (overlaps no other
    array). tilepy never assumes more than these, so the other fields (lower bounds, other
    constant values, internal aliasing) are accepted, validated and not relied on.
  - `ScalarConstraint`: the scalar's dtype. `ConstantConstraint`: the Constant's value (a
    bool, int, float, dtype, None, string or Enum member); only for a `Constant` parameter.
  - `TupleConstraint`: a tuple parameter, one constraint per item (of constants: a constant
    tuple).
  - `DataclassConstraint` (calling convention 3): a frozen dataclass parameter, one constraint
    per field; its kernel parameters are its fields', in declaration order.
  - `ListConstraint`: refused (TileUnsupportedFeatureError): a list's length is part of tilepy's
    specialization, and a constraint does not give it.
  - `index_dtype=int64`: 64-bit extents and strides (cuTile's IndexedWithInt64), whatever the
    parameter's annotation says, as in cuTile (the constraint decides); `from_kernel_args`
    says int64 for `IndexedWithInt64` parameters.
The exported kernel is cuTile's: its symbol is the signature's, else (as cuTile) cuTile's
mangling of the function's name and the signature (`with_mangled_symbol`,
api/name_mangling.py; for an NVRTC cubin it must be a C identifier), and its parameters are
cuTile's for the signature, in every calling convention alike (cuTile's `_create_parameter`
and `ArrayTy`'s flattening: v2 and v3 admit more constraints, the layout is the same): per
non-constant leaf of a parameter, tuple items and dataclass fields in order, an array is its
base pointer, every extent, then every stride, in its index dtype (constant extents and unit
strides included: they are passed, and the code relies on the constant), a scalar is itself
(its dtype's size), a constant is nothing. tilepy's entry has no parameter for a unit stride
it specialized on: the exported entry takes one there, unused (`cutile_layout`). NVRTC's cubin
is tilepy's kernel body under that entry; tileiras' cubin and the bytecode are tilepy's Tile IR
with that entry. A list (cuTile: a pointer to the arrays' descriptors and an int32 length) is
refused.
"""
from __future__ import annotations

import dataclasses
import enum
import os
import struct
import typing
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import TileUnsupportedFeatureError
from ..types import DType
from ..types import dtype as D


class CallingConvention:
    """How a compiled kernel takes its parameters: `cutile_python_v1()`, `cutile_python_v2()`
    (adds constant shapes and tuple parameters) or `cutile_python_v3()` (adds dataclass
    parameters, flattened as tuples of their fields); `code` is "t1"/"t2"/"t3"."""
    _made: dict = {}

    def __init__(self, version: int):
        self._version = version

    @staticmethod
    def cutile_python_v1() -> "CallingConvention":
        return CallingConvention._of(1)

    @staticmethod
    def cutile_python_v2() -> "CallingConvention":
        return CallingConvention._of(2)

    @staticmethod
    def cutile_python_v3() -> "CallingConvention":
        return CallingConvention._of(3)

    @staticmethod
    def _of(version: int) -> "CallingConvention":
        made = CallingConvention._made
        if version not in made:
            made[version] = CallingConvention(version)
        return made[version]

    @staticmethod
    def from_code(code: str, /) -> "CallingConvention":
        if isinstance(code, str) and code in ("t1", "t2", "t3"):
            return CallingConvention._of(int(code[1]))
        raise ValueError(f"Unknown calling convention code '{code}'")

    @property
    def name(self) -> str:
        return f"cutile_python_v{self._version}"

    @property
    def code(self) -> str:
        return f"t{self._version}"

    @property
    def version(self) -> int:
        return self._version

    def __eq__(self, other):
        return isinstance(other, CallingConvention) and other._version == self._version

    def __hash__(self):
        return hash(("CallingConvention", self._version))

    def __repr__(self):
        return f"CallingConvention({self.name!r}, {self.code!r})"


def _check_dtype(dtype):
    if not isinstance(dtype, DType):
        raise TypeError(f"Expected a DType for the `dtype` parameter, got '{dtype}'")


@dataclass(frozen=True, init=False)
class ScalarConstraint:
    """A scalar parameter of `dtype`."""
    dtype: DType

    def __init__(self, dtype: DType):
        _check_dtype(dtype)
        object.__setattr__(self, "dtype", dtype)


def _per_dim(value, ndim: int, field: str, default, check):
    """`value` (None, one int for every dimension, or one entry per dimension) as a tuple."""
    if value is None:
        return (default,) * ndim
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * ndim
    value = tuple(value)
    if len(value) != ndim:
        raise ValueError(f"Length of `{field}` {value} doesn't match ndim={ndim}")
    for i, v in enumerate(value):
        check(i, v, field)
    return value


def _optional_int(i, v, field):
    if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
        raise TypeError(f"Element #{i} of `{field}` must be None or int, got {v}")


def _optional_extent(i, v, field):
    _optional_int(i, v, field)
    if v is not None and v < 0:
        raise ValueError(f"Element #{i} of `{field}` must be non-negative, got {v}")


def _divisor(i, v, field):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"Element #{i} of `{field}` must be int, got {v}")
    if v <= 0:
        raise TypeError(f"Element #{i} of `{field}` must be strictly positive, got {v}")


def _alias_groups(groups) -> tuple[str, ...]:
    if isinstance(groups, str):
        raise TypeError("`alias_groups` cannot be a string")
    groups = tuple(groups)
    for g in groups:
        if not isinstance(g, str):
            raise TypeError(f"alias group names must be strings, got {g!r}")
    return groups


@dataclass(frozen=True, init=False)
class ArrayConstraint:
    """An array parameter and what the compiled code may assume about it (see the module
    docstring for the fields tilepy uses). Divisors are in elements, the base address's in
    bytes; a constant shape or stride makes its divisor redundant (it must agree with it)."""
    dtype: DType
    ndim: int
    index_dtype: DType
    stride_lower_bound_incl: tuple
    alias_groups: tuple
    may_alias_internally: bool
    stride_constant: tuple
    shape_constant: tuple
    stride_divisible_by: tuple
    shape_divisible_by: tuple
    base_addr_divisible_by: int

    def __init__(self, dtype: DType, ndim: int, *, index_dtype: DType,
                 stride_lower_bound_incl, alias_groups, may_alias_internally: bool,
                 stride_constant=None, shape_constant=None, stride_divisible_by=1,
                 shape_divisible_by=1, base_addr_divisible_by: int = 1):
        _check_dtype(dtype)
        if isinstance(ndim, bool) or not isinstance(ndim, int):
            raise TypeError(f"Expected an integer for `ndim`, got '{ndim}'")
        if ndim < 0:
            raise ValueError("`ndim` cannot be negative")
        if index_dtype not in (D.int32, D.uint32, D.int64):
            raise ValueError(f"`index_dtype` must be int32 or int64, got {index_dtype}")
        stride_constant = _per_dim(stride_constant, ndim, "stride_constant", None, _optional_int)
        shape_constant = _per_dim(shape_constant, ndim, "shape_constant", None, _optional_extent)
        lower = list(_per_dim(stride_lower_bound_incl, ndim, "stride_lower_bound_incl", None,
                              _optional_int))
        for i, c in enumerate(stride_constant):       # a constant stride makes its bound moot
            if c is not None and lower[i] is not None:
                if c < lower[i]:
                    raise ValueError(f"stride_lower_bound_incl[{i}] is set to {c}, which is "
                                     f"less than the lower bound {lower[i]}")
                lower[i] = None
        divisible = {}
        for field, constants in (("stride_divisible_by", stride_constant),
                                 ("shape_divisible_by", shape_constant)):
            divs = list(_per_dim(locals()[field], ndim, field, 1, _divisor))
            for i, c in enumerate(constants):
                if c is not None:
                    if c % divs[i]:
                        raise ValueError(f"{field.replace('divisible_by', 'constant')}[{i}] is "
                                         f"set to {c}, which is not divisible by {divs[i]}")
                    divs[i] = 1
            divisible[field] = tuple(divs)
        if isinstance(base_addr_divisible_by, bool) or not isinstance(base_addr_divisible_by,
                                                                        int):
            raise TypeError("Expected an integer for the `base_addr_divisible_by` parameter, "
                            f"got {base_addr_divisible_by}")
        if base_addr_divisible_by <= 0:
            raise ValueError("`base_addr_divisible_by` must be strictly positive, got "
                             f"{base_addr_divisible_by}")
        values = dict(dtype=dtype, ndim=ndim, index_dtype=index_dtype,
                      stride_lower_bound_incl=tuple(lower),
                      alias_groups=_alias_groups(alias_groups),
                      may_alias_internally=bool(may_alias_internally),
                      stride_constant=stride_constant, shape_constant=shape_constant,
                      base_addr_divisible_by=base_addr_divisible_by, **divisible)
        for k, v in values.items():
            object.__setattr__(self, k, v)


@dataclass(frozen=True, init=False)
class ListConstraint:
    """A list-of-arrays parameter: each element is described by `element` (an
    ArrayConstraint); `alias_groups` is about the list's own storage."""
    element: ArrayConstraint
    alias_groups: tuple
    elements_may_alias: bool

    def __init__(self, element: ArrayConstraint, *, alias_groups, elements_may_alias: bool):
        if not isinstance(element, ArrayConstraint):
            raise TypeError("ListConstraint only supports an ArrayConstraint as the `element` "
                            f"constraint, got '{element}'")
        object.__setattr__(self, "element", element)
        object.__setattr__(self, "alias_groups", _alias_groups(alias_groups))
        object.__setattr__(self, "elements_may_alias", bool(elements_may_alias))


ConstantValue = typing.Union[bool, int, float]


@dataclass(frozen=True, init=False)
class TupleConstraint:
    """A tuple parameter: one constraint per item."""
    items: tuple

    def __init__(self, items):
        object.__setattr__(self, "items", tuple(_to_constraint(x) for x in items))


@dataclass(frozen=True, init=False)
class DataclassConstraint:
    """A dataclass parameter (calling convention 3): the class and one constraint per field, in
    declaration order; its kernel parameters are its fields', as a tuple's items. cuTile keeps
    it to its development builds; tilepy enables it."""
    cls: type
    fields: tuple

    def __init__(self, cls: type, fields):
        if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
            raise TypeError("DataclassConstraint.cls must be a dataclass type")
        fields = tuple(_to_constraint(f) for f in fields)
        count = len(dataclasses.fields(cls))
        if len(fields) != count:
            raise TypeError(f"Number of fields in DataclassConstraint doesn't match the number "
                            f"of fields of dataclass '{cls.__qualname__}' ({len(fields)} vs "
                            f"{count})")
        object.__setattr__(self, "cls", cls)
        object.__setattr__(self, "fields", fields)

    @staticmethod
    def create(cls: type, /, **fields) -> "DataclassConstraint":
        """The constraint of `cls` with its fields' constraints by name."""
        if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
            raise TypeError("`cls` must be a dataclass type")
        items = []
        for f in dataclasses.fields(cls):
            if f.name not in fields:
                raise TypeError(f"Missing field '{f.name}' of dataclass '{cls.__qualname__}'")
            items.append(fields.pop(f.name))
        if fields:
            raise TypeError(f"No such field '{next(iter(fields))}' in dataclass "
                            f"'{cls.__qualname__}'")
        return DataclassConstraint(cls, items)


def _is_constant_value(v) -> bool:
    """cuTile's constants: bool, int, float, a dtype, None, a string, an Enum member."""
    return isinstance(v, (bool, int, float, str, enum.Enum, DType)) or v is None


@dataclass(eq=False)
class ConstantConstraint:
    """The value of a `Constant` parameter (1, True and 1.0 are three different values; a NaN
    equals itself)."""
    value: ConstantValue

    def __post_init__(self):
        if not _is_constant_value(self.value):
            raise TypeError(f"Unexpected constant value type {type(self.value)}")

    def __eq__(self, other):
        if type(other) is not ConstantConstraint:
            return NotImplemented
        if type(self.value) is not type(other.value):
            return False
        if isinstance(self.value, float):
            return struct.pack("=d", self.value) == struct.pack("=d", other.value)
        return self.value == other.value

    def __hash__(self):
        return hash((type(self.value), struct.pack("=d", self.value)
                     if isinstance(self.value, float) else self.value))


ParameterConstraint = (ScalarConstraint, ArrayConstraint, ListConstraint, TupleConstraint,
                       DataclassConstraint, ConstantConstraint)


def _to_constraint(c):
    if isinstance(c, ParameterConstraint):
        return c
    if _is_constant_value(c):
        return ConstantConstraint(c)
    if isinstance(c, tuple):
        return TupleConstraint(c)
    if dataclasses.is_dataclass(c) and not isinstance(c, type):
        return DataclassConstraint(type(c), [getattr(c, f.name) for f in dataclasses.fields(c)])
    raise TypeError(f"Can't interpret {c!r} as a parameter constraint")


def _alias_uses(constraints):
    for c in constraints:
        if isinstance(c, (ArrayConstraint, ListConstraint)):
            yield c, c.alias_groups
        if isinstance(c, ListConstraint):
            yield from _alias_uses([c.element])
        elif isinstance(c, TupleConstraint):
            yield from _alias_uses(c.items)
        elif isinstance(c, DataclassConstraint):
            yield from _alias_uses(c.fields)


def _check_alias_groups(constraints):
    uses, kinds = {}, {}
    for c, groups in _alias_uses(constraints):
        if len(set(groups)) != len(groups):
            dup = next(g for g in groups if groups.count(g) > 1)
            raise ValueError(f"Alias group `{dup}` occurs more than once in the group list "
                             f"{list(groups)}")
        for g in groups:
            uses[g] = uses.get(g, 0) + 1
            kind = kinds.setdefault(g, type(c))
            if kind is not type(c):
                raise ValueError(f"Alias group `{g}` is used in two constraints of different "
                                 f"types {kind.__name__} and {type(c).__name__}")
    for g, n in uses.items():
        if n == 1:
            raise ValueError(f"Alias group `{g}` is mentioned only once, and is therefore "
                             f"redundant: an empty tuple of alias groups says that an array "
                             f"or a list may not alias any other object")


def _check_convention(c, cconv: CallingConvention):
    if isinstance(c, ArrayConstraint) and cconv.version < 2 and \
            any(x is not None for x in c.shape_constant):
        raise ValueError(f"Static array shapes are not supported by calling convention "
                         f"{cconv.name}; version >= 2 is required")
    if isinstance(c, ListConstraint):
        _check_convention(c.element, cconv)
    for kind, cls, version, items in (("Tuple", TupleConstraint, 2, "items"),
                                      ("Dataclass", DataclassConstraint, 3, "fields")):
        if isinstance(c, cls):
            if cconv.version < version:
                raise ValueError(f"{kind} parameters are not supported by calling convention "
                                 f"{cconv.name}; version >= {version} is required")
            for x in getattr(c, items):
                _check_convention(x, cconv)


# cuTile's mangling: api/name_mangling.py (which imports this module) puts its
# `mangle_kernel_name` here; tilepy.compilation loads both.
_MANGLE: list = []


@dataclass(frozen=True, init=False)
class KernelSignature:
    """One constraint per parameter of the kernel's Python function (a plain constant value or
    tuple stands for a ConstantConstraint / TupleConstraint), the calling convention, and the
    exported symbol (None: cuTile's mangled name of the kernel for this signature)."""
    parameters: tuple
    calling_convention: CallingConvention
    symbol: typing.Optional[str]

    def __init__(self, parameters, calling_convention: CallingConvention,
                 symbol: typing.Optional[str] = None):
        if symbol is not None and not isinstance(symbol, str):
            raise TypeError(f"`symbol` must be a string, got {type(symbol)}")
        if not isinstance(calling_convention, CallingConvention):
            raise TypeError(f"Unsupported calling convention {calling_convention}")
        parameters = tuple(_to_constraint(c) for c in parameters)
        _check_alias_groups(parameters)
        for c in parameters:
            _check_convention(c, calling_convention)
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "calling_convention", calling_convention)
        object.__setattr__(self, "symbol", symbol)

    def with_symbol(self, symbol: typing.Optional[str]) -> "KernelSignature":
        return dataclasses.replace(self, symbol=symbol)

    def with_mangled_symbol(self, function_name: str) -> "KernelSignature":
        """This signature with cuTile's symbol for `function_name` (`mangle_kernel_name`)."""
        return self.with_symbol(_MANGLE[0](function_name, self))

    @staticmethod
    def from_kernel_args(kernel, kernel_args, calling_convention: CallingConvention, *,
                         symbol: typing.Optional[str] = None) -> "KernelSignature":
        """The signature tilepy specializes `kernel` on for these launch arguments (the facts
        of frontend/specialize.py as constraints)."""
        from ..host.intake import infos_for
        from ..host.params import ArrayParam, expand
        infos = infos_for(tuple(kernel_args))
        _, params = kernel.specialize(infos)
        shared = [p for p in expand(params) if isinstance(p, ArrayParam) and not p.disjoint]
        out = [_constraint_of(p, len(shared) > 1, calling_convention, info)
               for p, info in zip(params, infos)]
        sig = KernelSignature(out, calling_convention, symbol)
        return sig if symbol is not None else sig.with_mangled_symbol(kernel.name)


def _constraint_of(p, aliased: bool, cconv: CallingConvention, info):
    """The constraint of one specialized parameter (`aliased`: some arrays may overlap; `info`:
    its argument's, None for a list's arrays)."""
    from ..host.params import (ArrayListParam, ArrayParam, ConstParam, DataclassParam,
                               ScalarParam, TupleParam)
    if isinstance(p, ArrayParam):
        return _array_constraint(p, aliased, cconv, getattr(info, "shape", (None,) * p.ndim))
    if isinstance(p, TupleParam):
        items = [_constraint_of(q, aliased, cconv, i) for q, i in zip(p.items, info)]
        return DataclassConstraint(p.cls, items) if isinstance(p, DataclassParam) else \
            TupleConstraint(items)
    if isinstance(p, ArrayListParam):
        if not p.items:
            raise TileUnsupportedFeatureError(
                f"argument '{p.name}': an empty list has no element constraint")
        item = p.items[0]
        return ListConstraint(_array_constraint(item, False, cconv, (None,) * item.ndim),
                              alias_groups=(),
                              elements_may_alias=not all(i.disjoint for i in p.items))
    if isinstance(p, ConstParam):
        return _to_constraint(p.value)
    if isinstance(p, ScalarParam):
        return ScalarConstraint(p.dtype)
    raise TileUnsupportedFeatureError(
        f"argument '{p.name}': no constraint describes a {type(p).__name__}")


def _array_constraint(p, aliased: bool, cconv: CallingConvention, extents) -> ArrayConstraint:
    """The constraint of an array parameter of `extents` (a list's elements: None each).
    Constant extents: the annotated static ones, or (calling convention v2, no static extents
    annotated) those of 1, as cuTile infers them (tilepy's kernel is valid for any extent, so
    for these too); constant strides: the annotated static ones, else the unit strides."""
    if p.static_shape:
        shape_constant = p.static_shape
    elif cconv._version >= 2:
        shape_constant = tuple(1 if d == 1 else None for d in extents)
    else:
        shape_constant = (None,) * p.ndim
    stride_constant = p.static_strides or tuple(1 if u else None for u in p.unit_stride)
    return ArrayConstraint(
        p.dtype, p.ndim, index_dtype=p.index_dtype, stride_lower_bound_incl=None,
        alias_groups=() if p.disjoint or not aliased else ("tilepy_may_overlap",),
        may_alias_internally=False, shape_constant=shape_constant,
        stride_constant=stride_constant,
        shape_divisible_by=tuple(p.shape_div) or 1,
        stride_divisible_by=tuple(1 if u else d for u, d in
                                  zip(p.unit_stride, p.stride_div or (1,) * p.ndim)),
        base_addr_divisible_by=p.align)


# ------------------------------------------------------------------------------- export
def _spec(c: ArrayConstraint):
    """The AOT ArraySpec of an ArrayConstraint: the facts tilepy specializes on."""
    from .aot import ArraySpec

    def makes16(divisor, constant):
        n = constant if constant is not None else divisor
        return n is not None and (n * c.dtype.itemsize) % 16 == 0 if n else True
    return ArraySpec(c.dtype, c.ndim, tuple(s == 1 for s in c.stride_constant),
                     c.base_addr_divisible_by % 16 == 0,
                     tuple(makes16(d, k) for d, k in zip(c.shape_divisible_by,
                                                          c.shape_constant)),
                     tuple(makes16(d, k) for d, k in zip(c.stride_divisible_by,
                                                          c.stride_constant)),
                     not c.alias_groups, D.int64 if c.index_dtype is D.int64 else None)


def _example(what: str, c, constant: bool):
    """The example argument `kernel.compile` takes for constraint `c` of a parameter (`what`:
    cuTile's words for it, "field 'add' of kernel parameter 'args'"); a Constant's (`constant`)
    must be constants, a dataclass's fields under the parameter's annotation (cuTile's rules)."""
    if isinstance(c, DataclassConstraint):
        from ..frontend.records import make
        return make(c.cls, [_example(f"field '{f.name}' of {what}", x, constant)
                            for f, x in zip(dataclasses.fields(c.cls), c.fields)])
    if isinstance(c, ConstantConstraint):
        if not constant:
            raise TypeError(f"Invalid {what}: ConstantConstraint is only valid for parameters "
                            f"annotated as Constant.")
        return c.value
    if isinstance(c, TupleConstraint) and constant:
        return tuple(_example(f"item #{i} of {what}", x, True) for i, x in enumerate(c.items))
    if constant:
        raise TypeError(f"Invalid {what}: Expected a scalar/tuple/dataclass constant, as implied "
                        f"by the Constant annotation.")
    if isinstance(c, ScalarConstraint):
        return c.dtype
    if isinstance(c, ArrayConstraint):
        return _spec(c)
    if isinstance(c, TupleConstraint):
        return tuple(_example(f"item #{i} of {what}", x, False) for i, x in enumerate(c.items))
    raise TileUnsupportedFeatureError(
        f"{what}: a {type(c).__name__} cannot be exported by tilepy: cuTile's kernel takes a list "
        f"as a pointer to its arrays' descriptors and an int32 length, and tilepy's kernel is "
        f"specialized on the length (a tuple of arrays, or an array per parameter, can be)")


def signature_args(kernel, signature: KernelSignature) -> list:
    """The example arguments of `kernel.compile` that stand for `signature`."""
    names = list(kernel.signature.parameters)
    if len(names) != len(signature.parameters):
        raise TypeError(f"kernel '{kernel.name}' takes {len(names)} parameter(s) "
                        f"({', '.join(names)}) but the signature has "
                        f"{len(signature.parameters)} constraint(s)")
    return [_example(f"kernel parameter '{n}'", c, n in kernel.constants)
            for n, c in zip(names, signature.parameters)]


def export_kernel(kernel, signatures, output_file, *, gpu_code: typing.Optional[str] = None,
                  output_format: str, bytecode_version: typing.Optional[str] = None):
    """Compile `kernel` for its signature and write the result to `output_file` (a file name or
    a binary file object): `output_format="cubin"` (`gpu_code` such as "sm_90" required; the
    kernel's `compiler` option picks NVRTC or tileiras) or `"tileir_bytecode"` (NVIDIA's Tile IR
    bytecode, `bytecode_version` "13.1".."13.5", default tilepy's; without `gpu_code`, the
    architecture-independent bytecode of 13.3 or later). The kernel is cuTile's: the
    signature's symbol (or cuTile's mangled name) and cuTile's parameters (module docstring).
    A cubin with a `bytecode_version` is
    checked to be that version's Tile IR (what an older version lacks is refused by name, as
    cuTile's tileiras would), whichever compiler makes it, and bytecode or such a cubin for a
    `gpu_code` holds only element types tileiras compiles for it (fp8 from sm_90, fp4 and
    e8m0 from sm_100, e5m3 from sm_107: bytecode/targets.py). One signature per export:
    tilepy puts one kernel in a cubin."""
    if output_format not in ("cubin", "tileir_bytecode"):
        raise ValueError(f"Unknown output format '{output_format}'")
    if gpu_code is None and output_format == "cubin":
        raise ValueError("gpu_code is required when output_format is 'cubin'.")
    signatures = list(signatures)
    if not signatures:
        raise ValueError("export_kernel needs at least one signature")
    if len(signatures) > 1:
        raise TileUnsupportedFeatureError(
            f"export_kernel got {len(signatures)} signatures: tilepy exports one kernel per "
            f"file (call it once per signature)")
    sig = signatures[0]
    args = signature_args(kernel, sig)
    symbol = (sig if sig.symbol is not None else sig.with_mangled_symbol(kernel.name)).symbol
    from .aot import specialization
    spec = specialization(kernel, args)
    if output_format == "tileir_bytecode":
        data = _bytecode(kernel, spec, symbol, bytecode_version, gpu_code)
    else:
        if bytecode_version is not None:        # the kernel must be that version's Tile IR
            _bytecode(kernel, spec, symbol, bytecode_version, gpu_code)
        data = _cubin(kernel, spec, symbol, gpu_code)
    with _opened(output_file) as f:
        f.write(data)


def cutile_layout(params) -> list[tuple]:
    """cuTile's kernel parameters for specialization `params` (module docstring), each as
    (index of tilepy's entry parameter it is, None), or (None, index of its array's first
    extent) for a unit stride tilepy's entry has no parameter for."""
    from ..host.params import ArrayParam, ScalarParam, expand
    out, i = [], 0
    for p in expand(params):
        if isinstance(p, ArrayParam):
            out += [(i + k, None) for k in range(1 + p.ndim)]
            first, i = i + 1, i + 1 + p.ndim
            for unit in p.unit_stride:
                out.append((None, first) if unit else (i, None))
                i += not unit
        elif isinstance(p, ScalarParam):
            out.append((i, None))
            i += 1
    return out


def _entry_module(kernel, spec, symbol: str):
    """The specialization's Tile IR with cuTile's entry: named `symbol`, cuTile's parameters
    (an unused one, `tp_unit_stride_<k>`, where tilepy's entry has none)."""
    import copy

    from ..ir.core import BlockArg
    from .compiler import tile_ir
    module = copy.deepcopy(tile_ir(kernel, *spec))      # the cached one keeps its entry
    entry = module.entry()
    entry.attrs["sym_name"] = symbol
    block = entry.regions[0].block
    own = block.args
    block.args = [own[j] if j is not None else BlockArg(own[like].type, block, 0,
                                                          f"tp_unit_stride_{k}")
                  for k, (j, like) in enumerate(cutile_layout(spec[1]))]
    for k, a in enumerate(block.args):
        a.index = k
    return module


def _bytecode(kernel, spec, symbol, version, gpu_code) -> bytes:
    from ..bytecode import DEFAULT_VERSION, write_module
    from ..bytecode.targets import check_target
    from ..bytecode.writer import as_version
    from ..cuda_c.targets import arch_number
    version = as_version(version or DEFAULT_VERSION)
    module = _entry_module(kernel, spec, symbol)
    sm = arch_number(gpu_code) if gpu_code is not None else None
    if sm is not None:                # what tileiras compiles for the target, at the user's line
        check_target(module, gpu_code, sm)
    data = write_module(module, version)     # first: what the kernel needs of the version
    if gpu_code is None and version < (13, 3):
        raise TileUnsupportedFeatureError(
            f"Architecture-independent TileIR bytecode generation requires version 13.3 or "
            f"later, but got {version[0]}.{version[1]}. Specify a target architecture (gpu_code) "
            f"for an earlier version.")
    return data


def _cubin(kernel, spec, symbol: str, arch: str) -> bytes:
    compiler = kernel.options.get("compiler", "nvrtc") if hasattr(kernel, "options") else "nvrtc"
    if not arch.startswith("sm_"):
        raise ValueError(f"gpu_code must name a GPU (sm_XX) for a cubin, got {arch!r}")
    if compiler == "tileiras":
        from .tileiras_kernel import TileirasKernel
        return TileirasKernel(_entry_module(kernel, spec, symbol)).gpu_code(arch).data
    _check_c_symbol(symbol)
    from .compiler import compile_specialization
    return ExportedKernel(compile_specialization(kernel, *spec), symbol, spec[1]).binary(arch).data


class ExportedKernel:
    """A compiled kernel (api/compiler.CompiledKernel) under cuTile's entry, for NVRTC: the same
    body, the entry named `symbol` with cuTile's parameters (tilepy's own names where tilepy
    has the parameter, `tp_unit_stride_<k>` for a unit stride it folded)."""
    compiler = "nvrtc"

    def __init__(self, ck, symbol: str, params):
        own = ck.emitted.params
        self._ck, self.name, self.symbol, self.emitted = ck, ck.name, symbol, ck.emitted
        self.params = [own[j] if j is not None else (own[like][0], f"tp_unit_stride_{k}")
                       for k, (j, like) in enumerate(cutile_layout(params))]

    @property
    def module(self):
        return self._ck.module

    @property
    def entry(self) -> tuple:
        """EmittedKernel.source's `entry`: the symbol, the parameters, and a first check: the
        kernel is a SIMT kernel of TP_NT threads, so a launch with another block (a tile
        kernel's (1, 1, 1), as cuTile launches tileiras' cubins) fails its device assertion."""
        nt = self.emitted.nt
        check = (f"  if (blockDim.x * blockDim.y * blockDim.z != TP_NT) tp::assert_fail(\"kernel "
                 f"'{self.symbol}' (NVRTC) must be launched with block ({nt}, 1, 1)\", 0);")
        return self.symbol, self.params, ("#ifdef TP_GPU", check, "#endif")

    @property
    def cuda_source(self) -> str:
        return self.emitted.source(False, self.entry)

    def compile_source(self) -> str:
        return self.emitted.source(True, self.entry)

    def binary(self, target: str):
        """The GPU code for `target`, checked and built as a CompiledKernel's."""
        from .compiler import CompiledKernel
        return CompiledKernel.binary(self, target)


def _check_c_symbol(symbol: str):
    """An NVRTC cubin's kernel is a C++ `extern "C"` function: `symbol` must be a C identifier
    that neither the language, the implementation (`__x`, `_X`) nor tilepy's code (`tp_...`
    but `tp_kernel_...`, names.EMITTED) spells."""
    import re

    from ..cuda_c.names import EMITTED, KEYWORDS
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol) or symbol in KEYWORDS or \
            symbol in EMITTED or re.match(r"__|_[A-Z]|(tp_|TP_)(?!kernel_)", symbol):
        raise TileUnsupportedFeatureError(
            f"export_kernel: an NVRTC cubin cannot name its kernel {symbol!r}: the symbol must "
            f"be a C identifier that is not a C++ keyword, not reserved ('__...', '_X...') and "
            f"not tilepy's ('tp_...'); tileiras' cubins and the bytecode take any symbol")


@contextmanager
def _opened(target):
    if isinstance(target, (str, bytes, os.PathLike)):
        with open(target, "wb") as f:
            yield f
    else:
        yield target


# cuTile's ParameterConstraint is a type alias, the union of the constraint classes: it
# subscripts (`Sequence[ParameterConstraint]`, an annotation cuTile's tests write) and isinstance
# takes it, as it takes the tuple above
ParameterConstraint = typing.Union[ParameterConstraint]
