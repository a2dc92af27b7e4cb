"""The GPU parameter ABI, checked without a GPU: for every kernel of the tutorials, of the
cuTile-style suite, of tests/reference_kernels and of the speed table (benchmarks/gpu.py), the cubin's own parameter table (the ELF `.nv.info` EIATTR_KPARAM_INFO
attributes: ordinal, offset, size) equals what GpuPlan hands cuda.core's launch, laid out as the
driver lays out kernelParams (each value at its natural alignment, in order); the block size is
within the cubin's max threads (`__launch_bounds__`); the static shared memory is within what
a block may have without opting in (48 KiB), and tilepy asks for no dynamic shared memory.

Every other kernel the suite compiles (the ad-hoc kernels of other test files) is covered by
parameter class: tests/conftest.py records the (C++ type, packed type) class of each parameter of
each compile, `test_every_parameter_class` checks every class against the cubins (its docstring
says why that is enough) and the run fails on a class it does not check. Block size and shared
memory are per-kernel facts, checked here for the kernels above; the block is the kernel's
`TP_NT`, the same constant as its `__launch_bounds__`, for every kernel by construction.

Also: our ELF reader agrees with `cuobjdump -elf`, and a seeded packing mistake (two parameters
swapped, a scalar mis-sized) fails both this check and the fake driver."""
import os
import re
import shutil
import subprocess
import types

import numpy as np
import pytest

import tilepy as ct
from fake_driver import FakeDriver, FakeCUDAError, cuda_array, packed_layout
from test_cutile_suite import CASES as CUTILE_CASES
from tilepy.api import launcher
from tilepy.api.compiler import compile_specialization
from tilepy.launch import gpu
from tilepy.launch.cubin_info import kernel_info, kernel_names
from tilepy.launch.dispatch import GpuPlan
from tilepy.host.intake import ArrayInfo, intake
from tilepy.launch.nvrtc import compile_cubin
from tutorial_cases import CASES as TUTORIAL_CASES
from tutorial_cases import gpu_benchmark, reference_cases

STATIC_SMEM_LIMIT = 48 * 1024
ALL = {**{f"tutorial:{k}": v for k, v in TUTORIAL_CASES.items()},
       **{f"cutile:{k}": v for k, v in CUTILE_CASES.items()},
       **{f"reference:{k}": v for k, v in reference_cases().items()}}


def gpu_launch_of(kernel, args):
    """(compiled kernel, the arguments GpuPlan passes to cuda.core's launch for this call)."""
    infos = [intake(a, n) or a for a, n in zip(args, kernel.signature.parameters)]
    key, params = kernel.specialize(infos)
    ck = compile_specialization(kernel, key, params)
    slots: list = []
    values = launcher.pack_args(params, infos, slots)
    ctx = types.SimpleNamespace(dev=None, drv=None)
    plan = GpuPlan(None, ctx, (ck.emitted.nt, 1, 1), values, slots, infos)
    return ck, plan, plan.arguments([i.ptr if isinstance(i, ArrayInfo) else i for i in infos])


def abi_mismatches(kernel, args, arch: str) -> list[str]:
    """What differs between the cubin's parameter table and limits and what GpuPlan launches."""
    ck, plan, packed = gpu_launch_of(kernel, args)
    cubin = compile_cubin(ck.compile_source(), arch, ck.name)
    info = kernel_info(cubin.data, ck.emitted.name)
    table = [(p.ordinal, p.offset, p.size) for p in info.params]
    ours = packed_layout(packed)
    out = []
    if table != ours:
        out.append(f"parameter table {table} != packed {ours}")
    end = max((o + n for _, o, n in ours), default=0)
    if info.param_bytes is not None and info.param_bytes != end:
        out.append(f"the cubin's parameter bytes {info.param_bytes} != packed {end}")
    if info.max_threads and any(b > m for b, m in zip(plan.block, info.max_threads)):
        out.append(f"block {plan.block} exceeds the cubin's max threads {info.max_threads}")
    if info.req_threads and tuple(plan.block) != tuple(info.req_threads):
        out.append(f"block {plan.block} != the cubin's required threads {info.req_threads}")
    if info.user_smem > STATIC_SMEM_LIMIT:
        out.append(f"static shared memory {info.user_smem} > {STATIC_SMEM_LIMIT}")
    if info.user_smem != cubin.resource_usage()["smem"]:
        out.append(f"the cubin's shared section ({info.static_smem} bytes, {info.reserved_smem} "
                   f"reserved) disagrees with ptxas's report ({cubin.resource_usage()['smem']})")
    return out


def _table_kernels():
    """The speed table's kernels (benchmarks/gpu.py) at its tile sizes, on small arrays."""
    import ml_dtypes
    from definitions import load
    bench = gpu_benchmark()
    MATMUL_TILES, ATTENTION_TILES = bench.MATMUL_TILES, bench.ATTENTION_TILES
    f16, bf16 = np.float16, ml_dtypes.bfloat16
    out = {}
    for dt, tiles in zip((f16, f16, bf16), MATMUL_TILES):
        a = np.zeros((256, 256), dt)
        out[f"table:matmul {np.dtype(dt).name} {tiles}"] = (
            load("03_matmul").matmul, (a, a, np.zeros((256, 256), np.float32), *tiles))
    x = np.zeros((8, 4096), np.float32)
    out["table:softmax 4096"] = (load("02_softmax").softmax, (x, x.copy(), 4096))
    w = np.zeros(4096, np.float32)
    m = np.zeros(8, np.float32)
    out["table:layernorm 4096"] = (load("04_layernorm").layernorm, (x, w, w, x.copy(), m, m.copy(), 1e-5, 1024))
    for d, (bm, bn) in ATTENTION_TILES.items():
        q = np.zeros((2, 256, d), f16)
        out[f"table:attention d={d}"] = (load("05_attention").attention, (q, q, q, q.copy(), 0.1, bm, bn, d))
    return out


TABLE = _table_kernels()


@pytest.mark.parametrize("name", sorted(TABLE))
def test_parameter_abi_of_the_speed_table(name):
    kernel, args = TABLE[name]
    assert abi_mismatches(kernel, args, "sm_90") == []


def test_attention_d128_with_64x64_tiles_compiles():
    """P @ V with d=128 and 64x64 tiles (once a compile error in tensorcore.h's as_operand)."""
    from definitions import load
    q = np.zeros((2, 256, 128), np.float16)
    assert abi_mismatches(load("05_attention").attention, (q, q, q, q.copy(), 0.1, 64, 64, 128),
                          "sm_90") == []


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(ALL))
def test_parameter_abi(name, arch):
    kernel, _, args, _ = ALL[name]()
    assert abi_mismatches(kernel, args, arch) == []


# ----------------------------------------------------------------------------- every class
@ct.kernel
def every_parameter(f0, a_bool, f1, a_i8, f2, a_i16, a_i32, a_i64, a_u8, a_u16, a_u32, a_u64,
                    a_f16, a_bf16, a_f32, a_f64, a_e4m3, a_e5m2, a_e8m0, s_bool, s_i8, s_i64,
                    s_u8, s_i16, s_u16, s_i32, s_u32, s_f16, s_f32, s_u64, f3, s_int, s_float):
    pass


def every_parameter_args():
    """One argument of each kind the intake takes (arrays of every dtype, 2-d and strided so
    their strides are parameters too; scalars of every dtype pack_args packs), with one-byte
    scalars in between so that parameters sit at every alignment."""
    import ml_dtypes
    dts = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
           ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu]
    arrays = [np.zeros((4, 6), dt)[:, ::2] for dt in dts]
    flag = np.bool_(True)
    scalars = [np.bool_(False), np.int8(-1), np.int64(-2), np.uint8(3), np.int16(-4),
               np.uint16(5), np.int32(-6), np.uint32(7), np.float16(0.5), np.float32(1.5),
               np.uint64(9)]
    return (flag, arrays[0], flag, arrays[1], flag, *arrays[2:], *scalars, flag, 11, 2.5)


def test_every_parameter_class():
    """The per-parameter classes (abi_coverage.py) are checked here, each against NVRTC's cubin
    for sm_80 and sm_90; `every_parameter` has exactly the classes COVERED lists, so the
    conftest's check of the whole suite against COVERED is a check against this test.

    Why per-parameter classes are enough: the driver copies parameter i's `size_i` bytes from
    kernelParams[i] to `offset_i` of the parameter buffer, and the cubin's table gives offset_i =
    align_up(offset_{i-1} + size_{i-1}, align_i) with (size_i, align_i) those of the parameter's
    C++ type (the C ABI; every cubin checked in this file shows it, and this kernel places each
    type after one-byte parameters). cuda.core packs each argument into its own buffer, so what
    reaches the kernel as parameter i depends on parameter i's C++ type and the value packed
    for it only: a kernel whose parameters are all of checked (C++ type, packed type) classes
    has a right ABI, whatever their number and order. Both halves of a class are functions of
    the specialization's host parameters (array: pointer + int32 extents + the non-unit strides;
    scalar: its dtype), recorded for every compile of the suite by tests/conftest.py, which
    fails the run when a class outside COVERED appears (a new dtype, a new kind of argument)."""
    from abi_coverage import COVERED, classes
    args = every_parameter_args()
    ck, _, _ = gpu_launch_of(every_parameter, args)
    key, params = every_parameter.specialize(
        [intake(a, n) or a for a, n in zip(args, every_parameter.signature.parameters)])
    assert classes(ck, params) == COVERED
    for arch in ("sm_80", "sm_90"):
        assert abi_mismatches(every_parameter, args, arch) == []


def test_the_suite_check_names_a_class_it_does_not_cover():
    from abi_coverage import Recorder
    seen = {("tp::ptr<float>", "pointer"): "vadd", ("tp::float4", "pointer"): "new_kind"}
    assert Recorder().uncovered(seen) == ["kernel 'new_kind' has a parameter tp::float4 packed "
                                          "as pointer"]


def test_the_gpu_plan_packs_each_value_at_its_width():
    kernel, _, args, _ = TUTORIAL_CASES["layernorm"]()
    _, _, packed = gpu_launch_of(kernel, args)
    widths = [type(v).__name__ for v in packed]
    assert widths[:4] == ["int", "int32", "int32", "int32"] and widths[-1] == "float32"


# ----------------------------------------------------------------------------- the ELF reader
CUOBJDUMP = shutil.which("cuobjdump") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(np.__file__))), "nvidia", "cu13", "bin",
    "cuobjdump")


@pytest.mark.skipif(not os.path.exists(CUOBJDUMP), reason="no cuobjdump (nvidia-cuda-cuobjdump)")
def test_reader_agrees_with_cuobjdump(tmp_path):
    kernel, _, args, _ = TUTORIAL_CASES["layernorm"]()
    ck, _, _ = gpu_launch_of(kernel, args)
    data = compile_cubin(ck.compile_source(), "sm_90", ck.name).data
    path = tmp_path / "k.cubin"
    path.write_bytes(data)
    text = subprocess.run([CUOBJDUMP, "-elf", str(path)], capture_output=True, text=True).stdout
    theirs = sorted((int(o, 16), int(off, 16), int(n, 16)) for o, off, n in re.findall(
        r"Ordinal : (0x[0-9a-f]+)\s+Offset\s+: (0x[0-9a-f]+)\s+Size\s+: (0x[0-9a-f]+)", text))
    info = kernel_info(data, ck.symbol)
    assert [(p.ordinal, p.offset, p.size) for p in info.params] == theirs and theirs
    threads = re.search(r"EIATTR_MAX_THREADS\s+Format:\s+EIFMT_SVAL\s+Value:\s+(\S+) (\S+) (\S+)", text)
    assert info.max_threads == tuple(int(x, 16) for x in threads.groups())
    smem = re.search(r"\.text\.tp_kernel_layernorm\s+lmem=\d+\s+smem=(\d+)", text)
    assert info.static_smem == int(smem.group(1)) and info.reserved_smem == 1024    # sm_90
    assert kernel_names(data) == ["tp_kernel_layernorm"]


def test_reader_rejects_what_is_not_a_cubin():
    with pytest.raises(ct.TileValueError, match="not a 64-bit ELF"):
        kernel_info(b"// PTX", "k")
    kernel, _, args, _ = TUTORIAL_CASES["vector_add"]()
    ck, _, _ = gpu_launch_of(kernel, args)
    with pytest.raises(ct.TileValueError, match="no kernel 'other'"):
        kernel_info(compile_cubin(ck.compile_source(), "sm_80", ck.name).data, "other")


# ----------------------------------------------------------------------------- seeded mistakes
@ct.kernel
def axpb(x, y, alpha, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * alpha + 1.0)


def _swap_first_two(real):
    def pack_args(params, infos, slots=None):
        values = real(params, infos, slots)
        values[0], values[1] = values[1], values[0]
        if slots:
            slots[0] = (1, None)                 # the pointer now travels in the second value
        return values
    return pack_args


def _float_as_double(monkeypatch):
    import ctypes
    monkeypatch.setitem(gpu.NP_SCALAR, ctypes.c_float, np.float64)


MISTAKES = {"swapped": lambda mp: mp.setattr(launcher, "pack_args", _swap_first_two(launcher.pack_args)),
            "mis-sized scalar": _float_as_double}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_seeded_packing_mistake_fails_both_checks(mistake, monkeypatch):
    x = np.arange(256, dtype=np.float32)
    y = np.zeros_like(x)
    assert abi_mismatches(axpb, (x, y, 2.0, 128), "sm_90") == []
    with FakeDriver():
        ct.launch(None, (2,), axpb, (cuda_array(x), cuda_array(y), 2.0, 128))
    np.testing.assert_array_equal(y, x * 2 + 1)
    MISTAKES[mistake](monkeypatch)
    axpb.__dict__.pop("_tp_plans", None)
    assert abi_mismatches(axpb, (x, y, 2.0, 128), "sm_90") != []
    y[:] = 0
    with FakeDriver():
        with pytest.raises(ct.TileLaunchError, match="packed as .* bytes"):
            ct.launch(None, (2,), axpb, (cuda_array(x), cuda_array(y), 2.0, 128))


def test_a_swap_of_two_pointers_fails_the_fake_driver(monkeypatch):
    """Two parameters of the same size swapped keep the table's sizes and offsets (the ABI
    check cannot see it); the fake driver runs the kernel and gets the wrong numbers."""
    @ct.kernel
    def sub(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) - ct.load(b, (i,), (TILE,)))
    a, b = np.arange(256, dtype=np.float32), np.ones(256, np.float32)
    c = np.zeros_like(a)
    real = launcher.pack_args

    def swap_a_b(params, infos, slots=None):
        values = real(params, infos, slots)
        values[0], values[2] = values[2], values[0]       # a's and b's pointers (a 1-d: ptr, n)
        if slots:
            slots[0], slots[1] = slots[1], slots[0]
        return values
    monkeypatch.setattr(launcher, "pack_args", swap_a_b)
    assert abi_mismatches(sub, (a, b, c, 128), "sm_90") == []
    with FakeDriver():
        ct.launch(None, (2,), sub, (cuda_array(a), cuda_array(b), cuda_array(c), 128))
    assert not np.array_equal(c, a - b) and np.array_equal(c, b - a)


def test_fake_driver_checks_sizes_itself():
    with pytest.raises(FakeCUDAError):
        FakeDriver().param_buffer(types.SimpleNamespace(info=types.SimpleNamespace(
            params=[types.SimpleNamespace(ordinal=0, offset=0, size=4)])), [np.float64(1.0)])
