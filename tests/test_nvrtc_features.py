"""NVRTC parses only the half-type support a kernel uses (launch/nvrtc.py `features`), and the
code it generates is the same as with everything parsed."""
import re
import subprocess

import numpy as np
import pytest

from tests.reference_kernels.cases import CASES
from tilepy.api.compiler import compile_for_args
from tilepy.launch import nvrtc, toolchain
from tilepy.tools import sass_stats


NEITHER = ["-DTP_DIRECTED=0", "-DTP_ORDERED=0"]    # no directed rounding, no ordered access


def test_features_follow_the_types_the_source_spells():
    assert nvrtc.features("float* p") == ["-DTP_BF16=0", "-DTP_FP16=0", *NEITHER]
    assert nvrtc.features("tp::ptr<__half> a") == ["-DTP_BF16=0", *NEITHER]
    assert nvrtc.features("tp::cvt<__nv_bfloat16>(x)") == NEITHER     # bf16 keeps fp16 too
    assert nvrtc.options("sm_90") == ["-arch=sm_90", *nvrtc.BASE_OPTIONS]
    assert nvrtc.options("sm_90", "float x;")[-4:] == ["-DTP_BF16=0", "-DTP_FP16=0", *NEITHER]
    assert nvrtc.features("tp::__half y = tp::op::addf_dir<1>{}(a, b);") == [
        "-DTP_BF16=0", "-DTP_ORDERED=0"]
    assert nvrtc.features("tp::store_ptr<tp::strong_access>(p, v); float x;") == [
        "-DTP_BF16=0", "-DTP_FP16=0", "-DTP_DIRECTED=0"]


def _sass(source: str, opts: list[str], tmp_path) -> list[str]:
    """The cubin's instructions with their operands (nvdisasm), without addresses."""
    tc = toolchain.info()
    ok, data, log = toolchain.nvrtc_lib().compile(source, "k.cu", nvrtc._headers(),
                                                  opts + [f"--include-path={tc.include_dir}"],
                                                  "cubin")
    assert ok, log
    path = tmp_path / "k.cubin"
    path.write_bytes(data)
    out = subprocess.run([sass_stats.find_tool("nvdisasm"), "-c", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return [m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s*([^;]*);", out)]


@pytest.mark.skipif(not sass_stats.find_tool("nvdisasm"), reason="nvdisasm not installed")
@pytest.mark.parametrize("name", ["vector_add", "softmax", "matmul_f16"])
def test_leaving_out_unused_half_types_changes_no_instruction(name, tmp_path):
    kernel, args, _, _ = CASES[name](np.random.default_rng(0))
    src = compile_for_args(kernel, args).compile_source()
    assert nvrtc.features(src)                  # something is left out
    trimmed = _sass(src, nvrtc.options("sm_90", src), tmp_path)
    assert len(trimmed) > 20 and trimmed == _sass(src, nvrtc.options("sm_90"), tmp_path)


def test_kernels_of_every_half_type_compile():
    for dtype in (np.float16, np.float32):
        kernel, args, _, _ = CASES["matmul_f16"](np.random.default_rng(0))
        args = tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype == np.float16
                     else a for a in args)
        src = compile_for_args(kernel, args).compile_source()
        assert nvrtc.compile_cubin(src, "sm_90", kernel.name).data[:4] == b"\x7fELF"
