"""c = a + b, one tile of TILE elements per block."""
import tilepy as ct


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ta = ct.load(a, index=(i,), shape=(TILE,))
    tb = ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=ta + tb)
