"""tileiras as a second GPU compiler: `kernel.compile(..., compiler="tileiras")` gives cubins
from tilepy's Tile IR bytecode (no GPU needed); NVIDIA's compiler uses the tensor cores of each
architecture (HGMMA on sm_90, tcgen05 on sm_100) for the tutorial's f16 matmul."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tilepy.errors import TileValueError
from tilepy.launch import tileiras
from tilepy.tools.sass_stats import find_tool

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tutorials"))
from definitions import load  # noqa: E402

pytestmark = pytest.mark.skipif(tileiras.unusable() is not None, reason=str(tileiras.unusable()))
NVDISASM = find_tool("nvdisasm")


def _vector_add_args(n=4096, tile=1024):
    a = np.zeros(n, np.float32)
    return a, a.copy(), a.copy(), tile


def _matmul_args():
    return (np.zeros((256, 128), np.float16), np.zeros((128, 256), np.float16),
            np.zeros((256, 256), np.float32), 64, 64, 32)


def _sass(cubin: bytes, tmp_path) -> str:
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    return subprocess.run([NVDISASM, "-c", str(path)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_vector_add_cubin(arch):
    c = load("01_vector_add").vector_add.compile(*_vector_add_args(), arch=arch,
                                                 compiler="tileiras")
    assert c.kind == "cubin" and c.data[:4] == b"\x7fELF" and c.arch == arch
    assert c.block[0] > 0 and c.block[0] % 32 == 0
    assert c.c_params == [("float*", "a"), ("int32_t", "a_shape_0"), ("float*", "b"),
                          ("int32_t", "b_shape_0"), ("float*", "c"), ("int32_t", "c_shape_0")]
    assert c.versions["tileiras"] == tileiras.tileiras_version()
    from tilepy.launch.cubin_info import kernel_info
    table = kernel_info(c.data, "vector_add").params          # what the driver lays out
    assert [p.size for p in table] == [8, 4, 8, 4, 8, 4]       # pointers and int32 extents


@pytest.mark.skipif(NVDISASM is None, reason="nvdisasm not installed")
@pytest.mark.parametrize("arch, mma", [("sm_80", "HMMA.16816.F32"), ("sm_90", "HGMMA."),
                                       ("sm_100", "UTCHMMA")])
def test_matmul_uses_each_architectures_tensor_cores(arch, mma, tmp_path):
    c = load("03_matmul").matmul.compile(*_matmul_args(), arch=arch, compiler="tileiras")
    assert mma in _sass(c.data, tmp_path)


@pytest.mark.skipif(NVDISASM is None, reason="nvdisasm not installed")
def test_matmul_states_nvidias_facts_and_keeps_tma(tmp_path):
    """Extents and strides carry NVIDIA's `bounded<0, ?>` (beside the specialization's
    `div_by<16>`), as cuTile writes them; NVIDIA's verifier reads them and tileiras' sm_90 code
    still loads the tiles with TMA (UTMALDG)."""
    import bytecode_util as bu
    k = load("03_matmul").matmul
    text = bu.disasm(k.bytecode(*_matmul_args())).stdout
    assert text.count("bounded<0, ?>") == 9          # 3 arrays x (2 extents + 1 stride)
    assert "div_by<16>" in text
    assert "UTMALDG" in _sass(k.compile(*_matmul_args(), arch="sm_90", compiler="tileiras").data,
                              tmp_path)


def test_cubins_are_cached_on_disk(tmp_path, monkeypatch):
    from tilepy.bytecode import write_module
    from tilepy.api.compiler import compile_for_args
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path))
    data = write_module(compile_for_args(load("01_vector_add").vector_add,
                                         _vector_add_args(2048, 256)).module)
    first = tileiras.assemble(data, "sm_90", "vector_add")

    def no_second_run(*a):
        raise AssertionError("tileiras ran again for the same bytecode")
    monkeypatch.setattr(tileiras, "_run", no_second_run)
    assert tileiras.assemble(data, "sm_90", "vector_add").data == first.data


def test_a_cached_cubin_asks_tileiras_nothing(tmp_path, monkeypatch):
    """A new process finding its cubin in the disk cache runs no tileiras at all: not even
    `tileiras --version` (its answer is cached under the tool's file identity)."""
    from tilepy.bytecode import write_module
    from tilepy.api.compiler import compile_for_args
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path))
    data = write_module(compile_for_args(load("01_vector_add").vector_add,
                                         _vector_add_args(1024, 256)).module)
    tileiras._version.cache_clear()
    first = tileiras.assemble(data, "sm_90", "vector_add")
    tileiras._version.cache_clear()             # as in a new process

    def no_process(*a, **k):
        raise AssertionError("tileiras was run for a cached cubin")
    monkeypatch.setattr(tileiras.subprocess, "run", no_process)
    assert tileiras.assemble(data, "sm_90", "vector_add").data == first.data
    tileiras._version.cache_clear()


def test_bad_compiler_and_arch_are_named():
    k = load("01_vector_add").vector_add
    with pytest.raises(TileValueError, match="compiler must be one of nvrtc, tileiras"):
        k.compile(*_vector_add_args(), compiler="nvcc")
    with pytest.raises(TileValueError, match="arch must be sm_XX"):
        k.compile(*_vector_add_args(), arch="cpu", compiler="tileiras")


def test_required_threads_reads_the_cubin():
    c = load("01_vector_add").vector_add.compile(*_vector_add_args(), arch="sm_90",
                                                 compiler="tileiras")
    assert tileiras.required_threads(c.data, "vector_add") == c.block
    assert tileiras.required_threads(c.data, "no_such_kernel") is None


def _corpus():
    import bytecode_util as bu
    return {**bu.tutorial_modules(), **bu.cutile_modules()}


_ARCH_CASES = [(n, "sm_90") for n in sorted(_corpus())] + [
    (n, a) for n in sorted(_corpus()) if n.startswith("tutorial:") for a in ("sm_80", "sm_100")]


@pytest.mark.slow
@pytest.mark.parametrize("name, arch", _ARCH_CASES)
def test_tutorial_and_suite_kernels_compile(name, arch):
    """Every tutorial and suite kernel for sm_90, the tutorials also for sm_80 and sm_100
    (benchmarks/tileiras_corpus.py sweeps all of them for every arch)."""
    from tilepy.bytecode import write_module
    code = tileiras.assemble(write_module(_corpus()[name]()), arch, "kernel")
    assert code.data[:4] == b"\x7fELF"


def test_tileiras_errors_point_at_the_python_line():
    """tileiras reports the bytecode's debug location of the op it rejects (fp8 on sm_80):
    the error carries the kernel's line. (The C++ backend has no e5m2 values at all: the
    tileiras path does not go through it.)"""
    import tilepy as ct
    from tilepy.errors import TileCompileError

    @ct.kernel
    def to_fp8(x, y, T: ct.Constant[int]):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,))
        ct.store(y, index=(ct.bid(0),), tile=t.astype(ct.float8_e5m2).astype(ct.float32))  # MARKER

    x = np.zeros(64, np.float32)
    with pytest.raises(TileCompileError) as err:
        to_fp8.compile(x, x.copy(), 64, arch="sm_80", compiler="tileiras")
    marker = next(i for i, text in enumerate(pathlib.Path(__file__).read_text().splitlines(), 1)
                  if text.rstrip().endswith("# MARKER") and "float8_e5m2" in text)
    assert err.value.loc.file == __file__ and err.value.loc.line == marker
    assert "unsupported type 'f8E5M2'" in str(err.value)


@pytest.mark.slow
def test_tileiras_cubins_take_the_same_parameters_as_nvrtcs():
    """For every cuTile-suite kernel, tileiras' cubin lays out the launch parameters (offset,
    size) exactly as tilepy's NVRTC cubin does, so the launch path's packing fits both (tileiras
    writes them as EIATTR_KPARAM_INFO_V2, which cubin_info reads)."""
    import test_cutile_suite as suite
    from tilepy.api.compiler import compile_for_args
    from tilepy.bytecode import write_module
    from tilepy.launch.cubin_info import kernel_info
    for name, case in suite.CASES.items():
        kernel, _grid, args, _check = case()
        ck = compile_for_args(kernel, args)
        ours = kernel_info(ck.binary("sm_90").data, ck.symbol).params
        theirs = kernel_info(tileiras.assemble(write_module(ck.module), "sm_90", ck.name).data,
                             ck.name).params
        assert [(p.offset, p.size) for p in theirs] == [(p.offset, p.size) for p in ours], name
        assert ours, name
