"""The `stub` decorator that declares a builtin of the kernel language.

A stub is a Python function with cuTile's signature and docstring. Calling it outside a kernel
is an error (or, for the few builtins that also work on the host, runs `host`). Inside a kernel
the tracer binds the call against the stub's signature and runs the implementation registered
with `@impl(stub)` in `builtins/`; a stub without one raises TileUnsupportedFeatureError.
"""
from __future__ import annotations

import threading

from ..errors import TileDeviceCallError

_evaluating = threading.local()


def static_evaluation():
    """The compile-time evaluation (frontend/static.py) running on this thread, or None: a
    builtin called from it is answered by its `call(stub, host, args, kwargs)`."""
    return getattr(_evaluating, "current", None)


def set_static_evaluation(ev):
    """Make `ev` the running compile-time evaluation; returns the previous one."""
    old = static_evaluation()
    _evaluating.current = ev
    return old


def stub(fn=None, *, host=None):
    """Declare a builtin. `host` is what the name does when called outside a kernel."""
    if fn is None:
        return lambda f: stub(f, host=host)

    def outside(*args, **kwargs):
        ev = static_evaluation()
        if ev is not None:
            return ev.call(outside, host, args, kwargs)
        if host is not None:
            return host(*args, **kwargs)
        raise TileDeviceCallError(f"Device functions can only be called from device code: "
                                  f"tilepy.{fn.__name__}() can only be called inside a "
                                  f"@tilepy.kernel or @tilepy.function")
    outside.__name__ = fn.__name__
    outside.__qualname__ = fn.__qualname__
    outside.__doc__ = fn.__doc__
    outside.__wrapped__ = fn
    outside.__tilepy_builtin__ = True
    outside.__signature_source__ = fn
    return outside
