"""Per-op layouts of the bytecode, as data: one row per tilepy op (keyed by the op table's names).

An op is written as: its opcode; its result types (`results`: "each" one type id per result,
"sized" a count first); a varint of flag bits (`flags`, in order: a unit attribute that is set,
an optional attribute or operand that is present); its attributes (`attrs`, in order, each by its
encoding); its operands (`operands`: "each" one value id per operand, optional ones only when
present; "counted" the total count, then every id; "groups" variadic groups each with a count);
then `regions` nested regions. Facts from NVIDIA's cuda-tile dialect (BytecodeOpcodes.td, Ops.td)
and cuTile's encoder; written as tilepy data.

13.1 spec vs NVIDIA's 13.4 dialect, as handled here (a `since` version on a field: older
bytecode lacks it, and the writer refuses a non-default value there):
- `exp` takes `rounding` (13.3; absent: written as `full`);
- `tanh`'s rounding and `negi`'s overflow are in the bytecode since 13.2;
- `for`'s `unsignedCmp` flag since 13.2; `mmaf`'s `fast_acc` flag since 13.3;
- `ftoi`'s `saturating` flag since 13.4; `global`'s visibility and `constant` since 13.3;
- `load_view_tko`/`store_view_tko` carry `inbounds`, one bool per index (13.4; the ops' attribute),
  `atomic_red_view_tko` since 13.5;
- 13.5 (facts from cuTile 1.7's encoder): an entry always has its hints and then its argument
  attributes (writer.ENTRY_ATTRS_SINCE), a debug DISubprogram ends with a flags varint
  (debuginfo.SUBPROGRAM_FLAGS_SINCE); NVIDIA's 13.5 multimem_*_view_tko ops have no tilepy op;
- `pow` is NVIDIA's `fpowf`;
- `atan2` is an op since 13.2, `pack`/`unpack`/`mmaf_scaled` since 13.3 (`NEW_OPS`), the
  f8E8M0FNU type since 13.2 (types.py);
- 13.1's `print_tko` has neither the token operand nor the token result (`results_since`): a
  print whose token tilepy uses cannot be written as 13.1.
NVIDIA's ops beyond the spec chapters (ir/ops_dialect.py) carry their `since` too: 13.3's
atomic_red_view_tko, alloca, make_gather_scatter_view, make_strided_view; 13.4's fpowi,
insert, gdc_*, memory_fence_alias_tko: older bytecode cannot hold them and the writer refuses.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.print_nvidia import default_value


@dataclass(frozen=True)
class Field:
    name: str
    enc: str = "flag"           # flag | enum | int | str | bool | ints32 | dense | predicate |
    #                             hints | identities | inbounds
    since: tuple[int, int] = (13, 1)
    default: object = None      # the value written when tilepy's op has none


@dataclass(frozen=True)
class Layout:
    opcode: int
    nvidia: str                 # NVIDIA's op name, where it differs from tilepy's
    results: str = "each"       # each | sized
    flags: tuple[Field, ...] = ()
    attrs: tuple[Field, ...] = ()
    operands: str = "each"      # each | counted | groups
    regions: int = 0
    since: tuple[int, int] = (13, 1)            # the first bytecode version with the opcode
    results_since: tuple[int, int] = (13, 1)    # older: the op has no results (tilepy's unused)


def _f(name, since=(13, 1), default=None, enc="flag"):
    return Field(name, enc, since, default)


def _a(name, enc="enum", since=(13, 1), default=None):
    return Field(name, enc, since, default)


def _d(op, name, since=(13, 1)):
    """An enum attribute with the default NVIDIA's dialect gives it on `op` (ir/print_nvidia)."""
    return _a(name, since=since, default=default_value(op, name))


FTZ = _f("flush_to_zero")
ROUND_EVEN = _d(None, "rounding_mode")
OVERFLOW = _d(None, "overflow")
SIGNED = _a("signedness")
ORDERING = _a("memory_ordering_semantics")
SCOPE = _a("memory_scope")
HINTS = _a("optimization_hints", "hints")
INBOUNDS = _a("inbounds", "inbounds", (13, 4), default=False)   # absent: no index is marked


# Opcodes newer than 13.1 (tileirdisasm refuses them in older files: "unsupported opcode").
NEW_OPS = {"atan2": (13, 2), "pack": (13, 3), "unpack": (13, 3), "mmaf_scaled": (13, 3)}


def _rows() -> dict[str, Layout]:
    float_binary = dict(flags=(FTZ,), attrs=(ROUND_EVEN,))
    minmax = dict(flags=(_f("propagate_nan"), FTZ))
    view_mem = dict(results="sized", flags=(_f("memory_scope"), _f("optimization_hints"),
                                            _f("token")),
                    attrs=(ORDERING, SCOPE, HINTS, INBOUNDS), operands="groups")
    plain = {  # opcode, NVIDIA name: one result, operands one by one, no attributes
        "absf": (0, "absf"), "absi": (1, "absi"), "andi": (4, "andi"), "atan2": (110, "atan2"),
        "bitcast": (9, "bitcast"), "broadcast": (11, "broadcast"), "ceil": (13, "ceil"),
        "cosh": (19, "cosh"), "cos": (18, "cos"), "floor": (39, "floor"), "pow": (84, "fpowf"),
        "int_to_ptr": (51, "int_to_ptr"), "iota": (58, "iota"), "log2": (64, "log2"),
        "log": (63, "log"), "make_partition_view": (66, "make_partition_view"),
        "make_token": (68, "make_token"), "mmaf": None, "mulhii": (77, "mulhii"),
        "mmaf_scaled": (114, "mmaf_scaled"),     # 13.3: lhs, rhs, acc, lhs_scale, rhs_scale
        "negf": (79, "negf"), "offset": (81, "offset"), "ori": (82, "ori"),
        "pack": (111, "pack"), "ptr_to_int": (86, "ptr_to_int"),
        "ptr_to_ptr": (87, "ptr_to_ptr"), "remf": (89, "remf"), "reshape": (91, "reshape"),
        "select": (95, "select"), "sinh": (99, "sinh"), "sin": (98, "sin"), "tan": (105, "tan"),
        "unpack": (112, "unpack"), "xori": (108, "xori"),
        "get_tile_block_id": (48, "get_tile_block_id"),
        "get_num_tile_blocks": (46, "get_num_tile_blocks"),
    }
    rows = {name: Layout(*v, since=NEW_OPS.get(name, (13, 1))) for name, v in plain.items() if v}
    rows.update({
        "addf": Layout(2, "addf", **float_binary), "subf": Layout(103, "subf", **float_binary),
        "mulf": Layout(76, "mulf", **float_binary), "divf": Layout(20, "divf", **float_binary),
        "fma": Layout(40, "fma", **float_binary),
        "sqrt": Layout(100, "sqrt", **float_binary),
        "maxf": Layout(69, "maxf", **minmax), "minf": Layout(71, "minf", **minmax),
        "exp2": Layout(24, "exp2", flags=(FTZ,)), "rsqrt": Layout(93, "rsqrt", flags=(FTZ,)),
        "tanh": Layout(106, "tanh", attrs=(_d("tanh", "rounding_mode", (13, 2)),)),
        "exp": Layout(23, "exp", attrs=(_d("exp", "rounding_mode", (13, 3)),)),
        "addi": Layout(3, "addi", attrs=(OVERFLOW,)), "subi": Layout(104, "subi", attrs=(OVERFLOW,)),
        "muli": Layout(78, "muli", attrs=(OVERFLOW,)), "shli": Layout(96, "shli", attrs=(OVERFLOW,)),
        "negi": Layout(80, "negi", attrs=(_d("negi", "overflow", (13, 2)),)),
        "trunci": Layout(107, "trunci", attrs=(OVERFLOW,)),
        "remi": Layout(90, "remi", attrs=(SIGNED,)), "maxi": Layout(70, "maxi", attrs=(SIGNED,)),
        "mini": Layout(72, "mini", attrs=(SIGNED,)), "shri": Layout(97, "shri", attrs=(SIGNED,)),
        "exti": Layout(37, "exti", attrs=(SIGNED,)),
        "divi": Layout(21, "divi", attrs=(SIGNED, _d("divi", "rounding"))),
        "cmpf": Layout(14, "cmpf", attrs=(_a("comparison_predicate"), _a("comparison_ordering"))),
        "cmpi": Layout(15, "cmpi", attrs=(_a("comparison_predicate"), SIGNED)),
        "ftof": Layout(42, "ftof", attrs=(ROUND_EVEN,)),
        "ftoi": Layout(43, "ftoi", flags=(_f("saturating", since=(13, 4)),),
                       attrs=(SIGNED, _d("ftoi", "rounding_mode"))),
        "itof": Layout(59, "itof", attrs=(SIGNED, ROUND_EVEN)),
        "mmaf": Layout(73, "mmaf", flags=(_f("fast_acc", since=(13, 3)),)),
        "mmai": Layout(74, "mmai", attrs=(_a("signedness_lhs"), _a("signedness_rhs"))),
        "cat": Layout(12, "cat", attrs=(_a("dim", "int"),)),
        "permute": Layout(83, "permute", attrs=(_a("permutation", "ints32"),)),
        "extract": Layout(38, "extract", results="sized", operands="counted"),
        "assume": Layout(6, "assume", attrs=(_a("predicate", "predicate"),)),
        "constant": Layout(16, "constant", attrs=(_a("value", "dense"),)),
        "get_global": Layout(44, "get_global", attrs=(_a("name", "str"),)),
        "assert": Layout(5, "assert", attrs=(_a("message", "str"),)),
        "print_tko": Layout(85, "print_tko", results="sized", flags=(_f("token", (13, 2)),),
                            attrs=(_a("str", "str"),), operands="groups",
                            results_since=(13, 2)),
        "join_tokens": Layout(60, "join_tokens", results="sized", operands="counted"),
        "make_tensor_view": Layout(67, "make_tensor_view", results="sized", operands="groups"),
        "get_index_space_shape": Layout(45, "get_index_space_shape", results="sized"),
        "get_tensor_shape": Layout(47, "get_tensor_shape", results="sized"),
        "load_view_tko": Layout(62, "load_view_tko", **view_mem),
        "store_view_tko": Layout(102, "store_view_tko", **view_mem),
        "load_ptr_tko": Layout(61, "load_ptr_tko", flags=(
            _f("memory_scope"), _f("optimization_hints"), _f("mask"), _f("paddingValue"),
            _f("token")), attrs=(ORDERING, SCOPE, HINTS)),
        "store_ptr_tko": Layout(101, "store_ptr_tko", flags=(
            _f("memory_scope"), _f("optimization_hints"), _f("mask"), _f("token")),
            attrs=(ORDERING, SCOPE, HINTS)),
        "atomic_cas_tko": Layout(7, "atomic_cas_tko", flags=(_f("mask"), _f("token")),
                                 attrs=(ORDERING, SCOPE)),
        "atomic_rmw_tko": Layout(8, "atomic_rmw_tko", flags=(_f("mask"), _f("token")),
                                 attrs=(ORDERING, SCOPE, _a("mode"))),
        "for": Layout(41, "for", results="sized", flags=(_f("unsignedCmp", (13, 2)),),
                      operands="counted", regions=1),
        "loop": Layout(65, "loop", results="sized", operands="counted", regions=1),
        "if": Layout(50, "if", results="sized", regions=2),
        "reduce": Layout(88, "reduce", results="sized", operands="counted", regions=1,
                         attrs=(_a("dim", "int"), _a("identities", "identities"))),
        "scan": Layout(94, "scan", results="sized", operands="counted", regions=1,
                       attrs=(_a("dim", "int"), _a("reverse", "bool"),
                              _a("identities", "identities"))),
    })
    rows["atomic_red_view_tko"] = Layout(     # 13.3; its `inbounds` since 13.5
        117, "atomic_red_view_tko", results="sized", flags=(_f("token"),),
        attrs=(ORDERING, SCOPE, _a("mode"), _a("inbounds", "inbounds", (13, 5), default=False)),
        operands="groups", since=(13, 3))
    rows["make_gather_scatter_view"] = Layout(115, "make_gather_scatter_view", since=(13, 3))
    rows["make_strided_view"] = Layout(116, "make_strided_view", since=(13, 3))
    rows["alloca"] = Layout(113, "alloca", flags=(_f("global"),),
                            attrs=(_a("num_elem", "int"), _a("alignment", "int")), since=(13, 3))
    v134 = (13, 4)
    rows.update({     # NVIDIA's 13.4 ops (ir/ops_dialect.py)
        "fpowi": Layout(121, "fpowi", since=v134),
        "insert": Layout(118, "insert", results="sized", operands="counted", since=v134),
        "gdc_launch_dependents_tko": Layout(119, "gdc_launch_dependents_tko", operands="counted",
                                            since=v134),
        "gdc_wait_tko": Layout(120, "gdc_wait_tko", operands="counted", since=v134),
        "memory_fence_alias_tko": Layout(122, "memory_fence_alias_tko", since=v134),
    })
    for name, opcode in (("yield", 109), ("continue", 17), ("break", 10), ("return", 92)):
        rows[name] = Layout(opcode, name, results="sized", operands="counted")
    return rows


LAYOUTS: dict[str, Layout] = _rows()

# Written as parts of the file, not as ops: `module` is the file, `entry` a function of the
# function section, `global` an entry of the global section.
STRUCTURAL = ("module", "entry", "global")
