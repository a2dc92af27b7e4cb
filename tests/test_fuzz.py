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
        bad = [o for o in outcomes if o.status in ("mismatch", "compile-error")
               or o.nvidia.startswith("rejected")]          # NVIDIA's verifier, when installed
        for o in outcomes:
            seen[o.status] += 1
        assert not bad, "\n\n".join(f"{o.status} ({o.execution}): {o.detail} {o.nvidia}\n"
                                    f"{o.case!r}" for o in bad)

    one_batch()
    print(f"\ndifferential fuzzing: {dict(seen)} ({', '.join(['interpreter', *EXECUTIONS])})")
    assert seen["agree"] >= MIN_COMPARED, seen
    assert len(EXECUTIONS) >= 2


def _one_batch(n=6):
    """A derandomized batch whose cases differ (the first examples drawn are all alike)."""
    cases = []

    @settings(max_examples=8, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(batches(n))
    def draw(batch):
        cases.append(batch)
    draw()
    return cases[-1]


def test_each_batch_goes_through_nvidias_verifier(monkeypatch):
    """With tileirdisasm installed every outcome carries NVIDIA's verdict; a batch it rejects
    is split to name the culprit; without the tool the check is skipped ("")."""
    import bytecode_util as bu
    from fuzz import runner
    cases, seed = _one_batch()
    if bu.TILEIRDISASM is not None:
        assert {o.nvidia for o in run_batch(cases, [seed])} == {"accepted"}
        from fuzz.case import materialize
        from tilepy.bytecode import write_module
        real = bu.disasm
        culprit = cases[2]
        refused = {write_module(materialize(cs, "fuzz_batch")[0]) for cs in (cases, [culprit])}

        def rejecting(data):            # NVIDIA's reader refusing the batch and one case alone
            out = real(data)
            if data in refused:
                out.returncode, out.stderr = 1, "error: rejected"
            return out
        monkeypatch.setattr(bu, "disasm", rejecting)
        verdicts = runner.nvidia_verdicts(cases)
        alone = [write_module(materialize([c], "fuzz_batch")[0]) for c in cases]
        assert verdicts == {id(c): "rejected: error: rejected" if b in refused else "accepted"
                            for c, b in zip(cases, alone)}
        assert 0 < sum(v == "accepted" for v in verdicts.values()) < len(cases)
    monkeypatch.setattr(bu, "TILEIRDISASM", None)
    assert set(runner.nvidia_verdicts(cases).values()) == {""}
