"""Every example listing of the operations chapter that is a complete, valid program (bare
snippets wrapped in a kernel that defines their free values) parses, verifies, and prints back
to equivalent text; printing is a fixed point of parse-then-print."""
import os

import pytest

from ir_text_util import normalize, wrap
from tilepy.ir import parse_module, print_module, verify

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spec_examples")
EXAMPLES = sorted(f[:-5] for f in os.listdir(HERE) if f.endswith(".mlir"))

# Listings that are not valid programs, and why.
SKIP = {
    "reduce_0": "the combiner argument %input_arg is tile<2xf32>; reduce's arguments are 0-d tiles",
    "reduce_1": "reducing dim 0 of tile<8x64xf32> removes that dimension: the result is "
                "tile<64xf32>, not the tile<8xf32> the listing says",
    "return_0": "experimental$func: non-kernel tile functions are disabled (spec 6.2.3)",
    "assume_example_SameElements_0": "bitcasts a tile<4x8xi64> to tile<ptr<f32>>; bitcast rejects "
                                     "pointer types and the shape changes",
}

# Values the listings use without defining them: name -> type.
FREE = {
    "assert_0": {"%arg0": "tile<i1>"},
    "assume_0": {"%ptr_3d": "tile<1x8x8xptr<f32>>"},
    "assume_example_Bounded_0": {"%0": "tile<4x8xi16>"},
    "assume_example_DivBy_0": {"%ptrs": "tile<128xptr<f32>>"},
    "assume_example_DivBy_1": {"%t": "tile<128xi32>"},
    "assume_example_DivBy_2": {"%t": "tile<128xi32>"},
    "assume_example_DivBy_3": {"%t": "tile<4x8xi32>"},
    "assume_example_DivBy_4": {"%ptrs": "tile<4x8xptr<f32>>"},
    "atomic_cas_tko_0": {"%ptr": "tile<ptr<i32>>"},
    "atomic_rmw_tko_0": {"%ptr": "tile<ptr<f32>>"},
    "cat_0": {"%arg0": "tile<2x4xf32>", "%arg1": "tile<2x4xf32>"},
    "ceil_0": {"%source": "tile<f32>"},
    "get_index_space_shape_0": {"%base": "tile<ptr<f32>>"},
    "get_tensor_shape_0": {"%tensor_view": "tensor_view<32x32xf32, strides=[32,1]>"},
    "load_ptr_tko_0": {"%ptr": "tile<ptr<f32>>"},
    "load_view_tko_0": {"%ptr": "tile<ptr<f32>>", "%index": "tile<i32>"},
    "make_partition_view_0": {"%ptr": "tile<ptr<f32>>"},
    "make_tensor_view_0": {"%base": "tile<ptr<f32>>"},
    "maxf_0": {"%arg0": "tile<ptr<f32>>", "%arg1": "tile<ptr<f32>>"},
    "minf_0": {"%arg0": "tile<ptr<f32>>", "%arg1": "tile<ptr<f32>>"},
    "maxi_0": {"%arg0": "tile<ptr<i32>>", "%arg1": "tile<ptr<i32>>"},
    "mini_0": {"%arg0": "tile<ptr<i32>>", "%arg1": "tile<ptr<i32>>"},
    "print_tko_0": {"%arg": "tile<4xf32>"},
    "store_view_tko_0": {"%ptr": "tile<ptr<f32>>"},
}


def source(name: str) -> str:
    with open(os.path.join(HERE, name + ".mlir"), encoding="utf-8") as f:
        text = f.read()
    complete = any(line.startswith(("entry", "global", "cuda_tile.module")) for line in text.splitlines())
    if complete:
        return f"cuda_tile.module @kernels {{\n{text}}}\n"
    return wrap(text, FREE.get(name))


@pytest.mark.parametrize("name", [e for e in EXAMPLES if e not in SKIP])
def test_spec_example_round_trips(name):
    text = source(name)
    module = verify(parse_module(text, name + ".mlir"))
    printed = print_module(module, dialect="spec")
    assert normalize(printed) == normalize(text), f"{name}:\n{text}\n--- printed ---\n{printed}"
    again = print_module(verify(parse_module(printed)), dialect="spec")
    assert again == printed
    nvidia = print_module(module)           # NVIDIA's 13.4 text of the listing reads back too
    assert print_module(verify(parse_module(nvidia))) == nvidia


@pytest.mark.parametrize("name", sorted(SKIP))
def test_skipped_examples_are_rejected(name):
    """The skipped listings really are invalid: the parser or the verifier says why."""
    from tilepy.errors import TileError
    with pytest.raises(TileError):
        verify(parse_module(source(name), name + ".mlir"))


def test_every_listing_is_classified():
    assert len(EXAMPLES) == 69
    assert set(SKIP) <= set(EXAMPLES) and set(FREE) <= set(EXAMPLES)


def test_listings_are_the_spec_text():
    """The .mlir files are exactly what extract.py finds in the chapter (when it is available)."""
    from spec_examples import extract
    path = extract.spec_path()
    if path is None:
        pytest.skip("spec text not available")
    with open(path, encoding="utf-8") as f:
        found = extract.listings(f.read())
    assert sorted(found) == EXAMPLES
    for name, code in found.items():
        with open(os.path.join(HERE, name + ".mlir"), encoding="utf-8") as f:
            assert f.read() == code, name


# The chapter 5 type examples (5.3.1-5.3.3), with their spellings.
TYPE_EXAMPLES = [
    ("tile<2x8xf32>", "tile<2x8xf32>"), ("tile<f32>", "tile<f32>"), ("tile<ptr<f32>>", "tile<ptr<f32>>"),
    ("tile<4x8xptr<f32>>", "tile<4x8xptr<f32>>"),
    ("!cuda_tile.tensor_view<1024x1024xf16, strides=[1024,1]>", "tensor_view<1024x1024xf16, "
                                                                "strides=[1024,1]>"),
    ("!cuda_tile.tensor_view<32x16x32xf16, strides=[512,1,16]>", "tensor_view<32x16x32xf16, "
                                                                 "strides=[512,1,16]>"),
    ("!cuda_tile.tensor_view<?x?xf16, strides=[?,1]>", "tensor_view<?x?xf16, strides=[?,1]>"),
    ("!cuda_tile.tensor_view<?x16xf32, strides=[1,?]>", "tensor_view<?x16xf32, strides=[1,?]>"),
    ("!cuda_tile.partition_view<\n  tile=(2),\n  view=!cuda_tile.tensor_view<16xf32, strides=[1]>\n>",
     "partition_view<tile=(2), tensor_view<16xf32, strides=[1]>>"),
    ("!cuda_tile.partition_view<\n  tile=(2x2),\n  view=!cuda_tile.tensor_view<16x16xf32, strides=[16,1]>\n>",
     "partition_view<tile=(2x2), tensor_view<16x16xf32, strides=[16,1]>>"),
    ("!cuda_tile.partition_view<\n  tile=(2x2),\n  view=!cuda_tile.tensor_view<16x16xf32, strides=[16,1]>,\n"
     "  dim_map=[1, 0]\n>", "partition_view<tile=(2x2), tensor_view<16x16xf32, strides=[16,1]>, dim_map=[1, "
                            "0]>"),
    ("!cuda_tile.partition_view<\n  tile=(32x32),\n  view=!cuda_tile.tensor_view<16x16xf32, "
     "strides=[16,1]>,\n"
     "  padding_value=zero\n>", "partition_view<tile=(32x32), tensor_view<16x16xf32, strides=[16,1]>, "
                                "padding_value=zero>"),
    ("!cuda_tile.tile<128x!cuda_tile.ptr<f32>>", "tile<128xptr<f32>>"),
    ("tile<4xf8E4M3FN>", "tile<4xe4m3>"), ("token", "token"),
]


@pytest.mark.parametrize("text,canonical", TYPE_EXAMPLES)
def test_type_examples_parse_and_print(text, canonical):
    from tilepy.ir import parse_type
    t = parse_type(text)
    assert str(t) == canonical and parse_type(canonical) == t
