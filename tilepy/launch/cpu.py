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
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except OSError:
        return cxx


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
    headers = [open(os.path.join(INCLUDE_DIR, "tilepy", h)).read()
               for h in ("runtime.h", "cpu_shim.h")]
    key = cache.key_of("cpu", compiler_id(cxx), fl, headers, full)
    hit = _LOADED.get(key)
    if hit is not None:
        return hit
    path = cache.cache_path("cpu", key, ".so")
    if path is None or not _valid_library(path):
        data = _compile(cxx, fl, full, emitted.name)
        if path is None:
            path = _scratch_file(data)
        else:
            cache.write_atomic(path, data)
    lib = ctypes.CDLL(path)
    fn = getattr(lib, ENTRY)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                   ctypes.c_int]
    _LOADED[key] = lib
    return lib


def _valid_library(path: str) -> bool:
    data = cache.read(path)
    if data is None or data[:4] != b"\x7fELF":
        return False
    try:
        ctypes.CDLL(path)
        return True
    except OSError:
        return False


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
            from .nvrtc import _first_error_loc
            log = proc.stderr
            raise TileCompileError(f"the host C++ compiler could not build kernel '{name}' for the "
                                   f"CPU backend", _first_error_loc(_gcc_to_nvrtc(log)), log=log)
        with open(out, "rb") as f:
            return f.read()


def _gcc_to_nvrtc(log: str) -> str:
    """g++ reports `file.py:12:5: error:`; reuse the NVRTC locator's `file.py(12): error`."""
    import re
    return re.sub(r"^(.+?\.py):(\d+):(?:\d+:)? (?:fatal )?error", r"\1(\2): error", log, flags=re.M)


def run(lib: ctypes.CDLL, grid: tuple[int, int, int], values: list, workers: int | None = None):
    """Launch on the CPU. `values` are ctypes scalars, one per kernel parameter."""
    ptrs = (ctypes.c_void_p * max(1, len(values)))(
        *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    rc = getattr(lib, ENTRY)(ptrs, grid[0], grid[1], grid[2], workers or settings().cpu_workers)
    if rc != 0:
        raise TileLaunchError(f"the CPU launch failed with code {rc}")
    status = getattr(lib, "tp_assert_status", None)      # tilepy.assert_ failures (runtime.h)
    if status is not None:
        status.restype, status.argtypes = ctypes.c_int, [ctypes.c_int]
        failed = status(1)
        if failed:
            raise TileLaunchError(f"{failed} tile assertion(s) failed in the kernel (the messages "
                                  f"are on stderr)")
