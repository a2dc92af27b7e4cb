"""The broken-kernel corpus (tests/broken_kernels): faithful mode catches every bug, and the
fixed version of the same kernel (TP_FIX) matches numpy."""
import glob
import os
import re

import numpy as np
import pytest

import tilepy as ct
from faithful_util import BROKEN_KERNELS, build_file

CORPUS = sorted(glob.glob(os.path.join(BROKEN_KERNELS, "*.cu")))


def header(path):
    with open(path) as f:
        text = f.read()
    meta = dict(re.findall(r"^// (kernel|shape|expect): (.+)$", text, flags=re.M))
    return meta["kernel"].strip(), tuple(map(int, meta["shape"].split())), meta["expect"].strip()


def run(kernel, shape):
    M, N, K = shape
    rng = np.random.default_rng(5)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    kernel((N // 32, -(-M // 32)), A, B, C, M, N, K)
    return C, A.astype(np.float64) @ B.astype(np.float64)


def test_corpus_covers_the_bug_classes():
    names = {os.path.basename(p)[:-3] for p in CORPUS}
    assert {"wrong_fragment_layout", "missing_barrier_war", "missing_cp_async_wait",
            "divergent_barrier"} <= names


@pytest.mark.parametrize("path", CORPUS, ids=[os.path.basename(p)[:-3] for p in CORPUS])
def test_broken_kernel_is_caught_in_faithful_mode(path):
    name, shape, expect = header(path)
    fixed = build_file(path, name, prefix="#define TP_FIX 1\n")
    C, ref = run(fixed, shape)
    np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-4)

    broken = build_file(path, name)
    if expect == "deadlock":
        with pytest.raises(ct.TileLaunchError, match=f"kernel '{name}'.*deadlock"):
            run(broken, shape)
    else:
        assert expect == "mismatch"
        C, ref = run(broken, shape)
        assert not np.allclose(C, ref, rtol=1e-4, atol=1e-4)
