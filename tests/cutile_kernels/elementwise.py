"""Vector add and saxpy, as in cuTile's quickstart."""
import tilepy as ct


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    a_tile = ct.load(a, index=(bid,), shape=(TILE,))
    b_tile = ct.load(b, index=(bid,), shape=(TILE,))
    result = a_tile + b_tile
    ct.store(c, index=(bid,), tile=result)


@ct.kernel
def saxpy(alpha, x, y, out, TILE: ct.Constant[int]):
    # alpha is a Python float at launch: a float32 scalar in the kernel
    i = ct.bid(0)
    tx = ct.load(x, index=(i,), shape=(TILE,))
    ty = ct.load(y, index=(i,), shape=(TILE,))
    ct.store(out, index=(i,), tile=(alpha * tx + ty).astype(out.dtype))
