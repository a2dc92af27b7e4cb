import numpy as np
import pytest

import tilepy as ct
from tilepy.types import (BF16, E4M3, F16, F32, I1, I32, PartitionViewType, PtrType,
                          TensorViewType, TileType, element_type)


def test_tile_type_syntax():
    assert str(TileType((2, 8), F32)) == "tile<2x8xf32>"
    assert str(TileType((), F32)) == "tile<f32>"
    assert str(TileType((), PtrType(F32))) == "tile<ptr<f32>>"
    assert str(TileType((4, 8), PtrType(F16))) == "tile<4x8xptr<f16>>"


def test_view_type_syntax():
    tv = TensorViewType(F16, (None, None), (None, 1))
    assert str(tv) == "tensor_view<?x?xf16, strides=[?,1]>"
    pv = PartitionViewType((2, 2), TensorViewType(F32, (16, 16), (16, 1)), (1, 0), "zero")
    assert str(pv) == ("partition_view<tile=(2x2), tensor_view<16x16xf32, strides=[16,1]>, "
                       "dim_map=[1, 0], padding_value=zero>")


def test_structural_equality_and_hash():
    assert TileType((2, 4), F32) == TileType((2, 4), F32)
    assert hash(TileType((2, 4), F32)) == hash(TileType([2, 4], F32))
    assert TileType((2, 4), F32) != TileType((2, 4), F16)
    assert TensorViewType(F32, (None,), (1,)) != TensorViewType(F32, (8,), (1,))


@pytest.mark.parametrize("shape", [(3,), (2, 6), (0,), (8, 12)])
def test_tile_shapes_must_be_powers_of_two(shape):
    with pytest.raises(ct.TileTypeError, match="power-of-two"):
        TileType(shape, F32)


def test_element_types_and_numpy():
    assert element_type("f32") is F32
    assert element_type("f8E4M3FN") is E4M3
    assert ct.bfloat16.numpy.name == "bfloat16"
    assert ct.uint8.numpy == np.uint8 and ct.uint8.elem.name == "i8"
    assert ct.bool_.elem is I1
    assert BF16.storage_bytes == 2 and I32.bits == 32
    with pytest.raises(ct.TileTypeError):
        element_type("f7")
