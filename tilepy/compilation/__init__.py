"""`tilepy.compilation`: cuTile's `ct.compilation` names (kernel signatures as parameter
constraints, `export_kernel`). The code is tilepy/api/compilation.py (the user-facing layer),
over tilepy's AOT compiler (api/aot.py)."""
from ..api.compilation import (ArrayConstraint, CallingConvention, ConstantConstraint,  # noqa: F401
                               ConstantValue, KernelSignature, ListConstraint,
                               ParameterConstraint, ScalarConstraint, TupleConstraint,
                               export_kernel)

__all__ = ["ScalarConstraint", "ArrayConstraint", "ListConstraint", "TupleConstraint",
           "ConstantConstraint", "ParameterConstraint", "ConstantValue", "KernelSignature",
           "CallingConvention", "export_kernel"]
