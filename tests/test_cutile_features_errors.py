"""Located errors of the issue-18 features: a dtype object tilepy has no dtype for, lists of
arrays that cannot be one parameter, e8m0 conversions without their rounding, mma_scaled shapes,
fp8 arithmetic (not allowed, as in cuTile); and refusals that lead with cuTile's words (issue 31:
printf's checks, a sub-byte dtype called, a non-tile where a tile goes, a float in a shape, an
enum variable of two values after an `if`)."""
import numpy as np
import pytest

import tilepy as ct
from kernels_util import assert_located

HERE = __file__
V32 = np.zeros(32, np.float32)


@ct.kernel
def complex_dtype(x):
    ct.store(x, (0,), ct.arange(32, dtype=np.complex64).astype(ct.float32))   # F1


@ct.kernel
def list_runtime_index_not_int(xs, out):
    t = ct.load(xs[ct.bid(0) * 1.0], (0,), shape=(32,))   # F2
    ct.store(out, (0,), t)


@ct.kernel
def e8m0_without_rounding(x, s):
    t = ct.load(x, (0,), shape=(32,))
    ct.store(s, (0,), t.astype(ct.float8_e8m0fnu))   # F3


@ct.kernel
def mma_scaled_bad_scale_shape(a, sa, b, sb, c):
    ta = ct.load(a, (0, 0), shape=(16, 64))
    tb = ct.load(b, (0, 0), shape=(64, 16))
    acc = ct.zeros((16, 16), ct.float32)
    ssa = ct.load(sa, (0, 0), shape=(16, 4))
    ssb = ct.load(sb, (0, 0), shape=(2, 16))
    ct.store(c, (0, 0), ct.mma_scaled(ta, ssa, tb, ssb, acc))   # F4


@ct.kernel
def mma_scaled_mixed_fp8(a, sa, b, sb, c):
    ta = ct.load(a, (0, 0), shape=(16, 32))
    tb = ct.load(b, (0, 0), shape=(32, 16))
    ssa = ct.load(sa, (0, 0), shape=(16, 1))
    ssb = ct.load(sb, (0, 0), shape=(1, 16))
    ct.store(c, (0, 0), ct.mma_scaled(ta, ssa, tb, ssb, ct.zeros((16, 16), ct.float32)))   # F6


@ct.kernel
def fp8_add(x, y):
    t = ct.load(x, (0,), shape=(32,))
    ct.store(y, (0,), t + t)   # F5


@ct.kernel
def printf_int_as_float():
    ct.printf("%d %f", 1, 2)   # F7


@ct.kernel
def printf_bad_format():
    ct.printf("100%!")   # F8


@ct.kernel
def printf_too_few():
    ct.printf("%d, %d", 1)   # F9


@ct.kernel
def fp4_constructor():
    ct.float4_e2m1fn(2.0)   # F10


@ct.kernel
def permute_array(x):
    ct.permute(x, (1, 0))   # F11


@ct.kernel
def float_in_shape(x):
    ct.load(x, (0, 0), shape=(2, 2.0))   # F12


@ct.kernel
def enum_by_branch():
    if ct.bid(0) == 1:
        val = ct.MemoryOrder.RELAXED
    else:
        val = ct.MemoryOrder.ACQUIRE
    print(val == ct.MemoryOrder.WEAK)   # F13


def _f8(name, shape):
    import ml_dtypes
    return np.zeros(shape, getattr(ml_dtypes, name))


CASES = [
    (complex_dtype, lambda: (V32,), ct.TileTypeError, "F1", "np.complex64", "no tilepy dtype"),
    (list_runtime_index_not_int, lambda: ([V32, V32], V32), ct.TileTypeError, "F2", "xs[ct.bid(0) * 1.0]",
     "integer scalar"),
    (e8m0_without_rounding, lambda: (V32, _f8("float8_e8m0fnu", 32)), ct.TileTypeError, "F3",
     "t.astype(ct.float8_e8m0fnu)", "rounding<zero> or rounding<positive_inf>"),
    (mma_scaled_bad_scale_shape, lambda: (_f8("float8_e4m3fn", (16, 64)), _f8("float8_e8m0fnu", (16, 4)),
                                          _f8("float8_e4m3fn", (64, 16)), _f8("float8_e8m0fnu", (2, 16)),
                                          np.zeros((16, 16), np.float32)),
     ct.TileTypeError, "F4", "ct.mma_scaled", r"scaling block size B = K // K_s in \{32\}, got "
                                               r"x\.shape\[1\] = 64 and x_scale\.shape\[1\] = 4"),
    (mma_scaled_mixed_fp8, lambda: (_f8("float8_e4m3fn", (16, 32)), _f8("float8_e8m0fnu", (16, 1)),
                                    _f8("float8_e5m2", (32, 16)), _f8("float8_e8m0fnu", (1, 16)),
                                    np.zeros((16, 16), np.float32)),
     ct.TileTypeError, "F6", "ct.mma_scaled", "x and y must have the same dtype"),
    (fp8_add, lambda: (_f8("float8_e5m2", 32), _f8("float8_e5m2", 32)), ct.TileTypeError, "F5", "t + t",
     "e5m2"),
    (printf_int_as_float, lambda: (), ct.TileTypeError, "F7", "ct.printf",
     r"^Format %f for arg #1 got unexpected type of Tile\[int32,\(\)\]"),
    (printf_bad_format, lambda: (), ct.TileTypeError, "F8", "ct.printf",
     r"^Invalid format string: '%!' \(at offset 3"),
    (printf_too_few, lambda: (), ct.TileTypeError, "F9", "ct.printf",
     r"^Not enough arguments for format string: .* 2 conversion\(s\) but 1"),
    (fp4_constructor, lambda: (), ct.TileTypeError, "F10", "ct.float4_e2m1fn(2.0)",
     r"^Cannot call an object of type DTypeSpec\(dtype=<DType 'float4_e2m1fn'>\)"),
    (permute_array, lambda: (np.zeros((4, 4), np.float32),), ct.TileTypeError, "F11", "ct.permute",
     r"^Invalid argument #1 of permute\(\): Expected a tile, but given value has type "
     r"Array\[float32,\(\?,\?\):\(\?,\?\)\]; load a tile"),
    (float_in_shape, lambda: (np.zeros((4, 4), np.float32),), ct.TileTypeError, "F12", "(2, 2.0)",
     r'^Invalid argument "shape" of load\(\): Expected a tuple of integers, but element #1 has '
     r"type Tile\[float32,\(\)\]"),
    (enum_by_branch, lambda: (), ct.TileTypeError, "F13", "val ==",
     r"^Type of `val` depends on path taken: <enum constant MemoryOrder.ACQUIRE> \(the `else` "
     r"branch\) vs. <enum constant MemoryOrder.RELAXED> \(the `if` branch\)"),
]


@pytest.mark.parametrize("kernel,args,exc,marker,snippet,message", CASES, ids=[c[3] for c in CASES])
def test_located_error(kernel, args, exc, marker, snippet, message):
    with pytest.raises(exc, match=message) as info:
        kernel.mlir(*args())
    assert_located(info.value, marker, snippet, HERE)


def test_arrays_of_a_list_must_share_dtype_and_rank():
    with pytest.raises(ct.TileTypeError, match="one dtype and rank.*float32 1-d, int32 1-d"):
        list_runtime_index_not_int.mlir([V32, np.zeros(32, np.int32)], V32)


def test_dtype_objects_are_fingerprinted_for_the_disk_index():
    torch = pytest.importorskip("torch")
    from tilepy.frontend.identity import fingerprint
    assert fingerprint(torch.int32) is not None
    assert fingerprint(torch.int32) != fingerprint(torch.float32) != fingerprint(np.float32)
    from tilepy.types import dtype as D
    assert D.foreign(torch.bool) is D.bool_ and D.foreign(np.bool_) is D.bool_
    assert D.foreign(np.dtype("uint16")) is D.uint16 and D.foreign(torch.float8_e4m3fn) is D.float8_e4m3fn
    assert D.foreign(torch.complex64) is None and D.foreign(int) is None
