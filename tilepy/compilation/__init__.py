"""`tilepy.compilation`: cuTile's `ct.compilation` names (kernel signatures as parameter
constraints, `export_kernel`, `mangle_kernel_name`/`demangle_kernel_name`). The code is
tilepy/api/compilation.py and api/name_mangling.py (the user-facing layer), over tilepy's AOT
compiler (api/aot.py)."""
from ..api.compilation import (ArrayConstraint, CallingConvention, ConstantConstraint,  # noqa: F401
                               ConstantValue, DataclassConstraint, KernelSignature, ListConstraint,
                               ParameterConstraint, ScalarConstraint, TupleConstraint,
                               export_kernel)
from ..api.name_mangling import demangle_kernel_name, mangle_kernel_name  # noqa: F401

__all__ = ["ScalarConstraint", "ArrayConstraint", "ListConstraint", "TupleConstraint",
           "DataclassConstraint", "ConstantConstraint", "ParameterConstraint", "ConstantValue", "KernelSignature",
           "CallingConvention", "export_kernel", "mangle_kernel_name", "demangle_kernel_name"]
