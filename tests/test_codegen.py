"""The code of issue 6 (layouts, tensor cores, pipelines, vector accesses, shuffles) runs on the
CPU in both modes and matches numpy: faithful mode runs the warp-level path (mma.sync, ldmatrix,
cp.async, shuffles) the GPU runs, fast mode the SIMT path of the same source."""
import numpy as np
import pytest

import tilepy as ct
from tests.reference_kernels.cases import CASES, case_matmul
from tests.test_sass import case_int8_matmul


@pytest.fixture(params=["fast", "faithful"])
def mode(request):
    with ct.cpu_mode(request.param):
        yield request.param


def run(case):
    kernel, args, grid, check = case
    ct.launch(None, grid, kernel, args)
    check()


@pytest.mark.parametrize("name", list(CASES))
def test_reference_kernels(name, mode):
    run(CASES[name](np.random.default_rng(7)))


@pytest.mark.parametrize("dtype", ["bfloat16", np.float32, np.int8, np.float16])
def test_tensor_core_types(dtype, mode):
    rng = np.random.default_rng(3)
    if dtype == np.int8:
        return run(case_int8_matmul(rng))
    if dtype == "bfloat16":
        import ml_dtypes
        dtype = ml_dtypes.bfloat16
    run(case_matmul(rng, dtype=dtype))


def matmul_tiles(A, B, C, TM, TN, TK, TRANS_A, TRANS_B):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=C.dtype)
    for k in range(ct.cdiv(A.shape[1 - TRANS_A], TK)):
        if TRANS_A:
            a = ct.load(A, index=(bm, k), shape=(TM, TK), order=(1, 0), padding_mode=ct.PaddingMode.ZERO)
        else:
            a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        if TRANS_B:
            b = ct.load(B, index=(k, bn), shape=(TK, TN), order=(1, 0), padding_mode=ct.PaddingMode.ZERO)
        else:
            b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc)


@ct.kernel
def matmul_any(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
               TRANS_A: ct.Constant[int], TRANS_B: ct.Constant[int]):
    matmul_tiles(A, B, C, TM, TN, TK, TRANS_A, TRANS_B)


TRANSPOSED = ((0, 1), (1, 0), (1, 1))       # (A transposed, B transposed)


@ct.kernel
def matmul_transposed(A0, B0, C0, A1, B1, C1, A2, B2, C2, TM: ct.Constant[int],
                      TN: ct.Constant[int], TK: ct.Constant[int]):
    # each of TRANSPOSED in one kernel: one compile per mode
    matmul_tiles(A0, B0, C0, TM, TN, TK, 0, 1)
    matmul_tiles(A1, B1, C1, TM, TN, TK, 1, 0)
    matmul_tiles(A2, B2, C2, TM, TN, TK, 1, 1)


def test_transposed_operands_and_ragged_edges(mode):
    rng = np.random.default_rng(5)
    m, n, k = 72, 40, 88                     # ragged in every dimension: partial chunks, padding
    args, refs = [], []
    for ta, tb in TRANSPOSED:
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        args += [np.ascontiguousarray(a.T) if ta else a, np.ascontiguousarray(b.T) if tb else b,
                 np.zeros((m, n), np.float32)]
        refs.append(a.astype(np.float64) @ b.astype(np.float64))
    ct.launch(None, (ct.cdiv(m, 32), ct.cdiv(n, 32)), matmul_transposed, (*args, 32, 32, 32))
    for (ta, tb), c, ref in zip(TRANSPOSED, args[2::3], refs):
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4, err_msg=f"ta={ta} tb={tb}")


def test_f16_accumulator(mode):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float16)
    ct.launch(None, (1, 1), matmul_any, (a, b, c, 64, 64, 32, 0, 0))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=2e-2, atol=2e-2)


@ct.kernel
def acc_rows(A, B, out):
    acc = ct.mma(ct.load(A, (0, 0), (16, 32)), ct.load(B, (0, 0), (32, 64)),
                 ct.zeros((16, 64), dtype=ct.float32))
    ct.store(out, (0,), ct.sum(acc, axis=1) - ct.max(acc, axis=1))


def test_rows_of_an_accumulator_spread_over_warps(mode):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    out = np.zeros(16, np.float32)
    assert "tp::MmaRows<1, 16, 1, 4>" in acc_rows.cuda_source(a, b, out)   # 4 warps along n
    ct.launch(None, (1,), acc_rows, (a, b, out))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, ref.sum(1) - ref.max(1), rtol=1e-4, atol=1e-4)


@ct.kernel
def ordered_reduce(x, out):
    t = ct.load(x, (0,), (256,))
    ct.store(out, (0,), ct.reshape(ct.reduce(t, 0, lambda acc, v: acc * 2 + v, 0), (1,)))


def test_non_commutative_combiner_folds_in_order(mode):
    x = (np.arange(256) % 2).astype(np.int32)
    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), ordered_reduce, (x, out))
    ref = 0
    for v in x:
        ref = (ref * 2 + int(v)) & 0xFFFFFFFF
    assert out[0] == np.int32(np.uint32(ref).view(np.int32))


@ct.kernel
def vadd_ragged(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) * 2 + ct.load(b, (i,), (TILE,)))


@pytest.mark.parametrize("n", [1000, 1003, 16])
def test_vector_accesses_at_ragged_ends(n, mode):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    c = np.full(n + 8, 7, np.float16)
    ct.launch(None, (ct.cdiv(n, 256),), vadd_ragged, (a, b, c[:n], 256))
    np.testing.assert_array_equal(c[:n], a * 2 + b)
    assert (c[n:] == 7).all()


def test_pipelined_matmul_source():
    kernel, args, _, _ = CASES["matmul_f16"](np.random.default_rng(0))
    src = kernel.cuda_source(*args)
    # 4 stages: the mma.sync class's cp.async copies; the sm_90a class's TMA copies, waited for
    # on the stage's mbarrier, its MMAs into the accumulator in place with one group in flight
    # (tests/test_wgmma.py)
    assert src.count("tp::load_async<") == 2 and src.count("tp::pipe_wait<2>()") == 1
    assert src.count("tp::tma_load<") == 2 and "tp::mbar_wait(" in src
    # the coordinates of A's row and B's column tile, which the K loop keeps, worked out before it
    assert src.count("// a TMA coordinate the loop keeps") == 2
    assert "tp::mma_tc<1, 64, 64, 32, 1, 0>(tp::SmemOp" in src
    assert "tp::wgmma_acc<64, 64, 32, 1>(tp::WgOp" in src and "tp::wgmma_drain(" in src


@ct.kernel
def tf32_outside_loop(A, B, C):
    a = ct.load(A, (0, 0), (32, 32)).astype(ct.tfloat32)
    b = ct.load(B, (0, 0), (32, 32)).astype(ct.tfloat32)
    ct.store(C, (0, 0), ct.mma(a, b, ct.zeros((32, 32), dtype=ct.float32)))


def test_tf32_conversion_in_registers(mode):
    rng = np.random.default_rng(9)
    a, b = (rng.standard_normal((32, 32)).astype(np.float32) for _ in range(2))
    c = np.zeros((32, 32), np.float32)
    ct.launch(None, (1,), tf32_outside_loop, (a, b, c))
    from tilepy.types.convert import to_tf32
    ref = to_tf32(a).astype(np.float64) @ to_tf32(b).astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
