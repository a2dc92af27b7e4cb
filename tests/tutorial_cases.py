"""Every runnable tutorial kernel as a case: name -> make() returning (kernel, grid, args, check),
the format of test_cutile_suite.CASES; check() compares the output arrays with numpy after the
launch. The five benchmark kernels take their inputs and references from benchmarks/problems.py;
the others (tutorials 6-8) are here. Used by the fake-driver tests, the parameter-ABI check and
`python -m tilepy doctor --gpu` (benchmarks/gpu.py), which hand the arrays to a GPU their own way.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

import tilepy as ct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _d in ("benchmarks", "tutorials"):
    if os.path.join(ROOT, _d) not in sys.path:
        sys.path.append(os.path.join(ROOT, _d))

from definitions import load  # noqa: E402
from problems import PROBLEMS, TUTORIAL  # noqa: E402

CASES = {}


def gpu_benchmark():
    """benchmarks/gpu.py as a module (`python -m tilepy doctor --gpu`)."""
    import importlib.util
    name = "tilepy_benchmarks_gpu"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "benchmarks", "gpu.py"))
        sys.modules[name] = importlib.util.module_from_spec(spec)   # dataclasses look it up
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _problem_case(name):
    def make():
        p = PROBLEMS[name]
        d = p.make(np.random.default_rng(7))
        grid, args = p.tilepy(d)

        def check():
            ref = p.reference(d)
            for out in p.outputs:
                err = np.abs(d[out].astype(np.float64) - ref[out]) / (1 + np.abs(ref[out]))
                assert err.max() <= p.tol, f"{name}.{out}: error {err.max():.3g} > {p.tol}"
        return getattr(load(TUTORIAL[name]), name), grid, args, check
    return make


for _name in PROBLEMS:
    CASES[_name] = _problem_case(_name)


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _gelu_ref(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


@case
def gelu_forward():
    x = np.random.default_rng(1).standard_normal((40, 130)).astype(np.float32)
    y = np.zeros_like(x)
    return load("06_torch_interop").gelu_forward_kernel, (3, 3), (x, y, ct.float32, 16, 64), \
        lambda: np.testing.assert_allclose(y, _gelu_ref(x), rtol=1e-5, atol=1e-6)


@case
def gelu_backward():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 130)).astype(np.float32)
    dy = rng.standard_normal((40, 130)).astype(np.float32)
    dx = np.zeros_like(x)

    def check():
        h = 1e-3
        slope = (_gelu_ref(x.astype(np.float64) + h) - _gelu_ref(x.astype(np.float64) - h)) / (2 * h)
        np.testing.assert_allclose(dx, dy * slope, rtol=1e-4, atol=1e-5)
    return load("06_torch_interop").gelu_backward_kernel, (3, 3), (dy, x, dx, ct.float32, 16, 64), check


@case
def axpy():
    x = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    y = np.ones(1000, np.float32)
    y0 = y.copy()
    return load("07_inspect_code").axpy, (8,), (np.float32(2.5), x, y, 128), \
        lambda: np.testing.assert_allclose(y, np.float32(2.5) * x + y0, rtol=1e-6)


@case
def checked_sqrt():
    x = np.linspace(0, 1, 300, dtype=np.float32)
    y = np.zeros_like(x)
    return load("08_debugging").checked_sqrt, (3,), (x, y, 128), \
        lambda: np.testing.assert_allclose(y, np.sqrt(x), rtol=1e-6)


@case
def row_norms():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros(3, np.float32)
    return load("08_debugging").row_norms, (3,), (x, out, 4), \
        lambda: np.testing.assert_allclose(out, np.linalg.norm(x, axis=1), rtol=1e-6)


@case
def atomic_total():
    x = np.ones(1000, np.float32)
    out = np.zeros(1, np.float32)
    return load("08_debugging").atomic_total, (8,), (x, out, 128), \
        lambda: np.testing.assert_array_equal(out, [1000.0])


@case
def row_logsumexp():
    x = np.random.default_rng(3).standard_normal((4, 512)).astype(np.float32)
    out = np.zeros(4, np.float32)

    def check():
        m = x.astype(np.float64).max(axis=1)
        ref = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
        np.testing.assert_allclose(out, ref, rtol=1e-5)
    return load("08_debugging").row_logsumexp, (4,), (x, out, 32), check


def reference_cases() -> dict:
    """tests/reference_kernels' cases in this module's (kernel, grid, args, check) format."""
    import numpy as np

    from reference_kernels.cases import CASES as REFERENCE

    def adapt(make):
        def case():
            kernel, args, grid, check = make(np.random.default_rng(7))
            return kernel, grid, args, check
        return case
    return {name: adapt(make) for name, make in REFERENCE.items()}
