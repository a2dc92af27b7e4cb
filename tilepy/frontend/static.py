"""Compile-time evaluation: `static_eval`, `static_assert`, `static_iter` (cuTile's keyword-like
builtins).

Their argument is not traced: it is evaluated as plain Python, with the full Python syntax, over
the kernel's variables. Compile-time constants are themselves; tiles and arrays are *proxies*
that answer their compile-time attributes (`shape`, `dtype`, `ndim`) and record basic
arithmetic symbolically (`x + 1`), so `static_eval(x + 1 if N % 2 else y - 1)` picks one
expression at compile time. After evaluation, symbolic results are traced as ordinary builtins.
"""
from __future__ import annotations

import ast
import builtins as py_builtins

from ..errors import TileStaticAssertionError, TileStaticEvalError, TileTypeError
from . import api
from .values import Array, Tile

MAX_STATIC_ITER = 1000


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
                     "ge": api.greater_equal}.items():
    setattr(Proxy, f"__{_name}__", _binary(_stub))
Proxy.__neg__ = lambda self: Sym(api.negative, (self,))
Proxy.__invert__ = lambda self: Sym(api.bitwise_not, (self,))
Proxy.__abs__ = lambda self: Sym(api.abs, (self,))


def _no_truth(self):
    raise TypeError("the truth value of a runtime tile is not known at compile time")


Proxy.__bool__ = _no_truth


class TileProxy(Proxy):
    def __init__(self, tile: Tile):
        self.tile = tile
        self.shape, self.dtype, self.ndim = tile.shape, tile.dtype, tile.ndim

    def __repr__(self):
        return f"<tile[{self.dtype.name}, {self.shape}]>"


class ArrayProxy(Proxy):
    def __init__(self, array: Array):
        self.array = array
        self.dtype, self.ndim = array.dtype, array.ndim
        # static extents (a slice with constant bounds) are numbers; the others run-time tiles
        self.shape = tuple(s if isinstance(s, int) else TileProxy(array.index(s))
                           for s in array.shape)

    def __repr__(self):
        return f"<array[{self.dtype.name}, {self.ndim}d]>"


class Sym(Proxy):
    """`stub(*args)` recorded during static evaluation, traced afterwards."""

    def __init__(self, stub, args):
        self.stub, self.args = stub, args

    def __repr__(self):
        return f"<{self.stub.__name__}({', '.join(map(repr, self.args))})>"


def proxy(v):
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
    if isinstance(v, Sym):
        from .builtins.registry import call_builtin
        return call_builtin(tr.ctx, v.stub, [resolve(tr, a) for a in v.args], {})
    if isinstance(v, tuple):
        return tuple(resolve(tr, x) for x in v)
    if isinstance(v, (list, dict, set)):
        raise TileStaticEvalError(f"static evaluation produced a {type(v).__name__}; kernels can "
                                  f"only use tuples (convert with tuple())")
    return v


def evaluate(tr, node: ast.expr):
    """Evaluate `node` as Python over the tracer's variables (proxies for runtime values)."""
    from .names import Undefined
    ns = dict(vars(py_builtins))
    ns.update(tr.env)
    local = {k: proxy(v) for k, v in tr.scope.items() if not isinstance(v, Undefined)}
    ns.update(local)
    for n in ast.walk(node):
        if isinstance(n, ast.NamedExpr):
            raise TileStaticEvalError("static evaluation must not assign variables (:=)")
    if tr.ctx.deps is not None:
        _record(tr, node, ns, local)
    code = compile(ast.fix_missing_locations(ast.Expression(body=node)), tr.parsed.file, "eval")
    try:
        return eval(code, ns)
    except Exception as e:
        raise TileStaticEvalError(f"compile-time evaluation failed: {type(e).__name__}: {e}") \
            from None


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
        raise TileTypeError("static_eval() takes exactly one expression")
    return resolve(tr, evaluate(tr, args[0]))


def static_assert(tr, args, keywords):
    if not 1 <= len(args) <= 2 or keywords:
        raise TileTypeError("static_assert() takes a condition and an optional message")
    cond = evaluate(tr, args[0])
    if isinstance(cond, Proxy):
        raise TileStaticAssertionError("the condition of static_assert() is not a compile-time "
                                       "constant")
    try:
        ok = bool(cond)
    except Exception as e:
        raise TileStaticEvalError(f"static_assert(): {type(e).__name__}: {e}") from None
    if not ok:
        msg = evaluate(tr, args[1]) if len(args) == 2 else None
        raise TileStaticAssertionError("Static assertion failed" +
                                       (f": {msg}" if msg is not None else ""))
    return None


def static_items(tr, node: ast.Call) -> list:
    """The items of `static_iter(iterable)`, evaluated at compile time."""
    if len(node.args) != 1 or node.keywords:
        raise TileTypeError("static_iter() takes exactly one iterable")
    it = evaluate(tr, node.args[0])
    if isinstance(it, Proxy):
        raise TileStaticEvalError("static_iter() needs a compile-time iterable (got a runtime "
                                  "tile)")
    try:
        items = []
        for x in it:
            items.append(x)
            if len(items) > MAX_STATIC_ITER:
                raise TileStaticEvalError(f"static_iter() is limited to {MAX_STATIC_ITER} "
                                          f"iterations")
    except TypeError as e:
        raise TileStaticEvalError(f"static_iter(): {e}") from None
    return [resolve(tr, x) for x in items]


# Builtins the tracer handles as keywords: they receive the call's argument *nodes*.
SPECIAL_FORMS = {api.static_eval: static_eval, api.static_assert: static_assert}
