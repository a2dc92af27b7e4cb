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
An error that nothing inside tilepy located (a bad launch argument) points at the user's call
into tilepy (`for_user`). In IPython and Jupyter a location in a cell reads as IPython's own
(`Cell In[3], line 4`), and the traceback shows the user's frames only (`_render_traceback_`).
The caret is placed by display column: `ast` columns count UTF-8 bytes, a terminal shows
characters, some of them two columns wide.
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
import unicodedata
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
        cell = cell_name(self.file)
        if cell is not None:
            return f"{cell}, line {self.line}"
        return f"{self.file}:{self.line}:{self.column}"

    @property
    def column(self) -> int:
        """The 1-based display column of the start (`col` counts UTF-8 bytes, as `ast` does)."""
        if self.source_line is None:
            return self.col + 1
        return display_width(self.source_line.encode()[:self.col]) + 1

    def _span(self) -> tuple[str, int, int]:
        """The source line, and the display column and width of the span in it."""
        text = self.source_line.rstrip("\n")
        raw = text.encode()
        end = self.end_col if (self.end_line in (None, self.line) and self.end_col) else len(raw)
        start = display_width(raw[:self.col])
        return text, start, max(1, display_width(raw[:end]) - start)

    def snippet(self) -> str:
        """The source line with a caret under the span (empty when the source is unknown)."""
        if self.source_line is None:
            return ""
        text, start, width = self._span()
        num = str(self.line)
        pad = " " * len(num)
        return (f" {pad} |\n {num} | {text}\n"
                f" {pad} | {' ' * start}{'^' * width}")

    def frame(self) -> str:
        """This location as one frame of a call stack, Python's traceback style (the line as
        written, carets under the span)."""
        cell = cell_name(self.file)
        where = cell if cell is not None else f'File "{self.file}"'
        head = f"  {where}, line {self.line}, col {self.column}, in {self.function or '?'}:"
        if self.source_line is None:
            return head
        text, start, width = self._span()
        return f"{head}\n    {text}\n    {' ' * start}{'^' * width}"


def display_width(utf8: bytes) -> int:
    """Terminal columns of UTF-8 text: wide (CJK, most emoji) characters take two, combining
    marks none."""
    n = 0
    for ch in utf8.decode(errors="ignore"):
        if unicodedata.combining(ch):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return n


def cell_name(file: str) -> str | None:
    """`Cell In[3]` for the file name IPython compiled a cell under, when running in IPython."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        label = shell.compile.format_code_name(file) if shell is not None else None
    except Exception:              # another IPython version, or not a cell
        return None
    return f"{label[0]} {label[1]}" if label else None


def did_you_mean(name: str, known) -> str:
    """"; did you mean 'x'?" naming the nearest of the `known` names, or "" when none is near."""
    import difflib
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean '{near[0]}'?" if near else ""


def _in_tilepy(frame) -> bool:
    name = frame.f_globals.get("__name__") or ""
    return name == "tilepy" or name.startswith("tilepy.")


def caller_loc() -> Loc | None:
    """The location of the innermost call into tilepy from the user's code."""
    import linecache
    frame = sys._getframe(1)
    while frame is not None and _in_tilepy(frame):
        frame = frame.f_back
    if frame is None:
        return None
    code, line = frame.f_code, frame.f_lineno
    positions = list(code.co_positions())[frame.f_lasti // 2] \
        if hasattr(code, "co_positions") else (line, None, None, None)
    start, end_line, col, end_col = positions
    text = linecache.getline(code.co_filename, start or line) or None
    return Loc(code.co_filename, start or line, col or 0, end_line, end_col, text, code.co_name)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """`warnings.warn` attributed to the user's line: the innermost call into tilepy."""
    import warnings
    level, frame = 2, sys._getframe(1)
    while frame is not None and _in_tilepy(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def for_user(e: "TileError") -> "TileError":
    """`e` as the user sees it: located at the call into tilepy when nothing inside placed it,
    without tilepy's frames and without the exceptions it was raised from. Re-raise it with a
    bare `raise` in the `except` block that caught it: a re-raise adds no frame, so from
    Python 3.11 the traceback ends at the user's line (3.10 re-raises the traceback it caught,
    which is cut here to the entry point's own frame)."""
    if e.loc is None:
        e.loc = caller_loc()
    tb = e.__traceback__
    if tb is not None:
        tb.tb_next = None
    e.__cause__, e.__suppress_context__ = None, True
    return e.with_traceback(None)


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


class Passing(Exception):
    """Control flow of the compiler carried by an exception (a traced `return`, a loop traced
    again): not an error; `internal_errors` lets it through."""


class internal_errors:
    """`with internal_errors(what):` turns an unexpected exception raised in the block (a bug in
    tilepy) into a TileInternalError at the ambient location. Entered once per AST node and per
    emitted op, the innermost block wraps it, so the error carries the user's line. (A class:
    it is entered for every node, and a generator-based context manager costs more.)"""
    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if e is None or not isinstance(e, Exception) or isinstance(
                e, (TileError, Passing, RecursionError)):
            return False
        raise TileInternalError(f"internal error in tilepy while {self.what}: "
                                f"{type(e).__name__}: {e} (please report it)") from e


class _UserFrames:
    """In IPython and Jupyter, the traceback of a tilepy error shows the user's frames only."""

    def _render_traceback_(self) -> list[str]:
        """IPython's rendering of this error with tilepy's own frames left out (IPython calls
        this instead of formatting the traceback itself)."""
        import traceback
        import types
        frames, tb = [], self.__traceback__
        while tb is not None:          # IPython's own frame (the cell's caller) goes too
            name = tb.tb_frame.f_globals.get("__name__") or ""
            if not (_in_tilepy(tb.tb_frame) or name.startswith("IPython.")):
                frames.append(tb)
            tb = tb.tb_next
        kept = None
        for t in reversed(frames):
            kept = types.TracebackType(kept, t.tb_frame, t.tb_lasti, t.tb_lineno)
        shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
        if shell is None:
            return traceback.format_exception(type(self), self, kept)
        return shell.InteractiveTB.structured_traceback(type(self), self, kept, tb_offset=0)


class TileError(_UserFrames, Exception):
    """Base of every tilepy error. `loc` defaults to the ambient location."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc if loc is not None else current_loc()
        self.notes: list[str] = []
        self.calls: list[Loc] = []    # the helper calls that led to `loc`, outermost first

    def located(self, loc: Loc | None) -> "TileError":
        if self.loc is None and loc is not None:
            self.loc = loc
        return self

    def __str__(self) -> str:
        parts = [self.message]
        if self.calls and self.loc is not None:       # inside helpers: the call stack first
            parts.extend(c.frame() for c in (*self.calls, self.loc))
        if self.loc is not None:
            parts.append(f"  --> {self.loc}")
            snip = self.loc.snippet()
            if snip:
                parts.append(snip)
        parts.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(parts)


class TileAttributeError(_UserFrames, AttributeError):
    """`tilepy.<name>` for a name tilepy does not have (the message names the nearest one)."""


class TileSyntaxError(TileError):
    """Python syntax the kernel language does not accept."""


class TileTypeError(TileError):
    """A value of the wrong type, dtype, rank or shape; a Tile IR type rule was broken."""


class TileValueError(TileError):
    """A value is out of range or otherwise invalid (bad grid, bad argument, ...)."""


class TileIndexOverflowError(TileValueError, OverflowError):
    """An array argument's extent or stride does not fit the parameter's index dtype (int32
    unless annotated IndexedWithInt64): an OverflowError too, as cuTile raises."""


class TileAnnotationError(TileValueError, ValueError):
    """An ArrayAnnotation that does not fit its argument (a static axis out of range, twice):
    a ValueError too, as cuTile raises."""


class TileOptionError(TileValueError, ValueError):
    """A kernel option's value out of its range, or a ByTarget key that is no GPU architecture
    name: a ValueError too, as cuTile raises."""


class TileGridError(TileValueError, ValueError):
    """A launch grid that is not 0 to 3 extents in [0, 2^24 - 1]: a ValueError too, as cuTile
    raises."""


class TileArgumentCountError(TileTypeError, TypeError):
    """A launch with more or fewer arguments than the kernel's parameters: a TypeError too, as
    cuTile raises."""


class TileDeviceCallError(TileSyntaxError, RuntimeError):
    """A kernel builtin (`bid`, `load`, ...) called from host code: a RuntimeError too, as
    cuTile raises."""


class TileArgumentTypeError(TileTypeError, TypeError):
    """A kernel argument its parameter cannot take (a tuple of another length than its
    annotation's, a value that is not a constant for a Constant, a tuple subclass): a TypeError
    too, as cuTile raises."""


class TileUnsupportedFeatureError(TileError):
    """Valid input that tilepy does not support yet; never silently miscompiled."""


class TileCompileError(TileError):
    """The CUDA C++ or host compiler rejected the emitted code; the raw log is attached."""
    compiler_flags: str = ""                # cuTile's fields: the failed compiler's flags and
    compiler_version: str | None = None     # version (a crash dump writes them)

    def __init__(self, message: str, loc: Loc | None = None, log: str = ""):
        super().__init__(message, loc)
        self.log = log

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base}\n--- compiler log ---\n{self.log}" if self.log else base


class TileCompilerExecutionError(TileCompileError):
    """A compiler (NVRTC, tileiras, the host C++ compiler) ran and rejected the kernel: cuTile's
    name for tileiras exiting with an error; the compiler's log is attached. Also made with
    cuTile's arguments: (return_code, stderr, compiler_flags, compiler_version)."""

    def __init__(self, *args, **kw):
        if len(args) == 4 and type(args[0]) is int and not kw:
            code, stderr, self.compiler_flags, self.compiler_version = args
            super().__init__(f"the compiler exited with return code {code}", None, log=stderr)
        else:
            super().__init__(*args, **kw)


class TileCompilerTimeoutError(TileCompileError):
    """Compiling a kernel took longer than `tilepy.compiler_timeout(...)` allows (cuTile's name).
    Also made with cuTile's arguments: (message, compiler_flags, compiler_version)."""

    def __init__(self, *args, **kw):
        if len(args) == 3 and isinstance(args[1], str) and not kw:
            message, self.compiler_flags, self.compiler_version = args
            super().__init__(message)
        else:
            super().__init__(*args, **kw)


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
