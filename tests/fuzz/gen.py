"""Random valid kernels (`Case`s), drawn through hypothesis so failures shrink.

Each case loads tiles of 1-3 random arrays (random element types, power-of-two tile shapes,
ragged edges with padding values, row/column-major views with padded rows, dim_map, flipped tile
indices), grows a pool of values with random ops, and stores some of them to output arrays.

Exactness is tracked per value: a value is *inexact* when the spec leaves it to the implementation
(math functions, non-associative float reductions/scans, mmaf) or it is computed from an inexact
value. Inexact values only flow into ops whose error stays proportional to their magnitude
(+ - * fma max min abs neg ftof select reshape ... and sum/max/min reductions), so every execution
must agree with the interpreter within a tolerance the runner derives from the case; exact values
must agree bit for bit. Undefined behavior is avoided by construction: divisors are steered away
from 0 and -1, ftoi inputs are clamped to finite values, math functions get bounded inputs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from tilepy.types import TileType, element_type

from .case import Step, dense_literal
from .values import random_values

FLOATS = ("f16", "bf16", "f32", "f64")
ALT_FLOATS = ("tf32", "e4m3", "e5m2")
INTS = ("i1", "i8", "i16", "i32", "i64")
ALL = FLOATS + ALT_FLOATS + INTS
MAX_NUMEL = 256
PADS = ("zero", "neg_zero", "nan", "pos_inf", "neg_inf")
MATH = {  # op -> (lo, hi) input clamp keeping results finite and far from overflow
    "exp": (-10, 10), "exp2": (-14, 14), "sinh": (-10, 10), "cosh": (-10, 10),
    "tanh": (-20, 20), "sin": (-64, 64), "cos": (-64, 64), "tan": (-1.4, 1.4),
    "log": None, "log2": None, "rsqrt": None,
}
SAFE_WITH_INEXACT = {"addf", "subf", "mulf", "maxf", "minf", "fma", "negf", "absf"}


class Draw:
    """Random choices, all through hypothesis."""

    def __init__(self, draw):
        self._draw = draw

    def int(self, lo: int, hi: int) -> int:
        return self._draw(st.integers(lo, hi))

    def choice(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, percent: int) -> bool:
        return self.int(0, 99) < percent

    def seed(self) -> int:
        return self.int(0, 2**31 - 1)


@dataclass
class V:
    id: int
    type: TileType
    exact: bool

    @property
    def elem(self):
        return self.type.elem

    @property
    def shape(self):
        return self.type.shape


def tt(shape, elem) -> TileType:
    return TileType(tuple(shape), element_type(elem) if isinstance(elem, str) else elem)


def is_arith_float(t: TileType) -> bool:
    return t.elem.is_float and t.elem.name in FLOATS


def is_int(t: TileType) -> bool:
    return t.elem.is_int


def pow2_shapes(numel: int, max_rank: int = 3):
    """All shapes of power-of-two extents with `numel` elements and rank <= max_rank."""
    k = numel.bit_length() - 1
    out = [()] if numel == 1 else []
    for rank in range(1, max_rank + 1):
        def rec(left, r):
            if r == 1:
                yield (1 << left,)
                return
            for e in range(left + 1):
                for rest in rec(left - e, r - 1):
                    yield (1 << e,) + rest
        out += list(rec(k, rank))
    return out


class Gen:
    def __init__(self, draw: Draw, grid: tuple[int, int]):
        self.d = draw
        self.grid = grid
        self.next_id = 0
        self.scopes: list[list[V]] = [[]]
        self.steps_stack: list[list[Step]] = [[]]
        self.inexact: set[int] = set()
        self.arrays: list = []       # the case's arrays (reload steps add scratch outputs)
        self.err = 0                 # total error weight in ulps of the inexact values

    # ------------------------------------------------------------------ bookkeeping
    @property
    def steps(self) -> list[Step]:
        return self.steps_stack[-1]

    def pool(self, pred=lambda v: True) -> list[V]:
        return [v for s in self.scopes for v in s if pred(v)]

    def fresh(self, t: TileType, exact: bool) -> V:
        v = V(self.next_id, t, exact)
        self.next_id += 1
        if not exact:
            self.inexact.add(v.id)
        self.scopes[-1].append(v)
        return v

    def emit(self, op, args, rtypes, attrs=None, exact=True, regions=(), weight=0) -> list[V]:
        outs = [self.fresh(t, exact) for t in rtypes]
        self.steps.append(Step(op, tuple(a.id for a in args),
                               tuple((o.id, str(o.type)) for o in outs), dict(attrs or {}),
                               tuple(regions)))
        if not exact:
            self.err += weight or 2
        return outs

    def one(self, *a, **k) -> V:
        return self.emit(*a, **k)[0]

    def pick(self, pred=lambda v: True, recent: int = 0) -> V | None:
        c = self.pool(pred)
        if not c:
            return None
        if recent and len(c) > recent and self.d.chance(60):
            c = c[-recent:]
        return self.d.choice(c)

    # ------------------------------------------------------------------ constants
    def const(self, t: TileType, splat: bool | None = None, values=None) -> V:
        if splat is None:
            splat = t.numel == 1 or self.d.chance(60)
        if values is None:
            rng = np.random.default_rng(self.d.seed())
            values = random_values(t.elem, () if splat else t.shape, rng)
        arr = np.asarray(values)
        return self.one("constant", [], [t], {"value": (t.elem.name, dense_literal(arr, t.elem))})

    def scalar_const(self, elem, value) -> V:
        from tilepy.types import NUMPY_DTYPE
        e = element_type(elem) if isinstance(elem, str) else elem
        return self.const(tt((), e), True, np.array(value).astype(NUMPY_DTYPE[e]))

    def splat_like(self, v: V, value) -> V:
        from tilepy.types import NUMPY_DTYPE
        return self.const(v.type, True, np.array(value).astype(NUMPY_DTYPE[v.elem]))

    def partner(self, v: V, exact_only=False) -> V:
        """Another value of v's type (from the pool, v itself, or a new constant)."""
        c = self.pool(lambda w: w.type == v.type and (w.exact or not exact_only))
        if c and self.d.chance(70):
            return self.d.choice(c)
        return self.const(v.type)
