"""cuTile's array views, written as cuTile code: tiled views (partitions and sliding windows),
array slices, and advanced indexing (rows picked by an index tile, Slice columns)."""
import tilepy as ct


@ct.kernel
def tiled_copy_plus_one(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y = x + 1 through tiled views (a partition: the steps are the tile shape)."""
    tx = x.tiled_view((TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ty = y.tiled_view((TM, TN))
    ct.static_assert(tx.tile_shape == (TM, TN))
    ct.static_assert(tx.traversal_steps == (TM, TN))
    i, j = ct.bid(0), ct.bid(1)
    ty.store((i, j), tx.load((i, j)) + 1)


@ct.kernel
def sliding_windows(x, out, T: ct.Constant[int], S: ct.Constant[int]):
    """out[w, :] = x[w*S : w*S + T] (zeros past the end): overlapping windows (S < T), and the
    window count from num_tiles (cdiv(n, S))."""
    windows = x.tiled_view(T, padding_mode=ct.PaddingMode.ZERO, traversal_steps=S)
    rows = out.tiled_view((1, T))
    w = ct.bid(0)
    n = windows.num_tiles(0)
    if w < n:
        rows.store((w, 0), ct.reshape(windows.load(w), (1, T)))


@ct.kernel
def strided_elements(x, out, SH: ct.Constant[int], SW: ct.Constant[int],
                     NH: ct.Constant[int], NW: ct.Constant[int]):
    """out = x[::SH, ::SW].ravel(): 0-d tiles of a tiled view with steps (SH, SW)."""
    tv = x.tiled_view((), traversal_steps=(SH, SW))
    dst = out.tiled_view(())
    for i in range(NH):
        for j in range(NW):
            dst.store(i * NW + j, tv.load((i, j)))


@ct.kernel
def tiled_accumulate(acc, x, TM: ct.Constant[int], TN: ct.Constant[int]):
    """acc += x, tile by tile, through atomic_store_add on a tiled view (a partition; partial
    tiles at the edges)."""
    i, j = ct.bid(0), ct.bid(1)
    tile = x.tiled_view((TM, TN), padding_mode=ct.PaddingMode.ZERO).load((i, j))
    acc.tiled_view((TM, TN)).atomic_store_add((i, j), tile)


@ct.kernel
def window_counts(counts, flags, T: ct.Constant[int], S: ct.Constant[int]):
    """counts[w*S : w*S + T] += 1 for each window w (overlapping when S < T), and flags ^= w
    over each window: the windows' updates collide on shared elements."""
    w = ct.bid(0)
    counts.tiled_view(T, traversal_steps=S).atomic_store_add(w, 1)
    flags.tiled_view(T, traversal_steps=S).atomic_store_xor(w, ct.full((T,), w, ct.int32))


@ct.kernel
def rows_of_slice(x, y, start, stop, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y[:stop-start] = x[start:stop, :TN] through x.slice (run-time bounds), zeros below."""
    part = x.slice(0, start, stop)
    tile = ct.load(part, (0, 0), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (0, 0), tile)


@ct.kernel
def gather_rows(x, idx, out, R: ct.Constant[int], C: ct.Constant[int]):
    """out[r, cols of block b] = x[idx[r], cols of block b]; rows past x read zeros."""
    rows = ct.load(idx, (0,), (R,))
    b = ct.bid(0)
    tile = ct.load_advanced_indexing(x, (rows, ct.Slice(b * C, C)),
                                     padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (0, b), tile)


@ct.kernel
def scatter_rows(x, idx, out, R: ct.Constant[int], C: ct.Constant[int]):
    """out[idx[r], cols of block b] = x[r, cols of block b]; rows past out are not written."""
    rows = ct.load(idx, (0,), (R,))
    b = ct.bid(0)
    ct.store_advanced_indexing(out, (rows, ct.Slice(b * C, C)), ct.load(x, (0, b), (R, C)))


@ct.kernel
def add_to_scalar(x):
    """x += 20 for a 0-d array, through gather/scatter with an empty index."""
    ct.scatter(x, (), ct.gather(x, ()) + 20)


@ct.kernel
def static_slice(x, y):
    """y = x[2:18]: constant bounds make the slice's extent a compile-time constant."""
    part = x.slice(axis=0, start=2, stop=18)
    ct.static_assert(part.shape[0] == 16)
    ct.store(y, (0,), ct.load(part, (0,), (part.shape[0],)))


@ct.kernel
def raw_memory(x, y, N: ct.Constant[int]):
    """Element offsets from the base pointer (array.get_raw_memory()): y[:N] = x[:N] read in
    reverse with the last two masked to -1; y[N:2N] holds the atomic adds' old values where
    the mask let them run (and 0 elsewhere), y[2N:3N] a masked compare-and-swap's (`expected`
    where masked off)."""
    src, dst = x.get_raw_memory(), y.get_raw_memory()
    ct.static_assert(src.dtype == ct.int32)
    off = ct.arange(N, dtype=ct.int32)
    t = src.load_offset(N - 1 - off, mask=off < N - 2, padding_value=-1)
    dst.store_offset(off, t)
    even = off % 2 == 0
    old = dst.atomic_add_offset(off, 10, mask=even)
    dst.store_offset(N + off, ct.where(even, old, 0))
    seen = dst.atomic_cas_offset(off, 16, 100, mask=off < N - 1)
    dst.store_offset(2 * N + off, seen)
