"""`print_tko` formatting: C printf conversions applied to scalars and, element by element, to
tiles (printed as nested brackets). Integers print by the conversion's signedness: %d/%i read
the signless bits signed, %u/%x/%X/%o unsigned. The interpreter formats its print ops with it, and
the host formats the CUDA C++ backend's print records with it (launch/print_log.py): one
formatter for every backend; `elem_name` / `elem_of` / `storage` name the element types of the
kernel's print-op table and read their bytes."""
from __future__ import annotations

import re

import numpy as np

from ..errors import TileValueError
from ..types import I64, NUMPY_DTYPE, PtrType, element_type
from .values import as_signed, as_unsigned

_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?([diouxXeEfFgGaAcsp%])")


def _one(conv: str, flags: str, width, prec, value, elem) -> str:
    spec = "%" + flags + (width or "") + (f".{prec}" if prec is not None else "")
    if isinstance(elem, PtrType) or conv == "p":
        return (spec + "x") % int(np.asarray(value).astype(np.uint64))
    if elem.is_int:
        if conv in "diouxXc":
            signed = conv in "di"
            v = int(as_signed(value, elem) if signed else as_unsigned(value, elem))
            py = {"u": "d", "i": "d"}.get(conv, conv)
            return (spec + py) % v
        return (spec + conv) % float(int(as_signed(value, elem)))
    f = float(np.asarray(value).astype(np.float64))
    if conv in "diouxXc":
        return (spec + "d") % int(f) if np.isfinite(f) else str(f)
    if conv in "aA":
        return _hex_float(f, conv, flags, width, prec)
    return (spec + conv) % f


def _hex_float(f: float, conv: str, flags: str, width, prec) -> str:
    """C's %a / %A (Python's % has no hex floats): [-]0xh.hhhp+d, the shortest digits, or
    `prec` of them rounded to nearest even; glibc's spelling (0x0p+0, inf, nan)."""
    sign = "-" if np.signbit(f) else "+" if "+" in flags else " " if " " in flags else ""
    width = int(width or 0)
    if not np.isfinite(f):
        body, prefix = ("nan" if np.isnan(f) else "inf"), ""
    else:
        lead, rest = abs(f).hex()[2:].split(".")       # "1.8000000000000p+0" -> "1", "8...p+0"
        digits, exp = rest.split("p")
        p = None if prec is None else int(prec)
        if p is None:
            digits = digits.rstrip("0")
        elif p >= 13:
            digits = digits.ljust(p, "0")
        else:                                   # round the 52 fraction bits to 4 * p
            m, drop = int(lead) << 52 | int(digits, 16), 52 - 4 * p
            low, half = m & ((1 << drop) - 1), 1 << (drop - 1)
            m = (m >> drop) + (low > half or (low == half and (m >> drop) & 1))
            lead, digits = str(m >> 4 * p), f"{m & ((1 << 4 * p) - 1):0{p}x}" if p else ""
        dot = "." if digits or "#" in flags else ""
        body, prefix = f"{lead}{dot}{digits}p{exp}", "0x"
    if "0" in flags and "-" not in flags and np.isfinite(f):
        body = body.rjust(width - len(sign) - len(prefix), "0")
    text = sign + prefix + body
    text = text.ljust(width) if "-" in flags else text.rjust(width)
    return text.upper() if conv == "A" else text


def _tile(conv, flags, width, prec, value, elem) -> str:
    a = np.asarray(value)
    if a.ndim == 0:
        return _one(conv, flags, width, prec, a, elem)
    return "[" + ", ".join(_tile(conv, flags, width, prec, x, elem) for x in a) + "]"


def format_print(fmt: str, args: list, elems: list) -> str:
    out, pos, k = [], 0, 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, _, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if "*" in (width or "", prec or ""):
            raise TileValueError("print_tko: '*' widths are not supported")
        if k >= len(args):
            raise TileValueError(f"print_tko: the format '{fmt}' has more conversions than the "
                                 f"{len(args)} argument(s)")
        out.append(_tile(conv, flags, width, prec, args[k], elems[k]))
        k += 1
    out.append(fmt[pos:])
    if k != len(args):
        raise TileValueError(f"print_tko: the format '{fmt}' has {k} conversion(s) for "
                             f"{len(args)} argument(s)")
    return "".join(out)



def elem_name(elem) -> str:
    """An element type's name in a print-op table ("ptr" for any pointer)."""
    return "ptr" if isinstance(elem, PtrType) else elem.name


def elem_of(name: str):
    return PtrType(I64) if name == "ptr" else element_type(name)


def storage(elem) -> tuple[np.dtype, int]:
    """(numpy dtype, bytes) of one element as the C++ code stores it."""
    if isinstance(elem, PtrType):
        return np.dtype(np.uint64), 8
    return np.dtype(NUMPY_DTYPE[elem]), elem.storage_bytes
