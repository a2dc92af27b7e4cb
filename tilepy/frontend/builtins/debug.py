"""Printing and assertions from kernels (`printf`, `print`, f-strings, `assert_`), and the small
compile-time builtins (`ensure_constant`, `static_exception`, `assume_divisible_by`).

Prints become one `print_tko` op whose format has one C conversion per tile argument; the
conversions are normalized here to what the runtime passes to printf (ints of 32 bits or fewer
print as int, 64-bit ints with `ll`, floats as double). A tile prints like cuTile's:
`[1, 2, 3]`, nested for higher ranks, each element with the argument's conversion. What
print(), str() and f-strings show of other values is Python's text for them with the tiles left
as parts (`str_parts`, `repr_parts`): a tuple as its repr, a dataclass object as cuTile shows it
(its generated repr, or its own `__str__`/`__repr__` traced).
"""
from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass

from ...errors import TileStaticAssertionError, TileSyntaxError, TileTypeError
from ...ir import AssumePredicate
from ...types import dtype as D
from .. import api
from ..records import class_attr, is_record
from ..values import Array, Tile, type_name
from .registry import impl, require_constant
from .semantics import as_tile, convert, is_number

# %[flags][width][.precision][length]conversion
SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?P<prec>\.\d+|\.\*)?"
                  r"(?P<length>hh|h|ll|l|L|z|j|t|q)?(?P<conv>[diouxXeEfFgGaAcspn%])")
INT_CONV, FLOAT_CONV = set("diouxX"), set("eEfFgGaA")


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


def repr_parts(ctx, x) -> list:
    """The parts of `x` as Python's repr shows it (inside a tuple, a dataclass's generated
    repr): strings quoted, tiles by value, tuples nested, dataclass objects by their repr."""
    if isinstance(x, Tile):
        return [(None, x)]
    if isinstance(x, Array):
        raise TileTypeError("print(): arrays cannot be printed; load a tile first")
    if isinstance(x, tuple):
        out = ["("]
        for i, v in enumerate(x):
            out += ([", "] if i else []) + repr_parts(ctx, v)
        return out + [",)" if len(x) == 1 else ")"]
    if isinstance(x, FormatString):     # Python's choice of quote, from the literal text
        text = "".join(p for p in x.parts if isinstance(p, str))
        q = '"' if "'" in text and '"' not in text else "'"
        esc = [p.replace("\\", "\\\\").replace(q, "\\" + q).replace("\n", "\\n")
               if isinstance(p, str) else p for p in x.parts]
        return [q, *esc, q]
    if is_record(x):
        return _record_repr(ctx, x)
    return [repr(x)]


def str_parts(ctx, x) -> list:
    """The parts of `str(x)`, what print() and an f-string's `{x}` show: a tile by value, a
    tuple as its repr, a dataclass object by its `__str__` (traced) or else its repr."""
    if isinstance(x, Tile):
        return [(None, x)]
    if isinstance(x, FormatString):
        return list(x.parts)
    if isinstance(x, (tuple, Array)):
        return repr_parts(ctx, x)
    if is_record(x):
        method = class_attr(type(x), "__str__")
        if method is None or method is object.__str__:
            return _record_repr(ctx, x)
        return _traced_text(ctx, x, method, "__str__")
    return [str(x)]


def _record_repr(ctx, obj) -> list:
    """A dataclass object's repr, by cuTile's rules: the generated repr shown as Python shows
    it (`Foo(x=<tile>, z='hello')`, fields with `repr=False` left out), a custom `__repr__`
    traced, and with neither (`@dataclass(repr=False)`) `<Foo object>`."""
    cls = type(obj)
    if _generated_repr(cls):
        out = [f"{cls.__qualname__}("]
        shown = [f for f in dataclasses.fields(cls) if f.repr]
        for i, f in enumerate(shown):
            out += [f"{', ' if i else ''}{f.name}=", *repr_parts(ctx, getattr(obj, f.name))]
        return out + [")"]
    method = class_attr(cls, "__repr__")
    if method is None or method is object.__repr__:
        return [f"<{cls.__qualname__} object>"]
    return _traced_text(ctx, obj, method, "__repr__")


def _generated_repr(cls) -> bool:
    """Whether `cls.__repr__` is the one `@dataclass` generated (its code generator's function,
    wrapped against recursion)."""
    wrapped = getattr(cls.__repr__, "__wrapped__", None)
    return bool(cls.__dataclass_params__.repr) and \
        getattr(wrapped, "__qualname__", "") == "__create_fn__.<locals>.__repr__"


def _traced_text(ctx, obj, method, name: str) -> list:
    """The parts of what a dataclass's `__str__`/`__repr__` returns, its body traced."""
    res = ctx.tracer.call_method(method, [obj])
    if isinstance(res, str):
        return [res]
    if isinstance(res, FormatString):
        return list(res.parts)
    raise TileTypeError(f"Expected {type(obj).__name__}.{name}() to return a string, got "
                        f"{type_name(res)}")


def _split(fmt: str):
    """Literal text and conversion matches of a printf format; a '%' that starts none is
    refused (cuTile's words first)."""
    pos = start = 0
    while (pos := fmt.find("%", pos)) >= 0:
        m = SPEC.match(fmt, pos)
        if m is None:
            raise TileTypeError(f"Invalid format string: {fmt[pos:pos + 6]!r} (at offset {pos} "
                                f"of {fmt!r}) starts no printf conversion; write %% for a "
                                f"percent sign")
        yield fmt[start:pos], m
        pos = start = m.end()
    yield fmt[start:], None


def _arg_for(ctx, spec: re.Match, x, index: int | None = None) -> tuple[str, Tile]:
    """The normalized conversion and the (converted) tile for one printf argument (its
    `index`, for printf(), where a conversion of the other kind is refused as cuTile does; an
    f-string's `{n:f}` converts)."""
    conv = spec["conv"]
    if spec["width"] == "*" or spec["prec"] == ".*":
        raise TileTypeError("printf(): '*' widths and precisions are not supported")
    if conv in "cspn":
        raise TileTypeError(f"Specifier {conv} in {spec[0]} is not supported: printf() prints "
                            f"tiles and numbers with %d, %u, %x, %f, %e, %g, %a and their kin")
    if isinstance(x, Array) or not (isinstance(x, Tile) or is_number(x)):
        raise TileTypeError(f"printf() prints tiles and numbers (got {type_name(x)})")
    t = as_tile(ctx, x)
    if index is not None and t.dtype.is_float != (conv in FLOAT_CONV):
        want = "%f or %e" if t.dtype.is_float else "%d or %u"
        raise TileTypeError(f"Format {spec[0]} for arg #{index} got unexpected type of "
                            f"{type_name(t)}: printf() takes {want} for it, or convert it "
                            f"with astype()")
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
        lead = "Not enough" if len(specs) > len(args) else "Too many"
        raise TileTypeError(f"{lead} arguments for format string: printf()'s format has "
                            f"{len(specs)} conversion(s) but {len(args)} argument(s) were given")
    it = iter(args)
    for text, m in _split(format):
        out.append(text)
        if m is None:
            continue
        if m["conv"] == "%":
            out.append("%%")
            continue
        spec, t = _arg_for(ctx, m, next(it), len(tiles))
        out.append(spec)
        tiles.append(t)
    emit_print(ctx, "".join(out), tiles)


def _default_spec(t: Tile) -> str:
    if t.dtype.is_float:
        return "%f"
    return "%u" if t.dtype.is_int and not t.dtype.signed else "%d"


def _print_parts(ctx, x, out: list, tiles: list):
    """`x` as print() shows it (its str), into a printf format and its tile arguments."""
    for p in str_parts(ctx, x):
        if isinstance(p, str):
            out.append(p.replace("%", "%%"))
        else:
            spec, t = p
            s, t = _arg_for(ctx, SPEC.fullmatch(spec or _default_spec(t)), t)
            out.append(s)
            tiles.append(t)


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
        if is_record(x):
            parts.extend(_record_format(tr.ctx, x, spec, v.conversion))
            continue
        runtime = isinstance(x, (Tile, FormatString)) or \
            (isinstance(x, tuple) and _shows_runtime(x))
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
            parts.extend(repr_parts(tr.ctx, x))
        elif isinstance(x, Array):
            raise TileTypeError("f-strings cannot format arrays; load a tile first")
        else:
            conv = {115: str, 114: repr, 97: ascii}.get(v.conversion, lambda y: y)
            parts.append(format(conv(x), spec))
    return joined(parts)


def joined(parts: list):
    """A str when every part is text, else a FormatString for print()."""
    if all(isinstance(p, str) for p in parts):
        return "".join(parts)
    return FormatString(parts)


def _shows_runtime(x) -> bool:
    """Whether a tuple shows run-time values (tiles, runtime strings, dataclass objects)."""
    return any(_shows_runtime(v) if isinstance(v, tuple) else
               isinstance(v, (Tile, FormatString)) or is_record(v) for v in x)


def _record_format(ctx, obj, spec: str, conversion: int) -> list:
    """A dataclass object in an f-string (`{obj}`, `{obj!r}`): as cuTile, its str or repr; a
    class's own `__format__` and a format spec are refused."""
    cls = type(obj)
    fmt = class_attr(cls, "__format__")
    if fmt is not None and fmt is not object.__format__:
        raise TileTypeError("Formatting dataclass values with custom __format__() is not "
                            "supported")
    if spec:
        raise TileTypeError(f"f-string: cannot apply format spec to a value of type "
                            f"{cls.__qualname__}")
    return repr_parts(ctx, obj) if conversion in (114, 97) else str_parts(ctx, obj)


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
