"""Invalid instances: for every rule of every op, an instance that breaks that rule (and only
that one), as text. The verifier must reject each with "<op>: ..." containing the rule's
phrase. Rules the text cannot break (the syntax ties the parts together, e.g. the number of
`?` extents and dynamic operands of make_tensor_view) get a `mutate` step on the parsed IR.
"""
from __future__ import annotations

from .negatives_base import NEGATIVES, Negative, first, neg, value  # noqa: F401  (re-exported)
from .ops import OPS
from .samples import _PTR


# ------------------------------------------------------------------- element-wise families
_KIND = {"float": ("f32", "f16", "i32"), "integer": ("i32", "i16", "f32"), "bitwise": ("i32", "i16", "f32")}


def _elementwise(name):
    d = OPS[name]
    ok, other, bad = _KIND[d.category]
    names = [o.name for o in d.operands]
    sign = " signed" if any(a.name == "signedness" for a in d.attrs) else ""
    tiles = f"tiles({','.join(names)},result)"

    def case(rule, types, result, mods=""):
        lines = [(f"%v{i} = make_token : token" if t == "token" else
                  f"%v{i} = constant <{t.split('x')[-1]}: 1> : tile<{t}>") for i, t in enumerate(types)]
        args = ", ".join(f"%v{i}" for i in range(len(types)))
        neg(name, rule, "\n".join(lines) + f"\n%r = {name} {args}{sign}{mods} : {result}")

    n = len(names)
    case(tiles, ["token"] + [f"4x{ok}"] * (n - 1), f"tile<4x{ok}>")
    if n > 1:
        rest = [f"4x{ok}"] * (n - 2)
        case(f"same_shape({','.join(names)})", [f"4x{ok}", f"8x{ok}"] + rest, f"tile<4x{ok}>")
        case(f"same_elem({','.join(names)})", [f"4x{ok}", f"4x{other}"] + rest, f"tile<4x{ok}>")
    case(f"elem_in({names[0]})", [f"4x{bad}"] * n, f"tile<4x{bad}>")
    case(f"same_type({names[0]},result)", [f"4x{ok}"] * n, f"tile<8x{ok}>")
    rules = d.rules()
    if "attr:rounding_mode" in rules:
        case("attr:rounding_mode", [f"4x{ok}"] * n, f"tile<4x{ok}>", " rounding<nearest_int_to_zero>")
    if "rounding_type" in rules:
        mode = next(m for m in d.attr_spec("rounding_mode").values if m in ("approx",))
        case("rounding_type", ["4xf16"] * n, "tile<4xf16>", f" rounding<{mode}>")
    if "ftz" in rules:
        case("ftz", ["4xf64"] * n, "tile<4xf64>", " flush_to_zero")
    if "attr:rounding" in rules:
        case("attr:rounding", [f"4x{ok}"] * n, f"tile<4x{ok}>", " rounding<nearest_even>")
    if "divi_floor_unsigned" in rules:
        NEGATIVES.append(Negative(name, "divi_floor_unsigned",
                                  "%a = constant <i32: 7> : tile<4xi32>\n"
                                  "%r = divi %a, %a unsigned rounding<negative_inf> : tile<4xi32>"))


for _name, _d in OPS.items():
    if _d.category in _KIND:
        _elementwise(_name)

# ------------------------------------------------------------------------ compare, select
for _cmp, _t, _bad, _mid in (("cmpf", "f32", "i32", "less_than ordered"),
                             ("cmpi", "i32", "f32", "less_than")):
    _sfx = "" if _cmp == "cmpf" else ", signed"

    def _c(rule, a, b, r, cmp=_cmp, mid=_mid, sfx=_sfx):
        decl = "\n".join(f"%{n} = " + ("make_token : token" if t == "token" else
                                       f"constant <{t.split('x')[-1]}: 1> : tile<{t}>")
                         for n, t in (("a", a), ("b", b)))
        at = "token" if a == "token" else f"tile<{a}>"
        neg(cmp, rule, f"{decl}\n%r = {cmp} {mid} %a, %b{sfx} : {at} -> {r}")
    _c("tiles(lhs,rhs,result)", "token", f"4x{_t}", "tile<4xi1>")
    _c("same_shape(lhs,rhs)", f"4x{_t}", f"8x{_t}", "tile<4xi1>")
    _c("same_elem(lhs,rhs)", f"4x{_t}", "4xf16" if _t == "f32" else "4xi16", "tile<4xi1>")
    _c("elem_in(lhs)", f"4x{_bad}", f"4x{_bad}", "tile<4xi1>")
    _c("same_shape(lhs,result)", f"4x{_t}", f"4x{_t}", "tile<8xi1>")
    _c("elem_in(result)", f"4x{_t}", f"4x{_t}", "tile<4xi8>")

_SEL = "%c = constant <i1: true> : tile<4xi1>\n%a = constant <f32: 1.0> : tile<4xf32>\n"
neg("select", "tiles(cond,val_if_true,val_if_false,result)",
    "%c = make_token : token\n%a = constant <f32: 1.0> : tile<4xf32>\n"
    "%r = select %c, %a, %a : token, tile<4xf32>")
neg("select", "elem_in(cond)", "%c = constant <i8: 1> : tile<4xi8>\n%a = constant <f32: 1.0> : tile<4xf32>\n"
    "%r = select %c, %a, %a : tile<4xi8>, tile<4xf32>")
neg("select", "same_shape(cond,val_if_true,val_if_false,result)",
    _SEL + "%b = constant <f32: 1.0> : tile<8xf32>\n%r = select %c, %a, %b : tile<4xi1>, tile<4xf32>")
neg("select", "same_elem(val_if_true,val_if_false,result)",
    _SEL + "%b = constant <f16: 1.0> : tile<4xf16>\n%r = select %c, %a, %b : tile<4xi1>, tile<4xf32>")


# ------------------------------------------------------------------------------ conversions
def _conv(op, rule, src, dst, mods=""):
    elem = src.split("x")[-1]
    decl = "%s = make_token : token" if src == "token" else f"%s = constant <{elem}: 1> : tile<{src}>"
    st = "token" if src == "token" else f"tile<{src}>"
    neg(op, rule, f"{decl}\n%r = {op} %s{mods} : {st} -> tile<{dst}>")


_SIGNED = " signed"
for _op, _src, _dst, _bad_src, _bad_dst, _m in (
        ("exti", "4xi8", "4xi32", "4xf32", "4xf32", _SIGNED),
        ("trunci", "4xi32", "4xi8", "4xf32", "4xf16", ""),
        ("ftof", "4xf32", "4xf16", "4xi32", "4xi16", ""),
        ("ftoi", "4xf32", "4xi32", "4xi32", "4xf16", _SIGNED),
        ("itof", "4xi32", "4xf32", "4xf32", "4xi16", _SIGNED)):
    _conv(_op, "tiles(source,result)", "token", _dst, _m)
    _conv(_op, "same_shape(source,result)", _src, "8x" + _dst.split("x")[1], _m)
    _conv(_op, "elem_in(source)", _bad_src, _dst, _m)
    _conv(_op, "elem_in(result)", _src, _bad_dst, _m)
_conv("exti", "wider", "4xi32", "4xi16", _SIGNED)
_conv("trunci", "narrower", "4xi8", "4xi32")
_conv("ftof", "different", "4xf32", "4xf32")
_conv("ftof", "attr:rounding_mode", "4xf32", "4xf16", " rounding<approx>")
_conv("ftof", "ftof_rounding", "4xf32", "4xbf16", " rounding<negative_inf>")
_conv("itof", "itof_e8m0", "4xi32", "4xe8m0", " signed")
_conv("ftoi", "attr:rounding_mode", "4xf32", "4xi32", " signed rounding<nearest_even>")
_conv("itof", "attr:rounding_mode", "4xi32", "4xf32", " signed rounding<zero>")
_conv("bitcast", "tiles(source,result)", "token", "4xf32")
_conv("bitcast", "same_shape(source,result)", "4xi32", "8xf32")
_conv("bitcast", "bitcast_width", "4xi32", "4xf16")
neg("bitcast", "bitcast_ptr", "%r = bitcast %p : tile<ptr<f32>> -> tile<i64>", _PTR)
for _op in ("int_to_ptr", "ptr_to_int", "ptr_to_ptr"):
    _conv(_op, "tiles(source,result)", "token", "4xi64")
neg("int_to_ptr", "same_shape(source,result)", "%a = constant <i64: 0> : tile<4xi64>\n"
    "%r = int_to_ptr %a : tile<4xi64> -> tile<8xptr<f32>>")
neg("int_to_ptr", "elem_in(source)", "%a = constant <i32: 0> : tile<4xi32>\n"
    "%r = int_to_ptr %a : tile<4xi32> -> tile<4xptr<f32>>")
neg("int_to_ptr", "ptr(result)", "%a = constant <i64: 0> : tile<4xi64>\n%r = int_to_ptr %a : tile<4xi64> -> "
                                 "tile<4xi64>")
neg("ptr_to_int", "same_shape(source,result)", "%r = ptr_to_int %p : tile<ptr<f32>> -> tile<2xi64>", _PTR)
neg("ptr_to_int", "ptr(source)", "%a = constant <i64: 0> : tile<4xi64>\n%r = ptr_to_int %a : tile<4xi64> -> "
                                 "tile<4xi64>")
neg("ptr_to_int", "elem_in(result)", "%r = ptr_to_int %p : tile<ptr<f32>> -> tile<i32>", _PTR)
neg("ptr_to_ptr", "same_shape(source,result)", "%r = ptr_to_ptr %p : tile<ptr<f32>> -> tile<2xptr<i8>>", _PTR)
neg("ptr_to_ptr", "ptr(source)", "%a = constant <i64: 0> : tile<4xi64>\n%r = ptr_to_ptr %a : tile<4xi64> -> "
                                 "tile<4xptr<f32>>")
neg("ptr_to_ptr", "ptr(result)", "%r = ptr_to_ptr %p : tile<ptr<f32>> -> tile<i64>", _PTR)

from . import negatives_more, negatives_control, negatives_dialect  # noqa: E402,F401  (the other ops; they append to NEGATIVES)
