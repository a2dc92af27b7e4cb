"""Frontend fuzzing in CI: random cuTile-style kernels (Python source through the public API,
tests/fuzz_frontend.py) against a numpy model of the API, in the interpreter and both CPU modes,
with a fixed seed and a small budget (each kernel costs two C++ builds). The interpreter-only
test covers many more kernels for the price of none."""
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from fuzz_frontend import check, kernels

FAST = dict(derandomize=True, database=None, deadline=None, phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck))


@settings(max_examples=40, **FAST)
@given(kernels, st.integers(0, 2**16))
def test_random_frontend_kernels_match_the_numpy_model_interpreted(exprs, seed):
    bad = check(exprs, seed, ("interpret",))
    assert not bad, bad[0]


@settings(max_examples=3, **FAST)
@given(kernels, st.integers(0, 2**16))
def test_random_frontend_kernels_match_the_numpy_model_on_the_cpu(exprs, seed):
    bad = check(exprs, seed, ("interpret", "fast", "faithful"))
    assert not bad, bad[0]
