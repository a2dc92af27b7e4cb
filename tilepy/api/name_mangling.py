"""cuTile's kernel name mangling (`ct.compilation.mangle_kernel_name`/`demangle_kernel_name`):
a kernel's symbol that spells its signature, so one binary can hold a kernel per signature.

`<function name>_K<calling convention code>` then `_<constraint>` per parameter:
- `S<dtype>` a scalar (dtype codes in `DTYPE_CODES`: `i32`, `bf16`, `f8m3fn`, ...);
- `B0`/`B1`, `I<int>`, `F<16 hex digits of the float64's bits>` constants (`Cd_<dtype>` a dtype
  constant, tilepy's); a negative int is `_<magnitude>`;
- `A<ndim><dtype>` an array, then `_<hex axis mask><predicates>` per group of axes sharing
  predicates (masks ascending; `s` constant shape, `i` shape divisor, `t` constant stride, `v`
  stride divisor, `l` stride lower bound, each with its int), then, when any holds,
  `_` + `p<base address divisor>`, `g<hex alias group id>`..., `i` (may alias internally), `u`
  (uint32 indices) or `w` (int64 indices);
- `L` a list: `g<id>`... of the list, `i` when its elements may alias, its element's `A...`;
- `T<count>` a tuple, then its items' constraints without separators;
- `D<module><qualname><count>` a dataclass (calling convention 3): its class's module and
  qualified name as strings, its field count, then its fields' constraints;
- `Cn_` None, `Cs_<string>` a string, `Ce_<module><qualname><member name>` an Enum member
  constants (calling convention 3's).
Alias groups are numbered by first appearance (a list's own before its element's). Strings
(`mangle_string`) keep ASCII letters and digits but `K` (so `_K` only ever separates the name)
and escape the rest: `__`, `_k`, `_<2 hex>`, `_u<4 hex>`, `_w<8 hex>`, ending with `_z`.
A mangled name always demangles back to its signature (checked when it is made). Demangling a
dataclass or an Enum needs its class: `demangle_kernel_name(symbol, allowed_dataclasses=...,
allowed_enums=...)` (classes, or a function `(module, qualname) -> class`), as cuTile's.
"""
from __future__ import annotations

import enum
import re
import struct

from ..types import dtype as D
from .compilation import (_MANGLE, ArrayConstraint, CallingConvention, ConstantConstraint,
                          DataclassConstraint, KernelSignature, ListConstraint, ScalarConstraint,
                          TupleConstraint, _alias_uses)

DTYPE_CODES = {D.bool_: "b8", D.uint8: "u8", D.uint16: "u16", D.uint32: "u32", D.uint64: "u64",
               D.int8: "i8", D.int16: "i16", D.int32: "i32", D.int64: "i64",
               D.float16: "f16", D.float32: "f32", D.float64: "f64", D.bfloat16: "bf16",
               D.tfloat32: "tf32", D.float8_e4m3fn: "f8m3fn", D.float8_e5m2: "f8m2",
               D.float8_e8m0fnu: "f8m0fnu"}
_DTYPES = {code: dt for dt, code in DTYPE_CODES.items()}
# an array's per-axis predicates: (letter, field, value meaning "no predicate")
_AXIS = (("s", "shape_constant", None), ("i", "shape_divisible_by", 1),
         ("t", "stride_constant", None), ("v", "stride_divisible_by", 1),
         ("l", "stride_lower_bound_incl", None))


# ----------------------------------------------------------------------------- mangling
def mangle_kernel_name(function_name: str, kernel_signature: KernelSignature) -> str:
    """The symbol of `function_name` compiled for `kernel_signature`."""
    groups: dict[str, int] = {}
    for _, names in _alias_uses(kernel_signature.parameters):
        for g in names:
            groups.setdefault(g, len(groups))
    seen: set = set()                 # the dataclasses and Enum classes it names
    out = f"{function_name}_K{kernel_signature.calling_convention.code}" + "".join(
        "_" + _constraint(c, groups, seen) for c in kernel_signature.parameters)
    name, back = _demangle(out, list(groups), seen, seen)
    if name != function_name or back.parameters != kernel_signature.parameters:
        raise ValueError(f"the mangled name {out!r} does not demangle to its signature")
    return out


_MANGLE[:] = [mangle_kernel_name]       # KernelSignature.with_mangled_symbol's


def _constraint(c, groups: dict, seen: set) -> str:
    if isinstance(c, ScalarConstraint):
        return "S" + dtype_code(c.dtype)
    if isinstance(c, ArrayConstraint):
        return "A" + _array(c, groups)
    if isinstance(c, ListConstraint):
        return "L" + _group_ids(c.alias_groups, groups) + ("i" if c.elements_may_alias else "") \
            + _constraint(c.element, groups, seen)
    if isinstance(c, TupleConstraint):
        return f"T{len(c.items)}" + "".join(_constraint(x, groups, seen) for x in c.items)
    if isinstance(c, DataclassConstraint):
        return "D" + _global(c.cls, seen) + str(len(c.fields)) + "".join(
            _constraint(x, groups, seen) for x in c.fields)
    if isinstance(c, ConstantConstraint):
        v = c.value
        if v is None:
            return "Cn_"
        if isinstance(v, str):
            return "Cs_" + mangle_string(v)
        if isinstance(v, enum.Enum):
            return "Ce_" + _global(type(v), seen) + mangle_string(v.name)
        if isinstance(v, bool):
            return f"B{int(v)}"
        if isinstance(v, int):
            return "I" + _int(v)
        if isinstance(v, float):
            return "F" + struct.pack(">d", v).hex()
        return "Cd_" + dtype_code(v)
    raise TypeError(f"Unexpected constraint type: {type(c)}")


def _array(a: ArrayConstraint, groups: dict) -> str:
    masks: dict[str, int] = {}          # predicate -> axes, in the order of _AXIS then axes
    for letter, field, none in _AXIS:
        for axis, v in enumerate(getattr(a, field)):
            if v != none:
                pred = letter + _int(v)
                masks[pred] = masks.get(pred, 0) | 1 << axis
    by_mask: dict[int, str] = {}
    for pred, mask in masks.items():
        by_mask[mask] = by_mask.get(mask, "") + pred
    out = f"{a.ndim}{dtype_code(a.dtype)}" + "".join(f"_{m:x}{by_mask[m]}"
                                                     for m in sorted(by_mask))
    extras = (f"p{_int(a.base_addr_divisible_by)}" if a.base_addr_divisible_by != 1 else "") \
        + _group_ids(a.alias_groups, groups) + ("i" if a.may_alias_internally else "") \
        + {D.uint32: "u", D.int64: "w"}.get(a.index_dtype, "")
    return out + ("_" + extras if extras else "")


def _global(cls, seen: set) -> str:
    """A class as its module and qualified name (`seen` collects it for the round trip)."""
    seen.add(cls)
    return mangle_string(cls.__module__) + mangle_string(cls.__qualname__)


def _group_ids(names, groups: dict) -> str:
    return "".join(f"g{i:x}" for i in sorted(groups[g] for g in names))


def _int(v: int) -> str:
    return f"_{-v}" if v < 0 else str(v)


def dtype_code(dtype) -> str:
    code = DTYPE_CODES.get(dtype)
    if code is None:
        raise ValueError(f"Unexpected dtype {dtype}")
    return code


_PLAIN = "[a-zA-JL-Z0-9]"        # kept as they are: ASCII letters and digits but K


def mangle_string(s: str) -> str:
    """`s` with every character but ASCII letters and digits (and K) escaped, then `_z`."""
    out = []
    for ch in s:
        n = ord(ch)
        out.append(ch if re.fullmatch(_PLAIN, ch) else "__" if ch == "_" else
                   "_k" if ch == "K" else f"_{n:02x}" if n <= 0xff else
                   f"_u{n:04x}" if n <= 0xffff else f"_w{n:08x}")
    return "".join(out) + "_z"


# ----------------------------------------------------------------------------- demangling
class Cursor:
    """A position in a mangled name: `original`, what is left of it (`remaining`) and the
    offset of that rest (`pos`); errors name the offset and what follows it."""

    def __init__(self, original: str, remaining: str, pos: int = 0):
        self.original, self.remaining, self.pos = original, remaining, pos

    def clone(self) -> "Cursor":
        return Cursor(self.original, self.remaining, self.pos)

    def error(self, message: str) -> ValueError:
        return ValueError(f"Invalid mangled name '{self.original}'. At offset #{self.pos}, "
                          f"near '{self.remaining[:20]}': {message}")

    def read(self, pattern: str) -> str | None:
        m = re.match(pattern, self.remaining)
        if m is None:
            return None
        self.remaining = self.remaining[m.end():]
        self.pos += m.end()
        return m.group(0)

    def expect(self, pattern: str, message: str) -> str:
        got = self.read(pattern)
        if got is None:
            raise self.error(message)
        return got


def demangle_kernel_name(symbol: str, *, allowed_dataclasses=(), allowed_enums=()
                         ) -> tuple[str, KernelSignature]:
    """(function name, signature) of a mangled kernel name; alias groups are named `group<i>`.
    A dataclass or Enum class it names must be one of `allowed_dataclasses` / `allowed_enums`
    (classes, or a function `(module, qualname)` giving the class)."""
    return _demangle(symbol, None, allowed_dataclasses, allowed_enums)


def demangle_string(cursor: Cursor) -> str:
    """The string `mangle_string` made, read from `cursor` up to its `_z`."""
    out = []
    while True:
        plain = cursor.read(_PLAIN + "+")
        if plain:
            out.append(plain)
        cursor.expect("_", "Expected an underscore")
        esc = cursor.expect("[_0-9a-fkzuw]", "Expected a valid character escape")
        if esc == "z":
            return "".join(out)
        if esc in "_k":
            out.append("_" if esc == "_" else "K")
        else:
            width = {"u": 4, "w": 8}.get(esc)
            digits = cursor.expect(f"[0-9a-f]{{{width}}}", f"Expected {width} hex digits after "
                                   f"'_{esc}' escape") if width else \
                esc + cursor.expect("[0-9a-f]", "Expected 2 hex digits after '_' escape")
            out.append(chr(int(digits, 16)))


def _demangle(symbol: str, group_names, allowed_dataclasses=(), allowed_enums=()
              ) -> tuple[str, KernelSignature]:
    at = symbol.rfind("_K")
    if at < 0:
        raise ValueError(f"`{symbol}` is not a mangled kernel name")
    cursor = Cursor(symbol, symbol[at + 2:], at + 2)
    code = cursor.expect("[^_]+", "Expected a calling convention code after _K")
    cconv = CallingConvention.from_code(code)
    groups = _Groups(group_names, {
        "dataclasses": _provider(allowed_dataclasses, "allowed_dataclasses"),
        "enums": _provider(allowed_enums, "allowed_enums")})
    params = []
    while cursor.remaining:
        cursor.expect("_", "Expected an underscore")
        params.append(_read_constraint(cursor, groups))
    return symbol[:at], KernelSignature(params, cconv, symbol)


def _provider(allowed, list_name: str):
    """`(module, qualname) -> class` over a list of classes (or the caller's function)."""
    if callable(allowed):
        return allowed
    allowed = tuple(allowed)

    def find(module: str, qualname: str):
        for c in allowed:
            if c.__module__ == module and c.__qualname__ == qualname:
                return c
        raise ValueError(f"Global '{module}.{qualname}' not found in the '{list_name}' list; "
                         f"refusing to demangle the name.")
    return find


def _read_global(cursor: Cursor, groups: "_Groups", kind: str):
    module = demangle_string(cursor)
    return groups.classes[kind](module, demangle_string(cursor))


class _Groups:
    """Alias group ids as they are read: each new one the next number, increasing within a
    constraint; `classes`: per kind of class a name may hold, how it is found."""

    def __init__(self, names, classes: dict):
        self.names, self.last, self.classes = names, -1, classes

    def read(self, cursor: Cursor) -> list[str]:
        out, prev = [], None
        while cursor.read("g") is not None:
            start = cursor.clone()
            text = cursor.expect("[0-9a-f]+", "Expected a hex alias group ID")
            if len(text) > 1 and text[0] == "0":
                raise start.error("Leading zero in alias group ID")
            gid = int(text, 16)
            if gid > self.last + 1:
                raise start.error("Invalid alias group ID")
            if prev is not None and gid <= prev:
                raise start.error("Alias group IDs are not strictly increasing")
            self.last = max(self.last, gid)
            prev = gid
            out.append(f"group{gid}" if self.names is None else self.names[gid])
        return out


def _read_constraint(cursor: Cursor, groups: _Groups):
    start = cursor.clone()
    kind = cursor.expect("[A-BD-Z]|C[a-z0-9]+_",
                         "Expected a constraint starting with a capital letter")
    if kind == "S":
        return ScalarConstraint(_read_dtype(cursor))
    if kind == "A":
        return _read_array(cursor, groups)
    if kind == "L":
        names = groups.read(cursor)
        may_alias = cursor.read("i") is not None
        at = cursor.clone()
        element = _read_constraint(cursor, groups)
        if not isinstance(element, ArrayConstraint):
            raise at.error("Expected an ArrayConstraint")
        return ListConstraint(element, alias_groups=names, elements_may_alias=may_alias)
    if kind == "T":
        count = int(cursor.expect("[0-9]+", "Expected element count"))
        return TupleConstraint([_read_constraint(cursor, groups) for _ in range(count)])
    if kind == "B":
        return ConstantConstraint(cursor.expect("[01]", "Expected 0 or 1") == "1")
    if kind == "I":
        return ConstantConstraint(_read_int(cursor))
    if kind == "F":
        bits = cursor.expect("[0-9a-f]{16}", "Expected 16 hex digits")
        return ConstantConstraint(struct.unpack(">d", bytes.fromhex(bits))[0])
    if kind == "D":
        cls = _read_global(cursor, groups, "dataclasses")
        count = int(cursor.expect("[1-9][0-9]*", "Expected field count"))
        return DataclassConstraint(cls, [_read_constraint(cursor, groups) for _ in range(count)])
    if kind == "Cd_":
        return ConstantConstraint(_read_dtype(cursor))
    if kind == "Cn_":
        return ConstantConstraint(None)
    if kind == "Cs_":
        return ConstantConstraint(demangle_string(cursor))
    if kind == "Ce_":
        cls = _read_global(cursor, groups, "enums")
        return ConstantConstraint(cls.__members__[demangle_string(cursor)])
    raise start.error(f"Unexpected constraint code '{kind}'")


def _read_dtype(cursor: Cursor):
    start = cursor.clone()
    code = cursor.expect("[a-z0-9]+", "Expected dtype name")
    if code not in _DTYPES:
        raise start.error(f"Unknown dtype name `{code}`")
    return _DTYPES[code]


def _read_int(cursor: Cursor) -> int:
    sign = -1 if cursor.read("_") is not None else 1
    return sign * int(cursor.expect("[0-9]+", "Expected a decimal integer"))


def _read_divisor(cursor: Cursor) -> int:
    start = cursor.clone()
    v = _read_int(cursor)
    if v <= 1:
        raise start.error("Divisibility must be greater than 1")
    return v


def _read_array(cursor: Cursor, groups: _Groups) -> ArrayConstraint:
    start = cursor.clone()
    ndim = int(cursor.expect("[0-9]+", "Expected ndim integer"))
    dtype = _read_dtype(cursor)
    fields = {field: [none] * ndim for _, field, none in _AXIS}
    readers = {"s": _read_int, "i": _read_divisor, "t": _read_int, "v": _read_divisor,
               "l": _read_int}
    while True:
        at = cursor.clone()
        mask_text = cursor.read("_[0-9a-f]+")
        if mask_text is None:
            break
        mask = int(mask_text[1:], 16)
        if mask == 0:
            raise at.error("Zero axis mask")
        if mask.bit_length() > ndim:
            raise at.error(f"Axis mask {mask:x} has more bits ({mask.bit_length()}) than array "
                           f"ndim ({ndim})")
        for letter, field, none in _AXIS:           # in this order, each at most once
            if cursor.read(letter) is None:
                continue
            v = readers[letter](cursor)
            for axis in range(ndim):
                if mask >> axis & 1:
                    if fields[field][axis] != none:
                        raise at.error(f"{field} specified more than once for axis #{axis}")
                    fields[field][axis] = v
    for axis in range(ndim):
        if fields["stride_constant"][axis] is not None and (
                fields["stride_divisible_by"][axis] != 1 or
                fields["stride_lower_bound_incl"][axis] is not None):
            raise start.error(f"Stride divisibility or lower bound specified together with "
                              f"static stride for axis {axis}")
    base, names, internal, index = 1, [], False, D.int32
    if cursor.read("_(?=[a-z])") is not None:
        if cursor.read("p") is not None:
            base = _read_divisor(cursor)
        names = groups.read(cursor)
        internal = cursor.read("i") is not None
        index = D.uint32 if cursor.read("u") else D.int64 if cursor.read("w") else D.int32
    return ArrayConstraint(dtype, ndim, index_dtype=index, alias_groups=names,
                           may_alias_internally=internal, base_addr_divisible_by=base, **fields)
