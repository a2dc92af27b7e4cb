"""Invalid instances of the core, memory, view and control-flow ops (see negatives.py)."""
from __future__ import annotations

from ..types import I32, scalar_tile
from .negatives_base import first, neg, value
from .ops import OPS
from .samples import _PTR, _PTRS, _PV, _PV_T, _TV, _VIEW_PARAMS

_TOK = "%k = make_token : token\n"
_F4 = "%a = constant <f32: 1.0> : tile<4xf32>\n"

# ------------------------------------------------------------------------------------- core
neg("constant", "tiles(result)", "%c = constant <f32: 1.0> : token")
neg("constant", "constant_elem", "%c = constant <f32: 1.0> : tile<4xf16>")
neg("constant", "constant_shape", "%c = constant <f32: [1.0, 2.0]> : tile<4xf32>")
neg("iota", "tiles(result)", "%r = iota : token")
neg("iota", "elem_in(result)", "%r = iota : tile<8xf32>")
neg("iota", "iota_rank", "%r = iota : tile<2x4xi32>")
neg("iota", "iota_fits", "%r = iota : tile<256xi8>")
neg("get_tile_block_id", "grid_i32", "%x, %y, %z = get_tile_block_id : tile<i64>")
neg("get_num_tile_blocks", "grid_i32", "%x, %y, %z = get_num_tile_blocks : tile<i16>")
neg("broadcast", "tiles(source,result)", _TOK + "%r = broadcast %k : token -> tile<4xf32>")
neg("broadcast", "same_elem(source,result)", _F4 + "%r = broadcast %a : tile<4xf32> -> tile<4xf16>")
neg("broadcast", "same_rank(source,result)", _F4 + "%r = broadcast %a : tile<4xf32> -> tile<2x4xf32>")
neg("broadcast", "broadcast_dims", _F4 + "%r = broadcast %a : tile<4xf32> -> tile<8xf32>")
neg("reshape", "tiles(source,result)", _TOK + "%r = reshape %k : token -> tile<4xf32>")
neg("reshape", "same_elem(source,result)", _F4 + "%r = reshape %a : tile<4xf32> -> tile<2x2xi32>")
neg("reshape", "reshape_numel", _F4 + "%r = reshape %a : tile<4xf32> -> tile<2x4xf32>")
_A3 = "%a = constant <f32: 1.0> : tile<2x4x8xf32>\n"
neg("permute", "tiles(source,result)", _TOK + "%r = permute %k [0] : token -> tile<4xf32>")
neg("permute", "same_elem(source,result)", _A3 + "%r = permute %a [2, 0, 1] : tile<2x4x8xf32> -> "
                                                 "tile<8x2x4xf16>")
neg("permute", "same_rank(source,result)", _A3 + "%r = permute %a [2, 0, 1] : tile<2x4x8xf32> -> "
                                                 "tile<64xf32>")
neg("permute", "permutation", _A3 + "%r = permute %a [2, 0, 0] : tile<2x4x8xf32> -> tile<8x2x2xf32>")
neg("permute", "permute_shape", _A3 + "%r = permute %a [2, 0, 1] : tile<2x4x8xf32> -> tile<2x4x8xf32>")
_CAT = "%a = constant <f32: 1.0> : tile<2x4xf32>\n"
neg("cat", "tiles(lhs,rhs,result)", _CAT + _TOK + "%r = cat %a, %k dim = 0 : tile<2x4xf32>, token -> "
                                                  "tile<4x4xf32>")
neg("cat", "same_rank(lhs,rhs,result)", _CAT + "%r = cat %a, %a dim = 0 : tile<2x4xf32>, tile<2x4xf32> -> "
                                               "tile<16xf32>")
neg("cat", "same_elem(lhs,rhs,result)", _CAT + "%r = cat %a, %a dim = 0 : tile<2x4xf32>, tile<2x4xf32> -> "
                                               "tile<4x4xf16>")
neg("cat", "cat_dim", _CAT + "%r = cat %a, %a dim = 2 : tile<2x4xf32>, tile<2x4xf32> -> tile<4x4xf32>")
neg("cat", "cat_shapes", _CAT + "%b = constant <f32: 1.0> : tile<2x8xf32>\n"
    "%r = cat %a, %b dim = 0 : tile<2x4xf32>, tile<2x8xf32> -> tile<4x4xf32>")
neg("cat", "cat_result", _CAT + "%r = cat %a, %a dim = 1 : tile<2x4xf32>, tile<2x4xf32> -> tile<4x4xf32>")
_EX = "%t = constant <f32: 0.0> : tile<32x8xf32>\n%i = constant <i32: 1> : tile<i32>\n"
neg("extract", "tiles(source,result)", _TOK + "%i = constant <i32: 1> : tile<i32>\n%r = extract %k[%i] : "
                                              "token -> tile<4xf32>")
neg("extract", "same_rank(source,result)", _EX + "%r = extract %t[%i, %i] : tile<32x8xf32> -> tile<8xf32>")
neg("extract", "same_elem(source,result)", _EX + "%r = extract %t[%i, %i] : tile<32x8xf32> -> tile<4x2xf16>")
neg("extract", "scalar(indices)", _EX + "%v = constant <i32: 1> : tile<2xi32>\n"
    "%r = extract %t[%v, %i] : tile<32x8xf32> -> tile<4x2xf32>")
neg("extract", "elem_in(indices)", _EX + "%j = constant <i64: 1> : tile<i64>\n"
    "%r = extract %t[%j, %i] : tile<32x8xf32> -> tile<4x2xf32>")
neg("extract", "extract_count", _EX + "%r = extract %t[%i] : tile<32x8xf32> -> tile<4x2xf32>")
neg("extract", "extract_divides", _EX + "%r = extract %t[%i, %i] : tile<32x8xf32> -> tile<64x2xf32>")
_OFF = "%o = constant <i32: 1> : tile<i32>\n"
neg("offset", "tiles(ptr,offset,result)", _TOK + "%r = offset %p, %k : tile<ptr<f32>>, token -> "
                                                 "tile<ptr<f32>>", _PTR)
neg("offset", "ptr(ptr)", _OFF + "%r = offset %o, %o : tile<i32>, tile<i32> -> tile<i32>")
neg("offset", "elem_in(offset)", "%o = constant <f32: 1.0> : tile<f32>\n"
    "%r = offset %p, %o : tile<ptr<f32>>, tile<f32> -> tile<ptr<f32>>", _PTR)
neg("offset", "same_shape(ptr,offset,result)", "%o = constant <i32: 1> : tile<4xi32>\n"
    "%r = offset %p, %o : tile<ptr<f32>>, tile<4xi32> -> tile<ptr<f32>>", _PTR)
neg("offset", "same_type(ptr,result)", _OFF + "%r = offset %p, %o : tile<ptr<f32>>, tile<i32> -> "
                                              "tile<ptr<f16>>", _PTR)


def _mma(op, rule, a, b, c, mods=""):
    decl = "\n".join(f"%{n} = " + ("make_token : token" if t == "token" else
                                   f"constant <{t.split('x')[-1]}: 0> : tile<{t}>")
                     for n, t in (("a", a), ("b", b), ("c", c)))
    ty = ", ".join("token" if t == "token" else f"tile<{t}>" for t in (a, b, c))
    neg(op, rule, f"{decl}\n%r = {op} %a, %b, %c{mods} : {ty}")


_mma("mmaf", "tiles(lhs,rhs,acc,result)", "token", "8x2xf16", "4x2xf32")
_mma("mmaf", "same_elem(lhs,rhs)", "4x8xf16", "8x2xbf16", "4x2xf32")
_mma("mmaf", "same_rank(lhs,rhs,acc)", "4x8xf16", "8x2xf16", "2x4x2xf32")
_mma("mmaf", "mma_rank", "8xf16", "8xf16", "8xf32")
_mma("mmaf", "mma_shapes", "4x8xf16", "4x2xf16", "4x2xf32")
_mma("mmaf", "mmaf_input", "4x8xi16", "8x2xi16", "4x2xf32")
_mma("mmaf", "mmaf_acc", "4x8xbf16", "8x2xbf16", "4x2xf16")
neg("mmaf", "same_type(acc,result)", "%a = constant <f16: 0.0> : tile<4x8xf16>\n%b = constant <f16: 0.0> : "
                                     "tile<8x2xf16>\n"
    "%c = constant <f32: 0.0> : tile<4x2xf32>\n%r = mmaf %a, %b, %c : tile<4x8xf16>, tile<8x2xf16>, "
    "tile<4x2xf32>",
    mutate=lambda m: setattr(first(m, "mmaf").results[0], "type", scalar_tile(I32)))


def _scaled(rule, a="16x64xe4m3", b="64x8xe4m3", c="16x8xf32", sa="16x2xe8m0", sb="2x8xe8m0"):
    ts = (a, b, c, sa, sb)
    decl = "\n".join(f"%{n} = constant <{t.split('x')[-1]}: 1.0> : tile<{t}>"
                     for n, t in zip("abcst", ts))
    neg("mmaf_scaled", rule, f"{decl}\n%r = mmaf_scaled %a, %b, %c, %s, %t : " +
        ", ".join(f"tile<{t}>" for t in ts))


_scaled("same_rank(lhs,rhs,acc,lhs_scale,rhs_scale)", sa="2x16x2xe8m0")
_scaled("mma_rank", a="64xe4m3", b="64xe4m3", c="1xf32", sa="2xe8m0", sb="2xe8m0")
_scaled("mma_shapes", b="32x8xe4m3")
_scaled("elem_in(lhs,rhs)", a="16x64xf16", b="64x8xf16")
_scaled("same_elem(lhs,rhs)", b="64x8xe5m2")
_scaled("elem_in(acc)", c="16x8xf16")
_scaled("mma_scaled_kind", sb="2x8xe4m3")
_scaled("mma_scaled_kind", a="16x64xe2m1", b="64x8xe2m1", sa="16x4xe4m3", sb="4x8xe8m0")
_scaled("mma_scale_shapes", sa="16x4xe8m0")
_scaled("mma_scale_shapes", a="16x64xe2m1", b="64x8xe2m1", sa="16x2xe4m3", sb="2x8xe4m3")
neg("mmaf_scaled", "tiles(lhs,rhs,acc,lhs_scale,rhs_scale,result)",
    "%a = constant <e4m3: 1.0> : tile<16x64xe4m3>\n%b = constant <e4m3: 1.0> : tile<64x8xe4m3>\n"
    "%c = constant <f32: 0.0> : tile<16x8xf32>\n%s = make_token : token\n"
    "%t = constant <e8m0: 1.0> : tile<2x8xe8m0>\n"
    "%r = mmaf_scaled %a, %b, %c, %s, %t : tile<16x64xe4m3>, tile<64x8xe4m3>, tile<16x8xf32>, "
    "token, tile<2x8xe8m0>")
neg("mmaf_scaled", "same_type(acc,result)", "%a = constant <e4m3: 1.0> : tile<16x64xe4m3>\n"
    "%b = constant <e4m3: 1.0> : tile<64x8xe4m3>\n%c = constant <f32: 0.0> : tile<16x8xf32>\n"
    "%s = constant <e8m0: 1.0> : tile<16x2xe8m0>\n%t = constant <e8m0: 1.0> : tile<2x8xe8m0>\n"
    "%r = mmaf_scaled %a, %b, %c, %s, %t : tile<16x64xe4m3>, tile<64x8xe4m3>, tile<16x8xf32>, "
    "tile<16x2xe8m0>, tile<2x8xe8m0>",
    mutate=lambda m: setattr(first(m, "mmaf_scaled").results[0], "type", scalar_tile(I32)))
_S = " signed signed"
_mma("mmai", "tiles(lhs,rhs,acc,result)", "token", "8x2xi8", "4x2xi32", _S)
_mma("mmai", "elem_in(lhs,rhs)", "4x8xi16", "8x2xi8", "4x2xi32", _S)
_mma("mmai", "elem_in(acc)", "4x8xi8", "8x2xi8", "4x2xi64", _S)
_mma("mmai", "same_rank(lhs,rhs,acc)", "4x8xi8", "8x2xi8", "2x4x2xi32", _S)
_mma("mmai", "mma_rank", "8xi8", "8xi8", "8xi32", _S)
_mma("mmai", "mma_shapes", "4x8xi8", "4x2xi8", "4x2xi32", _S)
neg("mmai", "same_type(acc,result)", "%a = constant <i8: 0> : tile<4x8xi8>\n%b = constant <i8: 0> : "
                                     "tile<8x2xi8>\n"
    "%c = constant <i32: 0> : tile<4x2xi32>\n%r = mmai %a, %b, %c signed unsigned : tile<4x8xi8>, "
    "tile<8x2xi8>, tile<4x2xi32>",
    mutate=lambda m: setattr(first(m, "mmai").results[0], "type", scalar_tile(I32)))

for _op, _src, _dst, _wrong in (("pack", "64xf16", "128xi8", "64xi8"),
                                ("unpack", "64xi8", "16xf32", "32xf32")):
    _e = _src.split("x")[1]
    _decl = f"%a = constant <{_e}: 0> : tile<{_src}>\n"
    neg(_op, "tiles(source,result)", _TOK + f"%r = {_op} %k : token -> tile<{_dst}>")
    neg(_op, "rank_in(source,result)", _decl + f"%r = {_op} %a : tile<{_src}> -> tile<2x{_dst}>")
    neg(_op, "pack_bytes", _decl + f"%r = {_op} %a : tile<{_src}> -> tile<{_wrong}>")
neg("pack", "elem_in(result)", "%a = constant <f16: 0.0> : tile<64xf16>\n%r = pack %a : tile<64xf16> -> "
                               "tile<64xi16>")
neg("pack", "numeric(source)", "%a = constant <i1: true> : tile<64xi1>\n%r = pack %a : tile<64xi1> -> "
                               "tile<8xi8>")
neg("unpack", "elem_in(source)", "%a = constant <i16: 0> : tile<64xi16>\n%r = unpack %a : tile<64xi16> -> "
                                 "tile<32xf32>")
neg("unpack", "numeric(result)", "%a = constant <i8: 0> : tile<64xi8>\n%r = unpack %a : tile<64xi8> -> "
                                 "tile<512xi1>")

_I8 = "%t = constant <i16: 8> : tile<8xi16>\n"
neg("assume", "same_type(value,result)", _I8 + "%r = assume div_by<8>, %t : tile<8xi16>",
    mutate=lambda m: setattr(first(m, "assume").results[0], "type", scalar_tile(I32)))
neg("assume", "bounded_value", _F4 + "%r = assume bounded<0, 4>, %a : tile<4xf32>")
neg("assume", "bounded_order", _I8 + "%r = assume bounded<5, 4>, %t : tile<8xi16>")
neg("assume", "bounded_range", _I8 + "%r = assume bounded<0, 40000>, %t : tile<8xi16>")
neg("assume", "div_by_value", _F4 + "%r = assume div_by<4>, %a : tile<4xf32>")
neg("assume", "div_by_divisor", _I8 + "%r = assume div_by<12>, %t : tile<8xi16>")
neg("assume", "div_by_every", _TV + "\n%r = assume div_by<16, every 2 along 0>, %tv : tensor_view<?x64xf32, "
                                    "strides=[64,1]>",
    _VIEW_PARAMS)
neg("assume", "same_elements_value", _F4 + "%r = assume same_elements<[1]>, %a : tile<4xf32>")
neg("assume", "same_elements_rank", _I8 + "%r = assume same_elements<[2, 4]>, %t : tile<8xi16>")

neg("print_tko", "tiles(args)", _TOK + '%r = print_tko "%d", %k : token -> token')
neg("print_tko", "token(token,result_token)",
    _F4 + '%r = print_tko "%f", %a token = %a : tile<4xf32> -> token')
neg("print_tko", "print_format", _F4 + '%r = print_tko "%f and %d", %a : tile<4xf32> -> token')

# ------------------------------------------------------------------------------- memory, views
neg("make_token", "token(result)", "%t = make_token : tile<i32>")
neg("join_tokens", "token(tokens,result)", _F4 + "%r = join_tokens %a : token")
_TV_T = "tensor_view<?x64xf32, strides=[64,1]>"
neg("make_tensor_view", "tensor_view(result)", "%tv = make_tensor_view %p, shape = [], strides = [] : "
                                               "tile<f32>", _PTR)
neg("make_tensor_view", "base_ptr", "%b = constant <i64: 0> : tile<i64>\n"
    "%tv = make_tensor_view %b, shape = [], strides = [] : tensor_view<f32>")
neg("make_tensor_view", "base_pointee", "%tv = make_tensor_view %p, shape = [], strides = [] : "
                                        "tensor_view<f16>", _PTR)
neg("make_tensor_view", "dynamic_count", _TV, _VIEW_PARAMS,
    mutate=lambda m: (first(m, "make_tensor_view").operands.pop(1),
                      first(m, "make_tensor_view").segments.__setitem__(1, 0)))
neg("make_tensor_view", "scalar_int(dynamicShape,dynamicStrides)", "%n = constant <f32: 8.0> : tile<f32>\n"
    f"%tv = make_tensor_view %p, shape = [%n, 64], strides = [64, 1] : tile<f32> -> {_TV_T}", _PTR)
neg("make_tensor_view", "same_type(dynamicShape,dynamicStrides)", "%w = constant <i64: 64> : tile<i64>\n"
    "%tv = make_tensor_view %p, shape = [%n, 64], strides = [%n, 1] : tile<i32> -> tensor_view<?x64xf32, "
    "strides=[?,1]>",
    _VIEW_PARAMS, mutate=lambda m: first(m, "make_tensor_view").operands.__setitem__(2, value(m, "w")))
neg("make_partition_view", "tensor_view(tensor_view)", _F4 + "%v = make_partition_view %a : "
                                                             "partition_view<tile=(4), "
    "tensor_view<4xf32, strides=[1]>>")
neg("make_partition_view", "partition_of", _TV + "\n%v = make_partition_view %tv : "
                                                 "partition_view<tile=(16x64), "
    "tensor_view<?x64xf32, strides=[?,1]>>", _VIEW_PARAMS)

_LD = "%t, %k2 = load_view_tko {o} {view}[{idx}]{tok} : {pv}, {it} -> tile<16x64xf32>, token"
_ST = ("%t = constant <f32: 0.0> : tile<16x64xf32>\n"
       "%k2 = store_view_tko {o} %t, {view}[{idx}]{tok} : tile<16x64xf32>, {pv}, {it} -> token")


def _view_negatives(op, fmt, bad_ordering):
    def case(rule, o="weak", view="%pv", idx="%i, %i", tok="", pv=_PV_T, it="tile<i32>", pre="", mutate=None):
        neg(op, rule, _PV + "\n" + pre + fmt.format(o=o, view=view, idx=idx, tok=tok, pv=pv, it=it),
            _VIEW_PARAMS, mutate=mutate)
    index_pos = [s.name for s in OPS[op].operands].index("index")
    case("attr:memory_ordering_semantics", o=bad_ordering)
    case("tile_view(view)", view="%tv", pv=_TV_T)
    case("rank_count(index)", idx="%i")
    case("scalar_int(index)", pre="%j = constant <i32: 0> : tile<2xi32>\n", idx="%j, %j", it="tile<2xi32>")
    case("same_type(index)", pre="%j = constant <i64: 0> : tile<i64>\n",
         mutate=lambda m: first(m, op).operands.__setitem__(index_pos + 1, value(m, "j")))
    case("token(token,result_token)", pre="%f = constant <f32: 0.0> : tile<f32>\n", tok=" token = %f")
    case("inbounds_count", tok=" inbounds = [true]")


_view_negatives("load_view_tko", _LD, "release")
_view_negatives("store_view_tko", _ST, "acquire")
neg("load_view_tko", "view_tile", _PV + f"\n%t, %k = load_view_tko weak %pv[%i, %i] : {_PV_T}, tile<i32> -> "
                                        f"tile<16x64xf16>, token",
    _VIEW_PARAMS)
neg("store_view_tko", "view_tile", _PV + "\n%t = constant <f32: 0.0> : tile<64x64xf32>\n"
    f"%k = store_view_tko weak %t, %pv[%i, %i] : tile<64x64xf32>, {_PV_T}, tile<i32> -> token", _VIEW_PARAMS)

_GIS = _PV + "\n%a, %b = get_index_space_shape %pv : " + _PV_T + " -> {t}"
neg("get_index_space_shape", "partition(src)", _TV + f"\n%a, %b = get_index_space_shape %tv : {_TV_T} -> "
                                                     f"tile<i64>",
    _VIEW_PARAMS)
neg("get_index_space_shape", "rank_count(result)", _PV + f"\n%a = get_index_space_shape %pv : {_PV_T} -> "
                                                         f"tile<i64>",
    _VIEW_PARAMS)
neg("get_index_space_shape", "scalar_int(result)", _GIS.format(t="tile<f32>"), _VIEW_PARAMS)
neg("get_index_space_shape", "same_type(result)", _GIS.format(t="tile<i64>"), _VIEW_PARAMS,
    mutate=lambda m: setattr(first(m, "get_index_space_shape").results[1], "type", scalar_tile(I32)))
_GTS = _TV + "\n%a, %b = get_tensor_shape %tv : " + _TV_T + " -> {t}"
neg("get_tensor_shape", "tensor_view(src)", _PV + f"\n%a, %b = get_tensor_shape %pv : {_PV_T} -> tile<i64>",
    _VIEW_PARAMS)
neg("get_tensor_shape", "rank_count(result)", _TV + f"\n%a, %b, %c = get_tensor_shape %tv : {_TV_T} -> "
                                                    f"tile<i64>",
    _VIEW_PARAMS)
neg("get_tensor_shape", "scalar_int(result)", _GTS.format(t="tile<2xi64>"), _VIEW_PARAMS)
neg("get_tensor_shape", "same_type(result)", _GTS.format(t="tile<i64>"), _VIEW_PARAMS,
    mutate=lambda m: setattr(first(m, "get_tensor_shape").results[1], "type", scalar_tile(I32)))

_LP = "%r, %k = load_ptr_tko {o} {src}{rest} : {st}{rt} -> {res}, token"
neg("load_ptr_tko", "attr:memory_ordering_semantics", "%r, %k = load_ptr_tko release device %p : "
                                                      "tile<ptr<f32>> -> tile<f32>, token", _PTR)
neg("load_ptr_tko", "ptr(source)", _F4 + "%r, %k = load_ptr_tko weak %a : tile<4xf32> -> tile<4xf32>, token")
neg("load_ptr_tko", "tiles(result)", "%r, %k = load_ptr_tko weak %p : tile<ptr<f32>> -> token, token", _PTR)
neg("load_ptr_tko", "pointer_of", "%r, %k = load_ptr_tko weak %p : tile<ptr<f32>> -> tile<f16>, token", _PTR)
neg("load_ptr_tko", "mask", _PTRS + "\n%m = constant <i1: true> : tile<4xi1>\n"
    "%r, %k = load_ptr_tko weak %addrs, %m : tile<8xptr<f32>>, tile<4xi1> -> tile<8xf32>, token", _PTR)
neg("load_ptr_tko", "padding_mask", _PTRS + "\n%r, %k = load_ptr_tko weak %addrs, %mask, %vals : "
                                            "tile<8xptr<f32>>, "
    "tile<8xi1>, tile<8xf32> -> tile<8xf32>, token", _PTR,
    mutate=lambda m: (first(m, "load_ptr_tko").operands.pop(1),
                      first(m, "load_ptr_tko").segments.__setitem__(1, 0)))
neg("load_ptr_tko", "padding_type", _PTRS + "\n%z = constant <f32: 0.0> : tile<f32>\n"
    "%r, %k = load_ptr_tko weak %addrs, %mask, %z : tile<8xptr<f32>>, tile<8xi1>, tile<f32> -> tile<8xf32>, "
    "token", _PTR)
neg("load_ptr_tko", "token(token,result_token)", _F4 + "%r, %k = load_ptr_tko weak %p token = %a : "
                                                       "tile<ptr<f32>> "
    "-> tile<f32>, token", _PTR)
neg("store_ptr_tko", "attr:memory_ordering_semantics", _PTRS + "\n%k = store_ptr_tko acq_rel %addrs, %vals : "
    "tile<8xptr<f32>>, tile<8xf32> -> token", _PTR)
neg("store_ptr_tko", "ptr(destination)", _PTRS + "\n%k = store_ptr_tko weak %vals, %vals : tile<8xf32>, "
                                                 "tile<8xf32> -> token", _PTR)
neg("store_ptr_tko", "tiles(value)", _PTRS + "\n%t = make_token : token\n%k = store_ptr_tko weak %addrs, %t "
                                             ": "
    "tile<8xptr<f32>>, token -> token", _PTR)
neg("store_ptr_tko", "pointer_of", _PTRS + "\n%h = constant <f16: 0.0> : tile<8xf16>\n%k = store_ptr_tko "
                                           "weak %addrs, %h : "
    "tile<8xptr<f32>>, tile<8xf16> -> token", _PTR)
neg("store_ptr_tko", "mask", _PTRS + "\n%k = store_ptr_tko weak %addrs, %vals, %vals : tile<8xptr<f32>>, "
                                     "tile<8xf32>, "
    "tile<8xf32> -> token", _PTR)
neg("store_ptr_tko", "token(token,result_token)", _PTRS + "\n%k = store_ptr_tko weak %addrs, %vals : "
    "tile<8xptr<f32>>, tile<8xf32> -> tile<i32>", _PTR)

_CAS = "%r, %k = atomic_cas_tko {o} device {p}, {c}, {v}{rest} : {pt}, {ct}{mt} -> {rt}, token"
for _rule, _kw in (("attr:memory_ordering_semantics", dict(o="weak")),
                   ("ptr(pointers)", dict(p="%vals", pt="tile<8xf32>")),
                   ("tiles(cmp,val,result)", dict(c="%tk", ct="token", rt="tile<8xf32>")),
                   ("same_type(cmp,val,result)", dict(v="%h")),
                   ("elem_in(cmp)", dict(p="%ih", c="%hh", v="%hh", pt="tile<8xptr<i16>>", ct="tile<8xi16>",
                                         rt="tile<8xi16>")),
                   ("pointer_of", dict(p="%ih", pt="tile<8xptr<i16>>")),
                   ("mask", dict(rest=", %vals", mt=", tile<8xf32>")),
                   ("token(token,result_token)", dict(rest=" token = %vals"))):
    _d = dict(o="relaxed", p="%addrs", c="%vals", v="%vals", rest="", pt="tile<8xptr<f32>>", ct="tile<8xf32>",
              mt="", rt="tile<8xf32>")
    _d.update(_kw)
    neg("atomic_cas_tko", _rule, _PTRS + "\n%tk = make_token : token\n%h = constant <f16: 0.0> : "
                                         "tile<8xf16>\n"
        "%hh = constant <i16: 0> : tile<8xi16>\n%ih = ptr_to_ptr %addrs : tile<8xptr<f32>> -> "
        "tile<8xptr<i16>>\n"
        + _CAS.format(**_d), _PTR)
_RMW = "%r, %k = atomic_rmw_tko {o} device {p}, {mode}, {a}{rest} : {pt}, {at}{mt} -> {rt}, token"
for _rule, _kw in (("attr:memory_ordering_semantics", dict(o="weak")),
                   ("ptr(pointers)", dict(p="%vals", pt="tile<8xf32>")),
                   ("tiles(arg,result)", dict(a="%tk", at="token")),
                   ("same_type(arg,result)", dict(rt="tile<8xf16>")),
                   ("pointer_of", dict(p="%ih", pt="tile<8xptr<i16>>")),
                   ("atomic_mode_type", dict(mode="umax")),
                   ("mask", dict(rest=", %vals", mt=", tile<8xf32>")),
                   ("token(token,result_token)", dict(rest=", token = %vals"))):
    _d = dict(o="relaxed", p="%addrs", mode="addf", a="%vals", rest="", pt="tile<8xptr<f32>>",
              at="tile<8xf32>",
              mt="", rt="tile<8xf32>")
    _d.update(_kw)
    neg("atomic_rmw_tko", _rule, _PTRS + "\n%tk = make_token : token\n"
        "%ih = ptr_to_ptr %addrs : tile<8xptr<f32>> -> tile<8xptr<i16>>\n" + _RMW.format(**_d), _PTR)

