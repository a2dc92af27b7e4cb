"""Global memory of the abstract machine (spec 6.6): allocations addressed by 64-bit pointers.

Each kernel argument array (and each `global`) is one allocation, mapped at a synthetic,
deterministic byte address `(k + 1) << 40`; the allocation is a byte view of the caller's own
buffer, so stores land in the caller's arrays. An address outside every allocation, or not
aligned to its element size (spec 6.3.1), is undefined behavior that the interpreter reports
as an error instead of reading or writing anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TileValueError

SPAN_BITS = 40
_OFF_MASK = np.uint64((1 << SPAN_BITS) - 1)


@dataclass
class Allocation:
    name: str
    data: np.ndarray          # 1-d uint8 view of the bytes
    base: int
    readonly: bool = False    # a `constant` global: a store into it is undefined behavior


@dataclass
class Memory:
    allocs: list[Allocation] = field(default_factory=list)

    def add(self, name: str, flat: np.ndarray, readonly: bool = False) -> int:
        """Map a 1-d array's bytes; returns its base address."""
        data = flat.view(np.uint8) if flat.size else np.zeros(0, dtype=np.uint8)
        base = (len(self.allocs) + 1) << SPAN_BITS
        self.allocs.append(Allocation(name, data, base, readonly))
        return base

    def add_all(self, items: list[tuple[str, np.ndarray]]) -> list[int]:
        """Map the 1-d arrays of `items` ((name, array)); returns their base addresses. Arrays
        whose bytes overlap (arguments aliasing one buffer) share one allocation, each at its own
        offset in it, so the same byte has the same address whichever argument reaches it (the
        race check then sees blocks that write through one and read through the other)."""
        spans = [(_host_range(flat), k) for k, (_, flat) in enumerate(items)]
        order = sorted((r, k) for r, k in spans if r[1] > r[0])
        groups: list[list[int]] = []
        hi = None
        for (lo, end), k in order:
            if hi is not None and lo < hi:
                groups[-1].append(k)
                hi = max(hi, end)
            else:
                groups.append([k])
                hi = end
        bases = [0] * len(items)
        for k, (r, _) in enumerate(spans):
            if r[1] <= r[0]:
                bases[k] = self.add(items[k][0], items[k][1])
        for g in groups:
            lo = min(spans[k][0][0] for k in g)
            first = min(g, key=lambda k: spans[k][0][0])
            size = max(spans[k][0][1] for k in g) - lo
            data = np.lib.stride_tricks.as_strided(items[first][1].view(np.uint8), shape=(size,),
                                                   strides=(1,))
            names = [items[k][0] for k in g]
            name = names[0] if len(g) == 1 else f"{names[0]} (aliased by {', '.join(names[1:])})"
            base = self.add(name, data)
            for k in g:
                bases[k] = base + spans[k][0][0] - lo
        return bases

    def describe(self, addr: int) -> str:
        """An address as a user reads it: the allocation's name and the byte offset in it."""
        k, off = (addr >> SPAN_BITS) - 1, addr & int(_OFF_MASK)
        if 0 <= k < len(self.allocs):
            return f"byte {off} of {self.allocs[k].name} (address 0x{addr:x})"
        return f"address 0x{addr:x}"

    # ------------------------------------------------------------------------ access
    def locate(self, addr: np.ndarray, size: int, what: str):
        """(allocation index, byte offset) arrays for in-bounds, aligned addresses of `size`."""
        addr = np.asarray(addr, dtype=np.uint64).reshape(-1)
        k = (addr >> np.uint64(SPAN_BITS)).astype(np.int64) - 1
        off = (addr & _OFF_MASK).astype(np.int64)
        n = len(self.allocs)
        ok = (k >= 0) & (k < n)
        sizes = np.array([a.data.size for a in self.allocs] or [0], dtype=np.int64)
        ok &= off + size <= sizes[np.clip(k, 0, max(n - 1, 0))]
        if not ok.all():
            bad = int(addr[~ok][0])
            raise TileValueError(f"{what}: address 0x{bad:x} is outside every allocation "
                                 f"(out-of-bounds access is undefined behavior, spec 8.6)")
        if size > 1 and (off % size).any():
            bad = int(addr[(off % size) != 0][0])
            raise TileValueError(f"{what}: address 0x{bad:x} is not aligned to the {size}-byte "
                                 f"element size (spec 6.3.1)")
        return k, off

    def read(self, addr: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
        dtype = np.dtype(dtype)
        shape = np.shape(addr)
        k, off = self.locate(addr, dtype.itemsize, what)
        out = np.empty(k.size, dtype=dtype)
        for j in np.unique(k):
            sel = k == j
            view = self._typed(int(j), dtype)
            out[sel] = view[off[sel] // dtype.itemsize]
        return out.reshape(shape)

    def write(self, addr: np.ndarray, values: np.ndarray, what: str):
        """Store element by element in row-major order (the last of duplicate addresses wins)."""
        values = np.asarray(values).reshape(-1)
        dtype = values.dtype
        k, off = self.locate(addr, dtype.itemsize, what)
        for j in np.unique(k):
            if self.allocs[int(j)].readonly:
                raise TileValueError(f"{what}: store into {self.allocs[int(j)].name}, a constant "
                                     f"global (undefined behavior)")
            sel = k == j
            view = self._typed(int(j), dtype)
            view[off[sel] // dtype.itemsize] = values[sel]

    def _typed(self, j: int, dtype: np.dtype) -> np.ndarray:
        data = self.allocs[j].data
        n = data.size - data.size % dtype.itemsize
        return data[:n].view(dtype)


def flat_span(arr: np.ndarray) -> np.ndarray:
    """A 1-d view of the memory an array with non-negative strides spans (its allocation)."""
    if arr.size == 0:
        return arr.reshape(-1)[:0]
    item = arr.dtype.itemsize
    span = 1 + sum((d - 1) * (s // item) for d, s in zip(arr.shape, arr.strides))
    raw = arr.view(f"u{item}")           # as_strided needs a builtin dtype (not bf16/fp8)
    return np.lib.stride_tricks.as_strided(raw, shape=(span,), strides=(item,)).view(arr.dtype)


def _host_range(flat: np.ndarray) -> tuple[int, int]:
    """The host byte addresses [lo, hi) of a 1-d contiguous array."""
    lo = flat.__array_interface__["data"][0]
    return lo, lo + flat.nbytes
