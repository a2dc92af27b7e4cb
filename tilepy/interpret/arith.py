"""Element-wise ops: floating point (spec 8.7), integer (8.8, 8.9), comparisons and select (8.3),
conversions (8.4).

Float ops decode their operands exactly to float64, compute there and round once into the result
type (`floats.round_f64`); see `floats.py` for why that is exact for + - * / sqrt fma and the
conversions. Directed rounding modes go through exact rationals. The math functions (exp, log,
sin, ...) are computed with numpy's float64 functions and rounded once: the spec does not state
their accuracy, so the interpreter's result is a reference within tolerance, not bit-exact.

Integer ops read the signless bits signed or unsigned as the op says and wrap results modulo 2^N.
Undefined behavior the spec names (division by zero, signed division overflow, ftoi of Inf, an
overflow the op's `overflow` attribute promised not to happen) raises TileValueError.
"""
from __future__ import annotations

import operator
from fractions import Fraction

import numpy as np

from ..errors import TileUnsupportedFeatureError, TileValueError
from ..types import element as E
from ..types.convert import decode_bits, encode_bits, has_encoded_bits
from . import floats as F
from .values import as_signed, as_unsigned, int_range, wrap

HANDLERS: dict = {}


def handler(*names):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco


def _elem(op, i=0):
    return op.results[i].type.elem


def _ub(ex, op, mask, what: str):
    """Lanes where the spec leaves the result undefined: marked, not an error until observed."""
    ex.poison(op, mask, f"{what} (undefined behavior in Tile IR)")


# ------------------------------------------------------------------------------ floats
# Rounding modes each op accepts (spec 8.7 modifier tables); "approx" and "full" are computed
# correctly rounded, which is within the error bounds the spec gives for them.
_ROUNDINGS = {
    "addf": F.MODES, "subf": F.MODES, "mulf": F.MODES, "fma": F.MODES,
    "divf": F.MODES + ("approx", "full"), "sqrt": F.MODES + ("approx",),
    "tanh": ("approx", "full"), "exp": ("approx", "full"),
}
_EXACT = {   # the rational computation of the ops that can round in directed modes
    "addf": operator.add, "subf": operator.sub, "mulf": operator.mul,
    "divf": operator.truediv, "fma": lambda a, b, c: a * b + c,
}


def _mode(op) -> str:
    m = op.attrs.get("rounding_mode")
    if m is None:
        return "nearest_even"
    if m not in _ROUNDINGS.get(op.name, ()):
        raise TileUnsupportedFeatureError(f"{op.name}: rounding mode '{m}' is not defined for this "
                                          f"op (spec 8.7 modifier table)")
    return "nearest_even" if m in ("approx", "full") else m


def _ftz(op, elem) -> bool:
    if not op.attrs.get("flush_to_zero"):
        return False
    if elem != E.F32:
        raise TileUnsupportedFeatureError(f"{op.name}: flush_to_zero applies to f32 only (got {elem}, "
                                          f"spec 8.7 modifier table)")
    return True


def _sqrt_exact(a: Fraction) -> Fraction:
    """sqrt(a) to 200 bits, with a sticky half-unit when inexact (rounds correctly after)."""
    from math import isqrt
    if not isinstance(a, Fraction):
        return np.sqrt(a)                          # float path: specials and the zero's sign
    if a < 0:
        return Fraction(float("nan"))
    n, d = a.numerator, a.denominator
    scale = 400
    r = isqrt((n << scale) * d)
    exact = r * r == (n << scale) * d
    return (Fraction(r) + (0 if exact else Fraction(1, 2))) / (d * (1 << (scale // 2)))


def _sum_zero_sign_rd(x, y) -> bool:
    """IEEE 754 6.3: an exact zero sum x + y is -0 when rounding toward -inf unless both
    addends are +0 (x + x keeps x's sign)."""
    return not (x == 0 and y == 0 and not np.signbit(x) and not np.signbit(y))


_ZERO_SIGN_RD = {   # the addends of each op whose exact zero result follows 6.3
    "addf": lambda a, b: _sum_zero_sign_rd(a, b), "subf": lambda a, b: _sum_zero_sign_rd(a, -b),
    "fma": lambda a, b, c: _sum_zero_sign_rd(a * b, c),
}


def _float_compute(op, elem, xs, fn):
    """fn on float64 operands, rounded once into elem in the op's rounding mode."""
    mode = _mode(op)
    ftz = _ftz(op, elem)
    if ftz:
        xs = [F.flush_subnormals(x, elem) for x in xs]
    with np.errstate(all="ignore"):
        if mode == "nearest_even":
            r = _rne(op.name, elem, xs, fn)
        elif op.name == "sqrt":
            r = F.exact_elementwise(_sqrt_exact, xs, elem, mode)
        else:
            zs = _ZERO_SIGN_RD.get(op.name) if mode == "negative_inf" else None
            r = F.exact_elementwise(_EXACT[op.name], xs, elem, mode, zero_sign=zs)
    r = F.round_f64(r, elem)
    if ftz:
        r = F.flush_subnormals(r, elem)
    return F.encode(r, elem)


def _rne(name, elem, xs, fn):
    if name == "fma":
        if elem == E.F64:
            return F.exact_elementwise(_EXACT["fma"], xs, elem, "nearest_even")
        return F.ro_sum(xs[0] * xs[1], xs[2])          # product exact in float64 (p <= 24)
    r = fn(*xs)
    return F.round_f64(r, elem)


_FBIN = {
    "addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
    "remf": np.fmod, "pow": np.power, "atan2": np.arctan2,
}
_FUN = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
}
# Ops whose result the spec leaves to the implementation's accuracy (documented tolerance).
INEXACT_OPS = frozenset({"exp", "exp2", "log", "log2", "rsqrt", "sin", "cos", "tan", "sinh",
                         "cosh", "tanh", "pow", "fpowi", "atan2"})


@handler(*_FBIN, "fma")
def float_nary(ex, op, args):
    elem = _elem(op)
    fn = _FBIN.get(op.name)
    return [_float_compute(op, elem, [F.to_f64(a) for a in args], fn)]


@handler(*_FUN)
def float_unary(ex, op, args):
    elem = _elem(op)
    return [_float_compute(op, elem, [F.to_f64(args[0])], _FUN[op.name])]


@handler("fpowi")
def float_powi(ex, op, args):
    """source ** exponent, the integer exponent read signed (i1 true is -1)."""
    elem = _elem(op)
    n = as_signed(args[1], op.exponent.type.elem).astype(np.float64)
    return [_float_compute(op, elem, [F.to_f64(args[0]), n], np.power)]


@handler("negf", "absf")
def float_sign(ex, op, args):
    """Sign-bit operations: exact on every value, NaN payloads included."""
    a = np.asarray(args[0])
    bits = a.view(f"u{a.dtype.itemsize}")
    sign = np.array(1 << (8 * a.dtype.itemsize - 1), dtype=bits.dtype)
    out = bits ^ sign if op.name == "negf" else bits & ~sign
    return [out.view(a.dtype)]


def _canonical_nan(elem):
    return F.encode(np.array(np.nan), elem)


@handler("maxf", "minf")
def float_minmax(ex, op, args):
    """IEEE 754-2019 maximum/maximumNumber (minimum/minimumNumber); +0 > -0; canonical NaN."""
    elem = _elem(op)
    ftz = _ftz(op, elem)
    a, b = (F.to_f64(x) for x in args)
    if ftz:
        a, b = F.flush_subnormals(a, elem), F.flush_subnormals(b, elem)
    want_max = op.name == "maxf"
    a_wins = np.where(a == b, np.signbit(a) != want_max, (a > b) if want_max else (a < b))
    r = np.where(a_wins, a, b)
    na, nb = np.isnan(a), np.isnan(b)
    if op.attrs.get("propagate_nan"):
        r = np.where(na | nb, np.nan, r)
    else:
        r = np.where(na & ~nb, b, np.where(nb & ~na, a, np.where(na & nb, np.nan, r)))
    out = F.encode(r, elem)
    nan = np.isnan(r)
    if nan.any():
        out = np.where(nan, _canonical_nan(elem), out)
    return [out]


# ------------------------------------------------------------------------------ integers
def _signed_attr(op) -> bool:
    return op.attrs.get("signedness") == "signed"


def _check_overflow(ex, op, elem, exact_signed, exact_unsigned):
    """The `overflow` assumption: lanes whose exact result does not fit are undefined."""
    ov = op.attrs.get("overflow") or "none"
    checks = {"no_signed_wrap": (True,), "no_unsigned_wrap": (False,), "no_wrap": (True, False)}
    for signed in checks.get(ov, ()):
        vals = np.asarray(exact_signed if signed else exact_unsigned, dtype=object)
        lo, hi = int_range(elem, signed)
        bad = np.array([not lo <= int(v) <= hi for v in vals.reshape(-1)]).reshape(vals.shape)
        _ub(ex, op, bad, f"the result wraps around although the op says overflow<{ov}>")


def _pyints(a, elem, signed):
    """Object array of Python ints (exact arithmetic of any width)."""
    v = as_signed(a, elem) if signed else as_unsigned(a, elem)
    return np.asarray(v).astype(object)     # a 0-d value too (a numpy scalar's astype is an int)


def _from_pyints(v, elem):
    v = np.asarray(v, dtype=object)
    u = np.array([int(x) % (1 << 64) for x in v.reshape(-1)], dtype=np.uint64).reshape(v.shape)
    return wrap(u, elem)


_IARITH = {"addi": operator.add, "subi": operator.sub, "muli": operator.mul}


@handler("addi", "subi", "muli")
def int_arith(ex, op, args):
    elem = _elem(op)
    f = _IARITH[op.name]
    if (op.attrs.get("overflow") or "none") != "none":
        _check_overflow(ex, op, elem, f(*(_pyints(a, elem, True) for a in args)),
                        f(*(_pyints(a, elem, False) for a in args)))
    return [wrap(f(*(as_unsigned(a, elem) for a in args)), elem)]


@handler("negi")
def int_neg(ex, op, args):
    elem = _elem(op)
    if (op.attrs.get("overflow") or "none") != "none":
        _check_overflow(ex, op, elem, -_pyints(args[0], elem, True), -_pyints(args[0], elem, False))
    return [wrap(np.uint64(0) - as_unsigned(args[0], elem), elem)]


@handler("absi")
def int_abs(ex, op, args):
    """|x| of the signed reading, written back as unsigned bits (abs(MIN) = MIN's bits)."""
    elem = _elem(op)
    return [_from_pyints(np.abs(_pyints(args[0], elem, True)), elem)]


_BITWISE = {"andi": np.bitwise_and, "ori": np.bitwise_or, "xori": np.bitwise_xor}


@handler(*_BITWISE)
def int_bitwise(ex, op, args):
    elem = _elem(op)
    return [wrap(_BITWISE[op.name](*(as_unsigned(a, elem) for a in args)), elem)]


@handler("shli")
def int_shl(ex, op, args):
    """x << y, y read unsigned; y >= N gives 0 (the spec defers to the native PTX shl, which
    clamps the shift amount)."""
    elem = _elem(op)
    x, y = (_pyints(a, elem, False) for a in args)
    exact = np.array([int(a) << int(min(b, 64)) for a, b in zip(x.reshape(-1), y.reshape(-1))],
                     dtype=object).reshape(x.shape)
    if (op.attrs.get("overflow") or "none") != "none":
        xs = _pyints(args[0], elem, True)
        ex_s = np.array([int(a) << int(min(b, 64)) for a, b in zip(xs.reshape(-1), y.reshape(-1))],
                        dtype=object).reshape(x.shape)
        _check_overflow(ex, op, elem, ex_s, exact)
    return [_from_pyints(np.where(y >= elem.bits, 0, exact), elem)]


@handler("shri")
def int_shr(ex, op, args):
    """x >> y (arithmetic when signed), y read unsigned; y >= N shifts every bit out."""
    elem = _elem(op)
    x = _pyints(args[0], elem, _signed_attr(op))
    y = _pyints(args[1], elem, False)
    r = np.array([int(a) >> int(min(b, 64)) for a, b in zip(x.reshape(-1), y.reshape(-1))],
                 dtype=object).reshape(x.shape)
    return [_from_pyints(r, elem)]


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@handler("divi")
def int_div(ex, op, args):
    elem = _elem(op)
    signed = _signed_attr(op)
    rnd = op.attrs.get("rounding") or "zero"
    if rnd not in ("zero", "negative_inf", "positive_inf"):
        raise TileUnsupportedFeatureError(f"divi: rounding mode '{rnd}' is not valid (zero, "
                                          f"negative_inf or positive_inf, spec 8.8.4)")
    if rnd == "negative_inf" and not signed:
        raise TileValueError("divi: rounding<negative_inf> with unsigned is not a valid "
                             "combination (spec 8.8.4)")
    a, b = (_pyints(x, elem, signed) for x in args)
    out, zero, over = [], [], []
    lo, hi = int_range(elem, signed)
    for x, y in zip(a.reshape(-1), b.reshape(-1)):
        q = 0 if y == 0 else {"zero": _trunc_div(x, y) if y else 0, "negative_inf": x // y,
                              "positive_inf": -((-x) // y)}[rnd]
        zero.append(y == 0)
        over.append(not lo <= q <= hi)
        out.append(q)
    _ub(ex, op, np.array(zero).reshape(a.shape), "division by zero")
    _ub(ex, op, np.array(over).reshape(a.shape), "signed division overflow")
    return [_from_pyints(np.array(out, dtype=object).reshape(a.shape), elem)]


@handler("remi")
def int_rem(ex, op, args):
    """x - trunc(x / y) * y: the sign of the dividend when signed (spec 8.8.11)."""
    elem = _elem(op)
    signed = _signed_attr(op)
    a, b = (_pyints(x, elem, signed) for x in args)
    out = [x - _trunc_div(x, y) * y if y else 0 for x, y in zip(a.reshape(-1), b.reshape(-1))]
    _ub(ex, op, (b == 0).astype(bool), "remainder by zero")
    return [_from_pyints(np.array(out, dtype=object).reshape(a.shape), elem)]


@handler("maxi", "mini")
def int_minmax(ex, op, args):
    elem = _elem(op)
    signed = _signed_attr(op)
    a, b = (as_signed(x, elem) if signed else as_unsigned(x, elem) for x in args)
    pick_a = (a >= b) if op.name == "maxi" else (a <= b)
    return [np.where(pick_a, args[0], args[1])]


@handler("mulhii")
def int_mulhi(ex, op, args):
    """High N bits of the 2N-bit unsigned product (spec 8.8.8: defined for unsigned only)."""
    elem = _elem(op)
    a, b = (_pyints(x, elem, False) for x in args)
    return [_from_pyints((a * b) >> elem.bits, elem)]


# ------------------------------------------------------------------------------ compare/select
_PRED = {"equal": operator.eq, "not_equal": operator.ne, "less_than": operator.lt,
         "less_than_or_equal": operator.le, "greater_than": operator.gt,
         "greater_than_or_equal": operator.ge}


@handler("cmpf")
def cmpf(ex, op, args):
    a, b = (F.to_f64(x) for x in args)
    r = _PRED[op.comparison_predicate](a, b)
    unordered = np.isnan(a) | np.isnan(b)
    return [np.where(unordered, op.comparison_ordering == "unordered", r)]


@handler("cmpi")
def cmpi(ex, op, args):
    elem = op.lhs.type.elem
    signed = _signed_attr(op)
    a, b = (as_signed(x, elem) if signed else as_unsigned(x, elem) for x in args)
    return [np.asarray(_PRED[op.comparison_predicate](a, b))]


@handler("select")
def select(ex, op, args):
    c, a, b = args
    return [np.where(c, a, b).astype(np.asarray(a).dtype)]


# ------------------------------------------------------------------------------ conversions
def _no_rounding_but(op, *allowed):
    m = op.attrs.get("rounding_mode")
    if m is not None and m not in allowed:
        raise TileUnsupportedFeatureError(f"{op.name}: rounding mode '{m}' is not supported (the "
                                          f"spec allows {' or '.join(allowed)} only)")


@handler("ftof")
def ftof(ex, op, args):
    elem = _elem(op)
    if elem == E.E8M0:                    # rounding<zero> or <positive_inf> (verifier)
        return [F.encode(F.round_e8m0(F.to_f64(args[0]), op.attrs["rounding_mode"]), elem)]
    mode = op.attrs.get("rounding_mode") or "nearest_even"
    _no_rounding_but(op, "nearest_even", "zero", "negative_inf", "positive_inf", "nearest_away")
    x = F.to_f64(args[0])
    if mode == "nearest_even":
        return [F.encode(F.round_f64(x, elem), elem)]
    return [F.encode(F.exact_elementwise(lambda v: v, [x], elem, mode), elem)]


@handler("itof")
def itof(ex, op, args):
    src, elem = op.source.type.elem, _elem(op)
    signed = _signed_attr(op)
    mode = op.attrs.get("rounding_mode") or "nearest_even"
    if mode not in F.MODES:
        raise TileUnsupportedFeatureError(f"itof: rounding mode '{mode}' is not supported")
    v = as_signed(args[0], src) if signed else as_unsigned(args[0], src)
    if mode != "nearest_even":
        r = np.array([F.round_fraction(Fraction(int(x)), elem, mode) for x in v.reshape(-1)])
        return [F.encode(r.reshape(v.shape), elem)]
    if elem == E.F64:
        return [v.astype(np.float64)]                 # C conversion: correctly rounded
    hi = (v >> 32).astype(np.float64) * 4294967296.0  # both parts exact in float64
    lo = (v & (2**32 - 1) if v.dtype == np.int64 else v & np.uint64(2**32 - 1)).astype(np.float64)
    return [F.encode(F.round_f64(F.ro_sum(hi, lo), elem), elem)]


@handler("ftoi")
def ftoi(ex, op, args):
    """Round toward zero, saturate to the target range, NaN -> 0, Inf undefined (spec 8.4.4);
    with NVIDIA's `saturating` (13.4) Inf saturates too."""
    _no_rounding_but(op, "nearest_int_to_zero", "zero")
    elem = _elem(op)
    signed = _signed_attr(op)
    x = F.to_f64(args[0])
    if not op.attrs.get("saturating"):
        _ub(ex, op, np.isinf(x), "converting Inf to an integer")
    lo, hi = int_range(elem, signed)
    t = np.trunc(np.nan_to_num(x, nan=0.0, posinf=float(hi), neginf=float(lo)))
    vals = [min(max(int(v), lo), hi) for v in t.reshape(-1)]
    return [_from_pyints(np.array(vals, dtype=object).reshape(x.shape), elem)]


@handler("exti")
def exti(ex, op, args):
    src, elem = op.source.type.elem, _elem(op)
    v = as_signed(args[0], src) if _signed_attr(op) else as_unsigned(args[0], src)
    return [wrap(v, elem)]


@handler("trunci")
def trunci(ex, op, args):
    src, elem = op.source.type.elem, _elem(op)
    if (op.attrs.get("overflow") or "none") != "none":
        _check_overflow(ex, op, elem, _pyints(args[0], src, True), _pyints(args[0], src, False))
    return [wrap(as_unsigned(args[0], src), elem)]


@handler("bitcast")
def bitcast(ex, op, args):
    elem = _elem(op)
    a = np.asarray(args[0])
    if elem == E.I1:
        return [a.astype(bool)]
    src = op.source.type.elem
    if has_encoded_bits(src):            # e5m3 values (kept in float32) -> their codes
        a = encode_bits(a, src)
    if has_encoded_bits(elem):
        return [decode_bits(a.view(np.uint8), elem)]
    return [a.view(E.NUMPY_DTYPE[elem]).copy()]
