"""What the reference kernels become on the GPU, read from NVRTC cubins (no GPU needed): tensor
cores, ldmatrix and cp.async for the f16 matmul, 128-bit loads, warp-shuffle reductions, no
spills (tilepy/tools/sass_stats.py; the nvidia-cuda-nvdisasm wheel of the test extra)."""
import functools

import numpy as np
import pytest

import tilepy as ct
from tests.kernels_util import sass_of
from tests.reference_kernels import matmul
from tests.reference_kernels.cases import CASES, case_matmul, case_softmax
from tilepy.tools import sass_stats

pytestmark = pytest.mark.skipif(not sass_stats.available(), reason="nvdisasm/cuobjdump not installed")


@functools.cache
def reference(name, arch="sm_80") -> dict:
    kernel, args, _, _ = CASES[name](np.random.default_rng(0))
    return sass_of(kernel, args, arch)


def test_f16_matmul_uses_tensor_cores_ldmatrix_and_cp_async():
    r = reference("matmul_f16")
    c = r["counts"]
    assert c["HMMA"] >= 16 and c["LDSM"] > 0 and c["LDGSTS"] > 0, c
    assert r["spill_bytes"] == 0 and c["LDL/STL"] == 0


def test_matmul_edge_chunks_are_predicated_copies():
    # A zero-padded cp.async chunk at the tensor's edge is a predicated (zero-filling) copy, not
    # element by element (issue 13; unrolled element copies also made NVVM and ptxas ~30% slower).
    # With the contiguous extent proven a multiple of 16 bytes no chunk straddles the edge: no
    # fix-up at all.
    ops = reference("matmul_f16", "sm_90")["ops"]
    assert ops.count("LDG.E.U16") == 0 and not [o for o in ops if o.endswith(".ZFILL")]
    # K = 100 (A's rows 16-byte aligned): a thread's chunk that straddles column 100 is copied in
    # one rolled loop per fetch site (the prologue's and the loop's), not per chunk
    a = np.zeros((256, 128), np.float16)[:, :100]
    b, c = np.zeros((100, 256), np.float16), np.zeros((256, 256), np.float32)
    ops = sass_of(matmul.matmul, (a, b, c, 64, 64, 32), "sm_90")["ops"]
    assert ops.count("LDG.E.U16") == 0 and len([o for o in ops if o.endswith(".ZFILL")]) == 2


@pytest.mark.parametrize("name", ["batched_matmul", "attention"])
def test_other_matmuls_use_tensor_cores(name):
    c = reference(name)["counts"]
    assert c["HMMA"] > 0 and c["LDSM"] > 0 and c["LDGSTS"] > 0, c


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layernorm"])
def test_aligned_inputs_use_128_bit_loads(name):
    c = reference(name)["counts"]
    assert c["LDG.E.128"] > 0 and c["STG.E.128"] > 0, c


def test_unaligned_rows_use_narrower_loads():
    # 1002 columns: rows 4008 bytes apart, not a multiple of 16, so no 16-byte vectors (1000
    # would be: 4000 bytes, and the specialization states 16-byte facts exactly)
    x = np.zeros((4, 1002), np.float32)
    c = sass_of(CASES["softmax"](np.random.default_rng(0))[0], (x, np.zeros_like(x), 1024))["counts"]
    assert c["LDG.E.128"] == 0


@pytest.mark.parametrize("name", ["softmax", "layernorm", "attention"])
def test_reductions_use_warp_shuffles(name):
    assert reference(name)["counts"]["SHFL"] > 0


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", list(CASES))
def test_default_configurations_do_not_spill(name, arch):
    r = reference(name, arch)
    assert r["spill_bytes"] == 0 and r["counts"]["LDL/STL"] == 0, (r["registers"], r["counts"])


def test_sm75_matmul_uses_the_instructions_it_has():
    c = reference("matmul_f16", "sm_75")["counts"]
    assert c["HMMA"] > 0 and c["LDSM"] > 0 and c["LDGSTS"] == 0     # m16n8k8, no cp.async


@pytest.mark.parametrize("dtype,op", [("bfloat16", "HMMA"), (np.float32, "HMMA"), (np.int8, "IMMA")])
def test_other_tensor_core_types(dtype, op):
    kernel, args, _, _ = _matmul_of(dtype)
    c = sass_of(kernel, args)["counts"]
    assert c[op] > 0 and c["LDGSTS"] > 0, c


def _matmul_of(dtype):
    if dtype == np.int8:
        return case_int8_matmul(np.random.default_rng(0))
    if dtype == "bfloat16":
        import ml_dtypes
        dtype = ml_dtypes.bfloat16
    return case_matmul(np.random.default_rng(0), dtype=dtype)


@ct.kernel
def matmul_i8(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.int32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc)


def case_int8_matmul(rng, m=128, n=128, k=128):
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = np.zeros((m, n), np.int32)

    def check():
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
    return matmul_i8, (a, b, c, 64, 64, 32), (m // 64, n // 64), check


def test_softmax_f16_is_vectorized_too():
    kernel, args, _, _ = case_softmax(np.random.default_rng(0), dtype=np.float16)
    assert sass_of(kernel, args)["counts"]["LDG.E.128"] > 0
