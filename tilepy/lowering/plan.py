"""The lowering plan of one kernel, made by the compiler (api/compiler.py) before a backend that
runs tiles over the threads of a block emits it: one layout per tile value (assign_layouts.py),
the memory ops that need a barrier before them (hazards.py), and the K-loop pipelines for a
number of stages (pipeline.py; the backend picks the stage count that fits its shared memory),
and, for a kernel with a GEMM K loop warpgroup MMA can take, the plan of its sm_90a class
(wgmma.py). The emitter only reads the plan; no analysis starts from inside it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir import Module
from .assign_layouts import LayoutPlan, assign_layouts
from .hazards import alias_oracle, barrier_ops
from .pipeline import plan_pipelines
from .wgmma import mark_wgmma, sm90a_layouts


@dataclass
class KernelPlan:
    module: Module
    layouts: LayoutPlan
    barriers: set[int]                 # ids of memory ops with a barrier before them
    may_alias: Callable
    wgmma: bool = False                # the sm_90a class's plan: its pipelines mark wgmma operands
    sm90a: KernelPlan | None = None    # the plan of the kernel's sm_90a class (wgmma.py), if any

    @property
    def nt(self) -> int:
        return self.layouts.nt

    def pipelines(self, stages: int, hoist: bool = True) -> dict:
        """id(for op) -> Pipeline with `stages` stages ({} for fewer than two: no pipelining);
        `hoist` False: loop-invariant mma operands stay in registers (less shared memory)."""
        if stages < 2:
            return {}
        pipes = plan_pipelines(self.module, self.layouts, self.may_alias, stages, hoist)
        if self.wgmma:
            mark_wgmma(pipes, self.layouts)
        return pipes


# 32-bit registers per thread that a kernel's tensor-core work may take before a block gets 8
# warps instead of 4. Measured with ptxas on sm_80/sm_90 (issue 13): 128x128x32 f16 GEMM (160
# by mma_registers) fits 4 warps without spilling; 128x128x64 (192) and attention with head dim
# 64 and 128 query rows (224) spill there and do not at 8 warps (about 170 registers each).
REGS_PER_THREAD = 160


def mma_registers(module: Module) -> int:
    """32-bit registers the mma ops of `module` hold over a whole block: their accumulators and
    operands (a flash-attention loop has all of them live at once)."""
    regs = 0
    for op in module.walk():
        if op.opdef.mma:
            regs += sum(v.type.numel * v.type.elem.storage_bytes for v in op.operands) // 4
    return regs


def threads_for(module: Module, nt: int = 128) -> int:
    """Threads per block chosen from the work: `nt` (4 warps), doubled when the tensor-core
    work would take more than REGS_PER_THREAD registers per thread (128x128x64, 128x256,
    256x128 GEMM tiles; attention with 128 query rows)."""
    return 2 * nt if mma_registers(module) > REGS_PER_THREAD * nt else nt


def plan_kernel(module: Module, nt: int = 128, disjoint: frozenset = frozenset()) -> KernelPlan:
    """`disjoint`: the entry arguments (array base pointers) whose memory the specialization
    proved overlaps no other array argument's (no barriers between accesses to them)."""
    layouts = assign_layouts(module, nt)
    may_alias = alias_oracle(disjoint)
    plan = KernelPlan(module, layouts, barrier_ops(module, layouts, may_alias), may_alias)
    wg = sm90a_layouts(module, nt, may_alias)
    if wg is not None:
        plan.sm90a = KernelPlan(module, wg, barrier_ops(module, wg, may_alias), may_alias, True)
    return plan
