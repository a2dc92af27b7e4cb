"""`python -m tilepy.tools.coverage`: which Tile IR ops tilepy covers, computed from the code.

Columns, per op of the operations chapter (`SPEC_OPS`) and of NVIDIA's newer dialect
(`DIALECT_OPS`):
  defined    the op has a row in `OPS`
  verified   every rule of the row (constraints, region rules, op-specific enum restrictions) is
             broken by an instance in `negatives*.py` that the verifier rejects by that very
             rule (the error's `rule`), with a message "<op>: ..." containing the rule's phrase;
             an op without rules does not count
  printed/parsed  the op's instance in `samples.py` parses, verifies, prints, and prints the
             same text again after a second parse
  CPU, CUDA  the C++ emitter handles the op (`tilepy.cuda_c.kernel.handled_ops`; entry
             is `emit_kernel` itself). Both backends compile the same emitted C++ today.
  interp     the op is in `tilepy.interpret.SUPPORTED_OPS` (when that module exists)
  bytecode   the op's sample is written as Tile IR bytecode by `tilepy.bytecode` (NVIDIA's
             verifier accepting it is checked by tests/test_bytecode.py, where tileirdisasm exists)
"""
from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field

from ..errors import TileError, TileVerificationError
from ..ir.core import Module
from ..ir.negatives import NEGATIVES, Negative
from ..ir.ops import OPS
from ..ir.parser import parse_module
from ..ir.printer import print_module
from ..ir.samples import VALID, Sample
from ..ir.verifier import verify

# The operations chapter, in order: (section, op).
SPEC_OPS = (
    ("8.3.1", "broadcast"), ("8.3.2", "cat"), ("8.3.3", "cmpf"), ("8.3.4", "cmpi"),
    ("8.3.5", "constant"), ("8.3.6", "entry"), ("8.3.7", "extract"), ("8.3.8", "get_global"),
    ("8.3.9", "get_num_tile_blocks"), ("8.3.10", "get_tile_block_id"), ("8.3.11", "global"),
    ("8.3.12", "iota"), ("8.3.13", "mmaf"), ("8.3.14", "mmai"), ("8.3.15", "module"),
    ("8.3.16", "offset"), ("8.3.17", "pack"), ("8.3.18", "permute"), ("8.3.19", "reduce"),
    ("8.3.20", "reshape"), ("8.3.21", "scan"), ("8.3.22", "select"), ("8.3.23", "unpack"),
    ("8.4.1", "bitcast"), ("8.4.2", "exti"), ("8.4.3", "ftof"), ("8.4.4", "ftoi"), ("8.4.5", "itof"),
    ("8.4.6", "int_to_ptr"), ("8.4.7", "ptr_to_int"), ("8.4.8", "ptr_to_ptr"), ("8.4.9", "trunci"),
    ("8.5.1", "assert"), ("8.5.2", "break"), ("8.5.3", "continue"), ("8.5.4", "for"), ("8.5.5", "if"),
    ("8.5.6", "loop"), ("8.5.7", "return"), ("8.5.8", "yield"), ("8.6.1", "join_tokens"),
    ("8.6.2", "load_ptr_tko"), ("8.6.3", "make_token"), ("8.6.4", "store_ptr_tko"),
    ("8.7.3", "absf"), ("8.7.4", "addf"), ("8.7.5", "atan2"), ("8.7.6", "ceil"), ("8.7.7", "cosh"),
    ("8.7.8", "cos"), ("8.7.9", "divf"), ("8.7.10", "exp2"), ("8.7.11", "exp"), ("8.7.12", "floor"),
    ("8.7.13", "fma"), ("8.7.14", "log2"), ("8.7.15", "log"), ("8.7.16", "maxf"), ("8.7.17", "minf"),
    ("8.7.18", "mulf"), ("8.7.19", "negf"), ("8.7.20", "pow"), ("8.7.21", "remf"),
    ("8.7.22", "rsqrt"), ("8.7.23", "sinh"), ("8.7.24", "sin"), ("8.7.25", "sqrt"),
    ("8.7.26", "subf"), ("8.7.27", "tanh"), ("8.7.28", "tan"), ("8.8.2", "absi"), ("8.8.3", "addi"),
    ("8.8.4", "divi"), ("8.8.5", "maxi"), ("8.8.6", "mini"), ("8.8.7", "muli"), ("8.8.8", "mulhii"),
    ("8.8.9", "negi"), ("8.8.10", "ori"), ("8.8.11", "remi"), ("8.8.12", "shli"), ("8.8.13", "shri"),
    ("8.8.14", "subi"), ("8.8.15", "xori"), ("8.9.1", "andi"), ("8.10.1", "atomic_cas_tko"),
    ("8.10.2", "atomic_rmw_tko"), ("8.11.1", "get_index_space_shape"), ("8.11.2", "get_tensor_shape"),
    ("8.11.3", "load_view_tko"), ("8.11.4", "make_partition_view"), ("8.11.5", "make_tensor_view"),
    ("8.11.6", "store_view_tko"), ("8.12.1", "assume"), ("8.12.2", "print_tko"),
)
# Ops of NVIDIA's dialect newer than the spec chapters: (dialect version, op).
DIALECT_OPS = (("13.3", "mmaf_scaled"), ("13.3", "atomic_red_view_tko"), ("13.3", "make_gather_scatter_view"),
               ("13.3", "make_strided_view"), ("13.3", "alloca"), ("13.4", "fpowi"), ("13.4", "insert"),
               ("13.4", "memory_fence_alias_tko"), ("13.4", "gdc_wait_tko"),
               ("13.4", "gdc_launch_dependents_tko"))


# ------------------------------------------------------------------------------ self-tests
def check_sample(sample: Sample) -> str | None:
    """None when the sample round-trips, else what went wrong."""
    try:
        module = verify(parse_module(sample.text(), f"<sample {sample.op}>"))
        if not any(o.name == sample.op for o in module.walk()) and sample.op != "module":
            return f"the sample has no {sample.op} op"
        printed = print_module(module)
        again = print_module(verify(parse_module(printed, f"<printed {sample.op}>")))
    except TileError as e:
        return f"{type(e).__name__}: {e.message}"
    return None if again == printed else "printing after a second parse differs"


def check_negative(n: Negative) -> str | None:
    """None when the verifier rejects the instance by the rule it breaks, else the problem."""
    phrase = OPS[n.op].rules().get(n.rule)
    if phrase is None:
        return f"{n.op} has no rule '{n.rule}'"
    try:
        module = parse_module(n.text(), f"<{n.op} {n.rule}>")
        if n.mutate:
            n.mutate(module)
        verify(module)
    except TileVerificationError as e:
        prefix = "module: " if n.op == "module" else f"{n.op}: "
        if getattr(e, "rule", None) == n.rule and e.message.startswith(prefix) and phrase in e.message:
            return None
        return f"rejected by rule {getattr(e, 'rule', '?')}: {e.message}"
    except TileError as e:
        return f"{type(e).__name__} before verification: {e.message}"
    return "accepted by the verifier"


@dataclass
class Row:
    section: str
    op: str
    defined: bool = False
    verified: bool = False
    printed: bool = False
    cpu: bool = False
    cuda: bool = False
    interp: bool = False
    bytecode: bool = False
    problems: list[str] = field(default_factory=list)


def check_bytecode(sample: Sample) -> str | None:
    from ..bytecode import write_module
    try:
        write_module(parse_module(sample.text()))
    except TileError as e:
        return str(e).splitlines()[0]
    return None


def _emitter_ops() -> set[str]:
    try:
        em = importlib.import_module("tilepy.cuda_c.kernel")
    except ImportError:
        return set()
    return em.handled_ops()


def _interpreter_ops() -> set[str]:
    try:
        return set(importlib.import_module("tilepy.interpret").SUPPORTED_OPS)
    except (ImportError, AttributeError):
        return set()


def coverage() -> list[Row]:
    failures: dict[str, list[str]] = {}
    tested: dict[str, set[str]] = {}
    for n in NEGATIVES:
        problem = check_negative(n)
        if problem:
            failures.setdefault(n.op, []).append(f"negative {n.rule}: {problem}")
        else:
            tested.setdefault(n.op, set()).add(n.rule)
    backend, interp = _emitter_ops(), _interpreter_ops()
    rows = []
    for section, name in SPEC_OPS + DIALECT_OPS:
        row = Row(section, name, defined=name in OPS, cpu=name in backend, cuda=name in backend,
                  interp=name in interp)
        row.problems += failures.get(name, [])
        if row.defined:
            rules = set(OPS[name].rules())
            untested = sorted(rules - tested.get(name, set()))
            row.problems += [f"no invalid instance breaks rule {r}" for r in untested]
            row.verified = bool(rules) and not untested and name not in failures
            sample = VALID.get(name)
            problem = check_sample(sample) if sample else "no sample"
            row.printed = problem is None
            if problem:
                row.problems.append(f"sample: {problem}")
            problem = check_bytecode(sample) if sample else "no sample"
            row.bytecode = problem is None
            if problem:
                row.problems.append(f"bytecode: {problem}")
        rows.append(row)
    return rows


def render(rows: list[Row], show_problems: bool = False) -> str:
    cols = ("defined", "verified", "printed", "cpu", "cuda", "interp", "bytecode")
    heads = ("defined", "verified", "printed/parsed", "CPU backend", "CUDA backend", "ref. interp.",
             "bytecode")
    width = max(len(r.op) for r in rows)
    lines = [f"{'section':8} {'op':{width}}  " + "  ".join(heads)]
    for r in rows:
        cells = "  ".join(f"{'yes' if getattr(r, c) else '-':^{len(h)}}" for c, h in zip(cols, heads))
        lines.append(f"{r.section:8} {r.op:{width}}  {cells}")
        if show_problems:
            lines += [f"{'':8} {'':{width}}  ! {p}" for p in r.problems]
    n = len(rows)
    lines.append("")
    lines.append(", ".join(f"{sum(getattr(r, c) for r in rows)}/{n} {h}" for c, h in zip(cols, heads)))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tilepy.tools.coverage", description=__doc__.split("\n")[0])
    ap.add_argument("--problems", action="store_true", help="list why a cell is not covered")
    args = ap.parse_args(argv)
    print(render(coverage(), args.problems))


if __name__ == "__main__":
    main()

__all__ = ["SPEC_OPS", "DIALECT_OPS", "coverage", "render", "check_sample", "check_negative", "Row", "Module"]
