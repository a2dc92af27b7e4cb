"""The NVRTC C API through ctypes: the dozen functions tilepy calls.

Importing cuda.bindings.nvrtc costs 60-130 ms on these machines, more than compiling a small
kernel, and a cold compile has a 0.3 s budget; NVRTC's C API is small and stable, so tilepy
calls it directly. The library is the one toolchain.py picks: the NVRTC wheel of
cuda-bindings' CUDA major version (or whatever cuda.pathfinder finds when there is no wheel).
ctypes releases the GIL during a call, so threads can compile in parallel.
"""
from __future__ import annotations

import ctypes
import functools
import os

from ..errors import TileCompileError

_c = ctypes
_PROG = _c.c_void_p
_STRS = _c.POINTER(_c.c_char_p)
_SIGNATURES = {
    "nvrtcVersion": (_c.POINTER(_c.c_int), _c.POINTER(_c.c_int)),
    "nvrtcGetNumSupportedArchs": (_c.POINTER(_c.c_int),),
    "nvrtcGetSupportedArchs": (_c.POINTER(_c.c_int),),
    "nvrtcCreateProgram": (_c.POINTER(_PROG), _c.c_char_p, _c.c_char_p, _c.c_int, _STRS, _STRS),
    "nvrtcDestroyProgram": (_c.POINTER(_PROG),),
    "nvrtcCompileProgram": (_PROG, _c.c_int, _STRS),
    "nvrtcGetProgramLogSize": (_PROG, _c.POINTER(_c.c_size_t)),
    "nvrtcGetProgramLog": (_PROG, _c.c_char_p),
    "nvrtcGetCUBINSize": (_PROG, _c.POINTER(_c.c_size_t)),
    "nvrtcGetCUBIN": (_PROG, _c.c_char_p),
    "nvrtcGetPTXSize": (_PROG, _c.POINTER(_c.c_size_t)),
    "nvrtcGetPTX": (_PROG, _c.c_char_p),
}
SUCCESS, COMPILATION_FAILED = 0, 6


class NVRTC:
    """One loaded libnvrtc."""

    def __init__(self, path: str):
        self.path = path
        lib = ctypes.CDLL(path)
        for name, args in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = list(args)
            fn.restype = ctypes.c_int
        lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        self.lib = lib
        self.builtins = self._load_builtins()

    def _load_builtins(self) -> ctypes.CDLL | None:
        """NVRTC opens libnvrtc-builtins.so.MAJOR.MINOR by name at its first compile. The 13.0
        wheel's libnvrtc has no RPATH $ORIGIN (13.5's has), so unless something else had loaded
        the builtins (cuda.pathfinder does, for that wheel) every compile failed with
        NVRTC_ERROR_BUILTIN_OPERATION_FAILURE. The sibling loaded here is the one that name
        finds. None when there is no sibling (a system NVRTC: its own search applies)."""
        major, minor = self.version()
        sibling = os.path.join(os.path.dirname(os.path.realpath(self.path)),
                               f"libnvrtc-builtins.so.{major}.{minor}")
        return ctypes.CDLL(sibling) if os.path.isfile(sibling) else None

    def check(self, res: int, what: str, log: str = ""):
        if res != SUCCESS:
            msg = (self.lib.nvrtcGetErrorString(res) or b"unknown error").decode()
            raise TileCompileError(f"NVRTC {what} failed: {msg}", log=log)

    def version(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "version")
        return major.value, minor.value

    def supported_archs(self) -> tuple[int, ...]:
        n = ctypes.c_int()
        self.check(self.lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "arch count")
        archs = (ctypes.c_int * n.value)()
        self.check(self.lib.nvrtcGetSupportedArchs(archs), "arch list")
        return tuple(archs)

    def compile(self, source: str, name: str, headers: dict[str, str], options: list[str],
                kind: str) -> tuple[bool, bytes, str]:
        """(ok, binary, log): a cubin or PTX (`kind`); on a compile error ok is False and the
        log says why."""
        prog = _PROG()
        strs = lambda xs: (ctypes.c_char_p * max(1, len(xs)))(*[x.encode() for x in xs])  # noqa: E731
        self.check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(),
                                               len(headers), strs(list(headers.values())),
                                               strs(list(headers))), "program creation")
        try:
            res = self.lib.nvrtcCompileProgram(prog, len(options), strs(options))
            log = self._get(prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "log")
            log = log.rstrip(b"\0").decode(errors="replace")
            if res == COMPILATION_FAILED:
                return False, b"", log
            self.check(res, "compilation", log)
            size_fn, get_fn = (("nvrtcGetCUBINSize", "nvrtcGetCUBIN") if kind == "cubin"
                               else ("nvrtcGetPTXSize", "nvrtcGetPTX"))
            data = self._get(prog, size_fn, get_fn, kind)
            return True, (data.rstrip(b"\0") if kind == "ptx" else data), log
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def _get(self, prog, size_fn: str, get_fn: str, what: str) -> bytes:
        n = ctypes.c_size_t()
        self.check(getattr(self.lib, size_fn)(prog, ctypes.byref(n)), f"{what} size")
        buf = ctypes.create_string_buffer(n.value)
        if n.value:
            self.check(getattr(self.lib, get_fn)(prog, buf), what)
        return buf.raw


@functools.lru_cache(maxsize=None)
def load(path: str) -> NVRTC:
    try:
        return NVRTC(path)
    except (OSError, AttributeError) as e:
        raise TileCompileError(f"cannot load NVRTC from {path}: {e}") from None
