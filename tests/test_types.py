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


# ----------------------------------------------------------------------------- data layout
def test_data_layout_table_of_6_3_1():
    """DLPack code/bits/lanes, numpy and torch per the spec's table (i1: 8-bit storage, no
    torch type; tf32 has no row and is stored as float32)."""
    import ml_dtypes
    from tilepy.types import (DATA_LAYOUT, DLPACK_CODE, E5M2, F64, I8, I64, NUMPY_DTYPE, TF32,
                              TORCH_DTYPE_NAME, elem_from_dlpack, elem_from_numpy)
    assert (DATA_LAYOUT[I1].dlpack_bits, DATA_LAYOUT[I1].dlpack_lanes, DATA_LAYOUT[I1].torch) == (8, 1, None)
    assert DLPACK_CODE[BF16] == (4, 16) and DLPACK_CODE[E4M3] == (10, 8) and DLPACK_CODE[E5M2] == (12, 8)
    assert DLPACK_CODE[I64] == (0, 64) and DLPACK_CODE[F64] == (2, 64)
    assert NUMPY_DTYPE[E4M3] == np.dtype(ml_dtypes.float8_e4m3fn) and NUMPY_DTYPE[TF32] == np.float32
    assert TORCH_DTYPE_NAME[E4M3] == "float8_e4m3fn" and I1 not in TORCH_DTYPE_NAME
    assert TF32 not in DATA_LAYOUT and TF32 not in DLPACK_CODE
    for elem, row in DATA_LAYOUT.items():
        assert elem_from_dlpack(row.dlpack_code, row.dlpack_bits) is elem
        assert elem_from_numpy(row.numpy) is elem
        assert row.numpy.itemsize == elem.storage_bytes == row.dlpack_bits // 8
    assert elem_from_numpy(np.uint16).name == "i16" and elem_from_numpy(np.uint8) is I8
    with pytest.raises(ct.TileTypeError):
        elem_from_dlpack(5, 64)          # complex
    with pytest.raises(ct.TileTypeError):
        elem_from_numpy(np.complex64)


def test_element_sizes_and_ranges():
    from tilepy.types import ELEMENT_TYPES, I8
    sizes = {n: e.bits for n, e in ELEMENT_TYPES.items()}
    assert sizes == {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16,
                     "f32": 32, "f64": 64, "tf32": 32, "e4m3": 8, "e5m2": 8, "e8m0": 8,
                     "e2m1": 4, "e5m3": 8}
    assert I8.int_range(True) == (-128, 127) and I8.int_range(False) == (0, 255)
    assert I1.int_range(True) == (-1, 0) and I1.int_range(False) == (0, 1)
    assert [e.name for e in ELEMENT_TYPES.values() if e.alternative] == ["bf16", "tf32", "e4m3", "e5m2",
                                                                         "e8m0", "e2m1", "e5m3"]
    from tilepy.types import E2M1, E5M3
    assert (E2M1.max_finite, E2M1.smallest_subnormal) == (6.0, 0.5)
    assert (E5M3.max_finite, E5M3.smallest_subnormal) == (114688.0, 2.0 ** -17)
    assert element_type("f4E2M1FN") is E2M1 and element_type("f8E5M3FNU") is E5M3
    assert element_type("f8E5M2").name == "e5m2" and element_type("fp8e4m3fn") is E4M3


def test_structural_equality_of_every_type():
    from tilepy.types import TOKEN, TokenType
    a = PartitionViewType((2, 2), TensorViewType(F32, (16, None), (None, 1)), (1, 0), "zero")
    b = PartitionViewType([2, 2], TensorViewType(F32, [16, None], [None, 1]), [1, 0], "zero")
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != PartitionViewType((2, 2), TensorViewType(F32, (16, None), (None, 1)), (1, 0), "nan")
    assert a != PartitionViewType((2, 2), TensorViewType(F32, (16, None), (None, 1)))
    assert PtrType(F16) == PtrType(F16) and PtrType(F16) != PtrType(BF16)
    assert TileType((), PtrType(F16)) != TileType((), F16)
    assert TokenType() == TOKEN and hash(TokenType()) == hash(TOKEN)
    assert len({TileType((4,), F32), TileType([4], F32), TensorViewType(F32, (4,), (1,))}) == 2


@pytest.mark.parametrize("make,match", [
    (lambda: TileType((4,), "f32"), "element type or ptr"),
    (lambda: TensorViewType(F32, (-1,), (1,)), "non-negative"),
    (lambda: TensorViewType(F32, (4,), (1, 1)), "same rank"),
    (lambda: PartitionViewType((3,), TensorViewType(F32, (4,), (1,))), "power-of-two"),
    (lambda: PartitionViewType((2, 2), TensorViewType(F32, (4,), (1,))), "tile rank"),
    (lambda: PartitionViewType((2, 2), TensorViewType(F32, (4, 4), (4, 1)), (0, 0)), "permutation"),
    (lambda: PartitionViewType((2,), TensorViewType(F32, (4,), (1,)), None, "one"), "padding_value"),
    (lambda: PtrType(PtrType(F32)), "non-pointer"),
])
def test_invalid_types_are_rejected(make, match):
    with pytest.raises(ct.TileTypeError, match=match):
        make()


def test_dtypes_print_as_cuTiles():
    """str() and __name__ are the bare name (cuTile's); repr names the package; a dtype pickles
    and copies as itself."""
    import tilepy
    assert [str(d) for d in (tilepy.float16, tilepy.bool_, tilepy.tfloat32)] == \
        ["float16", "bool_", "tfloat32"]
    assert tilepy.uint64.__name__ == "uint64" and repr(tilepy.int8) == "tilepy.int8"
    import copy
    import pickle
    assert pickle.loads(pickle.dumps(tilepy.float16)) is tilepy.float16
    assert copy.deepcopy(tilepy.bool_) is tilepy.bool_ and copy.copy(tilepy.int8) is tilepy.int8
