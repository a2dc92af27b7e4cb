"""tilepy: a Python-embedded tile kernel language (cuTile-compatible) that compiles to Tile IR and
CUDA C++, runs on NVIDIA GPUs through NVRTC and on the CPU through the host C++ compiler.

`import tilepy` loads nothing but this file: every public name is imported on first use (PEP 562
module `__getattr__`), so a process that only loads a cached kernel does not pay for the
compiler. The names are the ones listed in `_LAZY` plus every builtin of `frontend/api.py`.
"""
from __future__ import annotations

import importlib

from .version import __version__  # noqa: F401

_ERRORS = ("TileError", "TileSyntaxError", "TileTypeError", "TileValueError",
           "TileUnsupportedFeatureError", "TileInternalError", "TileCompileError",
           "TileCompilerTimeoutError", "TileCompilerExecutionError",
           "TileLaunchError", "TileVerificationError", "TileRecursionError",
           "TileStaticEvalError", "TileStaticAssertionError", "StaticException")
_DTYPES = ("DType", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float16", "bfloat16", "float32", "float64", "tfloat32", "float8_e4m3fn",
           "float8_e5m2", "float8_e8m0fnu", "float8_e5m3fnu", "float4_e2m1fn")
# public name -> the module that defines it (builtins not listed here come from frontend.api)
_LAZY = {**{n: "tilepy.errors" for n in _ERRORS},
         **{n: "tilepy.types.dtype" for n in _DTYPES},
         "Kernel": "tilepy.api.kernel", "kernel": "tilepy.api.kernel",
         "function": "tilepy.api.kernel", "cpu_mode": "tilepy.launch.cpu",
         "compiler_timeout": "tilepy.launch.timeout"}
_SUBMODULES = ("tune", "compilation")   # `tilepy.tune.exhaustive_search` without an import
_API = "tilepy.frontend.api"


def _api_names() -> list[str]:
    return list(importlib.import_module(_API).__all__)


# `tilepy.launch` is the function, not the subpackage of the same name: the subpackage is
# imported here first (importing it later would bind the name to it), then the name is rebound.
from . import launch as _launch_package  # noqa: E402,F401


def launch(stream, grid, kernel, args, **kw):
    """Launch `kernel` over `grid` with `args` (a tuple) on the device of its array arguments
    (tilepy.launch.launcher.launch; this stand-in loads it on the first call and puts it in its
    place, so later `tilepy.launch(...)` calls go straight to it)."""
    from .errors import TileError, for_user
    from .api.launcher import launch as run
    globals()["launch"] = run
    try:
        return run(stream, grid, kernel, args, **kw)
    except TileError as e:
        for_user(e)
        raise           # adds no frame: the traceback ends at the user's line


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        if name == "__all__":
            value = sorted(set(_LAZY) | set(_api_names()))
            globals()["__all__"] = value
            return value
        if name.startswith("__"):
            raise AttributeError(f"module 'tilepy' has no attribute '{name}'")
        module = _API
    mod = importlib.import_module(module)
    if module == _API and name not in mod.__all__:
        from .errors import TileAttributeError, did_you_mean
        near = did_you_mean(name, set(_LAZY) | set(mod.__all__) | {"launch"})
        raise TileAttributeError(f"module 'tilepy' has no attribute '{name}'{near}")
    value = getattr(mod, name)
    globals()[name] = value            # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES) | set(_api_names()))
