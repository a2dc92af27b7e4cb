"""tilepy.tune (cuTile's tuning module) and tilepy.compiler_timeout."""
import numpy as np
import pytest

import tilepy as ct
import tilepy.tune as tune
from tilepy.tune import _tune as tune_impl, _tune_utils   # cuTile's layout: the seams patched below
from cutile_kernels import tuned
from tilepy.errors import TileCompilerExecutionError, TileCompilerTimeoutError


@pytest.fixture(autouse=True)
def few_samples(monkeypatch):
    """CPU timings on a loaded machine rarely reach 1% in 1000 samples: keep the tests short."""
    monkeypatch.setattr(tune_impl, "_MAX_REPEATS", 20)


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def cache_dir(module_cache, monkeypatch):
    """One disk cache for this file's tests: each kernel compiles once."""
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(module_cache))
    return module_cache


def _inputs():
    X = np.arange(1000, dtype=np.float32)
    return X, np.zeros_like(X)


def test_cutile_style_module_imports_and_tunes(cache_dir, capsys):
    X, Y = _inputs()
    result = tuned.tune_scaled_copy(X, Y, 2.0)
    assert isinstance(result, tune.TuningResult)
    assert len(result.successes) == 6 and not result.failures
    assert result.best in result.successes
    assert result.best.mean_us == min(m.mean_us for m in result.successes)
    assert all(5 <= m.num_samples <= 20 and m.mean_us > 0 for m in result.successes)
    assert "6 succeeded, 0 failed" in capsys.readouterr().out
    cfg = result.best.config                       # the config launches and gives the right result
    ct.launch(None, (ct.cdiv(1000, cfg.TILE),), tuned.scaled_copy.replace_hints(
        occupancy=cfg.occupancy), (X, Y, 2.0, cfg.TILE))
    np.testing.assert_array_equal(Y, 2 * X)


def test_failing_configs_are_reported_not_raised(cache_dir):
    X, Y = _inputs()
    result = tuned.tune_scaled_copy(X, Y, 2.0, tiles=(32, 48), quiet=True)   # 48: not a power of 2
    assert {m.config.TILE for m in result.successes} == {32}
    assert len(result.failures) == 2
    cfg, exc, msg = result.failures[0]
    assert cfg.TILE == 48 and issubclass(exc, ct.TileTypeError) and "power of two" in msg
    assert "2 failed" in result.summary()


def test_no_valid_config_raises(cache_dir):
    X, Y = _inputs()
    with pytest.raises(ValueError, match="No valid config") as e:
        tuned.tune_scaled_copy(X, Y, 2.0, tiles=(48, 24), quiet=True)
    assert "all 4 failed" in str(e.value)   # every config's failure, not the first one's
    for tile in (48, 24):
        assert f"namespace(TILE={tile}, occupancy=2)\n    TileTypeError: Invalid argument " \
            f"\"shape\" of load(): Dimension #0 of shape ({tile},) is not a power of two" \
            in str(e.value), str(e.value)
    with pytest.raises(ValueError, match="empty"):
        tune.exhaustive_search([], None, None, tuned.scaled_copy, None)


def _counting(monkeypatch):
    """Replace the search's timed launch by a count of its calls (1 us each)."""
    calls = []
    monkeypatch.setattr(tune_impl, "_benchmark", lambda *a: calls.append(a) or 1.0)
    return calls


def test_result_is_cached_on_disk_per_shapes_when_asked(cache_dir, monkeypatch):
    X, Y = _inputs()
    first = tuned.tune_scaled_copy(X, Y, 2.0, quiet=True, cache=True)
    launches = _counting(monkeypatch)
    again = tuned.tune_scaled_copy(X, Y, 2.0, quiet=True, cache=True)
    assert launches == []                          # from the disk cache: nothing launched
    assert again.best.config.TILE == first.best.config.TILE
    assert [m.mean_us for m in again.successes] == [m.mean_us for m in first.successes]
    X2, Y2 = np.arange(999, dtype=np.float32), np.zeros(999, np.float32)
    tuned.tune_scaled_copy(X2, Y2, 2.0, quiet=True, cache=True)    # another shape: timed again
    assert launches
    launches.clear()
    tuned.tune_scaled_copy(X, Y, 2.0, quiet=True)   # cuTile's default: every search launches
    assert launches


def test_cache_off_times_every_call(monkeypatch):
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    X, Y = _inputs()
    tuned.tune_scaled_copy(X, Y, 2.0, tiles=(64,), quiet=True, cache=True)
    launches = _counting(monkeypatch)
    tuned.tune_scaled_copy(X, Y, 2.0, tiles=(64,), quiet=True, cache=True)
    assert launches


def test_search_phases_stop_configs_that_cannot_win(monkeypatch):
    """Phase 0 gives every config its warm-ups and a batch; phase 1 converges the fastest until
    _TOP_K have; phase 2 times the others only while they could still beat those."""
    times = {1: [1.0], 2: [2.0], 3: [1.2, 1.2, 30.0, 30.0, 30.0, 30.0], 4: [50.0]}
    seen = {c: 0 for c in times}

    def fake(stream, grid, kernel, args):
        cfg = args[3]
        seen[cfg] += 1
        return times[cfg][min(seen[cfg], len(times[cfg])) - 1]
    for name, value in (("_TOP_K", 2), ("_WARM_UP_REPEATS", 1), ("_MIN_REPEATS", 2),
                        ("_BATCH_REPEATS", 1), ("_benchmark", fake)):
        monkeypatch.setattr(tune_impl, name, value)
    X, Y = _inputs()
    result = tune.exhaustive_search(list(times), None, lambda c: (1,), tuned.scaled_copy,
                                    lambda c: (X, Y, 1.0, c), quiet=True)
    by = {m.config: m for m in result.successes}
    assert result.best.config == 1 and set(by) == set(times) and not result.failures
    assert by[1].num_samples == by[2].num_samples == 2          # converged first (phase 1)
    assert by[3].num_samples > 2 and by[3].mean_us > 2.0         # timed until it could not win
    assert by[4].num_samples == 1                                # one sample: far too slow
    assert seen[4] == 2                                          # its warm-up and that sample


def test_timeout_runs_the_first_launch_in_a_worker_and_stops_it(cache_dir):
    """single_run_timeout_sec: the first launch of each config runs in a worker process (a fork
    on the CPU backend), stopped at the limit; the others' writes reach the caller's arrays."""
    outs = {c: np.zeros(16, np.int32) for c in (0, 1)}
    result = tune.exhaustive_search(
        [0, 1], None, lambda c: (1,), tuned.spin_unless_zero,
        lambda c: (np.full(16, c, np.int32), outs[c]), quiet=True, single_run_timeout_sec=0.5)
    [(cfg, exc, msg)] = result.failures
    assert (cfg, exc) == (1, _tune_utils.TileLaunchTimeoutError)
    assert "exceeded timeout 0.5 sec" in msg and "spin_unless_zero" in msg
    assert [m.config for m in result.successes] == [0]
    np.testing.assert_array_equal(outs[0], np.ones(16))      # the worker's write, copied back
    np.testing.assert_array_equal(outs[1], np.zeros(16))     # stopped: nothing copied back


def test_worker_writes_reach_lists_of_arrays_and_errors_keep_their_type(cache_dir, monkeypatch):
    X, Y = _inputs()
    xs = [np.full(16, k, np.float32) for k in (1, 2, 3)]
    monkeypatch.setattr(_tune_utils, "_benchmark", lambda *a: pytest.fail("ran in this process"))
    us, wall = _tune_utils.benchmark_with_timeout(None, (1,), tuned.sum_into_first, (xs,), 5.0)
    assert us > 0 and wall is not None
    np.testing.assert_array_equal(np.stack(xs), [[6] * 16, [2] * 16, [3] * 16])
    monkeypatch.setattr(_tune_utils, "_benchmark_with_ipc_payload",
                        lambda p: (_ for _ in ()).throw(ct.TileLaunchError("device fault")))
    with pytest.raises(ct.TileLaunchError, match="device fault"):
        _tune_utils.benchmark_with_timeout(None, (4,), tuned.scaled_copy, (X, Y, 3.0, 256), 5.0)
    import os
    import signal
    monkeypatch.setattr(_tune_utils, "_benchmark_with_ipc_payload",
                        lambda p: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(RuntimeError, match=r"exited without its result \(killed by signal 9 "
                                           r"\(SIGKILL\)\)"):
        _tune_utils.benchmark_with_timeout(None, (4,), tuned.scaled_copy, (X, Y, 3.0, 256), 5.0)


def test_unexportable_launch_runs_here_and_is_judged_after(monkeypatch):
    """GPU arrays are not exported to a worker (tilepy has no IPC export of device memory):
    the launch runs here and a launch past the limit is reported when it returns."""
    monkeypatch.setattr(_tune_utils, "_export_ipc_benchmark_payload", lambda *a: None)
    monkeypatch.setattr(_tune_utils, "_benchmark", lambda *a: 2.5e6)
    assert _tune_utils.benchmark_with_timeout(None, (1,), None, (), 5.0) == (2.5e6, None)
    with pytest.raises(_tune_utils.TileLaunchTimeoutError, match="it took 2.5 s"):
        _tune_utils.benchmark_with_timeout(None, (1,), None, (), 1.0)


def test_compiler_errors_take_cutiles_arguments():
    e = TileCompilerExecutionError(1, "error: bad op", "-O3", "13.3")
    assert (e.compiler_flags, e.compiler_version) == ("-O3", "13.3") and "bad op" in str(e)
    t = TileCompilerTimeoutError("too slow", "-O3", None)
    assert str(t) == "too slow" and t.compiler_flags == "-O3"
    assert TileCompilerExecutionError("msg", None, log="L").log == "L"      # tilepy's own form


def test_tune_is_reachable_as_an_attribute():
    assert ct.tune.exhaustive_search is tune.exhaustive_search
    assert {"exhaustive_search", "TuningResult", "Measurement"} <= set(tune.__all__)


def test_compiler_timeout_leaves_the_host_compile_alone(monkeypatch, tmp_path):
    """The limit bounds GPU compilers, as cuTile's (launch/timeout.py): a host compile that runs
    past it ends as it ends (here a compiler that fails after 1 s: a compile error)."""
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    slow = tmp_path / "slowcxx"
    slow.write_text('#!/bin/sh\n[ "$1" = --version ] && exec g++ --version\nsleep 1; exit 1\n')
    slow.chmod(0o755)
    from tilepy.launch import cpu
    monkeypatch.setattr(cpu, "host_compiler", lambda: str(slow))
    X, Y = _inputs()
    k = ct.kernel(tuned.scaled_copy.func)
    with ct.compiler_timeout(0.3), pytest.raises(ct.TileCompileError) as e:
        ct.launch(None, (2,), k, (X, Y, 2.0, 512))     # a tile size no other test compiles
    assert not isinstance(e.value, TileCompilerTimeoutError), e.value
    assert isinstance(e.value, ct.TileCompilerExecutionError)   # the compiler ran and failed


def test_compiler_timeout_bounds_tileiras(monkeypatch, tmp_path):
    slow = tmp_path / "slowtileiras"
    slow.write_text("#!/bin/sh\nexec sleep 5\n")
    slow.chmod(0o755)
    from tilepy.launch import tileiras
    monkeypatch.setattr(tileiras, "_tool", lambda: str(slow))
    with ct.compiler_timeout(0.2), pytest.raises(TileCompilerTimeoutError, match="tileiras"):
        tileiras._run(b"", "sm_90", "k", 3)


def test_compiler_timeout_bounds_nvrtc(monkeypatch):
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    import time

    from tilepy.launch import nvrtc
    monkeypatch.setattr(nvrtc, "_compile", lambda *a: time.sleep(3))
    with ct.compiler_timeout(0.2), pytest.raises(TileCompilerTimeoutError, match="NVRTC"):
        nvrtc.compile_cubin("__global__ void k() {}", "sm_80", "k")


@pytest.mark.parametrize("bad", [0, -1, "10", True])
def test_compiler_timeout_rejects_bad_values(bad):
    with pytest.raises(ct.TileValueError):
        with ct.compiler_timeout(bad):
            pass


def test_gpu_arrays_are_timed_with_events_on_their_stream(cache_dir):
    """CUDA arrays: each sample is the driver's event timing on the launch stream (the fake
    driver runs the launch on the CPU), and the result is cached under the GPU's name."""
    from fake_driver import FakeDriver, TorchLikeStream, cuda_array
    X, Y = _inputs()
    with FakeDriver() as drv:
        gx, gy = cuda_array(X), cuda_array(Y)
        result = tune.exhaustive_search(
            [16, 64], TorchLikeStream(5), lambda t: (ct.cdiv(1000, t),), tuned.scaled_copy,
            lambda t: (gx, gy, 3.0, t), quiet=True)
        timed = drv.calls_named("elapsed_us")
        assert len(timed) == sum(m.num_samples + 3 for m in result.successes)   # + warm-ups
        assert {d for _, d in timed} == {5}                       # the launch stream's handle
        np.testing.assert_array_equal(Y, 3 * X)
        from tilepy.tune import _cache
        assert _cache.device((gx,)).startswith("cuda:Fake GPU 0")
