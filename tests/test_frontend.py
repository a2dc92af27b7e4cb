"""The kernel language: what Python becomes in Tile IR (checked with FileCheck)."""
import numpy as np
import pytest

import tilepy as ct


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,)) +
             ct.load(b, index=(i,), shape=(TILE,)))


def test_vector_add_ir(check):
    a = np.zeros(100, np.float32)
    check(vadd.mlir(a, a, a, 16), """
# CHECK: cuda_tile.module @vadd {
# CHECK: entry @vadd(%a: tile<ptr<f32>>, %a_shape_0: tile<i32>, %b: tile<ptr<f32>>, %b_shape_0: tile<i32>, %c: tile<ptr<f32>>, %c_shape_0: tile<i32>) {
# CHECK: %a_aligned = assume div_by<16>, %a : tile<ptr<f32>>
# CHECK: %a_shape_0_div4 = assume div_by<4>, %a_shape_0 : tile<i32>
# CHECK: %a_shape_0_nonneg = assume bounded<0, ?>, %a_shape_0_div4 : tile<i32>
# CHECK: %a_view = make_tensor_view %a_aligned, shape = [%a_shape_0_nonneg], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
# CHECK: make_partition_view %a_view : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
# CHECK: %i, {{.*}} = get_tile_block_id : tile<i32>
# CHECK: load_view_tko weak %a_tiles[%i] token = {{.*}} -> tile<16xf32>, token
# CHECK: load_view_tko weak %b_tiles[%i]
# CHECK: = addf {{.*}} : tile<16xf32>
# CHECK: store_view_tko weak {{.*}}, %c_tiles[%i] token = {{.*}} : tile<16xf32>, partition_view<{{.*}}>, tile<i32> -> token
# CHECK: return
""")


def test_strided_array_gets_dynamic_stride(check):
    a = np.zeros((8, 10), np.float32)[:, ::2]
    c = np.zeros((8, 5), np.float32)

    @ct.kernel
    def copy2d(a, c):
        ct.store(c, (0, 0), ct.load(a, (0, 0), (8, 8)))
    check(copy2d.mlir(a, c), """
# CHECK: tensor_view<?x?xf32, strides=[?,?]>
# CHECK: tensor_view<?x?xf32, strides=[?,1]>
""")


@ct.kernel
def mm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


def test_matmul_loop_carries_accumulator_and_token(check):
    A = np.zeros((64, 64), np.float16)
    C = np.zeros((64, 64), np.float32)
    check(mm.mlir(A, A, C, 32, 32, 16), """
# CHECK: padding_value = zero
# CHECK: = divi %A_shape_1_nonneg, %{{.*}} signed rounding<positive_inf> : tile<i32>
# CHECK: %acc{{.*}}:2 = for %k in ({{.*}}) : tile<i32> iter_values(%acc{{.*}} = %acc, %{{.*}} = %{{.*}}) -> (tile<32x32xf32>, token) {
# CHECK: load_view_tko weak %A_tiles[%bm, %k]
# CHECK: load_view_tko weak %B_tiles[%k, %bn]
# CHECK: mmaf %a, %b, %acc{{.*}} : tile<32x16xf16>, tile<16x32xf16>, tile<32x32xf32>
# CHECK: continue
""")


def test_runtime_if_yields_changed_values(check):
    @ct.kernel
    def relu_or_neg(x, y, flag):
        t = ct.load(x, (0,), (16,))
        if flag > 0:
            t = ct.maximum(t, 0.0)
        else:
            t = -t
        ct.store(y, (0,), t)
    a = np.zeros(16, np.float32)
    check(relu_or_neg.mlir(a, a, 1), """
# CHECK: = cmpi greater_than %flag, %{{.*}}, signed : tile<i32> -> tile<i1>
# CHECK: %t{{.*}} = if %{{.*}} -> (tile<16xf32>) {
# CHECK: maxf
# CHECK: yield
# CHECK: } else {
# CHECK: negf
# CHECK: yield
""")


def test_constant_condition_folds(check):
    @ct.kernel
    def k(x, y, MODE: ct.Constant[int]):
        t = ct.load(x, (0,), (16,))
        if MODE == 1:
            t = t * 2.0
        else:
            t = t + 1.0
        ct.store(y, (0,), t)
    a = np.zeros(16, np.float32)
    text = k.mlir(a, a, 1)
    assert "mulf" in text and "addf" not in text and " if " not in text


def test_promotion_and_literals(check):
    @ct.kernel
    def k(x, y):
        t = ct.load(x, (0,), (16,))          # f16
        u = t * 2 + 0.5                       # literals take the tile's dtype
        v = u.astype(ct.float32) + ct.bid(0)  # i32 scalar + f32 tile -> f32
        ct.store(y, (0,), v)
    x = np.zeros(16, np.float16)
    y = np.zeros(16, np.float32)
    check(k.mlir(x, y), """
# CHECK: constant <f16: 2.000000e+00> : tile<f16>
# CHECK: mulf {{.*}} : tile<16xf16>
# CHECK: constant <f16: 5.000000e-01> : tile<f16>
# CHECK: addf {{.*}} : tile<16xf16>
# CHECK: ftof {{.*}} : tile<16xf16> -> tile<16xf32>
# CHECK: itof {{.*}} signed : tile<i32> -> tile<f32>
# CHECK: reshape {{.*}} : tile<f32> -> tile<1xf32>
# CHECK: broadcast {{.*}} : tile<1xf32> -> tile<16xf32>
""")


def test_helper_functions_are_inlined(check):
    def twice(v):
        return v + v

    @ct.kernel
    def k(x, y):
        ct.store(y, (0,), twice(ct.load(x, (0,), (8,))))
    a = np.zeros(8, np.float32)
    check(k.mlir(a, a), "# CHECK: addf %{{.*}}, %{{.*}} : tile<8xf32>\n")


def test_specializations_are_cached():
    """One specialization per distinct key: a repeated call reuses it (the very same compiled
    kernel), a new constant or dtype adds exactly one."""
    a = np.zeros(100, np.float32)
    h = np.zeros(100, np.float16)
    vadd.cache.clear()
    sizes = []
    for args in [(a, a, a, 16), (a, a, a, 16), (a, a, a, 32), (h, h, h, 16), (a, a, a, 16)]:
        vadd.mlir(*args)
        sizes.append(len(vadd.cache))
    assert sizes == [1, 1, 2, 3, 3]
    keys = list(vadd.cache)
    assert len(set(keys)) == len(keys)
    first = vadd.cache[keys[0]]
    vadd.mlir(a, a, a, 16)
    assert vadd.cache[keys[0]] is first


def test_kernel_cannot_be_called_directly():
    with pytest.raises(ct.TileSyntaxError, match="launch it with tilepy.launch"):
        vadd(1, 2, 3, 4)
