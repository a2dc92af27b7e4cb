"""`tilepy.tune` (this module, re-exported there): cuTile's tuning module (`cuda.tile.tune`) with its names and behavior.

`exhaustive_search(search_space, stream, grid_fn, kernel, args_fn, hints_fn)` launches the kernel
with every configuration of the space, times it on the device of its array arguments (CUDA
events on the stream for GPU arrays; the wall clock around each launch on the CPU backend, which
returns when the grid is done), keeps sampling each one until its mean is known to about 1% (or
0.5 us, or 1000 samples, or 5 s), and returns a `TuningResult` whose `best` has the lowest mean.

tilepy adds a disk cache (`cache=True`, under TILEPY_CACHE_DIR; off when the disk cache is off):
the result is stored per kernel (its source and options), device (GPU name and compute
capability, or the CPU model and CPU mode), configurations, grids, hints and the arguments'
dtypes, shapes and strides; the same search later returns it without launching anything.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

T = TypeVar("T")

__all__ = ["exhaustive_search", "TuningResult", "Measurement"]

_WARM_UP_REPEATS = 3
_BATCH_REPEATS = 5
_MIN_REPEATS = 5
_MAX_REPEATS = 1000
_MAX_MEASURE_TIME_US = 5_000_000


@dataclass(frozen=True, kw_only=True)
class Measurement(Generic[T]):
    """A configuration and its timing."""
    config: T
    mean_us: float              # mean time of one launch in microseconds
    num_samples: int            # number of launches timed
    error_margin_us: float      # half of the 95% confidence interval of the mean


@dataclass(frozen=True, kw_only=True)
class TuningResult(Generic[T]):
    """The measurement of every configuration that ran, and the failures of the others."""
    best: Measurement
    successes: Sequence[Measurement]
    failures: Sequence[tuple[T, type[BaseException], str]]    # (config, exception type, message)

    def summary(self, *, top_k=10, bottom_k=2) -> str:
        """The fastest `top_k` and slowest `bottom_k` configurations, then the failures."""
        ranked = sorted(self.successes, key=lambda m: m.mean_us)
        lines = [f"{len(self.successes)} succeeded, {len(self.failures)} failed"]
        width = max(len(str(m.config)) for m in ranked)
        hidden = range(top_k, max(top_k, len(ranked) - bottom_k))
        for i, m in enumerate(ranked):
            if i in hidden:
                if i == hidden.start:
                    lines.append(f"    ... {len(hidden)} more not shown")
                continue
            star = "*" if m == self.best else " "
            lines.append(f"{star} {str(m.config):<{width}}: {m.mean_us:.1f}±{m.error_margin_us:.1f} "
                         f"us ({m.num_samples} samples)")
        if self.failures:
            lines.append(f"  {len(self.failures)} failed:")
            for cfg, exc, msg in self.failures[:top_k]:
                lines.append(f"    {cfg}: {exc.__name__}: {msg.splitlines()[0][:60] if msg else ''}")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def exhaustive_search(search_space: Sequence[T], stream, grid_fn: Callable[[T], tuple[int, ...]],
                      kernel, args_fn: Callable[[T], tuple[Any, ...]],
                      hints_fn: Callable[[T], dict[str, Any]] | None = None, *,
                      quiet: bool = False, single_run_timeout_sec: float | None = None,
                      cache: bool = True) -> TuningResult[T]:
    """Time `kernel` with every configuration of `search_space` and return the result.

    grid_fn(cfg), args_fn(cfg) and hints_fn(cfg) give each configuration's grid, arguments and
    kernel options (`kernel.replace_hints(**hints)`); `kernel` may also be a function of the
    configuration returning the kernel. A configuration whose compile or launch raises is a
    failure. `single_run_timeout_sec`: a configuration whose first launch takes longer fails (a
    launch is not interrupted). `cache` (tilepy): reuse a result stored on disk for the same
    kernel, device, configurations and argument shapes.
    """
    configs = list(search_space)
    if not configs:
        raise ValueError("Search space is empty.")
    runs = [_Run.make(cfg, stream, grid_fn, kernel, args_fn, hints_fn) for cfg in configs]
    key = _cache_key(runs, args_fn(configs[0])) if cache else None
    result = _load(key, configs)
    if result is None:
        result = _search(runs, single_run_timeout_sec)
        _store(key, result, configs)
    if not quiet:
        print(result)
    return result


# ----------------------------------------------------------------------------- timing
@dataclass
class _Run:
    config: Any
    grid: tuple
    kernel: Any
    args_fn: Callable
    stream: Any
    samples: list

    @staticmethod
    def make(cfg, stream, grid_fn, kernel, args_fn, hints_fn):
        from .kernel import Kernel
        k = kernel if isinstance(kernel, Kernel) else kernel(cfg)
        if hints_fn is not None:
            k = k.replace_hints(**hints_fn(cfg))
        return _Run(cfg, tuple(grid_fn(cfg)), k, lambda: args_fn(cfg), stream, [])

    def time_once(self) -> float:
        return _timer(self.stream, self.args_fn())(self)

    def mean(self) -> float:
        return sum(self.samples) / len(self.samples)

    def margin(self) -> float:
        n = len(self.samples)
        if n < 2:
            return math.inf
        m = self.mean()
        var = sum((x - m) ** 2 for x in self.samples) / (n - 1)
        return 1.96 * math.sqrt(var / n)

    def converged(self) -> bool:
        n = len(self.samples)
        if n < _MIN_REPEATS:
            return False
        m, e = self.mean(), self.margin()
        return e <= 0.01 * m or e <= 0.5 or n >= _MAX_REPEATS or m * n > _MAX_MEASURE_TIME_US

    def measurement(self) -> Measurement:
        return Measurement(config=self.config, mean_us=self.mean(), num_samples=len(self.samples),
                           error_margin_us=self.margin())


def _search(runs: list[_Run], single_run_timeout_sec) -> TuningResult:
    ok, failures = [], []
    for r in runs:
        try:
            first = _wall_us(r)
            if single_run_timeout_sec is not None and first > single_run_timeout_sec * 1e6:
                raise TimeoutError(f"a launch took {first / 1e6:.3g} s, more than "
                                   f"single_run_timeout_sec={single_run_timeout_sec}")
            for _ in range(_WARM_UP_REPEATS - 1):
                r.time_once()
            while not r.converged():
                r.samples += [r.time_once() for _ in range(_BATCH_REPEATS)]
            ok.append(r.measurement())
        except Exception as e:
            failures.append((r.config, type(e), str(e)))
    if not ok:
        raise ValueError(f"No valid config found in search space: all {len(failures)} failed."
                         + "".join(f"\nConfig: {cfg}\n    {exc.__name__}: {_first_line(msg)}"
                                   for cfg, exc, msg in failures))
    return TuningResult(best=min(ok, key=lambda m: m.mean_us), successes=tuple(ok),
                        failures=tuple(failures))


def _first_line(msg: str) -> str:
    """A located error's first line names the problem (its source excerpt follows)."""
    return msg.strip().splitlines()[0] if msg.strip() else ""


def _launch(r: _Run, args):
    from .launcher import launch
    launch(r.stream, r.grid, r.kernel, args)


def _wall_us(r: _Run) -> float:
    args = r.args_fn()
    t0 = time.perf_counter()
    _launch(r, args)
    _sync(r, args)
    return (time.perf_counter() - t0) * 1e6


def _on_gpu(args) -> list:
    from ..host.intake import array_leaves, intake_arg
    return [i for a in args for _, i in array_leaves(intake_arg(a)) if i.device == "cuda"]


def _timer(stream, args):
    """How to time one launch with these arguments: events on their GPU, else the wall clock
    (the CPU backend's launch returns when the grid is done)."""
    gpu = _on_gpu(args)
    if not gpu:
        return lambda r: _timed_cpu(r, args)
    return lambda r: _timed_gpu(r, args, gpu)


def _timed_cpu(r: _Run, args) -> float:
    t0 = time.perf_counter()
    _launch(r, args)
    return (time.perf_counter() - t0) * 1e6


def _gpu_stream(r: _Run, infos):
    """(driver, the cuda.core Stream the launch goes to) for arguments on a GPU."""
    from ..host import driver as gpu_driver
    from ..launch.gpu import resolve_stream
    drv = gpu_driver.current()
    dev = drv.core.Device(infos[0].device_id or 0)
    dev.set_current()
    return drv, resolve_stream(r.stream, infos, dev, drv)


def _timed_gpu(r: _Run, args, infos) -> float:
    drv, stream = _gpu_stream(r, infos)
    return drv.elapsed_us(stream, lambda: _launch(r, args))


def _sync(r: _Run, args):
    gpu = _on_gpu(args)
    if gpu:
        _gpu_stream(r, gpu)[1].sync()


# ----------------------------------------------------------------------------- disk cache
_KIND = "tune"


def _describe(arg) -> str:
    from ..host.intake import ArrayInfo, intake_arg
    info = intake_arg(arg)
    if isinstance(info, ArrayInfo):
        return f"array({info.dtype.name},{info.shape},{info.strides},{info.device})"
    if isinstance(info, tuple):          # a list of arrays, a tuple
        items = ",".join(_describe(x) for x in arg)
        return f"({items})" if type(arg) is tuple else f"[{items}]"
    return f"{type(arg).__name__}:{arg!r}"


def _device(args) -> str:
    gpu = _on_gpu(args)
    if gpu:
        from ..host import driver as gpu_driver
        drv = gpu_driver.current()
        info = drv.device_info(drv.core.Device(gpu[0].device_id or 0))
        return f"cuda:{info['name']}:sm_{''.join(map(str, info['cc']))}"
    import platform

    from ..launch.cpu import current_mode
    return f"cpu:{platform.machine()}:{_cpu_model()}:{current_mode()}"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor()


def _cache_key(runs: list[_Run], args) -> str | None:
    from ..frontend.identity import fingerprint
    from ..launch import cache
    kernels = [fingerprint(r.kernel) for r in runs]
    if None in kernels or cache.cache_dir() is None:
        return None
    from ..version import __version__
    return cache.key_of(__version__, _device(args), *kernels, *(repr(r.config) for r in runs),
                        *(r.grid for r in runs), *(_describe(a) for a in args))


def _load(key, configs) -> TuningResult | None:
    from ..launch import cache
    hit = cache.get(_KIND, key) if key else None
    if hit is None:
        return None
    try:
        data = json.loads(hit.payload)
        ok = tuple(Measurement(config=configs[i], mean_us=m, num_samples=n, error_margin_us=e)
                   for i, m, n, e in data["successes"])
        failed = tuple((configs[i], _exception_type(t), msg) for i, t, msg in data["failures"])
        return TuningResult(best=ok[data["best"]], successes=ok, failures=failed)
    except (ValueError, KeyError, IndexError, TypeError):
        return None                    # an entry of another shape: a miss


def _store(key, result: TuningResult, configs):
    from ..launch import cache
    if key is None:
        return
    index = {id(c): i for i, c in enumerate(configs)}
    data = {"successes": [[index[id(m.config)], m.mean_us, m.num_samples, m.error_margin_us]
                          for m in result.successes],
            "failures": [[index[id(c)], t.__name__, msg] for c, t, msg in result.failures],
            "best": list(result.successes).index(result.best)}
    cache.put(_KIND, key, json.dumps(data).encode(), {"kind": _KIND})


def _exception_type(name: str) -> type:
    import builtins

    from .. import errors
    t = getattr(errors, name, None) or getattr(builtins, name, None)
    return t if isinstance(t, type) and issubclass(t, BaseException) else Exception
