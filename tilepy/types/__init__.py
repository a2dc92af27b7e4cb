"""Tile IR types (spec chapter 5), their conversion semantics and the user-facing dtypes.

The names below are imported from their modules on first use (PEP 562), so that code needing
only the dtypes does not load the Tile IR types."""
import importlib

_NAMES = {
    "element": ("ElementType", "I1", "I8", "I16", "I32", "I64", "F16", "BF16", "F32", "F64", "TF32",
                "E4M3", "E5M2", "E8M0", "E2M1", "E5M3", "ELEMENT_TYPES", "INT_TYPES", "FLOAT_TYPES",
                "ARITH_FLOAT_TYPES",
                "element_type", "DATA_LAYOUT", "NUMPY_DTYPE", "DLPACK_CODE", "TORCH_DTYPE_NAME",
                "CPP_TYPE", "elem_from_dlpack", "elem_from_numpy"),
    "tile": ("PtrType", "TileType", "TensorViewType", "PartitionViewType", "TokenType", "TOKEN",
             "Type", "scalar_tile", "is_power_of_two", "PADDING_VALUES", "DYNAMIC"),
    "views": ("GatherScatterViewType", "StridedViewType"),
    "dtype": ("DType",),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tilepy.types' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
