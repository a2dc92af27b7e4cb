"""The tp:: warp wrappers' inline PTX assembles with NVRTC (no GPU needed): every wrapper, the
tensor-core GEMM and the broken-kernel corpus, for sm_80 and sm_90; instructions a target lacks
are a compile error naming the architecture they need."""
import glob
import os

import numpy as np
import pytest

import tilepy as ct
from faithful_util import BROKEN_KERNELS, WARP_KERNELS, build_file, kernel_source
from kernels_util import cubin_stats
from tilepy.launch.nvrtc import compile_cubin
from tilepy.tools import sass_stats

ALL = os.path.join(WARP_KERNELS, "all_wrappers.cu")
GEMM = os.path.join(WARP_KERNELS, "mma_gemm.cu")


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_every_wrapper_assembles(arch):
    fp8 = "#define TP_WITH_FP8 1\n" if arch != "sm_80" else ""
    cubin = compile_cubin(fp8 + kernel_source(ALL), arch, "allops")
    assert cubin.data[:4] == b"\x7fELF"
    usage = cubin.resource_usage()
    assert usage["registers"] > 0 and usage.get("spill_stores", 0) == 0, cubin.log
    if not sass_stats.available():
        pytest.skip("nvdisasm/cuobjdump not installed: SASS not checked")
    (r,) = cubin_stats(cubin.data, cubin.log).values()
    # at least one instruction per wrapper call of all_wrappers.cu: 5 f16/bf16/tf32 mma, 4 int8
    # mma, 6 ldmatrix, 3 cp.async, 7 shuffles (the f64 one is two)
    need = {"HMMA": 5, "IMMA": 4, "LDSM": 6, "LDGSTS": 3, "SHFL": 7}
    short = {k: (r["counts"][k], n) for k, n in need.items() if r["counts"][k] < n}
    assert not short, f"{arch}: wrappers missing from the SASS (got, need): {short}"


def test_every_wrapper_compiles_and_runs_in_faithful_mode():
    """The kernel using every wrapper builds and runs to the end in faithful mode: all 128
    threads write their outputs (pre-filled with sentinels), and on zero input every result is
    exactly zero (each wrapper's numerics: test_warp_mma.py, test_warp_shfl.py)."""
    k = build_file(ALL, "allops", threads=128)
    a = np.zeros(64 * 8 * 2, np.float16)
    out, iout = np.full(128, np.nan, np.float32), np.full(128, -1, np.int32)
    q = np.full(128, 0xFF, np.uint8)
    k((1,), a, out, iout, q)
    assert np.array_equal(out, np.zeros(128, np.float32))
    assert np.array_equal(iout, np.zeros(128, np.int32))
    assert np.array_equal(q, np.zeros(128, np.uint8))


def test_instruction_missing_on_the_target_is_a_compile_error():
    with pytest.raises(ct.TileCompileError) as e:
        compile_cubin("#define TP_WITH_FP8 1\n" + kernel_source(ALL), "sm_80", "allops")
    assert "tp_error_instruction_needs_sm89" in e.value.log


HAND_WRITTEN = [GEMM] + sorted(glob.glob(os.path.join(BROKEN_KERNELS, "*.cu")))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("path", HAND_WRITTEN, ids=[os.path.basename(p)[:-3] for p in HAND_WRITTEN])
def test_hand_written_kernels_compile_for_the_gpu(path, arch):
    fix = "#define TP_FIX 1\n" if "broken" in path else ""
    cubin = compile_cubin(fix + kernel_source(path), arch, os.path.basename(path)[:-3])
    assert cubin.resource_usage().get("spill_stores", 0) == 0, cubin.log
