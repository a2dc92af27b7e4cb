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
    "pack_1": "f4E2M1FN is not an element type of chapter 5",
    "unpack_1": "F4E2M1FN is not an element type of chapter 5",
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
    printed = print_module(module)
    assert normalize(printed) == normalize(text), f"{name}:\n{text}\n--- printed ---\n{printed}"
    again = print_module(verify(parse_module(printed)))
    assert again == printed


@pytest.mark.parametrize("name", sorted(SKIP))
def test_skipped_examples_are_rejected(name):
    """The skipped listings really are invalid: the parser or the verifier says why."""
    from tilepy.errors import TileError
    with pytest.raises(TileError):
        verify(parse_module(source(name), name + ".mlir"))


def test_every_listing_is_classified():
    assert len(EXAMPLES) == 69
    assert set(SKIP) <= set(EXAMPLES) and set(FREE) <= set(EXAMPLES)
