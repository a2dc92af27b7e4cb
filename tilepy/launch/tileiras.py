"""NVIDIA's `tileiras` (wheel nvidia-cuda-tileiras) as a second GPU compiler: Tile IR bytecode
(tilepy/bytecode) -> a cubin, disk-cached like NVRTC's. Needs no GPU to compile; running its
cubins needs a driver that knows Tile IR kernels (r580+).

The cubin's kernel takes the entry's parameters in order (pointers, then scalars as their C types)
and wants the block size that tileiras chose, recorded in the cubin (`required_threads`)."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile

from . import cache, timeout, toolchain
from .cubin_info import kernel_info
from .nvrtc import Cubin, check_arch


def find_tileiras() -> str | None:
    """tileiras on PATH, else in the nvidia wheels (nvidia-cuda-tileiras: nvidia/cu13/bin)."""
    found = shutil.which("tileiras")
    if found:
        return found
    for d in toolchain._site_nvidia_dirs():
        for sub in ("cu13", "cuda_tileiras", "cu12"):
            path = os.path.join(d, sub, "bin", "tileiras")
            if os.path.isfile(path):
                return path
    return None


@functools.lru_cache(maxsize=None)
def tileiras_version() -> str:
    """"13.4" for the installed tileiras. Asking it takes a process (~0.2 s), which a launch
    that finds its cubin in the disk cache should not pay: the answer is kept in the cache,
    under the tool's file identity (a reinstalled tileiras is asked again)."""
    tool = _tool()
    st = os.stat(tool)
    key = cache.key_of("tileiras --version", tool, st.st_size, st.st_mtime_ns)
    hit = cache.get("tileiras", key)
    if hit is not None and hit.meta.get("what") == "version":
        return hit.payload.decode()
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    version = m.group(1) if m else "unknown"
    cache.put("tileiras", key, version.encode(), {"what": "version"})
    return version


def _tool() -> str:
    from ..errors import TileCompileError
    tool = find_tileiras()
    if tool is None:
        raise TileCompileError("tileiras is not installed: pip install 'tilepy[tileiras]' "
                               "(the nvidia-cuda-tileiras wheel)")
    return tool


def assemble(bytecode: bytes, arch: str, name: str = "kernel", opt_level: int = 3) -> Cubin:
    """A cubin for `arch` ("sm_80", "sm_90", "sm_100", ...) from Tile IR bytecode."""
    kind, arch = check_arch(arch)
    if kind != "cubin":
        from ..errors import TileUnsupportedFeatureError
        raise TileUnsupportedFeatureError(f"tileiras makes cubins (sm_XX), not PTX ({arch})")
    from ..version import __version__
    version = tileiras_version()
    key = cache.key_of("tileiras", __version__, version, arch, opt_level, bytecode)
    hit = cache.get("tileiras", key)
    if hit is not None and hit.payload[:4] == b"\x7fELF":
        return Cubin(arch, hit.payload, hit.meta.get("log", ""), "cubin", meta=hit.meta)
    data, log = _run(bytecode, arch, name, opt_level)
    meta = {"kind": "cubin", "arch": arch, "name": name, "log": log, "tileiras": version,
            "tilepy": __version__}
    cache.put("tileiras", key, data, meta)
    return Cubin(arch, data, log, "cubin", meta=meta)


def _run(bytecode: bytes, arch: str, name: str, opt_level: int) -> tuple[bytes, str]:
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, f"{name}.tileirbc"), os.path.join(d, f"{name}.cubin")
        with open(src, "wb") as f:
            f.write(bytecode)
        limit = timeout.current()
        try:
            r = subprocess.run([_tool(), f"--gpu-name={arch}", f"--opt-level={opt_level}", "-o",
                                out, src], capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise timeout.expired(f"tileiras compiling kernel '{name}' for {arch}", limit) \
                from None
        log = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or not os.path.isfile(out):
            from .diagnostics import compile_error
            raise compile_error(f"tileiras could not compile kernel '{name}' for {arch}", log)
        with open(out, "rb") as f:
            return f.read(), log


def required_threads(cubin: bytes, name: str) -> tuple[int, int, int] | None:
    """The block size kernel `name` of a cubin requires (EIATTR_REQNTID), if it says."""
    from ..errors import TileValueError
    try:
        return kernel_info(cubin, name).req_threads
    except TileValueError:                  # no such kernel in the cubin
        return None
