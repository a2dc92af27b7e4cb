"""Warp shuffles and votes in the faithful CPU mode, with masks and widths, against a model of
the CUDA C++ Programming Guide's definitions (written here, independent of the emulation)."""
import numpy as np
import pytest

import tilepy as ct
from faithful_util import build

rng = np.random.default_rng(3)
BLOCKS, THREADS = 3, 64

SHFL_SRC = r"""
#include "tilepy/runtime.h"
// The CUDA names (on the CPU they forward to the tp:: wrappers).
extern "C" __global__ void shfl(const int* in, const int* arg, int* out, int op, int width) {
  const int i = blockIdx.x * TP_NT + threadIdx.x;
  const int v = in[i], b = arg[i];
  int r = 0;
  switch (op) {
    case 0: r = __shfl_sync(0xffffffffu, v, b, width); break;
    case 1: r = __shfl_up_sync(0xffffffffu, v, (unsigned)b, width); break;
    case 2: r = __shfl_down_sync(0xffffffffu, v, (unsigned)b, width); break;
    case 3: r = __shfl_xor_sync(0xffffffffu, v, b, width); break;
  }
  out[i] = r;
}
"""


def model(op, lane, b, width):
    """Source lane per the Programming Guide: subsections of `width` lanes; idx wraps modulo
    width; up/down do not wrap (own value); xor may read earlier subsections, not later ones."""
    base = lane // width * width
    if op == "idx":
        return base + b % width
    if op == "up":
        return lane if lane % width < b else lane - b
    if op == "down":
        return lane if lane % width + b >= width else lane + b
    j = lane ^ b
    return lane if j >= base + width else j


@pytest.fixture(scope="module")
def shfl_kernel():
    return build(SHFL_SRC, "shfl", threads=THREADS)


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("op", ["idx", "up", "down", "xor"])
def test_shuffle_modes_and_widths(shfl_kernel, op, width):
    n = BLOCKS * THREADS
    vals = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    if op == "idx":
        args = rng.integers(0, 64, n).astype(np.int32)           # lanes beyond the width wrap
    elif op == "xor":
        args = np.full(n, rng.choice([1, 2, 5, 16, 31]), np.int32)
    else:
        args = np.full(n, rng.choice([0, 1, 3, 7, 16, 31]), np.int32)
    out = np.zeros(n, np.int32)
    shfl_kernel((BLOCKS,), vals, args, out, ["idx", "up", "down", "xor"].index(op), width)
    for i in range(n):
        warp0 = i - i % 32
        assert out[i] == vals[warp0 + model(op, i % 32, int(args[i]), width)], (op, width, i)


MASK_SRC = r"""
#include "tilepy/runtime.h"
extern "C" __global__ void masks(const int* in, int* out, unsigned* votes) {
  const int i = blockIdx.x * TP_NT + threadIdx.x, l = tp::lane_id();
  const int v = in[i];
  int r;
  if (l < 16) r = tp::shfl_xor_sync(0x0000ffffu, v, 1);      // two independent half-warps
  else r = tp::shfl_down_sync(0xffff0000u, v, 3);
  if (l % 2 == 0) r += tp::shfl_xor_sync(0x55555555u, v, 2) * 1000;   // even lanes only
  out[i] = r;
  if (l < 20) {
    votes[3 * i] = tp::ballot_sync(0x000fffffu, v > 0);
    votes[3 * i + 1] = tp::any_sync(0x000fffffu, v > 100);
    votes[3 * i + 2] = tp::all_sync(0x000fffffu, v > -1000);
  }
}
"""


def test_partial_masks_and_votes():
    k = build(MASK_SRC, "masks", threads=THREADS)
    n = BLOCKS * THREADS
    vals = rng.integers(-500, 500, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    votes = np.zeros(3 * n, np.uint32)
    k((BLOCKS,), vals, out, votes)
    for i in range(n):
        w0, lane = i - i % 32, i % 32
        want = vals[w0 + (lane ^ 1)] if lane < 16 else vals[w0 + (lane + 3 if lane + 3 < 32 else lane)]
        if lane % 2 == 0:
            want = want + vals[w0 + (lane ^ 2)] * 1000
        assert out[i] == want, i
        if lane < 20:
            group = vals[w0:w0 + 20]
            assert votes[3 * i] == sum(1 << j for j in range(20) if group[j] > 0)
            assert votes[3 * i + 1] == int((group > 100).any())
            assert votes[3 * i + 2] == int((group > -1000).all())


WIDE_SRC = r"""
#include "tilepy/runtime.h"
extern "C" __global__ void wide(const double* d, const __half* h, double* dout, __half* hout) {
  const int i = threadIdx.x;
  dout[i] = tp::shfl_down_sync(0xffffffffu, d[i], 5, 16);
  hout[i] = tp::shfl_sync(0xffffffffu, h[i], 31 - tp::lane_id());
}
"""


def test_shuffles_move_8_and_2_byte_values():
    k = build(WIDE_SRC, "wide", threads=32)
    d = rng.standard_normal(32)
    h = rng.standard_normal(32).astype(np.float16)
    dout, hout = np.zeros_like(d), np.zeros_like(h)
    k((1,), d, h, dout, hout)
    np.testing.assert_array_equal(dout, [d[i + 5] if i % 16 + 5 < 16 else d[i] for i in range(32)])
    np.testing.assert_array_equal(hout, h[::-1])


ERR_SRC = r"""
#include "tilepy/runtime.h"
extern "C" __global__ void bad_shfl(const int* in, int* out, int kind) {
  const int l = tp::lane_id();
  if (kind >= 3 && l >= 24) return;                // lanes 24..31 exit early
  int r = 0;
  if (kind == 0) r = tp::shfl_sync(0x0000ffffu, in[l], 0);   // lanes 16..31 are not in the mask
  if (kind == 1) r = tp::shfl_xor_sync(0xffffffffu, in[l], 1, 12);   // width not a power of 2
  if (kind == 2 && l < 16) r = tp::shfl_xor_sync(0x0000ffffu, in[l], 16, 32);   // reads lanes 16..31
  if (kind == 3) r = tp::shfl_xor_sync(0xffffffffu, in[l], 1);   // fine: exited lanes are excused
  if (kind == 4) r = tp::shfl_xor_sync(0xffffffffu, in[l], 8);   // lanes 16..23 read exited lanes
  out[l] = r;
}
"""


@pytest.mark.parametrize("kind,message", [
    (0, "the calling lane 16 is not in its mask 0x0000ffff"),
    (1, "shuffle width 12 is not a power of two"),
    (2, "reads lane 16, which does not take part"),
    (4, "reads lane 24, which does not take part"),
])
def test_undefined_shuffles_are_errors(kind, message):
    k = build(ERR_SRC, "bad_shfl", threads=32)
    inp, out = np.arange(32, dtype=np.int32), np.zeros(32, np.int32)
    with pytest.raises(ct.TileLaunchError, match="bad_shfl") as e:
        k((1,), inp, out, kind)
    assert message in str(e.value)


def test_exited_lanes_are_excused_from_full_mask_shuffles():
    k = build(ERR_SRC, "bad_shfl", threads=32)
    inp, out = np.arange(32, dtype=np.int32), np.zeros(32, np.int32)
    k((1,), inp, out, 3)
    np.testing.assert_array_equal(out[:24], np.arange(24) ^ 1)
