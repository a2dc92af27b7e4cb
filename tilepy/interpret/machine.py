"""The abstract machine of spec chapter 6: a grid of tile blocks executing the entry's body.

Tile blocks run one after another in grid order (x fastest), each with its own register file;
one valid schedule of the unspecified one (6.8.2). Within a block, ops run in program order and
memory ops take effect immediately (6.8.3). Structured control flow follows 8.5: `for`, `loop`,
`if`, and the terminators continue/break/yield/return, which may sit inside nested `if`s.

Weak (non-atomic, `weak`-ordered) accesses of different tile blocks to the same bytes, one of
them a store, are a data race (8.6: weak assumes no concurrent access); with `check_races` the
interpreter reports them after the launch.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import TileLaunchError, TileValueError, at
from ..ir import Block, Operation
from ..ir.printer import print_op
from .arith import HANDLERS
from .memory import Memory
from .poison import Undef, describe, make, merge, propagate, require
from .printf import format_print

MOVES = {"reshape", "broadcast", "permute", "cat", "extract", "insert", "select", "reduce", "scan",
         "mmaf", "mmai", "mmaf_scaled", "assume", "pack", "unpack"}
# Memory ops that check the lanes they use themselves (masked or out-of-bounds lanes don't count).
SELF_CHECKED = {"load_view_tko", "store_view_tko", "load_ptr_tko", "store_ptr_tko",
                "atomic_red_view_tko"}


@dataclass
class OpEvent:
    """What the `on_op` hook receives after each op runs: the op (with `.loc`, the user's source
    line), the tile block, and the concrete operand and result values (numpy arrays for tiles).
    Inside reduce/scan bodies the values hold all positions being folded at once."""
    op: Operation
    block: tuple[int, int, int]
    inputs: list
    outputs: list
    undefined: list = field(default_factory=list)    # per output: bool mask of undefined lanes

    @property
    def loc(self):
        return self.op.loc

    def __str__(self) -> str:
        head = print_op(self.op).split("\n")[0]
        where = f"  ({self.loc})" if self.loc else ""
        vals = "".join(f"\n    -> {_short(v)}" for v in self.outputs)
        return f"[block {self.block}] {head}{where}{vals}"


def _short(v) -> str:
    if isinstance(v, np.ndarray):
        body = np.array2string(v, threshold=16, edgeitems=3, max_line_width=100)
        return f"{v.dtype}{list(v.shape)} {body}"
    return repr(v)


def print_ops(event: OpEvent):
    """A ready-made `on_op` hook: print every op with its results."""
    print(event, file=sys.stdout)


class KernelAssertionError(TileLaunchError):
    """A `cuda_tile.assert` failed in the interpreter."""


@dataclass
class Signal:
    kind: str          # "yield", "continue", "break", "return"
    values: list
    undefs: list = field(default_factory=list)


CONTROL: dict[str, Callable] = {}


def control(name):
    def deco(fn):
        CONTROL[name] = fn
        return fn
    return deco


@dataclass
class Machine:
    memory: Memory
    grid: tuple[int, int, int]
    globals: dict[str, int] = field(default_factory=dict)
    on_op: Callable[[OpEvent], Any] | None = None
    max_loop_iterations: int = 1 << 20
    check_races: bool = True
    accesses: list = field(default_factory=list)     # (block, addresses, store, memory op)
    assert_failures: list = field(default_factory=list)   # (assert op, block, tile element)


class BlockExec:
    """One tile block: its register file and the statement being executed."""

    def __init__(self, machine: Machine, block: tuple[int, int, int], linear: int):
        self.m = machine
        self.block = block
        self.linear = linear
        self.grid = machine.grid
        self.memory = machine.memory
        self.globals = machine.globals
        self.env: dict[int, Any] = {}
        self.undef: dict[int, Undef] = {}       # id(Value) -> its undefined lanes
        self.op_undefs: list = []               # per input of the op running now
        self.pending: dict[int, Undef] = {}     # result index -> lanes the op made undefined

    # ------------------------------------------------------------------------ running
    def bind(self, v, value, undef: Undef | None = None):
        self.env[id(v)] = value
        if undef is None:
            self.undef.pop(id(v), None)
        else:
            self.undef[id(v)] = undef

    def run_block(self, block: Block, batched: bool = False) -> Signal:
        for op in block.ops:
            if op.opdef.terminator:
                return Signal(op.name, [self.env[id(v)] for v in op.operands],
                              [self.undef.get(id(v)) for v in op.operands])
            sig = self.exec_op(op, batched)
            if sig is not None:
                return sig
        return Signal("yield", [])

    def exec_op(self, op: Operation, batched: bool = False) -> Signal | None:
        inputs = [self.env[id(v)] for v in op.operands]
        undefs = [self.undef.get(id(v)) for v in op.operands]
        self.op_undefs, self.pending = undefs, {}
        with at(op.loc):
            ctl = CONTROL.get(op.name)
            if ctl is not None:
                outputs, out_undefs, sig = ctl(self, op, inputs, undefs)
                if sig is not None:
                    return sig
            else:
                outputs, out_undefs = self._compute(op, inputs, undefs, batched)
        for i, (r, v) in enumerate(zip(op.results, outputs)):
            u = out_undefs[i] if out_undefs else None
            if i in self.pending:
                u = merge(u, self.pending[i], np.shape(v))
            self.bind(r, v, u)
        if self.m.on_op is not None:
            und = [self.undef[id(r)].mask if id(r) in self.undef else None for r in op.results]
            self.m.on_op(OpEvent(op, self.block, inputs, list(outputs), und))
        return None

    def _compute(self, op: Operation, inputs, undefs, batched):
        moves = op.opdef.elementwise or op.name in MOVES
        if not moves and op.name not in SELF_CHECKED:
            for u, v in zip(undefs, op.operands):
                require(u, f"{op.name} (operand {v.hint or ''}: {v.type})")
        args = _broadcast(inputs) if (batched and op.opdef.elementwise) else inputs
        outputs = [np.asarray(v) if isinstance(v, np.generic) else v      # 0-d stays an array
                   for v in HANDLERS[op.name](self, op, args)]
        return outputs, (propagate(self, op, args, undefs, outputs) if moves else None)

    def poison(self, op: Operation, mask, what: str, result: int = 0):
        """Mark lanes of the running op's result undefined (undefined behavior made them so)."""
        u = make(mask, describe(op, what))
        if u is not None:
            self.pending[result] = merge(self.pending.get(result), u, u.mask.shape)

    def require_lanes(self, i: int, lanes, what: str):
        """Operand i must be defined where `lanes` is true (memory ops check only what they use)."""
        require(self.op_undefs[i], what, lanes)

    def call_region(self, block: Block, inputs: list, batched: bool = False) -> list:
        """Bind a region's arguments, run it, return what its `yield` gives (reduce/scan)."""
        for a, v in zip(block.args, inputs):
            self.bind(a, v)
        sig = self.run_block(block, batched)
        if sig.kind != "yield":
            raise TileValueError(f"a {sig.kind} cannot leave this region")
        for u in sig.undefs:
            require(u, "the reduce/scan body")
        return sig.values

    def note_access(self, op: Operation, addr: np.ndarray, store: bool):
        if not self.m.check_races or op.attrs.get("memory_ordering_semantics") != "weak":
            return
        a = np.asarray(addr, dtype=np.uint64).reshape(-1)
        if a.size:
            self.m.accesses.append((self.linear, a, store, op))


def _access_bytes(op) -> int:
    """The element size of a memory access, from the operand the op table says it goes through."""
    through = op.opdef.reads or op.opdef.writes
    t = op.operand_group(through)[0].type
    return t.view.elem.storage_bytes if through == "view" else t.elem.pointee.storage_bytes


def _broadcast(values):
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    if len(arrays) < 2:
        return values
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [np.broadcast_to(v, shape) if isinstance(v, np.ndarray) else v for v in values]


# ------------------------------------------------------------------------------ control flow
@control("for")
def _for(ex: BlockExec, op: Operation, inputs, undefs):
    for u in undefs[:3]:
        require(u, "for (loop bound)")
    lb, ub, step, *carried = inputs
    cu = undefs[3:]
    elem = op.lowerBound.type.elem
    from .values import as_signed, as_unsigned, wrap
    read = as_unsigned if op.attrs.get("unsignedCmp") else as_signed
    i, hi, st = int(read(lb, elem)), int(read(ub, elem)), int(as_signed(step, elem))
    if st <= 0 and i < hi:
        raise TileValueError(f"for: the step must be positive (got {st})")
    body = op.body.block
    count = 0
    while i < hi:
        count += 1
        if count > ex.m.max_loop_iterations:
            raise TileValueError(f"for: more than {ex.m.max_loop_iterations} iterations")
        ex.bind(body.args[0], wrap(np.array(i % (1 << 64), dtype=np.uint64), elem))
        for a, v, u in zip(body.args[1:], carried, cu):
            ex.bind(a, v, u)
        sig = ex.run_block(body)
        if sig.kind == "return":
            return None, None, sig
        carried, cu = sig.values, sig.undefs
        i += st
    return carried, cu, None


@control("loop")
def _loop(ex: BlockExec, op: Operation, inputs, undefs):
    body = op.body.block
    carried, cu = inputs, undefs
    for _ in range(ex.m.max_loop_iterations):
        for a, v, u in zip(body.args, carried, cu):
            ex.bind(a, v, u)
        sig = ex.run_block(body)
        if sig.kind == "break":
            return sig.values, sig.undefs, None
        if sig.kind == "return":
            return None, None, sig
        carried, cu = sig.values, sig.undefs
    raise TileValueError(f"loop: no break after {ex.m.max_loop_iterations} iterations")


@control("if")
def _if(ex: BlockExec, op: Operation, inputs, undefs):
    require(undefs[0], "if (condition)")
    taken = op.thenRegion if bool(np.asarray(inputs[0])) else op.elseRegion
    if not taken.blocks:
        return [], [], None
    sig = ex.run_block(taken.block)
    if sig.kind == "yield":
        return sig.values, sig.undefs, None
    return None, None, sig      # continue/break/return leave the enclosing loop or kernel


@control("assert")
def _assert(ex: BlockExec, op: Operation, inputs, undefs):
    """Each false element prints the message with its index (stderr, as the CUDA C++ runtime
    does); the launch goes on and fails at its end (spec 8.5.1: the kernel may keep running)."""
    require(undefs[0], "assert (condition)")
    cond = np.asarray(inputs[0], dtype=bool)
    for e in np.flatnonzero(~cond.reshape(-1)):
        print(f"tilepy assertion failed: {op.message} (tile element {int(e)}, block "
              f"({ex.block[0]}, {ex.block[1]}, {ex.block[2]}))", file=sys.stderr)
        ex.m.assert_failures.append((op, ex.block, int(e)))
    return [], [], None


@control("print_tko")
def _print(ex: BlockExec, op: Operation, inputs, undefs):
    args = inputs[:len(op.args)]
    elems = [v.type.elem for v in op.args]
    sys.stdout.write(format_print(op.attrs["str"], args, elems))
    from .values import TOKEN
    return [TOKEN], [None], None


def unsupported_ops(entry: Operation) -> list[Operation]:
    return [o for o in entry.walk() if o is not entry and o.name not in HANDLERS
            and o.name not in CONTROL and not o.opdef.terminator]


def race_report(m: Machine) -> tuple[str, Operation] | None:
    """The first address two tile blocks accessed with weak ordering, one of them storing: its
    description and a store op that took part."""
    if not m.accesses:
        return None
    sizes = [_access_bytes(op) for *_, op in m.accesses]
    if len(set(sizes)) == 1:     # one element size: overlapping accesses share their address
        spans = [(b, a, s) for b, a, s, _ in m.accesses]
    else:                        # mixed sizes: compare bytes
        spans = [(b, (a[:, None] + np.arange(n, dtype=np.uint64)).reshape(-1), s)
                 for (b, a, s, _), n in zip(m.accesses, sizes)]
    addr = np.concatenate([a for _, a, _ in spans])
    blk = np.concatenate([np.full(a.size, b, dtype=np.int64) for b, a, _ in spans])
    st = np.concatenate([np.full(a.size, s, dtype=np.int8) for _, a, s in spans])
    who = np.concatenate([np.full(a.size, k, dtype=np.int64) for k, (_, a, _) in enumerate(spans)])
    order = np.lexsort((blk, addr))
    addr, blk, st, who = addr[order], blk[order], st[order], who[order]
    starts = np.flatnonzero(np.r_[True, addr[1:] != addr[:-1]])
    bad = (np.maximum.reduceat(blk, starts) != np.minimum.reduceat(blk, starts)) & \
        (np.maximum.reduceat(st, starts) > 0)
    if not bad.any():
        return None
    g = int(np.flatnonzero(bad)[0])
    end = starts[g + 1] if g + 1 < starts.size else addr.size
    blocks = sorted(set(int(b) for b in blk[starts[g]:end]))
    store = int(who[starts[g] + int(np.flatnonzero(st[starts[g]:end])[0])])
    return (f"{m.memory.describe(int(addr[starts[g]]))} (tile blocks {blocks[:4]})",
            m.accesses[store][3])
