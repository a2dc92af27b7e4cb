"""Rows of the core tile ops (spec 8.3: constant, iota, grid queries, shape ops, offset, mma,
pack/unpack) and of the miscellaneous ops (8.12: assume, print_tko)."""
from __future__ import annotations

import re

from ..types import (BF16, E2M1, E4M3, E5M2, E5M3, E8M0, F16, F32, F64, I1, I8, I32, INT_TYPES,
                     TF32, PtrType, TensorViewType, TileType, TOKEN, scalar_tile)
from .constraints import (all_tiles, elem_in, elem_is_ptr, is_token, rank_in, same_elem, same_rank,
                          same_shape, same_type, scalar)
from .opdef import SIGNEDNESS, A, O, OpDef, R, op, rule, same_as


# ---------------------------------------------------------------------------------- constant
@rule("constant_elem", "value and result must have the same element type")
def _constant_elem(o):
    v, t = o.value, o.result.type
    if v.elem != t.elem:
        return f"value and result must have the same element type (got {v.elem}, {t.elem})"


@rule("constant_shape", "value and result must have the same shape")
def _constant_shape(o):
    v, t = o.value, o.result.type
    if not v.is_splat and tuple(v.array.shape) != t.shape:
        return f"value and result must have the same shape (got {tuple(v.array.shape)}, {t.shape})"


op(OpDef("constant", attrs=(A("value", "dense", False),), results=(R("result"),),
         syntax="$value : type($result)",
         infer=lambda t, a: [TileType(a["value"].array.shape, a["value"].elem)],
         constraints=(all_tiles("result"), _constant_elem, _constant_shape)))


# -------------------------------------------------------------------------------------- iota
@rule("iota_rank", "result must be a 1-d tile")
def _iota_rank(o):
    if o.result.type.rank != 1:
        return f"result must be a 1-d tile (got {o.result.type})"


@rule("iota_fits", "elements must not exceed the maximum value of")
def _iota_fits(o):
    t = o.result.type
    hi = t.elem.int_range(False)[1]
    if t.shape[0] > hi:
        return (f"the number of elements must not exceed the maximum value of {t.elem} "
                f"(got {t.shape[0]} > {hi})")


op(OpDef("iota", results=(R("result"),), syntax=": type($result)",
         constraints=(all_tiles("result"), elem_in(INT_TYPES, "result"), _iota_rank, _iota_fits)))


# ------------------------------------------------------------------------------ grid queries
def _grid(name, results):
    @rule("grid_i32", "must be tile<i32>")
    def check(o):
        for r in o.results:
            if r.type != scalar_tile(I32):
                return f"results must be tile<i32> (got {r.type})"
    op(OpDef(name, results=tuple(R(r) for r in results), syntax=f": type(${results[0]})",
             infer=lambda t, a: [scalar_tile(I32)] * 3, constraints=(check,)))


_grid("get_tile_block_id", ("blockId_x", "blockId_y", "blockId_z"))
_grid("get_num_tile_blocks", ("gridSize_x", "gridSize_y", "gridSize_z"))


# --------------------------------------------------------------------------------- shape ops
_SRC_RES = ("source", "result")


@rule("broadcast_dims", "must be 1 or equal the result's")
def _broadcast_dims(o):
    s, r = o.source.type, o.result.type
    for i, (a, b) in enumerate(zip(s.shape, r.shape)):
        if a != b and a != 1:
            return (f"source dimension {i} must be 1 or equal the result's "
                    f"(got {s.shape_str()} -> {r.shape_str()})")


op(OpDef("broadcast", operands=(O("source"),), results=(R("result"),),
         syntax="$source : type($source) -> type($result)",
         constraints=(all_tiles(*_SRC_RES), same_elem(*_SRC_RES), same_rank(*_SRC_RES),
                      _broadcast_dims)))


@rule("reshape_numel", "must have the same number of elements")
def _reshape_numel(o):
    s, r = o.source.type, o.result.type
    if s.numel != r.numel:
        return (f"source and result must have the same number of elements "
                f"(got {s.shape_str()} with {s.numel}, {r.shape_str()} with {r.numel})")


op(OpDef("reshape", operands=(O("source"),), results=(R("result"),),
         syntax="$source : type($source) -> type($result)",
         constraints=(all_tiles(*_SRC_RES), same_elem(*_SRC_RES), _reshape_numel)))


def _permute_infer(types, attrs):
    s = types[0]
    return [s.with_shape(tuple(s.shape[p] for p in attrs["permutation"]))]


@rule("permutation", "permutation must be a permutation of")
def _permutation(o):
    perm, rank = list(o.permutation), o.source.type.rank
    if sorted(perm) != list(range(rank)):
        return f"permutation must be a permutation of 0..{rank - 1} (got {perm})"


@rule("permute_shape", "result shape must be")
def _permute_shape(o):
    s, r, perm = o.source.type, o.result.type, tuple(o.permutation)
    want = tuple(s.shape[p] for p in perm)
    if r.shape != want:
        return f"result shape must be {want} for permutation {list(perm)} (got {r.shape})"


op(OpDef("permute", operands=(O("source"),), attrs=(A("permutation", "ints", False),),
         results=(R("result"),), infer=_permute_infer,
         syntax="$source $permutation : type($source) -> type($result)",
         constraints=(all_tiles(*_SRC_RES), same_elem(*_SRC_RES), same_rank(*_SRC_RES),
                      _permutation, _permute_shape)))


def _cat_infer(types, attrs):
    a, b, d = types[0], types[1], attrs["dim"]
    shape = list(a.shape)
    shape[d] = a.shape[d] + b.shape[d]
    return [a.with_shape(shape)]


@rule("cat_dim", "dim must be in")
def _cat_dim(o):
    if not 0 <= o.dim < o.lhs.type.rank:
        return f"dim must be in [0, {o.lhs.type.rank}) (got {o.dim})"


@rule("cat_shapes", "must have the same shape except in dim")
def _cat_shapes(o):
    a, b, d = o.lhs.type, o.rhs.type, o.dim
    if any(i != d and a.shape[i] != b.shape[i] for i in range(a.rank)):
        return f"lhs and rhs must have the same shape except in dim {d} (got {a.shape}, {b.shape})"


@rule("cat_result", "result must have shape")
def _cat_result(o):
    a, b, d = o.lhs.type, o.rhs.type, o.dim
    want = tuple(a.shape[i] + (b.shape[i] if i == d else 0) for i in range(a.rank))
    if o.result.type.shape != want:
        return f"result must have shape {want} (got {o.result.type.shape})"


op(OpDef("cat", operands=(O("lhs"), O("rhs")), attrs=(A("dim", "int", False),),
         results=(R("result"),), infer=_cat_infer,
         syntax="$lhs, $rhs dim = $dim : type($lhs), type($rhs) -> type($result)",
         constraints=(all_tiles("lhs", "rhs", "result"), same_rank("lhs", "rhs", "result"),
                      same_elem("lhs", "rhs", "result"), _cat_dim, _cat_shapes, _cat_result)))


def subtile_rules(name: str, whole: str, part: str) -> tuple:
    """The rules of an op addressing the sub-tile number `indices` of operand `whole` (shape of
    `part`): one index per dimension, and part's shape dividing whole's."""
    @rule(f"{name}_count", "indices for a rank-")
    def count(o):
        w = getattr(o, whole).type
        if len(o.indices) != w.rank:
            return f"expected {w.rank} indices for a rank-{w.rank} {whole} (got {len(o.indices)})"

    @rule(f"{name}_divides", f"{part} shape must divide the {whole} shape evenly")
    def divides(o):
        for i, (a, b) in enumerate(zip(getattr(o, whole).type.shape, getattr(o, part).type.shape)):
            if b == 0 or a % b:
                return f"{part} shape must divide the {whole} shape evenly (dim {i}: {b} into {a})"
    return count, divides


op(OpDef("extract", operands=(O("source"), O("indices", variadic=True)), results=(R("result"),),
         syntax="$source[$indices] : type($source) -> type($result)",
         constraints=(all_tiles(*_SRC_RES), same_rank(*_SRC_RES), same_elem(*_SRC_RES),
                      scalar("indices"), elem_in((I32,), "indices"),
                      *subtile_rules("extract", "source", "result"))))

op(OpDef("offset", operands=(O("ptr"), O("offset")), results=(R("result"),), infer=same_as(0),
         syntax="$ptr, $offset : type($ptr), type($offset) -> type($result)", elementwise=True,
         constraints=(all_tiles("ptr", "offset", "result"), elem_is_ptr("ptr"),
                      elem_in(INT_TYPES, "offset"), same_shape("ptr", "offset", "result"),
                      same_type("ptr", "result"))))


# ---------------------------------------------------------------------------------------- mma
# mmaf: supported (input, accumulator) element type pairs (spec 8.3.13 table).
MMAF_TYPES = {E4M3: (F16, F32), E5M2: (F16, F32), F16: (F16, F32), BF16: (F32,), TF32: (F32,),
              F32: (F32,), F64: (F64,)}


@rule("mma_rank", "must be 2-d or 3-d (batched) tiles")
def _mma_rank(o):
    if o.lhs.type.rank not in (2, 3):
        return f"lhs, rhs and acc must be 2-d or 3-d (batched) tiles (got rank {o.lhs.type.rank})"


@rule("mma_shapes", "shapes must be a valid matrix multiplication")
def _mma_shapes(o):
    a, b, c = o.lhs.type, o.rhs.type, o.acc.type
    *ba, m, k = a.shape
    *bb, k2, n = b.shape
    *bc, m2, n2 = c.shape
    if k != k2 or m != m2 or n != n2 or not (ba == bb == bc):
        return (f"shapes must be a valid matrix multiplication: lhs MxK, rhs KxN, acc MxN "
                f"(got {a.shape_str()}, {b.shape_str()}, {c.shape_str()})")


@rule("mmaf_input", "is not supported by mmaf")
def _mmaf_input(o):
    a = o.lhs.type.elem
    if a not in MMAF_TYPES:
        return f"lhs element type {a} is not supported by mmaf (supported: {', '.join(map(str, MMAF_TYPES))})"


@rule("mmaf_acc", "inputs accumulate into")
def _mmaf_acc(o):
    a, c = o.lhs.type.elem, o.acc.type.elem
    if a in MMAF_TYPES and c not in MMAF_TYPES[a]:
        return (f"{a} inputs accumulate into {' or '.join(map(str, MMAF_TYPES[a]))} "
                f"(got acc element type {c})")


_MMA = ("lhs", "rhs", "acc")
op(OpDef("mmaf", operands=tuple(O(n) for n in _MMA), results=(R("result"),), infer=same_as(2), mma=True,
         attrs=(A("fast_acc", "flag"),),       # NVIDIA 13.3: fp8 products may accumulate faster
         syntax="$lhs, $rhs, $acc ?( fast_acc$fast_acc )? : type($lhs), type($rhs), type($acc)",
         constraints=(all_tiles(*_MMA, "result"), same_type("acc", "result"),
                      same_elem("lhs", "rhs"), same_rank(*_MMA), _mma_rank, _mma_shapes,
                      _mmaf_input, _mmaf_acc)))
op(OpDef("mmai", operands=tuple(O(n) for n in _MMA), mma=True,
         attrs=(A("signedness_lhs", SIGNEDNESS, False), A("signedness_rhs", SIGNEDNESS, False)),
         results=(R("result"),), infer=same_as(2),
         syntax="$lhs, $rhs, $acc $signedness_lhs $signedness_rhs : type($lhs), type($rhs), type($acc)",
         constraints=(all_tiles(*_MMA, "result"), same_type("acc", "result"),
                      elem_in((I8,), "lhs", "rhs"), elem_in((I32,), "acc"), same_rank(*_MMA),
                      _mma_rank, _mma_shapes)))


# mmaf_scaled (NVIDIA's dialect 13.3; cuTile's mma_scaled): block-scaled products,
#   result[.., m, n] = acc + sum_k lhs[.., m, k] * lhs_scale[.., m, k // B]
#                              * rhs[.., k, n] * rhs_scale[.., k // B, n]
# with the block size B = K / (the scales' K extent). Operand type -> scale type -> the block
# sizes it takes (cuTile 1.6's table: MXFP8, MXFP4 and NVFP4).
SCALED_KINDS = {E4M3: {E8M0: (32,)}, E5M2: {E8M0: (32,)},
                E2M1: {E8M0: (16, 32), E4M3: (16,), E5M3: (16, 32)}}


def scale_block(k: int, scale_k: int) -> int | None:
    """The block size of scales with `scale_k` entries along a K of `k` (None: not a divisor)."""
    return k // scale_k if scale_k and k % scale_k == 0 else None


@rule("mma_scale_shapes", "scale shapes must be the operand shapes with K divided by the block "
      "size")
def _mma_scale_shapes(o):
    a, b, sa, sb = (t.type.shape for t in (o.lhs, o.rhs, o.lhs_scale, o.rhs_scale))
    kind = SCALED_KINDS.get(o.lhs.type.elem, {}).get(o.lhs_scale.type.elem, ())
    block = scale_block(a[-1], sa[-1])
    want_a = a[:-1] + (a[-1] // (block or 1),)
    want_b = b[:-2] + (b[-2] // (block or 1),) + b[-1:]
    if block not in kind or sa != want_a or sb != want_b:
        sizes = " or ".join(map(str, kind))
        return (f"scale shapes must be the operand shapes with K divided by the block size "
                f"({sizes} for {o.lhs.type.elem} with {o.lhs_scale.type.elem} scales): "
                f"expected {want_a} and {want_b} (got {sa} and {sb})")


@rule("mma_scaled_kind", "scale element type must suit the operand element type")
def _mma_scaled_kind(o):
    a, s = o.lhs.type.elem, o.lhs_scale.type.elem
    if s not in SCALED_KINDS.get(a, {}) or o.rhs_scale.type.elem != s:
        want = ", ".join(map(str, SCALED_KINDS.get(a, {})))
        return (f"scale element type must suit the operand element type: lhs_scale and "
                f"rhs_scale must be tiles of one scale type for {a} operands "
                f"({want}; got {o.lhs_scale.type.elem} and {o.rhs_scale.type.elem})")


_MMA_SCALED = ("lhs", "rhs", "acc", "lhs_scale", "rhs_scale")
op(OpDef("mmaf_scaled", operands=tuple(O(n) for n in _MMA_SCALED), results=(R("result"),),
         infer=same_as(2),
         syntax="$lhs, $rhs, $acc, $lhs_scale, $rhs_scale : type($lhs), type($rhs), type($acc), "
                "type($lhs_scale), type($rhs_scale)",
         constraints=(all_tiles(*_MMA_SCALED, "result"), same_type("acc", "result"),
                      same_rank(*_MMA_SCALED), _mma_rank, _mma_shapes, same_elem("lhs", "rhs"),
                      elem_in(tuple(SCALED_KINDS), "lhs", "rhs"), elem_in((F32,), "acc"),
                      _mma_scaled_kind, _mma_scale_shapes)))


# ------------------------------------------------------------------------------- pack/unpack
def _numeric(name):
    @rule(f"numeric({name})", "must be a numeric tile")
    def check(o):
        e = getattr(o, name).type.elem
        if isinstance(e, PtrType) or e == I1:
            return f"{name} must be a numeric tile of i8..i64 or floats (got {getattr(o, name).type})"
    return check


@rule("pack_bytes", "must hold the same number of bytes")
def _pack_bytes(o):
    s, r = o.source.type, o.result.type
    sb, rb = s.numel * s.elem.bits, r.numel * r.elem.bits
    if sb != rb:
        return f"source and result must hold the same number of bytes (got {sb // 8} and {rb // 8})"


for _name, _byte_side, _other in (("pack", "result", "source"), ("unpack", "source", "result")):
    op(OpDef(_name, operands=(O("source"),), results=(R("result"),),
             syntax="$source : type($source) -> type($result)",
             constraints=(all_tiles(*_SRC_RES), rank_in((1,), *_SRC_RES),
                          elem_in((I8,), _byte_side), _numeric(_other), _pack_bytes)))


# ------------------------------------------------------------------------------------ assume
def _pred_rule(kind, rule_id, phrase):
    """A rule of one predicate kind; `fn(op, pred)` returns the message or None."""
    def deco(fn):
        @rule(rule_id, phrase)
        def check(o):
            p = o.predicate
            return fn(o, p) if p is not None and p.kind == kind else None
        return check
    return deco


def _int_tile(t):
    return isinstance(t, TileType) and not isinstance(t.elem, PtrType) and t.elem.is_int


@_pred_rule("bounded", "bounded_value", "bounded needs a tile of integers")
def _bounded_value(o, p):
    if not _int_tile(o.value.type):
        return f"bounded needs a tile of integers (got {o.value.type})"


@_pred_rule("bounded", "bounded_order", "lower bound must be less than or equal to the upper")
def _bounded_order(o, p):
    if p.lower is not None and p.upper is not None and p.lower > p.upper:
        return f"lower bound must be less than or equal to the upper bound (got {p.lower}, {p.upper})"


@_pred_rule("bounded", "bounded_range", "exceeds the range of")
def _bounded_range(o, p):
    if _int_tile(o.value.type):
        lo, hi = o.value.type.elem.int_range(True)
        for b in (p.lower, p.upper):
            if b is not None and not lo <= b <= hi:
                return f"bound {b} exceeds the range of {o.value.type.elem} ({lo}..{hi})"


@_pred_rule("div_by", "div_by_value", "div_by needs a tile of integers or pointers")
def _div_by_value(o, p):
    t = o.value.type
    if not (isinstance(t, TensorViewType) or _int_tile(t)
            or (isinstance(t, TileType) and isinstance(t.elem, PtrType))):
        return f"div_by needs a tile of integers or pointers, or a tensor_view (got {t})"


@_pred_rule("div_by", "div_by_divisor", "divisor must be a positive power of 2")
def _div_by_divisor(o, p):
    d = p.divisor
    if not (isinstance(d, int) and d > 0 and d & (d - 1) == 0):
        return f"divisor must be a positive power of 2 (got {d})"


@_pred_rule("div_by", "div_by_every", "every and along")
def _div_by_every(o, p):
    t = o.value.type
    if (p.every is None) != (p.along is None):
        return "every and along must be used together"
    if p.every is None:
        return None
    if isinstance(t, TensorViewType) or (isinstance(t, TileType) and t.rank == 0):
        return f"every and along cannot be used with a tensor_view or a 0-d tile (got {t})"
    if p.every <= 0 or not 0 <= p.along < t.rank:
        return f"every and along must be positive and a dimension of the tile (got {p.every}, {p.along})"


@_pred_rule("same_elements", "same_elements_value", "same_elements needs a tile of integers or pointers")
def _same_value(o, p):
    t = o.value.type
    if not (_int_tile(t) or (isinstance(t, TileType) and isinstance(t.elem, PtrType))):
        return f"same_elements needs a tile of integers or pointers (got {t})"


@_pred_rule("same_elements", "same_elements_rank", "one group size per dimension")
def _same_rank(o, p):
    t = o.value.type
    if isinstance(t, TileType) and (len(p.values) != t.rank or any(v <= 0 for v in p.values)):
        return (f"same_elements needs one group size per dimension, all positive "
                f"(got {list(p.values)} for {t})")


op(OpDef("assume", operands=(O("value"),), attrs=(A("predicate", "predicate", False),),
         results=(R("result"),), infer=same_as(0), syntax="$predicate, $value : type($value)",
         category="misc",
         constraints=(same_type("value", "result"), _bounded_value, _bounded_order,
                      _bounded_range, _div_by_value, _div_by_divisor, _div_by_every, _same_value,
                      _same_rank)))


# ---------------------------------------------------------------------------------- print_tko
_CONVERSION = re.compile(r"%%|%[-+ #0]*(\*|\d+)?(\.(\*|\d+))?[hlLqjzt]*[diouxXeEfFgGaAcspn]")


def format_conversions(s: str) -> int | None:
    """Number of printf conversions in `s` (None when a `%` starts no valid conversion)."""
    n, pos = 0, 0
    while (i := s.find("%", pos)) >= 0:
        m = _CONVERSION.match(s, i)
        if not m:
            return None
        n += m.group() != "%%"
        pos = m.end()
    return n


@rule("print_format", "format expressions")
def _print_format(o):
    n = format_conversions(o.str)
    if n != len(o.args):
        got = "an invalid '%' in the format" if n is None else f"{n} format expressions"
        return (f"the number of format expressions must match the number of arguments "
                f"(got {got} for {len(o.args)} arguments)")


op(OpDef("print_tko", operands=(O("args", variadic=True), O("token", optional=True)),
         attrs=(A("str", "string", False),), results=(R("result_token"),), category="misc",
         pure=False, infer=lambda t, a: [TOKEN],
         syntax="$str ?( , $args )? ?( token = $token )? ?( : type($args) )? -> type($result_token)",
         constraints=(all_tiles("args"), is_token("token", "result_token"), _print_format)))
