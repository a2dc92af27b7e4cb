"""The CPU backend: CUDA C++ compiled by the host C++ compiler and run with ctypes.

The kernel source is the very text NVRTC compiles; tilepy/cpu_shim.h maps CUDA's keywords and
built-ins to host C++. A small host entry point, appended here, unpacks the launch parameters
(an array of pointers to argument values, like cuLaunchKernel's) and runs every block.

Two modes (TILEPY_CPU_MODE, or `with tilepy.cpu_mode(...)` for one block of code):

* ``fast``: one thread per block (the source is compiled with TP_NT=1), blocks spread over
  worker threads. Quick, but it cannot run warp-level code and cannot see races between threads.
* ``faithful``: the block's real thread count (TP_NT of the emitted source) runs as fibers with
  deterministic scheduling: ``__syncthreads`` is a real barrier, shuffles / ldmatrix / mma.sync /
  cp.async follow the PTX ISA, and a barrier that not all threads reach is reported as a deadlock
  (TileLaunchError naming the kernel), not a hang.

`compile_kernel` builds a hand-written CUDA C++ kernel the same way (tests, benchmarks).
Built libraries are cached on disk by content (source, compiler, flags, headers).
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import os
import re
import signal
import threading
from dataclasses import dataclass

import numpy as np

from ..cuda_c import INCLUDE_DIR
from ..cuda_c.targets import defines_wgmma
from ..errors import TileCompileError, TileLaunchError, TileValueError
from ..settings import CPU_MODES as MODES, MAX_CPU_WORKERS, settings
from . import cache, cpu_isa

ENTRY = "tp_cpu_launch"
MAX_DYNAMIC_SMEM = 227 * 1024

_mode_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("tilepy_cpu_mode",
                                                                             default=None)


def _check_mode(mode) -> str:
    if mode not in MODES:
        raise TileValueError(f"the CPU mode must be one of {', '.join(MODES)} (got {mode!r}; set "
                             f"TILEPY_CPU_MODE or call tilepy.cpu_mode(...) with one of them)")
    return mode


@contextlib.contextmanager
def cpu_mode(mode: str):
    """Run CPU launches inside the ``with`` block in `mode`: ``"fast"`` or ``"faithful"``.

        with tilepy.cpu_mode("faithful"):
            tilepy.launch(None, grid, kernel, args)

    It overrides TILEPY_CPU_MODE for the current thread (and asyncio task) only.
    """
    token = _mode_override.set(_check_mode(mode))
    try:
        yield
    finally:
        _mode_override.reset(token)


def current_mode() -> str:
    """The CPU mode a launch made now would use."""
    return _check_mode(_mode_override.get() or settings().cpu_mode)


# ---------------------------------------------------------------------------- compiling
def host_compiler() -> str:
    """TILEPY_CXX (validated in settings.py), else the first of g++, c++, clang++ found."""
    return _find_compiler(settings().cxx)


@functools.lru_cache(maxsize=None)
def _find_compiler(cxx: str | None) -> str:
    import shutil
    for c in ([cxx] if cxx else []) + ["g++", "c++", "clang++"]:
        path = shutil.which(c)
        if path:
            return path
    raise TileCompileError("no host C++ compiler found for the CPU backend (install g++ or set "
                           "TILEPY_CXX)")


@functools.lru_cache(maxsize=None)
def compiler_id(cxx: str) -> str:
    from .toolchain import compiler_version
    return compiler_version(cxx)


def flags(mode: str = "fast", threads: int = 1) -> list[str]:
    """The host compiler's flags; the fast mode's are for the host's ISA (cpu_isa.py)."""
    import platform
    f = ["-std=c++17", "-shared", "-fPIC", "-pthread", f"-I{INCLUDE_DIR}", "-w"]
    if mode == "fast":
        return f + ["-DTP_NT=1", *cpu_isa.fast_flags()]
    f += ["-O2", "-DTP_FAITHFUL", f"-DTP_NT={threads}"]
    if platform.machine() in ("x86_64", "AMD64"):
        f.append("-mf16c")             # hardware f16 conversions
    return f


# GCC's redundancy and dead-store elimination query the alias oracle for every memory access
# against every store before it: quadratic in a kernel's ops, which all live in one function.
# A 200-op kernel spent 36% of its g++ time walking aliases (-ftime-report: 6.1 s user; 3.2 s
# with these caps); a kernel of a few dozen ops never reaches them.
LONG_KERNEL_LINES = 1500
LONG_KERNEL_FLAGS = ["--param=sccvn-max-alias-queries-per-access=64",
                     "--param=dse-max-alias-queries-per-store=16"]
# The fast mode's -O3 on a long kernel: what -O3 adds to -O2 besides the vectorizer's cost model
# (load CSE after reload, partial PRE, predictive commoning, loop peeling and unswitching) is
# superlinear in one function's size and buys straight-line code little: a 3,400-line kernel
# (test_api_numpy's integer suite) took 12.0 s of g++ at -O3, 6.1 s with these, the same
# vectorized loops (floating-point results are unchanged: no flag here reassociates).
LONG_FAST_FLAGS = ["-O2", "-ftree-vectorize", "-fvect-cost-model=dynamic"]


def long_kernel_flags(source: str, compiler: str, mode: str = "faithful") -> list[str]:
    """GCC's alias-query caps for a long kernel (LONG_KERNEL_FLAGS), and in the fast mode -O2
    with -O3's vectorizer (LONG_FAST_FLAGS, after -O3: the last -O wins); none for other
    kernels or other compilers."""
    if "clang" in compiler.lower() or source.count("\n") < LONG_KERNEL_LINES:
        return []
    return LONG_KERNEL_FLAGS + (LONG_FAST_FLAGS if mode == "fast" else [])


def isa_flags() -> list[str]:
    """The ISA flags of fast-mode libraries on this host."""
    return cpu_isa.isa_flags()


_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\s+([^;{}()\[\]]*(?:\([^)]*\)[^;{}()\[\]]*)*?)"
                            r"\b([A-Za-z_]\w*)\s*\[\s*\]\s*;")
_ALIGN = re.compile(r"__align__\s*\(\s*\d+\s*\)|alignas\s*\(\s*\d+\s*\)")


def rewrite_dynamic_smem(source: str) -> str:
    """`extern __shared__ T name[];` -> a per-thread pointer to the worker's dynamic shared memory
    (one line, so #line numbering is kept)."""
    def repl(m):
        ty = _ALIGN.sub("", m.group(1)).strip()
        return f"thread_local {ty}* const {m.group(2)} = ({ty}*)tp::cpu::dynamic_smem();"
    return _EXTERN_SHARED.sub(repl, source)


def host_entry(name: str, param_types: list[str], names: list[str] | None = None) -> str:
    """C++ that runs kernel `name` over a grid: params[i] points at the i-th argument; what the
    launch found (assertions, error, signal) goes into `report` (Report below). With the
    parameter `names` of an emitted kernel, element-space accesses are checked against the
    arrays' extents (cpu_shim.h); hand-written kernels run unchecked."""
    vals = [f"tp::cpu::param_copy<tp::TensorMap>(params[{i}])" if is_tensor_map(t) else
            f"*({_plain(t)}*)params[{i}]" for i, t in enumerate(param_types)]
    return (f'\nextern "C" int {ENTRY}(void** params, unsigned gx, unsigned gy, unsigned gz, '
            f"unsigned bx, unsigned by, unsigned bz, unsigned long long smem, int workers, "
            f"tp::cpu::Report* report) {{\n{_extents(param_types, names, vals)}"
            f'  return tp::cpu::launch("{shown(name)}", dim3(gx, gy, gz), dim3(bx, by, bz), '
            f"(size_t)smem, workers, report, [&] {{ {name}({', '.join(vals)}); }});\n}}\n")


def _extents(param_types: list[str], names: list[str] | None, vals: list[str]) -> str:
    """C++ setting report->extents to the address ranges of the array parameters (a pointer
    followed by its `<name>_shape_<d>` and, where not unit stride, `<name>_stride_<d>`)."""
    if names is None:
        return "  report->nextents = -1;\n"
    index = {n: i for i, n in enumerate(names)}
    items = []
    for t, n, p in zip(param_types, names, vals):
        if "*" not in _plain(t) and "ptr<" not in t:
            continue
        shape, strides = [], []
        while f"{n}_shape_{len(shape)}" in index:
            st = index.get(f"{n}_stride_{len(shape)}")
            strides.append("1" if st is None else vals[st])
            shape.append(vals[index[f"{n}_shape_{len(shape)}"]])
        items.append(f"tp::cpu::extent({p}, sizeof(*{p}), {{{', '.join(shape)}}}, "
                     f"{{{', '.join(strides)}}}, \"{n}\")")
    listed = "".join(i + ", " for i in items)
    return (f"  const tp::cpu::Extent tp_extents[] = {{{listed}{{0, 0, 0, \"\"}}}};\n"
            f"  report->extents = tp_extents;\n  report->nextents = {len(items)};\n")


class Report(ctypes.Structure):
    """One launch's report (tp::cpu::Report in cpu_shim.h), written before its lock is released.
    `pool`: the process's worker pool (POOL), so that every library's launches share one."""
    _fields_ = [("watch_signals", ctypes.c_int), ("signal", ctypes.c_int),
                ("asserts", ctypes.c_int), ("nextents", ctypes.c_int), ("extents", ctypes.c_void_p),
                ("pool", ctypes.c_void_p), ("error_line", ctypes.c_int),
                ("error_file", ctypes.c_char * 1024), ("error", ctypes.c_char * 1024)]

    def __init__(self):
        super().__init__()
        self.pool = POOL.get("run")


# The worker pool's entry (cpu_pool.h), once the process has a pool: the pool library's (see
# `ensure_pool`), or that of a library saved by tilepy.aot (each carries one). A dict: setdefault
# is atomic across threads. No pool (never set): every block runs on the launching thread.
POOL: dict[str, int] = {}
_POOL_LOCK = threading.Lock()


def ensure_pool(lib: ctypes.CDLL | None = None):
    """Give the process its worker pool before a launch of `lib`: `lib`'s own (a saved library's)
    or the pool library (built once per host compiler and cached like a kernel). ctypes never
    unloads a library, so the entry stays valid."""
    if "run" in POOL:
        return
    own = getattr(lib, "tp_cpu_pool_run", None)
    if own is not None:
        POOL.setdefault("run", ctypes.cast(own, ctypes.c_void_p).value)
        return
    with _POOL_LOCK:
        if "run" not in POOL:
            try:
                pool = load_helper(pool_library())
            except OSError:
                pool = None
            if pool is None:
                raise TileCompileError("the CPU backend's worker pool library does not load")
            POOL["run"] = ctypes.cast(pool.tp_cpu_pool_run, ctypes.c_void_p).value


POOL_FLAGS = ["-pthread", "-w", "-DTP_POOL_LIBRARY", "-x", "c++"]


def pool_library() -> tuple[str, bool, bytes]:
    """The worker pool's library (cpu_pool.h compiled with TP_POOL_LIBRARY), as
    `helper_library` gives it."""
    header = os.path.join(INCLUDE_DIR, "tilepy", "cpu_pool.h")
    return helper_library("pool", "the CPU worker pool", header, POOL_FLAGS)


HELPER_FLAGS = ["-O2", "-shared", "-fPIC", "-fvisibility=hidden"]


def helper_library(kind: str, label: str, source_path: str, build_flags: list[str],
                   key_parts: tuple = (), libs: tuple = (), build: bool = True
                   ) -> tuple[str, bool, bytes] | None:
    """A library the host compiler builds from `source_path` once per compiler, flags, source and
    `key_parts` (what else it depends on), cached as a `cpu` entry of kind `kind`: the CPU
    worker pool, the C warm launch path and its torch reader. Returns its path, whether it is a
    scratch file of this process (no disk cache) to remove once loaded, and its bytes (load it
    with `load_helper`). TileCompileError
    with the compiler's message if the build fails. `build=False`: None where it is not in the
    cache (the doctor asks so, without building)."""
    from ..version import __version__
    cxx = host_compiler()
    flags_ = [*HELPER_FLAGS, *build_flags]
    key = cache.key_of(kind, __version__, compiler_id(cxx), flags_, libs, *key_parts,
                       _text(source_path))
    found = built_once(kind, label, key, ".so",
                       lambda out: [cxx, *flags_, source_path, "-o", out, *libs], build=build)
    if found is None:
        return None
    path, data, _ = found
    if path is not None:
        return path, False, data
    return _scratch(data, f"tilepy-{kind}-"), True, data    # no disk cache


def load_helper(found: tuple[str, bool, bytes], loader=ctypes.CDLL):
    """`loader(path)` of `helper_library`'s library; when its cache entry is gone by then
    (another process's eviction under a small cache cap), of the bytes it read. A scratch file is
    removed once loaded (the mapping outlives it)."""
    path, scratch, data = found
    try:
        return loader(path)
    except (OSError, ImportError):
        if scratch or os.path.exists(path):
            raise
        path, scratch = _scratch(data, "tilepy-helper-"), True
        return loader(path)
    finally:
        if scratch:
            os.unlink(path)


def built_once(kind: str, label: str, key: str, suffix: str, command, measure=None,
               build: bool = True) -> tuple[str | None, bytes, dict] | None:
    """The host compiler's output for `key`: the `cpu` cache entry (kind `kind`) when it holds an
    intact ELF file, else `command(out)` run in a private build folder (removed whatever
    happens, Ctrl-C included) and its output stored (atomically: a concurrent build of the same
    key stores the same bytes). `measure(folder)`: more metadata from the build folder. Returns
    the entry's path (None: no disk cache), the bytes and the metadata; None when it is not in
    the cache and `build` is False. TileCompileError with the compiler's message if the build
    fails."""
    from ..version import __version__
    from . import cpu_build
    entry = cache.get("cpu", key, suffix)
    if entry is not None and elf_intact(entry.payload):
        return entry.path, entry.payload, entry.meta
    if not build:
        return None
    cxx = host_compiler()
    with cpu_build.folder() as d:
        out = os.path.join(d, kind + suffix)
        proc = cpu_build.run(command(out), None)
        if proc.returncode != 0:
            raise TileCompileError(f"the host C++ compiler could not build {label}: "
                                   f"{proc.stderr.strip()[-2000:]}")
        with open(out, "rb") as f:
            data = f.read()
        meta = {"kind": kind, "name": label, "compiler": compiler_id(cxx), "tilepy": __version__,
                **(measure(d) if measure else {})}
    return cache.put("cpu", key, data, meta, suffix), data, meta


def elf_intact(data: bytes) -> bool:
    """An ELF file whose section headers (at its end, after everything else the linker and the
    loader read) are all there: not truncated, not some other file."""
    if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] not in (1, 2):
        return False
    import struct
    end = "<" if data[5] == 1 else ">"
    if data[4] == 2:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
    return shoff + shentsize * shnum <= len(data)


# ---------------------------------------------------------------------------- the support object
# The launch machinery (cpu_shim.h, cpu_fiber.h: the block loop, fibers and scheduler, the
# launch lock, the error reports) does not depend on the kernel: it is compiled once per
# compiler and flags into a relocatable object (cpu_support.cpp with -DTP_SPLIT
# -DTP_SUPPORT_TU), cached like the worker pool (kind `support`), and every kernel library of
# those flags links it, its own translation unit built with -DTP_SPLIT (declaring the
# machinery). An object, not a library: each kernel library has its own launch state (lock,
# error, extents), as when it is built whole. Without a disk cache, or when the compiler cannot
# build the object, libraries are built whole: the same source, the same behavior.
SUPPORT_SOURCE = os.path.join(INCLUDE_DIR, "tilepy", "cpu_support.cpp")
SUPPORT_FILE = "tilepy-support.o"        # its copy in a kernel's build folder


@dataclass(frozen=True)
class Support:
    data: bytes                 # the object
    frames: int                 # the bytes of its frames (cpu_build.frames)


_SUPPORT: dict[str, Support | None] = {}      # key -> the object (None: it cannot be built)
_SUPPORT_LOCK = threading.Lock()
support_builds = 0                            # support objects this process compiled (tests)


# What an emitted kernel defines before including the runtime; the machinery reads none of them.
# A source that defines anything else first (TP_FIBER_UCONTEXT: another fiber switch) may change
# the machinery: its library is built whole.
KERNEL_MACROS = ("TP_NT", "TP_WGMMA", "TP_SMEM_KIB", "TP_MIN_BLOCKS")
_HEAD_MACRO = re.compile(r"^[ \t]*#[ \t]*(?:define|undef)[ \t]+(\w+)", re.M)


def splittable(source: str) -> bool:
    """May `source` link the support object: does it define only KERNEL_MACROS before it first
    includes a tilepy header?"""
    head = source[:max(0, source.find('#include "tilepy/'))]
    return all(m in KERNEL_MACROS for m in _HEAD_MACRO.findall(head))


def _object_flags(fl: list[str]) -> list[str]:
    """A kernel library's compile flags less the linking ones (-shared, -l...)."""
    return [f for f in fl if f != "-shared" and not f.startswith("-l")]


def support_key(cxx: str, base: list[str]) -> str:
    """The support object's cache key: compiler, flags, headers."""
    return _support_key(cxx, tuple(base))


@functools.lru_cache(maxsize=None)
def _support_key(cxx: str, base: tuple[str, ...]) -> str:
    from ..version import __version__
    return cache.key_of("support", __version__, compiler_id(cxx), _object_flags(list(base)),
                        _headers(), _text(SUPPORT_SOURCE))


def support_object(cxx: str, base: list[str]) -> Support | None:
    """The support object of kernel libraries built with flags `base` (`flags(mode, threads)`),
    from this process's memory, the cache, or the compiler; None where libraries are built
    whole (no disk cache and none in memory, or the compiler refused)."""
    key = support_key(cxx, base)
    found = _SUPPORT.get(key, False)
    if found is not False:
        return found
    if cache.root(create=True) is None:         # no disk cache: a process compiling a kernel or
        return None                             # two would only pay for the object
    with _SUPPORT_LOCK:
        if key not in _SUPPORT:
            _SUPPORT[key] = _build_support(cxx, base, key)
    return _SUPPORT[key]


def _build_support(cxx: str, base: list[str], key: str) -> Support | None:
    from . import cpu_build
    nt = next((f[len("-DTP_NT="):] for f in base if f.startswith("-DTP_NT=")), "1")
    label = ("the CPU launch support (" + (f"faithful mode, {nt} threads per block)"
                                           if "-DTP_FAITHFUL" in base else "fast mode)"))

    def command(out):
        global support_builds
        support_builds += 1
        return [cxx, *_object_flags(base), "-DTP_SPLIT", "-DTP_SUPPORT_TU", "-fstack-usage", "-c",
                "-x", "c++", SUPPORT_SOURCE, "-o", out]
    try:
        _, data, meta = built_once("support", label, key, ".o", command,
                                   lambda d: {"frames": cpu_build.frames(d)})
    except TileCompileError:
        return None                             # this compiler cannot: libraries are built whole
    return Support(data, int(meta.get("frames", 0)))


def _forget_support(cxx: str, base: list[str]):
    """A kernel library did not link with the support object: build whole from now on."""
    from . import cache_fs
    key = support_key(cxx, base)
    _SUPPORT[key] = None
    path = cache.path_for("cpu", key, ".o")
    if path is not None:
        cache_fs.unlink(path)


_MAIN_THREAD = threading.main_thread().ident


def watch_signals() -> bool:
    """Should a launch from this thread stop at Ctrl-C? Yes on the main thread (other threads
    never see signals in Python); the runtime leaves an ignored SIGINT alone (cpu_shim.h)."""
    return threading.get_ident() == _MAIN_THREAD


def new_report() -> Report:
    r = Report()
    r.watch_signals = watch_signals()
    return r


def _plain(ctype: str) -> str:
    return re.sub(r"\b__restrict__\b|\b__restrict\b", "", ctype).strip()


@dataclass
class CpuLibrary:
    """One kernel built for the CPU in one mode; `threads` per block (1 in fast mode)."""
    lib: ctypes.CDLL
    name: str
    mode: str
    threads: int
    log: object = None          # print_log.HostLog of a kernel that prints
    stack: int = 0              # bytes of stack a block needs (cpu_build.frames_size)


_LOADED: dict[str, CpuLibrary] = {}


def build_source(source: str, name: str, param_types: list[str], mode: str, threads: int,
                 names: list[str] | None = None, own_pool: bool = False) -> CpuLibrary:
    """Compile (or find in the cache) and load `source` with a host entry for kernel `name`
    (with parameter `names`: element-space accesses checked, see host_entry). `own_pool`: the
    library carries the worker pool (cpu_pool.h), for a library saved to run elsewhere."""
    _check_mode(mode)
    threads = 1 if mode == "fast" else threads
    full = rewrite_dynamic_smem(source) + host_entry(name, param_types, names)
    cxx = host_compiler()
    base = flags(mode, threads)
    fl = base + long_kernel_flags(full, compiler_id(cxx), mode)
    if own_pool:
        fl.append("-DTP_POOL_LIBRARY")
    from ..cuda_c.source_key import location_free
    from ..version import __version__
    key = cache.key_of("cpu", __version__, compiler_id(cxx), fl, _headers(), location_free(full))
    hit = _LOADED.get(key)
    if hit is not None:
        return hit
    lib = None
    entry = cache.get("cpu", key, ".so")
    if entry is not None and entry.payload[:4] == b"\x7fELF":
        lib = _load(entry.path) or _load_bytes(entry.payload)   # evicted since: the bytes we read
        stack = int(entry.meta.get("stack", 0))
    if lib is None:
        data, stack = _compile(cxx, fl, full, name, base)
        path = cache.put("cpu", key, data, {"kind": "cpu", "name": shown(name), "mode": mode,
                                            "compiler": compiler_id(cxx), "tilepy": __version__,
                                            "stack": stack}, ".so")
        # Another process may evict the entry before it is loaded: then load the bytes in hand.
        lib = (_load(path) if path else None) or _load_bytes(data)
        if lib is None:
            raise TileCompileError(f"the CPU library of kernel '{shown(name)}' does not load")
    out = library(lib, name, mode, threads, stack)
    _LOADED[key] = out
    return out


def library(lib: ctypes.CDLL, name: str, mode: str, threads: int, stack: int = 0) -> CpuLibrary:
    """A loaded kernel library with its entry point's signature declared; `stack`: the bytes
    of stack its blocks need (cpu_stack.h; 0: a thread's own stack is enough)."""
    fn = getattr(lib, ENTRY)
    try:
        lib.tp_cpu_stack(ctypes.c_size_t(stack))
    except AttributeError:          # a library saved (tilepy.aot) before stacks were measured
        pass
    ensure_pool(lib)
    fn.restype = ctypes.c_int
    fn.argtypes = ([ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_uint] * 6 +
                   [ctypes.c_ulonglong, ctypes.c_int, ctypes.POINTER(Report)])
    from .print_log import HostLog
    return CpuLibrary(lib, shown(name), mode, threads, HostLog.of(lib), stack)


def raw_entry(lib: CpuLibrary):
    """The library's entry point without argtypes, for the per-call fast path (dispatch.py
    CpuPlan): ctypes' per-argument conversions cost more than the launch. The caller passes
    what the C signature needs by itself: the grid, block and worker counts as Python ints (all
    below 2^31), the shared-memory size as a c_ulonglong, the parameter array and the Report by
    pointer."""
    fn = lib.lib[ENTRY]                 # a new function object: `library`'s keeps its argtypes
    fn.restype = ctypes.c_int
    return fn


def build(emitted, source: str, mode: str | None = None, checked: bool = True,
          own_pool: bool = False) -> CpuLibrary:
    """The CPU library of one emitted kernel, in `mode` (default: the current CPU mode).
    `checked=False`: element-space accesses are not checked against the arrays' extents (a
    module built with tilepy.ir passes bare pointers: no extents are known for them).
    `own_pool`: see build_source."""
    return build_source(source, emitted.name, [t for t, _ in emitted.params],
                        mode or current_mode(), emitted.nt,
                        [n for _, n in emitted.params] if checked else None, own_pool)


def shown(symbol: str) -> str:
    """The kernel name errors show for an emitted kernel's `symbol` (cuda_c/names.py)."""
    from ..cuda_c.names import kernel_name
    return kernel_name(symbol)


@functools.lru_cache(maxsize=None)
def _headers() -> tuple[str, ...]:
    """Every tilepy header (the shim and the runtime include each other's neighbours)."""
    d = os.path.join(INCLUDE_DIR, "tilepy")
    return cache.KeyTexts(f"{h}\n" + _text(os.path.join(d, h)) for h in sorted(os.listdir(d))
                          if h.endswith(".h"))


def _text(path: str) -> str:
    with open(path) as f:
        return f.read()


def _load(path: str) -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


def _scratch(data: bytes, prefix: str) -> str:
    """A private scratch file holding a library's bytes (the caller removes it once loaded)."""
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".so", prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:             # a full disk, Ctrl-C: no file left behind
        os.unlink(path)
        raise
    return path


def _load_bytes(data: bytes) -> ctypes.CDLL | None:
    """Load a library from memory: a private scratch file, deleted once loaded (the mapping
    outlives it)."""
    path = _scratch(data, "tilepy-")
    try:
        return _load(path)
    finally:
        os.unlink(path)


def _compile(cxx: str, fl: list[str], source: str, name: str,
             base: list[str] | None = None) -> tuple[bytes, int]:
    """The library's bytes and the stack its blocks need (cpu_build.frames_size). With `base`
    (the flags(mode, threads) that `fl` extends) it links the support object of those flags
    where there is one and the source may (see support_object, splittable), else it is built
    whole."""
    from . import cpu_build, cpu_pch
    support = support_object(cxx, base) if base is not None and splittable(source) else None
    with cpu_build.folder() as d:
        src = os.path.join(d, f"{name}.cpp")
        out_name = f"{name}.so"         # run in `d`: gold names the library's base version so
        out = os.path.join(d, out_name)  # (the same bytes whatever the build folder is)
        with open(src, "w") as f:
            f.write(source)
        if support is not None:
            with open(os.path.join(d, SUPPORT_FILE), "wb") as f:
                f.write(support.data)

        def attempt(split: bool):
            libs = [f for f in fl if f.startswith("-l")]          # after the source that needs them
            opts = [f for f in fl if not f.startswith("-l")] + (["-DTP_SPLIT"] if split else [])
            objs = [os.path.join(d, SUPPORT_FILE)] if split else []
            ident = compiler_id(cxx)
            pch = cpu_pch.include_flags(cxx, ident, opts + libs, _headers(), INCLUDE_DIR, d,
                                        source)
            link = cpu_build.link_flags(cxx, cpu_pch.supported(ident) or "clang" in ident.lower())
            # not bounded by tilepy.compiler_timeout: that bounds the GPU compilers (launch/timeout.py)
            proc = cpu_build.run([cxx, *pch, *opts, *link, "-fstack-usage", src, *objs, "-o",
                                  out_name, *libs], None, d)
            linking = bool(link) and cpu_build.link_failed(proc.stderr)
            if proc.returncode != 0 and (pch or linking and SUPPORT_FILE not in proc.stderr):
                cpu_build.remove_reports(d)          # the answer is the plain compile
                proc = cpu_build.run([cxx, *opts, "-fstack-usage", src, *objs, "-o", out_name,
                                      *libs], None, d)
                if proc.returncode == 0:
                    if pch:
                        cpu_pch.failed(pch)
                    if linking:
                        cpu_build.without_gold(cxx)
            return proc
        proc = attempt(support is not None)
        if proc.returncode != 0 and support is not None and SUPPORT_FILE in proc.stderr:
            _forget_support(cxx, base)             # it does not link: whole, here and from now on
            support = None
            cpu_build.remove_reports(d)
            proc = attempt(False)
        if proc.returncode != 0:
            from .diagnostics import compile_error
            raise compile_error(f"the host C++ compiler could not build kernel "
                                f"'{shown(name)}' for the CPU backend", proc.stderr)
        try:
            with open(out, "rb") as f:
                return f.read(), cpu_build.frames_size(d, support.frames if support else 0)
        except OSError:
            raise TileCompileError(f"the host C++ compiler {cxx} exited without error but wrote no "
                                   f"library for kernel '{shown(name)}' (is TILEPY_CXX a C++ "
                                   f"compiler?)"
                                   f"{': ' + proc.stderr.strip() if proc.stderr.strip() else ''}"
                                   ) from None


# ---------------------------------------------------------------------------- launching
def run(lib: CpuLibrary, grid: tuple[int, int, int], values: list, workers: int | None = None,
        block: tuple[int, int, int] | None = None, smem: int = 0):
    """Launch on the CPU. `values` are ctypes scalars, one per kernel parameter; `block` defaults
    to the library's threads per block; `smem` is the dynamic shared memory in bytes."""
    bx, by, bz = block or (lib.threads, 1, 1)
    if lib.mode == "fast":
        bx, by, bz = 1, 1, 1
    if not 0 <= smem <= MAX_DYNAMIC_SMEM:
        raise TileValueError(f"dynamic shared memory of {smem} bytes is out of range [0, "
                             f"{MAX_DYNAMIC_SMEM}]")
    ptrs = (ctypes.c_void_p * max(1, len(values)))(
        *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    report = new_report()
    nworkers = clamp_workers(workers or settings().cpu_workers)

    def call():
        return getattr(lib.lib, ENTRY)(ptrs, grid[0], grid[1], grid[2], bx, by, bz, smem,
                                       nworkers, report)
    rc = call() if lib.log is None else lib.log.run(call, lib.name)
    check_launch(lib, rc, report)


def clamp_workers(n: int) -> int:
    """A worker count the CPU backend can start: 1 to MAX_CPU_WORKERS (with a warning past it)."""
    if n > MAX_CPU_WORKERS:
        from ..errors import warn_user
        warn_user(f"{n} CPU workers is more threads than useful; using {MAX_CPU_WORKERS}")
        return MAX_CPU_WORKERS
    return max(1, int(n))


def check_launch(lib: CpuLibrary, rc: int, report: Report):
    """After a launch: a signal that stopped it (its Python handler runs now; KeyboardInterrupt
    for Ctrl-C), the entry point's error, failed tile assertions (messages are on stderr)."""
    if report.signal:
        signal.raise_signal(report.signal)
        raise TileLaunchError(f"kernel {lib.name!r} was stopped by signal {report.signal} before "
                              f"it finished")
    if rc != 0:
        msg = report.error.decode(errors="replace")
        raise TileLaunchError(f"the CPU launch ({lib.mode} mode) failed: "
                              f"{msg or f'kernel {lib.name!r}: code {rc}'}", _where(report))
    if report.asserts:
        raise TileLaunchError(f"{report.asserts} tile assertion(s) failed in kernel {lib.name!r} "
                              f"(the messages are on stderr)")


def _where(report: Report):
    """The user's line a launch error happened at, when the runtime knows it."""
    file = report.error_file.decode(errors="replace")
    if not file or report.error_line <= 0:
        return None
    import linecache

    from ..errors import Loc
    text = linecache.getline(file, report.error_line) or None
    col = len(text) - len(text.lstrip()) if text else 0
    return Loc(file, report.error_line, col, source_line=text)


# ---------------------------------------------------------------------------- hand-written kernels
_SCALARS = {
    "bool": ctypes.c_bool, "char": ctypes.c_char, "signed char": ctypes.c_int8, "int8_t": ctypes.c_int8,
    "unsigned char": ctypes.c_uint8, "uint8_t": ctypes.c_uint8, "short": ctypes.c_int16,
    "int16_t": ctypes.c_int16, "unsigned short": ctypes.c_uint16, "uint16_t": ctypes.c_uint16,
    "int": ctypes.c_int32, "int32_t": ctypes.c_int32, "unsigned": ctypes.c_uint32,
    "unsigned int": ctypes.c_uint32, "uint32_t": ctypes.c_uint32, "long": ctypes.c_long,
    "unsigned long": ctypes.c_ulong, "long long": ctypes.c_int64, "int64_t": ctypes.c_int64,
    "unsigned long long": ctypes.c_uint64, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t,
    "float": ctypes.c_float, "double": ctypes.c_double,
}


def kernel_params(source: str, name: str) -> list[str]:
    """The C++ parameter types of `__global__` kernel `name` in `source`."""
    m = re.search(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?" + re.escape(name) +
                  r"\s*\(([^)]*)\)", source)
    if m is None:
        raise TileValueError(f"no `__global__ void {name}(...)` in the kernel source")
    params = [p.strip() for p in m.group(1).split(",") if p.strip() and p.strip() != "void"]
    types = [re.sub(r"\s*\b[A-Za-z_]\w*$", "", p) for p in params]
    # the sm_90a class's maps, where the build defines TP_WGMMA itself (not the source's choice
    # by the CUDA arch, cuda_c/targets.py WGMMA_MACRO, false on the CPU)
    if not defines_wgmma(source):
        types = [t for t in types if not is_tensor_map(t)]
    return types


def is_tensor_map(ctype: str) -> bool:
    """A TMA tensor-map parameter (tp::TensorMap, 128 bytes; only the sm_90a class has them,
    last: cuda_c/kernel.py TMA_PARAM)."""
    return "TensorMap" in ctype


class CpuKernel:
    """A hand-written CUDA C++ kernel built for the CPU: ``k(grid, *args, block=, smem=)``.

    Pointer parameters take numpy arrays (or ints holding addresses), scalar parameters Python
    numbers; `block` is the CUDA block shape (its size must be the `threads` it was built for;
    the fast mode always runs one thread per block).
    """

    def __init__(self, source: str, name: str, threads: int = 128, mode: str | None = None):
        self.params = kernel_params(source, name)
        self.mode = _check_mode(mode or current_mode())
        self.threads = threads
        self.library = build_source(source, name, self.params, self.mode, threads)

    def _value(self, ctype: str, arg):
        if is_tensor_map(ctype):        # the 128 bytes of a map (launch/tensor_map.py)
            return (ctypes.c_char * 128).from_buffer_copy(bytes(arg))
        if "*" in ctype:
            if isinstance(arg, np.ndarray):
                return ctypes.c_void_p(arg.ctypes.data)
            return ctypes.c_void_p(int(arg))
        scalar = _SCALARS.get(" ".join(_plain(ctype).replace("const", "").split()))
        if scalar is None:
            raise TileValueError(f"kernel parameter type '{ctype}' is not supported by the CPU "
                                 f"kernel helper")
        return scalar(arg)

    def __call__(self, grid, *args, block=None, smem: int = 0, workers: int | None = None):
        if len(args) != len(self.params):
            raise TileValueError(f"kernel '{self.library.name}' takes {len(self.params)} arguments "
                                 f"(got {len(args)})")
        g = tuple(grid) + (1,) * (3 - len(grid)) if isinstance(grid, tuple) else (int(grid), 1, 1)
        b = block if block is not None else (self.threads,)
        b = tuple(b) + (1,) * (3 - len(b))
        run(self.library, g, [self._value(t, a) for t, a in zip(self.params, args)], workers,
            b, smem)


def compile_kernel(source: str, name: str, threads: int = 128, mode: str | None = None) -> CpuKernel:
    """Build hand-written CUDA C++ (which includes "tilepy/runtime.h") for the CPU in `mode`
    (default: the current CPU mode) with `threads` threads per block."""
    return CpuKernel(source, name, threads, mode)
