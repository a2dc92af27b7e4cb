"""Instructions per mma in the hot loop (issue 13): the SASS counter (tilepy/tools/sass_stats.py
mma_loop) on known listings, and the K loops of the GEMM and attention reference kernels on
sm_80 beside NVIDIA cuTile's figures; plus the numerics of the branch-free cp.async row form at
ragged edges (a contiguous extent that is not a multiple of 16 bytes), in both CPU modes."""
import numpy as np
import pytest

import tilepy as ct
from tests.kernels_util import sass_of
from tests.reference_kernels import attention, matmul
from tilepy.tools import sass_stats

needs_sass = pytest.mark.skipif(not sass_stats.available(), reason="nvdisasm/cuobjdump not installed")

NVDISASM = """\
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;
.L_x_1:
        /*0020*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0030*/                   HMMA.16816.F32 R16, R8, R14, R16 ;
        /*0040*/                   LDSM.16.M88.4 R8, [R20] ;
        /*0050*/              @!PT LDS RZ, [RZ] ;
        /*0060*/               @P0 BRA `(.L_x_1) ;
        /*0070*/                   ISETP.NE.AND P1, PT, R2, 0x4, PT ;
        /*0080*/                   BRA.U UP1, `(.L_x_0) ;
.L_x_2:
        /*0090*/                   IADD3 R3, R3, 0x1, RZ ;
        /*00a0*/               @P2 BRA `(.L_x_2) ;
        /*00b0*/                   BRA `(.L_x_3) ;
.L_x_3:
        /*00c0*/                   EXIT ;
        /*00d0*/                   NOP ;
"""

# the same program as cuobjdump -sass prints it: branch targets are addresses, no labels
CUOBJDUMP = """\
        /*0000*/                   MOV R1, c[0x0][0x28] ;           /* 0x00000a0000017a02 */
        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;          /* 0x0000000102027810 */
        /*0020*/                   HMMA.16816.F32 R4, R8, R12, R4 ; /* 0x0000000c0804723c */
        /*0030*/                   HMMA.16816.F32 R16, R8, R14, R16 ; /* 0x0000000e0810723c */
        /*0040*/                   LDSM.16.M88.4 R8, [R20] ;        /* 0x000000001408783b */
        /*0050*/              @!PT LDS RZ, [RZ] ;                   /* 0x00000000ff00f984 */
        /*0060*/               @P0 BRA 0x20 ;                       /* 0xfffffffb00000947 */
        /*0070*/                   ISETP.NE.AND P1, PT, R2, 0x4, PT ; /* 0x000000040200780c */
        /*0080*/                   BRA.U !UP1, 0x10 ;               /* 0xfffffff800001947 */
        /*0090*/                   EXIT ;                           /* 0x000000000000794d */
"""


@pytest.mark.parametrize("listing", [NVDISASM, CUOBJDUMP], ids=["nvdisasm", "cuobjdump"])
def test_mma_loop_is_the_innermost_loop_holding_an_mma(listing):
    r = sass_stats.mma_loop(listing.splitlines())
    # 0x20..0x60: two HMMA, an LDSM and the branch (the @!PT LDS never runs); the outer loop
    # from 0x10 holds the same mmas but is longer, the loop at 0x90 has none
    assert (r["start"], r["end"]) == (0x20, 0x60)
    assert (r["instructions"], r["mma"], r["per_mma"]) == (4, 2, 2.0)
    assert r["ops"] == {"HMMA": 2, "LDSM": 1, "BRA": 1}


def test_mma_loop_closed_by_a_uniform_branch():
    # sm_100 closes loops with `BRA.U UP0, target`: without the inner loop's branch, the loop
    # holding the mmas is the outer one (0x10..0x80)
    lines = [ln for ln in NVDISASM.splitlines() if "@P0 BRA" not in ln]
    r = sass_stats.mma_loop(lines)
    assert (r["start"], r["end"], r["instructions"], r["mma"]) == (0x10, 0x80, 6, 2)


def test_mma_loop_without_a_loop_or_an_mma():
    straight = [ln for ln in NVDISASM.splitlines() if "BRA" not in ln]
    assert sass_stats.mma_loop(straight) is None
    no_mma = [ln for ln in NVDISASM.splitlines() if "HMMA" not in ln]
    assert sass_stats.mma_loop(no_mma) is None


def _hot_loop(kernel, args, arch="sm_80") -> dict:
    r = sass_of(kernel, args, arch)
    assert r["spill_bytes"] == 0 and r["counts"]["LDL/STL"] == 0, r["registers"]
    return r["hot_loop"]


# cuTile 1.7 (tileiras 13.4) on the same kernel source and specialization, sm_80: instructions
# per HMMA in its K loop (benchmarks/sass.py compiles it; measured 2026-11-25)
CUTILE_SM80 = {(128, 128, 32): 3.73, (128, 128, 64): 3.27, "attention d64": 9.8}


@needs_sass
@pytest.mark.parametrize("tiles, chunks", [((128, 128, 32), 8), ((128, 128, 64), 16)])
def test_gemm_k_loop_has_no_branch_per_chunk(tiles, chunks):
    a = np.zeros((4096, 4096), np.float16)
    c = np.zeros((4096, 4096), np.float32)
    loop = _hot_loop(matmul.matmul, (a, a, c, *tiles))
    ops = loop["ops"]
    # one cp.async per 16-byte chunk, each predicated: no branch around each (before: one
    # BRA and a BSSY/BSYNC pair per chunk, 8.7 instructions per mma at 128x128x32)
    assert ops["LDGSTS"] == chunks and "BSSY" not in ops
    assert ops["BRA"] <= 2                       # the back edge and the skipped last prefetches
    assert loop["per_mma"] <= 1.1 * CUTILE_SM80[tiles], loop


@needs_sass
def test_attention_loop_max_is_fmnmx():
    q = np.zeros((16, 4096, 64), np.float16)
    loop = _hot_loop(attention.attention, (q, q, q, q.copy(), 0.1, 128, 64, 64))
    ops = loop["ops"]
    # the NaN-aware max was compare + select (148 FSETP + 148 FSEL, 18.6 instructions per mma)
    assert ops.get("FMNMX", 0) >= 32 and "FSETP" not in ops, ops
    assert loop["per_mma"] <= 1.5 * CUTILE_SM80["attention d64"], loop


@ct.kernel
def max_nan(x, y, o, T: ct.Constant[int]):
    a, b = ct.load(x, index=(0,), shape=(T,)), ct.load(y, index=(0,), shape=(T,))
    ct.store(o, index=(0,), tile=ct.maximum(a, b, propagate_nan=True))


@needs_sass
def test_propagating_max_is_one_instruction():
    x = np.zeros(128, np.float32)
    r = sass_of(max_nan, (x, x, x, 128))
    assert "FMNMX.NAN" in r["ops"] and "FSETP" not in {o.split(".")[0] for o in r["ops"]}


@pytest.fixture(params=["fast", "faithful"])
def mode(request):
    with ct.cpu_mode(request.param):
        yield request.param


@pytest.mark.parametrize("k", [100, 60])
@pytest.mark.parametrize("a_order", ["C", "F"])
def test_ragged_contiguous_edge_matches_numpy(k, a_order, mode):
    # C: A's rows hold k of 128 elements (16-byte aligned rows, k not a multiple of 8): the chunk
    # at column 96 straddles the edge, so the row form's fix-up copies its part and zero-fills
    # the rest. F: A column-major (a transposed operand), its storage rows past k zero-filled.
    rng = np.random.default_rng(k)
    full = rng.standard_normal((128, 128)).astype(np.float16)
    a = full[:, :k] if a_order == "C" else full.T[:, :k]
    b = rng.standard_normal((k, 128)).astype(np.float16)
    c = np.zeros((128, 128), np.float32)
    ct.launch(None, (1, 1), matmul.matmul, (a, b, c, 128, 128, 32))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)
