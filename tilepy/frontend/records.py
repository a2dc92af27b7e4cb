"""Dataclasses in kernels (cuTile's rules): a frozen dataclass is a record of values (tiles,
arrays, constants, tuples, other records), built in the kernel (`Cls(...)`,
`dataclasses.replace`) or given as a kernel argument (each field a parameter of its own:
host/params.DataclassParam). Inside the trace a record is an object of the user's class whose
fields hold the trace's values; it is made without running the class's `__init__` (the
generated one is bound here, `__post_init__` is traced), and control flow carries and merges it
field by field (aggregates.py).

What cuTile refuses, tilepy refuses with cuTile's words (`check_class`): a class that is not
frozen, a non-dataclass subclass of a dataclass, a custom `__new__`, fields with
`default_factory` or `init=False`; building one whose `__init__` is not the generated one.
"""
from __future__ import annotations

import dataclasses
import inspect

from ..errors import TileTypeError
from ..host.intake import is_record, is_record_class  # noqa: F401  (a user's dataclass)


def check_class(cls) -> None:
    """cuTile's conditions on a dataclass used in a kernel."""
    if not cls.__dataclass_params__.frozen:
        raise TileTypeError("Only frozen dataclasses are supported")
    if "__dataclass_params__" not in cls.__dict__:
        raise TileTypeError("Non-dataclass subclasses of a dataclass are not supported")
    if cls.__new__ is not object.__new__:
        raise TileTypeError("Dataclasses with custom __new__ are not supported")
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            raise TileTypeError("Dataclasses with default_factory fields are not supported")
        if not f.init:
            raise TileTypeError("Dataclasses with init=False fields are not supported")


def field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def class_attr(cls, name: str):
    """What `cls` itself (or a base) defines as `name`, unbound (a function, a property, a
    constant); None where no class of its MRO does (not the metaclass's)."""
    for k in cls.__mro__:
        if name in k.__dict__:
            return k.__dict__[name]
    return None


def make(cls, values):
    """An object of `cls` whose fields (in declaration order) are `values`; no `__init__`."""
    obj = object.__new__(cls)
    for name, v in zip(field_names(cls), values, strict=True):
        object.__setattr__(obj, name, v)
    return obj


def fields_of(obj) -> list:
    return [getattr(obj, n) for n in field_names(type(obj))]


def _generated_init(cls) -> bool:
    """Whether `cls.__init__` is the one `@dataclass(frozen=True)` generated (it sets fields
    through the saved `object`, a name only that code closes over)."""
    if not cls.__dataclass_params__.init:
        return False
    code = getattr(cls.__init__, "__code__", None)
    return code is not None and "__dataclass_builtins_object__" in code.co_freevars


def construct(cls, args, kwargs, trace_method):
    """`cls(*args, **kwargs)` in a kernel: the generated `__init__`'s binding (defaults
    included), then `__post_init__` traced with the new object (`trace_method(fn, args)`)."""
    check_class(cls)
    if not _generated_init(cls):
        raise TileTypeError("Dataclass instance creation is only supported for dataclasses with "
                            "a default generated __init__() method")
    sig = inspect.signature(cls.__init__)
    try:
        bound = sig.bind(None, *args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{cls.__name__}(): {e}") from None
    bound.apply_defaults()
    obj = make(cls, [bound.arguments[n] for n in field_names(cls)])
    post = getattr(cls, "__post_init__", None)
    if post is not None:
        trace_method(post, [obj])
    return obj


def replace(obj, changes: dict):
    """`dataclasses.replace(obj, **changes)` in a kernel (no `__post_init__`, as cuTile)."""
    if not is_record(obj):
        raise TileTypeError(f"Expected a dataclass instance, but given value has type "
                            f"{type(obj).__name__}")
    cls = type(obj)
    check_class(cls)
    if not _generated_init(cls):
        raise TileTypeError("dataclasses.replace() is only allowed for dataclasses with a "
                            "default generated __init__() method")
    names = field_names(cls)
    for name in changes:
        if name not in names:
            raise TileTypeError(f"Dataclass '{cls.__name__}' has no such field '{name}'")
    return make(cls, [changes.get(n, getattr(obj, n)) for n in names])
