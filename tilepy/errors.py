"""User-facing errors, and the source location they point at.

Every error a user can cause carries a `Loc` (file, line, column span and the source line) and
prints as::

    TileTypeError: tile shape must have power-of-two extents (got (3, 4))
      --> kernels.py:12:38
       |
    12 |     t = ct.load(a, index=(i,), shape=(3, 4))
       |                                      ^^^^^^

The location is ambient: the frontend enters `at(loc)` once per AST node, and errors raised deep
inside type rules pick it up in `TileError.__init__` when they were not given one explicitly.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A span in a user's source file; lines are 1-based, columns 0-based (as in `ast`)."""
    file: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None
    source_line: str | None = None   # the text of `line`, kept so errors print after the file changes
    function: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def snippet(self) -> str:
        """The source line with a caret under the span (empty when the source is unknown)."""
        if self.source_line is None:
            return ""
        text = self.source_line.rstrip("\n")
        end = self.end_col if (self.end_line in (None, self.line) and self.end_col) else len(text)
        width = max(1, end - self.col)
        num = str(self.line)
        pad = " " * len(num)
        return (f" {pad} |\n {num} | {text}\n"
                f" {pad} | {' ' * self.col}{'^' * width}")


_current_loc: contextvars.ContextVar[Loc | None] = contextvars.ContextVar("tilepy_loc", default=None)


def current_loc() -> Loc | None:
    return _current_loc.get()


@contextlib.contextmanager
def at(loc: Loc | None):
    """Make `loc` the ambient location while the block runs (None keeps the enclosing one)."""
    if loc is None:
        yield
        return
    token = _current_loc.set(loc)
    try:
        yield
    finally:
        _current_loc.reset(token)


class TileError(Exception):
    """Base of every tilepy error. `loc` defaults to the ambient location."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc if loc is not None else current_loc()
        self.notes: list[str] = []

    def located(self, loc: Loc | None) -> "TileError":
        if self.loc is None and loc is not None:
            self.loc = loc
        return self

    def __str__(self) -> str:
        parts = [self.message]
        if self.loc is not None:
            parts.append(f"  --> {self.loc}")
            snip = self.loc.snippet()
            if snip:
                parts.append(snip)
        parts.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(parts)


class TileSyntaxError(TileError):
    """Python syntax the kernel language does not accept."""


class TileTypeError(TileError):
    """A value of the wrong type, dtype, rank or shape; a Tile IR type rule was broken."""


class TileValueError(TileError):
    """A value is out of range or otherwise invalid (bad grid, bad argument, ...)."""


class TileUnsupportedFeatureError(TileError):
    """Valid input that tilepy does not support yet; never silently miscompiled."""


class TileCompileError(TileError):
    """The CUDA C++ or host compiler rejected the emitted code; the raw log is attached."""

    def __init__(self, message: str, loc: Loc | None = None, log: str = ""):
        super().__init__(message, loc)
        self.log = log

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base}\n--- compiler log ---\n{self.log}" if self.log else base


class TileCompilerTimeoutError(TileCompileError):
    """Compiling a kernel took longer than `tilepy.compiler_timeout(...)` allows (cuTile's name)."""

class TileLaunchError(TileError):
    """A launch failed at run time (bad arguments for the backend, a device error, a deadlock)."""


class TileInternalError(TileError):
    """A bug in tilepy; the location says which user line was being compiled."""


class TileRecursionError(TileUnsupportedFeatureError):
    """A kernel helper calls itself (helpers are inlined, so recursion cannot compile)."""


class TileStaticEvalError(TileError):
    """A compile-time (`static_eval`, `static_iter`, ...) evaluation failed."""


class StaticException(TileStaticEvalError):
    """Raised by `raise tilepy.static_exception(exc)` when the tracer reaches it."""


class TileStaticAssertionError(TileError):
    """`tilepy.static_assert` found its condition false."""


class TileVerificationError(TileError):
    """A Tile IR module broke a rule of the spec; the message names the op and the rule."""
