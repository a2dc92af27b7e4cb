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
# The shared-memory classes pipelines are sized for: what a block of the tensor-core targets
# (sm_80 and newer) may take, 99 / 163 / 227 KiB. The emitter sizes the K-loop pipelines once per
# class; when the classes' stage counts differ, the source holds one kernel per class and the
# preprocessor picks the target's (`TP_SMEM_KIB`, `class_macro`). A target below sm_80 takes the
# smallest class (its own, smaller limit is checked at launch), the CPU backend the largest.
PIPELINE_CLASSES = tuple(sorted({v for cc, v in SMEM_PER_BLOCK.items() if cc >= 80}))
PIPELINE_SMEM = PIPELINE_CLASSES[0]


OCCUPANCY = 2        # blocks per SM the pipelines' stage counts leave room for, where they can
# ... in the sm_90a class, where its registers allow and three stages still fit: a third block of
# one warpgroup is worth the stage only then (a loop keeping one wgmma group in flight refills
# the stage its previous MMAs read after them, so two stages keep one copy ahead)
WGMMA_OCCUPANCY, WGMMA_OCCUPANCY_STAGES = 3, 3
RESERVED = 1 * KIB   # shared memory the hardware keeps per block (sm_80 and newer)


def block_budget(cls: int, blocks: int) -> int:
    """Shared memory each of `blocks` blocks may take on an SM of the class `cls` (an SM has the
    class plus the 1 KiB one block's reservation: 100, 164, 228 KiB)."""
    return cls if blocks <= 1 else (cls + RESERVED) // blocks - RESERVED


def arch_number(arch: str) -> int | None:
    """90 for "sm_90", "sm_90a", "compute_90"; None for a name that is not an arch."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch) if isinstance(arch, str) else None
    return int(m.group(1)) if m else None


def check_target_ops(module, arch: str):
    """cuTile's per-target rule: bfloat16 atomic add needs sm_90 or later (a located error at
    the op; the CPU backend, which has no target, takes it)."""
    n = arch_number(arch)
    if n is None or n >= 90:
        return
    from ..ir.ops_memory import adds_to_bf16
    for op in filter(adds_to_bf16, module.walk()):
        with at(op.loc):
            raise TileUnsupportedFeatureError(f"bfloat16 is not supported by atomic add on "
                                              f"{arch}")


def smem_limit(arch: str) -> int:
    """Shared memory one block may use on `arch` (an arch newer than the table's takes the
    entry of the newest one before it)."""
    n = arch_number(arch)
    known = [cc for cc in SMEM_PER_BLOCK if n is not None and cc <= n]
    return SMEM_PER_BLOCK[max(known)] if known else STATIC_SMEM


def _class_of(limit: int) -> int:
    return max([c for c in PIPELINE_CLASSES if c <= limit], default=PIPELINE_CLASSES[0])


def smem_class(arch: str) -> int:
    """The pipeline class (PIPELINE_CLASSES) the source's kernel for `arch` is sized for; the
    largest for a name that is not a GPU arch ("cpu")."""
    return _class_of(smem_limit(arch)) if arch_number(arch) is not None else PIPELINE_CLASSES[-1]


def wgmma_target(arch: str) -> bool:
    """Whether `arch` is the sm_90a class's target: Hopper with its arch-specific features
    (NVRTC -arch=sm_90a), which warpgroup MMA needs; plain "sm_90" code keeps mma.sync."""
    return isinstance(arch, str) and arch in ("sm_90a", "compute_90a")


# The preprocessor lines choosing a source's sm_90a class (wgmma.h): NVRTC defines
# __CUDA_ARCH_FEAT_SM90_ALL for -arch=sm_90a; a CPU build may define TP_WGMMA itself.
WGMMA_MACRO = ["#ifndef TP_WGMMA  // the sm_90a class: warpgroup MMA (tilepy/wgmma.h)",
               "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)", "#define TP_WGMMA 1", "#else",
               "#define TP_WGMMA 0", "#endif", "#endif"]


def defines_wgmma(source: str) -> bool:
    """Whether a build of `source` defines TP_WGMMA 1 itself before the source's own choice
    (WGMMA_MACRO): a CPU build of the sm_90a class (class_define)."""
    return re.search(r"^#define TP_WGMMA 1\b", source.split("#ifndef TP_WGMMA")[0], re.M) is not None


def class_define(arch: str) -> str:
    """The lines that make a build of a kernel's source take `arch`'s kernel (class_macro, and
    the sm_90a class: WGMMA_MACRO)."""
    return f"#define TP_SMEM_KIB {smem_class(arch) // KIB}" + \
        ("\n#define TP_WGMMA 1" if wgmma_target(arch) else "")


def _class_ranges() -> dict[int, list[tuple[int, int | None]]]:
    """class -> the `__CUDA_ARCH__` ranges [lo, hi) of the targets in it (hi None: unbounded);
    an arch between two of the table's takes the entry before it, as smem_limit does."""
    ccs = [0] + sorted(SMEM_PER_BLOCK)
    out: dict[int, list] = {}
    for lo, hi in zip(ccs, ccs[1:] + [None]):
        c = _class_of(SMEM_PER_BLOCK.get(lo, STATIC_SMEM))
        r = out.setdefault(c, [])
        if r and r[-1][1] == lo * 10:
            r[-1] = (r[-1][0], None if hi is None else hi * 10)
        else:
            r.append((lo * 10, None if hi is None else hi * 10))
    return out


def class_macro() -> list[str]:
    """Preprocessor lines defining `TP_SMEM_KIB`, the class of the target being compiled (in
    KiB): from `__CUDA_ARCH__` on the GPU, the largest class without it (the CPU backend);
    a build may define it itself (the fake driver's CPU build of a device's cubin does)."""
    out = ["#ifndef TP_SMEM_KIB  // the shared-memory class the kernel's pipelines are sized for"]
    for c, ranges in sorted(_class_ranges().items())[:-1]:
        cond = " || ".join("(" + " && ".join(([f"__CUDA_ARCH__ >= {lo}"] if lo else []) +
                                             ([f"__CUDA_ARCH__ < {hi}"] if hi else [])) + ")"
                           for lo, hi in ranges)
        out += [f"#{'elif' if len(out) > 1 else 'if'} defined(__CUDA_ARCH__) && ({cond})",
                f"#define TP_SMEM_KIB {c // KIB}"]
    return out + ["#else", f"#define TP_SMEM_KIB {PIPELINE_CLASSES[-1] // KIB}", "#endif", "#endif"]


# smem_classes' key of the sm_90a class's size (a kernel that has the class: its launches on
# wgmma_target(arch) run that kernel, not the largest class's)
WGMMA_CLASS = 0


class SmemSizes:
    """The dynamic shared memory of a kernel artifact per target: `smem_bytes` (the largest
    class's: the CPU backend's, which may build either of its kernels) unless `smem_classes`
    (class -> bytes) holds the target's."""
    smem_bytes: int
    smem_classes: dict

    def smem_for(self, arch: str) -> int:
        sizes = self.smem_classes or {}
        if wgmma_target(arch) and WGMMA_CLASS in sizes:
            return sizes[WGMMA_CLASS]
        return sizes.get(smem_class(arch), self.smem_bytes)


def kib(n: int) -> str:
    return f"{n} bytes ({n / KIB:.4g} KiB)"


def check_fits(kernel, arch: str, limit: int | None = None):
    """Raise a located error when kernel artifact `kernel` needs more shared memory per block
    than `arch` has (`limit`: what the device reported, else the table's)."""
    limit = smem_limit(arch) if limit is None else limit
    nbytes = kernel.smem_for(arch)
    if nbytes <= limit:
        return
    what, loc = getattr(kernel, "smem_user", ("", None))
    with at(loc):
        raise TileUnsupportedFeatureError(
            f"kernel '{kernel.name}' needs {kib(nbytes)} of shared memory per block but "
            f"{arch} has {kib(limit)}" + (f"; the largest part is {what}" if what else "") +
            ": use smaller tiles")
