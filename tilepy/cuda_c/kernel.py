"""The CUDA C++ backend's top: a Tile IR module and its lowering plan -> one kernel's C++.

Every op is emitted by the function the `EMIT` table of emitter.py names; the emit_*.py modules
add their ops to it when they load, and this module loads them all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import TileUnsupportedFeatureError, at
from ..ir import Module
from ..lowering.assign_layouts import LayoutPlan
from ..lowering.plan import KernelPlan
from ..types import PtrType
from . import (emit_control, emit_dialect, emit_mma, emit_ops,  # noqa: F401  (they register their ops)
               emit_pipeline)
from .kernel_options import launch_bounds
from .targets import MAX_SMEM, PIPELINE_SMEM, kib
from .names import kernel_symbol
from .emitter import EMIT, NO_FUNCTOR, RUNTIME_INCLUDE, EmitContext, ctype, emit_op
from .writer import Writer


@dataclass
class EmittedKernel:
    name: str
    params: list[tuple[str, str]]      # (C++ type, name) in launch order
    body: Writer
    tables: list[str]
    smem_bytes: int                    # dynamic shared memory per block, in bytes
    nt: int
    smem_user: tuple = ("", None)      # (what, Loc) of the largest shared-memory user
    bounds: tuple = ((), "__launch_bounds__(TP_NT)")   # kernel_options.launch_bounds

    def source(self, line_directives: bool = False) -> str:
        head = [f"// tilepy kernel '{self.name}': one tile block = {self.nt} threads (TP_NT)",
                "#ifndef TP_NT", f"#define TP_NT {self.nt}", "#endif", RUNTIME_INCLUDE, ""]
        head += self.tables + ([""] if self.tables else [])
        params = ", ".join(f"{t} {n}" for t, n in self.params)
        lines, bounds = self.bounds
        head += lines
        head.append(f'extern "C" __global__ void {bounds} {self.name}({params}) {{')
        body = self.body.render(line_directives)
        return "\n".join(head) + "\n" + body


def emit_kernel(module: Module, plan: KernelPlan, stages: int = 3) -> EmittedKernel:
    """The kernel's C++, following the lowering plan the compiler made (layouts, barriers,
    pipelines). All shared memory is one dynamic `extern __shared__` array (targets.py): the
    pipeline buffers, then the ops' scratch. K loops are pipelined with `stages` stages, fewer
    while the kernel would exceed PIPELINE_SMEM, and not at all if even two do not fit; a
    kernel needing more than any target has is refused here, naming its largest user (the
    launch and `CompiledKernel.binary` check the size against the target's). The entry's
    optimization hints (the kernel's `occupancy`, `num_ctas`) give its launch bounds
    (kernel_options.py)."""
    entry = module.entry()
    for s in range(stages, 0, -1):
        ctx = _emit(module, plan.layouts, plan.pipelines(s), plan.barriers)
        if s == 1 or ctx.buffer_bytes + ctx.smem_bytes <= PIPELINE_SMEM:
            break
    scratch = (ctx.smem_bytes + 127) // 128 * 128
    total = ctx.buffer_bytes + scratch
    user = smem_user(ctx)
    if total > MAX_SMEM:
        with at(user[1]):
            raise TileUnsupportedFeatureError(
                f"kernel '{entry.sym_name}' needs {kib(total)} of shared memory, more than any "
                f"GPU gives one block ({kib(MAX_SMEM)}); the largest part is {user[0]}: use "
                f"smaller tiles")
    if ctx.prints:
        ctx.tables += emit_ops.print_globals(ctx.prints)
    decls = _smem_decls(ctx, scratch)
    for d in reversed(decls):
        ctx.w.lines.insert(0, (1, d, None))
    return EmittedKernel(kernel_symbol(entry.sym_name), ctx.params, ctx.w, ctx.tables, total,
                         plan.nt, user, launch_bounds(entry))


def smem_user(ctx: EmitContext) -> tuple:
    """(what, loc) of the kernel's largest shared-memory user, for the errors that name it."""
    nbytes, what, loc = ctx.smem_user
    return (f"{what} ({nbytes} bytes)" if what else "", loc)


def _smem_decls(ctx: EmitContext, scratch: int) -> list[str]:
    """The dynamic shared-memory array and the named pointers into it."""
    uses_scratch = any("tp_smem" in text for _, text, _ in ctx.w.lines)
    if not ctx.buffers and not scratch:    # the ops that name tp_smem take their register paths
        return ["unsigned char* const tp_smem = nullptr;"] if uses_scratch else []
    out = ["extern __shared__ __align__(128) unsigned char tp_dsmem[];"]
    offset = 0
    for ctype_, name, nbytes in ctx.buffers:
        out.append(f"{ctype_}* const {name} = reinterpret_cast<{ctype_}*>(tp_dsmem + {offset});")
        offset += nbytes
    if uses_scratch:
        out.append(f"unsigned char* const tp_smem = tp_dsmem + {offset};" if scratch else
                   "unsigned char* const tp_smem = nullptr;")
    return out


def _extent_name(ctx: EmitContext, hint, arrays: dict[str, str]) -> str | None:
    """`<array>_shape_<d>` / `<array>_stride_<d>` named after the array's C++ name, renamed or
    not (names.py): the CPU entry finds an array's extents by that name (launch/cpu.py)."""
    m = re.fullmatch(r"(.+)_(shape|stride)_(\d+)", hint or "")
    if m is None or m.group(1) not in arrays:
        return None
    name = f"{arrays[m.group(1)]}_{m.group(2)}_{m.group(3)}"
    if name in ctx.used:                        # (an argument of the user's with that name)
        return None
    ctx.used.add(name)
    return name


def _emit(module: Module, layouts: LayoutPlan, pipelines: dict, barriers: set[int]) -> EmitContext:
    entry = module.entry()
    ctx = EmitContext(plan=layouts, pipelines=pipelines, barriers=barriers)
    ctx.used_values = {id(v) for op in module.walk() for v in op.operands}
    arrays: dict[str, str] = {}                 # an array argument's hint -> its C++ name
    for a in entry.body.block.args:
        n = ctx.define(a, _extent_name(ctx, a.hint, arrays))
        if isinstance(a.type.elem, PtrType):
            arrays[a.hint] = n
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


def refuse_unsupported(module: Module) -> None:
    """Refuse, at its line, the first op of an entry this backend cannot emit, before the
    lowering plan (its passes assume what the emitter handles, e.g. partition views only)."""
    from ..types import GatherScatterViewType, StridedViewType
    handled = handled_ops() | {"global"}          # a module item: emit_kernel's
    for op in module.walk():
        views = [v.type for v in op.operands if isinstance(v.type, (GatherScatterViewType,
                                                                     StridedViewType))]
        if op.name in handled and not views:
            continue
        with at(op.loc):
            what = f"'{op.name}' through a {str(views[0]).split('<')[0]}" if views else f"'{op.name}'"
            raise TileUnsupportedFeatureError(f"{what} is not supported by the CUDA C++ backend yet")
