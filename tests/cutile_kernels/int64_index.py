"""Arrays indexed with int64 (cuTile's IndexedWithInt64): extents and strides past 2^31 - 1, a
list of such arrays, and their extents read in the kernel as int64 scalars."""
from typing import Annotated

import tilepy as ct

ConstInt = ct.Constant[int]
ListOfInt64Indexed = Annotated[list, ct.ListAnnotation(element=ct.IndexedWithInt64)]


@ct.kernel
def inc_tiles_from(x: ct.IndexedWithInt64, y: ct.IndexedWithInt64, first, TILE: ConstInt):
    """y = x + 1 on the tiles (TILE, 1) from tile `first` on: one tile per block."""
    b = first + ct.bid(0)
    t = ct.load(x, (b, 0), (TILE, 1), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (b, 0), t + 1)


@ct.kernel
def sum_list_and_extents(arrays: ListOfInt64Indexed, out: ct.IndexedWithInt64,
                         extents: ct.IndexedWithInt64, TILE: ConstInt):
    """out = the sum of the arrays; extents = (out.shape[0], the number of tiles of out)."""
    bid = ct.bid(0)
    res = ct.zeros((TILE, 1), dtype=out.dtype)
    for i in range(len(arrays)):
        res += ct.load(arrays[i], (bid, 0), (TILE, 1), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (bid, 0), res)
    n = out.shape[0]
    ct.static_assert(n.dtype == ct.int64)
    if bid == 0:
        ct.scatter(extents, 0, n)
        ct.scatter(extents, 1, ct.num_tiles(out, 0, (TILE, 1)))


@ct.kernel
def inc_tiles_from_int32(x, y, first, TILE: ConstInt):
    """inc_tiles_from without the annotation: its arrays' extents and strides are int32."""
    b = first + ct.bid(0)
    ct.store(y, (b, 0), ct.load(x, (b, 0), (TILE, 1)) + 1)


@ct.kernel
def scalar_marked_int64_indexed(x, n: ct.IndexedWithInt64):
    ct.store(x, (0,), ct.full((1,), n, x.dtype))


@ct.kernel
def inc_rows(x: ct.IndexedWithInt64, y: ct.IndexedWithInt64, TILE: ConstInt):
    """y[r, :TILE] = x[r, :TILE] + 1 for row r = bid(0): rows a stride past 2^31 apart."""
    r = ct.bid(0)
    ct.store(y, (r, 0), ct.load(x, (r, 0), (1, TILE)) + 1)
