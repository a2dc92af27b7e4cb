"""Builtin registry: `@impl(api.exp)` gives the stub `api.exp` its meaning inside kernels.

An implementation takes the trace context first, then the stub's parameters by name, already
bound and defaulted against the stub's signature (so a wrong call is reported exactly like
Python would, at the user's line).
"""
from __future__ import annotations

import inspect
from typing import Callable

from ...errors import TileSyntaxError, TileTypeError, TileUnsupportedFeatureError

IMPLS: dict[object, Callable] = {}


def impl(*stubs):
    def register(fn):
        for s in stubs:
            IMPLS[s] = fn
        return fn
    return register


def is_builtin(obj) -> bool:
    return getattr(obj, "__tilepy_builtin__", False) is True


def signature_of(stub) -> inspect.Signature:
    return inspect.signature(getattr(stub, "__signature_source__", stub))


def call_builtin(ctx, stub, args: list, kwargs: dict):
    """Bind the call against the stub's signature and run its implementation."""
    name = stub.__name__
    fn = IMPLS.get(stub)
    if fn is None:
        raise TileUnsupportedFeatureError(f"tilepy.{name}() is not supported yet")
    sig = signature_of(stub)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{name}(): {e}") from None
    bound.apply_defaults()
    return fn(ctx, *bound.args, **bound.kwargs)


def invalid_argument(what: str) -> str:
    """cuTile's lead naming a builtin's argument, 'Invalid argument "shape" of full(): ', for
    `what` = "full() shape"; "" for another description."""
    fn, sep, param = what.partition("() ")
    return f'Invalid argument "{param}" of {fn}(): ' if sep else ""


CONSTANT_KINDS = {(bool,): "a boolean", (str,): "a string"}     # cuTile's words for them


def require_constant(value, what: str, types=(int,)):
    """A parameter that must be known at compile time (shapes, axes, dtypes, flags, formats)."""
    from ..values import Tile
    if (isinstance(value, Tile) or not isinstance(value, types)
            or isinstance(value, bool) and bool not in types):
        kind = "a runtime tile" if isinstance(value, Tile) else \
            "None" if value is None else type(value).__name__
        if types in CONSTANT_KINDS:
            given = "is not constant" if isinstance(value, Tile) else f"has type {kind}"
            raise TileTypeError(f"{invalid_argument(what) or what + ': '}Expected "
                                f"{CONSTANT_KINDS[types]} constant, but given value {given}")
        if types == (int,):           # cuTile's words, which code catching its errors matches
            given = "is not constant" if isinstance(value, Tile) else f"has type {kind}"
            raise TileTypeError(f"{what} must be a compile-time constant int: Expected an integer "
                                f"constant, but given value {given}")
        raise TileTypeError(f"{what} must be a compile-time constant "
                            f"{'/'.join(t.__name__ for t in types)} (got {kind})")
    return value


def unsupported_syntax(what: str):
    raise TileSyntaxError(f"{what} is not supported in tile kernels")
