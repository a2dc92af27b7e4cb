"""cuTile's kernel options in the emitted C++. The frontend writes `@kernel(num_ctas=...,
occupancy=...)` into the entry's optimization hints, as cuTile does (`entry @k(...)
optimization_hints=<default = {occupancy = 2}, sm_90 = {num_cta_in_cga = 2}>`: per target, a
target's entry over `default`), so tileiras gets them too (bytecode/writer.py). The C++ source
is the same for every target: a per-target value becomes a choice on `__CUDA_ARCH__`.

* occupancy: the expected number of resident blocks per SM, NVCC's `minBlocksPerMultiprocessor`:
  `__launch_bounds__(TP_NT, TP_MIN_BLOCKS)`, so ptxas keeps the registers per thread at or below
  65536 / (TP_NT * occupancy) (spilling if it must). No effect on the CPU backend.
* num_cta_in_cga (num_ctas): cuTile's blocks per cluster. It pays off where the blocks of a
  cluster share operands (TMA multicast, distributed shared memory, the 2-block mma of sm_100:
  what tileiras emits); the C++ backend's blocks share nothing, so a cluster would only restrict
  the launch (a grid divisible by it) and scheduling. A no-op here; the source says so.
"""
from __future__ import annotations

import re


def cuda_arch(target: str) -> int:
    """"sm_90" / "sm_90a" -> 900, "sm_100" -> 1000: the target's `__CUDA_ARCH__`."""
    digits = re.fullmatch(r"sm_(\d+)[a-z]?", target).group(1)
    return int(digits[:-1]) * 100 + int(digits[-1]) * 10


def _by_arch(name: str, key: str, hints: dict, fallback: int) -> list[str]:
    """`#define name` to hint `key` for each target that names it, else the default's."""
    default = hints.get("default", {}).get(key, fallback)
    out = []
    for target, kv in sorted(hints.items()):
        if target != "default" and key in kv:
            out += [f"#{'elif' if out else 'if'} defined(__CUDA_ARCH__) && "
                    f"__CUDA_ARCH__ == {cuda_arch(target)}", f"#define {name} {kv[key]}"]
    last = [f"#define {name} {default}"]
    return out + ["#else"] + last + ["#endif"] if out else last


def launch_bounds(entry) -> tuple[tuple[str, ...], str]:
    """(lines before the kernel, its `__launch_bounds__(...)`) from the entry's hints."""
    h = entry.attrs.get("optimization_hints")
    hints = h.as_dict() if h is not None else {}
    lines = []
    ctas = {t: kv["num_cta_in_cga"] for t, kv in hints.items() if "num_cta_in_cga" in kv}
    if ctas:
        lines.append(f"// num_ctas {ctas}: no cluster; this backend's blocks share no data "
                     f"(cuda_c/kernel_options.py)")
    if not any("occupancy" in kv for kv in hints.values()):
        return tuple(lines), "__launch_bounds__(TP_NT)"
    lines += ["#ifndef TP_MIN_BLOCKS", *_by_arch("TP_MIN_BLOCKS", "occupancy", hints, 1), "#endif"]
    return tuple(lines), "__launch_bounds__(TP_NT, TP_MIN_BLOCKS)"
