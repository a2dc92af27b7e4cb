"""The CUDA C++ backend as one object, `CPP`, that api/compiler.py chooses (as tinygrad's
renderers are chosen); kernel.py emits. Light to import: a kernel read back from the disk index
needs `from_record`, not the emitter. What a backend is to the compiler:

  name                   its key in stored records (the disk index)
  threads                threads per tile block it plans for (the compiler doubles it for
                         large tensor-core work: lowering/plan.py `threads_for`)
  lowering               True: it wants the lowering plan (lowering/plan.py: layouts over
                         the threads, barriers, pipelines), made by the compiler before `emit`
  emit(module, plan)     -> the kernel artifact
  record(artifact)       -> a JSON-ready dict; from_record(dict) -> an artifact (or raises
                         KeyError/TypeError/ValueError for a record it did not write)
  relocate(artifact, moved) -> the artifact with its source files renamed ({old: new}: the
                         kernel's files are elsewhere in this process; api/index.py)

An artifact is what the launch path runs: `name`, `nt` (threads per block), `smem_bytes` (the
dynamic shared memory a launch passes on the CPU backend, cuda_c/targets.py) and
`smem_for(arch)` (what a launch of `arch`'s code passes: pipelines are sized per shared-memory
class of target, from `smem_classes`), `smem_user` ((what, Loc) of its
largest part, for errors), `params` ((C type, name) in launch order), `tma` (the tensor maps
the sm_90a class takes after them: (array, element type, box, swizzle bytes)), `needs` (what
its ops need of a GPU target: targets.target_needs) and `source(line_directives)`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..errors import Loc
from .targets import SmemSizes


@dataclass
class StoredKernel(SmemSizes):
    """An emitted kernel (kernel.EmittedKernel) as read back from the disk index."""
    name: str
    params: list[tuple[str, str]]      # (C++ type, name) in launch order
    nt: int
    smem_bytes: int
    text: str                          # the source without / with #line directives
    text_lines: str
    smem_user: tuple = ("", None)      # (what, Loc) of the largest shared-memory user
    smem_classes: dict = field(default_factory=dict)   # class -> dynamic smem (targets.py)
    tma: tuple = ()                    # the sm_90a class's tensor maps (kernel.EmittedKernel.tma)
    needs: tuple = ()                  # what its ops need of a GPU target (targets.target_needs)

    def source(self, line_directives: bool = False) -> str:
        return self.text_lines if line_directives else self.text


class CppBackend:
    name = "cuda_c"
    threads = 128
    lowering = True

    def check(self, module) -> None:
        """Refuse (located) an op this backend does not emit, before the lowering plan."""
        from .kernel import refuse_unsupported
        refuse_unsupported(module)

    def emit(self, module, plan):
        from .kernel import emit_kernel
        return emit_kernel(module, plan)

    def record(self, k) -> dict:
        return {"name": k.name, "params": [list(p) for p in k.params], "nt": k.nt,
                "smem_bytes": k.smem_bytes, "text": k.source(line_directives=False),
                "text_lines": k.source(line_directives=True),
                "smem_user": [k.smem_user[0], asdict(k.smem_user[1]) if k.smem_user[1] else None],
                "smem_classes": {str(c): n for c, n in k.smem_classes.items()},
                "tma": [[a, e, list(box), sw] for a, e, box, sw in k.tma],
                "needs": [[n, what, asdict(loc) if loc else None] for n, what, loc in k.needs]}

    def from_record(self, r: dict) -> StoredKernel:
        what, loc = r.get("smem_user") or ("", None)
        return StoredKernel(r["name"], [tuple(p) for p in r["params"]], int(r["nt"]),
                            int(r["smem_bytes"]), str(r["text"]), str(r["text_lines"]),
                            (str(what), Loc(**loc) if loc else None),
                            {int(c): int(n) for c, n in (r.get("smem_classes") or {}).items()},
                            tuple((str(a), str(e), tuple(int(x) for x in box), int(sw))
                                  for a, e, box, sw in r.get("tma") or ()),
                            tuple((int(n), str(what), Loc(**loc) if loc else None)
                                  for n, what, loc in r.get("needs") or ()))

    def relocate(self, k: StoredKernel, moved: dict[str, str]) -> StoredKernel:
        """The `#line` directives name the files where the kernel is now (source_key.py)."""
        from dataclasses import replace

        from .source_key import relocate
        return replace(k, text_lines=relocate(k.text_lines, moved))


CPP = CppBackend()
