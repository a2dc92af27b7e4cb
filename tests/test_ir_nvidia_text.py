"""tilepy's parser reads NVIDIA's printed Tile IR (tileirdisasm, 13.4) beside the spec's listings:
hand-written listings in NVIDIA's syntax, one per difference (tests/test_bytecode.py reads
NVIDIA's own printout of every corpus module)."""
import pytest

from tilepy.ir.parser import parse_module
from tilepy.ir.verifier import verify


def _module(body: str, params: str = "") -> str:
    return f"cuda_tile.module @m {{\nentry @k({params}) {{\n{body}\nreturn\n}}\n}}\n"


def _ops(text: str):
    module = parse_module(text)
    verify(module)
    return [o for o in module.walk() if o.name != "entry"]


def test_partition_view_with_padding_before_the_view():
    ops = _ops(_module(
        "%v = make_tensor_view %p, shape = [%n], strides = [1] : tile<i32> -> "
        "tensor_view<?xf32, strides=[1]>\n"
        "%pv = make_partition_view %v : partition_view<tile=(16), padding_value = zero, "
        "tensor_view<?xf32, strides=[1]>>", "%p: tile<ptr<f32>>, %n: tile<i32>"))
    t = ops[1].result.type
    assert t.padding_value == "zero" and t.tile_shape == (16,)


def test_multi_result_groups_and_their_uses():
    ops = _ops(_module("%c = constant <i1: true> : tile<i1>\n"
                       "%1:2 = if %c -> (tile<f32>, tile<i32>) {\n"
                       "%a = constant <f32: 1.0> : tile<f32>\n%b = constant <i32: 2> : tile<i32>\n"
                       "yield %a, %b : tile<f32>, tile<i32>\n} else {\n"
                       "%a = constant <f32: 3.0> : tile<f32>\n%b = constant <i32: 4> : tile<i32>\n"
                       "yield %a, %b : tile<f32>, tile<i32>\n}\n"
                       "%2 = addi %1#1, %1#1 : tile<i32>"))
    add = ops[-2]
    assert add.name == "addi" and add.lhs is ops[1].results[1]


def test_atomic_rmw_token_without_a_comma():
    ops = _ops(_module(
        "%m = constant <i1: true> : tile<i1>\n%v = constant <f32: 1.0> : tile<f32>\n"
        "%t = make_token : token\n"
        "%r, %rt = atomic_rmw_tko relaxed device %p, addf, %v, %m token=%t : tile<ptr<f32>>, "
        "tile<f32>, tile<i1> -> tile<f32>, token", "%p: tile<ptr<f32>>"))
    rmw = ops[3]
    assert rmw.mask is ops[0].result and rmw.token is ops[2].result


@pytest.mark.parametrize("flags", ["flush_to_zero propagate_nan", "propagate_nan flush_to_zero"])
def test_flags_in_either_order(flags):
    ops = _ops(_module("%a = constant <f32: 1.0> : tile<4xf32>\n"
                       f"%r = maxf %a, %a {flags} : tile<4xf32>"))
    assert ops[1].attrs["flush_to_zero"] and ops[1].attrs["propagate_nan"]


def test_fpowf_is_pow():
    ops = _ops(_module("%a = constant <f32: 2.0> : tile<4xf32>\n"
                       "%r = fpowf %a, %a : tile<4xf32>"))
    assert ops[1].name == "pow"


def test_for_unsigned_before_the_induction_variable():
    ops = _ops(_module(
        "%lo = constant <i64: 0> : tile<i64>\n%hi = constant <i64: 8> : tile<i64>\n"
        "%st = constant <i64: 1> : tile<i64>\n"
        "for unsigned %i in (%lo to %hi, step %st) : tile<i64> {\ncontinue\n}"))
    assert ops[3].name == "for" and ops[3].attrs["unsignedCmp"]


@pytest.mark.parametrize("literal, elem", [("0", "i64"), ("-3", "i64"), ("1.5", "f64")])
def test_identities_with_mlir_default_types(literal, elem):
    ops = _ops(_module(
        f"%a = constant <{elem}: 1> : tile<8x{elem}>\n"
        f"%r = reduce %a dim=0 identities=[{literal}] : tile<8x{elem}> -> tile<{elem}>\n"
        f"(%x: tile<{elem}>, %y: tile<{elem}>) {{\n"
        f"%s = {'addi' if elem == 'i64' else 'addf'} %x, %y : tile<{elem}>\n"
        f"yield %s : tile<{elem}>\n}}"))
    assert str(ops[1].identities[0].elem) == elem
