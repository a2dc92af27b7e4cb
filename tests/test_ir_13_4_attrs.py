"""NVIDIA's 13.3/13.4 attributes on ops tilepy already had, through the whole table: verified,
printed (both dialects), parsed, written to bytecode and read back, run by the interpreter and
the C++ (CPU) backend. tileirdisasm (NVIDIA's reader and verifier) checks the bytecode where the
wheel is installed (tests/test_bytecode.py also compares its text with tilepy's)."""
import numpy as np
import pytest

import bytecode_util as bu
import tilepy.interpret as interp
from tilepy.bytecode import read_module, write_module
from tilepy.errors import TileError, TileUnsupportedFeatureError, TileValueError
from tilepy.ir import parse_module, print_module, verify

needs_tool = pytest.mark.skipif(bu.TILEIRDISASM is None, reason="tileirdisasm not installed")


def module(body: str, params: str = "", items: str = "") -> str:
    return f"cuda_tile.module @m {{\n{items}\nentry @k({params}) {{\n{body}\nreturn\n}}\n}}\n"


def ops(m, name):
    return [o for o in m.walk() if o.name == name]


# 16 f32 elements seen as one 1-d view of `tile` elements
_VIEW = ("%tv = make_tensor_view %p, shape = [16], strides = [1] : tensor_view<16xf32, strides=[1]>\n"
         "%pv = make_partition_view %tv : partition_view<tile=({tile}), tensor_view<16xf32, "
         "strides=[1]>>\n")
_PV_T = "partition_view<tile=({tile}), tensor_view<16xf32, strides=[1]>>"


def _view_kernel(tile: int, index: int, flags: str, body: str) -> str:
    return module(_VIEW.format(tile=tile) + f"%i = constant <i32: {index}> : tile<i32>\n"
                  + body.format(pv_t=_PV_T.format(tile=tile), flags=flags, tile=tile),
                  "%p: tile<ptr<f32>>")


_LOAD_STORE = ("%t, %k = load_view_tko weak %pv[%i] {flags} : {pv_t}, tile<i32> -> tile<{tile}xf32>, token\n"
               "%d = addf %t, %t : tile<{tile}xf32>\n"
               "%k2 = store_view_tko weak %d, %pv[%i] token = %k {flags} : tile<{tile}xf32>, {pv_t}, "
               "tile<i32> -> token")


# ------------------------------------------------------------------------------------ inbounds
def test_inbounds_prints_parses_and_round_trips_through_bytecode():
    m = verify(parse_module(_view_kernel(8, 1, "inbounds = [true]", _LOAD_STORE)))
    assert [o.attrs.get("inbounds") for o in ops(m, "load_view_tko") + ops(m, "store_view_tko")] \
        == [(True,), (True,)]
    for dialect in ("nvidia", "spec"):
        text = print_module(m, dialect=dialect)
        assert text.count("inbounds = [true]") == 2
        assert print_module(verify(parse_module(text)), dialect=dialect) == text
    back = read_module(write_module(m))
    assert [o.attrs.get("inbounds") for o in ops(back, "load_view_tko")] == [(True,)]
    with pytest.raises(TileUnsupportedFeatureError, match="needs bytecode 13.4"):
        write_module(m, (13, 3))


def test_inbounds_all_false_is_the_op_without_it():
    m = verify(parse_module(_view_kernel(8, 1, "inbounds = [false]", _LOAD_STORE)))
    assert "inbounds" not in print_module(m)
    assert write_module(m) == write_module(parse_module(_view_kernel(8, 1, "", _LOAD_STORE)))


def test_inbounds_needs_one_entry_per_index():
    with pytest.raises(TileError, match="inbounds needs one entry per index"):
        verify(parse_module(_view_kernel(8, 1, "inbounds = [true, false]", _LOAD_STORE)))


def test_inbounds_kept_runs_and_broken_is_reported():
    """A promise kept changes nothing (interpreter and C++); a tile reaching past the tensor's
    edge at an index marked inbounds is undefined behavior: the interpreter says so."""
    from tilepy.api.compiler import compile_module
    text = _view_kernel(8, 1, "inbounds = [true]", _LOAD_STORE)
    a = np.arange(16, dtype=np.float32)
    ref, got = a.copy(), a.copy()
    interp.run(parse_module(text), 1, [ref])
    compile_module(parse_module(text)).run_cpu(1, [got])
    want = np.concatenate([a[:8], 2 * a[8:]])
    assert np.array_equal(ref, want) and np.array_equal(got, want)
    pv_t = "partition_view<tile=(32), padding_value = zero, tensor_view<16xf32, strides=[1]>>"
    def broken(flags):
        return parse_module(module(
            "%tv = make_tensor_view %p, shape = [16], strides = [1] : tensor_view<16xf32, "
            f"strides=[1]>\n%pv = make_partition_view %tv : {pv_t}\n%i = constant <i32: 0> : "
            f"tile<i32>\n%t, %k = load_view_tko weak %pv[%i] {flags} : {pv_t}, tile<i32> -> "
            "tile<32xf32>, token", "%p: tile<ptr<f32>>"))
    interp.run(broken(""), 1, [a.copy()])             # padded past the edge: fine
    with pytest.raises(TileValueError, match="marked inbounds.*past the tensor's extent 16"):
        interp.run(broken("inbounds = [true]"), 1, [a.copy()])


# ---------------------------------------------------------------------------------- saturating
_FTOI = ("%x = constant <f32: [1.0e10, -1.0e10, 0x7F800000, 0xFF800000, 0x7FC00000, -2.5, 3.5, 0.0]>"
         " : tile<8xf32>\n%r = ftoi %x signed {sat} : tile<8xf32> -> tile<8xi16>\n"
         "%tv = make_tensor_view %p, shape = [8], strides = [1] : tensor_view<8xi16, strides=[1]>\n"
         "%pv = make_partition_view %tv : partition_view<tile=(8), tensor_view<8xi16, strides=[1]>>\n"
         "%i = constant <i32: 0> : tile<i32>\n"
         "%k = store_view_tko weak %r, %pv[%i] : tile<8xi16>, partition_view<tile=(8), "
         "tensor_view<8xi16, strides=[1]>>, tile<i32> -> token")


def test_ftoi_saturating_clamps_infinities_in_the_interpreter_and_cpp():
    from tilepy.api.compiler import compile_module
    text = module(_FTOI.format(sat="saturating"), "%p: tile<ptr<i16>>")
    m = verify(parse_module(text))
    assert ops(m, "ftoi")[0].attrs["saturating"] is True
    assert "signed saturating :" in print_module(m)
    assert ops(read_module(write_module(m)), "ftoi")[0].attrs.get("saturating") is True
    with pytest.raises(TileUnsupportedFeatureError, match="needs bytecode 13.4"):
        write_module(m, (13, 3))
    want = [32767, -32768, 32767, -32768, 0, -2, 3, 0]
    ref, got = np.zeros(8, np.int16), np.zeros(8, np.int16)
    interp.run(parse_module(text), 1, [ref])
    compile_module(parse_module(text)).run_cpu(1, [got])
    assert ref.tolist() == want and got.tolist() == want


def test_ftoi_without_saturating_leaves_inf_undefined():
    text = module(_FTOI.format(sat=""), "%p: tile<ptr<i16>>")
    with pytest.raises(TileError, match="converting Inf to an integer"):
        interp.run(parse_module(text), 1, [np.zeros(8, np.int16)])


# ---------------------------------------------------------------------------- exp, mmaf
@pytest.mark.parametrize("mode", ["approx", "full"])
def test_exp_rounding_runs_in_the_interpreter_and_cpp(mode):
    from tilepy.api.compiler import compile_module
    body = (_VIEW.format(tile=16) + "%i = constant <i32: 0> : tile<i32>\n"
            f"%t, %k = load_view_tko weak %pv[%i] : {_PV_T.format(tile=16)}, tile<i32> -> tile<16xf32>, token\n"
            f"%e = exp %t rounding<{mode}> : tile<16xf32>\n"
            f"%k2 = store_view_tko weak %e, %pv[%i] token = %k : tile<16xf32>, {_PV_T.format(tile=16)}, "
            "tile<i32> -> token")
    text = module(body, "%p: tile<ptr<f32>>")
    assert ops(verify(parse_module(text)), "exp")[0].attrs["rounding_mode"] == mode
    a = np.linspace(-3, 3, 16, dtype=np.float32)
    ref, got = a.copy(), a.copy()
    interp.run(parse_module(text), 1, [ref])
    compile_module(parse_module(text)).run_cpu(1, [got])
    want = np.exp(a.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert (np.abs(ref - want) <= 2 * ulp).all() and (np.abs(got - want) <= 2 * ulp).all()


def test_exp_approx_is_f32_only():
    text = module("%a = constant <f16: 1.0> : tile<4xf16>\n%e = exp %a rounding<approx> : tile<4xf16>")
    with pytest.raises(TileError, match="approx"):
        verify(parse_module(text))


def test_mmaf_fast_acc_is_an_attribute_and_computes_the_same():
    from tilepy.api.compiler import compile_module
    body = ("%x = constant <f16: 1.5> : tile<16x16xf16>\n%c = constant <f32: 0.25> : tile<16x16xf32>\n"
            "%r = mmaf %x, %x, %c fast_acc : tile<16x16xf16>, tile<16x16xf16>, tile<16x16xf32>\n"
            "%tv = make_tensor_view %p, shape = [16, 16], strides = [16, 1] : tensor_view<16x16xf32, strides=[16,1]>\n"
            "%pv = make_partition_view %tv : partition_view<tile=(16x16), tensor_view<16x16xf32, strides=[16,1]>>\n"
            "%i = constant <i32: 0> : tile<i32>\n"
            "%k = store_view_tko weak %r, %pv[%i, %i] : tile<16x16xf32>, partition_view<tile=(16x16), "
            "tensor_view<16x16xf32, strides=[16,1]>>, tile<i32> -> token")
    text = module(body, "%p: tile<ptr<f32>>")
    m = verify(parse_module(text))
    assert ops(m, "mmaf")[0].attrs["fast_acc"] is True and " fast_acc :" in print_module(m)
    ref, got = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    interp.run(parse_module(text), 1, [ref])
    compile_module(parse_module(text)).run_cpu(1, [got])
    assert (ref == 36.25).all() and (got == 36.25).all()


# ---------------------------------------------------------------------------- globals
_GLOBALS = ("global private constant @g alignment = 64 <i32: [1, 2, 3, 4]> : tile<4xi32>\n"
            "global constant @h <f16: 0.5> : tile<8xf16>\nglobal public @q <f16: 0.5> : tile<8xf16>")


def test_global_constant_and_visibility_print_parse_and_round_trip():
    m = verify(parse_module(module("", items=_GLOBALS)))
    g, h, q = m.items[:3]
    assert (g.attrs["symbol_visibility"], g.attrs["constant"]) == ("private", True)
    assert h.attrs["constant"] is True and q.attrs["symbol_visibility"] == "public"
    text = print_module(m)
    assert "global private constant @g alignment = 64" in text and "global constant @h" in text
    assert "global @q" in text                          # public is the default: not printed
    back = read_module(write_module(m))
    assert [(b.attrs.get("symbol_visibility"), b.attrs.get("constant")) for b in back.items[:3]] \
        == [("private", True), (None, True), (None, None)]
    with pytest.raises(TileUnsupportedFeatureError, match="needs bytecode 13.3"):
        write_module(m, (13, 2))


def test_a_store_into_a_constant_global_is_reported():
    body = ("%gp = get_global @g : tile<ptr<i32>>\n%p1 = reshape %gp : tile<ptr<i32>> -> tile<1xptr<i32>>\n"
            "%v = constant <i32: 9> : tile<1xi32>\n"
            "%k = store_ptr_tko weak %p1, %v : tile<1xptr<i32>>, tile<1xi32> -> token")
    interp.run(parse_module(module(body, items=_GLOBALS.replace("constant @g", "@g"))), 1, [])
    with pytest.raises(TileValueError, match="store into @g, a constant global"):
        interp.run(parse_module(module(body, items=_GLOBALS)), 1, [])


# ---------------------------------------------------------------------------- NVIDIA's verifier
@needs_tool
@pytest.mark.parametrize("text", [
    _view_kernel(8, 1, "inbounds = [true]", _LOAD_STORE),
    module(_FTOI.format(sat="saturating"), "%p: tile<ptr<i16>>"),
    module("", items=_GLOBALS),
], ids=["inbounds", "saturating", "globals"])
def test_nvidia_accepts_and_prints_the_same(text):
    m = parse_module(text)
    result = bu.disasm(write_module(m))
    assert result.returncode == 0, result.stderr
    assert bu.canonical_text(print_module(m)) == bu.canonical_text(result.stdout)


def test_exp_approx_and_inbounds_compile_with_nvrtc():
    """The GPU source: exp rounding<approx> is the fast exp (`tp::op::exp_approx`, ex2.approx
    on the GPU), and it compiles with NVRTC (no GPU needed)."""
    from tilepy.api.compiler import compile_module
    from tilepy.launch.nvrtc import compile_cubin
    pv_t = _PV_T.format(tile=16)
    body = (_VIEW.format(tile=16) + "%i = constant <i32: 0> : tile<i32>\n"
            f"%t, %k = load_view_tko weak %pv[%i] inbounds = [true] : {pv_t}, tile<i32> -> "
            "tile<16xf32>, token\n%e = exp %t rounding<approx> : tile<16xf32>\n"
            f"%k2 = store_view_tko weak %e, %pv[%i] token = %k : tile<16xf32>, {pv_t}, tile<i32> -> token")
    cm = compile_module(parse_module(module(body, "%p: tile<ptr<f32>>")))
    assert "tp::op::exp_approx{}" in cm.cuda_source
    assert len(compile_cubin(cm.compile_source(), "sm_90", "k").data) > 0
