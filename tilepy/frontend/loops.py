"""Loops: `for` over `range` (Tile IR `for`), `for` with `break` and `while` (Tile IR `loop`),
`break`/`continue` at any depth of runtime `if`s, and `static_iter` unrolling.

A loop carries every variable its body assigns that exists before it (found by AST analysis,
since the body's block arguments must exist before it is traced) plus the memory token. A tile or
a number is one carried value; an aggregate (a tuple, a tiled view, a closure: aggregates.py) and
an array are carried as their leaves (the tiles and numbers of a tuple, an array's base pointer,
extents and strides), their structure fixed across iterations (cuTile's flattened loop
variables); any other value (a dtype, a string) may only be reassigned the same. Every place
control leaves the body (`continue`, `break`, the end) passes the carried values, converted to
their types before the loop; a carried value that no exit changes is dropped and the body traced
again, and so is one whose type must widen (`acc = 0` then a float tile).

A variable first assigned inside a `while` loop whose every `break` defines it (a `while True`
leaving by `break` only) is carried too, as cuTile does: it is defined after the loop (with the
value of the break taken), undefined in the body until assigned.

    for i in range(a, b, s)      ->  for %i in (a to b, step s) iter_values(...) { ... continue }
    for i in range(a, b, s) with break  ->
                                 loop iter_values(%i = a, ...) { if !(i < b) { break }
                                                                 ... continue %i + s, ... }
    while cond                   ->  loop iter_values(...) { if !cond { break } ... continue }
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..errors import TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, at, Passing
from ..ir import Block, Region, Value
from ..types import TileType
from ..types import dtype as D
from . import api
from .builtins.semantics import as_tile, broadcast, constant, convert, emit, is_number
from .control_flow import TOKEN, get_state, ir_value, returns_inside, scalar_bool, set_state, wrap
from .promotion import can_cast_implicitly, literal_dtype, promote
from .values import Array, ArrayList, Tile, constant_type, type_name

MAX_RETRACES = 8


@dataclass
class LoopFrame:
    kind: str                      # "for", "range_loop" (for with break), "while", "static"
    carried: list[str] = field(default_factory=list)
    inits: list = field(default_factory=list)
    args: list = field(default_factory=list)         # the body's block args of the carried values
    state: dict = field(default_factory=dict)        # the state before the loop
    overrides: dict = field(default_factory=dict)    # name -> dtype its init is converted to
    iv: Tile | None = None
    step: Tile | None = None
    exits: list = field(default_factory=list)        # carried values at each exit
    leaving: list = field(default_factory=list)      # (how, the watched names' and leaf keys'
                                                     # values) per exit
    watched: list = field(default_factory=list)      # the names the body assigns
    carries: dict = field(default_factory=dict)      # name -> Carry (defined before the loop)
    late: dict = field(default_factory=dict)         # name -> Carry (first defined in it)
    flat: dict = field(default_factory=dict)         # leaf key -> its value before the loop


@dataclass
class Carry:
    """How one variable's value is carried: "leaf" (a tile, a number, the token: the key is one
    carried value), "aggregate" (parts, each a Carry), "array" (its `array_parts` keys) or
    "fixed" (no carried value: every exit must leave it the same)."""
    kind: str
    value: object                                    # the value before the loop (the template)
    key: str
    parts: list = field(default_factory=list)        # "aggregate": one Carry per part
    among: list = field(default_factory=list)        # "array": the arrays whose unit strides
                                                     # the carried one keeps (array_parts)

    def keys(self) -> list[str]:
        if self.kind == "leaf":
            return [self.key]
        if self.kind == "aggregate":
            return [k for p in self.parts for k in p.keys()]
        if self.kind == "array":
            a = self.value
            n = 1 + a.ndim + sum(1 for d in range(a.ndim)
                                 if not all(b.strides[d] == 1 for b in self.among))
            return [f"{self.key}.{i}" for i in range(n)]
        return []


class _Retrace(Passing):
    """A carried variable's type must change: trace the loop again."""


class _NeverRuns(Passing):
    """`while <constant false>`."""


# ------------------------------------------------------------------------------- analysis
def assigned_names(stmts) -> list[str]:
    """Names a statement list stores to (not inside nested defs or comprehensions), in
    first-store order."""
    out: dict[str, None] = {}

    class V(ast.NodeVisitor):
        def visit_Name(self, n):
            if isinstance(n.ctx, ast.Store):
                out.setdefault(n.id)

        def visit_FunctionDef(self, n):
            out.setdefault(n.name)

        def visit_Lambda(self, n):
            pass

        def visit_GeneratorExp(self, n):      # its targets are its own (they do not leak)
            self.visit(n.generators[0].iter)

    for s in stmts:
        V().visit(s)
    return list(out)


def has_break(stmts) -> bool:
    """Whether a loop body breaks out of this loop (breaks of nested loops do not count)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Break):
            return True
        if isinstance(n, (ast.For, ast.While)):
            stack.extend(n.orelse)
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


# ------------------------------------------------------------------------------- for / while
def trace_for(tr, node: ast.For):
    if node.orelse:
        raise TileSyntaxError("'for ... else' is not supported in tile kernels")
    it = node.iter
    fn = tr.expr(it.func) if isinstance(it, ast.Call) else None
    if fn is api.static_iter:
        from .static import check_direct
        with at(tr.loc(it)):
            check_direct(tr, fn, it.func)
        return static_for(tr, node)
    if fn is not range:
        with at(tr.loc(it)):
            hint = "" if fn is not None else " (to unroll over a tuple, write " \
                "`for v in tilepy.static_iter(...)`)"
            raise TileTypeError(f"for loops iterate over range(...) or tilepy.static_iter(...) in "
                                f"tile kernels{hint}")
    if not isinstance(node.target, ast.Name):
        with at(tr.loc(node.target)):
            raise TileSyntaxError("the loop variable of a range loop must be a single name")
    with at(tr.loc(it)):
        lb, ub, st, dt = _range_bounds(tr, it)
    kind = "range_loop" if has_break(node.body) else "for"
    run_loop(tr, node, kind, (lb, ub, st, dt))


def _range_bounds(tr, it: ast.Call):
    if it.keywords:
        raise TileTypeError("range() takes no keyword arguments")
    args = [tr.expr(a) for a in it.args]
    if not 1 <= len(args) <= 3:
        raise TileTypeError(f"range() takes 1 to 3 arguments (got {len(args)})")
    start, stop, step = ([0] + args + [1])[:3] if len(args) == 1 else (args + [1])[:3]
    for a in (start, stop, step):
        if not (isinstance(a, int) or isinstance(a, Tile) and a.ndim == 0 and
                (a.dtype.is_int or a.dtype.is_bool)):
            what = "a signed integer" if isinstance(a, Tile) and a.ndim == 0 else "a scalar"
            raise TileTypeError(f"range() bounds must be integer scalars (got {type_name(a)}): "
                                f"Expected {what}")
    if isinstance(step, int) and step <= 0:
        raise TileTypeError(f"range(): Step must be positive, got {step} (a tile loop counts up; "
                            f"count i up and use start - i)")
    dt = D.int32
    for a in (start, stop, step):
        if isinstance(a, Tile):
            dt = promote(dt, a.dtype if not a.dtype.is_bool else D.int32)
        elif not -2**31 <= a < 2**31:
            dt = promote(dt, D.int64)
    lb, ub, st = (convert(tr.ctx, as_tile(tr.ctx, a, dt), dt) for a in (start, stop, step))
    return lb, ub, st, dt


def trace_while(tr, node: ast.While):
    if node.orelse:
        raise TileSyntaxError("'while ... else' is not supported in tile kernels")
    run_loop(tr, node, "while", None)


def trace_while_returning(tr, node: ast.While, rest):
    """A `while` with a `return` inside (cuTile's early return): each `return v` sets
    RETVAL = v, RETURNING = True and breaks (return_from_loop); after the loop,
    `if RETURNING: return RETVAL`, then the statements after the loop."""
    tr.scope[RETURNING] = False
    tr.scope.pop(RETVAL, None)
    trace_while(tr, node)
    flag, value = ast.Name(RETURNING, ast.Load()), ast.Name(RETVAL, ast.Load())
    then = ast.If(test=flag, body=[ast.Return(value)], orelse=[])
    for n in ast.walk(then):
        ast.copy_location(n, node)
    from .control_flow import stmt_if
    if not stmt_if(tr, then, rest):
        tr.run(rest)


def return_from_loop(tr, node: ast.Return):
    """`return` inside loops: out of a `while`, a break that says the function returns."""
    if tr.loops[-1].kind != "while":
        from .control_flow import refuse_return_in_loop
        refuse_return_in_loop(tr)
    value = tr.expr(node.value) if node.value is not None else None
    tr.scope[RETVAL], tr.scope[RETURNING] = value, True
    leave_loop(tr, "break")


RETURNING, RETVAL = "$returning", "$retval"      # not Python names: no clash with the user's


def run_loop(tr, node, kind, bounds):
    tr.ctx.refuse_in_body("loop")
    state = get_state(tr)
    target = node.target.id if kind in ("for", "range_loop") else None
    assigned = assigned_names(node.body)
    if kind == "while" and RETURNING in state and returns_inside(node) is not None:
        assigned += [RETURNING, RETVAL]
    from .names import Undefined
    names = [n for n in assigned if n in state and n != target
             and not isinstance(state[n], Undefined)] + [TOKEN]
    overrides: dict = {}
    late: dict = {}                  # name -> the value a `break` gave it (first defined inside)
    dropped: set = set()             # leaf keys no exit changes
    checkpoint = tr.ctx.checkpoint()
    for _ in range(MAX_RETRACES):
        carries = {n: carry_of(state[n], n, overrides) for n in names}
        lates = {n: carry_of(v, n, overrides) for n, v in late.items()}
        flat = {}
        for n, c in carries.items():
            flat.update(leaves_of(tr.ctx, c, state[n], n, {}, overrides))
        for n, c in lates.items():
            flat.update(_dummy_leaves(tr, c, n))
        carried = [k for c in [*carries.values(), *lates.values()] for k in c.keys()
                   if k not in dropped]
        inits = [_init_value(tr, flat[k], overrides.get(k)) for k in carried]
        frame = LoopFrame(kind, carried, inits, state=state, overrides=overrides,
                          watched=assigned, carries=carries, late=lates, flat=flat)
        try:
            blk = _trace_body(tr, node, frame, bounds, target)
        except _Retrace:
            set_state(tr, state)
            tr.ctx.rollback(checkpoint)
            continue
        except _NeverRuns:
            set_state(tr, state)
            tr.ctx.rollback(checkpoint)
            return
        set_state(tr, state)
        # a value every exit passes on as it came, or as it was before the loop, is invariant
        unchanged = {k for i, k in enumerate(carried)
                     if all(ex[i] is frame.args[i] or ex[i] is ir_value(frame.inits[i])
                            for ex in frame.exits)}
        found = _defined_at_breaks(frame, assigned, state, target)
        if unchanged or found:
            dropped |= unchanged
            late.update(found)
            tr.ctx.rollback(checkpoint)
            continue
        break
    else:
        raise TileTypeError("the types of the loop-carried variables did not settle")
    _finish(tr, node, kind, bounds, frame, blk, state, assigned, target)


def _finish(tr, node, kind, bounds, frame, blk, state, assigned, target):
    b = tr.ctx.b
    init_vals = [ir_value(i) for i in frame.inits]
    types = [_carry_type(i) for i in frame.inits]
    if kind == "for":
        lb, ub, st, _ = bounds
        op = b.create("for", lb.value, ub.value, st.value, init_vals, result_types=types,
                      regions=[Region([blk])])
        results = op.results
    elif kind == "range_loop":
        lb = bounds[0]
        op = b.create("loop", [lb.value] + init_vals, result_types=[lb.type] + types,
                      regions=[Region([blk])])
        results = op.results[1:]
    else:
        op = b.create("loop", init_vals, result_types=types, regions=[Region([blk])])
        results = op.results
    from .names import Undefined
    after = dict(state)
    out = dict(frame.flat)                # a leaf no exit changes keeps its value
    for k, init, res in zip(frame.carried, frame.inits, results):
        res.hint = k if k.isidentifier() else None
        out[k] = _constant_result(frame, k, frame.flat[k])
        if out[k] is None:
            out[k] = wrap(init, res)
    for n, c in [*frame.carries.items(), *frame.late.items()]:
        after[n] = rebuild(tr.ctx, c, out.__getitem__, frame.flat)
    for n in assigned:
        if (n not in state or n == target) and n not in frame.late:
            after[n] = _constant_result(frame, n, None)
            if after[n] is None:
                after[n] = Undefined("is assigned only inside a loop and is not defined after "
                                     "it", path=True)
    set_state(tr, after)


def _constant_result(frame, name, before):
    """The number a carried variable holds after the loop when every way out of it gives that
    same number (cuTile keeps it a constant: `a = 1; break` on every path), else None. Out of a
    `for` are its continues and the zero-trip entry; out of a `loop`, its breaks (a `while`'s
    failing test or a range's end break with the loop-carried value: not a constant)."""
    how = "continue" if frame.kind == "for" else "break"
    values = [v.get(name) for h, v in frame.leaving if h == how]
    if frame.kind == "for":
        values.append(before)
    first = values[0] if values else None
    if not is_number(first):
        return None
    same = all(type(v) is type(first) and v == first for v in values)
    return first if same else None


def _carry_type(v):
    return v.type


def _trace_body(tr, node, frame: LoopFrame, bounds, target) -> Block:
    kind = frame.kind
    types = [_carry_type(i) for i in frame.inits]
    hints = [k if k.isidentifier() else None for k in frame.carried]
    counted = kind in ("for", "range_loop")
    if counted:
        dt = bounds[3]
        blk = Block([TileType((), dt.elem)] + types, [target] + hints)
        frame.args = blk.args[1:]
        frame.iv, frame.step = Tile(blk.args[0], dt), bounds[2]
    else:
        blk = Block(types, hints)
        frame.args = list(blk.args)
    body_state = dict(frame.state)
    leaf = dict(frame.flat)
    for k, init, arg in zip(frame.carried, frame.inits, frame.args):
        leaf[k] = wrap(init, arg)
    with tr.ctx.b.at_end(blk):           # an array carried is rebuilt in the body
        for n, c in frame.carries.items():
            body_state[n] = rebuild(tr.ctx, c, leaf.__getitem__, frame.flat)
    if counted:
        body_state[target] = frame.iv
    set_state(tr, body_state)
    saved = tr.terminated
    tr.terminated = False
    tr.loops.append(frame)
    try:
        with tr.ctx.b.at_end(blk):
            if kind == "range_loop":
                with at(tr.loc(node.iter)):
                    more = emit(tr.ctx, "cmpi", frame.iv, bounds[1], dtype=D.bool_,
                                comparison_predicate="less_than", signedness="signed")
                    _break_unless(tr, frame, more)
            elif kind == "while":
                _while_test(tr, node, frame)
            tr.run(node.body)
            seal(tr, force=True)
    finally:
        tr.loops.pop()
        tr.terminated = saved
    return blk


def _while_test(tr, node, frame):
    cond = tr.expr(node.test)
    with at(tr.loc(node.test)):
        if isinstance(cond, Tile):
            _break_unless(tr, frame, scalar_bool(tr, cond, "while"))
        else:
            from .names import truth as _truth
            if not _truth(cond):
                raise _NeverRuns()


def _break_unless(tr, frame, cond: Tile):
    ctx = tr.ctx
    true = constant(ctx, True, D.bool_)
    stop = emit(ctx, "xori", cond, true, dtype=D.bool_)
    then_blk, else_blk = Block(), Block()
    with ctx.b.at_end(then_blk):
        _exit(tr, frame, "break")
    with ctx.b.at_end(else_blk):
        ctx.b.create("yield", [])
    ctx.b.create("if", stop.value, result_types=[], regions=[Region([then_blk]), Region([else_blk])])
    tr.terminated = False


# ---------------------------------------------------------------------- leaving the body
def seal(tr, force=False):
    """End the current block of a loop body with `continue` unless it already ends with a
    terminator: at the end of the body (`force`), or after an `if` whose branches both left the
    loop (the rest is unreachable, but every Tile IR block needs its terminator)."""
    blk = tr.ctx.b.block
    ends = bool(blk.ops) and blk.ops[-1].opdef.terminator
    if tr.loops and tr.loops[-1].kind != "static" and not ends and (force or tr.terminated):
        _exit(tr, tr.loops[-1], "continue")


def leave_loop(tr, how: str):
    """A `break` or `continue` statement."""
    if not tr.loops:
        raise TileSyntaxError(f"'{how}' outside a loop")
    frame = tr.loops[-1]
    if frame.kind == "static":
        raise TileSyntaxError(f"{how.capitalize()} in a for loop with static_iter() is not "
                              f"supported (the loop is unrolled at compile time)")
    from .with_stmt import frames_in_loop, unwind
    unwind(tr, frames_in_loop(tr))        # leave the `with`s entered inside the loop first
    _exit(tr, frame, how)


def _exit(tr, frame: LoopFrame, how: str):
    values, leaves = _exit_values(tr, frame)
    frame.exits.append(values)
    frame.leaving.append((how, {**{n: tr.scope.get(n, MISSING) for n in frame.watched},
                                **leaves}))
    ops = [ir_value(v) for v in values]
    if frame.kind == "range_loop":
        if how == "continue":
            nxt = emit(tr.ctx, "addi", frame.iv, frame.step, dtype=frame.iv.dtype)
            ops = [nxt.value] + ops
        else:
            ops = [frame.iv.value] + ops
    tr.ctx.b.create(how, ops)
    tr.terminated = True


def _exit_values(tr, frame: LoopFrame):
    """The carried values at an exit (converted to their types), and every leaf's value there."""
    from .names import Undefined
    cur = get_state(tr)
    leaves = {}
    for n, c in frame.carries.items():
        new = cur.get(n)
        if isinstance(new, Undefined):
            raise new.error(n)
        with at(tr.def_locs.get(n)):
            leaves.update(leaves_of(tr.ctx, c, new, n, frame.flat, frame.overrides))
    args = {k: wrap(init, arg) for k, init, arg in zip(frame.carried, frame.inits, frame.args)}
    for n, c in frame.late.items():
        new = cur.get(n, MISSING)
        if new is MISSING or isinstance(new, Undefined):     # not yet assigned: passed through
            leaves.update((k, args[k]) for k in c.keys())
            continue
        with at(tr.def_locs.get(n)):
            leaves.update(leaves_of(tr.ctx, c, new, n, frame.flat, frame.overrides))
    out = []
    for k, init, arg in zip(frame.carried, frame.inits, frame.args):
        with at(tr.def_locs.get(k.split("[")[0].split(".")[0])):
            fixed = _fit(tr, k, init, leaves[k], frame.flat[k], frame.overrides)
        if fixed is None:
            raise _Retrace()
        out.append(arg if ir_value(fixed) is arg else ir_value(fixed))
    return out, leaves


# ------------------------------------------------------------------ carried values as leaves
MISSING = object()


def carry_of(v, key: str, overrides) -> Carry:
    """How `v`, the value of `key` before the loop, is carried."""
    from .aggregates import split
    if isinstance(v, (Tile, Value)) or is_number(v):
        return Carry("leaf", v, key)
    sp = split(v)
    if sp is not None:
        return Carry("aggregate", v, key, [carry_of(p, f"{key}[{i}]", overrides)
                                           for i, p in enumerate(sp[1])])
    if isinstance(v, Array) and not isinstance(v, ArrayList):
        return Carry("array", v, key, among=[v, *overrides.get(("among", key), ())])
    return Carry("fixed", v, key)


def leaves_of(ctx, c: Carry, v, name: str, flat: dict, overrides) -> dict:
    """key -> value of each leaf of `v`, a value `c` carries (at an exit: the same structure)."""
    from .aggregates import kind_name, split
    if c.kind == "leaf":
        return {c.key: v}
    if c.kind == "fixed":             # a compile-time value (a dtype, a string, ...): cuTile's
        if not _same(v, c.value):     # phi of two of them is a type error
            raise TileTypeError(f"Type of `{name}` depends on path taken: {constant_type(v)} "
                                f"after an iteration vs. {constant_type(c.value)} before the loop")
        return {}
    if c.kind == "aggregate":
        sp, was = split(v), split(c.value)
        if sp is None or sp[0] != was[0]:
            now = kind_name(v, c.value) if sp is not None else type_name(v)
            raise TileTypeError(f"the type of '{name}' changes in the loop: "
                                f"{kind_name(c.value, v)} "
                                f"before the loop, {now} after an iteration; a loop-carried "
                                f"value keeps its structure")
        out = {}
        for p, part in zip(c.parts, sp[1]):
            out.update(leaves_of(ctx, p, part, name, flat, overrides))
        return out
    a = c.value                                           # an array
    if v is a and flat:
        return {k: flat[k] for k in c.keys()}
    if not isinstance(v, Array) or isinstance(v, ArrayList) or \
            (v.dtype, v.ndim, v.index_dtype) != (a.dtype, a.ndim, a.index_dtype):
        raise TileTypeError(f"the type of '{name}' changes in the loop: {a!r} before the loop, "
                            f"{type_name(v)} after an iteration; a loop-carried array keeps its "
                            f"dtype and rank")
    if any(v.strides[d] != 1 and all(b.strides[d] == 1 for b in c.among) for d in range(a.ndim)):
        overrides.setdefault(("among", c.key), []).append(v)    # a stride not known to be 1
        raise _Retrace()
    from .array_list import array_parts
    return dict(zip(c.keys(), array_parts(ctx, v, c.among)))


def rebuild(ctx, c: Carry, leaf, flat: dict):
    """The value `c` carries, made of the leaves `leaf(key)` gives (the value before the loop
    itself when every leaf is the one it had)."""
    from .aggregates import join
    if c.kind == "leaf":
        return leaf(c.key)
    if c.kind == "fixed":
        return c.value
    if all(k in flat and leaf(k) is flat[k] for k in c.keys()):
        return c.value
    if c.kind == "aggregate":
        return join(c.value, [rebuild(ctx, p, leaf, flat) for p in c.parts])
    from .array_list import array_of_parts
    a = c.value
    return array_of_parts(ctx, a, [ir_value(leaf(k)) for k in c.keys()], c.among, a.name)


def _dummy_leaves(tr, c: Carry, name: str) -> dict:
    """The values a variable first defined in the loop enters it with (never read: the body
    sees it undefined until it assigns it): zeros of its leaves' types."""
    if c.kind == "leaf":
        v = c.value
        if isinstance(v, Tile):
            return {c.key: broadcast(tr.ctx, constant(tr.ctx, 0, v.dtype), v.shape)}
        return {c.key: type(v)(0)}
    out = {}
    for p in c.parts:
        out.update(_dummy_leaves(tr, p, name))
    return out


def _has_dummy(c: Carry) -> bool:
    """Whether `_dummy_leaves` can make the value's entry values: its leaves are tiles and
    numbers (an array's pointer has none; such a variable stays undefined after the loop)."""
    if c.kind == "leaf":
        return isinstance(c.value, Tile) or is_number(c.value)
    return c.kind == "fixed" or c.kind == "aggregate" and all(_has_dummy(p) for p in c.parts)


def _defined_at_breaks(frame: LoopFrame, assigned, state, target) -> dict:
    """The names first defined inside a `while` that every `break` defines, not to one
    constant (cuTile carries those out of the loop): name -> the value the first break gives."""
    from .names import Undefined
    if frame.kind != "while":
        return {}
    breaks = [v for how, v in frame.leaving if how == "break"]
    found = {}
    for n in assigned:
        if n in frame.late or n == target or (n in state and not isinstance(state[n], Undefined)):
            continue
        # the value returned from inside the loop is read only after the breaks that return
        vals = [b.get(n, MISSING) for b in breaks if n != RETVAL or b.get(RETURNING) is True]
        if not vals or any(v is MISSING or isinstance(v, Undefined) for v in vals):
            continue
        if _constant_result(frame, n, None) is None and _one_type(n, vals):
            found[n] = vals[0]
    return found


def _one_type(name, vals) -> bool:
    """Whether the values every break gives a variable first defined in the loop have one type
    that can be carried (else it stays undefined after the loop, an error only where read)."""
    c = carry_of(vals[0], name, {})
    if not _has_dummy(c):
        return False
    kinds = []
    for v in vals:
        try:
            leaves = leaves_of(None, c, v, name, {}, {})
        except (TileTypeError, TileUnsupportedFeatureError):
            return False
        kinds.append([(x.dtype, x.shape) if isinstance(x, Tile) else literal_dtype(x, None)
                      for x in leaves.values()])
    return all(k == kinds[0] for k in kinds)


def _same(a, b) -> bool:
    """The same compile-time value (the object, or an equal constant: a rebuilt tuple of
    numbers); tiles only as the same object."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (Tile, Value)):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False


def _init_value(tr, v, dtype_override):
    if isinstance(v, (Tile, Value)):
        if dtype_override is not None and isinstance(v, Tile):
            return convert(tr.ctx, v, dtype_override)
        return v
    dt = dtype_override or literal_dtype(v, None)
    return constant(tr.ctx, v, dt)


def _fit(tr, name, init, new, original, overrides):
    """The value to pass on for `name`, converted to the init's type; None = trace again."""
    if isinstance(init, Value):                   # the token
        return new
    if is_number(new):
        return broadcast(tr.ctx, constant(tr.ctx, new, init.dtype), init.shape)
    if not isinstance(new, Tile):
        raise TileUnsupportedFeatureError(f"variable '{name}' becomes a {type_name(new)} in the loop; "
                                          f"only tiles and numbers can be loop-carried")
    if new.type == init.type and new.dtype == init.dtype:
        return new
    if new.shape != init.shape:
        if is_number(original) and new.shape != () and overrides.get(name) != new.dtype:
            overrides[name] = new.dtype
            return None
        raise TileTypeError(f"the shape of '{name}' changes in the loop: {init} before the loop, "
                            f"{new} after an iteration; loop-carried tiles keep their shape")
    if is_number(original) and overrides.get(name) is None:
        overrides[name] = new.dtype              # `acc = 0` then a float tile: trace again
        return None
    if can_cast_implicitly(new.dtype, init.dtype):
        return convert(tr.ctx, new, init.dtype)
    raise TileTypeError(f"the type of '{name}' changes in the loop: {init} before the loop, {new} "
                        f"after an iteration; convert it with astype({init.dtype.name})")


# ------------------------------------------------------------------------------- static_iter
def static_for(tr, node: ast.For):
    from .static import static_items
    with at(tr.loc(node.iter)):
        items = static_items(tr, node.iter)
    frame = LoopFrame("static")
    tr.loops.append(frame)
    try:
        for item in items:
            tr.assign(node.target, item, node.iter)
            tr.run(node.body)
    finally:
        tr.loops.pop()
