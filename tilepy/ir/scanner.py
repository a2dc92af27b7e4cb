"""A character scanner for the textual Tile IR: whitespace and `//` comments, literals, regexes,
and located syntax errors (`file:line:col` with the line and a caret)."""
from __future__ import annotations

import re

from ..errors import Loc, TileSyntaxError

VALUE = re.compile(r"%[A-Za-z0-9_$.\-]+(?:#\d+)?")   # %x#1: a result of NVIDIA's group %x:2
SYMBOL = re.compile(r"@[A-Za-z_][\w$.\-]*")
IDENT = re.compile(r"[A-Za-z_][\w$.]*")
INT = re.compile(r"[-+]?\d+")
NUMBER = re.compile(r"[-+]?(0x[0-9a-fA-F]+|\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)")
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_SPACE = re.compile(r"(\s+|//[^\n]*)+")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
        elif body[i + 1:i + 2] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            out.append(chr(int(body[i + 1:i + 3], 16)))
            i += 3
    return "".join(out)


class Scanner:
    def __init__(self, text: str, file: str = "<mlir>"):
        self.text = text
        self.file = file
        self.pos = 0
        self._lines = text.split("\n")

    # ------------------------------------------------------------------ positions
    def skip(self):
        m = _SPACE.match(self.text, self.pos)
        if m:
            self.pos = m.end()

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def loc(self, pos: int | None = None) -> Loc:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos)
        col = pos - (self.text.rfind("\n", 0, pos) + 1)
        return Loc(self.file, line + 1, col, source_line=self._lines[line])

    def error(self, msg: str, pos: int | None = None) -> TileSyntaxError:
        if pos is None:
            self.skip()
        return TileSyntaxError(msg, self.loc(pos))

    def near(self) -> str:
        self.skip()
        rest = self.text[self.pos:self.pos + 20].split("\n")[0]
        return f"'{rest}'" if rest else "the end of the input"

    # ------------------------------------------------------------------ tokens
    def peek(self, lit: str) -> bool:
        self.skip()
        if not self.text.startswith(lit, self.pos):
            return False
        end = self.pos + len(lit)
        # A word literal must not be the prefix of a longer word ("token" vs "token0").
        return not (lit[-1].isalnum() or lit[-1] == "_") or not (
            end < len(self.text) and (self.text[end].isalnum() or self.text[end] in "_$."))

    def accept(self, lit: str) -> bool:
        if self.peek(lit):
            self.pos += len(lit)
            return True
        return False

    def expect(self, lit: str, what: str | None = None):
        if not self.accept(lit):
            raise self.error(f"expected {what or repr(lit)}, found {self.near()}")

    def peek_re(self, rx: re.Pattern) -> str | None:
        self.skip()
        m = rx.match(self.text, self.pos)
        return m.group() if m else None

    def accept_re(self, rx: re.Pattern) -> str | None:
        s = self.peek_re(rx)
        if s is not None:
            self.pos += len(s)
        return s

    def expect_re(self, rx: re.Pattern, what: str) -> str:
        s = self.accept_re(rx)
        if s is None:
            raise self.error(f"expected {what}, found {self.near()}")
        return s

    def accept_prefixed(self, word: str, prefixes=("cuda_tile.",)) -> bool:
        """`word`, optionally spelled with one of `prefixes` (e.g. `cuda_tile.module`)."""
        return any(self.accept(p + word) for p in prefixes) or self.accept(word)

    def integer(self, what: str = "an integer") -> int:
        return int(self.expect_re(INT, what))

    def string(self) -> str:
        return unescape(self.expect_re(STRING, "a string literal")[1:-1])

    def comma_list(self, item, close: str | None = None) -> list:
        """`item (, item)*`; when `close` is given, the list may be empty and `close` ends it."""
        out = []
        if close is not None and self.accept(close):
            return out
        out.append(item())
        while self.accept(","):
            out.append(item())
        if close is not None:
            self.expect(close)
        return out
