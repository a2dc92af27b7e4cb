"""Rows of ops NVIDIA's cuda_tile dialect added after the 13.1 spec chapters (13.4: fpowi,
insert, memory_fence_alias_tko, gdc_wait_tko, gdc_launch_dependents_tko).

Facts from NVIDIA's 13.4 release notes and dialect definitions (read, not copied):
- `fpowi`: element-wise source ** exponent, a float tile raised to a signed-integer tile
  (i1, i8, i16, i32) of the same shape; the result has the source's type.
- `insert`: the destination tile with the subtile number `indices` (per dimension, in units of
  the source's shape, read unsigned) replaced by `source`; the inverse of `extract`. The source
  shape divides the destination shape evenly.
- `memory_fence_alias_tko`: a token-ordered fence ordering accesses of the same memory through
  different virtual aliases; takes a token, gives a token.
- `gdc_wait_tko` / `gdc_launch_dependents_tko`: grid dependency control (programmatic dependent
  launch, sm_90+): wait for the preceding grid with acquire semantics / allow the dependent grid
  to start; no-ops below sm_90 and without programmatic dependent launch. Optional token in,
  token out.
"""
from __future__ import annotations

from ..types import ARITH_FLOAT_TYPES, I1, I8, I16, I32, TOKEN
from .constraints import (all_tiles, elem_in, is_token, same_elem, same_rank, same_shape, same_type,
                          scalar)
from .opdef import O, OpDef, R, op, rule, same_as

FPOWI_EXPONENT_TYPES = (I1, I8, I16, I32)

op(OpDef("fpowi", operands=(O("source"), O("exponent")), results=(R("result"),),
         infer=same_as(0), elementwise=True, category="power",
         syntax="$source, $exponent : type($source), type($exponent)",
         constraints=(all_tiles("source", "exponent", "result"), same_shape("source", "exponent"),
                      elem_in(ARITH_FLOAT_TYPES, "source"), elem_in(FPOWI_EXPONENT_TYPES, "exponent"),
                      same_type("source", "result"))))


# -------------------------------------------------------------------------------------- insert
@rule("insert_count", "indices for a rank-")
def _insert_count(o):
    d = o.destination.type
    if len(o.indices) != d.rank:
        return f"expected {d.rank} indices for a rank-{d.rank} destination (got {len(o.indices)})"


@rule("insert_divides", "source shape must divide the destination shape evenly")
def _insert_divides(o):
    for i, (a, b) in enumerate(zip(o.destination.type.shape, o.source.type.shape)):
        if b == 0 or a % b:
            return f"source shape must divide the destination shape evenly (dim {i}: {b} into {a})"


op(OpDef("insert", operands=(O("source"), O("destination"), O("indices", variadic=True)),
         results=(R("result"),), infer=same_as(1),
         syntax="$source, $destination[$indices] : type($source), type($destination)",
         constraints=(all_tiles("source", "destination", "result"),
                      same_rank("source", "destination"), same_elem("source", "destination"),
                      same_type("destination", "result"), scalar("indices"),
                      elem_in((I32,), "indices"), _insert_count, _insert_divides)))


# --------------------------------------------------------------------- fences, grid dependency
op(OpDef("memory_fence_alias_tko", operands=(O("token"),), results=(R("result_token"),),
         infer=lambda t, a: [TOKEN], category="memory", pure=False,
         syntax="$token",
         constraints=(is_token("token", "result_token"),)))

for _name in ("gdc_wait_tko", "gdc_launch_dependents_tko"):
    op(OpDef(_name, operands=(O("token", optional=True),), results=(R("result_token"),),
             infer=lambda t, a: [TOKEN], category="memory", pure=False,
             syntax="?( token = $token )? -> type($result_token)",
             constraints=(is_token("token", "result_token"),)))
