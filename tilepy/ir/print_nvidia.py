"""NVIDIA's 13.4 spelling of the printed IR (what `tileirdisasm` and cuda-tile-opt print), as data.

The printer (`printer.py`) prints either dialect: `"nvidia"` (the default: `kernel.mlir()`,
`str(module)`) or `"spec"` (the 13.1 spec chapters' listings). The parser reads both. What differs
in NVIDIA's text, and where it is handled:
- op names: `pow` is `fpowf` (OP_NAMES);
- fp8 element types: `f8E4M3FN`, `f8E5M2`, `f8E8M0FNU` (ELEM_NAMES, `type_text`);
- `partition_view<tile=(..), padding_value = zero, tensor_view<..>>`: padding before the view;
- float literals in MLIR's exponent form (`1.000000e+00`), strings with `\\XX` escapes;
- syntax of some ops (SYNTAX): `token=%t` right after the operands of the pointer and atomic
  ops (no comma), `optimization_hints = <..>`, `flush_to_zero` before `propagate_nan`;
- attributes at their default are not printed (DEFAULTS, ROUNDING_DEFAULT);
- several results of one variadic group print as `%x:2` and are used as `%x#1` (printer.py);
- `for unsigned %iv in`, the terminator of a region that yields nothing is left out.
"""
from __future__ import annotations

from decimal import Decimal

import numpy as np

from ..types import PartitionViewType, PtrType, TensorViewType, TileType
from ..types import element as E
from ..types.convert import round_float
from .attrs import DenseValue, format_scalar

OP_NAMES = {"pow": "fpowf"}
ELEM_NAMES = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2", "e8m0": "f8E8M0FNU", "e2m1": "f4E2M1FN",
              "e5m3": "fnv8E5M3FNU"}     # NVIDIA 13.4-13.5 print it so (tileirdisasm)

_HINTS = "?( optimization_hints = $optimization_hints )?"
_INBOUNDS = "?( inbounds = $inbounds )?"
_PTR_TYPES = ": type($source) ?( , type($mask) )? ?( , type($paddingValue) )? "
SYNTAX = {
    "load_view_tko": "$memory_ordering_semantics ?( $memory_scope )? $view[$index] "
                     f"?( token = $token )? {_HINTS} {_INBOUNDS} : type($view) "
                     "?( , type1($index) )? -> type($tile), type($result_token)",
    "store_view_tko": "$memory_ordering_semantics ?( $memory_scope )? $tile, $view[$index] "
                      f"?( token = $token )? {_HINTS} {_INBOUNDS} : type($tile), type($view) "
                      "?( , type1($index) )? -> type($result_token)",
    "load_ptr_tko": "$memory_ordering_semantics ?( $memory_scope )? $source ?( , $mask )? "
                    f"?( , $paddingValue )? ?( token=$token )? {_HINTS} {_PTR_TYPES}"
                    "-> type($result), type($result_token)",
    "store_ptr_tko": "$memory_ordering_semantics ?( $memory_scope )? $destination, $value "
                     f"?( , $mask )? ?( token=$token )? {_HINTS} : type($destination), "
                     "type($value) ?( , type($mask) )? -> type($result_token)",
    "atomic_cas_tko": "$memory_ordering_semantics $memory_scope $pointers, $cmp, $val "
                      "?( , $mask )? ?( token=$token )? : type($pointers), type($cmp) "
                      "?( , type($mask) )? -> type($result), type($result_token)",
    "atomic_rmw_tko": "$memory_ordering_semantics $memory_scope $pointers, $mode, $arg "
                      "?( , $mask )? ?( token=$token )? : type($pointers), type($arg) "
                      "?( , type($mask) )? -> type($result), type($result_token)",
    "print_tko": "$str ?( , $args )? ?( token=$token )? ?( : type($args) )? "
                 "-> type($result_token)",
}
for _name in ("maxf", "minf"):
    SYNTAX[_name] = ("$lhs, $rhs ?( flush_to_zero$flush_to_zero )? "
                     "?( propagate_nan$propagate_nan )? : type($result)")

# attribute -> the value NVIDIA's printer leaves out; `rounding_mode` depends on the op.
DEFAULTS = {"overflow": "none", "rounding": "zero"}
ROUNDING_DEFAULT = {"tanh": "full", "exp": "full", "ftoi": "nearest_int_to_zero"}


def default_value(op_name: str | None, attr: str):
    """The value NVIDIA's dialect gives `attr` of `op_name` when it is left out (None: the
    attribute has no default); the bytecode layouts write it where tilepy's op has none."""
    if attr == "rounding_mode":
        return ROUNDING_DEFAULT.get(op_name, "nearest_even")
    return DEFAULTS.get(attr)


def is_default(op_name: str, attr: str, value) -> bool:
    default = default_value(op_name, attr)
    return default is not None and value == default


def elem_text(e) -> str:
    if isinstance(e, PtrType):
        return f"ptr<{elem_text(e.pointee)}>"
    return ELEM_NAMES.get(str(e), str(e))


def _dims(shape) -> str:
    return "x".join("?" if d is None else str(d) for d in shape)


def type_text(t) -> str:
    if isinstance(t, TileType):
        return f"tile<{_dims(t.shape) + 'x' if t.shape else ''}{elem_text(t.elem)}>"
    if isinstance(t, TensorViewType):
        if not t.shape:
            return f"tensor_view<{elem_text(t.elem)}>"
        strides = ",".join("?" if s is None else str(s) for s in t.strides)
        return f"tensor_view<{_dims(t.shape)}x{elem_text(t.elem)}, strides=[{strides}]>"
    if isinstance(t, PartitionViewType):
        items = [f"tile=({_dims(t.tile_shape)})"]
        if t.padding_value is not None:
            items.append(f"padding_value = {t.padding_value}")
        items.append(type_text(t.view))
        if t.dim_map is not None:
            items.append(f"dim_map=[{', '.join(map(str, t.dim_map))}]")
        return f"partition_view<{', '.join(items)}>"
    return elem_text(t) if isinstance(t, PtrType) else str(t)


def _apfloat(f: float, digits: int, padding: int, truncate_zero: bool) -> str:
    """LLVM's APFloat::toString of the exact value `f`: `digits` significant digits (whole
    tens beyond what they need truncated first, then rounded half up on the first dropped
    digit, trailing zeros dropped), scientific unless the number
    needs at most `padding` zeros; `truncate_zero=False` pads the mantissa (`1.000000e+00`)."""
    sign, ds, exp = Decimal(f).as_tuple()        # exactly: int(ds) * 10**exp
    n_int = int("".join(map(str, ds)))
    extra = n_int.bit_length() - (digits * 196 + 58) // 59
    if extra > 0 and extra * 59 // 196:          # APFloat first drops (truncates) whole tens
        tens = extra * 59 // 196
        n_int, exp = n_int // 10 ** tens, exp + tens
    ds = [int(c) for c in str(n_int)]
    while len(ds) > 1 and ds[-1] == 0:
        ds, exp = ds[:-1], exp + 1
    if len(ds) > digits:
        exp += len(ds) - digits
        up, ds = ds[digits] >= 5, ds[:digits]
        i = len(ds) - 1
        while up and i >= 0:
            ds[i], up = (ds[i] + 1) % 10, ds[i] == 9
            i -= 1
        if up:
            ds, exp = [1] + ds[:-1], exp + 1
        while len(ds) > 1 and ds[-1] == 0:
            ds, exp = ds[:-1], exp + 1
    n, sgn, text = len(ds), "-" if sign else "", "".join(map(str, ds))
    msd = exp + n - 1
    scientific = not padding or ((exp > padding or n + exp > digits) if exp >= 0
                                 else msd < 0 and -msd > padding)
    if scientific:
        mant = text[0] + "." + (text[1:] or ("0" if truncate_zero else ""))
        if not truncate_zero:
            mant += "0" * (digits - n + 1)
        e = f"{abs(msd):02d}" if not truncate_zero else str(abs(msd))
        return f"{sgn}{mant}{'E' if truncate_zero else 'e'}{'+' if msd >= 0 else '-'}{e}"
    if exp >= 0:
        return sgn + text + "0" * exp
    whole = exp + n
    if whole > 0:
        return f"{sgn}{text[:whole]}.{text[whole:]}"
    return f"{sgn}0.{'0' * -whole}{text}"


def scalar_text(v, elem) -> str:
    """MLIR's spelling of a float literal: `%.6e`-like when that reads back as the same value,
    else APFloat's natural precision when that has a '.', else (and Inf/NaN) the bit pattern."""
    if elem.is_int or not np.isfinite(float(v)):
        return format_scalar(v, elem)
    f = float(v)
    text = _apfloat(f, 6, 0, False)
    if float(round_float(float(text), elem)) == f:
        return text
    text = _apfloat(f, 2 + (elem.mant_bits + 1) * 59 // 196, 3, True)
    if "." in text:
        return text
    bits = np.asarray(v, dtype=E.NUMPY_DTYPE[elem]).view(f"u{elem.storage_bytes}")
    return f"0x{int(bits):0{2 * elem.storage_bytes}X}"


def hints_text(h) -> str:
    """optimization_hints: architectures and keys in order (an MLIR dictionary)."""
    def val(v):
        return ("true" if v else "false") if isinstance(v, bool) else (
            string_text(v) if isinstance(v, str) else str(v))
    parts = [f"{arch} = {{{', '.join(f'{k} = {val(v)}' for k, v in sorted(kv))}}}"
             for arch, kv in sorted(h.entries)]
    return "<" + ", ".join(parts) + ">"


def elements_text(arr, elem) -> str:
    if arr.ndim == 0:
        return scalar_text(arr[()], elem)
    return "[" + ", ".join(elements_text(a, elem) for a in arr) + "]"


HEX_ABOVE = 100      # MLIR prints a dense constant of more elements as its raw bytes in hex


def dense_text(d: DenseValue) -> str:
    """`<type: elements>`; an i1 constant with all elements equal is a splat in MLIR's storage
    (its packed buffer is one byte 0x00/0xFF), so it prints as one; more than HEX_ABOVE elements
    print as `"0x<raw bytes>"`."""
    arr = d.array
    if d.elem == E.I1 and arr.size and arr.ndim and (arr == arr.reshape(-1)[0]).all():
        arr = arr.reshape(-1)[0]
    if np.ndim(arr) and np.size(arr) > HEX_ABOVE:
        return f'<{elem_text(d.elem)}: "0x{_raw(arr, d.elem).hex().upper()}">'
    return f"<{elem_text(d.elem)}: {elements_text(np.asarray(arr), d.elem)}>"


def _raw(arr, elem) -> bytes:
    """MLIR's in-memory element storage: little-endian, i1 one byte, tf32 (19 bits) three."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    if elem == E.I1:
        return flat.astype(np.uint8).tobytes()
    if elem == E.TF32:
        return b"".join(int(b).to_bytes(3, "little")
                        for b in flat.astype(np.float32).view(np.uint32) >> 13)
    return flat.tobytes()


def dense_from_hex(elem, text: str) -> np.ndarray:
    """The elements (1-d) of a dense constant printed as `"0x<raw bytes>"`."""
    raw = bytes.fromhex(text[2:])
    if elem == E.I1:
        return np.frombuffer(raw, np.uint8) != 0
    if elem == E.TF32:
        bits = [int.from_bytes(raw[i:i + 3], "little") << 13 for i in range(0, len(raw), 3)]
        return np.array(bits, np.uint32).view(np.float32)
    return np.frombuffer(raw, E.NUMPY_DTYPE[elem]).copy()


def string_text(s: str) -> str:
    """MLIR's escaped string: printable ASCII as is, everything else (and `"`, `\\`) as \\XX."""
    out = []
    for b in s.encode("utf-8"):
        ch = chr(b)
        out.append(ch if 32 <= b < 127 and ch not in '"\\' else f"\\{b:02X}")
    return '"' + "".join(out) + '"'


def identity_text(d: DenseValue) -> str:
    """A reduce/scan identity; MLIR leaves out the type of an i1, i64 or f64 literal (not of an
    f64 spelled as its bit pattern)."""
    value = scalar_text(d.array[()], d.elem)
    bare = d.elem in (E.I1, E.I64) or (d.elem == E.F64 and not value.startswith("0x"))
    return value if bare else f"{value} : {elem_text(d.elem)}"
