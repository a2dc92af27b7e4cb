"""Every tutorial kernel's CUDA C++ compiles with NVRTC for sm_80 and sm_90 (no GPU needed)."""
import os

import numpy as np
import pytest
from definitions import load as tutorial
from kernels_util import cubin_stats

import tilepy as ct
from tilepy.api.compiler import compile_for_args
from tilepy.launch.nvrtc import compile_cubin
from tilepy.tools import sass_stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tutorial_kernels():
    f32, f16 = np.float32, np.float16
    vadd = tutorial("01_vector_add").vector_add
    sm = tutorial("02_softmax").softmax
    mm = tutorial("03_matmul").matmul
    v = np.zeros(1000, f32)
    yield "vector_add", vadd, (v, v, v, 256)
    for dt in (f32, f16):
        x = np.zeros((10, 1000), dt)
        yield f"softmax_{np.dtype(dt).name}", sm, (x, x, 1024)
        A = np.zeros((200, 130), dt)
        B = np.zeros((130, 150), dt)
        C = np.zeros((200, 150), f32)
        yield f"matmul_{np.dtype(dt).name}", mm, (A, B, C, 64, 64, 32)


CASES = list(tutorial_kernels())


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name,kernel,args", CASES, ids=[c[0] for c in CASES])
def test_tutorial_kernel_compiles_with_nvrtc(name, kernel, args, arch):
    ck = compile_for_args(kernel, args)
    cubin = compile_cubin(ck.compile_source(), arch, ck.name)
    assert cubin.data[:4] == b"\x7fELF"
    usage = cubin.resource_usage()
    assert usage.get("registers", 0) > 0, cubin.log
    assert usage.get("spill_stores", 0) == 0 or name.startswith("matmul"), cubin.log
    if not sass_stats.available():
        pytest.skip("nvdisasm/cuobjdump not installed: SASS not checked")
    kernels = cubin_stats(cubin.data, cubin.log)
    assert list(kernels) == [ck.symbol], kernels.keys()        # one entry, the kernel's symbol
    counts = kernels[ck.symbol]["counts"]
    need = [k for prefix, ks in SASS_NEEDS.items() if name.startswith(prefix) for k in ks]
    assert all(counts[k] > 0 for k in need), (name, arch, need, counts)


# what each kernel must become: 128-bit global accesses, warp-shuffle reductions, tensor cores
SASS_NEEDS = {"vector_add": ["LDG.E.128", "STG.E.128"], "softmax": ["SHFL"],
              "matmul_float16": ["HMMA", "LDSM"]}


def test_nvrtc_error_is_reported_with_log():
    with pytest.raises(ct.TileCompileError) as e:
        compile_cubin('#include "tilepy/runtime.h"\nextern "C" __global__ void k() { undefined_fn(); }\n',
                      "sm_80", "broken")
    assert "undefined_fn" in e.value.log
    assert "NVRTC could not compile" in str(e.value)
