"""What an invalid instance is (negatives.py says why they exist) and the list every
negatives_*.py module appends its instances to."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .core import Module
from .samples import Sample


@dataclass(frozen=True)
class Negative:
    op: str
    rule: str
    body: str
    params: str = ""
    module: bool = False
    mutate: Callable[[Module], None] | None = None

    def text(self) -> str:
        return Sample(self.op, self.body, self.params, self.module).text()


def first(m: Module, name: str):
    return next(o for o in m.walk() if o.name == name)


def value(m: Module, hint: str):
    return next(r for o in m.walk() for r in o.results if r.hint == hint)


NEGATIVES: list[Negative] = []


def neg(op, rule, body, params="", module=False, mutate=None):
    NEGATIVES.append(Negative(op, rule, body, params, module, mutate))
