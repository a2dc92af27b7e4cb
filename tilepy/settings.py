"""Every TILEPY_* environment variable, read in one place.

TILEPY_CACHE_DIR   where compiled kernels are kept (default $XDG_CACHE_HOME/tilepy/<version>,
                   ~/.cache/tilepy/<version> without XDG_CACHE_HOME); "off" disables the disk cache.
TILEPY_CACHE_SIZE  size cap of the disk cache: bytes, or a number with K/M/G (default 2G); the
                   least recently used entries are evicted past it. "0" or "unlimited": no cap.
TILEPY_CPU_WORKERS number of OS threads the CPU backend spreads blocks over (default: all cores).
TILEPY_CPU_MODE    how the CPU backend runs a block: "fast" (default; one thread per block) or
                   "faithful" (the block's real threads as fibers: barriers, warps, tensor-core
                   fragments); `tilepy.cpu_mode(...)` overrides it for a `with` block.
TILEPY_CXX         host C++ compiler for the CPU backend (default: g++, else c++, else clang++).
TILEPY_LOG         comma-separated topics logged to stderr: "recompile" (every recompilation of a
                   kernel says which argument property changed), or "all".
TILEPY_INTERPRET   "1" runs every tilepy.launch in the reference interpreter (tilepy.interpret).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_CACHE_SIZE = 2 << 30
_VARS = ("TILEPY_CACHE_DIR", "TILEPY_CACHE_SIZE", "TILEPY_CPU_WORKERS", "TILEPY_CXX",
         "TILEPY_CPU_MODE", "TILEPY_LOG", "XDG_CACHE_HOME", "HOME")


@dataclass(frozen=True)
class Settings:
    cache_dir: str | None        # None: the disk cache is off
    cpu_workers: int
    cxx: str | None
    cache_size: int | None = DEFAULT_CACHE_SIZE   # bytes; None: no cap
    cpu_mode: str = "fast"
    log: frozenset[str] = frozenset()
    cache_dir_is_default: bool = True   # not set by TILEPY_CACHE_DIR

    def logs(self, topic: str) -> bool:
        return topic in self.log or "all" in self.log


def _default_cache_dir() -> str:
    from . import __version__
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tilepy", __version__)


_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def parse_size(text: str | None) -> int | None:
    """'500M' -> bytes; '0'/'unlimited' -> None (no cap); unset or unreadable -> the default."""
    if text is None or not text.strip():
        return DEFAULT_CACHE_SIZE
    t = text.strip().upper()
    if t in ("0", "UNLIMITED", "NONE", "OFF"):
        return None
    num = t.rstrip("KMGIB")
    unit = t[len(num):]
    try:
        n = float(num) * _UNITS[unit]
    except (ValueError, KeyError):
        import warnings
        warnings.warn(f"TILEPY_CACHE_SIZE={text!r} is not a size (e.g. 500M, 2G); using the default",
                      stacklevel=3)
        return DEFAULT_CACHE_SIZE
    return int(n) if n > 0 else None


_memo: tuple[tuple, Settings] | None = None


def settings() -> Settings:
    """The current settings. The environment is read on every call (tests change it), but the
    parsed result is reused while the variables are unchanged: launches call this per call."""
    global _memo
    env = os.environ
    raw = tuple(env.get(k) for k in _VARS)
    memo = _memo
    if memo is not None and memo[0] == raw:
        return memo[1]
    s = _read(raw)
    _memo = (raw, s)
    return s


def _read(raw: tuple) -> Settings:
    cache, size, workers, cxx, mode, log = raw[:6]
    if cache is not None and cache.strip().lower() == "off":
        cache_dir = None
    else:
        cache_dir = cache or _default_cache_dir()
    try:
        n = int(workers) if workers else (os.cpu_count() or 1)
    except ValueError:
        n = os.cpu_count() or 1
    mode = (mode or "fast").strip().lower()
    log = frozenset(t.strip().lower() for t in (log or "").split(",") if t.strip())
    return Settings(cache_dir, max(1, n), cxx or None, parse_size(size), mode, log, not cache)


# ----------------------------------------------------------------------------- per launch
# A cached kernel's whole launch costs a few microseconds, and `os.environ.get` about one each
# (it encodes the key and decodes the value). The two variables every launch reads are looked
# up in os.environ's own table with keys encoded once (CPython keeps it in `_data`; os.environ
# updates it on every assignment, so nothing is stale), or through os.environ where that
# table is not there.
_ENV_DATA = getattr(os.environ, "_data", None)
_ENV_KEYS: dict = {}


def getenv_fast(name: str) -> str | None:
    if _ENV_DATA is None:
        return os.environ.get(name)
    key = _ENV_KEYS.get(name)
    if key is None:
        key = _ENV_KEYS[name] = os.environ.encodekey(name)
    v = _ENV_DATA.get(key)
    return None if v is None else os.environ.decodevalue(v)


def interpret_requested() -> bool:
    """TILEPY_INTERPRET asks for the reference interpreter (read apart from `settings()`)."""
    v = getenv_fast("TILEPY_INTERPRET")
    return v is not None and v.strip().lower() in ("1", "true", "yes", "on")
