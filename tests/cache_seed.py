"""A test's own cache folder, given the session's CPU helper builds.

A test that points TILEPY_CACHE_DIR at a fresh folder and starts a new process there makes that
process build the CPU backend's helpers again (the worker pool library and the support object of
each mode and thread count: 0.7-2 CPU-s each, built once per cache), though what the test checks
(where entries go, what is found or refused, what a notebook compiles) does not depend on
building them. `seed(folder)` copies them from the session's cache (tests/conftest.py) into
`folder` through the cache's own API (each entry checked when read, written under its own key).
The tests of those builds themselves (test_cpu_support.py, test_cpu_pool.py) keep building them.
"""
from __future__ import annotations

import contextlib
import os

SESSION: str | None = None        # the session's cache folder (set by conftest.py's pytest_configure)


def seed(folder) -> list[str]:
    """Make `folder` a tilepy cache holding the session cache's worker pool library and support
    objects (the pool and the fast mode's object built there first when absent); their paths in
    `folder`."""
    from tilepy.launch import cache, cpu
    assert SESSION is not None, "tests/conftest.py sets cache_seed.SESSION at start-up"
    with _cache_at(SESSION):
        pool = os.path.basename(cpu.pool_library()[0])
        cxx, fast = cpu.host_compiler(), cpu.flags("fast")
        key = cpu.support_key(cxx, fast)
        if cache.get("cpu", key, ".o") is None:   # not there (this process may hold it in memory,
            cpu._SUPPORT.pop(key, None)           # built in another folder): built there
            cpu.support_object(cxx, fast)
        wanted = [e for e in cache.listing() if e.kind == "cpu"
                  and (e.path.endswith(".o") or os.path.basename(e.path) == pool)]
        entries = [(e, cache.get("cpu", e.key, os.path.splitext(e.path)[1])) for e in wanted]
    with _cache_at(str(folder)):
        return [cache.put("cpu", e.key, got.payload, got.meta, os.path.splitext(e.path)[1])
                for e, got in entries if got is not None]


@contextlib.contextmanager
def _cache_at(folder: str):
    """TILEPY_CACHE_DIR=`folder` in this block."""
    before = os.environ.get("TILEPY_CACHE_DIR")
    os.environ["TILEPY_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if before is None:
            del os.environ["TILEPY_CACHE_DIR"]
        else:
            os.environ["TILEPY_CACHE_DIR"] = before
