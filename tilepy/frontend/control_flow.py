"""Python `if` on runtime values -> structured Tile IR `if`; tile subscripts.

State that flows through control flow is the tracer's variable scope plus the memory token
(under the name "$token"). An `if` traces both branches into their own blocks and yields every
variable whose value differs between the branches that reach its end; a branch that ends in
`break`/`continue` does not reach it. An `if` on a compile-time constant is folded: only the
taken branch is traced.

`return` inside a runtime `if` (in helpers, and early exits of kernels) is traced by giving each
branch the rest of the function: both branches then end by returning, and the `if` yields the
returned value (and the memory token).
"""
from __future__ import annotations

import ast

from ..errors import TileSyntaxError, TileTypeError, at
from ..ir import Block, Region, Value
from ..types import dtype as D
from .builtins.semantics import broadcast, constant, convert, is_number
from .aggregates import join, kind_name, split
from .promotion import literal_dtype
from .values import Array, Tile, constant_type, type_name

TOKEN = "$token"
MISSING = object()
RETURNED = "return value"


# ------------------------------------------------------------------------ state handling
def get_state(tr) -> dict:
    s = dict(tr.scope)
    s[TOKEN] = tr.ctx.token
    return s


def set_state(tr, state: dict):
    state = dict(state)
    tr.ctx.token = state.pop(TOKEN)
    tr.scope = state


def ir_value(v):
    """The IR value behind a flowing value (a Tile or the token), else None."""
    if isinstance(v, Tile):
        return v.value
    if isinstance(v, Value):
        return v
    return None


def wrap(template, value: Value):
    """Rewrap an IR value like the flowing value it stands for."""
    if isinstance(template, Tile):
        return Tile(value, template.dtype)
    return value


def scalar_bool(tr, cond: Tile, what: str) -> Tile:
    if cond.ndim != 0:
        raise TileTypeError(f"the condition of {what} must be a scalar (got a tile of shape "
                            f"{cond.shape}); reduce it or use tilepy.where()")
    if not cond.dtype.is_bool:
        cond = convert(tr.ctx, cond, D.bool_)
    return cond


def returns_inside(node) -> ast.Return | None:
    """The first `return` in the statement's body (not in nested functions), if any."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop(0)
        if isinstance(n, ast.Return):
            return n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return None


def refuse_return_in_loop(tr):
    """A `return` inside a `for` loop (range or static_iter): cuTile's TileSyntaxError. (One
    inside a `while` breaks out of it: loops.return_from_loop.)"""
    raise TileSyntaxError("Returning from a for loop is not supported (Tile IR loops cannot "
                          "return); break out of the loop first")


# -------------------------------------------------------------------------------- if
def stmt_if(tr, node: ast.If, rest) -> bool:
    """Trace `node`; True when it also traced `rest` (the statements after it)."""
    cond = tr.expr(node.test)
    if not isinstance(cond, Tile):
        from .names import truth as _truth
        with at(tr.loc(node.test)):
            taken = node.body if _truth(cond) else node.orelse
        tr.run(list(taken) + list(rest))      # folded: the taken branch, then what follows
        return True
    with at(tr.loc(node)):
        tr.ctx.refuse_in_body("if")
        ret = returns_inside(node)
        if ret is not None and not (tr.loops and tr.loops[-1].kind == "while"):
            if tr.loops:
                with at(tr.loc(ret)):
                    refuse_return_in_loop(tr)
            trace_if_returning(tr, node, cond, rest)
        trace_if(tr, node, cond)
    return False


def _trace_branch(tr, stmts, before, catch_return=False):
    """Trace `stmts` into a new block from state `before`: (block, end state, terminated,
    returned value)."""
    from .names import ReturnSignal
    set_state(tr, before)
    tr.terminated = False
    blk = Block()
    value = None
    withs = tr.withs                  # each branch leaves the same `with`s (with_stmt.py)
    with tr.ctx.b.at_end(blk):
        try:
            tr.run(stmts)
        except ReturnSignal as r:
            if not catch_return:
                raise
            value = r.value
        finally:
            tr.withs = withs
        if tr.terminated:
            tr.seal()
    return blk, get_state(tr), tr.terminated, value


def _make_if(tr, cond, blocks, yields):
    for blk, ys in zip(blocks, yields):
        if ys is not None:
            with tr.ctx.b.at_end(blk):
                tr.ctx.b.create("yield", [ir_value(y) for y in ys])
    types = [y.type for y in next((ys for ys in yields if ys is not None), [])]
    return tr.ctx.b.create("if", cond.value, result_types=types,
                           regions=[Region([blocks[0]]), Region([blocks[1]])])


def trace_if(tr, node: ast.If, cond: Tile):
    with at(tr.loc(node.test)):
        cond = scalar_bool(tr, cond, "if")
    before = get_state(tr)
    branches = [_trace_branch(tr, stmts, before) for stmts in (node.body, node.orelse)]
    live = [i for i, b in enumerate(branches) if not b[2]]
    blocks = [b[0] for b in branches]
    if not live:                                  # both branches break/continue
        _make_if(tr, cond, blocks, [None, None])
        set_state(tr, before)
        tr.terminated = True
        return
    merge = Merge(tr, [blocks[i] for i in live], node)
    after = dict(before)
    rebuild = {}
    for name in dict.fromkeys(k for i in live for k in branches[i][1]):
        vals = [branches[i][1].get(name, MISSING) for i in live]
        rebuild[name] = merge.add(f"variable '{name}'", vals, before.get(name, MISSING))
    yields = [None, None]
    for j, i in enumerate(live):
        yields[i] = merge.yields[j]
    op = _make_if(tr, cond, blocks, yields)
    results = iter(op.results)
    for name, rb in rebuild.items():
        after[name] = rb(results)
        if isinstance(after[name], Tile) and after[name].value.hint is None and \
                not name.startswith("$"):
            after[name].value.hint = name
    set_state(tr, after)
    tr.terminated = False


def trace_ifexp(tr, node: ast.IfExp, cond: Tile):
    """`a if cond else b` on a runtime `cond`: a Tile IR `if` (only the taken side runs, as in
    Python: a load or an atomic of the other is not made), its value yielded."""
    with at(tr.loc(node.test)):
        cond = scalar_bool(tr, cond, "if")
    before = get_state(tr)
    blocks, values, states = [], [], []
    for side in (node.body, node.orelse):
        set_state(tr, before)
        blk = Block()
        with tr.ctx.b.at_end(blk):
            values.append(tr.expr(side))
        blocks.append(blk)
        states.append(get_state(tr))
    merge = Merge(tr, blocks, node)
    with at(tr.loc(node)):
        rb_value = merge.add("the conditional expression's value", values, MISSING)
        rebuild = {name: merge.add(f"variable '{name}'", [st.get(name, MISSING) for st in states],
                                   before.get(name, MISSING))
                   for name in dict.fromkeys(k for st in states for k in st)}
    op = _make_if(tr, cond, blocks, merge.yields)
    results = iter(op.results)
    value = rb_value(results)
    set_state(tr, {**before, **{name: rb(results) for name, rb in rebuild.items()}})
    return value


def trace_if_returning(tr, node: ast.If, cond: Tile, rest):
    """An `if` with a `return` inside: each branch continues with `rest`, and returns."""
    from .names import ReturnSignal
    with at(tr.loc(node.test)):
        cond = scalar_bool(tr, cond, "if")
    before = get_state(tr)
    paths = [_trace_branch(tr, list(stmts) + list(rest), before, catch_return=True)
             for stmts in (node.body, node.orelse)]
    merge = Merge(tr, [p[0] for p in paths], node)
    rb_value = merge.add(RETURNED, [p[3] for p in paths], MISSING)
    rb_token = merge.add("the memory token", [p[1][TOKEN] for p in paths], MISSING)
    op = _make_if(tr, cond, [p[0] for p in paths], merge.yields)
    results = iter(op.results)
    value, token = rb_value(results), rb_token(results)
    set_state(tr, before)
    tr.ctx.token = token
    raise ReturnSignal(value)


class Merge:
    """Builds what an `if` yields: for each flowing value, the leaves that differ between the
    live branches (made the same type), and a function rebuilding the value after the `if`."""

    def __init__(self, tr, blocks, node):
        self.tr, self.blocks, self.node = tr, blocks, node
        self.yields = [[] for _ in blocks]

    def add(self, what, vals, before):
        """`what`: "variable 'x'" for a name, whose values of two types make it undefined after
        the `if` (cuTile's rule: an error where it is read, none if it never is); any other
        flowing value of two types is the error here."""
        from .names import Undefined
        if not what.startswith("variable '") or what.startswith("variable '$"):
            return self._add(what, vals, before)
        marks = [len(ys) for ys in self.yields]
        try:
            return self._add(what, vals, before)
        except _PathTypes as e:
            for ys, n in zip(self.yields, marks):
                del ys[n:]
            why = Undefined(f"has another type on each path through the `if` at line "
                            f"{self.tr.loc(self.node).line}", path=True, lead=e.lead)
            return lambda results: why

    def _add(self, what, vals, before):
        from .names import Undefined
        first = vals[0]
        if all(v is first for v in vals) and (len(vals) > 1 or first is before):
            return lambda results: first
        if any(v is MISSING or isinstance(v, Undefined) for v in vals):
            why = Undefined(f"is not defined on every path through the `if` at line "
                            f"{self.tr.loc(self.node).line}", path=True)
            return lambda results: why
        splits = [split(v) for v in vals]
        if all(sp is not None for sp in splits):       # tuples, tiled views, defs: part by part
            for v, sp in zip(vals[1:], splits[1:]):
                if sp[0] != splits[0][0]:
                    self._differ(what, kind_name(first, v), kind_name(v, first))
            old = split(before)
            old = old[1] if old is not None and old[0] == splits[0][0] else None
            parts = [self._add(f"{what}[{k}]", [sp[1][k] for sp in splits],
                               old[k] if old is not None else MISSING)
                     for k in range(len(splits[0][1]))]
            return lambda results: join(first, [p(results) for p in parts])
        if len(vals) > 1 and all(isinstance(v, Array) for v in vals) and \
                len({(v.dtype, v.ndim, v.index_dtype) for v in vals}) == 1:
            return self._arrays(vals)
        if len(vals) == 1:
            if not isinstance(first, (Tile, Value)):
                return lambda results: first          # a constant: only one path gets here
            self.yields[0].append(first)
            return lambda results: wrap(first, next(results))
        if not any(isinstance(v, (Tile, Value)) for v in vals) and _all_equal(vals):
            return lambda results: first
        leaves = self._unify(what, vals)
        for ys, leaf in zip(self.yields, leaves):
            ys.append(leaf)
        return lambda results: wrap(leaves[0], next(results))

    def _unify(self, what, vals):
        """The branch values of one leaf, converted to one type (in their blocks)."""
        if any(v is None for v in vals) and what == RETURNED:
            raise TileTypeError("the function returns a value on some paths and None on others "
                                "(through this runtime `if`)")
        other = [v for v in vals if not (isinstance(v, (Tile, Value)) or is_number(v))]
        if other and len({type_name(v) for v in vals}) > 1:     # two types: cuTile's type error
            self._differ(what, type_name(vals[0]), next(type_name(v) for v in vals[1:]
                                                        if type_name(v) != type_name(vals[0])))
        for v in vals:                # two compile-time values (dtypes, strings): cuTile's
            if not (isinstance(v, (Tile, Value)) or is_number(v)):      # type error
                self._differ(what, constant_type(vals[0]), constant_type(vals[1]))
        tiles = [v for v in vals if isinstance(v, Tile)]
        if any(isinstance(v, Value) for v in vals):
            return vals
        for t in tiles[1:]:
            if t.dtype != tiles[0].dtype or t.shape != tiles[0].shape:
                self._differ(what, tiles[0], t)
        if tiles:
            dt, shape = tiles[0].dtype, tiles[0].shape
        else:                  # numbers: one kind (cuTile types 3 as int32 and 5.0 as float32)
            kinds = [literal_dtype(v, None) for v in vals]
            for k in kinds[1:]:
                if k != kinds[0]:
                    self._differ(what, kinds[0].name, k.name)
            dt, shape = kinds[0], ()
        out = []
        for v, blk in zip(vals, self.blocks):
            if isinstance(v, Tile):
                out.append(v)
            else:
                with self.tr.ctx.b.at_end(blk):
                    out.append(broadcast(self.tr.ctx, constant(self.tr.ctx, v, dt), shape))
        return out

    def _arrays(self, vals):
        """Arrays of one dtype and rank, one per branch: the `if` yields what each is made of
        (its base pointer, extents and strides); the array after it is made of the results."""
        from .array_list import array_of_parts, array_parts
        ctx = self.tr.ctx
        parts = []
        for v, blk in zip(vals, self.blocks):
            with ctx.b.at_end(blk):
                parts.append(array_parts(ctx, v, vals))
        for ys, p in zip(self.yields, parts):
            ys.extend(p)
        return lambda results: array_of_parts(ctx, vals[0], [next(results) for _ in parts[0]],
                                              vals, vals[0].name)

    def _differ(self, what, first, other):
        raise _PathTypes(what, first, other)


class _PathTypes(TileTypeError):
    """A value of another type on each path through an `if`; `lead`: cuTile's words for a
    variable's (the `else` branch's type, then the `if` branch's)."""

    def __init__(self, what, first, other):
        self.lead = f"{other} (the `else` branch) vs. {first} (the `if` branch)"
        self.types = f"{first} in the `if` branch, {other} in the `else` branch; convert one " \
                     f"with astype()"
        super().__init__(f"Type of {what} depends on path taken: {self.types}")


def _all_equal(vals) -> bool:
    try:
        return all(type(v) is type(vals[0]) and bool(v == vals[0]) for v in vals)
    except Exception:
        return False


# ---------------------------------------------------------------------------- subscripts
def tile_subscript(tr, t: Tile, slice_node):
    """`t[:, None]`-style indexing: full slices keep a dimension, None inserts one."""
    items = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
    keys = [tr.expr(i) for i in items]
    if any(k is Ellipsis for k in keys):
        i = keys.index(Ellipsis)
        n_real = sum(1 for k in keys if k is not None and k is not Ellipsis)
        keys = keys[:i] + [slice(None)] * max(0, t.ndim - n_real) + keys[i + 1:]
    shape, dim = [], 0
    for k in keys:
        if k is None:
            shape.append(1)
        elif isinstance(k, slice) and k == slice(None):
            if dim >= t.ndim:
                raise TileTypeError(f"too many indices for a tile of rank {t.ndim} (shape "
                                    f"{t.shape})")
            shape.append(t.shape[dim])
            dim += 1
        elif k is Ellipsis:
            raise TileSyntaxError("only one ... is allowed in a tile subscript")
        else:
            raise TileTypeError("Directly indexing a tile is not supported: a tile is subscripted "
                                "only with ':' and None (to insert dimensions); use "
                                "tilepy.extract() for a part of it")
    shape.extend(t.shape[dim:])
    from .builtins.semantics import reshape
    return reshape(tr.ctx, t, tuple(shape))
