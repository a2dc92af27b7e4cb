"""Rows of the element-wise ops: floating point (8.7), integer (8.8), bitwise (8.9),
comparisons and select (8.3), conversions (8.4).

The modifier tables of the floating-point ops are data: for each op, the rounding modes it
accepts and, per mode, the element types that support it ("addf Modifiers" etc. in the spec);
flush_to_zero is f32-only wherever the spec allows it at all.
"""
from __future__ import annotations

from ..types import (ARITH_FLOAT_TYPES, BF16, E5M3, E8M0, F16, F32, F64, FLOAT_TYPES, I1, I64,
                     INT_TYPES, TF32, PtrType, TileType)
from .constraints import all_tiles, elem_in, elem_is_ptr, same_elem, same_shape, same_type
from .opdef import (CMP_ORDERING, CMP_PREDICATE, OVERFLOW, ROUNDING, SIGNEDNESS, A, O, OpDef, R,
                    op, rule, same_as)

IEEE = ("nearest_even", "zero", "negative_inf", "positive_inf")
_ALL = ARITH_FLOAT_TYPES


def _elem(op, i=0):
    t = op.operands[i].type if len(op.operands) > i else None
    return t.elem if isinstance(t, TileType) else None


@rule("ftz", "flush_to_zero is only supported for f32")
def _ftz_f32(op):
    e = _elem(op)
    if op.attrs.get("flush_to_zero") and e != F32:
        return f"flush_to_zero is only supported for f32 (got {e})"


def _rounding_for_type(table: dict):
    @rule("rounding_type", "is not supported for")
    def check(op):
        m, e = op.attrs.get("rounding_mode"), _elem(op)
        if m in table and e not in table[m]:
            return (f"rounding<{m}> is not supported for {e} "
                    f"(supported: {', '.join(map(str, table[m]))})")
    return check


def _same(operands):
    """Operands of one shape and element type (nothing to check for a single operand)."""
    return (same_shape(*operands), same_elem(*operands)) if len(operands) > 1 else ()


# ------------------------------------------------------------------------------ floating point
def float_op(name, operands=("lhs", "rhs"), rounding=None, ftz=False, nan=False,
             commutative=False):
    """An element-wise float op; `rounding` maps each accepted mode to the types supporting it."""
    attrs, mods, extra = [], [], []
    if rounding:
        attrs.append(A("rounding_mode", ROUNDING, allowed=tuple(rounding)))
        mods.append("?( rounding<$rounding_mode> )?")
        if any(set(ts) != set(_ALL) for ts in rounding.values()):
            extra.append(_rounding_for_type(rounding))
    if nan:
        attrs.append(A("propagate_nan", "flag"))
        mods.append("?( propagate_nan$propagate_nan )?")
    if ftz:
        attrs.append(A("flush_to_zero", "flag"))
        mods.append("?( flush_to_zero$flush_to_zero )?")
        extra.append(_ftz_f32)
    syntax = ", ".join(f"${n}" for n in operands) + "".join(" " + m for m in mods)
    return op(OpDef(name, operands=tuple(O(n) for n in operands), attrs=tuple(attrs),
                    results=(R("result"),), syntax=syntax + " : type($result)", infer=same_as(0),
                    elementwise=True, commutative=commutative, category="float",
                    constraints=(all_tiles(*operands, "result"), *_same(operands),
                                 elem_in(_ALL, operands[0]), same_type(operands[0], "result"),
                                 *extra)))


_IEEE_ALL = {m: _ALL for m in IEEE}
_UNARY = ("source",)
float_op("addf", rounding=_IEEE_ALL, ftz=True, commutative=True)
float_op("subf", rounding=_IEEE_ALL, ftz=True)
float_op("mulf", rounding=_IEEE_ALL, ftz=True, commutative=True)
float_op("divf", rounding={**_IEEE_ALL, "approx": (F32,), "full": (F32,)}, ftz=True)
float_op("fma", ("lhs", "rhs", "acc"), rounding=_IEEE_ALL, ftz=True)
float_op("remf")
float_op("maxf", nan=True, ftz=True, commutative=True)
float_op("minf", nan=True, ftz=True, commutative=True)
float_op("pow", ("source", "exponent"))
float_op("atan2", ("x", "y"))
float_op("sqrt", _UNARY, rounding={**_IEEE_ALL, "approx": (F32,)}, ftz=True)
float_op("tanh", _UNARY, rounding={"approx": (F32,), "full": _ALL})
float_op("exp", _UNARY, rounding={"approx": (F32,), "full": _ALL})    # NVIDIA 13.3: rounding<..>
float_op("exp2", _UNARY, ftz=True)
float_op("rsqrt", _UNARY, ftz=True)
for _name in ("negf", "absf", "log", "log2", "sin", "cos", "tan", "sinh", "cosh",
              "floor", "ceil"):
    float_op(_name, _UNARY)


# ------------------------------------------------------------------------------------ integer
def int_op(name, operands=("lhs", "rhs"), signedness=False, overflow=False, extra=(),
           category="integer", more_attrs=(), more_mods=(), commutative=False):
    attrs, mods = [], []
    if signedness:
        attrs.append(A("signedness", SIGNEDNESS, optional=False))
        mods.append("$signedness")
    if overflow:
        attrs.append(A("overflow", OVERFLOW))
        mods.append("?( overflow<$overflow> )?")
    attrs += more_attrs
    mods += more_mods
    syntax = ", ".join(f"${n}" for n in operands) + "".join(" " + m for m in mods)
    return op(OpDef(name, operands=tuple(O(n) for n in operands), attrs=tuple(attrs),
                    results=(R("result"),), syntax=syntax + " : type($result)", infer=same_as(0),
                    elementwise=True, commutative=commutative, category=category,
                    constraints=(all_tiles(*operands, "result"), *_same(operands),
                                 elem_in(INT_TYPES, operands[0]), same_type(operands[0], "result"),
                                 *extra)))


int_op("addi", overflow=True, commutative=True)
int_op("subi", overflow=True)
int_op("muli", overflow=True, commutative=True)
int_op("shli", overflow=True)
int_op("negi", _UNARY, overflow=True)
int_op("absi", _UNARY)
int_op("mulhii", ("x", "y"))
int_op("remi", signedness=True)
int_op("maxi", signedness=True, commutative=True)
int_op("mini", signedness=True, commutative=True)
int_op("shri", signedness=True)
int_op("ori", commutative=True)
int_op("xori", commutative=True)
int_op("andi", category="bitwise", commutative=True)


@rule("divi_floor_unsigned", "negative_inf rounding is not valid with unsigned")
def _divi_rounding(op):
    if op.attrs.get("rounding") == "negative_inf" and op.attrs.get("signedness") == "unsigned":
        return "negative_inf rounding is not valid with unsigned division"


# divi rounds towards zero by default; positive_inf/negative_inf give ceil/floor division.
int_op("divi", signedness=True, extra=(_divi_rounding,),
       more_attrs=(A("rounding", ROUNDING, allowed=("zero", "positive_inf", "negative_inf")),),
       more_mods=("?( rounding<$rounding> )?",))


# ---------------------------------------------------------------------------------- compare
def _cmp_infer(types, attrs):
    return [types[0].with_elem(I1)]


def _cmp(name, types, attrs, syntax):
    return op(OpDef(name, operands=(O("lhs"), O("rhs")), attrs=attrs, results=(R("result"),),
                    infer=_cmp_infer, elementwise=True, syntax=syntax,
                    constraints=(all_tiles("lhs", "rhs", "result"), same_shape("lhs", "rhs"),
                                 same_elem("lhs", "rhs"), elem_in(types, "lhs"),
                                 same_shape("lhs", "result"), elem_in((I1,), "result"))))


_cmp("cmpf", ARITH_FLOAT_TYPES,
     (A("comparison_predicate", CMP_PREDICATE, False), A("comparison_ordering", CMP_ORDERING, False)),
     "$comparison_predicate $comparison_ordering $lhs, $rhs : type($lhs) -> type($result)")
_cmp("cmpi", INT_TYPES,
     (A("comparison_predicate", CMP_PREDICATE, False), A("signedness", SIGNEDNESS, False)),
     "$comparison_predicate $lhs, $rhs, $signedness : type($lhs) -> type($result)")

op(OpDef("select", operands=(O("cond"), O("val_if_true"), O("val_if_false")),
         results=(R("result"),), infer=same_as(1), elementwise=True,
         syntax="$cond, $val_if_true, $val_if_false : type($cond), type($result)",
         constraints=(all_tiles("cond", "val_if_true", "val_if_false", "result"),
                      elem_in((I1,), "cond"),
                      same_shape("cond", "val_if_true", "val_if_false", "result"),
                      same_elem("val_if_true", "val_if_false", "result"))))


# -------------------------------------------------------------------------------- conversions
def _convert(name, from_types, to_types, attrs=(), mods="", extra=()):
    return op(OpDef(name, operands=(O("source"),), attrs=tuple(attrs), results=(R("result"),),
                    syntax=f"$source{(' ' + mods) if mods else ''} : type($source) -> type($result)",
                    elementwise=True, category="conversion",
                    constraints=(all_tiles("source", "result"), same_shape("source", "result"),
                                 elem_in(from_types, "source"), elem_in(to_types, "result"),
                                 *extra)))


def _width_rule(rule_id, phrase, ok):
    @rule(rule_id, phrase)
    def check(op):
        s, r = op.source.type.elem, op.result.type.elem
        if not ok(s, r):
            return f"result type {r} must be {phrase.split('must be ')[1]} source type {s}"
    return check


_wider = _width_rule("wider", "must be strictly wider than", lambda s, r: r.bits > s.bits)
_narrower = _width_rule("narrower", "must be strictly narrower than", lambda s, r: r.bits < s.bits)


@rule("different", "source and result types must differ")
def _different(op):
    s, r = op.source.type.elem, op.result.type.elem
    if s == r:
        return f"source and result types must differ (got {s} -> {r})"


_SIGN = A("signedness", SIGNEDNESS, False)
_convert("exti", INT_TYPES, INT_TYPES, (_SIGN,), "$signedness", (_wider,))
_convert("trunci", INT_TYPES, INT_TYPES, (A("overflow", OVERFLOW),), "?( overflow<$overflow> )?",
         (_narrower,))
# e8m0 (f8E8M0FNU, NVIDIA's dialect 13.2): conversions into it round toward zero or +inf only, and
# never from an integer.
_E8M0_MODES = ("zero", "positive_inf")




def directed_ftof(mode: str, src, dst) -> bool:
    """Whether NVIDIA's 13.4 dialect takes ftof from src into dst (not e8m0) rounding in a mode
    other than nearest even (cuTile's table): toward zero into f64, f32, tf32, f16 and bf16;
    toward -inf or +inf into f64, into f32 but from e8m0, into f16 from bf16 and the 8- and
    4-bit floats but e8m0 and e5m3; to nearest with ties away into f64, into f32 and tf32 but
    from f64 and e8m0, into f16 as the directed ones."""
    to_f16 = dst == F16 and src not in (F64, F32, TF32, E8M0, E5M3)
    if mode == "zero":
        return dst in (F64, F32, TF32, F16, BF16)
    if mode == "nearest_away":
        return dst == F64 or (dst in (F32, TF32) and src not in (F64, E8M0)) or to_f16
    return dst == F64 or (dst == F32 and src != E8M0) or to_f16


FTOF_MODES = ("nearest_even", "zero", "negative_inf", "positive_inf", "nearest_away")


def ftof_modes(src, dst) -> tuple[str, ...]:
    """The rounding modes of ftof from src into dst (element types), in RoundingMode's order."""
    if dst == E8M0:
        return _E8M0_MODES
    return tuple(m for m in FTOF_MODES if m == "nearest_even" or directed_ftof(m, src, dst))


@rule("ftof_rounding", "take rounding<")
def _ftof_rounding(op):
    m, s, r = op.attrs.get("rounding_mode") or "nearest_even", op.source.type.elem, \
        op.result.type.elem
    if m in ftof_modes(s, r):
        return None
    if r == E8M0:
        return f"conversions into {r} take rounding<zero> or rounding<positive_inf> (got rounding<{m}>)"
    if m != "nearest_even":
        return (f"conversions into {r} take rounding<nearest_even> (got rounding<{m}>; from "
                f"{s} NVIDIA's 13.4 dialect also takes the directed modes its table lists)")


@rule("itof_e8m0", "integer to e8m0 conversion is not supported")
def _itof_e8m0(op):
    if op.result.type.elem == E8M0:
        return "integer to e8m0 conversion is not supported: convert to another float type first"


_convert("ftof", FLOAT_TYPES, FLOAT_TYPES,
         (A("rounding_mode", ROUNDING, allowed=("nearest_even", "zero", "negative_inf",
                                                "positive_inf", "nearest_away")),),
         "?( rounding<$rounding_mode> )?", (_different, _ftof_rounding))
_convert("ftoi", FLOAT_TYPES, INT_TYPES,       # saturating: NVIDIA 13.4 (Inf clamps too)
         (_SIGN, A("rounding_mode", ROUNDING, allowed=("nearest_int_to_zero",)),
          A("saturating", "flag")),
         "$signedness ?( rounding<$rounding_mode> )? ?( saturating$saturating )?")
_convert("itof", INT_TYPES, FLOAT_TYPES, (_SIGN, A("rounding_mode", ROUNDING, allowed=("nearest_even",))),
         "$signedness ?( rounding<$rounding_mode> )?", (_itof_e8m0,))


@rule("bitcast_ptr", "pointer types must use ptr_to_int/int_to_ptr")
def _bitcast_no_ptr(op):
    if isinstance(op.source.type.elem, PtrType) or isinstance(op.result.type.elem, PtrType):
        return "pointer types must use ptr_to_int/int_to_ptr, not bitcast"


def _format_bits(e) -> int:
    """The width bitcast compares: a float's format (sign, exponent, mantissa), so tf32 is 19
    bits though stored in 32 (NVIDIA's verifier: i32 <-> tf32 is not a bitcast); the unsigned
    formats (e8m0, e5m3) have no sign bit, so they are 8 bits."""
    if not e.is_float:
        return e.bits
    return (e.name not in ("e8m0", "e5m3")) + e.exp_bits + e.mant_bits


@rule("bitcast_width", "must have the same bit width")
def _bitcast_width(op):
    s, r = op.source.type.elem, op.result.type.elem
    if _format_bits(s) != _format_bits(r):
        return f"source and result element types must have the same bit width (got {s}, {r})"


op(OpDef("bitcast", operands=(O("source"),), results=(R("result"),), category="conversion",
         syntax="$source : type($source) -> type($result)", elementwise=True,
         constraints=(all_tiles("source", "result"), same_shape("source", "result"),
                      _bitcast_no_ptr, _bitcast_width)))


def _ptr_cast(name, src_check, dst_check):
    return op(OpDef(name, operands=(O("source"),), results=(R("result"),), category="conversion",
                    syntax="$source : type($source) -> type($result)", elementwise=True,
                    constraints=(all_tiles("source", "result"), same_shape("source", "result"),
                                 src_check, dst_check)))


_ptr_cast("int_to_ptr", elem_in((I64,), "source"), elem_is_ptr("result"))
_ptr_cast("ptr_to_int", elem_is_ptr("source"), elem_in((I64,), "result"))
_ptr_cast("ptr_to_ptr", elem_is_ptr("source"), elem_is_ptr("result"))
