"""The sm_90a class of a kernel (ARCHITECTURE.md decision 8): K-loop mmas as warpgroup MMA.

The class is the same kernel planned again with every mma accumulator's warps along the rows,
interleaved by warpgroups (`assign_layouts(rows=True, warpgroups=True)`: MmaAcc with warps_n 1
and wg 1, fragment i of warp 4g + j holding rows ((g * FM + i) * 4 + j) * 16..), which is
wgmma's accumulator layout over A stored in its own row order
(cuda_c/include/tilepy/wgmma_ops.h). An mma takes wgmma (`mark_wgmma` marks both of its
pipelined operands, `Operand.wg`; the emitter spells them `tp::WgOp` and the mma `tp::wgmma_tc`)
when all of this holds, else it stays mma.sync in that class too:

- f16 x f16 or bf16 x bf16 into an f32 accumulator (`mmaf`), batch 1, K a multiple of 16;
- the accumulator is MmaAcc over all the block's warps along M, whole warpgroups (nt % 128)
  interleaved (wg);
- B is a load of the K-loop pipeline, stored N x K (transposed, K-major) or K x N (N-major),
  N one of wgmma's n tilepy spells (16, 32, 64, 128, 256); A, not transposed (wgmma's K-major
  A), is a load of the same pipeline, or the loop-invariant operand the pipeline stages once
  before the loop (attention's query tile), or a register tile in the accumulator's own layout
  (`a_in_registers`: attention's P, converted to f16/bf16 from the scores' accumulator):
  wgmma's register A operand, whose fragment per warp is the mma.m16n8k16 A fragment that the
  accumulator's registers of two 8-column blocks give, pairwise packed (wgmma_ops.h);
- every storage row is 32, 64 or a multiple of 128 bytes (the swizzle widths), and every
  pipeline buffer of the kernel a multiple of 1024 bytes (so each starts where the swizzle
  patterns repeat: descriptors with base offset 0).

`sm90a_layouts` returns None when no mma of the kernel qualifies: its source has no sm_90a class.

TMA (`tma_box`, from `mark_wgmma`): a wgmma operand is brought by `cp.async.bulk.tensor` (its StagedLoad's `tma`, a
`TmaBox`) when a tensor map built on the host from the array argument describes its view: the
view is the argument's own (make_tensor_view of the entry's pointer with its shape and stride
parameters, rank 2 to 5), its last dimension has the static stride 1, the others' strides and the
base are 16-byte aligned (the specialization facts, as for cp.async's vector copies), the tile
dims map to the view's in order with only the last two above 1, the storage is the tile as loaded
(a transposed operand only when the chain transposes it), and the padding is zero (TMA's fill).
The box is one 128/64/32-byte swizzle panel's columns by the storage rows (256, TMA's largest
box, where there are more: copies of 256 rows). Other wgmma operands keep the cp.async copy.

One group in flight (`deferred`, the pipeline's `wg_deferred`): where a warpgroup MMA's
accumulator is only carried (the loop's block argument feeds that mma alone, the mma's result
goes to the loop's `continue` alone, in the same place), the MMAs accumulate into the carried
registers in place and each iteration waits with `wgmma.wait_group 1`: iteration i's MMAs run
while i + 1's copies are awaited and issued. The stage refilled in iteration i is then the one
iteration i - 1's MMAs read, so the fetch moves after the body and its barrier
(cuda_c/emit_pipeline.py; where cp.async brings an operand, a barrier before the body too);
after the loop a wait_group 0 retires the last group before anything reads the accumulator.

The staged epilogue (`staged_stores`): a store of the entry's own block whose tile has the
class's accumulator layout (a warpgroup MMA's result or values computed from it element by
element: GEMM's C, attention's O) is written to shared memory in wgmma's swizzled layout (the K
loops' pipeline buffers, free after them), in passes of 64-row blocks where the buffers hold
less than the tile, and from there by TMA stores (`cp.async.bulk.tensor` shared -> global, which
clip the rows and columns outside the array) where a tensor map describes the view, else read
back by the threads in row order and stored 16 bytes at a time, masked at the edges
(cuda_c/emit_wgmma.py, include/tilepy/wgmma_ops.h `tma_store`, `staged_store`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module
from ..types import BF16, F16, F32, PartitionViewType
from .assign_layouts import LayoutPlan, assign_layouts
from .layouts import MmaAcc
from .memfacts import _through_assumes, contiguous_along, root_arg, tensor_view_op
from .pipeline import Operand, Pipeline, StagedLoad, plan_pipelines

WGMMA_N = (16, 32, 64, 128, 256)


def _row_ok(nbytes: int) -> bool:
    return nbytes in (32, 64) or nbytes % 128 == 0


def _operand_ok(s: StagedLoad, is_a: bool) -> bool:
    o = s.operand
    bt, r, c = o.shape
    if bt != 1 or o.round_tf32 or (is_a and o.trans):
        return False
    rows, cols = (c, r) if o.trans else (r, c)
    return rows % 8 == 0 and _row_ok(cols * o.elem.storage_bytes)


def _buffers_aligned(pipes: dict) -> bool:
    return all(s.operand.elems * s.operand.elem.storage_bytes % 1024 == 0
               for p in pipes.values() for s in p.loads) and \
        all(h.elems * h.elem.storage_bytes % 1024 == 0 for p in pipes.values() for h in p.hoisted)


def a_in_registers(la, lc: MmaAcc) -> bool:
    """A 16-bit lhs in the accumulator layout of the same warps feeds its A fragments from
    registers (tp::a_in_regs in tensorcore.h, and wgmma's register A): all warps along m, the
    same rows per warp."""
    return (isinstance(la, MmaAcc) and la.warps_n == 1 and lc.warps_n == 1
            and la.frags[0] == lc.frags[0] and la.batch == lc.batch and la.wg == lc.wg)


def _hoisted_ok(h: Operand, pipe: Pipeline, layouts: LayoutPlan) -> bool:
    """A loop-invariant A staged in wgmma's layout: whole swizzle rows, and every reader of its
    one buffer in the loop is a warpgroup MMA taking it as A (an mma.sync would read another
    layout)."""
    bt, r, c = h.shape
    if bt != 1 or h.trans or r % 8 or not _row_ok(c * h.elem.storage_bytes):
        return False
    users = [o for o in pipe.loop.walk() if any(v is h.value for v in o.operands)]
    return all(u.opdef.mma and u.lhs is h.value and u.rhs is not h.value and
               _wgmma_pair(u, pipe, layouts, False) is not None for u in users)


def _wgmma_pair(op, pipe: Pipeline, layouts: LayoutPlan,
                readers: bool = True) -> tuple[object, StagedLoad] | None:
    """(A, B) when op can be a warpgroup MMA, else None: B its staged load; A its staged load,
    its hoisted Operand, or None for A from registers (`readers` False: a hoisted A's other
    readers are not asked)."""
    lay = layouts.layout(op.result)
    a, b = op.lhs.type, op.rhs.type
    if op.name != "mmaf" or op.acc.type.elem != F32 or a.elem not in (F16, BF16) or b.elem != a.elem:
        return None
    if not isinstance(lay, MmaAcc) or lay.batch != 1 or lay.warps_n != 1 or not lay.wg or \
            layouts.nt != 32 * lay.warps_m:
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    if a.rank != 2 or k % 16 or n not in WGMMA_N:
        return None
    sb = next((s for s in pipe.loads if s.operand.value is op.rhs), None)
    if sb is None or not _operand_ok(sb, False):
        return None
    sa = next((s for s in pipe.loads if s.operand.value is op.lhs), None)
    if sa is not None:
        return (sa, sb) if _operand_ok(sa, True) else None
    ha = next((h for h in pipe.hoisted if h.value is op.lhs), None)
    if ha is not None:
        return (ha, sb) if not readers or _hoisted_ok(ha, pipe, layouts) else None
    return (None, sb) if a_in_registers(layouts.layout(op.lhs), lay) else None


def mark_wgmma(pipes: dict, layouts: LayoutPlan) -> int:
    """Mark the operands of the mmas that become warpgroup MMAs (Operand.wg) and those of them
    TMA brings (StagedLoad.tma); how many mmas did."""
    if not _buffers_aligned(pipes):
        return 0
    count = 0
    for pipe in pipes.values():
        marked = []
        pipe.wg_deferred = []
        for op in pipe.loop.body.block.ops:
            pair = _wgmma_pair(op, pipe, layouts) if op.opdef.mma else None
            if pair is not None:
                a, b = pair
                if isinstance(a, Operand):
                    a.wg = True
                for s in (a, b):
                    if isinstance(s, StagedLoad):
                        s.operand.wg = True
                        s.tma = tma_box(s)
                marked.append(op)
                if a is not None and deferred(op, pipe):   # (a register A is read until the
                    pipe.wg_deferred.append(op)            # wait: it waits in its own step)
        pipe.wg_mmas = marked
        count += len(marked)
    return count


def deferred(op, pipe: Pipeline) -> bool:
    """Can warpgroup MMA `op` of `pipe`'s loop leave its group in flight across iterations (see
    the module docstring)?"""
    blk = pipe.loop.body.block
    term = blk.ops[-1]
    if op.acc not in blk.args[1:] or term.name != "continue" or any(
            o.name in ("continue", "break") and o is not term for o in pipe.loop.walk()):
        return False     # (an early continue would skip the fetch at the body's end)
    place = blk.args.index(op.acc) - 1
    users = [(o, v) for o in pipe.loop.walk() for v in o.operands if v is op.acc or v is op.result]
    return sorted((id(o), v is op.result) for o, v in users) == sorted(
        [(id(op), False), (id(term), True)]) and term.operands[place] is op.result


@dataclass(frozen=True)
class TmaBox:
    """A TMA operand's tensor map: over array argument `array` (its entry parameter's name), a
    box of `box` elements per view dimension (the view's order), `swizzle` bytes (128/64/32);
    `rows`: the storage rows one copy brings (the box's second-to-last dimension)."""
    array: str
    box: tuple[int, ...]
    swizzle: int

    @property
    def rows(self) -> int:
        return self.box[-2]


def _own_view(tv_op, arr) -> bool:
    """The tensor view is array argument `arr`'s own: its shape and strides are the entry's
    `<arr>_shape_<d>` / `<arr>_stride_<d>` parameters, the last stride the static 1."""
    tv = tv_op.result.type
    shapes, strides = iter(tv_op.dynamicShape), iter(tv_op.dynamicStrides)
    for d, (extent, stride) in enumerate(zip(tv.shape, tv.strides)):
        if extent is not None or _through_assumes(next(shapes))[0].hint != f"{arr.hint}_shape_{d}":
            return False
        last = d == tv.rank - 1
        if last != (stride == 1) or (not last and (
                stride is not None or _through_assumes(next(strides))[0].hint != f"{arr.hint}_stride_{d}")):
            return False
    return True


def _view_box(view, elem) -> TmaBox | None:
    """The tensor map of tiles of partition view `view` (elements `elem`) in their own order, or
    None where TMA cannot describe it (see the module docstring)."""
    pv = view.type
    if not isinstance(pv, PartitionViewType):
        return None
    tv_op, arr = tensor_view_op(view), root_arg(view)
    rank, tile = pv.view.rank, pv.tile_shape
    if tv_op is None or arr is None or not arr.hint or not 2 <= rank <= 5 or len(tile) != rank or \
            pv.effective_dim_map != tuple(range(rank)) or any(t != 1 for t in tile[:-2]):
        return None
    if not contiguous_along(view, rank - 1) or not _own_view(tv_op, arr):
        return None
    sr, sc = tile[-2:]
    width = min(sc, 128 // elem.storage_bytes)            # a swizzle panel's columns
    rows = sr if sr <= 256 else 256                       # TMA's largest box
    if sr % rows:
        return None
    return TmaBox(arr.hint, (1,) * (rank - 2) + (rows, width), width * elem.storage_bytes)


def tma_box(s: StagedLoad) -> TmaBox | None:
    """The tensor map a wgmma operand's TMA copy reads through, or None where TMA cannot describe
    its view (see the module docstring): it keeps the cp.async copy."""
    o, pv = s.operand, s.load.view.type
    if not isinstance(pv, PartitionViewType) or o.trans != s.swap or pv.padding_value != "zero":
        return None
    return _view_box(s.load.view, o.elem)


STORE_ELEMS = (F16, BF16, F32)


@dataclass(frozen=True)
class StagedStore:
    """A store the class stages through shared memory: written out by TMA stores through `box`,
    or (None: no tensor map describes its view) by the threads' 16-byte stores."""
    box: TmaBox | None


def staged_store(op, layouts: LayoutPlan) -> StagedStore | None:
    """How store `op` is staged (include/tilepy/wgmma_ops.h `tma_store`, `staged_store`), or
    None where it keeps the plain store: a tile of 16-bit or f32 elements in the class's
    accumulator layout (MmaAcc, all warps along M by warpgroups: a warpgroup MMA's result, or
    values computed from it element by element), stored in its own dimension order, whose
    storage rows are whole swizzle rows (32, 64 or a multiple of 128 bytes) of whole 64-row
    blocks; by TMA where a tensor map describes the view (as a load's), else where the view's
    16-byte chunks are proven aligned. The emitter stages it in the pipeline's buffers when they
    hold at least 64 rows (emit_wgmma.py)."""
    t, pv = op.tile.type, op.view.type
    lay = layouts.layout(op.tile)
    if op.name != "store_view_tko" or t.elem not in STORE_ELEMS or t.rank < 2 or \
            not isinstance(pv, PartitionViewType) or pv.effective_dim_map != tuple(range(t.rank)) or \
            not isinstance(lay, MmaAcc) or lay.batch != 1 or lay.warps_n != 1 or not lay.wg or \
            layouts.nt != 32 * lay.warps_m:
        return None
    (sr, sc), eb = t.shape[-2:], t.elem.storage_bytes
    if sr % 64 or not _row_ok(sc * eb):
        return None
    box = _view_box(op.view, t.elem)
    if box is None and not contiguous_along(op.view, t.rank - 1):
        return None   # (16-byte stores not proven aligned: element stores, no better than the plain)
    return StagedStore(box)


def staged_stores(module: Module, layouts: LayoutPlan) -> dict:
    """id(store op) -> its StagedStore, for the stores of the entry's own block (not in a loop or
    branch: every K loop whose buffers it may take has run)."""
    out = {}
    for op in module.entry().body.block.ops:
        how = staged_store(op, layouts) if op.name == "store_view_tko" else None
        if how is not None:
            out[id(op)] = how
    return out


def sm90a_layouts(module: Module, nt: int, may_alias) -> LayoutPlan | None:
    """The sm_90a class's layouts, or None when no mma of `module` would be a warpgroup MMA."""
    if nt % 128 or not any(op.opdef.mma for op in module.walk()):
        return None
    layouts = assign_layouts(module, nt, rows=True, warpgroups=True)
    return layouts if mark_wgmma(plan_pipelines(module, layouts, may_alias, 2), layouts) else None
