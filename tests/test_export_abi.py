"""Exported cubins in cuTile's calling convention (api/compilation.py, issue 31): the kernel's
symbol is the signature's (cuTile's mangled name when it has none) and its parameters are
cuTile's layout (per non-constant leaf, tuples and dataclasses flattened in order: an array's
base pointer, every extent, every stride; a scalar; nothing for a constant). Checked on the
cubins themselves (the symbol, each parameter's size and offset from `.nv.info`'s KPARAM_INFO),
and by running the NVRTC cubin through the fake driver (tests/fake_driver.py: the CPU build of
the cubin's source, the parameters packed at the cubin's offsets) with an argument list built as
a cuTile user builds it (ctypes values, one per parameter), against numpy."""
import ctypes
import dataclasses
import io

import numpy as np
import pytest

import tilepy as ct
from fake_driver import FakeDriver, FakeLaunchConfig, FakeObjectCode, fake_launch
from tilepy.compilation import (ArrayConstraint, CallingConvention, KernelSignature,
                                ListConstraint, ScalarConstraint, TupleConstraint,
                                export_kernel, mangle_kernel_name)
from tilepy.launch import tileiras
from tilepy.launch.cubin_info import kernel_info, kernel_names

V1, V2, V3 = (CallingConvention.cutile_python_v1(), CallingConvention.cutile_python_v2(),
              CallingConvention.cutile_python_v3())


def array(dtype, ndim, **facts):
    return ArrayConstraint(dtype, ndim, index_dtype=facts.pop("index_dtype", ct.int32),
                           stride_lower_bound_incl=0, alias_groups=(),
                           may_alias_internally=False, **facts)


def cutile_args(values, index=ctypes.c_int32) -> list:
    """One ctypes value per kernel parameter, as cuTile's calling convention lays them out: an
    array (numpy, standing for device memory) is its address, every extent and every stride in
    elements; a tuple's items and a dataclass's fields in order; an int is an int32, a float a
    float32, a bool a bool; constants are not passed."""
    out = []
    for v in values:
        if isinstance(v, np.ndarray):
            out += [ctypes.c_void_p(v.ctypes.data), *map(index, v.shape),
                    *(index(s // v.itemsize) for s in v.strides)]
        elif isinstance(v, tuple):
            out += cutile_args(v, index)
        elif dataclasses.is_dataclass(v):
            out += cutile_args([getattr(v, f.name) for f in dataclasses.fields(v)], index)
        elif isinstance(v, bool):
            out.append(ctypes.c_bool(v))
        else:
            out.append(ctypes.c_int32(v) if isinstance(v, int) else ctypes.c_float(v))
    return out


def export(kernel, sig, arch="sm_80") -> bytes:
    buf = io.BytesIO()
    export_kernel(kernel, [sig], buf, gpu_code=arch, output_format="cubin")
    return buf.getvalue()


def check_layout(cubin: bytes, symbol: str, args: list):
    """The cubin holds one kernel, `symbol`, whose parameters are `args`' sizes at their
    natural alignment, in order."""
    assert kernel_names(cubin) == [symbol]
    table = [(p.offset, p.size) for p in kernel_info(cubin, symbol).params]
    expected, offset = [], 0
    for a in args:
        size = ctypes.sizeof(a)
        offset = -(-offset // size) * size
        expected.append((offset, size))
        offset += size
    assert table == expected


def run(drv, cubin: bytes, symbol: str, args: list):
    """Launch the cubin's `symbol` on one block, as a driver would, with `args`."""
    drv.core.Device(0).set_current()
    kern = FakeObjectCode.from_cubin(cubin).get_kernel(symbol)
    block = kern.info.req_threads or kern.info.max_threads
    packed = [a.value if isinstance(a, ctypes.c_void_p) else a for a in args]  # cuda.core
    fake_launch(drv.core.LEGACY_DEFAULT_STREAM, FakeLaunchConfig((1, 1, 1), block), kern,
                *packed)                       # packs a pointer given as a Python int
    drv.core.LEGACY_DEFAULT_STREAM.sync()


# ------------------------------------------------------------------ v1: scalars, constants, strides
@ct.kernel
def stamp(c: ct.Constant, s, flag, f, a, b):
    for i in range(4):
        ct.scatter(a, (i, 2 * i), c * 100 + s * 10 + i + ct.astype(flag, ct.int32))
        ct.scatter(b, (i, i + 1, 3 - i), f * 2.0 + i)


STAMP = KernelSignature(
    [7, ScalarConstraint(ct.int32), ScalarConstraint(ct.bool_), ScalarConstraint(ct.float32),
     array(ct.int32, 2, stride_constant=(None, 1), stride_divisible_by=(4, 1)),
     array(ct.float32, 3)], V1)


def test_v1_symbol_parameters_and_numerics():
    """Constants are not parameters, a unit stride tilepy specialized on is (given, unused),
    every other stride is read: `b` is a transposed view, so its strides matter."""
    symbol = mangle_kernel_name("stamp", STAMP)
    assert symbol.startswith("stamp_Kt1_I7_Si32_Sb8_Sf32_A2i32")
    a = np.zeros((8, 12), np.int32)
    b_base = np.zeros((6, 6, 6), np.float32)
    b = b_base.transpose(2, 0, 1)
    args = cutile_args((3, True, 1.5, a, b))
    with FakeDriver() as drv:
        cubin = export(stamp, STAMP)
        check_layout(cubin, symbol, args)
        run(drv, cubin, symbol, args)
        # a SIMT kernel: on a GPU, a tile kernel's launch (block (1, 1, 1)) fails its assertion
        assert f"kernel '{symbol}' (NVRTC) must be launched with block (128, 1, 1)" in \
            drv.source_of(cubin)
    ref_a, ref_b = np.zeros_like(a), np.zeros((6, 6, 6), np.float32).transpose(2, 0, 1)
    for i in range(4):
        ref_a[i, 2 * i] = 7 * 100 + 3 * 10 + i + 1
        ref_b[i, i + 1, 3 - i] = 1.5 * 2.0 + i
    np.testing.assert_array_equal(a, ref_a)
    np.testing.assert_array_equal(b, ref_b)


@pytest.mark.skipif(tileiras.unusable() is not None, reason=str(tileiras.unusable()))
def test_tileiras_cubin_takes_the_same_parameters():
    """tileiras' cubin of the same signature: the same symbol and parameter table (its Tile IR
    entry gets the unit stride tilepy folded, unused), and the same results (the fake driver
    runs the CPU build of the bytecode tileiras was given, on the cubin's REQNTID block)."""
    symbol = mangle_kernel_name("stamp", STAMP)
    a, b = np.zeros((8, 12), np.int32), np.zeros((6, 6, 6), np.float32)
    args = cutile_args((3, False, -2.0, a, b))
    with FakeDriver() as drv:
        cubin = export(ct.kernel(stamp.func, compiler="tileiras"), STAMP, "sm_90")
        check_layout(cubin, symbol, args)
        run(drv, cubin, symbol, args)
    i = np.arange(4)
    assert a[i, 2 * i].tolist() == [730, 731, 732, 733] and np.count_nonzero(a) == 4
    assert b[i, i + 1, 3 - i].tolist() == [-4.0, -3.0, -2.0, -1.0] and np.count_nonzero(b) == 4


# ------------------------------------------------------------------ v2: constant shapes, tuples
@ct.kernel
def affine(pair, k: ct.Constant[tuple], x, y):
    t = ct.load(x, (0,), (8,))
    ct.store(y, (0,), t * pair[0] + pair[1] + k[1])


def test_v2_constant_shapes_and_tuples():
    """A constant extent is still passed (cuTile's rule), a scalar tuple is its items, a
    constant tuple is nothing."""
    sig = KernelSignature(
        [TupleConstraint([ScalarConstraint(ct.float32), ScalarConstraint(ct.float32)]), (1, 4),
         array(ct.float32, 1, shape_constant=(8,)),
         array(ct.float32, 1, shape_constant=(8,), stride_constant=(1,))], V2)
    symbol = mangle_kernel_name("affine", sig)
    x, y = np.arange(16, dtype=np.float32)[::2], np.zeros(8, np.float32)
    args = cutile_args(((2.0, 0.5), x, y))
    with FakeDriver() as drv:
        cubin = export(affine, sig)
        check_layout(cubin, symbol, args)
        run(drv, cubin, symbol, args)
    np.testing.assert_array_equal(y, x * 2.0 + 0.5 + 4)


# ------------------------------------------------------------------ v3: a dataclass, int64 indices
@dataclasses.dataclass(frozen=True)
class Job:
    mul: int
    src: object
    add: float


@ct.kernel
def job_kernel(job, out):
    t = ct.load(job.src, (0, 0), (2, 4))
    ct.store(out, (0, 0), t * job.mul + job.add)


def test_v3_dataclass_fields_are_parameters_in_order():
    """A dataclass is its fields in declaration order, an array among them flattened where it
    stands; int64 indices make every extent and stride 8 bytes."""
    wide = dict(index_dtype=ct.int64)
    sig = KernelSignature([Job(ScalarConstraint(ct.int32), array(ct.float32, 2, **wide),
                               ScalarConstraint(ct.float32)),
                           array(ct.float32, 2, stride_constant=(None, 1), **wide)], V3)
    symbol = mangle_kernel_name("job_kernel", sig)
    assert "_Kt3_D" in symbol
    src = np.arange(24, dtype=np.float32).reshape(4, 6)[1:3, 1:5]
    out = np.zeros((2, 4), np.float32)
    args = cutile_args((Job(3, src, 0.25), out), index=ctypes.c_int64)
    with FakeDriver() as drv:
        cubin = export(job_kernel, sig)
        check_layout(cubin, symbol, args)
        run(drv, cubin, symbol, args)
    np.testing.assert_array_equal(out, src * 3 + 0.25)


# ------------------------------------------------------------------ what cannot be met
@ct.kernel
def first_of(xs, y):
    ct.store(y, (0,), ct.load(xs[0], (0,), (4,)))


def test_what_the_layout_cannot_meet_is_refused():
    """A list (cuTile passes its arrays' descriptors through memory and its length) and a
    symbol an NVRTC kernel cannot have are refused by name, before anything compiles."""
    sig = KernelSignature([ListConstraint(array(ct.float32, 1), alias_groups=(),
                                          elements_may_alias=False), array(ct.float32, 1)], V1)
    with pytest.raises(ct.TileUnsupportedFeatureError,
                       match="kernel parameter 'xs': a ListConstraint cannot be exported"):
        export(first_of, sig)
    for bad in ("not-an-identifier", "__reserved", "tp_smem", "int"):
        with pytest.raises(ct.TileUnsupportedFeatureError, match=f"cannot name its kernel '{bad}'"):
            export(affine, KernelSignature(
                [TupleConstraint([ScalarConstraint(ct.float32)] * 2), (1, 4),
                 array(ct.float32, 1), array(ct.float32, 1)], V2, symbol=bad))
