"""Implementations of the kernel language's builtins, registered against the stubs in api.py."""
from . import arith, memory, reduction, shape  # noqa: F401  (importing registers the impls)
from .registry import IMPLS, call_builtin, impl, is_builtin
