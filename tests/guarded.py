"""Launching kernels in tests with guard bytes around every array argument, in the interpreter
and both CPU modes.

A kernel that writes one element past the end of its output (or before its start) leaves the
output itself right: only bytes outside the array show it. `launch` copies every contiguous
numpy array argument into the middle of a larger buffer whose margins hold a fixed random
pattern, runs the kernel on that view, checks both margins byte for byte, and copies the view
back into the caller's array. The view keeps the caller's address modulo 64 and its
writability, so the kernel is specialized as it would be for the caller's own array; arguments
that share memory with another argument are passed as they are (copies would break aliasing).
"""
from __future__ import annotations

import numpy as np

import tilepy as ct

GUARD = 64                                      # bytes on each side (a multiple of 64: alignment)
PATTERN = np.random.default_rng(22).integers(0, 256, GUARD, dtype=np.uint8)
MODES = ("interpret", "fast", "faithful")


class Guarded:
    """A copy of `array` between two guard margins; `.view` is what the kernel gets."""

    def __init__(self, array: np.ndarray):
        self.array = array
        nbytes = array.nbytes
        self.buf = np.empty(nbytes + 2 * GUARD + 128, np.uint8)
        self.start = (-self.buf.ctypes.data) % 64 + GUARD + array.ctypes.data % 64
        self.end = self.start + nbytes
        self.buf[self.start - GUARD:self.start] = PATTERN
        self.buf[self.end:self.end + GUARD] = PATTERN
        self.view = self.buf[self.start:self.end].view(array.dtype).reshape(array.shape)
        self.view[...] = array
        self.view.flags.writeable = array.flags.writeable

    def check(self, what: str):
        """AssertionError naming the bytes written outside the array, if any."""
        for side, lo in (("before the start", self.start - GUARD), ("past the end", self.end)):
            bad = np.nonzero(self.buf[lo:lo + GUARD] != PATTERN)[0]
            if bad.size:
                where = (GUARD - bad if side.startswith("before") else bad + 1).tolist()
                raise AssertionError(f"{what}: the kernel wrote bytes {side} of the array "
                                     f"(at distances {where} bytes, itemsize "
                                     f"{self.array.itemsize})")

    def copy_back(self):
        if self.array.flags.writeable:
            self.array[...] = self.view


def _guardable(args) -> dict[int, np.ndarray]:
    """{position: array} of the contiguous numpy arrays that share no memory with another
    argument."""
    arrays = {i: a for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim > 0}
    out = {}
    for i, a in arrays.items():
        shared = any(j != i and np.shares_memory(a, b) for j, b in arrays.items())
        if a.flags.c_contiguous and a.size and not shared:
            out[i] = a
    return out


def launch(grid, kernel, args, mode: str | None = None):
    """ct.launch (or the interpreter for mode "interpret"; the current CPU mode for None) with
    every contiguous numpy array argument guarded; results land in the caller's arrays."""
    guards = {i: Guarded(a) for i, a in _guardable(args).items()}
    call = tuple(guards[i].view if i in guards else a for i, a in enumerate(args))
    if mode == "interpret":
        from tilepy.interpret import launch as interpret
        interpret(grid, kernel, call)
    elif mode is None:
        ct.launch(None, grid, kernel, call)
    else:
        with ct.cpu_mode(mode):
            ct.launch(None, grid, kernel, call)
    name = getattr(kernel, "__name__", "kernel")
    for i, g in guards.items():
        g.check(f"{name} ({mode or 'cpu'}), argument {i}")
        g.copy_back()


def run_in(mode, grid, kernel, args) -> tuple:
    """Run `kernel` in `mode` on fresh copies of `args`; the args after the run."""
    mine = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    launch(grid, kernel, mine, mode)
    return mine


def run_everywhere(grid, kernel, args, modes=MODES) -> dict[str, tuple]:
    """Run `kernel` on fresh copies of `args` in every mode; {mode: args after the run}."""
    return {mode: run_in(mode, grid, kernel, args) for mode in modes}


class RunsByMode(dict):
    """run_everywhere's {mode: args after the run}, each mode run when first looked up: a module
    fixture's long kernel is then compiled by the first test of each mode, each inside the
    per-test CPU budget (conftest.py), instead of all modes by the module's first test."""

    def __init__(self, grid, kernel, args, modes=MODES):
        super().__init__()
        self._run, self._modes, self._failed = (grid, kernel, args), modes, {}

    def __missing__(self, mode):
        if mode not in self._modes:
            raise KeyError(mode)
        failed = self._failed.get(mode)
        if failed is not None:               # once per mode, like a failing fixture
            raise failed
        try:
            self[mode] = out = run_in(mode, *self._run)
        except Exception as e:
            self._failed[mode] = e
            raise
        return out
