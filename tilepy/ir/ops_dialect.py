"""Rows of ops NVIDIA's cuda_tile dialect added after the 13.1 spec chapters (13.3:
atomic_red_view_tko, make_gather_scatter_view, make_strided_view, alloca; 13.4: fpowi,
insert, memory_fence_alias_tko, gdc_wait_tko, gdc_launch_dependents_tko).

Facts from NVIDIA's 13.4 release notes and dialect definitions (read, not copied):
- `fpowi`: element-wise source ** exponent, a float tile raised to a signed-integer tile
  (i1, i8, i16, i32) of the same shape; the result has the source's type.
- `insert`: the destination tile with the subtile number `indices` (per dimension, in units of
  the source's shape, read unsigned) replaced by `source`; the inverse of `extract`. The source
  shape divides the destination shape evenly.
- `memory_fence_alias_tko`: a token-ordered fence ordering accesses of the same memory through
  different virtual aliases; takes a token, gives a token.
- `gdc_wait_tko` / `gdc_launch_dependents_tko`: grid dependency control (programmatic dependent
  launch, sm_90+): wait for the preceding grid with acquire semantics / allow the dependent grid
  to start; no-ops below sm_90 and without programmatic dependent launch. Optional token in,
  token out.
- `atomic_red_view_tko`: an atomic reduction of a tile into the tile at `index` of a partition
  or strided view (no padding value), element by element, returning only a token; modes and types: add,
  and, or, xor, max, min, umax, umin on i32/i64, addf on f16/bf16/f32/f64 (no xchg); relaxed
  ordering only, tl_blk or device scope (NVIDIA's verifier refuses the others). Since 13.5 it
  carries `inbounds` as load/store_view_tko do (one bool per index; in bytecode from 13.5 on).
- `alloca`: memory for `num_elem` elements, a scalar pointer aligned to `alignment` bytes (a
  power of two, at least the element's size), valid in the block it is in, for the tile block
  only unless `global` is set.
"""
from __future__ import annotations

from ..types import (ARITH_FLOAT_TYPES, I1, I8, I16, I32, I64, TOKEN, GatherScatterViewType,
                     PartitionViewType, PtrType, StridedViewType, TileType, is_power_of_two)
from .constraints import (all_tiles, elem_in, is_token, same_elem, same_rank, same_shape, same_type,
                          is_tensor_view, scalar, scalar_int)
from .opdef import ATOMIC_MODE, MEMORY_ORDERING, MEMORY_SCOPE, A, O, OpDef, R, op, rule, same_as
from .ops_core import subtile_rules
from .ops_memory import _count_is_rank, _inbounds_count, _tile_of_view, scalar_pointer

FPOWI_EXPONENT_TYPES = (I1, I8, I16, I32)

op(OpDef("fpowi", operands=(O("source"), O("exponent")), results=(R("result"),),
         infer=same_as(0), elementwise=True, category="power",
         syntax="$source, $exponent : type($source), type($exponent)",
         constraints=(all_tiles("source", "exponent", "result"), same_shape("source", "exponent"),
                      elem_in(ARITH_FLOAT_TYPES, "source"), elem_in(FPOWI_EXPONENT_TYPES, "exponent"),
                      same_type("source", "result"))))


# -------------------------------------------------------------------------------------- insert
op(OpDef("insert", operands=(O("source"), O("destination"), O("indices", variadic=True)),
         results=(R("result"),), infer=same_as(1),
         syntax="$source, $destination[$indices] : type($source), type($destination)",
         constraints=(all_tiles("source", "destination", "result"),
                      same_rank("source", "destination"), same_elem("source", "destination"),
                      same_type("destination", "result"), scalar("indices"),
                      elem_in((I32,), "indices"),
                      *subtile_rules("insert", "destination", "source"))))


# --------------------------------------------------------------------- fences, grid dependency
op(OpDef("memory_fence_alias_tko", operands=(O("token"),), results=(R("result_token"),),
         infer=lambda t, a: [TOKEN], category="memory", pure=False,
         syntax="$token",
         constraints=(is_token("token", "result_token"),)))

for _name in ("gdc_wait_tko", "gdc_launch_dependents_tko"):
    op(OpDef(_name, operands=(O("token", optional=True),), results=(R("result_token"),),
             infer=lambda t, a: [TOKEN], category="memory", pure=False,
             syntax="?( token = $token )? -> type($result_token)",
             constraints=(is_token("token", "result_token"),)))


# ------------------------------------------------------------------------ atomic reduction
RED_MODE_TYPES = {**{m: (I32, I64) for m in ("and", "or", "xor", "add", "max", "min", "umax",
                                             "umin")}, "addf": ARITH_FLOAT_TYPES}


@rule("red_mode_type", "does not support element type")
def _red_mode_type(o):
    e, allowed = o.tile.type.elem, RED_MODE_TYPES.get(o.mode, ())
    if e not in allowed:
        return (f"mode {o.mode} does not support element type {e} "
                f"(supported: {', '.join(map(str, allowed)) or 'none: not a reduction'})")


@rule("red_view", "view must be a partition_view or strided_view")
def _red_view(o):
    if not isinstance(o.view.type, (PartitionViewType, StridedViewType)):
        return f"view must be a partition_view or strided_view (got {o.view.type})"


@rule("red_no_padding", "views with a padding_value are not supported")
def _red_no_padding(o):
    if o.view.type.padding_value is not None:
        return f"views with a padding_value are not supported (got {o.view.type})"


op(OpDef("atomic_red_view_tko", operands=(O("view"), O("index", variadic=True), O("tile"),
                                          O("token", optional=True)),
         attrs=(A("memory_ordering_semantics", MEMORY_ORDERING, False, allowed=("relaxed",)),
                A("memory_scope", MEMORY_SCOPE, False, allowed=("tl_blk", "device")),
                A("mode", ATOMIC_MODE, False), A("inbounds", "bools")),
         results=(R("result_token"),),
         category="atomic", pure=False, reads="view", writes="view",
         infer=lambda t, a: [TOKEN],
         syntax="$memory_ordering_semantics $memory_scope $view[$index], $mode, $tile "
                "?( token = $token )? ?( inbounds = $inbounds )? : type($tile), type($view) "
                "?( , type1($index) )? "
                "-> type($result_token)",
         constraints=(_red_view, _count_is_rank("view", "index", "indices"),
                      scalar_int("index"), same_type("index"), _tile_of_view("tile"),
                      _red_no_padding, _red_mode_type, is_token("token", "result_token"),
                      _inbounds_count)))


# ---------------------------------------------------------------- gather/scatter, strided views
def _view_of(kind, cls):
    @rule(f"{kind}_of", f"result must be a {kind} of")
    def check(o):
        s, r = o.tensor_view.type, o.result.type
        if not isinstance(r, cls) or r.view != s:
            return f"result must be a {kind} of {s} (got {r})"
    return check


for _kind, _cls in (("gather_scatter_view", GatherScatterViewType),
                    ("strided_view", StridedViewType)):
    op(OpDef(f"make_{_kind}", operands=(O("tensor_view"),), results=(R("result"),),
             syntax="$tensor_view : type($result)", category="view",
             constraints=(is_tensor_view("tensor_view"), _view_of(_kind, _cls))))


# ------------------------------------------------------------------------------------- alloca
_alloca_result = scalar_pointer("result", "alloca_result")


@rule("alloca_alignment", "alignment must be a power of two of at least the element size")
def _alloca_alignment(o):
    a, n, t = o.attrs["alignment"], o.attrs["num_elem"], o.result.type
    size = max(1, t.elem.pointee.bits // 8) if isinstance(getattr(t, "elem", None), PtrType) else 1
    if not is_power_of_two(a) or a < size or n < 0:
        return (f"alignment must be a power of two of at least the element size ({size} bytes) "
                f"and num_elem not negative (got alignment {a}, num_elem {n})")


op(OpDef("alloca", attrs=(A("num_elem", "int", False), A("alignment", "int", False),
                          A("global", "flag")), results=(R("result"),), category="memory",
         pure=False, syntax="num_elem = $num_elem, alignment = $alignment ?( global$global )? "
                            ": type($result)",
         constraints=(_alloca_result, _alloca_alignment)))
