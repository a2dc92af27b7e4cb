"""Which CUDA toolchain is installed: NVRTC's version, its supported archs, CUDA's headers.

Finding out means importing cuda.pathfinder and loading libnvrtc (100-400 ms), which a process
that only needs a cached cubin should not pay. So the answer is remembered in the cache dir
(`toolchain.json`) together with a fingerprint of what decides it: the Python prefix, the
library-search environment variables, the files of the installed `nvidia` wheels and the
NVRTC library and header files found last time. A different fingerprint re-derives it.

CUDA 12 and 13 (extras `cu12`, `cu13`): the CUDA major version is cuda-bindings' (the `cu12`
extra pins it to 12.x, and the driver API then matches). The CUDA 13 wheels stay installed
beside the CUDA 12 ones, and cuda.pathfinder would pick libnvrtc.so.13 first, so `find_nvrtc()`
looks for the NVRTC of the bindings' major version itself; the headers come from the runtime
wheel of that same major version.
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import json
import os
import re
import sys
from dataclasses import asdict, dataclass

from ..errors import TileCompileError
from . import cache

MEMO = "toolchain.json"
_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX")


@dataclass(frozen=True)
class Toolchain:
    nvrtc_version: str            # "13.5"
    runtime_version: str          # CUDART_VERSION of the headers, e.g. "13050"
    include_dir: str
    nvrtc_lib: str
    supported_archs: tuple[int, ...]

    @property
    def major(self) -> int:
        return int(self.nvrtc_version.split(".")[0])


def _site_nvidia_dirs() -> list[str]:
    """The `nvidia` folders of the wheels (nvidia/cu13/..., nvidia/cuda_nvrtc/...)."""
    spec = importlib.util.find_spec("nvidia")
    return sorted(spec.submodule_search_locations or []) if spec else []


def _stat(path: str) -> list:
    try:
        st = os.stat(path)
        return [st.st_size, st.st_mtime_ns]
    except OSError:
        return []


def fingerprint(tc: Toolchain | None) -> list:
    nv = [[d, sorted(os.listdir(d)) if os.path.isdir(d) else []] for d in _site_nvidia_dirs()]
    bindings = importlib.util.find_spec("cuda.bindings")
    files = [bindings.origin if bindings else ""]
    if tc is not None:
        files += [tc.nvrtc_lib, os.path.join(tc.include_dir, "cuda_runtime_api.h")]
    return [sys.prefix, [os.environ.get(k) for k in _ENV], nv, [[f, _stat(f)] for f in files]]


@functools.lru_cache(maxsize=None)
def info() -> Toolchain:
    """The installed toolchain (remembered across processes, see the module docstring)."""
    tc = _read_memo()
    if tc is not None:
        return tc
    tc = probe()
    _write_memo(tc)
    return tc


def _read_memo() -> Toolchain | None:
    try:
        data = json.loads(cache.read_memo(MEMO) or b"null")
        tc = Toolchain(**{**data["toolchain"],
                          "supported_archs": tuple(data["toolchain"]["supported_archs"])})
    except (ValueError, KeyError, TypeError):
        return None
    return tc if data.get("fingerprint") == json.loads(json.dumps(fingerprint(tc))) else None


def _write_memo(tc: Toolchain):
    cache.write_memo(MEMO, json.dumps({"toolchain": asdict(tc),
                                       "fingerprint": fingerprint(tc)}).encode())


def bindings_major() -> int:
    """cuda-bindings' CUDA major version, read from its _version.py (importing the package
    costs more than the rest of a cache hit)."""
    spec = importlib.util.find_spec("cuda.bindings")
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "_version.py")) as f:
            m = re.search(r"""__version__\s*=\s*["'](\d+)\.""", f.read())
        if m:
            return int(m.group(1))
    except (OSError, AttributeError, TypeError):
        pass
    import cuda.bindings
    return int(cuda.bindings.__version__.split(".")[0])


def find_nvrtc() -> str:
    """Path of the NVRTC to use: the wheel of cuda-bindings' CUDA major version (the CUDA 13
    wheel stays installed beside the `cu12` extra's), else what cuda.pathfinder finds."""
    major = bindings_major()
    for d in _site_nvidia_dirs():
        for sub in (f"cu{major}", "cuda_nvrtc"):
            path = os.path.join(d, sub, "lib", f"libnvrtc.so.{major}")
            if os.path.exists(path):
                return path
    import cuda.pathfinder
    return cuda.pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path


def nvrtc_lib():
    """The loaded NVRTC (nvrtc_lib.NVRTC) of the current toolchain."""
    from . import nvrtc_lib
    return nvrtc_lib.load(info().nvrtc_lib)


def probe() -> Toolchain:
    """Load NVRTC and look everything up (slow; needs no driver)."""
    from . import nvrtc_lib
    try:
        lib = find_nvrtc()
        nv = nvrtc_lib.load(lib)
        major, minor = nv.version()
        archs = nv.supported_archs()
    except TileCompileError:
        raise
    except Exception as e:     # no wheel, or a library that does not load
        raise TileCompileError(f"cannot load NVRTC ({type(e).__name__}: {e}); install tilepy with "
                               f"the CUDA wheels: pip install 'tilepy[cu13]' (or [cu12])") from None
    inc, rt = include_dir_for(major)
    return Toolchain(f"{major}.{minor}", rt, inc, lib, tuple(int(a) for a in archs))


def _major_of(rt: str | None) -> int | None:
    return int(rt) // 1000 if rt else None


@functools.lru_cache(maxsize=None)
def runtime_version(include_dir: str) -> str | None:
    """CUDART_VERSION of the headers in `include_dir` (defined near the top of the file)."""
    try:
        with open(os.path.join(include_dir, "cuda_runtime_api.h"), errors="replace") as f:
            m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", f.read(1 << 16))
    except OSError:
        return None
    return m.group(1) if m else None


def include_dir_for(major: int) -> tuple[str, str]:
    """(include dir, CUDART_VERSION) of CUDA headers whose major version is NVRTC's."""
    candidates = []
    for d in _site_nvidia_dirs():         # cu13 wheel layout, then the cu12 one
        candidates += [os.path.join(d, f"cu{major}", "include"),
                       os.path.join(d, "cuda_runtime", "include")]
    try:                                  # conda, CUDA_HOME, ... (slower to ask: imports ~50 ms)
        if not any(_major_of(runtime_version(c)) == major for c in candidates):
            import cuda.pathfinder
            found = cuda.pathfinder.find_nvidia_header_directory("cudart")
            if found:
                candidates.append(found)
    except Exception:
        pass
    candidates += glob.glob(os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include"))
    seen = []
    for c in candidates:
        rt = runtime_version(c)
        seen.append(f"{c} ({rt or 'no cuda_runtime_api.h'})")
        if _major_of(rt) == major:
            return c, rt
    fix = (f"install the matching runtime wheel (pip install 'tilepy[cu{major}]')" if major in (12, 13)
           else "tilepy uses the CUDA 12 or 13 wheels (extras cu12, cu13)")
    raise TileCompileError(f"cannot find CUDA {major} headers (cuda_fp16.h) for NVRTC {major}: "
                           f"{fix}; looked at: {'; '.join(seen) or 'nothing'}")


# ----------------------------------------------------------------------------- host compiler
COMPILERS = "compilers.json"


def compiler_version(cxx: str) -> str:
    """`cxx --version`'s first line, remembered in the cache dir by the compiler binary's
    identity (resolved path, size, mtime), so a process with a cached library runs no compiler."""
    import subprocess
    real = os.path.realpath(cxx)
    ident = f"{real}:{_stat(real)}"
    try:
        memo = json.loads(cache.read_memo(COMPILERS) or b"{}")
    except ValueError:
        memo = {}
    if not isinstance(memo, dict):
        memo = {}
    if isinstance(memo.get(ident), str):
        return memo[ident]
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
        version = out.split("\n")[0]
    except OSError:
        return cxx
    memo[ident] = version
    cache.write_memo(COMPILERS, json.dumps(memo).encode())
    return version
