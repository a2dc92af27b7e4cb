"""Parsers of the ops whose text is not a `syntax` row: the ones with regions (entry, for, if,
loop, reduce, scan), global, and make_tensor_view. Each reads what `printer.py` prints, plus the
spec's variants, and returns the op built without checks (the verifier names broken rules)."""
from __future__ import annotations

from ..types import TensorViewType
from .builder import make_op
from .core import Block, Region
from .scanner import SYMBOL, VALUE


def _entry(p, opdef, nres):
    sym = p.expect_re(SYMBOL, "a kernel name")[1:]
    saved, p.scopes = p.scopes, [{}]          # kernels are isolated from above
    block = Block()
    p.expect("(")
    p.comma_list(lambda: p.typed_arg(block), ")")
    hints = None
    if p.accept("optimization_hints"):
        p.expect("=")
        hints = p.hints()
    p.expect("{")
    p.block_body(block, implicit="return")
    p.scopes = saved
    return make_op("entry", regions=[Region([block])], check=False, sym_name=sym,
                   optimization_hints=hints)


def _global(p, opdef, nres):
    """`global [public|private] [constant] @name [alignment = N] <value> : type`."""
    visibility = next((v for v in ("public", "private") if p.accept(v)), None)
    constant = p.accept("constant") or None
    sym = p.expect_re(SYMBOL, "a global name")[1:]
    alignment = None
    if p.accept("alignment"):
        p.expect("=")
        alignment = p.integer("an alignment")
    value = p.dense()
    p.expect(":")
    t = p.type()
    return make_op("global", check=False, sym_name=sym, alignment=alignment,
                   value=p.shaped(value, t), type=t, constant=constant,
                   symbol_visibility=visibility)


def _check_type(p, value, t, pos):
    if value.type != t:
        raise p.error(f"%{value.hint} has type {value.type}, but the text says {t}", pos)


def _iter_values(p):
    """`iter_values(%a = %init, ...)` -> [(name, init value)]."""
    p.expect("(")
    return p.comma_list(lambda: (p.expect_re(VALUE, "a loop-carried value name"),
                                 p.expect("=") or p.use()), ")")


def _for(p, opdef, nres):
    unsigned_first = p.accept_word("unsigned")     # NVIDIA's 13.4 prints `for unsigned %iv in`
    iv = p.expect_re(VALUE, "an induction variable")
    p.expect("in")
    p.expect("(")
    lb = p.use()
    p.expect("to")
    ub = p.use()
    p.expect(",")
    p.expect("step")
    step = p.use()
    p.expect(")")
    p.expect(":")
    pos = p.pos
    iv_type = p.type()
    _check_type(p, lb, iv_type, pos)
    unsigned = p.accept("unsigned") or unsigned_first
    pairs, types = [], []
    if p.accept("iter_values"):
        pairs = _iter_values(p)
        p.expect("->")
        p.expect("(")
        types = p.comma_list(p.type, ")")
        if len(types) != len(pairs):
            raise p.error(f"{len(pairs)} iter_values but {len(types)} result types")
    args = [(iv, iv_type)] + [(n, t) for (n, _), t in zip(pairs, types)]
    block = p.region_block(args, implicit="continue")
    return make_op("for", lb, ub, step, [v for _, v in pairs], result_types=types,
                   regions=[Region([block])], check=False, unsignedCmp=unsigned)


def _loop(p, opdef, nres):
    pairs = _iter_values(p) if p.accept("iter_values") else []
    iter_types = [v.type for _, v in pairs]
    results = []
    if p.accept(":") and not p.peek("->"):
        pos = p.pos
        iter_types = p.comma_list(p.type)
        if len(iter_types) != len(pairs):
            raise p.error(f"{len(pairs)} iter_values but {len(iter_types)} types", pos)
        for (_, v), t in zip(pairs, iter_types):
            _check_type(p, v, t, pos)
    if p.accept("->"):
        results = p.comma_list(p.type)
    block = p.region_block([(n, t) for (n, _), t in zip(pairs, iter_types)], implicit="continue")
    return make_op("loop", [v for _, v in pairs], result_types=results,
                   regions=[Region([block])], check=False)


def _if(p, opdef, nres):
    cond = p.use()
    results = []
    if p.accept("->"):
        p.expect("(")
        results = p.comma_list(p.type, ")")
    then = p.region_block(implicit="yield")
    orelse = [p.region_block(implicit="yield")] if p.accept("else") else []
    return make_op("if", cond, result_types=results, regions=[Region([then]), Region(orelse)],
                   check=False)


def _reduce_like(p, opdef, nres):
    operands = p.comma_list(p.use)
    p.expect("dim")
    p.expect("=")
    attrs = {"dim": p.integer("a dimension")}
    if opdef.name == "scan":
        p.expect("reverse")
        p.expect("=")
        attrs["reverse"] = p.attr("bool")
    p.expect("identities")
    p.expect("=")
    attrs["identities"] = p.attr("identities")
    p.expect(":")
    pos = p.pos
    in_types = p.comma_list(p.type)
    if len(in_types) != len(operands):
        raise p.error(f"{len(operands)} operands but {len(in_types)} operand types", pos)
    for v, t in zip(operands, in_types):
        _check_type(p, v, t, pos)
    p.expect("->")
    results = p.comma_list(p.type)
    p.expect("(")
    args = p.comma_list(lambda: (p.expect_re(VALUE, "an argument name"), p.expect(":") or p.type()),
                        ")")
    block = p.region_block(args)
    return make_op(opdef.name, operands, result_types=results, regions=[Region([block])],
                   check=False, **attrs)


def _static_or_dynamic(p):
    return p.use() if p.peek_re(VALUE) else p.integer("an extent or an SSA value")


def _make_tensor_view(p, opdef, nres):
    base = p.use()
    lists = {}
    for key in ("shape", "strides"):
        p.expect(",")
        p.expect(key)
        p.expect("=")
        p.expect("[")
        lists[key] = (p.pos, p.comma_list(lambda: _static_or_dynamic(p), "]"))
    p.expect(":")
    t = p.type()
    dyn_type = None
    if p.accept("->"):
        dyn_type, t = t, p.type()
    if isinstance(t, TensorViewType):
        for key, want in (("shape", t.shape), ("strides", t.strides)):
            pos, items = lists[key]
            spelled = [None if not isinstance(x, int) else x for x in items]
            if spelled != list(want):
                raise p.error(f"{key} = [...] does not match {t}", pos)
    dyn = {k: [x for x in items if not isinstance(x, int)] for k, (_, items) in lists.items()}
    for v in dyn["shape"] + dyn["strides"]:
        if dyn_type is not None and v.type != dyn_type:
            raise p.error(f"%{v.hint} has type {v.type}, but the text says {dyn_type}")
    return make_op("make_tensor_view", base, dyn["shape"], dyn["strides"], result_types=[t],
                   check=False)


CUSTOM_PARSERS = {
    "entry": _entry, "global": _global, "for": _for, "loop": _loop, "if": _if,
    "reduce": _reduce_like, "scan": _reduce_like, "make_tensor_view": _make_tensor_view,
}
