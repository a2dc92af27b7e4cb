"""Generators of ops with regions or several operands to line up: reduce, scan, mma, for, if."""
from __future__ import annotations

import numpy as np

from tilepy.types import I1, I8, I32, TileType

from tilepy.ir.ops import MMAF_TYPES

from .gen import Gen, V, is_arith_float, is_int, tt
from .genops import PREDS, SIGN

# combiner -> (identity for floats/ints by signedness, order-independent?)
F_COMBINERS = ("addf", "mulf", "maxf", "minf")
I_COMBINERS = ("addi", "muli", "andi", "ori", "xori", "maxi", "mini")


def _identity(name: str, elem, attrs) -> object:
    if name in ("addf", "addi", "ori", "xori"):
        return 0
    if name in ("mulf", "muli"):
        return 1
    if name == "maxf":
        return -np.inf
    if name == "minf":
        return np.inf
    if name == "andi":
        return -1 if elem != I1 else 1
    signed = attrs.get("signedness") == "signed"
    bits = elem.bits
    if elem == I1:
        return {"maxi": (1 if signed else 0), "mini": (0 if signed else 1)}[name]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, -1)
    return lo if name == "maxi" else hi


def _combiner(g: Gen, a: V):
    if is_arith_float(a.type):
        names = F_COMBINERS if a.exact else ("addf", "maxf", "minf")
        name = g.d.choice(names)
        attrs = {"propagate_nan": True} if name in ("maxf", "minf") and g.d.chance(50) else {}
    else:
        name = g.d.choice(I_COMBINERS)
        attrs = {"signedness": g.d.choice(SIGN)} if name in ("maxi", "mini") else {}
    return name, attrs


def _body(g: Gen, elem, name, attrs):
    """Region (x, acc) -> name(x, acc)."""
    t = tt((), elem)
    x, acc = g.next_id, g.next_id + 1
    g.next_id += 2
    r = g.next_id
    g.next_id += 1
    from .case import Step
    step = Step(name, (x, acc), ((r, str(t)),), dict(attrs))
    return (((x, str(t)), (acc, str(t))), [step], ("yield", (r,)))


def _ident_literal(elem, value):
    from tilepy.types import NUMPY_DTYPE
    from .case import dense_literal
    return (elem.name, dense_literal(np.array(value).astype(NUMPY_DTYPE[elem]), elem))


def reduce_or_scan(g: Gen, op: str) -> bool:
    a = g.pick(lambda v: v.type.rank >= 1 and (is_arith_float(v.type) or is_int(v.type)),
               recent=4)
    if a is None:
        return False
    dim = g.d.int(0, a.type.rank - 1)
    name, attrs = _combiner(g, a)
    exact = a.exact and name not in ("addf", "mulf")
    n = a.shape[dim]
    battrs = {"dim": dim, "identities": [_ident_literal(a.elem, _identity(name, a.elem, attrs))]}
    if op == "scan":
        battrs["reverse"] = g.d.chance(40)
        rtype = a.type
    else:
        rtype = a.type.with_shape(a.shape[:dim] + a.shape[dim + 1:])
    g.one(op, [a], [rtype], battrs, exact=exact, regions=[_body(g, a.elem, name, attrs)],
          weight=2 * n + 2)
    return True


def mma(g: Gen) -> bool:
    """mmaf on a float value of rank 2 or 3 (mmai on i8), rhs/acc from the pool or constants."""
    a = g.pick(lambda v: v.type.rank in (2, 3) and (v.elem.name in ("i8",) or
                                                     v.elem in MMAF_TYPES), recent=6)
    if a is None:
        return False
    *batch, m, k = a.shape
    n = 1 << g.d.int(0, 4)
    integer = a.elem == I8
    acc_elem = I32 if integer else g.d.choice(MMAF_TYPES[a.elem])
    rhs = g.pick(lambda v: v.type == a.type.with_shape((*batch, k, n)))
    if rhs is None or g.d.chance(30):
        rhs = g.const(a.type.with_shape((*batch, k, n)))
    acc_t = TileType((*batch, m, n), acc_elem)
    acc = g.pick(lambda v: v.type == acc_t)
    if acc is None or g.d.chance(30):
        acc = g.const(acc_t)
    if integer:
        g.one("mmai", [a, rhs, acc], [acc_t], {"signedness_lhs": g.d.choice(SIGN),
                                               "signedness_rhs": g.d.choice(SIGN)})
    else:
        attrs = {"fast_acc": True} if g.d.chance(20) else {}     # NVIDIA 13.3
        g.one("mmaf", [a, rhs, acc], [acc_t], attrs, exact=False, weight=2 * k + 4)
    return True


# ------------------------------------------------------------------------------ control flow
def _region(g: Gen, arg_types, body_steps: int, yield_types, term: str, exact_need):
    """Generate a region body in a new scope; returns (region tuple, yielded values)."""
    g.scopes.append([])
    g.steps_stack.append([])
    args = [g.fresh(t, ex) for t, ex in arg_types]
    from .genops import float_binary, float_unary, int_binary, select
    menu = (float_binary, float_unary, int_binary, select)
    for _ in range(body_steps):
        g.d.choice(menu)(g)
    outs = []
    for t, need_exact in zip(yield_types, exact_need):
        c = g.pool(lambda v: v.type == t and (v.exact or not need_exact))
        outs.append(g.d.choice(c[-3:]) if c and g.d.chance(85) else g.const(t))
    steps = g.steps_stack.pop()
    g.scopes.pop()
    region = (tuple((a.id, str(a.type)) for a in args), steps, (term, tuple(o.id for o in outs)))
    return region, outs


def for_loop(g: Gen) -> bool:
    carried = [g.pick(recent=4) for _ in range(g.d.int(1, 2))]
    carried = [c for c in carried if c is not None]
    ivt = tt((), g.d.choice(("i32", "i64", "i16")))
    lb = g.d.int(-3, 3)
    step = g.d.int(1, 3)
    ub = lb + g.d.int(0, 4) * step - g.d.int(0, step - 1)
    bounds = [g.scalar_const(ivt.elem, x) for x in (lb, ub, step)]
    region, outs = _region(g, [(ivt, True)] + [(c.type, c.exact) for c in carried],
                           g.d.int(1, 4), [c.type for c in carried], "continue",
                           [c.exact for c in carried])
    outs = g.emit("for", bounds + carried, [c.type for c in carried], exact=True, regions=[region])
    for o, c in zip(outs, carried):
        if not c.exact:
            o.exact = False
            g.inexact.add(o.id)
    return True


def if_else(g: Gen) -> bool:
    cond = g.pick(lambda v: v.elem == I1 and v.type.rank == 0 and v.exact)
    if cond is None or g.d.chance(50):
        i = g.pick(lambda v: is_int(v.type) and v.type.rank == 0 and v.exact)
        if i is None:
            return False
        cond = g.one("cmpi", [i, g.partner(i, exact_only=True)], [i.type.with_elem(I1)],
                     {"comparison_predicate": g.d.choice(PREDS), "signedness": g.d.choice(SIGN)})
    results = [g.pick(recent=5) for _ in range(g.d.int(0, 2))]
    results = [r for r in results if r is not None]
    types = [r.type for r in results]
    need = [r.exact for r in results]
    then_r, _ = _region(g, [], g.d.int(0, 3), types, "yield", need)
    else_r, _ = _region(g, [], g.d.int(0, 3), types, "yield", need)
    outs = g.emit("if", [cond], types, exact=True, regions=[then_r, else_r])
    for o, r in zip(outs, results):
        if not r.exact:
            o.exact = False
            g.inexact.add(o.id)
    return True


def block_scalar(g: Gen) -> bool:
    """An i32 0-d value from the block id (drives if conditions and loops)."""
    g.one("get_tile_block_id", [], [tt((), "i32")] * 3)
    return True

