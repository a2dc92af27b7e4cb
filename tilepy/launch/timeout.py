"""`tilepy.compiler_timeout(seconds)`: a wall-clock limit on compiling a kernel (cuTile's API).

Inside the `with` block a GPU compile that runs longer raises `TileCompilerTimeoutError`, as
cuTile's bounds its GPU compiler (tileiras): tileiras is killed at the limit; NVRTC runs in this
process, so a compile on its own thread is waited for that long and then abandoned (it finishes
in the background and its cubin still goes to the disk cache). Cache hits take no compile time.
The CPU backend's host C++ compile is not bounded: it stands in for no GPU compile (a kernel
whose GPU compile fits cuTile's limit may take g++ longer on a small host; cuTile samples that
tune inside `compiler_timeout(10)` then found no configuration, issue 31).
"""
from __future__ import annotations

import contextlib
import contextvars
import threading

from ..errors import TileCompilerTimeoutError, TileValueError

_limit: contextvars.ContextVar[float | None] = contextvars.ContextVar("tilepy_compiler_timeout",
                                                                      default=None)


@contextlib.contextmanager
def compiler_timeout(timeout_sec: float):
    """Limit kernel compiles inside the ``with`` block to `timeout_sec` seconds each.

        with tilepy.compiler_timeout(10):
            tilepy.launch(stream, grid, kernel, args)
    """
    if not isinstance(timeout_sec, (int, float)) or isinstance(timeout_sec, bool) \
            or not timeout_sec > 0:
        raise TileValueError(f"compiler_timeout() takes a positive number of seconds (got "
                             f"{timeout_sec!r})")
    token = _limit.set(float(timeout_sec))
    try:
        yield
    finally:
        _limit.reset(token)


def current() -> float | None:
    """The limit in force (seconds), or None."""
    return _limit.get()


def expired(what: str, limit: float) -> TileCompilerTimeoutError:
    return TileCompilerTimeoutError(f"{what} took longer than the compiler timeout of {limit:g} s "
                                    f"(tilepy.compiler_timeout)")


def call_with_limit(fn, what: str):
    """fn() on a thread of its own, waited for at most the current limit (no limit: called
    here)."""
    limit = current()
    if limit is None:
        return fn()
    box: dict = {}

    def work():
        try:
            box["value"] = fn()
        except BaseException as e:         # re-raised on the caller's thread
            box["error"] = e
    t = threading.Thread(target=work, name="tilepy-compile", daemon=True)
    t.start()
    t.join(limit)
    if t.is_alive():
        raise expired(what, limit)
    if "error" in box:
        raise box["error"]
    return box["value"]
