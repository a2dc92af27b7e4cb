"""The per-call fast path of `tilepy.launch`.

A launch that went through the full path (intake, specialization, compile, checks) leaves a
plan behind, filed under the *call signature* of its arguments: per array its dtype, shape,
strides, writability (numpy) or device (torch, cupy) and negation bit (torch), and pointer
alignment (mod 16); per scalar its type; per Constant its value. Which arrays overlap is not in
the signature (it needs the pointers): the plan checks it (`Overlap`). Everything a specialization or an argument
check can depend on is in the signature except the array pointers and scalar values, so a later
call with the same signature needs only: the signature (a tuple and a dict lookup), the
pointers (read from the numpy object in ~0.2 us), the scalar values, and one call.

`CpuPlan`: the C argument block (a ctypes Structure with the shapes and strides filled in, and
the `void*[]` pointing into it) is taken from a per-plan pool for the duration of the call, so
threads never share one. `GpuPlan`: the cuda.core argument list with the pointers replaced; the stream resolved
per call (gpu.py).
Anything else -- other array types, a new signature, a stream with CPU arrays -- takes the full
path, which validates and explains.
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np

from ..errors import TileLaunchError, TileUnsupportedFeatureError
from ..host.grid import GRID_LIMIT
from ..host.intake import _DATA_OFFSET, _cupy_array, _torch_tensor, numpy_ptr
from ..types import DType
from ..settings import gpu_compiler_requested
from .cpu import Report, watch_signals

MAX_PLANS = 1024           # per kernel; past it the table is cleared (shapes that never repeat)
_ALIGN = 15         # pointer alignment classes up to 16 bytes (the specialization's)

_ndarray = np.ndarray
_from_address = ctypes.c_void_p.from_address
_SCALARS = (int, float, bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
            np.uint32, np.uint64, np.float16, np.float32, np.float64, np.bool_)
_SCALAR_SET = frozenset(_SCALARS)
_CONST_TYPES = frozenset((int, bool, str, type(None), DType))   # DType: a Constant[DType]


class KernelPlans:
    """A kernel's launch plans, by call signature."""
    __slots__ = ("consts", "table")

    def __init__(self, consts: tuple[bool, ...]):
        self.consts = consts           # per parameter: is it a Constant?
        self.table: dict = {}

    def store(self, sig, plan):
        if len(self.table) >= MAX_PLANS:
            self.table.clear()
        self.table[sig] = plan


def plans_of(kernel) -> KernelPlans:
    kp = kernel.__dict__.get("_tp_plans")
    if kp is None:
        names = list(kernel.signature.parameters)
        kp = kernel.__dict__["_tp_plans"] = KernelPlans(tuple(n in kernel.constants for n in names))
    return kp


def signature(args, consts):
    """(signature, per-argument values for the plan) or None when the fast path does not apply."""
    if len(args) != len(consts):
        return None
    sig = []
    vals = []
    off = _DATA_OFFSET
    for a, c in zip(args, consts):
        t = type(a)
        if t is _ndarray:
            p = (_from_address(id(a) + off).value or 0) if off is not None else numpy_ptr(a)
            sig.append((a.dtype, a.shape, a.strides, a.flags.writeable, p & _ALIGN))
            vals.append(p)
        elif t is _torch_tensor[0]:
            try:
                p = a.data_ptr()
                sig.append((a.dtype, a.shape, a.stride(), a.device, a.is_neg(), p & _ALIGN))
            except RuntimeError:      # sparse and other strideless layouts: intake explains
                return None
            vals.append(p)
        elif t is _cupy_array[0]:
            p = a.data.ptr
            sig.append(("cupy", a.dtype, a.shape, a.strides, a.device.id, p & _ALIGN))
            vals.append(p)
        elif c:
            if t in _CONST_TYPES:
                sig.append((t, a))
            elif t is float:
                sig.append((t, a.hex()))     # 0.0 and -0.0 are equal but not the same constant
            else:
                return None
            vals.append(None)
        elif t in _SCALAR_SET:
            sig.append(t)
            vals.append(a)
        else:
            return None
    return tuple(sig), vals


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
    return conv


class CpuPlan:
    """One prepared CPU launch: the library entry point and a template argument block."""
    __slots__ = ("fn", "lib", "extra", "struct", "fields", "template", "slots", "pool", "workers",
                 "mode", "check", "overlap")
    gpu = False

    def __init__(self, lib, fn, values: list, slots: list, workers_fn, extra: tuple = (),
                 mode=None, check=None):
        """`fn(params, gx, gy, gz, *extra, workers, report)` is the library's entry point (cpu.py);
        `values`: the packed ctypes values of one valid call (launcher.pack_args);
        `slots`: per kernel argument, (field index, converter) or None for constants;
        `mode`: the CPU mode the library was built for, compared with the current one per call
        (None: one mode only); `check(rc, report)`: what cpu.py checks after a launch (its
        Report is per call, pooled with the argument block)."""
        self.lib, self.fn, self.extra, self.mode = lib, fn, extra, mode
        self.check = check
        fields = [(f"f{i}", type(v)) for i, v in enumerate(values)]
        self.struct = type("TpArgs", (ctypes.Structure,), {"_fields_": fields})
        self.fields = [f for f, _ in fields]
        self.template = bytes(self.struct(*[v.value for v in values])) if values else b""
        self.slots = [None if s is None else (self.fields[s[0]], s[1]) for s in slots]
        self.pool: list = []
        self.workers = workers_fn
        self.overlap = ANY_OVERLAP

    def accepts(self, stream, current_mode=None) -> bool:
        """Can this plan run a call with `stream` now? (CPU launches take no stream.)"""
        return stream is None and (self.mode is None or self.mode == current_mode())

    def _new_block(self):
        s = self.struct.from_buffer_copy(self.template) if self.template else self.struct()
        base = ctypes.addressof(s)
        n = max(1, len(self.fields))
        ptrs = (ctypes.c_void_p * n)(*[base + getattr(self.struct, f).offset for f in self.fields])
        return s, ptrs, Report()

    def run(self, g, vals, stream=None):
        pool = self.pool
        try:
            block = pool.pop()
        except IndexError:
            block = self._new_block()
        s = block[0]
        try:
            for slot, v in zip(self.slots, vals):
                if slot is not None:
                    field, conv = slot
                    setattr(s, field, v if conv is None else conv(v))
            gx, gy, gz = g
            report = block[2]
            report.watch_signals = watch_signals()
            workers = 1 if gx * gy * gz == 1 else self.workers()
            log = self.lib.log
            if log is None:
                rc = self.fn(block[1], gx, gy, gz, *self.extra, workers, report)
            else:
                rc = log.run(lambda: self.fn(block[1], gx, gy, gz, *self.extra, workers, report),
                             self.lib.name)
            self.check(rc, report)
        finally:
            pool.append(block)


class GpuPlan:
    """One prepared GPU launch: the loaded cuda.core kernel and a template argument list."""
    __slots__ = ("kernel", "ctx", "dev", "drv", "block", "args", "slots", "configs", "torch_args",
                 "cupy", "sync", "name", "overlap", "smem", "compiler", "log")
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

    def accepts(self, stream, current_mode=None) -> bool:
        """cupy arrays skip intake here, and with it DLPack's stream exchange: they take this
        path only on cupy's current stream (their producer's). A plan whose compiler
        TILEPY_GPU_COMPILER chose is for that compiler only."""
        if self.compiler is not None and self.compiler != gpu_compiler_requested():
            return False
        if not self.cupy:
            return True
        from .gpu import stream_handle
        cupy_stream = sys.modules["cupy"].cuda.get_current_stream().ptr
        return stream_handle(stream, self.torch_args, self.dev.device_id) == cupy_stream

    def _config(self, g):
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

    def run(self, g, vals, stream=None):
        from .gpu import launch_stream
        args = self.arguments(vals)
        cfg = self.configs.get(g) or self._config(g)
        s = launch_stream(stream, self.torch_args, self.dev, self.drv)
        prev = self.ctx.enter()
        try:
            if self.log is None:
                self._launch(s, cfg, args)
            else:
                self.log.run(lambda: self._launch(s, cfg, args), self.name, s)
        except self.drv.errors as e:
            raise TileLaunchError(_launch_failure(self.name, self.sync, e)) from None
        finally:
            self.ctx.leave(prev)


    def _launch(self, s, cfg, args):
        self.drv.core.launch(s, cfg, self.kernel, *args)
        if self.sync:
            s.sync()


def launch_gpu(stream, grid, ck, infos, values, slots, compiler_fixed=False):
    """Launch `ck` on the GPU that holds the array arguments; returns the plan for the next
    call with the same signature. `values` are the packed C arguments (launcher.pack_args);
    `compiler_fixed`: the kernel names its GPU compiler (else TILEPY_GPU_COMPILER chose it, and
    the plan is for that choice only)."""
    from ..host import driver as gpu_driver
    from .gpu import PRINTF_FIFO, DeviceContext, check_grid, check_stream_device, loaded_kernel
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
        if isinstance(stream, drv.core.Stream):        # (a wrapped handle is checked once)
            check_stream_device(drv.stream_device(stream), dev)
        asserts, prints = ck.debug_ops()
        loaded = loaded_kernel(ck, dev, drv)
        if asserts or (prints and loaded.log is None):   # (tileiras' prints use device printf)
            drv.set_printf_fifo(PRINTF_FIFO)
        plan = GpuPlan(loaded.kernel, ctx, loaded.block, values, slots, infos,
                       sync=asserts or prints, name=ck.name, smem=loaded.smem,
                       compiler=None if compiler_fixed else ck.compiler)
        plan.log = loaded.log
    finally:
        ctx.leave(prev)
    if grid[0] * grid[1] * grid[2]:
        plan.run(grid, [i.ptr if hasattr(i, "ptr") else i for i in infos], stream)
    return plan


def _launch_failure(name: str, synced: bool, e) -> str:
    if not synced:
        return f"launching kernel '{name}' failed: {e}"
    return (f"kernel '{name}' failed on the GPU: {e}. A failed device assertion prints its "
            f"message on stdout and stops the kernel; the CUDA context is unusable after it "
            f"(restart the process)")


# ----------------------------------------------------------------------------- overlap
class Overlap:
    """Which array arguments overlap another one -- the specialization depends on it (barriers,
    cp.async pipelining), but the signature has only pointers' alignment. A plan keeps the
    pattern of the call that made it and the arrays' byte extents (fixed by the signature);
    a call with another pattern takes the full path."""
    __slots__ = ("arrays", "pattern")

    def __init__(self, arrays: tuple[tuple[int, int], ...], pattern: tuple[bool, ...]):
        self.arrays, self.pattern = arrays, pattern      # (argument index, byte extent)

    @staticmethod
    def of(infos) -> Overlap:
        from ..host.intake import ArrayInfo, byte_extent, disjoint_flags
        arrays = tuple((k, byte_extent(i)) for k, i in enumerate(infos) if isinstance(i, ArrayInfo))
        if len(arrays) < 2:
            return ANY_OVERLAP
        return Overlap(arrays, disjoint_flags([(infos[k].ptr, n) for k, n in arrays]))

    def same(self, vals) -> bool:
        from ..host.intake import disjoint_flags
        return disjoint_flags([(vals[k], n) for k, n in self.arrays]) == self.pattern


class _AnyOverlap:
    __slots__ = ()

    def same(self, vals) -> bool:
        return True


ANY_OVERLAP = _AnyOverlap()
