"""The CUDA C++ backend's top: a Tile IR module and its lowering plan -> one kernel's C++.

Every op is emitted by the function the `EMIT` table of emitter.py names; the emit_*.py modules
add their ops to it when they load, and this module loads them all.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import TileUnsupportedFeatureError
from ..ir import Module
from ..lowering.assign_layouts import LayoutPlan
from ..lowering.plan import KernelPlan
from . import emit_control, emit_mma, emit_ops, emit_pipeline  # noqa: F401  (they register their ops)
from .emitter import EMIT, NO_FUNCTOR, RUNTIME_INCLUDE, EmitContext, ctype, emit_op
from .writer import Writer


@dataclass
class EmittedKernel:
    name: str
    params: list[tuple[str, str]]      # (C++ type, name) in launch order
    body: Writer
    tables: list[str]
    smem_bytes: int
    nt: int

    def source(self, line_directives: bool = False) -> str:
        head = [f"// tilepy kernel '{self.name}': one tile block = {self.nt} threads (TP_NT)",
                "#ifndef TP_NT", f"#define TP_NT {self.nt}", "#endif", RUNTIME_INCLUDE, ""]
        head += self.tables + ([""] if self.tables else [])
        params = ", ".join(f"{t} {n}" for t, n in self.params)
        head.append(f'extern "C" __global__ void __launch_bounds__(TP_NT) {self.name}({params}) {{')
        body = self.body.render(line_directives)
        return "\n".join(head) + "\n" + body


SMEM_LIMIT = 48 * 1024          # static shared memory of one block


def emit_kernel(module: Module, plan: KernelPlan, stages: int = 3) -> EmittedKernel:
    """The kernel's C++, following the lowering plan the compiler made (layouts, barriers,
    pipelines). K loops are pipelined with `stages` stages, fewer if shared memory would exceed
    SMEM_LIMIT, and not at all if even two do not fit."""
    entry = module.entry()
    nt = plan.nt
    for s in range(stages, 0, -1):
        ctx = _emit(module, plan.layouts, plan.pipelines(s), plan.barriers)
        if s == 1 or ctx.buffer_bytes + ctx.smem_bytes <= SMEM_LIMIT:
            break
    smem = (ctx.smem_bytes + 15) // 16 * 16
    if smem + ctx.buffer_bytes > SMEM_LIMIT:
        raise TileUnsupportedFeatureError(
            f"kernel '{entry.sym_name}' needs {smem + ctx.buffer_bytes} bytes of shared memory for "
            f"its data movement; more than 48 KiB is not supported yet (use smaller tiles)")
    if smem:
        scratch = [f"__shared__ __align__(128) unsigned char tp_smem[{smem}];"]
    else:   # the ops that name it take their register paths
        scratch = ["unsigned char* const tp_smem = nullptr;"] if any(
            "tp_smem" in text for _, text, _ in ctx.w.lines) else []
    decls = ctx.buffers + scratch
    for d in reversed(decls):
        ctx.w.lines.insert(0, (1, d, None))
    return EmittedKernel(entry.sym_name, ctx.params, ctx.w, ctx.tables, smem + ctx.buffer_bytes, nt)


def _emit(module: Module, layouts: LayoutPlan, pipelines: dict, barriers: set[int]) -> EmitContext:
    entry = module.entry()
    ctx = EmitContext(plan=layouts, pipelines=pipelines, barriers=barriers)
    ctx.used_values = {id(v) for op in module.walk() for v in op.operands}
    for a in entry.body.block.args:
        n = ctx.define(a)
        ctx.params.append((ctype(a.type), n))
    ctx.w.depth = 1
    for op in entry.body.block.ops:
        emit_op(ctx, op)
    ctx.w.depth = 0
    ctx.w.line("}")
    return ctx



def handled_ops() -> set[str]:
    """The ops this backend emits: the EMIT table's, the element-wise ops of the op table that
    have a runtime functor, and the module and entry (emit_kernel itself)."""
    from ..ir import OPS
    return set(EMIT) | {n for n, d in OPS.items() if d.elementwise and n not in NO_FUNCTOR} | \
        {"module", "entry"}
