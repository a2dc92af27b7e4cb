"""Dataclasses as kernel arguments and inside kernels (cuTile's calling convention 3; issue 31):
each kernel of tests/cutile_kernels/dataclass_args.py runs in the interpreter and both CPU
modes and matches numpy, and compiles with NVRTC; a dataclass argument is its fields' kernel
parameters (Tile IR text and bytecode); the class and every field's facts specialize the
kernel; cuTile's errors, located; `tilepy.compilation.DataclassConstraint`; the other
arguments of calling convention 3 (dtype objects and strings as constants)."""
import dataclasses
import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import tilepy as ct
from cutile_cases import case_tests, compile_case, registry
from cutile_kernels import dataclass_args as K
from kernels_util import assert_located
from tilepy.bytecode import read_module
from tilepy.compilation import (ArrayConstraint, CallingConvention, ConstantConstraint,
                                DataclassConstraint, KernelSignature, ScalarConstraint,
                                demangle_kernel_name, export_kernel, mangle_kernel_name)
from tilepy.host.params import ArrayParam, ConstParam, DataclassParam, ScalarParam

rng = np.random.default_rng(31)
CASES, case = registry()


def _job(rows=3):
    X = rng.standard_normal((rows, 16)).astype(np.float32)
    Y = rng.standard_normal(rows * 16).astype(np.float16)
    out = np.zeros(rows * 16, np.float32)
    return K.Job(K.Operands(X, Y, 2.0, (3, 0.5)), out), X, Y, out


@case
def nested_dataclass_and_constant_dataclass():
    job, X, Y, out = _job()
    ref = 2 * (X.reshape(-1) * np.float32(2) + Y.astype(np.float32)) + np.float32(1.5)
    return K.axpy_rows, (3,), (job, K.Tiling(16, 2)), \
        lambda: np.testing.assert_allclose(out, ref, rtol=1e-6)


@case
def list_of_arrays_field():
    xs = [rng.standard_normal(32).astype(np.float32) for _ in range(3)]
    out = np.zeros(32, np.float32)
    return K.weighted_sum, (2,), (K.Sources(xs, 0.5), out, 16), \
        lambda: np.testing.assert_allclose(out, 0.5 * (xs[1] + 2 * xs[2]), rtol=1e-6)


@case
def built_in_the_kernel_carried_and_merged():
    x = rng.standard_normal(12).astype(np.float32)
    out = np.zeros(12, np.float32)
    total = x.reshape(3, 4).sum(0)
    ref = np.concatenate([total / 3, total * 3, np.full(4, 2, np.float32)])
    return K.running_stats, (1,), (x, out, 3), \
        lambda: np.testing.assert_allclose(out, ref, rtol=1e-6)


# every case in the interpreter and fast mode; faithful mode (the same C++, a slower build) for
# the nested arguments
test_kernel_matches_numpy, _ = case_tests(CASES, [(n, m) for n in CASES for m in ("interpret",
                                                                                   "fast")] +
                                          [("nested_dataclass_and_constant_dataclass",
                                            "faithful")])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_with_nvrtc(arch):
    compile_case(CASES["nested_dataclass_and_constant_dataclass"](), arch)


def test_fields_are_the_kernel_parameters_in_ir_and_bytecode():
    """A dataclass argument's fields, in declaration order, are the entry's parameters (a
    nested one's within it); a Constant's are none."""
    job, *_ = _job()
    text = K.axpy_rows.mlir(job, K.Tiling(16, 1))
    entry = next(line for line in text.splitlines() if "entry @" in line)
    names = [p.split(":")[0].strip() for p in entry.split("(", 1)[1].split("%")[1:]]
    assert names == ["job_0_0", "job_0_0_shape_0", "job_0_0_shape_1", "job_0_0_stride_0",
                     "job_0_1", "job_0_1_shape_0", "job_0_2", "job_0_3_0", "job_0_3_1",
                     "job_1", "job_1_shape_0"], entry
    module = read_module(K.axpy_rows.bytecode(job, K.Tiling(16, 1)))
    assert len(module.entry().regions[0].block.args) == len(names)


def test_compiles_ahead_of_time_from_example_dataclasses():
    """kernel.compile with a dataclass of ArraySpecs and dtypes (tilepy.aot): the cubin's
    parameters are the fields', in order; a Constant dataclass is its values."""
    ops = K.Operands("float32[:, ::1]", "float16[::1]", ct.float32, (ct.int32, ct.float32))
    compiled = K.axpy_rows.compile(K.Job(ops, "float32[::1]"), K.Tiling(16, 1), arch="sm_90")
    assert compiled.kind == "cubin" and compiled.data[:4] == b"\x7fELF"
    assert [n for _, n in compiled.c_params] == [
        "job_0_0", "job_0_0_shape_0", "job_0_0_shape_1", "job_0_0_stride_0", "job_0_1",
        "job_0_1_shape_0", "job_0_2", "job_0_3_0", "job_0_3_1", "job_1", "job_1_shape_0"]


def test_the_class_and_each_field_specialize_the_kernel():
    @dataclass(frozen=True)
    class Other:          # the same fields as Tiling: another class, another kernel
        tile: int
        repeat: int = 1

    k = ct.kernel(K.axpy_rows.func)       # (the C++ of the case above: its binary is cached)
    job, X, Y, out = _job()
    ct.launch(None, (3,), k, (job, K.Tiling(16, 2)))
    ct.launch(None, (3,), k, (dataclasses.replace(job, ops=dataclasses.replace(
        job.ops, alpha=1.0, offset=(1, 0.0))), K.Tiling(16, 2)))   # run-time fields: same kernel
    assert len(k.cache) == 1
    np.testing.assert_allclose(out, 2 * (X.reshape(-1) + Y.astype(np.float32)), rtol=1e-6)
    ct.launch(None, (3,), k, (job, Other(16, 2)))
    assert len(k.cache) == 2
    assert len(k._tp_plans.table) == 2      # the launch plans of the call path, per class
    key, params = k.specialize(ct.api.compiler.infos_for((job, K.Tiling(8, 1))))
    assert (("cfg", "class", K.Tiling) in key[1] and ("cfg_0", "constant value", 8) in key[1])
    job_p, cfg_p = params
    assert isinstance(job_p, DataclassParam) and job_p.cls is K.Job
    assert [type(p) for p in job_p.items[0].items] == [ArrayParam, ArrayParam, ScalarParam,
                                                       type(job_p.items[0].items[3])]
    assert [type(p) for p in cfg_p.items] == [ConstParam, ConstParam]


@dataclass
class Thawed:
    n: int


@dataclass(frozen=True)
class Holder:
    a: Any
    n: Any = 1


def _launch(args):
    ct.launch(None, (1,), K.running_stats, args)  # LAUNCH


@pytest.mark.parametrize("args,message", [
    ((np.zeros(4, np.float32), np.zeros(12, np.float32), Thawed(1)),
     "Invalid kernel argument #2: Only frozen dataclasses are supported"),
    ((np.zeros(4, np.float32), np.zeros(12, np.float32), Holder(np.zeros(2), iter([]))),
     "Invalid field 'n' of kernel argument #2: Objects of type 'list_iterator' are not supported"),
    ((np.zeros(4, np.float32), np.zeros(12, np.float32), (1, Holder(1, object()))),
     "Invalid field 'n' of item #1 of kernel argument #2: Objects of type 'object' are not "
     "supported"),
], ids=["not-frozen", "field-type", "field-in-a-tuple"])
def test_an_argument_cutile_refuses_is_a_type_error_at_the_launch(args, message):
    with pytest.raises(TypeError, match=message) as info:
        _launch(args)
    assert isinstance(info.value, ct.TileTypeError)
    assert_located(info.value, "LAUNCH", "ct.launch", __file__)


def test_a_constant_dataclass_holds_only_constants():
    @ct.kernel
    def k(a, c: ct.Constant):
        ct.store(a, (0,), ct.load(a, (0,), (8,)) + c.n)

    with pytest.raises(TypeError, match="Invalid field 'a' of kernel argument #1: Could not "
                                        "interpret object of type 'ndarray' as a constant"):
        ct.launch(None, (1,), k, (np.zeros(8, np.float32), Holder(np.zeros(8), 2)))


@dataclass(frozen=True)
class CustomInit:
    n: int

    def __init__(self):
        object.__setattr__(self, "n", 1)


@dataclass(frozen=True)
class Factory:
    n: Any = dataclasses.field(default_factory=lambda: 1)


@ct.kernel
def _assigns(a):
    h = Holder(a, 1)
    h.n = 2  # ASSIGN


@ct.kernel
def _misses(a):
    h = Holder(a)
    ct.store(a, (0,), h.m)  # MISSING


@ct.kernel
def _replaces(a):
    h = Holder(a)
    h = dataclasses.replace(h, m=3)  # REPLACE


@ct.kernel
def _thaws(a):
    t = Thawed(3)  # THAW


@ct.kernel
def _static_thaws(a):
    t = ct.static_eval(Thawed(3))  # STATIC


@ct.kernel
def _inits(a):
    c = CustomInit()  # INIT


@ct.kernel
def _factory(a):
    f = Factory()  # FACTORY


@ct.kernel
def _calls(a):
    h = Holder(a)
    h(1)  # CALL


@pytest.mark.parametrize("kernel,marker,snippet,cls,message", [
    (_assigns, "ASSIGN", "h.n", ct.TileSyntaxError,
     "cannot assign to field 'n' of a Holder: dataclasses in kernels are frozen"),
    (_misses, "MISSING", "h.m", ct.TileTypeError, "'Holder' object has no attribute 'm'"),
    (_replaces, "REPLACE", "dataclasses.replace", ct.TileTypeError,
     "Dataclass 'Holder' has no such field 'm'"),
    (_thaws, "THAW", "Thawed", ct.TileTypeError, "Only frozen dataclasses are supported"),
    (_static_thaws, "STATIC", "ct.static_eval", ct.TileTypeError,
     "Only frozen dataclasses are supported"),
    (_inits, "INIT", "CustomInit", ct.TileTypeError,
     "Dataclass instance creation is only supported for dataclasses with a default generated "
     "__init__() method"),
    (_factory, "FACTORY", "Factory", ct.TileTypeError,
     "Dataclasses with default_factory fields are not supported"),
    (_calls, "CALL", "h", ct.TileTypeError, "Cannot call an object of type Holder"),
], ids=["assign-field", "missing-attribute", "replace-no-field", "not-frozen",
        "static-eval-not-frozen", "custom-init",
        "default-factory", "not-callable"])
def test_cutile_errors_inside_a_kernel_are_located(kernel, marker, snippet, cls, message):
    with pytest.raises(cls, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        kernel.mlir(np.zeros(8, np.float32))
    assert_located(info.value, marker, snippet, __file__)


# --------------------------------------------------------------------- ct.compilation
V2, V3 = CallingConvention.cutile_python_v2(), CallingConvention.cutile_python_v3()
F32_0D = ArrayConstraint(ct.float32, 0, index_dtype=ct.int32, stride_lower_bound_incl=0,
                         alias_groups=(), may_alias_internally=False)


@dataclass(frozen=True)
class Scale:
    mul: int
    add: float


@ct.kernel
def scaled(args, out):
    ct.scatter(out, (), args.mul * 10 + args.add)


def test_dataclass_constraint_checks():
    with pytest.raises(TypeError, match="Missing field 'add' of dataclass 'Scale'"):
        DataclassConstraint.create(Scale, mul=ScalarConstraint(ct.int32))
    with pytest.raises(TypeError, match="No such field 'sub' in dataclass 'Scale'"):
        DataclassConstraint.create(Scale, mul=1, add=2.0, sub=3)
    with pytest.raises(TypeError, match=r"doesn't match the number of fields of dataclass "
                                        r"'Scale' \(1 vs 2\)"):
        DataclassConstraint(Scale, [1])
    with pytest.raises(TypeError, match="must be a dataclass type"):
        DataclassConstraint(Scale(1, 2.0), [1, 2.0])
    with pytest.raises(ValueError, match="Dataclass parameters are not supported by calling "
                                         "convention cutile_python_v2; version >= 3 is required"):
        KernelSignature([Scale(1, 2.0)], V2)
    assert KernelSignature([Scale(3, 7.5)], V3).parameters == (
        DataclassConstraint(Scale, [ConstantConstraint(3), ConstantConstraint(7.5)]),)


def test_mangling_from_kernel_args_and_export():
    out = np.zeros((), np.float32)
    sig = KernelSignature.from_kernel_args(scaled, (Scale(3, 7.5), out), V3, symbol=None)
    assert sig.parameters[0] == DataclassConstraint.create(
        Scale, mul=ScalarConstraint(ct.int32), add=ScalarConstraint(ct.float32))
    name = mangle_kernel_name("scaled", sig)
    assert name.startswith("scaled_Kt3_Dtest__dataclass__arguments_z") and \
        "_zScale_z2Si32Sf32_A0f32" in name, name
    assert demangle_kernel_name(name, allowed_dataclasses=[Scale])[1].parameters == \
        sig.parameters
    with pytest.raises(ValueError, match="not found in the 'allowed_dataclasses' list"):
        demangle_kernel_name(name)
    buf = io.BytesIO()
    export_kernel(scaled, [sig.with_symbol("scaled_v3")], buf, output_format="tileir_bytecode")
    assert read_module(buf.getvalue()).entry().sym_name == "scaled_v3"
    bad = KernelSignature([DataclassConstraint(Scale, [ScalarConstraint(ct.int32), 123]),
                           F32_0D], V3)
    with pytest.raises(TypeError, match="Invalid field 'add' of kernel parameter 'args': "
                                        "ConstantConstraint is only valid for parameters "
                                        "annotated as Constant."):
        export_kernel(scaled, [bad], io.BytesIO(), output_format="tileir_bytecode")


# ------------------------------------------------- calling convention 3's other constants
@ct.kernel
def _dtype_is(c: ct.Constant, out):
    ct.scatter(out, 0, c == ct.float32)
    ct.scatter(out, 1, c == ct.int32)


def test_a_numpy_or_torch_dtype_constant_is_the_tilepy_dtype():
    for c, want in ((np.dtype("float32"), [1, 0]), (ct.int32, [0, 1])):
        out = np.full(2, -1, np.int32)
        ct.launch(None, (1,), _dtype_is, (c, out))
        assert out.tolist() == want, c


def test_a_string_needs_a_constant_parameter():
    with pytest.raises(TypeError, match="Invalid kernel argument #1: Objects of type 'str' are "
                                        "only accepted for parameters annotated as Constant.") \
            as info:
        ct.launch(None, (1,), K.running_stats, (np.zeros(4, np.float32), "out", 1))  # STR
    assert isinstance(info.value, ct.TileTypeError)
    assert_located(info.value, "STR", "ct.launch", __file__)
