"""Every TILEPY_* environment variable, read in one place.

TILEPY_CACHE_DIR   where compiled kernels are kept (default $XDG_CACHE_HOME/tilepy/<version>);
                   "off" disables the disk cache.
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


@dataclass(frozen=True)
class Settings:
    cache_dir: str | None
    cpu_workers: int
    cxx: str | None
    cpu_mode: str = "fast"
    log: frozenset[str] = frozenset()
    interpret: bool = False

    def logs(self, topic: str) -> bool:
        return topic in self.log or "all" in self.log


def _default_cache_dir() -> str:
    from . import __version__
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tilepy", __version__)


def settings() -> Settings:
    """The current settings (read on every call, so tests can change the environment)."""
    cache = os.environ.get("TILEPY_CACHE_DIR")
    if cache is not None and cache.strip().lower() == "off":
        cache_dir = None
    else:
        cache_dir = cache or _default_cache_dir()
    workers = os.environ.get("TILEPY_CPU_WORKERS")
    try:
        n = int(workers) if workers else (os.cpu_count() or 1)
    except ValueError:
        n = os.cpu_count() or 1
    mode = (os.environ.get("TILEPY_CPU_MODE") or "fast").strip().lower()
    log = frozenset(t.strip().lower() for t in os.environ.get("TILEPY_LOG", "").split(",") if t.strip())
    interpret = os.environ.get("TILEPY_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on")
    return Settings(cache_dir, max(1, n), os.environ.get("TILEPY_CXX") or None, mode, log,
                    interpret)
