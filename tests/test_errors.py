"""User mistakes give located errors: file, line, column and a caret under the expression."""
import enum
import os
import sys
import traceback

import numpy as np
import pytest

import tilepy as ct
from kernels_util import assert_located, marker_loc

HERE = __file__
PACKAGE = os.path.dirname(ct.__file__) + os.sep     # tilepy's own files, wherever they are
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


I32 = np.zeros(64, np.int32)
U32 = np.zeros(64, np.uint32)
I8 = np.zeros(64, np.int8)


@ct.kernel
def with_statement(x):
    with x:  # E15
        pass


@ct.kernel
def combiner_captures_array(x, weights):
    t = ct.load(x, (0,), (16,))
    m = ct.reduce(t, 0, lambda a, b: a + b * ct.sum(ct.load(weights, (0,), (16,))), 0.0)  # E16
    ct.store(x, (0,), m)


@ct.kernel
def too_many_indices(x):
    t = ct.load(x, (0,), (16,))
    u = t[:, :]  # E17


@ct.kernel
def constant_out_of_range(x):
    t = ct.load(x, (0,), (16,))
    ct.store(x, (0,), t + 1000)  # E18


@ct.kernel
def static_assertion(x):
    t = ct.load(x, (0,), (16,))
    ct.static_assert(t.shape[0] == 32, f"expected 32 elements, got {t.shape[0]}")  # E19


@ct.kernel
def bitcast_width(x):
    t = ct.load(x, (0,), (16,))
    u = ct.bitcast(t, ct.float16)  # E20


@ct.kernel
def signed_unsigned_mix(a, b):
    ct.store(a, (0,), ct.load(a, (0,), (16,)) + ct.load(b, (0,), (16,)))  # E21


@ct.kernel
def return_in_loop(x, n):
    for i in range(n):
        return  # E22


@ct.kernel
def break_in_static_iter(x):
    for i in ct.static_iter((1, 2)):
        break  # E23


@ct.kernel
def for_over_tuple(x):
    for v in (1, 2, 3):  # E24
        pass


@ct.kernel
def branch_type_differs(x, y, n):
    t = ct.load(x, (0,), (16,))
    if n > 0:  # (cuTile's rule: no error here, t may be unused)
        t = t.astype(ct.float16)
    else:
        t = t * 2
    ct.store(y, (0,), t)  # E25


@ct.kernel
def tile_item_assignment(x):
    t = ct.load(x, (0,), (16,))
    t[0] = 1.0  # E26


@ct.kernel
def gather_index_count(x):
    i = ct.arange(16, dtype=ct.int32)
    v = ct.gather(x, (i, i))  # E27


@ct.kernel
def atomic_on_float(x):
    old = ct.atomic_and(x, ct.arange(16, dtype=ct.int32), 1)  # E28


@ct.kernel
def cat_mismatch(x):
    t = ct.load(x, (0,), (16,))
    u = ct.cat((t, ct.extract(t, (0,), (8,))), 0)  # E29


@ct.kernel
def for_else(x):
    for i in range(4):  # E30
        pass
    else:
        pass


@ct.kernel
def printf_arg_count(x):
    t = ct.load(x, (0,), (16,))
    ct.printf("%d %f\n", ct.sum(t))  # E31


@ct.kernel
def plain_raise(x):
    raise ValueError("not allowed")  # E32


@ct.kernel
def static_exception_raised(x, MODE: ct.Constant[int]):
    if MODE != 1:
        raise ct.static_exception(ValueError(f"unsupported mode {MODE}"))  # E33


def _half_returns(t, n):
    if n > 0:  # E34
        return t
    u = t + 1


@ct.kernel
def helper_returns_on_one_path(x, n):
    v = _half_returns(ct.load(x, (0,), (16,)), n)  # E34-call


@ct.kernel
def mma_dtype_mismatch(a, b):
    acc = ct.mma(ct.load(a, (0, 0), (16, 16)), ct.load(b, (0, 0), (16, 16)), ct.zeros((16, 16), ct.float32))  # E35


@ct.kernel
def arange_not_pow2(x):
    r = ct.arange(10, dtype=ct.int32)  # E36


@ct.kernel
def reshape_numel(x):
    t = ct.load(x, (0,), (16,)).reshape((8, 4))  # E37


@ct.kernel
def used_after_loop(x, n):
    for i in range(n):
        t = ct.load(x, (i,), (16,))
    ct.store(x, (0,), t)  # E38


@ct.kernel
def while_tile_condition(x):
    t = ct.load(x, (0,), (16,))
    while t < 10.0:  # E39
        t = t + 1.0


@ct.kernel
def combiner_wrong_result(x):
    t = ct.load(x, (0,), (16,))
    s = ct.reduce(t, 0, lambda a, b: ct.full((2,), 0.0, ct.float32), 0.0)  # E40


def _branching_max(a, b):
    if ct.bid(0) == 0:  # E41
        return ct.maximum(a, b)
    return a + b


@ct.kernel
def combiner_branches(x):
    t = ct.load(x, (0,), (16,))
    ct.store(x, (0,), ct.reduce(t, 0, _branching_max, 0.0).reshape((1,)))


@ct.kernel
def scan_combiner_loops(x):
    def f(a, b):
        for i in range(2):  # E42
            a = a + b
        return a
    ct.store(x, (0,), ct.scan(ct.load(x, (0,), (16,)), 0, f, 0.0))


@ct.kernel
def combiner_prints(x):
    def f(a, b):
        ct.printf("%f", a)  # E43
        return a + b
    ct.store(x, (0,), ct.cumsum(ct.load(x, (0,), (16,))) + ct.reduce(ct.load(x, (0,), (16,)), 0, f, 0.0))


@ct.kernel
def nested_scan(x):
    def f(a, b):
        return a + ct.sum(ct.full((2,), 1.0, ct.float32))  # E44
    ct.store(x, (0,), ct.scan(ct.load(x, (0,), (16,)), 0, f, 0.0))


@ct.kernel
def combiner_reads_tile_part(x):
    t = ct.load(x, (0,), (16,))
    s = ct.reduce(t, 0, lambda a, b: a + b * ct.extract(t, (0,), (1,)).reshape(()), 0.0)  # E46
    ct.store(x, (0,), s.reshape((1,)))


class _Color(enum.Enum):
    RED = 1
    GREEN = 2


@ct.kernel
def enum_ordering(x):
    if _Color.RED < _Color.GREEN:  # E45
        ct.store(x, (0,), ct.zeros((16,), ct.float32))


F16M = np.zeros((16, 16), np.float16)
F32M = np.zeros((16, 16), np.float32)

CASES = [
    (non_pow2_shape, (F32, F32), ct.TileTypeError, "E1", "(1, 100)", "power of two"),
    (undefined_name, (V32,), ct.TileSyntaxError, "E2", "scale", "name 'scale' is not defined"),
    (unsupported_try, (V32,), ct.TileSyntaxError, "E3", "try:", "try/except is not supported"),
    (wrong_index_count, (F32,), ct.TileTypeError, "E4", "(16,)", "2 dimensions|has 1 dimensions|but the array has 2"),
    (store_narrowing, (V32, V16), ct.TileTypeError, "E5", "ct.load(x, (0,), (16,))", "cannot be implicitly cast"),
    (incompatible_dtypes, (V16, V16, V16), ct.TileTypeError, "E6", "ct.load(a, (0,), (16,)) + ct.load(b, (0,), (16,)).astype(ct.bfloat16)", "promotion of float16 and bfloat16"),
    (mma_rank, (V16, V32), ct.TileTypeError, "E7", "ct.mma(t, t, ct.zeros((16,), ct.float32))", "to be 2D or 3D"),
    (nonconstant_shape, (V32, 16), ct.TileTypeError, "E8", "(n,)", "compile-time constant"),
    (tile_condition, (V32,), ct.TileTypeError, "E9", "t > 0", "must be a scalar"),
    (list_literal, (V32,), ct.TileSyntaxError, "E10", "[16]", "list literal"),
    (recursion, (V32,), ct.TileUnsupportedFeatureError, "E11", "_recurse(v)",
     "Maximum recursion depth"),
    (loop_type_change, (V32, V16), ct.TileTypeError, "E12", "acc + ct.load(x, (i,), (16,))", "changes in the loop"),
    (maybe_undefined, (V32, 1), ct.TileTypeError, "E13", "t", "Type of `t` depends on path "
                                                                   "taken: variable 't' is not "
                                                                   "defined on every path"),
    (store_wrong_rank, (F32,), ct.TileTypeError, "E14", "ct.load(x, (0, 0), (1, 16)).reshape((16,))", "rank"),
    (with_statement, (V32,), ct.TileTypeError, "E15", "x", "@contextlib.contextmanager function"),
    (combiner_captures_array, (V32, V32), ct.TileSyntaxError, "E16", "weights", "cannot use 'weights'"),
    (too_many_indices, (V32,), ct.TileTypeError, "E17", "t[:, :]", "too many indices"),
    (constant_out_of_range, (I8,), ct.TileValueError, "E18", "t + 1000", "out of range of int8"),
    (static_assertion, (V32,), ct.TileStaticAssertionError, "E19", "ct.static_assert", "expected 32 elements, got 16"),
    (bitcast_width, (V32,), ct.TileTypeError, "E20", "ct.bitcast(t, ct.float16)", "same bit width"),
    (signed_unsigned_mix, (I32, U32), ct.TileTypeError, "E21", "ct.load(a, (0,), (16,)) + ct.load(b, (0,), (16,))", "int32 and uint32"),
    (return_in_loop, (V32, 4), ct.TileSyntaxError, "E22", "return", "Returning from a for loop"),
    (break_in_static_iter, (V32,), ct.TileSyntaxError, "E23", "break", "static_iter"),
    (for_over_tuple, (V32,), ct.TileTypeError, "E24", "(1, 2, 3)", "range"),
    (branch_type_differs, (V32, V32, 1), ct.TileTypeError, "E25", "t)", "depends on path taken"),
    (tile_item_assignment, (V32,), ct.TileTypeError, "E26", "t[0]", "immutable"),
    (gather_index_count, (V32,), ct.TileTypeError, "E27", "(i, i)", "2 index tile"),
    (atomic_on_float, (V32,), ct.TileTypeError, "E28", "ct.atomic_and", "float32"),
    (cat_mismatch, (V32,), ct.TileTypeError, "E29", "ct.cat", "same shape"),
    (for_else, (V32,), ct.TileSyntaxError, "E30", "for", "for ... else"),
    (printf_arg_count, (V32,), ct.TileTypeError, "E31", "ct.printf", "2 conversion"),
    (plain_raise, (V32,), ct.TileSyntaxError, "E32", "raise", "static_exception"),
    (static_exception_raised, (V32, 2), ct.StaticException, "E33", "raise", "unsupported mode 2"),
    (helper_returns_on_one_path, (V32, 1), ct.TileTypeError, "E34", "if", "returns a value on some paths"),
    (mma_dtype_mismatch, (F16M, F32M), ct.TileTypeError, "E35", "ct.mma", "same dtype"),
    (arange_not_pow2, (V32,), ct.TileTypeError, "E36", "10", "power of two"),
    (reshape_numel, (V32,), ct.TileValueError, "E37", "(8, 4)", "cannot reshape"),
    (used_after_loop, (V32, 2), ct.TileTypeError, "E38", "t", "only inside a loop"),
    (while_tile_condition, (V32,), ct.TileTypeError, "E39", "t < 10.0", "must be a scalar"),
    (combiner_wrong_result, (V32,), ct.TileTypeError, "E40", "ct.full((2,), 0.0, ct.float32)", "must return 0-d tiles"),
    (combiner_branches, (V32,), ct.TileSyntaxError, "E41", "if", "Branching inside reduction body is not supported"),
    (scan_combiner_loops, (V32,), ct.TileSyntaxError, "E42", "for", "Loops inside scan body are not supported"),
    (combiner_prints, (V32,), ct.TileSyntaxError, "E43", 'ct.printf("%f", a)', "memory effects are not supported inside reduction body"),
    (nested_scan, (V32,), ct.TileSyntaxError, "E44", "ct.sum", "Nested scan/reduction is not supported"),
    (enum_ordering, (V32,), ct.TileTypeError, "E45", "_Color.RED < _Color.GREEN", "'<' not supported between instances of '_Color'"),
    (combiner_reads_tile_part, (V32,), ct.TileTypeError, "E46", "ct.extract(t, (0,), (1,))", "computes on 0-d tiles only \\(got 'extract'"),
]


@pytest.mark.parametrize("kernel,args,exc,marker,snippet,message", CASES,
                         ids=[c[3] for c in CASES])
def test_located_error(kernel, args, exc, marker, snippet, message):
    with pytest.raises(exc, match=message) as info:
        kernel.mlir(*args)
    assert_located(info.value, marker, snippet, HERE)


@pytest.mark.parametrize("kernel,args,exc,marker,snippet,message", CASES,
                         ids=[c[3] for c in CASES])
@pytest.mark.parametrize("entry", ["mlir", "launch"])
def test_errors_show_no_compiler_frames(kernel, args, exc, marker, snippet, message, entry):
    with pytest.raises(exc) as info:
        if entry == "mlir":
            kernel.mlir(*args)
        else:
            ct.launch(None, (1,), kernel, args)
    frames = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    internal = [f for f in frames if f.startswith(PACKAGE)]      # wherever the clone lives
    # the traceback ends at the user's call (for_user + a bare raise); Python 3.10 re-raises
    # the traceback it caught, cut to the public entry point's frame (kernel.mlir, launch)
    if sys.version_info >= (3, 11):
        assert not internal and frames[-1] == HERE, frames
    else:
        assert len(internal) <= 1, frames
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_error_shows_a_call_stack_only_in_helpers():
    with pytest.raises(ct.TileTypeError) as info:
        non_pow2_shape.mlir(F32, F32)
    assert ' File "' not in str(info.value) and not info.value.calls


def test_error_in_helper_shows_the_call_stack():
    """cuTile's (and Python's) traceback: each call from the kernel down, its line and carets,
    right after the message; then tilepy's location of the error itself."""
    with pytest.raises(ct.TileUnsupportedFeatureError) as info:
        recursion.mlir(V32)
    call = "_recurse(ct.load(x, (0,), (16,)))"
    line, col = marker_loc(HERE, "E11-call", call)
    inner, inner_col = marker_loc(HERE, "E11", "_recurse(v)")
    text = str(info.value).splitlines()
    assert text[1] == f'  File "{HERE}", line {line}, col {col + 1}, in recursion:', text
    with open(HERE) as f:
        source = f.read().splitlines()
    assert text[2] == "    " + source[line - 1]
    assert text[3] == " " * (4 + col) + "^" * len(call)
    assert text[4] == f'  File "{HERE}", line {inner}, col {inner_col + 1}, in _recurse:', text
    assert text[7] == f"  --> {HERE}:{inner}:{inner_col + 1}"


def test_exec_built_kernels_get_a_clear_error():
    ns = {"ct": ct}
    exec("@ct.kernel\ndef k(x):\n    pass\n", ns)
    with pytest.raises(ct.TileSyntaxError, match="exec"):
        ns["k"].mlir(V32)


def test_a_builtin_called_from_host_code_is_cuTiles_runtime_error():
    """cuTile raises a RuntimeError; tilepy's error is one too (and a TileSyntaxError)."""
    def helper(x):
        return ct.bid(0)
    with pytest.raises(RuntimeError, match="Device functions can only be called from device "
                                           "code: tilepy.bid()") as info:
        helper(np.zeros(4))
    assert isinstance(info.value, ct.TileSyntaxError)
