"""Issue 13: cp.async pipelines sized per shared-memory class of target (cuda_c/targets.py:
99 KiB for sm_86/89/120, 163 KiB for sm_80/87, 227 KiB for sm_90/100 and the CPU backend). The
emitted source holds one kernel per class whose stage counts differ, chosen by the preprocessor
(`TP_SMEM_KIB`), and every launch path passes its target's size."""
import shutil
import subprocess

import numpy as np
import pytest

import tilepy as ct
from tests.reference_kernels import attention, matmul
from tests.reference_kernels.cases import _mm_check, case_attention_ragged
from tilepy.api.compiler import compile_for_args
from tilepy.cuda_c.backend import CppBackend
from tilepy.cuda_c.names import kernel_symbol
from tilepy.cuda_c.targets import (KIB, PIPELINE_CLASSES, SMEM_PER_BLOCK, class_macro,
                                   smem_class)


def _gemm(m, n, k, tiles=(128, 128, 64), values=True):
    """A GEMM's arguments; `values=False`: zeros, for a test that only compiles (random 4096x4096
    operands cost about 0.6 CPU-s, and a specialization reads no values)."""
    if not values:
        return np.zeros((m, k), np.float16), np.zeros((k, n), np.float16), \
            np.zeros((m, n), np.float32), *tiles
    rng = np.random.default_rng(13)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.zeros((m, n), np.float32), *tiles


def test_the_classes_and_their_archs():
    assert PIPELINE_CLASSES == (99 * KIB, 163 * KIB, 227 * KIB)
    assert [smem_class(a) // KIB for a in ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90",
                                           "sm_90a", "sm_100", "sm_120", "compute_90", "cpu")] \
        == [99, 163, 99, 163, 99, 227, 227, 227, 99, 227, 227]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_the_preprocessor_picks_each_archs_class():
    # the #if chain on __CUDA_ARCH__ agrees with smem_class for every arch of the table, archs
    # between them, and a build without __CUDA_ARCH__ (the CPU backend: the largest class)
    src = "\n".join(class_macro()) + "\nTP_SMEM_KIB\n"
    ccs = sorted(SMEM_PER_BLOCK) + [52, 88, 101, 122, 130]
    for cc in ccs + [None]:
        flag = [] if cc is None else [f"-D__CUDA_ARCH__={cc * 10}"]
        out = subprocess.run(["g++", "-E", "-P", "-x", "c++", "-", *flag], input=src,
                             capture_output=True, text=True, check=True).stdout.split()
        want = smem_class(f"sm_{cc}" if cc else "cpu") // KIB
        assert out == [str(want)], (cc, out)


def test_a_tk64_gemm_takes_the_stages_that_leave_room_for_two_blocks():
    # 4 warps (issue 28): two blocks per SM where two fit: 3 stages on a 228 KiB SM (sm_90),
    # 2 on a 164 KiB one (sm_80); a 100 KiB SM (sm_86) holds one block, with the most stages
    # that fit it
    ck = compile_for_args(matmul.matmul, _gemm(4096, 4096, 4096, values=False))
    e, src = ck.emitted, ck.cuda_source
    stage = (128 * 64 + 64 * 128) * 2                      # A and B tiles of one stage, 32 KiB
    assert e.nt == 128
    assert e.smem_for("sm_86") == 3 * stage
    # each class's launches pass its kernel's size, the sm_90a class's 1 KiB more (its
    # mbarriers); the CPU backend's (either kernel) the larger
    assert e.smem_for("sm_90") == 3 * stage and e.smem_bytes == 3 * stage + 1024
    assert e.smem_for("sm_80") == 2 * stage
    assert src.count("#if TP_SMEM_KIB == 163") == 1 and "#else" in src
    assert "tp::pipe_wait<1>();  // this thread" in src and "tp::pipe_wait<0>();  // this" in src
    # one kernel per stage count, and the sm_90a class's (warpgroup MMA: tests/test_wgmma.py)
    assert src.count('extern "C" __global__') == 3 and src.count("#if TP_WGMMA") == 1
    assert e.smem_for("sm_90a") == 3 * stage + 1024      # and 1 KiB for the stages' mbarriers


def test_a_short_static_loop_takes_no_more_stages_than_iterations():
    @ct.kernel
    def two_steps(A, B, C):
        acc = ct.zeros((64, 64), dtype=ct.float32)
        for k in range(2):
            a = ct.load(A, index=(0, k), shape=(64, 32))
            b = ct.load(B, index=(k, 0), shape=(32, 64))
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(0, 0), tile=acc)

    a, b, c, *_ = _gemm(64, 64, 64)
    ck = compile_for_args(two_steps, (a, b, c))
    assert "tp::pipe_wait<0>();  // this thread" in ck.cuda_source      # 2 stages
    assert "TP_SMEM_KIB" not in ck.cuda_source and ck.emitted.smem_bytes == 2 * (64 * 32 * 2) * 2
    ct.launch(None, (1,), two_steps, (a, b, c))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)


@pytest.mark.parametrize("d, bm, bn", [(128, 128, 128), (256, 64, 64)])
def test_attention_that_two_stages_overflow_at_99_kib_is_pipelined_on_larger_targets(d, bm, bn):
    q = np.zeros((16, 4096, d), np.float16)
    e = compile_for_args(attention.attention_ragged, (q, q, q, q.copy(), 0.1, bm, bn, d)).emitted
    src = e.source()
    small = src.split("#if TP_SMEM_KIB == 99 ")[1].split("\n#el")[0]
    largest = src.split("\n#else  //")[-1]
    assert "tp::load_async" not in small and "tp::load_async" in largest
    assert e.smem_for("sm_86") <= 99 * KIB
    for arch in ("sm_80", "sm_90"):
        assert 99 * KIB < e.smem_for(arch) <= smem_class(arch)


def test_the_disk_index_record_keeps_the_sizes_per_class():
    e = compile_for_args(matmul.matmul, _gemm(4096, 4096, 4096, values=False)).emitted
    back = CppBackend().from_record(CppBackend().record(e))
    archs = ("sm_86", "sm_80", "sm_90", "sm_90a", "cpu")
    assert [back.smem_for(a) for a in archs] == [e.smem_for(a) for a in archs]
    assert back.smem_for("sm_86") != back.smem_for("sm_80")
    assert back.smem_for("sm_90a") != back.smem_for("sm_90")


@pytest.mark.parametrize("cc, nbytes", [((8, 6), 3 * 32 * KIB), ((8, 0), 2 * 32 * KIB),
                                        ((9, 0), 3 * 32 * KIB)])
def test_each_device_gets_its_classs_size_and_kernel(cc, nbytes):
    # the fake driver runs the cubin's source built for the cubin's arch (TP_SMEM_KIB): sm_86
    # and sm_90 devices get the 3-stage kernel and 96 KiB (sm_90: the mma.sync kernel's, not the
    # sm_90a class's 1 KiB more of mbarriers), sm_80 the 2-stage one
    from fake_driver import FakeDriver, cuda_array
    a, b, c, *tiles = args = _gemm(128, 128, 384)        # 6 K steps: every stage refilled
    with FakeDriver(cc=cc) as drv:
        ct.launch(None, (1, 1), matmul.matmul, tuple(
            cuda_array(x, "cai") if isinstance(x, np.ndarray) else x for x in args))
        assert ("kernel.max_dynamic_smem", (kernel_symbol("matmul"), nbytes)) in drv.calls
        assert [x.smem for x in drv.launches] == [nbytes]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)


@pytest.mark.parametrize("cc, d, bn", [((8, 6), 128, 128), ((8, 0), 128, 128), ((8, 0), 256, 64)])
def test_attention_variants_match_numpy_on_their_devices(cc, d, bn):
    # BM 64, d=128 BN=128: no pipeline on sm_86, two stages on sm_80 (more on the CPU backend);
    # d=256 BN=64 on sm_80: two stages with the query tile left in registers
    from fake_driver import FakeDriver, cuda_array
    kernel, args, grid, check = case_attention_ragged(np.random.default_rng(3), d, 64, bn)
    with FakeDriver(cc=cc):
        ct.launch(None, grid, kernel, tuple(
            cuda_array(x, "cai") if isinstance(x, np.ndarray) else x for x in args))
    check()


def test_aot_compile_records_the_targets_size():
    args = _gemm(4096, 4096, 4096, values=False)
    sizes = {a: matmul.matmul.compile(*args, arch=a).smem for a in ("sm_86", "sm_80")}
    assert sizes == {"sm_86": 3 * 32 * KIB, "sm_80": 2 * 32 * KIB}
