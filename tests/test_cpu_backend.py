"""Numerics of the emitted C++ run on the CPU backend, against numpy."""
import numpy as np
import pytest

import tilepy as ct
from guarded import launch

rng = np.random.default_rng(1234)


@pytest.fixture(autouse=True, params=["fast", "faithful"])
def cpu_mode(request):
    """Every kernel here runs in both CPU modes: faithful runs the real 128 threads per block
    (shared memory, barriers) as the GPU would."""
    with ct.cpu_mode(request.param):
        yield request.param


def run(kernel, grid, *args):
    """ct.launch in the current CPU mode, with guard bytes around every array (guarded.py)."""
    launch(grid, kernel, args)


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


# One kernel adds vectors of four dtypes (one compile per mode serves them all: a compile costs
# seconds, a launch microseconds); each size is one launch of it.
VADD_DTYPES = (np.float32, np.float16, np.int32, np.float64)


@ct.kernel
def vadd4(a0, b0, c0, a1, b1, c1, a2, b2, c2, a3, b3, c3, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c0, (i,), ct.load(a0, (i,), (TILE,)) + ct.load(b0, (i,), (TILE,)))
    ct.store(c1, (i,), ct.load(a1, (i,), (TILE,)) + ct.load(b1, (i,), (TILE,)))
    ct.store(c2, (i,), ct.load(a2, (i,), (TILE,)) + ct.load(b2, (i,), (TILE,)))
    ct.store(c3, (i,), ct.load(a3, (i,), (TILE,)) + ct.load(b3, (i,), (TILE,)))


@pytest.mark.parametrize("n", [1, 100, 1024])
def test_vector_add_ragged(n):
    abc = [((rng.standard_normal(n) * 10).astype(dt), (rng.standard_normal(n) * 10).astype(dt),
            np.zeros(n, dt)) for dt in VADD_DTYPES]
    run(vadd4, (ct.cdiv(n, 128),), *(x for t in abc for x in t), 128)
    for dt, (a, b, c) in zip(VADD_DTYPES, abc):
        np.testing.assert_array_equal(c, a + b, err_msg=np.dtype(dt).name)


@ct.kernel
def elementwise(x, y, out):
    i = ct.bid(0)
    a = ct.load(x, (i,), (64,))
    b = ct.load(y, (i,), (64,))
    r = ct.exp(a) * 0.5 - ct.maximum(a, b) / (ct.abs(b) + 1.0)
    r = ct.where(a > b, r, ct.sqrt(ct.abs(a)) + ct.floor(b))
    ct.store(out, (i,), r)


def test_elementwise_math():
    x = rng.standard_normal(200).astype(np.float32)
    y = rng.standard_normal(200).astype(np.float32)
    out = np.zeros_like(x)
    run(elementwise, (ct.cdiv(200, 64),), x, y, out)
    r = np.exp(x) * 0.5 - np.maximum(x, y) / (np.abs(y) + 1)
    ref = np.where(x > y, r, np.sqrt(np.abs(x)) + np.floor(y))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def int_rows(x, y, out_div, out_mod, out_shift):
    a = ct.load(x, (0,), (256,))
    b = ct.load(y, (0,), (256,))
    ct.store(out_div, (0,), a // b)
    ct.store(out_mod, (0,), a % b)
    ct.store(out_shift, (0,), (a >> 2) ^ (b << 1))


@ct.kernel
def int_ops(x0, y0, d0, m0, s0, x1, y1, d1, m1, s1, x2, y2, d2, m2, s2, x3, y3, d3, m3, s3):
    int_rows(x0, y0, d0, m0, s0)       # four integer dtypes in one kernel: one compile per mode
    int_rows(x1, y1, d1, m1, s1)
    int_rows(x2, y2, d2, m2, s2)
    int_rows(x3, y3, d3, m3, s3)


def test_integer_semantics_follow_python():
    groups = []
    for dtype in (np.int32, np.int64, np.uint32, np.int8):
        info = np.iinfo(dtype)
        lo = max(info.min, -1000)
        x = rng.integers(lo, min(info.max, 1000), 256).astype(dtype)
        y = rng.integers(1, min(info.max, 50), 256).astype(dtype)
        if info.min < 0:
            y = (y * rng.choice([-1, 1], 256)).astype(dtype)
        groups.append((x, y) + tuple(np.zeros_like(x) for _ in range(3)))
    run(int_ops, (1,), *(a for g in groups for a in g))
    for x, y, d, m, s in groups:
        np.testing.assert_array_equal(d, x // y, err_msg=f"{x.dtype} //")
        np.testing.assert_array_equal(m, x % y, err_msg=f"{x.dtype} %")
        np.testing.assert_array_equal(s, (x >> 2) ^ (y << 1), err_msg=f"{x.dtype} >> ^ <<")


def softmax_rows(x, y, BLOCK):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, BLOCK), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, (row, 0), (e / ct.sum(e, axis=1, keepdims=True)).astype(y.dtype))


SOFTMAX_COLS = (1, 7, 64, 300)      # in tiles of 1, 8, 64 and 512 columns (the next power of 2)


@ct.kernel
def softmax(x0, y0, x1, y1, x2, y2, x3, y3):
    softmax_rows(x0, y0, 1)          # four row widths in one kernel: one compile per mode
    softmax_rows(x1, y1, 8)
    softmax_rows(x2, y2, 64)
    softmax_rows(x3, y3, 512)


def test_softmax_rows():
    xy = [(rng.standard_normal((9, cols)).astype(np.float32), np.zeros((9, cols), np.float32))
          for cols in SOFTMAX_COLS]
    run(softmax, (9,), *(a for p in xy for a in p))
    for cols, (x, y) in zip(SOFTMAX_COLS, xy):
        e = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7,
                                   err_msg=f"{cols} columns")


def matmul_tiles(A, B, C, TM, TN, TK):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


@ct.kernel
def matmul(A0, B0, C0, A1, B1, C1, A2, B2, C2):
    matmul_tiles(A0, B0, C0, 32, 16, 16)     # the three dtype pairs of MATMUL_TYPES in one
    matmul_tiles(A1, B1, C1, 32, 16, 16)     # kernel: one compile per shape and mode
    matmul_tiles(A2, B2, C2, 32, 16, 16)


MATMUL_TYPES = ((np.float32, np.float32, 1e-5), (np.float16, np.float32, 1e-5),
                (np.float16, np.float16, 1e-2))     # operands, result, tolerance


@pytest.mark.parametrize("mnk", [(33, 17, 50), (64, 64, 64), (1, 100, 3)])
def test_matmul_ragged(mnk):
    M, N, K = mnk
    abc = [(rng.standard_normal((M, K)).astype(dtype), rng.standard_normal((K, N)).astype(dtype),
            np.zeros((M, N), out)) for dtype, out, _ in MATMUL_TYPES]
    run(matmul, (ct.cdiv(M, 32), ct.cdiv(N, 16)), *(x for t in abc for x in t))
    for (A, B, C), (dtype, out, rtol) in zip(abc, MATMUL_TYPES):
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        err = np.abs(C.astype(np.float64) - A64 @ B64) / (np.abs(A64) @ np.abs(B64) + 1e-30)
        assert err.max() <= rtol, (np.dtype(dtype).name, np.dtype(out).name, err.max())


@ct.kernel
def transpose_sum(x, y, col_sums):
    t = ct.load(x, (0, 0), (16, 32))
    ct.store(y, (0, 0), ct.transpose(t))
    ct.store(col_sums, (0,), ct.sum(t, axis=0))


def test_transpose_and_reduction_axis0():
    x = rng.standard_normal((16, 32)).astype(np.float32)
    y = np.zeros((32, 16), np.float32)
    s = np.zeros(32, np.float32)
    run(transpose_sum, (1,), x, y, s)
    np.testing.assert_array_equal(y, x.T)
    np.testing.assert_allclose(s, x.sum(0), rtol=1e-5)


@ct.kernel
def loop_if(x, out, n):
    acc = ct.zeros((16,), ct.float32)
    count = 0
    for i in range(n):
        t = ct.load(x, (i,), (16,), padding_mode=ct.PaddingMode.ZERO)
        if i % 2 == 0:
            acc = acc + t
        else:
            acc = acc - t
        count += 1
    ct.store(out, (0,), acc * count)


def test_loop_with_runtime_branch():
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(16, np.float32)
    run(loop_if, (1,), x, out, 7)
    xs = np.pad(x, (0, 12)).reshape(-1, 16)
    ref = sum((xs[i] if i % 2 == 0 else -xs[i]) for i in range(7)) * 7
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@ct.kernel
def conversions(x, f16, i32, u8, b):
    t = ct.load(x, (0,), (32,))
    ct.store(f16, (0,), t.astype(ct.float16))
    ct.store(i32, (0,), t.astype(ct.int32))
    ct.store(u8, (0,), t.astype(ct.uint8))
    ct.store(b, (0,), t.astype(ct.bool_))


def test_conversions_round_and_saturate():
    x = np.array([0.0, -0.0, 1.5, -1.5, 2.5, 65519.0, 65520.0, 1e10, -1e10, np.nan, 300.7, -3.2,
                  1e-8, 0.333333, 255.9, 256.0] * 2, np.float32)
    f16, i32 = np.zeros(32, np.float16), np.zeros(32, np.int32)
    u8, b = np.zeros(32, np.uint8), np.zeros(32, np.bool_)
    run(conversions, (1,), x, f16, i32, u8, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(f16, x.astype(np.float16))
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ref_i = np.where(np.isnan(x64), 0, np.clip(np.trunc(x64), -2**31, 2**31 - 1)).astype(np.int64)
        ref_u = np.where(np.isnan(x64), 0, np.clip(np.trunc(x64), 0, 255)).astype(np.int64)
    np.testing.assert_array_equal(i32, ref_i)
    np.testing.assert_array_equal(u8, ref_u)
    np.testing.assert_array_equal(b, x != 0)


def test_readonly_output_is_rejected():
    a = np.zeros(16, np.float32)
    c = np.zeros(16, np.float32)
    c.setflags(write=False)
    with pytest.raises(ct.TileValueError, match="read-only"):
        run(vadd, (1,), a, a, c, 16)


def test_grid_validation():
    a = np.zeros(16, np.float32)
    with pytest.raises(ct.TileValueError, match="grid"):
        run(vadd, (2**24,), a, a, a, 16)
    with pytest.raises(ct.TileValueError, match="grid"):
        run(vadd, (1, 1, 1, 1), a, a, a, 16)
    run(vadd, (0,), a, a, a, 16)     # an empty grid launches nothing


def test_torch_cpu_tensors_if_available():
    torch = pytest.importorskip("torch")
    a = torch.randn(300)
    c = torch.zeros(300)
    run(vadd, (3,), a, a, c, 128)
    assert torch.equal(c, a + a)
