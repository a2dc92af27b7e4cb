"""The hazard pass (lowering/hazards.py), directly: read-after-write, write-after-read and
write-after-write between threads of one block, through tile loads and stores, gathers and
scatters, each pair on its own array, in faithful mode (the real 128 threads per block,
scheduled warp by warp, so an access that runs before another warp's conflicting one shows).

Every pair is checked against numpy's sequential semantics; then the same kernel built with the
hazard pass's barriers removed must get every pair wrong, so each pair really tests a barrier.
"""
import numpy as np
import pytest

import tilepy as ct
from guarded import launch

N = 1024
PAIRS = ("raw store>load", "raw store>gather", "raw scatter>load", "raw scatter>gather",
         "war load>store", "war load>scatter", "war gather>store", "war gather>scatter",
         "waw store>store", "waw store>scatter", "waw scatter>store", "waw scatter>scatter")


@ct.kernel
def hazards(m0, m1, m2, o0, o1, v0, v1, v2, v3, v4, v5, v6, v7, v8, q0, q1, q2, q3, q4, q5):
    i = ct.arange(1024, dtype=ct.int32)
    r = 1023 - i
    val = i.astype(ct.float32) + 1000.0
    val2 = i.astype(ct.float32) * 2.0
    # read after write
    ct.store(m0, (0, 0), ct.full((64, 16), 7.0, ct.float32))
    ct.store(o0, (0, 0), ct.load(m0, (0, 0), (16, 64)))
    ct.store(v0, (0,), val)
    ct.store(q0, (0,), ct.gather(v0, r))
    ct.scatter(v1, r, val)
    ct.store(q1, (0,), ct.load(v1, (0,), (1024,)))
    ct.scatter(v2, i, val)
    ct.store(q2, (0,), ct.gather(v2, r))
    # write after read
    t = ct.load(m1, (0, 0), (16, 64))
    ct.store(m1, (0, 0), ct.full((64, 16), -1.0, ct.float32))
    ct.store(o1, (0, 0), t)
    t3 = ct.load(v3, (0,), (1024,))
    ct.scatter(v3, r, val)
    ct.store(q3, (0,), t3)
    g4 = ct.gather(v4, r)
    ct.store(v4, (0,), val)
    ct.store(q4, (0,), g4)
    g5 = ct.gather(v5, i)
    ct.scatter(v5, r, val)
    ct.store(q5, (0,), g5)
    # write after write
    ct.store(m2, (0, 0), ct.full((16, 64), 1.0, ct.float32))
    ct.store(m2, (0, 0), ct.full((64, 16), 2.0, ct.float32))
    ct.store(v6, (0,), val)
    ct.scatter(v6, r, val2)
    ct.scatter(v7, r, val)
    ct.store(v7, (0,), val2)
    ct.scatter(v8, i, val)
    ct.scatter(v8, r, val2)


def _inputs():
    rng = np.random.default_rng(3)
    mats = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(3)]
    outs = [np.zeros((16, 64), np.float32) for _ in range(2)]
    vecs = [rng.standard_normal(N).astype(np.float32) for _ in range(9)]
    qs = [np.zeros(N, np.float32) for _ in range(6)]
    return mats + outs + vecs + qs


def _expected(a):
    """{pair: (got index, expected value)} from the inputs `a`, in program order."""
    m0, m1, m2, _, _, *rest = [x.copy() for x in a]
    v = rest[:9]
    val = np.arange(N, dtype=np.float32) + 1000
    val2 = np.arange(N, dtype=np.float32) * 2
    m0[:, :16] = 7
    m1b = m1.copy()
    m1b[:, :16] = -1
    m2[:16, :] = 1
    m2[:, :16] = 2
    return {
        "raw store>load": (3, m0[:16]), "raw store>gather": (14, val[::-1]),
        "raw scatter>load": (15, val[::-1]), "raw scatter>gather": (16, val[::-1]),
        "war load>store": (4, m1[:16]), "war load>scatter": (17, v[3]),
        "war gather>store": (18, v[4][::-1]), "war gather>scatter": (19, v[5]),
        "waw store>store": (2, m2), "waw store>scatter": (11, val2[::-1]),
        "waw scatter>store": (12, val2), "waw scatter>scatter": (13, val2[::-1]),
        # the arrays written after a read hold the write
        "war load>store (array)": (1, m1b), "war load>scatter (array)": (8, val[::-1]),
        "war gather>store (array)": (9, val), "war gather>scatter (array)": (10, val[::-1]),
    }


def _run(mode):
    a = _inputs()
    got = [x.copy() for x in a]
    launch((1,), hazards, got, mode)
    return a, got


@pytest.mark.parametrize("mode", ["faithful", "interpret", "fast"])
def test_every_hazard_pair_matches_program_order(mode):
    a, got = _run(mode)
    for pair, (k, want) in _expected(a).items():
        assert np.array_equal(got[k], want), f"{pair} ({mode})"


def test_each_pair_has_its_barrier_and_needs_it(monkeypatch):
    """The source has a barrier per pair (12), and without the pass's barriers faithful mode
    gets every pair wrong: each pair is a test of one barrier."""
    src = hazards.cuda_source(*_inputs())
    assert src.count("__syncthreads();  // other threads' earlier accesses") == len(PAIRS)
    import tilepy.lowering.plan as plan                  # where the compiler asks for barriers
    monkeypatch.setattr(plan, "barrier_ops", lambda *a, **k: set())
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    hazards.cache.clear()
    try:
        a, got = _run("faithful")
    finally:
        hazards.cache.clear()
    wrong = {p for p, (k, want) in _expected(a).items() if not np.array_equal(got[k], want)}
    assert set(PAIRS) <= wrong, f"pairs right without a barrier: {sorted(set(PAIRS) - wrong)}"
