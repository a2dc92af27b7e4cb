"""Loops with runtime branches: for / while / break / continue, if-elif-else on runtime values,
helpers that return from inside a runtime `if`, tuples, module constants, static_iter, `with`
over @contextlib.contextmanager functions."""
from contextlib import contextmanager

import tilepy as ct

SCALE = 0.5                     # module-level constants are compile-time values
STEPS = (1, 2, 3)


def sign_or_zero(t, limit):
    """A helper with returns inside runtime branches (inlined into the kernel)."""
    s = ct.sum(t)
    if s > limit:
        return t * SCALE
    elif s < -limit:
        return -t
    return ct.zeros(t.shape, dtype=t.dtype)


def minmax(t):
    return ct.min(t), ct.max(t)


@ct.kernel
def branchy(x, out, stats, n, limit, TILE: ct.Constant[int]):
    acc = ct.zeros((TILE,), dtype=ct.float32)
    count = 0
    for i in range(n):
        t = ct.load(x, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO)
        if i % 4 == 3:
            continue                      # skip every 4th tile
        if i == 0:
            acc = acc + t
        elif i % 2 == 0:
            acc = acc - t * 2
        else:
            acc = acc + sign_or_zero(t, limit)
        count += 1
    lo, hi = minmax(acc)
    ct.store(out, (0,), acc)
    ct.store(stats, (0,), ct.cat((ct.full((1,), lo, ct.float32), ct.full((1,), hi, ct.float32)), 0))
    ct.store(stats, (1,), ct.full((2,), count, ct.float32))


@ct.kernel
def find_first_above(x, out, threshold, TILE: ct.Constant[int]):
    """Index of the first tile whose maximum exceeds threshold (-1 if none): while + break."""
    i = 0
    found = -1
    n = ct.num_tiles(x, axis=0, shape=(TILE,))
    while i < n:
        t = ct.load(x, (i,), (TILE,), padding_mode=ct.PaddingMode.NEG_INF)
        if ct.max(t) > threshold:
            found = i
            break
        i += 1
    ct.store(out, (0,), ct.full((1,), found, ct.int32))


@ct.kernel
def collatz_steps(x, out, TILE: ct.Constant[int]):
    """Per block: the number of Collatz steps of a scalar start value (a data-dependent while)."""
    b = ct.bid(0)
    v = ct.load(x, (b,), (1,)).item()
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    ct.store(out, (b,), ct.full((1,), steps, ct.int32))


@ct.kernel
def early_exit(x, y, n, TILE: ct.Constant[int]):
    """Blocks past n return early; the others scale by a static_iter-unrolled product."""
    b = ct.bid(0)
    if b >= n:
        return
    t = ct.load(x, (b,), (TILE,))
    for s in ct.static_iter(STEPS):
        t = t * s
    ct.store(y, (b,), t)


# ---- `with` over @contextmanager: the clean-up runs at the end and before break and return
LOG = 32                        # entries per block in with_cleanup's log (the first: the count)


def note(log, b, v):
    n = ct.gather(log, b * LOG) + 1
    ct.scatter(log, b * LOG, n)
    ct.scatter(log, b * LOG + n, v)


@contextmanager
def bracket(log, b, first, last):
    note(log, b, first)
    yield first * 10
    note(log, b, last)


@contextmanager
def bracket_twice(log, b, v):
    """The yield inside the generator's own `with`: leaving it runs both clean-ups."""
    with bracket(log, b, v, v + 1) as inner:
        note(log, b, v + 2)
        got = yield inner + 1
        ct.static_assert(got is None)
        note(log, b, v + 3)
    note(log, b, v + 4)


@ct.kernel
def with_cleanup(log, limit):
    b = ct.bid(0)
    i = 0
    while True:
        with bracket(log, b, 100 + i, 200 + i) as token:
            note(log, b, token)
            if i == limit:
                break                  # leaves the `with`: its clean-up first
        i += 1
    with bracket_twice(log, b, 50) as v:
        note(log, b, v)
        if b == 1:
            return                     # the clean-ups run, then the block ends
    note(log, b, 7)


# ---- values carried through loops and merged by branches as their parts (cuTile's aggregates)
def first_above(x, limit, n):
    """A helper returning from inside a while: the index of the first element above limit."""
    i = 0
    while i < n:
        if ct.gather(x, i) > limit:
            return i
        i += 1
    return -1


def make_offset(k):
    def add(v, extra=k * 2):
        return v + k + extra
    return add


@ct.kernel
def carried_aggregates(x, y, z, out, n, TILE: ct.Constant[int], N: ct.Constant[int]):
    # a tuple of tiles carried by a for loop (Fibonacci pairs), its structure fixed
    row = ct.bid(0) * 6                    # each block writes its 6 rows of out, 2 tiles of z
    pair = ct.load(x, (0,), (TILE,)), ct.load(x, (1,), (TILE,))
    for i in range(n):
        pair = pair[1], pair[0] + pair[1]
    ct.store(out, (row,), pair[1])
    # a tiled view carried by a for loop: x's first tile, then y's
    tv = x.tiled_view(TILE)
    tv_z = z.tiled_view(TILE)
    for i in range(2):
        tv_z.store(ct.bid(0) * 2 + i, tv.load(0) * 2)
        tv = y.tiled_view(TILE)
    # a tuple of a number and a tile carried by a while loop
    state = (0, ct.zeros((TILE,), ct.float32))
    while state[0] < n:
        state = (state[0] + 1, state[1] + ct.load(y, (0,), (TILE,)))
    ct.store(out, (row + 1,), state[1])
    # a tuple first defined inside a `while True`, at its only break
    j = 0
    while True:
        if j > 2:
            found = (j, ct.load(x, (0,), (TILE,)) + j)
            break
        j += 1
    ct.store(out, (row + 2,), found[1])
    # one closure per branch of a runtime `if`: the captured value and the default merge
    if ct.bid(0) == 0:
        f = make_offset(1)
    else:
        f = make_offset(10)
    ct.store(out, (row + 3,), f(ct.load(x, (0,), (TILE,))))
    # one tiled view per branch of a runtime `if`: their arrays merge
    either = x.tiled_view(TILE) if ct.bid(0) == 0 else y.tiled_view(TILE)
    ct.store(out, (row + 5,), either.load(1))
    # a helper returning from inside a while loop
    k = first_above(y, 2.2, n)
    # strictly typed constant folding: N + ct.int16(2) is an int16 constant
    t = N + ct.int16(2)
    ct.static_assert(t == N + 2)
    small = ct.arange(TILE, dtype=ct.int8) + t
    ct.static_assert(small.dtype == ct.int16)
    ct.store(out, (row + 4,), ct.astype(small, ct.float32) + k)
