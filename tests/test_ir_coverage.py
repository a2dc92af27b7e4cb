"""Every op: one valid instance that round-trips through text, and for every rule of its row
an invalid instance that the verifier rejects by that rule, naming it; the coverage table."""
import os
import re
import subprocess
import sys

import pytest

from tilepy.ir import OPS
from tilepy.tools.coverage import DIALECT_OPS, SPEC_OPS, check_negative, check_sample, coverage, render
from tilepy.ir.negatives import NEGATIVES
from tilepy.ir.samples import VALID

SPEC = "/work/shared/spec/tile-ir-8-operations.txt"


@pytest.mark.parametrize("op", sorted(VALID))
def test_valid_sample_round_trips(op):
    assert check_sample(VALID[op]) is None


@pytest.mark.parametrize("neg", NEGATIVES, ids=[f"{n.op}-{n.rule}" for n in NEGATIVES])
def test_invalid_instance_is_rejected_by_its_rule(neg):
    assert check_negative(neg) is None


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_rule_of_every_op_has_an_invalid_instance(op):
    rules = set(OPS[op].rules())
    assert rules, f"{op} has no rules"
    assert rules <= {n.rule for n in NEGATIVES if n.op == op}


def test_spec_op_list_is_the_operations_chapter():
    assert len(SPEC_OPS) == 95 and {n for _, n in SPEC_OPS + DIALECT_OPS} == set(OPS)
    if not os.path.exists(SPEC):
        pytest.skip("spec text not available")
    with open(SPEC, encoding="utf-8") as f:
        found = re.findall(r"^(8\.\d+\.\d+)\. cuda_tile\.(\w+)", f.read(), re.M)
    assert tuple(found) == SPEC_OPS


def test_coverage_totals():
    rows = coverage()
    assert all(r.defined and r.verified and r.printed for r in rows), \
        [(r.op, r.problems) for r in rows if r.problems]
    text = render(rows)
    n = len(OPS)                 # every op of the table is a row (the spec's and the dialect's)
    assert f"{n}/{n} defined, {n}/{n} verified, {n}/{n} printed/parsed" in text
    assert f"{n}/{n} bytecode" in text
    from tilepy.cuda_c.kernel import handled_ops
    assert {r.op for r in rows if r.cpu} == handled_ops() & set(OPS)


def test_coverage_is_a_command():
    out = subprocess.run([sys.executable, "-m", "tilepy.tools.coverage"], capture_output=True, text=True,
                         check=True).stdout
    assert re.search(r"^8\.7\.4\s+addf\s+yes\s+yes\s+yes", out, re.M)
    n = len(OPS)
    assert f"{n}/{n} defined" in out and f"{n}/{n} ref. interp." in out   # tilepy.interpret: every op


def test_a_broken_negative_is_reported():
    """The self-test really checks which rule fired: a case aimed at the wrong rule fails."""
    from dataclasses import replace
    neg = next(n for n in NEGATIVES if n.op == "addf" and n.rule.startswith("same_elem"))
    assert "rejected by rule same_elem" in check_negative(replace(neg, rule="ftz"))
    valid = replace(neg, body="%a = constant <f32: 1.0> : tile<4xf32>\n%r = addf %a, %a : tile<4xf32>")
    assert check_negative(valid) == "accepted by the verifier"
