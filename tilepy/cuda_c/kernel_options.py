"""cuTile's kernel options (`@kernel(num_ctas=..., occupancy=...)`, frontend/kernel.py checks
their values) in the emitted C++. The source is the same for every target, so a per-target
value (`ByTarget(sm_90=2, default=1)`) becomes a choice on `__CUDA_ARCH__`.

* occupancy: the expected number of resident blocks per SM, NVCC's `minBlocksPerMultiprocessor`:
  `__launch_bounds__(TP_NT, TP_MIN_BLOCKS)`, so ptxas keeps the registers per thread at or below
  65536 / (TP_NT * occupancy) (spilling if it must). No effect on the CPU backend.
* num_ctas: cuTile's blocks per cluster (CGA). It pays off in cuTile's code where the blocks of
  a cluster share operands (TMA multicast, distributed shared memory, the 2-block mma of
  sm_100); the C++ backend's blocks share nothing, so a cluster would only restrict the launch
  (a grid divisible by it) and scheduling. Accepted and checked, and a no-op here: the source
  says so in a comment. (The tileiras path does not write it either.)
"""
from __future__ import annotations

import re

from ..frontend.api import ByTarget


def cuda_arch(target: str) -> int:
    """"sm_90" / "sm_90a" -> 900, "sm_100" -> 1000: the target's `__CUDA_ARCH__`."""
    digits = re.fullmatch(r"sm_(\d+)[a-z]?", target).group(1)
    return int(digits[:-1]) * 100 + int(digits[-1]) * 10


def _by_arch(name: str, value, default) -> list[str]:
    """`#define name` to the option's value for each target (ByTarget) or for all."""
    if not isinstance(value, ByTarget):
        return [f"#define {name} {default if value is None else value}"]
    out, first = [], True
    for target, v in sorted(value.values.items()):
        out.append(f"#{'if' if first else 'elif'} defined(__CUDA_ARCH__) && "
                   f"__CUDA_ARCH__ == {cuda_arch(target)}")
        out.append(f"#define {name} {v}")
        first = False
    fallback = [f"#define {name} {default if value.default is None else value.default}"]
    return out + ["#else"] + fallback + ["#endif"] if out else fallback


def launch_bounds(options: dict) -> tuple[list[str], str]:
    """(lines before the kernel, its `__launch_bounds__(...)`) for the kernel's options."""
    lines = []
    if options.get("num_ctas") is not None:
        lines.append(f"// num_ctas={options['num_ctas']!r}: no cluster; this backend's blocks "
                     f"share no data (cuda_c/kernel_options.py)")
    if options.get("occupancy") is None:
        return lines, "__launch_bounds__(TP_NT)"
    lines += ["#ifndef TP_MIN_BLOCKS", *_by_arch("TP_MIN_BLOCKS", options["occupancy"], 1),
              "#endif"]
    return lines, "__launch_bounds__(TP_NT, TP_MIN_BLOCKS)"
