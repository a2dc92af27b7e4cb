"""A fake NVIDIA driver: the GPU launch path of tilepy, run on the CPU.

`FakeDriver` stands where `tilepy.launch.gpu_driver.CoreDriver` stands (`with FakeDriver() as
drv:`), with test doubles of cuda.core's Device, ObjectCode, Kernel, LaunchConfig, Stream and
launch that keep cuda.core's contracts:

- `ObjectCode.from_cubin` takes the very cubin NVRTC made for the device's target, and reads
  its parameter table from the ELF (tilepy.launch.cubin_info); `get_kernel` builds the CPU
  library of the same source (the source is looked up by the cubin's bytes, recorded when
  NVRTC produced them).
- A cubin tileiras made (`compiler="tileiras"`) runs as the CPU build of the Tile IR bytecode
  tileiras was given: read back by tilepy's bytecode reader and emitted as C++ (recorded by the
  cubin's bytes when tileiras produced it). Its parameter table is tileiras' own (the packed
  sizes are checked against it), and the launch's block must be the cubin's REQNTID, as the
  driver requires; the CPU build runs its own thread count.
- `launch(stream, config, kernel, *args)` packs `args` with cuda.core's own ParamHolder into
  cuLaunchKernel's kernelParams (an array of pointers to values), checks each value's packed
  size against the cubin's parameter table (the driver reads `size` bytes from each pointer),
  copies the values into a parameter buffer at the cubin's offsets, as the driver does, and runs
  the CPU build from that buffer. The stream must be a cuda.core Stream (the fake's), the
  grid within CUDA's limits, the block within the cubin's max threads, the kernel's device
  current.
- A failed device assertion is a sticky error reported by the next synchronization (as after
  a trap). Every driver call is logged in `drv.calls` (name, details), so tests can check what a
  launch asks of the driver (no loads, no stream wrapping, no syncs on a cached launch).

CUDA arrays are host memory seen through `__cuda_array_interface__` or `__dlpack__` with a CUDA
device (`cuda_array`); streams are plain handles (`TorchLikeStream`, `CupyLikeStream`).
"""
from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import re
import sys
import threading
import types
from dataclasses import dataclass

import numpy as np

from tilepy.host import driver as gpu_driver
from tilepy.launch import cpu, gpu, nvrtc, tileiras
from tilepy.cuda_c.targets import class_define
from tilepy.launch.cubin_info import kernel_info, symbols

ASSERT_TRAPPED = "CUDA_ERROR_ASSERT: device-side assert triggered"


class FakeCUDAError(Exception):
    """What cuda.core raises for a failed driver call (its CUDAError)."""


# ----------------------------------------------------------------------------- cuda.core doubles
def packed_size(v) -> int:
    """Bytes cuda.core's ParamHolder packs `v` into (its rules: Python int as intptr_t, float as
    double, bool as bool, numpy scalars and ctypes at their own size)."""
    if isinstance(v, np.generic):
        return v.dtype.itemsize
    if isinstance(v, bool):
        return 1
    if isinstance(v, (int, float)):
        return 8
    if isinstance(v, complex):
        return 16
    if isinstance(v, ctypes._SimpleCData):
        return ctypes.sizeof(v)
    if isinstance(v, FakeTensorMap):
        return 128
    raise FakeCUDAError(f"cuda.core cannot pack a {type(v).__name__} kernel argument")


def packed_layout(args) -> list[tuple[int, int, int]]:
    """(ordinal, offset, size) of `args` laid out the way a kernel's parameters are: each at
    its natural alignment (a tensor map's 64), in order -- what the cubin's table must say for
    these arguments."""
    out, off = [], 0
    for i, v in enumerate(args):
        n = packed_size(v)
        a = min(n, 64)
        off = (off + a - 1) // a * a
        out.append((i, off, n))
        off += n
    return out


@dataclass(frozen=True)
class FakeTensorMap:
    """What the fake cuTensorMapEncodeTiled returns: the map's 128 bytes in the CPU backend's
    encoding (tilepy/launch/tensor_map.py, read by cpu_tma.h) and the arguments it was made of."""
    data: bytes
    args: object


class FakeStream:
    """cuda.core.Stream: made from a handle; `sync` reports the context's sticky error."""

    def __init__(self, driver, handle: int, device_id: int | None):
        self._driver, self.handle, self.device_id = driver, handle, device_id

    @classmethod
    def from_handle(cls, handle):
        drv = gpu_driver.current()
        drv.log("stream.from_handle", handle)
        return cls(drv, int(handle), drv.stream_devices.get(int(handle), 0))

    def __cuda_stream__(self):
        return (0, self.handle)

    def sync(self):
        self._driver.log("stream.sync", self.handle)
        self._driver.raise_sticky()


class FakeDevice:
    """cuda.core.Device: one object per ordinal."""

    def __init__(self, driver, device_id: int):
        self._driver, self.device_id = driver, device_id
        self.compute_capability = driver.cc
        self.arch = f"{driver.cc[0]}{driver.cc[1]}"
        self.name = f"Fake GPU {device_id} (CPU backend)"

    @property
    def default_stream(self):
        return self._driver.core.LEGACY_DEFAULT_STREAM

    def set_current(self):
        self._driver.log("device.set_current", self.device_id)
        self._driver.tls.ctx = self._driver.context_of(self)


@dataclass
class FakeLaunchConfig:
    grid: tuple
    block: tuple
    shmem_size: int = 0

    def __post_init__(self):
        gpu_driver.current().log("launchconfig", (tuple(self.grid), tuple(self.block)))


class FakeKernel:
    """cuda.core.Kernel: the cubin's parameter table and the CPU build of the same source."""

    def __init__(self, driver, name: str, cubin: bytes, source: str, device_id: int):
        self.name, self.device_id, self.cubin = name, device_id, cubin
        self.info = kernel_info(cubin, name)
        self.source = source
        self.threads = int(re.search(r"#define TP_NT (\d+)", source).group(1))
        self.max_dynamic_smem = 48 * 1024     # until allow_dynamic_smem raises it
        self._libs: dict = {}

    def library(self):
        mode = cpu.current_mode()
        lib = self._libs.get(mode)
        if lib is None:
            sym = gpu_driver.current().cpu_symbol(self.cubin, self.name)
            lib = self._libs[mode] = cpu.build_source(self.source, sym,
                                                      cpu.kernel_params(self.source, sym),
                                                      mode, self.threads)
        return lib

    def cpu_block(self, block, mode: str) -> tuple:
        """The block the CPU build runs for a launch with `block`: NVRTC's cubins run it as
        given; a cubin with a required block size (tileiras') must be launched with exactly
        that, and its CPU build (another compiler's code) runs its own thread count."""
        if self.info.req_threads is not None and tuple(block) != tuple(self.info.req_threads):
            raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: block {tuple(block)} != the kernel's "
                                f"required block {self.info.req_threads} (REQNTID)")
        if mode == "fast":
            return 1, 1, 1
        return (self.threads, 1, 1) if self.info.req_threads is not None else tuple(block)


class FakeObjectCode:
    def __init__(self, driver, kind: str, data: bytes, name: str):
        self._driver, self.kind, self.data, self.name = driver, kind, data, name

    @classmethod
    def from_cubin(cls, data, name=""):
        drv = gpu_driver.current()
        drv.log("objectcode.from_cubin", name)
        if data[:4] != b"\x7fELF":
            raise FakeCUDAError("CUDA_ERROR_INVALID_IMAGE: not a cubin")
        return cls(drv, "cubin", data, name)

    @classmethod
    def from_ptx(cls, data, name=""):
        raise FakeCUDAError("the fake driver loads cubins only (a PTX target would be JIT-compiled)")

    def get_kernel(self, name):
        drv = self._driver
        drv.log("objectcode.get_kernel", name)
        source = drv.source_of(self.data)
        if source is None:
            raise FakeCUDAError("CUDA_ERROR_INVALID_IMAGE: a cubin NVRTC or tileiras did not make "
                                "here")
        try:
            return FakeKernel(drv, name, self.data, source, drv.current_device())
        except Exception as e:
            raise FakeCUDAError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({e})") from None


def fake_launch(stream, config, kernel, *args):
    drv = gpu_driver.current()
    drv.log("launch", kernel.name)
    if not isinstance(stream, FakeStream):
        raise FakeCUDAError(f"launch() was given a {type(stream).__name__}, not a cuda.core Stream "
                            f"(cuda.core warns that foreign streams are deprecated)")
    if drv.current_device() != kernel.device_id:
        raise FakeCUDAError("CUDA_ERROR_INVALID_HANDLE: the kernel's context is not current")
    gx, gy, gz = config.grid
    if gx > 2**31 - 1 or gy > 65535 or gz > 65535 or min(config.grid) < 1:
        raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: grid {config.grid}")
    mx = kernel.info.max_threads
    if mx is not None and any(b > m for b, m in zip(config.block, mx)):
        raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: block {config.block} > maxntid {mx}")
    if config.shmem_size > kernel.max_dynamic_smem:
        raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: {config.shmem_size} bytes of dynamic shared "
                            f"memory > the kernel's maximum {kernel.max_dynamic_smem}")
    buf, ptrs = drv.param_buffer(kernel, args)
    drv.launches.append(Launch(kernel.name, stream.handle, tuple(config.grid), tuple(config.block),
                               args, config.shmem_size))
    lib = kernel.library()
    b = kernel.cpu_block(config.block, lib.mode)
    report = cpu.new_report()
    rc = getattr(lib.lib, cpu.ENTRY)(ptrs, gx, gy, gz, *b, config.shmem_size, 1, report)
    if rc == 0 and report.asserts:
        drv.sticky = ASSERT_TRAPPED
    elif rc != 0:
        drv.sticky = f"CUDA_ERROR_LAUNCH_FAILED: {report.error.decode(errors='replace')}"
    del buf


@dataclass
class Launch:
    kernel: str
    stream: int
    grid: tuple
    block: tuple
    args: tuple
    smem: int = 0                  # the launch's dynamic shared memory


# ----------------------------------------------------------------------------- the driver
class FakeDriver:
    """The test double of gpu_driver.CoreDriver (see the module docstring)."""
    name = "fake driver (CPU backend)"
    errors = (FakeCUDAError,)

    def __init__(self, cc=(9, 0), version=13050, devices=2):
        self.cc, self._version, self.devices = cc, version, devices
        self.calls: list = []
        self.launches: list[Launch] = []
        self.tensor_maps: list[FakeTensorMap] = []     # what cuTensorMapEncodeTiled made
        self.sources: dict[str, str] = {}      # NVRTC's cubins (by hash): their C++ source
        self.bytecodes: dict[str, bytes] = {}  # tileiras' cubins (by hash): their bytecode
        self.symbols: dict[str, str] = {}      # tileiras' cubins: the symbol in their C++
        self.waits: list = []             # (producer stream, consumer stream) of CAI arrays
        self.stream_devices: dict[int, int] = {}
        self.capturing: set[int] = set()  # handles of the streams capturing a CUDA graph
        self.printf_fifo = 1 << 20
        self.memory: dict = {}            # "device" allocations: host buffers by address
        self.sticky: str | None = None
        self.tls = threading.local()
        self._devices: dict = {}
        self.core = _FakeCore(self, Device=self._device, ObjectCode=FakeObjectCode,
                              LaunchConfig=FakeLaunchConfig, launch=fake_launch, Stream=FakeStream,
                              LEGACY_DEFAULT_STREAM=FakeStream(self, 0, None),
                              PER_THREAD_DEFAULT_STREAM=FakeStream(self, 2, None))

    def log(self, what, detail=None):
        self.calls.append((what, detail))

    def calls_named(self, prefix: str) -> list:
        return [c for c in self.calls if c[0].startswith(prefix)]

    # ---- the seam
    def available(self) -> bool:
        return True

    def version(self) -> int:
        return self._version

    def device_count(self) -> int:
        return self.devices

    def _device(self, device_id=0):
        self.log("device", device_id)
        if not 0 <= device_id < self.devices:
            raise FakeCUDAError(f"CUDA_ERROR_INVALID_DEVICE: {device_id}")
        dev = self._devices.get(device_id)
        if dev is None:
            dev = self._devices[device_id] = FakeDevice(self, device_id)
        return dev

    def current_context(self) -> int:
        self.log("ctx.get")
        return getattr(self.tls, "ctx", 0)

    def set_context(self, ctx: int):
        self.log("ctx.set", ctx)
        self.tls.ctx = ctx

    def context_of(self, dev) -> int:
        return 0x1000 + dev.device_id

    def current_device(self) -> int | None:
        ctx = getattr(self.tls, "ctx", 0)
        return ctx - 0x1000 if ctx else None

    def stream_device(self, stream):
        return stream.device_id

    def is_capturing(self, stream) -> bool:
        self.log("stream.is_capturing", stream.handle)
        return stream.handle in self.capturing

    def smem_optin(self, dev) -> int:
        from tilepy.cuda_c.targets import smem_limit
        return smem_limit(f"sm_{self.cc[0]}{self.cc[1]}")

    def allow_dynamic_smem(self, kern, dev, nbytes: int):
        self.log("kernel.max_dynamic_smem", (kern.name, nbytes))
        if nbytes > self.smem_optin(dev):
            raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: {nbytes} bytes of shared memory")
        kern.max_dynamic_smem = nbytes

    def set_printf_fifo(self, nbytes: int) -> bool:
        self.log("printf_fifo", nbytes)
        self.printf_fifo = max(self.printf_fifo, nbytes)
        return True

    def device_info(self, dev) -> dict:
        return {"name": dev.name, "cc": dev.compute_capability, "sms": 4, "clock_mhz": 1000,
                "memory_clock_mhz": 1000, "bus_width": 256, "memory": 1 << 30}

    def elapsed_us(self, stream, run) -> float:
        """The wall clock around `run()` and a sync of `stream` (the launch runs on the CPU)."""
        import time
        self.log("elapsed_us", stream.handle)
        t0 = time.perf_counter()
        run()
        stream.sync()
        return (time.perf_counter() - t0) * 1e6

    def tensor_map(self, a):
        """cuTensorMapEncodeTiled: the map in the CPU backend's encoding, checked as the driver
        checks it; logged with its arguments (`drv.tensor_maps`)."""
        self.log("cuTensorMapEncodeTiled", a)
        from tilepy.launch.tensor_map import cpu_tensor_map
        if not a.base:   # (the real path's cuda.core asks the driver about the pointer first)
            raise FakeCUDAError("CUDA_ERROR_INVALID_VALUE: a tensor map over pointer 0, not "
                                "device memory")
        try:
            m = FakeTensorMap(cpu_tensor_map(a), a)
        except ValueError as e:
            raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: {e}") from None
        self.tensor_maps.append(m)
        return m

    def alloc(self, nbytes: int) -> int:
        mem = np.zeros(max(1, nbytes), np.uint8)
        self.memory[mem.ctypes.data] = mem
        return mem.ctypes.data

    def free(self, ptr: int):
        del self.memory[ptr]

    def to_device(self, ptr: int, host):
        ctypes.memmove(ptr, host.ctypes.data, host.nbytes)

    def to_host(self, host, ptr: int):
        ctypes.memmove(host.ctypes.data, ptr, host.nbytes)

    def to_device_on(self, ptr: int, host, stream):
        self.log("to_device_on", stream.handle)
        if not isinstance(stream, FakeStream):
            raise FakeCUDAError("CUDA_ERROR_INVALID_HANDLE: not a stream")
        ctypes.memmove(ptr, host.ctypes.data, host.nbytes)

    def kernel_global(self, kern, name: str) -> tuple[int, int]:
        """The global as cuLibraryGetGlobal finds it: its size from the cubin's own symbol table
        (NVRTC's), its address in the CPU build of the same source that the launches run."""
        self.log("kernel_global", name)
        if self.current_device() != kern.device_id:
            raise FakeCUDAError("CUDA_ERROR_INVALID_CONTEXT: the kernel's context is not current")
        size = symbols(kern.cubin).get(name)
        if size is None:
            raise FakeCUDAError(f"CUDA_ERROR_NOT_FOUND: no global '{name}' in the cubin")
        return ctypes.addressof(ctypes.c_char.in_dll(kern.library().lib, name)), size

    def view(self, obj, source: str, stream_ptr: int):
        self.log("view", (source, stream_ptr))
        if source == "dlpack":             # cuda.core's own reader: needs no driver
            from cuda.core.utils import StridedMemoryView
            return StridedMemoryView.from_dlpack(obj, stream_ptr)
        cai = obj.__cuda_array_interface__
        producer = cai.get("stream")
        if producer is not None and stream_ptr != -1 and producer != stream_ptr:
            self.waits.append((producer, stream_ptr))
        dt = np.dtype(cai["typestr"])
        strides = None if cai.get("strides") is None else tuple(s // dt.itemsize for s in cai["strides"])
        return types.SimpleNamespace(ptr=cai["data"][0], shape=tuple(cai["shape"]), strides=strides,
                                     dtype=dt, device_id=getattr(obj, "device_id", 0),
                                     readonly=cai["data"][1])

    # ---- what the fake driver does
    def source_of(self, cubin: bytes) -> str | None:
        """The C++ the CPU runs for a cubin: NVRTC's source, or tilepy's C++ for the Tile IR
        bytecode tileiras compiled (read back with tilepy's reader: what tileiras was given)."""
        digest = hashlib.sha256(cubin).hexdigest()
        if digest in self.sources:
            return self.sources[digest]
        bytecode = self.bytecodes.get(digest)
        if bytecode is None:
            return None
        from tilepy.api.compiler import compile_module
        from tilepy.bytecode import read_module
        cm = compile_module(read_module(bytecode))
        self.symbols[digest] = cm.symbol
        source = self.sources[digest] = cm.compile_source()
        return source

    def cpu_symbol(self, cubin: bytes, name: str) -> str:
        """The kernel's symbol in the C++ source_of gives (tilepy's own for tileiras' cubins)."""
        return self.symbols.get(hashlib.sha256(cubin).hexdigest(), name)

    def raise_sticky(self):
        if self.sticky:
            raise FakeCUDAError(self.sticky)

    def param_buffer(self, kernel, args):
        """cuLaunchKernel's work: kernelParams (from cuda.core's ParamHolder) copied into a
        parameter buffer at the cubin's offsets; returns (buffer, pointers into it)."""
        from cuda.core._kernel_arg_handler import ParamHolder
        table = kernel.info.params
        if len(args) != len(table):
            raise FakeCUDAError(f"CUDA_ERROR_INVALID_VALUE: {len(args)} arguments for a kernel "
                                f"with {len(table)} parameters")
        holder = ParamHolder([0 if isinstance(v, FakeTensorMap) else v for v in args])
        params = (ctypes.c_void_p * max(1, len(args))).from_address(holder.ptr)
        size = max([p.offset + p.size for p in table], default=1)
        buf = (ctypes.c_char * size)()
        base = ctypes.addressof(buf)
        for p, v in zip(table, args):
            if packed_size(v) != p.size:
                raise FakeCUDAError(f"argument {p.ordinal} packed as {packed_size(v)} bytes "
                                    f"({type(v).__name__}); the kernel's parameter is {p.size} "
                                    f"bytes")
            v = args[p.ordinal]
            if isinstance(v, FakeTensorMap):      # (cuda.core packs its own TensorMapDescriptor)
                ctypes.memmove(base + p.offset, v.data, 128)
                continue
            ctypes.memmove(base + p.offset, params[p.ordinal], p.size)
        ptrs = (ctypes.c_void_p * max(1, len(table)))(*[base + p.offset for p in table])
        return (buf, holder), ptrs

    # ---- installing it
    def install(self, monkeypatch):
        """In place for the rest of a test (undone by `monkeypatch`), like `with self:`."""
        monkeypatch.setattr(gpu_driver, "_active", [*gpu_driver._active, self])
        _CompileSpy(self).patch(monkeypatch)
        monkeypatch.setattr(gpu, "_KERNELS", {})
        monkeypatch.setattr(gpu, "_STREAMS", {})
        return self

    def __enter__(self):
        self._spy = _CompileSpy(self)
        self._spy.install()
        self._use = gpu_driver.use(self)
        self._use.__enter__()
        gpu._STREAMS.clear()
        return self

    def __exit__(self, *exc):
        self._use.__exit__(*exc)
        self._spy.remove()
        for key in [k for k in gpu._KERNELS if k[0] is self]:
            del gpu._KERNELS[key]
        gpu._STREAMS.clear()
        return False


class _FakeCore(types.SimpleNamespace):
    """The fake cuda.core: what tilepy uses; anything else is recorded and raises, so code that
    starts asking the driver something new fails the tests that pin what a launch does."""

    def __init__(self, driver, **names):
        super().__init__(**names)
        object.__setattr__(self, "_driver", driver)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._driver.log(f"cuda.core.{name} (not modelled)")
        raise AttributeError(f"the fake driver does not model cuda.core.{name}")


class _CompileSpy:
    """Records which source each cubin NVRTC returns was made from, and which bytecode each
    cubin tileiras returns (the fake loads the CPU build of that source, or of that bytecode)."""

    def __init__(self, driver):
        self.driver, self.real, self.real_tileiras = driver, nvrtc.compile_cubin, tileiras.assemble

    def wrapped(self):
        def compile_cubin(source, arch="sm_80", name="kernel"):
            out = self.real(source, arch, name)        # (the CPU build takes `arch`'s kernel)
            self.driver.sources[hashlib.sha256(out.data).hexdigest()] = \
                f"{class_define(arch)}\n{source}"
            return out
        return compile_cubin

    def wrapped_tileiras(self):
        def assemble(bytecode, arch, name="kernel", opt_level=3):
            out = self.real_tileiras(bytecode, arch, name, opt_level)
            self.driver.bytecodes[hashlib.sha256(out.data).hexdigest()] = bytecode
            return out
        return assemble

    def patch(self, monkeypatch):
        monkeypatch.setattr(nvrtc, "compile_cubin", self.wrapped())
        monkeypatch.setattr(tileiras, "assemble", self.wrapped_tileiras())

    def install(self):
        nvrtc.compile_cubin = self.wrapped()
        tileiras.assemble = self.wrapped_tileiras()

    def remove(self):
        nvrtc.compile_cubin = self.real
        tileiras.assemble = self.real_tileiras


# ----------------------------------------------------------------------------- arrays, streams
class CudaArray:
    """A CUDA array over host memory (`host`, a numpy array kept alive here)."""

    def __init__(self, host: np.ndarray, device_id: int = 0):
        self.host, self.device_id = host, device_id
        self.shape, self.dtype = host.shape, host.dtype


class CaiArray(CudaArray):
    """By `__cuda_array_interface__` v3, with the producer's `stream` (None: no pending work)."""

    def __init__(self, host: np.ndarray, device_id: int = 0, stream=None):
        super().__init__(host, device_id)
        self.__cuda_array_interface__ = {
            "shape": host.shape, "typestr": host.dtype.str, "data": (host.ctypes.data, False),
            "strides": host.strides, "version": 3, "stream": stream}


class DLPackArray(CudaArray):
    """By DLPack with a CUDA device; the streams its consumers asked for are in `asked`."""

    def __init__(self, host: np.ndarray, device_id: int = 0):
        super().__init__(host, device_id)
        self.asked: list = []

    def __dlpack_device__(self):
        return (2, self.device_id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from fake_arrays import FakeDLPack
        self.asked.append(stream)
        h = self.host
        self._export = FakeDLPack(h.shape, h.dtype, (2, self.device_id), h.ctypes.data,
                                  [s // h.itemsize for s in h.strides])
        return self._export.__dlpack__()


def cuda_array(a: np.ndarray, kind: str = "cai", device_id: int = 0, stream=None) -> CudaArray:
    """`a`'s memory as a CUDA array of `kind` "cai" or "dlpack" on `device_id`."""
    if kind == "dlpack":
        return DLPackArray(a, device_id)
    return CaiArray(a, device_id, stream)


class TorchLikeStream:
    """A torch.cuda.Stream as tilepy sees one: `cuda_stream` (the handle) and a device."""

    def __init__(self, handle: int, device_index: int = 0):
        self.cuda_stream = handle
        self.device = types.SimpleNamespace(type="cuda", index=device_index)


class TorchStream:
    """torch.cuda.Stream as torch 2.x exposes one: `cuda_stream` (the handle; 0 for the
    default stream, which is what torch.cuda.current_stream() returns unless a stream was
    made current), `device` and `device_index`, and the `__cuda_stream__` protocol."""

    def __init__(self, handle: int = 0, device_index: int = 0):
        self.cuda_stream, self.device_index = handle, device_index
        self.device = types.SimpleNamespace(type="cuda", index=device_index)

    def __cuda_stream__(self):
        return (0, self.cuda_stream)

    def __eq__(self, other):
        return isinstance(other, TorchStream) and other.cuda_stream == self.cuda_stream

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))


def torch_on_the_fake_gpu(monkeypatch, torch, current: int = 0, calls: list | None = None) -> dict:
    """Torch CPU tensors seen as CUDA tensors of device 0 by the launcher, and
    torch.cuda.current_stream answering a TorchStream of `world["stream"]` (changeable);
    `world["asked"]` counts its calls, which `calls` (if given) records with their device."""
    from tilepy.api import launcher
    world = {"stream": current, "asked": 0}

    def current_stream(device=None):
        world["asked"] += 1
        if calls is not None:
            calls.append(("torch.cuda.current_stream", device))
        return TorchStream(world["stream"], 0 if device is None else int(device))
    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    real_intake = launcher.intake_arg

    def as_cuda(a, name, consumer=None):
        info = real_intake(a, name, consumer)
        if getattr(info, "source", None) == "torch":
            return dataclasses.replace(info, device="cuda", device_id=0)
        return info
    monkeypatch.setattr(launcher, "intake_arg", as_cuda)
    return world


class CupyLikeStream:
    """A cupy.cuda.Stream: `ptr` (the handle) and `device_id`."""

    def __init__(self, handle: int, device_id: int = 0):
        self.ptr, self.device_id = handle, device_id


class CupyArray(DLPackArray):
    """Enough of a cupy.ndarray: DLPack on CUDA, and what tilepy's fast path reads."""

    def __init__(self, host: np.ndarray, device_id: int = 0):
        super().__init__(host, device_id)
        self.strides = host.strides
        self.data = types.SimpleNamespace(ptr=host.ctypes.data)
        self.device = types.SimpleNamespace(id=device_id)


def fake_cupy(monkeypatch):
    """A `cupy` module in sys.modules (for the test's duration) with `ndarray` (host memory
    seen as CUDA, its type's module is cupy's) and a current stream (`cupy.current.ptr`)."""
    cupy = types.ModuleType("cupy")
    cupy.current = types.SimpleNamespace(ptr=0)
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: cupy.current)
    cupy.ndarray = type("ndarray", (CupyArray,), {"__module__": "cupy._core.core"})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return cupy
