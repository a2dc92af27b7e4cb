"""Every disagreement differential fuzzing found, minimized, run through every execution.

Each case computes one op on constant operands (the values that exposed the bug) and stores the
result; the interpreter and every execution in fuzz.runner.EXECUTIONS must agree bit for bit.
"""
import numpy as np
import pytest

from fuzz.case import ArraySpec, Case, Step, dense_literal
from fuzz.runner import run_batch
from tilepy.types import NUMPY_DTYPE, element_type


def _const(vid: int, elem: str, values) -> Step:
    e = element_type(elem)
    dt = np.dtype(NUMPY_DTYPE[e])
    if dt.kind in "iu":      # integers as bit patterns: 2**63 as i64 is -2**63 (no float cast)
        arr = np.array([int(v) % (1 << 8 * dt.itemsize) for v in values], f"u{dt.itemsize}").view(dt)
    else:
        arr = np.array(values).astype(dt)
    return Step("constant", (), ((vid, f"tile<{len(arr)}x{elem}>"),),
                {"value": (elem, dense_literal(arr, e))})


def op_case(op: str, operands: list[tuple[str, list]], dst: str, loads=False, **attrs) -> Case:
    """dst = op(operands...): operands as constants, or loaded from arrays holding the values."""
    n = len(operands[0][1])
    arrays = [ArraySpec(f"in{i}", e, (n,), (n,), "in", values=list(v)) for i, (e, v) in
              enumerate(operands)] if loads else []
    steps = [] if loads else [_const(i, e, v) for i, (e, v) in enumerate(operands)]
    k = len(operands)
    steps.append(Step(op, tuple(range(k)), ((k, f"tile<{n}x{dst}>"),), attrs))
    arrays.append(ArraySpec("out0", dst, (n,), (n,), "out"))
    return Case(arrays, [(i, i) for i in range(k)] if loads else [], steps, [(k, len(arrays) - 1)],
                (1, 1), set(), {})


def padded_copy(elem: str, padding: str) -> Case:
    """A load of 3 elements as a 4-element tile padded with `padding`, stored whole."""
    arrays = [ArraySpec("in0", elem, (3,), (4,), "in", padding=padding, flip=(False,),
                        values=[1.0, -2.0, 0.5]),
              ArraySpec("out0", elem, (4,), (4,), "out")]
    return Case(arrays, [(0, 0)], [], [(0, 1)], (1, 1), set(), {})


I1 = [True, False, True, False]
FOUND = {
    # runtime.h read i1 as 0/1 for signed ops (spec 8.8.1: signed i1 is 0/-1)
    "exti signed i1": op_case("exti", [("i1", I1)], "i32", signedness="signed"),
    "itof signed i1": op_case("itof", [("i1", I1)], "f32", signedness="signed"),
    "cmpi signed i1": op_case("cmpi", [("i1", I1), ("i1", [False, False, True, True])], "i1",
                              comparison_predicate="less_than", signedness="signed"),
    "maxi signed i1": op_case("maxi", [("i1", I1), ("i1", [False, False, True, True])], "i1",
                              signedness="signed"),
    "shri signed i1": op_case("shri", [("i1", I1), ("i1", I1)], "i1", signedness="signed"),
    "addi i1 wraps": op_case("addi", [("i1", I1), ("i1", [True, True, False, False])], "i1"),
    "shli i1": op_case("shli", [("i1", I1), ("i1", I1)], "i1"),
    "ftoi signed to i1": op_case("ftoi", [("f32", [1.0, -1.0, 5.0, -7.0])], "i1",
                                 signedness="signed"),
    # integers and float64 went through float (or double) before f16/bf16/f32: rounded twice
    "itof i64->f32 rounds once": op_case("itof", [("i64", [2**60 + 2**36 + 1, -(2**60) - 2**36 - 1,
                                                           2**62 + 2**38 + 1, 3])], "f32",
                                         signedness="signed"),
    "itof i32->bf16 rounds once": op_case("itof", [("i32", [2**24 + 2**16 + 1, -(2**24) - 2**16 - 1,
                                                            2**30 + 2**22 + 5, 7])], "bf16",
                                          signedness="signed"),
    "itof u64->bf16 rounds once": op_case("itof", [("i64", [-1, 2**40 + 2**32 + 1, 2**63, 1])],
                                          "bf16", signedness="unsigned"),
    "ftof f64->f16 rounds once": op_case("ftof", [("f64", [1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40),
                                                           1 + 2**-11 - 2**-40, 0.5])], "f16"),
    "ftof f64->bf16 rounds once": op_case("ftof", [("f64", [1 + 2**-8 + 2**-40, 3 * (1 + 2**-8 + 2**-45),
                                                            -(1 + 2**-8 + 2**-40), 2.0])], "bf16"),
    "fma f16 rounds once": op_case("fma", [("f16", [1 + 2**-10, 2049 / 2048, 3.0, 1.0]),
                                           ("f16", [1 + 2**-10, 1.0, 5.0, 1.0]),
                                           ("f16", [2**-24, -2**-24, 2**-20, 0.0])], "f16",
                                   loads=True),
    "fma bf16 rounds once": op_case("fma", [("bf16", [15.0, 21.0, 1.0, 2.0]),
                                            ("bf16", [21.0, 15.0, 1.0, 2.0]),
                                            ("bf16", [-2**-100, 2**-100, 0.0, 1.0])], "bf16",
                                    loads=True),
    # maxf/minf returned the NaN operand instead of a canonical NaN (spec 8.7.16); and a NaN in
    # a dense constant was a dynamic initializer NVRTC rejects (now bit patterns)
    "maxf canonical nan": op_case("maxf", [("f32", [float(np.array(0x7FC00123, np.uint32).view(
        np.float32)), 1.0, 2.0, 3.0]), ("f32", [1.0, 2.0, 1.0, 0.0])], "f32", propagate_nan=True),
    # 16-bit products were computed in (signed) int: overflow is undefined behavior in C++
    "muli i16 wraps": op_case("muli", [("i16", [-1, 32767, -32768, 300]),
                                       ("i16", [-1, 32767, -32768, 300])], "i16"),
    # fp8 paddings were converted (saturating: NaN -> 448 for e4m3) instead of stored as the
    # interpreter stores them (e4m3's NaN)
    "e4m3 nan padding": padded_copy("e4m3", "nan"),
    "e4m3 inf padding": padded_copy("e4m3", "pos_inf"),
    "e5m2 -inf padding": padded_copy("e5m2", "neg_inf"),
}


@pytest.fixture(scope="module")
def outcomes():
    """All cases in one batch: one build per execution."""
    names = sorted(FOUND)
    return dict(zip(names, run_batch([FOUND[n] for n in names], [0, 1])))


@pytest.mark.parametrize("name", sorted(FOUND))
def test_fuzz_finding_stays_fixed(outcomes, name):
    out = outcomes[name]
    assert out.status == "agree", f"{name}: {out.status} {out.execution} {out.detail}"


def test_nan_payloads_of_maxf_are_canonical_everywhere():
    """The runner compares NaNs loosely; check maxf's canonical NaN bit for bit here."""
    from fuzz.runner import EXECUTIONS, copy_arrays, ctypes_values, interpret_case, make_arrays
    from fuzz.runner import build
    case = FOUND["maxf canonical nan"]
    arrs = make_arrays(case, 0)
    ref = copy_arrays(arrs, case)
    interpret_case(case, ref)
    libs, failures = build([case], EXECUTIONS)
    assert not failures
    for name, ex in EXECUTIONS.items():
        got = copy_arrays(arrs, case)
        ex.run(libs[name], (1, 1, 1), ctypes_values(got.params))
        assert got.bases[0].view(np.uint32)[0] == 0x7FC00000 == ref.bases[0].view(np.uint32)[0]


def test_the_harness_catches_a_wrong_execution():
    """A deliberately wrong execution (one corrupted byte in the output) is reported."""
    import ctypes
    from fuzz.runner import CpuExecution

    class Corrupting(CpuExecution):
        def run(self, lib, grid, values):
            super().run(lib, grid, values)
            ctypes.memset(values[0].value, 0x11, 1)       # out0 is the case's only array

    out = run_batch([FOUND["muli i16 wraps"]], [0], {"corrupt": Corrupting("fast")})[0]
    assert out.status == "mismatch" and out.execution == "corrupt"
    assert "out0 (i16, exact): 1 element(s) differ" in out.detail


def product_case(elem: str, values, err: int) -> Case:
    """out0[0] = the product of the 64 `values` (a mulf `reduce`)."""
    dt = NUMPY_DTYPE[element_type(elem)]
    one = int(np.array(1.0, dt).view(f"u{dt.itemsize}"))          # the identity of mulf
    t = f"tile<{elem}>"
    body = ((((1, t), (2, t)), [Step("mulf", (1, 2), ((3, t),), {})], ("yield", (3,))),)
    return Case([ArraySpec("in0", elem, (64,), (64,), "in", values=values),
                 ArraySpec("out0", elem, (1,), (1,), "out")], [(0, 0)],
                [Step("reduce", (0,), ((4, t),), {"dim": 0, "identities": [(elem, one)]}, body),
                 Step("reshape", (4,), ((5, f"tile<1x{elem}>"),), {})],
                [(5, 1)], (1, 1), {4, 5}, {"err": err})


def test_order_dependent_overflow_of_a_product_reduction_is_not_a_mismatch():
    """A long fuzz run found a product `reduce` of huge and tiny f64 values giving inf in the
    interpreter and NaN or a finite value in faithful mode: the spec leaves the order open and
    the order decides where the product overflows. The harness accepts a non-finite value on
    either side once magnitudes pass sqrt(max); the values here differ between orders."""
    out = run_batch([product_case("f64", [1e200] * 32 + [1e-200] * 32, 64)], [0])[0]
    assert out.status == "agree", out.detail


@pytest.mark.parametrize("values", [[8.0] * 32 + [0.125] * 32, ([8.0] * 16 + [0.125] * 16) * 2,
                                    ([8.0] * 2 + [0.125] * 2) * 16])
def test_order_dependent_overflow_of_a_long_f16_product_is_not_a_mismatch(values):
    """An f16 product of 64 values of magnitude 8 (< sqrt(max) = 256) overflows in one order
    (inf, or NaN from inf * 0) and not in another (1.0): the tolerance must count the product's
    64 factors, not two."""
    out = run_batch([product_case("f16", values, 130)], [0])[0]
    assert out.status == "agree", out.detail



def _minmax_of_absf_case(elem: str) -> Case:
    t = f"tile<2x2x{elem}>"
    arrays = [ArraySpec("in0", elem, (2, 2), (2, 2), "in", dim_map=(1, 0),
                        values=[-0.0, 0.0, float("nan"), -3.0])]
    arrays += [ArraySpec(f"out{i}", elem, (2, 2), (2, 2), "out", dim_map=(1, 0)) for i in (0, 1)]
    steps = [Step("absf", (0,), ((1, t),), {}),
             Step("minf", (1, 0), ((2, t),), {"propagate_nan": True}),
             Step("maxf", (0, 1), ((3, t),), {"propagate_nan": False})]
    return Case(arrays, [(0, 0)], steps, [(2, 1), (3, 2)], (1, 1), set(), {})


def test_minf_and_maxf_of_absf_build_and_agree_in_both_cpu_modes():
    """g++ 12 crashed (internal compiler error in FRE's eliminate_stmt) building the fast mode's
    minf(absf(x), x) on a 2x2 f32 tile: runtime.h took std::signbit of a value the compiler knew
    to be a fabs, in loops it had vectorized. The fuzz case, reduced, with signed zeros and a NaN,
    in each float width (the sign bit is read from the bits of a float or a double)."""
    for out in run_batch([_minmax_of_absf_case(e) for e in ("f32", "f64", "f16")], [0]):
        assert out.status == "agree", f"{out.status} {out.execution} {out.detail}"


# The first case of the batch `python -m tilepy doctor --gpu` ran into CUDA_ERROR_ILLEGAL_ADDRESS
# on an H200 (issue 26: benchmarks/gpu.py fuzz_rows(4), seed 15), as hypothesis printed it: a
# scatter of i1, a flipped e5m2 load with padding, a cat through shared memory.
H200_CASE = Case(
    arrays=[ArraySpec("in0", "i16", (96,), (32,), "in", flip=(False,)),
            ArraySpec("in1", "i1", (1, 35), (16, 4), "in", dim_map=(1, 0), padding="zero",
                      flip=(False, False)),
            ArraySpec("in2", "e5m2", (302,), (128,), "in", pad=1, padding="neg_zero",
                      flip=(True,)),
            ArraySpec("scatter3", "i1", (149,), (64,), "out"),
            ArraySpec("out0", "i16", (192,), (64,), "out", pad=3, flip=(False,)),
            ArraySpec("out1", "i16", (68,), (32,), "out", flip=(False,))],
    loads=[(0, 0), (1, 1), (2, 2)],
    steps=[Step("scatter", (1,), (), {"array": 3}),
           Step("constant", (), ((3, "tile<32xi16>"),), {"value": ("i16", -26302)}),
           Step("cat", (0, 3), ((4, "tile<64xi16>"),), {"dim": 0})],
    stores=[(4, 4), (3, 5)], grid=(3, 1), inexact=set(), weights={"err": 0})


def _on_the_gpu_path(execution):
    """The H200 case through `execution` (a fuzz.gpu_execution row) on the fake driver: NVRTC's
    cubin, run by the faithful CPU build of the same source."""
    import tilepy as ct
    from fake_driver import FakeDriver
    with FakeDriver(), ct.cpu_mode("faithful"):
        return run_batch([H200_CASE], [15], {"gpu": execution})[0]


def test_the_h200_illegal_address_case_agrees_on_the_gpu_path():
    """The GPU execution launched the batch without the kernel's dynamic shared memory: on the
    H200 each shared-memory access was an illegal address. It passes shmem_size now."""
    from fuzz.gpu_execution import GpuExecution
    out = _on_the_gpu_path(GpuExecution())
    assert out.status == "agree", f"{out.status} {out.execution} {out.detail}"
    assert run_batch([H200_CASE], [15])[0].status == "agree"       # and both CPU modes


def test_a_launch_short_of_shared_memory_fails_in_faithful_mode():
    """The gap that let it through: the faithful mode gave every block its 227 KiB whatever the
    launch asked for. Launched as before the fix (shmem_size 0), the write past it is an error."""
    from fake_driver import FakeCUDAError
    from fuzz.gpu_execution import GpuExecution

    class WithoutSharedMemory(GpuExecution):
        def build(self, cm):
            return (*super().build(cm)[:3], 0)
    with pytest.raises(FakeCUDAError, match=r"wrote dynamic shared memory at byte \d+, past the "
                                            r"0 bytes the launch gave"):
        _on_the_gpu_path(WithoutSharedMemory())
