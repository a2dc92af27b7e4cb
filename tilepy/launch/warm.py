"""The C-level warm path of `tilepy.launch` (warm.cpp): a CPython extension that does the
per-call work of a warm launch (read the arguments, key, plan lookup, overlap, pack, call).

How it is built: at first use, by the host C++ compiler the CPU backend already requires, and
cached like a kernel (kind "cpu", keyed by tilepy's version, the compiler, the Python version
and ABI, and the source). Not a setuptools ext_module: a checkout used from PYTHONPATH or an
editable install (how the tests and most development run) would then launch without it, a
wheel would be tied to one Python ABI, and `pip install` would need Python.h and a compiler
even for users who only ever launch on a GPU. Built here, every install gets it where the CPU
backend works; where it cannot be built (no compiler, no Python.h), nothing changes: the
Python path serves every call.

When: at the first launch the Python warm path serves (a process that launches each kernel
once never pays for it). From then on a call the Python path served is filed in the kernel's
C table (`adopt`), and the next such call is served here. The Python path stays the
reference: the first call, any argument the C side does not know (it returns MISS), every
error (the C side returns MISS where the Python path would raise, except a launch's own
failure, which the plan's Python check raises). `python_only()` is the seam the tests use to
force the Python path.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys

from ..errors import TileError
from ..types import dtype as D
from . import dispatch

MISS = dispatch.MISS
launch = None                  # the C warm launch once loaded (None: the Python path serves)
_state: dict = {}              # "module": the loaded extension, "why": why there is none
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm.cpp")


def module():
    """The loaded extension, built or found in the cache at the first call; None where it
    cannot be (`why()` says why) or while `python_only()` holds."""
    global launch
    if "module" not in _state:
        _state["module"] = None
        try:
            m = _load()
            _configure(m)
        except (TileError, OSError, ImportError, ValueError) as e:
            _state["why"] = str(e)
            return None
        _state["module"] = m
        if not _state.get("off"):
            launch = m.launch
    return None if _state.get("off") else _state["module"]


def why() -> str | None:
    """Why the C path is not in use (None: it is, or nothing asked for it yet)."""
    if _state.get("off"):
        return "the Python path was asked for (warm.python_only)"
    return _state.get("why")


@contextlib.contextmanager
def python_only():
    """Serve every launch inside the block by the Python path (the tests' seam)."""
    global launch
    prev, saved = _state.get("off"), launch
    _state["off"], launch = True, None
    try:
        yield
    finally:
        _state["off"] = prev
        m = _state.get("module")
        launch = None if prev else (m.launch if m is not None else saved)


# ----------------------------------------------------------------------------- building
def _load():
    import importlib.machinery
    import importlib.util
    path, scratch = _built()
    try:
        loader = importlib.machinery.ExtensionFileLoader("tilepy.launch._warm", path)
        spec = importlib.util.spec_from_file_location("tilepy.launch._warm", path, loader=loader)
        m = importlib.util.module_from_spec(spec)
        loader.exec_module(m)
    finally:
        if scratch:
            os.unlink(path)         # loaded: the mapping outlives the file
    return m


def _built() -> tuple[str, bool]:
    """The path of the extension's shared library (the cache's entry, or a fresh build), and
    whether it is a scratch file of this process (no disk cache) to remove once loaded."""
    import sysconfig
    from ..version import __version__
    from . import cache, cpu, cpu_build
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        raise ImportError(f"Python.h is not in {include!r} (install Python's development "
                          f"headers to get the C warm launch path)")
    cxx = cpu.host_compiler()
    with open(_SOURCE) as f:
        source = f.read()
    abi = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    key = cache.key_of("warm", __version__, cpu.compiler_id(cxx), sys.version, abi, include, source)
    entry = cache.get("cpu", key, ".so")
    if entry is not None and entry.payload[:4] == b"\x7fELF":
        return entry.path, False
    with cpu_build.folder() as d:
        out = os.path.join(d, "_warm" + abi)
        proc = cpu_build.run([cxx, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-I", include,
                              _SOURCE, "-o", out], None)
        if proc.returncode != 0:
            raise ImportError(f"the host C++ compiler could not build the C warm launch path: "
                              f"{proc.stderr.strip()[-2000:]}")
        with open(out, "rb") as f:
            data = f.read()
    path = cache.put("cpu", key, data, {"kind": "warm", "name": "the C warm launch path",
                                        "compiler": cpu.compiler_id(cxx), "tilepy": __version__},
                     ".so")
    if path is not None:
        return path, False
    # No disk cache: a private file for this process, removed once loaded.
    import tempfile
    fd, path = tempfile.mkstemp(suffix=abi, prefix="tilepy-warm-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path, True


# ----------------------------------------------------------------------------- configuring
def _configure(m):
    """Give the module what it compares and reads, after checking that it reads numpy arrays and
    lays out the launch report as numpy and cpu.py do (else it is not used)."""
    import numpy as np

    from .. import settings as st
    from ..host.grid import GRID_LIMIT
    from . import cpu
    if st._ENV_DATA is None:
        raise ImportError("os.environ has no _data table (not CPython): the C path would not see "
                          "TILEPY_* changes")
    if m.REPORT_SIZE != ctypes.sizeof(cpu.Report):
        raise ImportError(f"the launch report's layout differs ({m.REPORT_SIZE} bytes in C, "
                          f"{ctypes.sizeof(cpu.Report)} in cpu.Report)")
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    for a in (base, base[1:, ::2], base.T, np.zeros(0, np.int8), base[2], base.astype(np.float64)):
        got = m.probe(a)
        if (got[:3] != (dispatch.numpy_ptr(a), a.shape, a.strides) or got[3] is not a.dtype
                or got[4] != a.flags.writeable):
            raise ImportError(f"numpy's array layout is not the one warm.cpp reads (numpy "
                              f"{np.__version__})")
    _state["config"] = dict(
        ndarray=np.ndarray, np_dtypes=tuple(D._FROM_NUMPY), scalar_types=dispatch._SCALARS,
        const_objs=tuple(D.ALL_DTYPES), env=st._ENV_DATA, k_interpret=st._INTERPRET,
        v_off=st._RAW_OFF, k_mode=st._CPU_MODE, modes=st._MODES, mode_var=cpu._mode_override,
        cpu_mode=dispatch.cpu_mode_now, report_type=cpu.Report, miss=MISS,
        main_thread=cpu._MAIN_THREAD, grid_limit=GRID_LIMIT)
    m.configure(**_state["config"])
    _state["types"] = None


def _sync(m):
    """Tell the module the array types and dtypes intake has met since (torch, cupy, ml_dtypes)."""
    from ..host.intake import _cupy_array, _torch_tensor
    seen = (_torch_tensor[0], _cupy_array[0], len(D._FROM_NUMPY))
    if seen == _state.get("types"):
        return
    _state["types"] = seen
    config = _state["config"]
    if config["np_dtypes"] != tuple(D._FROM_NUMPY):
        config["np_dtypes"] = tuple(D._FROM_NUMPY)
        m.configure(**config)
    torch = sys.modules.get("torch") if _torch_tensor[0] is not None else None
    dtypes = () if torch is None else tuple(
        v for v in vars(torch).values() if isinstance(v, torch.dtype))
    m.adopt(_torch_tensor[0], dtypes, _cupy_array[0])


# ----------------------------------------------------------------------------- plans
def adopt(kp, args, plan):
    """File `plan`, which the Python path just found for `args`, in the kernel's C table, so
    that the next such call is served by the C path."""
    m = module()
    if m is None:
        return
    _sync(m)
    native = plan.native
    if native is None:
        native = plan.native = _plan(m, plan)
    table = kp.ctable
    if table is None:
        table = kp.ctable = m.Table(kp.consts)
    m.store(table, args, native)


_KIND = {ctypes.c_bool: "K_BOOL", ctypes.c_int8: "K_I8", ctypes.c_uint8: "K_U8",
         ctypes.c_int16: "K_I16", ctypes.c_uint16: "K_U16", ctypes.c_int32: "K_I32",
         ctypes.c_uint32: "K_U32", ctypes.c_int64: "K_I64", ctypes.c_uint64: "K_U64",
         ctypes.c_float: "K_F32", ctypes.c_double: "K_F64"}


def _plan(m, plan):
    """The C plan of a dispatch plan: a CPU plan the module calls itself, or (GPU plans, CPU
    kernels that print) one whose Python stream_for and run it calls."""
    ov = plan.overlap
    overlap = None if not isinstance(ov, dispatch.Overlap) else (ov.index, ov.extents, ov.pattern)
    if plan.gpu or plan.lib.log is not None or not plan.extra or len(plan.template) > m.MAX_BLOCK:
        slots = [(m.K_NONE, 0, None) if s is None else
                 (m.K_PTR if s[1] is None else m.K_F64, 0, None) for s in plan.slots]
        return m.plan(plan, False, 0, b"", [], slots, (1, 1, 1), 0, 0, None, overlap)
    from . import cpu
    types = dict(plan.struct._fields_)
    slots = []
    for s in plan.slots:
        if s is None:
            slots.append((m.K_NONE, 0, None))
            continue
        field, conv = s
        offset = getattr(plan.struct, field).offset
        if conv is None:
            slots.append((m.K_PTR, offset, None))
        elif getattr(conv, "packed_as_bits", False):
            slots.append((m.K_CONV16, offset, conv))
        else:
            slots.append((getattr(m, _KIND[types[field]]), offset, None))
    offsets = [getattr(plan.struct, f).offset for f in plan.fields]
    bx, by, bz, smem = plan.extra
    return m.plan(plan, True, ctypes.cast(plan.fn, ctypes.c_void_p).value or 0, plan.template,
                  offsets, slots, (bx, by, bz), smem.value, cpu.POOL.get("run") or 0, plan.mode,
                  overlap)
