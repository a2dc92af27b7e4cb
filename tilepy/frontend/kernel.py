"""`@tilepy.kernel`: the kernel object, its specialization on arguments, and tracing.

A kernel is compiled once per *specialization*: the dtype and rank of each array argument and
which of its dimensions have unit stride, the kind of each scalar argument, and the value of
each `Constant` parameter. `trace()` turns one specialization into a Tile IR module.
"""
from __future__ import annotations

import functools
import inspect
import typing

import numpy as np

from ..errors import TileError, TileInternalError, TileSyntaxError, TileTypeError, TileValueError, at
from ..ir import Module
from ..types import DType
from ..types import dtype as D
from .api import ConstantAnnotation
from .context import ArrayParam, ConstParam, KernelContext, ScalarParam
from .source import parse_function
from .tracer import FunctionTracer, ReturnSignal, function_env


def _constant_params(func) -> set[str]:
    """Parameters annotated `Constant[...]` (also with postponed string annotations)."""
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:
        hints = {k: v for k, v in getattr(func, "__annotations__", {}).items()}
    out = set()
    for name, h in hints.items():
        if isinstance(h, str):
            if "Constant" in h:
                out.add(name)
            continue
        meta = getattr(h, "__metadata__", ())
        if any(isinstance(m, ConstantAnnotation) for m in meta):
            out.add(name)
    return out


class Kernel:
    """A tile kernel. Launch it with `tilepy.launch(stream, grid, kernel, args)`."""

    def __init__(self, func, **options):
        if not inspect.isfunction(func):
            raise TileSyntaxError(f"@tilepy.kernel decorates functions (got {type(func).__name__})")
        self.func = func
        self.options = options
        self.signature = inspect.signature(func)
        for p in self.signature.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TileSyntaxError(f"kernel parameter '{p.name}': *args, **kwargs and "
                                      f"keyword-only parameters are not supported")
        self.constants = _constant_params(func)
        self.cache: dict = {}            # specialization key -> compiled kernel (compiler.py)
        functools.update_wrapper(self, func)

    @property
    def name(self) -> str:
        return self.func.__name__

    def __call__(self, *args, **kwargs):
        raise TileSyntaxError(f"kernel '{self.name}' cannot be called directly; launch it with "
                              f"tilepy.launch(stream, grid, {self.name}, args)")

    def __repr__(self) -> str:
        return f"<tilepy.kernel {self.name}>"

    # ------------------------------------------------------------------ views for users
    def mlir(self, *args) -> str:
        """The Tile IR (`cuda_tile` dialect text) of this kernel specialized for `args`."""
        from ..compiler import compile_for_args
        try:
            return compile_for_args(self, args).mlir
        except TileError as e:
            raise e.with_traceback(None) from None     # the user's line is in the message

    def cuda_source(self, *args) -> str:
        """The CUDA C++ this kernel becomes for `args`."""
        from ..compiler import compile_for_args
        try:
            return compile_for_args(self, args).cuda_source
        except TileError as e:
            raise e.with_traceback(None) from None

    def compile(self, *args, arch: str = "sm_90"):
        """Compile ahead of time for example arguments or a signature (tilepy.aot): a cubin
        ("sm_XX"), PTX ("compute_XX") or CPU library ("cpu") with its metadata; no GPU needed."""
        from ..aot import compile_kernel
        try:
            return compile_kernel(self, args, arch)
        except TileError as e:
            raise e.with_traceback(None) from None

    # ------------------------------------------------------------------ specialization
    def specialize(self, infos) -> tuple[tuple, list]:
        """(cache key, params) for per-argument infos (ArrayInfo or Python values)."""
        names = list(self.signature.parameters)
        if len(infos) != len(names):
            raise TileTypeError(f"kernel '{self.name}' takes {len(names)} argument(s) "
                                f"({', '.join(names)}) but {len(infos)} were given")
        key, params = [], []
        for name, info in zip(names, infos):
            p = param_for(name, info, name in self.constants)
            params.append(p)
            key.append(_param_key(p))
        return tuple(key), params

    def trace(self, params) -> Module:
        """Run the kernel's Python body on tracing values: the Tile IR module."""
        parsed = parse_function(self.func)
        ctx = KernelContext(self.name)
        ctx.module.name = self.name
        tracer = FunctionTracer(ctx, parsed, function_env(self.func))
        ctx.call_stack.append(self.func.__code__)
        with at(parsed.loc(parsed.tree)):
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
                raise TileInternalError(f"internal error while compiling '{self.name}': "
                                        f"{type(e).__name__}: {e}") from e
        ctx.finish()
        return ctx.module


def _param_key(p):
    if isinstance(p, ArrayParam):
        return ("array", p.dtype.name, p.ndim, p.unit_stride)
    if isinstance(p, ScalarParam):
        return ("scalar", p.dtype.name)
    return ("const", type(p.value).__name__, _hashable(p.value))


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def param_for(name: str, info, constant: bool):
    from ..launch.intake import ArrayInfo
    if isinstance(info, ArrayInfo):
        if constant:
            raise TileTypeError(f"argument '{name}': an array cannot be a Constant parameter")
        unit = tuple(s == 1 or d == 1 for s, d in zip(info.strides, info.shape))
        return ArrayParam(name, info.dtype, len(info.shape), unit)
    if constant:
        return ConstParam(name, info)
    if isinstance(info, bool):
        return ScalarParam(name, D.bool_)
    if isinstance(info, int):
        if not -2**31 <= info < 2**31:
            raise TileValueError(f"argument '{name}' = {info} does not fit in int32 (kernel int "
                                 f"arguments are int32); pass it as a Constant or an array")
        return ScalarParam(name, D.int32)
    if isinstance(info, float):
        return ScalarParam(name, D.float32)
    if isinstance(info, (np.number, np.bool_)):
        return ScalarParam(name, D.from_numpy(info.dtype))
    if isinstance(info, (DType, str, type(None))):
        return ConstParam(name, info)
    raise TileTypeError(f"argument '{name}' of type {type(info).__name__} is not supported: "
                        f"pass arrays (numpy, torch, DLPack), Python numbers, or mark the "
                        f"parameter tilepy.Constant[...]")


def kernel(func=None, /, **options):
    """Decorate a function as a tile kernel (`@tilepy.kernel` or `@tilepy.kernel(...)`)."""
    if func is None:
        return lambda f: Kernel(f, **options)
    return Kernel(func, **options)


def function(func=None, /, *, host=False, tile=True):
    """Mark a helper as usable in kernels. Helpers are inlined where they are called."""
    if func is None:
        return lambda f: f
    return func
