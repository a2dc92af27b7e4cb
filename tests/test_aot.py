"""Ahead-of-time compilation: cubins for sm_80 and sm_90 (and PTX, and the CPU library) with
their metadata, from example arguments or a signature, without a GPU."""
import json
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest
from definitions import load as tutorial
from fake_arrays import FakeCAI

import tilepy as ct
from tilepy import aot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


vector_add = tutorial("01_vector_add").vector_add
matmul = tutorial("03_matmul").matmul


def cubin_sm(data: bytes) -> int:
    """The SM version a cubin was built for, from its ELF header (e_flags bits 8-15)."""
    assert data[:4] == b"\x7fELF" and data[4] == 2          # 64-bit ELF
    return (struct.unpack_from("<I", data, 0x30)[0] >> 8) & 0xFF


VADD_SIG = ("float32[::1]", "float32[::1]", "float32[::1]", 256)
MM_SIG = ("float16[:, ::1]", "float16[:, ::1]", "float32[:, ::1]", 64, 64, 32)


@pytest.mark.parametrize("arch,sm", [("sm_80", 80), ("sm_90", 90)])
@pytest.mark.parametrize("kernel,sig", [(vector_add, VADD_SIG), (matmul, MM_SIG)],
                         ids=["vector_add", "matmul_f16"])
def test_aot_cubin_from_signature(kernel, sig, arch, sm):
    c = kernel.compile(*sig, arch=arch)
    assert c.kind == "cubin" and c.arch == arch and cubin_sm(c.data) == sm
    assert c.name == kernel.name and c.block[0] > 0 and c.block[1:] == (1, 1)
    assert c.signature == [str(s) if isinstance(s, str) else f"const {s!r}" for s in sig]
    assert c.c_params[0][1] == kernel.func.__code__.co_varnames[0]
    assert c.resource_usage()["registers"] > 0
    assert f"'{arch}'" in c.log or arch in c.log                # ptxas report for this arch
    meta = json.loads(json.dumps(c.metadata))                   # JSON-clean
    assert meta["versions"]["nvrtc"] and meta["versions"]["tilepy"] == ct.__version__


def test_aot_from_example_arguments_matches_signature():
    a = np.zeros(1000, np.float32)
    by_sig = vector_add.compile(*VADD_SIG, arch="sm_90")
    spec = aot.array(ct.float32, 1)
    assert vector_add.compile(spec, spec, spec, 256, arch="sm_90").data == by_sig.data
    # Example arrays also fix what the code may assume (here: 16-byte aligned, 4000 bytes a
    # multiple of 16, and the three arguments are one array, so none is disjoint); the signature says so, and compiling
    # that signature text reproduces the same binary.
    by_example = vector_add.compile(a, a, a, 256, arch="sm_90")
    assert by_example.signature[0] == "float32[::1]{align16 shape16:0}"
    again = vector_add.compile(*by_example.signature[:3], 256, arch="sm_90")
    assert again.signature == by_example.signature and again.data == by_example.data
    a, b, c = (np.zeros(1024, np.float32) for _ in range(3))
    disjoint = vector_add.compile(a, b, c, 256, arch="sm_90")
    assert disjoint.signature[0] == "float32[::1]{align16 shape16:0 disjoint}"


def test_aot_launch_checks_every_specialized_property():
    a, b, c = (np.zeros(1024, np.float32) for _ in range(3))
    k = vector_add.compile(a, b, c, 256, arch="cpu")
    k.launch(None, (4,), (a + 1, b + 2, c, 256))
    np.testing.assert_array_equal(c, 3)
    buf = np.zeros(1100, np.float32)
    with pytest.raises(ct.TileValueError, match="not 16-byte aligned"):
        k.launch(None, (4,), (buf[1:1025], b, c, 256))
    with pytest.raises(ct.TileValueError, match="not a multiple of 16 bytes"):
        k.launch(None, (4,), (buf[:1002], b, c, 256))
    with pytest.raises(ct.TileValueError, match="overlaps another array"):
        k.launch(None, (4,), (a, a, c, 256))
    assert aot.parse("float16[:, ::1]{align16 shape16:0,1 stride16:0 disjoint}") == aot.ArraySpec(
        ct.float16, 2, (False, True), True, (True, True), (True, False), True)
    with pytest.raises(ct.TileTypeError, match="property"):
        aot.parse("float16[:, ::1]{aligned}")


def test_aot_signature_keeps_only_facts_the_code_reads():
    """The extent of a dimension without unit stride is read by no code: a signature stating
    it compiles to one that does not, and arrays without it launch."""
    k = vector_add.compile("float32[:]{shape16:0}", "float32[:]", "float32[:]", 256, arch="cpu")
    assert k.signature[0] == "float32[:]"
    buf = np.arange(4096, dtype=np.float32)
    out = np.zeros(4096, np.float32)
    a, b = buf[::2][:1022], buf[1::2][:1022]                # 4088 bytes: not a multiple of 16
    k.launch(None, (4,), (a, b, out[::2][:1022], 256))
    np.testing.assert_array_equal(out[::2][:1022], a + b)


def test_aot_strided_signature_differs_from_contiguous():
    strided = vector_add.compile("float32[:]", "float32[:]", "float32[:]", 256, arch="sm_80")
    contiguous = vector_add.compile(*VADD_SIG, arch="sm_80")
    assert len(strided.c_params) == len(contiguous.c_params) + 3    # one stride per array
    assert strided.signature[0] == "float32[:]"


def test_aot_ptx_and_scalar_params():
    @ct.kernel
    def saxpy(x, y, alpha, n):
        i = ct.bid(0)
        t = ct.load(x, (i,), (128,)) * alpha + ct.load(y, (i,), (128,))
        ct.store(y, (i,), t + n)
    c = saxpy.compile("float32[::1]", "float32[::1]", ct.float32, "int32", arch="compute_80")
    assert c.kind == "ptx" and b".target sm_80" in c.data
    assert c.signature == ["float32[::1]", "float32[::1]", "float32", "int32"]
    assert [t for t, _ in c.c_params][-2:] == ["float", "int32_t"]


def test_aot_works_without_touching_the_driver(tmp_path):
    """In a fresh process, AOT compile never loads libcuda (it would hang without a driver)."""
    code = f"""
import sys
sys.path[:0] = [{os.path.join(ROOT, 'tests')!r}, {os.path.join(ROOT, 'tutorials')!r}]
import cuda.pathfinder
def forbidden(name, *a, **k):
    if name == "cuda":
        raise AssertionError("AOT compile tried to load the driver")
    return real(name, *a, **k)
real = cuda.pathfinder.load_nvidia_dynamic_lib
cuda.pathfinder.load_nvidia_dynamic_lib = forbidden
from test_aot import vector_add, VADD_SIG, cubin_sm
c = vector_add.compile(*VADD_SIG, arch="sm_90")
print(cubin_sm(c.data))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "TILEPY_CACHE_DIR": str(tmp_path)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "90"


def test_save_and_load(tmp_path):
    c = vector_add.compile(*VADD_SIG, arch="sm_90")
    cubin_path, meta_path = c.save(str(tmp_path / "vadd_sm90"))
    assert pathlib.Path(cubin_path).read_bytes() == c.data
    assert json.loads(pathlib.Path(meta_path).read_text())["signature"] == c.signature
    back = aot.load(str(tmp_path / "vadd_sm90"))
    assert back.data == c.data and back.signature == c.signature and back.block == c.block
    assert back.c_params == c.c_params


def test_cpu_build_runs_and_checks_its_signature(tmp_path):
    c = vector_add.compile(*VADD_SIG, arch="cpu")
    assert c.kind == "cpu" and c.data[:4] == b"\x7fELF"
    a = np.arange(1000, dtype=np.float32)
    b = np.ones(1000, np.float32)
    out = np.zeros(1000, np.float32)
    c.launch(None, (4,), (a, b, out, 256))
    assert (out == a + b).all()
    c.save(str(tmp_path / "vadd_cpu"))
    back = aot.load(str(tmp_path / "vadd_cpu"))
    out[:] = 0
    back.launch(None, (4,), (a, b, out, 256))
    assert (out == a + b).all()
    # A saved library carries the worker pool (cpu_pool.h) that kernels built for this process
    # leave to the pool library: it may run where no compiler can build one.
    run = (f"import numpy as np\nfrom tilepy import aot\nfrom tilepy.launch import cpu\n"
           f"k = aot.load({str(tmp_path / 'vadd_cpu')!r})\n"
           f"a = np.arange(4000, dtype=np.float32)\nout = np.zeros_like(a)\n"
           f"k.launch(None, (16,), (a, a, out, 256))\n"
           f"print(bool((out == 2 * a).all()), cpu.POOL['run'] is not None)\n")
    p = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120,
                       env={**{k: v for k, v in os.environ.items() if k != "TILEPY_CXX"},
                            "PATH": str(tmp_path), "TILEPY_CPU_WORKERS": "2"})   # no compiler
    assert p.stdout.split() == ["True", "True"], p.stderr[-2000:]


def test_launch_errors_of_a_compiled_kernel(no_driver):
    gpu = vector_add.compile(*VADD_SIG, arch="sm_90")
    host = vector_add.compile(*VADD_SIG, arch="cpu")
    a = np.zeros(1000, np.float32)
    cases = [
        (host, (a.astype(np.float16), a, a, 256), ct.TileTypeError,
         "compiled for float32\\[::1\\], got dtype float16: "
         "the kernel was not specialized for float16"),
        (host, (a.reshape(10, 100), a, a, 256), ct.TileTypeError, "got a 2-D array \\(wrong rank\\)"),
        (host, (a[::2], a, a, 256), ct.TileValueError, "dimension 0 must have unit stride"),
        (host, (a, a, a, 128), ct.TileValueError,
         "const 256 \\(a Constant baked into the binary\\), got 128"),
        (host, (a, a), ct.TileTypeError, "compiled for 4 argument"),
        (host, (a, a, 1.0, 256), ct.TileTypeError, "got float"),
        (host, (FakeCAI((1000,)), FakeCAI((1000,)), FakeCAI((1000,)), 256), ct.TileValueError,
         "CUDA arrays passed to a CPU launch"),
        (gpu, (a, a, a, 256), ct.TileValueError, "CPU arrays passed to a GPU launch: kernel "
                                                 "'vector_add' was compiled for sm_90"),
    ]
    for c, args, err, msg in cases:
        with pytest.raises(err, match=msg):
            c.launch(None, (4,), args)


def test_bad_signatures():
    with pytest.raises(ct.TileTypeError, match="unknown dtype 'float12'"):
        vector_add.compile("float12[:]", "float32[:]", "float32[:]", 256)
    with pytest.raises(ct.TileTypeError, match="each is ':' or '::1'"):
        vector_add.compile("float32[1:]", "float32[:]", "float32[:]", 256)
    with pytest.raises(ct.TileTypeError, match="takes 4 argument"):
        vector_add.compile("float32[:]")
    with pytest.raises(ct.TileCompileError, match="unknown target architecture 'gfx90a'"):
        vector_add.compile(*VADD_SIG, arch="gfx90a")


@pytest.mark.parametrize("arch,cc,runs", [("sm_80", (8, 0), True), ("sm_80", (8, 6), True),
                                          ("sm_86", (8, 0), False), ("sm_80", (9, 0), False),
                                          ("sm_90", (9, 0), True), ("sm_90a", (9, 0), True),
                                          ("sm_90a", (10, 0), False), ("sm_100a", (10, 3), False),
                                          ("sm_120", (12, 1), True), ("sm_75", (7, 5), True)])
def test_which_gpus_a_cubin_runs_on(arch, cc, runs):
    why = aot.cubin_mismatch(arch, cc)
    assert (why is None) == runs
    if not runs:
        assert f"compiled for {arch} and cannot run on this GPU (sm_{cc[0]}{cc[1]})" in why
