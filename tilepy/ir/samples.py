"""One valid instance of every op, as text (used by `tilepy.tools.coverage` and the tests): it must
parse, verify, and print back to the same text after a second parse.

`Sample.body` is the body of a kernel `@sample(params)`, or a whole module when `module` is set.
"""
from __future__ import annotations

from dataclasses import dataclass

from .ops import OPS


@dataclass(frozen=True)
class Sample:
    op: str
    body: str
    params: str = ""
    module: bool = False

    def text(self) -> str:
        if self.module:
            return self.body
        return f"cuda_tile.module @samples {{\nentry @sample({self.params}) {{\n{self.body}\n}}\n}}\n"


_C = "%{n} = constant <{e}: {v}> : tile<{s}x{e}>"


def _consts(names, elem, shape="4", value="1.0"):
    return "\n".join(_C.format(n=n, e=elem, v=value, s=shape) for n in names)


def _float_sample(name) -> Sample:
    d = OPS[name]
    names = [o.name for o in d.operands]
    attrs = {a.name: a for a in d.attrs}
    mods = []
    if "rounding_mode" in attrs:
        mode = "zero" if "zero" in attrs["rounding_mode"].values else attrs["rounding_mode"].values[-1]
        mods.append(f"rounding<{mode}>")
    if "propagate_nan" in attrs:
        mods.append("propagate_nan")
    if "flush_to_zero" in attrs:
        mods.append("flush_to_zero")
    body = (_consts(names, "f32") + f"\n%r = {name} {', '.join('%' + n for n in names)}"
            f"{''.join(' ' + m for m in mods)} : tile<4xf32>")
    return Sample(name, body)


def _int_sample(name) -> Sample:
    d = OPS[name]
    names = [o.name for o in d.operands]
    attrs = {a.name for a in d.attrs}
    mods = (" signed" if "signedness" in attrs else "") + \
        (" overflow<no_wrap>" if "overflow" in attrs else "")
    if name == "divi":
        mods += " rounding<positive_inf>"
    args = ", ".join("%" + n for n in names)
    body = _consts(names, "i32", value="3") + f"\n%r = {name} {args}{mods} : tile<4xi32>"
    return Sample(name, body)


_PTR = "%p: tile<ptr<f32>>"
_PTRS = ("%p1 = reshape %p : tile<ptr<f32>> -> tile<1xptr<f32>>\n"
         "%ptrs = broadcast %p1 : tile<1xptr<f32>> -> tile<8xptr<f32>>\n"
         "%offs = iota : tile<8xi32>\n"
         "%addrs = offset %ptrs, %offs : tile<8xptr<f32>>, tile<8xi32> -> tile<8xptr<f32>>\n"
         "%mask = constant <i1: [true, false, true, false, true, false, true, false]> : tile<8xi1>\n"
         "%vals = constant <f32: 1.5> : tile<8xf32>")
_TV = ("%tv = make_tensor_view %p, shape = [%n, 64], strides = [64, 1] : tile<i32> -> "
       "tensor_view<?x64xf32, strides=[64,1]>")
_PV = (_TV + "\n%pv = make_partition_view %tv : partition_view<tile=(16x64), tensor_view<?x64xf32, "
       "strides=[64,1]>, padding_value=zero>\n%i = constant <i32: 0> : tile<i32>")
_PV_T = "partition_view<tile=(16x64), tensor_view<?x64xf32, strides=[64,1]>, padding_value=zero>"
_VIEW_PARAMS = "%p: tile<ptr<f32>>, %n: tile<i32>"
_GV_T = "gather_scatter_view<tile=(8x32), tensor_view<?x64xf32, strides=[64,1]>, sparse_dim=0>"
_SV_T = ("strided_view<tile=(16x32), traversal_strides=[8,16], padding_value = zero, "
         "tensor_view<?x64xf32, strides=[64,1]>>")
_PV_RED = "partition_view<tile=(16x64), tensor_view<?x64xf32, strides=[64,1]>>"

_SAMPLES = [
    Sample("constant", "%c = constant <f32: [[0.5, -1.0], [0x7FC00000, 3.0e+38]]> : tile<2x2xf32>\n"
                       "%s = constant <bf16: 0.1> : tile<8xbf16>"),
    Sample("iota", "%r = iota : tile<16xi32>"),
    Sample("get_tile_block_id", "%x, %y, %z = get_tile_block_id : tile<i32>"),
    Sample("get_num_tile_blocks", "%x, %y, %z = get_num_tile_blocks : tile<i32>"),
    Sample("broadcast", "%a = constant <f16: 1.0> : tile<1x4xf16>\n"
                        "%r = broadcast %a : tile<1x4xf16> -> tile<8x4xf16>"),
    Sample("reshape", "%a = constant <f16: 1.0> : tile<2x8xf16>\n"
                      "%r = reshape %a : tile<2x8xf16> -> tile<4x4xf16>"),
    Sample("permute", "%a = constant <i8: 1> : tile<2x4x8xi8>\n"
                      "%r = permute %a [2, 0, 1] : tile<2x4x8xi8> -> tile<8x2x4xi8>"),
    Sample("cat", "%a = constant <f32: 1.0> : tile<2x4xf32>\n%b = constant <f32: 2.0> : tile<2x4xf32>\n"
                  "%r = cat %a, %b dim = 0 : tile<2x4xf32>, tile<2x4xf32> -> tile<4x4xf32>"),
    Sample("extract", "%t = constant <f32: 0.0> : tile<32x8xf32>\n%i = constant <i32: 1> : tile<i32>\n"
                      "%r = extract %t[%i, %i] : tile<32x8xf32> -> tile<4x2xf32>"),
    Sample("offset", _PTRS, _PTR),
    Sample("mmaf", "%a = constant <e4m3: 1.0> : tile<16x32xe4m3>\n%b = constant <e4m3: 1.0> : "
                   "tile<32x8xe4m3>\n"
                   "%c = constant <f16: 0.0> : tile<16x8xf16>\n"
                   "%r = mmaf %a, %b, %c : tile<16x32xe4m3>, tile<32x8xe4m3>, tile<16x8xf16>"),
    Sample("mmaf_scaled", "%a = constant <e5m2: 1.0> : tile<16x64xe5m2>\n%b = constant <e5m2: 1.0> : "
                          "tile<64x8xe5m2>\n%c = constant <f32: 0.0> : tile<16x8xf32>\n"
                          "%s = constant <e8m0: 2.0> : tile<16x2xe8m0>\n"
                          "%t = constant <e8m0: 0.5> : tile<2x8xe8m0>\n"
                          "%r = mmaf_scaled %a, %b, %c, %s, %t : tile<16x64xe5m2>, tile<64x8xe5m2>, "
                          "tile<16x8xf32>, tile<16x2xe8m0>, tile<2x8xe8m0>"),
    Sample("mmai", "%a = constant <i8: 1> : tile<2x4x8xi8>\n%b = constant <i8: 1> : tile<2x8x2xi8>\n"
                   "%c = constant <i32: 0> : tile<2x4x2xi32>\n"
                   "%r = mmai %a, %b, %c unsigned signed : tile<2x4x8xi8>, tile<2x8x2xi8>, tile<2x4x2xi32>"),
    Sample("pack", "%a = constant <f16: 1.0> : tile<64xf16>\n%r = pack %a : tile<64xf16> -> tile<128xi8>"),
    Sample("unpack", "%a = constant <i8: 0> : tile<64xi8>\n%r = unpack %a : tile<64xi8> -> tile<16xf32>"),
    Sample("assume", "%t = constant <i16: 8> : tile<8xi16>\n%a = assume bounded<0, ?>, %t : tile<8xi16>\n"
                     "%b = assume div_by<8, every 2 along 0>, %a : tile<8xi16>\n"
                     "%c = assume same_elements<[2]>, %b : tile<8xi16>\n" + _TV
                     + "\n%d = assume div_by<16>, %tv : tensor_view<?x64xf32, strides=[64,1]>", _VIEW_PARAMS),
    Sample("print_tko", "%t = constant <f32: 1.0> : tile<4xf32>\n%k = make_token : token\n"
                        "%r = print_tko \"x = %f, 100%%\\n\\t\\\"q\\\"\", %t token = %k : tile<4xf32> -> "
                        "token\n"
                        "%s = print_tko \"hello\" -> token"),
    Sample("select", "%c = constant <i1: true> : tile<4xi1>\n" + _consts(["a", "b"], "f32")
           + "\n%r = select %c, %a, %b : tile<4xi1>, tile<4xf32>"),
    Sample("cmpf", _consts(["a", "b"], "f64") + "\n%r = cmpf less_than unordered %a, %b : tile<4xf64> -> "
                                                "tile<4xi1>"),
    Sample("cmpi", _consts(["a", "b"], "i64", value="-7") + "\n%r = cmpi greater_than %a, %b, unsigned : "
                                                            "tile<4xi64> -> tile<4xi1>"),
    Sample("exti", "%a = constant <i1: true> : tile<4xi1>\n%r = exti %a signed : tile<4xi1> -> tile<4xi32>"),
    Sample("trunci", "%a = constant <i64: 300> : tile<4xi64>\n%r = trunci %a overflow<no_unsigned_wrap> : "
                     "tile<4xi64> -> tile<4xi8>"),
    Sample("ftof", "%a = constant <f32: 448.5> : tile<4xf32>\n%r = ftof %a rounding<nearest_even> : "
                   "tile<4xf32> -> tile<4xe5m2>\n"
                   "%s = ftof %a : tile<4xf32> -> tile<4xtf32>"),
    Sample("ftoi", "%a = constant <f16: -2.5> : tile<4xf16>\n%r = ftoi %a signed "
                   "rounding<nearest_int_to_zero> : tile<4xf16> -> tile<4xi16>"),
    Sample("itof", "%a = constant <i32: 7> : tile<4xi32>\n%r = itof %a unsigned : tile<4xi32> -> "
                   "tile<4xbf16>"),
    Sample("bitcast", "%a = constant <i32: 7> : tile<4xi32>\n%r = bitcast %a : tile<4xi32> -> tile<4xf32>"),
    Sample("int_to_ptr", "%a = constant <i64: 4096> : tile<4xi64>\n%r = int_to_ptr %a : tile<4xi64> -> "
                         "tile<4xptr<f16>>"),
    Sample("ptr_to_int", "%r = ptr_to_int %p : tile<ptr<f32>> -> tile<i64>", _PTR),
    Sample("ptr_to_ptr", "%r = ptr_to_ptr %p : tile<ptr<f32>> -> tile<ptr<i8>>", _PTR),
    Sample("make_token", "%t = make_token : token"),
    Sample("join_tokens", "%a = make_token : token\n%b = make_token : token\n%r = join_tokens %a, %b : "
                          "token"),
    Sample("make_tensor_view", _TV + "\n%s = make_tensor_view %p, shape = [], strides = [] : "
                                     "tensor_view<f32>",
           _VIEW_PARAMS),
    Sample("make_partition_view", _PV, _VIEW_PARAMS),
    Sample("load_view_tko", _PV + "\n%k = make_token : token\n%t, %k2 = load_view_tko acquire device %pv[%i, "
                                  "%i] "
           f"token = %k optimization_hints=<sm_90 = {{latency = 3}}> : {_PV_T}, tile<i32> -> "
           f"tile<16x64xf32>, token",
           _VIEW_PARAMS),
    Sample("store_view_tko", _PV + "\n%t = constant <f32: 0.0> : tile<16x64xf32>\n"
           f"%k = store_view_tko release sys %t, %pv[%i, %i] : tile<16x64xf32>, {_PV_T}, tile<i32> -> token",
           _VIEW_PARAMS),
    Sample("get_index_space_shape", _PV + f"\n%a, %b = get_index_space_shape %pv : {_PV_T} -> tile<i64>",
           _VIEW_PARAMS),
    Sample("get_tensor_shape", _TV + "\n%a, %b = get_tensor_shape %tv : tensor_view<?x64xf32, "
                                     "strides=[64,1]> -> tile<i32>",
           _VIEW_PARAMS),
    Sample("load_ptr_tko", _PTRS + "\n%k = make_token : token\n%r, %k2 = load_ptr_tko relaxed device %addrs, "
                                   "%mask, "
           "%vals token = %k : tile<8xptr<f32>>, tile<8xi1>, tile<8xf32> -> tile<8xf32>, token\n"
           "%s, %k3 = load_ptr_tko weak %p : tile<ptr<f32>> -> tile<f32>, token", _PTR),
    Sample("store_ptr_tko", _PTRS + "\n%k = store_ptr_tko weak %addrs, %vals, %mask : tile<8xptr<f32>>, "
           "tile<8xf32>, tile<8xi1> -> token", _PTR),
    Sample("atomic_cas_tko", _PTRS + "\n%r, %k = atomic_cas_tko acq_rel tl_blk %addrs, %vals, %vals, %mask : "
           "tile<8xptr<f32>>, tile<8xf32>, tile<8xi1> -> tile<8xf32>, token", _PTR),
    Sample("atomic_rmw_tko", _PTRS + "\n%t = make_token : token\n%r, %k = atomic_rmw_tko relaxed device "
                                     "%addrs, "
           "xchg, %vals, %mask, token = %t : tile<8xptr<f32>>, tile<8xf32>, tile<8xi1> -> tile<8xf32>, "
           "token", _PTR),
    # NVIDIA's 13.3/13.4 ops (ops_dialect.py)
    Sample("alloca", "%a = alloca num_elem = 64, alignment = 128 : tile<ptr<f32>>\n"
                     "%b = alloca num_elem = 16, alignment = 8 global : tile<ptr<i64>>"),
    Sample("make_gather_scatter_view", _TV + f"\n%gv = make_gather_scatter_view %tv : {_GV_T}\n"
           "%rows = constant <i32: [3, 0, 7, 1, 2, 9, 4, 4]> : tile<8xi32>\n"
           "%c = constant <i32: 32> : tile<i32>\n"
           f"%t, %k = load_view_tko weak %gv[%rows, %c] : {_GV_T}, tile<8xi32>, tile<i32> -> "
           "tile<8x32xf32>, token\n"
           f"%k2 = store_view_tko weak %t, %gv[%rows, %c] : tile<8x32xf32>, {_GV_T}, tile<8xi32>, "
           "tile<i32> -> token", _VIEW_PARAMS),
    Sample("make_strided_view", _TV + f"\n%sv = make_strided_view %tv : {_SV_T}\n"
           "%i = constant <i32: 0> : tile<i32>\n%j = constant <i32: 1> : tile<i32>\n"
           f"%t, %k = load_view_tko weak %sv[%i, %j] : {_SV_T}, tile<i32> -> tile<16x32xf32>, token",
           _VIEW_PARAMS),
    Sample("atomic_red_view_tko", _TV + f"\n%pv = make_partition_view %tv : {_PV_RED}\n"
           "%i = constant <i32: 0> : tile<i32>\n%v = constant <f32: 1.0> : tile<16x64xf32>\n"
           "%k = make_token : token\n"
           f"%r = atomic_red_view_tko relaxed device %pv[%i, %i], addf, %v token = %k : "
           f"tile<16x64xf32>, {_PV_RED}, tile<i32> -> token", _VIEW_PARAMS),
    Sample("fpowi", "%a = constant <f32: 1.5> : tile<4xf32>\n%e = constant <i32: -3> : tile<4xi32>\n"
                    "%r = fpowi %a, %e : tile<4xf32>, tile<4xi32>"),
    Sample("insert", "%d = constant <f16: 0.0> : tile<8x4xf16>\n%s = constant <f16: 1.0> : tile<2x4xf16>\n"
                     "%i = constant <i32: 3> : tile<i32>\n%z = constant <i32: 0> : tile<i32>\n"
                     "%r = insert %s, %d[%i, %z] : tile<2x4xf16>, tile<8x4xf16>"),
    Sample("memory_fence_alias_tko", "%k = make_token : token\n%r = memory_fence_alias_tko %k"),
    Sample("gdc_wait_tko", "%k = make_token : token\n%r = gdc_wait_tko token = %k -> token\n"
                           "%s = gdc_wait_tko -> token"),
    Sample("gdc_launch_dependents_tko", "%k = make_token : token\n"
                                        "%r = gdc_launch_dependents_tko token = %k -> token\n"
                                        "%s = gdc_launch_dependents_tko -> token"),
    Sample("assert", "%c = constant <i1: true> : tile<2x2xi1>\nassert %c, \"all good\" : tile<2x2xi1>"),
    Sample("if", "%c = constant <i1: true> : tile<i1>\n%x, %y = if %c -> (tile<f32>, tile<i32>) {\n"
                 "%a = constant <f32: 1.0> : tile<f32>\n%b = constant <i32: 2> : tile<i32>\n"
                 "yield %a, %b : tile<f32>, tile<i32>\n} else {\n%a = constant <f32: 3.0> : tile<f32>\n"
                 "%b = constant <i32: 4> : tile<i32>\nyield %a, %b : tile<f32>, tile<i32>\n}\n"
                 "if %c {\nassert %c, \"then\" : tile<i1>\n}"),
    Sample("for", "%lb = constant <i64: 0> : tile<i64>\n%ub = constant <i64: 8> : tile<i64>\n"
                  "%st = constant <i64: 1> : tile<i64>\n%init = constant <f32: 0.0> : tile<f32>\n"
                  "%k0 = make_token : token\n"
                  "%acc, %k = for %iv in (%lb to %ub, step %st) : tile<i64> unsigned "
                  "iter_values(%a = %init, %t = %k0) -> (tile<f32>, token) {\n"
                  "%b = addf %a, %a : tile<f32>\ncontinue %b, %t : tile<f32>, token\n}"),
    Sample("loop", "%init = constant <i32: 0> : tile<i32>\n"
                   "%r = loop iter_values(%v = %init) : tile<i32> -> tile<f32> {\n"
                   "%c = constant <i1: false> : tile<i1>\nif %c {\n%f = constant <f32: 1.0> : tile<f32>\n"
                   "break %f : tile<f32>\n}\n%w = addi %v, %v : tile<i32>\ncontinue %w : tile<i32>\n}"),
    Sample("continue", "%init = constant <i32: 0> : tile<i32>\nloop iter_values(%v = %init) : tile<i32> {\n"
                       "continue %v : tile<i32>\n}"),
    Sample("break", "loop {\nbreak\n}"),
    Sample("yield", "%c = constant <i1: true> : tile<i1>\n%x = if %c -> (tile<i8>) {\n"
                    "%a = constant <i8: 1> : tile<i8>\nyield %a : tile<i8>\n} else {\n"
                    "%b = constant <i8: 2> : tile<i8>\nyield %b : tile<i8>\n}"),
    Sample("return", "%c = constant <i1: true> : tile<i1>\nif %c {\nreturn\n}\nreturn"),
    Sample("reduce", "%a = constant <f32: 1.0> : tile<8x64xf32>\n%i = constant <i32: 1> : tile<8x64xi32>\n"
                     "%m, %j = reduce %a, %i dim=1 identities=[0xFF800000 : f32, -1 : i32] : "
                     "tile<8x64xf32>, tile<8x64xi32> -> tile<8xf32>, tile<8xi32>\n"
                     "(%x: tile<f32>, %xa: tile<f32>, %y: tile<i32>, %ya: tile<i32>) {\n"
                     "%mx = maxf %x, %xa : tile<f32>\n%my = maxi %y, %ya signed : tile<i32>\n"
                     "yield %mx, %my : tile<f32>, tile<i32>\n}"),
    Sample("scan", "%a = constant <f32: 1.0> : tile<8x16xf32>\n"
                   "%r = scan %a dim=1 reverse=true identities=[1.0 : f32] : tile<8x16xf32> -> "
                   "tile<8x16xf32>\n"
                   "(%x: tile<f32>, %acc: tile<f32>) {\n%m = mulf %x, %acc rounding<nearest_even> : "
                   "tile<f32>\n"
                   "yield %m : tile<f32>\n}"),
    Sample("entry", "cuda_tile.module @m {\nentry @k(%x: tile<ptr<f32>>, %n: tile<i64>) "
                    "optimization_hints=<sm_90 = {num_cta_in_cga = 2}, sm_100 = {num_cta_in_cga = 8, fast = "
                    "true}> {\n"
                    "return\n}\n}\n", module=True),
    Sample("global", "cuda_tile.module @m {\nglobal @g alignment = 64 <i32: [1, 2, 3, 4]> : tile<4xi32>\n"
                     "global @h <f16: 0.5> : tile<8xf16>\nentry @k() {\nreturn\n}\n}\n", module=True),
    Sample("get_global", "cuda_tile.module @m {\nglobal @g <i32: [1, 2, 3, 4]> : tile<4xi32>\n"
                         "entry @k() {\n%p = get_global @g : tile<ptr<i32>>\nreturn\n}\n}\n", module=True),
    Sample("module", "cuda_tile.module @two_kernels {\nentry @a() {\nreturn\n}\nentry @b() {\nreturn\n}\n}\n",
           module=True),
]

VALID: dict[str, Sample] = {s.op: s for s in _SAMPLES}
for _name, _d in OPS.items():
    if _name not in VALID and _d.category == "float":
        VALID[_name] = _float_sample(_name)
    elif _name not in VALID and _d.category in ("integer", "bitwise"):
        VALID[_name] = _int_sample(_name)

assert set(VALID) == set(OPS), sorted(set(OPS) - set(VALID))
