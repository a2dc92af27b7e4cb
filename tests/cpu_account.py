"""CPU time that a test's own process cannot see: the work a test has done in a process that
outlives it (a Jupyter kernel that several tests share, notebook_util.Kernel) is only counted as
a waited-for child's when that process ends. `add(seconds)` charges it to the running test:
tests/conftest.py adds what was added during a test to that test's CPU time (its budget, and
TILEPY_TEST_CPU_LOG); the owner of such a process adds minus what it charged when it ends it (the
process's whole time is counted then)."""
from __future__ import annotations

_pending = [0.0]


def add(seconds: float):
    _pending[0] += seconds


def take() -> float:
    """What was added since the last call (conftest.py, at the end of each test)."""
    seconds, _pending[0] = _pending[0], 0.0
    return seconds
