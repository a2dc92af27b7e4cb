"""The lowering plan of one kernel, made by the compiler (api/compiler.py) before a backend that
runs tiles over the threads of a block emits it: one layout per tile value (assign_layouts.py),
the memory ops that need a barrier before them (hazards.py), and the K-loop pipelines for a
number of stages (pipeline.py; the backend picks the stage count that fits its shared memory).
The emitter only reads the plan; no analysis starts from inside it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir import Module
from .assign_layouts import LayoutPlan, assign_layouts
from .hazards import alias_oracle, barrier_ops
from .pipeline import plan_pipelines


@dataclass
class KernelPlan:
    module: Module
    layouts: LayoutPlan
    barriers: set[int]                 # ids of memory ops with a barrier before them
    may_alias: Callable

    @property
    def nt(self) -> int:
        return self.layouts.nt

    def pipelines(self, stages: int) -> dict:
        """id(for op) -> Pipeline with `stages` stages ({} for fewer than two: no pipelining)."""
        if stages < 2:
            return {}
        return plan_pipelines(self.module, self.layouts, self.may_alias, stages)


def plan_kernel(module: Module, nt: int = 128, disjoint: frozenset = frozenset()) -> KernelPlan:
    """`disjoint`: the entry arguments (array base pointers) whose memory the specialization
    proved overlaps no other array argument's (no barriers between accesses to them)."""
    layouts = assign_layouts(module, nt)
    may_alias = alias_oracle(disjoint)
    return KernelPlan(module, layouts, barrier_ops(module, layouts, may_alias), may_alias)
