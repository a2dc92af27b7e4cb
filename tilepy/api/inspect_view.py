"""`kernel.inspect(*args)`: every form of one specialization in one object.

The Tile IR, the CUDA C++, the PTX and the SASS statistics of the cubin (registers, spill
bytes, shared memory, instruction counts) of the kernel compiled for `args` and `arch`. In a
notebook it shows as panes side by side with syntax highlighting (`_repr_html_`); in a terminal
it prints as plain text, one section after another. Everything comes from the same compile as
a launch (the in-memory and disk caches serve it); the PTX and cubin are compiled by NVRTC, no
GPU needed. The instruction counts need nvdisasm or cuobjdump (the nvidia-cuda-nvdisasm wheel,
in the `test` extra); without them that pane says so, and the rest is there.
"""
from __future__ import annotations

import collections
import html
from dataclasses import dataclass, field

TOP_OPS = 12


@dataclass
class SassStats:
    registers: int | None
    spill_bytes: int
    smem: int                                 # static shared memory (bytes)
    instructions: int | None                  # None: no SASS disassembler found
    by_class: dict[str, int] = field(default_factory=dict)    # HMMA, LDGSTS, ... (nonzero)
    top_ops: list[tuple[str, int]] = field(default_factory=list)
    note: str = ""

    def rows(self) -> list[tuple[str, str]]:
        rows = [("registers / thread", _opt(self.registers)), ("spill bytes", str(self.spill_bytes)),
                ("shared memory", f"{self.smem} B"), ("SASS instructions", _opt(self.instructions))]
        rows += [(f"  {k}", str(v)) for k, v in self.by_class.items()]
        rows += [(f"  {op}", str(n)) for op, n in self.top_ops]
        return rows


def _opt(v) -> str:
    return "?" if v is None else str(v)


@dataclass
class Inspection:
    """One kernel specialization in every form (see the module docstring)."""
    name: str
    arch: str
    tile_ir: str
    cuda: str
    ptx: str
    sass: SassStats

    def panes(self) -> list[tuple[str, str, str]]:
        """(title, language, text) of the text panes."""
        return [("Tile IR", "mlir", self.tile_ir), ("CUDA C++", "cpp", self.cuda),
                (f"PTX ({self.arch.replace('sm_', 'compute_')})", "ptx", self.ptx)]

    def __str__(self) -> str:
        parts = [f"== {self.name} ({self.arch}) =="]
        for title, _, text in self.panes():
            parts += [f"-- {title} --", text.rstrip("\n")]
        parts.append(f"-- SASS statistics ({self.arch}) --")
        parts += [f"{k:<24} {v}" for k, v in self.sass.rows()]
        if self.sass.note:
            parts.append(self.sass.note)
        return "\n".join(parts) + "\n"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from ..tools.highlight import CSS, to_html
        panes = [f'<div class="tp-pane"><h4>{html.escape(t)}</h4><pre>{to_html(text, lang)}</pre></div>'
                 for t, lang, text in self.panes()]
        rows = "".join(f"<tr><th>{html.escape(k.strip())}</th><td>{html.escape(v)}</td></tr>"
                       if not k.startswith("  ") else
                       f"<tr><td>&nbsp;&nbsp;{html.escape(k.strip())}</td><td>{html.escape(v)}</td></tr>"
                       for k, v in self.sass.rows())
        note = f"<p>{html.escape(self.sass.note)}</p>" if self.sass.note else ""
        panes.append(f'<div class="tp-pane"><h4>SASS statistics ({html.escape(self.arch)})</h4>'
                     f"<table>{rows}</table>{note}</div>")
        return f'<style>{CSS}</style><div class="tp-inspect">{"".join(panes)}</div>'


def inspect_kernel(kernel, args, arch: str = "sm_90") -> Inspection:
    """`kernel.inspect(*args, arch=...)` (arch: an "sm_XX" cubin target)."""
    from ..errors import TileValueError
    from .aot import compile_kernel
    from .compiler import compile_for_args
    if not arch.startswith("sm_"):
        raise TileValueError(f"inspect() takes a GPU architecture such as 'sm_90' (got {arch!r})")
    ck = compile_for_args(kernel, args)
    cubin = compile_kernel(kernel, args, arch)
    ptx = compile_kernel(kernel, args, arch.replace("sm_", "compute_"))
    return Inspection(kernel.name, arch, ck.mlir, ck.cuda_source, readable_ptx(ptx.data.decode()),
                      sass_stats(cubin))


def readable_ptx(text: str) -> str:
    """The PTX without its line-info records (`.loc`, `.file`) and debug sections (they map
    instructions back to the Python lines; the CUDA C++ pane shows that mapping)."""
    end = text.find("\t.section\t.debug")
    body = text if end < 0 else text[:end]
    return "\n".join(line for line in body.splitlines()
                     if not line.lstrip().startswith((".loc", ".file"))) + "\n"


def sass_stats(cubin) -> SassStats:
    """Resources from ptxas's report, instruction counts from the disassembled cubin."""
    from ..tools import sass_stats as tools
    use = cubin.resource_usage()
    spills = use.get("spill_stores", 0) + use.get("spill_loads", 0)
    out = SassStats(use.get("registers"), spills, use.get("smem", 0), None)
    if not tools.available():
        out.note = ("instruction counts need nvdisasm or cuobjdump: "
                    "pip install nvidia-cuda-nvdisasm")
        return out
    found = tools.stats(cubin.data, cubin.log).get(cubin.symbol)
    if found is None:
        out.note = "the kernel was not found in the disassembly"
        return out
    ops = found["ops"]
    out.instructions = len(ops)
    out.by_class = {k: v for k, v in found["counts"].items() if v}
    out.top_ops = collections.Counter(op.split(".")[0] for op in ops).most_common(TOP_OPS)
    if out.registers is None:
        out.registers = found.get("registers")
    return out
