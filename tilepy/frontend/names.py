"""Small values of tracing, shared by the tracer and the modules it uses (control flow, loops,
calls, static evaluation, builtins): they depend on nothing of the tracer."""
from __future__ import annotations

from ..errors import Passing, TileSyntaxError, TileTypeError
from .values import Array


class Undefined:
    """A name that is not defined on every path reaching this point. `path`: defined on some
    paths (an `if`, a loop) and not others, which cuTile calls a type error (the name's type
    depends on the path taken)."""

    def __init__(self, why: str, path: bool = False, lead: str = ""):
        self.why, self.path, self.lead = why, path, lead     # lead: cuTile's "A vs. B"

    def error(self, name: str):
        """The error of reading the name here."""
        if self.path:
            lead = f"{self.lead}; " if self.lead else ""
            return TileTypeError(f"Type of `{name}` depends on path taken: {lead}variable "
                                 f"'{name}' {self.why}")
        return TileSyntaxError(f"variable '{name}' {self.why}")


class Captured:
    """A value a combiner function may not use (an array: no memory effects in reduce/scan)."""

    def __init__(self, why: str):
        self.why = why


class ReturnSignal(Passing):
    def __init__(self, value):
        self.value = value


class BoundBuiltin:
    def __init__(self, stub, first):
        self.stub, self.first = stub, first


class LocalFunction:
    """A `def` or `lambda` inside a kernel: inlined where it is called. `tracer`: the
    FunctionTracer of the function that defines it."""

    def __init__(self, node, tracer):
        self.node, self.tracer = node, tracer
        self.scope = tracer.scope      # closes over the defining scope
        a = node.args                  # defaults are evaluated where it is defined (Python's rule)
        self.defaults = [tracer.expr(d) for d in a.defaults]
        self.kw_defaults = [NO_DEFAULT if d is None else tracer.expr(d) for d in a.kw_defaults]


NO_DEFAULT = object()


def truth(v) -> bool:
    """Python truth of a compile-time value (an array has none)."""
    if isinstance(v, Array):
        raise TileTypeError("an array has no truth value")
    return bool(v)
