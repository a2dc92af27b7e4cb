"""The doctor's output: sections of `name: value` lines, then the problems, each with its fix."""
from __future__ import annotations

from dataclasses import dataclass


def size(n: float) -> str:
    """Bytes in words: 512 B, 1.5 KiB, 26.8 MiB (also `python -m tilepy cache list`'s)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@dataclass
class Problem:
    what: str
    fix: str
    fatal: bool = True          # an available backend does not work (exit status 1)


class Report:
    def __init__(self, out):
        self.out = out
        self.problems: list[Problem] = []
        self.data: dict = {}

    def section(self, title: str):
        print(f"\n{title}", file=self.out, flush=True)     # each line as soon as it is known
        self.data.setdefault(title, {})
        self._current = title

    def line(self, name: str, value):
        print(f"  {name + ':':<22} {value}", file=self.out, flush=True)
        self.data[self._current][name] = value

    def text(self, text: str):
        print(text, file=self.out)

    def problem(self, what: str, fix: str, fatal: bool = True):
        self.problems.append(Problem(what, fix, fatal))

    def finish(self) -> int:
        if not self.problems:
            print("\nno problems found", file=self.out)
            return 0
        print("\nproblems", file=self.out)
        for p in self.problems:
            print(f"  - {p.what}\n    fix: {p.fix}", file=self.out)
        return 1 if any(p.fatal for p in self.problems) else 0
