"""Tile IR types (spec chapter 5), their conversion semantics and the user-facing dtypes."""
from .element import (ElementType, I1, I8, I16, I32, I64, F16, BF16, F32, F64, TF32, E4M3, E5M2,
                      ELEMENT_TYPES, INT_TYPES, FLOAT_TYPES, ARITH_FLOAT_TYPES, element_type,
                      DATA_LAYOUT, NUMPY_DTYPE, DLPACK_CODE, TORCH_DTYPE_NAME, CPP_TYPE,
                      elem_from_dlpack, elem_from_numpy)
from .tile import (PtrType, TileType, TensorViewType, PartitionViewType, TokenType, TOKEN, Type,
                   scalar_tile, is_power_of_two, PADDING_VALUES, DYNAMIC)
from .dtype import DType
