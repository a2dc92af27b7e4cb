"""Specialization: what a kernel is compiled for, per argument, and why it was compiled again.

For an array: dtype, rank, which dimensions have unit stride (their stride is not passed), and
divisibility facts (`divisors`, ARCHITECTURE.md decision 10), which become `assume div_by<N>`
facts in the IR (frontend/context.py), so that an f16 matrix of 5000 columns (10000-byte rows)
takes the same 16-byte vector and cp.async path as one of 4096. For the CUDA C++ and CPU code,
the 16-byte facts that code reads (lowering/memfacts.py): whether the base address is a multiple
of 16 bytes, whether each stride of a dimension without unit stride is (in bytes), and whether
the extent of a unit-stride dimension is (whole 16-byte chunks in pipelined loads). cuTile keys
on the same base and stride facts (and on every extent's divisibility by 16 elements), so an
array that differs from a compiled one only in finer powers of two (8-byte rows: no change in
that code) compiles again in neither. For NVIDIA's tileiras, which reads finer facts (f16 rows
of 8 bytes load 64 bits at a time there, of 4 bytes 32, of 2 bytes 16), the exact facts
(`exact=True`): the largest power of two dividing the base address and every extent and
stride, up to 16 bytes. For a Python scalar: its dtype (int -> int32, float -> float32, bool ->
bool_). For a `Constant` parameter: its value. The key of a specialization is a tuple of one
`(name, property, value)` triple per property, so a recompile can say which property of which
argument changed.
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import (TileAnnotationError, TileArgumentTypeError, TileIndexOverflowError,
                      TileTypeError, TileValueError)
from ..types import DType
from ..types import dtype as D
from ..host.params import (ArrayListParam, ArrayParam, ConstParam, DataclassParam, ScalarParam,
                           TupleParam, flat)

ALIGN = 16          # bytes: the widest vector access; no fact is specialized beyond it


def divisors(info, exact: bool = False) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(base alignment in bytes, extent divisors, stride divisors in elements), true of `info`
    on every dimension: ALIGN if the base address is a multiple of ALIGN bytes, else 1; per
    extent and stride, the elements in ALIGN bytes if it spans a multiple of ALIGN bytes (0
    does), else 1. `exact`: the largest power of two dividing each, capped at ALIGN bytes. The
    one place these facts are computed (param_for keeps those the code reads); the launch
    signature (ptr & 15, shape, strides) fixes them."""
    cap = max(1, ALIGN // info.dtype.itemsize)
    fact = _pow2 if exact else _whole
    return (fact(info.ptr, ALIGN), tuple(fact(d, cap) for d in info.shape),
            tuple(fact(s, cap) for s in info.strides))


def _pow2(x: int, cap: int) -> int:
    return min(x & -x, cap) if x else cap


def _whole(x: int, cap: int) -> int:
    return cap if x % cap == 0 else 1


def param_for(name: str, info, constant: bool, scalar_dtype: DType | None = None,
              index_dtype: DType | None = None, annotation=None, exact: bool = False):
    """`exact`: exact divisibility facts (tileiras'; see the module's doc); `scalar_dtype`: the
    parameter's ScalarAnnotation (`ScalarInt64`), for an integer; `index_dtype`: its
    ArrayAnnotation's (`IndexedWithInt64`: int64), for an array or a list; `annotation`: that
    ArrayAnnotation (a list's: its elements'), whose `static_shape_dims` / `static_stride_dims`
    name the extents and strides made compile-time constants."""
    from ..host.intake import ArrayInfo, ArrayInfoList
    if scalar_dtype is not None:
        return _annotated_scalar(name, info, constant, scalar_dtype)
    if (index_dtype is not None or annotation is not None) and \
            (constant or not isinstance(info, (ArrayInfo, ArrayInfoList))):
        raise TileTypeError(f"Invalid kernel parameter '{name}': ArrayAnnotation/IndexedWithInt64 "
                            f"can only be applied to an array or a list-of-array parameter.")
    if isinstance(info, ArrayInfoList) and not constant:
        return _array_list(name, info, index_dtype, annotation, exact)
    if isinstance(info, ArrayInfo):
        if constant:
            raise TileTypeError(f"argument '{name}': an array cannot be a Constant parameter")
        index = info.index_dtype or index_dtype or D.int32     # a signature's, the annotation's
        _check_index_range(name, info, index)
        unit = tuple(s == 1 or d == 1 for s, d in zip(info.strides, info.shape))
        static_shape, static_strides = _static_dims(name, info, annotation)
        if static_strides:      # cuTile's rule: no unit stride is inferred beside static ones
            unit = tuple(u and s is not None for u, s in zip(unit, static_strides))
        align, shape_div, stride_div = divisors(info, exact)
        if not exact:   # the facts the C++ reads (lowering/memfacts.py): the extent along a
            shape_div = tuple(d if u else 1 for d, u in zip(shape_div, unit))  # unit-stride dim,
            stride_div = tuple(1 if u else d for d, u in zip(stride_div, unit))  # other strides
        elif static_strides:    # cuTile's rule: the other strides' finer facts are dropped
            cap = max(1, ALIGN // info.dtype.itemsize)
            stride_div = tuple(d if s is not None or d == cap else 1
                               for d, s in zip(stride_div, static_strides))
        return ArrayParam(name, info.dtype, len(info.shape), unit, align, shape_div, stride_div,
                          index_dtype=index, static_shape=static_shape,
                          static_strides=static_strides)
    if constant:
        return ConstParam(name, _plain_constant(info))
    if isinstance(info, bool):
        return ScalarParam(name, D.bool_)
    if isinstance(info, int):
        if not -2**31 <= info < 2**31:
            raise TileValueError(f"argument '{name}' = {info} does not fit in int32 (kernel int "
                                 f"arguments are int32); pass it as a Constant or an array")
        return ScalarParam(name, D.int32)
    if isinstance(info, float):
        return ScalarParam(name, D.float32)
    if isinstance(info, (np.number, np.bool_)):
        return ScalarParam(name, D.from_numpy(info.dtype))
    if isinstance(info, (DType, str, type(None))):
        return ConstParam(name, info)
    raise TileTypeError(f"argument '{name}' of type {type(info).__name__} is not supported: "
                        f"pass arrays (numpy, torch, DLPack), Python numbers, or mark the "
                        f"parameter tilepy.Constant[...]")


def argument_param(name: str, info, node, position: int, path: tuple[int, ...] = (),
                   exact: bool = False):
    """The parameter of one kernel argument (`info`: host/intake.intake_arg's) under its
    annotation tree (frontend/annotations.py): a tuple (intake's ArgTuple) becomes a TupleParam
    whose items are named `<name>_<i>`, each under its item's annotation (a leaf annotation
    applies to every item); every other value, param_for's. `position`: the argument's index in
    the call, for cuTile's "item #i of kernel argument #k" in errors."""
    from ..host.intake import ArgRecord, ArgTuple, ArrayInfo, ArrayInfoList
    from .annotations import EachItem, Items, Leaf
    if isinstance(info, ArgRecord):
        return _record_param(name, info, node, position, path, exact)
    if isinstance(info, ArgTuple):
        if isinstance(node, Items) and len(node.items) != len(info):
            raise TileArgumentTypeError(
                f"Invalid {_what(position, path)}: Received a tuple of length {len(info)} for a "
                f"parameter annotated as a tuple of length {len(node.items)}")
        nodes = node.items if isinstance(node, Items) else \
            (node.each if isinstance(node, EachItem) else node,) * len(info)
        return TupleParam(name, tuple(argument_param(f"{name}_{i}", x, n, position, (*path, i),
                                                     exact)
                                      for i, (x, n) in enumerate(zip(info, nodes))))
    if not isinstance(node, Leaf):
        raise TileArgumentTypeError(f"Invalid {_what(position, path)}: Received a non-tuple "
                                    f"argument for a parameter annotated as a tuple")
    node.check(_what(position, path))
    if node.constant and isinstance(info, (ArrayInfo, ArrayInfoList)):
        obj = info.obj if isinstance(info, ArrayInfo) else info[0].obj
        kind = type(obj).__name__ if isinstance(info, ArrayInfo) else "list"
        raise TileArgumentTypeError(f"Invalid {_what(position, path)}: Could not interpret "
                                    f"object of type '{kind}' as a constant.")
    if not node.constant and isinstance(info, tuple) and not isinstance(info, ArrayInfoList):
        raise TileArgumentTypeError(f"Invalid {_what(position, path)}: '{type(info).__name__}' "
                                    f"is a subclass of 'tuple'. Only plain tuples are accepted.")
    if not node.constant and isinstance(info, str):         # cuTile's rule
        raise TileArgumentTypeError(f"Invalid {_what(position, path)}: Objects of type 'str' are "
                                    f"only accepted for parameters annotated as Constant.")
    if path and not node.constant and not _is_leaf_value(info):
        raise TileArgumentTypeError(f"Invalid {_what(position, path)}: Objects of type "
                                    f"'{type(info).__name__}' are not supported")
    return param_for(name, info, node.constant,
                     node.scalar.dtype if node.scalar is not None else None, node.index_dtype,
                     node.array_annotation, exact)


def _is_leaf_value(info) -> bool:
    """What param_for takes as a value that is not a Constant (an item's or a field's)."""
    from ..host.intake import ArrayInfo, ArrayInfoList
    return isinstance(info, (ArrayInfo, ArrayInfoList, bool, int, float, np.number, np.bool_,
                             DType, str, type(None)))


def _record_param(name: str, info, node, position: int, path: tuple, exact: bool):
    """A dataclass object's parameter: its fields' under the parameter's annotation (a leaf's
    applies to every field, as cuTile's: a Constant makes every field a constant)."""
    from .annotations import Leaf
    from .records import check_class, field_names
    what = _what(position, path)
    if not isinstance(node, Leaf):
        raise TileArgumentTypeError(f"Invalid {what}: Received a dataclass object "
                                    f"({info.cls.__name__}) for a parameter annotated as a tuple")
    try:
        check_class(info.cls)
    except TileTypeError as e:
        raise TileArgumentTypeError(f"Invalid {what}: {e}") from None
    return DataclassParam(name, tuple(
        argument_param(f"{name}_{i}", x, node, position, (*path, f), exact)
        for i, (f, x) in enumerate(zip(field_names(info.cls), info))), info.cls)


def _what(position: int, path: tuple) -> str:
    """cuTile's name of an argument or of one of its tuple's items or dataclass's fields:
    "item #1 of field 'xs' of kernel argument #2"."""
    return "".join(f"field '{i}' of " if isinstance(i, str) else f"item #{i} of "
                   for i in reversed(path)) + f"kernel argument #{position}"


def _annotated_scalar(name: str, info, constant: bool, dtype: DType) -> ScalarParam:
    """An integer parameter annotated `ScalarInt64` (cuTile's rule: non-constant scalars only;
    a numpy scalar must already have the annotated dtype)."""
    if constant or not isinstance(info, (int, np.integer)) or isinstance(info, (bool, np.bool_)):
        raise TileTypeError(f"argument '{name}': ScalarInt64 applies to an integer scalar "
                            f"parameter that is not a Constant (got {type(info).__name__})")
    if isinstance(info, np.integer) and D.from_numpy(info.dtype) != dtype:
        raise TileTypeError(f"argument '{name}' is a {info.dtype} scalar but the parameter is "
                            f"annotated {dtype.name}")
    bits = dtype.bits
    if not -2**(bits - 1) <= int(info) < 2**(bits - 1):
        raise TileValueError(f"argument '{name}' = {info} does not fit in {dtype.name}")
    return ScalarParam(name, dtype)


def _check_index_range(name: str, info, index: DType):
    """Every extent and stride (in elements) of an array fits its index dtype."""
    top = 2**(index.bits - 1)
    for what, vals in (("shape", info.shape), ("strides", info.strides)):
        for i, v in enumerate(vals):
            if not -top <= v < top:
                hint = ("; annotate the parameter ct.IndexedWithInt64 for 64-bit extents and "
                        "strides") if index.bits < 64 else ""
                raise TileIndexOverflowError(f"argument '{name}': {what}[{i}] = {v} does not fit "
                                             f"in {index.name}{hint}")


def _static_dims(name: str, info, annotation) -> tuple[tuple, tuple]:
    """Per dimension, the extent (and the stride) the annotation makes a compile-time constant,
    else None; () when it makes none. cuTile's checks: axes in range, none twice."""
    out = []
    for field, values in (("static_shape_dims", info.shape), ("static_stride_dims", info.strides)):
        dims = getattr(annotation, field, ()) if annotation is not None else ()
        nd = len(values)
        seen = set()
        for d in dims:
            if not -nd <= d < nd:
                raise TileAnnotationError(f"argument '{name}': {field} contains axis {d}, out "
                                          f"of range for a {nd}-d array")
            if d % nd in seen:
                raise TileAnnotationError(f"argument '{name}': {field} has a duplicate axis "
                                          f"{d % nd}")
            seen.add(d % nd)
        out.append(tuple(values[i] if i in seen else None for i in range(nd)) if seen else ())
    return out[0], out[1]


def _array_list(name: str, infos, index_dtype=None, annotation=None,
                exact=False) -> ArrayListParam:
    items = tuple(param_for(f"{name}_{i}", info, False, index_dtype=index_dtype,
                            annotation=annotation, exact=exact)
                  for i, info in enumerate(infos))
    kinds = {(p.dtype, p.ndim) for p in items}
    if len(kinds) > 1:
        desc = ", ".join(f"{p.dtype.name} {p.ndim}-d" for p in items)
        raise TileTypeError(f"argument '{name}': the arrays of a list must have one dtype and "
                            f"rank (got {desc})")
    for what, field in (("shape", "static_shape"), ("stride", "static_strides")):
        for axis, vals in enumerate(zip(*(getattr(p, field) for p in items))):
            if len(set(vals)) > 1:                # one kernel serves every item: cuTile's rule
                raise TileAnnotationError(f"argument '{name}': the arrays of the list vary in "
                                          f"static {what} at axis {axis} (got "
                                          f"{', '.join(map(str, vals))})")
    return ArrayListParam(name, items)


def _plain_constant(value):
    """A numpy scalar given for a Constant is the Python value it holds (np.int32(16) is 16),
    so it specializes, prints and hashes as that value; a torch or numpy dtype object is the
    tilepy dtype it stands for (as in cuTile: `c == ct.float32` holds for `torch.float32`)."""
    if isinstance(value, np.dtype) or type(value).__name__ == "dtype":
        dt = D.foreign(value)
        if dt is not None:
            return dt
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def mark_disjoint(params: list, infos: list) -> list:
    """Array params whose memory overlaps no other array argument's get `disjoint=True` (the
    lowering then needs no barriers between accesses to them and to the other arrays)."""
    import dataclasses

    from ..host.intake import byte_extent, disjoint_flags
    arrays = [(p, info) for p, info in flat(params, infos) if isinstance(p, ArrayParam)]
    flags = disjoint_flags([(info.ptr, byte_extent(info)) for _, info in arrays])
    alone = {p.name for (p, _), disjoint in zip(arrays, flags) if disjoint}

    def mark(p):
        if isinstance(p, (ArrayListParam, TupleParam)):
            return dataclasses.replace(p, items=tuple(mark(q) for q in p.items))
        return dataclasses.replace(p, disjoint=True) if isinstance(p, ArrayParam) and \
            p.name in alone else p
    return [mark(p) for p in params]


def _flags(fl) -> str:
    """(True, False, True) -> 'dims 0, 2' (which dimensions have the property)."""
    dims = [str(i) for i, f in enumerate(fl) if f]
    return f"dims {', '.join(dims)}" if dims else "no dims"


def _divs(divs) -> str:
    """(8, 1, 2) -> '8, 1, 2' (per dimension)."""
    return ", ".join(map(str, divs)) or "-"


def param_key(p) -> tuple:
    """The specialization key of one parameter: (name, property, value) triples (a tuple's
    and a list's items' follow theirs)."""
    if isinstance(p, DataclassParam):
        return ((p.name, "kind", "dataclass"), (p.name, "class", p.cls),
                *(t for q in p.items for t in param_key(q)))
    if isinstance(p, TupleParam):
        return ((p.name, "kind", "tuple"), (p.name, "length", len(p.items)),
                *(t for q in p.items for t in param_key(q)))
    if isinstance(p, ArrayListParam):
        return ((p.name, "kind", "array list"), (p.name, "length", len(p.items)),
                *(t for q in p.items for t in param_key(q)))
    if isinstance(p, ArrayParam):
        return ((p.name, "kind", "array"), (p.name, "dtype", p.dtype.name),
                (p.name, "rank", p.ndim), (p.name, "unit-stride", _flags(p.unit_stride)),
                (p.name, "base address divisible by (bytes)", p.align),
                (p.name, "extents divisible by", _divs(p.shape_div)),
                (p.name, "strides divisible by", _divs(p.stride_div)),
                (p.name, "overlaps no other array", p.disjoint),
                (p.name, "index dtype", p.index_dtype.name),
                (p.name, "static extents", p.static_shape),
                (p.name, "static strides", p.static_strides))
    if isinstance(p, ScalarParam):
        return ((p.name, "kind", "scalar"), (p.name, "dtype", p.dtype.name))
    return ((p.name, "kind", "constant"), (p.name, "constant type", type(p.value).__name__),
            (p.name, "constant value", _hashable(p.value)))


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def key_of(params) -> tuple:
    return tuple(param_key(p) for p in params)


def changes(old_key: tuple, new_key: tuple) -> list[str]:
    """What differs between two keys: ["argument 'a': dtype float32 -> float16", ...]."""
    out = []
    for old_p, new_p in zip(old_key, new_key):
        name = new_p[0][0]
        old, new = {(n, k): v for n, k, v in old_p}, {(n, k): v for n, k, v in new_p}
        if old[name, "kind"] != new[name, "kind"]:
            out.append(f"argument '{name}': {old[name, 'kind']} -> {new[name, 'kind']}")
            continue
        out += [f"argument '{n}': {k}: {old.get((n, k))} -> {v}" for (n, k), v in new.items()
                if old.get((n, k)) != v]
    return out


def log_recompile(kernel_name: str, known: list[tuple], key: tuple):
    """TILEPY_LOG=recompile: say which argument properties differ from the closest earlier
    specialization."""
    if not known:
        return
    best = min(reversed(known), key=lambda k: len(changes(k, key)))
    diff = changes(best, key) or ["(options or target)"]
    sys.stderr.write(f"tilepy: recompiling kernel '{kernel_name}' (specialization "
                     f"#{len(known) + 1}): " + "; ".join(diff) + "\n")
