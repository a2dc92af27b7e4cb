"""The lowering plan of one kernel, made by the compiler (api/compiler.py) before a backend that
runs tiles over the threads of a block emits it: one layout per tile value (assign_layouts.py),
the memory ops that need a barrier before them (hazards.py), and the K-loop pipelines for a
number of stages (pipeline.py; the backend picks the stage count that fits its shared memory),
and, for a kernel with a GEMM K loop warpgroup MMA can take, the plan of its sm_90a class
(wgmma.py). The emitter only reads the plan; no analysis starts from inside it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ir import Module
from .assign_layouts import LayoutPlan, assign_layouts
from .hazards import alias_oracle, barrier_ops
from .pipeline import plan_pipelines, streamed
from .sink_broadcast import sink_broadcasts
from .wgmma import mark_wgmma, sm90a_layouts, staged_stores


@dataclass
class KernelPlan:
    module: Module
    layouts: LayoutPlan
    barriers: set[int]                 # ids of memory ops with a barrier before them
    may_alias: Callable
    wgmma: bool = False                # the sm_90a class's plan: its pipelines mark wgmma operands
    sm90a: KernelPlan | None = None    # the plan of the kernel's sm_90a class (wgmma.py), if any
    stores: dict = field(default_factory=dict)   # the sm_90a class: id(store) -> StagedStore,
                                                 # its staged epilogue (wgmma.py staged_stores)

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

    def blocks_by_registers(self) -> int:
        """How many blocks of the plan's threads the register file of an SM holds: in the sm_90a
        class, by the estimate of its warpgroup MMAs (`Pipeline.wg_mmas`)."""
        wg = [op for p in self.pipelines(2).values() for op in p.wg_mmas] if self.wgmma else ()
        return blocks_by_registers(self.module, self.nt, wg)


# 32-bit registers per thread that a kernel's tensor-core work may take before a block gets 8
# warps instead of 4: the values of mma_registers plus stream_fragments. Measured with ptxas on
# sm_80/sm_86/sm_90 (issues 13, 28): a 128x128 GEMM (128 + 32) fits 4 warps (255 registers on
# sm_90 at 128x128x64, no spills, 2 blocks per SM with 3 stages); so do attention with head dim
# 128 at 64 query rows and 64 keys (144 + 48) and, since the softmax's exp2 is one instruction,
# head dim 64 at 128 query rows and 64 keys (192 + 32: 255 registers, no spills, 2 blocks per
# SM, 6.65 instructions per HMMA against 7.94 with 8 warps); head dim 128 at 64 query rows and
# 128 keys (192 + 64) spills 300-4600 bytes there and takes 8 warps, as 128x256 GEMM tiles do.
REGS_PER_THREAD = 224
# Registers per thread beyond the mma values (addresses, fragments, loop state) in the estimate
# of how many blocks the register file holds; 65536 registers per SM on sm_75..sm_120.
REGS_OVERHEAD, REGS_PER_SM = 64, 65536
# The sm_90a class (wgmma.py): a warpgroup MMA reads its shared-memory operands through
# descriptors, so only its accumulator takes registers; its register A (attention's P) is
# converted from an accumulator-layout tile that dies into it (the scores S) and takes none
# beyond that tile's. Registers per thread beyond the accumulators, by ptxas (NVRTC 13.5, sm_90a,
# issue 29): GEMM 128x128 154 - 128 = 26; attention d=64 at 128 query rows and 64 keys
# 164 - 128 = 36, d=128 at 64 and 64 127 - 96 = 31.
WG_REGS_OVERHEAD = 40


def mma_registers(module: Module, wgmma=()) -> int:
    """32-bit registers the mma ops of `module` hold over a whole block: their accumulators and
    the operands held in registers (a flash-attention loop has all of them live at once); an
    operand loaded in the mma's own K loop is read from shared memory a fragment at a time
    (pipeline.streamed) and does not count; of the warpgroup MMAs `wgmma`, the accumulator alone
    (WG_REGS_OVERHEAD)."""
    wg = {id(op) for op in wgmma}
    regs = 0
    for op in module.walk():
        if op.opdef.mma:
            regs += sum(v.type.numel * v.type.elem.storage_bytes for v in op.operands
                        if v is op.acc or (id(op) not in wg and not streamed(v, op))) // 4
    return regs


def stream_fragments(module: Module) -> int:
    """32-bit registers per thread that the fragments of the operands streamed from shared
    memory take beside mma_registers: an mma of N columns reads N / 8 B fragments of 2 registers
    per K step, loaded ahead of the HMMAs that use them."""
    return sum(op.acc.type.shape[-1] // 4 for op in module.walk()
               if op.opdef.mma and any(streamed(v, op) for v in op.operands if v is not op.acc))


def threads_for(module: Module, nt: int = 128) -> int:
    """Threads per block chosen from the work: `nt` (4 warps), doubled when the tensor-core
    work would take more than REGS_PER_THREAD registers per thread (128x256 and 256x128 GEMM
    tiles; attention with 128 keys per step at head dim 128)."""
    need = -(-mma_registers(module) // nt) + stream_fragments(module)
    return 2 * nt if need > REGS_PER_THREAD else nt


def blocks_by_registers(module: Module, nt: int, wgmma=()) -> int:
    """How many blocks of `nt` threads the register file of an SM holds, by the estimate above
    (at least 1): what the pipelines' stage count should leave room for in shared memory. With
    `wgmma` (the sm_90a class's warpgroup MMAs), by their estimate where every mma is one."""
    wg = {id(op) for op in wgmma}
    every = wg and all(id(op) in wg for op in module.walk() if op.opdef.mma)
    per_thread = min(255, -(-mma_registers(module, wgmma) // nt) +
                     (WG_REGS_OVERHEAD if every else REGS_OVERHEAD))
    return max(1, REGS_PER_SM // (per_thread * nt))


def plan_kernel(module: Module, nt: int = 128, disjoint: frozenset = frozenset()) -> KernelPlan:
    """`disjoint`: the entry arguments (array base pointers) whose memory the specialization
    proved overlaps no other array argument's (no barriers between accesses to them). Column
    masks are rebuilt at the full shape first (sink_broadcast.py: it rewrites `module`)."""
    sink_broadcasts(module)          # before layouts: the rebuilt ops take the mma's
    layouts = assign_layouts(module, nt)
    may_alias = alias_oracle(disjoint)
    plan = KernelPlan(module, layouts, barrier_ops(module, layouts, may_alias), may_alias)
    wg = sm90a_layouts(module, nt, may_alias)
    if wg is not None:
        plan.sm90a = KernelPlan(module, wg, barrier_ops(module, wg, may_alias), may_alias, True,
                                stores=staged_stores(module, wg))
    return plan
