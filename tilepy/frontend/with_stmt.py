"""`with` over a `@contextlib.contextmanager` function, as cuTile allows it.

`with cm(args) as v: body` runs the generator function's statements up to its one `yield` in a
frame of its own (an inlined call), binds the yielded value to `v`, traces `body`, and then runs
the statements after the `yield` in that frame: at the end of the body, and before every way out
of it (a `break`/`continue` of a loop entered outside the `with`, a `return`). The generator's
`yield` must be reachable, be the only reachable one, and sit outside loops and conditionals
(it may be inside a `with` of the generator itself); a generator may not `return`.

The tracer runs a `with` with the statements after it (as an `if` that returns): the body, an
`ExitWith` marker that runs the clean-up, then the rest, so that a `return` in a runtime `if` of
the body continues its other branch through the clean-up and the code after the `with`.

A clean-up traced on a way out (break/continue/return) is a path of its own: the generator frame
is put back as it was suspended afterwards, so the other paths run the clean-up from the same
state. The normal exit leaves the frame as the clean-up made it: a closure the generator yielded
sees the values the clean-up set, as in Python (and cuTile's frozen closures).
"""
from __future__ import annotations

import ast
import contextlib
import inspect
from dataclasses import dataclass, field

from ..errors import TileSyntaxError, TileTypeError, at, current_loc
from .values import type_name, value_type

# Every function @contextlib.contextmanager returns shares this code (its `helper`).
_CM_HELPER = contextlib.contextmanager(lambda: (yield)).__code__


class ExitWith(ast.stmt):
    """Marker after a `with` body in the statement list the tracer runs: leave `frames`."""
    _fields = ()

    def __init__(self, node: ast.With, frames: list):
        super().__init__()
        ast.copy_location(self, node)
        self.frames = frames


@dataclass
class GeneratorContextManager:
    """What calling a @contextmanager function in a kernel makes: the call, not yet entered."""
    func: object
    args: tuple
    kwargs: dict

    def __str__(self):
        args = ", ".join(value_type(a) for a in self.args)
        kwargs = ", ".join(f"{k}: {value_type(v)}" for k, v in self.kwargs.items())
        return f"GeneratorContextManager[{self.func!r}, args=[{args}], kwargs={{{kwargs}}}]"


def context_manager_call(fn, args, kwargs) -> GeneratorContextManager | None:
    """The manager a call of `fn` makes when `fn` is a @contextlib.contextmanager function."""
    code = getattr(fn, "__code__", None)
    if code is not _CM_HELPER or not fn.__closure__:
        return None
    cells = dict(zip(code.co_freevars, fn.__closure__))
    return GeneratorContextManager(cells["func"].cell_contents, tuple(args), dict(kwargs))


@dataclass
class WithFrame:
    """One entered context manager: the generator's tracer, where its `yield` is, and the
    frames the generator itself entered on the way to it (its own `with`s)."""
    tracer: object
    path: list                   # [(statement list, index)], outermost first; the last is the yield
    loops: int                   # len(tracer.loops) of the `with`'s own function when entered
    inner: list = field(default_factory=list)     # frames of the generator's `with`s on the path


# ------------------------------------------------------------------------ the tracer's hooks
def run_with(tr, node, rest) -> bool:
    """Called by FunctionTracer.run for a `with` (True: it traced `rest` too) or an ExitWith."""
    if isinstance(node, ExitWith):
        for frame in reversed(node.frames):
            tr.withs = tuple(f for f in tr.withs if f is not frame)
            _resume(frame, restore=False)
        return False
    saved = tr.withs
    try:
        frames = []
        for item in node.items:
            frames.append(enter(tr, item, node))
            tr.withs = tr.withs + (frames[-1],)
        tr.run(list(node.body) + [ExitWith(node, frames)] + list(rest))
    finally:
        tr.withs = saved
    return True


def unwind(tr, frames):
    """Run the clean-up of `frames` (innermost last in the tuple) before a break, continue or
    return leaves them; each is then put back as it was."""
    saved = tr.withs
    try:
        for frame in reversed(frames):
            tr.withs = tuple(f for f in tr.withs if f is not frame)
            _resume(frame, restore=True)
    finally:
        tr.withs = saved


def frames_in_loop(tr) -> tuple:
    """The frames a break/continue of the innermost loop leaves."""
    return tuple(f for f in tr.withs if f.loops >= len(tr.loops))


# ------------------------------------------------------------------------ entering
def enter(tr, item: ast.withitem, node) -> WithFrame:
    with at(tr.loc(item.context_expr)):
        mgr = tr.expr(item.context_expr)
        if not isinstance(mgr, GeneratorContextManager):
            raise TileTypeError(f"`with` takes a context manager made by a "
                                f"@contextlib.contextmanager function in tile kernels (got "
                                f"{type_name(mgr)})")
        frame, value = _start(tr, mgr, len(tr.loops))
    if item.optional_vars is not None:
        tr.assign(item.optional_vars, value, item.context_expr)
    return frame


def _start(tr, mgr: GeneratorContextManager, loops: int):
    fn = mgr.func
    if not inspect.isfunction(fn):
        raise TileTypeError(f"@contextmanager() expects a function (got {type_name(fn)})")
    gen = type(tr).for_call(tr.ctx, fn, mgr.args, mgr.kwargs)
    path = _yield_path(gen.parsed, gen.parsed.tree.body)
    frame = WithFrame(gen, path, loops)
    call_loc = current_loc()
    gen.ctx.call_stack.append(fn.__code__)
    try:
        for stmts, i in path[:-1]:
            _run_part(gen, stmts[:i], call_loc)
            with_node = stmts[i]
            for it in with_node.items:
                inner = enter(gen, it, with_node)
                gen.withs = gen.withs + (inner,)
                frame.inner.append(inner)
        stmts, i = path[-1]
        _run_part(gen, stmts[:i], call_loc)
        y = stmts[i].value
        with at(gen.loc(stmts[i])):
            value = gen.expr(y.value) if y.value is not None else None
    finally:
        gen.ctx.call_stack.pop()
    return frame, value


def _resume(frame: WithFrame, restore: bool):
    """Run the generator's statements after its `yield`, leaving its own `with`s on the way
    out. `restore`: put the generator's frame back as it was suspended afterwards."""
    gen = frame.tracer
    if restore:
        scope, saved, withs = gen.scope, dict(gen.scope), gen.withs
    gen.ctx.call_stack.append(gen.func.__code__)
    try:
        stmts, i = frame.path[-1]
        if isinstance(stmts[i], (ast.Assign, ast.AnnAssign)):     # `x = yield v`: x is None
            s = stmts[i]
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target]):
                gen.assign(t, None, s)
        inner = list(frame.inner)
        for stmts, i in reversed(frame.path):
            if isinstance(stmts[i], ast.With):          # its body is done: leave it
                for _ in stmts[i].items:
                    f = inner.pop()
                    gen.withs = tuple(w for w in gen.withs if w is not f)
                    _resume(f, restore)
            _run_part(gen, stmts[i + 1:], None)
    finally:
        gen.ctx.call_stack.pop()
        if restore:
            scope.clear()
            scope.update(saved)
            gen.scope, gen.withs = scope, withs


def _run_part(gen, stmts, call_loc):
    gen.terminated = False
    if stmts:
        gen.run_inlined(stmts, call_loc)


# ------------------------------------------------------------------------ the yield
def _yield_path(parsed, body) -> list:
    """Where the generator's one reachable `yield` is: [(statement list, index)] from the body
    down through the generator's own `with`s, its last entry the `yield` statement."""
    found: list = []                 # (node, path, placed): placed = not in a loop or conditional

    def scan(stmts, path, placed):
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                with at(parsed.loc(s)):
                    raise TileSyntaxError("Returning from a generator-based context manager is "
                                          "not supported")
            here = path + [(stmts, i)]
            y = _direct_yield(s)
            if y is not None:
                found.append((y, here, placed))
            elif isinstance(s, ast.With):
                scan(s.body, here, placed)
            elif isinstance(s, (ast.If, ast.For, ast.While, ast.Try)):
                for block in _blocks(s):
                    scan(block, here, False)
            else:
                for n in _nested_yields(s):
                    found.append((n, here, False))
            if isinstance(s, (ast.Break, ast.Continue)):
                return                      # the rest of this list is unreachable
        return

    scan(body, [], True)
    if not found:
        raise TileTypeError("Expected a generator function, but no reachable `yield` statement "
                            "has been found")
    if len(found) > 1:
        first = parsed.loc(found[0][0])
        with at(parsed.loc(found[1][0])):
            raise TileTypeError(f"Generator-based context manager must have one `yield` "
                                f"statement (another `yield` found on line {first.line})")
    node, path, placed = found[0]
    stmts, i = path[-1]
    if not placed or _direct_yield(stmts[i]) is None:
        with at(parsed.loc(node)):
            raise TileTypeError("`yield` statement of a generator-based context manager must be "
                                "placed outside of loops and conditional statements")
    return path


def _direct_yield(s):
    if isinstance(s, (ast.Expr, ast.Assign, ast.AnnAssign)) and isinstance(s.value, ast.Yield):
        return s.value
    return None


def _blocks(s):
    if isinstance(s, ast.Try):
        return [s.body, *(h.body for h in s.handlers), s.orelse, s.finalbody]
    return [s.body, s.orelse]


def _nested_yields(s):
    """Yields inside an expression (`f((yield))`), not in nested functions."""
    stack = list(ast.iter_child_nodes(s))
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            yield n
        elif not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
