"""tilepy.tune's disk cache (`exhaustive_search(..., cache=True)`): a search's result stored per
kernel (its source and options), device (GPU name and compute capability, or the CPU model and
CPU mode), configurations, grids and the arguments' dtypes, shapes and strides (hints are part
of each configuration's kernel); the same search later returns it without launching anything.
Off when the disk cache is off (TILEPY_CACHE_DIR=off)."""
from __future__ import annotations

import json

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


def device(args) -> str:
    """The device the arguments run on, as the cache names it."""
    from ._tune_utils import _gpu_infos
    gpu = _gpu_infos(args)
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


def key(candidates, args) -> str | None:
    """The search's key (None: not cacheable: a kernel that cannot be fingerprinted, or no
    disk cache)."""
    from ..frontend.identity import fingerprint
    from ..launch import cache
    kernels = [fingerprint(c.kernel) for c in candidates]
    if None in kernels or cache.cache_dir() is None:
        return None
    from ..version import __version__
    return cache.key_of(__version__, device(args), *kernels, *(repr(c.config) for c in candidates),
                        *(c.grid for c in candidates), *(_describe(a) for a in args))


def load(key, configs, result_type, measurement_type):
    """The stored result of search `key` over `configs`, or None."""
    from ..launch import cache
    hit = cache.get(_KIND, key) if key else None
    if hit is None:
        return None
    try:
        data = json.loads(hit.payload)
        ok = tuple(measurement_type(config=configs[i], mean_us=m, num_samples=n,
                                    error_margin_us=e) for i, m, n, e in data["successes"])
        failed = tuple((configs[i], _exception_type(t), msg) for i, t, msg in data["failures"])
        return result_type(best=ok[data["best"]], successes=ok, failures=failed)
    except (ValueError, KeyError, IndexError, TypeError):
        return None                    # an entry of another shape: a miss


def store(key, result, configs):
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
    from ._tune_utils import TileLaunchTimeoutError
    t = getattr(errors, name, None) or getattr(builtins, name, None) or \
        {"TileLaunchTimeoutError": TileLaunchTimeoutError}.get(name)
    return t if isinstance(t, type) and issubclass(t, BaseException) else Exception
