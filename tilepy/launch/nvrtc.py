"""NVRTC: emitted CUDA C++ -> cubin (or PTX), without needing a GPU or a driver.

NVRTC is called through ctypes (nvrtc_lib.py). tilepy's runtime header is passed to it from
memory; CUDA's own headers (cuda_fp16.h, ...) come from the nvidia-cuda-runtime wheel of the
same CUDA major version as NVRTC. The log
(warnings and the `ptxas -v` resource report) is kept with the binary. Errors raise
TileCompileError located at the user's line through the #line directives, with the raw log.

Results are cached on disk (cache.py) under a key over tilepy's version, NVRTC's version, the
target, the options, the runtime header and the source. A cache hit must not pay for loading
NVRTC (hundreds of ms): its version and the include dir are remembered in the cache dir
(toolchain.py) and re-derived whenever the installed CUDA wheels change.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from ..cuda_c import INCLUDE_DIR
from ..errors import TileCompileError
from . import cache, timeout, toolchain

BASE_OPTIONS = ("--std=c++17", "-Xptxas=-v", "--generate-line-info", "-default-device")


@dataclass
class Cubin:
    """A compiled kernel: a cubin (SASS for one arch) or PTX (for the driver to JIT)."""
    arch: str                       # "sm_90" (cubin) or "compute_90" (ptx)
    data: bytes
    log: str
    kind: str = "cubin"             # "cubin" | "ptx"
    nvrtc: str = ""                 # NVRTC version that produced it, e.g. "13.5"
    meta: dict = field(default_factory=dict)

    def resource_usage(self) -> dict:
        """Registers, spill bytes and shared memory from the ptxas report in the log."""
        out = {}
        m = re.search(r"Used (\d+) registers", self.log)
        if m:
            out["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", self.log)
        if m:
            out["spill_stores"], out["spill_loads"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"(\d+) bytes smem", self.log)
        out["smem"] = int(m.group(1)) if m else 0
        return out


@functools.lru_cache(maxsize=None)
def _headers() -> dict[str, str]:
    """tilepy's headers by include name ("tilepy/runtime.h", ...), given to NVRTC from memory
    (the CPU-only ones are harmless: nothing includes them under NVRTC)."""
    d = os.path.join(INCLUDE_DIR, "tilepy")
    out = cache.KeyTextMap()
    for name in sorted(os.listdir(d)):
        if name.endswith(".h"):
            with open(os.path.join(d, name)) as f:
                out[f"tilepy/{name}"] = f.read()
    return out


def cuda_include_dir() -> str:
    return toolchain.info().include_dir


def nvrtc_version() -> tuple[int, int]:
    major, minor = toolchain.info().nvrtc_version.split(".")
    return int(major), int(minor)


def check_arch(arch: str) -> tuple[str, str]:
    """("cubin", "sm_90") for "sm_90"/"sm_90a"; ("ptx", "compute_90") for "compute_90". An arch
    the installed NVRTC does not support is a TileCompileError listing the ones it does."""
    m = re.fullmatch(r"(sm|compute)_(\d+)([af]?)", arch) if isinstance(arch, str) else None
    if not m:
        raise TileCompileError(f"unknown target architecture {arch!r} (expected a string such as "
                               f"'sm_80', 'sm_90', 'sm_90a' for a cubin or 'compute_80' for PTX)")
    tc = toolchain.info()
    if int(m.group(2)) not in tc.supported_archs:
        known = ", ".join(f"sm_{a}" for a in tc.supported_archs)
        raise TileCompileError(f"NVRTC {tc.nvrtc_version} cannot compile for {arch}: it supports "
                               f"{known}")
    return ("cubin" if m.group(1) == "sm" else "ptx"), arch


def options(arch: str, source: str | None = None) -> list[str]:
    """NVRTC's options for `arch`; with the `source`, also the runtime features it can leave
    out (`features`)."""
    return [f"-arch={arch}", *BASE_OPTIONS] + (features(source) if source is not None else [])


def features(source: str) -> list[str]:
    """-D options leaving out the runtime header's support of the half types a kernel does not
    use: CUDA's cuda_fp16.h and cuda_bf16.h are a fifth of what NVRTC parses for a small
    kernel, and a kernel spells every element type it uses (`__half`, `__nv_bfloat16`), so its
    text tells; and the directed roundings and ordered loads/stores (directed.h, ordered.h) of a
    kernel without them. Nothing else depends on them: the code generated is the same."""
    bf16 = "bfloat16" in source
    out = [] if bf16 else ["-DTP_BF16=0"]
    if not bf16 and "half" not in source:
        out.append("-DTP_FP16=0")
    # directed.h and ordered.h likewise: their functors and templates are spelled by name
    if "_dir<" not in source:
        out.append("-DTP_DIRECTED=0")
    if not any(w in source for w in ("_ordered<", "_strong", "strong_access", "_fence<")):
        out.append("-DTP_ORDERED=0")
    return out


def compile_cubin(source: str, arch: str = "sm_80", name: str = "kernel") -> Cubin:
    """Compile to a cubin for `arch` ("sm_80", "sm_90", ...) or to PTX for "compute_XX";
    cached on disk by content."""
    kind, arch = check_arch(arch)
    tc = toolchain.info()
    from ..cuda_c.source_key import location_free
    from ..version import __version__
    key = cache.key_of(kind, __version__, tc.nvrtc_version, tc.runtime_version, arch,
                       options(arch, source), _headers(), location_free(source))
    hit = cache.get(kind, key)
    if hit is not None and _valid(kind, hit.payload):
        return Cubin(arch, hit.payload, hit.meta.get("log", ""), kind, tc.nvrtc_version, hit.meta)
    out = timeout.call_with_limit(lambda: _compile(source, arch, name, kind),
                                  f"NVRTC compiling kernel '{name}' for {arch}")
    out.nvrtc = tc.nvrtc_version
    out.meta = {"kind": kind, "arch": arch, "name": name, "log": out.log,
                "nvrtc": tc.nvrtc_version, "tilepy": __version__}
    cache.put(kind, key, out.data, out.meta)
    return out


def _valid(kind: str, data: bytes) -> bool:
    return data[:4] == b"\x7fELF" if kind == "cubin" else data.lstrip()[:2] == b"//"


def _compile(source: str, arch: str, name: str, kind: str) -> Cubin:
    opts = options(arch, source) + [f"--include-path={cuda_include_dir()}"]
    ok, data, log = toolchain.nvrtc_lib().compile(source, f"{name}.cu", _headers(), opts, kind)
    if not ok:
        from .diagnostics import compile_error
        raise compile_error(f"NVRTC could not compile kernel '{name}' for {arch}", log)
    return Cubin(arch, data, log, kind)
