"""Memory, view and pointer ops (spec 8.6, 8.10, 8.11, 8.3.8, 8.3.16, 8.4.6-8.4.8).

All memory operations happen at once when the op executes, in program order, which is one of
the orders the tokens allow (spec 6.8.3). Partition views follow spec 5.3.3: the tile at index
(I_0, ..., I_n) of the index space covers view coordinates I_i * T_i + c_i along view dimension
dim_map[i]; elements past the view's shape read the padding value and are not written. Indices
are per tile dimension (the view dimension of tile dimension i is dim_map[i]). An index outside
the index space, or a pointer outside every allocation, is undefined behavior and raises.
"""
from __future__ import annotations

import numpy as np

from ..errors import TileUnsupportedFeatureError, TileValueError
from ..types import PartitionViewType
from ..types import element as E
from . import floats as F
from .arith import handler
from .values import TOKEN, PartitionView, TensorView, as_signed, as_unsigned, wrap
from .views import check_not_all_outside, view_coords

_PAD = {"zero": 0.0, "neg_zero": -0.0, "nan": np.nan, "pos_inf": np.inf, "neg_inf": -np.inf}


def _u(v) -> int:
    """A 0-d integer tile read unsigned (view shapes, strides and indices, spec 8.11)."""
    a = np.asarray(v)
    return int(a.astype(bool)) if a.dtype == bool else int(a.view(f"u{a.dtype.itemsize}"))


def _as_written(v) -> str:
    """An index as the user wrote it: a negative one is also shown as read (unsigned)."""
    a = np.asarray(v)
    if a.dtype == bool or a.dtype.kind == "u":
        return str(_u(v))
    signed = int(a.view(f"i{a.dtype.itemsize}"))
    return str(signed) if signed >= 0 else f"{signed} (read unsigned: {_u(v)})"


@handler("make_token")
def make_token(ex, op, args):
    return [TOKEN]


@handler("join_tokens")
def join_tokens(ex, op, args):
    return [TOKEN]


@handler("memory_fence_alias_tko", "gdc_wait_tko", "gdc_launch_dependents_tko")
def ordering_only(ex, op, args):
    """Nothing to do here: memory ops take effect in program order, whatever address they use
    (the alias fence orders nothing more), and a launch runs after the previous one completed
    with no dependent grid started early (grid dependency control's wait and launch_dependents
    are no-ops without programmatic dependent launch)."""
    return [TOKEN]


@handler("make_tensor_view")
def make_tensor_view(ex, op, args):
    t = op.result.type
    dyn_shape = iter(_u(v) for v in args[1:1 + len(op.dynamicShape)])
    dyn_strides = iter(_u(v) for v in args[1 + len(op.dynamicShape):])
    shape = tuple(next(dyn_shape) if d is None else d for d in t.shape)
    strides = tuple(next(dyn_strides) if s is None else s for s in t.strides)
    return [TensorView(int(np.asarray(args[0])), shape, strides, t.elem)]


@handler("make_partition_view", "make_gather_scatter_view", "make_strided_view")
def make_partition_view(ex, op, args):
    return [PartitionView(args[0], op.result.type)]


@handler("get_tensor_shape", "get_index_space_shape")
def shape_query(ex, op, args):
    v = args[0]
    dims = v.view.shape if (op.name == "get_tensor_shape" and isinstance(v, PartitionView)) else (
        v.shape if isinstance(v, TensorView) else v.index_space())
    if len(dims) != len(op.results):
        raise TileValueError(f"{op.name}: the view has rank {len(dims)} but the op has "
                             f"{len(op.results)} results")
    return [wrap(np.array(d, dtype=np.uint64), r.type.elem) for d, r in zip(dims, op.results)]


def _tile_addresses(ex, pv: PartitionView, index, first: int, what: str, inbounds=None):
    """(addresses, in-bounds mask) of every element of the tile at `index` (operands first...).
    `inbounds` (NVIDIA 13.4): per index, the promise that the tile lies inside the tensor along
    that dimension; a broken promise is undefined behavior, reported like an index outside the
    index space."""
    for k in range(len(index)):
        ex.require_lanes(first + k, None, f"{what} (index)")
    t = pv.type
    tv = pv.view
    coords = np.indices(t.tile_shape, dtype=np.int64) if t.tile_shape else np.zeros((0,), np.int64)
    if isinstance(t, PartitionViewType):
        pairs = zip(t.effective_dim_map, _partition_coords(pv, index, coords, what))
    else:
        pairs = enumerate(view_coords(t, index, coords))
    off = np.zeros(t.tile_shape, dtype=np.int64)
    inb = np.ones(t.tile_shape, dtype=bool)
    for i, (vd, g) in enumerate(pairs):
        inside = np.asarray(g < tv.shape[vd], dtype=bool)
        if inbounds and i < len(inbounds) and inbounds[i] and not inside.all():
            raise TileValueError(f"{what}: index {_as_written(index[i])} of dimension {i} is "
                                 f"marked inbounds, but its tile reaches past the tensor's "
                                 f"extent {tv.shape[vd]} (undefined behavior)")
        inb &= inside
        off += np.where(inside, g, 0).astype(np.int64) * tv.strides[vd]
    if not isinstance(t, PartitionViewType):
        check_not_all_outside(inb, t, what)
    size = tv.elem.storage_bytes
    addr = (np.uint64(tv.base) + (off * size).astype(np.uint64)).astype(np.uint64)
    return addr, inb


def _partition_coords(pv: PartitionView, index, coords, what: str) -> list:
    """Per tile dimension, the view coordinates of the tile at `index` (spec 5.3.3)."""
    idx = [_u(i) for i in index]
    space = pv.index_space()
    for d, (i, n) in enumerate(zip(idx, space)):
        if i >= n:
            raise TileValueError(f"{what}: index {_as_written(index[d])} of dimension {d} is "
                                 f"outside the index space {space} of the partition view "
                                 f"(undefined behavior, spec 5.3.3)")
    return [idx[i] * pv.type.tile_shape[i] + coords[i] for i in range(len(idx))]


def _padding(pv: PartitionView, elem):
    pad = pv.type.padding_value
    if elem.is_int:
        if pad not in (None, "zero"):
            raise TileValueError(f"padding_value={pad} is not defined for integer views ({elem})")
        return 0
    return _PAD.get(pad, 0.0)           # no padding value: unspecified values; zeros here


def _read(ex, addr, elem, what):
    if elem == E.I1:
        return ex.memory.read(addr, np.uint8, what) != 0     # nonzero bytes read as 1
    return ex.memory.read(addr, E.NUMPY_DTYPE[elem], what)


def _write(ex, addr, values, elem, what):
    if elem == E.I1:
        values = np.asarray(values).astype(np.uint8)
    ex.memory.write(addr, values, what)


@handler("load_view_tko")
def load_view(ex, op, args):
    pv = args[0]
    elem = pv.view.elem
    addr, inb = _tile_addresses(ex, pv, args[1:1 + len(op.index)], 1, op.name,
                                op.attrs.get("inbounds"))
    out = np.empty(addr.shape, dtype=E.NUMPY_DTYPE[elem])
    out[...] = F.encode(np.array(_padding(pv, elem)), elem) if elem.is_float else 0
    if pv.type.padding_value is None:
        ex.poison(op, ~inb, "an element past the tensor's edge read without a padding value")
    if inb.any():
        out[inb] = _read(ex, addr[inb], elem, op.name)
    ex.note_access(op, addr[inb], store=False)
    return [out, TOKEN]


@handler("store_view_tko")
def store_view(ex, op, args):
    tile, pv = args[0], args[1]
    addr, inb = _tile_addresses(ex, pv, args[2:2 + len(op.index)], 2, op.name,
                                op.attrs.get("inbounds"))
    ex.require_lanes(0, inb, "store_view_tko (stored value)")
    if inb.any():
        _write(ex, addr[inb], np.asarray(tile)[inb], pv.view.elem, op.name)
    ex.note_access(op, addr[inb], store=True)
    return [TOKEN]


def _mask(ex, op, args, shape):
    m = op.mask
    if m is None:
        return np.ones(shape, dtype=bool)
    i = op.operands.index(m)
    ex.require_lanes(i, None, f"{op.name} (mask)")
    return np.asarray(args[i], dtype=bool)


@handler("load_ptr_tko")
def load_ptr(ex, op, args):
    elem = op.result.type.elem
    addr = np.asarray(args[0])
    mask = _mask(ex, op, args, addr.shape)
    ex.require_lanes(0, mask, "load_ptr_tko (pointer)")
    out = np.zeros(addr.shape, dtype=E.NUMPY_DTYPE[elem])
    if op.paddingValue is not None:
        i = op.operands.index(op.paddingValue)
        ex.require_lanes(i, ~mask, "load_ptr_tko (padding value)")
        out[...] = args[i]
    else:
        ex.poison(op, ~mask, "a masked-off element loaded without a padding value")
    if mask.any():
        out[mask] = _read(ex, addr[mask], elem, op.name)
    ex.note_access(op, addr[mask], store=False)
    return [out, TOKEN]


@handler("store_ptr_tko")
def store_ptr(ex, op, args):
    addr = np.asarray(args[0])
    mask = _mask(ex, op, args, addr.shape)
    ex.require_lanes(0, mask, "store_ptr_tko (pointer)")
    ex.require_lanes(1, mask, "store_ptr_tko (stored value)")
    if mask.any():
        _write(ex, addr[mask], np.asarray(args[1])[mask], op.value.type.elem, op.name)
    ex.note_access(op, addr[mask], store=True)
    return [TOKEN]


@handler("offset")
def offset(ex, op, args):
    """ptr + offset * sizeof(pointee), offset read signed, modulo 2^64."""
    size = op.ptr.type.elem.pointee.storage_bytes
    off = as_signed(args[1], op.offset.type.elem) * size
    return [np.asarray(args[0]).astype(np.uint64) + off.astype(np.uint64)]


@handler("int_to_ptr", "ptr_to_int", "ptr_to_ptr")
def ptr_cast(ex, op, args):
    a = np.asarray(args[0])
    return [a.view(np.int64).copy() if op.name == "ptr_to_int" else a.view(np.uint64).copy()]


@handler("get_global")
def get_global(ex, op, args):
    return [np.array(ex.globals[op.attrs["name"]], dtype=np.uint64)]


# ------------------------------------------------------------------------------ atomics
_RMW_TYPES = {"and": (E.I32, E.I64), "or": (E.I32, E.I64), "xor": (E.I32, E.I64),
              "add": (E.I32, E.I64), "max": (E.I32, E.I64), "min": (E.I32, E.I64),
              "umax": (E.I32, E.I64), "umin": (E.I32, E.I64), "addf": (E.F16, E.BF16, E.F32, E.F64),
              "xchg": (E.I32, E.I64, E.F32, E.F64)}


def _rmw(mode, elem, old, arg):
    """One atomic update on 0-d storage values."""
    if mode == "xchg":
        return arg
    if mode == "addf":
        return F.encode(F.round_f64(F.to_f64(old) + F.to_f64(arg), elem), elem)
    if mode in ("and", "or", "xor", "add"):
        a, b = as_unsigned(old, elem), as_unsigned(arg, elem)
        r = {"and": a & b, "or": a | b, "xor": a ^ b, "add": a + b}[mode]
        return wrap(r, elem)
    signed = mode in ("max", "min")
    a, b = (as_signed(x, elem) if signed else as_unsigned(x, elem) for x in (old, arg))
    take_arg = (b > a) if mode in ("max", "umax") else (b < a)
    return arg if take_arg else old


def _weak_atomic(op):
    if op.memory_ordering_semantics == "weak":
        raise TileValueError(f"{op.name}: weak ordering is not valid for atomics (spec 8.10)")


@handler("atomic_rmw_tko")
def atomic_rmw(ex, op, args):
    """Element by element in row-major order; a masked-out element returns 0."""
    _weak_atomic(op)
    elem = op.arg.type.elem
    if elem not in _RMW_TYPES[op.mode]:
        raise TileUnsupportedFeatureError(f"atomic_rmw_tko: mode {op.mode} does not support {elem} "
                                          f"(spec 8.10.2)")
    addr, arg = np.asarray(args[0]), np.asarray(args[1])
    mask = _mask(ex, op, args, addr.shape)
    out = np.zeros(addr.shape, dtype=arg.dtype)
    ex.poison(op, ~mask, "a masked-off atomic_rmw_tko result (implementation-defined)")
    for pos in np.ndindex(*addr.shape):
        if mask[pos]:
            old = _read(ex, addr[pos], elem, op.name)
            _write(ex, addr[pos], _rmw(op.mode, elem, old, arg[pos]), elem, op.name)
            out[pos] = old
    return [out, TOKEN]


@handler("atomic_cas_tko")
def atomic_cas(ex, op, args):
    """Bitwise comparison (floats too); a masked-out element returns cmp."""
    _weak_atomic(op)
    elem = op.cmp.type.elem
    addr, cmp, val = (np.asarray(a) for a in args[:3])
    mask = _mask(ex, op, args, addr.shape)
    out = cmp.copy()
    for pos in np.ndindex(*addr.shape):
        if mask[pos]:
            old = np.asarray(_read(ex, addr[pos], elem, op.name))
            if old.tobytes() == np.asarray(cmp[pos]).tobytes():
                _write(ex, addr[pos], val[pos], elem, op.name)
            out[pos] = old
    return [out, TOKEN]



@handler("atomic_red_view_tko")
def atomic_red_view(ex, op, args):
    """Each element of the tile at `index` updated atomically with the value's element, in
    row-major order; elements past the tensor's edge are not touched (as store_view_tko)."""
    _weak_atomic(op)
    pv, value = args[0], np.asarray(args[1 + len(op.index)])
    elem = pv.view.elem
    addr, inb = _tile_addresses(ex, pv, args[1:1 + len(op.index)], 1, op.name,
                                op.attrs.get("inbounds"))
    ex.require_lanes(1 + len(op.index), inb, f"{op.name} (value)")
    for pos in zip(*np.nonzero(inb)):
        old = _read(ex, addr[pos], elem, op.name)
        _write(ex, addr[pos], _rmw(op.mode, elem, old, value[pos]), elem, op.name)
    ex.note_access(op, addr[inb], store=True)
    return [TOKEN]


@handler("alloca")
def alloca(ex, op, args):
    """A fresh zeroed allocation of num_elem elements each time the op runs (its base is aligned
    far beyond any `alignment`); kept until the launch ends, so a use after its block is not
    reported, and its initial contents (unspecified in Tile IR) read as zeros."""
    elem = op.result.type.elem.pointee
    where = f" at {op.loc}" if op.loc is not None else ""
    base = ex.memory.add(f"alloca{where}", np.zeros(op.attrs["num_elem"] * elem.storage_bytes,
                                                    np.uint8))
    return [np.array(base, dtype=np.uint64)]
