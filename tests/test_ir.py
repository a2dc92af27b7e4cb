"""Tile IR: building with type rules, verifying, printing."""
import numpy as np
import pytest

from tilepy.errors import TileTypeError, TileVerificationError
from tilepy.ir import Block, Builder, DenseValue, Module, Region, make_op, print_module, verify
from tilepy.types import (BF16, F16, F32, I1, I32, PartitionViewType, PtrType, TensorViewType,
                          TileType, scalar_tile)


def const(b, elem, shape, value=0):
    arr = np.array(value, dtype={F32: np.float32, F16: np.float16, I32: np.int32, I1: bool}[elem])
    return b.value("constant", value=DenseValue(elem, arr), result_types=[TileType(shape, elem)])


def kernel_module(args=(), hints=None):
    m = Module("m")
    blk = Block(list(args), hints)
    m.append(make_op("entry", regions=[Region([blk])], sym_name="k"))
    return m, Builder(blk), blk


def test_build_verify_print(check):
    m, b, blk = kernel_module([scalar_tile(PtrType(F32)), scalar_tile(I32)], ["x", "n"])
    tv = b.value("make_tensor_view", blk.args[0], [blk.args[1]], [],
                 result_types=[TensorViewType(F32, (None,), (1,))])
    pv = b.value("make_partition_view", tv,
                 result_types=[PartitionViewType((64,), tv.type, padding_value="zero")])
    tok = b.value("make_token")
    i, _, _ = b.create("get_tile_block_id").results
    t, tok2 = b.create("load_view_tko", pv, [i], tok, memory_ordering_semantics="weak").results
    s = b.value("mulf", t, t, rounding_mode="zero")
    b.create("store_view_tko", s, pv, [i], tok2, memory_ordering_semantics="weak")
    b.create("return")
    verify(m)
    check(print_module(m), """
# CHECK: cuda_tile.module @m {
# CHECK: entry @k(%x: tile<ptr<f32>>, %n: tile<i32>) {
# CHECK: make_tensor_view %x, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
# CHECK: make_partition_view {{.*}} : partition_view<tile=(64), padding_value = zero, tensor_view<?xf32, strides=[1]>>
# CHECK: make_token : token
# CHECK: get_tile_block_id : tile<i32>
# CHECK: load_view_tko weak {{.*}}[{{.*}}] token = {{.*}} : partition_view<{{.*}}>, tile<i32> -> tile<64xf32>, token
# CHECK: mulf {{.*}} rounding<zero> : tile<64xf32>
# CHECK: store_view_tko weak {{.*}} -> token
# CHECK: return
""")


def test_builder_rule_names_the_broken_constraint():
    m, b, _ = kernel_module()
    x = const(b, F16, (4,))
    y = const(b, F32, (4,))
    with pytest.raises(TileTypeError, match=r"addf: lhs and rhs must have the same element type "
                                            r"\(got f16, f32\)"):
        b.value("addf", x, y)
    with pytest.raises(TileTypeError, match=r"addf: lhs must have element type"):
        b.value("addf", const(b, I32, (4,)), const(b, I32, (4,)))
    with pytest.raises(TileTypeError, match=r"mmaf: f32 inputs accumulate into f32 \(got acc "
                                            r"element type f16\)"):
        a = b.value("constant", value=DenseValue(F32, np.array(0, np.float32)),
                    result_types=[TileType((4, 8), F32)])
        c = const(b, F16, (4, 2))
        bb = b.value("constant", value=DenseValue(F32, np.array(0, np.float32)),
                     result_types=[TileType((8, 2), F32)])
        b.value("mmaf", a, bb, c)


def test_mmaf_shapes_and_types():
    m, b, _ = kernel_module()
    a, bb, c = const(b, F16, (4, 8)), const(b, F16, (8, 2)), const(b, F32, (4, 2))
    r = b.value("mmaf", a, bb, c)
    assert r.type == TileType((4, 2), F32)
    with pytest.raises(TileTypeError, match="valid matrix multiplication"):
        b.value("mmaf", a, const(b, F16, (4, 2)), c)


def test_verifier_reports_op_and_rule_with_ir():
    m, b, _ = kernel_module()
    x = const(b, F32, (4,))
    # Build an invalid op by hand (skipping the builder's checks) and let the verifier find it.
    bad = make_op("addf", x, const(b, F16, (4,)), result_types=[x.type], check=False)
    b.insert(bad)
    b.create("return")
    with pytest.raises(TileVerificationError) as e:
        verify(m)
    assert "addf: lhs and rhs must have the same element type (got f32, f16)" in str(e.value)
    assert "// error: addf" in str(e.value)


def test_verifier_checks_terminators_and_scoping():
    m, b, blk = kernel_module()
    x = const(b, F32, (4,))
    # no return at the end of the entry
    with pytest.raises(TileVerificationError, match="entry: region 'body' must end with return"):
        verify(m)
    b.create("return")
    verify(m)
    # use of a value outside its scope
    m2, b2, _ = kernel_module()
    inner = Block()
    with b2.at_end(inner):
        y = const(b2, F32, (4,))
        b2.create("yield")
    cond = const(b2, I1, (), True)
    b2.create("if", cond, result_types=[], regions=[Region([inner]), Region([])])
    b2.value("negf", y)
    b2.create("return")
    with pytest.raises(TileVerificationError, match="used before it is defined or outside its scope"):
        verify(m2)


def test_for_and_if_print(check):
    m, b, _ = kernel_module()
    lb, ub, st = const(b, I32, (), 0), const(b, I32, (), 10), const(b, I32, (), 1)
    init = const(b, F32, ())
    body = Block([scalar_tile(I32), scalar_tile(F32)], ["iv", "acc"])
    with b.at_end(body):
        nxt = b.value("addf", body.args[1], body.args[1])
        b.create("continue", [nxt])
    loop = b.create("for", lb, ub, st, [init], result_types=[init.type], regions=[Region([body])])
    then_b, else_b = Block(), Block()
    with b.at_end(then_b):
        b.create("yield", [loop.results[0]])
    with b.at_end(else_b):
        b.create("yield", [init])
    cond = const(b, I1, (), True)
    b.create("if", cond, result_types=[init.type], regions=[Region([then_b]), Region([else_b])])
    b.create("return")
    verify(m)
    check(print_module(m), """
# CHECK: = for %iv in (%{{[0-9]+}} to %{{[0-9]+}}, step %{{[0-9]+}}) : tile<i32> iter_values(%acc = %{{[0-9]+}}) -> (tile<f32>) {
# CHECK-NEXT: addf %acc, %acc : tile<f32>
# CHECK-NEXT: continue %{{[0-9]+}} : tile<f32>
# CHECK: = if %{{[0-9]+}} -> (tile<f32>) {
# CHECK: yield
# CHECK: } else {
""")


def test_for_with_mismatched_continue_is_rejected():
    m, b, _ = kernel_module()
    lb, ub, st = const(b, I32, (), 0), const(b, I32, (), 10), const(b, I32, (), 1)
    init = const(b, F32, ())
    body = Block([scalar_tile(I32), scalar_tile(F32)])
    with b.at_end(body):
        b.create("continue", [const(b, F16, ())])
    b.create("for", lb, ub, st, [init], result_types=[init.type], regions=[Region([body])])
    b.create("return")
    with pytest.raises(TileVerificationError, match="continue must yield the iter_values types"):
        verify(m)


def test_builder_checks_op_specific_attribute_values():
    m, b, _ = kernel_module()
    x = const(b, F32, (4,))
    h = const(b, F16, (4,))
    b.value("divf", x, x, rounding_mode="approx")               # approx: f32 only
    with pytest.raises(TileTypeError, match=r"divf: rounding<approx> is not supported for f16"):
        b.value("divf", h, h, rounding_mode="approx")
    with pytest.raises(TileTypeError, match=r"addf: attribute 'rounding_mode' must be one of "
                                            r"nearest_even, zero, negative_inf, positive_inf \(got full\)"):
        b.value("addf", x, x, rounding_mode="full")
    with pytest.raises(TileTypeError, match=r"addf: flush_to_zero is only supported for f32 \(got f16\)"):
        b.value("addf", h, h, flush_to_zero=True)
    with pytest.raises(TileTypeError, match=r"ftof: attribute 'rounding_mode' must be one of nearest_even"):
        b.value("ftof", x, rounding_mode="approx", result_types=[h.type])
    with pytest.raises(TileTypeError, match=r"ftof: conversions into bf16 take rounding<nearest_even>"):
        b.value("ftof", x, rounding_mode="negative_inf",          # not in NVIDIA's 13.4 table
                result_types=[h.type.with_elem(BF16)])
    i = const(b, I32, (4,))
    with pytest.raises(TileTypeError, match="negative_inf rounding is not valid with unsigned"):
        b.value("divi", i, i, signedness="unsigned", rounding="negative_inf")
    with pytest.raises(TileTypeError, match="unknown Tile IR op 'addx'"):
        b.value("addx", x, x)


def test_multi_result_ops_expose_their_result_and_get_global_resolves_symbols():
    from tilepy.ir import parse_module
    m = parse_module("""
      global @g <f32: [1.0, 2.0]> : tile<2xf32>
      entry @k() {
        %p = get_global @g : tile<ptr<f32>>
        %v, %t = load_ptr_tko weak %p : tile<ptr<f32>> -> tile<f32>, token
      }""")
    verify(m)
    load = next(o for o in m.walk() if o.name == "load_ptr_tko")
    assert load.result is load.results[0] and load.result_token is load.results[1]
    gg = next(o for o in m.walk() if o.name == "get_global")
    assert gg.name == "get_global" and gg.attrs["name"] == "g"
    gg.attrs["name"] = "nope"
    with pytest.raises(TileVerificationError, match="@nope does not name a global") as e:
        verify(m)
    assert e.value.rule == "global_symbol"


def test_hints_from_a_dict_and_tf32_constants_print_and_parse():
    from tilepy.ir import OptimizationHints, parse_module
    from tilepy.types import TF32
    m, b, blk = kernel_module([scalar_tile(PtrType(F32)), scalar_tile(I32)], ["x", "n"])
    tv = b.value("make_tensor_view", blk.args[0], [blk.args[1]], [],
                 result_types=[TensorViewType(F32, (None,), (1,))])
    pv = b.value("make_partition_view", tv, result_types=[PartitionViewType((16,), tv.type)])
    t, _ = b.create("load_view_tko", pv, [blk.args[1]], memory_ordering_semantics="weak",
                    optimization_hints={"sm_90": {"latency": 2}}).results
    c = b.value("constant", value=DenseValue(TF32, np.array(1 + 2 ** -12, np.float32)),
                result_types=[TileType((), TF32)])
    b.create("return")
    text = print_module(verify(m))
    assert "optimization_hints = <sm_90 = {latency = 2}>" in text and "<tf32: 1.000000e+00>" in text
    assert "optimization_hints=<sm_90 = {latency = 2}>" in print_module(m, dialect="spec")
    again = parse_module(text)
    load = next(o for o in again.walk() if o.name == "load_view_tko")
    assert load.optimization_hints == OptimizationHints.of({"sm_90": {"latency": 2}})
    assert print_module(again) == text and c.op.value.array == np.float32(1.0)
