"""Is there an NVIDIA driver with a GPU -- and the one seam between tilepy and that driver.

Everything gpu.py and intake.py ask of the driver goes through the object `current()` returns:
cuda.core's classes (`core.Device`, `core.ObjectCode`, `core.LaunchConfig`, `core.launch`,
`core.Stream`) and the few cuda.bindings calls cuda.core does not wrap (the driver's version,
the calling thread's current context, the printf buffer size). `CoreDriver` is the real one;
tests put a test double in its place with `use(...)` (tests/fake_driver.py runs the CPU build of
each kernel from the packed kernelParams), so the launch path's logic runs without a GPU.

Nothing here touches the driver before `available()` said yes (../shared/ARCHITECTURE.md:
without a driver, a failed module load can leave the process unable to make later calls). It
lives in host/ (below everything) because argument intake asks it too: a CUDA array interface
is read differently without a driver, and through the driver with the launch stream.
"""
from __future__ import annotations

import contextlib
import functools


@functools.lru_cache(maxsize=None)
def probe() -> bool:
    """Is there a loadable NVIDIA driver with at least one GPU? Asked once per process."""
    try:
        import cuda.pathfinder
        cuda.pathfinder.load_nvidia_dynamic_lib("cuda")
    except Exception:
        return False
    try:
        driver = _bindings()
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, n = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and n > 0
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def _bindings():
    """cuda.bindings.driver, imported once: a `from cuda.bindings import driver` statement runs
    importlib's Python each time (about 2 us), and a launch asks the driver for the current
    context at each call."""
    from cuda.bindings import driver
    return driver


def _check(result, what: str):
    err, *rest = result
    if err != _bindings().CUresult.CUDA_SUCCESS:
        from ..errors import TileLaunchError
        raise TileLaunchError(f"{what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


class CoreDriver:
    """The real driver: cuda.core and cuda.bindings (imported on first use)."""
    name = "NVIDIA driver (cuda.core)"

    @functools.cached_property
    def core(self):
        import cuda.core
        return cuda.core

    @functools.cached_property
    def errors(self) -> tuple[type, ...]:
        """The exception types a failing driver call raises (wrapped in TileLaunchError)."""
        from cuda.core._utils.cuda_utils import CUDAError
        return (CUDAError,)

    def available(self) -> bool:
        return probe()

    @functools.lru_cache(maxsize=None)
    def version(self) -> int:
        """CUDA version the driver supports, e.g. 12080 for 12.8."""
        driver = _bindings()
        return int(_check(driver.cuDriverGetVersion(), "cuDriverGetVersion"))

    def device_count(self) -> int:
        driver = _bindings()
        return int(_check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))

    @functools.cached_property
    def _cu(self):
        return _bindings()

    def current_context(self) -> int:
        """The calling thread's current CUDA context (0: none). Asked at every launch (and
        `set_context` where the caller's is another): no more Python than the call needs."""
        cu = self._cu
        err, ctx = cu.cuCtxGetCurrent()
        if err != cu.CUresult.CUDA_SUCCESS:
            _check((err, ctx), "cuCtxGetCurrent")
        return int(ctx)

    def set_context(self, ctx: int):
        cu = self._cu
        (err,) = cu.cuCtxSetCurrent(cu.CUcontext(ctx))
        if err != cu.CUresult.CUDA_SUCCESS:
            _check((err,), "cuCtxSetCurrent")

    def context_of(self, dev) -> int:
        """The context `dev.set_current()` makes current (the device's primary context)."""
        return int(dev.context.handle)

    def stream_device(self, stream) -> int | None:
        """The device a cuda.core Stream belongs to (None: a default stream, which follows the
        current context)."""
        if stream is self.core.LEGACY_DEFAULT_STREAM or stream is self.core.PER_THREAD_DEFAULT_STREAM:
            return None
        try:
            return int(stream.device.device_id)
        except self.errors:
            return None

    def is_capturing(self, stream) -> bool:
        """Is cuda.core Stream `stream` capturing a CUDA graph? (Asked only before the launches
        that synchronize: launch/dispatch.py `refuse_capture`.)"""
        cu = self._cu
        err, status = cu.cuStreamIsCapturing(cu.CUstream(int(stream.handle)))
        if err != cu.CUresult.CUDA_SUCCESS:
            _check((err, status), "cuStreamIsCapturing")
        return status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE

    def smem_optin(self, dev) -> int:
        """Shared memory one block of `dev` may opt into, in bytes."""
        return int(dev.properties.max_shared_memory_per_block_optin)

    def allow_dynamic_smem(self, kern, dev, nbytes: int):
        """Raise a loaded kernel's max-dynamic-shared-memory attribute on `dev` to `nbytes`."""
        driver = _bindings()
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _check(driver.cuKernelSetAttribute(attr, nbytes, kern.handle, dev.device_id),
               "cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")

    def set_printf_fifo(self, nbytes: int) -> bool:
        """Grow device printf's buffer in the current context (the default is 1 MiB). CUDA
        allows it only before the context's first printing launch: False when refused (the
        buffer stays as it is)."""
        driver = _bindings()
        limit = driver.CUlimit.CU_LIMIT_PRINTF_FIFO_SIZE
        err, size = driver.cuCtxGetLimit(limit)
        if err != driver.CUresult.CUDA_SUCCESS or int(size) >= nbytes:
            return err == driver.CUresult.CUDA_SUCCESS
        (err,) = driver.cuCtxSetLimit(limit, nbytes)
        return err == driver.CUresult.CUDA_SUCCESS

    def device_info(self, dev) -> dict:
        """What `python -m tilepy doctor` shows of a GPU (and its peaks are computed from)."""
        driver = _bindings()
        p = dev.properties
        return {"name": dev.name, "cc": tuple(dev.compute_capability),
                "sms": p.multiprocessor_count, "clock_mhz": p.clock_rate // 1000,
                "memory_clock_mhz": p.memory_clock_rate // 1000,
                "bus_width": p.global_memory_bus_width,
                "memory": int(_check(driver.cuDeviceTotalMem(dev.device_id), "cuDeviceTotalMem"))}

    def elapsed_us(self, stream, run) -> float:
        """Microseconds between two timing events recorded on `stream` around `run()` (what
        tilepy.tune measures of a launch)."""
        opts = self.core.EventOptions(enable_timing=True)
        start = stream.record(options=opts)
        run()
        end = stream.record(options=opts)
        end.sync()
        return float(end - start) * 1e3

    def alloc(self, nbytes: int) -> int:
        """Device memory in the current context (`python -m tilepy doctor`'s own arrays)."""
        driver = _bindings()
        return int(_check(driver.cuMemAlloc(max(1, nbytes)), "cuMemAlloc"))

    def free(self, ptr: int):
        driver = _bindings()
        _check(driver.cuMemFree(ptr), "cuMemFree")

    def to_device(self, ptr: int, host):
        driver = _bindings()
        _check(driver.cuMemcpyHtoD(ptr, host.ctypes.data, host.nbytes), "cuMemcpyHtoD")

    def to_host(self, host, ptr: int):
        driver = _bindings()
        _check(driver.cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes), "cuMemcpyDtoH")

    def to_device_on(self, ptr: int, host, stream):
        """Copy `host` to device address `ptr`, ordered on `stream` (a cuda.core Stream) before
        the work launched on it next (pageable memory: staged before the call returns)."""
        driver = _bindings()
        _check(driver.cuMemcpyHtoDAsync(ptr, host.ctypes.data, host.nbytes,
                                        driver.CUstream(int(stream.handle))), "cuMemcpyHtoDAsync")

    def kernel_global(self, kern, name: str) -> tuple[int, int]:
        """(device address, bytes) of the `extern "C"` global `name` of a loaded kernel's module
        in the current context (a printing kernel's log, launch/print_log.py)."""
        driver = _bindings()
        lib = _check(driver.cuKernelGetLibrary(kern.handle), "cuKernelGetLibrary")
        ptr, size = _check(driver.cuLibraryGetGlobal(lib, name.encode()),
                           f"cuLibraryGetGlobal({name})")
        return int(ptr), int(size)

    def tensor_map(self, a):
        """A TMA tensor map as a kernel argument: cuTensorMapEncodeTiled of `a`
        (launch/tensor_map.py EncodeArgs), through cuda.core, whose launch takes a 128-byte
        `__grid_constant__` parameter only as its TensorMapDescriptor (StridedMemoryView's
        `as_tensor_map` encodes one with the driver's cuTensorMapEncodeTiled). The device's
        context must be current. What cuda.core refuses before the driver is asked (its own
        checks raise ValueError) is raised as the driver's refusals are (`errors`)."""
        import ml_dtypes
        from cuda.core._tensor_map import (TensorMapL2Promotion, TensorMapOOBFill,
                                           TensorMapSwizzle)
        from cuda.core.utils import StridedMemoryView
        view = StridedMemoryView.from_cuda_array_interface(tma_array(a), TMA_VIEW_STREAM)
        try:
            return view.as_tensor_map(a.box[::-1], element_strides=a.estrides[::-1],
                                      data_type=ml_dtypes.bfloat16 if a.dtype == 9 else None,
                                      swizzle=TensorMapSwizzle(a.swizzle),
                                      l2_promotion=TensorMapL2Promotion(a.l2),
                                      oob_fill=TensorMapOOBFill.NONE)
        except ValueError as e:
            raise self.errors[0](f"cuTensorMapEncodeTiled (cuda.core): {e}") from None

    def view(self, obj, source: str, stream_ptr: int):
        """cuda.core's StridedMemoryView of a CUDA array; `stream_ptr` is the consumer stream
        (the launch's), so the producer's pending work is ordered before it (-1: no order)."""
        from cuda.core.utils import StridedMemoryView
        if source == "dlpack":
            return StridedMemoryView.from_dlpack(obj, stream_ptr)
        return StridedMemoryView.from_cuda_array_interface(obj, stream_ptr)


# The stream argument of the view a tensor map is encoded from: -1, no stream order (encoding
# reads the array's geometry, not its data); cuda.core refuses None ("stream=None is ambiguous
# with view()", BufferError) for CUDA memory.
TMA_VIEW_STREAM = -1
_TMA_TYPESTR = {0: "|u1", 1: "<u2", 3: "<i4", 5: "<i8", 6: "<f2", 7: "<f4", 8: "<f8", 9: "<u2"}


def tma_array(a):
    """An object whose `__cuda_array_interface__` is the array of tensor map `a`
    (launch/tensor_map.py EncodeArgs, innermost dimension first): the shape and byte strides in
    the row-major order cuda.core takes, the innermost stride the element's size (cuTensorMap's
    dimension 0 is contiguous: its stride is implicit); bf16 as 16-bit words (as_tensor_map's
    data_type names it)."""
    typestr = _TMA_TYPESTR[a.dtype]
    cai = {"shape": a.dims[::-1], "strides": (*a.strides[::-1], int(typestr[2:])),
           "typestr": typestr, "data": (a.base, False), "version": 3}   # (TMA stores write it)
    return type("TmaArray", (), {"__cuda_array_interface__": cai})()


_REAL = CoreDriver()
_active: list = [_REAL]


def driver_available() -> bool:
    """Is there a loadable NVIDIA driver with at least one GPU (the current driver's answer)?"""
    return current().available()


def current():
    """The driver the GPU path uses now (the real one unless a test replaced it)."""
    return _active[-1]


_current_as_defined = current     # the C warm path reads `_active[-1]` itself while `current`
                                  # is this function (launch/warm.cpp, current_driver)


@contextlib.contextmanager
def use(driver):
    """Run the block with `driver` in place of the real one (tests: a fake driver)."""
    _active.append(driver)
    try:
        yield driver
    finally:
        _active.remove(driver)
