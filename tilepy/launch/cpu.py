"""The CPU backend: the emitted CUDA C++ compiled by the host C++ compiler and run with ctypes.

The kernel source is the very text NVRTC compiles; tilepy/cpu_shim.h maps CUDA's keywords and
built-ins to host C++. A small host entry point, appended here, unpacks the launch parameters
(an array of pointers to argument values, like cuLaunchKernel's) and runs every block. Built
libraries are cached on disk by content (source, compiler, flags).
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
import subprocess
import tempfile

from ..cuda_c import INCLUDE_DIR
from ..errors import TileCompileError, TileLaunchError
from ..settings import settings
from . import cache

ENTRY = "tp_cpu_launch"


@functools.lru_cache(maxsize=None)
def host_compiler() -> str:
    cxx = settings().cxx
    for c in ([cxx] if cxx else []) + ["g++", "c++", "clang++"]:
        path = shutil.which(c)
        if path:
            return path
    raise TileCompileError("no host C++ compiler found for the CPU backend (install g++ or set "
                           "TILEPY_CXX)")


@functools.lru_cache(maxsize=None)
def compiler_id(cxx: str) -> str:
    from .toolchain import compiler_version
    return compiler_version(cxx)


def flags() -> list[str]:
    f = ["-O2", "-std=c++17", "-shared", "-fPIC", "-pthread", "-DTP_NT=1", f"-I{INCLUDE_DIR}",
         "-w"]
    if platform.machine() in ("x86_64", "AMD64"):
        f.append("-mf16c")             # hardware f16 conversions
    return f


def host_entry(emitted) -> str:
    """C++ that calls the kernel for every block: params[i] points at the i-th argument."""
    args = ", ".join(f"*({t}*)params[{i}]" for i, (t, _) in enumerate(emitted.params))
    return (f'\nextern "C" int {ENTRY}(void** params, unsigned gx, unsigned gy, unsigned gz, '
            f"int workers) {{\n"
            f"  return tp::cpu::launch(dim3(gx, gy, gz), workers, [&] {{ {emitted.name}({args}); }});\n"
            f"}}\n")


_LOADED: dict[str, ctypes.CDLL] = {}


def build(emitted, source: str) -> ctypes.CDLL:
    """Compile (or find in the cache) and load the CPU library of one kernel."""
    full = source + host_entry(emitted)
    cxx = host_compiler()
    fl = flags()
    from .. import __version__
    key = cache.key_of("cpu", __version__, compiler_id(cxx), fl, _headers(), full)
    hit = _LOADED.get(key)
    if hit is not None:
        return hit
    lib = None
    entry = cache.get("cpu", key, ".so")
    if entry is not None and entry.payload[:4] == b"\x7fELF":
        lib = _load(entry.path)
    if lib is None:
        data = _compile(cxx, fl, full, emitted.name)
        path = cache.put("cpu", key, data, {"kind": "cpu", "name": emitted.name,
                                            "compiler": compiler_id(cxx), "tilepy": __version__},
                         ".so")
        if path is None:                    # no disk cache: load a scratch copy, then delete it
            path = _scratch_file(data)
            lib = _load(path)
            os.unlink(path)
        else:
            lib = _load(path)
        if lib is None:
            raise TileCompileError(f"the CPU library of kernel '{emitted.name}' does not load")
    fn = getattr(lib, ENTRY)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                   ctypes.c_int]
    _LOADED[key] = lib
    return lib


@functools.lru_cache(maxsize=None)
def _headers() -> tuple[str, ...]:
    """Every tilepy header (the shim and the runtime include each other's neighbours)."""
    d = os.path.join(INCLUDE_DIR, "tilepy")
    return tuple(f"{h}\n" + open(os.path.join(d, h)).read() for h in sorted(os.listdir(d))
                 if h.endswith(".h"))


def _load(path: str) -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


def _scratch_file(data: bytes) -> str:
    fd, path = tempfile.mkstemp(suffix=".so", prefix="tilepy-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _compile(cxx: str, fl: list[str], source: str, name: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="tilepy-build-") as d:
        src = os.path.join(d, f"{name}.cpp")
        out = os.path.join(d, f"{name}.so")
        with open(src, "w") as f:
            f.write(source)
        proc = subprocess.run([cxx, *fl, src, "-o", out], capture_output=True, text=True)
        if proc.returncode != 0:
            from .diagnostics import compile_error
            raise compile_error(f"the host C++ compiler could not build kernel '{name}' for the "
                                f"CPU backend", proc.stderr)
        with open(out, "rb") as f:
            return f.read()


def run(lib: ctypes.CDLL, grid: tuple[int, int, int], values: list, workers: int | None = None):
    """Launch on the CPU. `values` are ctypes scalars, one per kernel parameter."""
    ptrs = (ctypes.c_void_p * max(1, len(values)))(
        *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    rc = getattr(lib, ENTRY)(ptrs, grid[0], grid[1], grid[2], workers or settings().cpu_workers)
    if rc != 0:
        raise TileLaunchError(f"the CPU launch failed with code {rc}")
