"""Implementations of the kernel language's builtins, registered against the stubs in api.py."""
from . import advanced, arith, combine, debug, memory, pointer, reduction, shape, views  # noqa: F401,E501  (registers)
from .registry import IMPLS, call_builtin, impl, is_builtin
