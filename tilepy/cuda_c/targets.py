"""Shared memory per thread block of the GPU targets, and the budgets the emitter plans with.

The emitted kernel keeps all of its shared memory in one `extern __shared__` array (dynamic
shared memory), sized per kernel: the launch passes the size and, above the 48 KiB every device
gives without asking, raises the kernel's max-dynamic-shared-memory attribute to it. How much a
block may opt into is a property of the architecture (CUDA C++ Programming Guide, "Compute
Capabilities"), tabled here for `kernel.compile(arch=...)`; on a GPU the device reports it too.
"""
from __future__ import annotations

import re

from ..errors import TileUnsupportedFeatureError, at

KIB = 1024
STATIC_SMEM = 48 * KIB           # what every block gets without the opt-in attribute

# compute capability (major*10 + minor) -> most shared memory one block can opt into
SMEM_PER_BLOCK = {
    70: 96 * KIB, 72: 96 * KIB, 75: 64 * KIB,
    80: 163 * KIB, 86: 99 * KIB, 87: 163 * KIB, 89: 99 * KIB,
    90: 227 * KIB, 100: 227 * KIB, 103: 227 * KIB, 110: 227 * KIB,
    120: 99 * KIB, 121: 99 * KIB,
}
MAX_SMEM = max(SMEM_PER_BLOCK.values())     # the most any target has (and the CPU backend)
# The emitted source is the same for every target, so pipeline stages are added only while the
# kernel still fits the smallest block of the tensor-core targets it is meant for (sm_80 and
# newer): a kernel never fails on sm_86/89 because of stages it did not need.
PIPELINE_SMEM = min(v for cc, v in SMEM_PER_BLOCK.items() if cc >= 80)


def arch_number(arch: str) -> int | None:
    """90 for "sm_90", "sm_90a", "compute_90"; None for a name that is not an arch."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch) if isinstance(arch, str) else None
    return int(m.group(1)) if m else None


def smem_limit(arch: str) -> int:
    """Shared memory one block may use on `arch` (an arch newer than the table's takes the
    entry of the newest one before it)."""
    n = arch_number(arch)
    known = [cc for cc in SMEM_PER_BLOCK if n is not None and cc <= n]
    return SMEM_PER_BLOCK[max(known)] if known else STATIC_SMEM


def kib(n: int) -> str:
    return f"{n} bytes ({n / KIB:.4g} KiB)"


def check_fits(kernel, arch: str, limit: int | None = None):
    """Raise a located error when kernel artifact `kernel` needs more shared memory per block
    than `arch` has (`limit`: what the device reported, else the table's)."""
    limit = smem_limit(arch) if limit is None else limit
    if kernel.smem_bytes <= limit:
        return
    what, loc = getattr(kernel, "smem_user", ("", None))
    with at(loc):
        raise TileUnsupportedFeatureError(
            f"kernel '{kernel.name}' needs {kib(kernel.smem_bytes)} of shared memory per block but "
            f"{arch} has {kib(limit)}" + (f"; the largest part is {what}" if what else "") +
            ": use smaller tiles")
