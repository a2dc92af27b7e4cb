"""Timing one launch, and timing one in a worker process that is stopped at a time limit.

`_benchmark(stream, grid, kernel, args)`: launch once and return the launch's time in
microseconds: CUDA events recorded on the launch stream around it for GPU arrays, the wall clock
around it on the CPU backend (whose launch returns when the grid is done).

`benchmark_with_timeout(stream, grid, kernel, args, timeout_sec)`: the same launch in a worker
process, waited for at most `timeout_sec` (a kernel that never ends is stopped and the search
goes on); returns (microseconds, seconds of wall time including the worker). The launch is
exported first (`_export_ipc_benchmark_payload`): the kernel is compiled here (its errors raised
here, its compile time not counted against the limit), then the worker only launches
(`_benchmark_with_ipc_payload`). cuTile exports CUDA IPC memory handles of the arrays to a
worker it keeps running; tilepy's CPU-backend equivalent is a fork of this process per timed
launch: the worker sees the arguments as they are now, and after its launch sends back the bytes
of every array argument (lists of arrays and tuples included), which are copied into the
caller's arrays where they differ: the launch's writes are seen as if it ran here (at the cost
of one copy of the arguments' memory per timed launch). Arrays in GPU memory are not
exported (tilepy has no IPC export of device memory yet, and a forked process cannot use the
parent's CUDA context): the export returns None and the launch runs here, as cuTile does when it
cannot export one; a launch then longer than the limit is reported when it returns
(TileLaunchTimeoutError), it is not stopped.
"""
from __future__ import annotations

import ctypes
import os
import pickle
import select
import signal
import struct
import time
import warnings
from dataclasses import dataclass
from typing import Any

__all__ = ["TileLaunchTimeoutError", "benchmark_with_timeout"]


class TileLaunchTimeoutError(RuntimeError):
    """A timed launch ran past `single_run_timeout_sec` (cuTile's name)."""


# ----------------------------------------------------------------------------- one launch
def _launch(stream, grid, kernel, args):
    from ..api.launcher import launch
    launch(stream, grid, kernel, args)


def _gpu_infos(args) -> list:
    from ..host.intake import array_leaves, intake_arg
    return [i for a in args for _, i in array_leaves(intake_arg(a)) if i.device == "cuda"]


def _gpu_stream(stream, infos):
    """(driver, the cuda.core Stream a launch with these GPU arrays goes to)."""
    from ..host import driver as gpu_driver
    from ..launch.gpu import resolve_stream
    drv = gpu_driver.current()
    dev = drv.core.Device(infos[0].device_id or 0)
    dev.set_current()
    return drv, resolve_stream(stream, infos, dev, drv)


def _timed_launch(stream, grid, kernel, args) -> float:
    """Launch once; the launch's time in microseconds (see the module docstring)."""
    gpu = _gpu_infos(args)
    if gpu:
        drv, s = _gpu_stream(stream, gpu)
        return drv.elapsed_us(s, lambda: _launch(stream, grid, kernel, args))
    t0 = time.perf_counter()
    _launch(stream, grid, kernel, args)
    return (time.perf_counter() - t0) * 1e6


def _benchmark(stream, grid, kernel, pyargs) -> float:
    """One launch here, timed (microseconds)."""
    return _timed_launch(stream, grid, kernel, tuple(pyargs))


# ----------------------------------------------------------------------------- in a worker
@dataclass
class _Payload:
    """A launch exported to a worker: what to launch, and the memory spans (address, bytes) of
    its array arguments, which the worker sends back after the launch."""
    stream: Any
    grid: tuple
    kernel: Any
    args: tuple
    spans: list


def _span(info) -> tuple[int, int]:
    """(first address, bytes) of the memory an array's elements occupy."""
    size = info.dtype.itemsize
    if any(n == 0 for n in info.shape):
        return info.ptr, 0
    lo = sum(s * (n - 1) for s, n in zip(info.strides, info.shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(info.strides, info.shape) if s > 0)
    return info.ptr + lo * size, (hi - lo + 1) * size


def _export_ipc_benchmark_payload(stream, grid, kernel, pyargs) -> _Payload | None:
    """The launch made ready for a worker, or None when it cannot be exported (GPU arrays; no
    fork). A launch over an empty grid compiles the kernel and runs no block; the C launch path
    of later launches (launch/warm.py) is built or loaded here too, so that the worker's launch
    is one as any later launch here."""
    from ..host.intake import array_leaves, intake_arg
    from ..launch import warm
    args = tuple(pyargs)
    infos = [i for a in args for _, i in array_leaves(intake_arg(a))]
    if not hasattr(os, "fork") or any(i.device != "cpu" for i in infos):
        return None
    _launch(stream, (0,), kernel, args)
    warm.module()
    spans = {_span(i) for i in infos}
    return _Payload(stream, tuple(grid) if isinstance(grid, (tuple, list)) else grid, kernel,
                    args, sorted(s for s in spans if s[1]))


def _benchmark_with_ipc_payload(payload: _Payload) -> float:
    """The worker's launch (microseconds)."""
    return _timed_launch(payload.stream, payload.grid, payload.kernel, payload.args)


_HEADER = struct.Struct("<?dQ")     # ok, microseconds, bytes of the pickled rest that follow


def _worker(payload: _Payload, fd: int):
    """The forked worker: launch, then send the header and the arrays' bytes (or the error)."""
    try:
        us = _benchmark_with_ipc_payload(payload)
        ok, rest = True, pickle.dumps([ctypes.string_at(p, n) for p, n in payload.spans])
    except BaseException as e:                      # the parent re-raises it
        ok, us = False, 0.0
        try:
            rest = pickle.dumps(e)
            pickle.loads(rest)
        except Exception:
            rest = pickle.dumps(RuntimeError(f"{type(e).__name__}: {e}"))
    data = _HEADER.pack(ok, us, len(rest)) + rest
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read(fd: int, n: int, deadline: float | None) -> bytes | bool:
    """`n` bytes from `fd`; False at the deadline, True at the end of the stream before them."""
    out = bytearray()
    while len(out) < n:
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return False
        chunk = os.read(fd, min(n - len(out), 1 << 20))
        if not chunk:
            return True
        out += chunk
    return bytes(out)


def _run_in_worker(payload: _Payload, timeout_sec: float) -> float:
    """The payload's launch in a forked worker, waited for at most `timeout_sec`; its arrays'
    bytes copied back here. The worker's time in microseconds."""
    r, w = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns of fork() in a process with threads: the worker only launches (the
        # CPU backend's pool restarts its threads in a forked child) and writes to a pipe
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:                                     # the worker: never returns
        code = 1
        try:
            os.close(r)
            _worker(payload, w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    try:
        head = _read(r, _HEADER.size, time.perf_counter() + timeout_sec)
        if head is False:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pid = None
            name = getattr(payload.kernel, "name", "kernel")
            raise TileLaunchTimeoutError(
                f"CUDA kernel launch exceeded timeout {timeout_sec} sec (kernel '{name}' in a "
                f"worker process, stopped at the limit)")
        rest = head if head is True else _read(r, _HEADER.unpack(head)[2], None)
    finally:
        os.close(r)
        if pid is not None:
            _, status = os.waitpid(pid, 0)
    if rest is True:
        raise RuntimeError(f"the benchmark worker of kernel '{getattr(payload.kernel, 'name', '?')}'"
                           f" exited without its result ({_exit_status(status)})")
    ok, us, _ = _HEADER.unpack(head)
    if not ok:
        raise pickle.loads(rest)
    for (addr, size), data in zip(payload.spans, pickle.loads(rest)):
        if ctypes.string_at(addr, size) != data:    # read-only arguments stay untouched
            ctypes.memmove(addr, data, size)
    return us


def _exit_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by signal {sig} ({signal.Signals(sig).name})"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def benchmark_with_timeout(stream, grid, kernel, pyargs,
                           timeout_sec: float) -> tuple[float, float | None]:
    """(microseconds of one launch, seconds of wall time in the worker) with the launch in a
    worker stopped at `timeout_sec`; (microseconds, None) when it cannot be exported and ran
    here (see the module docstring)."""
    payload = _export_ipc_benchmark_payload(stream, grid, kernel, pyargs)
    if payload is None:
        us = _benchmark(stream, grid, kernel, pyargs)
        if us > timeout_sec * 1e6:
            raise TileLaunchTimeoutError(
                f"CUDA kernel launch exceeded timeout {timeout_sec} sec: it took "
                f"{us / 1e6:.3g} s (run in this process: its arrays could not be exported to a "
                f"worker, so it was not stopped)")
        return us, None
    t0 = time.perf_counter()
    us = _run_in_worker(payload, timeout_sec)
    return us, time.perf_counter() - t0
