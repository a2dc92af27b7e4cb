"""Rows of the memory ops: tokens and pointer loads/stores (8.6), atomics (8.10), views (8.11)."""
from __future__ import annotations

from ..types import (BF16, F16, F32, F64, I1, I32, I64, TOKEN, GatherScatterViewType,
                     PartitionViewType, PtrType, StridedViewType, TileType)
from .constraints import (member_types, all_tiles, elem_in, elem_is_ptr, is_tensor_view, is_token, same_type,
                          scalar_int)
from .opdef import (ATOMIC_MODE, MEMORY_ORDERING, MEMORY_SCOPE, A, O, OpDef, R, op, rule)

_TOKENS = ("token", "result_token")
_HINTS = "?( optimization_hints=$optimization_hints )?"


def _mem_attrs(orderings, scope_optional=True, hints=True):
    attrs = (A("memory_ordering_semantics", MEMORY_ORDERING, False, allowed=orderings),
             A("memory_scope", MEMORY_SCOPE, scope_optional))
    return attrs + ((A("optimization_hints", "hints"),) if hints else ())


_LOAD = _mem_attrs(("weak", "relaxed", "acquire"))
_STORE = _mem_attrs(("weak", "relaxed", "release"))
_ATOMIC = _mem_attrs(("relaxed", "acquire", "release", "acq_rel"), scope_optional=False,
                     hints=False)

# ------------------------------------------------------------------------------------ tokens
op(OpDef("make_token", results=(R("result"),), syntax=": type($result)",
         infer=lambda t, a: [TOKEN], category="memory", constraints=(is_token("result"),)))
op(OpDef("join_tokens", operands=(O("tokens", variadic=True),), results=(R("result"),),
         syntax="$tokens : type($result)", infer=lambda t, a: [TOKEN], category="memory",
         constraints=(is_token("tokens", "result"),)))


# -------------------------------------------------------------------------------------- views
def scalar_pointer(name: str, rule_id: str):
    @rule(rule_id, f"{name} must be a scalar pointer")
    def check(o):
        t = getattr(o, name).type
        if not (isinstance(t, TileType) and t.rank == 0 and isinstance(t.elem, PtrType)):
            return f"{name} must be a scalar pointer tile<ptr<E>> (got {t})"
    return check


_tv_base = scalar_pointer("base", "base_ptr")


@rule("base_pointee", "must match the view element type")
def _tv_pointee(o):
    t = o.result.type
    if o.base.type.elem.pointee != t.elem:
        return f"base pointee type {o.base.type.elem.pointee} must match the view element type {t.elem}"


@rule("dynamic_count", "dynamic shape and")
def _tv_dynamic(o):
    t = o.result.type
    nshape = sum(d is None for d in t.shape)
    nstride = sum(d is None for d in t.strides)
    if len(o.dynamicShape) != nshape or len(o.dynamicStrides) != nstride:
        return (f"expected {nshape} dynamic shape and {nstride} dynamic stride operands for {t} "
                f"(got {len(o.dynamicShape)} and {len(o.dynamicStrides)})")


op(OpDef("make_tensor_view", operands=(O("base"), O("dynamicShape", variadic=True),
                                       O("dynamicStrides", variadic=True)),
         results=(R("result"),), category="view",
         constraints=(is_tensor_view("result"), _tv_base, _tv_pointee, _tv_dynamic,
                      scalar_int("dynamicShape", "dynamicStrides"),
                      same_type("dynamicShape", "dynamicStrides"))))


@rule("partition_of", "result must be a partition_view of")
def _pv_of(o):
    s, r = o.tensor_view.type, o.result.type
    if not isinstance(r, PartitionViewType) or r.view != s:
        return f"result must be a partition_view of {s} (got {r})"


op(OpDef("make_partition_view", operands=(O("tensor_view"),), results=(R("result"),),
         syntax="$tensor_view : type($result)", category="view",
         constraints=(is_tensor_view("tensor_view"), _pv_of)))


def _is_partition(name):
    @rule(f"partition({name})", f"{name} must be a partition_view")
    def check(o):
        t = getattr(o, name).type
        if not isinstance(t, PartitionViewType):
            return f"{name} must be a partition_view (got {t})"
    return check


def _count_is_rank(view, values, what):
    @rule(f"rank_count({values})", "for the rank-")
    def check(o):
        v, n = getattr(o, view).type, len(member_types(o, values))
        if n != v.rank:
            return f"expected {v.rank} {what} for the rank-{v.rank} index space of {v} (got {n})"
    return check


def _tile_of_view(name):
    @rule("view_tile", "the tile type of the view")
    def check(o):
        v, t = o.view.type, getattr(o, name).type
        if t != v.tile_type():
            return f"{name} must be {v.tile_type()}, the tile type of the view (got {t})"
    return check


TILE_VIEWS = (PartitionViewType, GatherScatterViewType, StridedViewType)


@rule("tile_view(view)", "view must be a tile view")
def _is_tile_view(o):
    t = o.view.type
    if not isinstance(t, TILE_VIEWS):
        return f"view must be a tile view: partition_view, gather_scatter_view or strided_view (got {t})"


class _DenseIndices:
    """An op seen without the sparse index of a gather_scatter_view (the 1-d tile of element
    indices at sparse_dim): the rules for the other, 0-d, indices run on this."""
    def __init__(self, op):
        self._op, v = op, op.view.type
        self._skip = v.sparse_dim if isinstance(v, GatherScatterViewType) else None

    def operand_group(self, name):
        group = self._op.operand_group(name)
        if name == "index" and self._skip is not None and self._skip < len(group):
            return group[:self._skip] + group[self._skip + 1:]
        return group

    def __getattr__(self, name):
        return getattr(self._op, name)


def _dense(check):
    """check applied to the op's dense indices (same rule id and phrase)."""
    return rule(check.rule, check.phrase)(lambda o: check(_DenseIndices(o)))


@rule("gather_index", "must be a 1-d integer tile of the tile's extent")
def _gather_index(o):
    v = o.view.type
    if not isinstance(v, GatherScatterViewType) or v.sparse_dim >= len(o.index):
        return None
    t, n = o.index[v.sparse_dim].type, v.tile_shape[v.sparse_dim]
    if not (isinstance(t, TileType) and t.rank == 1 and t.shape[0] == n and
            not isinstance(t.elem, PtrType) and t.elem.is_int):
        return (f"index {v.sparse_dim} (the sparse dimension) must be a 1-d integer tile of the "
                f"tile's extent tile<{n}xiN> (got {t})")


@rule("inbounds_count", "inbounds needs one entry per index")
def _inbounds_count(o):
    flags = o.attrs.get("inbounds")
    if flags is not None and len(flags) != len(o.index):
        return f"inbounds needs one entry per index ({len(o.index)}, got {len(flags)})"


def _view_rules(tile_name):
    return (_is_tile_view, _count_is_rank("view", "index", "indices"),
            _dense(scalar_int("index")), _dense(same_type("index")), _gather_index,
            _tile_of_view(tile_name), is_token(*_TOKENS), _inbounds_count)


# NVIDIA 13.4: `inbounds = [true, false]`, per index: the tile at that index lies inside the
# tensor along that dimension (a promise: breaking it is undefined behavior).
_INBOUNDS = (A("inbounds", "bools"),)
_INBOUNDS_SYNTAX = "?( inbounds = $inbounds )?"


op(OpDef("load_view_tko", operands=(O("view"), O("index", variadic=True), O("token", optional=True)),
         attrs=_LOAD + _INBOUNDS, results=(R("tile"), R("result_token")), category="view",
         pure=False, reads="view", infer=lambda t, a: [t[0].tile_type(), TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $view[$index] "
                f"?( token = $token )? {_HINTS} {_INBOUNDS_SYNTAX} : type($view) "
                "?( , type1($index) )? "
                "-> type($tile), type($result_token)",
         constraints=_view_rules("tile")))
op(OpDef("store_view_tko", operands=(O("tile"), O("view"), O("index", variadic=True),
                                     O("token", optional=True)),
         attrs=_STORE + _INBOUNDS, results=(R("result_token"),), category="view", pure=False,
         writes="view", infer=lambda t, a: [TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $tile, $view[$index] "
                f"?( token = $token )? {_HINTS} {_INBOUNDS_SYNTAX} : type($tile), type($view) "
                "?( , type1($index) )? "
                "-> type($result_token)",
         constraints=_view_rules("tile")))

op(OpDef("get_index_space_shape", operands=(O("src"),), results=(R("result", variadic=True),),
         syntax="$src : type($src) -> type1($result)", category="view",
         constraints=(_is_partition("src"), _count_is_rank("src", "result", "results"),
                      scalar_int("result"), same_type("result"))))
op(OpDef("get_tensor_shape", operands=(O("src"),), results=(R("result", variadic=True),),
         syntax="$src : type($src) -> type1($result)", category="view",
         constraints=(is_tensor_view("src"), _count_is_rank("src", "result", "results"),
                      scalar_int("result"), same_type("result"))))


# ------------------------------------------------------------------------- pointers, memory
def _pointer_of(ptr_name, value_name):
    @rule("pointer_of", f"{ptr_name} must point to the element type of {value_name}")
    def check(o):
        p, v = getattr(o, ptr_name).type, getattr(o, value_name).type
        if v.elem != p.elem.pointee or v.shape != p.shape:
            return (f"{ptr_name} must point to the element type of {value_name} and have its "
                    f"shape (got {p} and {v})")
    return check


def _mask_of(ptr_name):
    @rule("mask", "mask must be a tile of i1 with the shape of")
    def check(o):
        m, ref = o.mask, getattr(o, ptr_name).type
        if m is not None and not (isinstance(m.type, TileType) and m.type.elem == I1
                                  and m.type.shape == ref.shape):
            return f"mask must be a tile of i1 with the shape of {ptr_name} {ref.shape_str()} (got {m.type})"
    return check


@rule("padding_type", "paddingValue must have the type of the result")
def _padding_type(o):
    p = o.paddingValue
    if p is not None and p.type != o.result.type:
        return f"paddingValue must have the type of the result {o.result.type} (got {p.type})"


@rule("padding_mask", "paddingValue needs a mask")
def _padding_mask(o):
    if o.paddingValue is not None and o.mask is None:
        return "paddingValue needs a mask (it gives the value of masked-out elements)"


op(OpDef("load_ptr_tko", operands=(O("source"), O("mask", optional=True),
                                   O("paddingValue", optional=True), O("token", optional=True)),
         attrs=_LOAD, results=(R("result"), R("result_token")), category="memory", pure=False,
         reads="source",
         infer=lambda t, a: [t[0].with_elem(t[0].elem.pointee), TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $source ?( , $mask )? "
                f"?( , $paddingValue )? ?( token = $token )? {_HINTS} : type($source) "
                "?( , type($mask) )? ?( , type($paddingValue) )? -> type($result), type($result_token)",
         constraints=(elem_is_ptr("source"), all_tiles("result"), _pointer_of("source", "result"),
                      _mask_of("source"), _padding_mask, _padding_type, is_token(*_TOKENS))))
op(OpDef("store_ptr_tko", operands=(O("destination"), O("value"), O("mask", optional=True),
                                    O("token", optional=True)),
         attrs=_STORE, results=(R("result_token"),), category="memory", pure=False,
         writes="destination",
         infer=lambda t, a: [TOKEN],
         syntax="$memory_ordering_semantics ?( $memory_scope )? $destination, $value ?( , $mask )? "
                f"?( token = $token )? {_HINTS} : type($destination), type($value) "
                "?( , type($mask) )? -> type($result_token)",
         constraints=(elem_is_ptr("destination"), all_tiles("value"),
                      _pointer_of("destination", "value"), _mask_of("destination"),
                      is_token(*_TOKENS))))


# ------------------------------------------------------------------------------------ atomics
op(OpDef("atomic_cas_tko", operands=(O("pointers"), O("cmp"), O("val"), O("mask", optional=True),
                                     O("token", optional=True)),
         attrs=_ATOMIC, results=(R("result"), R("result_token")), category="atomic",
         pure=False, reads="pointers", writes="pointers", infer=lambda t, a: [t[1], TOKEN],
         syntax="$memory_ordering_semantics $memory_scope $pointers, $cmp, $val ?( , $mask )? "
                "?( token = $token )? : type($pointers), type($cmp) ?( , type($mask) )? "
                "-> type($result), type($result_token)",
         constraints=(elem_is_ptr("pointers"), all_tiles("cmp", "val", "result"),
                      same_type("cmp", "val", "result"), elem_in((I32, I64, F32, F64), "cmp"),
                      _pointer_of("pointers", "cmp"), _mask_of("pointers"), is_token(*_TOKENS))))

# atomic_rmw_tko: element types each mode supports ("Supported data types by mode").
ATOMIC_MODE_TYPES = {**{m: (I32, I64) for m in ("and", "or", "xor", "add", "max", "min", "umax",
                                                "umin")},
                     "addf": (F16, BF16, F32, F64), "xchg": (I32, I64, F32, F64)}   # bf16: 13.3


def adds_to_bf16(op) -> bool:
    """Does `op` add atomically to bfloat16 memory (atomic_rmw_tko or atomic_red_view_tko in
    mode addf; dialect 13.3, sm_90 on in cuTile)?"""
    if op.attrs.get("mode") != "addf" or op.name not in ("atomic_rmw_tko", "atomic_red_view_tko"):
        return False
    update = op.arg if op.name == "atomic_rmw_tko" else op.tile
    return update.type.elem == BF16


@rule("atomic_mode_type", "does not support element type")
def _rmw_mode_type(o):
    e = o.arg.type.elem
    if e not in ATOMIC_MODE_TYPES[o.mode]:
        return (f"mode {o.mode} does not support element type {e} "
                f"(supported: {', '.join(map(str, ATOMIC_MODE_TYPES[o.mode]))})")


op(OpDef("atomic_rmw_tko", operands=(O("pointers"), O("arg"), O("mask", optional=True),
                                     O("token", optional=True)),
         attrs=_ATOMIC + (A("mode", ATOMIC_MODE, False),),
         results=(R("result"), R("result_token")), category="atomic", pure=False,
         reads="pointers", writes="pointers", infer=lambda t, a: [t[1], TOKEN],
         syntax="$memory_ordering_semantics $memory_scope $pointers, $mode, $arg ?( , $mask )? "
                "?( , token = $token )? : type($pointers), type($arg) ?( , type($mask) )? "
                "-> type($result), type($result_token)",
         constraints=(elem_is_ptr("pointers"), all_tiles("arg", "result"),
                      same_type("arg", "result"), _pointer_of("pointers", "arg"), _rmw_mode_type,
                      _mask_of("pointers"), is_token(*_TOKENS))))
