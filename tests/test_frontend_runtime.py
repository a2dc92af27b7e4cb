"""Numerics of the kernel language's builtins on the CPU backend, against numpy: atomics,
gather/scatter on strided arrays, extract/cat/astile/bitcast, tuple reductions, scans, printing
and assertions."""
import numpy as np
import pytest

import tilepy as ct
from guarded import launch

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True, params=["fast", "faithful"])
def cpu_mode(request):
    """Every kernel here runs in both CPU modes (faithful: 128 threads per block, real barriers)."""
    with ct.cpu_mode(request.param):
        yield request.param


def run(kernel, grid, *args):
    """ct.launch in the current CPU mode, with guard bytes around every array (guarded.py)."""
    launch(grid, kernel, args)


@ct.kernel
def print_per_block(x):
    b = ct.bid(0)
    ct.printf("block %d: %d\n", b, ct.load(x, (b,), (32,)))


def test_a_print_op_is_written_whole_while_blocks_run_on_every_core(capfd, monkeypatch):
    """One print op of a tile is many printf calls; blocks on other cores must not cut in."""
    monkeypatch.setenv("TILEPY_CPU_WORKERS", "4")
    x = np.tile(np.arange(32, dtype=np.int32), 64)
    run(print_per_block, (64,), x)
    lines = capfd.readouterr().out.splitlines()
    row = "[" + ", ".join(str(i) for i in range(32)) + "]"
    assert sorted(lines) == sorted(f"block {b}: {row}" for b in range(64))


def atomics_on(a, olds):
    """Every element touches its own address once: old values are deterministic. The eight old
    tiles go to olds[16k:16k+16], k = 0..7."""
    i = ct.arange(16, dtype=ct.int32)
    ct.store(olds, (0,), ct.atomic_add(a, i, 5))
    ct.store(olds, (1,), ct.atomic_and(a, i + 16, 6))
    ct.store(olds, (2,), ct.atomic_or(a, i + 32, 6))
    ct.store(olds, (3,), ct.atomic_xor(a, i + 48, 6))
    ct.store(olds, (4,), ct.atomic_max(a, i + 64, 3))
    ct.store(olds, (5,), ct.atomic_min(a, i + 80, 3))
    ct.store(olds, (6,), ct.atomic_xchg(a, i + 96, i.astype(a.dtype)))
    ct.store(olds, (7,), ct.atomic_cas(a, i + 112, 2, 100))


@ct.kernel
def atomics_unique(a0, o0, a1, o1, a2, o2, a3, o3):
    atomics_on(a0, o0)          # the four dtypes of ATOMIC_DTYPES in one kernel: one compile
    atomics_on(a1, o1)          # per mode serves them all
    atomics_on(a2, o2)
    atomics_on(a3, o3)


ATOMIC_DTYPES = (np.int32, np.int64, np.uint32, np.uint64)
_launched = {}


def launched_once(what, mode, launch_it):
    """The results of `launch_it()` in `mode`, launched once per module and mode (a compile costs
    seconds, a launch microseconds); each case stays its own test asserting on its part."""
    if (what, mode) not in _launched:
        _launched[what, mode] = launch_it()
    return _launched[what, mode]


def _atomics_unique():
    cases = {}
    for dtype in ATOMIC_DTYPES:
        signed = np.dtype(dtype).kind == "i"
        a0 = rng.integers(-9 if signed else 0, 10, 128).astype(dtype)
        cases[dtype] = (a0, a0.copy(), np.zeros(128, dtype))
    run(atomics_unique, (1,), *(x for _, a, olds in cases.values() for x in (a, olds)))
    return cases


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES)
def test_atomic_modes_return_old_values(dtype, cpu_mode):
    a0, a, olds = launched_once("atomics_unique", cpu_mode, _atomics_unique)[dtype]
    seg = [a0[k * 16:(k + 1) * 16] for k in range(8)]
    for k, want in enumerate(seg):
        np.testing.assert_array_equal(olds[k * 16:(k + 1) * 16], want)
    i = np.arange(16).astype(dtype)
    three = dtype(3)
    want = np.concatenate([seg[0] + dtype(5), seg[1] & dtype(6), seg[2] | dtype(6),
                           seg[3] ^ dtype(6), np.maximum(seg[4], three), np.minimum(seg[5], three),
                           i, np.where(seg[7] == 2, dtype(100), seg[7])]).astype(dtype)
    np.testing.assert_array_equal(a, want)


def collide(x, total, hi, lo, counts, TILE):
    b = ct.bid(0)
    t = ct.load(x, (b,), (TILE,), padding_mode=ct.PaddingMode.ZERO)
    zero = ct.zeros((TILE,), ct.int32)
    ct.atomic_add(total, zero, t)                        # every element into total[0]
    ct.atomic_max(hi, zero, t.astype(ct.int32))
    ct.atomic_min(lo, zero, t.astype(ct.int32))
    old = ct.atomic_add(counts, 0, 1)                     # 0-d atomic: old value to every thread
    ct.atomic_add(counts, 1, old)


@ct.kernel
def atomic_collisions(x0, t0, h0, l0, c0, x1, t1, h1, l1, c1, x2, t2, h2, l2, c2,
                      TILE: ct.Constant[int]):
    collide(x0, t0, h0, l0, c0, TILE)      # the three dtypes of COLLISION_DTYPES in one kernel:
    collide(x1, t1, h1, l1, c1, TILE)      # one compile per mode
    collide(x2, t2, h2, l2, c2, TILE)


COLLISION_DTYPES = (np.float32, np.float64, np.float16)


def _atomic_collisions():
    cases = {}
    for dtype in COLLISION_DTYPES:
        x = rng.integers(-50, 50, 640).astype(dtype)
        cases[dtype] = (x, np.zeros(1, dtype), np.full(1, -1000, np.int32),
                        np.full(1, 1000, np.int32), np.zeros(2, np.int64))
    run(atomic_collisions, (10,), *(a for c in cases.values() for a in c), 64)
    return cases


@pytest.mark.parametrize("dtype", COLLISION_DTYPES)
def test_atomic_collisions_from_many_blocks(dtype, cpu_mode):
    x, total, hi, lo, counts = launched_once("atomic_collisions", cpu_mode, _atomic_collisions)[dtype]
    assert total[0] == x.astype(np.float64).sum()
    assert hi[0] == x.max() and lo[0] == x.min()
    assert counts[0] == 10 and counts[1] == sum(range(10))   # the old values 0..9, once each


def strided_gather_scatter(src, dst, rows, cols):
    r = ct.arange(8, dtype=ct.int32)
    c = ct.arange(4, dtype=ct.int32)
    i, j = r[:, None], c[None, :]
    v = ct.gather(src, (i * 2, j + 1), mask=(i + j) % 3 != 0, padding_value=-1.0)
    ct.scatter(dst, (j, i), v, mask=i < rows, check_bounds=True)
    ct.scatter(dst, (j + cols, i), v + 100)               # rows past dst's end are dropped


def test_gather_scatter_on_strided_views(cpu_mode):
    src, dst_base, dst = launched_once("builtins", cpu_mode, _builtins)["strided"]
    ref = np.full((6, 8), 9.0, np.float32)
    for i in range(8):
        for j in range(4):
            ok = (i + j) % 3 != 0 and 2 * i < src.shape[0] and j + 1 < src.shape[1]
            v = src[2 * i, j + 1] if ok else -1.0
            if i < 5:
                ref[j, i] = v
            if j + 4 < 6:
                ref[j + 4, i] = v + 100
    np.testing.assert_array_equal(dst, ref)
    assert (dst_base[:, 1::2] == 9.0).all()               # untouched gaps of the view


def shapes(x, out_ext, out_cat, out_const, out_bits, out_div, out_mod, out_pow):
    t = ct.load(x, (0, 0), (4, 8))
    ct.store(out_ext, (0, 0), ct.extract(t, (1, 0), (2, 8)))
    ct.store(out_cat, (0, 0), ct.cat((t, t * 2), 1))
    ct.store(out_const, (0, 0), ct.astile(((1, 2), (3, 4)), dtype=ct.int32))
    ct.store(out_bits, (0, 0), ct.bitcast(t, ct.int32))
    q, r = divmod(t.astype(ct.int32), 3)
    ct.store(out_div, (0, 0), q)
    ct.store(out_mod, (0, 0), r)
    ct.store(out_pow, (0, 0), t.astype(ct.int32) ** 3 + t.astype(ct.int32) ** 0)


def test_extract_cat_astile_bitcast_divmod(cpu_mode):
    x, ext, cat, const, bits, div, mod, pw = launched_once("builtins", cpu_mode, _builtins)["shapes"]
    np.testing.assert_array_equal(ext, x[2:4])
    np.testing.assert_array_equal(cat, np.concatenate([x, x * 2], 1))
    np.testing.assert_array_equal(const, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(bits, x.view(np.int32))
    xi = np.trunc(x).astype(np.int32)
    np.testing.assert_array_equal(div, xi // 3)
    np.testing.assert_array_equal(mod, xi % 3)
    np.testing.assert_array_equal(pw, xi ** 3 + 1)


def _argmax_pair(a_val, a_idx, b_val, b_idx):
    better = (b_val > a_val) | ((b_val == a_val) & (b_idx < a_idx))
    return ct.where(better, b_val, a_val), ct.where(better, b_idx, a_idx)


def tuple_reduce_and_scans(x, out_v, out_i, out_scan, out_rev):
    t = ct.load(x, (0, 0), (4, 16))
    idx = ct.arange(16, dtype=ct.int32)[None, :]
    v, i = ct.reduce((t, idx), 1, _argmax_pair, (-1e30, 1 << 30))
    ct.store(out_v, (0,), v)
    ct.store(out_i, (0,), i)
    ct.store(out_scan, (0, 0), ct.scan(t, 1, lambda acc, e: acc * 0.5 + e, 0.0))
    ct.store(out_rev, (0, 0), ct.cumsum(t, axis=0, reverse=True))


def test_tuple_reduce_custom_scan_and_reverse_cumsum(cpu_mode):
    x, v, i, sc, rev = launched_once("builtins", cpu_mode, _builtins)["reduce"]
    np.testing.assert_array_equal(v, x.max(1))
    np.testing.assert_array_equal(i, x.argmax(1))
    ref = np.zeros_like(x)
    acc = np.zeros(4, np.float32)
    for k in range(16):
        acc = acc * np.float32(0.5) + x[:, k]
        ref[:, k] = acc
    np.testing.assert_allclose(sc, ref, rtol=1e-6)
    np.testing.assert_array_equal(rev, np.cumsum(x[::-1], 0)[::-1])


@ct.kernel
def printing(x, n):
    t = ct.load(x, (0, 0), (2, 4))
    ct.printf("n=%d first=%.2f\n", n, ct.sum(t))
    ct.print("tile:", t.astype(ct.int32), sep=" ")
    print(f"scaled={t * 0.5:.1f} n={n} const={n.dtype}")


def test_printf_print_and_fstrings(capfd):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    run(printing, (1,), x, 7)
    out = capfd.readouterr().out.splitlines()
    assert out == ["n=7 first=28.00", "tile: [[0, 1, 2, 3], [4, 5, 6, 7]]",
                   "scaled=[[0.0, 0.5, 1.0, 1.5], [2.0, 2.5, 3.0, 3.5]] n=7 const=int32"]


@ct.kernel
def checked(x, limit):
    t = ct.load(x, (0,), (16,))
    ct.assert_(t < limit, "value too large")
    assert ct.max(t) < limit + 1, "python assert on a runtime value"


def test_assert_passes_and_fails(capfd):
    x = np.arange(16, dtype=np.float32)
    run(checked, (1,), x, 100.0)
    with pytest.raises(ct.TileLaunchError, match="assertion"):
        run(checked, (2,), x, 10.0)
    err = capfd.readouterr().err
    assert "value too large (tile element 10, block (0, 0, 0))" in err
    assert "value too large (tile element 15, block (1, 0, 0))" in err
    run(checked, (1,), x, 100.0)                          # the failure count was reset


def loop_with_memory(x, y, n):
    """A while loop that loads and stores (the memory token is loop-carried)."""
    i = 0
    while i < n:
        t = ct.load(x, (i,), (8,))
        if i > 0:
            t = t + ct.load(y, (i - 1,), (8,))
        ct.store(y, (i,), t)
        i += 1


def test_loop_carried_memory_order(cpu_mode):
    x, y = launched_once("builtins", cpu_mode, _builtins)["loop"]
    np.testing.assert_allclose(y, np.cumsum(x.reshape(8, 8), 0).reshape(-1), rtol=1e-5)


@ct.kernel
def builtins(s_src, s_dst, s_rows, s_cols, h_x, h_ext, h_cat, h_const, h_bits, h_div, h_mod, h_pow,
             r_x, r_v, r_i, r_scan, r_rev, l_x, l_y, l_n):
    """The checks of strided views, shapes, tuple reductions and scans, and a loop-carried memory
    order in one kernel (one compile per mode); each keeps its own arrays and its own test."""
    strided_gather_scatter(s_src, s_dst, s_rows, s_cols)
    shapes(h_x, h_ext, h_cat, h_const, h_bits, h_div, h_mod, h_pow)
    tuple_reduce_and_scans(r_x, r_v, r_i, r_scan, r_rev)
    loop_with_memory(l_x, l_y, l_n)


def _builtins():
    base = rng.standard_normal((20, 12)).astype(np.float32)
    src = base[::2, ::3]                                  # strides (24, 3) elements
    dst_base = np.full((6, 16), 9.0, np.float32)
    dst = dst_base[:, ::2]                                # shape (6, 8), stride 2
    strided = (src, dst, 5, 4)
    x = (rng.standard_normal((4, 8)) * 10).astype(np.float32)
    ext, cat = np.zeros((2, 8), np.float32), np.zeros((4, 16), np.float32)
    const, bits = np.zeros((2, 2), np.int32), np.zeros((4, 8), np.int32)
    div, mod, pw = (np.zeros((4, 8), np.int32) for _ in range(3))
    shaped = (x, ext, cat, const, bits, div, mod, pw)
    xr = rng.integers(-3, 4, (4, 16)).astype(np.float32)
    reduced = (xr, np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros_like(xr),
               np.zeros_like(xr))
    xl = rng.standard_normal(64).astype(np.float32)
    loop = (xl, np.zeros(64, np.float32), 8)
    run(builtins, (1,), *strided, *shaped, *reduced, *loop)
    return {"strided": (src, dst_base, dst), "shapes": shaped, "reduce": reduced,
            "loop": loop[:2]}
