"""Tracing a kernel: its Python body run on tracing values, giving the Tile IR module.

The top of the frontend: it loads the tracer and the modules that fill its tables (calls.py).
api/kernel.py's `Kernel.trace` calls it; loading this module loads the compiler's frontend.
"""
from __future__ import annotations

import contextlib
import sys

from ..errors import TileError, TileInternalError, TileSyntaxError, TileTypeError, at
from ..ir import Module
from . import calls  # noqa: F401  (loading it fills the tracer's CALLS table)
from .context import KernelContext
from .kernel import entry_hints
from .names import ReturnSignal
from .source import parse_function
from .tracer import MAX_INLINE_DEPTH, FunctionTracer, function_env


@contextlib.contextmanager
def _frames_for_inlining():
    """Python's recursion limit raised (while tracing) to what MAX_INLINE_DEPTH levels of
    inlined helpers take, so a recursion that ends at compile time is not cut short."""
    old = sys.getrecursionlimit()
    need = MAX_INLINE_DEPTH * 40 + 1000
    if old < need:
        sys.setrecursionlimit(need)
    try:
        yield
    finally:
        if old < need:
            sys.setrecursionlimit(old)


def trace_kernel(kernel, params, deps=None) -> Module:
    """Run `kernel`'s Python body on tracing values: the Tile IR module. `deps`
    (identity.Deps) records what the trace reads from outside the arguments."""
    parsed = parse_function(kernel.func)
    ctx = KernelContext(kernel.name, hints=entry_hints(kernel.options))
    ctx.module.name = kernel.name
    ctx.deps = deps
    tracer = FunctionTracer(ctx, parsed, function_env(kernel.func), kernel.func)
    ctx.tracer = tracer
    ctx.call_stack.append(kernel.func.__code__)
    with at(parsed.loc(parsed.tree)), _frames_for_inlining():
        try:
            tracer.scope.update(ctx.begin(params))
            tracer.run(parsed.tree.body)
        except ReturnSignal as r:
            if r.value is not None:
                raise TileTypeError("a kernel cannot return a value") from None
        except TileError:
            raise
        except RecursionError:
            raise TileSyntaxError("the kernel is nested too deeply to compile") from None
        except Exception as e:  # a bug in tilepy: keep the user's location
            raise TileInternalError(f"internal error while compiling '{kernel.name}': "
                                    f"{type(e).__name__}: {e}") from e
    ctx.finish()
    return ctx.module
