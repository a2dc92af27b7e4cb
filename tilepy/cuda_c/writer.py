"""An indenting writer whose lines remember the user's source location.

Rendered for people, a line ends with `// file.py:12` when its location differs from the line
before; rendered for a compiler, `#line 12 "file.py"` directives precede such lines, so NVRTC and
g++ errors point at the user's Python line.
"""
from __future__ import annotations

import contextlib
import os

from ..errors import Loc


class Writer:
    def __init__(self):
        self.lines: list[tuple[int, str, Loc | None]] = []
        self.depth = 0

    def line(self, text: str = "", loc: Loc | None = None):
        self.lines.append((self.depth, text, loc))

    @contextlib.contextmanager
    def indent(self, opener: str | None = None, closer: str | None = "}", loc: Loc | None = None):
        if opener is not None:
            self.line(opener, loc)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if closer is not None:
                self.line(closer)

    def render(self, line_directives: bool = False) -> str:
        return self._compiled() if line_directives else self._readable()

    def _readable(self) -> str:
        out, last = [], None
        for depth, text, loc in self.lines:
            pad = "  " * depth
            key = (loc.file, loc.line) if loc is not None else None
            if loc is not None and key != last and text:
                out.append(f"{pad}{text}  // {os.path.basename(loc.file)}:{loc.line}")
                last = key
            else:
                out.append(pad + text if text else "")
        return "\n".join(out) + "\n"

    def _compiled(self) -> str:
        """A `#line` directive before every located line the compiler would otherwise number
        wrongly (after a directive, each further line counts one more), so that diagnostics and
        __builtin_LINE() name the user's line of every op."""
        out, here = [], None          # here: (file, line) the compiler gives the next line
        for depth, text, loc in self.lines:
            if loc is not None and text and here != (loc.file, loc.line):
                out.append(f'#line {loc.line} "{loc.file}"')
                here = (loc.file, loc.line)
            out.append("  " * depth + text if text else "")
            if here is not None:
                here = (here[0], here[1] + 1)
        return "\n".join(out) + "\n"
