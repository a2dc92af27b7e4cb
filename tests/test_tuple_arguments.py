"""Tuples as kernel arguments (cuTile's aggregates; issue 31): each kernel of
tests/cutile_kernels/tuple_args.py runs in the interpreter and both CPU modes and matches numpy,
and compiles with NVRTC; the specialization is per item (a constant item recompiles, a run-time
one does not; every array of a tuple keeps its own alignment facts); a tuple its annotation
does not describe is cuTile's TypeError, located at the launch."""
from collections import namedtuple

import numpy as np
import pytest

import tilepy as ct
from cutile_cases import compile_case, registry, run_case
from cutile_kernels import tuple_args as T
from kernels_util import assert_located
from tilepy.host.params import ArrayParam, TupleParam

rng = np.random.default_rng(31)
CASES, case = registry()


@case
def arrays_of_two_dtypes_and_nested_scalars():
    A = rng.standard_normal((3, 16)).astype(np.float32)
    B = rng.standard_normal(48).astype(np.float16)
    out = np.zeros(48, np.float32)
    ref = A.reshape(-1) * np.float32(2) + B.astype(np.float32) + np.float32(1.5)
    return T.scaled_pair_sum, (3,), ((A, B), out, (2.0, (3.0, 0.5))), \
        lambda: np.testing.assert_array_equal(out, ref)


@case
def constant_inside_a_nested_tuple():
    x = np.arange(32, dtype=np.int32)
    out = np.zeros(32, np.int32)
    return T.tiled_offset, (4,), (x, out, ((8, 5), 3)), \
        lambda: np.testing.assert_array_equal(out, x + 15)


@case
def int64_item_and_empty_tuple():
    x = np.arange(8, dtype=np.int64)
    out = np.zeros(8, np.int64)
    big = 2**33 + 7
    return T.wide_difference, (1,), (x, (big, 5), out, ()), \
        lambda: np.testing.assert_array_equal(out, x + big - 5)


@case
def tuple_of_arrays_runtime_index():
    xs = tuple(rng.standard_normal(32).astype(np.float32) for _ in range(3))
    out = np.zeros(32, np.float32)
    return T.pick_by_index, (2,), (xs, out, 16), \
        lambda: np.testing.assert_allclose(out, xs[0] + 2 * xs[1] + 3 * xs[2], rtol=1e-6)


@pytest.mark.parametrize("name,mode", [(n, m) for n in CASES
                                       for m in ("interpret", "fast", "faithful")])
def test_kernel_matches_numpy(name, mode):
    run_case(CASES[name](), mode)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_with_nvrtc(arch):
    compile_case(CASES["arrays_of_two_dtypes_and_nested_scalars"](), arch)


def test_specialization_is_per_item():
    x, out = np.arange(32, dtype=np.int32), np.zeros(32, np.int32)
    k = ct.kernel(T.tiled_offset.func)
    ct.launch(None, (4,), k, (x, out, ((8, 5), 3)))
    ct.launch(None, (4,), k, (x, out, ((8, 1), 3)))         # a run-time item: same kernel
    assert len(k.cache) == 1
    np.testing.assert_array_equal(out, x + 3)
    ct.launch(None, (2,), k, (x, out, ((16, 1), 3)))        # a constant item: compiled again
    assert len(k.cache) == 2
    np.testing.assert_array_equal(out, x + 3)
    ct.launch(None, (2,), k, (x, out, ((16, 2), 3)))        # the warm path's plan, new values
    np.testing.assert_array_equal(out, x + 6)
    assert len(k._tp_plans.table) == 2                      # one launch plan per constant


def test_arrays_of_a_tuple_keep_their_own_alignment_facts():
    buf = np.zeros(64, np.float32)
    A = np.zeros((3, 16), np.float32)
    _, params = T.scaled_pair_sum.specialize(
        ct.api.compiler.infos_for(((A, buf[1:49].astype(np.float16)), buf[:48], (1.0, (1.0, 1.0)))))
    pair = params[0]
    assert isinstance(pair, TupleParam) and [type(p) for p in pair.items] == [ArrayParam] * 2
    assert [p.name for p in pair.items] == ["pair_0", "pair_1"]
    assert pair.items[0].align == 16 and pair.items[0].shape_div == (1, 4)
    misaligned = np.zeros(33, np.float16)[1:]
    _, params = T.scaled_pair_sum.specialize(
        ct.api.compiler.infos_for(((A, misaligned), buf[:48], (1.0, (1.0, 1.0)))))
    assert params[0].items[1].align == 1 and params[0].items[0].align == 16


Point = namedtuple("Point", "x y")
X8 = np.zeros(8, np.int64)


def _launch(args):
    ct.launch(None, (1,), T.wide_difference, args)  # LAUNCH


@pytest.mark.parametrize("args,message", [
    ((X8, (1, 2, 3), X8, ()), "Invalid kernel argument #1: Received a tuple of length 3 for a "
                              "parameter annotated as a tuple of length 2"),
    ((X8, 5, X8, ()), "Invalid kernel argument #1: Received a non-tuple argument for a parameter "
                      "annotated as a tuple"),
    ((X8, (1, 2), X8, Point(1, 2)), "Invalid kernel argument #3: 'Point' is a subclass of 'tuple'. "
                                    "Only plain tuples are accepted."),
    ((X8, (1, 2), X8, (1, Point(1, 2))), "Invalid item #1 of kernel argument #3: 'Point' is a "
                                         "subclass"),
], ids=["length", "not-a-tuple", "namedtuple", "nested-namedtuple"])
def test_a_tuple_its_annotation_does_not_describe_is_a_type_error(args, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        _launch(args)
    assert isinstance(info.value, ct.TileTypeError)
    assert_located(info.value, "LAUNCH", "ct.launch", __file__)


def test_constant_items_must_be_constants():
    @ct.kernel
    def k(a, c: ct.Constant[tuple]):
        ct.store(a, (0,), ct.load(a, (0,), (8,)) + c[1])

    with pytest.raises(TypeError, match="Invalid item #0 of kernel argument #1: Could not "
                                        "interpret object of type 'ndarray' as a constant"):
        ct.launch(None, (1,), k, (X8, (X8, 1)))

    @ct.kernel
    def k64(a, c: ct.Constant[tuple[ct.ScalarInt64, int]]):
        ct.store(a, (0,), ct.load(a, (0,), (8,)) + c[0])

    with pytest.raises(TypeError, match="Constant annotation cannot be combined with "
                                        "ScalarAnnotation/ScalarInt64"):
        ct.launch(None, (1,), k64, (X8, (2**33, 1)))
