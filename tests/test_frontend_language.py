"""The Python subset of the kernel language and what it becomes in Tile IR (FileCheck), plus
specialization, the recompile log, source retrieval and the promotion table."""
import contextlib
import dataclasses
import functools
import linecache
import pathlib
import re

import numpy as np
import pytest

import tilepy as ct
from tilepy.frontend.promotion import promote

V32 = np.zeros(64, np.float32)
V16 = np.zeros(64, np.float16)

SCALE = 3.0                  # module constants are compile-time values
AXES = (1, 0)


# ------------------------------------------------------------------------------- loops
def test_while_with_break_and_continue_is_a_loop(check):
    @ct.kernel
    def k(x, y, n):
        i = 0
        acc = ct.zeros((16,), ct.float32)
        while i < n:
            t = ct.load(x, (i,), (16,))
            i += 1
            if ct.max(t) > 10.0:
                break
            if i % 2 == 0:
                continue
            acc = acc + t
        ct.store(y, (0,), acc)
    check(k.mlir(V32, V32, 4), """
# CHECK: %i{{.*}}:3 = loop iter_values(%i{{.*}} = %{{.*}}, %acc{{.*}} = %acc, %{{.*}} = %{{.*}}) : tile<i32>, tile<16xf32>, token -> tile<i32>, tile<16xf32>, token {
# CHECK: cmpi less_than %i{{.*}}, %n, signed
# CHECK: xori
# CHECK: if %{{.*}} {
# CHECK-NEXT: break %i{{.*}}, %acc{{.*}}, %{{.*}} : tile<i32>, tile<16xf32>, token
# CHECK: load_view_tko
# CHECK: %i_[[N:[0-9]+]] = addi
# CHECK: cmpf greater_than ordered
# CHECK: if %{{.*}} {
# CHECK-NEXT: break %i_[[N]], %acc
# CHECK: if %{{.*}} {
# CHECK-NEXT: continue %i_[[N]], %acc
# CHECK: %acc_{{[0-9]+}} = addf
# CHECK: continue %i_[[N]], %acc_{{[0-9]+}}
# CHECK: store_view_tko weak %i{{.*}}#1
""")


def test_for_with_continue_stays_a_for_and_break_makes_a_loop(check):
    @ct.kernel
    def cont(x, y, n):
        acc = ct.zeros((16,), ct.float32)
        for i in range(n):
            if i == 2:
                continue
            acc = acc + ct.load(x, (i,), (16,))
        ct.store(y, (0,), acc)

    @ct.kernel
    def brk(x, y, n):
        acc = ct.zeros((16,), ct.float32)
        for i in range(1, n, 2):
            if i > 5:
                break
            acc = acc + ct.load(x, (i,), (16,))
        ct.store(y, (0,), acc)
    check(cont.mlir(V32, V32, 4), """
# CHECK: = for %i in
# CHECK: if %{{.*}} {
# CHECK-NEXT: continue %acc
# CHECK: continue %acc
""")
    check(brk.mlir(V32, V32, 4), """
# CHECK: loop iter_values(%i = %{{.*}}, %acc{{.*}} = %acc
# CHECK: cmpi less_than %i, %n, signed
# CHECK: break %i, %acc
# CHECK: break %i, %acc
# CHECK: %[[NEXT:.*]] = addi %i, %{{.*}} : tile<i32>
# CHECK: continue %[[NEXT]], %acc
""")


def test_loop_carried_number_widens_to_the_tile_type(check):
    @ct.kernel
    def k(x, y, n):
        s = 0
        for i in range(n):
            s = s + ct.sum(ct.load(x, (i,), (16,)))
        ct.store(y, (0,), ct.full((16,), s, ct.float32))
    check(k.mlir(V32, V32, 4), """
# CHECK: constant <f32: 0.000000e+00> : tile<f32>
# CHECK: %s{{.*}}:2 = for %i in {{.*}} iter_values(%s{{.*}} = %{{.*}}, {{.*}}) -> (tile<f32>, token)
""")


def test_static_iter_unrolls_and_builds_tuples(check):
    @ct.kernel
    def k(x, y):
        t = ct.load(x, (0,), (16,))
        parts = ()
        for s in ct.static_iter((1.0, 2.0, 4.0)):
            parts += (t * s,)
        a, b, *rest = parts
        ct.store(y, (0,), a + b + rest[0])
    text = k.mlir(V32, V32)
    assert text.count("mulf") == 3 and " for " not in text and "loop" not in text


def test_tuple_comprehensions_unroll_with_python_scoping():
    """tuple(... for x in static_iter(...)): several generators, unpacking targets, constant
    ifs, an inner iterable reading an earlier target, targets that do not leak (not even out of
    a loop body), and lambdas closing over the comprehension's scope (late binding)."""
    @ct.kernel
    def k(y):
        i = 7
        pairs = tuple((a, b) for a in ct.static_iter(range(3)) if a != 1
                      for b in ct.static_iter(range(a)))          # (2, 0), (2, 1)
        fns = tuple(lambda: i for i in ct.static_iter(range(3)))
        for r in range(2):
            sq = tuple(i * i for i in ct.static_iter(range(3)))
            ct.scatter(y, 3 + r, sq[2] + r)
        vals = tuple(a * 10 + b for a, b in ct.static_iter(pairs)) + (fns[0](), i)
        for n, v in ct.static_iter(enumerate(vals)):
            ct.scatter(y, n if n < 3 else 5, v)
    y = np.zeros(6, np.int32)
    ct.launch(None, (1,), k, (y,), backend="interpret")
    assert y.tolist() == [20, 21, 2, 4, 5, 7]


def _comprehension_misuses():
    def not_static(y):
        t = tuple(i for i in range(3))

    def runtime_if(y):
        n = ct.bid(0)
        t = tuple(i for i in ct.static_iter(range(3)) if i < n)

    def later_target(y):
        t = tuple(i for i in ct.static_iter(range(3)) for j in ct.static_iter(range(n))
                  for n in ct.static_iter(range(2)))

    def walrus(y):
        t = tuple(j for i in ct.static_iter(range(3)) if (j := i) > 1)
    S = ct.TileSyntaxError
    return [(not_static, S, "must be wrapped in ct.static_iter()"),
            (runtime_if, ct.TileTypeError, "if-conditions must be statically known"),
            (later_target, S, "Undefined variable n used"),
            (walrus, S, "Unsupported syntax: an assignment expression (:=)")]


def _refused_in_body(fn, error, phrase, lines: int) -> int:
    """Trace `fn` as a kernel: `error` with `phrase`, located within the first `lines` lines of
    its body; returns that line's offset from the `def`."""
    with pytest.raises(error, match=re.escape(phrase)) as info:
        ct.kernel(fn).mlir(V32)
    assert info.value.loc is not None
    offset = info.value.loc.line - fn.__code__.co_firstlineno
    assert 0 < offset <= lines
    return offset


@pytest.mark.parametrize("fn, error, phrase", _comprehension_misuses(),
                         ids=lambda v: getattr(v, "__name__", ""))
def test_tuple_comprehension_misuse_names_the_rule_at_the_line(fn, error, phrase):
    _refused_in_body(fn, error, phrase, 3)


def test_bool_tiles_reduce_and_scan_as_int32():
    """cuTile's rule: sum/prod/max/min/cumsum of a bool tile count in int32."""
    @ct.kernel
    def k(x, y):
        b = ct.load(x, (0,), (8,)) > 0
        ct.scatter(y, 0, ct.sum(b))
        ct.scatter(y, 1, ct.max(b))
        ct.store(y, (1,), ct.cumsum(b, 0).reshape((1, 8)).reshape((8,)))
    x = np.array([1, 0, 1, 1, 0, 0, 1, 0], np.float32)
    y = np.zeros(16, np.int32)
    ct.launch(None, (1,), k, (x, y), backend="interpret")
    assert y[:2].tolist() == [4, 1] and y[8:].tolist() == np.cumsum(x > 0).tolist()


def test_a_variable_of_two_types_is_an_error_only_where_it_is_read():
    """cuTile's rule: after an `if` whose branches give `t` two types, `t` is undefined; only
    reading it is the type error (at the read), in a loop's body too."""
    @ct.kernel
    def unused(x, y):
        for i in range(2):
            if ct.bid(0) == 0:
                t = ct.gather(x, i)
                ct.scatter(x, i, t + 1)
            else:
                t = ct.gather(y, i)
                ct.scatter(y, i, t + 3.0)
    x, y = np.array([10, 20], np.int32), np.array([10.0, 20.0], np.float32)
    ct.launch(None, (2,), unused, (x, y), backend="interpret")
    assert x.tolist() == [11, 21] and y.tolist() == [13.0, 23.0]

    def read(x):
        if ct.bid(0) == 0:
            a = 1
        else:
            a = 2.0
        ct.store(x, (0,), a)
    assert _refused_in_body(read, ct.TileTypeError, "Type of `a` depends on path taken: float32 "
                            "(the `else` branch) vs. int32 (the `if` branch); variable 'a' has "
                            "another type on each path through the `if` at line", 5) == 5


def test_an_integer_constant_past_every_integer_type_is_cuTiles_value_error():
    def too_big(x):
        t = 18446744073709551616        # 2**64: no int64, no uint64
        for i in range(2):
            t += 1
        ct.scatter(x, 0, t)
    _refused_in_body(too_big, ct.TileValueError,
                     "Integer constant 18446744073709551616 is out of range of any supported "
                     "integer type", 3)


NP_SCALAR = np.int16(4)


def test_a_numpy_scalars_dtype_is_a_tilepy_dtype():
    """cuTile types a numpy scalar as its dtype: in a kernel its `.dtype` is tilepy's."""
    @ct.kernel
    def k(x):
        d = NP_SCALAR.dtype
        ct.static_assert(d == ct.int16)
        ct.store(x, (0,), ct.full((16,), 1, dtype=d).astype(ct.float32))
    k.mlir(V32)


def _bool_arithmetic(op):
    def fn(x):
        b = ct.load(x, (0,), (16,)) > 0
        op(b, b)
    fn.__name__ = op.__name__
    return fn


@pytest.mark.parametrize("op", [ct.add, ct.sub, ct.mul, ct.maximum, ct.minimum],
                         ids=lambda op: op.__name__)
def test_bool_tile_arithmetic_is_cuTiles_type_error(op):
    """i1 arithmetic would wrap (True + True is False): cuTile refuses it; bitwise ops take
    bools, and bool with int promotes to the int."""
    _refused_in_body(_bool_arithmetic(op), ct.TileTypeError,
                     f"Binary arithmetic op `{op.__name__}` does not support bool", 3)

    def mixed(x):
        b = ct.load(x, (0,), (16,)) > 0
        ct.store(x, (0,), ((b | b) + ct.int32(1)).astype(ct.float32))
    ct.kernel(mixed).mlir(V32)


def _builtin_misuses():
    def zero_extent(x):
        ct.full((0, 4), 1, dtype=ct.int32)

    def load_rank(x):
        ct.load(x, (0,), shape=(2, 2))

    def runtime_keepdims(x):
        ct.sum(ct.load(x, (0,), (16,)), 0, keepdims=ct.bid(0) == 0)

    def runtime_format(x):
        ct.printf(ct.load(x, (0,), (16,)))

    def string_dtype(x):
        ct.full((4,), 1, dtype="foo")

    def string_fill(x):
        ct.full((4,), "foo", dtype=ct.int32)

    def order_letter(x):
        ct.load(x, (0,), shape=(16,), order="A")

    def order_axis(x):
        ct.load(x, (0,), shape=(16,), order=(3,))

    def view_index(x):
        x.tiled_view((16,)).load((0, 0))

    def tile_repr(x):
        ct.print(f"{ct.load(x, (0,), (16,))!r}")

    def shape_spec(x):
        ct.print(f"{x.shape:10}")

    def int_mask(x):
        ct.gather(x, ct.arange(16, dtype=ct.int32), mask=ct.arange(16, dtype=ct.int32))

    def short_mask(x):
        ct.gather(x, ct.arange(16, dtype=ct.int32), mask=ct.arange(4, dtype=ct.int32) > 0)

    def fp8_sum(x):
        ct.sum(ct.load(x, (0,), (16,)).astype(ct.float8_e4m3fn))

    def repeated_axis(x):
        ct.sum(ct.load(x, (0,), (16,)).reshape((4, 4)), axis=(1, 1))

    def printing_body(x):
        def f(a, b):
            ct.printf("%f", a)
            return a + b
        ct.reduce(ct.load(x, (0,), (16,)), 0, f, 0)

    def nested_scan(x):
        def f(a, b):
            return a + ct.sum(ct.full((2,), 1.0, ct.float32))
        ct.scan(ct.load(x, (0,), (16,)), 0, f, 0.0)

    def axis_none(x):
        ct.scan(ct.load(x, (0,), (16,)), None, lambda a, b: a + b, 0.0)

    def cat_three(x):
        t = ct.load(x, (0,), (4,))
        ct.cat((t, t, t), 0)

    def cat_dtypes(x):
        t = ct.load(x, (0,), (4,))
        ct.cat((t, t.astype(ct.float16)), 0)

    def cat_extents(x):
        ct.cat((ct.load(x, (0,), (4,)), ct.load(x, (0,), (8,))), 0)

    def cat_axis(x):
        t = ct.load(x, (0,), (4,))
        ct.cat((t, t), 1)
    def weak_atomic(x):
        ct.atomic_add(x, 0, 1.0, memory_order=ct.MemoryOrder.WEAK)

    def unscoped_cas(x):
        x.get_raw_memory().atomic_cas_offset(0, 1.0, 2.0, memory_scope=ct.MemoryScope.NONE)

    def bitwise_cast(x):
        y = x.get_raw_memory()
        y.atomic_xor_offset(0, ct.bid(0).astype(ct.int64))

    def transpose_1d(x):
        ct.transpose(ct.load(x, (0,), (16,)))

    def one_axis(x):
        ct.transpose(ct.load(x, (0,), (16,)).reshape((4, 4)), axis0=0)

    def default_axes_3d(x):
        ct.transpose(ct.load(x, (0,), (16,)).reshape((2, 2, 4)))

    def item_of_two(x):
        ct.load(x, (0,), (2,)).item()

    def float_range(x):
        n = ct.load(x, (0,), (16,)).sum()
        for i in range(n):
            pass

    def release_load(x):
        ct.load(x, (0,), (16,), memory_order=ct.MemoryOrder.RELEASE)

    def repeated_order(x):
        ct.load(x, (0,), (16,), order=(0, 0))

    def slice_negative(x):
        x.slice(axis=0, start=-1, stop=5)

    def slice_axis(x):
        x.slice(axis=1, start=0, stop=5)

    def tile_item(x):
        ct.load(x, (0,), (4,))[::2]

    def bitwise_on_float(x):
        ct.atomic_xor(x, 0, ct.bfloat16(1))

    def counting_down(x):
        for i in range(4, 0, -2):
            ct.scatter(x, i, 1.0)

    def slice_unsigned(x):
        x.slice(axis=0, start=ct.bid(0).astype(ct.uint32), stop=5)

    def e8m0_negative(x):
        ct.full((2,), -1.0, ct.float8_e8m0fnu)

    def offset_shape(x):
        x.get_raw_memory().store_offset(ct.arange(4, dtype=ct.int32), ct.zeros((8,), ct.float32))

    def unpack_int32(x):
        ct.unpack_from_bytes(ct.arange(4, dtype=ct.int32), ct.int32)

    def unpack_2d(x):
        ct.unpack_from_bytes(ct.zeros((4, 4), ct.uint8), ct.int32)

    def pack_bool(x):
        ct.pack_to_bytes(ct.zeros((8,), ct.bool_))

    def unpack_bool(x):
        ct.unpack_from_bytes(ct.zeros((4,), ct.uint8), ct.bool_)

    def tanh_approx_f16(x):
        ct.tanh(ct.zeros((4,), ct.float16), rounding_mode=ct.RoundingMode.APPROX)

    def runtime_shape(x):
        ct.full((ct.bid(0) + 1,), 1.0, ct.float32)

    def dtype_of_tuple(x):
        ct.full((16,), np.float32((1, 2, 3)), ct.float32)

    def dtype_of_word(x):
        ct.full((16,), ct.float32("much"), ct.float32)

    def two_minus_ones(x):
        ct.reshape(ct.zeros((16,), ct.float32), (-1, -1))

    def divmod_floats(x):
        divmod(ct.load(x, (0,), (16,)), 2)

    def fast_acc_f16(x):
        t = ct.zeros((16, 16), ct.float16)
        ct.mma(t, t, ct.zeros((16, 16), ct.float32), use_fast_acc=True)
    T, S = ct.TileTypeError, ct.TileSyntaxError
    return [(weak_atomic, T, "Invalid memory order for tile_atomic_rmw. Got MemoryOrder.WEAK"),
            (unscoped_cas, T, "tile_atomic_cas with ACQ_REL memory ordering requires a memory "
                              "scope"),
            (bitwise_cast, T, "atomic_xor_offset(): Unsupported array dtype: float32"),
            (offset_shape, T, "the value's shape (8,) is not broadcastable to the offset's shape "
                              "(4,)"),
            (transpose_1d, T, "Cannot transpose a tile with fewer than 2 dimensions"),
            (one_axis, T, "transpose axes must either both be specified or both be None"),
            (default_axes_3d, T, "`axes` must be specified for tile with more than 2 dimensions"),
            (item_of_two, T, "Cannot reshape (2,) to ()"),
            (float_range, T, "Expected a signed integer"),
            (release_load, T, "Invalid memory order for tile_load. Got MemoryOrder.RELEASE"),
            (repeated_order, T, "Axis order must be a permutation, but axis 0 is used at least "
                                "twice"),
            (slice_negative, T, "Slice start must be non-negative (got -1)"),
            (slice_axis, T, "Axis 1 is out of range for rank 1'"),
            (tile_item, T, "Directly indexing a tile is not supported"),
            (counting_down, T, "range(): Step must be positive, got -2"),
            (bitwise_on_float, T, "atomic_xor(): Unsupported array dtype: float32"),
            (slice_unsigned, T, "Expected a signed integer scalar"),
            (e8m0_negative, ct.TileValueError, "Negative values cannot be represented in an "
                                               "unsigned float format (float8_e8m0fnu"),
            (fp8_sum, T, "Non-arithmetic dtype float8_e4m3fn is unsupported for reduction"),
            (repeated_axis, T, "Repeated reduction axis 1"),
            (printing_body, S, "Operations with memory effects are not supported inside "
                               "reduction body"),
            (nested_scan, S, "Nested scan/reduction is not supported"),
            (axis_none, T, "Expected an integer constant, but given value has type None"),
            (cat_three, T, "cat() supports at most 2 tiles, got 3"),
            (cat_dtypes, T, "Expected tiles to have the same dtype: float32 != float16"),
            (cat_extents, T, "Result tile shape must be power of 2, got (12,)"),
            (cat_axis, T, "axis 1 is out of range for tiles of rank 1"),
            (unpack_int32, T, "unpack_from_bytes requires uint8 tile (got int32)"),
            (unpack_2d, T, "unpack_from_bytes requires a 1D tile (got shape (4, 4))"),
            (pack_bool, T, "pack_to_bytes from a bool_ tile is not supported"),
            (unpack_bool, T, "unpack_from_bytes to a bool_ tile is not supported"),
            (tanh_approx_f16, T, "Rounding mode approx can only be used for float32 type"),
            (runtime_shape, T, 'Invalid argument "shape" of full(): Expected a constant integer '
                               'tuple, but given value is not constant: full() shape must be a '
                               'compile-time constant tuple of ints (element 0 is a runtime tile)'),
            (divmod_floats, T, "divmod() is not implemented for floating point values"),
            (dtype_of_tuple, T, "float32() takes a number or a tile (got tuple)"),
            (dtype_of_word, T, "float32() cannot read 'much' as a number"),
            (two_minus_ones, T, "reshape(): Only one dimension can be -1 (got (-1, -1))"),
            (fast_acc_f16, T, "use_fast_acc is only supported for fp8 input dtypes (float8_e4m3fn, "
                              "float8_e5m2), got float16"),
            (int_mask, T, "gather(): mask must be a boolean tile"),
            (zero_extent, T, 'Invalid argument "shape" of full(): Dimension #0 of shape (0, 4) '
                             'is not positive'),
            (load_rank, T, 'Invalid argument "shape" of load(): Expected shape length to be 1, '
                           'got 2'),
            (view_index, T, "load(): Index size 2 does not match the tiled view rank 1"),
            (runtime_keepdims, T, 'Invalid argument "keepdims" of sum(): Expected a boolean '
                                  'constant, but given value is not constant'),
            (runtime_format, T, 'Invalid argument "format" of printf(): Expected a string '
                                'constant, but given value is not constant'),
            (string_fill, T, 'Invalid argument "fill_value" of full(): Expected a scalar'),
            (string_dtype, T, 'Invalid argument "dtype" of full(): Expected a dtype constant: '
                              'full() dtype must be a dtype such as'),
            (order_letter, T, "Invalid argument \"order\" of load(): Expected 'C' or 'F', "
                              "got 'A'"),
            (order_axis, T, 'Invalid argument "order" of load(): Axis 3 is out of range for '
                            'rank 1'),
            (tile_repr, S, "f-string conversions (!r, !s, !a) are not supported for tile"),
            (shape_spec, T, "cannot apply format spec to a value of type tuple"),
            (short_mask, T, "Custom mask shape (4,) is not broadcastable to the index shape "
                            "(16,)")]


@pytest.mark.parametrize("fn, error, phrase", _builtin_misuses(),
                         ids=lambda v: getattr(v, "__name__", ""))
def test_builtin_misuse_names_cutiles_rule_at_the_line(fn, error, phrase):
    """Reductions, cat, atomics, raw memory, slices, constants, byte packing: cuTile's class and
    key phrase."""
    _refused_in_body(fn, error, phrase, 4)


# ------------------------------------------------------------------------------- functions
def clipped(t, lo):
    if ct.min(t) < lo:
        return ct.maximum(t, lo)
    return t


def test_return_inside_runtime_if_of_a_helper_yields_the_value(check):
    @ct.kernel
    def k(x, y):
        ct.store(y, (0,), clipped(ct.load(x, (0,), (16,)), 0.0))
    check(k.mlir(V32, V32), """
# CHECK: %[[R:.*]] = if %{{.*}} -> (tile<16xf32>) {
# CHECK: maxf
# CHECK: yield
# CHECK: } else {
# CHECK: yield %{{[0-9]+}}
# CHECK: store_view_tko weak %[[R]]
""")


def test_conditional_expression_on_a_runtime_value_runs_only_its_taken_side(check):
    """`a if c else b` is an `if` (cuTile's and Python's rule), not a select of both: an atomic
    on the other side is not made; its sides must have one type."""
    @ct.kernel
    def k(x, n):
        old = ct.atomic_add(x, 0, 1) if ct.bid(0) < n else ct.int32(-1)
        ct.store(x, (1 + ct.bid(0),), old.reshape((1,)))
    check(k.mlir(np.zeros(8, np.int32), 2), """
# CHECK: %[[C:.*]] = cmpi less_than
# CHECK: if %[[C]] -> (tile<i32>, token) {
# CHECK: atomic_rmw_tko
# CHECK: } else {
# CHECK-NOT: atomic_rmw_tko
# CHECK: yield
""")
    x = np.zeros(8, np.int32)
    ct.launch(None, (4,), k, (x, 2), backend="interpret")
    assert x[0] == 2 and sorted(x[1:3]) == [0, 1] and list(x[3:5]) == [-1, -1]

    def mixed(x):
        t = ct.load(x, (0,), (16,))
        ct.store(x, (0,), ct.bid(0) > 0 if ct.bid(0) < 2 else t)

    def numbers(x):
        ct.store(x, (0,), ct.full((16,), 3 if ct.bid(0) < 2 else 5.0, ct.float32))

    def views(x):
        tv = x.tiled_view(8) if ct.bid(0) == 0 else x.tiled_view(4)
        tv.store(0, ct.zeros((8,), ct.float32))
    assert _refused_in_body(mixed, ct.TileTypeError, "depends on path taken: Tile[bool_,()] in "
                            "the `if` branch, Tile[float32,(16,)] in the `else` branch", 3) == 2
    _refused_in_body(numbers, ct.TileTypeError, "Type of the conditional expression's value "
                     "depends on path taken: int32 in the `if` branch, float32", 2)
    _refused_in_body(views, ct.TileTypeError, "depends on path taken: TiledView[float32,(8,)] in "
                                              "the `if` branch, TiledView[float32,(4,)]", 2)


def test_a_helper_returning_different_types_on_two_paths_is_refused():
    """cuTile's phrase; the call stack names each call from the kernel down to the `if`."""
    def helper():
        if ct.bid(0) == 0:
            return 3
        else:
            return 5.0

    def k(x):
        helper()
    with pytest.raises(ct.TileTypeError, match="Type of return value depends on path taken: "
                                               "int32 in the `if` branch, float32") as e:
        ct.kernel(k).mlir(V32)
    assert [c.function for c in e.value.calls] == ["k"] and e.value.loc.function == "helper"
    assert str(e.value).splitlines()[2].strip() == "helper()"


def test_carried_aggregates_keep_their_structure_and_errors_name_the_line():
    """Loops carry tuples, arrays and views as their leaves (cutile_kernels/control.py runs them):
    a change of structure across iterations, two closures of different defs meeting at an `if`,
    and a value returned inside a `while` whose condition can end it are type errors at their
    lines; a return inside a `for` stays cuTile's syntax error."""
    def tuple_grows(x):
        t = (ct.load(x, (0,), (16,)),)
        for i in range(ct.bid(0)):
            t = t + (ct.load(x, (0,), (16,)),)
        ct.store(x, (0,), t[0])

    def view_of_another_shape(x):
        tv = x.tiled_view(16)
        for i in range(ct.bid(0)):
            tv = x.tiled_view(8)
        ct.store(x, (0,), tv.load(0))

    def two_defs(x):
        if ct.bid(0) == 0:
            f = lambda v: v + 1          # noqa: E731
        else:
            f = lambda v: v + 2          # noqa: E731
        ct.store(x, (0,), f(ct.load(x, (0,), (16,))))

    def returns_in_a_for(x):
        for i in range(ct.bid(0)):
            return
    _refused_in_body(tuple_grows, ct.TileTypeError, "the type of 't' changes in the loop: a "
                     "tuple of length 1 before the loop, a tuple of length 2", 4)
    _refused_in_body(view_of_another_shape, ct.TileTypeError, "the type of 'tv' changes in the "
                     "loop: TiledView[float32,(16,)] before the loop, TiledView[float32,(8,)]", 4)
    _refused_in_body(two_defs, ct.TileTypeError, "(the `if` branch); variable 'f' has another "
                     "type on each path through the `if` at line", 5)
    _refused_in_body(returns_in_a_for, ct.TileSyntaxError, "Returning from a for loop", 3)


def test_strictly_typed_constants_fold_in_their_dtype(check):
    """cuTile: `n + ct.int16(2)` with a constant n is the int16 constant n + 2 (static_assert
    sees it); int16 arithmetic wraps as on the GPU; a run-time operand makes a run-time value."""
    @ct.kernel
    def k(x, m, N: ct.Constant[int]):
        t = N + ct.int16(2)
        ct.static_assert(t == N + 2)
        w = ct.int16(32767) + 1
        ct.static_assert(w == -32768)
        q = ct.int16(-7) // 2, ct.int16(-7) % 2
        ct.static_assert(q[0] == -4 and q[1] == 1)          # Python's floor rules
        h = ct.float16(0.1)
        ct.static_assert(h == 0.1)          # 0.1 rounds to float16 first, as the tile did
        r = m + ct.int16(2)
        ct.store(x, (0,), ct.full((16,), t + r, ct.float32))
    check(k.mlir(V32, 4, 5), """
# CHECK: %t = constant <i16: 7>
# CHECK: %w = constant <i16: -32768>
# CHECK: %h = constant <f16: 9.997550e-02>
# CHECK: %r = addi %m,
""")
    with pytest.raises(ct.TileStaticAssertionError):
        @ct.kernel
        def wrong(x, N: ct.Constant[int]):
            t = N + ct.int16(2)
            ct.static_assert(t == N)
        wrong.mlir(V32, 5)


def test_typed_constants_fold_through_division_shifts_and_math_functions(check):
    """cuTile folds these too: / in the float dtype (integers: float32), shifts as Python's
    wrapped to the dtype, math functions of the value rounded once into the dtype (an integer
    argument: float32), and -, abs, ~; a negative constant shift count is cuTile's
    TileValueError."""
    @ct.kernel
    def k(x):
        q, r = ct.float32(1) / 3, ct.int16(7) / ct.int16(2)
        ct.static_assert(q == np.float32(1 / 3) and r == 3.5)
        s = ct.int16(1) << 20, ct.int16(-8) >> 1, ct.uint8(200) >> 1, ct.uint8(200) << 1
        ct.static_assert(s[0] == 0 and s[1] == -4 and s[2] == 100 and s[3] == 144)
        e, h, f = ct.exp(ct.float32(1.0)), ct.sqrt(ct.int16(16)), ct.floor(ct.float16(2.5))
        ct.static_assert(e == np.float32(np.e) and h == 4.0 and f == 2)
        n = -ct.int16(-32768), abs(ct.int8(-5)), ~ct.uint8(1)
        ct.static_assert(n[0] == -32768 and n[1] == 5 and n[2] == 254)
        ct.store(x, (0,), ct.full((16,), ct.log(ct.bid(0) + ct.float32(0.0)) + h, ct.float32))
    check(k.mlir(V32), """
# CHECK: %q = constant <f32: 0.333333343>
# CHECK: %r = constant <f32: 3.500000e+00>
# CHECK: %e = constant <f32: 2.71828175>
# CHECK: %h = constant <f32: 4.000000e+00>
# CHECK: log
""")

    @ct.kernel
    def negative_count(x):
        ct.store(x, (0,), ct.full((16,), ct.int16(1) << -1, ct.float32))   # SHIFT
    with pytest.raises(ct.TileValueError, match="negative shift count -1") as e:
        negative_count.mlir(V32)
    assert e.value.loc.line == negative_count.__wrapped__.__code__.co_firstlineno + 2


@pytest.mark.parametrize("expr, error", [
    ("ct.int16(1) // ct.int16(0)", "ZeroDivisionError: integer division or modulo by zero"),
    ("ct.uint8(7) % 0", "ZeroDivisionError: integer modulo by zero"),
    ("ct.int16(3) / ct.int16(0)", "ZeroDivisionError: division by zero"),
    ("ct.float32(1) / 0.0", "ZeroDivisionError: float division by zero"),
    ("ct.float16(1) // 0", "ZeroDivisionError: float floor division by zero"),
    ("ct.log(ct.float32(0))", "ValueError: math domain error"),
    ("ct.sqrt(ct.int16(-1))", "ValueError: math domain error"),
    ("ct.rsqrt(ct.float32(0))", "ValueError: math domain error"),
    ("ct.exp(ct.float32(1000))", "OverflowError: math range error"),
    ("ct.log(0.0)", "ValueError: math domain error"),
    ("ct.truediv(1, 0)", "ZeroDivisionError: division by zero"),
])
def test_a_constant_without_a_finite_value_is_an_error_at_its_line(expr, error):
    """cuTile folds a constant expression in Python and raises where Python does: a zero divisor
    or a math function without a finite value there is a TileValueError at the user's line
    (cuTile's class for an overflow is TileInternalError)."""
    filename = f"<constant {expr}>"
    src = f"@ct.kernel\ndef k(x):\n    ct.store(x, (0,), ct.full((16,), {expr}, ct.float32))\n"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    try:
        ns = {"ct": ct}
        exec(compile(src, filename, "exec"), ns)
        with pytest.raises(ct.TileValueError, match=re.escape(error)) as e:
            ns["k"].mlir(V32)
        assert (e.value.loc.file, e.value.loc.line) == (filename, 3)
    finally:
        del linecache.cache[filename]


def test_an_op_with_a_rounding_mode_on_constants_runs_at_run_time(check):
    """Not folded (cuTile folds it ignoring the mode): the run time's value honours the mode."""
    @ct.kernel
    def k(x):
        one, tiny = ct.float32(1.0), ct.float32(2.0 ** -24 * 1.5)
        near, zero = one + tiny, ct.add(one, tiny, rounding_mode=ct.RoundingMode.RZ)
        ct.store(x, (0,), ct.full((16,), near, ct.float32))
        ct.store(x, (1,), ct.full((16,), zero, ct.float32))
    check(k.mlir(V32), """
# CHECK: %near = constant <f32: 1.00000012>
# CHECK: addf {{.*}} rounding<zero>
""")
    x = np.zeros(32, np.float32)
    ct.launch(None, (1,), k, (x,), backend="interpret")
    assert (x[:16] == np.float32(1 + 2.0 ** -23)).all() and (x[16:] == 1).all()


def test_float_floor_division_of_constants_is_the_run_times():
    """Not folded: Python's float // (cuTile's fold) is the exact quotient's floor, 9 here, the
    run time's the floor of the rounded quotient (1 / 0.1f rounds to 10.0f)."""
    @ct.kernel
    def k(x):
        ct.store(x, (0,), ct.full((16,), ct.float32(1) // ct.float32(0.1), ct.float32))
    x = np.zeros(16, np.float32)
    ct.launch(None, (1,), k, (x,), backend="interpret")
    assert (x == 10).all() and 1.0 // float(np.float32(0.1)) == 9


def test_a_number_every_way_out_of_a_loop_gives_stays_a_constant():
    """cuTile's rule: a variable that leaves a loop with one number on every path (each break of
    a `while True`, each iteration of a `for` and its zero-trip entry) is that constant after
    it (a tile shape here); two numbers, or a loop-carried value, make it a run-time value."""
    def one_number(x):
        a = 0
        while True:
            if ct.bid(0) == 0:
                a = 4
                break
            a += 1
            if ct.bid(0) > 2:
                a = 4
                break
        ct.store(x, (0,), ct.full((a,), 3.0, ct.float32))

    def same_in_a_for(x):
        a = 4
        for i in range(ct.bid(0)):
            a = 4
        ct.store(x, (0,), ct.full((a,), 3.0, ct.float32))

    def two_numbers(x):
        a = 0
        while True:
            if ct.bid(0) == 0:
                a = 4
                break
            a = 8
            break
        ct.store(x, (0,), ct.full((a,), 3.0, ct.float32))
    def defined_at_every_break(x):
        while True:
            if ct.bid(0) == 0:
                a = 4
                break
            a = 4
            break
        ct.store(x, (0,), ct.full((a,), 3.0, ct.float32))

    def same_dtype_again(x):
        dt = ct.float32
        for i in range(ct.bid(0)):
            dt = ct.float32
        ct.store(x, (0,), ct.full((4,), 3.0, dt))

    def another_dtype(x):
        dt = ct.float32
        for i in range(ct.bid(0)):
            dt = ct.float16
        ct.store(x, (0,), ct.full((4,), 3.0, dt))
    for ok in (one_number, same_in_a_for, defined_at_every_break, same_dtype_again):
        assert "tile<4xf32>" in ct.kernel(ok).mlir(V32)
    _refused_in_body(two_numbers, ct.TileTypeError, "Expected a constant integer tuple", 9)
    _refused_in_body(another_dtype, ct.TileTypeError, "Type of `dt` depends on path taken: "
                     "DType float16 after an iteration vs. DType float32 before the loop", 4)

    def another_string(x):
        s = "a"
        for i in range(ct.bid(0)):
            s = "b"
        ct.static_assert(s == "a")

    def strings_by_branch(x):
        s = "a" if ct.bid(0) == 0 else "b"
        ct.static_assert(s == "a")
    _refused_in_body(another_string, ct.TileTypeError, "Type of `s` depends on path taken: "
                     "str 'b' after an iteration vs. str 'a' before the loop", 4)
    _refused_in_body(strings_by_branch, ct.TileTypeError, "depends on path taken: str 'a' in "
                     "the `if` branch, str 'b' in the `else` branch", 2)


def test_an_array_chosen_by_a_runtime_if_is_the_taken_branchs():
    """cuTile's rule: a variable may name one array in one branch and another in the other (of
    one dtype and rank); after the `if` it is the taken branch's (a strided one too)."""
    @ct.kernel
    def k(x, y):
        if ct.bid(0) == 0:
            a = x
        else:
            a = y
        b = y if ct.bid(0) == 0 else x
        ct.store(a, (ct.bid(0),), ct.full((2,), ct.bid(0) + 10, ct.int32))
        ct.store(b, (2 + ct.bid(0),), ct.full((2,), ct.bid(0) + 20, ct.int32))
    x, y = np.zeros(8, np.int32), np.zeros(16, np.int32)[::2]
    ct.launch(None, (2,), k, (x, y), backend="interpret")
    assert x.tolist() == [10, 10, 0, 0, 0, 0, 21, 21] and y.tolist() == [0, 0, 11, 11, 20, 20, 0, 0]


def test_an_integer_dtype_constructor_truncates_its_constant_as_cuTile():
    @ct.kernel
    def k(x):
        ct.scatter(x, 0, ct.int64(ct.uint32(-3)))
        ct.scatter(x, 1, ct.int64(ct.int32(3_000_000_000)))
        ct.scatter(x, 2, ct.int64(ct.int8(200)) + ct.int64(ct.bool_(5)))
    x = np.zeros(3, np.int64)
    ct.launch(None, (1,), k, (x,), backend="interpret")
    assert x.tolist() == [0xfffffffd, -1294967296, -55]


def test_python_number_conversions_of_constants_are_loosely_typed():
    """cuTile: float()/int() of a number, or of a constant tile (`ct.float32(5.0)`), is a Python
    number, which takes the dtype of what it meets (an f16 array here); of a run-time tile, the
    conversion (a strictly typed float32 one is refused by the f16 store)."""
    @ct.kernel
    def k(out):
        ct.scatter(out, 0, float("2.0"))
        ct.scatter(out, 1, float(ct.float32(5.0)))
        ct.scatter(out, 2, int(ct.int8(-3)) + 0.5)
    out = np.zeros(3, np.float16)
    ct.launch(None, (1,), k, (out,), backend="interpret")
    assert out.tolist() == [2.0, 5.0, -2.5]

    def runtime(x):
        ct.scatter(x, 0, float(ct.gather(x, 0)))
    with pytest.raises(ct.TileTypeError, match="cannot implicitly cast the value's dtype float32 "
                                               "to the array's dtype float16"):
        ct.kernel(runtime).mlir(out)


def test_defs_and_lambdas_in_a_kernel_take_defaults_and_keyword_arguments():
    """Python's rules: defaults are evaluated where the def/lambda is defined; keyword-only and
    positional-only parameters bind as in Python; *args/**kwargs are refused by name."""
    @ct.kernel
    def k(x, y):
        base = 3

        def f(t, a=10, /, b=base, *, c=1):
            return t * a + b + c
        base = 100
        g = lambda t, m=2: t * m  # noqa: E731
        tx = ct.gather(x, ())
        ct.scatter(y, 0, f(tx))
        ct.scatter(y, 1, f(tx, 4, b=5, c=0))
        ct.scatter(y, 2, g(tx) + g(tx, m=base))
    x, y = np.ones((), np.int32), np.zeros(3, np.int32)
    ct.launch(None, (1,), k, (x, y), backend="interpret")
    assert y.tolist() == [14, 9, 102]

    def star(x):
        def f(*ts):
            return ts
        f(1)
    _refused_in_body(star, ct.TileUnsupportedFeatureError, "cannot take *args or **kwargs", 4)


def _countdown(t, n):
    if n > 0:
        return _countdown(t, n - 1) + 1
    return t


def test_a_recursion_that_ends_at_compile_time_is_inlined_and_a_runaway_one_refused():
    """cuTile's rule: helpers are inlined, a recursion on a constant to its end; one that does
    not end reaches the depth limit, a TileRecursionError."""
    @ct.kernel
    def k(x, n: ct.Constant[int]):
        ct.scatter(x, 0, _countdown(ct.gather(x, 0), n))
    assert ct.kernel(k.func).mlir(V32, 40).count("addf") == 40
    with pytest.raises(ct.TileRecursionError, match=r"Maximum recursion depth \(256\) reached "
                                                    "while inlining a function call: '_countdown'"):
        k.mlir(V32, 10**6)


def test_kernel_early_return(check):
    @ct.kernel
    def k(x, y, n):
        if ct.bid(0) >= n:
            return
        ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (16,)))
    check(k.mlir(V32, V32, 2), """
# CHECK: cmpi greater_than_or_equal
# CHECK: if %{{.*}} -> (token) {
# CHECK: yield %{{.*}} : token
# CHECK: } else {
# CHECK: load_view_tko
# CHECK: store_view_tko
# CHECK: yield %{{.*}} : token
""")


def test_tuples_unpacking_module_constants_and_scalar_arguments(check):
    @ct.kernel
    def k(x, y, n, f, flag):
        a, (b, c) = ct.load(x, (0, 0), (4, 8)), (n, f)
        a, b = a.permute(AXES), b + 1            # swap-like multiple assignment
        t = a * SCALE + c * b
        if flag:
            t = -t
        ct.store(y, (0, 0), t)
    x = np.zeros((4, 8), np.float32)
    y = np.zeros((8, 4), np.float32)
    check(k.mlir(x, y, 3, 1.5, True), """
# CHECK: entry @k({{.*}}, %n: tile<i32>, %f: tile<f32>, %flag: tile<i1>)
# CHECK: permute %{{.*}} [1, 0] : tile<4x8xf32> -> tile<8x4xf32>
# CHECK: constant <f32: 3.000000e+00>
# CHECK: if %flag
""")


def test_tuples_compare_and_contain_runtime_scalars():
    """`==`, `!=` and `in` on tuples holding runtime scalars compare element by element at run
    time (nested tuples too), stopping at an element that is constantly equal."""
    @ct.kernel
    def k(x):
        a, b = ct.bid(0), ct.bid(1)
        r = 0
        if (a, b) == (0, 0):
            r += 1
        if ((a, 1), 2) != ((0, 1), 2):
            r += 10
        if a in (0, 2):
            r += 100
        if b not in (1,) and 2 in (2, ct.ones((4,), ct.int32)):
            r += 1000
        ct.scatter(x, (a, b), r)
    x = np.zeros((3, 2), np.int32)
    ct.launch(None, (3, 2), k, (x,), backend="interpret")
    assert x.tolist() == [[1101, 100], [1010, 10], [1110, 110]]


def _tuple_misuses():
    """Kernels misusing tuples, each with cuTile's key phrase (all TileTypeError)."""
    def float_index(x):
        t = (1, 2, 3)
        t[1.0]

    def tile_index(x):
        t = (1, 2, 3)
        t[ct.ones((2,), ct.int32)]

    def runtime_index(x):
        t = (1, 2, 3)
        t[ct.bid(0)]

    def out_of_range(x):
        t = (1, 2, 3)
        t[5]

    def nd_element(x):
        t = (ct.ones((4,), ct.int32),)
        t == (1,)

    def array_element(x):
        t = (x,)
        t == (x,)

    def ordered(x):
        t = (1, 2)
        t < (3, 4)

    def nd_needle(x):
        t = (1, 2)
        ct.ones((4,), ct.int32) in t

    def star_tile(x):
        t = ct.ones((4,), ct.int32)
        ct.scatter(x, (0,), *t)

    def item_assignment(x):
        t = (1, 2)
        t[0] = 3
    return [(float_index, "Tuple indices must be integers or slices, not float"),
            (tile_index, "Tuple indices must be integers or slices, not "),
            (runtime_index, "Tuple indices must be constant"),
            (out_of_range, "Index 5 is out of range for a tuple of length 3"),
            (nd_element, "Tuple comparison is not supported for non-scalar elements"),
            (array_element, "Tuple comparison is not supported for elements of type"),
            (ordered, "Operator '<' is not supported for tuples"),
            (nd_needle, "'in' requires scalar operands, but got shape (4,)"),
            (star_tile, "Expected a tuple after *"),
            (item_assignment, "Tuples are immutable: item assignment is not supported")]


@pytest.mark.parametrize("fn, phrase", _tuple_misuses(), ids=lambda v: getattr(v, "__name__", ""))
def test_tuple_misuse_is_a_type_error_at_the_line(fn, phrase):
    assert _refused_in_body(fn, ct.TileTypeError, phrase, 2) == 2


def _item_misuses():
    def array_item(x):
        x[0]

    def array_item_assignment(x):
        x[0] = 3.0

    def array_item_update(x):
        x[0] += 3

    def tile_item_assignment(x):
        t = ct.load(x, (0,), (4,))
        t[0] = 3.0
    return [(array_item, "Arrays are not directly subscriptable. Use load() or gather()"),
            (array_item_assignment, "Arrays do not support item assignment. Use store() or"),
            (array_item_update, "Arrays are not directly subscriptable"),
            (tile_item_assignment, "Tiles are immutable: item assignment is not supported")]


@pytest.mark.parametrize("fn, phrase", _item_misuses(), ids=lambda v: getattr(v, "__name__", ""))
def test_item_access_of_arrays_and_tiles_names_cutiles_rule_at_the_line(fn, phrase):
    """cuTile's phrases: arrays are read with load/gather and written with store/scatter (an
    augmented assignment reads first), tiles are immutable."""
    _refused_in_body(fn, ct.TileTypeError, phrase, 2)


# ------------------------------------------------------------------------------- static
def test_static_eval_with_proxies_and_static_assert():
    @ct.kernel
    def k(x, y, N: ct.Constant[int]):
        t = ct.load(x, (0,), (16,))
        ct.static_assert(t.shape == (16,) and t.dtype == ct.float32, "shape")
        widths = ct.static_eval(tuple(2 ** i for i in range(3)))     # full Python syntax
        u = ct.static_eval(t + widths[2] if N % 2 == 0 else t - 1)
        ct.store(y, (0,), u)
    even, odd = k.mlir(V32, V32, 2), k.mlir(V32, V32, 3)
    assert "constant <f32: 4.000000e+00>" in even and "addf" in even
    assert "subf" in odd and "addf" not in odd


def _static_refusals():
    """Kernels whose compile-time evaluation is refused: (kernel, error class, phrase)."""
    def local_fn(x):
        def f(n):
            return n + 1
        ct.static_eval(f(3))

    def tile_fn(x):
        ct.static_eval(ct.ones((4,), dtype=ct.int32))

    def nested(x):
        ct.static_eval(ct.static_assert(True))

    def method_call(x):
        ct.static_eval(x.slice(0, 1, 2))

    def in_iterable(x):
        for i in ct.static_iter(ct.zeros((4,), dtype=ct.int32)):
            pass

    def indirect(x):
        f = ct.static_eval
        f(1)

    def walrus(x):
        ct.static_eval((y := x))  # noqa: F841

    def raises(x):
        ct.static_eval(1 // 0)

    def not_bool(x):
        ct.static_assert(3)

    def not_constant(x):
        cond = ct.bid(0) > 2
        ct.static_assert(cond)

    def empty_message(x):
        ct.static_assert(False, "")

    def too_many(x):
        ct.static_assert(True, "a", 1)

    def runtime_bound(x):
        n = ct.bid(0)
        for i in ct.static_iter(range(n)):
            pass

    def not_iterable(x):
        for i in ct.static_iter(4):
            pass

    def list_item(x):
        for i in ct.static_iter(([1], [2])):
            pass

    def too_long(x):
        for i in ct.static_iter(range(10 ** 6)):
            pass

    def cont(x):
        for i in ct.static_iter(range(2)):
            continue

    def outside_for(x):
        ct.static_iter(range(2))
    E, S, T = ct.TileStaticEvalError, ct.TileSyntaxError, ct.TileTypeError
    return [(local_fn, E, "f() cannot be called inside static_eval()"),
            (tile_fn, E, "ones() cannot be called inside static_eval()"),
            (nested, E, "static_assert() cannot be used inside static_eval()"),
            (method_call, E, "slice() cannot be called inside static_eval()"),
            (in_iterable, E, "zeros() cannot be called inside static_iter() iterable"),
            (indirect, S, "static_eval() must be used directly by name"),
            (walrus, S, "attempted to modify a local variable 'y'"),
            (raises, E, "Exception was raised inside static_eval() (ZeroDivisionError: "),
            (not_bool, T, "static_assert() condition must be a boolean, not int"),
            (not_constant, T, "static_assert() condition must be a compile-time constant"),
            (empty_message, ct.TileStaticAssertionError, "Static assertion failed\n"),
            (too_many, S, "expects one or two positional arguments"),
            (runtime_bound, E, "Symbolic tile has no concrete value"),
            (not_iterable, T, "Invalid static_iter() iterable: 'int' object is not iterable"),
            (list_item, E, "Invalid item #0 of static_iter() iterable: Cannot create constant "
                           "from value of type list."),
            (too_long, E, "Maximum number of iterations (1000) has been reached"),
            (cont, S, "Continue in a for loop with static_iter() is not supported"),
            (outside_for, S, "static_iter() is only allowed as iterable in a `for` loop")]


@pytest.mark.parametrize("fn, error, phrase", _static_refusals(), ids=lambda v: getattr(v, "__name__", ""))
def test_static_evaluation_refusals_name_the_rule_at_the_line(fn, error, phrase):
    """cuTile's rules for static_eval/static_assert/static_iter, with its classes and key
    phrases (so code that catches them behaves the same), at the user's line."""
    _refused_in_body(fn, error, phrase, 4)


def test_static_eval_returns_methods_and_reads_shapes():
    """A method read at compile time is called in the kernel; constants have tile methods; an
    array shows its shape with `?` for run-time extents."""
    seen = []

    @ct.kernel
    def k(x, y):
        t = ct.load(x, (0,), (16,))
        f = ct.static_eval(t.reshape)
        n = ct.static_eval(t.shape)[0]
        ct.static_eval(seen.append(repr(x)))
        ct.store(y, (0,), f((16,)) + n.astype(ct.float32) + ct.static_eval(ct.maximum(2, 3)))
    text = k.mlir(V32, V32)
    assert seen == ["<array[float32, (?)]>"] and text.count("addf") == 2
    assert "constant <f32: 1.600000e+01>" in text and "constant <f32: 3.000000e+00>" in text


def test_ensure_constant():
    @ct.kernel
    def k(x):
        ct.ensure_constant(ct.bid(0))
    with pytest.raises(ct.TileStaticAssertionError, match="not a compile-time constant"):
        k.mlir(V32)


# ------------------------------------------------------------------------------- specialization
def _aligned(n, dtype=np.float32, offset=0):
    """A 1-d array whose base address is 16-byte aligned (plus `offset` elements)."""
    item = np.dtype(dtype).itemsize
    buf = np.zeros(n + 64, dtype)
    start = (-buf.ctypes.data % 16) // item + offset
    return buf[start:start + n]


@ct.kernel
def copy(x, y, TILE: ct.Constant[int]):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (TILE,)))


def test_alignment_and_divisibility_become_assumes(check):
    """The facts the C++ reads: a 16-byte aligned base, a unit-stride extent and the other
    strides spanning multiples of 16 bytes (4 f32 elements); a pointer's natural alignment is
    not restated, and finer powers of two are not facts (`exact` keeps them: tileiras')."""
    check(copy.mlir(_aligned(64), _aligned(60, offset=1), 16), """
# CHECK: %x_aligned = assume div_by<16>, %x : tile<ptr<f32>>
# CHECK: %x_shape_0_div4 = assume div_by<4>, %x_shape_0 : tile<i32>
# CHECK: %x_shape_0_nonneg = assume bounded<0, ?>, %x_shape_0_div4 : tile<i32>
# CHECK-NOT: assume div_by<{{.*}}>, %y :
# CHECK: %y_shape_0_div4 = assume div_by<4>, %y_shape_0 : tile<i32>
# CHECK: make_tensor_view %y, shape = [%y_shape_0_nonneg]
""")
    m = np.zeros((32, 50), np.float32)[:, ::3]              # strides 50, 3: 8 and 12 bytes
    m2 = np.zeros((32, 64), np.float32)[:, :16]             # stride 64: 16 bytes and more
    k = ct.kernel(copy2d_body)
    text = k.mlir(m, m2)
    assert "%b_stride_0_div4 = assume div_by<4>, %b_stride_0" in text
    assert "%b_shape_0_div" not in text                     # 32 rows: not a unit-stride extent
    assert "%a_stride_0_div" not in text and "%a_stride_1_div" not in text
    _, (a, _) = k.specialize(ct.api.compiler.infos_for((m, m2)), exact=True)
    assert (a.align, a.shape_div, a.stride_div) == (16, (4, 1), (2, 1))     # 32, 17; 50, 3


def test_ragged_f16_extents_keep_16_byte_facts(check):
    """5000 and 3000 f16 elements are 8 mod 16, yet every row starts on 16 bytes: div_by<8>."""
    a = np.zeros((40, 5000), np.float16)[:, :3000]
    check(ct.kernel(copy2d_body).mlir(a, a), """
# CHECK: %a_aligned = assume div_by<16>, %a : tile<ptr<f16>>
# CHECK-NOT: %a_shape_0_div
# CHECK: %a_shape_1_div8 = assume div_by<8>, %a_shape_1
# CHECK: %a_stride_0_div8 = assume div_by<8>, %a_stride_0
""")


def copy2d_body(a, b):
    ct.store(b, (0, 0), ct.load(a, (0, 0), (16, 16)))


def test_specializations_keys_and_in_memory_cache():
    @ct.kernel
    def k(x, y, TILE: ct.Constant[int]):
        ct.store(y, (0,), ct.load(x, (0,), (TILE,)))
    a, b = _aligned(64), _aligned(64)
    k.mlir(a, b, 16)
    k.mlir(_aligned(64), _aligned(64), 16)                  # same properties: cached
    assert len(k.cache) == 1
    k.mlir(_aligned(64, offset=1), b, 16)                   # base alignment differs
    k.mlir(_aligned(48), b, 16)                             # 192 bytes, 16 | 192 too: cached
    k.mlir(_aligned(50), b, 16)                             # 200 bytes: only 8 divides it
    k.mlir(a, b, 32)                                        # constant value
    k.mlir(_aligned(64, np.float16), b, 16)                 # dtype
    assert len(k.cache) == 5


def test_recompile_log_names_the_changed_property(monkeypatch, capsys):
    @ct.kernel
    def k(x, y, n, TILE: ct.Constant[int]):
        ct.store(y, (0,), ct.load(x, (0,), (TILE,)) * n)
    a, b = _aligned(64), _aligned(64)
    monkeypatch.setenv("TILEPY_LOG", "recompile")
    k.mlir(a, b, 2, 16)
    k.mlir(a, b, 3, 16)
    assert capsys.readouterr().err == ""                    # first compile and a cache hit
    k.mlir(a, b, 2, 32)
    k.mlir(_aligned(64, np.float16), b, 2, 16)
    k.mlir(_aligned(64, offset=1), b, 2, 16)
    k.mlir(a, b, 2.0, 16)
    k.mlir(a, _aligned(40), 2, 16)                          # 160 bytes: 16 still divides it
    k.mlir(a, _aligned(42), 2, 16)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "tilepy: recompiling kernel 'k' (specialization #2): argument 'TILE': constant value: 16 -> 32",
        "tilepy: recompiling kernel 'k' (specialization #3): argument 'x': dtype: float32 -> float16;"
        " argument 'x': extents divisible by: 4 -> 8",
        "tilepy: recompiling kernel 'k' (specialization #4): argument 'x': base address divisible "
        "by (bytes): 16 -> 1",
        "tilepy: recompiling kernel 'k' (specialization #5): argument 'n': dtype: int32 -> float32",
        "tilepy: recompiling kernel 'k' (specialization #6): argument 'y': extents divisible by: "
        "4 -> 1",
    ]
    monkeypatch.delenv("TILEPY_LOG")
    k.mlir(a, b, 2, 64)
    assert capsys.readouterr().err == ""


def test_kernel_options_are_validated():
    ct.kernel(num_ctas=ct.ByTarget(sm_100=2), occupancy=2)(copy2d_body)
    with pytest.raises(ct.TileValueError, match="num_ctas"):
        ct.kernel(num_ctas=3)(copy2d_body)
    with pytest.raises(ct.TileValueError, match="unknown kernel option"):
        ct.kernel(num_warps=4)(copy2d_body)


# ------------------------------------------------------------------------------- source
CELL = """\
import tilepy as ct

@ct.kernel
def double(x, y):
    t = ct.load(x, (0,), (16,))
    ct.store(y, (0,), t * 2 + offset)
"""


@pytest.mark.parametrize("filename", ["<ipython-input-7-3f2a9c1b0d4e>",
                                      "/tmp/ipykernel_4242/1234567890.py"])
def test_kernels_defined_in_ipython_and_jupyter_cells(filename):
    # IPython (and ipykernel for Jupyter) compile each cell under a synthetic file name and put
    # the cell's text in linecache with no mtime, so it is never checked against the disk.
    linecache.cache[filename] = (len(CELL), None, CELL.splitlines(True), filename)
    try:
        ns = {"__name__": "__main__"}
        exec(compile(CELL, filename, "exec"), ns)
        with pytest.raises(ct.TileSyntaxError) as info:
            ns["double"].mlir(V32, V32)
        col = CELL.splitlines()[5].index("offset")
        assert (info.value.loc.file, info.value.loc.line, info.value.loc.col) == (filename, 6, col)
        assert "t * 2 + offset" in str(info.value)
        ns["offset"] = 1.0
        assert "addf" in ns["double"].mlir(V32, V32)
    finally:
        del linecache.cache[filename]


def test_kernel_in_a_nested_scope_keeps_file_positions():
    def make():
        @ct.kernel
        def inner(x):
            ct.store(x, (0,), ct.load(x, (0,), (16,)) + missing_name)  # noqa: F821
        return inner
    with pytest.raises(ct.TileSyntaxError) as info:
        make().mlir(V32)
    src = pathlib.Path(__file__).read_text().splitlines()
    line, text = [(i, t) for i, t in enumerate(src, 1) if "+ missing_name" in t][0]
    assert (info.value.loc.line, info.value.loc.col) == (line, text.index("missing_name"))


# ------------------------------------------------------------------------------- promotion
# cuTile's tile-tile promotion table (notes/cutile_api.md section 4): None = error.
B, I8, I16, I32, I64 = ct.bool_, ct.int8, ct.int16, ct.int32, ct.int64
U8, U16, U32, U64 = ct.uint8, ct.uint16, ct.uint32, ct.uint64
F16, BF16, F32, F64 = ct.float16, ct.bfloat16, ct.float32, ct.float64
PROMOTIONS = [
    (B, I8, I8), (B, U32, U32), (B, F16, F16), (B, B, B),
    (I8, I16, I16), (I8, I64, I64), (I32, I64, I64), (U8, U16, U16), (U16, U64, U64),
    (I8, U8, None), (I32, U32, None), (I64, U8, None),
    (I64, F16, F16), (U32, BF16, BF16), (I8, F64, F64),
    (F16, F32, F32), (F16, F64, F64), (BF16, F32, F32), (BF16, F64, F64), (F32, F64, F64),
    (F16, BF16, None), (ct.tfloat32, F32, None), (ct.float8_e4m3fn, F16, None),
]


@pytest.mark.parametrize("a,b,want", PROMOTIONS, ids=[f"{a.name}-{b.name}" for a, b, _ in PROMOTIONS])
def test_promotion_table(a, b, want):
    for x, y in ((a, b), (b, a)):
        if want is None:
            with pytest.raises(ct.TileTypeError, match="Implicit promotion"):
                promote(x, y)
        else:
            assert promote(x, y) == want


@ct.kernel
def promoted(x16, xi, n, f, EXPR: ct.Constant[str], DT: ct.Constant):
    t16 = ct.load(x16, (0,), (16,))  # noqa: F841  (names the expression uses)
    ti = ct.load(xi, (0,), (16,))
    tb = ti > 0  # noqa: F841
    r = ct.static_eval(eval(EXPR))           # the expression, traced with tile semantics
    ct.static_assert(r.dtype == DT, r.dtype)


@pytest.mark.parametrize("expr,dtype", [("t16 + 1", F16), ("t16 + 1.5", F16), ("ti + 1.5", F32),
                                        ("tb + 1", I32), ("ti / 2", F32), ("ti // 2", I32),
                                        ("t16 * n", F16), ("t16 * f", F32), ("n / 2", F32)])
def test_literals_and_scalars_promote_like_cutile(expr, dtype):
    promoted.mlir(V16, np.zeros(64, np.int32), 3, 1.5, expr, dtype)


# ------------------------------------------------------------------------------- API surface
CUTILE_NAMES = """bid num_blocks num_tiles load store gather scatter atomic_add atomic_and atomic_cas
atomic_max atomic_min atomic_or atomic_xchg atomic_xor arange full ones zeros astile astype bitcast
reshape permute transpose broadcast_to expand_dims extract cat where sum prod max min argmax argmin
reduce cumsum cumprod scan mma matmul add sub mul truediv floordiv mod divmod pow atan2 minimum
maximum negative abs bitwise_and bitwise_or bitwise_xor bitwise_lshift bitwise_rshift bitwise_not
equal not_equal less less_equal greater greater_equal exp exp2 log log2 sqrt rsqrt sin cos tan sinh
cosh tanh floor ceil isnan cdiv printf print assert_ static_assert static_eval static_iter
static_exception ensure_constant assume_divisible_by""".split()


def test_every_cutile_builtin_exists_and_is_implemented():
    from tilepy.frontend.builtins import IMPLS
    from tilepy.frontend.static import SPECIAL_FORMS
    missing = [n for n in CUTILE_NAMES if not hasattr(ct, n)]
    assert not missing
    unimplemented = [n for n in CUTILE_NAMES if getattr(ct, n) not in IMPLS
                     and getattr(ct, n) not in SPECIAL_FORMS and n != "static_iter"]
    assert not unimplemented
    for name in ("kernel", "function", "launch", "Constant", "PaddingMode", "MemoryOrder",
                 "MemoryScope", "RoundingMode", "ByTarget", "TileSyntaxError", "TileTypeError",
                 "TileValueError", "TileUnsupportedFeatureError", "TileInternalError",
                 "TileRecursionError", "TileStaticAssertionError", "TileStaticEvalError",
                 "bool_", "int8", "uint64", "bfloat16", "tfloat32", "float8_e4m3fn", "float8_e5m2"):
        assert hasattr(ct, name), name


def test_if_whose_branches_both_leave_the_loop(check):
    @ct.kernel
    def k(x, y, n):
        acc = ct.zeros((16,), ct.float32)
        for i in range(n):
            t = ct.load(x, (i,), (16,))
            if ct.sum(t) > 0.0:
                if i > 2:
                    continue
                else:
                    break
            acc = acc + t
        ct.store(y, (0,), acc)
    check(k.mlir(V32, V32, 4), """
# CHECK: loop iter_values
# CHECK: break %i
# CHECK: cmpf greater_than
# CHECK: if %{{.*}} {
# CHECK: if %{{.*}} {
# CHECK: continue
# CHECK: } else {
# CHECK: break
# CHECK: }
# CHECK-NEXT: addi %i
# CHECK-NEXT: continue
# CHECK: }
# CHECK: addf
# CHECK: continue
""")


def test_system_scope_atomics_reach_the_runtime_with_their_scope():
    @ct.kernel
    def k(x):
        ct.atomic_add(x, 0, 1.0, memory_scope=ct.MemoryScope.SYS)
        ct.atomic_cas(x, 1, 0.0, 2.0, memory_scope=ct.MemoryScope.DEVICE)
    src = k.cuda_source(V32)
    assert "tp::atomic_rmw_s<4, 3, 2>(" in src and "tp::atomic_cas_s<3, 1>(" in src   # acq_rel


# ------------------------------------------------------------------ with over @contextmanager
@contextlib.contextmanager
def _two_yields(x):
    yield
    yield


@contextlib.contextmanager
def _no_reachable_yield(x):
    while True:
        break
        yield


@contextlib.contextmanager
def _yield_in_if(x, flag):
    if flag:
        yield


@contextlib.contextmanager
def _returns(x):
    if ct.bid(0) == 1:
        return
    yield


@pytest.mark.parametrize("gen, error, phrase, line", [
    (_two_yields, ct.TileTypeError, "must have one `yield` statement", 3),
    (_no_reachable_yield, ct.TileTypeError, "no reachable `yield` statement", None),
    (_yield_in_if, ct.TileTypeError, "outside of loops and conditional statements", 3),
    (_returns, ct.TileSyntaxError, "Returning from a generator-based context manager", 3),
], ids=lambda v: getattr(v, "__name__", None))
def test_context_manager_rules_are_cuTiles_at_the_generators_line(gen, error, phrase, line):
    def k(x):
        with gen(x, True) if gen is _yield_in_if else gen(x):
            ct.store(x, (0,), ct.zeros((64,), ct.float32))
    with pytest.raises(error, match=re.escape(phrase)) as info:
        ct.kernel(k).mlir(V32)
    if line is not None:
        # co_firstlineno is the decorator's line
        assert info.value.loc.line == gen.__wrapped__.__code__.co_firstlineno + line


def test_with_takes_only_contextmanager_functions():
    def k(x):
        with x:
            pass
    with pytest.raises(ct.TileTypeError, match="@contextlib.contextmanager function") as info:
        ct.kernel(k).mlir(V32)
    assert info.value.loc.line == k.__code__.co_firstlineno + 1


def _append(x, v):
    n = ct.gather(x, 0)
    ct.scatter(x, n + 1, v)
    ct.scatter(x, 0, n + 1)


@dataclasses.dataclass(frozen=True)
class _Log:
    x: ct.Array

    @contextlib.contextmanager
    def around(self, start, end):
        _append(self.x, start)
        yield start
        _append(self.x, end)

    def twice(self, v):
        _append(self.x, v)
        _append(self.x, v)


def test_a_dataclass_built_in_a_kernel_holds_arrays_and_inlines_its_methods():
    """cuTile's rule: a dataclass object made in a kernel may hold arrays; its methods (a
    @contextmanager one too) run inlined with it as `self`."""
    @ct.kernel
    def k(x):
        log = _Log(x)
        with log.around(20, 30) as v:
            ct.static_assert(v == 20)
            log.twice(7)
        _append(x, 50)
    x = np.zeros(8, np.int32)
    ct.launch(None, (1,), k, (x,), backend="interpret")
    assert x.tolist() == [5, 20, 7, 7, 30, 50, 0, 0]

    def bad_fields(x):
        _Log(x, 1)
    _refused_in_body(bad_fields, ct.TileTypeError, "_Log(): ", 1)


def test_an_operator_on_a_context_manager_names_both_types_as_cuTile():
    def k(x):
        cm = _Log(x).around(None, 10)
        cm + 1
    with pytest.raises(ct.TileTypeError, match=re.escape(
            "Unsupported operand types for +: GeneratorContextManager[<function _Log.around at "
            "0x")) as e:
        ct.kernel(k).mlir(V32)
    assert str(e.value).startswith("Unsupported operand types for +: ")
    assert "args=[_Log, None, Tile[int32,()]], kwargs={}] and Tile[int32,()]" in \
        str(e.value)


def test_return_in_a_for_loop_is_cuTiles_syntax_error():
    def in_static_iter(x):
        for i in ct.static_iter(range(3)):
            if i == 1:
                return
            ct.scatter(x, i, 1.0)

    def in_range(x):
        for i in range(3):
            if ct.bid(0) == i:
                return
    assert _refused_in_body(in_static_iter, ct.TileSyntaxError, "Returning from a for loop", 4) == 3
    assert _refused_in_body(in_range, ct.TileSyntaxError, "Returning from a for loop", 4) == 3


@pytest.mark.parametrize("backend", ["interpret", None])
def test_astile_of_run_time_scalars_joins_them(backend):
    """cuTile's astile: leaves may be run-time scalars (converted to dtype, joined by cat)."""
    @ct.kernel
    def k(out, a, b: float, c: bool):
        ct.store(out, (0, 0, 0), ct.astile((((1, a), (2, b)), ((3, c), (4, a + 1))),
                                           dtype=ct.float32))
    out = np.zeros((2, 2, 2), np.float32)
    ct.launch(None, (1,), k, (out, 10, 2.5, True), backend=backend)
    assert out.tolist() == [[[1, 10], [2, 2.5]], [[3, 1], [4, 11]]]


def _astile_misuses():
    def not_power_of_two(x):
        ct.astile((1, 2, 3), dtype=ct.int32)

    def ragged(x):
        ct.astile(((1, 2), (3,)), dtype=ct.int32)

    def tile_leaf(x):
        ct.astile(((1,), (ct.full((2,), 1, ct.int32),)), dtype=ct.int32)

    def whole_tile(x):
        ct.astile(ct.full((4,), 1, ct.int32), dtype=ct.int32)
    return [(not_power_of_two, "Tuple length 3 at value is not a power of 2"),
            (ragged, "Tuple has non-uniform inner shapes at value"),
            (tile_leaf, "Expected scalar elements at value[1][0]"),
            (whole_tile, "Expected a scalar or (possibly nested) tuple of scalars")]


@pytest.mark.parametrize("fn, phrase", _astile_misuses(), ids=lambda v: getattr(v, "__name__", ""))
def test_astile_misuse_is_cuTiles_type_error_at_the_line(fn, phrase):
    _refused_in_body(fn, ct.TileTypeError, phrase, 1)


def _forwarding(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


@_forwarding
def _scaled(x, factor=2):
    return x * factor


def test_a_functools_wraps_wrapper_is_inlined_with_its_own_parameters():
    """The wrapper binds (*args, **kwargs) (not the wrapped signature) and forwards them."""
    @ct.kernel
    def k(y):
        ct.scatter(y, 0, _scaled(5))
        ct.scatter(y, 1, _scaled(5, factor=ct.bid(0) + 3))
    y = np.zeros(2, np.int32)
    ct.launch(None, (1,), k, (y,), backend="interpret")
    assert y.tolist() == [10, 15]


@pytest.mark.parametrize("backend", ["interpret", None])
def test_matmul_of_8_bit_integers_wraps_to_their_dtype(backend):
    """cuTile's matmul on int8/uint8: summed in int32, converted back to the inputs' dtype."""
    @ct.kernel
    def k(a, b, c):
        ct.store(c, (0, 0), ct.matmul(ct.load(a, (0, 0), (16, 16)), ct.load(b, (0, 0), (16, 16))))
    rng = np.random.default_rng(7)
    a, b = (rng.integers(0, 32, (16, 16)).astype(np.uint8) for _ in range(2))
    c = np.zeros((16, 16), np.uint8)
    ct.launch(None, (1,), k, (a, b, c), backend=backend)
    np.testing.assert_array_equal(c, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.uint8))


def test_exp_and_tanh_keep_a_requested_float32_rounding_mode():
    """cuTile's APPROX on float32 exp/tanh is the op's rounding mode (the GPU's approximate
    instructions; the CPU and the interpreter compute the precise value, a valid approximation),
    so the bytecode of a version without it refuses it by cuTile's phrase."""
    @ct.kernel
    def k(x):
        t = ct.load(x, (0,), (64,))
        ct.store(x, (0,), ct.tanh(t, rounding_mode=ct.RoundingMode.APPROX))
    assert "tanh %t rounding<approx>" in k.mlir(V32)
    with pytest.raises(ct.TileUnsupportedFeatureError,
                       match="tanh rounding_mode=approx requires tileiras 13.2"):
        k.bytecode(V32, version="13.1")


def test_a_torch_dtype_called_in_a_kernel_is_a_typed_constant():
    torch = pytest.importorskip("torch")

    @ct.kernel
    def k(x):
        ct.store(x, (0,), ct.full((16,), torch.float16(1.5), torch.float16))
    assert "constant <f16: 1.5" in k.mlir(np.zeros(16, np.float16))


def _needs_qux(**kwargs):
    return kwargs["qux"]


def test_a_missing_key_is_cuTiles_type_error_at_the_helpers_line():
    def k(x):
        _needs_qux(foo=1)
    with pytest.raises(ct.TileTypeError, match="Key 'qux' not found in dictionary \\(keys: 'foo'\\)") \
            as info:
        ct.kernel(k).mlir(V32)
    assert info.value.loc.line == _needs_qux.__code__.co_firstlineno + 1


_TILE = 16


def test_a_local_read_before_its_assignment_is_not_the_global():
    """Python's scoping, as cuTile: `_TILE` is assigned in the kernel, so it is local throughout
    and the global of that name is not read."""
    def k(x):
        t = ct.load(x, (0,), (_TILE,))
        _TILE = 32  # noqa: F841
        ct.store(x, (0,), t)
    assert _refused_in_body(k, ct.TileSyntaxError, "Undefined variable _TILE used", 1) == 1


_OUTSIDE = np.zeros(16, np.float32)
_HALF = np.float32(0.5)


def test_an_array_from_outside_the_kernel_is_refused_at_its_name():
    """cuTile's rule: arrays are kernel arguments; a numpy scalar stays a constant."""
    def k(x):
        ct.store(x, (0,), ct.load(_OUTSIDE, (0,), (16,)) * _HALF)
    assert _refused_in_body(k, ct.TileTypeError, "Cannot create constant from value of type "
                                                 "numpy.ndarray: '_OUTSIDE' is an array", 1) == 1

    def ok(x):
        ct.store(x, (0,), ct.load(x, (0,), (16,)) * _HALF)
    assert "mulf" in ct.kernel(ok).mlir(V32)


def test_a_dtype_reads_a_numbers_text_as_numpy_does():
    @ct.kernel
    def k(x):
        ct.store(x, (0,), ct.full((16,), ct.float32("-inf"), ct.float32))
    assert "constant <f32: 0xFF800000>" in k.mlir(V32)          # -inf
