"""Tile indices below 0 (issue 27 item 1; ARCHITECTURE decision 9): a tile at a negative index is
wholly outside the tensor, so every C++ backend (the GPU's code, both CPU modes: the same
runtime.h bounds logic) loads it as the padding value and stores nothing, never touching the
bytes before the array; the interpreter reports the index as the undefined behavior the spec
calls it. Arrays are guarded (tests/guarded.py): a byte written outside one fails the test, and a
load that reads before its array gets the guard pattern instead of the padding."""
import numpy as np
import pytest

import tilepy as ct
from fake_driver import FakeDriver, cuda_array
from guarded import launch
from tilepy.errors import TileError

ZERO = ct.PaddingMode.ZERO
HUGE = -2**27            # times a tile dimension and a stride: far outside any allocation


@ct.kernel
def shifted1(a, out, moved, s0: int):
    i = ct.bid(0)
    ct.store(out, index=(i,), tile=ct.load(a, index=(i + s0,), shape=(16,), padding_mode=ZERO))
    ct.store(moved, index=(i + s0,), tile=ct.full((16,), 1.0, ct.float32))


@ct.kernel
def shifted2(a, out, moved, s0: int, s1: int):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(a, index=(i + s0, j + s1), shape=(4, 8), padding_mode=ZERO)
    ct.store(out, index=(i, j), tile=t)
    ct.store(moved, index=(i + s0, j + s1), tile=ct.full((4, 8), 1.0, ct.float32))


@ct.kernel
def shifted3(a, out, moved, s0: int, s1: int, s2: int):
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    t = ct.load(a, index=(i + s0, j + s1, k + s2), shape=(2, 2, 8), padding_mode=ZERO)
    ct.store(out, index=(i, j, k), tile=t)
    ct.store(moved, index=(i + s0, j + s1, k + s2), tile=ct.full((2, 2, 8), 1.0, ct.float32))


KERNELS = {1: (shifted1, (64,), (16,)), 2: (shifted2, (8, 16), (4, 8)),
           3: (shifted3, (4, 4, 16), (2, 2, 8))}


def expected(a: np.ndarray, tile, shifts):
    """(out, moved) of a shifted kernel: out's tile b is a's tile b + shift (zeros outside);
    moved's tile b + shift is ones where that tile is inside, the rest stays 0."""
    out, moved = np.zeros_like(a), np.zeros_like(a)
    grid = [n // t for n, t in zip(a.shape, tile)]
    for b in np.ndindex(*grid):
        src = [x + s for x, s in zip(b, shifts)]
        if all(0 <= x < g for x, g in zip(src, grid)):
            here = tuple(slice(x * t, (x + 1) * t) for x, t in zip(b, tile))
            there = tuple(slice(x * t, (x + 1) * t) for x, t in zip(src, tile))
            out[here] = a[there]
            moved[there] = 1.0
    return out, moved


def run_shifted(rank: int, shifts, mode: str, gpu=False):
    kernel, shape, tile = KERNELS[rank]
    a = np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)
    out, moved = np.zeros_like(a), np.zeros_like(a)
    grid = tuple(n // t for n, t in zip(shape, tile))
    if gpu:      # NVRTC's cubin on the fake driver: the GPU's source, run by its CPU build
        with FakeDriver(), ct.cpu_mode(mode):
            ct.launch(None, grid, kernel, (cuda_array(a), cuda_array(out), cuda_array(moved),
                                           *shifts))
    else:
        launch(grid, kernel, (a, out, moved, *shifts), mode)
    want_out, want_moved = expected(a, tile, shifts)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(moved, want_moved)


SHIFTS = {1: [(-1,), (HUGE,)], 2: [(0, -1), (-1, 0), (HUGE, -1)], 3: [(0, 0, -1), (-1, 0, 0)]}


@pytest.mark.parametrize("mode", ["fast", "faithful"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_a_tile_below_the_array_is_padding_and_its_store_is_dropped(rank, mode):
    for shifts in SHIFTS[rank]:
        run_shifted(rank, shifts, mode)


def test_the_gpu_source_pads_a_negative_index_too():
    """The cubin NVRTC made, launched through the fake driver (its CPU build of the same source,
    all threads: the vector paths the GPU takes)."""
    run_shifted(2, (0, -1), "faithful", gpu=True)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_the_interpreter_reports_a_negative_index_as_undefined(rank):
    kernel, shape, tile = KERNELS[rank]
    a = np.ones(shape, np.float32)
    grid = tuple(n // t for n, t in zip(shape, tile))
    shifts = (0,) * (rank - 1) + (-1,)
    with pytest.raises(TileError, match=rf"index -1 .*of dimension {rank - 1} is outside the "
                                        r"index space"):
        launch(grid, kernel, (a, a.copy(), a.copy(), *shifts), "interpret")


@ct.kernel
def k_from_minus_one(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """A K loop that starts one tile below 0: the pipelined cp.async loads (and the fast mode's
    row copies) of tile -1 are zeros, which add nothing."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(-1, ct.cdiv(a.shape[1], TK)):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        y = ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(i, j), tile=acc)


@pytest.mark.parametrize("mode", ["fast", "faithful"])
def test_a_pipelined_k_loop_from_a_negative_index(mode):
    rng = np.random.default_rng(27)
    a = rng.integers(-3, 4, (32, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 32)).astype(np.float16)
    c = np.zeros((32, 32), np.float32)
    launch((1, 1), k_from_minus_one, (a, b, c, 32, 32, 16), mode)     # tiles for mma.sync
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


POKE = r"""
#include "tilepy/runtime.h"
// A store through a view at element k, by the checked address of the view ops.
extern "C" __global__ void poke(float* a, int n, int k) {
  const tp::View<float, 1> v{a, {n}, {1}};
  const tp::cpu::Caller at = tp::cpu::caller();
  if (threadIdx.x == 0) *TP_VADDR(v, k, 1, "a store") = 1.0f;
}
"""


def test_the_faithful_mode_checks_every_view_access_against_its_array():
    """What catches a bounds mistake of the runtime in faithful mode: an address outside the
    view's bytes ends the launch, saying which access, where and how far."""
    from tilepy.launch import cpu
    k = cpu.compile_kernel(POKE, "poke", 32, "faithful")
    a = np.zeros(8, np.float32)
    k((1,), a, 8, 7)
    assert a[7] == 1.0
    with pytest.raises(ct.TileLaunchError, match=r"a store of 4 bytes at byte -4 from the start "
                                                 r"of its array, outside its 32 bytes"):
        k((1,), a, 8, -1)


def test_the_sm90a_class_k_loop_from_a_negative_index(monkeypatch):
    """The warpgroup-MMA class (issue 29) brings its operands by TMA (wgmma_ops.h tma_load:
    32-bit coordinates, the tensor map's zero fill): tile -1 is zeros there too, in the
    faithful emulation."""
    monkeypatch.setenv("TILEPY_SM90A", "1")
    rng = np.random.default_rng(29)
    a = rng.integers(-3, 4, (64, 96)).astype(np.float16)
    b = rng.integers(-3, 4, (96, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    with FakeDriver() as drv, ct.cpu_mode("faithful"):
        ct.launch(None, (1, 1), k_from_minus_one,
                  (cuda_array(a), cuda_array(b), cuda_array(c), 64, 64, 32))
        (source,) = drv.sources.values()
    assert "tp::wgmma_acc<" in source and source.count("tp::tma_load<") == 2
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
