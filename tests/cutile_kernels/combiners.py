"""reduce() and scan() with Python combiners: a combiner that reads a tile of the kernel,
reductions and scans of several tiles at once (Welford's mean and variance, a running argmax,
four running statistics), and argmax over a tile too large to stage in shared memory."""
import tilepy as ct


@ct.kernel
def row_combiners(x, w, p, sums, prefix, stats, best, where, BN: ct.Constant[int]):
    """Per row: sums and prefix sums modulo p + row (the combiner reads a tile of the kernel; p
    is a 0-d array), the weighted mean and sum of squared deviations (Welford: one reduce of
    three tiles), and the largest value so far with its column (the first on ties: a scan of a
    (1, BN) value tile and a (BN,) column tile, broadcast to one shape)."""
    r = ct.bid(0)
    modulus = ct.gather(p, ()) + r
    n = ct.load(x, (r, 0), (1, BN), padding_mode=ct.PaddingMode.ZERO)
    tn = ct.astype(n, ct.int32)
    ct.store(sums, (r,), ct.reduce(tn, 1, lambda a, b: (a + b) % modulus, 0))
    ct.store(prefix, (r, 0), ct.scan(tn, 1, lambda a, b: (a + b) % modulus, 0))

    def merge(mean_a, m2_a, w_a, mean_b, m2_b, w_b):
        w_ab = w_a + w_b
        frac = ct.where(w_ab == 0, 0, w_b / w_ab)
        d = mean_b - mean_a
        return mean_a + d * frac, m2_a + m2_b + d * d * w_a * frac, w_ab
    tw = ct.load(w, (r, 0), (1, BN), padding_mode=ct.PaddingMode.ZERO)
    mean, m2, total = ct.reduce((n, ct.zeros((1, BN), dtype=n.dtype), tw), 1, merge, (0, 0, 0))
    ct.store(stats, (r, 0), ct.reshape(mean, (1, 1)))
    ct.store(stats, (r, 1), ct.reshape(m2, (1, 1)))
    ct.store(stats, (r, 2), ct.reshape(total, (1, 1)))

    def better(v_a, i_a, v_b, i_b):
        take = v_b > v_a
        return ct.where(take, v_b, v_a), ct.where(take, i_b, i_a)
    t = ct.load(x, (r, 0), (1, BN), padding_mode=ct.PaddingMode.NEG_INF)
    v, i = ct.scan((t, ct.arange(BN, dtype=ct.int32)), 1, better, (-1.0e30, -1))
    ct.store(best, (r, 0), v)
    ct.store(where, (r, 0), i)


@ct.kernel
def suffix_stats(x, out, BM: ct.Constant[int], BN: ct.Constant[int]):
    """From each element to the end of its column: sum, maximum, count of positives and
    minimum (one reverse scan of four tiles along axis 0)."""
    t = ct.load(x, (0, 0), (BM, BN))
    pos = ct.astype(t > 0, ct.int32)

    def comb(s_a, hi_a, n_a, lo_a, s_b, hi_b, n_b, lo_b):
        return s_a + s_b, ct.maximum(hi_a, hi_b), n_a + n_b, ct.minimum(lo_a, lo_b)
    s, hi, n, lo = ct.scan((t, t, pos, t), 0, comb, (0, -1.0e30, 0, 1.0e30), reverse=True)
    ct.store(out, (0, 0, 0), ct.reshape(s, (1, BM, BN)))
    ct.store(out, (1, 0, 0), ct.reshape(hi, (1, BM, BN)))
    ct.store(out, (2, 0, 0), ct.reshape(ct.astype(n, t.dtype), (1, BM, BN)))
    ct.store(out, (3, 0, 0), ct.reshape(lo, (1, BM, BN)))


@ct.kernel
def argmax_whole(x, out, N: ct.Constant[int]):
    """argmax and argmin of a whole 1-D tile (values and indices reduced together)."""
    t = ct.load(x, (0,), (N,))
    ct.scatter(out, 0, ct.argmax(t))
    ct.scatter(out, 1, ct.argmin(t))
