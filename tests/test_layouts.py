"""Layouts (lowering/layouts.py mirrors tilepy/layout.h), their assignment, and the emitted
barriers of the hazard analysis."""
import numpy as np
import pytest

import tilepy as ct
from tests.reference_kernels.cases import CASES
from tilepy.api.compiler import compile_for_args
from tilepy.cuda_c.layout_types import layout_type
from tilepy.cuda_c.names import kernel_symbol
from tilepy.launch.cpu import compile_kernel
from tilepy.lowering.assign_layouts import assign_layouts
from tilepy.lowering.layouts import Blocked, BlockedRows, Cyclic, MmaAcc, MmaRows, mma_warps

LAYOUTS = [Cyclic(100), Cyclic(4096), Blocked(4096, 4), Blocked(1024, 8), Blocked(64, 2),
           BlockedRows(16, 16), BlockedRows(256, 4), BlockedRows(8, 32),
           MmaAcc(1, 64, 64, 2, 2), MmaAcc(2, 32, 64, 2, 2), MmaAcc(1, 16, 64, 1, 4),
           MmaRows(1, 64, 4, 1), MmaRows(2, 32, 2, 2), MmaRows(1, 16, 1, 4),
           MmaAcc(1, 128, 32, 4, 1, 1), MmaRows(1, 128, 4, 1, 1)]     # interleaved (sm_90a)


@pytest.mark.parametrize("nt", [128, 1])
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_every_element_has_exactly_one_owner(layout, nt):
    owners = np.zeros(layout.numel, int)
    held = np.zeros(layout.numel, int)
    for tid in range(nt):
        for e, own in layout.slots(nt, tid):
            if e is not None:
                held[e] += 1
                owners[e] += own
    assert (owners == 1).all()
    assert (held >= 1).all()
    assert layout.replicated or (held == 1).all()


# The C++ layouts of PROBED in one probe kernel (`which` picks one): one compile per mode.
PROBED = LAYOUTS[::2] + [LAYOUTS[9], LAYOUTS[11], LAYOUTS[15]]
PROBE = """
#include "tilepy/runtime.h"
template <class L> __device__ void probe_layout(int* elem, int* own) {
  for (int s = 0; s < L::K; ++s) {
    const int i = (int)threadIdx.x * L::K + s;
    elem[i] = L::valid(s) ? L::elem(s) : -1;
    own[i] = L::owner(s) ? 1 : 0;
  }
}
extern "C" __global__ void probe(int which, int* elem, int* own) {
  switch (which) {
CASES
  }
}
"""


@pytest.fixture(scope="module")
def probes():
    cases = "\n".join(f"  case {i}: probe_layout<{layout_type(lay)}>(elem, own); break;"
                      for i, lay in enumerate(PROBED))
    source = PROBE.replace("CASES", cases)
    built = {}

    def probe(mode):
        if mode not in built:
            built[mode] = compile_kernel(source, "probe", threads=128 if mode == "faithful" else 1,
                                         mode=mode)
        return built[mode]
    return probe


@pytest.mark.parametrize("mode", ["faithful", "fast"])
@pytest.mark.parametrize("layout", PROBED, ids=str)
def test_cpp_layout_matches_python(probes, layout, mode):
    nt = 128 if mode == "faithful" else 1
    k = probes(mode)
    slots = [layout.slots(nt, t) for t in range(nt)]
    per = len(slots[0])
    elem = np.full(nt * per, -2, np.int32)
    own = np.zeros(nt * per, np.int32)
    k((1,), PROBED.index(layout), elem, own)
    want_e = [e if e is not None else -1 for s in slots for e, _ in s]
    want_o = [int(o) for s in slots for _, o in s]
    np.testing.assert_array_equal(elem, want_e)
    np.testing.assert_array_equal(own, want_o)


def test_mma_warps():
    assert mma_warps(1, 64, 64, 128, prefer_rows=False) == MmaAcc(1, 64, 64, 2, 2)
    assert mma_warps(1, 64, 64, 128, prefer_rows=True) == MmaAcc(1, 64, 64, 4, 1)
    assert mma_warps(1, 16, 64, 128, prefer_rows=True) == MmaAcc(1, 16, 64, 1, 4)
    assert mma_warps(1, 8, 8, 128, prefer_rows=False) is None
    wg = mma_warps(1, 128, 64, 128, prefer_rows=True, warpgroups=True)
    assert wg == MmaAcc(1, 128, 64, 4, 1, 1) and layout_type(wg) == "tp::MmaAcc<1, 128, 64, 4, 1, 1>"
    assert layout_type(MmaAcc(1, 64, 64, 4, 1)) == "tp::MmaAcc<1, 64, 64, 4, 1>"
    assert mma_warps(1, 16, 64, 128, prefer_rows=True, warpgroups=True) == MmaAcc(1, 16, 64, 1, 4)


def _layouts_of(name):
    kernel, args, _, _ = CASES[name](np.random.default_rng(0))
    module = compile_for_args(kernel, args).module
    plan = assign_layouts(module)
    return {v.hint: plan.layout(v) for op in module.walk() for v in op.results
            if v.hint and plan.layout(v) is not None}


def test_assigned_layouts_of_reference_kernels():
    sm = _layouts_of("softmax")
    assert sm["t"] == Blocked(1024, 4)                       # 16-byte vectors of f32
    mm = _layouts_of("matmul_f16")
    assert mm["acc"] == MmaAcc(1, 64, 64, 2, 2)
    at = _layouts_of("attention")
    assert at["s"] == at["p"] == MmaAcc(1, 64, 64, 4, 1)     # rows reduced: warps along m
    assert at["m_new"] == at["alpha"] == MmaRows(1, 64, 4, 1)


@ct.kernel
def rows_blocked(x, out):
    t = ct.load(x, (0, 0), (16, 64))
    ct.store(out, (0,), ct.sum(t * 2.0, axis=1) + ct.max(t, axis=1))


def test_blocked_rows_reduction():
    x = np.random.default_rng(1).standard_normal((16, 64)).astype(np.float32)
    out = np.zeros(16, np.float32)
    src = rows_blocked.cuda_source(x, out)
    assert "tp::BlockedRows<16, 16>" in src
    for mode in ("fast", "faithful"):
        with ct.cpu_mode(mode):
            ct.launch(None, (1,), rows_blocked, (x, out))
        np.testing.assert_allclose(out, (x * 2).sum(1) + x.max(1), rtol=1e-5)


# ----------------------------------------------------------------------------------- hazards
@ct.kernel
def reverse_in_place(x, N: ct.Constant[int]):
    i = ct.arange(N, dtype=ct.int32)
    v = ct.gather(x, i)
    ct.scatter(x, N - 1 - i, v)


RACE = "__syncthreads();  // other threads' earlier accesses to this memory are done"


def _reverse_args():
    return np.arange(1024, dtype=np.float32), 1024


def test_write_after_read_by_other_threads_gets_a_barrier():
    x, n = _reverse_args()
    src = reverse_in_place.cuda_source(x, n)
    assert src.count(RACE) == 1
    for mode in ("fast", "faithful"):
        y = x.copy()
        with ct.cpu_mode(mode):
            ct.launch(None, (1,), reverse_in_place, (y, n))
        np.testing.assert_array_equal(y, x[::-1])


def test_faithful_mode_catches_the_race_without_the_barrier():
    x, n = _reverse_args()
    src = compile_for_args(reverse_in_place, (x, n)).cuda_source.replace("tp::ptr<float> x", "float* x")
    y = x.copy()
    compile_kernel(src, kernel_symbol("reverse_in_place"), 128, "faithful")((1,), y, n)
    np.testing.assert_array_equal(y, x[::-1])
    y = x.copy()
    racy = src.replace(RACE, "")
    compile_kernel(racy, kernel_symbol("reverse_in_place"), 128, "faithful")((1,), y, n)
    assert not np.array_equal(y, x[::-1])


@ct.kernel
def store_twice(x):
    ct.store(x, (0,), ct.full((64,), 1.0, dtype=ct.float32))
    ct.store(x, (0,), ct.full((128,), 2.0, dtype=ct.float32))
    ct.store(x, (1,), ct.full((128,), 3.0, dtype=ct.float32))


def test_write_after_write_by_other_threads_gets_a_barrier():
    x = np.zeros(256, np.float32)
    assert store_twice.cuda_source(x).count(RACE) == 1     # the (128,) store after the (64,) one
    with ct.cpu_mode("faithful"):
        ct.launch(None, (1,), store_twice, (x,))
    np.testing.assert_array_equal(x, [2.0] * 128 + [3.0] * 128)


@ct.kernel
def scale_in_place(x, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,))
    ct.store(x, (ct.bid(0),), t * 2.0)
    u = ct.load(x, (ct.bid(0),), (TILE,))
    ct.store(x, (ct.bid(0),), u + 1.0)


def test_same_tiles_same_threads_need_no_barrier():
    x = np.arange(512, dtype=np.float32)
    assert RACE not in scale_in_place.cuda_source(x, 256)
    y = x.copy()
    with ct.cpu_mode("faithful"):
        ct.launch(None, (2,), scale_in_place, (y, 256))
    np.testing.assert_array_equal(y, x * 2 + 1)


@ct.kernel
def add3(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


def test_arrays_specialized_disjoint_need_no_barrier():
    a, b, c = (np.ones(256, np.float32) for _ in range(3))
    assert RACE not in add3.cuda_source(a, b, c, 256)
    assert RACE in add3.cuda_source(a, b, a, 256)          # c is a: other patterns may overlap
    a2 = np.arange(256, dtype=np.float32)
    with ct.cpu_mode("faithful"):
        ct.launch(None, (1,), add3, (a2, b, a2, 256))
    np.testing.assert_array_equal(a2, np.arange(256) + 1.0)


@ct.kernel
def overwrite_after_read(x, y):
    t = ct.load(x, (0, 0), (16, 64))                       # rows 0..15
    ct.store(x, (0, 0), ct.full((64, 16), -1.0, dtype=ct.float32))   # other threads' elements
    ct.store(y, (0, 0), t)


def test_view_store_after_view_load_of_other_threads():
    """A write-after-read between two tile views of one array whose elements map to different
    threads: before the hazard analysis no barrier separated them, and faithful mode shows it."""
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    src = compile_for_args(overwrite_after_read, (x, np.zeros((16, 64), np.float32))).cuda_source
    assert src.count(RACE) == 1
    for barrier in (True, False):
        xs, y = x.copy(), np.zeros((16, 64), np.float32)
        code = (src if barrier else src.replace(RACE, "")).replace("tp::ptr<float>", "float*")
        k = compile_kernel(code, kernel_symbol("overwrite_after_read"), 128, "faithful")
        k((1,), xs, 64, 64, 64, y, 16, 64, 64)
        assert np.array_equal(y, x[:16]) == barrier
