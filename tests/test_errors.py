"""User mistakes give located errors: file, line, column and a caret under the expression."""
import numpy as np
import pytest

import tilepy as ct
from kernels_util import assert_located

HERE = __file__
F32 = np.zeros((4, 64), np.float32)
V32 = np.zeros(64, np.float32)
V16 = np.zeros(64, np.float16)


@ct.kernel
def non_pow2_shape(x, y):
    t = ct.load(x, (0, 0), (1, 100))  # E1
    ct.store(y, (0, 0), t)


@ct.kernel
def undefined_name(x):
    ct.store(x, (0,), ct.load(x, (0,), (16,)) * scale)  # E2


@ct.kernel
def unsupported_try(x):
    try:  # E3
        pass
    except Exception:
        pass


@ct.kernel
def wrong_index_count(x):
    t = ct.load(x, (0,), (16,))  # E4


@ct.kernel
def store_narrowing(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (16,)))  # E5


@ct.kernel
def incompatible_dtypes(a, b, c):
    ct.store(c, (0,), ct.load(a, (0,), (16,)) + ct.load(b, (0,), (16,)).astype(ct.bfloat16))  # E6


@ct.kernel
def mma_rank(a, c):
    t = ct.load(a, (0,), (16,))
    acc = ct.mma(t, t, ct.zeros((16,), ct.float32))  # E7
    ct.store(c, (0,), acc)


@ct.kernel
def nonconstant_shape(x, n):
    t = ct.load(x, (0,), (n,))  # E8


@ct.kernel
def tile_condition(x):
    t = ct.load(x, (0,), (16,))
    if t > 0:  # E9
        pass


@ct.kernel
def list_literal(x):
    shape = [16]  # E10


def _recurse(v):
    return _recurse(v)  # E11


@ct.kernel
def recursion(x):
    ct.store(x, (0,), _recurse(ct.load(x, (0,), (16,))))  # E11-call


@ct.kernel
def loop_type_change(x, y):
    acc = ct.zeros((16,), ct.float16)
    for i in range(4):
        acc = acc + ct.load(x, (i,), (16,))  # E12
    ct.store(y, (0,), acc)


@ct.kernel
def maybe_undefined(x, n):
    if n > 0:
        t = ct.load(x, (0,), (16,))
    ct.store(x, (0,), t)  # E13


@ct.kernel
def store_wrong_rank(x):
    ct.store(x, (0, 0), ct.load(x, (0, 0), (1, 16)).reshape((16,)))  # E14


CASES = [
    (non_pow2_shape, (F32, F32), ct.TileTypeError, "E1", "(1, 100)", "power of two"),
    (undefined_name, (V32,), ct.TileSyntaxError, "E2", "scale", "name 'scale' is not defined"),
    (unsupported_try, (V32,), ct.TileSyntaxError, "E3", "try:", "try/except is not supported"),
    (wrong_index_count, (F32,), ct.TileTypeError, "E4", "(16,)", "2 dimensions|has 1 dimensions|but the array has 2"),
    (store_narrowing, (V32, V16), ct.TileTypeError, "E5", "ct.load(x, (0,), (16,))", "cannot be implicitly cast"),
    (incompatible_dtypes, (V16, V16, V16), ct.TileTypeError, "E6", "ct.load(a, (0,), (16,)) + ct.load(b, (0,), (16,)).astype(ct.bfloat16)", "promotion of float16 and bfloat16"),
    (mma_rank, (V16, V32), ct.TileTypeError, "E7", "ct.mma(t, t, ct.zeros((16,), ct.float32))", "2-d or 3-d"),
    (nonconstant_shape, (V32, 16), ct.TileTypeError, "E8", "(n,)", "compile-time constant"),
    (tile_condition, (V32,), ct.TileTypeError, "E9", "t > 0", "must be a scalar"),
    (list_literal, (V32,), ct.TileSyntaxError, "E10", "[16]", "list literal"),
    (recursion, (V32,), ct.TileUnsupportedFeatureError, "E11", "_recurse(v)", "recursive"),
    (loop_type_change, (V32, V16), ct.TileTypeError, "E12", "acc + ct.load(x, (i,), (16,))", "changes in the loop"),
    (maybe_undefined, (V32, 1), ct.TileSyntaxError, "E13", "t", "not defined on every path"),
    (store_wrong_rank, (F32,), ct.TileTypeError, "E14", "ct.load(x, (0, 0), (1, 16)).reshape((16,))", "rank"),
]


@pytest.mark.parametrize("kernel,args,exc,marker,snippet,message", CASES,
                         ids=[c[3] for c in CASES])
def test_located_error(kernel, args, exc, marker, snippet, message):
    with pytest.raises(exc, match=message) as info:
        kernel.mlir(*args)
    assert_located(info.value, marker, snippet, HERE)


def test_error_shows_no_compiler_frames():
    with pytest.raises(ct.TileTypeError) as info:
        non_pow2_shape.mlir(F32, F32)
    frames = [f.filename for f in __import__("traceback").extract_tb(info.value.__traceback__)]
    internal = [f for f in frames if "/tilepy/" in f]
    # only the public entry point (kernel.mlir) appears; no tracer/builtin/compiler frames
    assert len(internal) <= 1 and not any("tracer" in f or "builtins" in f for f in internal), frames
    assert "called from" not in str(info.value)


def test_error_in_helper_names_the_call_site():
    with pytest.raises(ct.TileUnsupportedFeatureError) as info:
        recursion.mlir(V32)
    line = [i for i, l in enumerate(open(HERE), 1) if l.rstrip().endswith("# E11-call")][0]
    assert f"called from {HERE}:{line}:" in str(info.value)


def test_exec_built_kernels_get_a_clear_error():
    ns = {"ct": ct}
    exec("@ct.kernel\ndef k(x):\n    pass\n", ns)
    with pytest.raises(ct.TileSyntaxError, match="exec"):
        ns["k"].mlir(V32)
