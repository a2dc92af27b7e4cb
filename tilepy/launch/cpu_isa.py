"""The instruction set the fast CPU mode compiles for, and the flags that say so.

The fast mode is compiled for the host's ISA so that tile loops use its vector instructions: on
x86-64 the highest microarchitecture level (x86-64-v2, -v3, -v4: SSE4.2, AVX2+FMA, AVX-512) whose
features /proc/cpuinfo lists. The level is an explicit `-march=` flag rather than
`-march=native`: the flags are part of the library's cache key, so a cache shared between
machines never hands an AVX-512 library to an AVX2 host (the key differs), and two hosts of one
level share their libraries. Elsewhere (AArch64 has NEON in its baseline) no flag is added.

Numerics: `-ffp-contract=off` keeps a*b+c two roundings, as the interpreter computes it (the
host compiler would otherwise fuse them into an fma once the ISA has one); `-fno-math-errno`
only drops errno updates (no value changes), which lets sqrt and the math calls vectorize.
With glibc's libmvec, expf/logf/... in vectorized loops call its SIMD variants (TP_MVEC).
The faithful mode keeps its flags: it is about semantics, not speed.
"""
from __future__ import annotations

import ctypes.util
import functools
import platform

# x86-64 microarchitecture levels (the psABI's), by the /proc/cpuinfo flags each one needs
# beyond the previous level.
X86_LEVELS = (
    ("x86-64-v2", ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")),
    ("x86-64-v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")),
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
)


def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def x86_level(flags: frozenset[str]) -> str | None:
    """The highest x86-64 level all of whose features are in `flags` (None: below v2)."""
    level = None
    for name, needs in X86_LEVELS:
        if not all(n in flags for n in needs):
            break
        level = name
    return level


@functools.lru_cache(maxsize=None)
def host_isa() -> str:
    """The ISA the fast mode targets on this host: an x86-64 level, or the platform's baseline."""
    machine = platform.machine()
    if machine in ("x86_64", "AMD64"):
        return x86_level(_cpu_flags()) or "x86-64"
    return machine or "unknown"


@functools.lru_cache(maxsize=None)
def _has_libmvec() -> bool:
    return platform.system() == "Linux" and ctypes.util.find_library("mvec") is not None


def isa_flags() -> list[str]:
    """The ISA flags of the fast mode (part of every fast library's cache key)."""
    isa = host_isa()
    if isa.startswith("x86-64"):
        # without a level (no /proc/cpuinfo): F16C for f16 conversions, as before
        return [f"-march={isa}"] if isa != "x86-64" else ["-mf16c"]
    return []


def fast_flags() -> list[str]:
    """Optimization, ISA and numerics flags of the fast CPU mode. `-falign-loops=64`: a hot loop's
    speed no longer depends on where unrelated code in the library puts it (the f16 mma loop ran
    20% slower when the worker pool's code moved it by 32 bytes)."""
    f = ["-O3", *isa_flags(), "-ffp-contract=off", "-fno-math-errno",
         "-fno-tree-loop-distribute-patterns", "-falign-loops=64"]
    if _has_libmvec() and host_isa().startswith("x86-64-v"):
        f += ["-DTP_MVEC=1", "-lmvec"]
    return f
