"""Tilepy's bytecode through NVIDIA's `tileirdisasm` (its reader and verifier): the corpora of
tilepy modules the bytecode tests take through it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from tilepy.tools.sass_stats import find_tool

HERE = os.path.dirname(os.path.abspath(__file__))
TILEIRDISASM = find_tool("tileirdisasm")


def disasm(data: bytes) -> subprocess.CompletedProcess:
    """Run tileirdisasm on the bytes: returncode 0 and the module's text when NVIDIA accepts it."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "module.tileirbc")
        with open(path, "wb") as f:
            f.write(data)
        return subprocess.run([TILEIRDISASM, path], capture_output=True, text=True, timeout=60)


def sample_modules() -> dict:
    """ir/samples.py: one valid instance of every op."""
    from tilepy.ir.parser import parse_module
    from tilepy.ir.samples import VALID
    return {f"sample:{op}": (lambda s=s: parse_module(s.text())) for op, s in VALID.items()}


def spec_modules() -> dict:
    """The spec's listings (tests/spec_examples) that are valid programs."""
    import test_ir_spec_examples as spec
    from tilepy.ir.parser import parse_module
    return {f"spec:{n}": (lambda n=n: parse_module(spec.source(n)))
            for n in spec.EXAMPLES if n not in spec.SKIP}


def cutile_modules() -> dict:
    """The cuTile-style suite (tests/cutile_kernels), specialized for its cases' arguments."""
    import test_cutile_suite as suite
    from tilepy.api.compiler import compile_for_args

    def build(fn):
        kernel, _grid, args, _check = fn()
        return compile_for_args(kernel, args).module
    return {f"cutile:{n}": (lambda fn=fn: build(fn)) for n, fn in suite.CASES.items()}


def tutorial_modules() -> dict:
    """The tutorials' kernels, specialized for arguments like the tutorials' own."""
    import numpy as np
    sys.path.insert(0, os.path.join(HERE, "..", "tutorials"))
    from definitions import load
    from tilepy.api.compiler import compile_for_args
    z = np.zeros

    def f16(*s):
        return z(s, np.float16)

    def f32(*s):
        return z(s, np.float32)
    cases = {
        "01_vector_add.vector_add": lambda: (f32(4096), f32(4096), f32(4096), 1024),
        "02_softmax.softmax": lambda: (f32(64, 1000), f32(64, 1000), 1024),
        "03_matmul.matmul": lambda: (f16(200, 130), f16(130, 150), f32(200, 150), 64, 64, 32),
        "04_layernorm.layernorm": lambda: (f16(64, 1000), f16(1000), f16(1000), f16(64, 1000),
                                           f32(64), f32(64), 1e-5, 256),
        "05_attention.attention": lambda: (f16(4, 200, 64), f16(4, 200, 64), f16(4, 200, 64),
                                           f16(4, 200, 64), 0.125, 64, 32, 64),
    }

    def build(name, args):
        tutorial, kernel = name.split(".")
        return compile_for_args(getattr(load(tutorial), kernel), args()).module
    return {f"tutorial:{n}": (lambda n=n, a=a: build(n, a)) for n, a in cases.items()}


def corpora() -> dict:
    return {**tutorial_modules(), **cutile_modules(), **sample_modules(), **spec_modules()}


# ------------------------------------------------------------------ comparing printed texts
_LHS = re.compile(r"^(%[^=]*?) = ")
_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)")
# where a name is defined besides a result list: a block argument (`%x: type`), a for's
# induction variable, an iter_values binding (`%x = %init`)
_DEFS = re.compile(r"(%[A-Za-z0-9_$.\-]+)(?=: )|for (?:unsigned )?(%[A-Za-z0-9_$.\-]+)"
                   r"|(%[A-Za-z0-9_$.\-]+)(?= = %)")


def canonical_text(text: str) -> list[str]:
    """The lines of a printed module with only what may differ between two printers of the same
    module taken out: SSA names are renamed `%v0, %v1, ...` in order of definition (a group's
    `#i` suffixes kept), runs of blanks become one, lines are stripped, blank lines and the
    `cuda_tile.module @name {` line with its closing `}` dropped (tileirdisasm prints the
    module's items only)."""
    lines = [re.sub(r"[ \t]+", " ", raw).strip() for raw in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if lines and lines[0].startswith("cuda_tile.module"):
        lines = lines[1:-1]
    ids: dict[str, str] = {}
    count = iter(range(1 << 30))
    out = []
    for line in lines:
        defs = set()
        lhs = _LHS.match(line)
        if lhs:
            defs |= {m.start() for m in _NAME.finditer(lhs.group(1))}
        for m in _DEFS.finditer(line):
            defs |= {m.start(g) for g in (1, 2, 3) if m.group(g)}

        def rename(m):
            if m.start() in defs or m.group(1) not in ids:
                ids[m.group(1)] = f"v{next(count)}"
            return "%" + ids[m.group(1)]
        out.append(_NAME.sub(rename, line))
    return out
