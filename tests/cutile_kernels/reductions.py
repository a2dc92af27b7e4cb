"""argmax / argmin per row, cumsum along rows and columns, and a custom reduce."""
import tilepy as ct


@ct.kernel
def row_argmax(x, out_max, out_min, BN: ct.Constant[int]):
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, BN), padding_mode=ct.PaddingMode.NEG_INF)
    ct.store(out_max, (r,), ct.argmax(t, axis=1))
    u = ct.load(x, (r, 0), (1, BN), padding_mode=ct.PaddingMode.POS_INF)
    ct.store(out_min, (r,), ct.argmin(u, axis=1))


@ct.kernel
def cumsum_rows(x, y, BM: ct.Constant[int], BN: ct.Constant[int]):
    bm = ct.bid(0)
    t = ct.load(x, (bm, 0), (BM, BN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (bm, 0), ct.cumsum(t, axis=1))


@ct.kernel
def cumsum_1d(x, y, TILE: ct.Constant[int]):
    """Inclusive prefix sum over the whole array: each block adds the sums of the blocks before."""
    b = ct.bid(0)
    carry = ct.zeros((), dtype=x.dtype)
    for k in range(b):
        carry += ct.sum(ct.load(x, (k,), (TILE,), padding_mode=ct.PaddingMode.ZERO))
    t = ct.load(x, (b,), (TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (b,), ct.cumsum(t) + carry)


@ct.kernel
def custom_reduce(x, out_absmax, out_rev, BN: ct.Constant[int]):
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, BN), padding_mode=ct.PaddingMode.ZERO)
    m = ct.reduce(t, 1, lambda a, b: ct.maximum(ct.abs(a), ct.abs(b)), 0.0)
    ct.store(out_absmax, (r,), m)
    ct.store(out_rev, (r, 0), ct.cumprod(t, axis=1, reverse=True))


@ct.kernel
def modular_row_sums(x, sums, prefix, BN: ct.Constant[int]):
    """Row sums and prefix sums modulo a modulus of each block: the combiner reads ct.bid."""
    r = ct.bid(0)

    def add_mod(a, b):
        return (a + b) % (ct.bid(0) + 5)
    t = ct.load(x, (r, 0), (1, BN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(sums, (r,), ct.reduce(t, 1, add_mod, 0))
    ct.store(prefix, (r, 0), ct.scan(t, 1, add_mod, 0))
