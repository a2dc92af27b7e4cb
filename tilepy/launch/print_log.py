"""Tile print ops on the CUDA C++ backend: binary records in a log, formatted by the host.

A kernel that prints defines `tp_print_log` (a header and TP_PRINT_LOG_BYTES of records) and
`tp_print_ops` (its print-op table as JSON: per op, the format and each argument's element type
and shape), both `extern "C"` (cuda_c/emit_ops.py). Each print op of each block writes one
record (runtime.h: print_record), the same code on the GPU and on the CPU. Around a launch the
host writes the header {used 0, dropped 0, capacity, end = capacity}, and after it reads the
records below min(used, end) in the order they were reserved and formats each with the
interpreter's formatter (interpret/printf.py): one record is one whole print op, in the same
format on every backend. A record that did not fit was not written; the launch says how many
were dropped (stderr). Why not device printf: it emits one record per call (per element of a
tile), so blocks interleave inside a print op, and its text is formatted by the GPU's printf,
not the CPU's.

`HostLog` reads a CPU library's log in this process; `DeviceLog` a loaded GPU kernel's through
the driver seam (host/driver.py: `kernel_global`, copies). Launches of one kernel with a log are
serialized by its lock (a launch's records are read before the next launch resets them).
"""
from __future__ import annotations

import ctypes
import json
import struct
import sys
import threading

import numpy as np

LOG, OPS = "tp_print_log", "tp_print_ops"
HEADER = 32                     # used, dropped, capacity, end (int64 each)
LOG_BYTES = 16 << 20            # TP_PRINT_LOG_BYTES in runtime.h (tests/test_print_log.py checks)
CAPACITY = LOG_BYTES            # record bytes one launch may write (tests lower it)
RECORD_HEAD = 24                # size, op, block x, y, z, 0 (uint32 each)


def _pad8(n: int) -> int:
    return (n + 7) // 8 * 8


class PrintOps:
    """A kernel's print-op table: per op, (format, [(element type, numpy dtype, shape)], size)."""

    def __init__(self, table: str):
        from ..interpret.printf import elem_of, storage
        self.rows = []
        for fmt, args in json.loads(table):
            parts, size = [], RECORD_HEAD
            for name, shape in args:
                elem = elem_of(name)
                dtype, nbytes = storage(elem)
                parts.append((elem, dtype, tuple(shape)))
                size += _pad8(nbytes * int(np.prod(shape, dtype=np.int64)))
            self.rows.append((fmt, parts, size))

    def format(self, data: bytes) -> tuple[str, int]:
        """The text of the records in `data`, in order, and how many were read; a record that
        does not match the table ends the reading (it cannot happen unless memory was corrupted)."""
        from ..interpret.printf import format_print
        out, off, n = [], 0, 0
        while off + RECORD_HEAD <= len(data):
            size, op = struct.unpack_from("<II", data, off)
            if op >= len(self.rows) or size != self.rows[op][2] or off + size > len(data):
                out.append(f"[tilepy: print log record at byte {off} is corrupt; the rest is "
                           f"not shown]\n")
                break
            fmt, parts, _ = self.rows[op]
            at, args = off + RECORD_HEAD, []
            for _, dtype, shape in parts:
                count = int(np.prod(shape, dtype=np.int64))
                args.append(np.frombuffer(data, dtype, count, at).reshape(shape))
                at += _pad8(count * dtype.itemsize)
            out.append(format_print(fmt, args, [e for e, _, _ in parts]))
            off += size
            n += 1
        return "".join(out), n


class PrintLog:
    """One kernel's log; `run(launch, name)` calls `launch()` with the log reset, prints its
    records and returns what `launch()` returned."""
    report_after_errors = True

    def __init__(self, table: str, size: int):
        self.ops = PrintOps(table)
        self.size = size
        self.lock = threading.Lock()

    def run(self, launch, name: str, stream=None):
        with self.lock:
            cap = min(CAPACITY, self.size)
            self._write(0, np.array([0, 0, cap, cap], np.int64), stream)
            try:
                out = launch()
            except BaseException:
                if self.report_after_errors:
                    self._report(name, cap)
                raise
            self._report(name, cap)
            return out

    def _report(self, name: str, cap: int):
        used, dropped, _, end = (int(v) for v in np.frombuffer(self._read(0, HEADER), np.int64))
        text, n = self.ops.format(self._read(HEADER, max(0, min(used, end, self.size))))
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
        if dropped:
            sys.stderr.write(f"tilepy: kernel '{name}' printed more than its print log holds "
                             f"({cap} bytes): {dropped} print record(s) of this launch were "
                             f"dropped after the {n} shown\n")
            sys.stderr.flush()

    def _read(self, offset: int, n: int) -> bytes:
        raise NotImplementedError

    def _write(self, offset: int, data: np.ndarray, stream=None):
        raise NotImplementedError


class HostLog(PrintLog):
    """The log of a CPU library loaded in this process."""

    def __init__(self, lib: ctypes.CDLL):
        self.addr = ctypes.addressof(ctypes.c_char.in_dll(lib, LOG))
        table = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, OPS))).decode()
        super().__init__(table, LOG_BYTES)

    @classmethod
    def of(cls, lib: ctypes.CDLL) -> HostLog | None:
        """The library's log, or None for a kernel that does not print."""
        try:
            return cls(lib)
        except ValueError:          # ctypes: no such symbol
            return None

    def _read(self, offset: int, n: int) -> bytes:
        return ctypes.string_at(self.addr + offset, n)

    def _write(self, offset: int, data: np.ndarray, stream=None):
        ctypes.memmove(self.addr + offset, data.ctypes.data, data.nbytes)


class DeviceLog(PrintLog):
    """The log of a kernel loaded on a GPU (its module's globals, in the current context). A
    failed launch leaves the context unusable: its records are not read."""
    report_after_errors = False

    def __init__(self, drv, kern):
        self.drv = drv
        self.ptr, size = drv.kernel_global(kern, LOG)
        optr, osize = drv.kernel_global(kern, OPS)
        raw = np.zeros(osize, np.uint8)
        drv.to_host(raw, optr)
        super().__init__(raw.tobytes().split(b"\0", 1)[0].decode(), size - HEADER)

    def _read(self, offset: int, n: int) -> bytes:
        out = np.empty(n, np.uint8)
        if n:
            self.drv.to_host(out, self.ptr + offset)
        return out.tobytes()

    def _write(self, offset: int, data: np.ndarray, stream=None):
        self.drv.to_device_on(self.ptr + offset, data, stream)
