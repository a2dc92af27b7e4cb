"""Printing and assertions from kernels (`printf`, `print`, f-strings, `assert_`), and the small
compile-time builtins (`ensure_constant`, `static_exception`, `assume_divisible_by`).

Prints become one `print_tko` op whose format has one C conversion per tile argument; the
conversions are normalized here to what the runtime passes to printf (ints of 32 bits or fewer
print as int, 64-bit ints with `ll`, floats as double). A tile prints like cuTile's:
`[1, 2, 3]`, nested for higher ranks, each element with the argument's conversion.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ...errors import TileStaticAssertionError, TileSyntaxError, TileTypeError
from ...ir import AssumePredicate
from ...types import dtype as D
from .. import api
from ..values import Array, Tile, type_name
from .registry import impl, require_constant
from .semantics import as_tile, convert, is_number

# %[flags][width][.precision][length]conversion
SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?P<prec>\.\d+|\.\*)?"
                  r"(?P<length>hh|h|ll|l|L|z|j|t|q)?(?P<conv>[diouxXeEfFgGaAcsp%])")
INT_CONV, FLOAT_CONV = set("diouxXc"), set("eEfFgGaA")


@dataclass
class FormatString:
    """An f-string with runtime values: literal text and (conversion, tile) parts."""
    parts: list            # str | (conversion such as "%.3f" or None, Tile)

    def __add__(self, other):           # f"a{t}" + f"b{u}", or + "text": one string
        if isinstance(other, FormatString):
            return FormatString(self.parts + other.parts)
        return FormatString(self.parts + [other]) if isinstance(other, str) else NotImplemented

    def __radd__(self, other):
        return FormatString([other] + self.parts) if isinstance(other, str) else NotImplemented


def _repr_parts(x) -> list:
    """The parts of `x` as Python shows it inside a tuple (its repr): strings quoted, tiles by
    value, tuples nested."""
    if isinstance(x, Tile):
        return [(None, x)]
    if isinstance(x, Array):
        raise TileTypeError("print(): arrays cannot be printed; load a tile first")
    if isinstance(x, tuple):
        out = ["("]
        for i, v in enumerate(x):
            out += ([", "] if i else []) + _repr_parts(v)
        return out + [",)" if len(x) == 1 else ")"]
    if isinstance(x, FormatString):     # Python's choice of quote, from the literal text
        text = "".join(p for p in x.parts if isinstance(p, str))
        q = '"' if "'" in text and '"' not in text else "'"
        esc = [p.replace("\\", "\\\\").replace(q, "\\" + q).replace("\n", "\\n")
               if isinstance(p, str) else p for p in x.parts]
        return [q, *esc, q]
    return [repr(x)]


def _split(fmt: str):
    """Literal text and conversion matches of a printf format."""
    pos = 0
    for m in SPEC.finditer(fmt):
        yield fmt[pos:m.start()], m
        pos = m.end()
    yield fmt[pos:], None


def _arg_for(ctx, spec: re.Match, x) -> tuple[str, Tile]:
    """The normalized conversion and the (converted) tile for one printf argument."""
    conv = spec["conv"]
    if spec["width"] == "*" or spec["prec"] == ".*":
        raise TileTypeError("printf(): '*' widths and precisions are not supported")
    if conv in "sp":
        raise TileTypeError(f"printf(): %{conv} is not supported; tiles print with %d, %f, ...")
    if isinstance(x, Array) or not (isinstance(x, Tile) or is_number(x)):
        raise TileTypeError(f"printf() prints tiles and numbers (got {type_name(x)})")
    t = as_tile(ctx, x)
    if conv in INT_CONV:
        if t.dtype.is_float:
            raise TileTypeError(f"printf(): %{conv} needs an integer argument (got {t.dtype.name}); "
                                f"use %f or convert with astype()")
        if t.dtype.bits < 32:
            t = convert(ctx, t, D.int32 if t.dtype.signed and not t.dtype.is_bool else D.uint32)
        length = "ll" if t.dtype.bits == 64 else ""
    else:
        if not t.dtype.is_float:
            t = convert(ctx, t, D.float64 if t.dtype.bits == 64 else D.float32)
        elif t.dtype.elem.alternative and t.dtype not in (D.bfloat16,):
            t = convert(ctx, t, D.float32)
        length = ""
    return f"%{spec['flags']}{spec['width'] or ''}{spec['prec'] or ''}{length}{conv}", t


def emit_print(ctx, fmt: str, args: list):
    op = ctx.b.create("print_tko", [a.value for a in args], ctx.token, str=fmt)
    ctx.token = op.results[0]


@impl(api.printf)
def printf(ctx, format, *args):
    require_constant(format, "printf() format", (str,))
    out, tiles = [], []
    specs = [m for _, m in _split(format) if m is not None and m["conv"] != "%"]
    if len(specs) != len(args):
        raise TileTypeError(f"printf(): the format has {len(specs)} conversion(s) but "
                            f"{len(args)} argument(s) were given")
    it = iter(args)
    for text, m in _split(format):
        out.append(text)
        if m is None:
            continue
        if m["conv"] == "%":
            out.append("%%")
            continue
        spec, t = _arg_for(ctx, m, next(it))
        out.append(spec)
        tiles.append(t)
    emit_print(ctx, "".join(out), tiles)


def _default_spec(t: Tile) -> str:
    if t.dtype.is_float:
        return "%f"
    return "%u" if t.dtype.is_int and not t.dtype.signed else "%d"


def _print_parts(ctx, x, out: list, tiles: list):
    if isinstance(x, FormatString):
        for p in x.parts:
            if isinstance(p, str):
                out.append(p.replace("%", "%%"))
            else:
                spec, t = p
                m = SPEC.fullmatch(spec or _default_spec(t))
                s, t = _arg_for(ctx, m, t)
                out.append(s)
                tiles.append(t)
    elif isinstance(x, Tile):
        s, t = _arg_for(ctx, SPEC.fullmatch(_default_spec(x)), x)
        out.append(s)
        tiles.append(t)
    elif isinstance(x, tuple):
        _print_parts(ctx, FormatString(_repr_parts(x)), out, tiles)
    elif isinstance(x, Array):
        raise TileTypeError("print(): arrays cannot be printed; load a tile first")
    else:
        out.append(str(x).replace("%", "%%"))


@impl(api.print)
def print_(ctx, *args, sep=" ", end="\n"):
    if not isinstance(sep, str) or not isinstance(end, str):
        raise TileTypeError("print(): sep and end must be constant strings")
    out, tiles = [], []
    for i, a in enumerate(args):
        if i:
            out.append(sep.replace("%", "%%"))
        _print_parts(ctx, a, out, tiles)
    out.append(end.replace("%", "%%"))
    emit_print(ctx, "".join(out), tiles)


# Python format spec (the part after ':' in an f-string) -> printf conversion.
PY_SPEC = re.compile(r"(?P<sign>[+ ]?)(?P<zero>0?)(?P<width>\d*)(?P<prec>\.\d+)?(?P<type>[dfeEgGxXo]?)")


def _printf_spec(spec: str, t: Tile) -> str | None:
    if not spec:
        return None
    m = PY_SPEC.fullmatch(spec)
    if m is None:
        raise TileTypeError(f"the format spec '{spec}' is not supported for tiles (use e.g. "
                            f"'.3f', '8d', '+.2e')")
    conv = m["type"] or ("f" if t.dtype.is_float else "d")
    return f"%{m['sign']}{m['zero']}{m['width']}{m['prec'] or ''}{conv}"


def joined_string(tr, node: ast.JoinedStr):
    """An f-string: a str when every value is a constant, else a FormatString for print()."""
    parts = []
    for v in node.values:
        if not isinstance(v, ast.FormattedValue):
            parts.append(v.value)
            continue
        x = tr.expr(v.value)
        spec = tr.expr(v.format_spec) if v.format_spec is not None else ""
        if isinstance(spec, FormatString):
            raise TileTypeError("format specs of f-strings must be constants")
        runtime = isinstance(x, (Tile, FormatString)) or \
            (isinstance(x, tuple) and any(not isinstance(p, str) for p in _repr_parts(x)))
        if runtime and v.conversion != -1:
            raise TileSyntaxError("f-string conversions (!r, !s, !a) are not supported for tile "
                                  "values")
        if isinstance(x, tuple) and spec:
            raise TileTypeError(f"cannot apply format spec to a value of type tuple ('{spec}')")
        if isinstance(x, Tile):
            parts.append((_printf_spec(spec, x), x))
        elif isinstance(x, FormatString):
            parts.extend(x.parts)
        elif runtime:                   # a tuple holding tiles: as Python's str of a tuple
            parts.extend(_repr_parts(x))
        elif isinstance(x, Array):
            raise TileTypeError("f-strings cannot format arrays; load a tile first")
        else:
            conv = {115: str, 114: repr, 97: ascii}.get(v.conversion, lambda y: y)
            parts.append(format(conv(x), spec))
    if all(isinstance(p, str) for p in parts):
        return "".join(parts)
    return FormatString(parts)


@impl(api.assert_)
def assert_(ctx, cond, message=None):
    if message is not None and not isinstance(message, str):
        raise TileTypeError(f"assert_(): the message must be a constant string (got "
                            f"{type_name(message)})")
    if not isinstance(cond, Tile):
        if isinstance(cond, Array) or not is_number(cond):
            raise TileTypeError(f"assert_() needs a tile condition (got {type_name(cond)})")
        if not cond:
            raise TileTypeError(f"assertion is always false{': ' + message if message else ''}")
        return None
    c = cond if cond.dtype.is_bool else convert(ctx, cond, D.bool_)
    ctx.b.create("assert", c.value, message=message or "assertion failed")
    return None


# ------------------------------------------------------------------------ compile time
@impl(api.ensure_constant)
def ensure_constant(ctx, value):
    if isinstance(value, (Tile, Array)) or (isinstance(value, tuple) and any(
            isinstance(v, (Tile, Array)) for v in value)):
        raise TileStaticAssertionError("Argument of ensure_constant() is not a compile-time "
                                       "constant")
    return value


@impl(api.static_exception)
def static_exception(ctx, exc):
    if isinstance(exc, (Tile, Array)):
        raise TileSyntaxError("static_exception() takes an exception object")
    return api._StaticExceptionRequest(exc)


@impl(api.assume_divisible_by)
def assume_divisible_by(ctx, x, divisor):
    if not isinstance(divisor, int) or isinstance(divisor, bool) or divisor <= 0:
        raise TileTypeError(f"assume_divisible_by(): the divisor must be a positive constant int "
                            f"(got {type_name(divisor)})")
    if not isinstance(x, Tile):
        if is_number(x) and isinstance(x, int) and x % divisor:
            raise TileTypeError(f"assume_divisible_by(): {x} is not divisible by {divisor}")
        return x
    if not x.dtype.is_int:
        raise TileTypeError(f"assume_divisible_by() needs an integer tile (got {x.dtype.name})")
    if divisor & (divisor - 1):
        return x              # Tile IR's div_by takes powers of two; nothing to record
    return Tile(ctx.b.value("assume", x.value, predicate=AssumePredicate("div_by", divisor=divisor)), x.dtype)


@impl(api.grid_dependency_control_wait)
def grid_dependency_control_wait(ctx):
    _on_token(ctx, "gdc_wait_tko")


@impl(api.grid_dependency_control_launch_dependents)
def grid_dependency_control_launch_dependents(ctx):
    _on_token(ctx, "gdc_launch_dependents_tko")


def _on_token(ctx, name):
    """An op ordered with the kernel's memory ops: on the token chain (dialect 13.4)."""
    op = ctx.b.create(name, ctx.token)
    ctx.token = op.results[0]
