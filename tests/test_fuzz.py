"""Differential fuzzing in CI: random valid kernels through the reference interpreter and every
execution of fuzz.runner.EXECUTIONS (CPU fast mode, CPU faithful mode; every batch also compiles
with NVRTC). `python benchmarks/fuzz.py` is the long run.

The run is split into CHUNKS tests that pytest-xdist spreads over the workers (no test of
minutes), and its seed changes every day: each day's runs fuzz other kernels, so the strength
accumulates over runs instead of repeating one fixed sample. A failure names its seed;
`TILEPY_FUZZ_SEED=<seed> python -m pytest tests/test_fuzz.py` runs that sample again.
`slow`: `-m "not slow"` leaves it out."""
import datetime
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from fuzz import batches
from fuzz.runner import EXECUTIONS, run_batch

CHUNKS, BATCHES_PER_CHUNK, CASES_PER_BATCH = 4, 2, 12
MIN_COMPARED = 12            # per chunk, of 24 cases (some run in the interpreter only)


def run_seed() -> int:
    """TILEPY_FUZZ_SEED, else the day's: every day's runs fuzz other kernels."""
    return int(os.environ.get("TILEPY_FUZZ_SEED") or datetime.date.today().toordinal())


@pytest.mark.slow
@pytest.mark.budget(60)                   # about 20 s of CPU: two batches, each built 3 times
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_kernels_agree_with_the_interpreter(chunk):
    seen, day = Counter(), run_seed()

    @settings(max_examples=BATCHES_PER_CHUNK, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(batches(CASES_PER_BATCH))
    def one_batch(batch):
        cases, data_seed = batch
        outcomes = run_batch(cases, [data_seed])
        bad = [o for o in outcomes if o.status in ("mismatch", "compile-error")
               or o.nvidia.startswith("rejected")]          # NVIDIA's verifier, when installed
        for o in outcomes:
            seen[o.status] += 1
        assert not bad, f"TILEPY_FUZZ_SEED={day} (chunk {chunk}):\n\n" + "\n\n".join(
            f"{o.status} ({o.execution}): {o.detail} {o.nvidia}\n{o.case!r}" for o in bad)

    seed(day * CHUNKS + chunk)(one_batch)()
    print(f"\ndifferential fuzzing, seed {day} chunk {chunk}: {dict(seen)} "
          f"({', '.join(['interpreter', *EXECUTIONS])})")
    assert seen["agree"] >= MIN_COMPARED, (day, chunk, seen)
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
