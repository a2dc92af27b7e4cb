"""The tracer: walks a kernel's Python AST and builds Tile IR.

One handler per AST node kind (`stmt_If`, `expr_BinOp`, ...); any other node is one located
TileSyntaxError. Each node's source location is made ambient while it is handled, so errors
raised deep inside builtins and type rules point at the user's expression. Operators and calls
become calls of builtins (`a + b` is `tilepy.add(a, b)`), whose meaning lives in `builtins/`.
Python values (ints, tuples, dtypes, ...) are compile-time constants and fold in Python; helper
functions are inlined (calls.py); control flow on runtime values becomes `if`/`for`/`loop` ops
(control_flow.py, loops.py); `static_*` builtins evaluate plain Python (static.py).
"""
from __future__ import annotations

import ast
import builtins as py_builtins
import inspect
import operator
import types
from typing import Callable

import numpy as np

from ..errors import (TileError, TileRecursionError, TileSyntaxError, TileTypeError,
                      TileValueError, StaticException, at, did_you_mean, internal_errors)
from ..types.dtype import from_numpy
from . import api
from .builtins import call_builtin
from .context import KernelContext
from .names import BoundBuiltin, Captured, LocalFunction, ReturnSignal, Undefined, truth
from .records import class_attr, field_names, is_record
from .source import ParsedFunction, parse_function
from . import tuples
from .methods import ARRAY_METHODS, RAW_MEMORY_METHODS, TILE_METHODS, TILED_VIEW_METHODS
from .values import (Array, ArrayList, RawArrayMemory, Tile, TiledView, python_value, type_name,
                     value_type)
from .with_stmt import ExitWith

BINOPS = {ast.Add: api.add, ast.Sub: api.sub, ast.Mult: api.mul, ast.Div: api.truediv,
          ast.FloorDiv: api.floordiv, ast.Mod: api.mod, ast.Pow: api.pow, ast.MatMult: api.matmul,
          ast.BitAnd: api.bitwise_and, ast.BitOr: api.bitwise_or, ast.BitXor: api.bitwise_xor,
          ast.LShift: api.bitwise_lshift, ast.RShift: api.bitwise_rshift}
CMPOPS = {ast.Eq: api.equal, ast.NotEq: api.not_equal, ast.Lt: api.less, ast.LtE: api.less_equal,
          ast.Gt: api.greater, ast.GtE: api.greater_equal}
PY_CMPOPS = {ast.Is: operator.is_, ast.IsNot: operator.is_not,
             ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_PYOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.Pow: operator.pow, ast.MatMult: operator.matmul, ast.BitAnd: operator.and_,
          ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
          ast.RShift: operator.rshift}
# helper calls inlined inside one another: a recursion that ends at compile time (on a constant)
# is traced to this depth (cuTile's is 1000; tilepy's tracer takes ~15 Python frames a level,
# trace.py raises Python's recursion limit to fit it)
MAX_INLINE_DEPTH = 256
MAX_RECURSIVE_CALLS = 4096     # in all: a recursion that branches at run time doubles per level
_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
            ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_PYCMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
          ast.Gt: operator.gt, ast.GtE: operator.ge}


# How calls are traced: calls.py, which builds tracers for the functions it inlines, fills this
# ("expr": a call expression, "combiner": a reduce/scan combiner) when it loads (trace.py loads it).
CALLS: dict[str, Callable] = {}


class FunctionTracer:
    def __init__(self, ctx: KernelContext, parsed: ParsedFunction, env: dict, func=None):
        self.ctx = ctx
        self.parsed = parsed
        self.env = env                 # closure + globals of the Python function
        self.func = func or parsed.func     # whose globals and closure `env` holds
        self.scope: dict[str, object] = {}
        self.def_locs: dict[str, object] = {}   # name -> location of its latest assignment
        self.loops: list = []          # enclosing loops (loops.LoopFrame), innermost last
        self.terminated = False        # the rest of the current statement list is unreachable
        self.withs: tuple = ()         # entered context managers (with_stmt.WithFrame)

    @classmethod
    def for_call(cls, ctx: KernelContext, fn, args, kwargs) -> FunctionTracer:
        """A tracer of Python function `fn`'s body with its parameters bound to the call's
        arguments (helpers are inlined: a recursion deeper than MAX_INLINE_DEPTH is refused)."""
        if fn.__code__ in ctx.call_stack:
            ctx.recursive_calls += 1
        if len(ctx.call_stack) > MAX_INLINE_DEPTH or ctx.recursive_calls > MAX_RECURSIVE_CALLS:
            what = (f"Maximum recursion depth ({MAX_INLINE_DEPTH}) reached"
                    if len(ctx.call_stack) > MAX_INLINE_DEPTH else
                    f"More than {MAX_RECURSIVE_CALLS} recursive calls inlined")
            raise TileRecursionError(f"{what} while inlining a function call: '{fn.__name__}' "
                                     f"(helpers are inlined, so a recursion must end at compile "
                                     f"time)")
        tracer = cls(ctx, parse_function(fn), function_env(fn), fn)
        sig = inspect.signature(fn, follow_wrapped=False)   # a functools.wraps wrapper's own
        tracer.scope.update(bind_args(sig, args, kwargs, fn.__name__))
        return tracer

    def run_inlined(self, body, call_loc):
        """Trace an inlined function's `body`; its value is what it returns (None when it falls
        off the end). An error inside it (or in what it calls) gets the call's line
        (`call_loc`, when given) as the next frame of its call stack."""
        try:
            self.run(body)
        except ReturnSignal as r:
            return r.value
        except TileError as e:
            top = e.calls[0] if e.calls else e.loc
            if call_loc is not None and top is not None and top.file == self.parsed.file \
                    and top.function == self.parsed.tree.name and top != call_loc:
                e.calls.insert(0, call_loc)
            raise
        return None

    # ------------------------------------------------------------------ driving
    def loc(self, node):
        return self.parsed.loc(node)

    def run(self, stmts):
        from .control_flow import returns_inside, stmt_if
        for i, s in enumerate(stmts):
            if self.terminated:
                return
            if isinstance(s, ast.If):
                if stmt_if(self, s, stmts[i + 1:]):
                    return                  # the `if` took the rest of the list with it
                continue
            if isinstance(s, ast.While) and returns_inside(s) is not None:
                from .loops import trace_while_returning
                with at(self.loc(s)), internal_errors("tracing this line"):
                    trace_while_returning(self, s, stmts[i + 1:])
                return                      # it took the rest of the list with it
            if isinstance(s, (ast.With, ExitWith)):
                from .with_stmt import run_with
                with at(self.loc(s)), internal_errors("tracing this line"):
                    if run_with(self, s, stmts[i + 1:]):
                        return              # the `with` took the rest of the list with it
                continue
            self.stmt(s)

    def stmt(self, node):
        with at(self.loc(node)), internal_errors("tracing this line"):
            handler = getattr(self, "stmt_" + type(node).__name__, None)
            if handler is None:
                raise TileSyntaxError(f"{describe(node)} is not supported in tile kernels")
            handler(node)

    def expr(self, node):
        with at(self.loc(node)), internal_errors("tracing this expression"):
            handler = getattr(self, "expr_" + type(node).__name__, None)
            if handler is None:
                raise TileSyntaxError(f"Unsupported syntax: {describe(node)} is not supported in "
                                      f"tile kernels")
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
        if isinstance(node.target, ast.Subscript):     # read first, as Python does: an array's
            current = self.expr(node.target)           # item is refused there, a tile's assigned
        elif isinstance(node.target, ast.Name):
            current = self.lookup(node.target.id)
        else:
            raise TileSyntaxError("augmented assignment to anything but a name is not supported "
                                  "(tiles are immutable; arrays are written with tilepy.store)")
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
                self._unpack(target, value, value_node)
            elif isinstance(target, ast.Subscript):
                obj = self.expr(target.value)
                if isinstance(obj, tuple):
                    raise TileTypeError("Tuples are immutable: item assignment is not supported. "
                                        "Build a new tuple instead")
                if isinstance(obj, Array):
                    raise TileTypeError("Arrays do not support item assignment. Use store() or "
                                        "scatter() instead (tilepy.store()/tilepy.scatter())")
                if isinstance(obj, Tile):
                    raise TileTypeError("Tiles are immutable: item assignment is not supported "
                                        "(build a new tile, e.g. with tilepy.where())")
                if is_record(obj):
                    fn = self._record_dunder(obj, "__setitem__", "item-assignable")
                    self.call_method(fn, [obj, self.expr(target.slice), value])
                    return
                raise TileTypeError(f"{type_name(obj)} does not support item assignment")
            elif isinstance(target, ast.Attribute) and is_record(obj := self.expr(target.value)):
                raise TileSyntaxError(f"cannot assign to field '{target.attr}' of a "
                                      f"{type(obj).__name__}: dataclasses in kernels are frozen "
                                      f"(build a new one: dataclasses.replace(obj, "
                                      f"{target.attr}=...))")
            else:
                raise TileSyntaxError(f"assignment to {describe(target)} is not supported")

    def _unpack(self, target, value, value_node):
        if not isinstance(value, tuple):
            raise TileTypeError(f"cannot unpack {type_name(value)}: only tuples unpack")
        stars = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
        if stars:
            i = stars[0]
            n_after = len(target.elts) - i - 1
            if len(value) < len(target.elts) - 1:
                raise TileValueError(f"not enough values to unpack (expected at least "
                                     f"{len(target.elts) - 1}, got {len(value)})")
            value = value[:i] + (tuple(value[i:len(value) - n_after]),) + value[len(value) - n_after:]
            elts = [t.value if isinstance(t, ast.Starred) else t for t in target.elts]
        else:
            elts = target.elts
            if len(value) != len(elts):
                few = "few" if len(value) < len(elts) else "many"
                raise TileValueError(f"Too {few} values to unpack: cannot unpack {len(value)} values "
                                     f"into {len(elts)} names")
        for t, v in zip(elts, value):
            self.assign(t, v, value_node)

    def stmt_Return(self, node):
        if self.loops:
            from .loops import return_from_loop
            return_from_loop(self, node)
            return
        value = self.expr(node.value) if node.value is not None else None
        if self.withs:
            from .with_stmt import unwind
            unwind(self, self.withs)
        raise ReturnSignal(value)

    def stmt_For(self, node):
        from .loops import trace_for
        trace_for(self, node)

    def stmt_While(self, node):
        from .loops import trace_while
        trace_while(self, node)

    def stmt_Break(self, node):
        from .loops import leave_loop
        leave_loop(self, "break")

    def stmt_Continue(self, node):
        from .loops import leave_loop
        leave_loop(self, "continue")

    def stmt_FunctionDef(self, node):
        if node.decorator_list:
            raise TileSyntaxError("decorators on functions defined inside a kernel are not supported")
        self.scope[node.name] = LocalFunction(node, self)

    def stmt_Assert(self, node):
        cond = self.expr(node.test)
        msg = self.expr(node.msg) if node.msg is not None else None
        if isinstance(cond, Tile):
            call_builtin(self.ctx, api.assert_, [cond, msg], {})
        elif not truth(cond):
            raise TileValueError(f"assertion failed{': ' + str(msg) if msg is not None else ''}")

    def stmt_Raise(self, node):
        exc = self.expr(node.exc) if node.exc is not None else None
        if isinstance(exc, api._StaticExceptionRequest):
            e = exc.exc
            raise StaticException(f"{type(e).__name__}: {e}" if isinstance(e, BaseException)
                                  else str(e))
        raise TileSyntaxError("raised exceptions must be wrapped in tilepy.static_exception() "
                              "(`raise tilepy.static_exception(ValueError(...))`)")

    # ------------------------------------------------------------------ names
    def lookup(self, name: str):
        if name in self.scope:
            v = self.scope[name]
        else:
            if name in self.func.__code__.co_varnames:
                raise TileSyntaxError(f"Undefined variable {name} used: '{name}' is assigned in "
                                      f"this function, so it is a local variable everywhere in "
                                      f"it (Python's scoping), and it has no value here yet")
            if name in self.env:
                v = self.env[name]
            elif hasattr(py_builtins, name):
                v = getattr(py_builtins, name)
            else:
                near = did_you_mean(name, [*self.scope, *self.env])
                raise TileSyntaxError(f"Undefined variable {name} used: name '{name}' is not "
                                      f"defined{near}")
            if not isinstance(v, type) and any(hasattr(v, a) for a in _ARRAY_PROTOCOLS):
                t = type(v)
                raise TileTypeError(f"Cannot create constant from value of type "
                                    f"{t.__module__}.{t.__qualname__}: '{name}' is an array from "
                                    f"outside the kernel; pass arrays as kernel arguments")
            if self.ctx.deps is not None:           # a value from outside: the trace depends on it
                self.ctx.deps.env(self.func, name, v)
        if isinstance(v, Undefined):
            raise v.error(name)
        if isinstance(v, Captured):
            raise TileSyntaxError(v.why)
        return v

    def expr_Name(self, node):
        return self.lookup(node.id)

    def expr_Constant(self, node):
        return node.value

    def expr_Tuple(self, node):
        out = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                out.extend(tuples.starred(self.expr(e.value)))
            else:
                out.append(self.expr(e))
        return tuple(out)

    def expr_Attribute(self, node):
        obj = self.expr(node.value)
        name = node.attr
        if isinstance(obj, Tile):
            return self._tile_attr(obj, name)
        if isinstance(obj, Array):
            if name in ("dtype", "ndim"):
                return getattr(obj, name)
            if name in ("shape", "strides"):
                vals = obj.shape if name == "shape" else obj.strides
                return tuple(obj.index(v) for v in vals)
            if name in ARRAY_METHODS:
                return BoundBuiltin(ARRAY_METHODS[name], obj)
            known = ("dtype", "ndim", "shape", "strides", *ARRAY_METHODS)
            raise TileTypeError(f"arrays have no attribute '{name}' in kernels"
                                f"{did_you_mean(name, known)}")
        if isinstance(obj, RawArrayMemory):
            if name == "dtype":
                return obj.dtype
            if name in RAW_MEMORY_METHODS:
                return BoundBuiltin(RAW_MEMORY_METHODS[name], obj)
            raise TileTypeError(f"raw array memory has no attribute '{name}'"
                                f"{did_you_mean(name, ('dtype', *RAW_MEMORY_METHODS))}")
        if isinstance(obj, TiledView):
            if name in ("dtype", "tile_shape", "traversal_steps"):
                return getattr(obj, name)
            if name in TILED_VIEW_METHODS:
                return BoundBuiltin(TILED_VIEW_METHODS[name], obj)
            known = ("dtype", "tile_shape", "traversal_steps", *TILED_VIEW_METHODS)
            raise TileTypeError(f"tiled views have no attribute '{name}'"
                                f"{did_you_mean(name, known)}")
        if type(obj) in (bool, int, float) and name in TILE_METHODS:
            return BoundBuiltin(TILE_METHODS[name], obj)     # a constant is a 0-d tile: `n.astype`
        if isinstance(obj, (np.number, np.bool_)) and name == "dtype":
            return from_numpy(obj.dtype)        # a numpy scalar's dtype is tilepy's (as cuTile)
        if is_record(obj):
            return self._record_attr(obj, name)
        try:
            v = getattr(obj, name)
        except AttributeError as e:
            missing = f"has no attribute '{name}'"
            if isinstance(obj, types.ModuleType):    # the module as the user imported it
                near = str(e).partition(missing)[2]   # (tilepy's message names the nearest)
                raise TileTypeError(f"Module '{obj.__name__}' {missing}{near}") from None
            raise TileTypeError(f"{type_name(obj)} {missing}") from None
        if self.ctx.deps is not None:
            self.ctx.deps.attr(obj, name, v)
        return v

    def _record_attr(self, obj, name: str):
        """A field of a dataclass object, or what its class gives (a property is traced)."""
        cls = type(obj)
        if name in field_names(cls):
            return getattr(obj, name)
        prop = class_attr(cls, name)
        if isinstance(prop, property) and prop.fget is not None:
            return self.call_method(prop.fget, [obj])
        try:
            v = getattr(obj, name)
        except AttributeError:
            raise TileTypeError(f"'{cls.__name__}' object has no attribute '{name}'"
                                f"{did_you_mean(name, field_names(cls))}") from None
        if self.ctx.deps is not None:
            self.ctx.deps.attr(obj, name, v)
        return v

    def _record_dunder(self, obj, name: str, what: str):
        """The method `name` of a dataclass object's class (what `obj[i]`, `obj[i] = v` and
        `obj(...)` call), or cuTile's error."""
        fn = class_attr(type(obj), name)
        if fn is None:
            raise TileTypeError(f"'{type(obj).__name__}' object is not {what}")
        return fn

    def _tile_attr(self, t: Tile, name: str):
        if name in ("dtype", "shape", "ndim"):
            return getattr(t, name)
        if name == "T":
            return call_builtin(self.ctx, api.transpose, [t], {})
        if name == "item":
            return BoundBuiltin(api._tile_item, t)
        if name in TILE_METHODS:
            return BoundBuiltin(TILE_METHODS[name], t)
        known = ("dtype", "shape", "ndim", "T", "item", *TILE_METHODS)
        raise TileTypeError(f"tiles have no attribute '{name}'{did_you_mean(name, known)}")

    def expr_Subscript(self, node):
        obj = self.expr(node.value)
        if isinstance(obj, Tile):
            from .control_flow import tile_subscript
            return tile_subscript(self, obj, node.slice)
        if isinstance(obj, Array):
            raise TileTypeError("Arrays are not directly subscriptable. Use load() or gather() "
                                "instead (tilepy.load()/store() or tilepy.gather()/scatter())")
        index = self.expr(node.slice)
        if isinstance(index, Tile) and isinstance(obj, ArrayList):
            from .array_list import select_array
            return select_array(self.ctx, obj, index)
        if isinstance(obj, tuple):
            return tuples.getitem(obj, index)
        if is_record(obj):
            return self.call_method(self._record_dunder(obj, "__getitem__", "subscriptable"),
                                    [obj, index])
        if isinstance(index, Tile):
            raise TileTypeError(f"a {type_name(obj)} cannot be indexed with a runtime tile")
        try:
            return obj[index]
        except KeyError:
            if isinstance(obj, dict):             # cuTile's words (a helper's **kwargs)
                raise TileTypeError(f"Key {index!r} not found in dictionary (keys: "
                                    f"{', '.join(map(repr, obj)) or 'none'})") from None
            raise TileValueError(f"cannot index {type_name(obj)}: key {index!r} not found") \
                from None
        except (IndexError, TypeError) as e:
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
            if isinstance(a, Array) or isinstance(b, Array):
                raise TileTypeError(f"unsupported operand types for an operator: {type_name(a)} "
                                    f"and {type_name(b)} (load a tile from the array first)")
            try:
                return python_value(_PYOPS[type(op)], a, b)
            except TileTypeError:              # cuTile's words, its names of the types
                raise TileTypeError(f"Unsupported operand types for {_SYMBOLS[type(op)]}: "
                                    f"{value_type(a)} and {value_type(b)}") from None
        try:
            return call_builtin(self.ctx, stub, [a, b], {})
        except ArithmeticError as e:     # constant folding, e.g. 1 // 0
            raise TileValueError(f"{type(e).__name__}: {e}") from None

    def expr_BinOp(self, node):
        return self.binop(node.op, self.expr(node.left), self.expr(node.right))

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            if isinstance(v, Tile):
                return call_builtin(self.ctx, api.bitwise_not, [self._as_bool(v)], {})
            return not truth(v)
        if isinstance(node.op, ast.UAdd):
            return v
        stub = api.negative if isinstance(node.op, ast.USub) else api.bitwise_not
        return call_builtin(self.ctx, stub, [v], {})

    def expr_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            r = self._compare(type(op), left, right)
            result = r if result is None else self._and(result, r)
            left = right
        return result

    def _compare(self, op, left, right):
        r = tuples.compare(self.ctx, op, left, right)
        if r is not NotImplemented:
            return r
        if op in PY_CMPOPS:
            if isinstance(left, Tile) or isinstance(right, Tile):
                word = describe(op())
                if op in (ast.Is, ast.IsNot):
                    raise TileTypeError(f"Operator '{word}' expects one of the operands to be None "
                                        f"(it cannot compare tiles; use ==)")
                raise TileTypeError(f"'{word}' cannot be applied to tiles")
            return python_value(PY_CMPOPS[op], left, right)
        if not isinstance(left, Tile) and not isinstance(right, Tile) and not _numeric(left, right):
            return python_value(_PYCMP[op], left, right)
        return call_builtin(self.ctx, CMPOPS[op], [left, right], {})

    def _and(self, a, b):
        if isinstance(a, Tile) or isinstance(b, Tile):
            return call_builtin(self.ctx, api.bitwise_and, [self._as_bool(a), self._as_bool(b)], {})
        return a and b

    def _as_bool(self, v):
        if isinstance(v, Tile):
            return call_builtin(self.ctx, api.astype, [v, _dtype("bool_")], {})
        return bool(v)

    def expr_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        acc = self.expr(node.values[0])
        for n in node.values[1:]:
            if not isinstance(acc, Tile):          # Python short-circuit on constants
                if (not truth(acc)) if is_and else truth(acc):
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
            return self.expr(node.body if truth(cond) else node.orelse)
        from .control_flow import trace_ifexp
        return trace_ifexp(self, node, cond)

    def expr_JoinedStr(self, node):
        from .builtins.debug import joined_string
        return joined_string(self, node)

    def expr_Lambda(self, node):
        return LocalFunction(node, self)

    def expr_Call(self, node):
        return CALLS["expr"](self, node)

    def call_combiner(self, fn, args, what: str):
        """Call the combiner function of reduce()/scan() (builtins/combine.py)."""
        return CALLS["combiner"](self.ctx, fn, args, what)

    def call_method(self, fn, args):
        """Trace a Python function (a dataclass's method or property) with `args`, inlined."""
        return CALLS["function"](self.ctx, fn, args, {})

    def seal(self):
        """End the current loop-body block if a branch left the loop (control_flow.py)."""
        from .loops import seal
        seal(self)


# ---------------------------------------------------------------------- helpers
_ARRAY_PROTOCOLS = ("__dlpack__", "__cuda_array_interface__")    # numpy's ndarray has the first


def function_env(fn) -> dict:
    """The names a Python function's body sees: its globals, then its closure's cells."""
    env = dict(fn.__globals__)
    code = fn.__code__
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                pass
    return env


def bind_args(sig: inspect.Signature, args, kwargs, name) -> dict:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{name}(): {e}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def _dtype(name):
    from ..types import dtype as D
    return getattr(D, name)


def _numeric(*xs) -> bool:
    from .builtins.semantics import is_number
    return all(is_number(x) or isinstance(x, Tile) for x in xs)


_NAMES = {ast.Try: "try/except", ast.With: "with", ast.Raise: "raise", ast.Global: "global",
          ast.Nonlocal: "nonlocal", ast.Import: "import", ast.ImportFrom: "import",
          ast.ClassDef: "class definition", ast.Delete: "del", ast.List: "a list literal",
          ast.Dict: "a dict literal", ast.Set: "a set literal", ast.ListComp: "a list comprehension",
          ast.GeneratorExp: "a generator expression (other than tuple(... for x in ct.static_iter(...)))", ast.DictComp: "a dict comprehension",
          ast.SetComp: "a set comprehension", ast.Yield: "yield", ast.YieldFrom: "yield",
          ast.Await: "await", ast.NamedExpr: "an assignment expression (:=)",
          ast.Starred: "a starred expression", ast.AsyncFor: "async for",
          ast.AsyncWith: "async with", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
          ast.NotIn: "not in", ast.Lambda: "lambda", ast.AsyncFunctionDef: "async def"}


def describe(node) -> str:
    for k, v in _NAMES.items():
        if isinstance(node, k):
            return v
    if hasattr(ast, "Match") and isinstance(node, ast.Match):
        return "match"
    if hasattr(ast, "TryStar") and isinstance(node, ast.TryStar):
        return "try/except*"
    return type(node).__name__
