"""The CUDA C++ backend's top: a Tile IR module and its lowering plan -> one kernel's C++.

Every op is emitted by the function the `EMIT` table of emitter.py names; the emit_*.py modules
add their ops to it when they load, and this module loads them all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import TileUnsupportedFeatureError, at
from ..ir import Module
from ..lowering.assign_layouts import LayoutPlan
from ..lowering.plan import KernelPlan
from ..types import PtrType
from . import (emit_control, emit_dialect, emit_mma, emit_ops,  # noqa: F401  (they register their ops)
               emit_pipeline)
from .kernel_options import launch_bounds
from .targets import (KIB, MAX_SMEM, OCCUPANCY, PIPELINE_CLASSES, WGMMA_CLASS, WGMMA_MACRO,
                      WGMMA_OCCUPANCY, WGMMA_OCCUPANCY_STAGES, SmemSizes, block_budget,
                      class_macro, kib, target_needs)
from .names import kernel_name, kernel_symbol
from .emitter import (EMIT, NO_FUNCTOR, RUNTIME_INCLUDE, EmitContext, ctype, emit_op,
                      has_undetermined_load)
from .writer import Writer


@dataclass
class Variant:
    """The kernel body for the smaller shared-memory classes whose pipelines have fewer stages
    than the largest class's (targets.PIPELINE_CLASSES)."""
    classes: tuple[int, ...]
    body: Writer
    tables: list[str]
    smem_bytes: int
    maps: tuple = ()       # the sm_90a class's tensor maps: (TmaBox, elem), its last parameters


# The C++ type of a tensor-map parameter (include/tilepy/tma.h).
TMA_PARAM = "const __grid_constant__ tp::TensorMap"


@dataclass
class EmittedKernel(SmemSizes):
    name: str
    params: list[tuple[str, str]]      # (C++ type, name) in launch order
    body: Writer                       # the body for the largest class (and the CPU backend)
    tables: list[str]
    smem_bytes: int                    # its dynamic shared memory per block, in bytes
    nt: int
    smem_user: tuple = ("", None)      # (what, Loc) of the largest shared-memory user
    bounds: tuple = ((), "__launch_bounds__(TP_NT)")   # kernel_options.launch_bounds
    variants: tuple = ()               # Variant per group of smaller classes, if any differ
    smem_classes: dict = field(default_factory=dict)   # class -> dynamic smem (SmemSizes)
    sm90a: Variant | None = None       # the sm_90a class's body (warpgroup MMA), if it has one
    needs: tuple = ()                  # what its ops need of a GPU target (targets.target_needs)

    def source(self, line_directives: bool = False, entry: tuple | None = None) -> str:
        """The kernel's C++. `entry`: (symbol, parameters, prologue lines) of an exported
        kernel's entry in place of tilepy's (api/compilation.py: cuTile's parameters, named as
        tilepy's where tilepy has them), around the same body; the sm_90a class is kept only
        when it takes no tensor maps (cuTile's parameters carry none)."""
        head = [f"// tilepy kernel '{kernel_name(self.name)}': one tile block = {self.nt} threads "
                f"(TP_NT)",
                "#ifndef TP_NT", f"#define TP_NT {self.nt}", "#endif"]
        v = self.sm90a
        if v is None or (entry is not None and v.maps):
            return "\n".join(head + [RUNTIME_INCLUDE, ""] + self._classes(line_directives, entry))
        maps = [(TMA_PARAM, f"tp_tmap{i}") for i in range(len(v.maps))]
        return "\n".join(head + WGMMA_MACRO + [RUNTIME_INCLUDE, "",
                          f"#if TP_WGMMA  // sm_90a: warpgroup MMA; {kib(v.smem_bytes)} of shared memory"]
                         + self._kernel(v.tables, v.body, line_directives, maps, entry) + ["#else"]
                         + self._classes(line_directives, entry) + ["#endif"])

    def _classes(self, line_directives: bool, entry: tuple | None = None) -> list[str]:
        """The kernel of each shared-memory class (one when they do not differ)."""
        if not self.variants:
            return self._kernel(self.tables, self.body, line_directives, entry=entry)
        out = class_macro()
        for i, v in enumerate(self.variants):
            cond = " || ".join(f"TP_SMEM_KIB == {c // KIB}" for c in v.classes)
            out += [f"#{'elif' if i else 'if'} {cond}  // {kib(v.smem_bytes)} of shared memory"]
            out += self._kernel(v.tables, v.body, line_directives, entry=entry)
        out += [f"#else  // {kib(self.smem_bytes)} of shared memory"]
        return out + self._kernel(self.tables, self.body, line_directives, entry=entry) + \
            ["#endif"]

    @property
    def tma(self) -> tuple:
        """The tensor maps the sm_90a class takes after the other parameters, as the host
        builds them (launch/tensor_map.py): (array, element type name, box, swizzle bytes)."""
        return tuple((b.array, e.name, b.box, b.swizzle) for b, e in self.sm90a.maps) \
            if self.sm90a is not None else ()

    def _kernel(self, tables: list[str], body: Writer, line_directives: bool,
                extra: list = (), entry: tuple | None = None) -> list[str]:
        name, own, prologue = entry or (self.name, self.params, ())
        params = ", ".join(f"{t} {n}" for t, n in [*own, *extra])
        return tables + ([""] if tables else []) + list(self.bounds[0]) + [
            f'extern "C" __global__ void {self.bounds[1]} {name}({params}) {{', *prologue,
            body.render(line_directives)]


MAX_STAGES = 4


def emit_kernel(module: Module, plan: KernelPlan, stages: int = MAX_STAGES) -> EmittedKernel:
    """The kernel's C++, following the lowering plan the compiler made (layouts, barriers,
    pipelines). All shared memory is one dynamic `extern __shared__` array (targets.py): the
    pipeline buffers, then the ops' scratch. K loops are pipelined with up to `stages` stages,
    per shared-memory class of target (99 / 163 / 227 KiB, targets.PIPELINE_CLASSES) as many as
    fit the class, and not at all if even two do not; classes with different stage counts get
    a body each, chosen by the preprocessor. A kernel needing more than any target has is
    refused here, naming its largest user (the launch and `CompiledKernel.binary` check the
    target's size against the target's limit). The entry's optimization hints (the kernel's
    `occupancy`, `num_ctas`) give its launch bounds (kernel_options.py)."""
    entry = module.entry()
    chosen = _stages_per_class(module, plan, stages)      # class -> EmitContext
    ctx = chosen[PIPELINE_CLASSES[-1]]
    ctxs = list({id(x): x for x in chosen.values()}.values())
    size = {id(x): _finish(x) for x in ctxs}
    total = size[id(ctx)]
    user = smem_user(ctx)
    if total > MAX_SMEM:
        with at(user[1]):
            raise TileUnsupportedFeatureError(
                f"kernel '{entry.sym_name}' needs {kib(total)} of shared memory, more than any "
                f"GPU gives one block ({kib(MAX_SMEM)}); the largest part is {user[0]}: use "
                f"smaller tiles")
    variants = tuple(sorted((Variant(tuple(c for c in PIPELINE_CLASSES if chosen[c] is x), x.w,
                                     x.tables, size[id(x)]) for x in ctxs if x is not ctx),
                            key=lambda v: v.classes))
    per_class = {c: size[id(chosen[c])] for c in PIPELINE_CLASSES} if variants else {}
    sm90a = _sm90a(module, plan, stages)
    if sm90a is not None:     # an sm_90a launch passes its class's size, the CPU's fits both
        per_class = {**{c: size[id(chosen[c])] for c in PIPELINE_CLASSES},
                     WGMMA_CLASS: sm90a.smem_bytes}
        total = max(total, sm90a.smem_bytes)
    return EmittedKernel(kernel_symbol(entry.sym_name), ctx.params, ctx.w, ctx.tables, total,
                         plan.nt, user, launch_bounds(entry), variants, per_class, sm90a,
                         target_needs(module))


def _sm90a(module: Module, plan: KernelPlan, stages: int) -> Variant | None:
    """The sm_90a class's body (lowering/wgmma.py) with as many stages as fit sm_90's shared
    memory, or None when the kernel has no such class or no warpgroup MMA came of it (its
    operands were not pipelined)."""
    if plan.sm90a is None:
        return None
    big = PIPELINE_CLASSES[-1]
    ctx = _stages_per_class(module, plan.sm90a, stages)[big]
    if not ctx.wg_staged:
        return None
    return Variant((big,), ctx.w, ctx.tables, _finish(ctx), tuple(ctx.tma_maps))


def _stages_per_class(module: Module, plan: KernelPlan, stages: int) -> dict:
    """class -> the EmitContext of the kernel with the most pipeline stages (<= `stages`) that
    leave room in the class's SM for as many blocks (up to OCCUPANCY) as its registers allow
    (plan.blocks_by_registers: 2 for a 128x128x64 GEMM of 4 warps, 3 stages on sm_90, 2 on
    sm_80); in the sm_90a class up to WGMMA_OCCUPANCY blocks with at least
    WGMMA_OCCUPANCY_STAGES stages (attention d=64 at 128 query rows: 3 blocks of 3 stages, not 2
    of 4), else as many as before; where none does, the most that fit one block; where even two
    do not, two with the loop-invariant operands left in registers, else none. Each plan is
    emitted once, and not again when it gives the same pipelines as one before (a short static
    loop caps the stages)."""
    blocks = min(WGMMA_OCCUPANCY if plan.wgmma else OCCUPANCY, plan.blocks_by_registers())
    chosen: dict = {}
    seen: dict = {}
    tries = [(s, True) for s in range(stages, 1, -1)] + [(2, False)] * (stages > 1) + [(1, True)]
    for want in range(blocks, 0, -1):   # fewer stages for occupancy than `least`: not worth it
        least = WGMMA_OCCUPANCY_STAGES if want > OCCUPANCY else min(2, stages)
        for s, hoist in (tries if want == 1 else [(s, h) for s, h in tries if h and s >= least]):
            pipes = plan.pipelines(s, hoist)
            key = tuple(sorted((k, p.stages, len(p.hoisted)) for k, p in pipes.items() if p.loads))
            ctx = seen.get(key)
            if ctx is None:
                ctx = seen[key] = _emit(module, plan.layouts, pipes, plan.barriers, plan.stores)
            need = ctx.buffer_bytes + ctx.smem_bytes
            for c in PIPELINE_CLASSES:
                if c not in chosen and (s == 1 or not key or need <= block_budget(c, want)):
                    chosen[c] = ctx
            if len(chosen) == len(PIPELINE_CLASSES):
                return chosen
    return chosen


def _finish(ctx: EmitContext) -> int:
    """Declare the kernel's shared memory at the top of its body; its size in bytes."""
    scratch = (ctx.smem_bytes + 127) // 128 * 128
    if ctx.prints:
        ctx.tables += emit_ops.print_globals(ctx.prints)
    for d in reversed(_smem_decls(ctx, scratch)):
        ctx.w.lines.insert(0, (1, d, None))
    return ctx.buffer_bytes + scratch


def smem_user(ctx: EmitContext) -> tuple:
    """(what, loc) of the kernel's largest shared-memory user, for the errors that name it."""
    nbytes, what, loc = ctx.smem_user
    return (f"{what} ({nbytes} bytes)" if what else "", loc)


def _smem_decls(ctx: EmitContext, scratch: int) -> list[str]:
    """The dynamic shared-memory array and the named pointers into it."""
    uses_scratch = any("tp_smem" in text for _, text, _ in ctx.w.lines)
    if not ctx.buffers and not scratch:    # the ops that name tp_smem take their register paths
        return ["unsigned char* const tp_smem = nullptr;"] if uses_scratch else []
    align = 1024 if ctx.wg_staged else 128     # wgmma's swizzle patterns repeat every 1 KiB
    out = [f"extern __shared__ __align__({align}) unsigned char tp_dsmem[];"]
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


def _emit(module: Module, layouts: LayoutPlan, pipelines: dict, barriers: set[int],
          stores: dict) -> EmitContext:
    entry = module.entry()
    ctx = EmitContext(plan=layouts, pipelines=pipelines, barriers=barriers, tma_stores=stores)
    ctx.used_values = {id(v) for op in module.walk() for v in op.operands}
    ctx.poison_checks = has_undetermined_load(module)
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
