"""The per-call fast path of `tilepy.launch`.

A launch that went through the full path (intake, specialization, compile, checks) leaves a
plan behind, filed under the *call signature* of its arguments: per array its dtype, shape,
strides, writability (numpy) or device (torch, cupy) and negation bit (torch), and pointer
alignment (mod 16); per scalar its type; per Constant its value; per dataclass object its
class and its fields' as a tuple's items. Which arrays overlap is not in
the signature (it needs the pointers): the plan checks it (`Overlap`: sorted extents, O(n log
n), and pointer tuples already checked are a set lookup). Everything a specialization or an
argument check can depend on is in the signature except the array pointers and scalar values,
so a later call with the same signature needs only: the signature (one pass over the
arguments, and a dict lookup), the scalar values, and one call.

`CpuPlan`: the C argument block (a ctypes Structure: the values a call changes first, packed by
one `struct.pack_into`, then the shapes and strides of the template; the `void*[]` pointing
into it) is taken from a per-plan pool for the duration of the call, so threads never share
one; the entry point is called without ctypes' argtypes (`cpu.raw_entry`). `GpuPlan`: the
cuda.core argument list with the pointers replaced; the stream resolved once per launch
(`stream_for`, gpu.launch_stream).
Anything else -- other array types, a new signature, a stream with CPU arrays -- takes the full
path, which validates and explains.
"""
from __future__ import annotations

import ctypes
import operator
import struct
import sys

import numpy as np

from ..errors import TileLaunchError, TileUnsupportedFeatureError
from ..host import driver as gpu_driver
from ..host.grid import GRID_LIMIT
from ..host.intake import _DATA_OFFSET, _cupy_array, _torch_tensor, is_record_class, numpy_ptr
from ..frontend.specialize import ALIGN
from ..types import DType
from ..settings import cpu_mode_requested, gpu_compiler_requested
from .cpu import Report, _mode_override, watch_signals

MAX_PLANS = 1024           # per kernel; past it the table is cleared (shapes that never repeat)
_ALIGN = ALIGN - 1   # the base address facts: its residue modulo the largest alignment class

_ndarray = np.ndarray
_OFFSET_OK = _DATA_OFFSET is not None
_from_address = ctypes.c_void_p.from_address
_SCALARS = (int, float, bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
            np.uint32, np.uint64, np.float16, np.float32, np.float64, np.bool_)
_SCALAR_SET = frozenset(_SCALARS)
_CONST_TYPES = frozenset((int, bool, str, type(None), DType))   # DType: a Constant[DType]
MISS = object()            # the C warm path (warm.py) returns it where the Python path decides


def cpu_mode_now():
    """The CPU mode a launch made now would use (plans are per mode), read the cheap way: the
    `cpu_mode()` override, else TILEPY_CPU_MODE."""
    return _mode_override.get() or cpu_mode_requested()


class KernelPlans:
    """A kernel's launch plans, by call signature (`ctable`: the C warm path's, warm.py)."""
    __slots__ = ("consts", "table", "ctable")

    def __init__(self, consts: tuple):
        self.consts = consts           # per parameter: is it a Constant? (`signature`)
        self.table: dict = {}
        self.ctable = None

    def store(self, sig, plan):
        if len(self.table) >= MAX_PLANS:
            self.table.clear()
        self.table[sig] = plan


def plans_of(kernel) -> KernelPlans:
    kp = kernel.__dict__.get("_tp_plans")
    if kp is None:
        kp = kernel.__dict__["_tp_plans"] = KernelPlans(tuple(
            _const_code(node) for node in kernel.annotations.values()))
    return kp


def _const_code(node):
    """What `signature` takes per parameter, from its annotation tree (frontend/annotations.py):
    True (a Constant) or False (a value) for a leaf, a tuple of the items' codes for
    `tuple[A, B]`, an `_Each` for `tuple[A, ...]`."""
    from ..frontend.annotations import Items, Leaf
    if isinstance(node, Leaf):
        return node.constant
    if isinstance(node, Items):
        return tuple(_const_code(n) for n in node.items)
    return _Each(_const_code(node.each))


class _Each:
    __slots__ = ("code",)

    def __init__(self, code):
        self.code = code


def _item_codes(a: tuple, c):
    """The codes of the items of tuple argument `a` of a parameter of code `c` (None where the
    annotation does not describe it: the full path explains)."""
    if type(c) is tuple:
        return c if len(c) == len(a) else None
    return (c.code if type(c) is _Each else c,) * len(a)


def signature(args, consts):
    """(signature, per-argument values for the plan) or None when the fast path does not apply.
    `consts`: per argument True (a Constant), False, or its tuple annotation; a tuple argument
    adds its items' values in order (host/params.flat's) and its items' signature as one entry.

    The signature holds every input of the specialization's facts (frontend/specialize.py
    `param_for`: the one place they are computed) that a call can change: per array its dtype,
    exact shape and strides (every divisibility fact is a function of them), the base address
    modulo the specialization's alignment class (`ALIGN`), writability (numpy) or device and
    negation bit (torch); per scalar its type; per Constant its value. Aliasing needs the
    pointers of all arrays together: the plan checks it (`Overlap`). One pass over the
    arguments, attribute reads only: no per-call loop over pairs of arrays."""
    if len(args) != len(consts):
        return None
    sig = []
    vals = []
    add, keep = sig.append, vals.append
    for a, c in zip(args, consts):
        t = type(a)
        if t is _ndarray:
            p = (_from_address(id(a) + _DATA_OFFSET).value or 0) if _OFFSET_OK else numpy_ptr(a)
            add((a.dtype, a.shape, a.strides, a.flags.writeable, p & _ALIGN))
            keep(p)
        elif t is _torch_tensor[0]:
            try:
                p = a.data_ptr()
                add((a.dtype, a.shape, a.stride(), a.device, a.is_neg(), p & _ALIGN))
            except RuntimeError:      # sparse and other strideless layouts: intake explains
                return None
            keep(p)
        elif t is _cupy_array[0]:
            p = a.data.ptr
            add(("cupy", a.dtype, a.shape, a.strides, a.device.id, p & _ALIGN))
            keep(p)
        elif t is tuple:
            codes = _item_codes(a, c)
            found = None if codes is None else signature(a, codes)
            if found is None:
                return None
            add(("tuple", found[0]))
            vals += found[1]
        elif c:
            if t in _CONST_TYPES:
                add((t, a))
            elif t is float:
                add((t, a.hex()))     # 0.0 and -0.0 are equal but not the same constant
            else:
                found = _record(a, t, c)
                if found is None:
                    return None
                add(found[0])
                vals += found[1]
                continue
            keep(None)
        elif t in _SCALAR_SET:
            add(t)
            keep(a)
        else:
            found = _record(a, t, c)
            if found is None:
                return None
            add(found[0])
            vals += found[1]
    return tuple(sig), vals


def _record(a, t, c):
    """`signature`'s entry and values of a dataclass object `a` of class `t` (its class, then
    its fields as a tuple's items, each under the parameter's code `c`), or None."""
    names = record_names(t) if type(c) is bool else None
    found = None if names is None else \
        signature(tuple([getattr(a, n) for n in names]), (c,) * len(names))
    return None if found is None else ((t, found[0]), found[1])


_RECORDS: dict = {}


def record_names(cls):
    """The field names of a user's dataclass `cls`, else None."""
    try:
        return _RECORDS[cls]
    except KeyError:
        import dataclasses
        names = tuple(f.name for f in dataclasses.fields(cls)) if is_record_class(cls) else None
        if len(_RECORDS) < 4096:
            _RECORDS[cls] = names
        return names


def grid3(grid) -> tuple[int, int, int] | None:
    """The grid as 3 ints when it is plainly valid (tuple of positive ints); None otherwise
    (the full path validates and explains)."""
    if type(grid) is tuple:
        n = len(grid)
        if n == 1:
            x = grid[0]
            if type(x) is int and 0 < x <= GRID_LIMIT:
                return x, 1, 1
        elif n == 2:
            x, y = grid
            if type(x) is int and type(y) is int and 0 < x <= GRID_LIMIT and 0 < y <= GRID_LIMIT:
                return x, y, 1
        elif n == 3:
            x, y, z = grid
            if (type(x) is int and type(y) is int and type(z) is int and 0 < x <= GRID_LIMIT
                    and 0 < y <= GRID_LIMIT and 0 < z <= GRID_LIMIT):
                return x, y, z
    elif type(grid) is int and 0 < grid <= GRID_LIMIT:
        return grid, 1, 1
    return None


# ----------------------------------------------------------------------------- scalar setters
def _int_setter(lo: int, hi: int, what: str):
    def conv(v):
        v = int(v)
        if not lo <= v <= hi:
            raise TileUnsupportedFeatureError(f"{what} = {v} does not fit the kernel's "
                                              f"{hi.bit_length() + (lo < 0)}-bit parameter")
        return v
    return conv


def _half_bits(dtype):
    def conv(v):
        return int(np.array(v, dtype=dtype).view(np.uint16))
    conv.packed_as_bits = True        # (CpuPlan applies it before packing)
    return conv


_PACK = {ctypes.c_void_p: "P", ctypes.c_bool: "?", ctypes.c_int8: "b", ctypes.c_uint8: "B",
         ctypes.c_int16: "h", ctypes.c_uint16: "H", ctypes.c_int32: "i", ctypes.c_uint32: "I",
         ctypes.c_int64: "q", ctypes.c_uint64: "Q", ctypes.c_float: "f", ctypes.c_double: "d"}


class CpuPlan:
    """One prepared CPU launch: the library entry point and a template argument block."""
    __slots__ = ("fn", "lib", "extra", "struct", "fields", "template", "slots", "pool", "workers",
                 "mode", "check", "overlap", "pick", "packer", "convs", "native")
    gpu = False

    def __init__(self, lib, fn, values: list, slots: list, workers_fn, extra: tuple = (),
                 mode=None, check=None):
        """`fn(params, gx, gy, gz, *extra, workers, report)` is the library's entry point (cpu.py)
        as `cpu.raw_entry` gives it: no argtypes, so `extra`'s shared-memory size (its last
        item) is passed as a c_ulonglong and the report by pointer;
        `values`: the packed ctypes values of one valid call (launcher.pack_args);
        `slots`: per kernel argument, (field index, converter) or None for constants;
        `mode`: the CPU mode the library was built for, compared with the current one per call
        (None: one mode only); `check(rc, report)`: what cpu.py checks after a launch (its
        Report is per call, pooled with the argument block).

        The argument block holds the values a call changes (pointers, scalars) first, in
        argument order, so that one `struct.pack_into` writes them all; the shapes and
        strides fixed by the signature follow, copied from the template."""
        self.lib, self.fn, self.mode = lib, fn, mode
        self.native = None          # its C warm path plan (warm.py), made at the first warm call
        self.extra = (*extra[:-1], ctypes.c_ulonglong(extra[-1])) if extra else ()
        self.check = check
        varying = [s for s in slots if s is not None]
        first = [i for i, _ in varying]
        order = first + [i for i in range(len(values)) if i not in set(first)]
        self.fields = [f"f{i}" for i in range(len(values))]
        self.struct = type("TpArgs", (ctypes.Structure,),
                           {"_fields_": [(f"f{i}", type(values[i])) for i in order]})
        self.template = (bytes(self.struct(**{f"f{i}": values[i].value for i in order}))
                         if values else b"")
        self.slots = [None if s is None else (self.fields[s[0]], s[1]) for s in slots]
        self.pool: list = []
        self.workers = workers_fn
        self.overlap = ANY_OVERLAP
        args = [k for k, s in enumerate(slots) if s is not None]
        self.pick = (operator.itemgetter(*args) if len(args) > 1 else
                     (lambda v, k=args[0]: (v[k],)) if args else (lambda v: ()))
        self.convs = tuple((j, conv) for j, (_, conv) in enumerate(varying)
                           if getattr(conv, "packed_as_bits", False))
        self.packer = self._packer(values, varying)

    def _packer(self, values, varying):
        """The struct that writes the varying values at their fields' offsets (None where the
        C layout and struct's native one would differ: then fields are set one by one)."""
        try:
            packer = struct.Struct("@" + "".join(_PACK[type(values[i])] for i, _ in varying))
        except KeyError:
            return None
        if not varying or packer.size > len(self.template):
            return None
        codes = packer.format[1:]
        for k, (i, _) in enumerate(varying):      # struct's native offsets are ctypes' ones
            end = struct.calcsize("@" + codes[:k + 1])
            if end - struct.calcsize(codes[k]) != getattr(self.struct, f"f{i}").offset:
                return None
        return packer

    def stream_for(self, stream, current_mode=None):
        """What `run` takes as its stream for a call with `stream` now (None: CPU launches take
        no stream), or False when this plan cannot run it (a stream, another CPU mode)."""
        if stream is None and (self.mode is None or self.mode == current_mode()):
            return None
        return False

    def _new_block(self):
        s = self.struct.from_buffer_copy(self.template) if self.template else self.struct()
        base = ctypes.addressof(s)
        n = max(1, len(self.fields))
        ptrs = (ctypes.c_void_p * n)(*[base + getattr(self.struct, f).offset for f in self.fields])
        report = Report()
        return s, ptrs, report, ctypes.pointer(report)

    def _fill(self, s, vals):
        """Write this call's pointers and scalars into the argument block `s`."""
        if self.packer is not None:
            v = self.pick(vals)
            if self.convs:
                v = list(v)
                for j, conv in self.convs:
                    v[j] = conv(v[j])
            try:
                return self.packer.pack_into(s, 0, *v)
            except (struct.error, OverflowError, TypeError):
                pass            # out of range: the converters say so (or round as C does)
        for slot, v in zip(self.slots, vals):
            if slot is not None:
                field, conv = slot
                setattr(s, field, v if conv is None else conv(v))

    def run(self, g, vals, stream=None):
        pool = self.pool
        try:
            block = pool.pop()
        except IndexError:
            block = self._new_block()
        try:
            self._fill(block[0], vals)
            gx, gy, gz = g
            report = block[2]
            report.watch_signals = watch_signals()
            workers = 1 if gx * gy * gz == 1 else self.workers()
            log = self.lib.log
            if log is None:
                rc = self.fn(block[1], gx, gy, gz, *self.extra, workers, block[3])
            else:
                rc = log.run(lambda: self.fn(block[1], gx, gy, gz, *self.extra, workers, block[3]),
                             self.lib.name)
            self.check(rc, report)
        finally:
            pool.append(block)


_GPU: list = []


def _gpu():
    """launch/gpu.py, imported at the first GPU plan's call (an import statement per call costs
    about a microsecond; a CPU-only process never imports it)."""
    if not _GPU:
        from . import gpu
        _GPU.append(gpu)
    return _GPU[0]


class GpuPlan:
    """One prepared GPU launch: the loaded cuda.core kernel and a template argument list."""
    __slots__ = ("kernel", "ctx", "dev", "drv", "block", "args", "slots", "configs", "torch_args",
                 "cupy", "sync", "name", "overlap", "smem", "compiler", "log", "native", "tma")
    gpu = True

    def __init__(self, kernel, ctx, block, values: list, slots: list, infos, sync=False,
                 name="kernel", smem=0, compiler=None):
        """`ctx`: gpu.DeviceContext of the device; `sync`: synchronize after each launch and
        check (kernels with device asserts or prints, gpu.py); `smem`: the kernel's dynamic
        shared memory in bytes (gpu.allow_dynamic_smem let the kernel take it); `compiler`: the
        GPU compiler TILEPY_GPU_COMPILER chose for it (None: the kernel's option did)."""
        self.smem, self.compiler = smem, compiler
        from .gpu import NP_SCALAR, gpu_arg
        self.kernel, self.ctx, self.dev, self.drv, self.block = kernel, ctx, ctx.dev, ctx.drv, block
        self.args = [gpu_arg(v) for v in values]
        self.slots = [None if s is None else
                      (s[0], s[1], None if s[1] is None else NP_SCALAR[type(values[s[0]])])
                      for s in slots]
        self.configs: dict = {}
        sources = {getattr(i, "source", "") for i in infos}
        self.torch_args, self.cupy = "torch" in sources, "cupy" in sources
        self.sync, self.name = sync, name
        self.overlap = ANY_OVERLAP
        self.log = None         # print_log.DeviceLog of a kernel that prints
        self.native = None      # its C warm path plan (warm.py)
        self.tma = None         # tensor_map.TmaArgs of code that takes tensor maps

    def stream_for(self, stream, current_mode=None):
        """The cuda.core Stream a call with `stream` launches on (resolved once per launch,
        gpu.launch_stream), or False when this plan cannot run it: cupy arrays skip intake
        here, and with it DLPack's stream exchange, so they take this path only on cupy's
        current stream (their producer's); a plan whose compiler TILEPY_GPU_COMPILER chose is
        for that compiler only; a plan loaded through another driver (a test's fake one, gone
        since) is not this call's."""
        if self.compiler is not None and self.compiler != gpu_compiler_requested():
            return False
        if self.drv is not gpu_driver.current():
            return False
        gpu = _gpu()
        handle = gpu.stream_handle(stream, self.torch_args, self.dev.device_id)
        if self.cupy and handle != sys.modules["cupy"].cuda.get_current_stream().ptr:
            return False
        return gpu.stream_on(handle, stream, self.dev, self.drv)

    def config(self, g):
        """The LaunchConfig of grid `g` (made once per grid; a grid CUDA refuses raises)."""
        cfg = self.configs.get(g)
        if cfg is not None:
            return cfg
        from .gpu import check_grid
        check_grid(g)
        if len(self.configs) >= MAX_PLANS:
            self.configs.clear()
        cfg = self.configs[g] = self.drv.core.LaunchConfig(grid=g, block=self.block,
                                                              shmem_size=self.smem)
        return cfg

    def arguments(self, vals) -> list:
        """The kernel arguments of a call, as cuda.core's launch takes them (pointers as ints,
        scalars as numpy scalars of the parameter's width)."""
        args = self.args.copy()
        for slot, v in zip(self.slots, vals):
            if slot is not None:
                i, conv, wrap = slot
                args[i] = v if conv is None else wrap(conv(v))
        return args

    def run(self, g, vals, s):
        """Launch on `s`, the cuda.core Stream `stream_for` resolved."""
        if self.sync:
            refuse_capture(self.drv, s, self.name)
        args = self.arguments(vals)
        cfg = self.config(g)
        prev = self.ctx.enter()
        try:
            if self.tma is not None:      # (built in the device's context)
                args += self.tma.maps(vals, self.drv)
            if self.log is None:
                self._launch(s, cfg, args)
            else:
                self.log.run(lambda: self._launch(s, cfg, args), self.name, s)
        except self.drv.errors as e:
            self.failed(e)
        finally:
            self.ctx.leave(prev)

    def failed(self, e):
        """Raise the TileLaunchError of the driver's error `e` at launch (or at the sync)."""
        raise TileLaunchError(_launch_failure(self.name, self.sync, e)) from None

    def _launch(self, s, cfg, args):
        self.drv.core.launch(s, cfg, self.kernel, *args)
        if self.sync:
            s.sync()


def launch_gpu(stream, grid, ck, infos, values, slots, compiler_fixed=False, consumer=None,
               names=()):
    """Launch `ck` on the GPU that holds the array arguments; returns the plan for the next
    call with the same signature. `values` are the packed C arguments (launcher.pack_args);
    `names`: the parameter of each of `infos` (an sm_90a class's tensor maps name their arrays);
    `compiler_fixed`: the kernel names its GPU compiler (else TILEPY_GPU_COMPILER chose it, and
    the plan is for that choice only); `consumer`: the launch stream's handle by device, as
    intake asked it (gpu.consumer_stream: asked once per launch)."""
    from .gpu import (PRINTF_FIFO, DeviceContext, check_grid, launch_stream, loaded_kernel,
                      stream_on)
    drv = gpu_driver.current()
    if not drv.available():
        raise TileLaunchError("CUDA arrays were passed but no NVIDIA driver/GPU was found; "
                              "pass CPU arrays (numpy, torch CPU) to run on the CPU backend")
    check_grid(grid)
    ids = {i.device_id for i in infos if getattr(i, "device", None) == "cuda"}
    ids.discard(None)
    dev = drv.core.Device(ids.pop() if ids else 0)
    ctx = DeviceContext(dev, drv)
    prev = ctx.enter()
    try:
        if consumer is not None:
            s = stream_on(consumer(dev.device_id), stream, dev, drv)
        else:
            s = launch_stream(stream, any(getattr(i, "source", "") == "torch" for i in infos),
                              dev, drv)
        asserts, prints = ck.debug_ops()
        if asserts or prints:
            refuse_capture(drv, s, ck.name)
        loaded = loaded_kernel(ck, dev, drv)
        if asserts or (prints and loaded.log is None):   # (tileiras' prints use device printf)
            drv.set_printf_fifo(PRINTF_FIFO)
        plan = GpuPlan(loaded.kernel, ctx, loaded.block, values, slots, infos,
                       sync=asserts or prints, name=ck.name, smem=loaded.smem,
                       compiler=None if compiler_fixed else ck.compiler)
        plan.log = loaded.log
        if loaded.tma:
            from .tensor_map import TmaArgs
            plan.tma = TmaArgs(loaded.tma, list(names), infos)
    finally:
        ctx.leave(prev)
    if grid[0] * grid[1] * grid[2]:
        plan.run(grid, [i.ptr if hasattr(i, "ptr") else i for i in infos], s)
    return plan


def refuse_capture(drv, s, name: str):
    """A kernel with device assertions or prints synchronizes after each launch to report them
    (and a printing one copies its log to and from the device around it): none of that can be
    captured in a CUDA graph, so its launch on a capturing stream is refused before anything
    is issued. (Other launches ask nothing: what they issue is the launch alone.)"""
    if drv.is_capturing(s):
        raise TileLaunchError(f"kernel '{name}' has device assertions or prints, reported by a "
                              f"synchronization after each launch, so it cannot be launched on a "
                              f"stream that is capturing a CUDA graph: launch it outside the "
                              f"capture, or without its ct.assert_/ct.printf calls")


def _launch_failure(name: str, synced: bool, e) -> str:
    if not synced:
        return f"launching kernel '{name}' failed: {e}"
    return (f"kernel '{name}' failed on the GPU: {e}. A failed device assertion prints its "
            f"message on stdout and stops the kernel; the CUDA context is unusable after it "
            f"(restart the process)")


# ----------------------------------------------------------------------------- overlap
class Overlap:
    """Which array arguments overlap another one -- the specialization depends on it (barriers,
    cp.async pipelining), but the signature has no pointers. A plan keeps the pattern of the
    call that made it and the arrays' byte extents (fixed by the signature); a call with
    another pattern takes the full path. Pointer tuples already checked are remembered (a
    loop over the same buffers pays one set lookup per call)."""
    __slots__ = ("index", "pick", "extents", "pattern", "seen")

    def __init__(self, index: tuple[int, ...], extents: tuple[int, ...], pattern: tuple[bool, ...]):
        self.index = index
        self.pick = operator.itemgetter(*index)      # the call's array pointers, as a tuple
        self.extents, self.pattern = extents, pattern
        self.seen: set = set()

    @staticmethod
    def of(infos) -> Overlap:
        from ..host.intake import ArrayInfo, byte_extent, disjoint_flags
        index = tuple(k for k, i in enumerate(infos) if isinstance(i, ArrayInfo))
        if len(index) < 2:
            return ANY_OVERLAP
        extents = tuple(byte_extent(infos[k]) for k in index)
        return Overlap(index, extents,
                       disjoint_flags([(infos[k].ptr, n) for k, n in zip(index, extents)]))

    def same(self, vals) -> bool:
        ptrs = self.pick(vals)
        if ptrs in self.seen:
            return True
        from ..host.intake import disjoint_flags
        if disjoint_flags(list(zip(ptrs, self.extents))) != self.pattern:
            return False
        if len(self.seen) >= MAX_PLANS:
            self.seen.clear()
        self.seen.add(ptrs)
        return True


class _AnyOverlap:
    __slots__ = ()

    def same(self, vals) -> bool:
        return True


ANY_OVERLAP = _AnyOverlap()
