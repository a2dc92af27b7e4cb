"""Calls inside kernels: builtins, helper functions (inlined), Python builtins, constants.

A call's callee decides what it means:
- a tilepy builtin (a stub of api.py): its implementation runs with the bound arguments;
- a keyword-like builtin (`static_eval`, `static_assert`): its argument is plain Python (static.py);
- a Python function or a `def`/`lambda` of the kernel: its body is traced in place (inlined);
- a dataclass: an object of it is built (its fields may hold tiles and arrays; records.py), and
  its methods (`__call__` when the object is called) are inlined with it as `self`;
  `dataclasses.replace` makes a new one;
- a Python builtin or `operator` function: mapped to the matching tile builtin on tiles;
- anything else on compile-time constants: called at compile time.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import operator

from ..errors import TileError, TileRecursionError, TileSyntaxError, TileTypeError, \
    TileUnsupportedFeatureError, TileValueError, current_loc
from ..types import DType
from ..types.dtype import foreign
from . import api
from .builtins import call_builtin, is_builtin
from .builtins.arith import dtype_call
from .builtins.debug import joined, repr_parts, str_parts
from .builtins.semantics import constant_scalar
from .static import SPECIAL_FORMS, check_direct
from . import records
from .names import NO_DEFAULT, BoundBuiltin, Captured, LocalFunction
from .records import class_attr, is_record, is_record_class
from .tracer import CALLS, FunctionTracer, bind_args
from .tuples import starred
from .values import Array, Tile, type_name


def expr_call(tr: FunctionTracer, node: ast.Call):
    fn = tr.expr(node.func)
    check_direct(tr, fn, node.func)
    if fn is tuple and len(node.args) == 1 and isinstance(node.args[0], ast.GeneratorExp) and \
            not node.keywords:
        from .comprehension import build
        return build(tr, node.args[0])
    special = SPECIAL_FORMS.get(fn)
    if special is not None:
        return special(tr, node.args, node.keywords)
    if fn is api.static_iter:
        raise TileSyntaxError("static_iter() is only allowed as iterable in a `for` loop: "
                              "`for i in ct.static_iter(...)`")
    args, arg_nodes = [], []
    for a in node.args:
        if isinstance(a, ast.Starred):
            v = starred(tr.expr(a.value))
            args.extend(v)
            arg_nodes.extend([a] * len(v))
        else:
            args.append(tr.expr(a))
            arg_nodes.append(a)
    kwargs, kw_nodes = {}, {}
    for k in node.keywords:
        if k.arg is None:                      # f(**kw): a dict of the trace (a helper's **kw)
            kw = tr.expr(k.value)
            if not isinstance(kw, dict) or not all(isinstance(n, str) for n in kw):
                raise TileTypeError(f"argument after ** must be a mapping with string keys, not "
                                    f"{type_name(kw)}")
            kwargs.update(kw)
            kw_nodes.update(dict.fromkeys(kw, k.value))
            continue
        kwargs[k.arg] = tr.expr(k.value)
        kw_nodes[k.arg] = k.value
    return call(tr, fn, args, kwargs, arg_nodes, kw_nodes)


def _arg_locs(tr, stub, arg_nodes, kw_nodes, first=()):
    from .builtins.registry import signature_of
    try:
        bound = signature_of(stub).bind_partial(*first, *arg_nodes, **kw_nodes)
    except TypeError:
        return {}
    return {k: tr.loc(v) for k, v in bound.arguments.items() if isinstance(v, ast.AST)}


def call(tr: FunctionTracer, fn, args, kwargs, arg_nodes=(), kw_nodes=None):
    kw_nodes = kw_nodes or {}
    if isinstance(fn, BoundBuiltin):
        with tr.ctx.call_args(_arg_locs(tr, fn.stub, arg_nodes, kw_nodes, (None,))):
            return call_builtin(tr.ctx, fn.stub, [fn.first, *args], kwargs)
    if is_builtin(fn):
        with tr.ctx.call_args(_arg_locs(tr, fn, arg_nodes, kw_nodes)):
            return call_builtin(tr.ctx, fn, args, kwargs)
    dtype = foreign(fn) if isinstance(fn, (DType, type)) or type(fn).__name__ == "dtype" else None
    if dtype is not None:                      # tilepy.float32(x), np.float32(x), torch.float32(x)
        if len(args) != 1 or kwargs:
            raise TileTypeError(f"{fn.__name__ if isinstance(fn, type) else fn}(...) takes "
                                f"exactly one value")
        return dtype_call(tr.ctx, dtype, args[0])
    if isinstance(fn, LocalFunction):
        return inline_call(tr, fn, fn.scope, args, kwargs)
    from .kernel import KernelFunction
    if isinstance(fn, KernelFunction):
        fn = fn.func
    py = _py_builtin(fn)
    if py is not None:
        return py(tr, args, kwargs)
    if inspect.ismethod(fn) and is_record(fn.__self__):      # obj.method(...): self is obj
        fn, args = fn.__func__, [fn.__self__, *args]
    if is_record(fn):                                        # obj(...): its class's __call__
        dunder = class_attr(type(fn), "__call__")
        if dunder is None:
            raise TileTypeError(f"Cannot call an object of type {type(fn).__name__}")
        fn, args = dunder, [fn, *args]
    if isinstance(fn, type) and is_record_class(fn):
        return records.construct(fn, args, kwargs,
                                 lambda f, a: inline_function(tr.ctx, f, a, {}))
    if fn is dataclasses.replace:
        if len(args) != 1:
            raise TileTypeError(f"dataclasses.replace() takes one positional argument, the "
                                f"object ({len(args)} given)")
        return records.replace(args[0], kwargs)
    if inspect.isfunction(fn):
        from .with_stmt import context_manager_call
        mgr = context_manager_call(fn, args, kwargs)
        if mgr is not None:                 # a @contextlib.contextmanager function's call
            return mgr
        return inline_function(tr.ctx, fn, args, kwargs)
    if any(_has_runtime(a) for a in [*args, *kwargs.values()]):
        raise TileTypeError(f"{getattr(fn, '__name__', fn)!s}() cannot be called with tiles or "
                            f"arrays inside a kernel")
    if fn is range:
        raise TileSyntaxError("range() can only be used as the iterable of a for loop")
    try:
        return fn(*args, **kwargs)     # compile-time evaluation of a constant call
    except TileError:
        raise
    except Exception as e:
        raise TileValueError(f"calling {getattr(fn, '__name__', fn)!s} at compile time "
                             f"raised {type(e).__name__}: {e}") from None


def _has_runtime(v, kinds=(Tile, Array)) -> bool:
    if isinstance(v, tuple):
        return any(_has_runtime(x, kinds) for x in v)
    return isinstance(v, kinds)


# ---------------------------------------------------------------------- inlining
def inline_function(ctx, fn, args, kwargs):
    """Trace a Python helper function's body in place (helpers are always inlined)."""
    tracer = FunctionTracer.for_call(ctx, fn, args, kwargs)
    ctx.call_stack.append(fn.__code__)
    try:
        return tracer.run_inlined(tracer.parsed.tree.body, current_loc())
    finally:
        ctx.call_stack.pop()


def inline_call(caller: FunctionTracer, fn: LocalFunction, scope, args, kwargs):
    """Call a def/lambda written inside the kernel: it sees the defining scope."""
    node, definer = fn.node, fn.tracer
    tracer = FunctionTracer(caller.ctx, definer.parsed, definer.env, definer.func)
    tracer.scope = dict(scope)
    name = getattr(node, "name", "lambda")
    tracer.scope.update(bind_args(_signature_of(fn), args, kwargs, name))
    if isinstance(node, ast.Lambda):
        return tracer.expr(node.body)
    key = ("local", id(node))
    if key in caller.ctx.call_stack:
        raise TileRecursionError(f"recursive call of '{node.name}' is not supported in tile kernels")
    caller.ctx.call_stack.append(key)
    try:
        return tracer.run_inlined(node.body, current_loc())
    finally:
        caller.ctx.call_stack.pop()


def _signature_of(fn: LocalFunction) -> inspect.Signature:
    """A def/lambda's parameters: positional-only, plain and keyword-only ones, with the
    defaults evaluated where it was defined."""
    a, P = fn.node.args, inspect.Parameter
    if a.vararg or a.kwarg:
        raise TileUnsupportedFeatureError("functions defined inside kernels cannot take *args or "
                                          "**kwargs")
    pos = [*a.posonlyargs, *a.args]
    first = len(pos) - len(fn.defaults)
    params = [P(p.arg, P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD,
                default=fn.defaults[i - first] if i >= first else P.empty)
              for i, p in enumerate(pos)]
    params += [P(p.arg, P.KEYWORD_ONLY, default=P.empty if d is NO_DEFAULT else d)
               for p, d in zip(a.kwonlyargs, fn.kw_defaults)]
    return inspect.Signature(params)


def call_combiner(ctx, fn, args, what: str):
    """Call the combiner of reduce()/scan() on 0-d tiles. It runs inside the op's region: it may
    use tiles of the enclosing kernel (the region reads them, as cuTile's), not its arrays."""
    if isinstance(fn, LocalFunction):
        body = "reduction" if what == "reduce" else "scan"
        why = (f"the combiner function of {what}() cannot use '{{}}' from the enclosing kernel "
               f"(it captures an array: Operations with memory effects are not supported inside "
               f"{body} body)")
        scope = {k: Captured(why.format(k)) if _has_runtime(v, Array) else v for k, v in fn.scope.items()}
        return inline_call(ctx.tracer, fn, scope, args, {})
    return call(ctx.tracer, fn, args, {})


# ---------------------------------------------------------------------- Python builtins
def _py_len(tr, args, kwargs):
    (x,) = args
    if isinstance(x, Tile):
        if x.ndim == 0:
            raise TileTypeError("len() of a 0-d tile")
        return x.shape[0]
    if isinstance(x, Array):
        raise TileTypeError("len() of an array: use array.shape[0]")
    return len(x)


def _py_minmax(stub, pyfn):
    def fn(tr, args, kwargs):
        if len(args) == 1 and isinstance(args[0], tuple):
            args = list(args[0])
        if kwargs or len(args) < 2:
            if not any(isinstance(a, Tile) for a in args):
                return pyfn(*args, **kwargs)
            raise TileTypeError(f"{pyfn.__name__}() of tiles takes two or more positional values")
        acc = args[0]
        for a in args[1:]:
            acc = call_builtin(tr.ctx, stub, [acc, a], {})
        return acc
    return fn


def _py_convert(pytype, dtype_name):
    """`int(x)`, `float(x)`, `bool(x)`: of a number, the Python number (a loosely typed
    constant); of a constant 0-d tile (`ct.float32(5.0)`), its value as one, as cuTile; of a
    run-time tile, the conversion."""
    def fn(tr, args, kwargs):
        if len(args) == 1 and not kwargs and constant_scalar(args[0]) is not None:
            return pytype(constant_scalar(args[0]))
        if len(args) == 1 and isinstance(args[0], Tile):
            from ..types import dtype as D
            return call_builtin(tr.ctx, api.astype, [args[0], getattr(D, dtype_name)], {})
        return pytype(*args, **kwargs)
    return fn


def _py_text(which):
    """`str(x)` / `repr(x)`: of a value with run-time parts (a tile, a tuple of them, a
    dataclass object: its `__str__`/`__repr__` traced), a string print() and f-strings take;
    of a constant, Python's."""
    def fn(tr, args, kwargs):
        if len(args) != 1 or kwargs:
            return (str if which == "str" else repr)(*args, **kwargs)
        parts = (str_parts if which == "str" else repr_parts)(tr.ctx, args[0])
        return joined(parts)
    return fn


def _as_stub(stub):
    """A Python function that means a tile builtin when one of its arguments is a tile."""
    def fn(tr, args, kwargs):
        return call_builtin(tr.ctx, stub, list(args), kwargs)
    return fn


_PY_BUILTINS = {
    len: _py_len, min: _py_minmax(api.minimum, min), max: _py_minmax(api.maximum, max),
    abs: _as_stub(api.abs), int: _py_convert(int, "int32"), float: _py_convert(float, "float32"),
    bool: _py_convert(bool, "bool_"), divmod: _as_stub(api.divmod), print: _as_stub(api.print),
    pow: _as_stub(api.pow), str: _py_text("str"), repr: _py_text("repr"),
}
_OPERATORS = {
    operator.add: api.add, operator.sub: api.sub, operator.mul: api.mul,
    operator.truediv: api.truediv, operator.floordiv: api.floordiv, operator.mod: api.mod,
    operator.pow: api.pow, operator.and_: api.bitwise_and, operator.or_: api.bitwise_or,
    operator.xor: api.bitwise_xor, operator.lshift: api.bitwise_lshift,
    operator.rshift: api.bitwise_rshift, operator.neg: api.negative, operator.invert:
    api.bitwise_not, operator.abs: api.abs, operator.lt: api.less, operator.le: api.less_equal,
    operator.gt: api.greater, operator.ge: api.greater_equal, operator.eq: api.equal,
    operator.ne: api.not_equal, operator.matmul: api.matmul,
}


def _py_builtin(fn):
    try:
        if fn in _PY_BUILTINS:
            return _PY_BUILTINS[fn]
        if fn in _OPERATORS:
            return _as_stub(_OPERATORS[fn])
    except TypeError:          # unhashable callee
        return None
    return None


CALLS.update(expr=expr_call, combiner=call_combiner, function=inline_function)
