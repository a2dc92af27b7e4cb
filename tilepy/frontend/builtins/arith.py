"""Element-wise arithmetic, comparisons, math functions, astype and where.

`BINARY` and `UNARY` are the tables from builtin to Tile IR op (float op, integer op); the few
builtins whose meaning is more than one op (floor division, modulo, bitwise not, ...) have a
function of their own. All-constant operands fold in Python.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ...errors import TileTypeError, TileUnsupportedFeatureError, TileValueError
from ...ir import OPS
from ...ir.ops_arith import ftof_modes
from ...types import ARITH_FLOAT_TYPES, DType
from ...types import dtype as D
from .. import api
from ..values import Tile, python_value, type_name
from .registry import impl
from .semantics import (as_tile, broadcast, broadcast_shapes, check_dtype, common_dtype, constant,
                        constant_scalar, convert, emit, is_number, operands, signedness)


def _mode(m) -> str | None:
    if m is None:
        return None
    if isinstance(m, api.RoundingMode):
        return m.value
    raise TileTypeError(f"rounding_mode must be a tilepy.RoundingMode (got {type_name(m)})")


def _float_modifiers(opname, dtype, rounding_mode=None, flush_to_zero=False, propagate_nan=False):
    attrs = {}
    rm = _mode(rounding_mode)
    if rm is not None and rm != "nearest_even":
        attrs["rounding_mode"] = rm
    if flush_to_zero:
        if dtype != D.float32:
            raise TileTypeError(f"flush_to_zero: Flush to zero can only be used for float32 type, "
                                f"but got {dtype.name}")
        attrs["flush_to_zero"] = True
    if propagate_nan:
        attrs["propagate_nan"] = True
    return attrs


# builtin -> (python fold, float op, integer op, integer op needs signedness)
BINARY = {
    api.add: (operator.add, "addf", "addi", False),
    api.sub: (operator.sub, "subf", "subi", False),
    api.mul: (operator.mul, "mulf", "muli", False),
    api.maximum: (max, "maxf", "maxi", True),
    api.minimum: (min, "minf", "mini", True),
    api.bitwise_and: (operator.and_, None, "andi", False),
    api.bitwise_or: (operator.or_, None, "ori", False),
    api.bitwise_xor: (operator.xor, None, "xori", False),
    api.bitwise_lshift: (operator.lshift, None, "shli", False),
    api.bitwise_rshift: (operator.rshift, None, "shri", True),
    api.atan2: (math.atan2, "atan2", None, False),
}

# Arithmetic that bool tiles do not take (cuTile's rule: i1 arithmetic would wrap, True + True
# is False): a TileTypeError; the bitwise ops take them.
NO_BOOL = {api.add, api.sub, api.mul, api.maximum, api.minimum}


# The builtins a strictly typed constant folds through (`n + ct.int16(2)` is the int16 constant
# 7, as in cuTile): numpy computes them in the operands' dtype as the GPU does (integers wrap,
# floats round to nearest even; / of integers in float32), integer // and % as Python's, shifts
# as Python's wrapped to the dtype (cuTile's rule: `ct.int16(1) << 20` is 0). Not folded (a
# run-time value): NaN in min/max, bool arithmetic, float // and %, the ops with modifiers (a
# directed rounding mode is the run time's). A zero divisor is cuTile's error: TileValueError.
TYPED_FOLD = {api.add, api.sub, api.mul, api.maximum, api.minimum, api.bitwise_and,
              api.bitwise_or, api.bitwise_xor, api.floordiv, api.mod, api.truediv,
              api.bitwise_lshift, api.bitwise_rshift}
_SHIFTS = (api.bitwise_lshift, api.bitwise_rshift)


def wrapped(v: int, d) -> int:
    """The integer v in d's range, wrapped around (two's complement)."""
    v &= (1 << d.bits) - 1
    return v - (1 << d.bits) if d.signed and v >> (d.bits - 1) else v


def typed_value(t: Tile):
    """The number a strictly typed constant holds (an unsigned one's value, not its signless
    storage), else None."""
    v = constant_scalar(t)
    return wrapped(int(v), t.dtype) if v is not None and t.dtype.is_int else v


def fold_typed(ctx, stub, fold, x, y, result=None):
    """`fold(x, y)` as a constant 0-d tile when both operands are compile-time scalars and one is
    a strictly typed constant (a constant 0-d tile), computed in their common dtype; the result
    has that dtype (or `result`). None when they are not, or the op is not folded."""
    if not any(isinstance(v, Tile) for v in (x, y)):
        return None
    vals = [v if is_number(v) else typed_value(v) for v in (x, y)]
    if any(v is None for v in vals):
        return None
    d = common_dtype([x, y])
    if d.is_bool and result is None and stub not in (api.bitwise_and, api.bitwise_or,
                                                     api.bitwise_xor):
        return None
    if d.is_float and stub in (api.maximum, api.minimum) and any(math.isnan(v) for v in vals):
        return None
    if stub in (api.floordiv, api.mod, api.truediv) and vals[1] == 0:
        num = int if d.is_int else float          # Python's error for the operands' kind
        python_value(fold, num(vals[0]), num(vals[1]))
    if stub in (api.floordiv, api.mod) and not d.is_int:
        return None
    if stub is api.truediv:
        d = d if d.is_float else D.float32
    if stub in _SHIFTS:
        if not d.is_int:
            return None
        if vals[1] < 0:
            raise TileValueError(f"negative shift count {vals[1]} in a constant "
                                 f"{'<<' if stub is api.bitwise_lshift else '>>'}")
        return constant(ctx, wrapped(fold(int(vals[0]), int(vals[1])), d), d)
    try:
        with np.errstate(all="ignore"):
            r = fold(*(np.asarray(v, d.numpy) for v in vals))
    except (OverflowError, TypeError, ValueError):
        return None
    return constant(ctx, np.asarray(r).item(), result or d)


def _make_binary(stub, fold, fop, iop, signed):
    def fn(ctx, x, y, *, rounding_mode=None, flush_to_zero=False, propagate_nan=False):
        if is_number(x) and is_number(y):
            return python_value(fold, x, y)
        if stub in TYPED_FOLD and rounding_mode is None and not flush_to_zero:
            folded = fold_typed(ctx, stub, fold, x, y)
            if folded is not None:
                return folded
        (a, b), d = operands(ctx, x, y)
        if d.is_bool and stub in NO_BOOL:
            raise TileTypeError(f"Binary arithmetic op `{stub.__name__}` does not support bool, "
                                f"please cast bool to int")
        if d.is_float:
            if fop is None:
                raise TileTypeError(f"{stub.__name__} needs integer or bool operands (got {d.name})")
            return emit(ctx, fop, a, b, dtype=d, **_float_modifiers(
                fop, d, rounding_mode, flush_to_zero, propagate_nan))
        if iop is None:
            raise TileTypeError(f"{stub.__name__} needs floating-point operands (got {d.name})")
        if rounding_mode is not None or flush_to_zero:
            raise TileTypeError(f"rounding_mode and flush_to_zero apply to floating-point operands "
                                f"only (got {d.name})")
        attrs = {"signedness": signedness(d)} if signed else {}
        return emit(ctx, iop, a, b, dtype=d, **attrs)
    return fn


for _stub, _row in BINARY.items():
    impl(_stub)(_make_binary(_stub, *_row))


@impl(api.truediv)
def truediv(ctx, x, y, *, rounding_mode=None, flush_to_zero=False):
    if is_number(x) and is_number(y):
        return python_value(operator.truediv, x, y)
    if rounding_mode is None and not flush_to_zero:
        folded = fold_typed(ctx, api.truediv, operator.truediv, x, y)
        if folded is not None:
            return folded
    (a, b), d = operands(ctx, x, y)
    if not d.is_float:
        d = D.float32
        a, b = convert(ctx, a, d), convert(ctx, b, d)
    return emit(ctx, "divf", a, b, dtype=d, **_float_modifiers("divf", d, rounding_mode,
                                                               flush_to_zero))


@impl(api.floordiv)
def floordiv(ctx, x, y):
    if is_number(x) and is_number(y):
        return python_value(operator.floordiv, x, y)
    folded = fold_typed(ctx, api.floordiv, operator.floordiv, x, y)
    if folded is not None:
        return folded
    (a, b), d = operands(ctx, x, y)
    if d.is_float:
        return emit(ctx, "floor", emit(ctx, "divf", a, b, dtype=d), dtype=d)
    if d.is_bool:
        raise TileTypeError("// is not defined for bool tiles")
    rounding = "negative_inf" if d.signed else None
    return emit(ctx, "divi", a, b, dtype=d, signedness=signedness(d), rounding=rounding)


@impl(api.mod)
def mod(ctx, x, y):
    """Python's modulo: the result has the sign of the divisor."""
    if is_number(x) and is_number(y):
        return python_value(operator.mod, x, y)
    folded = fold_typed(ctx, api.mod, operator.mod, x, y)
    if folded is not None:
        return folded
    (a, b), d = operands(ctx, x, y)
    if d.is_bool:
        raise TileTypeError("% is not defined for bool tiles")
    if d.is_float:
        r = emit(ctx, "remf", a, b, dtype=d)
    else:
        r = emit(ctx, "remi", a, b, dtype=d, signedness=signedness(d))
        if not d.signed:
            return r
    zero = broadcast(ctx, constant(ctx, 0, d), a.shape)
    # r != 0 and (r < 0) != (b < 0)  ->  r + b
    cmp = "cmpf" if d.is_float else "cmpi"
    extra = {"comparison_ordering": "ordered"} if d.is_float else {"signedness": "signed"}
    def c(pred, p, q):
        return emit(ctx, cmp, p, q, dtype=D.bool_, comparison_predicate=pred, **extra)
    fix = emit(ctx, "andi", c("not_equal", r, zero),
               emit(ctx, "xori", c("less_than", r, zero), c("less_than", b, zero), dtype=D.bool_),
               dtype=D.bool_)
    adjusted = emit(ctx, "addf" if d.is_float else "addi", r, b, dtype=d)
    r = emit(ctx, "select", fix, adjusted, r, dtype=d)
    if d.is_float:      # a zero remainder has the divisor's sign, as in Python (-0.0 % 1 is 0.0)
        neg0 = broadcast(ctx, constant(ctx, -0.0, d), a.shape)
        signed0 = emit(ctx, "select", c("less_than", b, zero), neg0, zero, dtype=d)
        r = emit(ctx, "select", c("equal", r, zero), signed0, r, dtype=d)
    return r


@impl(api.divmod)
def divmod_(ctx, x, y):
    if is_number(x) and is_number(y):
        return divmod(x, y)
    if any(isinstance(v, float) or isinstance(v, Tile) and v.dtype.is_float for v in (x, y)):
        raise TileTypeError("divmod() is not implemented for floating point values (as in cuTile; "
                            "use // and % on float tiles)")
    return floordiv(ctx, x, y), mod(ctx, x, y)


@impl(api.pow)
def pow_(ctx, x, y):
    if is_number(x) and is_number(y):
        return x ** y
    exponent = _fpowi_exponent(y)
    if isinstance(x, Tile) and x.dtype.elem in ARITH_FLOAT_TYPES and exponent is not None:
        e = convert(ctx, y, exponent) if isinstance(y, Tile) else constant(ctx, y, exponent)
        shape = broadcast_shapes(x.shape, e.shape)
        return emit(ctx, "fpowi", broadcast(ctx, x, shape), broadcast(ctx, e, shape),
                    dtype=x.dtype)
    (a, b), d = operands(ctx, x, y)
    if d.is_float:
        return emit(ctx, "pow", a, b, dtype=d)
    if not (isinstance(y, int) and not isinstance(y, bool)):
        raise TileUnsupportedFeatureError(f"** on integer tiles needs a constant exponent (got a "
                                          f"{d.name} tile); convert with astype(tilepy.float32)")
    if y < 0:
        raise TileValueError(f"integer ** with a negative exponent ({y}) is not an integer")
    return _int_power(ctx, a, y, d)


def _fpowi_exponent(y):
    """The exponent dtype of Tile IR's `fpowi` (float ** signed integer, dialect 13.4) for an
    integer exponent y, as cuTile: the narrowest of int8/int16/int32 holding y's values (a Python
    int: int32 if it fits); None where fpowi does not apply (then `pow` on floats)."""
    if isinstance(y, bool):
        return None
    if isinstance(y, int):
        return D.int32 if -2**31 <= y < 2**31 else None
    if not (isinstance(y, Tile) and y.dtype.is_int):
        return None
    bits = y.dtype.bits + (0 if y.dtype.signed else 1)    # an unsigned one needs a sign bit
    return next((c for c in (D.int8, D.int16, D.int32) if c.bits >= bits), None)


def _int_power(ctx, base: Tile, n: int, d) -> Tile:
    """base ** n by repeated squaring (wrap-around integer multiplication)."""
    result, sq = broadcast(ctx, constant(ctx, 1, d), base.shape), base
    while n:
        if n & 1:
            result = emit(ctx, "muli", result, sq, dtype=d)
        n >>= 1
        if n:
            sq = emit(ctx, "muli", sq, sq, dtype=d)
    return result


# ----------------------------------------------------------------------------- comparisons
COMPARE = {
    api.equal: (operator.eq, "equal"), api.not_equal: (operator.ne, "not_equal"),
    api.less: (operator.lt, "less_than"), api.less_equal: (operator.le, "less_than_or_equal"),
    api.greater: (operator.gt, "greater_than"),
    api.greater_equal: (operator.ge, "greater_than_or_equal"),
}


def _make_compare(fold, pred):
    def fn(ctx, x, y):
        if is_number(x) and is_number(y):
            return fold(x, y)
        folded = fold_typed(ctx, None, fold, x, y, result=D.bool_)
        if folded is not None:
            return folded
        (a, b), d = operands(ctx, x, y)
        if d.is_float:
            # Python semantics: every comparison with NaN is false, except != which is true.
            order = "unordered" if pred == "not_equal" else "ordered"
            return emit(ctx, "cmpf", a, b, dtype=D.bool_, comparison_predicate=pred,
                        comparison_ordering=order)
        return emit(ctx, "cmpi", a, b, dtype=D.bool_, comparison_predicate=pred,
                    signedness=signedness(d))
    return fn


for _stub, (_fold, _pred) in COMPARE.items():
    impl(_stub)(_make_compare(_fold, _pred))


# --------------------------------------------------------------------------------- unary
def _float_operand(ctx, x) -> Tile:
    """Math functions take floats; integer and bool tiles are converted to float32 first."""
    t = as_tile(ctx, x)
    return t if t.dtype.is_float else convert(ctx, t, D.float32)


UNARY_MATH = {
    api.exp: (math.exp, "exp"), api.exp2: (lambda v: 2.0 ** v, "exp2"), api.log: (math.log, "log"),
    api.log2: (math.log2, "log2"), api.sqrt: (math.sqrt, "sqrt"),
    api.rsqrt: (lambda v: math.pow(v, -0.5), "rsqrt"),
    api.sin: (math.sin, "sin"), api.cos: (math.cos, "cos"), api.tan: (math.tan, "tan"),
    api.sinh: (math.sinh, "sinh"), api.cosh: (math.cosh, "cosh"), api.tanh: (math.tanh, "tanh"),
    api.floor: (math.floor, "floor"), api.ceil: (math.ceil, "ceil"),
}


def fold_unary(ctx, fold, t: Tile):
    """fold(t) as a constant when t is a strictly typed constant, as cuTile folds them: the
    function of Python's math on the value, rounded once into t's dtype if a float, else
    float32 (an integer or bool argument is converted first, as the function does). None where
    t is no constant. Where Python's function has no finite real value (log(0), sqrt(-1),
    exp(1000)) cuTile raises, and so does this: TileValueError (cuTile's class for an overflow
    is TileInternalError)."""
    v = typed_value(t)
    if v is None:
        return None
    r = python_value(fold, v)
    d = t.dtype if t.dtype.is_float else D.float32
    with np.errstate(over="ignore"):
        return constant(ctx, np.float64(r).astype(d.numpy).item(), d)


def _make_unary(stub, fold, opname):
    def fn(ctx, x, *, rounding_mode=None, flush_to_zero=False):
        if is_number(x):
            return python_value(fold, x)
        if opname in ("floor", "ceil") and isinstance(x, Tile) and not x.dtype.is_float:
            raise TileTypeError(f"{stub.__name__} needs a floating-point tile (got {x.dtype.name})")
        if rounding_mode is None and not flush_to_zero and isinstance(x, Tile):
            folded = fold_unary(ctx, fold, x)
            if folded is not None:
                return folded
        t = _float_operand(ctx, x)
        rm = _mode(rounding_mode)
        attrs = {}
        if rm in ("full", "approx") and opname in ("exp", "tanh") and t.dtype != D.float32:
            raise TileTypeError(f"{stub.__name__}(): Rounding mode {rm} can only be used for "
                                f"float32 type (got {t.dtype.name})")        # cuTile's rule
        if rm is not None and rm != "nearest_even":
            if not any(a.name == "rounding_mode" for a in OPS[opname].attrs):
                raise TileTypeError(f"{stub.__name__} does not take rounding_mode {rm}")
            attrs["rounding_mode"] = rm
        if flush_to_zero:
            attrs.update(_float_modifiers(opname, t.dtype, flush_to_zero=True))
        return emit(ctx, opname, t, dtype=t.dtype, **attrs)
    return fn


for _stub, (_fold, _op) in UNARY_MATH.items():
    impl(_stub)(_make_unary(_stub, _fold, _op))


def fold_same(ctx, fold, t: Tile):
    """fold(t) in t's own dtype (integers wrap) when t is a strictly typed constant that is not
    a bool (-, abs, ~ of a constant, as cuTile folds them), else None."""
    v = typed_value(t) if isinstance(t, Tile) and not t.dtype.is_bool else None
    if v is None:
        return None
    r = fold(v)
    return constant(ctx, wrapped(r, t.dtype) if t.dtype.is_int else r, t.dtype)


@impl(api.negative)
def negative(ctx, x):
    if is_number(x):
        return -x
    folded = fold_same(ctx, operator.neg, x)
    if folded is not None:
        return folded
    t = as_tile(ctx, x)
    if t.dtype.is_bool:
        t = convert(ctx, t, D.int32)
    if t.dtype.is_float:
        return emit(ctx, "negf", t, dtype=t.dtype)
    return emit(ctx, "negi", t, dtype=t.dtype)


@impl(api.abs)
def abs_(ctx, x):
    if is_number(x):
        return abs(x)
    folded = fold_same(ctx, abs, x)
    if folded is not None:
        return folded
    t = as_tile(ctx, x)
    if t.dtype.is_float:
        return emit(ctx, "absf", t, dtype=t.dtype)
    if t.dtype.is_bool or not t.dtype.signed:
        return t
    return emit(ctx, "absi", t, dtype=t.dtype)


@impl(api.bitwise_not)
def bitwise_not(ctx, x):
    if is_number(x):
        return (not x) if isinstance(x, bool) else ~x
    folded = fold_same(ctx, operator.invert, x) if isinstance(x, Tile) and x.dtype.is_int else None
    if folded is not None:
        return folded
    t = as_tile(ctx, x)
    if t.dtype.is_float:
        raise TileTypeError(f"~ needs an integer or bool tile (got {t.dtype.name})")
    ones = broadcast(ctx, constant(ctx, True if t.dtype.is_bool else -1 if t.dtype.signed
                                   else np.iinfo(t.dtype.numpy).max, t.dtype), t.shape)
    return emit(ctx, "xori", t, ones, dtype=t.dtype)


@impl(api.isnan)
def isnan(ctx, x):
    if is_number(x):
        return math.isnan(x)
    t = as_tile(ctx, x)
    if not t.dtype.is_float:
        return broadcast(ctx, constant(ctx, False, D.bool_), t.shape)
    return emit(ctx, "cmpf", t, t, dtype=D.bool_, comparison_predicate="not_equal",
                comparison_ordering="unordered")


# --------------------------------------------------------------------------- conversions
@impl(api.astype)
def astype(ctx, x, dtype, *, rounding_mode=None):
    dtype = check_dtype(ctx, dtype, "astype() dtype")
    t = as_tile(ctx, x, dtype)
    if rounding_mode is not None:
        _check_rounding(t.dtype, dtype, rounding_mode)
    return convert(ctx, t, dtype, _mode(rounding_mode))


def _check_rounding(src: DType, dst: DType, rounding_mode) -> None:
    """cuTile's astype rules: a rounding mode for float-to-float conversions only, one that
    ftof from src into dst takes (the IR's table, ir/ops_arith.py)."""
    mode = _mode(rounding_mode)
    if not (src.is_float and dst.is_float):
        raise TileTypeError("rounding_mode is only valid for float to float conversions")
    modes = ftof_modes(src.elem, dst.elem)
    if src != dst and mode not in modes:
        names = tuple(str(api.RoundingMode(m)) for m in modes)
        raise TileTypeError(f"rounding_mode={rounding_mode} is not supported for conversion from "
                            f"{src} to {dst}, supported rounding modes for this conversion are "
                            f"{names}")


@impl(api.where)
def where(ctx, cond, x, y):
    c = as_tile(ctx, cond)
    if not c.dtype.is_bool:
        c = convert(ctx, c, D.bool_)
    (a, b), d = operands(ctx, x, y)
    shape = broadcast_shapes(c.shape, a.shape)
    c, a, b = broadcast(ctx, c, shape), broadcast(ctx, a, shape), broadcast(ctx, b, shape)
    return emit(ctx, "select", c, a, b, dtype=d)


def dtype_call(ctx, dtype: DType, value):
    """`tilepy.int16(5)`: a strictly typed constant (or a conversion of a tile); an integer is
    truncated to an integer dtype (`uint32(-3)` is 0xfffffffd) and any number is a truth value
    for bool_, as cuTile. A sub-byte float (float4_e2m1fn) is no constructor (cuTile's rule)."""
    if dtype.bits % 8 and not dtype.is_bool:
        raise TileTypeError(f"Cannot call an object of type DTypeSpec(dtype=<DType "
                            f"'{dtype.name}'>): a sub-byte dtype is not a constructor; make a "
                            f"tile of it with full(..., dtype={dtype.name}) or astype()")
    if isinstance(value, Tile):
        return convert(ctx, value, dtype)
    if isinstance(value, str):                 # ct.float32("-inf"), as numpy reads it
        try:
            value = float(value) if dtype.is_float else int(value)
        except ValueError:
            raise TileTypeError(f"{dtype.name}() cannot read {value!r} as a number") from None
    if not is_number(value):
        raise TileTypeError(f"{dtype.name}() takes a number or a tile (got {type_name(value)})")
    if dtype.is_bool:
        value = bool(value)
    elif dtype.is_int and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = int(value) % (1 << dtype.bits)        # truncated to the dtype, as a C cast
        if dtype.signed and value >= 1 << (dtype.bits - 1):
            value -= 1 << dtype.bits
    return constant(ctx, value, dtype)
