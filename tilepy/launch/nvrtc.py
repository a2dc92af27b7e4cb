"""NVRTC: emitted CUDA C++ -> cubin, without needing a GPU or a driver.

tilepy's runtime header is passed to NVRTC from memory; CUDA's own headers (cuda_fp16.h, ...)
come from the nvidia-cuda-runtime wheel, found with cuda.pathfinder. The NVRTC log (warnings and
the `ptxas -v` resource report) is kept with the cubin; errors raise TileCompileError with the
log, located at the user's line through the #line directives in the source.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from ..cuda_c import INCLUDE_DIR
from ..errors import Loc, TileCompileError
from . import cache

HEADERS = ("tilepy/runtime.h", "tilepy/warp.h", "tilepy/layout.h", "tilepy/layout_ops.h",
           "tilepy/tensorcore.h")


@dataclass
class Cubin:
    arch: str
    data: bytes
    log: str

    def resource_usage(self) -> dict:
        """Registers, spill bytes and shared memory from the ptxas report in the log."""
        out = {}
        m = re.search(r"Used (\d+) registers", self.log)
        if m:
            out["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", self.log)
        if m:
            out["spill_stores"], out["spill_loads"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"(\d+) bytes smem", self.log)
        out["smem"] = int(m.group(1)) if m else 0
        return out


@functools.lru_cache(maxsize=None)
def _headers() -> dict[str, str]:
    out = {}
    for name in HEADERS:
        with open(os.path.join(INCLUDE_DIR, name)) as f:
            out[name] = f.read()
    return out


@functools.lru_cache(maxsize=None)
def cuda_include_dir() -> str:
    import cuda.pathfinder
    found = cuda.pathfinder.locate_nvidia_header_directory("cudart")
    if found is None:
        raise TileCompileError("cannot find CUDA's headers (cuda_fp16.h): install the "
                               "nvidia-cuda-runtime wheel")
    return found.abs_path


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc
    _, major, minor = nvrtc.nvrtcVersion()
    return major, minor


def _check(res, what, prog=None):
    from cuda.bindings import nvrtc
    if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        msg = nvrtc.nvrtcGetErrorString(res)[1].decode()
        raise TileCompileError(f"NVRTC {what} failed: {msg}", log=_log(prog) if prog else "")


def _log(prog) -> str:
    from cuda.bindings import nvrtc
    err, n = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or n <= 1:
        return ""
    buf = bytearray(n)                       # never b" " * n: NVRTC writes into the buffer
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0").decode(errors="replace")


def options(arch: str) -> list[bytes]:
    return [f"-arch={arch}".encode(), b"--std=c++17", f"--include-path={cuda_include_dir()}".encode(),
            b"-Xptxas=-v", b"--generate-line-info", b"-default-device"]


def compile_cubin(source: str, arch: str = "sm_80", name: str = "kernel") -> Cubin:
    """Compile to a cubin for `arch` (e.g. "sm_80", "sm_90"); cached on disk by content."""
    key = cache.key_of("cubin", nvrtc_version(), arch, options(arch), _headers(), source)
    path = cache.cache_path("cubin", key, ".cubin")
    data = cache.read(path)
    log = cache.read(path + ".log") if path else None
    if data is not None and data[:4] == b"\x7fELF" and log is not None:
        return Cubin(arch, data, log.decode())
    cubin = _compile(source, arch, name)
    if path is not None:
        cache.write_atomic(path + ".log", cubin.log.encode())
        cache.write_atomic(path, cubin.data)
    return cubin


def _compile(source: str, arch: str, name: str) -> Cubin:
    from cuda.bindings import nvrtc
    hdrs = _headers()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), len(hdrs),
                                         [v.encode() for v in hdrs.values()],
                                         [k.encode() for k in hdrs])
    _check(err, "program creation")
    try:
        opts = options(arch)
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = _log(prog)
            raise TileCompileError(f"NVRTC could not compile kernel '{name}' for {arch}",
                                   _first_error_loc(log), log=log)
        log = _log(prog)
        err, n = nvrtc.nvrtcGetCUBINSize(prog)
        _check(err, "cubin size", prog)
        buf = bytearray(n)
        (err,) = nvrtc.nvrtcGetCUBIN(prog, buf)
        _check(err, "cubin", prog)
        return Cubin(arch, bytes(buf), log)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _first_error_loc(log: str) -> Loc | None:
    """The user's line of the first error, from `file.py(12): error: ...` (via #line)."""
    m = re.search(r'^(.+?\.py)\((\d+)\): (?:catastrophic )?error', log, re.M)
    if not m:
        return None
    file, line = m.group(1), int(m.group(2))
    try:
        import linecache
        src = linecache.getline(file, line) or None
    except Exception:
        src = None
    return Loc(file, line, 0, source_line=src)
