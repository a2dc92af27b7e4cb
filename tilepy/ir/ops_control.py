"""Rows of the control-flow ops (8.5), reduce/scan (8.3), and the module items (entry, global,
get_global, module). Their region rules (block arguments, terminators and what they yield, where
a terminator may appear) are checked by the verifier once the regions are built."""
from __future__ import annotations

from ..types import I1, PtrType, TileType, TokenType, is_power_of_two, scalar_tile
from .constraints import all_tiles, elem_in, same_shape, scalar, scalar_int, same_type
from .opdef import SYMBOL_VISIBILITY, A, O, OpDef, R, op, rule


def _types(vs):
    return [v.type for v in vs]


def _fmt(ts):
    return "(" + ", ".join(map(str, ts)) + ")"


def ancestors(o):
    """The ops enclosing `o`, innermost first."""
    blk = o.parent
    while blk is not None and blk.parent is not None and blk.parent.parent is not None:
        p = blk.parent.parent
        yield p
        blk = p.parent


def _first_non_if(o):
    return next((a for a in ancestors(o) if a.name != "if"), None)


def _yields(block, name):
    """Terminators `name` of this region (looking through nested ifs, not nested loops)."""
    for o in block.ops:
        if o.name == name:
            yield o
        elif o.name == "if":
            for r in o.regions:
                for b in r.blocks:
                    yield from _yields(b, name)


def _ends_with(*allowed):
    want = " or ".join(allowed)

    @rule("terminator", "must end with")
    def check(o):
        for name, region in zip(o.opdef.regions, o.regions):
            for b in region.blocks:
                term = b.ops[-1] if b.ops else None
                if term is None or not term.opdef.terminator or term.name not in allowed:
                    got = f" (got {term.name})" if term is not None else ""
                    return f"region '{name}' must end with {want}{got}"
    return check


def _not_views(*names):
    @rule("not_views", "must be tiles or tokens, not views")
    def check(o):
        for n in names:
            kind = o.opdef.member_kind(n)
            vals = o.operand_group(n) if kind == "operand" else o.result_group(n)
            for t in _types(vals):
                if not isinstance(t, (TileType, TokenType)):
                    return f"{n} must be tiles or tokens, not views (got {t})"
    return check


# -------------------------------------------------------------------------------- terminators
def _parent_rule(rule_id, phrase, ok):
    @rule(rule_id, phrase)
    def check(o):
        if o.parent is not None and o.parent.parent is not None and not ok(o):
            parent = next(ancestors(o), None)
            return f"{phrase} (got {parent.name if parent else 'no parent op'})"
    return check


_TERMINATORS = {
    "yield": _parent_rule("yield_parent", "yield must terminate a region of if, reduce or scan",
                          lambda o: next(ancestors(o)).name in ("if", "reduce", "scan")),
    "continue": _parent_rule("continue_parent", "continue must be inside a for or loop",
                             lambda o: getattr(_first_non_if(o), "name", None) in ("for", "loop")),
    "break": _parent_rule("break_parent", "break must be inside a loop",
                          lambda o: getattr(_first_non_if(o), "name", None) == "loop"),
    "return": _parent_rule("return_parent", "return must be in an entry body, not in a loop",
                           lambda o: getattr(_first_non_if(o), "name", None) == "entry"),
}
for _name, _check in _TERMINATORS.items():
    op(OpDef(_name, operands=(O("operands", variadic=True),), terminator=True, category="control",
             syntax="?( $operands : type($operands) )?", pure=_name == "yield",
             region_rules=(_check,)))


# ------------------------------------------------------------------------------------- for
@rule("for_results", "results must have the types of the iter_values")
def _for_results(o):
    inits = _types(o.initValues)
    if _types(o.results) != inits:
        return f"results must have the types of the iter_values {_fmt(inits)} (got {_fmt(_types(o.results))})"


@rule("for_body_args", "body arguments must be the induction variable and the iter_values")
def _for_body_args(o):
    blk = o.body.block
    want = [o.lowerBound.type, *_types(o.initValues)]
    if _types(blk.args) != want:
        return (f"body arguments must be the induction variable and the iter_values {_fmt(want)} "
                f"(got {_fmt(_types(blk.args))})")


def _continue_types(o):
    inits = _types(o.initValues)
    for t in _yields(o.body.block, "continue"):
        if _types(t.operands) != inits:
            return f"continue must yield the iter_values types {_fmt(inits)} (got {_fmt(_types(t.operands))})"


_continue_rule = rule("continue_types", "continue must yield the iter_values types")(_continue_types)
_BOUNDS = ("lowerBound", "upperBound", "step")
op(OpDef("for", operands=(*(O(n) for n in _BOUNDS), O("initValues", variadic=True)),
         attrs=(A("unsignedCmp", "flag"),), results=(R("resultValues", variadic=True),),
         regions=("body",), category="control", pure=False, terminators=("continue",),
         constraints=(scalar_int(*_BOUNDS), same_type(*_BOUNDS), _not_views("initValues"),
                      _for_results),
         region_rules=(_ends_with("continue"), _for_body_args, _continue_rule)))


# -------------------------------------------------------------------------------------- if
@rule("if_else", "an if with results needs an else region")
def _if_else(o):
    if o.results and not (len(o.regions) > 1 and o.elseRegion.blocks):
        return "an if with results needs an else region"


@rule("if_yield", "yield must match the result types")
def _if_yield(o):
    res = _types(o.results)
    for region in o.regions:
        for b in region.blocks:
            t = b.ops[-1] if b.ops else None
            if t is not None and t.name == "yield" and _types(t.operands) != res:
                return f"yield must match the result types {_fmt(res)} (got {_fmt(_types(t.operands))})"


@rule("no_region_args", "regions must have zero arguments")
def _no_region_args(o):
    for region in o.regions:
        for b in region.blocks:
            if b.args:
                return f"regions must have zero arguments (got {_fmt(_types(b.args))})"


op(OpDef("if", operands=(O("condition"),), results=(R("results", variadic=True),),
         regions=("thenRegion", "elseRegion"), category="control", pure=False,
         terminators=("yield", "continue", "break", "return"),
         constraints=(scalar("condition"), elem_in((I1,), "condition"), _not_views("results")),
         region_rules=(_no_region_args, _ends_with("yield", "continue", "break", "return"),
                       _if_else, _if_yield)))


# ------------------------------------------------------------------------------------ loop
@rule("loop_body_args", "body arguments must match the iter_values")
def _loop_body_args(o):
    inits = _types(o.initValues)
    if _types(o.body.block.args) != inits:
        return (f"body arguments must match the iter_values {_fmt(inits)} "
                f"(got {_fmt(_types(o.body.block.args))})")


@rule("break_types", "break must yield the result types")
def _break_types(o):
    res = _types(o.results)
    for t in _yields(o.body.block, "break"):
        if _types(t.operands) != res:
            return f"break must yield the result types {_fmt(res)} (got {_fmt(_types(t.operands))})"


op(OpDef("loop", operands=(O("initValues", variadic=True),),
         results=(R("resultValues", variadic=True),), regions=("body",), category="control",
         pure=False, terminators=("continue", "break"),
         constraints=(_not_views("initValues", "resultValues"),),
         region_rules=(_ends_with("continue", "break"), _loop_body_args, _continue_rule,
                       _break_types)))

op(OpDef("assert", operands=(O("condition"),), attrs=(A("message", "string", False),),
         syntax="$condition, $message : type($condition)", category="control", pure=False,
         constraints=(all_tiles("condition"), elem_in((I1,), "condition"))))


# ---------------------------------------------------------------------------- reduce, scan
def _reduce_infer(types, attrs):
    d = attrs["dim"]
    return [t.with_shape(t.shape[:d] + t.shape[d + 1:]) for t in types]


@rule("identities_count", "one identity per operand")
def _identities_count(o):
    ins, ids = o.operands, o.identities or ()
    if len(ids) != len(ins):
        return f"expected one identity per operand ({len(ins)} operands, got {len(ids)})"


@rule("identities_type", "must be a scalar of the operand element type")
def _identities_type(o):
    for v, ident in zip(o.operands, o.identities or ()):
        if ident.elem != v.type.elem or not ident.is_splat:
            return f"identity {ident} must be a scalar of the operand element type {v.type.elem}"


@rule("reduce_dim", "dim must be in")
def _reduce_dim(o):
    rank = o.operands[0].type.rank if o.operands else 0
    if not 0 <= o.dim < rank:
        return f"dim must be in [0, {rank}) (got {o.dim})"


@rule("reduce_results", "results must be")
def _reduce_results(o):
    expect = o.opdef.infer(_types(o.operands), o.attrs)
    if _types(o.results) != expect:
        return f"results must be {_fmt(expect)} (got {_fmt(_types(o.results))})"


@rule("combiner_args", "body arguments must be")
def _combiner_args(o):
    want = [scalar_tile(v.type.elem) for v in o.operands for _ in (0, 1)]
    if _types(o.body.block.args) != want:
        return f"body arguments must be {_fmt(want)} (got {_fmt(_types(o.body.block.args))})"


@rule("combiner_yield", "body must yield")
def _combiner_yield(o):
    want = [scalar_tile(v.type.elem) for v in o.operands]
    y = o.body.block.ops[-1]
    if _types(y.operands) != want:
        return f"body must yield {_fmt(want)} (got {_fmt(_types(y.operands))})"


@rule("combiner_scalar", "body must operate on 0-d tiles")
def _combiner_scalar(o):
    for inner in o.body.block.ops:
        for r in inner.results:
            if not (isinstance(r.type, TileType) and r.type.rank == 0):
                return f"body must operate on 0-d tiles (got {inner.name} -> {r.type})"


_COMBINER = (_ends_with("yield"), _combiner_args, _combiner_yield, _combiner_scalar)
op(OpDef("reduce", operands=(O("operands", variadic=True),),
         attrs=(A("dim", "int", False), A("identities", "identities", False)),
         results=(R("results", variadic=True),), regions=("body",), infer=_reduce_infer,
         terminators=("yield",),
         constraints=(all_tiles("operands"), same_shape("operands"), _reduce_dim, _identities_count,
                      _identities_type,
                      _reduce_results),
         region_rules=_COMBINER))


def fold_identities(o) -> list:
    """The values a `reduce`'s fold starts from, one per operand: its identities, but NaN where
    the body is one NaN-ignoring maxf/minf of its two arguments on floats. NaN is that combiner's
    exact identity (maxNum(NaN, x) = x); +-inf is not one for x = NaN, so a row of NaNs folded from
    -inf gave -inf where a GPU's fold of the elements gives NaN (cuTile's ignore-NaN max/min of an
    all-NaN row). The spec lets the fold use its identity or not, so both are its results; the
    interpreter and the C++ backend start from these."""
    ids = [d.array[()] for d in o.identities]
    blk = o.body.block
    if len(o.operands) != 1 or len(blk.ops) != 2 or not o.operands[0].type.elem.is_float:
        return ids
    f, y = blk.ops
    if (f.name in ("maxf", "minf") and not f.attrs.get("propagate_nan")
            and list(y.operands) == [f.results[0]]
            and {id(v) for v in f.operands} == {id(a) for a in blk.args}):
        return [float("nan")]
    return ids


op(OpDef("scan", operands=(O("operands", variadic=True),),
         attrs=(A("dim", "int", False), A("reverse", "bool", False),
                A("identities", "identities", False)),
         results=(R("results", variadic=True),), regions=("body",),
         infer=lambda types, attrs: list(types), terminators=("yield",),
         constraints=(all_tiles("operands"), same_shape("operands"), _reduce_dim,
                      _identities_count, _identities_type, _reduce_results),
         region_rules=_COMBINER))


# ---------------------------------------------------------------------------- module items
@rule("top_level", "must be directly nested in the module")
def _top_level(o):
    if o.parent is not None:
        return f"{o.name} must be directly nested in the module, not inside {next(ancestors(o), o).name}"


@rule("kernel_params", "kernel parameters must be 0-d tiles")
def _kernel_params(o):
    for a in o.body.block.args:
        if not (isinstance(a.type, TileType) and a.type.rank == 0):
            return f"kernel parameters must be 0-d tiles (got {a.type})"


@rule("kernel_returns", "a kernel returns no values")
def _kernel_returns(o):
    for r in (x for x in o.walk() if x.name == "return"):
        if r.operands:
            return f"a kernel returns no values (return has {len(r.operands)} operands)"


op(OpDef("entry", attrs=(A("sym_name", "symbol", False), A("optimization_hints", "hints")),
         regions=("body",), category="core", pure=False, terminators=("return",),
         region_rules=(_top_level, _ends_with("return"), _kernel_params, _kernel_returns)))


@rule("global_type", "global must hold a 1-d tile")
def _global_type(o):
    t = o.type
    if not (isinstance(t, TileType) and t.rank == 1 and not isinstance(t.elem, PtrType)):
        return f"global must hold a 1-d tile of numbers (got {t})"


@rule("global_value", "value must match the global's type")
def _global_value(o):
    v, t = o.value, o.type
    if v.elem != t.elem or (not v.is_splat and tuple(v.array.shape) != t.shape):
        return f"value must match the global's type {t} (got {v.elem} of shape {tuple(v.array.shape)})"


@rule("alignment", "alignment must be a positive power of two")
def _alignment(o):
    a = o.alignment
    if a is not None and not is_power_of_two(a):
        return f"alignment must be a positive power of two (got {a})"


# NVIDIA 13.3: `global private constant @g ...`: `constant` (read-only while a kernel runs: a store
# into it is undefined behavior), `symbol_visibility` (public, the default: the host may reach it;
# private: device only).
op(OpDef("global", attrs=(A("sym_name", "symbol", False), A("alignment", "int"),
                          A("value", "dense", False), A("type", "type", False),
                          A("constant", "flag"), A("symbol_visibility", SYMBOL_VISIBILITY)),
         pure=False, constraints=(_global_type, _global_value, _alignment),
         region_rules=(_top_level,)))


def module_of(o):
    """The Module holding the item that encloses `o` (None when not in a module)."""
    item = o
    for item in ancestors(o):
        pass
    return getattr(item, "owner", None)


@rule("global_symbol", "does not name a global")
def _global_symbol(o):
    m, sym = module_of(o), o.attrs.get("name")     # `o.name` is the op's name, "get_global"
    if m is None:
        return None
    g = next((it for it in m.items if it.name == "global" and it.sym_name == sym), None)
    if g is None:
        return f"@{sym} does not name a global of the module"
    want = scalar_tile(PtrType(g.type.elem)) if isinstance(g.type, TileType) else None
    if o.result.type != want:
        return f"result must be {want}, a pointer to the elements of @{sym} (got {o.result.type})"


@rule("get_global_result", "result must be a 0-d tile of pointers")
def _get_global_result(o):
    t = o.result.type
    if not (isinstance(t, TileType) and t.rank == 0 and isinstance(t.elem, PtrType)):
        return f"result must be a 0-d tile of pointers (got {t})"


op(OpDef("get_global", attrs=(A("name", "symbol", False),), results=(R("result"),),
         syntax="$name : type($result)", constraints=(_get_global_result,),
         region_rules=(_global_symbol,)))


# A module is a `Module` object (core.py), not an Operation; its rules take the Module.
def _items(m):
    if hasattr(m, "items"):
        return m.items
    return m.body.block.ops if m.regions and m.body.blocks else []


@rule("module_items", "a module must contain at least one item")
def _module_nonempty(m):
    if not _items(m):
        return "a module must contain at least one item"


@rule("module_unique", "item names must be unique")
def _module_unique(m):
    names = [it.attrs.get("sym_name") for it in _items(m)]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        return f"item names must be unique in a module (duplicated: {', '.join('@' + d for d in dup)})"


@rule("module_kinds", "only entry and global ops may appear at module level")
def _module_kinds(m):
    for it in _items(m):
        if it.name not in ("entry", "global"):
            return f"only entry and global ops may appear at module level (got {it.name})"


MODULE_RULES = (_module_nonempty, _module_kinds, _module_unique)
op(OpDef("module", attrs=(A("sym_name", "symbol", False),), regions=("body",), pure=False,
         region_rules=MODULE_RULES))
