"""Python control flow on runtime values -> structured Tile IR `if` and `for`.

State that flows through control flow is the tracer's variable scope plus the memory token
(under the name "$token"). An `if` traces both branches into their own blocks and yields every
variable whose value differs between them. A `for` carries every variable the body assigns
(found by AST analysis, since the body's block arguments must exist before it is traced) and
the token as `iter_values`; pass-through values are dropped by tracing the body again.
"""
from __future__ import annotations

import ast

from ..errors import TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, at
from ..ir import Block, Region, Value
from ..types import TileType
from ..types import dtype as D
from . import api
from .builtins.semantics import as_tile, broadcast, convert, is_number
from .promotion import can_cast_implicitly, literal_dtype, promote
from .values import Tile, type_name

TOKEN = "$token"


# ------------------------------------------------------------------------ state handling
def get_state(tr) -> dict:
    s = dict(tr.scope)
    s[TOKEN] = tr.ctx.token
    return s


def set_state(tr, state: dict):
    state = dict(state)
    tr.ctx.token = state.pop(TOKEN)
    tr.scope = state


def _ir_value(v):
    """The IR value behind a flowing value (a Tile or the token), else None."""
    if isinstance(v, Tile):
        return v.value
    if isinstance(v, Value):
        return v
    return None


def _carry_type(v):
    return v.type if isinstance(v, Tile) else v.type


def _wrap(v_template, value: Value):
    """Rewrap an IR value like the flowing value it stands for."""
    if isinstance(v_template, Tile):
        return Tile(value, v_template.dtype)
    return value


# -------------------------------------------------------------------------------- if
def trace_if(tr, node: ast.If, cond: Tile):
    from .tracer import Undefined
    with at(tr.loc(node.test)):
        cond = _scalar_bool(tr, cond, "if")
    before = get_state(tr)
    branches = []
    for stmts in (node.body, node.orelse):
        set_state(tr, before)
        blk = Block()
        with tr.ctx.b.at_end(blk):
            tr.runtime_depth += 1
            try:
                tr.run(stmts)
            finally:
                tr.runtime_depth -= 1
        branches.append((blk, get_state(tr)))
    (then_blk, then_s), (else_blk, else_s) = branches
    names, yields = [], ([], [])
    after = dict(before)
    for name in list(dict.fromkeys([*then_s, *else_s])):
        tv, ev = then_s.get(name, _MISSING), else_s.get(name, _MISSING)
        if tv is ev or (_is_const(tv) and _is_const(ev) and type(tv) is type(ev) and tv == ev):
            if tv is not _MISSING:
                after[name] = tv
            continue
        if tv is _MISSING or ev is _MISSING or isinstance(tv, Undefined) or isinstance(ev, Undefined):
            after[name] = Undefined("is not defined on every path through the `if` at line "
                                    f"{tr.loc(node).line}")
            continue
        t_val, e_val = _unify_branches(tr, name, tv, ev, then_blk, else_blk)
        names.append((name, t_val))
        yields[0].append(t_val)
        yields[1].append(e_val)
    for blk, ys in zip((then_blk, else_blk), yields):
        with tr.ctx.b.at_end(blk):
            tr.ctx.b.create("yield", [_ir_value(y) for y in ys])
    op = tr.ctx.b.create("if", cond.value, result_types=[_carry_type(y) for y in yields[0]],
                         regions=[Region([then_blk]), Region([else_blk])])
    for (name, template), res in zip(names, op.results):
        res.hint = name if not name.startswith("$") else None
        after[name] = _wrap(template, res)
    set_state(tr, after)


_MISSING = object()


def _is_const(v) -> bool:
    return is_number(v)


def _unify_branches(tr, name, tv, ev, then_blk, else_blk):
    """Values of `name` at the end of both branches, made the same type (in their blocks)."""
    for v in (tv, ev):
        if not (isinstance(v, (Tile, Value)) or is_number(v)):
            raise TileUnsupportedFeatureError(
                f"variable '{name}' is assigned a {type_name(v)} in a runtime `if`; only tiles and "
                f"numbers can differ between the branches")
    if isinstance(tv, Value) or isinstance(ev, Value):
        return tv, ev
    # Numbers take the dtype of the tile in the other branch (or their literal dtype).
    tdt = tv.dtype if isinstance(tv, Tile) else None
    edt = ev.dtype if isinstance(ev, Tile) else None
    if tdt is not None and edt is not None and (tdt != edt or tv.shape != ev.shape):
        raise TileTypeError(f"the type of '{name}' depends on the branch taken: {tv} in the `if` "
                            f"branch, {ev} in the `else` branch; convert one with astype()")
    dt = tdt or edt or promote(literal_dtype(tv, None), literal_dtype(ev, None))
    shape = tv.shape if isinstance(tv, Tile) else ev.shape if isinstance(ev, Tile) else ()
    out = []
    for v, blk in ((tv, then_blk), (ev, else_blk)):
        if isinstance(v, Tile):
            out.append(v)
        else:
            with tr.ctx.b.at_end(blk):
                out.append(broadcast(tr.ctx, _const(tr, v, dt), shape))
    return out[0], out[1]


def _const(tr, v, dt):
    from .builtins.semantics import constant
    return constant(tr.ctx, v, dt)


def _scalar_bool(tr, cond: Tile, what: str) -> Tile:
    if cond.ndim != 0:
        raise TileTypeError(f"the condition of {what} must be a scalar (got a tile of shape "
                            f"{cond.shape}); reduce it or use tilepy.where()")
    if not cond.dtype.is_bool:
        cond = convert(tr.ctx, cond, D.bool_)
    return cond


# ------------------------------------------------------------------------------- for
def assigned_names(stmts) -> list[str]:
    """Names a statement list stores to (not inside nested defs), in first-store order."""
    out: dict[str, None] = {}

    class V(ast.NodeVisitor):
        def visit_Name(self, n):
            if isinstance(n.ctx, ast.Store):
                out.setdefault(n.id)

        def visit_FunctionDef(self, n):
            out.setdefault(n.name)

        def visit_Lambda(self, n):
            pass

    for s in stmts:
        V().visit(s)
    return list(out)


def _range_args(tr, it: ast.expr):
    if not (isinstance(it, ast.Call) and not it.keywords):
        raise TileSyntaxError("for loops must iterate over range(...) in tile kernels")
    fn = tr.expr(it.func)
    if fn is not range:
        if fn is api.static_iter:
            raise TileUnsupportedFeatureError("tilepy.static_iter() is not supported yet")
        raise TileSyntaxError("for loops must iterate over range(...) in tile kernels")
    args = [tr.expr(a) for a in it.args]
    if not 1 <= len(args) <= 3:
        raise TileTypeError(f"range() takes 1 to 3 arguments (got {len(args)})")
    if len(args) == 1:
        args = [0, args[0], 1]
    elif len(args) == 2:
        args.append(1)
    for a in args:
        if not (isinstance(a, int) or isinstance(a, Tile) and a.ndim == 0 and
                (a.dtype.is_int or a.dtype.is_bool)):
            raise TileTypeError(f"range() bounds must be integer scalars (got {type_name(a)})")
    if isinstance(args[2], int) and args[2] <= 0:
        raise TileUnsupportedFeatureError(f"range() with a step of {args[2]} is not supported: "
                                          f"the step must be positive")
    return args


def trace_for(tr, node: ast.For):
    from .tracer import Undefined
    if node.orelse:
        raise TileSyntaxError("for ... else is not supported in tile kernels")
    if not isinstance(node.target, ast.Name):
        raise TileSyntaxError("the loop variable must be a single name")
    start, stop, step = _range_args(tr, node.iter)
    dt = D.int32
    for a in (start, stop, step):
        if isinstance(a, Tile):
            dt = promote(dt, a.dtype if not a.dtype.is_bool else D.int32)
    lb, ub, st = (convert(tr.ctx, as_tile(tr.ctx, a, dt), dt) for a in (start, stop, step))
    state = get_state(tr)
    assigned = assigned_names(node.body)
    candidates = [n for n in assigned if n in state and n != node.target.id] + [TOKEN]
    carried = [n for n in candidates if _carriable(state[n], n, n in assigned)]
    overrides: dict[str, object] = {}
    for _ in range(4):
        inits = [_init_value(tr, state[n], overrides.get(n)) for n in carried]
        blk, new_state = _trace_body(tr, node, state, carried, inits, dt)
        retry = False
        outs = []
        for n, init, arg in zip(carried, inits, blk.args[1:]):
            new = new_state.get(n)
            if isinstance(new, Undefined):
                raise TileSyntaxError(f"variable '{n}' {new.why}")
            if _ir_value(new) is arg:
                outs.append(None)                  # pass-through: not loop-carried after all
                continue
            with at(tr.def_locs.get(n)):
                fixed = _fit_carried(tr, n, init, new, state[n], blk, overrides)
            if fixed is None:
                retry = True
            outs.append(fixed)
        if retry:
            continue
        if any(o is None for o in outs):
            carried = [n for n, o in zip(carried, outs) if o is not None]
            continue
        break
    else:
        raise TileTypeError("the loop-carried variables' types did not settle")  # pragma: no cover
    with tr.ctx.b.at_end(blk):
        tr.ctx.b.create("continue", [_ir_value(o) for o in outs])
    op = tr.ctx.b.create("for", lb.value, ub.value, st.value, [_ir_value(i) for i in inits],
                         result_types=[_carry_type(i) for i in inits], regions=[Region([blk])])
    after = dict(state)
    for n, init, res in zip(carried, inits, op.results):
        res.hint = n if not n.startswith("$") else None
        after[n] = _wrap(init, res)
    for n in assigned:
        if n not in state or n == node.target.id:
            after[n] = Undefined("is assigned only inside a loop and is not defined after it")
    set_state(tr, after)


def _carriable(v, name, assigned) -> bool:
    if isinstance(v, (Tile, Value)) or is_number(v):
        return True
    if assigned:
        raise TileUnsupportedFeatureError(f"variable '{name}' holds a {type_name(v)} and is "
                                          f"reassigned in a loop; only tiles and numbers can change "
                                          f"across iterations")
    return False


def _init_value(tr, v, dtype_override):
    if isinstance(v, (Tile, Value)):
        if dtype_override is not None and isinstance(v, Tile):
            return convert(tr.ctx, v, dtype_override)
        return v
    dt = dtype_override or literal_dtype(v, None)
    return _const(tr, v, dt)


def _trace_body(tr, node, state, carried, inits, dt):
    blk = Block([TileType((), dt.elem)] + [_carry_type(i) for i in inits],
                [node.target.id] + [None if n.startswith("$") else n for n in carried])
    body_state = dict(state)
    body_state[node.target.id] = Tile(blk.args[0], dt)
    for n, init, arg in zip(carried, inits, blk.args[1:]):
        body_state[n] = _wrap(init, arg)
    set_state(tr, body_state)
    with tr.ctx.b.at_end(blk):
        tr.runtime_depth += 1
        try:
            tr.run(node.body)
        finally:
            tr.runtime_depth -= 1
    new_state = get_state(tr)
    set_state(tr, state)
    return blk, new_state


def _fit_carried(tr, name, init, new, original, blk, overrides):
    """The value to `continue` with for `name`, converted to the init's type; None = retry."""
    if isinstance(init, Value):                   # the token
        return new
    if is_number(new):
        with tr.ctx.b.at_end(blk):
            return broadcast(tr.ctx, _const(tr, new, init.dtype), init.shape)
    if not isinstance(new, Tile):
        raise TileUnsupportedFeatureError(f"variable '{name}' becomes a {type_name(new)} in the loop; "
                                          f"only tiles and numbers can be loop-carried")
    if new.type == init.type and new.dtype == init.dtype:
        return new
    if new.shape != init.shape:
        if is_number(original) and new.shape != ():
            overrides[name] = new.dtype
            return None
        raise TileTypeError(f"the shape of '{name}' changes in the loop: {init} before the loop, "
                            f"{new} after an iteration; loop-carried tiles keep their shape")
    if is_number(original) and overrides.get(name) is None:
        overrides[name] = new.dtype              # `acc = 0` then a float tile: retrace as float
        return None
    if can_cast_implicitly(new.dtype, init.dtype):
        with tr.ctx.b.at_end(blk):
            return convert(tr.ctx, new, init.dtype)
    raise TileTypeError(f"the type of '{name}' changes in the loop: {init} before the loop, {new} "
                        f"after an iteration; convert it with astype({init.dtype.name})")


# ---------------------------------------------------------------------------- subscripts
def tile_subscript(tr, t: Tile, slice_node):
    """`t[:, None]`-style indexing: full slices keep a dimension, None inserts one."""
    items = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
    keys = [tr.expr(i) for i in items]
    shape, dim = [], 0
    for k in keys:
        if k is None:
            shape.append(1)
        elif isinstance(k, slice) and k == slice(None):
            if dim >= t.ndim:
                raise TileTypeError(f"too many indices for a tile of rank {t.ndim}")
            shape.append(t.shape[dim])
            dim += 1
        elif k is Ellipsis:
            raise TileUnsupportedFeatureError("... in tile subscripts is not supported yet")
        else:
            raise TileUnsupportedFeatureError("tiles can only be subscripted with ':' and None "
                                              "(to insert dimensions); use tilepy.extract()")
    if dim != t.ndim:
        shape.extend(t.shape[dim:])
    from .builtins.semantics import reshape
    return reshape(tr.ctx, t, tuple(shape))
