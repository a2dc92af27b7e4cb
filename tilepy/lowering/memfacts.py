"""What the specialization proved about an array's memory, read back from the IR.

The frontend specializes on 16-byte base alignment and on strides (and the extent of a
unit-stride dimension) that span multiples of 16 bytes (frontend/specialize.py), and says so
with `assume div_by` ops on the entry arguments before `make_tensor_view` (frontend/context.py). A tile access can use 16-byte vector loads and stores (and 16-byte
cp.async copies) along tile dimension `d` of a partition view when
  * the base address is 16-byte aligned,
  * the tensor dimension that tile dimension `d` maps to has the static stride 1, and
  * every other stride, in bytes, is a multiple of 16
so that every chunk of 16 bytes that starts at a multiple of 16 bytes of a tile row is aligned.
(Whether a chunk is inside the tensor is checked at run time; `unit_extent_divisible` says when
no chunk can straddle the edge.) `root_arg` names the entry argument an array's memory comes from
(the hazard pass).
"""
from __future__ import annotations

from ..ir import Value
from ..types import PartitionViewType, TensorViewType


def _through_assumes(v: Value) -> tuple[Value, int]:
    """The value under a chain of `assume`s, and the largest div_by divisor among them."""
    div = 1
    while getattr(v, "op", None) is not None and v.op.name == "assume":
        p = v.op.predicate
        if p.kind == "div_by" and p.every is None:
            div = max(div, p.divisor)
        v = v.op.value
    return v, div


def tensor_view_op(view: Value):
    """The make_tensor_view op under a partition or tensor view value (or None)."""
    v = view
    while getattr(v, "op", None) is not None and v.op.name in ("make_partition_view", "assume"):
        v = v.op.operands[0]
    op = getattr(v, "op", None)
    return op if op is not None and op.name == "make_tensor_view" else None


def root_arg(v: Value) -> Value | None:
    """The entry block argument a pointer (or view) comes from, through views and assumes."""
    tv = tensor_view_op(v) if isinstance(v.type, (PartitionViewType, TensorViewType)) else None
    if tv is not None:
        v = tv.base
    v, _ = _through_assumes(v)
    return v if getattr(v, "op", None) is None and hasattr(v, "block") else None


def contiguous_along(view: Value, tile_dim: int) -> bool:
    """16-byte chunks along `tile_dim` of a partition view's tiles are aligned (see above)."""
    pv = view.type
    if not isinstance(pv, PartitionViewType):
        return False
    tv_op = tensor_view_op(view)
    if tv_op is None:
        return False
    tv: TensorViewType = tv_op.result.type
    nbytes = tv.elem.storage_bytes
    _, base_div = _through_assumes(tv_op.base)
    if base_div < 16:
        return False
    dim = pv.effective_dim_map[tile_dim]
    dynamic = iter(tv_op.dynamicStrides)
    for d, s in enumerate(tv.strides):
        if s is None:
            _, div = _through_assumes(next(dynamic))
            stride_bytes_div = div * nbytes
        else:
            stride_bytes_div = s * nbytes
        if d == dim:
            if s != 1:
                return False
        elif stride_bytes_div % 16:
            return False
    return True


def unit_extent_divisible(view: Value, n: int) -> bool:
    """The tensor dimension with the static stride 1 has an extent that is a multiple of n
    elements (statically or by its `assume div_by`), so an n-element chunk of it that starts at a
    multiple of n is either wholly inside the tensor or wholly outside."""
    tv_op = tensor_view_op(view)
    if tv_op is None:
        return False
    tv: TensorViewType = tv_op.result.type
    dynamic = iter(tv_op.dynamicShape)
    for extent, stride in zip(tv.shape, tv.strides):
        div = _through_assumes(next(dynamic))[1] if extent is None else extent
        if stride == 1:
            return div % n == 0
    return False
