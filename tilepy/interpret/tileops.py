"""Tile-shaped ops (spec 8.3): constants, iota, grid queries, broadcast, reshape, permute, cat,
extract, pack/unpack, reduce, scan and the matrix multiply-accumulates.

reduce and scan fold sequentially in index order (reverse order for a reverse scan), starting
from the identity (a reduce: from ir.ops.fold_identities, NaN for a NaN-ignoring max/min),
calling the body as `f(element, accumulator)`. The spec leaves the order of a
reduction to the implementation, so for non-associative float bodies (addf, mulf) the result is a
reference within tolerance. The body runs once per step on all positions at once when it holds
only element-wise ops; otherwise position by position.

mmaf multiplies exactly and sums in float64, then rounds once into the accumulator type; the
spec leaves the summation order and intermediate precision to the hardware (tolerance applies).
mmai is exact (i8 products summed in int64, wrapped to i32).
"""
from __future__ import annotations

import numpy as np

from ..errors import TileUnsupportedFeatureError, TileValueError
from ..ir import DenseValue
from ..ir.ops import fold_identities
from ..types import PtrType
from ..types import element as E
from ..types.convert import decode_bits, encode_bits, has_encoded_bits
from . import floats as F
from .arith import handler
from .values import as_signed, as_unsigned, expand_scales, wrap


def dense_storage(dv, elem, shape) -> np.ndarray:
    """A DenseValue (splat or full) as a storage array of `shape`."""
    arr = np.asarray(dv.array)
    if elem.is_int:
        ints = arr.astype(np.uint64) if arr.dtype.kind == "u" else arr.astype(np.int64)
        out = wrap(ints, elem) if elem != E.I1 else arr.astype(bool)
    elif arr.dtype == E.NUMPY_DTYPE[elem] and elem != E.TF32:
        out = arr
    else:
        out = F.encode(F.round_f64(F.to_f64(arr), elem), elem)
    return np.broadcast_to(out, shape).copy()


@handler("constant")
def constant(ex, op, args):
    t = op.result.type
    return [dense_storage(op.value, t.elem, t.shape)]


@handler("iota")
def iota(ex, op, args):
    t = op.result.type
    return [wrap(np.arange(t.shape[0], dtype=np.uint64), t.elem)]


@handler("get_tile_block_id")
def block_id(ex, op, args):
    return [np.array(v, dtype=np.int32) for v in ex.block]


@handler("get_num_tile_blocks")
def num_blocks(ex, op, args):
    return [np.array(v, dtype=np.int32) for v in ex.grid]


@handler("broadcast")
def broadcast(ex, op, args):
    return [np.broadcast_to(args[0], op.result.type.shape).copy()]


@handler("reshape")
def reshape(ex, op, args):
    return [np.reshape(args[0], op.result.type.shape).copy()]


@handler("permute")
def permute(ex, op, args):
    """Result dimension i is source dimension permutation[i]."""
    return [np.transpose(args[0], tuple(op.permutation)).copy()]


@handler("cat")
def cat(ex, op, args):
    return [np.concatenate(args, axis=op.dim)]


def _subtile(name, idx, sub_shape, full_shape) -> tuple:
    """The slices of sub-tile number `idx` (read unsigned) of shape sub_shape in full_shape."""
    sl = []
    for d, (i, n, full) in enumerate(zip(idx, sub_shape, full_shape)):
        k = int(as_unsigned(i, E.I32))
        if (k + 1) * n > full:
            raise TileValueError(f"{name}: slice index {k} of dimension {d} is out of range "
                                 f"({full // n} slices; undefined behavior in Tile IR)")
        sl.append(slice(k * n, (k + 1) * n))
    return tuple(sl)


@handler("extract")
def extract(ex, op, args):
    """The slice number `indices` (read unsigned) of the result's shape."""
    src, *idx = args
    return [np.asarray(src)[_subtile("extract", idx, op.result.type.shape, np.shape(src))].copy()]


@handler("insert")
def insert(ex, op, args):
    """The destination with its slice number `indices` (read unsigned, in units of the source's
    shape) replaced by the source (dialect 13.4)."""
    src, dst, *idx = args
    out = np.array(dst, copy=True)
    out[_subtile("insert", idx, np.shape(src), np.shape(dst))] = src
    return [out]


def _packable(elem):
    if isinstance(elem, PtrType) or elem == E.I1:
        raise TileUnsupportedFeatureError(f"pack/unpack of {elem} is not supported by the "
                                          f"interpreter (the spec does not define its bit order)")


def _bits_of(values, elem) -> np.ndarray:
    """The bytes of a rank-1 tile as memory holds them (e2m1: two per byte, the first element in
    the low 4 bits; e5m3: its code), uint8."""
    if not has_encoded_bits(elem):
        return np.ascontiguousarray(values).view(np.uint8)
    codes = encode_bits(values, elem)
    if elem.bits == 4:
        codes = codes[0::2] | (codes[1::2] << 4)
    return codes


def _from_bits(data: np.ndarray, elem) -> np.ndarray:
    """The inverse of `_bits_of`: bytes (uint8) -> the storage array of a rank-1 `elem` tile."""
    if not has_encoded_bits(elem):
        return data.view(E.NUMPY_DTYPE[elem]).copy()
    if elem.bits == 4:
        data = np.stack([data & 0xF, data >> 4], axis=-1).reshape(-1)
    return decode_bits(data, elem)


@handler("pack")
def pack(ex, op, args):
    _packable(op.source.type.elem)
    return [_bits_of(args[0], op.source.type.elem).view(np.int8).copy()]


@handler("unpack")
def unpack(ex, op, args):
    elem = op.result.type.elem
    _packable(elem)
    return [_from_bits(np.ascontiguousarray(args[0]).view(np.uint8), elem)]


@handler("assume")
def assume(ex, op, args):
    """Passes the value through; the predicate is not checked."""
    return [args[0]]


# ------------------------------------------------------------------------------ reduce, scan
def _batchable(block) -> bool:
    return all(o.opdef.elementwise or o.name in ("constant", "yield") for o in block.ops)


def _fold(ex, op, args, scan: bool):
    dim = op.dim
    elems = [v.type.elem for v in op.operands]
    starts = op.identities if scan else [DenseValue(e, np.asarray(v))
                                         for v, e in zip(fold_identities(op), elems)]
    idents = [dense_storage(d, e, ()) for d, e in zip(starts, elems)]
    moved = [np.moveaxis(np.asarray(a), dim, 0) for a in args]
    n, rest = moved[0].shape[0], moved[0].shape[1:]
    order = range(n - 1, -1, -1) if (scan and op.reverse) else range(n)
    body = op.body.block
    if _batchable(body):
        accs = [np.broadcast_to(i, rest).copy() for i in idents]
        steps = [None] * n
        for k in order:
            inputs = [x for pair in zip((m[k] for m in moved), accs) for x in pair]
            accs = [np.broadcast_to(v, rest).astype(m.dtype)
                    for v, m in zip(ex.call_region(body, inputs, batched=True), moved)]
            steps[k] = accs
        if scan:
            return [np.moveaxis(np.stack([s[j] for s in steps]), 0, dim) for j in range(len(args))]
        return accs
    return _fold_scalar(ex, op, moved, idents, order, scan)


def _fold_scalar(ex, op, moved, idents, order, scan):
    """The same fold, one position of the non-reduced dimensions at a time."""
    rest = moved[0].shape[1:]
    outs = [np.empty(m.shape if scan else rest, dtype=m.dtype) for m in moved]
    for pos in np.ndindex(*rest):
        accs = list(idents)
        for k in order:
            inputs = [x for pair in zip((m[(k, *pos)] for m in moved), accs) for x in pair]
            accs = [np.asarray(v) for v in ex.call_region(op.body.block, inputs)]
            if scan:
                for o, a in zip(outs, accs):
                    o[(k, *pos)] = a
        if not scan:
            for o, a in zip(outs, accs):
                o[pos] = a
    if scan:
        return [np.moveaxis(o, 0, op.dim) for o in outs]
    return outs


@handler("reduce")
def reduce(ex, op, args):
    return _fold(ex, op, args, scan=False)


@handler("scan")
def scan(ex, op, args):
    return _fold(ex, op, args, scan=True)


# ------------------------------------------------------------------------------ mma
@handler("mmaf")
def mmaf(ex, op, args):
    a, b, c = (F.to_f64(x) for x in args)
    elem = op.result.type.elem
    with np.errstate(all="ignore"):
        r = np.matmul(a, b) + c
    return [F.encode(F.round_f64(r, elem), elem)]


@handler("mmaf_scaled")
def mmaf_scaled(ex, op, args):
    """Each product scaled by its block's two scales (exact in float64: at most 4 significand
    bits each), summed as mmaf."""
    a, b, c, sa, sb = (F.to_f64(x) for x in args)
    sa, sb = expand_scales(sa, sb, np.shape(a)[-1])
    with np.errstate(all="ignore"):
        r = np.matmul(a * sa, b * sb) + c
    return [F.encode(F.round_f64(r, E.F32), E.F32)]


@handler("mmai")
def mmai(ex, op, args):
    a, b, c = args
    sa = op.signedness_lhs == "signed"
    sb = op.signedness_rhs == "signed"
    a = as_signed(a, E.I8) if sa else as_unsigned(a, E.I8).astype(np.int64)
    b = as_signed(b, E.I8) if sb else as_unsigned(b, E.I8).astype(np.int64)
    r = np.matmul(a, b) + as_signed(c, E.I32)
    return [wrap(r, E.I32)]
