"""Helpers for the Tile IR text tests: wrap a bare snippet into a kernel, and compare two texts
up to the spellings the syntax leaves free (see `normalize`)."""
from __future__ import annotations

import re

from tilepy.ir.attrs import format_scalar, scalar_storage
from tilepy.ir.parser import parse_type
from tilepy.types import ELEMENT_TYPES, PtrType, TensorViewType, TileType
from tilepy.types.element import ALIASES

_TOKEN = re.compile(r'\s*("(?:\\.|[^"\\])*"|%[\w$.\-]+|@[\w$.\-]+|->|[-+]?0x[0-9a-fA-F]+|'
                    r'[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?|[A-Za-z_][\w$.]*|\S)')
_BINDING = re.compile(r"^(\s*)%[\w$.\-]+(\s*,\s*%[\w$.\-]+)*\s*=(?!=)", re.M)
_NUMBER = re.compile(r"[-+]?(0x[0-9a-fA-F]+|\d)")
_TERMINATORS = ("yield", "continue", "return")


def tokens(text: str) -> list[str]:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"!?cuda_tile\.|!(?=[a-z])|#(?=[a-z])", "", text)
    text = _BINDING.sub(r"\1", text)
    out, pos = [], 0
    while (m := _TOKEN.match(text, pos)) and m.group(1):
        out.append(m.group(1))
        pos = m.end()
    return out


def _canonical_numbers(toks: list[str]) -> list[str]:
    """Literals of dense constants (`<E: ...>`) and identities (`lit : E`) in canonical form."""
    out, elem = [], None
    for i, t in enumerate(toks):
        if t == "<" and i + 2 < len(toks) and toks[i + 1] in ELEMENT_TYPES and toks[i + 2] == ":":
            elem = ELEMENT_TYPES[toks[i + 1]]
        elif t == ">":
            elem = None
        e = elem
        if i + 2 < len(toks) and toks[i + 1] == ":" and toks[i + 2] in ELEMENT_TYPES:
            e = ELEMENT_TYPES[toks[i + 2]]
        if e is not None and (_NUMBER.match(t) or t in ("true", "false")):
            t = format_scalar(scalar_storage(t, e)[()], e)
        out.append(t)
    return out


def _unaliased(t: str) -> str:
    """An element type alias by its tilepy name, also as a shape's last token (`xF4E2M1FN`)."""
    if t in ALIASES:
        return ALIASES[t].name
    return "x" + ALIASES[t[1:]].name if t[:1] == "x" and t[1:] in ALIASES else t


def normalize(text: str) -> list[str]:
    """Tokens of `text` with the freedoms of the syntax removed: comments, `cuda_tile.`/`!`/`#`
    prefixes, result bindings (`%a, %b =`), `view=` in partition views, element type aliases,
    literal spellings (`0.000000e+0` = `0.0`, `<i1: 1>` = `<i1: true>`, i32 2147483648 =
    -2147483648), implicit terminators (`yield`/`continue`/`return` with no operands before `}`)
    and empty else regions."""
    toks = _canonical_numbers([_unaliased(t) for t in tokens(text)])
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "view" and toks[i + 1: i + 2] == ["="]:
            i += 2
            continue
        if t in _TERMINATORS and toks[i + 1: i + 2] == ["}"]:
            i += 1
            continue
        out.append(t)
        if out[-3:] == ["else", "{", "}"]:
            del out[-3:]
        i += 1
    return out


def _prologue(name: str, t, params: list[str], lines: list[str]):
    """Make the free value `name` of type `t` available: a parameter when it is a 0-d tile,
    else a few ops from a parameter or a constant."""
    if isinstance(t, TileType) and t.rank == 0:
        params.append(f"{name}: {t}")
    elif isinstance(t, TileType) and isinstance(t.elem, PtrType):
        base = TileType((), t.elem)
        ones = TileType((1,) * t.rank, t.elem)
        params.append(f"{name}_base: {base}")
        lines.append(f"{name}_ones = reshape {name}_base : {base} -> {ones}")
        lines.append(f"{name} = broadcast {name}_ones : {ones} -> {t}")
    elif isinstance(t, TileType):
        lines.append(f"{name} = constant <{t.elem}: 0> : {t}")
    elif isinstance(t, TensorViewType):
        params.append(f"{name}_base: {TileType((), PtrType(t.elem))}")
        lines.append(f"{name} = make_tensor_view {name}_base, shape = [{', '.join(map(str, t.shape))}], "
                     f"strides = [{', '.join(map(str, t.strides))}] : {t}")
    else:
        raise ValueError(f"cannot make a free value of type {t}")


def wrap(snippet: str, free: dict[str, str] | None = None, name: str = "example") -> str:
    """`snippet` (ops) as a complete module: one kernel whose parameters and prologue define the
    snippet's free values (name -> type text)."""
    params, lines = [], []
    for v, tt in (free or {}).items():
        _prologue(v, parse_type(tt), params, lines)
    body = "\n".join(lines + [snippet.rstrip()])
    return f"cuda_tile.module @kernels {{\nentry @{name}({', '.join(params)}) {{\n{body}\n}}\n}}\n"
