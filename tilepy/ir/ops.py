"""The op table: one `OpDef` row per Tile IR op (spec chapter 8).

Rows are built with a few helpers for the common shapes of ops (element-wise float/int,
conversions, terminators); ops with regions or unusual syntax have `syntax=None` and a custom
printer in `printer.py`. Adding an op is adding a row here (plus, where needed, its emitter
function in cuda_c/ and its custom syntax).
"""
from __future__ import annotations

from ..types import (ARITH_FLOAT_TYPES, E4M3, E5M2, F16, F32, F64, BF16, FLOAT_TYPES, I1, I8, I32,
                     I64, INT_TYPES, TF32, TOKEN, PartitionViewType, PtrType, TensorViewType,
                     TileType, TokenType, scalar_tile)
from .constraints import (all_tiles, elem_in, elem_is_ptr, same_elem,
                          same_rank, same_shape, same_type, scalar)
from .opdef import (CMP_ORDERING, CMP_PREDICATE, MEMORY_ORDERING, MEMORY_SCOPE, OVERFLOW, ROUNDING,
                    SIGNEDNESS, AttrSpec, EnumKind, OpDef, OperandSpec, ResultSpec)

OPS: dict[str, OpDef] = {}


def op(opdef: OpDef) -> OpDef:
    assert opdef.name not in OPS, opdef.name
    OPS[opdef.name] = opdef
    return opdef


def O(name, variadic=False, optional=False):
    return OperandSpec(name, variadic, optional)


def A(name, kind, optional=True):
    return AttrSpec(name, kind, optional)


def R(name, variadic=False):
    return ResultSpec(name, variadic)


def same_as(operand_index=0):
    return lambda types, attrs: [types[operand_index]]


# ------------------------------------------------------------------------ element-wise helpers
_FLOAT_MODIFIERS = {
    "rounding": (A("rounding_mode", ROUNDING), "?( rounding<$rounding_mode> )?"),
    "ftz": (A("flush_to_zero", "flag"), "?( flush_to_zero$flush_to_zero )?"),
    "nan": (A("propagate_nan", "flag"), "?( propagate_nan$propagate_nan )?"),
}


def float_op(name, arity, *modifiers, types=ARITH_FLOAT_TYPES):
    names = ("lhs", "rhs", "acc")[:arity] if arity > 1 else ("source",)
    if name == "atan2":
        names = ("x", "y")
    attrs = tuple(_FLOAT_MODIFIERS[m][0] for m in modifiers)
    mods = " ".join(_FLOAT_MODIFIERS[m][1] for m in modifiers)
    syntax = ", ".join(f"${n}" for n in names) + (f" {mods}" if mods else "") + " : type($result)"
    return op(OpDef(name, operands=tuple(O(n) for n in names), attrs=attrs, results=(R("result"),),
                    syntax=syntax, infer=same_as(0), elementwise=True, category="float",
                    constraints=(all_tiles(*names), same_shape(*names), same_elem(*names),
                                 elem_in(types, *names), same_type(names[0], "result"))))


def int_op(name, arity, signedness=False, overflow=False, types=INT_TYPES):
    names = ("lhs", "rhs")[:arity] if arity > 1 else ("source",)
    attrs, mods = [], []
    if signedness:
        attrs.append(A("signedness", SIGNEDNESS, optional=False))
        mods.append("$signedness")
    if overflow:
        attrs.append(A("overflow", OVERFLOW))
        mods.append("?( overflow<$overflow> )?")
    syntax = ", ".join(f"${n}" for n in names) + "".join(" " + m for m in mods) + " : type($result)"
    return op(OpDef(name, operands=tuple(O(n) for n in names), attrs=tuple(attrs),
                    results=(R("result"),), syntax=syntax, infer=same_as(0), elementwise=True,
                    category="integer",
                    constraints=(all_tiles(*names), same_shape(*names), same_elem(*names),
                                 elem_in(types, *names), same_type(names[0], "result"))))


# ------------------------------------------------------------------------------ floating point
float_op("addf", 2, "rounding", "ftz")
float_op("subf", 2, "rounding", "ftz")
float_op("mulf", 2, "rounding", "ftz")
float_op("divf", 2, "rounding", "ftz")
float_op("remf", 2)
float_op("fma", 3, "rounding", "ftz")
float_op("maxf", 2, "nan", "ftz")
float_op("minf", 2, "nan", "ftz")
float_op("pow", 2)
float_op("atan2", 2)
float_op("negf", 1)
float_op("absf", 1)
float_op("exp", 1)
float_op("exp2", 1, "ftz")
float_op("log", 1)
float_op("log2", 1)
float_op("sqrt", 1, "rounding", "ftz")
float_op("rsqrt", 1, "ftz")
float_op("tanh", 1, "rounding")
float_op("sin", 1)
float_op("cos", 1)
float_op("tan", 1)
float_op("sinh", 1)
float_op("cosh", 1)
float_op("floor", 1)
float_op("ceil", 1)

# ------------------------------------------------------------------------------------ integer
int_op("addi", 2, overflow=True)
int_op("subi", 2, overflow=True)
int_op("muli", 2, overflow=True)
int_op("mulhii", 2, signedness=True)
int_op("divi", 2, signedness=True)
OPS["divi"].attrs += (A("rounding", ROUNDING),)
OPS["divi"].syntax = "$lhs, $rhs $signedness ?( rounding<$rounding> )? : type($result)"
int_op("remi", 2, signedness=True)
int_op("maxi", 2, signedness=True)
int_op("mini", 2, signedness=True)
int_op("negi", 1, overflow=True)
int_op("absi", 1)
int_op("andi", 2)
int_op("ori", 2)
int_op("xori", 2)
int_op("shli", 2, overflow=True)
int_op("shri", 2, signedness=True)
OPS["andi"].category = "bitwise"


# ---------------------------------------------------------------------------------- compare
def _cmp_infer(types, attrs):
    return [types[0].with_elem(I1)]


def _result_i1(op):
    t = op.result.type
    if not (isinstance(t, TileType) and t.elem == I1):
        return f"result must have element type i1 (got {t})"


op(OpDef("cmpf", operands=(O("lhs"), O("rhs")),
         attrs=(A("comparison_predicate", CMP_PREDICATE, False),
                A("comparison_ordering", CMP_ORDERING, False)),
         results=(R("result"),), infer=_cmp_infer, elementwise=True,
         syntax="$comparison_predicate $comparison_ordering $lhs, $rhs : type($lhs) -> type($result)",
         constraints=(all_tiles("lhs", "rhs"), same_shape("lhs", "rhs", "result"),
                      same_elem("lhs", "rhs"), elem_in(ARITH_FLOAT_TYPES, "lhs"), _result_i1)))
op(OpDef("cmpi", operands=(O("lhs"), O("rhs")),
         attrs=(A("comparison_predicate", CMP_PREDICATE, False),
                A("signedness", SIGNEDNESS, False)),
         results=(R("result"),), infer=_cmp_infer, elementwise=True,
         syntax="$comparison_predicate $lhs, $rhs, $signedness : type($lhs) -> type($result)",
         constraints=(all_tiles("lhs", "rhs"), same_shape("lhs", "rhs", "result"),
                      same_elem("lhs", "rhs"), elem_in(INT_TYPES, "lhs"), _result_i1)))


def _select_cond(op):
    t = op.cond.type
    if not (isinstance(t, TileType) and t.elem == I1):
        return f"cond must be a tile of i1 (got {t})"


op(OpDef("select", operands=(O("cond"), O("val_if_true"), O("val_if_false")),
         results=(R("result"),), infer=same_as(1), elementwise=True,
         syntax="$cond, $val_if_true, $val_if_false : type($cond), type($result)",
         constraints=(all_tiles("cond", "val_if_true", "val_if_false"), _select_cond,
                      same_shape("cond", "val_if_true", "val_if_false", "result"),
                      same_elem("val_if_true", "val_if_false", "result"))))


# -------------------------------------------------------------------------------- conversions
def _convert_op(name, from_types, to_types, attrs=(), mods="", rule=None):
    def types_ok(o):
        s, r = o.source.type, o.result.type
        if s.elem not in from_types:
            return f"source must have element type {'|'.join(map(str, from_types))} (got {s.elem})"
        if r.elem not in to_types:
            return f"result must have element type {'|'.join(map(str, to_types))} (got {r.elem})"
        return rule(s.elem, r.elem) if rule else None
    return op(OpDef(name, operands=(O("source"),), attrs=attrs, results=(R("result"),),
                    syntax=f"$source{(' ' + mods) if mods else ''} : type($source) -> type($result)",
                    elementwise=True, category="conversion",
                    constraints=(all_tiles("source", "result"), same_shape("source", "result"),
                                 types_ok)))


def _wider(s, r):
    if r.bits <= s.bits:
        return f"result type {r} must be strictly wider than source type {s}"


def _narrower(s, r):
    if r.bits >= s.bits:
        return f"result type {r} must be strictly narrower than source type {s}"


def _different(s, r):
    if s == r:
        return f"source and result types must differ (got {s} -> {r})"


_SIGN = A("signedness", SIGNEDNESS, False)
_ROUND = A("rounding_mode", ROUNDING)
_convert_op("exti", INT_TYPES, INT_TYPES, (_SIGN,), "$signedness", _wider)
_convert_op("trunci", INT_TYPES, INT_TYPES, (A("overflow", OVERFLOW),),
            "?( overflow<$overflow> )?", _narrower)
_convert_op("ftof", FLOAT_TYPES, FLOAT_TYPES, (_ROUND,), "?( rounding<$rounding_mode> )?",
            _different)
_convert_op("ftoi", FLOAT_TYPES, INT_TYPES, (_SIGN, _ROUND),
            "$signedness ?( rounding<$rounding_mode> )?")
_convert_op("itof", INT_TYPES, FLOAT_TYPES, (_SIGN, _ROUND),
            "$signedness ?( rounding<$rounding_mode> )?")


def _bitcast_ok(o):
    s, r = o.source.type.elem, o.result.type.elem
    if isinstance(s, PtrType) or isinstance(r, PtrType):
        return "pointer types must use ptr_to_int/int_to_ptr, not bitcast"
    if s.bits != r.bits:
        return f"source and result element types must have the same bit width (got {s}, {r})"


op(OpDef("bitcast", operands=(O("source"),), results=(R("result"),), category="conversion",
         syntax="$source : type($source) -> type($result)", elementwise=True,
         constraints=(all_tiles("source", "result"), same_shape("source", "result"), _bitcast_ok)))


# ---------------------------------------------------------------------------------- core ops
def _constant_ok(o):
    v, t = o.value, o.result.type
    if v.elem != t.elem:
        return f"value and result must have the same element type (got {v.elem}, {t.elem})"
    if not v.is_splat and tuple(v.array.shape) != t.shape:
        return f"value and result must have the same shape (got {tuple(v.array.shape)}, {t.shape})"


op(OpDef("constant", attrs=(A("value", "dense", False),), results=(R("result"),),
         syntax="$value : type($result)", constraints=(all_tiles("result"), _constant_ok)))


def _iota_ok(o):
    t = o.result.type
    if t.rank != 1:
        return f"result must be a 1-d tile (got {t})"
    if isinstance(t.elem, PtrType) or not t.elem.is_int:
        return f"result must have an integer element type (got {t.elem})"
    if t.shape[0] - 1 > (1 << t.elem.bits) - 1:
        return f"{t.shape[0]} elements do not fit in {t.elem}"


op(OpDef("iota", results=(R("result"),), syntax=": type($result)", constraints=(_iota_ok,)))


def _grid_infer(types, attrs):
    return [scalar_tile(I32)] * 3


op(OpDef("get_tile_block_id", results=(R("blockId_x"), R("blockId_y"), R("blockId_z")),
         syntax=": type($blockId_x)", infer=_grid_infer))
op(OpDef("get_num_tile_blocks", results=(R("gridSize_x"), R("gridSize_y"), R("gridSize_z")),
         syntax=": type($gridSize_x)", infer=_grid_infer))


def _broadcast_ok(o):
    s, r = o.source.type, o.result.type
    for i, (a, b) in enumerate(zip(s.shape, r.shape)):
        if a != b and a != 1:
            return (f"source dimension {i} must be 1 or equal the result's "
                    f"(got {s.shape_str()} -> {r.shape_str()})")


op(OpDef("broadcast", operands=(O("source"),), results=(R("result"),),
         syntax="$source : type($source) -> type($result)",
         constraints=(all_tiles("source", "result"), same_elem("source", "result"),
                      same_rank("source", "result"), _broadcast_ok)))


def _reshape_ok(o):
    s, r = o.source.type, o.result.type
    if s.numel != r.numel:
        return (f"source and result must have the same number of elements "
                f"(got {s.shape_str()} with {s.numel}, {r.shape_str()} with {r.numel})")


op(OpDef("reshape", operands=(O("source"),), results=(R("result"),),
         syntax="$source : type($source) -> type($result)",
         constraints=(all_tiles("source", "result"), same_elem("source", "result"), _reshape_ok)))


def _permute_infer(types, attrs):
    s = types[0]
    return [s.with_shape(tuple(s.shape[p] for p in attrs["permutation"]))]


def _permute_ok(o):
    s, r, perm = o.source.type, o.result.type, tuple(o.permutation)
    if sorted(perm) != list(range(s.rank)):
        return f"permutation must be a permutation of 0..{s.rank - 1} (got {list(perm)})"
    want = tuple(s.shape[p] for p in perm)
    if r.shape != want:
        return f"result shape must be {want} for permutation {list(perm)} (got {r.shape})"


op(OpDef("permute", operands=(O("source"),), attrs=(A("permutation", "ints", False),),
         results=(R("result"),), infer=_permute_infer,
         syntax="$source $permutation : type($source) -> type($result)",
         constraints=(all_tiles("source", "result"), same_elem("source", "result"),
                      same_rank("source", "result"), _permute_ok)))


def _cat_infer(types, attrs):
    a, b, d = types[0], types[1], attrs["dim"]
    shape = list(a.shape)
    shape[d] = a.shape[d] + b.shape[d]
    return [a.with_shape(shape)]


def _cat_ok(o):
    a, b, r, d = o.lhs.type, o.rhs.type, o.result.type, o.dim
    if not 0 <= d < a.rank:
        return f"dim must be in [0, {a.rank}) (got {d})"
    for i in range(a.rank):
        if i != d and a.shape[i] != b.shape[i]:
            return f"lhs and rhs must have the same shape except in dim {d} (got {a.shape}, {b.shape})"
    if r.shape[d] != a.shape[d] + b.shape[d]:
        return f"result dim {d} must be {a.shape[d] + b.shape[d]} (got {r.shape[d]})"


op(OpDef("cat", operands=(O("lhs"), O("rhs")), attrs=(A("dim", "int", False),),
         results=(R("result"),), infer=_cat_infer,
         syntax="$lhs, $rhs dim = $dim : type($lhs), type($rhs) -> type($result)",
         constraints=(all_tiles("lhs", "rhs", "result"), same_rank("lhs", "rhs", "result"),
                      same_elem("lhs", "rhs", "result"), _cat_ok)))


def _extract_ok(o):
    s, r = o.source.type, o.result.type
    if len(o.indices) != s.rank:
        return f"expected {s.rank} indices for a rank-{s.rank} source (got {len(o.indices)})"
    for i, (a, b) in enumerate(zip(s.shape, r.shape)):
        if a % b:
            return f"result shape must divide the source shape evenly (dim {i}: {b} into {a})"


op(OpDef("extract", operands=(O("source"), O("indices", variadic=True)), results=(R("result"),),
         syntax="$source[$indices] : type($source) -> type($result)",
         constraints=(all_tiles("source", "result"), same_rank("source", "result"),
                      same_elem("source", "result"), scalar("indices"), elem_in((I32,), "indices"),
                      _extract_ok)))


def _offset_ok(o):
    if not isinstance(o.ptr.type.elem, PtrType):
        return f"ptr must be a tile of pointers (got {o.ptr.type})"


op(OpDef("offset", operands=(O("ptr"), O("offset")), results=(R("result"),), infer=same_as(0),
         syntax="$ptr, $offset : type($ptr), type($offset) -> type($result)", elementwise=True,
         constraints=(all_tiles("ptr", "offset"), _offset_ok, same_shape("ptr", "offset", "result"),
                      same_type("ptr", "result"), elem_in(INT_TYPES, "offset"))))


# mmaf: supported (input, accumulator) element type pairs (spec 8.3.13 table).
MMAF_TYPES = {E4M3: (F16, F32), E5M2: (F16, F32), F16: (F16, F32), BF16: (F32,), TF32: (F32,),
              F32: (F32,), F64: (F64,)}


def _mma_shapes(o):
    a, b, c = o.lhs.type, o.rhs.type, o.acc.type
    if a.rank not in (2, 3):
        return f"lhs, rhs and acc must be 2-d or 3-d (batched) tiles (got rank {a.rank})"
    *ba, m, k = a.shape
    *bb, k2, n = b.shape
    *bc, m2, n2 = c.shape
    if k != k2 or m != m2 or n != n2 or not (ba == bb == bc):
        return (f"shapes must be a valid matrix multiplication: lhs MxK, rhs KxN, acc MxN "
                f"(got {a.shape_str()}, {b.shape_str()}, {c.shape_str()})")


def _mmaf_types(o):
    a, c = o.lhs.type.elem, o.acc.type.elem
    allowed = MMAF_TYPES.get(a)
    if allowed is None:
        return f"lhs element type {a} is not supported by mmaf"
    if c not in allowed:
        return (f"{a} inputs accumulate into {' or '.join(map(str, allowed))} "
                f"(got acc element type {c})")


op(OpDef("mmaf", operands=(O("lhs"), O("rhs"), O("acc")), results=(R("result"),), infer=same_as(2),
         syntax="$lhs, $rhs, $acc : type($lhs), type($rhs), type($acc)",
         constraints=(all_tiles("lhs", "rhs", "acc"), same_type("acc", "result"),
                      same_elem("lhs", "rhs"), same_rank("lhs", "rhs", "acc"), _mma_shapes,
                      _mmaf_types)))
op(OpDef("mmai", operands=(O("lhs"), O("rhs"), O("acc")),
         attrs=(A("signedness_lhs", SIGNEDNESS, False), A("signedness_rhs", SIGNEDNESS, False)),
         results=(R("result"),), infer=same_as(2),
         syntax="$lhs, $rhs, $acc $signedness_lhs $signedness_rhs : type($lhs), type($rhs), type($acc)",
         constraints=(all_tiles("lhs", "rhs", "acc"), same_type("acc", "result"),
                      elem_in((I8,), "lhs", "rhs"), elem_in((I32,), "acc"),
                      same_rank("lhs", "rhs", "acc"), _mma_shapes)))


# ------------------------------------------------------------------------------ control flow
def _term(name, category="control"):
    return op(OpDef(name, operands=(O("operands", variadic=True),), terminator=True,
                    syntax="?( $operands : type($operands) )?", category=category, pure=False))


_term("yield")
_term("continue")
_term("break")
_term("return")

op(OpDef("for", operands=(O("lowerBound"), O("upperBound"), O("step"),
                          O("initValues", variadic=True)),
         attrs=(A("unsignedCmp", "flag"),), results=(R("resultValues", variadic=True),),
         regions=("body",), category="control", pure=False,
         constraints=(scalar("lowerBound", "upperBound", "step"),
                      same_type("lowerBound", "upperBound", "step"),
                      elem_in(INT_TYPES, "lowerBound"))))
op(OpDef("if", operands=(O("condition"),), results=(R("results", variadic=True),),
         regions=("thenRegion", "elseRegion"), category="control", pure=False,
         constraints=(elem_in((I1,), "condition"), all_tiles("condition"))))
op(OpDef("loop", operands=(O("initValues", variadic=True),),
         results=(R("resultValues", variadic=True),), regions=("body",), category="control",
         pure=False))
op(OpDef("assert", operands=(O("condition"),), attrs=(A("message", "string", False),),
         syntax="$condition, $message : type($condition)", category="control", pure=False,
         constraints=(all_tiles("condition"), elem_in((I1,), "condition"))))


def _reduce_infer(types, attrs):
    d = attrs["dim"]
    return [t.with_shape(t.shape[:d] + t.shape[d + 1:]) for t in types]


op(OpDef("reduce", operands=(O("operands", variadic=True),),
         attrs=(A("dim", "int", False), A("identities", "identities", False)),
         results=(R("results", variadic=True),), regions=("body",), infer=_reduce_infer,
         constraints=(all_tiles("operands"), same_shape("operands"))))


def _scan_infer(types, attrs):
    return list(types)


op(OpDef("scan", operands=(O("operands", variadic=True),),
         attrs=(A("dim", "int", False), A("reverse", "bool", False),
                A("identities", "identities", False)),
         results=(R("results", variadic=True),), regions=("body",), infer=_scan_infer,
         constraints=(all_tiles("operands"), same_shape("operands"))))

op(OpDef("entry", attrs=(A("sym_name", "symbol", False), A("optimization_hints", "hints")),
         regions=("body",), category="core", pure=False))


# ------------------------------------------------------------------------------------ memory
op(OpDef("make_token", results=(R("result"),), syntax=": type($result)",
         infer=lambda t, a: [TOKEN], category="memory"))
op(OpDef("join_tokens", operands=(O("tokens", variadic=True),), results=(R("result"),),
         syntax="$tokens : type($result)", infer=lambda t, a: [TOKEN], category="memory"))


# -------------------------------------------------------------------------------------- views
def _tv_ok(o):
    t = o.result.type
    if not isinstance(t, TensorViewType):
        return f"result must be a tensor_view (got {t})"
    b = o.base.type
    if not (isinstance(b, TileType) and b.rank == 0 and isinstance(b.elem, PtrType)):
        return f"base must be a scalar pointer tile<ptr<E>> (got {b})"
    if b.elem.pointee != t.elem:
        return f"base pointee type {b.elem.pointee} must match the view element type {t.elem}"
    nshape = sum(1 for d in t.shape if d is None)
    nstride = sum(1 for d in t.strides if d is None)
    if len(o.dynamicShape) != nshape or len(o.dynamicStrides) != nstride:
        return (f"expected {nshape} dynamic shape and {nstride} dynamic stride operands for {t} "
                f"(got {len(o.dynamicShape)} and {len(o.dynamicStrides)})")


op(OpDef("make_tensor_view", operands=(O("base"), O("dynamicShape", variadic=True),
                                       O("dynamicStrides", variadic=True)),
         results=(R("result"),), category="view",
         constraints=(scalar("dynamicShape", "dynamicStrides"),
                      same_elem("dynamicShape", "dynamicStrides"),
                      elem_in(INT_TYPES, "dynamicShape", "dynamicStrides"), _tv_ok)))


def _pv_ok(o):
    s, r = o.tensor_view.type, o.result.type
    if not isinstance(s, TensorViewType):
        return f"tensor_view must be a tensor_view (got {s})"
    if not isinstance(r, PartitionViewType) or r.view != s:
        return f"result must be a partition_view of {s} (got {r})"


op(OpDef("make_partition_view", operands=(O("tensor_view"),), results=(R("result"),),
         syntax="$tensor_view : type($result)", category="view", constraints=(_pv_ok,)))


def _view_index_ok(o):
    v = o.view.type
    if not isinstance(v, PartitionViewType):
        return f"view must be a partition_view (got {v})"
    if len(o.index) != v.rank:
        return f"expected {v.rank} indices for the rank-{v.rank} index space of {v} (got {len(o.index)})"


def _load_view_ok(o):
    v, t = o.view.type, o.tile.type
    if isinstance(v, PartitionViewType) and t != v.tile_type():
        return f"result must be {v.tile_type()}, the tile type of the view (got {t})"


def _store_view_ok(o):
    v, t = o.view.type, o.tile.type
    if isinstance(v, PartitionViewType) and t != v.tile_type():
        return f"tile must be {v.tile_type()}, the tile type of the view (got {t})"


def _token_ok(o):
    tok = o.token
    if tok is not None and not isinstance(tok.type, TokenType):
        return f"token must be a token (got {tok.type})"


_MEM_ATTRS = (A("memory_ordering_semantics", MEMORY_ORDERING, False), A("memory_scope", MEMORY_SCOPE),
              A("optimization_hints", "hints"))
op(OpDef("load_view_tko", operands=(O("view"), O("index", variadic=True), O("token", optional=True)),
         attrs=_MEM_ATTRS, results=(R("tile"), R("result_token")), category="view", pure=False,
         infer=lambda t, a: [t[0].tile_type(), TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $view[$index] "
                "?( token = $token )? : type($view), type1($index) -> type($tile), type($result_token)",
         constraints=(_view_index_ok, scalar("index"), elem_in(INT_TYPES, "index"),
                      _load_view_ok, _token_ok)))
op(OpDef("store_view_tko", operands=(O("tile"), O("view"), O("index", variadic=True),
                                     O("token", optional=True)),
         attrs=_MEM_ATTRS, results=(R("result_token"),), category="view", pure=False,
         infer=lambda t, a: [TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $tile, $view[$index] "
                "?( token = $token )? : type($tile), type($view), type1($index) -> type($result_token)",
         constraints=(_view_index_ok, scalar("index"), elem_in(INT_TYPES, "index"),
                      _store_view_ok, _token_ok)))


def _shape_query_ok(o):
    if not o.results:
        return "expected one result per dimension"
    for r in o.results:
        if not (isinstance(r.type, TileType) and r.type.rank == 0 and r.type.elem in INT_TYPES):
            return f"results must be 0-d integer tiles (got {r.type})"


op(OpDef("get_index_space_shape", operands=(O("src"),), results=(R("result", variadic=True),),
         syntax="$src : type($src) -> type1($result)", category="view",
         constraints=(_shape_query_ok,)))
op(OpDef("get_tensor_shape", operands=(O("src"),), results=(R("result", variadic=True),),
         syntax="$src : type($src) -> type1($result)", category="view",
         constraints=(_shape_query_ok,)))


# ------------------------------------------------------------------------- pointers, memory
def _ptr_of(ptr_name, value_name):
    def member(o, name):     # a result named "result" is shadowed by Operation.result
        return o.result_group(name)[0] if o.opdef.member_kind(name) == "result" else getattr(o, name)

    def check(o):
        p, v = member(o, ptr_name).type, member(o, value_name).type
        if not (isinstance(p, TileType) and isinstance(p.elem, PtrType)):
            return f"{ptr_name} must be a tile of pointers (got {p})"
        if not isinstance(v, TileType) or v.elem != p.elem.pointee or v.shape != p.shape:
            return (f"{ptr_name} must point to the element type of {value_name} and have its "
                    f"shape (got {p} and {v})")
    return check


def _mask_ok(o):
    m = o.mask
    if m is not None:
        ref = o.operands[0].type
        if not (isinstance(m.type, TileType) and m.type.elem == I1 and m.type.shape == ref.shape):
            return f"mask must be a tile of i1 with the shape of the pointers {ref.shape_str()} (got {m.type})"


op(OpDef("load_ptr_tko", operands=(O("source"), O("mask", optional=True),
                                   O("paddingValue", optional=True), O("token", optional=True)),
         attrs=_MEM_ATTRS, results=(R("result"), R("result_token")), category="memory", pure=False,
         infer=lambda t, a: [t[0].with_elem(t[0].elem.pointee), TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $source ?( , $mask )? "
                "?( , $paddingValue )? ?( token = $token )? : type($source) ?( , type($mask) )? "
                "?( , type($paddingValue) )? -> type($result), type($result_token)",
         constraints=(_ptr_of("source", "result"), _mask_ok, _token_ok)))
op(OpDef("store_ptr_tko", operands=(O("destination"), O("value"), O("mask", optional=True),
                                    O("token", optional=True)),
         attrs=_MEM_ATTRS, results=(R("result_token"),), category="memory", pure=False,
         infer=lambda t, a: [TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $destination, $value ?( , $mask )? "
                "?( token = $token )? : type($destination), type($value) ?( , type($mask) )? "
                "-> type($result_token)",
         constraints=(_ptr_of("destination", "value"), _mask_ok, _token_ok)))

ATOMIC_MODE = EnumKind("AtomicRMWMode", ("and", "or", "xor", "add", "addf", "max", "min", "umax",
                                         "umin", "xchg"))
_ATOMIC_ATTRS = (A("memory_ordering_semantics", MEMORY_ORDERING, False),
                 A("memory_scope", MEMORY_SCOPE, False))
op(OpDef("atomic_cas_tko", operands=(O("pointers"), O("cmp"), O("val"), O("mask", optional=True),
                                     O("token", optional=True)),
         attrs=_ATOMIC_ATTRS, results=(R("result"), R("result_token")), category="atomic",
         pure=False, infer=lambda t, a: [t[1], TOKEN],
         syntax="$memory_ordering_semantics $memory_scope $pointers, $cmp, $val ?( , $mask )? "
                "?( token = $token )? : type($pointers), type($cmp) ?( , type($mask) )? "
                "-> type($result), type($result_token)",
         constraints=(_ptr_of("pointers", "cmp"), same_type("cmp", "val", "result"),
                      elem_in((I32, I64, F32, F64), "cmp"), _mask_ok, _token_ok)))
op(OpDef("atomic_rmw_tko", operands=(O("pointers"), O("arg"), O("mask", optional=True),
                                     O("token", optional=True)),
         attrs=_ATOMIC_ATTRS + (A("mode", ATOMIC_MODE, False),),
         results=(R("result"), R("result_token")), category="atomic", pure=False,
         infer=lambda t, a: [t[1], TOKEN],
         syntax="$memory_ordering_semantics $memory_scope $pointers, $mode, $arg ?( , $mask )? "
                "?( token = $token )? : type($pointers), type($arg) ?( , type($mask) )? "
                "-> type($result), type($result_token)",
         constraints=(_ptr_of("pointers", "arg"), same_type("arg", "result"), _mask_ok,
                      _token_ok)))


def _ptr_cast(name, src_ok, dst_ok, what):
    def check(o):
        s, r = o.source.type, o.result.type
        if s.shape != r.shape:
            return f"source and result must have the same shape (got {s.shape_str()}, {r.shape_str()})"
        if not src_ok(s.elem):
            return f"source must be {what[0]} (got {s})"
        if not dst_ok(r.elem):
            return f"result must be {what[1]} (got {r})"
    return op(OpDef(name, operands=(O("source"),), results=(R("result"),), category="conversion",
                    syntax="$source : type($source) -> type($result)", elementwise=True,
                    constraints=(all_tiles("source", "result"), check)))


_is_ptr = lambda e: isinstance(e, PtrType)  # noqa: E731
_ptr_cast("int_to_ptr", lambda e: e == I64, _is_ptr, ("a tile of i64", "a tile of pointers"))
_ptr_cast("ptr_to_int", _is_ptr, lambda e: e == I64, ("a tile of pointers", "a tile of i64"))
_ptr_cast("ptr_to_ptr", _is_ptr, _is_ptr, ("a tile of pointers", "a tile of pointers"))


def _packing(o):
    s, r = o.source.type, o.result.type
    if s.rank != 1 or r.rank != 1:
        return f"source and result must be 1-d tiles (got {s}, {r})"
    if s.numel * s.elem.bits != r.numel * r.elem.bits:
        return (f"source and result must hold the same number of bytes "
                f"(got {s.numel * s.elem.bits // 8} and {r.numel * r.elem.bits // 8})")


op(OpDef("pack", operands=(O("source"),), results=(R("result"),),
         syntax="$source : type($source) -> type($result)",
         constraints=(all_tiles("source", "result"), elem_in((I8,), "result"), _packing)))
op(OpDef("unpack", operands=(O("source"),), results=(R("result"),),
         syntax="$source : type($source) -> type($result)",
         constraints=(all_tiles("source", "result"), elem_in((I8,), "source"), _packing)))

# ---------------------------------------------------------------------------- module items
op(OpDef("module", attrs=(A("sym_name", "symbol", False),), regions=("body",), pure=False))
op(OpDef("global", attrs=(A("sym_name", "symbol", False), A("value", "dense", False),
                          A("alignment", "int")), pure=False))
op(OpDef("get_global", attrs=(A("name", "symbol", False),), results=(R("result"),),
         syntax="$name : type($result)",
         constraints=(elem_is_ptr("result"), scalar("result"))))

# ---------------------------------------------------------------------------- miscellaneous
op(OpDef("assume", operands=(O("value"),), attrs=(A("predicate", "predicate", False),),
         results=(R("result"),), infer=same_as(0), syntax="$predicate, $value : type($value)",
         constraints=(same_type("value", "result"),)))
op(OpDef("print_tko", operands=(O("args", variadic=True), O("token", optional=True)),
         attrs=(A("str", "string", False),), results=(R("result_token"),), category="misc",
         pure=False, infer=lambda t, a: [TOKEN],
         syntax="$str ?( , $args )? ?( token = $token )? ?( : type($args) )? -> type($result_token)",
         constraints=(all_tiles("args"), _token_ok)))
