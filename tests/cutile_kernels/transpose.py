"""2-D transpose: with ct.transpose, and with a permuted load order."""
import tilepy as ct


@ct.kernel
def transpose(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    tile = ct.load(x, index=(bm, bn), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(bn, bm), tile=ct.transpose(tile))


@ct.kernel
def transpose_by_order(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    # order=(1, 0) loads the tile of x at (bn, bm) already transposed: shape (TN, TM) of x.T
    tile = ct.load(x, index=(bn, bm), shape=(TN, TM), order=(1, 0))
    ct.store(y, index=(bn, bm), tile=tile)
