"""Element-space access: gather / scatter with masks and padding, an atomic histogram, and a
spin lock built from atomic_cas / atomic_xchg (the pattern of cuTile's LayerNorm backward)."""
import tilepy as ct


@ct.kernel
def embedding(table, ids, out, D: ct.Constant[int], TILE: ct.Constant[int]):
    """out[i, :] = table[ids[i], :]; ids out of range give zeros; the ragged end is masked."""
    b = ct.bid(0)
    rows = b * TILE + ct.arange(TILE, dtype=ct.int32)
    n = ids.shape[0]
    idx = ct.gather(ids, rows, mask=rows < n, padding_value=-1)
    cols = ct.arange(D, dtype=ct.int32)
    vals = ct.gather(table, (idx[:, None], cols[None, :]), padding_value=0)
    ct.scatter(out, (rows[:, None], cols[None, :]), vals)


@ct.kernel
def scatter_add_permuted(x, perm, y, TILE: ct.Constant[int]):
    """y[perm[i]] = 2 * x[i] where x[i] > 0; other entries of y keep their value."""
    b = ct.bid(0)
    i = b * TILE + ct.arange(TILE, dtype=ct.int32)
    t = ct.gather(x, i, padding_value=0.0)
    p = ct.gather(perm, i, padding_value=-1)
    ct.scatter(y, p, t * 2, mask=t > 0)


@ct.kernel
def histogram(x, hist, TILE: ct.Constant[int]):
    b = ct.bid(0)
    v = ct.load(x, (b,), (TILE,), padding_mode=ct.PaddingMode.ZERO)
    valid = b * TILE + ct.arange(TILE, dtype=ct.int32) < x.shape[0]
    bins = ct.where(valid, v, -1)          # out-of-range bins are skipped by the bounds check
    ct.atomic_add(hist, bins, 1)


@ct.kernel
def locked_accumulate(x, acc, locks, GROUPS: ct.Constant[int], TILE: ct.Constant[int]):
    """Every block adds its tile into acc[g] under a spin lock (g = block % GROUPS)."""
    b = ct.bid(0)
    g = b % GROUPS
    t = ct.load(x, (b, 0), (1, TILE))
    while ct.atomic_cas(locks, g, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    cur = ct.load(acc, (g, 0), (1, TILE))
    ct.store(acc, (g, 0), cur + t)
    ct.atomic_xchg(locks, g, 0, memory_order=ct.MemoryOrder.RELEASE)


@ct.kernel
def system_counters(x, total, halves, count, last, TILE: ct.Constant[int]):
    """Counters another agent (the host, a peer GPU) may watch: system-scope atomics. Each block
    adds its tile into total (int32) and halves (float16), counts itself (acq_rel) and leaves its
    id in last if it is the largest so far."""
    b = ct.bid(0)
    t = ct.load(x, (b,), (TILE,))
    cols = ct.arange(TILE, dtype=ct.int32)
    sys = ct.MemoryScope.SYS
    ct.atomic_add(total, cols, t, memory_scope=sys)
    ct.atomic_add(halves, cols, t.astype(ct.float16), memory_scope=sys)
    ct.atomic_add(count, 0, 1, memory_order=ct.MemoryOrder.ACQ_REL, memory_scope=sys)
    ct.atomic_max(last, 0, b, memory_scope=sys)


@ct.kernel
def publish_then_read(data, flag, out, TILE: ct.Constant[int]):
    """Message passing between blocks with ordered loads and stores: block 0 writes data and
    then raises flag (release); every other block waits for the flag (acquire) and copies
    data into its row of out."""
    b = ct.bid(0)
    if b == 0:
        ct.store(data, (0,), ct.arange(TILE, dtype=ct.int32) * 3)
        ct.store(flag, (0,), 1, memory_order=ct.MemoryOrder.RELEASE,
                 memory_scope=ct.MemoryScope.DEVICE)
    else:
        while ct.load(flag, (0,), (), memory_order=ct.MemoryOrder.ACQUIRE,
                      memory_scope=ct.MemoryScope.DEVICE) == 0:
            pass
        ct.store(out, (b - 1, 0), ct.load(data, (0,), (TILE,)).reshape((1, TILE)))
