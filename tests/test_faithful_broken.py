"""The broken-kernel corpus (tests/broken_kernels): faithful mode catches every bug, and the
fixed version of the same kernel (TP_FIX) matches numpy.

The fixed and broken versions of every corpus file with the same kernel name are built as one
library (one g++ compile per kernel name, not two per file): each version's text, unchanged, is
renamed by a macro, and a kernel of the corpus name selects one by a leading `variant` argument.
Every version still runs in its own launch, so a deadlock stops only the broken one's."""
import glob
import os
import re

import numpy as np
import pytest

import tilepy as ct
from faithful_util import BROKEN_KERNELS, build, kernel_source

CORPUS = sorted(glob.glob(os.path.join(BROKEN_KERNELS, "*.cu")))


def header(path):
    with open(path) as f:
        text = f.read()
    meta = dict(re.findall(r"^// (kernel|shape|expect): (.+)$", text, flags=re.M))
    return meta["kernel"].strip(), tuple(map(int, meta["shape"].split())), meta["expect"].strip()


def variants(name):
    """(path, fixed) of every version in the library of kernel `name`, in variant order."""
    return [(p, fixed) for p in CORPUS if header(p)[0] == name for fixed in (True, False)]


def build_version(path, fixed):
    """The library of every version of the kernel in `path` (built once: the same source is a
    cache hit), as a kernel launching the `fixed` or broken version of `path`."""
    name = header(path)[0]
    versions = variants(name)
    m = re.search(r"__global__\s+void\s+" + re.escape(name) + r"\s*\(([^)]*)\)",
                  kernel_source(path))
    params = m.group(1)
    args = ", ".join(re.findall(r"(\w+)\s*(?:,|$)", params))
    decls = "".join(f'extern "C" __global__ void {name}_v{v}({params});\n'
                    for v in range(len(versions)))
    cases = "".join(f"    case {v}: {name}_v{v}({args}); break;\n" for v in range(len(versions)))
    src = (f'#include "tilepy/runtime.h"\n{decls}'
           f'extern "C" __global__ void {name}(int variant, {params}) {{\n'
           f"  switch (variant) {{\n{cases}  }}\n}}\n")
    for v, (p, fix) in enumerate(versions):
        src += ((f"#define TP_FIX 1\n" if fix else "") + f"#define {name} {name}_v{v}\n" +
                kernel_source(p) + f"\n#undef {name}\n#undef TP_FIX\n")
    kernel = build(src, name)
    variant = versions.index((path, fixed))
    return lambda grid, *a: kernel(grid, variant, *a)


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
    fixed = build_version(path, True)
    C, ref = run(fixed, shape)
    np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-4)

    broken = build_version(path, False)
    if expect == "deadlock":
        with pytest.raises(ct.TileLaunchError, match=f"kernel '{name}'.*deadlock"):
            run(broken, shape)
    else:
        assert expect == "mismatch"
        C, ref = run(broken, shape)
        assert not np.allclose(C, ref, rtol=1e-4, atol=1e-4)
