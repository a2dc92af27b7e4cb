"""Ragged edges of vectorized loads and stores: every remainder of every vector width (16 bytes:
16 x i8, 8 x f16, 4 x f32, 2 x f64), in 1-d and in the rows of a 2-d array, with guard bytes
around every array (guarded.py): one element written past the end fails here even when the
values inside are right. All dtypes go through one kernel, so a size costs one compile per mode.
"""
import numpy as np
import pytest

import tilepy as ct
from guarded import MODES, Guarded, run_everywhere

DTYPES = (np.int8, np.float16, np.float32, np.float64)


def step(a, o, p, TILE):
    i = ct.bid(0)
    t = ct.load(a, (i,), (TILE,))
    ct.store(o, (i,), t + t)
    ct.store(p, (i,), ct.load(a, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO))   # every lane


def step2(a, o, TILE):
    i = ct.bid(0)
    t = ct.load(a, (i, 0), (2, TILE))
    ct.store(o, (i, 0), t * 3)


@ct.kernel
def double_all(a0, o0, p0, a1, o1, p1, a2, o2, p2, a3, o3, p3, m, q, TILE: ct.Constant[int]):
    step(a0, o0, p0, TILE)
    step(a1, o1, p1, TILE)
    step(a2, o2, p2, TILE)
    step(a3, o3, p3, TILE)
    step2(m, q, TILE)


@pytest.mark.parametrize("r", range(16))
def test_every_remainder_of_every_vector_width(r):
    """n = 272 + r: the last 16-byte chunk of every dtype holds every length 0..V-1. Stores stay
    inside the array (guard bytes), and a zero-padded load gives zeros past the edge in every
    lane of a partial chunk (stored whole into a 3-tile output)."""
    n, tile = 272 + r, 128
    rng = np.random.default_rng(r)
    args = []
    for dt in DTYPES:
        a = (rng.standard_normal(n) * 20).astype(dt)
        args += [a, np.zeros(n, dt), np.ones(3 * tile, dt)]
    m = rng.standard_normal((5, 64 + r)).astype(np.float16)
    args += [m, np.zeros_like(m), tile]
    grid = (3,)                       # 3 tiles of 128, 3 row pairs of m
    for mode, out in run_everywhere(grid, double_all, tuple(args)).items():
        for k, dt in enumerate(DTYPES):
            a = args[3 * k]
            assert np.array_equal(out[3 * k + 1], a + a), (mode, dt, n)
            assert np.array_equal(out[3 * k + 2], np.pad(a, (0, 3 * tile - n))), (mode, dt, n)
        assert np.array_equal(out[13], m * np.float16(3)), (mode, "2-d", m.shape)


def test_guard_bytes_catch_a_write_one_element_past_the_end():
    """The guard itself: a byte changed just past the array is reported with its distance."""
    g = Guarded(np.zeros(7, np.float32))
    g.check("untouched")
    g.buf[g.end + 2] ^= 0xFF
    with pytest.raises(AssertionError, match=r"past the end .*\[3\] bytes"):
        g.check("one past")
    g = Guarded(np.zeros((3, 5), np.float16))
    g.buf[g.start - 1] ^= 1
    with pytest.raises(AssertionError, match=r"before the start .*\[1\] bytes"):
        g.check("one before")
    assert MODES == ("interpret", "fast", "faithful")
