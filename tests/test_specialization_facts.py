"""Every fact a specialization depends on decides the plan (issue 33).

Each test launches one kernel twice with arguments that differ in one fact only -- aliasing,
base alignment, divisibility of an extent, contiguity, dtype, device -- and checks that the
second launch got a specialization (and a launch plan) of its own and the right answer. The
divisibility test states its fact generally (an extent divisible by 16 against one divisible by
no power of two above 4), so it holds for any exact divisibility fact. Also here: the byte
extent of a view and the aliasing of views that share one element (host/intake.py), and an AOT
kernel's refusal of such views."""
import re

import numpy as np
import pytest

import tilepy as ct
from fake_driver import FakeDriver, fake_cupy
from tilepy.host.intake import byte_extent, disjoint_flags, intake

pytestmark = pytest.mark.usefixtures("warm_path")     # the C warm path, then the Python one


@ct.kernel
def double_into(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * 2.0)


def fresh():
    """A kernel of its own per test (specializations and plans are counted)."""
    return double_into.replace_hints()


def counts(kernel) -> tuple[int, int]:
    """(specializations compiled, launch plans filed) of `kernel`."""
    plans = kernel.__dict__.get("_tp_plans")
    return len(kernel.cache), len(plans.table) if plans is not None else 0


def launch_twice(first, second):
    """Launch a fresh kernel on the (x, y) pairs `first` then `second`, checking y == 2 x after
    each; returns the kernel."""
    kernel = fresh()
    for x, y in (first, second):
        want = x * 2
        y[...] = 0
        ct.launch(None, (ct.cdiv(x.shape[0], 16),), kernel, (x, y, 16))
        np.testing.assert_array_equal(y, want)
    return kernel


def pair(n=64, dtype=np.float32):
    return np.arange(n, dtype=dtype) + 1, np.zeros(n, dtype)


# ----------------------------------------------------------------------------- aliasing
def test_two_arrays_disjoint_then_in_place_on_the_cpu():
    """Aliasing between exactly two arrays (the overlap tests of test_fake_driver use three)."""
    x, y = pair()
    k = fresh()
    ct.launch(None, (4,), k, (x, y, 16))
    np.testing.assert_array_equal(y, 2 * x)
    assert counts(k) == (1, 1)
    before = x.copy()
    ct.launch(None, (4,), k, (x, x, 16))             # same signature, now in place
    np.testing.assert_array_equal(x, 2 * before)
    assert counts(k) == (2, 1)                        # a specialization of its own (same key:
    ct.launch(None, (4,), k, (x, y, 16))             # the plan is refiled), then back to disjoint
    np.testing.assert_array_equal(y, 4 * before)
    assert counts(k) == (2, 1)


def test_two_arrays_disjoint_then_in_place_on_the_fake_driver(monkeypatch):
    cupy = fake_cupy(monkeypatch)
    x, y = pair()
    gx, gy = cupy.ndarray(x), cupy.ndarray(y)
    k = fresh()
    with FakeDriver() as drv:
        ct.launch(None, (4,), k, (gx, gy, 16))
        np.testing.assert_array_equal(y, 2 * x)
        before = x.copy()
        ct.launch(None, (4,), k, (gx, gx, 16))
        np.testing.assert_array_equal(x, 2 * before)
        assert len(k.cache) == 2 and len(drv.launches) == 2
        assert len(drv.calls_named("objectcode.get_kernel")) == 2    # two codes were loaded


def test_in_place_plan_is_not_taken_for_disjoint_arrays():
    """The other direction: a plan made in place does not serve a disjoint call."""
    x, y = pair()
    k = fresh()
    before = x.copy()
    ct.launch(None, (4,), k, (x, x, 16))
    np.testing.assert_array_equal(x, 2 * before)
    ct.launch(None, (4,), k, (x, y, 16))
    np.testing.assert_array_equal(y, 2 * x)
    assert len(k.cache) == 2


# ----------------------------------------------------------------------------- one fact each
def test_base_alignment_decides_the_plan():
    buf = np.arange(72, dtype=np.float32) + 1
    y = np.zeros(64, np.float32)
    aligned, shifted = buf[:64], buf[1:65]             # 16-byte aligned, then 4 bytes off
    assert intake(aligned).ptr % 16 == 0 and intake(shifted).ptr % 16 == 4
    k = launch_twice((aligned, y), (shifted, y))
    assert counts(k) == (2, 2)


def test_divisibility_of_an_extent_decides_the_plan():
    """64 f32 are 256 bytes, a multiple of 16; 62 are 248 bytes, a multiple of 8 but not 16:
    the facts of the unit-stride extent differ (frontend/specialize.py)."""
    k = launch_twice(pair(64), pair(62))
    assert counts(k) == (2, 2)


def test_contiguity_decides_the_plan():
    x, y = pair(128)
    strided = x[::2]                                   # same extent, stride 2
    k = launch_twice((x[:64].copy(), y[:64]), (strided, y[:64]))
    assert counts(k) == (2, 2)


def test_dtype_decides_the_plan():
    k = launch_twice(pair(64, np.float32), pair(64, np.float64))
    assert counts(k) == (2, 2)


def test_device_decides_the_plan(monkeypatch):
    """A CPU array and a CUDA array (fake driver) of the same shape, dtype and alignment: a
    plan each, one on each backend."""
    cupy = fake_cupy(monkeypatch)
    x, y = pair()
    k = fresh()
    with FakeDriver() as drv:
        ct.launch(None, (4,), k, (x, y, 16))
        np.testing.assert_array_equal(y, 2 * x)
        assert not drv.launches
        y[:] = 0
        ct.launch(None, (4,), k, (cupy.ndarray(x), cupy.ndarray(y), 16))
        np.testing.assert_array_equal(y, 2 * x)
        assert len(drv.launches) == 1
    plans = k.__dict__["_tp_plans"].table.values()
    assert sorted(p.gpu for p in plans) == [False, True]


# ----------------------------------------------------------------------------- what is keyed
@ct.kernel
def inc(x, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (TILE,)) + 1)


def aligned_f16(n: int) -> np.ndarray:
    buf = np.zeros(n + 8, np.float16)
    start = (-buf.ctypes.data % 16) // 2
    return buf[start:start + n]


@pytest.mark.parametrize("mode", ["fast", "faithful"])
def test_strides_compile_again_only_across_16_bytes(mode):
    """cuTile's compile counts for one f16 buffer's views: strides of 2 and 4 elements (4 and 8
    bytes: one specialization, the code reads no finer fact), 8 (16 bytes: aligned rows) and 16
    (32 bytes: the same fact again), then stride 2 from another 16-byte aligned element (the
    first specialization). Right answers each time, in both CPU modes."""
    buf = aligned_f16(512)
    want = np.zeros_like(buf)
    k = inc.replace_hints()
    got = []
    with ct.cpu_mode(mode):
        for view in (slice(0, 64, 2), slice(0, 64, 4), slice(0, 128, 8), slice(0, 256, 16),
                     slice(8, 72, 2)):
            x = buf[view]
            ct.launch(None, (ct.cdiv(x.shape[0], 16),), k, (x, 16))
            want[view] += 1
            np.testing.assert_array_equal(buf, want)
            got.append(len(k.cache))
    assert got == [1, 1, 2, 2, 2]


@ct.kernel
def copy_rows(a, b):
    ct.store(b, (ct.bid(0), 0), ct.load(a, (ct.bid(0), 0), (4, 64)))


def rows(row_stride: int) -> np.ndarray:
    """8 rows of 64 f16 on an aligned base, `row_stride` elements apart."""
    return aligned_f16(8 * row_stride).reshape(8, row_stride)[:, :64]


def test_rows_of_4_and_8_bytes_share_the_code_16_bytes_vectorize():
    """Row strides of 132 and 136 bytes make one specialization with scalar accesses; 144
    bytes, rows on 16 bytes, one with 16-byte vectors. Exact facts (tileiras') tell all
    three apart."""
    out = rows(64)
    k = copy_rows.replace_hints()
    src = {rs: k.cuda_source(rows(rs), out) for rs in (66, 68, 72)}
    assert len(k.cache) == 2 and src[66] == src[68] != src[72]
    vec = {rs: re.search(r"tp::load<[^(]*, (true|false)>\(a_view", s)[1] for rs, s in src.items()}
    assert vec == {66: "false", 68: "false", 72: "true"}
    infos = ct.api.compiler.infos_for
    exact = {k.specialize(infos((rows(rs), out)), exact=True)[0] for rs in (66, 68, 72)}
    assert len(exact) == 3


# ----------------------------------------------------------------------------- byte extents
@pytest.mark.parametrize("view, extent", [
    (lambda b: b[3:4], 4),                             # one element: its 4 bytes
    (lambda b: b[5:5], 0),                             # empty
    (lambda b: b[::3], (30 + 1) * 4),                  # strided: first to one past the last
    (lambda b: b.reshape(4, 8)[1:3, ::2], (8 + 6 + 1) * 4),   # 2-d, rows of 8 every 2nd
    (lambda b: b.reshape(4, 8)[:, 2:2], 0),            # 2-d, empty
], ids=["one-element", "empty", "strided", "2-d", "2-d-empty"])
def test_byte_extent_of_views(view, extent):
    assert byte_extent(intake(view(np.zeros(32, np.float32)))) == extent


def test_views_sharing_one_boundary_element_overlap():
    buf = np.zeros(32, np.float32)
    ranges = lambda *vs: [(intake(v).ptr, byte_extent(intake(v))) for v in vs]  # noqa: E731
    assert disjoint_flags(ranges(buf[0:5], buf[4:9])) == (False, False)      # share buf[4]
    assert disjoint_flags(ranges(buf[0:4], buf[4:8])) == (True, True)        # touch, share none
    assert disjoint_flags(ranges(buf[7:8], buf[7:8])) == (False, False)      # one element, twice
    assert disjoint_flags(ranges(buf[::4], buf[28:29])) == (False, False)    # last of a stride
    assert disjoint_flags(ranges(buf[2:2], buf[0:8])) == (True, True)        # empty: no bytes
    assert disjoint_flags(ranges(buf[0:2], buf[8:9], buf[1:3])) == (False, True, False)


def test_aot_refuses_views_sharing_one_boundary_element():
    from tilepy import aot  # noqa: F401  (the AOT launch's checks)
    a, b = (np.zeros(64, np.float32) for _ in range(2))
    k = double_into.compile(a, b, 16, arch="cpu")        # compiled for disjoint arrays
    buf = np.arange(128, dtype=np.float32)
    with pytest.raises(ct.TileValueError, match="overlaps another array"):
        k.launch(None, (4,), (buf[:64], buf[63:127], 16))
    k.launch(None, (4,), (buf[:64], buf[64:], 16))       # touching only: accepted
    np.testing.assert_array_equal(buf[64:], 2 * np.arange(64, dtype=np.float32))
