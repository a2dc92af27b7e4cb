"""The GPU launch path (launch/gpu.py, GpuPlan in launch/dispatch.py, the CUDA intake) run without
a GPU, through the fake driver of tests/fake_driver.py: cuda.core's Device/ObjectCode/Kernel/launch
replaced by doubles that load the very cubin NVRTC made and run the CPU build of the same kernel
from the packed kernelParams. Each review item of issue 15 has its test here."""
import numpy as np
import pytest

import tilepy as ct
from fake_driver import (ASSERT_TRAPPED, CupyLikeStream, FakeDriver, TorchLikeStream, cuda_array,
                         fake_cupy)
from test_cutile_suite import CASES as CUTILE_CASES
from tilepy.cuda_c.names import kernel_symbol
from tilepy.launch import gpu
from tutorial_cases import CASES as TUTORIAL_CASES
from tutorial_cases import reference_cases

REFERENCE_CASES = reference_cases()


@pytest.fixture
def drv():
    with FakeDriver() as d:
        yield d


def on_gpu(args, kind="cai", device_id=0):
    return tuple(cuda_array(a, kind, device_id) if isinstance(a, np.ndarray) else a for a in args)


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def vsub(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) - ct.load(b, (i,), (TILE,)))


@ct.kernel
def scale(x, y, alpha, n):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (128,)) * alpha + n)


def vectors(n=1024):
    rng = np.random.default_rng(0)
    return (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            np.zeros(n, np.float32))


# ----------------------------------------------------------------------------- whole suites
@pytest.mark.parametrize("name", sorted(TUTORIAL_CASES))
def test_tutorial_kernels_through_the_gpu_path(drv, name):
    kernel, grid, args, check = TUTORIAL_CASES[name]()
    ct.launch(None, grid, kernel, on_gpu(args))
    check()
    assert [launch.kernel for launch in drv.launches] == [kernel_symbol(kernel.name)]


@pytest.mark.parametrize("name", ["vector_add", "saxpy", "transpose_ragged", "softmax_f16",
                                  "layer_norm", "matmul_f16", "argmax_rows", "cumsum_rows",
                                  "embedding_gather_scatter", "atomic_histogram",
                                  "loops_with_runtime_branches", "while_break"])
def test_cutile_kernels_through_the_gpu_path(drv, name):
    kernel, grid, args, check = CUTILE_CASES[name]()
    ct.launch(None, grid, kernel, on_gpu(args, "dlpack"))
    check()


@pytest.mark.parametrize("name", sorted(REFERENCE_CASES))
def test_reference_kernels_through_the_gpu_path(drv, name):
    kernel, grid, args, check = REFERENCE_CASES[name]()
    ct.launch(TorchLikeStream(9), grid, kernel, on_gpu(args, "dlpack"))
    check()


# ----------------------------------------------------------------------------- review items
def test_1_kernels_with_one_signature_load_their_own_code(drv):
    a, b, c = vectors()
    args = on_gpu((a, b, c))
    ct.launch(None, (8,), vadd, args + (128,))
    np.testing.assert_array_equal(c, a + b)
    ct.launch(None, (8,), vsub, args + (128,))            # same specialization key as vadd
    np.testing.assert_array_equal(c, a - b)
    ct.launch(None, (8,), redefined_vadd(), args + (128,))
    np.testing.assert_array_equal(c, a * b)
    assert len(drv.calls_named("objectcode.get_kernel")) == 3


def redefined_vadd():
    @ct.kernel
    def vadd(a, b, c, TILE: ct.Constant[int]):             # redefined (a notebook cell)
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) * ct.load(b, (i,), (TILE,)))
    return vadd


def test_2_streams_reach_cuda_core_as_its_own_streams(drv):
    a, b, c = vectors()
    args = on_gpu((a, b, c)) + (128,)
    for stream, handle in ((TorchLikeStream(77), 77), (CupyLikeStream(88), 88), (99, 99),
                           (gpu.StreamHandle(55), 55), (np.int64(66), 66), (None, 0)):
        ct.launch(stream, (8,), vadd, args)
        assert drv.launches[-1].stream == handle
    assert [h for _, h in drv.calls_named("stream.from_handle")] == [77, 88, 99, 55, 66]
    ct.launch(TorchLikeStream(77), (8,), vadd, args)      # wrapped once per handle
    assert len(drv.calls_named("stream.from_handle")) == 5
    with pytest.raises(ct.TileValueError, match="as a CUDA stream"):
        ct.launch("stream", (8,), vadd, args)


@pytest.mark.usefixtures("warm_path")
def test_2_torch_streams_resolved_once_per_launch(drv, monkeypatch):
    """cuTile's idiom, `launch(torch.cuda.current_stream(), ...)` on torch CUDA tensors (issue
    26), beside a torch.cuda.Stream, a cupy stream, an int handle, a cuda.core Stream and None
    (torch's current stream), first and cached launches: each launches on its stream, with the
    right result, asking torch for its current stream at most once per launch."""
    torch = pytest.importorskip("torch")
    from fake_driver import TorchStream, torch_on_the_fake_gpu
    world = torch_on_the_fake_gpu(monkeypatch, torch)
    a, b = torch.randn(1024), torch.randn(1024)
    c = torch.zeros(1024)
    made = drv.core.Stream.from_handle(31)
    cases = [(lambda: torch.cuda.current_stream(), 0, 1), (lambda: None, 0, 1),
             (lambda: TorchStream(77), 77, 0), (lambda: CupyLikeStream(88), 88, 0),
             (lambda: 99, 99, 0), (lambda: made, 31, 0)]
    for stream, handle, asked in cases * 2:            # first launches, then cached ones
        c.zero_()
        world["asked"] = 0
        ct.launch(stream(), (8,), vadd, (a, b, c, 128))
        assert drv.launches[-1].stream == handle and world["asked"] == asked
        torch.testing.assert_close(c, a + b)
    assert len(drv.calls_named("objectcode.get_kernel")) == 1
    world["stream"] = 0x5100                           # torch made another stream current
    ct.launch(None, (8,), vadd, (a, b, c, 128))
    ct.launch(torch.cuda.current_stream(), (8,), vadd, (a, b, c, 128))
    assert [x.stream for x in drv.launches[-2:]] == [0x5100, 0x5100]
    drv.stream_devices[0x5200] = 1                      # a stream of the other GPU: refused,
    for _ in range(2):                                  # also on the cached path
        with pytest.raises(ct.TileValueError, match="stream is on cuda:1"):
            ct.launch(TorchStream(0x5200, 1), (8,), vadd, (a, b, c, 128))


def test_3_grid_y_and_z_within_cuda_limits(drv):
    a, b, c = vectors()
    args = on_gpu((a, b, c)) + (128,)
    for grid in ((1, 65536), (1, 1, 70000)):
        with pytest.raises(ct.TileValueError, match="at most 65535"):
            ct.launch(None, grid, vadd, args)
    tuple_args = (a, b, c, 128)
    with FakeDriver():
        pass
    ct.launch(None, (8, 1), vadd, args)                    # a cached plan, then a too-large grid
    with pytest.raises(ct.TileValueError, match="at most 65535"):
        ct.launch(None, (8, 65536), vadd, args)
    assert tuple_args


def _specializations(kernel):
    return len(kernel.cache)


@pytest.mark.usefixtures("warm_path")
def test_4_overlap_is_part_of_the_fast_path(drv, monkeypatch):
    cupy = fake_cupy(monkeypatch)

    @ct.kernel
    def add_into(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
    a, b, c = vectors()
    ga, gb, gc = cupy.ndarray(a), cupy.ndarray(b), cupy.ndarray(c)
    ct.launch(None, (8,), add_into, (ga, gb, gc, 128))
    ct.launch(None, (8,), add_into, (ga, gb, ga, 128))    # c is a: not disjoint any more
    assert _specializations(add_into) == 2


@pytest.mark.usefixtures("warm_path")
def test_4_overlap_on_the_cpu_fast_path():
    @ct.kernel
    def add_to(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
    a, b, c = vectors()
    ct.launch(None, (8,), add_to, (a, b, c, 128))
    ct.launch(None, (8,), add_to, (a, b, a, 128))          # same signature, other overlap
    assert _specializations(add_to) == 2
    np.testing.assert_array_equal(a, c)
    a2 = a.copy()
    ct.launch(None, (8,), add_to, (a2, b, c, 128))         # back: each pattern has its plan
    ct.launch(None, (8,), add_to, (a2, b, a2, 128))
    assert _specializations(add_to) == 2
    np.testing.assert_array_equal(a2, c)


@ct.kernel
def must_be_positive(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,))
    ct.assert_(t > 0, "x must be positive")
    ct.store(y, (ct.bid(0),), t)


def test_5_device_assert_raises_at_the_launch(drv, capfd):
    x = np.ones(256, np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (2,), must_be_positive, on_gpu((x, y)) + (128,))
    assert drv.calls_named("stream.sync")                   # a kernel with asserts is checked
    x[3] = -1
    with pytest.raises(ct.TileLaunchError, match="failed on the GPU: " + ASSERT_TRAPPED):
        ct.launch(None, (2,), must_be_positive, on_gpu((x, y)) + (128,))
    assert "x must be positive" in capfd.readouterr().err


def test_5_kernels_without_asserts_are_not_synchronized(drv):
    a, b, c = vectors()
    ct.launch(None, (8,), vadd, on_gpu((a, b, c)) + (128,))
    assert not drv.calls_named("stream.sync")


def test_5_cuda_errors_become_tile_launch_errors(drv):
    a, b, c = vectors()
    drv.sources.clear()                                     # get_kernel fails: unknown image
    gpu._KERNELS.clear()
    drv_real = drv.sources

    class Forget(dict):
        def __setitem__(self, k, v):
            pass
    drv.sources = Forget()
    with pytest.raises(ct.TileLaunchError, match="could not load kernel 'vsub'"):
        ct.launch(None, (8,), vsub, on_gpu((a, b, c)) + (128,))
    drv.sources = drv_real


def test_6_the_callers_context_is_put_back(drv):
    a, b, c = vectors()
    drv.set_context(0x1000)                                 # the caller works on cuda:0
    ct.launch(None, (8,), vadd, on_gpu((a, b, c), device_id=1) + (128,))
    np.testing.assert_array_equal(c, a + b)
    assert drv.current_context() == 0x1000
    ct.launch(None, (8,), vadd, on_gpu((a, b, c), device_id=1) + (128,))
    assert drv.current_context() == 0x1000


def test_7_producers_are_ordered_before_the_launch_stream(drv):
    a, b, c = vectors()
    arrays = on_gpu((a, b, c), "dlpack")
    ct.launch(TorchLikeStream(4242), (8,), vadd, arrays + (128,))
    assert all(x.asked == [4242] for x in arrays)          # DLPack producers get the launch stream
    ct.launch(None, (8,), vadd, on_gpu((a, b, c), "dlpack") + (128,))
    cai = cuda_array(a, stream=31)                          # CAI: work pending on stream 31
    ct.launch(CupyLikeStream(5), (8,), vadd, (cai, cuda_array(b), cuda_array(c), 128))
    assert (31, 5) in drv.waits


@pytest.mark.usefixtures("warm_path")
def test_9_cupy_arrays_take_the_fast_path(drv, monkeypatch):
    cupy = fake_cupy(monkeypatch)
    a, b, c = vectors()
    args = (cupy.ndarray(a), cupy.ndarray(b), cupy.ndarray(c), 128)
    ct.launch(None, (8,), vadd, args)
    views = len(drv.calls_named("view"))
    ct.launch(None, (8,), vadd, args)                      # fast path: no intake
    assert len(drv.calls_named("view")) == views
    np.testing.assert_array_equal(c, a + b)
    cupy.current.ptr = 1234                                 # cupy works on another stream now:
    ct.launch(None, (8,), vadd, args)                      # the full path orders it
    assert len(drv.calls_named("view")) == views + 3
    assert args[0].asked[-1] == 1                           # the launch's (default) stream


def test_9_stream_and_arrays_on_different_devices(drv):
    a, b, c = vectors()
    drv.stream_devices[500] = 1
    with pytest.raises(ct.TileValueError, match="stream is on cuda:1 but the arrays are on cuda:0"):
        ct.launch(500, (8,), vadd, on_gpu((a, b, c)) + (128,))
    other = drv.core.Stream.from_handle(500)                # a cuda.core Stream of cuda:1
    with pytest.raises(ct.TileValueError, match="stream is on cuda:1"):
        ct.launch(other, (8,), vadd, on_gpu((a, b, c)) + (128,))
    with pytest.raises(ct.TileValueError, match="different GPUs"):
        ct.launch(None, (8,), vadd, (cuda_array(a, device_id=1), cuda_array(b), cuda_array(c), 128))


def test_9_print_ops_come_out_of_the_print_log_after_a_sync(drv, capfd):
    """Print ops write the kernel's print log (tests/test_print_log.py), not device printf: the
    printf buffer is left alone; the launch syncs, then the host reads the records."""
    kernel, grid, args, check = TUTORIAL_CASES["row_norms"]()
    ct.launch(None, grid, kernel, on_gpu(args))
    check()
    assert drv.printf_fifo == 1 << 20 and drv.calls_named("stream.sync")
    assert [c for c in drv.calls if c[0] == "kernel_global"] == [("kernel_global", "tp_print_log"),
                                                                 ("kernel_global", "tp_print_ops")]
    assert "row 2: norm" in capfd.readouterr().out


def test_9_kernels_with_assertions_get_a_large_printf_buffer(drv):
    kernel, grid, args, check = TUTORIAL_CASES["checked_sqrt"]()
    ct.launch(None, grid, kernel, on_gpu(args))
    assert drv.printf_fifo == gpu.PRINTF_FIFO


@pytest.mark.parametrize("cc,driver,expected", [((10, 3), 13000, "sm_100"), ((12, 1), 13000, "sm_120"),
                                                ((13, 0), 13050, "compute_120")])
def test_9_an_older_cubin_of_the_same_major(cc, driver, expected):
    assert gpu.choose_target(cc, driver, (13, 5), (75, 80, 90, 100, 120)) == expected


# ----------------------------------------------------------------------------- the path itself
@pytest.mark.usefixtures("warm_path")
def test_plan_reuse_asks_the_driver_for_nothing_new(drv, monkeypatch):
    cupy = fake_cupy(monkeypatch)
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros_like(x)
    gx, gy = cupy.ndarray(x), cupy.ndarray(y)
    drv.set_context(0x1000)                                 # the caller's context is cuda:0's
    ct.launch(None, (8,), scale, (gx, gy, 2.0, 3))
    before = len(drv.calls)
    for alpha, n in ((0.5, 1), (-1.0, 7)):
        ct.launch(None, (8,), scale, (gx, gy, alpha, n))
        np.testing.assert_allclose(y, x * alpha + n)
    new = {name for name, _ in drv.calls[before:]}
    assert new == {"launch", "ctx.get"}, new            # no load, wrap, view, sync or set_current


@pytest.mark.usefixtures("warm_path")
def test_plans_of_a_driver_gone_are_not_reused(monkeypatch):
    """A plan holds its driver's kernel and streams: once that driver is replaced (a test's
    fake one left, another came), the same signature plans again on the driver of now."""
    cupy = fake_cupy(monkeypatch)
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros_like(x)
    gx, gy = cupy.ndarray(x), cupy.ndarray(y)
    with FakeDriver() as first:
        ct.launch(None, (8,), scale, (gx, gy, 2.0, 3))
    with FakeDriver() as second:
        ct.launch(None, (8,), scale, (gx, gy, 0.5, 1))
    assert len(first.launches) == 1 and len(second.launches) == 1
    np.testing.assert_allclose(y, x * 0.5 + 1)


def test_module_cache_is_per_device(drv):
    a, b, c = vectors()
    ct.launch(None, (8,), vadd, on_gpu((a, b, c)) + (128,))
    ct.launch(None, (8,), vadd, on_gpu((a, b, c), device_id=1) + (128,))
    ct.launch(None, (8,), vadd, on_gpu((a, b, c), device_id=1) + (128,))
    assert len(drv.calls_named("objectcode.from_cubin")) == 2


def test_grid_zero_launches_nothing(drv):
    a, b, c = vectors()
    ct.launch(None, (0,), vadd, on_gpu((a, b, c)) + (128,))
    ct.launch(None, (8, 0), vadd, on_gpu((a, b, c)) + (128,))
    assert drv.launches == [] and not c.any()


def test_errors_of_the_gpu_path(drv):
    a, b, c = vectors()
    with pytest.raises(ct.TileValueError, match="different devices"):
        ct.launch(None, (8,), vadd, (cuda_array(a), b, cuda_array(c), 128))
    ro = cuda_array(c)
    ro.__cuda_array_interface__["data"] = (c.ctypes.data, True)
    with pytest.raises(ct.TileValueError, match="read-only"):
        ct.launch(None, (8,), vadd, (cuda_array(a), cuda_array(b), ro, 128))


@ct.kernel
def copy_list(xs, ys, N: ct.Constant[int]):
    for i in range(len(xs)):
        ct.store(ys[i], (0,), ct.load(xs[i], (0,), (N,)))


def test_a_list_argument_is_all_in_the_launch_parameters(drv):
    """A CUDA graph keeps a launch's parameters (copied when the launch is captured) and replays
    them: a list of arrays is in them item by item (pointer, extent), with nothing staged in
    device memory around the launch, so replaying the parameters after the list is gone copies
    again. (cuTile stages a list's table in a stream buffer that later launches reuse, so it
    refuses lists under capture; tilepy has no such buffer.)"""
    xs = [np.arange(8, dtype=np.float32) + 10 * i for i in range(3)]
    ys = [np.zeros(8, np.float32) for _ in range(3)]
    issued = []
    real = drv.core.launch
    drv.core.launch = lambda *a: (issued.append(a), real(*a))[1]
    arg = ([cuda_array(x) for x in xs], [cuda_array(y) for y in ys], 8)
    ct.launch(None, (1,), copy_list, arg)
    assert [y.tolist() for y in ys] == [x.tolist() for x in xs]
    assert not drv.memory and not drv.calls_named("to_device")     # nothing staged
    assert issued[0][3:] == tuple(v for a in xs + ys for v in (a.ctypes.data, 8))
    del arg
    for y in ys:
        y[:] = 0
    drv.core.Device(issued[0][2].device_id).set_current()
    real(*issued[0])                                    # the replay of what was captured
    assert [y.tolist() for y in ys] == [x.tolist() for x in xs]


@pytest.mark.usefixtures("warm_path")
def test_kernels_that_synchronize_are_refused_under_graph_capture(drv):
    """A kernel with asserts synchronizes after each launch: on a stream capturing a CUDA graph
    its launch is refused before anything is issued, first launch or cached one; other kernels
    launch there without a query (their launch is all they issue)."""
    x = np.ones(256, np.float32)
    y = np.zeros_like(x)
    a, b, c = vectors()
    args, stream = on_gpu((x, y)) + (128,), TorchLikeStream(77)
    refused = "'must_be_positive' has device assertions or prints.*capturing a CUDA graph"
    drv.capturing.add(77)
    with pytest.raises(ct.TileLaunchError, match=refused):     # the first launch
        ct.launch(stream, (2,), must_be_positive, args)
    assert not drv.launches and not y.any()
    drv.capturing.clear()
    ct.launch(stream, (2,), must_be_positive, args)
    np.testing.assert_array_equal(y, x)
    drv.capturing.add(77)
    y[:] = 0
    with pytest.raises(ct.TileLaunchError, match=refused):     # its cached plan
        ct.launch(stream, (2,), must_be_positive, args)
    assert len(drv.launches) == 1 and not y.any()
    asked = len(drv.calls_named("stream.is_capturing"))
    ct.launch(stream, (8,), vadd, on_gpu((a, b, c)) + (128,))
    np.testing.assert_array_equal(c, a + b)
    assert len(drv.calls_named("stream.is_capturing")) == asked
