"""Compile-time evaluation: `static_eval`, `static_assert`, `static_iter` (cuTile's keyword-like
builtins).

Their argument is not traced: it is evaluated as plain Python, with the full Python syntax, over
the kernel's variables. Compile-time constants are themselves; tiles and arrays are *proxies*
that answer their compile-time attributes (`shape`, `strides`, `dtype`, `ndim`) and record basic
arithmetic symbolically (`x + 1`), so `static_eval(x + 1 if N % 2 else y - 1)` picks one
expression at compile time. After evaluation, symbolic results are traced as ordinary builtins.
"""
from __future__ import annotations

import ast
import builtins as py_builtins

import numpy as np

from ..errors import TileError, TileStaticAssertionError, TileStaticEvalError, TileSyntaxError, \
    TileTypeError
from . import api, records
from .records import is_record
from .stubs import set_static_evaluation, static_evaluation
from .values import Array, Tile

MAX_STATIC_ITER = 1000

# What each evaluation is called in messages (cuTile's words).
STATIC_EVAL, ASSERT_CONDITION, ASSERT_MESSAGE, ITERABLE = \
    "static_eval()", "static_assert() condition", "static_assert() message", \
    "static_iter() iterable"

# Builtins that compute a value from their operands alone: a compile-time evaluation may call
# them (on runtime values they are recorded and traced afterwards); any other builtin is refused.
PURE = {api.add, api.sub, api.mul, api.truediv, api.floordiv, api.mod, api.pow, api.matmul,
        api.bitwise_and, api.bitwise_or, api.bitwise_xor, api.bitwise_lshift,
        api.bitwise_rshift, api.bitwise_not, api.minimum, api.maximum, api.cdiv, api.greater,
        api.greater_equal, api.less, api.less_equal, api.equal, api.not_equal, api.negative}
KEYWORD_LIKE = (api.static_eval, api.static_assert, api.static_iter)


class Proxy:
    """A runtime value (tile, array or symbolic expression over them) seen at compile time."""


def _binary(stub, swap=False):
    def method(self, other):
        return Sym(stub, (other, self) if swap else (self, other))
    return method


_OPS = {"add": api.add, "sub": api.sub, "mul": api.mul, "truediv": api.truediv,
        "floordiv": api.floordiv, "mod": api.mod, "pow": api.pow, "and": api.bitwise_and,
        "or": api.bitwise_or, "xor": api.bitwise_xor, "lshift": api.bitwise_lshift,
        "rshift": api.bitwise_rshift, "matmul": api.matmul}
for _name, _stub in _OPS.items():
    setattr(Proxy, f"__{_name}__", _binary(_stub))
    setattr(Proxy, f"__r{_name}__", _binary(_stub, swap=True))
for _name, _stub in {"lt": api.less, "le": api.less_equal, "gt": api.greater,
                     "ge": api.greater_equal, "eq": api.equal, "ne": api.not_equal}.items():
    setattr(Proxy, f"__{_name}__", _binary(_stub))
Proxy.__hash__ = object.__hash__
Proxy.__neg__ = lambda self: Sym(api.negative, (self,))
Proxy.__invert__ = lambda self: Sym(api.bitwise_not, (self,))
Proxy.__abs__ = lambda self: Sym(api.abs, (self,))


def folded(tr, p):
    """The number a proxy stands for when it is a strictly typed constant (`ct.int16(2)`) or an
    expression over them, which cuTile folds at compile time; else None."""
    if not isinstance(p, (TileProxy, Sym)):
        return None
    from .builtins.semantics import constant_scalar
    return constant_scalar(resolve(tr, p))


def _running_fold(p):
    """`folded` inside a running evaluation (None where tracing the expression fails: the
    evaluation then reports that the value is not known at compile time)."""
    ev = static_evaluation()
    try:
        return None if ev is None else folded(ev.tr, p)
    except TileError:
        return None


def _truth(self):
    value = _running_fold(self)
    if value is None:
        raise TypeError("the truth value of a runtime tile is not known at compile time")
    return bool(value)


def _index(self):
    value = _running_fold(self)
    if not isinstance(value, int):
        raise TypeError("Symbolic tile has no concrete value and thus cannot be converted to an "
                        "integer (its value is known when the kernel runs)")
    return value


Proxy.__bool__ = _truth
Proxy.__index__ = Proxy.__int__ = _index


class Method(Proxy):
    """A tile's or array's method read at compile time (`t.reshape`): it can be the result of
    an evaluation (and be called in the kernel), not be called during one."""

    def __init__(self, bound):
        self.bound = bound

    def __call__(self, *args, **kwargs):
        _refuse(self.bound.stub)


class Uncallable:
    """A function of the kernel (`def`/`lambda`) read at compile time: it is traced when the
    kernel calls it, so a compile-time evaluation cannot call it."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        _refuse(self.fn, getattr(self.fn.node, "name", "<lambda>"))


def _methods(obj, name):
    from .names import BoundBuiltin
    from .methods import ARRAY_METHODS, TILE_METHODS
    table = TILE_METHODS if isinstance(obj, Tile) else ARRAY_METHODS
    if name in table:
        return Method(BoundBuiltin(table[name], obj))
    raise AttributeError(f"{'tiles' if isinstance(obj, Tile) else 'arrays'} have no attribute "
                         f"'{name}'")


class TileProxy(Proxy):
    def __init__(self, tile: Tile):
        self.tile = tile
        self.shape, self.dtype, self.ndim = tile.shape, tile.dtype, tile.ndim

    def __getattr__(self, name):
        return _methods(self.tile, name)

    def __repr__(self):
        return f"<tile[{self.dtype.name}, {self.shape}]>"


class ArrayProxy(Proxy):
    def __init__(self, array: Array):
        self.array = array
        self.dtype, self.ndim = array.dtype, array.ndim
        # static extents and strides (a slice with constant bounds, an ArrayAnnotation's static
        # dims, a unit stride) are numbers; the others run-time tiles
        self.shape, self.strides = (tuple(s if isinstance(s, int) else TileProxy(array.index(s))
                                          for s in vals) for vals in (array.shape, array.strides))

    def __getattr__(self, name):
        return _methods(self.array, name)

    def __repr__(self):
        dims = ", ".join(str(s) if isinstance(s, int) else "?" for s in self.shape)
        return f"<array[{self.dtype.name}, ({dims})]>"


class Sym(Proxy):
    """`stub(*args)` recorded during static evaluation, traced afterwards."""

    def __init__(self, stub, args, kwargs=None):
        self.stub, self.args, self.kwargs = stub, args, kwargs or {}

    def __repr__(self):
        return f"<{self.stub.__name__}({', '.join(map(repr, self.args))})>"


def proxy(v):
    from .names import LocalFunction
    if isinstance(v, LocalFunction):
        return Uncallable(v)
    if isinstance(v, Tile):
        return TileProxy(v)
    if isinstance(v, Array):
        return ArrayProxy(v)
    if isinstance(v, tuple):
        return tuple(proxy(x) for x in v)
    return v


def resolve(tr, v):
    """Turn proxies in an evaluation result back into traced values."""
    if isinstance(v, TileProxy):
        return v.tile
    if isinstance(v, ArrayProxy):
        return v.array
    if isinstance(v, Method):
        return v.bound
    if isinstance(v, Uncallable):
        return v.fn
    if isinstance(v, Sym):
        from .builtins.registry import call_builtin
        return call_builtin(tr.ctx, v.stub, [resolve(tr, a) for a in v.args],
                            {k: resolve(tr, a) for k, a in v.kwargs.items()})
    if isinstance(v, tuple):
        return tuple(resolve(tr, x) for x in v)
    if is_record(v):                   # a dataclass object: cuTile's rules, fields resolved
        records.check_class(type(v))
        return records.make(type(v), [resolve(tr, x) for x in records.fields_of(v)])
    if isinstance(v, (list, dict, set)):
        raise TileTypeError(f"Cannot create constant from value of type {type(v).__name__}. "
                            f"Kernels can only use tuples (convert with tuple())")
    return v


def _refuse(fn, name=None):
    ev = static_evaluation()
    where = ev.where if ev is not None else STATIC_EVAL
    name = name or getattr(fn, "__name__", None) or str(fn)
    what = "be used" if fn in KEYWORD_LIKE else "be called"
    raise TileStaticEvalError(f"{name}() cannot {what} inside {where}. Compile-time evaluation "
                              f"runs plain Python; call kernel functions outside it")


class _Evaluation:
    """One compile-time evaluation: what it is called, and the builtins it calls."""

    def __init__(self, tr, where):
        self.tr, self.where = tr, where

    def call(self, stub, host, args, kwargs):
        if stub in PURE:
            values = (*args, *kwargs.values())
            if any(isinstance(a, Proxy) for a in values):
                return Sym(stub, args, kwargs)
            if host is not None:
                return host(*args, **kwargs)
            from .builtins.registry import call_builtin
            return proxy(call_builtin(self.tr.ctx, stub, list(args), kwargs))
        if host is not None and stub not in KEYWORD_LIKE:
            return host(*args, **kwargs)
        _refuse(stub)


def evaluate(tr, node: ast.expr, where: str = STATIC_EVAL):
    """Evaluate `node` as Python over the tracer's variables (proxies for runtime values).
    `where`: what the evaluation is, for messages."""
    from .names import Undefined
    ns = dict(vars(py_builtins))
    ns.update(tr.env)
    local = {k: proxy(v) for k, v in tr.scope.items() if not isinstance(v, Undefined)}
    ns.update(local)
    for n in ast.walk(node):
        if isinstance(n, ast.NamedExpr):
            raise TileSyntaxError(f"static_eval() expression attempted to modify a local variable "
                                  f"'{n.target.id}' (compile-time evaluation must not assign "
                                  f"variables)")
    if tr.ctx.deps is not None:
        _record(tr, node, ns, local)
    code = compile(ast.fix_missing_locations(ast.Expression(body=node)), tr.parsed.file, "eval")
    previous = set_static_evaluation(_Evaluation(tr, where))
    try:
        return eval(code, ns)
    except TileError:
        raise
    except Exception as e:
        text = str(e)
        raise TileStaticEvalError(f"Exception was raised inside {where} ({type(e).__name__}"
                                  f"{': ' + text if text else ''})") from None
    finally:
        set_static_evaluation(previous)


def is_direct(tr, func: ast.expr) -> bool:
    """Whether a call's callee is named directly (`static_eval`, `ct.static_eval`: a global or
    an attribute of one), as the keyword-like builtins must be, not through a variable."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id not in tr.scope


def check_direct(tr, fn, func: ast.expr):
    """Refuse a keyword-like builtin reached through a variable (`f = ct.static_eval`)."""
    if fn in KEYWORD_LIKE and not is_direct(tr, func):
        name = fn.__name__
        raise TileSyntaxError(f"{name}() must be used directly by name (`ct.{name}(...)`, "
                              f"`tilepy.{name}(...)`), not through a variable: its argument is "
                              f"evaluated at compile time, not traced")


def _chain(node, ns):
    """The value of a `name.attr.attr` expression over `ns` (None if the expression is not such
    a chain or a read fails: evaluation reports it)."""
    if isinstance(node, ast.Name):
        return ns.get(node.id)
    if isinstance(node, ast.Attribute):
        return getattr(_chain(node.value, ns), node.attr, None)
    return None


def _record(tr, node, ns, local):
    """What evaluating `node` reads from outside the kernel (identity.Deps): names from the
    function's globals, closure and builtins, attributes of modules and classes. A call of a
    Python function runs code the trace does not see: the trace is then not reusable."""
    import types
    deps = tr.ctx.deps
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id not in local and n.id in ns:
            deps.env(tr.func, n.id, ns[n.id])
        elif isinstance(n, ast.Attribute):
            owner = _chain(n.value, ns)
            if owner is not None and hasattr(owner, n.attr):
                deps.attr(owner, n.attr, getattr(owner, n.attr))
        elif isinstance(n, ast.Call):
            fn = _chain(n.func, ns)
            if not (isinstance(n.func, (ast.Name, ast.Attribute)) and fn is not None) or \
                    (isinstance(fn, types.FunctionType) and not getattr(fn, "__tilepy_builtin__", False)):
                deps.opaque("static evaluation calls a function tilepy does not trace")


def static_eval(tr, args, keywords):
    if len(args) != 1 or keywords:
        raise TileSyntaxError("static_eval() expects a single expression")
    return resolve(tr, evaluate(tr, args[0]))


def static_assert(tr, args, keywords):
    if not 1 <= len(args) <= 2 or keywords:
        raise TileSyntaxError("static_assert(cond, msg=None, /) expects one or two positional "
                              "arguments")
    cond = evaluate(tr, args[0], ASSERT_CONDITION)
    value = folded(tr, cond)           # over strictly typed constants it folds (`t == 7`)
    if value is not None:
        cond = value
    if isinstance(cond, Proxy):
        raise TileTypeError("static_assert() condition must be a compile-time constant (it "
                            "depends on a runtime value)")
    if not isinstance(cond, (bool, np.bool_)):
        raise TileTypeError(f"static_assert() condition must be a boolean, not "
                            f"{type(cond).__name__} (compare it: `n != 0`)")
    if not cond:
        msg = evaluate(tr, args[1], ASSERT_MESSAGE) if len(args) == 2 else None
        msg = "" if msg is None else str(msg)
        raise TileStaticAssertionError("Static assertion failed" + (f": {msg}" if msg else ""))
    return None


def static_items(tr, node: ast.Call) -> list:
    """The items of `static_iter(iterable)`, evaluated at compile time."""
    if len(node.args) != 1 or node.keywords:
        raise TileSyntaxError("static_iter() expects a single expression")
    it = evaluate(tr, node.args[0], ITERABLE)
    try:
        it = iter(it)
    except Exception as e:
        raise TileTypeError(f"Invalid static_iter() iterable: {e}") from None
    items = []
    while True:
        try:
            x = next(it)
        except StopIteration:
            break
        except TileError:
            raise
        except Exception as e:
            raise TileTypeError(f"Error was raised while obtaining item #{len(items)} from the "
                                f"static_iter() iterable ({type(e).__name__}: {e})") from None
        if len(items) == MAX_STATIC_ITER:
            raise TileStaticEvalError(f"Maximum number of iterations ({MAX_STATIC_ITER}) has been "
                                      f"reached while unpacking the static_iter() iterable")
        items.append(x)
    out = []
    for i, x in enumerate(items):
        try:
            out.append(resolve(tr, x))
        except TileTypeError as e:
            raise TileStaticEvalError(f"Invalid item #{i} of static_iter() iterable: "
                                      f"{e.message}") from None
    return out


# Builtins the tracer handles as keywords: they receive the call's argument *nodes*.
SPECIAL_FORMS = {api.static_eval: static_eval, api.static_assert: static_assert}
