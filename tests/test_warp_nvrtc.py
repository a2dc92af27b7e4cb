"""The tp:: warp wrappers' inline PTX assembles with NVRTC (no GPU needed): every wrapper, the
tensor-core GEMM and the broken-kernel corpus, for sm_80 and sm_90; instructions a target lacks
are a compile error naming the architecture they need."""
import glob
import os

import pytest

import tilepy as ct
from faithful_util import BROKEN_KERNELS, WARP_KERNELS, build_file, kernel_source
from tilepy.launch.nvrtc import compile_cubin

ALL = os.path.join(WARP_KERNELS, "all_wrappers.cu")
GEMM = os.path.join(WARP_KERNELS, "mma_gemm.cu")


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_every_wrapper_assembles(arch):
    fp8 = "#define TP_WITH_FP8 1\n" if arch != "sm_80" else ""
    cubin = compile_cubin(fp8 + kernel_source(ALL), arch, "allops")
    assert cubin.data[:4] == b"\x7fELF"
    usage = cubin.resource_usage()
    assert usage["registers"] > 0 and usage.get("spill_stores", 0) == 0, cubin.log


def test_every_wrapper_compiles_in_faithful_mode():
    build_file(ALL, "allops", threads=128)


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
