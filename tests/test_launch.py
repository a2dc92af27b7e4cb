"""tilepy.launch: the checks and errors, the CPU fast path, GPU target choice and streams, and
compiler errors mapped to the user's line."""
import re
import threading

import numpy as np
import pytest
from fake_arrays import FakeCAI, FakeDLPack, FakeStream
from kernels_util import assert_located

import tilepy as ct
from tilepy.api.compiler import compile_for_args
from tilepy.launch import cpu, dispatch, nvrtc
from tilepy.launch.gpu import StreamHandle, choose_target, driver_available, resolve_stream


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def scale(x, out, s, n):
    i = ct.bid(0)
    t = ct.load(x, (i,), (16,)) * s
    ct.store(out, (i,), t + n)


def launch_vadd(a, b, c, **kw):
    ct.launch(kw.get("stream"), (ct.cdiv(c.shape[0], 64),), vadd, (a, b, c, 64))


# ----------------------------------------------------------------------------- device errors
def test_mixed_cpu_and_cuda_arrays(no_driver):
    a = np.zeros(64, np.float32)
    with pytest.raises(ct.TileValueError, match=r"different devices \('a' on cpu, 'b' on cuda, "
                                                r"'c' on cpu\)"):
        launch_vadd(a, FakeCAI((64,)), a)


def test_arrays_on_different_gpus():
    with pytest.raises(ct.TileValueError, match=r"different GPUs \('a' on cuda:0, 'b' on cuda:1, "
                                                r"'c' on cuda:0\)"):
        launch_vadd(FakeDLPack((64,)), FakeDLPack((64,), device=(2, 1)), FakeDLPack((64,)))


@pytest.mark.parametrize("stream", [FakeStream(), StreamHandle(7), 0, 5])
def test_cpu_arrays_to_a_gpu_launch(stream):
    a = np.zeros(64, np.float32)
    with pytest.raises(ct.TileValueError, match="CPU arrays passed to a GPU launch: the stream is "
                                                "a CUDA stream"):
        launch_vadd(a, a, a, stream=stream)


@pytest.mark.parametrize("stream", ["stream", 1.5, object()])
def test_cpu_launch_rejects_other_streams(stream):
    a = np.zeros(64, np.float32)
    with pytest.raises(ct.TileValueError, match="as a stream: pass None for the CPU backend"):
        launch_vadd(a, a, a, stream=stream)


@pytest.mark.parametrize("make", [lambda: FakeCAI((64,)), lambda: FakeDLPack((64,))])
def test_cuda_arrays_without_a_driver(make, no_driver):
    with pytest.raises(ct.TileLaunchError, match="CUDA arrays were passed but no NVIDIA driver"):
        launch_vadd(make(), make(), make())


# ----------------------------------------------------------------------------- output checks
def test_readonly_output_is_rejected_readonly_input_is_fine():
    a = np.arange(64, dtype=np.float32)
    ro = a.copy()
    ro.flags.writeable = False
    c = np.zeros(64, np.float32)
    launch_vadd(ro, a, c)
    assert (c == 2 * a).all()
    with pytest.raises(ct.TileValueError, match="argument 'c' is read-only but the kernel stores"):
        launch_vadd(a, a, ro)


@pytest.mark.usefixtures("warm_path")
def test_readonly_after_fast_path_is_still_rejected():
    a = np.arange(64, dtype=np.float32)
    c = np.zeros(64, np.float32)
    launch_vadd(a, a, c)
    launch_vadd(a, a, c)                       # the fast path
    c.flags.writeable = False
    with pytest.raises(ct.TileValueError, match="read-only"):
        launch_vadd(a, a, c)


def test_cuda_readonly_output_is_rejected_before_the_driver(no_driver):
    ro = FakeCAI((64,), readonly=True)
    with pytest.raises((ct.TileValueError, ct.TileLaunchError)):
        launch_vadd(FakeCAI((64,)), FakeCAI((64,)), ro)


def test_broadcast_output_is_rejected_broadcast_input_is_fine():
    a = np.broadcast_to(np.float32(2), (64,))
    c = np.zeros(64, np.float32)
    launch_vadd(a, a, c)
    assert (c == 4).all()
    with pytest.raises(ct.TileValueError, match=r"argument 'c': unsupported strides \(0,\).*"
                                                r"stride 0 in dimension 0"):
        launch_vadd(c, c, np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (64,), (0,)))


def test_unsupported_strides_and_dtypes_name_the_argument():
    a = np.zeros(64, np.float32)
    with pytest.raises(ct.TileValueError, match="argument 'b': unsupported strides: negative"):
        launch_vadd(a, a[::-1], a)
    with pytest.raises(ct.TileTypeError, match="argument 'a': arrays of dtype complex64"):
        launch_vadd(np.zeros(64, np.complex64), a, a)


def test_wrong_rank_is_a_located_error():
    @ct.kernel
    def first_row(a):
        t = ct.load(a, (0,), (16,))  # RANK
        ct.store(a, (0,), t)
    with pytest.raises(ct.TileTypeError) as e:
        ct.launch(None, (1,), first_row, (np.zeros((4, 16), np.float32),))
    assert_located(e.value, "RANK", "(16,)", __file__)
    assert "dimensions but the array has 2" in str(e.value)


def test_sizes_that_do_not_fit_32_bits():
    """Without IndexedWithInt64 an extent past int32 is refused (an OverflowError, as cuTile's),
    never wrapped around."""
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(2**31,), strides=(0,))
    with pytest.raises(ct.TileValueError, match=r"argument 'a': shape\[0\] = 2147483648 does not "
                                                r"fit in int32; annotate the parameter") as e:
        ct.launch(None, (1,), vadd, (big, big, np.zeros(64, np.float32), 64))
    assert isinstance(e.value, OverflowError)


def test_bad_kernel_args_grid():
    a = np.zeros(64, np.float32)
    with pytest.raises(ct.TileTypeError, match="expects a @tilepy.kernel"):
        ct.launch(None, (1,), lambda a: a, (a,))
    with pytest.raises(ct.TileTypeError, match="as a tuple"):
        ct.launch(None, (1,), vadd, a)
    with pytest.raises(ct.TileTypeError, match="takes 4 argument"):
        ct.launch(None, (1,), vadd, (a, a))
    for grid in ((True,), (1.0,), (-1,), (2**24,), (1, 1, 1, 1), "1"):
        with pytest.raises(ct.TileValueError, match="grid"):
            ct.launch(None, grid, vadd, (a, a, a, 64))


# ----------------------------------------------------------------------------- fast path
@pytest.mark.usefixtures("warm_path")
def test_fast_path_follows_pointers_scalars_and_grids():
    rng = np.random.default_rng(0)
    for n, s, k in ((64, 2.0, 1), (64, -1.5, 7), (64, 0.5, -3), (48, 3.0, 2)):
        x = rng.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        for grid in ((n // 16,), n // 16, (n // 16, 1), (np.int64(n // 16),)):
            out[:] = 0
            ct.launch(None, grid, scale, (x, out, s, k))
            np.testing.assert_allclose(out, x * np.float32(s) + k, rtol=1e-6)
    assert scale.__dict__["_tp_plans"].table     # plans were made and used


@pytest.mark.usefixtures("warm_path")
def test_fast_path_constants_pick_their_own_plan():
    a = np.arange(256, dtype=np.float32)
    for tile in (64, 128, 64, 32):
        c = np.zeros(256, np.float32)
        ct.launch(None, (256 // tile,), vadd, (a, a, c, tile))
        assert (c == 2 * a).all()


def test_signature_distinguishes_what_a_plan_depends_on():
    consts = (False, True)
    a = np.zeros((4, 8), np.float32)
    sig = lambda *args: dispatch.signature(args, consts)[0]     # noqa: E731
    base = sig(a, 1)
    ro = a.copy()
    ro.flags.writeable = False
    unaligned = np.zeros(33, np.float32)[1:].reshape(4, 8)
    for other in ((a.T.copy().T, 1), (a[:, ::2].copy(), 1), (ro, 1), (unaligned, 1),
                  (a.astype(np.float16), 1), (a, 2), (a, True), (a, 1.0)):
        assert sig(*other) != base, other
    assert sig(np.zeros((4, 8), np.float32), 1) == base
    assert sig(a, 0.0) != sig(a, -0.0)
    assert dispatch.signature((a, [1]), consts) is None        # unhashable constant: full path


@pytest.mark.usefixtures("warm_path")
def test_dtype_constants_take_the_fast_path():
    """A Constant[DType] argument (a compute dtype, as in tutorial 6's GELU) is a constant like
    an int: calls with it are signed (they took the full path on every call before)."""
    consts = (False, True)
    a = np.zeros((4, 8), np.float32)
    f32 = dispatch.signature((a, ct.float32), consts)
    assert f32 is not None and f32[0] != dispatch.signature((a, ct.float64), consts)[0]
    assert dispatch.signature((a, 1), (False, False))[0] == dispatch.signature((a, 5), (False, False))[0]


@pytest.mark.usefixtures("warm_path")
def test_fast_path_checks_int32_scalars():
    x = np.zeros(16, np.float32)
    out = np.zeros(16, np.float32)
    ct.launch(None, (1,), scale, (x, out, 1.0, 3))
    with pytest.raises(ct.TileUnsupportedFeatureError, match="argument 'n' = 2147483648 does not fit"):
        ct.launch(None, (1,), scale, (x, out, 1.0, 2**31))


@pytest.mark.usefixtures("warm_path")
def test_zero_grid_launches_nothing():
    a = np.ones(64, np.float32)
    c = np.zeros(64, np.float32)
    ct.launch(None, (0,), vadd, (a, a, c, 64))
    ct.launch(None, (0, 4), vadd, (a, a, c, 64))
    assert (c == 0).all()


@pytest.mark.usefixtures("warm_path")
def test_concurrent_launches_from_threads():
    a = np.arange(64 * 8, dtype=np.float32)
    outs = [np.zeros_like(a) for _ in range(6)]
    errors = []

    def work(c, k):
        try:
            for _ in range(200):
                b = np.full_like(a, k)
                ct.launch(None, (8,), vadd, (a, b, c, 64))
                if not (c == a + k).all():
                    errors.append(k)
        except Exception as e:       # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(c, k)) for k, c in enumerate(outs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.usefixtures("warm_path")
def test_plan_table_is_bounded(monkeypatch):
    monkeypatch.setattr(dispatch, "MAX_PLANS", 4)
    for n in range(16, 16 * 10, 16):
        x = np.zeros(n, np.float32)
        ct.launch(None, (1,), scale, (x, x.copy(), 1.0, 0))
    assert len(scale.__dict__["_tp_plans"].table) <= 4


def test_grid3_accepts_only_plain_valid_grids():
    assert dispatch.grid3((3,)) == (3, 1, 1) and dispatch.grid3(5) == (5, 1, 1)
    assert dispatch.grid3((2, 3, 4)) == (2, 3, 4)
    for g in ((True,), (0,), (2**24,), (1.0,), [1], (np.int32(1),), (1, 1, 1, 1)):
        assert dispatch.grid3(g) is None


# ----------------------------------------------------------------------------- torch CPU
@pytest.mark.usefixtures("warm_path")
def test_torch_cpu_tensors_launch():
    torch = pytest.importorskip("torch")
    a = torch.arange(256, dtype=torch.float32)
    b = torch.ones(256, dtype=torch.float32)
    c = torch.zeros(256, dtype=torch.float32)
    ct.launch(None, (4,), vadd, (a, b, c, 64))
    assert torch.equal(c, a + b)
    m = torch.arange(64 * 4, dtype=torch.float32).reshape(4, 64).T     # strided view
    out = torch.zeros(64, 4).T
    ct.launch(None, (4,), vadd, (m[:, 0].contiguous(), b[:64], out[0], 16))
    assert torch.equal(out[0], m[:, 0] + 1)


# ----------------------------------------------------------------------------- GPU target, streams
SUPPORTED = (75, 80, 86, 89, 90, 100, 120)


@pytest.mark.parametrize("cc,driver,expected", [
    ((9, 0), 13000, "sm_90"), ((8, 6), 13050, "sm_86"), ((12, 0), 13020, "sm_120"),
    ((10, 3), 13050, "sm_100"), ((12, 1), 13000, "sm_120"),     # a cubin of the same major
    ((13, 0), 13050, "compute_120"),                              # a newer major: PTX
])
def test_choose_target(cc, driver, expected):
    assert choose_target(cc, driver, (13, 5), SUPPORTED) == expected


def test_sm90a_class_is_asked_for():
    """TILEPY_SM90A=1: sm_90 devices get the warpgroup-MMA class; no other device changes."""
    assert choose_target((9, 0), 13000, (13, 5), SUPPORTED, sm90a=True) == "sm_90a"
    assert choose_target((8, 6), 13050, (13, 5), SUPPORTED, sm90a=True) == "sm_86"
    assert choose_target((10, 3), 13050, (13, 5), SUPPORTED, sm90a=True) == "sm_100"


@pytest.mark.parametrize("cc,driver,nv,message", [
    ((9, 0), 12080, (13, 5), r"driver supports CUDA 12.8, older than tilepy's NVRTC \(CUDA 13.5\).*"
                             r"tilepy\[cu12\]"),
    ((13, 0), 13000, (13, 5), "newer than NVRTC 13.5 knows, and the driver .* too old"),
    ((7, 0), 13050, (13, 5), r"older than the oldest arch NVRTC 13.5 supports \(sm_75\)"),
])
def test_choose_target_errors(cc, driver, nv, message):
    with pytest.raises(ct.TileLaunchError, match=message):
        choose_target(cc, driver, nv, SUPPORTED)


def test_resolve_stream():
    from fake_driver import FakeDriver, FakeStream
    with FakeDriver() as drv:
        dev = drv.core.Device(0)
        assert resolve_stream(None, [], dev) is drv.core.LEGACY_DEFAULT_STREAM
        s = drv.core.Stream.from_handle(5)
        assert resolve_stream(s, [], dev) is s

        class TorchLikeStream:
            cuda_stream = 4242

        class CupyLikeStream:
            ptr = 99
        for stream, handle in ((TorchLikeStream(), 4242), (CupyLikeStream(), 99), (np.int64(5), 5),
                               (FakeStream(drv, 1234, 0), 1234), (StreamHandle(7), 7)):
            got = resolve_stream(stream, [], dev)
            assert isinstance(got, FakeStream) and got.__cuda_stream__() == (0, handle)
        for bad in ("stream", 1.5, True):
            with pytest.raises(ct.TileValueError, match="as a CUDA stream"):
                resolve_stream(bad, [], dev)


def test_driver_probe_is_cached():
    from tilepy.host import driver as gpu_driver
    from tilepy.host.driver import probe
    with gpu_driver.use(gpu_driver.CoreDriver()):          # the real probe, whatever the seam
        assert driver_available() is driver_available()
    assert probe.cache_info().currsize == 1


def test_the_real_drivers_context_calls(monkeypatch):
    """CoreDriver's current_context and set_context, which a GPU launch calls each time, on
    cuda.bindings' functions (stubbed here: no driver needed): the context as an int, the
    driver's error as a TileLaunchError naming the call."""
    cu = pytest.importorskip("cuda.bindings.driver")
    from tilepy.host import driver as gpu_driver
    ok, bad = cu.CUresult.CUDA_SUCCESS, cu.CUresult.CUDA_ERROR_INVALID_CONTEXT
    now, answer = [], [ok]
    monkeypatch.setattr(cu, "cuCtxGetCurrent", lambda: (answer[0], cu.CUcontext(0x1234)))
    monkeypatch.setattr(cu, "cuCtxSetCurrent", lambda c: now.append(int(c)) or (answer[0],))
    drv = gpu_driver.CoreDriver()
    assert drv.current_context() == 0x1234
    drv.set_context(0x5678)
    assert now == [0x5678]
    answer[0] = bad
    with pytest.raises(ct.TileLaunchError, match="cuCtxGetCurrent failed: .*INVALID_CONTEXT"):
        drv.current_context()
    with pytest.raises(ct.TileLaunchError, match="cuCtxSetCurrent failed: .*INVALID_CONTEXT"):
        drv.set_context(0)


# ----------------------------------------------------------------------------- compiler errors
def _inject(source: str, marker_line: int, code: str, prelude: str = "") -> str:
    """Put `code` right after the #line directive of the user's line `marker_line`."""
    pat = re.compile(rf'^#line {marker_line} ".*"$', re.M)
    m = pat.search(source)
    assert m, source
    out = source[:m.end()] + "\n  " + code + source[m.end():]
    return out.replace('#include "tilepy/runtime.h"', '#include "tilepy/runtime.h"\n' + prelude, 1)


def _marker_line(kernel, marker) -> int:
    import inspect
    lines, start = inspect.getsourcelines(kernel.func)
    return start + next(i for i, s in enumerate(lines) if f"# {marker}" in s)


@ct.kernel
def victim(a):
    t = ct.load(a, (0,), (16,))
    ct.store(a, (0,), t)  # BROKEN


BAD_TEMPLATE = "template <class T> __device__ void tp_bad(T x) { x.no_such_member(); }"


@pytest.mark.parametrize("code,prelude", [("undefined_fn_xyz();", ""),
                                          ("tp_bad(1.0f);", BAD_TEMPLATE)],
                         ids=["direct", "in-template"])
def test_nvrtc_error_points_at_the_user_line(code, prelude):
    ck = compile_for_args(victim, (np.zeros(16, np.float32),))
    line = _marker_line(victim, "BROKEN")
    bad = _inject(ck.compile_source(), line, code, prelude)
    with pytest.raises(ct.TileCompileError) as e:
        nvrtc.compile_cubin(bad, "sm_90", "victim")
    assert_located(e.value, "BROKEN", "ct.store", __file__)
    assert "NVRTC could not compile kernel 'victim' for sm_90" in e.value.message
    assert e.value.message.split(": ", 1)[1] in e.value.log      # the first error, quoted
    assert "error" in e.value.log and "--- compiler log ---" in str(e.value)


@pytest.mark.parametrize("code,prelude", [("undefined_fn_xyz();", ""),
                                          ("tp_bad(1.0f);", BAD_TEMPLATE)],
                         ids=["direct", "in-template"])
def test_host_compiler_error_points_at_the_user_line(code, prelude):
    ck = compile_for_args(victim, (np.zeros(16, np.float32),))
    line = _marker_line(victim, "BROKEN")
    bad = _inject(ck.compile_source(), line, code, prelude)
    with pytest.raises(ct.TileCompileError) as e:
        cpu.build(ck.emitted, bad)
    assert_located(e.value, "BROKEN", "ct.store", __file__)
    assert "host C++ compiler could not build kernel 'victim'" in e.value.message
    assert e.value.message.split(": ", 1)[1] in e.value.log


def mul(x, out, s):
    ct.store(out, (0,), ct.load(x, (0,), (8,)) * s)


@ct.kernel
def mul6(x0, o0, s0, x1, o1, s1, x2, o2, s2, x3, o3, s3, x4, o4, s4, x5, o5, s5):
    mul(x0, o0, s0)          # a scalar of each kind of SCALAR_KINDS in one signature
    mul(x1, o1, s1)
    mul(x2, o2, s2)
    mul(x3, o3, s3)
    mul(x4, o4, s4)
    mul(x5, o5, s5)


SCALAR_KINDS = [(np.float16, np.float16(1.5)), (np.float32, np.float32(-2.25)),
                (np.int64, np.int64(-3)), (np.int32, 7), (np.int16, np.int16(-3)),
                (np.uint8, np.uint8(2))]


@pytest.mark.usefixtures("warm_path")
def test_scalar_kinds_on_both_paths():
    xs = [np.arange(8).astype(dtype) for dtype, _ in SCALAR_KINDS]
    for _ in range(3):                      # the full path, then the fast path
        outs = [np.zeros_like(x) for x in xs]
        ct.launch(None, (1,), mul6, tuple(a for x, o, (_, s) in zip(xs, outs, SCALAR_KINDS)
                                          for a in (x, o, s)))
        for x, out, (dtype, s) in zip(xs, outs, SCALAR_KINDS):
            assert out.tolist() == (x * s).astype(dtype).tolist(), (dtype, s)
