"""The parser: the printer's text and the spec's spellings read back; located errors; the
modules the frontend builds survive print -> parse -> print unchanged."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tilepy as ct
from tilepy.errors import TileSyntaxError, TileVerificationError
from tilepy.ir import DenseValue, parse_module, print_module, verify
from tilepy.ir.attrs import format_scalar, scalar_storage
from tilepy.types import ELEMENT_TYPES, NUMPY_DTYPE
from tilepy.types.convert import decode_bits


def kernel(body: str, params: str = "") -> str:
    return f"cuda_tile.module @m {{\n  entry @k({params}) {{\n{body}\n  }}\n}}\n"


def roundtrip(text: str, dialect: str = "nvidia") -> str:
    printed = print_module(verify(parse_module(text)), dialect=dialect)
    assert print_module(verify(parse_module(printed)), dialect=dialect) == printed
    return printed


# ----------------------------------------------------------------------------- spellings
def test_spec_spellings_are_accepted_and_printed_canonically():
    text = """
    cuda_tile.module @m {
      cuda_tile.entry @k(%p: !cuda_tile.tile<!cuda_tile.ptr<f32>>) {
        %a = cuda_tile.constant <f8E4M3FN: 1.5> : !cuda_tile.tile<4xf8E4M3FN>
        %t = cuda_tile.iota : !cuda_tile.tile<8xi32>
        %d = cuda_tile.assume #cuda_tile.div_by<4>, %t : !cuda_tile.tile<8xi32>
        %b = cuda_tile.assume #bounded<?, 7>, %d : tile<8xi32>
        cuda_tile.return
      }
    }"""
    printed = roundtrip(text, dialect="spec")
    assert "constant <e4m3: 1.5> : tile<4xe4m3>" in printed
    assert "%d = assume div_by<4>, %t : tile<8xi32>" in printed
    assert "%b = assume bounded<?, 7>, %d : tile<8xi32>" in printed
    assert "cuda_tile." not in printed.split("\n", 1)[1]
    nvidia = roundtrip(text)       # NVIDIA's 13.4 spelling: f8E4M3FN, MLIR's float literals
    assert "constant <f8E4M3FN: 1.500000e+00> : tile<4xf8E4M3FN>" in nvidia
    assert "%b = assume bounded<?, 7>, %d : tile<8xi32>" in nvidia


def test_unknown_dialect_is_refused():
    from tilepy.errors import TileValueError
    with pytest.raises(TileValueError, match="dialect must be one of nvidia, spec"):
        print_module(parse_module(kernel("")), dialect="13.1")


def test_implicit_terminators_are_made_explicit():
    """The parser adds them; the spec dialect prints them, NVIDIA's leaves out an if's bare
    `yield` and a loop's bare `continue` (as tileirdisasm does)."""
    text = kernel("""
      %c = constant <i1: 1> : tile<i1>
      if %c { }
      loop { if %c { break } }""")
    m = parse_module(text)
    names = [o.name for o in m.walk()]
    assert names.count("yield") == 1 and "continue" in names
    printed = roundtrip(text, dialect="spec")
    assert printed.count("yield") == 1 and "continue" in printed and printed.rstrip().endswith(
        "return\n  }\n}")
    nvidia = roundtrip(text)
    assert "yield" not in nvidia and "continue" not in nvidia and "break" in nvidia


def test_bare_items_parse_as_a_module():
    m = parse_module("global @g <i8: [1, 2]> : tile<2xi8>\nentry @k() {}")
    assert [it.name for it in m.items] == ["global", "entry"] and verify(m)


def test_strings_and_special_floats_round_trip():
    printed = roundtrip(kernel(r"""
      %x = constant <f32: [0x7F800000, 0xFF800000, 0x7FC00000, -0.0]> : tile<4xf32>
      %h = constant <f16: 0x7C00> : tile<f16>
      %t = print_tko "tab\there \"quoted\" 50%% \\ done\n" -> token
      assert %c, "a \01 b" : tile<i1>""".replace("assert %c", "%c = constant <i1: false> : tile<i1>\n"
                                                "      assert %c")))
    m = parse_module(printed)
    consts = [o for o in m.walk() if o.name == "constant"]
    bits = consts[0].value.array.view(np.uint32)
    assert list(bits) == [0x7F800000, 0xFF800000, 0x7FC00000, 0x80000000]
    assert consts[1].value.array.view(np.uint16) == 0x7C00
    assert next(o for o in m.walk() if o.name == "print_tko").str == 'tab\there "quoted" 50%% \\ done\n'
    assert next(o for o in m.walk() if o.name == "assert").message == "a \x01 b"


@pytest.mark.parametrize("name", sorted(ELEMENT_TYPES))
@settings(max_examples=40, deadline=None)
@given(raw=st.binary(min_size=8, max_size=8))
@example(raw=b"\xff" * 8)           # all-ones: NaN in most types (e5m3's one NaN code)
@example(raw=b"\x81\x7f" + bytes(6))  # a signaling NaN of bf16 (0x7f81)
def test_every_element_value_prints_and_parses_back_bit_exactly(name, raw):
    elem = ELEMENT_TYPES[name]
    dt = NUMPY_DTYPE[elem]
    u = np.frombuffer(raw[:dt.itemsize], dtype=f"u{dt.itemsize}").copy()
    if name == "tf32":
        u &= np.uint32(0xFFFFE000)
    if name in ("e2m1", "e5m3"):      # held in float32: every value is one of the type's codes
        code = raw[0] & (0xF if name == "e2m1" else 0xFF)
        v = decode_bits(np.array([code], np.uint8), elem).reshape(())
    else:
        v = np.array(bool(raw[0] & 1)) if name == "i1" else u.view(dt).reshape(())
    text = format_scalar(v[()], elem)
    back = scalar_storage(text, elem)
    def isnan(x):
        with np.errstate(invalid="ignore"):      # a signaling NaN raises 'invalid' when cast
            return elem.is_float and bool(np.isnan(x.astype(np.float64)))
    if isnan(v):
        assert isnan(back)
    else:
        assert back.tobytes() == np.asarray(v, dtype=dt).tobytes(), text
    assert DenseValue(elem, back) == DenseValue(elem, np.asarray(back))


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("body,line,col,message", [
    ("%a = addf %x, %x : tile<f32>", 3, 10, "use of undefined value %x"),
    ("%a = frobnicate : tile<f32>", 3, 5, "unknown op 'frobnicate'"),
    ("%a = iota : tile<4xi32>\n%a = iota : tile<4xi32>", 4, 0, "redefinition of %a"),
    ("%a = iota : tile<3xi32>", 3, 12, "power-of-two"),
    ("%a = constant <f7: 1.0> : tile<f7>", 3, 15, "unknown element type 'f7'"),
    ("%a = constant <i8: 300> : tile<i8>", 3, 19, "300 does not fit in i8"),
    ("%a = constant <f32: [[1.0], [2.0, 3.0]]> : tile<2x2xf32>", 3, 20, "not rectangular"),
    ("%a = iota : tile<4xi32>\n%b = cmpi less %a, %a, signed : tile<4xi32> -> tile<4xi1>", 4, 10,
     "'less' is not a ComparisonPredicate"),
    ("%a, %b = iota : tile<4xi32>", 3, 0, "iota has 1 result(s) but 2 name(s) are bound"),
    ("%a = iota : tile<4xi32>\n%b = mmaf %a, %a, %a : tile<4xi64>, tile<4xi32>, tile<4xi32>", 4, 23,
     "%a has type tile<4xi32>, but the text says tile<4xi64>"),
    ("%a = iota : tile<4xi32>\nreturn %a", 5, 0, "expected ':', found '}'"),
])
def test_syntax_errors_are_located(body, line, col, message):
    text = "cuda_tile.module @m {\nentry @k() {\n" + body + "\n}\n}\n"
    with pytest.raises(TileSyntaxError) as e:
        parse_module(text, "bad.mlir")
    assert message in e.value.message
    assert (e.value.loc.file, e.value.loc.line, e.value.loc.col) == ("bad.mlir", line, col)
    assert f"bad.mlir:{line}:{col + 1}" in str(e.value) and "^" in str(e.value)


def test_unclosed_module_and_trailing_text():
    with pytest.raises(TileSyntaxError, match="expected '}'"):
        parse_module("cuda_tile.module @m {\nentry @k() {\n")
    with pytest.raises(TileSyntaxError, match="unexpected text after the module"):
        parse_module("cuda_tile.module @m {\nentry @k() {}\n} garbage")


def test_verifier_errors_point_at_the_mlir_line():
    text = kernel("    %a = constant <f16: 1.0> : tile<4xf16>\n    %b = constant <f32: 1.0> : tile<4xf32>\n"
                  "    %c = addf %a, %b : tile<4xf16>")
    with pytest.raises(TileVerificationError) as e:
        verify(parse_module(text, "k.mlir"))
    assert e.value.message == "addf: lhs and rhs must have the same element type (got f16, f32)"
    assert e.value.rule == "same_elem(lhs,rhs)"
    assert (e.value.loc.file, e.value.loc.line) == ("k.mlir", 5)
    assert "// error: addf" in str(e.value)


def test_sibling_regions_may_reuse_names_and_printing_keeps_them():
    printed = roundtrip(kernel("""
      %c = constant <i1: 1> : tile<i1>
      %r = if %c -> (tile<f32>) {
        %v = constant <f32: 1.0> : tile<f32>
        yield %v : tile<f32>
      } else {
        %v = constant <f32: 2.0> : tile<f32>
        yield %v : tile<f32>
      }"""))
    assert printed.count("%v = constant") == 2
    with pytest.raises(TileSyntaxError, match="redefinition of %c"):
        parse_module(kernel("%c = constant <i1: 1> : tile<i1>\nif %c {\n%c = constant <i1: 0> : tile<i1>\n}"))


# ----------------------------------------------------------------------------- frontend modules
@ct.kernel
def _vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(a, index=(i,), shape=(TILE,)) + ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=t)


@ct.kernel
def _mm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


@ct.kernel
def _softmaxish(x, y, flag):
    t = ct.load(x, (0, 0), (4, 16))
    if flag > 0:
        t = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    else:
        t = -t
    ct.store(y, (0, 0), ct.sum(t, axis=1, keepdims=True) + t)


@pytest.mark.parametrize("make", [
    lambda: _vadd.mlir(*(np.zeros(100, np.float32),) * 3, 16),
    lambda: _mm.mlir(np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16),
                     np.zeros((64, 64), np.float32), 32, 32, 16),
    lambda: _softmaxish.mlir(np.zeros((4, 16), np.float32), np.zeros((4, 16), np.float32), 1),
], ids=["vadd", "matmul", "if_reduce"])
def test_frontend_modules_round_trip(make):
    text = make()
    assert roundtrip(text) == text


@pytest.mark.parametrize("elem, dtype", [("f32", np.float32), ("i8", np.int8), ("i1", np.bool_),
                                         ("tf32", np.float32), ("bf16", None)])
def test_large_constants_print_as_hex_and_read_back(elem, dtype):
    """NVIDIA's printer (MLIR) spells a constant of more than 100 elements as its raw bytes,
    `"0x..."` (i1 one byte an element, tf32 three); the parser reads that back in the type's
    shape. The spec dialect keeps the element list."""
    vals = np.arange(-64, 64).reshape(8, 16) % 7 * 0.5
    lits = [[("true" if v else "false") if elem == "i1" else repr(float(v) if elem[0] in "bt"
             or elem == "f32" else int(v)) for v in row] for row in vals]
    body = "[" + ", ".join("[" + ", ".join(r) + "]" for r in lits) + "]"
    text = kernel(f"%c = constant <{elem}: {body}> : tile<8x16x{elem}>")
    m = verify(parse_module(text))
    nvidia = print_module(m)
    assert f'constant <{elem}: "0x' in nvidia
    again = verify(parse_module(nvidia))
    assert print_module(again) == nvidia
    assert print_module(again, dialect="spec") == print_module(m, dialect="spec")


def test_a_uniform_i1_constant_prints_as_a_splat():
    m = verify(parse_module(kernel("%c = constant <i1: [[true, true]]> : tile<1x2xi1>")))
    assert "constant <i1: true> : tile<1x2xi1>" in print_module(m)
    assert "[[true, true]]" in print_module(m, dialect="spec")


def test_bad_hex_constant_is_located():
    with pytest.raises(TileSyntaxError, match="not the hex bytes of f32"):
        parse_module(kernel('%c = constant <f32: "0x123"> : tile<2xf32>'))
