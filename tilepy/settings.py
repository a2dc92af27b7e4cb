"""Every TILEPY_* environment variable, read and validated in one place (the table VARS).

One policy for all of them: unset or empty means the default; a value that is not one the
variable accepts raises TileValueError naming the variable, the value and what it accepts (at
the first launch or compile that reads it), never a silent fallback. The one exception is
TILEPY_CPU_WORKERS past MAX_CPU_WORKERS: a valid but useless count, clamped with a warning.
README.md ("Environment variables") has the same table for users.

CUDA_TILE_ENABLE_CRASH_DUMP is cuTile's name for TILEPY_CRASH_DUMP, read with the same rule.
TUTORIAL_FIGURES_DIR (not tilepy's: where the tutorials save their figures, tools/plotting.py)
is read here too, unvalidated (any folder).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable

DEFAULT_CACHE_SIZE = 2 << 30
MAX_CPU_WORKERS = 1024              # more OS threads than this only cost (and may fail to start)
CPU_MODES = ("fast", "faithful")
GPU_COMPILERS = ("nvrtc", "tileiras")    # what compiles a kernel for a GPU launch
LOG_TOPICS = ("recompile", "all")
_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Settings:
    cache_dir: str | None        # None: the disk cache is off
    cpu_workers: int
    cxx: str | None
    cache_size: int | None = DEFAULT_CACHE_SIZE   # bytes; None: no cap
    cpu_mode: str = "fast"
    log: frozenset[str] = frozenset()
    cache_dir_is_default: bool = True   # not set by TILEPY_CACHE_DIR
    interpret: bool = False
    gpu_compiler: str = "nvrtc"
    sm90a: bool = False          # TILEPY_SM90A: sm_90 devices get the sm_90a class
    cpu_pch: bool = True         # TILEPY_CPU_PCH: precompiled headers for CPU builds

    def logs(self, topic: str) -> bool:
        return topic in self.log or "all" in self.log


# ----------------------------------------------------------------------------- parsers
# Each takes the stripped text of a set variable and returns the value, or raises ValueError
# saying what the variable accepts.
def _default_cache_dir() -> str:
    from .version import __version__
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tilepy", __version__)


def _cache_dir(t: str) -> str | None:
    return None if t.lower() == "off" else t


_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
          "TIB": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([A-Z]*)")


def _size(t: str) -> int | None:
    u = t.upper()
    if u in ("0", "UNLIMITED", "NONE"):
        return None
    m = _SIZE.fullmatch(u)
    if m is None or m.group(2) not in _UNITS:
        raise ValueError("expected a size: bytes or a number with K/M/G/T (e.g. 500M, 2G), or "
                         "0 / unlimited for no cap")
    n = int(float(m.group(1)) * _UNITS[m.group(2)])
    if n <= 0:
        raise ValueError("a size cap must be at least one byte (0 or unlimited: no cap)")
    return n


def _workers(t: str) -> int:
    try:
        n = int(t)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError("expected a positive number of worker threads")
    if n > MAX_CPU_WORKERS:
        from .errors import warn_user
        warn_user(f"TILEPY_CPU_WORKERS={t} is more threads than useful; using {MAX_CPU_WORKERS}")
        n = MAX_CPU_WORKERS
    return n


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(t: str) -> str:
        if t.lower() not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return t.lower()
    return parse


def _cxx(t: str) -> str:
    import shutil
    if shutil.which(t) is None:
        raise ValueError("expected a C++ compiler: a command on PATH or the path of an executable")
    return t


def _log(t: str) -> frozenset[str]:
    topics = frozenset(p.strip().lower() for p in t.split(",") if p.strip())
    bad = sorted(topics - set(LOG_TOPICS))
    if bad:
        raise ValueError(f"expected comma-separated topics from {', '.join(LOG_TOPICS)} "
                         f"(unknown: {', '.join(map(repr, bad))})")
    return topics


def _flag(t: str) -> bool:
    if t.lower() not in _ON + _OFF:
        raise ValueError(f"expected 1 (or {', '.join(_ON[1:])}) to turn it on, 0 (or "
                         f"{', '.join(_OFF[1:])}) to turn it off")
    return t.lower() in _ON


@dataclass(frozen=True)
class Var:
    name: str
    field: str
    parse: Callable[[str], object]
    default: Callable[[], object]


VARS = (
    Var("TILEPY_CACHE_DIR", "cache_dir", _cache_dir, _default_cache_dir),
    Var("TILEPY_CACHE_SIZE", "cache_size", _size, lambda: DEFAULT_CACHE_SIZE),
    Var("TILEPY_CPU_WORKERS", "cpu_workers", _workers, lambda: os.cpu_count() or 1),
    Var("TILEPY_CPU_MODE", "cpu_mode", _choice(CPU_MODES), lambda: "fast"),
    Var("TILEPY_CXX", "cxx", _cxx, lambda: None),
    Var("TILEPY_LOG", "log", _log, frozenset),
    Var("TILEPY_INTERPRET", "interpret", _flag, lambda: False),
    Var("TILEPY_GPU_COMPILER", "gpu_compiler", _choice(GPU_COMPILERS), lambda: "nvrtc"),
    # sm_90 GPUs launched as sm_90a (warpgroup MMA): off until a GPU run has checked the class
    Var("TILEPY_SM90A", "sm90a", _flag, lambda: False),
    Var("TILEPY_CPU_PCH", "cpu_pch", _flag, lambda: True),
)
_READ = tuple(v.name for v in VARS) + ("XDG_CACHE_HOME", "HOME", "PATH")
# Read only when a device compile fails (api/device_compile.py), not by `settings()`, which
# launches call: TILEPY_CRASH_DUMP and cuTile's name for it, either on turning dumps on
CRASH_DUMP_VARS = (Var("TILEPY_CRASH_DUMP", "crash_dump", _flag, lambda: False),
                   Var("CUDA_TILE_ENABLE_CRASH_DUMP", "crash_dump", _flag, lambda: False))


def parse(var: Var, text: str | None):
    """The value of `var` set to `text` (None: unset)."""
    if text is None or not text.strip():
        return var.default()
    try:
        return var.parse(text.strip())
    except ValueError as e:
        from .errors import TileValueError
        raise TileValueError(f"{var.name}={text!r} is not valid: {e}") from None


def parse_size(text: str | None) -> int | None:
    """TILEPY_CACHE_SIZE's value for `text`: '500M' -> bytes; '0'/'unlimited' -> None (no cap)."""
    return parse(VARS[1], text)


_memo: tuple[tuple, Settings] | None = None


def settings() -> Settings:
    """The current settings. The environment is read on every call (tests change it), but the
    parsed result is reused while the variables are unchanged: launches call this per call."""
    global _memo
    raw = tuple(os.environ.get(k) for k in _READ)
    memo = _memo
    if memo is not None and memo[0] == raw:
        return memo[1]
    values = {v.field: parse(v, text) for v, text in zip(VARS, raw)}
    s = Settings(**values, cache_dir_is_default=not (raw[0] or "").strip())
    _memo = (raw, s)
    return s


# ----------------------------------------------------------------------------- per launch
# A cached kernel's whole launch costs a few microseconds, and `os.environ.get` about one each
# (it encodes the key and decodes the value). The variables a launch reads are looked up in
# os.environ's own table with keys encoded once, and their common values compared still
# encoded (CPython keeps the table in `_data`; os.environ updates it on every assignment, so a
# change is seen at the next launch), or through os.environ where that table is not there. A
# value other than the common spellings goes through `settings()`, which validates it.
_ENV_DATA = getattr(os.environ, "_data", None)
if _ENV_DATA is not None:
    _env, _key, _value = _ENV_DATA.get, os.environ.encodekey, os.environ.encodevalue
else:                                                    # pragma: no cover - not CPython's
    _env, _key, _value = os.environ.get, str, str
_INTERPRET, _CPU_MODE, _GPU_COMPILER = (_key(k) for k in ("TILEPY_INTERPRET", "TILEPY_CPU_MODE",
                                                          "TILEPY_GPU_COMPILER"))
_RAW_OFF, _RAW_ONE = _value("0"), _value("1")
_MODES = {_value(m): m for m in CPU_MODES}
_COMPILERS = {_value(c): c for c in GPU_COMPILERS}


def interpret_requested() -> bool:
    """TILEPY_INTERPRET asks for the reference interpreter."""
    v = _env(_INTERPRET)
    if v is None or v == _RAW_OFF:
        return False
    return v == _RAW_ONE or settings().interpret


def cpu_mode_requested() -> str:
    """TILEPY_CPU_MODE's mode."""
    v = _env(_CPU_MODE)
    if v is None:
        return "fast"
    mode = _MODES.get(v)
    return mode if mode is not None else settings().cpu_mode


def gpu_compiler_requested() -> str:
    """TILEPY_GPU_COMPILER's compiler for GPU launches of kernels that do not name one."""
    v = _env(_GPU_COMPILER)
    if v is None:
        return "nvrtc"
    compiler = _COMPILERS.get(v)
    return compiler if compiler is not None else settings().gpu_compiler


def crash_dumps_requested() -> bool:
    """A failed device compile writes a crash dump (CRASH_DUMP_VARS)."""
    return any(parse(v, os.environ.get(v.name)) for v in CRASH_DUMP_VARS)


def tutorial_figures_dir() -> str | None:
    """TUTORIAL_FIGURES_DIR: where the tutorials save their figures (None: the default)."""
    return os.environ.get("TUTORIAL_FIGURES_DIR") or None
