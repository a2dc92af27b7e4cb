"""The tracer: walks a kernel's Python AST and builds Tile IR.

One handler per AST node kind (`stmt_If`, `expr_BinOp`, ...); any other node is one located
TileSyntaxError. Each node's source location is made ambient while it is handled, so errors
raised deep inside builtins and type rules point at the user's expression. Operators and calls
become calls of builtins (`a + b` is `tilepy.add(a, b)`), whose meaning lives in `builtins/`.
Python values (ints, tuples, dtypes, ...) are compile-time constants and fold in Python; helper
functions are inlined; control flow on runtime values becomes `if`/`for` ops (control_flow.py).
"""
from __future__ import annotations

import ast
import builtins as py_builtins
import inspect
import operator

from ..errors import TileError, TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, \
    TileValueError, at, current_loc
from ..types import DType
from . import api
from .builtins import call_builtin, is_builtin
from .builtins.arith import dtype_call
from .context import KernelContext
from .source import ParsedFunction, parse_function
from .values import Array, Tile, type_name

BINOPS = {ast.Add: api.add, ast.Sub: api.sub, ast.Mult: api.mul, ast.Div: api.truediv,
          ast.FloorDiv: api.floordiv, ast.Mod: api.mod, ast.Pow: api.pow, ast.MatMult: api.matmul,
          ast.BitAnd: api.bitwise_and, ast.BitOr: api.bitwise_or, ast.BitXor: api.bitwise_xor,
          ast.LShift: api.bitwise_lshift, ast.RShift: api.bitwise_rshift}
CMPOPS = {ast.Eq: api.equal, ast.NotEq: api.not_equal, ast.Lt: api.less, ast.LtE: api.less_equal,
          ast.Gt: api.greater, ast.GtE: api.greater_equal}
PY_CMPOPS = {ast.Is: operator.is_, ast.IsNot: operator.is_not,
             ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
# Tile methods: attribute name -> builtin taking the tile first.
TILE_METHODS = {"astype": api.astype, "reshape": api.reshape, "permute": api.permute,
                "transpose": api.transpose, "sum": api.sum, "max": api.max, "min": api.min,
                "prod": api.prod, "broadcast_to": api.broadcast_to, "extract": api.extract}


class Undefined:
    """A name that is not defined on every path reaching this point."""

    def __init__(self, why: str):
        self.why = why


class ReturnSignal(Exception):
    def __init__(self, value):
        self.value = value


class BoundBuiltin:
    def __init__(self, stub, first):
        self.stub, self.first = stub, first


class LocalFunction:
    """A `def` or `lambda` inside a kernel: inlined where it is called."""

    def __init__(self, node, tracer: "FunctionTracer"):
        self.node, self.tracer = node, tracer
        self.scope = tracer.scope      # closes over the defining scope (by reference)


class FunctionTracer:
    def __init__(self, ctx: KernelContext, parsed: ParsedFunction, env: dict):
        self.ctx = ctx
        self.parsed = parsed
        self.env = env                 # closure + globals of the Python function
        self.scope: dict[str, object] = {}
        self.def_locs: dict[str, object] = {}   # name -> location of its latest assignment
        self.runtime_depth = 0         # > 0 inside runtime if/for bodies

    # ------------------------------------------------------------------ driving
    def loc(self, node):
        return self.parsed.loc(node)

    def run(self, stmts):
        for s in stmts:
            self.stmt(s)

    def stmt(self, node):
        with at(self.loc(node)):
            handler = getattr(self, "stmt_" + type(node).__name__, None)
            if handler is None:
                raise TileSyntaxError(f"{_describe(node)} is not supported in tile kernels")
            handler(node)

    def expr(self, node):
        with at(self.loc(node)):
            handler = getattr(self, "expr_" + type(node).__name__, None)
            if handler is None:
                raise TileSyntaxError(f"{_describe(node)} is not supported in tile kernels")
            return handler(node)

    # ------------------------------------------------------------------ statements
    def stmt_Expr(self, node):
        self.expr(node.value)

    def stmt_Pass(self, node):
        pass

    def stmt_Assign(self, node):
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value, node.value)

    def stmt_AnnAssign(self, node):
        if node.value is None:
            return
        self.assign(node.target, self.expr(node.value), node.value)

    def stmt_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise TileSyntaxError("augmented assignment to anything but a name is not supported "
                                  "(tiles are immutable; arrays are written with tilepy.store)")
        current = self.lookup(node.target.id, node.target)
        value = self.expr(node.value)
        self.assign(node.target, self.binop(node.op, current, value), node)

    def assign(self, target, value, value_node=None):
        with at(self.loc(target)):
            if isinstance(target, ast.Name):
                if isinstance(value, Tile) and value.value.hint is None:
                    value.value.hint = target.id
                self.scope[target.id] = value
                self.def_locs[target.id] = self.loc(value_node if value_node is not None
                                                    else target)
            elif isinstance(target, (ast.Tuple, ast.List)):
                if not isinstance(value, tuple):
                    raise TileTypeError(f"cannot unpack {type_name(value)}: only tuples unpack")
                if len(value) != len(target.elts):
                    raise TileValueError(f"cannot unpack {len(value)} values into "
                                         f"{len(target.elts)} names")
                for t, v in zip(target.elts, value):
                    self.assign(t, v, value_node)
            elif isinstance(target, ast.Subscript):
                raise TileTypeError("tiles are immutable and arrays are written with tilepy.store(); "
                                    "item assignment is not supported")
            else:
                raise TileSyntaxError(f"assignment to {_describe(target)} is not supported")

    def stmt_Return(self, node):
        value = self.expr(node.value) if node.value is not None else None
        if self.runtime_depth:
            raise TileUnsupportedFeatureError("return inside a runtime if/for is not supported yet")
        raise ReturnSignal(value)

    def stmt_If(self, node):
        from .control_flow import trace_if
        cond = self.expr(node.test)
        if isinstance(cond, Tile):
            trace_if(self, node, cond)
        else:
            self.run(node.body if _truth(cond) else node.orelse)

    def stmt_For(self, node):
        from .control_flow import trace_for
        trace_for(self, node)

    def stmt_While(self, node):
        raise TileUnsupportedFeatureError("while loops are not supported yet")

    def stmt_Break(self, node):
        raise TileUnsupportedFeatureError("break is not supported yet")

    def stmt_Continue(self, node):
        raise TileUnsupportedFeatureError("continue is not supported yet")

    def stmt_FunctionDef(self, node):
        if node.decorator_list:
            raise TileSyntaxError("decorators on functions defined inside a kernel are not supported")
        self.scope[node.name] = LocalFunction(node, self)

    def stmt_Assert(self, node):
        cond = self.expr(node.test)
        msg = self.expr(node.msg) if node.msg is not None else None
        if isinstance(cond, Tile):
            raise TileUnsupportedFeatureError("assert on a runtime tile is not supported yet; "
                                              "use tilepy.assert_()")
        if not _truth(cond):
            raise TileValueError(f"assertion failed{': ' + str(msg) if msg is not None else ''}")

    # ------------------------------------------------------------------ names
    def lookup(self, name: str, node=None):
        if name in self.scope:
            v = self.scope[name]
        elif name in self.env:
            v = self.env[name]
        elif hasattr(py_builtins, name):
            v = getattr(py_builtins, name)
        else:
            raise TileSyntaxError(f"name '{name}' is not defined")
        if isinstance(v, Undefined):
            raise TileSyntaxError(f"variable '{name}' {v.why}")
        return v

    def expr_Name(self, node):
        return self.lookup(node.id, node)

    def expr_Constant(self, node):
        return node.value

    def expr_Tuple(self, node):
        out = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                v = self.expr(e.value)
                if not isinstance(v, tuple):
                    raise TileTypeError(f"only tuples can be unpacked with * (got {type_name(v)})")
                out.extend(v)
            else:
                out.append(self.expr(e))
        return tuple(out)

    def expr_Attribute(self, node):
        obj = self.expr(node.value)
        name = node.attr
        if isinstance(obj, Tile):
            if name == "dtype":
                return obj.dtype
            if name == "shape":
                return obj.shape
            if name == "ndim":
                return obj.ndim
            if name == "T":
                return call_builtin(self.ctx, api.transpose, [obj], {})
            if name in TILE_METHODS:
                return BoundBuiltin(TILE_METHODS[name], obj)
            raise TileTypeError(f"tiles have no attribute '{name}'")
        if isinstance(obj, Array):
            if name == "dtype":
                return obj.dtype
            if name == "ndim":
                return obj.ndim
            if name in ("shape", "strides"):
                vals = obj.shape if name == "shape" else obj.strides
                return tuple(v if isinstance(v, int) else Tile(v, _i32()) for v in vals)
            raise TileTypeError(f"arrays have no attribute '{name}' in kernels")
        try:
            return getattr(obj, name)
        except AttributeError:
            raise TileTypeError(f"{type_name(obj)} has no attribute '{name}'") from None

    def expr_Subscript(self, node):
        obj = self.expr(node.value)
        if isinstance(obj, Tile):
            from .control_flow import tile_subscript
            return tile_subscript(self, obj, node.slice)
        if isinstance(obj, Array):
            raise TileTypeError("arrays cannot be indexed in kernels; use tilepy.load()/store()")
        index = self.expr(node.slice)
        if isinstance(index, Tile):
            raise TileTypeError(f"a {type_name(obj)} cannot be indexed with a runtime tile")
        try:
            return obj[index]
        except (IndexError, KeyError, TypeError) as e:
            raise TileValueError(f"cannot index {type_name(obj)}: {e}") from None

    def expr_Slice(self, node):
        parts = [self.expr(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    # ------------------------------------------------------------------ operators
    def binop(self, op, a, b):
        stub = BINOPS.get(type(op))
        if stub is None:
            raise TileSyntaxError(f"operator {type(op).__name__} is not supported")
        if not isinstance(a, Tile) and not isinstance(b, Tile) and not _numeric(a, b):
            try:
                return _PYOPS[type(op)](a, b)
            except Exception as e:
                raise TileValueError(f"{type(e).__name__}: {e}") from None
        if _numeric(a, b):
            try:
                return call_builtin(self.ctx, stub, [a, b], {})
            except ArithmeticError as e:
                raise TileValueError(f"{type(e).__name__}: {e}") from None
        return call_builtin(self.ctx, stub, [a, b], {})

    def expr_BinOp(self, node):
        return self.binop(node.op, self.expr(node.left), self.expr(node.right))

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            if isinstance(v, Tile):
                return call_builtin(self.ctx, api.bitwise_not,
                                    [call_builtin(self.ctx, api.astype, [v, _bool()], {})], {})
            return not v
        if isinstance(node.op, ast.UAdd):
            return v
        stub = api.negative if isinstance(node.op, ast.USub) else api.bitwise_not
        return call_builtin(self.ctx, stub, [v], {})

    def expr_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if type(op) in PY_CMPOPS:
                if isinstance(left, Tile) or isinstance(right, Tile):
                    raise TileTypeError(f"'{_describe(op)}' cannot be applied to tiles")
                r = PY_CMPOPS[type(op)](left, right)
            elif not isinstance(left, Tile) and not isinstance(right, Tile) and not _numeric(left, right):
                r = _PYCMP[type(op)](left, right)
            else:
                r = call_builtin(self.ctx, CMPOPS[type(op)], [left, right], {})
            result = r if result is None else self._and(result, r)
            left = right
        return result

    def _and(self, a, b):
        if isinstance(a, Tile) or isinstance(b, Tile):
            return call_builtin(self.ctx, api.bitwise_and, [self._as_bool(a), self._as_bool(b)], {})
        return a and b

    def _as_bool(self, v):
        return call_builtin(self.ctx, api.astype, [v, _bool()], {}) if isinstance(v, Tile) else bool(v)

    def expr_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        acc = self.expr(node.values[0])
        for n in node.values[1:]:
            if not isinstance(acc, Tile):          # Python short-circuit on constants
                if (not _truth(acc)) if is_and else _truth(acc):
                    return acc
                acc = self.expr(n)
                continue
            rhs = self.expr(n)
            stub = api.bitwise_and if is_and else api.bitwise_or
            acc = call_builtin(self.ctx, stub, [self._as_bool(acc), self._as_bool(rhs)], {})
        return acc

    def expr_IfExp(self, node):
        cond = self.expr(node.test)
        if not isinstance(cond, Tile):
            return self.expr(node.body if _truth(cond) else node.orelse)
        return call_builtin(self.ctx, api.where, [cond, self.expr(node.body),
                                                  self.expr(node.orelse)], {})

    def expr_JoinedStr(self, node):
        parts = []
        for v in node.values:
            x = self.expr(v.value) if isinstance(v, ast.FormattedValue) else v.value
            if isinstance(x, Tile):
                raise TileTypeError("f-strings can only format compile-time constants")
            parts.append(str(x))
        return "".join(parts)

    def expr_Lambda(self, node):
        return LocalFunction(node, self)

    # ------------------------------------------------------------------ calls
    def expr_Call(self, node):
        fn = self.expr(node.func)
        args, arg_nodes = [], []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value)
                if not isinstance(v, tuple):
                    raise TileTypeError(f"only tuples can be unpacked with * (got {type_name(v)})")
                args.extend(v)
                arg_nodes.extend([a] * len(v))
            else:
                args.append(self.expr(a))
                arg_nodes.append(a)
        kwargs, kw_nodes = {}, {}
        for k in node.keywords:
            if k.arg is None:
                raise TileSyntaxError("**kwargs in calls is not supported in tile kernels")
            kwargs[k.arg] = self.expr(k.value)
            kw_nodes[k.arg] = k.value
        return self.call(fn, args, kwargs, arg_nodes, kw_nodes)

    def _arg_locs(self, stub, arg_nodes, kw_nodes, first=()):
        from .builtins.registry import signature_of
        try:
            bound = signature_of(stub).bind_partial(*first, *arg_nodes, **kw_nodes)
        except TypeError:
            return {}
        return {k: self.loc(v) for k, v in bound.arguments.items() if isinstance(v, ast.AST)}

    def call(self, fn, args, kwargs, arg_nodes=(), kw_nodes=None):
        kw_nodes = kw_nodes or {}
        if isinstance(fn, BoundBuiltin):
            with self.ctx.call_args(self._arg_locs(fn.stub, arg_nodes, kw_nodes, (None,))):
                return call_builtin(self.ctx, fn.stub, [fn.first, *args], kwargs)
        if is_builtin(fn):
            with self.ctx.call_args(self._arg_locs(fn, arg_nodes, kw_nodes)):
                return call_builtin(self.ctx, fn, args, kwargs)
        if isinstance(fn, DType):
            if len(args) != 1 or kwargs:
                raise TileTypeError(f"{fn}(...) takes exactly one value")
            return dtype_call(self.ctx, fn, args[0])
        if isinstance(fn, LocalFunction):
            return inline_call(self, fn.node, fn.tracer, fn.scope, args, kwargs)
        from .kernel import Kernel
        if isinstance(fn, Kernel):
            fn = fn.func
        if fn in _PY_BUILTINS:
            return _PY_BUILTINS[fn](self, args, kwargs)
        if inspect.isfunction(fn):
            return inline_function(self.ctx, fn, args, kwargs)
        if any(isinstance(a, (Tile, Array)) for a in [*args, *kwargs.values()]):
            raise TileTypeError(f"{getattr(fn, '__name__', fn)!s} cannot be called with tiles or "
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


# ---------------------------------------------------------------------- inlining
def function_env(fn) -> dict:
    env = dict(fn.__globals__)
    code = fn.__code__
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                pass
    return env


def _bind_params(tree_args, fn_sig_like, args, kwargs, name):
    try:
        bound = fn_sig_like.bind(*args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{name}(): {e}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def inline_function(ctx: KernelContext, fn, args, kwargs):
    """Trace a Python helper function's body in place (helpers are always inlined)."""
    code = fn.__code__
    if code in ctx.call_stack:
        raise TileUnsupportedFeatureError(f"recursive call of '{fn.__name__}' is not supported in "
                                          f"tile kernels")
    parsed = parse_function(fn)
    tracer = FunctionTracer(ctx, parsed, function_env(fn))
    tracer.scope.update(_bind_params(None, inspect.signature(fn), args, kwargs, fn.__name__))
    ctx.call_stack.append(code)
    call_loc = current_loc()
    try:
        tracer.run(parsed.tree.body)
    except ReturnSignal as r:
        return r.value
    except TileError as e:
        if call_loc is not None and e.loc is not None and e.loc.file == parsed.file \
                and e.loc.function == parsed.tree.name:
            e.notes.append(f"in {fn.__name__}(), called from {call_loc}")
        raise
    finally:
        ctx.call_stack.pop()
    return None


def inline_call(caller: FunctionTracer, node, definer: FunctionTracer, scope, args, kwargs):
    """Call a def/lambda written inside the kernel: it sees the defining scope."""
    tracer = FunctionTracer(caller.ctx, definer.parsed, definer.env)
    tracer.scope = dict(scope)
    sig = _signature_of_node(node)
    tracer.scope.update(_bind_params(None, sig, args, kwargs, getattr(node, "name", "lambda")))
    if isinstance(node, ast.Lambda):
        return tracer.expr(node.body)
    key = ("local", id(node))
    if key in caller.ctx.call_stack:
        raise TileUnsupportedFeatureError(f"recursive call of '{node.name}' is not supported")
    caller.ctx.call_stack.append(key)
    try:
        tracer.run(node.body)
    except ReturnSignal as r:
        return r.value
    finally:
        caller.ctx.call_stack.pop()
    return None


def _signature_of_node(node) -> inspect.Signature:
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise TileUnsupportedFeatureError("functions defined inside kernels take plain positional "
                                          "parameters only")
    return inspect.Signature([inspect.Parameter(p.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                              for p in a.args])


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


def _py_abs(tr, args, kwargs):
    return call_builtin(tr.ctx, api.abs, list(args), kwargs)


def _py_convert(pytype, dtype_of):
    def fn(tr, args, kwargs):
        if len(args) == 1 and isinstance(args[0], Tile):
            return call_builtin(tr.ctx, api.astype, [args[0], dtype_of()], {})
        return pytype(*args, **kwargs)
    return fn


def _i32():
    from ..types import dtype as D
    return D.int32


def _bool():
    from ..types import dtype as D
    return D.bool_


def _f32():
    from ..types import dtype as D
    return D.float32


_PY_BUILTINS = {
    len: _py_len, min: _py_minmax(api.minimum, min), max: _py_minmax(api.maximum, max),
    abs: _py_abs, int: _py_convert(int, _i32), float: _py_convert(float, _f32),
    bool: _py_convert(bool, _bool),
}

_PYOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.Pow: operator.pow, ast.MatMult: operator.matmul, ast.BitAnd: operator.and_,
          ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
          ast.RShift: operator.rshift}
_PYCMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
          ast.Gt: operator.gt, ast.GtE: operator.ge}


def _numeric(*xs) -> bool:
    from .builtins.semantics import is_number
    return all(is_number(x) or isinstance(x, Tile) for x in xs)


def _truth(v) -> bool:
    if isinstance(v, Array):
        raise TileTypeError("an array has no truth value")
    return bool(v)


def _describe(node) -> str:
    names = {ast.Try: "try/except", ast.With: "with", ast.Raise: "raise", ast.Global: "global",
             ast.Nonlocal: "nonlocal", ast.Import: "import", ast.ImportFrom: "import",
             ast.ClassDef: "class definition", ast.Delete: "del", ast.List: "a list literal",
             ast.Dict: "a dict literal", ast.Set: "a set literal", ast.ListComp: "a list comprehension",
             ast.GeneratorExp: "a generator expression", ast.DictComp: "a dict comprehension",
             ast.SetComp: "a set comprehension", ast.Yield: "yield", ast.Await: "await",
             ast.NamedExpr: "an assignment expression (:=)", ast.Starred: "a starred expression",
             ast.AsyncFor: "async for", ast.AsyncWith: "async with", ast.Is: "is",
             ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Lambda: "lambda"}
    for k, v in names.items():
        if isinstance(node, k):
            return v
    if hasattr(ast, "Match") and isinstance(node, ast.Match):
        return "match"
    return type(node).__name__
