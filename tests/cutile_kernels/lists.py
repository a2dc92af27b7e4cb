"""A list of arrays as one kernel argument: grouped GEMM (one persistent grid walks the tiles
of several problems of different sizes) and a sum over a list, as in cuTile's tests."""
import tilepy as ct

ConstInt = ct.Constant[int]


@ct.kernel
def grouped_matmul(As, Bs, Cs, num_blocks: ConstInt, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    tile_idx = ct.bid(0)
    problem_start = 0
    for g in range(len(As)):
        a, b, c = As[g], Bs[g], Cs[g]
        m_tiles = ct.num_tiles(a, 0, (tm, tk))
        k_tiles = ct.num_tiles(a, 1, (tm, tk))
        n_tiles = ct.num_tiles(b, 1, (tk, tn))
        count = m_tiles * n_tiles
        while tile_idx >= problem_start and tile_idx < problem_start + count:
            local = tile_idx - problem_start
            i, j = local // n_tiles, local % n_tiles
            acc = ct.zeros((tm, tn), dtype=ct.float32)
            for kk in range(k_tiles):
                ta = ct.load(a, (i, kk), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
                tb = ct.load(b, (kk, j), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
                acc = ct.mma(ta, tb, acc)
            ct.store(c, (i, j), tile=ct.astype(acc, c.dtype))
            tile_idx += num_blocks
        problem_start = problem_start + count


@ct.kernel
def sum_of_list(xs, out, TILE: ConstInt):
    bid = ct.bid(0)
    acc = ct.load(xs[0], index=(bid,), shape=(TILE,)).astype(ct.float32)
    for i in range(1, len(xs)):
        acc += ct.load(xs[i], index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(bid,), tile=acc.astype(out.dtype))


@ct.kernel
def alternating_sums(As, Bs, out, n, TILE: ConstInt):
    """out = the sum, over n steps, of the arrays of `lst`, which starts as As and alternates
    between Bs and As: a list of arrays chosen by a runtime `if` and carried by a loop."""
    lst = As
    acc = ct.zeros((TILE,), ct.float32)
    for i in range(n):
        for j in range(len(lst)):
            acc += ct.load(lst[j], (0,), (TILE,))
        if i % 2 == 0:
            lst = Bs
        else:
            lst = As
    ct.store(out, (0,), acc)
