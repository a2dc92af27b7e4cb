"""Invalid instances of the control-flow ops, reduce/scan and the module items (see negatives.py)."""
from __future__ import annotations

from ..types import I32, scalar_tile
from .negatives_base import first, neg
from .samples import _TV, _VIEW_PARAMS

_C = "%c = constant <i1: true> : tile<i1>\n"
_B = ("%lb = constant <i32: 0> : tile<i32>\n%ub = constant <i32: 8> : tile<i32>\n"
      "%st = constant <i32: 1> : tile<i32>\n%init = constant <f32: 0.0> : tile<f32>\n")


def _pop_terminator(op_name, region=0):
    def mutate(m):
        first(m, op_name).regions[region].block.ops.pop()
    return mutate


# ------------------------------------------------------------------------------ terminators
neg("yield", "yield_parent", _B + "for %iv in (%lb to %ub, step %st) : tile<i32> {\nyield\n}")
neg("continue", "continue_parent", _C + "if %c {\ncontinue\n}")
neg("break", "break_parent", _B + "for %iv in (%lb to %ub, step %st) : tile<i32> {\nbreak\n}")
neg("return", "return_parent", "loop {\nreturn\n}")

# ------------------------------------------------------------------------------------- for
_FOR = "for %iv in (%lb to %ub, step %st) : tile<i32> {body}"
neg("for", "scalar_int(lowerBound,upperBound,step)",
    "%lb = constant <f32: 0.0> : tile<f32>\nfor %iv in (%lb to %lb, step %lb) : tile<f32> {\ncontinue\n}")
neg("for", "same_type(lowerBound,upperBound,step)",
    _B + "%ub64 = constant <i64: 8> : tile<i64>\nfor %iv in (%lb to %ub64, step %st) : tile<i32> "
         "{\ncontinue\n}")
neg("for", "not_views", _TV + "\n" + _B + "%r = for %iv in (%lb to %ub, step %st) : tile<i32> iter_values(%v "
                                          "= %tv) "
    "-> (tensor_view<?x64xf32, strides=[64,1]>) {\ncontinue %v : tensor_view<?x64xf32, strides=[64,1]>\n}",
    _VIEW_PARAMS)
neg("for", "for_results", _B + "%r = for %iv in (%lb to %ub, step %st) : tile<i32> iter_values(%v = %init) "
    "-> (tile<f16>) {\ncontinue %v : tile<f16>\n}")
neg("for", "terminator", _B + _FOR.format(body="{\ncontinue\n}"), mutate=_pop_terminator("for"))
neg("for", "for_body_args", _B + _FOR.format(body="{\ncontinue\n}"),
    mutate=lambda m: setattr(first(m, "for").body.block.args[0], "type", scalar_tile(I32).with_shape((2,))))
neg("for", "continue_types", _B + "%r = for %iv in (%lb to %ub, step %st) : tile<i32> iter_values(%v = "
                                  "%init) "
    "-> (tile<f32>) {\ncontinue %iv : tile<i32>\n}")

# -------------------------------------------------------------------------------------- if
_Y = "%a = constant <f32: 1.0> : tile<f32>\n"
neg("if", "scalar(condition)", "%c = constant <i1: true> : tile<4xi1>\nif %c {\nyield\n}")
neg("if", "elem_in(condition)", "%c = constant <i32: 1> : tile<i32>\nif %c {\nyield\n}")
neg("if", "not_views", _C + _TV + "\n%r = if %c -> (tensor_view<?x64xf32, strides=[64,1]>) {\n"
    "yield %tv : tensor_view<?x64xf32, strides=[64,1]>\n} else {\nyield %tv : tensor_view<?x64xf32, "
    "strides=[64,1]>\n}",
    _VIEW_PARAMS)
neg("if", "no_region_args", _C + "if %c {\nyield\n}",
    mutate=lambda m: first(m, "if").thenRegion.block.add_arg(scalar_tile(I32)))
neg("if", "terminator", _C + "if %c {\nyield\n}", mutate=_pop_terminator("if"))
neg("if", "if_else", _C + _Y + "%r = if %c -> (tile<f32>) {\nyield %a : tile<f32>\n}")
neg("if", "if_yield", _C + _Y + "%r = if %c -> (tile<f32>) {\nyield %a : tile<f32>\n} else {\nyield %c : "
                                "tile<i1>\n}")

# ------------------------------------------------------------------------------------ loop
_L = "%init = constant <i32: 0> : tile<i32>\n"
neg("loop", "not_views", _TV + "\nloop iter_values(%v = %tv) : tensor_view<?x64xf32, strides=[64,1]> "
                               "{\nbreak\n}",
    _VIEW_PARAMS)
neg("loop", "terminator", "loop {\nbreak\n}", mutate=_pop_terminator("loop"))
neg("loop", "loop_body_args", _L + "loop iter_values(%v = %init) : tile<i32> {\nbreak\n}",
    mutate=lambda m: setattr(first(m, "loop").body.block.args[0], "type", scalar_tile(I32).with_shape((4,))))
neg("loop", "continue_types", _L + _Y + "loop iter_values(%v = %init) : tile<i32> {\ncontinue %a : "
                                        "tile<f32>\n}")
neg("loop", "break_types", _L + _Y + "%r = loop iter_values(%v = %init) : tile<i32> -> tile<i32> {\n"
    "break %a : tile<f32>\n}")

neg("assert", "tiles(condition)", '%k = make_token : token\nassert %k, "x" : token')
neg("assert", "elem_in(condition)", '%a = constant <f32: 1.0> : tile<4xf32>\nassert %a, "x" : tile<4xf32>')

# ---------------------------------------------------------------------------- reduce, scan
_R = "%a = constant <f32: 1.0> : tile<8x4xf32>\n"
_BODY = "(%x: tile<f32>, %y: tile<f32>) {\n%s = addf %x, %y : tile<f32>\nyield %s : tile<f32>\n}"


def _reduce(rule, op="reduce", pre=_R, operands="%a", dim=1, ids="[0.0 : f32]", types="tile<8x4xf32>",
            results=None, body=_BODY, mutate=None):
    rev = " reverse=false" if op == "scan" else ""
    results = results or ("tile<8xf32>" if op == "reduce" else types)
    names = ", ".join(f"%r{i}" for i in range(results.count("tile<")))
    neg(op, rule, f"{pre}{names} = {op} {operands} dim={dim}{rev} identities={ids} : {types} -> "
                  f"{results}\n{body}",
        mutate=mutate)


for _op in ("reduce", "scan"):
    _reduce("tiles(operands)", _op, pre="%a = make_token : token\n", types="token", results="tile<f32>")
    _reduce("same_shape(operands)", _op, pre=_R + "%b = constant <f32: 1.0> : tile<8x8xf32>\n",
            operands="%a, %b", ids="[0.0 : f32, 0.0 : f32]", types="tile<8x4xf32>, tile<8x8xf32>",
            results="tile<8xf32>, tile<8xf32>" if _op == "reduce" else "tile<8x4xf32>, tile<8x8xf32>",
            body="(%x: tile<f32>, %y: tile<f32>, %z: tile<f32>, %w: tile<f32>) {\nyield %x, %z : tile<f32>, "
                 "tile<f32>\n}")
    _reduce("reduce_dim", _op, dim=2, results="tile<8x4xf32>")
    _reduce("identities_count", _op, ids="[0.0 : f32, 1.0 : f32]")
    _reduce("identities_type", _op, ids="[0 : i32]")
    _reduce("reduce_results", _op, results="tile<4xf32>")
    _reduce("terminator", _op, mutate=_pop_terminator(_op))
    _reduce("combiner_args", _op, body="(%x: tile<f32>, %y: tile<f16>) {\nyield %x : tile<f32>\n}")
    _reduce("combiner_yield", _op, body="(%x: tile<f32>, %y: tile<f32>) {\n%i = constant <i32: 0> : "
                                        "tile<i32>\n"
                                        "yield %i : tile<i32>\n}")
    _reduce("combiner_scalar", _op, body="(%x: tile<f32>, %y: tile<f32>) {\n"
                                         "%v = reshape %x : tile<f32> -> tile<1xf32>\nyield %x : "
                                         "tile<f32>\n}")


# ---------------------------------------------------------------------------- module items
_M = "cuda_tile.module @m {{\n{}\n}}\n"
neg("entry", "top_level", "entry @inner() {\nreturn\n}")
neg("entry", "terminator", _M.format("entry @k() {\nreturn\n}"), module=True, mutate=_pop_terminator("entry"))
neg("entry", "kernel_params", _M.format("entry @k(%t: tile<4xf32>) {\nreturn\n}"), module=True)
neg("entry", "kernel_returns", _M.format("entry @k(%t: tile<f32>) {\nreturn %t : tile<f32>\n}"), module=True)
neg("global", "global_type", _M.format("global @g <f32: 0.0> : tile<4x4xf32>"), module=True)
neg("global", "global_value", _M.format("global @g <f32: [1.0, 2.0]> : tile<4xf32>"), module=True)
neg("global", "alignment", _M.format("global @g alignment = 24 <f32: 0.0> : tile<4xf32>"), module=True)
neg("global", "top_level", "global @g <f32: 0.0> : tile<4xf32>")
neg("get_global", "get_global_result", _M.format("global @g <f32: 0.0> : tile<4xf32>\n"
                                                 "entry @k() {\n%p = get_global @g : tile<4xptr<f32>>\n}"),
    module=True)
neg("get_global", "global_symbol", _M.format("global @g <f32: 0.0> : tile<4xf32>\n"
                                             "entry @k() {\n%p = get_global @h : tile<ptr<f32>>\n}"),
    module=True)
neg("module", "module_items", "cuda_tile.module @empty {\n}\n", module=True)
neg("module", "module_kinds", _M.format("%c = constant <f32: 0.0> : tile<f32>"), module=True)
neg("module", "module_unique", _M.format("entry @k() {\n}\nentry @k() {\n}"), module=True)
