"""Invalid instances of NVIDIA's 13.4 ops (ops_dialect.py; see negatives.py)."""
from __future__ import annotations

from ..types import I32, scalar_tile
from .negatives_base import first, neg, value
from .samples import _GV_T, _PV_RED, _PV_T, _TV, _VIEW_PARAMS

_TOK = "%k = make_token : token\n"
_POW = "%a = constant <f32: 1.5> : tile<4xf32>\n%e = constant <i32: 2> : tile<4xi32>\n"

# ------------------------------------------------------------------------------------- fpowi
neg("fpowi", "tiles(source,exponent,result)", _TOK + "%e = constant <i32: 2> : tile<4xi32>\n"
    "%r = fpowi %k, %e : token, tile<4xi32>")
neg("fpowi", "same_shape(source,exponent)", _POW + "%f = constant <i32: 2> : tile<2xi32>\n"
    "%r = fpowi %a, %f : tile<4xf32>, tile<2xi32>")
neg("fpowi", "elem_in(source)", "%a = constant <i32: 1> : tile<4xi32>\n"
    "%e = constant <i32: 2> : tile<4xi32>\n%r = fpowi %a, %e : tile<4xi32>, tile<4xi32>")
neg("fpowi", "elem_in(exponent)", _POW + "%f = constant <i64: 2> : tile<4xi64>\n"
    "%r = fpowi %a, %f : tile<4xf32>, tile<4xi64>")
neg("fpowi", "same_type(source,result)", _POW + "%r = fpowi %a, %e : tile<4xf32>, tile<4xi32>",
    mutate=lambda m: setattr(first(m, "fpowi").results[0], "type", scalar_tile(I32)))

# ------------------------------------------------------------------------------------ insert
_INS = ("%d = constant <f32: 0.0> : tile<8x4xf32>\n%s = constant <f32: 1.0> : tile<2x4xf32>\n"
        "%i = constant <i32: 1> : tile<i32>\n")
neg("insert", "tiles(source,destination,result)", _INS + _TOK +
    "%r = insert %k, %d[%i, %i] : token, tile<8x4xf32>")
neg("insert", "same_rank(source,destination)", _INS + "%v = constant <f32: 1.0> : tile<4xf32>\n"
    "%r = insert %v, %d[%i, %i] : tile<4xf32>, tile<8x4xf32>")
neg("insert", "same_elem(source,destination)", _INS + "%v = constant <f16: 1.0> : tile<2x4xf16>\n"
    "%r = insert %v, %d[%i, %i] : tile<2x4xf16>, tile<8x4xf32>")
neg("insert", "same_type(destination,result)", _INS + "%r = insert %s, %d[%i, %i] : tile<2x4xf32>, "
    "tile<8x4xf32>", mutate=lambda m: setattr(first(m, "insert").results[0], "type", scalar_tile(I32)))
neg("insert", "scalar(indices)", _INS + "%j = constant <i32: 1> : tile<2xi32>\n"
    "%r = insert %s, %d[%j, %i] : tile<2x4xf32>, tile<8x4xf32>")
neg("insert", "elem_in(indices)", _INS + "%j = constant <i64: 1> : tile<i64>\n"
    "%r = insert %s, %d[%j, %j] : tile<2x4xf32>, tile<8x4xf32>")
neg("insert", "insert_count", _INS + "%r = insert %s, %d[%i] : tile<2x4xf32>, tile<8x4xf32>")
neg("insert", "insert_divides", _INS + "%v = constant <f32: 1.0> : tile<16x4xf32>\n"
    "%r = insert %v, %d[%i, %i] : tile<16x4xf32>, tile<8x4xf32>")

# ------------------------------------------------------------------------ fence, grid control
neg("memory_fence_alias_tko", "token(token,result_token)",
    "%a = constant <f32: 1.0> : tile<f32>\n%r = memory_fence_alias_tko %a")
for _name in ("gdc_wait_tko", "gdc_launch_dependents_tko"):
    neg(_name, "token(token,result_token)",
        f"%a = constant <f32: 1.0> : tile<f32>\n%r = {_name} token = %a -> token")

# ------------------------------------------------------------------------- atomic reduction
_RED = (_TV + f"\n%pv = make_partition_view %tv : {_PV_RED}\n%i = constant <i32: 0> : tile<i32>\n"
        "%v = constant <f32: 1.0> : tile<16x64xf32>\n")
_RED_T = f"tile<16x64xf32>, {_PV_RED}, tile<i32> -> token"


def _red(rule, body, mutate=None):
    neg("atomic_red_view_tko", rule, body, _VIEW_PARAMS, mutate=mutate)


_red("red_view", _TV + "\n%i = constant <i32: 0> : tile<i32>\n%v = constant <f32: 1.0> : "
     "tile<16x64xf32>\n%r = atomic_red_view_tko relaxed device %tv[%i, %i], addf, %v : "
     "tile<16x64xf32>, tensor_view<?x64xf32, strides=[64,1]>, tile<i32> -> token")
_red("rank_count(index)", _RED + "%r = atomic_red_view_tko relaxed device %pv[%i], addf, %v : " + _RED_T)
_red("scalar_int(index)", _RED + "%j = constant <f32: 0.0> : tile<f32>\n"
     f"%r = atomic_red_view_tko relaxed device %pv[%j, %j], addf, %v : tile<16x64xf32>, {_PV_RED}, "
     "tile<f32> -> token")
_red("same_type(index)", _RED + "%j = constant <i64: 0> : tile<i64>\n"
     "%r = atomic_red_view_tko relaxed device %pv[%i, %i], addf, %v : " + _RED_T,
     mutate=lambda m: first(m, "atomic_red_view_tko").operands.__setitem__(2, value(m, "j")))
_red("view_tile", _RED + "%w = constant <f32: 1.0> : tile<8x64xf32>\n"
     f"%r = atomic_red_view_tko relaxed device %pv[%i, %i], addf, %w : tile<8x64xf32>, {_PV_RED}, "
     "tile<i32> -> token")
_red("inbounds_count", _RED + "%r = atomic_red_view_tko relaxed device %pv[%i, %i], addf, %v "
     "inbounds = [true] : " + _RED_T)
_red("red_no_padding", _TV + f"\n%pv = make_partition_view %tv : {_PV_T}\n"
     "%i = constant <i32: 0> : tile<i32>\n%v = constant <f32: 1.0> : tile<16x64xf32>\n"
     f"%r = atomic_red_view_tko relaxed device %pv[%i, %i], addf, %v : tile<16x64xf32>, {_PV_T}, "
     "tile<i32> -> token")
_red("red_mode_type", _RED + "%r = atomic_red_view_tko relaxed device %pv[%i, %i], xchg, %v : " + _RED_T)
_red("token(token,result_token)", _RED + "%r = atomic_red_view_tko relaxed device %pv[%i, %i], addf, "
     "%v token = %i : " + _RED_T)
_red("attr:memory_ordering_semantics", _RED + "%r = atomic_red_view_tko acq_rel device %pv[%i, %i], addf, "
     "%v : " + _RED_T)

# ----------------------------------------------------------- gather/scatter and strided views
_TV4 = "tensor_view<4xf32, strides=[1]>"
for _kind, _t in (("gather_scatter_view", f"gather_scatter_view<tile=(4), {_TV4}, sparse_dim=0>"),
                  ("strided_view", f"strided_view<tile=(4), traversal_strides=[2], {_TV4}>")):
    neg(f"make_{_kind}", "tensor_view(tensor_view)",
        f"%a = constant <f32: 1.0> : tile<4xf32>\n%v = make_{_kind} %a : {_t}")
    neg(f"make_{_kind}", f"{_kind}_of", _TV + f"\n%v = make_{_kind} %tv : "
        + _t.replace(_TV4, "tensor_view<?x64xf32, strides=[?,1]>").replace("(4)", "(4x4)")
        .replace("[2]", "[2,2]"), _VIEW_PARAMS)

_GV = _TV + f"\n%gv = make_gather_scatter_view %tv : {_GV_T}\n%c = constant <i32: 0> : tile<i32>\n"
for _op, _body in (("load_view_tko", "%t, %k = load_view_tko weak %gv[%r, %c] : {gv}, tile<4xi32>, "
                    "tile<i32> -> tile<8x32xf32>, token"),
                   ("store_view_tko", "%t = constant <f32: 0.0> : tile<8x32xf32>\n%k = store_view_tko "
                    "weak %t, %gv[%r, %c] : tile<8x32xf32>, {gv}, tile<4xi32>, tile<i32> -> token")):
    neg(_op, "gather_index", _GV + "%r = constant <i32: 0> : tile<4xi32>\n" + _body.format(gv=_GV_T),
        _VIEW_PARAMS)

# ------------------------------------------------------------------------------------- alloca
neg("alloca", "alloca_result", "%a = alloca num_elem = 4, alignment = 4 : tile<4xptr<f32>>")
neg("alloca", "alloca_alignment", "%a = alloca num_elem = 4, alignment = 2 : tile<ptr<f32>>")
_red("attr:memory_scope", _RED + "%r = atomic_red_view_tko relaxed sys %pv[%i, %i], addf, %v : " + _RED_T)
