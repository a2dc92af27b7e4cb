"""The mutant set of benchmarks/mutate.py stays applicable: every edit's text occurs exactly
once in the tree and every test subset exists (a mutant whose code moved would otherwise
silently stop testing anything). The mutation run itself is a weekly job (README)."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# appended, not first: benchmarks/fuzz.py must not shadow the tests' `fuzz` package for the tests
# of the same worker that import it later (tests/test_bytecode.py)
sys.path.append(os.path.join(ROOT, "benchmarks"))
from mutants import MUTANTS  # noqa: E402


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_mutant_applies_and_names_existing_tests(mutant):
    for path, text, repl in mutant.edits:
        with open(os.path.join(ROOT, path)) as f:
            assert f.read().count(text) == 1, f"{mutant.id}: {text!r} not found once in {path}"
        assert text != repl
    files = [t for t in mutant.tests if t.endswith(".py") or ".py::" in t]
    assert files, f"{mutant.id} runs no test file"
    for t in files:
        assert os.path.exists(os.path.join(ROOT, t.split("::")[0])), t
    args = list(mutant.tests)
    for i, a in enumerate(args[:-1]):
        if a == "-k":
            from _pytest.mark.expression import Expression
            Expression.compile(args[i + 1])           # a bad -k expression runs no test at all


def test_the_set_covers_the_core():
    assert len({m.id for m in MUTANTS}) == len(MUTANTS)
    assert {"rt-cosh-sinh", "fe-minmax-identity", "rt-chunk-span", "key-headers"} == \
        {m.id for m in MUTANTS if m.named}
    assert {m.area for m in MUTANTS} >= {"runtime", "emitter", "frontend", "lowering",
                                         "cache keys", "launch packing"}
