"""Differential fuzzing in CI: random valid kernels through the reference interpreter and every
execution of fuzz.runner.EXECUTIONS (CPU fast mode, CPU faithful mode; every batch also compiles
with NVRTC), with a fixed seed and budget. `python benchmarks/fuzz.py` is the long run.

`slow` (minutes): CI runs it (pytest-xdist runs the rest of the suite on the other workers
meanwhile); `-m "not slow"` leaves it out."""
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from fuzz import batches
from fuzz.runner import EXECUTIONS, run_batch

BATCHES, CASES_PER_BATCH, MIN_COMPARED = 40, 12, 300


@pytest.mark.slow
def test_random_kernels_agree_with_the_interpreter():
    seen = Counter()

    @settings(max_examples=BATCHES, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(batches(CASES_PER_BATCH))
    def one_batch(batch):
        cases, seed = batch
        outcomes = run_batch(cases, [seed])
        bad = [o for o in outcomes if o.status in ("mismatch", "compile-error")]
        for o in outcomes:
            seen[o.status] += 1
        assert not bad, "\n\n".join(f"{o.status} ({o.execution}): {o.detail}\n{o.case!r}"
                                    for o in bad)

    one_batch()
    print(f"\ndifferential fuzzing: {dict(seen)} ({', '.join(['interpreter', *EXECUTIONS])})")
    assert seen["agree"] >= MIN_COMPARED, seen
    assert len(EXECUTIONS) >= 2
