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
_TORCH_SOURCE = os.path.join(os.path.dirname(_SOURCE), "warm_torch.cpp")


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


def torch_why() -> str | None:
    """Why the C path reads torch tensors through their attributes rather than with the torch
    reader (None: it uses the reader, or has not met torch yet)."""
    return _state.get("torch_why")


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
    import sysconfig
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        raise ImportError(f"Python.h is not in {include!r} (install Python's development "
                          f"headers to get the C warm launch path)")
    abi = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    from . import cpu

    def load(path):
        loader = importlib.machinery.ExtensionFileLoader("tilepy.launch._warm", path)
        spec = importlib.util.spec_from_file_location("tilepy.launch._warm", path, loader=loader)
        m = importlib.util.module_from_spec(spec)
        loader.exec_module(m)
        return m
    return cpu.load_helper(cpu.helper_library("warm", "the C warm launch path", _SOURCE,
                                              ["-I", include], (sys.version, abi, include)), load)


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
    if torch is not None:
        _use_torch_reader(m, torch, dtypes)


# ----------------------------------------------------------------------------- torch reader
def _use_torch_reader(m, torch, dtypes):
    """Read torch tensors in C with warm_torch.cpp (built against the installed torch's
    headers), after checking that it reads what the tensors' attributes say; where it cannot
    be built or disagrees, the C path reads the attributes (`torch_why()` says why)."""
    reader = _state.get("torch_reader")
    if reader is None:
        try:
            reader = _torch_reader(torch)
        except (TileError, OSError, ImportError, ValueError, AttributeError) as e:
            reader, _state["torch_why"] = False, str(e)
        _state["torch_reader"] = reader
    if not reader:
        return
    _lib, facts, mode, size = reader
    offset = object.__basicsize__              # THPVariable: PyObject_HEAD, then at::Tensor
    probe = [torch.zeros(3), torch.zeros(4, 2).T[1:]]
    if any(ctypes.c_void_p.from_address(id(t) + offset).value != getattr(t, "_cdata", None)
           for t in probe):                    # (before the reader ever reads one)
        _state["torch_reader"] = False
        _state["torch_why"] = (f"torch {torch.__version__} does not hold a tensor's TensorImpl "
                               f"where warm_torch.cpp reads it")
        return
    try:
        m.torch_reader(facts, mode, size, offset, ())
    except ValueError as e:                    # (a reader of another TorchFacts layout)
        _state["torch_reader"], _state["torch_why"] = False, str(e)
        return
    import warnings
    codes = []
    for code, dt in enumerate(dtypes):
        with warnings.catch_warnings():       # (torch's about experimental, deprecated dtypes)
            warnings.simplefilter("ignore")
            try:
                got = m.probe_torch(torch.empty(0, dtype=dt))
            except (RuntimeError, TypeError):     # dtypes without dense tensors (quantized...)
                continue
        if got is not None and dtypes.index(dt) == code:
            codes.append((got[3], code))
    m.torch_reader(facts, mode, size, offset, codes)
    wrong = _torch_reader_disagrees(m, torch, dict((c, dtypes[c]) for _, c in codes),
                                    dict(codes), offset)
    if wrong:
        m.torch_reader(0, 0, 0, 0, ())
        _state["torch_reader"], _state["torch_why"] = False, wrong


def _torch_reader_disagrees(m, torch, by_code, code_of, offset) -> str | None:
    """What the torch reader reads wrong of live tensors (None: nothing)."""
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    cases = [base, base[1:, ::2], base.T, base[2], torch.zeros(0, dtype=torch.int8),
             base.to(torch.float64), base.to(torch.float16)[::3], torch._neg_view(base),
             torch.zeros((), dtype=torch.int64), base.to(torch.bool).unsqueeze(0)]
    for t in cases:
        if ctypes.c_void_p.from_address(id(t) + offset).value != t._cdata:
            return (f"torch {torch.__version__} does not hold a tensor's TensorImpl where "
                    f"warm_torch.cpp reads it")
        got = m.probe_torch(t)
        want = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), 1, -1, t.is_neg())
        if (got is None or (got[0], got[1], got[2], *got[4:]) != want
                or by_code.get(code_of.get(got[3])) is not t.dtype):
            return (f"warm_torch.cpp reads {got} of a {t.dtype} tensor of shape "
                    f"{tuple(t.shape)} and strides {t.stride()} (torch {torch.__version__})")
    if m.probe_torch(torch.zeros(2, 2).to_sparse()) is not None:
        return "warm_torch.cpp reads sparse tensors as dense ones"
    return None


def _torch_reader(torch):
    """(library, address of tp_torch_facts, of tp_torch_function_mode, TorchFacts' size), the
    torch reader built (or found in the cache) against the installed torch's headers."""
    from . import cpu
    root = os.path.dirname(torch.__file__)
    so = cpu.load_helper(cpu.helper_library(*_torch_build(
        root, torch.__version__, lambda: int(bool(torch._C._GLIBCXX_USE_CXX11_ABI)))))
    size = so.tp_torch_facts_size()
    addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value    # noqa: E731
    return so, addr(so.tp_torch_facts), addr(so.tp_torch_function_mode), size


def _torch_build(root: str, version: str, abi_of) -> tuple:
    """cpu.helper_library's arguments for the torch reader of the torch installed at `root`
    (its headers checked first: ImportError saying why it cannot be built), `abi_of()` its
    C++ ABI (asked after the checks)."""
    import re
    include, lib = os.path.join(root, "include"), os.path.join(root, "lib")
    var_h = os.path.join(include, "torch", "csrc", "autograd", "python_variable.h")
    for h in (os.path.join(include, "c10", "core", "TensorImpl.h"),
              os.path.join(include, "ATen", "PythonTorchFunctionTLS.h"), var_h):
        if not os.path.exists(h):
            raise ImportError(f"torch {version} ships no {os.path.relpath(h, root)} "
                              f"(its C++ headers), so tensors are read through their attributes")
    with open(var_h) as f:
        if not re.search(r"struct THPVariable\s*\{\s*PyObject_HEAD\s*(//[^\n]*\n\s*)*"
                         r"at::Tensor cdata;", f.read()):
            raise ImportError(f"torch {version}'s THPVariable does not begin with "
                              f"`at::Tensor cdata` (warm_torch.cpp reads that layout)")
    abi = abi_of()
    return ("warm", "the C warm path's torch reader", _TORCH_SOURCE,
            ["-std=c++17", "-w", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-I", include],
            (version, include, abi), ("-L", lib, "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}"))


def torch_reader_status() -> tuple[str, str | None]:
    """(what the C warm path does with torch tensors, the problem if it reads them through their
    attributes), for `python -m tilepy doctor`: without importing torch or building the reader
    (seconds), so from this process's own launches, else from the headers and the cache."""
    import importlib.metadata
    import importlib.util
    reader = _state.get("torch_reader")
    if reader is not None:                     # this process met torch tensors
        return ("read in C (warm_torch.cpp)", None) if reader else \
            ("read through their attributes", torch_why())
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return "torch is not installed", None
    root, abis, torch = os.path.dirname(spec.origin), (1, 0), sys.modules.get("torch")
    if torch is not None:                      # (imported: its own facts)
        version, abis = str(torch.__version__), (int(bool(torch._C._GLIBCXX_USE_CXX11_ABI)),)
    else:
        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:     # (a checkout on sys.path)
            version = "of unknown version"
    from . import cpu
    try:
        built = any(cpu.helper_library(*_torch_build(root, version, lambda: abi), build=False)
                    for abi in abis)
    except (TileError, OSError, ImportError, ValueError) as e:
        return "read through their attributes", str(e)
    if built:
        return (f"read in C (warm_torch.cpp, built for torch {version}, in the cache; checked "
                f"against live tensors before use)"), None
    return (f"read in C once warm_torch.cpp is built for torch {version} (at the first warm "
            f"launch of torch tensors: a few CPU-seconds, once per cache)"), None


# ----------------------------------------------------------------------------- plans
def adopt(kp, args, plan):
    """File `plan`, which the Python path just found for `args`, in the kernel's C table, so
    that the next such call is served by the C path."""
    if plan.native is False:        # its calls have no key here (a tuple annotation)
        return
    m = module()
    if m is None:
        return
    _sync(m)
    native = plan.native
    if native is None:
        native = plan.native = _plan(m, plan)
    table = kp.ctable
    if table is None:
        table = kp.ctable = m.Table(tuple(int(c) if type(c) is bool else 2
                                          for c in kp.consts))   # 2: a tuple annotation
    if not all(m.record(cls, names) for cls, names in _records(args)):
        plan.native = False         # the registry of dataclasses is full: the Python path
        return
    if not m.store(table, args, native) and any(type(c) is not bool for c in kp.consts):
        plan.native = False         # (the Python path serves that parameter's calls)


def _records(args):
    """(class, field names) of each dataclass object in `args`, in tuples and fields too."""
    for a in args:
        t = type(a)
        if t is tuple:
            yield from _records(a)
            continue
        names = dispatch.record_names(t)
        if names is not None:
            yield t, names
            yield from _records([getattr(a, n) for n in names])


_KIND = {ctypes.c_bool: "K_BOOL", ctypes.c_int8: "K_I8", ctypes.c_uint8: "K_U8",
         ctypes.c_int16: "K_I16", ctypes.c_uint16: "K_U16", ctypes.c_int32: "K_I32",
         ctypes.c_uint32: "K_U32", ctypes.c_int64: "K_I64", ctypes.c_uint64: "K_U64",
         ctypes.c_float: "K_F32", ctypes.c_double: "K_F64"}


def _configure_gpu(m):
    """Give the module what GPU plans compare and call (once)."""
    if _state.get("gpu"):
        return
    from .. import settings as st
    from ..host import driver
    from . import gpu
    m.configure_gpu(driver, st._GPU_COMPILER, st._COMPILERS, st.gpu_compiler_requested,
                    gpu.stream_handle, gpu.stream_on)
    _state["gpu"] = True


def _plan(m, plan):
    """The C plan of a dispatch plan: a CPU plan the module calls itself, a GPU plan whose
    stream_for and run it does itself (GpuPlan's, but the driver's calls), or (GPU plans of
    asserting or printing, TMA or cupy kernels, CPU kernels that print) one whose Python
    stream_for and run it calls."""
    ov = plan.overlap
    overlap = None if not isinstance(ov, dispatch.Overlap) else (ov.index, ov.extents, ov.pattern)
    if (plan.gpu and not plan.sync and plan.tma is None and not plan.cupy
            and len(plan.args) <= m.MAX_GPU_ARGS and len(plan.slots) <= m.MAX_ARGS):
        _configure_gpu(m)
        slots = [(m.K_NONE, 0, None, None) if s is None else (m.K_PTR, s[0], None, None)
                 if s[1] is None else (m.K_WRAP, *s) for s in plan.slots]
        return m.gpu_plan(plan, slots, overlap, plan.drv, tuple(plan.drv.errors), plan.kernel,
                          plan.ctx, plan.dev, plan.dev.device_id, plan.compiler, plan.args,
                          plan.torch_args)
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
