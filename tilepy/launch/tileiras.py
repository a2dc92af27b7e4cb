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


def tileiras_version() -> str:
    """"13.4" for the installed tileiras. Asking it takes a process (~0.2 s), which a launch
    that finds its cubin in the disk cache should not pay: the answer is kept in the cache,
    under the tool's file identity (a reinstalled tileiras is asked again)."""
    tool = _tool()
    st = os.stat(tool)
    return _version(tool, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _version(tool: str, size: int, mtime_ns: int) -> str:
    key = cache.key_of("tileiras --version", tool, size, mtime_ns)
    hit = cache.get("tileiras", key)
    if hit is not None and hit.meta.get("what") == "version":
        return hit.payload.decode()
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    version = _release(out) or "unknown"
    cache.put("tileiras", key, version.encode(), {"what": "version"})
    return version


# What tileiras runs beside itself, of its own release (its wheel, nvidia-cuda-tileiras, depends
# on the wheels named here). Seen with strace (tileiras 13.5): it runs ptxas from its own folder,
# else the first on PATH (an older toolkit's there rejects its PTX), and loads libnvvm from
# ../lib/libnvvm.so.4 or ../nvvm/lib64/libnvvm.so of its folder; libnvJitLink (it dlopens it to
# link device libraries) is looked for in the same lib folder. Without them every compile fails
# with only "failed to compile Tile IR program" (on a GPU machine, issue 26).
COMPANIONS = (      # (what, wheel, paths relative to tileiras' folder)
    ("ptxas", "nvidia-cuda-nvcc", ("ptxas",)),
    ("libnvvm", "nvidia-nvvm", ("../lib/libnvvm.so.4", "../nvvm/lib64/libnvvm.so")),
    ("nvJitLink", "nvidia-nvjitlink", ("../lib/libnvJitLink.so.13", "../lib/libnvJitLink.so",
                                       "../lib64/libnvJitLink.so")),
)


def _release(text: str) -> str | None:
    m = re.search(r"release (\d+\.\d+)", text)
    return m.group(1) if m else None


def _companion(what: str, wheel: str, paths, folder: str, release: str) -> str | None:
    """Why the companion `what` of a tileiras in `folder` is not of its release, or None."""
    found = next((os.path.normpath(os.path.join(folder, p)) for p in paths
                  if os.path.isfile(os.path.join(folder, p))), None)
    if what == "ptxas":
        found = found or shutil.which("ptxas")
        if found is None:
            return "no ptxas beside it or on PATH"
        try:
            out = subprocess.run([found, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
        except (OSError, subprocess.SubprocessError) as e:
            return f"ptxas {found} does not run ({e})"
        got = _release(out)
        return None if got == release else f"ptxas {found} is release {got}, not {release}"
    if found is None:
        return f"no {what} in {os.path.normpath(os.path.join(folder, '..'))}"
    got = _wheel_release(wheel, found)
    return None if got in (None, release) else f"{what} {found} is release {got} ({wheel})"


def _wheel_release(wheel: str, path: str) -> str | None:
    """The release ("13.5") of the installed `wheel` when `path` is one of its files."""
    from importlib import metadata
    try:
        dist = metadata.distribution(wheel)
    except metadata.PackageNotFoundError:
        return None
    if not any(os.path.normpath(str(dist.locate_file(f))) == path for f in dist.files or ()):
        return None
    return ".".join(dist.version.split(".")[:2])


@functools.lru_cache(maxsize=None)
def _missing(tool: str, release: str) -> tuple[str, str] | None:
    folder = os.path.dirname(os.path.realpath(tool))
    why = [(wheel, p) for w, wheel, paths in COMPANIONS
           if (p := _companion(w, wheel, paths, folder, release)) is not None]
    if not why:
        return None
    return (f"tileiras {release} ({tool}) lacks its companions of the same release: "
            f"{'; '.join(p for _, p in why)}",
            "pip install " + " ".join(f"'{wheel}=={release}.*'" for wheel, _ in why))


def missing_companions() -> tuple[str, str] | None:
    """(what tileiras lacks beside it, the pip command that installs it), None when it has
    the ptxas, libnvvm and nvJitLink of its release (or is not installed)."""
    tool = find_tileiras()
    return None if tool is None else _missing(tool, tileiras_version())


def unusable() -> str | None:
    """Why tileiras cannot compile here (not installed, or without its companions: the wheels
    to install are named), None when it can."""
    if find_tileiras() is None:
        return "tileiras not installed (pip install nvidia-cuda-tileiras)"
    missing = missing_companions()
    return None if missing is None else f"{missing[0]}: {missing[1]}"


def _tool() -> str:
    from ..errors import TileCompileError
    tool = find_tileiras()
    if tool is None:
        raise TileCompileError("tileiras is not installed: pip install 'tilepy[tileiras]' "
                               "(the nvidia-cuda-tileiras wheel)")
    return tool


def assemble(bytecode: bytes, arch: str, name: str = "kernel", opt_level: int = 3) -> Cubin:
    """A cubin for `arch` ("sm_80", "sm_90", "sm_100", ...) from Tile IR bytecode. tileiras
    names no arch-specific targets: "sm_90a" (NVRTC's target of sm_90 devices) is its sm_90, on
    which it uses Hopper's wgmma and TMA itself."""
    kind, arch = check_arch(arch[:-1] if arch.endswith("a") else arch)
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
            why = unusable()               # (asked only now: it takes a process)
            raise compile_error(f"tileiras could not compile kernel '{name}' for {arch}"
                                + (f" ({why})" if why else ""), log)
        with open(out, "rb") as f:
            return f.read(), log


def required_threads(cubin: bytes, name: str) -> tuple[int, int, int] | None:
    """The block size kernel `name` of a cubin requires (EIATTR_REQNTID), if it says."""
    from ..errors import TileValueError
    try:
        return kernel_info(cubin, name).req_threads
    except TileValueError:                  # no such kernel in the cubin
        return None
