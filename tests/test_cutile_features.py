"""cuTile programs that needed features tilepy lacked (issue 18): each kernel (tests/
cutile_kernels/, cuTile's style, `import tilepy as ct` the only change) runs in the
interpreter and in both CPU modes and matches numpy, and compiles with NVRTC for sm_80/sm_90."""
import importlib.util

import numpy as np
import pytest

import tilepy as ct
from cutile_cases import MODES, case_tests, compile_case, registry, run_case
from cutile_kernels import batched, dtypes, fp8, int64_index, lists, matmul, modifiers
from tilepy.api.compiler import compile_for_args
from tilepy.launch.nvrtc import compile_cubin

HAVE_TORCH = importlib.util.find_spec("torch") is not None
rng = np.random.default_rng(18)
CASES, case = registry()


# Each case returns (kernel, grid, args, check); check() compares the outputs with numpy.
@case
def np_dtypes_causal_mask():
    X = rng.standard_normal((40, 50)).astype(np.float16)
    out = np.zeros((40, 1), np.float32)

    def check():
        ref = np.tril(X.astype(np.float64)).sum(1, keepdims=True)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    return dtypes.causal_row_sums, (ct.cdiv(40, 16),), (X, out, 16, 32), check


@case
def np_dtypes_astype():
    X = rng.uniform(-3, 3, 64).astype(np.float32)
    out = np.zeros(64, np.int16)
    return dtypes.rounded_counts, (4,), (X, out, 16), \
        lambda: np.testing.assert_array_equal(out, (X * 4).astype(np.int32) + (X > 0))


if HAVE_TORCH:
    @case
    def torch_dtypes():
        import torch
        from cutile_kernels import torch_dtypes
        a = torch.randn(100, generator=torch.Generator().manual_seed(1))
        b = torch.randn(100, generator=torch.Generator().manual_seed(2))
        c = torch.full((100,), 7.0)

        def check():
            s = (a + b).half().float()
            torch.testing.assert_close(c, torch.where(s > 0, s, 0.0), rtol=0, atol=0)
        return torch_dtypes.vec_add_gather, (ct.cdiv(100, 32),), (a, b, c, 32), check


@case
def zero_d_loads_segments():
    lengths = np.array([3, 0, 17, 40, 1])
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = rng.standard_normal(int(indptr[-1])).astype(np.float32)
    scale = np.array([0.5], np.float32)
    out = np.zeros(5, np.float32)

    def check():
        ref = [0.5 * values[indptr[s]:indptr[s + 1]].astype(np.float64).sum() for s in range(5)]
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    return dtypes.segment_sums, (5,), (indptr, values, scale, out, 16), check


@case
def zero_d_load_picks_row():
    W = rng.standard_normal((4, 32)).astype(np.float32)
    ids = rng.integers(0, 4, 9).astype(np.int32)
    X = rng.standard_normal((9, 32)).astype(np.float32)
    out = np.zeros_like(X)
    return dtypes.expert_rows, (9,), (W, ids, X, out, 32), \
        lambda: np.testing.assert_array_equal(out, X * W[ids])


@case
def zero_d_extract_and_num_tiles():
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(4, np.float32)
    return dtypes.middle_times_length, (4,), (x, out, 16), \
        lambda: np.testing.assert_allclose(out, (x[8::16] + 5) * 64, rtol=1e-6)


@case
def ftz_approx_silu_and_mul():
    A = (rng.standard_normal((6, 64)) * 4).astype(np.float16)
    B = rng.standard_normal((6, 64)).astype(np.float16)
    A[0, :4] = [0, -90, 90, 6e-5]                 # exp(90) overflows f32; a subnormal f16
    C = np.zeros_like(A)

    def check():
        a, b = A.astype(np.float64), B.astype(np.float64)
        ref = a / (1 + np.exp(-a)) * b
        np.testing.assert_allclose(C.astype(np.float64), ref, rtol=2e-3, atol=1e-3)
    return modifiers.silu_and_mul, (6,), (A, B, C, 64), check


@case
def ftz_approx_online_softmax():
    X = (rng.standard_normal((32, 100)) * 10).astype(np.float32)
    X[3, 7] = -200.0                               # 2^-200-ish terms flush to zero
    Y = np.zeros_like(X)

    def check():
        x = X.astype(np.float64)
        e = np.exp2(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(Y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    return modifiers.online_softmax, (2,), (X, Y, 16, 32), check


@case
def directed_rounding_interval_bounds():
    X = rng.standard_normal(96).astype(np.float32)
    Y = rng.standard_normal(96).astype(np.float32)
    OUT = np.zeros((3, 96), np.float32)

    def check():
        x, y = X.astype(np.float64), Y.astype(np.float64)
        v = x * y + x / y                       # within 1e-16 relative of the exact value
        lo, hi = OUT[0].astype(np.float64), OUT[1].astype(np.float64)
        assert (lo <= v).all() and (v <= hi).all()
        assert (hi - lo <= 4 * np.spacing(np.abs(OUT[1]))).all()
        d = x - y                               # exact in float64 (exponents within 29)
        t = d.astype(np.float32)
        t = np.where(np.abs(t.astype(np.float64)) > np.abs(d), np.nextafter(t, np.float32(0)), t)
        np.testing.assert_array_equal(OUT[2], t)
    return modifiers.interval_bounds, (3,), (X, Y, OUT, 32), check


def _grouped(dtype):
    shapes = [(40, 24, 33), (16, 64, 16), (70, 8, 20)]
    As = [rng.standard_normal((m, k)).astype(dtype) for m, k, _ in shapes]
    Bs = [rng.standard_normal((k, n)).astype(dtype) for _, k, n in shapes]
    Cs = [np.zeros((m, n), np.float32) for m, _, n in shapes]

    def check():
        for a, b, c in zip(As, Bs, Cs):
            np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                                       atol=1e-4)
    return As, Bs, Cs, check


@case
def list_of_arrays_grouped_gemm():
    As, Bs, Cs, check = _grouped(np.float16)      # 32x32x32 tiles: a pipelined K loop (issue
    return lists.grouped_matmul, (5,), (As, Bs, Cs, 5, 32, 32, 32), check  # 31: loads of As[g])


@case
def tuple_of_arrays_sum():
    xs = tuple(rng.standard_normal(n).astype(np.float32) for n in (50, 64, 40))
    out = np.zeros(64, np.float32)

    def check():
        ref = np.zeros(64)
        for x in xs:
            ref[:len(x)] += x
        np.testing.assert_allclose(out[:48], ref[:48], rtol=1e-6)
    return lists.sum_of_list, (ct.cdiv(40, 16),), (xs, out, 16), check


@case
def batch_broadcast_matmul():
    """An f32 matmul is f32 arithmetic, never tf32 (cuTile's rule; issue 31's FFT stage shapes):
    each result within the f32 error bound of a 16-term dot product of the float64 result."""
    Fil = rng.standard_normal((1, 16, 16)).astype(np.float32)
    X = rng.standard_normal((6, 16, 64)).astype(np.float32)
    out = np.zeros_like(X)

    def check():
        F64, X64 = Fil.astype(np.float64), X.astype(np.float64)
        bound = 16 * 2.0**-24 * (np.abs(F64) @ np.abs(X64))
        assert (np.abs(out - F64 @ X64) <= bound).all()
    return batched.shared_filter, (ct.cdiv(6, 2),), (Fil, X, out, 2, 16, 64), check


@case
def batch_broadcast_matmul_f16_tensor_cores():
    Fil = rng.standard_normal((1, 16, 16)).astype(np.float16)
    X = rng.standard_normal((4, 16, 32)).astype(np.float16)
    out = np.zeros_like(X)

    def check():
        ref = Fil.astype(np.float64) @ X.astype(np.float64)
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=5e-3, atol=5e-3)
    return batched.shared_filter, (2,), (Fil, X, out, 2, 16, 32), check


@case
def batched_mma_small_tiles():
    A = rng.integers(-3, 4, (8, 2, 4)).astype(np.float16)
    B = rng.integers(-3, 4, (8, 4, 4)).astype(np.float16)
    C = rng.integers(-3, 4, (8, 2, 4)).astype(np.float32)
    ref = A.astype(np.float32) @ B.astype(np.float32) + C
    return batched.batched_small_mma, (4,), (A, B, C, 2, 2, 4, 4), \
        lambda: np.testing.assert_array_equal(C, ref)


@case
def matmul_with_vector():
    W = rng.standard_normal((24, 16)).astype(np.float32)
    v = rng.standard_normal(16).astype(np.float32)
    out = np.zeros(24, np.float32)
    return batched.matvec_rows, (3,), (W, v, out, 8, 16), \
        lambda: np.testing.assert_allclose(out, W @ v, rtol=1e-5, atol=1e-5)


def _fp8(name):
    import ml_dtypes
    return getattr(ml_dtypes, name)


@case
def fp8_quantize_saturating():
    X = (rng.standard_normal((5, 100)) * 30).astype(np.float32)
    X[2, 3] = np.inf                               # its row saturates: every value 0 but the inf
    Q = np.zeros((5, 100), _fp8("float8_e4m3fn"))
    S = np.zeros((5, 1), np.float32)

    def check():
        s = np.maximum(np.abs(X).max(1, keepdims=True), 1e-12) / np.float32(448)
        np.testing.assert_array_equal(S, s)
        with np.errstate(invalid="ignore"):
            ref = np.clip((X / s).astype(np.float32), -448, 448).astype(Q.dtype)
        ref[2] = np.where(np.isinf(X[2]), 448, 0)    # x / inf == 0; inf / inf == NaN -> +448
        np.testing.assert_array_equal(Q.astype(np.float32), ref.astype(np.float32))
    return fp8.quantize_rows, (5,), (X, Q, S, 128), check


@case
def fp8_dequantize_e5m2():
    Q = (rng.standard_normal((4, 64)) * 100).astype(_fp8("float8_e5m2"))
    S = rng.uniform(0.5, 2, (4, 1)).astype(np.float32)
    Y = np.zeros((4, 64), np.float32)
    return fp8.dequantize_rows, (4,), (Q, S, Y, 64), \
        lambda: np.testing.assert_array_equal(Y, Q.astype(np.float32) * S)


def _fp8_mm(name, tiles):
    A = rng.integers(-8, 9, (64, 96)).astype(np.float32).astype(_fp8(name))
    B = (rng.integers(-8, 9, (96, 48)) / 4).astype(np.float32).astype(_fp8(name))
    C = np.zeros((64, 48), np.float32)
    tm, tn, tk = tiles
    ref = A.astype(np.float64) @ B.astype(np.float64) * 0.5 * 0.25
    return fp8.fp8_matmul, (ct.cdiv(64, tm), ct.cdiv(48, tn)), (A, B, C, 0.5, 0.25, *tiles), \
        lambda: np.testing.assert_array_equal(C, ref)


@case
def fp8_e4m3_matmul_tensor_core_tiles():
    return _fp8_mm("float8_e4m3fn", (32, 16, 32))


@case
def fp8_e5m2_matmul_small_tiles():
    return _fp8_mm("float8_e5m2", (8, 8, 16))


@case
def e8m0_mx_quantize():
    X = (rng.standard_normal((16, 32)) * 10.0 ** rng.integers(-3, 4, (16, 1))).astype(np.float32)
    Q = np.zeros((16, 32), _fp8("float8_e4m3fn"))
    S = np.zeros((16, 1), _fp8("float8_e8m0fnu"))

    def check():
        amax = np.maximum(np.abs(X).max(1, keepdims=True), np.float32(1e-30))
        s = 2.0 ** np.ceil(np.log2((amax / np.float32(448)).astype(np.float64)))
        np.testing.assert_array_equal(S.astype(np.float64), s)
        ref = (X / s.astype(np.float32)).astype(Q.dtype)
        np.testing.assert_array_equal(Q.astype(np.float32), ref.astype(np.float32))
    return fp8.mx_quantize, (4,), (X, Q, S, 4), check


@case
def mma_scaled_block_scaled_matmul():
    """ct.mma_scaled (tests/cutile_kernels/fp8.py) against numpy: the scaled product in float64."""
    M, N, K = 32, 16, 128
    A = rng.integers(-6, 7, (M, K)).astype(np.float32).astype(_fp8("float8_e4m3fn"))
    B = rng.integers(-6, 7, (K, N)).astype(np.float32).astype(_fp8("float8_e4m3fn"))
    SA = (2.0 ** rng.integers(-4, 5, (M, K // 32))).astype(_fp8("float8_e8m0fnu"))
    SB = (2.0 ** rng.integers(-4, 5, (K // 32, N))).astype(_fp8("float8_e8m0fnu"))
    C = np.zeros((M, N), np.float32)
    a = A.astype(np.float64) * np.repeat(SA.astype(np.float64), 32, 1)
    b = B.astype(np.float64) * np.repeat(SB.astype(np.float64), 32, 0)
    return fp8.block_scaled_matmul, (2, 1), (A, SA, B, SB, C, 16, 16, 64), \
        lambda: np.testing.assert_array_equal(C, a @ b)


@case
def vector_products():
    """cuTile's matmul_nd of two vectors: mma with one-element operands or accumulator."""
    x, y = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    Y = rng.standard_normal((16, 8)).astype(np.float32)
    dot, outer = np.zeros(1, np.float32), np.zeros((2, 8), np.float32)

    def check():
        np.testing.assert_allclose(dot, [x @ y], rtol=1e-5)
        np.testing.assert_allclose(outer, [x @ Y, x[0] * Y[0]], rtol=1e-5, atol=1e-6)
    return matmul.vector_products, (1,), (x, y, Y, dot, outer, 16, 8), check


@case
def list_of_arrays_carried_by_a_loop():
    As = [rng.integers(-9, 9, 16).astype(np.float32) for _ in range(2)]
    Bs = [rng.integers(-9, 9, 16).astype(np.float32) for _ in range(2)]
    out = np.zeros(16, np.float32)
    return lists.alternating_sums, (1,), (As, Bs, out, 3, 16), \
        lambda: np.testing.assert_array_equal(out, 2 * sum(As) + sum(Bs))     # As, Bs, As


def _tf32(x):
    """float32 values rounded to tf32 (10 mantissa bits, to nearest even), as float64."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0xFFF + ((u >> 13) & 1)) & ~np.uint64(0x1FFF)
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


@case
def tf32_where():
    X = rng.standard_normal(96).astype(np.float32)
    Y = np.zeros_like(X)
    return dtypes.relu_tf32, (3,), (X, Y, 32), \
        lambda: np.testing.assert_array_equal(Y, np.maximum(_tf32(X), 0))


@case
def tf32_of_f64_rounds_once():
    """f64 -> tf32 rounds the double once: values just past a tf32 halfway (which f32 would
    round onto it, and then to even), tf32's subnormals, past its largest (to Inf), NaN."""
    e = 2.0 ** -40
    X = np.array([1 + 2**-11 + e, -(1 + 2**-11 + e), 1 + 3 * 2**-11 - e, 3.0 * 2**-12 + e,
                  2**-130 * (1 + 2**-7 + e), 2**-140 * 1.5, 2**-126 * (1 - 2**-11), 2**-137,
                  2.0**128 - 2.0**115, -(2.0**128 - 2.0**117), 1e300, np.nan, np.inf, 0.0,
                  -0.0, 1 / 3] * 2)
    m, ex = np.frexp(X)
    q = np.maximum(ex - 11, -136)                    # the exponent of one ulp: 10 bits, or 2^-136
    with np.errstate(invalid="ignore"):
        want = np.ldexp(np.rint(np.ldexp(X, -q)), q)
        want = np.where(np.abs(want) >= 2.0**128, np.copysign(np.inf, X), want)
    want = np.where(np.isfinite(X), want, X)
    Y = np.zeros_like(X)
    return dtypes.tf32_of_f64, (2,), (X, Y, 16), lambda: np.testing.assert_array_equal(Y, want)


# Features of the front end (dtype objects, 0-d loads, tuples of arrays): what they add is in the
# trace; the C++ they lower to (plain loads, stores, reductions) runs in both CPU modes elsewhere,
@case
def int64_index_past_int32():
    """Tiles around element 2^31 of a (2^31 + 40, 1) int8 array (2 GiB of lazily zeroed
    pages each, of which the kernel touches the last few): int64 extents and tile indices."""
    n, tile = 2**31 + 40, 32
    x, y = np.zeros((n, 1), np.int8), np.zeros((n, 1), np.int8)
    lo = n - 200
    x[lo:, 0] = rng.integers(-100, 100, 200)
    first = lo // tile

    def check():
        s = first * tile
        np.testing.assert_array_equal(y[s:], x[s:] + 1)
        assert not y[s - 64:s].any() and y[0] == 0
    return int64_index.inc_tiles_from, (ct.cdiv(n, tile) - first,), (x, y, first, tile), check


@case
def int64_index_stride_past_int32():
    """Two rows 2^32 + 64 elements apart (x) and 2^32 + 32 apart (y, between x's) in one 4 GiB
    int8 buffer of lazily zeroed pages, of which the kernel touches two: a row index times a
    stride past int32 (cuTile's test_array int64_index case without its 8 GiB of tensors)."""
    storage = np.zeros(2**32 + 256, np.int8)
    x = np.lib.stride_tricks.as_strided(storage, (2, 32), (2**32 + 64, 1))
    y = np.lib.stride_tricks.as_strided(storage[160:], (2, 32), (2**32 + 32, 1))
    x[...] = rng.integers(-100, 100, (2, 32))
    want = x + 1

    def check():
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(x, want - 1)
        assert not storage[32:160].any() and not storage[2**32 + 96:2**32 + 192].any()
    return int64_index.inc_rows, (2,), (x, y, 32), check


@case
def int64_index_list_and_extents():
    arrays = [rng.integers(-50, 50, (50, 1)).astype(np.int32) for _ in range(3)]
    out, extents = np.zeros((50, 1), np.int32), np.zeros(2, np.int64)

    def check():
        np.testing.assert_array_equal(out, sum(arrays))
        np.testing.assert_array_equal(extents, [50, 4])
    return int64_index.sum_list_and_extents, (4,), (arrays, out, extents, 16), check


# so these run in the interpreter and the faithful mode (real threads, barriers, bounds checks).
FRONT_END = {"np_dtypes_causal_mask", "np_dtypes_astype", "zero_d_loads_segments",
             "zero_d_load_picks_row", "zero_d_extract_and_num_tiles", "tuple_of_arrays_sum",
             "torch_dtypes"}


test_kernel_matches_numpy, test_kernel_compiles_with_nvrtc = case_tests(
    CASES, [(n, m) for n in CASES for m in MODES if not (n in FRONT_END and m == "fast")])


@pytest.mark.parametrize("name,arch,insn", [("float8_e4m3fn", "sm_89", "QMMA.16832.F32.E4M3.E4M3"),
                                            ("float8_e5m2", "sm_89", "QMMA.16832.F32.E5M2.E5M2"),
                                            ("float8_e4m3fn", "sm_90", "HMMA")])
def test_fp8_mma_uses_tensor_cores_from_sm89(name, arch, insn, tmp_path):
    """fp8 mma.sync (m16n8k32) where the GPU has it; sm_80 multiplies in float instead."""
    from tilepy.tools import sass_stats
    if not sass_stats.available():
        pytest.skip("no nvdisasm/cuobjdump")
    kernel, _, args, _ = _fp8_mm(name, (32, 16, 32))
    ck = compile_for_args(kernel, args)
    ops = {}
    for a in (arch, "sm_80"):
        path = tmp_path / f"{a}.cubin"
        path.write_bytes(compile_cubin(ck.compile_source(), a, ck.name).data)
        ops[a] = {o for v in sass_stats.sass_ops(str(path)).values() for o in v}
    assert any(o.startswith(insn) for o in ops[arch]), sorted(ops[arch])
    assert not any("MMA" in o for o in ops["sm_80"])


@pytest.mark.parametrize("mode", ["interpret", "fast"])
def test_scalar_int64_parameter(mode):
    """`big: ct.ScalarInt64` takes Python ints past int32 (one int64 specialization for all)."""
    for big, want in ((2**31, 1), (2**63 - 1, 1), (-2**63, 0), (5, 0)):
        out = np.zeros(1, np.int32)
        run_case((dtypes.past_int32, (1,), (out, big), lambda: None), mode)
        assert out[0] == want, (big, out)
    # refused by the specialization, or by the launch plan cached above: not wrapped around
    with pytest.raises((ct.TileValueError, ct.TileUnsupportedFeatureError), match="not fit"):
        ct.launch(None, (1,), dtypes.past_int32, (np.zeros(1, np.int32), 2**63))
    with pytest.raises(ct.TileTypeError, match="int32 scalar but the parameter is annotated"):
        ct.launch(None, (1,), dtypes.past_int32, (np.zeros(1, np.int32), np.int32(5)))


def test_int64_extents_need_the_annotation():
    """An extent or stride past int32 without IndexedWithInt64 is refused (an OverflowError, as
    cuTile), never wrapped around; the annotation on a scalar is cuTile's TypeError."""
    base = np.zeros(64, np.int8)
    x = np.lib.stride_tricks.as_strided(base, (2, 1), (2**32, 1))      # stride 2^32 elements
    for big in (x, np.broadcast_to(base[:1], (2**31, 1))):
        with pytest.raises(OverflowError, match="does not fit in int32; annotate the parameter "
                                                "ct.IndexedWithInt64"):
            ct.launch(None, (1,), int64_index.inc_tiles_from_int32, (big, base.reshape(64, 1), 0, 2))
    with pytest.raises(ct.TileTypeError, match="IndexedWithInt64 can only be applied to an array"):
        ct.launch(None, (1,), int64_index.scalar_marked_int64_indexed, (np.zeros(1, np.int32), 3))


def test_mma_scaled_scratch_is_the_operand_bytes():
    """BlockScaledMatMul's 256x128 e4m3 tiles (issue 31): the scratch holds the operands in their
    own type and the scales as floats, not the operands as floats (256 KiB, refused)."""
    tm, tn, tk = 256, 256, 128
    e4m3, e8m0 = _fp8("float8_e4m3fn"), _fp8("float8_e8m0fnu")
    args = (np.zeros((tm, tk), e4m3), np.ones((tm, tk // 32), e8m0), np.zeros((tk, tn), e4m3),
            np.ones((tk // 32, tn), e8m0), np.zeros((tm, tn), np.float32), tm, tn, tk)
    smem = compile_for_args(fp8.block_scaled_matmul, args).emitted.smem_bytes
    assert smem <= 2 * tm * tk + 4 * 2 * tm * (tk // 32) + 128, smem


def test_mma_scaled_compiles_for_blackwell():
    """mma_scaled takes the generic path on every target, sm_100 included (no tcgen05 yet)."""
    compile_case(CASES["mma_scaled_block_scaled_matmul"](), "sm_100")
