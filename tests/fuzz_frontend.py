"""Frontend-level fuzzing: random cuTile-style kernels written as Python source with the public
API, and a numpy model of the same API (dtype promotion, literal typing, broadcasting,
reductions, the element-wise builtins) that predicts each result and its dtype.

Unlike the IR fuzzer (tests/fuzz/), which builds Tile IR directly, these kernels go through the
whole frontend: the AST, the builtins' lowering, identities and promotion rules. A kernel holds
EXPRS random expressions over tiles loaded from its inputs; each is checked to have the model's
dtype (`ct.static_assert`) and stored into its own output row. `python tests/fuzz_frontend.py N`
runs N random kernels (the CI test runs a few, derandomized).
"""
from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

F16, F32, I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
CT_NAME = {F16: "ct.float16", F32: "ct.float32", I32: "ct.int32"}
ROWS, COLS, EXPRS = 8, 16, 6
FULL, ROW, COL = (ROWS, COLS), (1, COLS), (ROWS, 1)


@dataclass(frozen=True)
class Node:
    src: str                     # Python source of the expression in the kernel
    dtype: np.dtype | None       # None: a Python literal
    shape: tuple | None
    fn: object                   # env -> numpy value (in `dtype`), or the literal itself
    exact: bool = True           # computed from the inputs by exact operations only


LEAVES = {  # name: (dtype, shape, source of the load)
    "x": (F32, FULL, "ct.load(X, (0, 0), (8, 16))"),
    "h": (F16, FULL, "ct.load(H, (0, 0), (8, 16))"),
    "r": (F32, ROW, "ct.load(R, (0, 0), (1, 16))"),
    "c": (F32, COL, "ct.load(C, (0, 0), (8, 1))"),
    "k": (I32, FULL, "ct.load(K, (0, 0), (8, 16))"),
}


# --------------------------------------------------------------------- the numpy model
def promote(a: Node, b: Node) -> np.dtype:
    """cuTile's rules: a higher category wins (int < float); f16 + f32 -> f32; a literal takes
    the tile's dtype unless it is of a higher category (a float literal with an int tile: f32)."""
    if a.dtype is None or b.dtype is None:
        tile, lit = (b, a) if a.dtype is None else (a, b)
        if isinstance(lit.fn, float) and tile.dtype.kind == "i":
            return F32
        return tile.dtype
    if a.dtype == b.dtype:
        return a.dtype
    if (a.dtype.kind == "f") != (b.dtype.kind == "f"):
        return a.dtype if a.dtype.kind == "f" else b.dtype
    return F32                                     # f16 with f32


def shape_of(a: Node, b: Node) -> tuple:
    shapes = [n.shape for n in (a, b) if n.shape is not None]
    return tuple(np.broadcast_shapes(*shapes))


def value(n: Node, env, dtype) -> np.ndarray:
    return np.asarray(n.fn(env) if callable(n.fn) else n.fn).astype(dtype)


BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply}
CALLS2 = {"ct.maximum": np.maximum, "ct.minimum": np.minimum}
UNARY_F = {"ct.abs": np.abs, "ct.sin": np.sin, "ct.tanh": np.tanh, "ct.cos": np.cos,
           "-": np.negative}
BOUNDED = {"ct.exp": np.exp, "ct.cosh": np.cosh, "ct.sinh": np.sinh, "ct.exp2": np.exp2}
REDUCE = {"ct.sum": np.sum, "ct.max": np.max, "ct.min": np.min}
LITERALS = (0.5, -1.25, 2.0, 3.0, 2, 3, -1, 7)


def binary(op: str, a: Node, b: Node) -> Node:
    d, shape = promote(a, b), shape_of(a, b)
    fn = BINARY.get(op) or CALLS2[op]
    src = f"({a.src} {op} {b.src})" if op in BINARY else f"{op}({a.src}, {b.src})"
    return Node(src, d, shape, lambda env: fn(value(a, env, d), value(b, env, d)),
                a.exact and b.exact and op != "*")


def unary(op: str, a: Node) -> Node:
    d = a.dtype if a.dtype.kind == "f" else F32
    if op in ("-", "ct.abs") and a.dtype.kind == "i":          # integers stay integers
        fn = UNARY_F[op]
        src = f"(-{a.src})" if op == "-" else f"{op}({a.src})"
        return Node(src, a.dtype, a.shape, lambda env: fn(value(a, env, a.dtype)), a.exact)
    fn = UNARY_F.get(op)
    if fn is None:                                 # bounded: f(tanh(a)) stays small
        inner = unary("ct.tanh", a)
        return Node(f"{op}({inner.src})", d, a.shape,
                    lambda env: BOUNDED[op](inner.fn(env)).astype(d), False)
    src = f"(-{a.src})" if op == "-" else f"{op}({a.src})"
    return Node(src, d, a.shape, lambda env: fn(value(a, env, d)).astype(d),
                a.exact and op in ("-", "ct.abs"))


def reduction(op: str, a: Node, axis: int) -> Node:
    shape = (a.shape[0], 1) if axis == 1 else (1, a.shape[1])
    return Node(f"{op}({a.src}, axis={axis}, keepdims=True)", a.dtype, shape,
                lambda env: REDUCE[op](value(a, env, a.dtype), axis=axis, keepdims=True).astype(
                    a.dtype), a.exact and op != "ct.sum")


def where(leaf: str, lit: float, a: Node, b: Node) -> Node:
    """ct.where on a condition over a leaf tile (exact: no rounding can flip it)."""
    d = promote(a, b)
    ld, lshape, _ = LEAVES[leaf]
    shape = tuple(np.broadcast_shapes(lshape, shape_of(a, b)))
    return Node(f"ct.where({leaf} > {lit!r}, {a.src}, {b.src})", d, shape,
                lambda env: np.where(env[leaf] > lit, value(a, env, d), value(b, env, d)),
                a.exact and b.exact)


def int_op(op: str, a: Node, lit: int) -> Node:
    """//, % by a nonzero literal and bit operations, on an integer tile (exact)."""
    fn = {"//": np.floor_divide, "%": np.mod, "&": np.bitwise_and, "|": np.bitwise_or,
          "^": np.bitwise_xor, "<<": np.left_shift}[op]
    return Node(f"({a.src} {op} {lit})", I32, a.shape,
                lambda env: fn(value(a, env, I32), np.int32(lit)).astype(I32), a.exact)


def astype(a: Node, d: np.dtype) -> Node:
    return Node(f"{a.src}.astype({CT_NAME[d]})", d, a.shape, lambda env: value(a, env, d),
                a.exact)


def leaf(name: str) -> Node:
    d, shape, _ = LEAVES[name]
    return Node(name, d, shape, lambda env: env[name])


# ------------------------------------------------------------------------ the strategy
def _lit(v) -> Node:
    return Node(repr(v), None, None, v)


@st.composite
def expr(draw, depth=3) -> Node:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return leaf(draw(st.sampled_from(sorted(LEAVES))))
    kind = draw(st.sampled_from(["bin", "bin", "lit", "call2", "unary", "reduce", "where",
                                 "int", "cast"]))
    a = draw(expr(depth - 1))
    if kind in ("bin", "call2"):
        op = draw(st.sampled_from(sorted(BINARY) if kind == "bin" else sorted(CALLS2)))
        return binary(op, a, draw(expr(depth - 1)))
    if kind == "lit":
        v = _lit(draw(st.sampled_from(LITERALS)))
        op = draw(st.sampled_from(sorted(BINARY)))
        return binary(op, *((a, v) if draw(st.booleans()) else (v, a)))
    if kind == "unary":
        return unary(draw(st.sampled_from(sorted(UNARY_F) + sorted(BOUNDED))), a)
    if kind == "reduce":
        return reduction(draw(st.sampled_from(sorted(REDUCE))), a, draw(st.sampled_from([0, 1])))
    if kind == "where":
        return where(draw(st.sampled_from(["x", "h", "r", "c"])), draw(st.sampled_from([0.0, 0.5])),
                     a, draw(expr(depth - 1)))
    if kind == "int":
        k = a if a.dtype == I32 else leaf("k")
        op = draw(st.sampled_from(["//", "%", "&", "|", "^", "<<"]))
        return int_op(op, k, draw(st.sampled_from([3, -4, 5] if op in ("//", "%") else [1, 2, 6])))
    d = draw(st.sampled_from([F16, F32] if a.dtype == I32 else [F16, F32, I32]))
    if d == I32 and not a.exact:
        d = F32                                    # truncation of a rounded value may flip
    return astype(a, d)


kernels = st.lists(expr(), min_size=EXPRS, max_size=EXPRS)


# -------------------------------------------------------------------------- the kernel
_counter = itertools.count()
_DIR = tempfile.mkdtemp(prefix="tp-fuzz-frontend-")
atexit.register(shutil.rmtree, _DIR, True)         # the kernels' source files, at exit


def kernel_source(exprs: list[Node], name: str) -> str:
    outs = ", ".join(f"o{j}" for j in range(len(exprs)))
    lines = [f"@ct.kernel\ndef {name}(X, H, R, C, K, {outs}):"]
    lines += [f"    {n} = {src}" for n, (_, _, src) in LEAVES.items()]
    for j, e in enumerate(exprs):
        lines.append(f"    e{j} = ct.broadcast_to({e.src}, (8, 16))")
        lines.append(f"    ct.static_assert(e{j}.dtype == {CT_NAME[e.dtype]}, \"dtype of e{j}\")")
        lines.append(f"    ct.store(o{j}, (0, 0), e{j})")
    return "import tilepy as ct\n\n\n" + "\n".join(lines) + "\n"


def load_kernel(source: str, name: str):
    """The kernel `name` of `source`, imported from a file (the frontend reads its source)."""
    path = os.path.join(_DIR, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def inputs(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(FULL).astype(F32), "h": rng.standard_normal(FULL).astype(F16),
            "r": rng.standard_normal(ROW).astype(F32), "c": rng.standard_normal(COL).astype(F32),
            "k": rng.integers(-20, 21, FULL).astype(I32)}


def mismatch(e: Node, got: np.ndarray, env) -> str | None:
    with np.errstate(all="ignore"):
        want = np.broadcast_to(value(e, env, e.dtype), FULL)
        if e.dtype.kind == "i":
            ok = got == want
        else:
            scale = 1 + np.max(np.abs(want.astype(np.float64)), initial=0)
            # f16 arithmetic anywhere inside (the f16 leaf or a cast) rounds at f16 precision,
            # and sums in another order: its error reaches a float32 result too
            half = e.dtype == F16 or re.search(r"\bh\b|float16", e.src)
            rtol = 2e-2 if half else 1e-4
            ok = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= rtol * scale
    if ok.all():
        return None
    i = np.argwhere(~ok)[0]
    return f"{e.src}: at {tuple(i)} got {got[tuple(i)]!r}, model {want[tuple(i)]!r}"


def check(exprs: list[Node], seed: int, modes) -> list[str]:
    """Run one random kernel in every mode; the disagreements with the model."""
    from guarded import run_everywhere
    name = f"fz{next(_counter)}"
    source = kernel_source(exprs, name)
    k = load_kernel(source, name)
    env = inputs(seed)
    args = (env["x"], env["h"], env["r"], env["c"], env["k"],
            *[np.zeros(FULL, e.dtype) for e in exprs])
    bad = []
    for mode, out in run_everywhere((1,), k, args, modes).items():
        for j, e in enumerate(exprs):
            m = mismatch(e, out[5 + j], env)
            if m:
                bad.append(f"({mode}) e{j} = {m}")
    return [f"{b}\n--- kernel ---\n{source}" for b in bad[:1]]


if __name__ == "__main__":
    from hypothesis import given, settings
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

    @settings(max_examples=int(sys.argv[1]) if len(sys.argv) > 1 else 50, deadline=None,
              database=None)
    @given(kernels, st.integers(0, 2**16))
    def run(exprs, seed):
        bad = check(exprs, seed, ("interpret", "fast", "faithful"))
        assert not bad, bad[0]
    run()
    print("no disagreement")
