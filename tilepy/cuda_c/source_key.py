"""What of a kernel's source goes into cache keys: everything but where the source file lives.

The source given to compilers carries `#line 12 "/path/to/file.py"` directives so that their
errors point at the user's line. The path is not part of what the kernel computes: a notebook's
cells are files named after the kernel process (`<tmp>/ipykernel_<pid>/<hash>.py`), and a module
moved to another folder is the same module. Cache keys hash the source with those paths left
out (the line numbers stay: they are part of the compiled line info), so the same kernel hits
after a kernel restart or a move; compiler errors still name the real file because the source
compiled on a miss is the real one. A binary found under such a key may carry the path of the
process that compiled it in its line info (`--generate-line-info`); nothing tilepy reports
reads it.
"""
from __future__ import annotations

import re

_LINE_DIRECTIVE = re.compile(r'^(#line \d+) "([^"\n]*)"$', re.M)


def location_free(source: str) -> str:
    """`source` with the file names of its `#line` directives removed."""
    return _LINE_DIRECTIVE.sub(r"\1", source)


def relocate(source: str, files: dict[str, str]) -> str:
    """`source` with the files of its `#line` directives renamed by `files` (old -> new)."""
    if not files:
        return source

    def repl(m):
        return f'{m.group(1)} "{files.get(m.group(2), m.group(2))}"'
    return _LINE_DIRECTIVE.sub(repl, source)
