"""Tile transpose: y = x.T, one T x T tile per block (the edges padded with zeros on load; the
out-of-bounds part of a stored tile is dropped)."""
import tilepy as ct


@ct.kernel
def transpose(x, y, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(i, j), shape=(T, T), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(j, i), tile=ct.transpose(t))
