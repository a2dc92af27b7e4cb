"""bfloat16 atomic add (cuTile's rule, per target: Tile IR 13.3 and sm_90 or later): the
interpreter and both CPU modes add in bfloat16 (each update rounded once); a GPU target before
sm_90 and bytecode before 13.3 are refused at the atomic's line, by cuTile's phrases."""
import io
import os

import numpy as np
import pytest

import tilepy as ct
from cutile_cases import run_case
from cutile_kernels.dtypes import bf16_histogram
from kernels_util import assert_located
from tilepy.compilation import CallingConvention, KernelSignature, export_kernel

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cutile_kernels", "dtypes.py")
X = (np.arange(64) % 7 * 0.5).astype(BF16)      # halves: every partial sum exact in bf16


@pytest.mark.parametrize("mode", ["interpret", "fast", "faithful"])
def test_bf16_atomic_add_sums(mode):
    out = np.zeros(4, BF16)
    ref = np.zeros(4)
    for i, v in enumerate(X.astype(np.float64)):
        ref[i % 16 % 4] += v
    run_case((bf16_histogram, (4,), (X, out, 16),
              lambda: np.testing.assert_array_equal(out.astype(np.float64), ref)), mode)


@pytest.mark.parametrize("arch,version,message", [
    ("sm_80", "13.3", "bfloat16 is not supported by atomic add on sm_80"),
    ("sm_90", "13.2", r"bfloat16 on atomic add requires tileiras 13\.3 or later\. Current "
                      r"version is 13\.2\."),
])
def test_bf16_atomic_add_needs_sm90_and_13_3(arch, version, message):
    sig = KernelSignature.from_kernel_args(bf16_histogram, (X, np.zeros(4, BF16), 16),
                                           CallingConvention.cutile_python_v1())
    with pytest.raises(ct.TileUnsupportedFeatureError, match=message) as info:
        export_kernel(bf16_histogram, [sig], io.BytesIO(), gpu_code=arch, output_format="cubin",
                      bytecode_version=version)
    assert_located(info.value, "BF16ADD", "ct.atomic_add", HERE)
    buf = io.BytesIO()                          # without a target: 13.3 bytecode
    export_kernel(bf16_histogram, [sig], buf, output_format="tileir_bytecode",
                  bytecode_version="13.3")
    assert buf.getvalue()
