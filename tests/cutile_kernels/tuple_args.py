"""Tuples as kernel arguments (cuTile's aggregates): nested, of arrays of different dtypes and
ranks, of scalars, with some items Constant (tuple annotations), ScalarInt64 items, empty."""
import tilepy as ct

ConstInt = ct.Constant[int]


@ct.kernel
def scaled_pair_sum(pair, out, coeffs):
    """out = pair[0] * coeffs[0] + pair[1] (a 2-d f32 and a 1-d f16 array) + coeffs[1][0] *
    coeffs[1][1]: a tuple of two arrays of different dtypes and ranks, a nested scalar tuple."""
    bid = ct.bid(0)
    a = ct.load(pair[0], (bid, 0), (1, 16)).reshape((16,))
    b = ct.load(pair[1], (bid,), (16,)).astype(ct.float32)
    ct.store(out, (bid,), a * coeffs[0] + b + coeffs[1][0] * coeffs[1][1])


@ct.kernel
def tiled_offset(x, out, cfg: tuple[tuple[ConstInt, int], ConstInt]):
    """Tiles of cfg[0][0] elements (a constant inside a nested tuple), plus the run-time
    cfg[0][1] times the constant cfg[1]."""
    bid = ct.bid(0)
    t = ct.load(x, (bid,), (cfg[0][0],))
    ct.store(out, (bid,), t + cfg[0][1] * cfg[1])


@ct.kernel
def wide_difference(x, scalars: tuple[ct.ScalarInt64, int], out, empty):
    """scalars[0] is an int64 past 2^32; len(empty) of an empty tuple is 0."""
    t = ct.load(x, (0,), (8,))
    ct.store(out, (0,), t + scalars[0] - scalars[1] + len(empty))


@ct.kernel
def pick_by_index(xs, out, TILE: ConstInt):
    """A tuple of arrays of one dtype and rank indexed at run time, as a list."""
    bid = ct.bid(0)
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for i in range(len(xs)):
        acc += ct.load(xs[i], (bid,), (TILE,)) * (i + 1)
    ct.store(out, (bid,), acc)
