"""GPU launches through tileiras (`@tilepy.kernel(compiler="tileiras")`, TILEPY_GPU_COMPILER),
run without a GPU on the fake driver (tests/fake_driver.py): tileiras' real cubin is loaded, its
own parameter table checks what tilepy packs, the block must be its REQNTID, and the CPU runs
the Tile IR bytecode tileiras was given (read back by tilepy's reader)."""
import pathlib

import numpy as np
import pytest

import tilepy as ct
from fake_driver import FakeDriver, cuda_array
from tilepy.errors import TileCompileError, TileLaunchError, TileValueError
from tilepy.launch import tileiras
from tutorial_cases import CASES as TUTORIAL_CASES

pytestmark = pytest.mark.skipif(tileiras.unusable() is not None, reason=str(tileiras.unusable()))


@pytest.fixture
def drv():
    with FakeDriver() as d:
        yield d


def on_gpu(args):
    return tuple(cuda_array(a) if isinstance(a, np.ndarray) else a for a in args)


def _loaded_by(drv) -> set:
    """The compilers of the cubins the fake driver loaded ("nvrtc" / "tileiras")."""
    return {"tileiras" if k in drv.bytecodes else "nvrtc" for k in drv.sources}


@ct.kernel(compiler="tileiras")
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def vmul(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) * ct.load(b, (i,), (TILE,)))


def vectors(n=1024):
    rng = np.random.default_rng(1)
    return (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            np.zeros(n, np.float32))


@pytest.mark.parametrize("name", sorted(TUTORIAL_CASES))
def test_tutorial_kernels_through_tileiras(drv, monkeypatch, name):
    monkeypatch.setenv("TILEPY_GPU_COMPILER", "tileiras")
    kernel, grid, args, check = TUTORIAL_CASES[name]()
    ct.launch(None, grid, kernel, on_gpu(args))
    check()
    assert _loaded_by(drv) == {"tileiras"}
    launch = drv.launches[-1]
    info = next(iter(gpu_kernels(drv))).info
    assert launch.block == info.req_threads         # the cubin's block, not the C++ emitter's


def gpu_kernels(drv):
    from tilepy.launch import gpu
    return [v.kernel for k, v in gpu._KERNELS.items() if k[0] is drv]


def test_the_kernel_option_selects_tileiras(drv):
    a, b, c = vectors()
    ct.launch(None, (8,), vadd, on_gpu((a, b, c)) + (128,))
    np.testing.assert_array_equal(c, a + b)
    assert _loaded_by(drv) == {"tileiras"}
    ct.launch(None, (8,), vmul, on_gpu((a, b, c)) + (128,))     # no option: NVRTC
    np.testing.assert_array_equal(c, a * b)
    assert _loaded_by(drv) == {"tileiras", "nvrtc"}


def test_the_environment_selects_and_the_option_wins(drv, monkeypatch):
    a, b, c = vectors()
    args = on_gpu((a, b, c)) + (128,)
    ct.launch(None, (8,), vmul, args)
    assert _loaded_by(drv) == {"nvrtc"}
    monkeypatch.setenv("TILEPY_GPU_COMPILER", "tileiras")
    ct.launch(None, (8,), vmul, args)               # same arguments: not the NVRTC plan
    np.testing.assert_array_equal(c, a * b)
    assert _loaded_by(drv) == {"nvrtc", "tileiras"}
    loads = len(drv.calls_named("objectcode.get_kernel"))
    ct.launch(None, (8,), vmul, args)               # tileiras' plan, reused
    assert len(drv.calls_named("objectcode.get_kernel")) == loads
    monkeypatch.setenv("TILEPY_GPU_COMPILER", "nvrtc")
    ct.launch(None, (8,), vadd, args)               # the kernel's option wins
    np.testing.assert_array_equal(c, a + b)
    assert drv.launches[-1].block == gpu_info(drv, "vadd").req_threads


def gpu_info(drv, name):
    return next(k.info for k in gpu_kernels(drv) if k.name == name)


def test_bad_values_are_clear_errors(drv, monkeypatch):
    with pytest.raises(TileValueError, match=r"invalid value 'nvcc' for kernel option 'compiler' "
                                             r"\(expected one of nvrtc, tileiras\)"):
        ct.kernel(compiler="nvcc")(vmul.func)
    with pytest.raises(TileValueError, match="takes one value for every target"):
        ct.kernel(compiler=ct.ByTarget(sm_90="tileiras", default="nvrtc"))(vmul.func)
    monkeypatch.setenv("TILEPY_GPU_COMPILER", "ptxas")
    a, b, c = vectors()
    with pytest.raises(TileValueError, match=r"TILEPY_GPU_COMPILER='ptxas' is not valid: expected "
                                             r"one of nvrtc, tileiras"):
        ct.launch(None, (8,), vmul, on_gpu((a, b, c)) + (128,))


def test_a_cache_hit_does_not_run_tileiras_again(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path))
    a, b, c = vectors()
    with FakeDriver():
        ct.launch(None, (8,), vadd, on_gpu((a, b, c)) + (128,))

    def no_second_run(*args):
        raise AssertionError("tileiras ran again for the same kernel")
    monkeypatch.setattr(tileiras, "_run", no_second_run)
    c[:] = 0
    with FakeDriver() as drv:                       # a new driver: loaded again, from the cache
        ct.launch(None, (8,), vadd, on_gpu((a, b, c)) + (128,))
        assert drv.calls_named("objectcode.get_kernel")
    np.testing.assert_array_equal(c, a + b)


def test_an_old_driver_is_told_what_tileiras_needs(monkeypatch):
    a, b, c = vectors()
    with FakeDriver(version=12080):
        with pytest.raises(TileLaunchError, match=r"CUDA 13.0 or newer \(r580\+\); this driver "
                                                  r"supports CUDA 12.8"):
            ct.launch(None, (8,), vadd, on_gpu((a, b, c)) + (128,))


def test_tileiras_errors_in_a_launch_point_at_the_python_line():
    """fp8 e5m2 is refused by tileiras for sm_80: the launch's error carries the kernel's line
    (the C++ emitter is not involved on this path)."""
    @ct.kernel(compiler="tileiras")
    def to_fp8(x, y, T: ct.Constant[int]):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,))
        ct.store(y, index=(ct.bid(0),), tile=t.astype(ct.float8_e5m2).astype(ct.float32))  # MARKER

    x = np.zeros(64, np.float32)
    with FakeDriver(cc=(8, 0)):
        with pytest.raises(TileCompileError) as err:
            ct.launch(None, (1,), to_fp8, on_gpu((x, x.copy())) + (64,))
    marker = next(i for i, text in enumerate(pathlib.Path(__file__).read_text().splitlines(), 1)
                  if text.rstrip().endswith("# MARKER") and "float8_e5m2" in text)
    assert err.value.loc.file == __file__ and err.value.loc.line == marker


def test_the_fake_checks_sizes_against_tileiras_table(drv):
    """A packed value of the wrong size is refused by the cubin tileiras made (its own
    KPARAM table), as the driver would read the wrong bytes."""
    from fake_driver import FakeCUDAError
    from tilepy.launch import gpu
    a, b, c = vectors()
    ct.launch(None, (8,), vadd, on_gpu((a, b, c)) + (128,))
    kern = gpu_kernels(drv)[0]
    assert [p.size for p in kern.info.params] == [8, 4, 8, 4, 8, 4]
    cfg = drv.core.LaunchConfig(grid=(8, 1, 1), block=kern.info.req_threads)
    gpu.DeviceContext(drv.core.Device(0), drv).enter()
    with pytest.raises(FakeCUDAError, match="packed as 8 bytes"):
        drv.core.launch(drv.core.LEGACY_DEFAULT_STREAM, cfg, kern, a.ctypes.data, np.int64(1024),
                        b.ctypes.data, np.int32(1024), c.ctypes.data, np.int32(1024))
    with pytest.raises(FakeCUDAError, match="required block"):
        drv.core.launch(drv.core.LEGACY_DEFAULT_STREAM,
                        drv.core.LaunchConfig(grid=(8, 1, 1), block=(999, 1, 1)), kern,
                        a.ctypes.data, np.int32(1024), b.ctypes.data, np.int32(1024),
                        c.ctypes.data, np.int32(1024))
