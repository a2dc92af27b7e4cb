"""Compiler errors (NVRTC, the host C++ compiler) mapped back to the user's Python line.

The emitter writes `#line N "file.py"` before the code of each op, so compilers report errors
in the kernel's own file: NVRTC as `file.py(12): error: ...`, g++/clang++ as
`file.py:12:5: error: ...`. An error inside a runtime-header template names the header first
and the user's line in its instantiation context (`required from here`, `detected during ...
at line 12 of file.py`); the first mention of a Python file in the log is the user's line.
"""
from __future__ import annotations

import linecache
import re

from ..errors import Loc, TileCompileError, TileCompilerExecutionError

# NVRTC: `k.py(12): error`; gcc/clang: `k.py:12:5: error` / `k.py:12:5:   required from here`;
# NVRTC instantiation context: `at line 12 of k.py`; tileiras (the bytecode's debug locations):
# `#cuda_tile.di_loc<loc("k.py":12:5) in ...>: error`.
_PY_LOC = re.compile(r'(?P<f1>[^\s"()]+\.py)\((?P<l1>\d+)\)'
                     r'|(?P<f2>[^\s"():]+\.py):(?P<l2>\d+)(?::\d+)?:'
                     r'|at line (?P<l3>\d+) of "?(?P<f3>[^\s"]+\.py)'
                     r'|loc\("(?P<f4>[^"]+\.py)":(?P<l4>\d+):(?P<c4>\d+)\)')
_ERROR = re.compile(r"(?:catastrophic |fatal )?error(?: #\d+(?:-D)?)?:\s*(?P<msg>.*)")
# The compiler's environment failed, not the user's code (a full or read-only disk, a killed
# assembler): such an error names whatever line the compiler had reached.
_ENVIRONMENT = re.compile(r"No space left on device|Read-only file system|error writing to|"
                          r"cannot open output file|Disk quota exceeded|Killed signal terminated")


def first_error(log: str) -> str | None:
    """The text of the first error in a compiler log."""
    m = _ERROR.search(log)
    return m.group("msg").strip() if m else None


def user_loc(log: str) -> Loc | None:
    """The user's Python line that the log's errors point at (through #line), or None (also for
    a line the file does not have: the code after the kernel's last line, the host entry)."""
    for m in _PY_LOC.finditer(log):
        file = m.group("f1") or m.group("f2") or m.group("f3") or m.group("f4")
        line = int(m.group("l1") or m.group("l2") or m.group("l3") or m.group("l4"))
        text = linecache.getline(file, line)
        if not text and linecache.getlines(file):
            continue
        if not text:
            return Loc(file, line, 0)
        col = int(m.group("c4")) - 1 if m.group("c4") else len(text) - len(text.lstrip())
        return Loc(file, line, col, line, len(text.rstrip("\n")), source_line=text)
    return None


def compile_error(what: str, log: str) -> TileCompileError:
    """`what` (e.g. "NVRTC could not compile kernel 'k' for sm_90"), the first error, the user's
    line, and the whole raw log attached."""
    first = first_error(log)
    msg = f"{what}: {first}" if first else what
    if _ENVIRONMENT.search(log):
        return TileCompilerExecutionError(f"{msg} (the compiler's environment failed, not the "
                                          f"kernel: free space, or set TMPDIR to a writable "
                                          f"folder)", None, log=log)
    return TileCompilerExecutionError(msg, user_loc(log), log=log)
