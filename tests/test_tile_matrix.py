"""Issue 13: the configurations users pick for speed compile for sm_80 and sm_90 and match numpy
on the CPU backend in both modes, at reduced sizes. Attention: head dim 32-256 x BM 64/128 x BN
32/64/128 at the shortest sequence with more than one key block and ragged edges; the whole
matrix (24 configurations, both modes, NVRTC sm_80/sm_90 with registers and spills) is
`python benchmarks/attention_matrix.py`; here a subset that takes every d, BM and BN. Softmax
and layernorm with 4096-wide rows, the 64x64 transpose."""
import functools

import numpy as np
import pytest

import tilepy as ct
from tests.kernels_util import cubin_stats
from tests.reference_kernels import cases
from tilepy.api.compiler import compile_for_args


@pytest.fixture(params=["fast", "faithful"])
def mode(request):
    with ct.cpu_mode(request.param):
        yield request.param


def _run(case):
    kernel, args, grid, check = case
    ct.launch(None, grid, kernel, args)
    check()


# every d, BM and BN once; (128, 128, 64) is the size, (256, 64, 64) reads P from
# registers as the A operand (V does not fit two pipeline stages)
ATTENTION = [(32, 128, 32), (64, 64, 128), (128, 128, 64), (256, 64, 64)]


@pytest.mark.parametrize("d, bm, bn", ATTENTION)
def test_attention_matrix_matches_numpy(d, bm, bn, mode):
    _run(cases.case_attention_ragged(np.random.default_rng(d + bm + bn), d, bm, bn))


ROWS = {"softmax_4096": lambda rng: cases.case_softmax(rng, cols=4096),
        "layernorm_4096_tile_1024": lambda rng: cases.case_layernorm(rng, n=4096, tile=1024),
        "layernorm_4096_tile_4096": lambda rng: cases.case_layernorm(rng, n=4096, tile=4096),
        "transpose_64_ragged": lambda rng: cases.case_transpose(rng, 100, 72),
        "transpose_64": lambda rng: cases.case_transpose(rng, 128, 64)}


@pytest.mark.parametrize("name", ROWS)
def test_row_kernels_and_transpose_match_numpy(name, mode):
    _run(ROWS[name](np.random.default_rng(4096)))


@functools.cache
def _source(name):
    kernel, args, _, _ = ROWS[name](np.random.default_rng(0))
    return compile_for_args(kernel, args)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", ["softmax_4096", "layernorm_4096_tile_1024",
                                  "layernorm_4096_tile_4096", "transpose_64"])
def test_row_kernels_and_transpose_compile(name, arch):
    from tilepy.launch.nvrtc import compile_cubin
    ck = _source(name)
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    assert cb.data[:4] == b"\x7fELF"


STACKY = r'''
extern "C" __global__ void stacky(float* p, int i, int n) {
    float a[256];
    for (int j = 0; j < n; ++j) a[j & 255] = p[j * blockDim.x + threadIdx.x];
    p[threadIdx.x] = a[i & 255];
}
'''


def test_sass_stats_reads_the_stack_frame_from_the_cubin():
    # cuobjdump's LOCAL column stays 0 for a stack frame (spills, local arrays): the frame size
    # is EIATTR_FRAME_SIZE in the cubin, the same number ptxas reports
    import re

    from tilepy.launch.nvrtc import compile_cubin
    from tilepy.tools import sass_stats
    if not sass_stats.available():
        pytest.skip("nvdisasm/cuobjdump not installed")
    cb = compile_cubin(STACKY, "sm_80", "stacky")
    (r,) = sass_stats.stats(cb.data).values()
    (frame,) = re.findall(r"(\d+) bytes stack frame", cb.log)
    assert r["stack"] == int(frame) >= 256 and r["counts"]["LDL/STL"] > 0, (r["stack"], cb.log)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_transposed_tile_is_stored_with_128_bit_stores(arch):
    # the transposed 64x64 f32 tile is gathered from shared memory word by word; NVVM split its
    # 16-byte stores into 4 STG each (56 scalar stores: 8 chunks x 4, plus the ragged edge's 3)
    from tilepy.launch.nvrtc import compile_cubin
    from tilepy.tools import sass_stats
    if not sass_stats.available():
        pytest.skip("nvdisasm/cuobjdump not installed")
    x = np.zeros((4096, 4096), np.float32)
    ck = compile_for_args(cases.transpose.transpose, (x, x.copy(), 64))
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    (r,) = cubin_stats(cb.data).values()
    stores = [op for op in r["ops"] if op.startswith("STG")]
    assert r["counts"]["STG.E.128"] == 8 and len(stores) == 8 + 8 * 3, stores


# ------------------------------------------------------------------ num_ctas, occupancy
def _registers(kernel, args, arch):
    from tilepy.launch.nvrtc import compile_cubin
    from tilepy.tools.sass_stats import elf_resources
    ck = compile_for_args(kernel, args)
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    return ck.cuda_source, elf_resources(cb.data)[ck.symbol]["registers"]


def _matmul(**options):
    kernel, args, grid, check = cases.case_matmul(np.random.default_rng(1))   # 64x64x32, 4 warps
    return kernel.replace_hints(**options) if options else kernel, args, grid, check


def test_occupancy_bounds_the_registers_per_thread():
    # 65536 registers / (128 threads x 8 blocks) = 64 per thread (120 without the option)
    kernel, args, _, _ = _matmul(occupancy=8)
    src, regs = _registers(kernel, args, "sm_80")
    assert "__launch_bounds__(TP_NT, TP_MIN_BLOCKS)" in src and "#define TP_MIN_BLOCKS 8" in src
    assert regs <= 64, regs
    assert _registers(_matmul()[0], args, "sm_80")[1] > 64


def test_occupancy_by_target_is_chosen_per_arch():
    kernel, args, _, _ = _matmul(occupancy=ct.ByTarget(sm_90=8, default=1))
    src, regs90 = _registers(kernel, args, "sm_90")
    assert "__CUDA_ARCH__ == 900" in src and regs90 <= 64
    assert _registers(kernel, args, "sm_80")[1] > 64


def test_kernel_options_run_on_the_cpu():
    # the options only add __launch_bounds__(TP_NT, TP_MIN_BLOCKS), an empty macro in the CPU
    # shim, so the mode does not matter here (one compile, fast): the same matmul runs in both
    # modes, without the options, in test_codegen.py::test_reference_kernels[matmul_f16]
    kernel, args, grid, check = _matmul(occupancy=2, num_ctas=2)
    with ct.cpu_mode("fast"):
        ct.launch(None, grid, kernel, args)
    check()


def test_options_are_entry_hints_and_num_ctas_is_a_no_op_in_cpp():
    # as cuTile writes them: tileiras reads them from the bytecode; the C++ has no cluster
    kernel, args, _, _ = _matmul(num_ctas=ct.ByTarget(sm_90=2), occupancy=3)
    ck = compile_for_args(kernel, args)
    assert "optimization_hints=<default = {occupancy = 3}, sm_90 = {num_cta_in_cga = 2}>" \
        in ck.mlir, ck.mlir.splitlines()[1]
    src = ck.cuda_source
    assert "// num_ctas {'sm_90': 2}: no cluster" in src and "__cluster_dims__" not in src
    assert "#define TP_MIN_BLOCKS 3" in src


def test_by_target_names_an_architecture():
    with pytest.raises(ValueError, match="Invalid GPU architecture name: hopper, expected sm_"):
        cases.matmul.matmul.replace_hints(occupancy=ct.ByTarget(hopper=2))


def test_tileiras_honors_the_occupancy_hint():
    from tilepy.bytecode import write_module
    from tilepy.launch.tileiras import assemble, unusable
    from tilepy.tools.sass_stats import elf_resources
    if unusable():
        pytest.skip(unusable())
    kernel, args, _, _ = _matmul(occupancy=ct.ByTarget(sm_80=8))
    cb = assemble(write_module(compile_for_args(kernel, args).module), "sm_80", "matmul")
    assert elf_resources(cb.data)["matmul"]["registers"] <= 64     # 106 without the hint


def test_the_real_size_sass_table_prints_its_rows(capsys):
    import importlib.util
    import pathlib

    from tilepy.tools import sass_stats
    if not sass_stats.available():
        pytest.skip("nvdisasm/cuobjdump not installed")
    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "sass.py"
    spec = importlib.util.spec_from_file_location("sass_benchmark", path)
    sass = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sass)
    assert set(sass.real_size_cases()) >= {"gemm bf16 256x128x32", "attention d128 128x64",
                                            "softmax 4096", "transpose 64x64 f32"}
    sass.main(["--real-size", "--arch", "sm_80", "--only", "transpose 64x64 f32"])
    head, _, row = capsys.readouterr().out.splitlines()[:3]
    cells = {}
    for name, cell in zip(head.split(" | "), row.split(" | ")):
        cells.setdefault(name, cell)                          # ours: the first of each name
    assert cells["stack B"] == "0" and cells["STG.128"] == "8" and cells["LDG.128"] == "8", row
