"""One generator per kind of op: each looks for suitable operands in the pool and emits steps
(`True`), or finds none (`False`). `KINDS` weights them."""
from __future__ import annotations

import numpy as np

from tilepy.types import F32, I1, element_type

from .gen import (FLOATS, INTS, MATH, MAX_NUMEL, SAFE_WITH_INEXACT, Gen, V, is_arith_float,
                  is_int, pow2_shapes, tt)

PREDS = ("equal", "not_equal", "less_than", "less_than_or_equal", "greater_than",
         "greater_than_or_equal")
SIGN = ("signed", "unsigned")


def _clamp(g: Gen, v: V, lo, hi, nan=False) -> V:
    attrs = {"propagate_nan": True} if nan else {}
    v = g.one("maxf", [v, g.splat_like(v, lo)], [v.type], attrs)
    return g.one("minf", [v, g.splat_like(v, hi)], [v.type], attrs)


# ------------------------------------------------------------------------------ float
def float_binary(g: Gen) -> bool:
    a = g.pick(lambda v: is_arith_float(v.type), recent=4)
    if a is None:
        return False
    ops = ["addf", "subf", "mulf", "maxf", "minf"]
    if a.exact:
        ops += ["divf", "remf", "pow", "atan2"]
    name = g.d.choice(ops)
    b = g.partner(a, exact_only=name not in SAFE_WITH_INEXACT)
    attrs = {}
    if name in ("maxf", "minf") and g.d.chance(50):
        attrs["propagate_nan"] = True
    if name == "pow":
        a = _clamp(g, g.one("absf", [a], [a.type]), 0.5, 2.0)
        b = _clamp(g, b, -8.0, 8.0)
    exact = a.exact and b.exact and name not in ("pow", "atan2")
    g.one(name, [a, b], [a.type], attrs, exact=exact, weight=4)
    return True


def fma(g: Gen) -> bool:
    a = g.pick(lambda v: is_arith_float(v.type), recent=4)
    if a is None:
        return False
    b, c = g.partner(a), g.partner(a)
    g.one("fma", [a, b, c], [a.type], exact=a.exact and b.exact and c.exact)
    return True


def float_unary(g: Gen) -> bool:
    a = g.pick(lambda v: is_arith_float(v.type), recent=4)
    if a is None:
        return False
    ops = ["negf", "absf"] + (["floor", "ceil", "sqrt"] + list(MATH) if a.exact else [])
    name = g.d.choice(ops)
    if name in MATH:
        if MATH[name] is None:
            a = g.one("addf", [g.one("absf", [a], [a.type]), g.splat_like(a, 1.0)], [a.type])
        else:
            a = _clamp(g, a, *MATH[name])
        attrs, weight = {}, 4
        if name == "exp" and g.d.chance(30):       # NVIDIA 13.3: rounding<approx> (f32) | <full>
            approx = a.elem == F32 and g.d.chance(50)
            attrs["rounding_mode"] = "approx" if approx else "full"
            weight = 16 if approx else 4            # ex2.approx: 2 + 1.16|x| ulp on |x| <= 10
        g.one(name, [a], [a.type], attrs, exact=False, weight=weight)
    else:
        g.one(name, [a], [a.type], exact=a.exact)
    return True


# ------------------------------------------------------------------------------ integer
def _safe_divisor(g: Gen, b: V) -> V:
    """b, except 7 where b is 0 or -1 (b + 1 <= 1 unsigned)."""
    one = g.splat_like(b, 1)
    bad = g.one("cmpi", [g.one("addi", [b, one], [b.type]), one], [b.type.with_elem(I1)],
                {"comparison_predicate": "less_than_or_equal", "signedness": "unsigned"})
    return g.one("select", [bad, g.splat_like(b, 7), b], [b.type])


def int_binary(g: Gen) -> bool:
    a = g.pick(lambda v: is_int(v.type), recent=4)
    if a is None:
        return False
    ops = ["addi", "subi", "muli", "andi", "ori", "xori", "maxi", "mini", "shli", "shri", "mulhii"]
    if a.elem != I1:
        ops += ["divi", "remi"]
    name = g.d.choice(ops)
    b = g.partner(a)
    attrs = {}
    if name in ("maxi", "mini", "shri", "divi", "remi"):
        attrs["signedness"] = g.d.choice(SIGN)
    if name in ("divi", "remi"):
        b = _safe_divisor(g, b)
    if name == "divi":
        modes = ["zero", "positive_inf"] + (["negative_inf"] if attrs["signedness"] == "signed"
                                            else [])
        r = g.d.choice(modes + [None])
        if r:
            attrs["rounding"] = r
    if name in ("shli", "shri") and g.d.chance(50):
        b = g.one("andi", [b, g.splat_like(b, a.elem.bits - 1 if a.elem != I1 else 1)], [b.type])
    g.one(name, [a, b], [a.type], attrs)
    return True


def int_unary(g: Gen) -> bool:
    a = g.pick(lambda v: is_int(v.type), recent=4)
    if a is None:
        return False
    g.one(g.d.choice(["negi", "absi"]), [a], [a.type])
    return True


# ------------------------------------------------------------------------------ compare/select
def compare(g: Gen) -> V | None:
    a = g.pick(lambda v: v.exact and (is_arith_float(v.type) or is_int(v.type)), recent=4)
    if a is None:
        return None
    b = g.partner(a, exact_only=True)
    rt = a.type.with_elem(I1)
    if is_int(a.type):
        return g.one("cmpi", [a, b], [rt], {"comparison_predicate": g.d.choice(PREDS),
                                           "signedness": g.d.choice(SIGN)})
    return g.one("cmpf", [a, b], [rt], {"comparison_predicate": g.d.choice(PREDS),
                                       "comparison_ordering": g.d.choice(("ordered", "unordered"))})


def select(g: Gen) -> bool:
    a = g.pick(recent=4)
    if a is None:
        return False
    conds = g.pool(lambda v: v.elem == I1 and v.exact and v.shape == a.shape)
    c = g.d.choice(conds) if conds and g.d.chance(70) else None
    if c is None:
        c = g.const(a.type.with_elem(I1))
    b = g.partner(a)
    g.one("select", [c, a, b], [a.type], exact=a.exact and b.exact)
    return True


# ------------------------------------------------------------------------------ conversions
_BITCAST = {"i16": ("f16", "bf16"), "f16": ("i16", "bf16"), "bf16": ("i16", "f16"),
            "i32": ("f32",), "f32": ("i32",), "i64": ("f64",),
            "f64": ("i64",), "i8": ("e4m3", "e5m2"), "e4m3": ("i8", "e5m2"), "e5m2": ("i8",)}


def convert(g: Gen) -> bool:
    a = g.pick(recent=4)
    if a is None:
        return False
    e = a.elem.name
    opts = []
    if a.elem.is_float:
        opts += ["ftof"]
        if a.exact and e in FLOATS:
            opts += ["ftoi"]
    else:
        opts += ["itof", "exti", "trunci"]
    if a.exact and e in _BITCAST:
        opts += ["bitcast"]
    name = g.d.choice(opts)
    if name == "ftof":
        to = g.d.choice([f for f in FLOATS + ("tf32", "e4m3", "e5m2") if f != e])
        g.one("ftof", [a], [a.type.with_elem(element_type(to))], exact=a.exact)
    elif name == "ftoi":
        attrs = {"signedness": g.d.choice(SIGN)}
        if g.d.chance(30):
            attrs["saturating"] = True   # NVIDIA 13.4: Inf saturates too; no clamp needed
        else:
            big = {"f16": 60000.0, "bf16": 1e30, "f32": 1e30, "f64": 1e300}[e]
            a = _clamp(g, a, -big, big, nan=True)
        g.one("ftoi", [a], [a.type.with_elem(element_type(g.d.choice(INTS)))], attrs)
    elif name == "itof":
        to = g.d.choice(FLOATS + ("tf32", "e4m3", "e5m2"))
        g.one("itof", [a], [a.type.with_elem(element_type(to))], {"signedness": g.d.choice(SIGN)})
    elif name in ("exti", "trunci"):
        wider = name == "exti"
        cands = [i for i in INTS if (element_type(i).bits > a.elem.bits) == wider
                 and element_type(i).bits != a.elem.bits]
        if not cands:
            return False
        attrs = {"signedness": g.d.choice(SIGN)} if wider else {}
        g.one(name, [a], [a.type.with_elem(element_type(g.d.choice(cands)))], attrs)
    else:
        g.one("bitcast", [a], [a.type.with_elem(element_type(g.d.choice(_BITCAST[e])))])
    return True


# ------------------------------------------------------------------------------ shapes
def reshape(g: Gen) -> bool:
    a = g.pick(recent=4)
    if a is None:
        return False
    shapes = [s for s in pow2_shapes(a.type.numel) if s != a.shape]
    if not shapes:
        return False
    g.one("reshape", [a], [a.type.with_shape(g.d.choice(shapes))], exact=a.exact)
    return True


def broadcast(g: Gen) -> bool:
    a = g.pick(lambda v: v.type.rank >= 1 or v.type.numel == 1, recent=4)
    if a is None:
        return False
    if 1 not in a.shape:
        if a.type.rank >= 3:
            return False
        pos = g.d.int(0, a.type.rank)
        shape = a.shape[:pos] + (1,) + a.shape[pos:]
        a = g.one("reshape", [a], [a.type.with_shape(shape)], exact=a.exact)
    out = list(a.shape)
    grown = [i for i, d in enumerate(out) if d == 1 and g.d.chance(70)]
    for i in grown:
        out[i] = 1 << g.d.int(1, 4)
    while np.prod(out) > MAX_NUMEL and any(out[i] > 1 for i in grown):
        i = max(grown, key=lambda j: out[j])
        out[i] //= 2
    if np.prod(out) > MAX_NUMEL:
        return False
    if tuple(out) == a.shape:
        return False
    g.one("broadcast", [a], [a.type.with_shape(out)], exact=a.exact)
    return True


def permute(g: Gen) -> bool:
    a = g.pick(lambda v: v.type.rank >= 2, recent=4)
    if a is None:
        return False
    perm = list(range(a.type.rank))
    while perm == sorted(perm):
        perm = [perm[i] for i in np.random.default_rng(g.d.seed()).permutation(len(perm))]
    g.one("permute", [a], [a.type.with_shape([a.shape[p] for p in perm])], {"permutation": perm},
          exact=a.exact)
    return True


def extract(g: Gen) -> bool:
    a = g.pick(lambda v: v.type.rank >= 1 and v.type.numel > 1, recent=4)
    if a is None:
        return False
    shape = [d >> g.d.int(0, d.bit_length() - 1) for d in a.shape]
    idx = [g.scalar_const("i32", g.d.int(0, full // d - 1)) for full, d in zip(a.shape, shape)]
    g.one("extract", [a, *idx], [a.type.with_shape(shape)], exact=a.exact)
    return True


def cat(g: Gen) -> bool:
    a = g.pick(lambda v: v.type.rank >= 1 and v.type.numel * 2 <= MAX_NUMEL, recent=4)
    if a is None:
        return False
    b = g.partner(a)
    dim = g.d.int(0, a.type.rank - 1)
    shape = list(a.shape)
    shape[dim] *= 2
    g.one("cat", [a, b], [a.type.with_shape(shape)], {"dim": dim}, exact=a.exact and b.exact)
    return True


def iota(g: Gen) -> bool:
    elem = g.d.choice(("i8", "i16", "i32", "i64"))
    n = 1 << g.d.int(0, 7)          # at most 128: iota's count must fit its type (8.3.12)
    g.one("iota", [], [tt((n,), elem)])
    return True
