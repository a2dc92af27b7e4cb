"""Ragged shapes at the aligned speed (issue 28, ARCHITECTURE.md decision 10): the specialization
states the largest power of two dividing each base address, extent and stride (up to 16 bytes),
so f16 matrices of 5000 and 3000 columns take the aligned kernel's cp.async path; odd strides
take the documented fallback (an unrolled gather into registers, packed 16-byte shared-memory
stores), and a kernel compiled without the facts checks alignment at run time. SASS on sm_90
(tutorials/03_matmul.py's kernel, tiles 128x128x32) and the numerics of each path in both CPU
modes."""
import numpy as np
import pytest

import tilepy as ct
from definitions import load
from tests.test_hot_loop import _hot_loop, needs_sass
from tilepy import aot

TILES = (128, 128, 32)


def _args(m, n, k):
    return np.zeros((m, k), np.float16), np.zeros((k, n), np.float16), np.zeros((m, n), np.float32)


@pytest.fixture(scope="module")
def matmul():
    return load("03_matmul").matmul


@needs_sass
def test_ragged_gemm_hot_loop_is_the_aligned_one(matmul):
    aligned = _hot_loop(matmul, (*_args(4096, 4096, 4096), *TILES), arch="sm_90")
    ragged = _hot_loop(matmul, (*_args(4000, 3000, 5000), *TILES), arch="sm_90")
    ops = ragged["ops"]
    assert ops["LDGSTS"] == aligned["ops"]["LDGSTS"] and "LDG" not in ops and "STS" not in ops
    assert abs(ragged["per_mma"] - aligned["per_mma"]) <= 0.05 * aligned["per_mma"], ragged


@needs_sass
def test_odd_strides_take_the_unrolled_fallback(matmul):
    loop = _hot_loop(matmul, (*_args(4095, 4097, 4099), *TILES), arch="sm_90")
    ops = loop["ops"]
    # 128 threads, two 4096-element operands per K step: 64 elements each, every load in the
    # loop body (unrolled, none in a rolled inner loop), 8 chunks of 16 bytes stored packed
    assert ops["LDG"] == 64 and ops["STS"] == 8, ops
    assert ops["LDGSTS"] >= 8     # the branch a run-time alignment check takes (never, here)


def _check(matmul, a, b, grid):
    c = np.zeros((a.shape[0], b.shape[1]), np.float32)
    ct.launch(None, grid, matmul, (a, b, c, *TILES))
    return c


def _operands(m, n, k):
    rng = np.random.default_rng(m + n + k)
    return (rng.standard_normal((m, k)).astype(np.float16),
            rng.standard_normal((k, n)).astype(np.float16))


@pytest.mark.parametrize("mode", ["fast", "faithful"])
@pytest.mark.parametrize("shape", [(120, 104, 200), (100, 97, 99)], ids=["div8", "odd"])
def test_ragged_gemm_matches_numpy(matmul, shape, mode):
    """Extents and strides 8 mod 16 (the 16-byte facts of 4000x3000x5000) and odd ones (the
    fallback), at one tile of M and N and several K steps."""
    m, n, k = shape
    a, b = _operands(m, n, k)
    with ct.cpu_mode(mode):
        c = _check(matmul, a, b, (1, 1))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_unproven_alignment_is_checked_at_run_time(matmul):
    """Compiled ahead of time without alignment facts, the kernel checks them per call: aligned
    operands take the cp.async path, a misaligned base the fallback; both agree with numpy (the
    faithful mode: the fast one copies rows whatever the alignment)."""
    spec = aot.array(ct.float16, 2)
    out = aot.array(ct.float32, 2)
    with ct.cpu_mode("faithful"):
        k = matmul.compile(spec, spec, out, *TILES, arch="cpu")
        for offset in (0, 1):      # A's rows 144 bytes apart from an aligned base; or 146, from +2
            a, b = _operands(96, 64, 72)
            a = np.pad(a, ((0, 0), (offset, 0)))[:, offset:]
            c = np.zeros((96, 64), np.float32)
            k.launch(None, (1, 1), (a, b, c, *TILES))
            np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64),
                                       rtol=1e-3, atol=1e-3)
