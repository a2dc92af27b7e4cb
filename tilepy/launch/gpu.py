"""Launching on an NVIDIA GPU through cuda.core (needs the driver; probed once per process).

Every driver call goes through `host/driver.current()` (the real cuda.core, or a test double:
tests/fake_driver.py), and nothing touches the driver before `driver_available()` said yes.
`launch_gpu` and the per-call `GpuPlan` are in dispatch.py (which imports this module, never the
other way).

Target: the device's exact arch as a cubin when NVRTC knows it (sm_90a on sm_90: the source's
sm_90a class, warpgroup MMA, needs the arch-specific target); else a cubin for the newest arch
NVRTC has of the device's major version (SASS runs on a newer minor of its major); a device of a
newer major than NVRTC knows gets PTX for the newest arch NVRTC has, which the driver JIT-compiles
(only if the driver is at least as new as NVRTC, or it rejects the PTX). A driver of an older
CUDA major than NVRTC cannot load NVRTC's output at all: that asks for the `cu12` extra.

Streams: whatever names the launch stream (a cuda.core Stream, `__cuda_stream__`, a torch or
cupy stream, an int handle; torch's current stream when the arguments are torch tensors) becomes
a cuda.core Stream, one per handle, checked once to be on the arguments' device.

Context: a launch makes the arguments' device current and puts the caller's context back after
(torch keeps its current device in the thread's current context).

Errors: CUDA errors of loading and launching raise TileLaunchError. A kernel with device
assertions or prints is synchronized after its launch: a failed `assert_` (which traps) raises
TileLaunchError there, at the launch that failed -- and the CUDA context is then unusable for
the rest of the process, as after any trap. Print ops of NVRTC's kernels do not use device
printf: each writes one record into the kernel's print log, which the host reads and formats
after the synchronization (launch/print_log.py), so its output is out, one whole print op at a
time and in the CPU backend's format, when launch returns. Assertion messages, and tileiras'
kernels' prints, use device printf (a 64 MiB buffer).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from ..errors import TileLaunchError, TileValueError
from ..host import driver as gpu_driver
from ..settings import settings

CUDA_GRID_YZ = 65535               # CUDA's limit on grid y and z (x: 2^31-1, above tilepy's 2^24-1)
PRINTF_FIFO = 64 << 20             # device printf buffer for kernels that assert (default 1 MiB)
_LEGACY, _PER_THREAD = 1, 2        # CU_STREAM_LEGACY / CU_STREAM_PER_THREAD handles


def driver_available() -> bool:
    """Is there a loadable NVIDIA driver with at least one GPU? (host/driver.py)"""
    return gpu_driver.driver_available()


def driver_version() -> int:
    """CUDA version the driver supports, e.g. 12080 for 12.8 (needs the driver)."""
    return gpu_driver.current().version()


def _ver(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def choose_target(cc: tuple[int, int], driver: int, nvrtc: tuple[int, int],
                  supported: tuple[int, ...], sm90a: bool = False) -> str:
    """The NVRTC target for a device of compute capability `cc`: "sm_XX" (a cubin) or
    "compute_XX" (PTX for the driver to JIT); TileLaunchError when nothing loads. `sm90a`
    (TILEPY_SM90A): an sm_90 device gets "sm_90a", the source's warpgroup-MMA class."""
    return target_and_reason(cc, driver, nvrtc, supported, sm90a)[0]


def target_and_reason(cc: tuple[int, int], driver: int, nvrtc: tuple[int, int],
                      supported: tuple[int, ...], sm90a: bool = False) -> tuple[str, str]:
    """(target, why) -- see choose_target; `why` says so in words (`python -m tilepy doctor`)."""
    nv = nvrtc[0] * 1000 + nvrtc[1] * 10
    if driver // 1000 < nvrtc[0]:
        raise TileLaunchError(
            f"the NVIDIA driver supports CUDA {_ver(driver)}, older than tilepy's NVRTC "
            f"(CUDA {_ver(nv)}), so it cannot load what NVRTC compiles: install the CUDA "
            f"{driver // 1000} wheels (pip install 'tilepy[cu{driver // 1000}]') or update the driver")
    arch = cc[0] * 10 + cc[1]
    if arch == 90 and arch in supported and sm90a:   # arch-specific features: wgmma (cuda_c/targets.py)
        return "sm_90a", (f"a cubin for the GPU's own arch with its arch-specific features, "
                          f"warpgroup MMA (TILEPY_SM90A=1; NVRTC {nvrtc[0]}.{nvrtc[1]} knows sm_90a)")
    if arch in supported:
        why = f"a cubin for the GPU's own arch (NVRTC {nvrtc[0]}.{nvrtc[1]} knows sm_{arch})"
        if arch == 90:
            why += ("; mma.sync: TILEPY_SM90A=1 takes the warpgroup-MMA class (sm_90a), "
                    "not yet checked on a GPU")
        return f"sm_{arch}", why
    older = [a for a in supported if a < arch]
    if not older:
        raise TileLaunchError(f"this GPU (sm_{arch}) is older than the oldest arch NVRTC "
                              f"{nvrtc[0]}.{nvrtc[1]} supports (sm_{min(supported)}); use the "
                              f"CUDA 12 wheels (pip install 'tilepy[cu12]')")
    same_major = [a for a in older if a // 10 == cc[0]]
    if same_major:
        return (f"sm_{max(same_major)}", f"NVRTC {nvrtc[0]}.{nvrtc[1]} does not know sm_{arch}; a "
                f"cubin for sm_{max(same_major)} (same major version) runs on it")
    if driver < nv:
        raise TileLaunchError(
            f"this GPU (sm_{arch}) is newer than NVRTC {nvrtc[0]}.{nvrtc[1]} knows, and the driver "
            f"(CUDA {_ver(driver)}) is too old to JIT its PTX: update tilepy's CUDA wheels")
    return (f"compute_{max(older)}", f"NVRTC {nvrtc[0]}.{nvrtc[1]} knows no arch of sm_{arch}'s "
            f"major version: PTX for compute_{max(older)}, JIT-compiled by the driver")


def device_target(dev) -> str:
    from . import toolchain
    tc = toolchain.info()
    major, minor = (int(x) for x in tc.nvrtc_version.split("."))
    return choose_target(tuple(dev.compute_capability), driver_version(), (major, minor),
                         tc.supported_archs, settings().sm90a)


# ----------------------------------------------------------------------------- streams
class StreamHandle:
    """A foreign stream handle in the `__cuda_stream__` protocol (version 0)."""
    __slots__ = ("handle",)

    def __init__(self, handle: int):
        self.handle = int(handle)

    def __cuda_stream__(self):
        return (0, self.handle)


def is_cuda_stream(stream) -> bool:
    """Does `stream` name a CUDA stream (as opposed to None)?"""
    return stream is not None and (hasattr(stream, "__cuda_stream__") or hasattr(stream, "cuda_stream")
                                   or isinstance(stream, (int, np.integer)) or hasattr(stream, "ptr"))


def stream_handle(stream, torch_args: bool, device_id: int | None) -> int:
    """The CUstream handle of what names the launch stream (see `launch_stream`); 0 is the
    legacy default stream. Tried in this order: None (torch's current stream of the device
    when the arguments are torch tensors: what torch itself launches on), the
    `__cuda_stream__` protocol (cuda.core's Stream, torch.cuda.Stream since 2.x, StreamHandle),
    `cuda_stream` (torch streams without the protocol), `ptr` (cupy.cuda.Stream), an int."""
    if stream is None:
        if torch_args:
            return int(sys.modules["torch"].cuda.current_stream(device_id or 0).cuda_stream)
        return 0
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):           # torch.cuda.Stream without the protocol
        return int(stream.cuda_stream)
    if hasattr(stream, "ptr") and isinstance(getattr(stream, "ptr"), int):   # cupy.cuda.Stream
        return stream.ptr
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return int(stream)
    raise TileValueError(f"cannot use a {type(stream).__name__} as a CUDA stream (pass a cuda.core "
                         f"Stream, a torch.cuda.Stream, an object with __cuda_stream__, an int "
                         f"handle, or None)")


def consumer_stream(stream, args):
    """For intake of CUDA arrays: device id -> the launch stream's handle as DLPack and CAI
    want it (the legacy default stream is 1 there, 0 being ambiguous); asked once per device
    and launch, whatever the number of arrays."""
    torch_args = any(type(a).__module__.startswith("torch") for a in args)
    seen: dict = {}

    def handle(device_id):
        h = seen.get(device_id)
        if h is None:
            h = stream_handle(stream, torch_args, device_id)
            h = seen[device_id] = _LEGACY if h == 0 else h
        return h
    return handle


_STREAMS: dict = {}
MAX_STREAMS = 256


def wrapped_stream(handle: int, drv=None, given=None):
    """(cuda.core Stream, its device or None) for a CUstream handle, made once per handle (a
    foreign stream given to cuda.core's launch is deprecated there); `given`: the cuda.core
    Stream the caller passed for it (its device is asked once too)."""
    drv = drv or gpu_driver.current()
    hit = _STREAMS.get((drv, handle))
    if hit is None or (given is not None and hit[0] is not given):
        core = drv.core
        if given is not None:
            s = given
        elif handle in (0, _LEGACY):
            s = core.LEGACY_DEFAULT_STREAM
        elif handle == _PER_THREAD:
            s = core.PER_THREAD_DEFAULT_STREAM
        else:
            s = core.Stream.from_handle(handle)
        if len(_STREAMS) >= MAX_STREAMS:
            _STREAMS.clear()
        hit = _STREAMS[(drv, handle)] = (s, drv.stream_device(s))
    return hit


def resolve_stream(stream, infos, dev, drv=None):
    """The cuda.core Stream to launch on: the argument (a cuda.core Stream, anything with
    `__cuda_stream__`, a torch/cupy stream, an int handle), else torch's current stream when
    any argument is a torch tensor, else the device's default stream."""
    torch_args = any(getattr(i, "source", "") == "torch" for i in infos)
    return launch_stream(stream, torch_args, dev, drv or gpu_driver.current())


def launch_stream(stream, torch_args: bool, dev, drv):
    """The one place a launch's stream is resolved, once per launch (the first launch of a
    signature and every cached one, GpuPlan.stream_for): its handle (`stream_handle`), then
    `stream_on`."""
    return stream_on(stream_handle(stream, torch_args, dev.device_id), stream, dev, drv)


def stream_on(handle: int, stream, dev, drv):
    """The cuda.core Stream for `handle` (the caller's own `stream` when it is one; made once
    per handle otherwise), checked to be on `dev` (a stream of another device is an error;
    default streams follow the current context)."""
    given = stream if isinstance(stream, drv.core.Stream) else None
    s, device = wrapped_stream(handle, drv, given)
    if device is not None and device != dev.device_id:
        check_stream_device(device, dev)
    return s


def check_stream_device(device: int | None, dev):
    if device is not None and device != dev.device_id:
        raise TileValueError(f"the stream is on cuda:{device} but the arrays are on "
                             f"cuda:{dev.device_id}; launch on a stream of the arrays' device")


def check_grid(grid):
    if grid[1] > CUDA_GRID_YZ or grid[2] > CUDA_GRID_YZ:
        raise TileValueError(f"grid {tuple(grid)} is too large for CUDA: grid y and z must be at "
                             f"most {CUDA_GRID_YZ} (x may go up to 2^24-1); fold the extra blocks "
                             f"into x")


# ----------------------------------------------------------------------------- loading
_KERNELS: dict = {}


@dataclass(frozen=True)
class GpuCode:
    """What one GPU compiler made of a specialization for one target: the binary and how to
    launch it. `block`: the threads per block (NVRTC: the emitter's count; tileiras: the cubin's
    REQNTID); `smem`: the dynamic shared memory every launch passes; `artifact`: the C++
    backend's kernel artifact (its shared memory is checked against the device), or None."""
    kind: str                       # "cubin" | "ptx"
    data: bytes
    block: tuple[int, int, int]
    smem: int = 0
    artifact: object = None
    log: str = ""                   # the compiler's log


@dataclass(frozen=True)
class Loaded:
    """A kernel loaded on one device, with its launch shape and, if its code has one, its print
    log (launch/print_log.py; the NVRTC path's print ops; one per loaded kernel, so its
    launches share the log's lock)."""
    kernel: object
    block: tuple[int, int, int]
    smem: int
    log: object = None
    tma: tuple = ()      # the tensor maps its code takes after its parameters (launch/tensor_map.py)


def code_key(ck) -> tuple:
    """What identifies a kernel's code: its compiler, name and what the compiler was given (two
    kernels with the same argument signature differ here; a redefined one too)."""
    return ck.code_key()


def loaded_kernel(ck, dev, drv=None) -> Loaded:
    """The cuda.core Kernel of `ck` on `dev` (with its block size and dynamic shared memory):
    compiled for the device's arch by `ck`'s GPU compiler (`ck.gpu_code`, api/), loaded once
    per (code, device)."""
    drv = drv or gpu_driver.current()
    key = (drv, code_key(ck), dev.device_id)
    hit = _KERNELS.get(key)
    if hit is None:
        if ck.min_driver and driver_version() < ck.min_driver:
            raise TileLaunchError(
                f"kernel '{ck.name}' is compiled by {ck.compiler}, whose cubins need an NVIDIA "
                f"driver for CUDA {_ver(ck.min_driver)} or newer (r580+); this driver supports "
                f"CUDA {_ver(driver_version())}: update the driver, or use compiler='nvrtc'")
        target = device_target(dev)
        code = ck.gpu_code(target)
        kern = load_code(code.kind, code.data, ck.symbol, ck.name, drv)
        if code.artifact is not None:
            allow_dynamic_smem(kern, dev, code.artifact, target, drv)
        from ..cuda_c.targets import wgmma_target
        tma = getattr(code.artifact, "tma", ()) if wgmma_target(target) else ()
        hit = _KERNELS[key] = Loaded(kern, code.block, code.smem,
                                     kernel_log(kern, code.data, ck.name, drv), tma)
    return hit


def kernel_log(kern, code: bytes, name: str, drv=None):
    """The print log of a loaded kernel whose code defines one (None otherwise); the kernel's
    device must be current."""
    from .print_log import LOG, DeviceLog
    if LOG.encode() not in code:
        return None
    drv = drv or gpu_driver.current()
    try:
        return DeviceLog(drv, kern)
    except drv.errors as e:
        raise TileLaunchError(f"the print log of kernel '{name}' was not found: {e}") from None


def allow_dynamic_smem(kern, dev, artifact, target: str, drv=None):
    """Let `kern` take the artifact's dynamic shared memory for `target`
    (`artifact.smem_for(target)`, which the launch passes as shmem_size; issue 13): above the 48 KiB every block gets, check it against
    what the device lets a block opt into (a located error naming the kernel's largest user
    otherwise), then raise the kernel's max-dynamic-shared-memory attribute."""
    from ..cuda_c.targets import STATIC_SMEM, check_fits
    nbytes = artifact.smem_for(target)
    if nbytes <= STATIC_SMEM:
        return
    drv = drv or gpu_driver.current()
    check_fits(artifact, target, drv.smem_optin(dev))
    drv.allow_dynamic_smem(kern, dev, nbytes)


def load_code(kind: str, data: bytes, symbol: str, name: str, drv=None):
    """Load a cubin or PTX and get kernel `name` from it by its `symbol` (the one its compiler
    was given: cuda_c/names.kernel_symbol, or the Tile IR entry's for tileiras; CUDA errors:
    TileLaunchError)."""
    drv = drv or gpu_driver.current()
    oc = drv.core.ObjectCode
    try:
        code = oc.from_cubin(data, name=name) if kind == "cubin" else oc.from_ptx(data, name=name)
        return code.get_kernel(symbol)
    except drv.errors as e:
        raise TileLaunchError(f"the driver could not load kernel '{name}' ({kind}): {e}") from None


def debug_ops(source: str) -> tuple[bool, bool]:
    """(asserts, prints): does the kernel's source assert or print on the device?"""
    return "tp::tile_assert(" in source, "tp::print_record(" in source


class DeviceContext:
    """Makes a device current for one launch and puts the caller's context back after
    (cuda.core's set_current alone would leave it replaced, and torch's current device with it)."""
    __slots__ = ("dev", "drv", "ctx")

    def __init__(self, dev, drv):
        self.dev, self.drv, self.ctx = dev, drv, None

    def enter(self) -> int:
        """Make the device current; returns the caller's context for `leave`."""
        prev = self.drv.current_context()
        if self.ctx is None or prev != self.ctx:
            self.dev.set_current()
            self.ctx = self.drv.context_of(self.dev)
        return prev

    def leave(self, prev: int):
        if prev != self.ctx:
            self.drv.set_context(prev)


def gpu_arg(v):
    """A packed ctypes value as cuda.core packs it: pointers as ints, scalars at exact width."""
    import ctypes
    if isinstance(v, ctypes.c_void_p):
        return int(v.value or 0)
    return NP_SCALAR[type(v)](v.value)


def _np_table():
    import ctypes
    return {ctypes.c_int32: np.int32, ctypes.c_int64: np.int64, ctypes.c_int8: np.int8,
            ctypes.c_int16: np.int16, ctypes.c_uint8: np.uint8, ctypes.c_uint16: np.uint16,
            ctypes.c_uint32: np.uint32, ctypes.c_uint64: np.uint64, ctypes.c_float: np.float32,
            ctypes.c_double: np.float64, ctypes.c_bool: np.bool_}


NP_SCALAR = _np_table()
