"""cuTile's fp4 and e5m3 names (issue 31 item 6): float4_e2m1fn, float8_e5m3fnu, pack_to_bytes,
unpack_from_bytes and mma_scaled with fp4 operands. Each kernel (tests/cutile_kernels/fp4.py)
runs in the interpreter and both CPU modes against numpy, and compiles with NVRTC for sm_80 and
sm_90. The references are written from the formats' definitions, not from tilepy's tables."""
import numpy as np
import pytest

import tilepy as ct
from cutile_cases import case_tests, run_case
from cutile_kernels import fp4

rng = np.random.default_rng(31)
CASES = {}

# e2m1: sign, 2 exponent bits (bias 1), 1 mantissa bit; no Inf, no NaN
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
# e5m3 (no sign bit): 2^(e - 15) * (1 + m / 8), e = 0: m * 2^-17; 0xff is NaN
E5M3 = np.array([m * 2.0 ** -17 if e == 0 else 2.0 ** (e - 15) * (1 + m / 8)
                 for e in range(32) for m in range(8)])
E5M3[255] = np.nan


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def nearest_even(x, values):
    """Round to the nearest of the sorted non-negative `values` (ties to the even code),
    saturating at the largest: the spec's round-to-nearest-even with satfinite."""
    a = np.minimum(np.abs(x), values[-1])
    i = np.clip(np.searchsorted(values, a), 1, len(values) - 1)
    lo, hi = values[i - 1], values[i]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (i % 2 == 0))
    return np.where(pick_hi, i, i - 1)


def fp4_codes(x):
    mag = nearest_even(x, E2M1)
    return (mag | (np.signbit(x) << 3)).astype(np.uint8)


@case
def fp4_quantize_and_pack():
    X = (rng.standard_normal((32, 16)) * 3).astype(np.float32)
    X[0, :8] = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 100.0]        # ties and saturation
    X[1, :4] = [-0.25, -7.0, np.inf, -np.inf]
    X[2, :2] = [np.nan, -0.0]                                         # NaN: +6 (no NaN in e2m1)
    packed = np.zeros((32, 8), np.uint8)
    back = np.zeros_like(X)

    def check():
        codes = fp4_codes(np.nan_to_num(X, nan=6.0))
        np.testing.assert_array_equal(packed, codes[:, 0::2] | (codes[:, 1::2] << 4))
        ref = E2M1[codes & 7] * np.where(codes & 8, -1.0, 1.0)
        np.testing.assert_array_equal(back, ref.astype(np.float32))
        assert back[0, 4] == 2.0 and back[0, 6] == 4.0 and back[0, 7] == 6.0 and back[2, 0] == 6.0
    return fp4.quantize_fp4, (2,), (X, packed, back, 16, 16), check


@case
def e5m3_codes():
    X = (2.0 ** rng.uniform(-19, 18, 64)).astype(np.float32)
    X[:8] = [1.0625, 1.1875, -3.0, np.nan, np.inf, 2e5, 1e-9, -0.0]
    out = np.zeros(64, np.uint8)
    back = np.zeros(64, np.float32)

    def check():
        finite = E5M3[:255]
        want = nearest_even(np.where(np.signbit(X), 0.0, np.nan_to_num(X, nan=0.0)), finite)
        want = np.where(np.isnan(X), 255, want)
        np.testing.assert_array_equal(out, want)
        assert list(out[:2]) == [15 << 3, 15 << 3 | 2]      # 1.0625 -> 1.0, 1.1875 -> 1.25
        np.testing.assert_array_equal(back, E5M3[out].astype(np.float32))
    return fp4.e5m3_bytes, (1,), (X, out, back, 64), check


def roundtrip_case(dtype):
    X = (rng.standard_normal(32) * 50).astype(dtype)
    nbytes = X.nbytes
    out = np.zeros(nbytes, np.uint8)
    Y = np.zeros_like(X)

    def check():
        np.testing.assert_array_equal(out, X.view(np.uint8))
        np.testing.assert_array_equal(Y, X)
    return fp4.bytes_roundtrip, (1,), (X, out, Y, 32), check


CASES["bytes_roundtrip_float16"] = lambda: roundtrip_case(np.dtype(np.float16))


def _scaled(block, scales):
    M, N, K = 32, 16, 128
    A = rng.integers(0, 256, (M, K // 2)).astype(np.uint8)
    B = rng.integers(0, 256, (K, N // 2)).astype(np.uint8)
    a = _unpack(A).reshape(M, K)
    b = _unpack(B).reshape(K, N)
    if scales == "e8m0":
        import ml_dtypes
        SA = (2.0 ** rng.integers(-4, 5, (M, K // block))).astype(ml_dtypes.float8_e8m0fnu)
        SB = (2.0 ** rng.integers(-4, 5, (K // block, N))).astype(ml_dtypes.float8_e8m0fnu)
        sa, sb = SA.astype(np.float64), SB.astype(np.float64)
    elif scales == "e4m3":
        import ml_dtypes
        SA = rng.uniform(0.1, 4, (M, K // block)).astype(ml_dtypes.float8_e4m3fn)
        SB = rng.uniform(0.1, 4, (K // block, N)).astype(ml_dtypes.float8_e4m3fn)
        sa, sb = SA.astype(np.float64), SB.astype(np.float64)
    else:                                   # e5m3 codes as bytes, 2^-3..2^3
        SA = rng.integers(96, 144, (M, K // block)).astype(np.uint8)
        SB = rng.integers(96, 144, (K // block, N)).astype(np.uint8)
        sa, sb = E5M3[SA], E5M3[SB]
    C = np.zeros((M, N), np.float32)
    ref = (a * np.repeat(sa, block, 1)) @ (b * np.repeat(sb, block, 0))

    def check():
        np.testing.assert_allclose(C, ref, rtol=1e-6, atol=1e-6)
    return fp4.fp4_scaled_matmul, (2, 1), (A, SA, B, SB, C, 16, 16, 64, block,
                                          scales == "e5m3"), check


def _unpack(packed):
    codes = np.stack([packed & 15, packed >> 4], -1).reshape(-1)
    return E2M1[codes & 7] * np.where(codes & 8, -1.0, 1.0)


for _block, _scales in ((32, "e8m0"), (16, "e4m3"), (16, "e5m3")):
    CASES[f"fp4_mma_scaled_{_scales}_{_block}"] = (
        lambda bl, sc: lambda: _scaled(bl, sc))(_block, _scales)


test_kernel_matches_numpy, test_kernel_compiles_with_nvrtc = case_tests(CASES)


def test_dtype_names():
    """cuTile's spellings, from tilepy and from `cuda.tile._datatype` (tilepy.types.dtype)."""
    from tilepy.types import dtype
    assert dtype.float4_e2m1fn is ct.float4_e2m1fn and dtype.float8_e5m3fnu is ct.float8_e5m3fnu
    assert (ct.float4_e2m1fn.bits, ct.float8_e5m3fnu.bits) == (4, 8)
    assert "pack_to_bytes" in ct.__all__ and "unpack_from_bytes" in ct.__all__
    assert (ct.pack_to_bytes.__name__, ct.unpack_from_bytes.__name__) == (
        "pack_to_bytes", "unpack_from_bytes")
    # cuTile takes no fp4 arrays (nor does tilepy): the refusal says how fp4 data is passed
    import ml_dtypes
    x = np.zeros(32, ml_dtypes.float4_e2m1fn)
    with pytest.raises(ct.TileTypeError, match="uint8 arrays, two values a byte"):
        ct.launch(None, (1,), fp4.bytes_roundtrip, (x, np.zeros(16, np.uint8), x, 32))


@ct.kernel
def _unpack_odd(X, Y):
    b = ct.load(X, (0,), shape=(2,))
    ct.store(Y, (0,), tile=ct.unpack_from_bytes(b, ct.int32))  # MARKER unpack


@ct.kernel
def _fp4_scales_per_32(A, S, C):
    a = ct.astype(ct.load(A, (0, 0), shape=(16, 64)), ct.float4_e2m1fn)
    s = ct.load(S, (0, 0), shape=(16, 2))
    sb = ct.load(S, (0, 0), shape=(2, 16))
    acc = ct.zeros((16, 16), dtype=ct.float32)
    ct.store(C, (0, 0), tile=ct.mma_scaled(a, s, ct.permute(a, (1, 0)), sb, acc))  # MARKER mma


def test_errors_name_the_problem_at_the_line():
    """cuTile's checks: whole numbers of elements; the block sizes of the scale type."""
    import ml_dtypes
    from kernels_util import assert_located
    with pytest.raises(ct.TileTypeError, match="not divisible by 32") as e:
        run_case((_unpack_odd, (1,), (np.zeros(2, np.uint8), np.zeros(1, np.int32)), None),
                 "interpret")
    assert_located(e.value, "MARKER unpack", "ct.unpack_from_bytes", __file__)
    with pytest.raises(ct.TileTypeError, match=r"block size B = K // K_s in \{16\}, .*expected x_scale shape "
                                                   r"\(16, 4\)") as e:
        run_case((_fp4_scales_per_32, (1,), (np.zeros((64, 64), np.float32),
                                            np.zeros((16, 16), ml_dtypes.float8_e4m3fn),
                                            np.zeros((16, 16), np.float32)), None), "interpret")
    assert_located(e.value, "MARKER mma", "ct.mma_scaled", __file__)


def test_bytecode_is_nvidias():
    """Tile IR bytecode 13.4 of the fp4 kernels: tilepy reads back the same bytes, NVIDIA's
    tileirdisasm accepts it and prints what tilepy prints (the types f4E2M1FN, fnv8E5M3FNU); 13.2
    has neither f4E2M1FN nor unpack and refuses by name."""
    import bytecode_util as bu
    from tilepy.bytecode import read_module, write_module
    from tilepy.ir.printer import print_module
    kernel, _, args, _ = CASES["fp4_mma_scaled_e5m3_16"]()
    data = kernel.bytecode(*args, version="13.4")
    assert write_module(read_module(data), version=(13, 4)) == data
    with pytest.raises(ct.TileUnsupportedFeatureError, match="needs bytecode 13.3"):
        kernel.bytecode(*args, version="13.2")
    if bu.TILEIRDISASM is None:
        pytest.skip("tileirdisasm not installed (pip install nvidia-cuda-tileiras)")
    result = bu.disasm(data)
    assert result.returncode == 0, result.stderr
    assert "f4E2M1FN" in result.stdout and "fnv8E5M3FNU" in result.stdout
    assert bu.canonical_text(print_module(read_module(data))) == bu.canonical_text(result.stdout)


@ct.kernel
def _constants(Y, V: ct.Constant[float]):
    t = ct.full((4,), V, dtype=ct.float4_e2m1fn).astype(ct.float32)
    ct.store(Y, (0,), tile=t + ct.full((4,), V, dtype=ct.float8_e5m3fnu).astype(ct.float32))


@ct.kernel
def _nan_fp4(Y):
    ct.store(Y, (0,), tile=ct.full((4,), float("nan"), dtype=ct.float4_e2m1fn))  # MARKER nan


@pytest.mark.parametrize("mode", ["interpret", "fast"])
def test_constants_round_into_the_type(mode):
    """A Python number given to an fp4/e5m3 tile is rounded into it (1.3 -> 1.5 and 1.25);
    NaN in e2m1 and negative values in e5m3 have no value there (cuTile refuses both)."""
    from kernels_util import assert_located
    y = np.zeros(4, np.float32)
    run_case((_constants, (1,), (y, 1.3), lambda: None), mode)
    np.testing.assert_array_equal(y, 1.5 + 1.25)
    with pytest.raises(ct.TileValueError, match=r"Negative values cannot be represented in an "
                                                r"unsigned float format \(float8_e5m3fnu"):
        run_case((_constants, (1,), (y, -1.0), lambda: None), mode)
    with pytest.raises(ct.TileValueError, match=r"NaN cannot be represented in a finite-only "
                                                r"float format \(float4_e2m1fn") \
            as e:
        run_case((_nan_fp4, (1,), (y,), lambda: None), mode)
    assert_located(e.value, "MARKER nan", "ct.full", __file__)
