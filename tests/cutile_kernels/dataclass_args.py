"""Dataclasses as kernel arguments (cuTile's calling convention 3) and inside kernels: fields
that are arrays of different dtypes and ranks, scalars, a tuple, a list of arrays and a nested
dataclass; a Constant dataclass (every field a compile-time constant: a tile shape); an object
built in the kernel, changed with dataclasses.replace in a loop, merged by an `if`, with a
method, a property and __post_init__."""
import dataclasses
from dataclasses import dataclass
from typing import Any

import tilepy as ct


@dataclass(frozen=True)
class Tiling:
    tile: int
    repeat: int = 1


@dataclass(frozen=True)
class Operands:
    x: Any              # a 2-d float32 array
    y: Any              # a 1-d float16 array
    alpha: float
    offset: Any         # a tuple (int, float)


@dataclass(frozen=True)
class Job:
    ops: Operands       # a nested dataclass
    out: Any


@ct.kernel
def axpy_rows(job, cfg: ct.Constant):
    """out[bid] = x[bid, :] * alpha + y + offset[0] * offset[1], tiles of cfg.tile elements
    (a constant field), repeated cfg.repeat times."""
    bid = ct.bid(0)
    ops = job.ops
    a = ct.load(ops.x, (bid, 0), (1, cfg.tile)).reshape((cfg.tile,))
    b = ct.load(ops.y, (bid,), (cfg.tile,)).astype(ct.float32)
    acc = ct.zeros((cfg.tile,), dtype=ct.float32)
    for _ in ct.static_iter(range(cfg.repeat)):
        acc += a * ops.alpha + b
    ct.store(job.out, (bid,), acc + ops.offset[0] * ops.offset[1])


@dataclass(frozen=True)
class Sources:
    arrays: Any         # a list of 1-d float32 arrays
    weight: float


@ct.kernel
def weighted_sum(src, out, TILE: ct.Constant[int]):
    """out = weight * sum(i * arrays[i]): a list of arrays held by a dataclass, indexed at run
    time."""
    bid = ct.bid(0)
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for i in range(len(src.arrays)):
        acc += ct.load(src.arrays[i], (bid,), (TILE,)) * i
    ct.store(out, (bid,), acc * src.weight)


@dataclass(frozen=True)
class Accum:
    total: Any
    count: Any
    scale: int = 2

    def mean(self):
        return self.total / self.count

    @property
    def scaled(self):
        return self.total * self.scale


@dataclass(frozen=True)
class Writer:
    out: Any
    base: Any

    def __post_init__(self):
        ct.store(self.out, (self.base,), ct.full((4,), self.base, dtype=ct.float32))


@ct.kernel
def running_stats(x, out, n):
    """An Accum built in the kernel, carried by a loop (dataclasses.replace), chosen by an `if`,
    read through a method and a property; a Writer whose __post_init__ stores."""
    acc = Accum(ct.zeros((4,), dtype=ct.float32), 0.0)
    for i in range(n):
        acc = dataclasses.replace(acc, total=acc.total + ct.load(x, (i,), (4,)),
                                  count=acc.count + 1.0)
    if n > 2:
        acc = Accum(acc.total, acc.count, 3)
    ct.store(out, (0,), acc.mean())
    ct.store(out, (1,), acc.scaled)
    Writer(out, 2)
