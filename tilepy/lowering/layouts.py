"""Layout encodings: which thread of a tile block holds which element of a tile, in which slot.

Each encoding is a small frozen dataclass mirroring one C++ layout type of
tilepy/cuda_c/include/tilepy/layout.h (cuda_c/layout_types.py spells it). `slots(nt, tid)`
computes, in Python, what that type computes in C++: for each slot of thread `tid`, the
row-major linear index of the element it holds (None for a slot past the end) and whether the
thread owns the element (stores it, when the layout replicates elements). Tests check the two
agree and that every element is owned exactly once; the assignment pass (assign_layouts.py)
only needs the fields.

  Cyclic(n)            element e in thread e % nt (the fallback)
  Blocked(n, vec)      chunks of vec consecutive elements, chunk c in thread c % nt: vector
                       memory accesses, coalesced across a warp
  BlockedRows(m, q)    the rows of a Blocked tile reduced along its last dimension, each row's q
                       chunks in q lanes of one warp (replicated there)
  MmaAcc(b, m, n, wm, wn, wg)   the mma.sync m16n8 accumulator: wm x wn warps, 16 x 8 fragments;
                       wg 1 (wn 1, wm a multiple of 4): each warpgroup's warps interleaved by 16
                       rows, as wgmma's m64 accumulator (the sm_90a class, lowering/wgmma.py)
  MmaRows(b, m, wm, wn, wg)     the rows of an MmaAcc tile reduced along n (replicated in a quad)
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cyclic:
    numel: int
    vec = 1
    replicated = False

    def slots(self, nt: int, tid: int):
        k = -(-self.numel // nt)
        return [(e, True) if e < self.numel else (None, False)
                for e in (s * nt + tid for s in range(k))]


@dataclass(frozen=True)
class Blocked:
    numel: int
    vec: int
    replicated = False

    def slots(self, nt: int, tid: int):
        g = -(-self.numel // (nt * self.vec))
        out = []
        for s in range(g * self.vec):
            e = ((s // self.vec) * nt + tid) * self.vec + s % self.vec
            out.append((e, True) if e < self.numel else (None, False))
        return out


@dataclass(frozen=True)
class BlockedRows:
    rows: int
    lanes: int

    @property
    def numel(self) -> int:
        return self.rows

    vec = 1

    @property
    def replicated(self) -> bool:
        return self.lanes > 1

    def slots(self, nt: int, tid: int):
        if nt == 1:
            return [(r, True) for r in range(self.rows)]
        k = -(-(self.rows * self.lanes) // nt)
        out = []
        for s in range(k):
            r = (s * nt + tid) // self.lanes
            out.append((r, tid % self.lanes == 0) if r < self.rows else (None, False))
        return out


@dataclass(frozen=True)
class MmaAcc:
    batch: int
    m: int
    n: int
    warps_m: int
    warps_n: int
    wg: int = 0
    vec = 2
    replicated = False

    @property
    def numel(self) -> int:
        return self.batch * self.m * self.n

    @property
    def frags(self) -> tuple[int, int]:
        return self.m // self.warps_m // 16, self.n // self.warps_n // 8

    def slots(self, nt: int, tid: int):
        if nt != 32 * self.warps_m * self.warps_n:
            return [(e, True) for e in range(self.numel)]
        fm, fn = self.frags
        warp, lane = divmod(tid, 32)
        wm, wn = divmod(warp, self.warps_n)
        out = []
        for b in range(self.batch):
            for i in range(fm):
                for j in range(fn):
                    for q in range(4):
                        r = mma_row0(self, wm, i) + lane // 4 + 8 * (q >> 1)
                        c = wn * (self.n // self.warps_n) + j * 8 + 2 * (lane % 4) + (q & 1)
                        out.append(((b * self.m + r) * self.n + c, True))
        return out


@dataclass(frozen=True)
class MmaRows:
    batch: int
    m: int
    warps_m: int
    warps_n: int
    wg: int = 0
    vec = 1
    replicated = True

    @property
    def numel(self) -> int:
        return self.batch * self.m

    def slots(self, nt: int, tid: int):
        if nt != 32 * self.warps_m * self.warps_n:
            return [(e, True) for e in range(self.numel)]
        fm = self.m // self.warps_m // 16
        warp, lane = divmod(tid, 32)
        wm, wn = divmod(warp, self.warps_n)
        own = lane % 4 == 0 and wn == 0
        return [(b * self.m + mma_row0(self, wm, i) + lane // 4 + 8 * h, own)
                for b in range(self.batch) for i in range(fm) for h in range(2)]


Layout = Cyclic | Blocked | BlockedRows | MmaAcc | MmaRows


def mma_row0(lay: MmaAcc | MmaRows, wm: int, i: int) -> int:
    """The first row of fragment i of warp row wm (tp::mma_row0)."""
    fm = lay.m // lay.warps_m // 16
    return ((wm // 4 * fm + i) * 4 + wm % 4) * 16 if lay.wg else (wm * fm + i) * 16


def mma_warps(batch: int, m: int, n: int, nt: int, prefer_rows: bool,
              warpgroups: bool = False) -> MmaAcc | None:
    """The accumulator layout of a (batch x) m x n mma on nt threads, or None when the tile does
    not cover the warps with whole 16 x 8 fragments. Balanced warp tiles (least shared-memory
    traffic per warp) unless the rows are reduced, where all warps go along m so that a row
    stays within one warp; `warpgroups` (with prefer_rows): those warps interleaved by
    warpgroups where they make whole ones (wg 1)."""
    nw = nt // 32
    options = [(wm, nw // wm) for wm in range(1, nw + 1)
               if nw % wm == 0 and m % (16 * wm) == 0 and n % (8 * (nw // wm)) == 0]
    if not options or nt % 32:
        return None
    if prefer_rows:
        wm, wn = max(options)
    else:
        wm, wn = min(options, key=lambda o: (m // o[0] + n // o[1], -o[0]))
    return MmaAcc(batch, m, n, wm, wn, int(warpgroups and prefer_rows and wn == 1 and wm % 4 == 0))


def rows_of(parent, last: int):
    """The layout of `parent`'s rows after reducing its last dimension (of extent `last`) with
    butterflies, or None where only the shared-memory path applies."""
    if isinstance(parent, MmaAcc) and last == parent.n:
        return MmaRows(parent.batch, parent.m, parent.warps_m, parent.warps_n, parent.wg)
    if isinstance(parent, Blocked) and last % parent.vec == 0 and last // parent.vec <= 32:
        return BlockedRows(parent.numel // last, last // parent.vec)
    return None


def rows_path(src, res, shape: tuple, dim: int) -> bool:
    """Whether reducing a tile of `shape` in layout `src` along `dim` into layout `res` takes the
    register/shuffle path of layout_ops.h (mirrors tp::rows_path)."""
    if dim != len(shape) - 1:
        return False
    if isinstance(src, MmaAcc) and isinstance(res, MmaRows):
        return (src.batch, src.m, src.warps_m, src.warps_n, src.wg) == \
            (res.batch, res.m, res.warps_m, res.warps_n, res.wg) and shape[-1] == src.n
    if isinstance(src, Blocked) and isinstance(res, BlockedRows):
        return shape[-1] == res.lanes * src.vec and res.lanes <= 32 and \
            src.numel == res.rows * res.lanes * src.vec
    return False


def broadcast_in_registers(src, res, src_shape: tuple, dst_shape: tuple) -> bool:
    """Whether broadcasting rows (..., 1) -> (..., n) moves no data (mirrors tp::bcast_path)."""
    if len(src_shape) != len(dst_shape) or not src_shape or src_shape[-1] != 1:
        return False
    if isinstance(src, MmaRows) and isinstance(res, MmaAcc):
        return (src.batch, src.m, src.warps_m, src.warps_n, src.wg) == \
            (res.batch, res.m, res.warps_m, res.warps_n, res.wg)
    if isinstance(src, BlockedRows) and isinstance(res, Blocked):
        return res.numel == src.rows * src.lanes * res.vec
    return False
