"""A module in the style of cuTile's tuned samples (AttentionFMHA.py, bench_matmul.py): it
imports the tuning module and uses `compiler_timeout` at import time of its functions only."""
from types import SimpleNamespace

import numpy as np

import tilepy as ct
from tilepy.tune import exhaustive_search

ConstInt = ct.Constant[int]


@ct.kernel
def scaled_copy(X, Y, scale, TILE: ConstInt):
    bid = ct.bid(0)
    x = ct.load(X, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(Y, index=(bid,), tile=x * scale)


@ct.kernel
def spin_unless_zero(X, Out):
    """Out = X + 1, then a loop that never ends unless X[0] is 0."""
    x = ct.load(X, index=(0,), shape=(16,))
    ct.store(Out, index=(0,), tile=x + 1)
    flag = ct.extract(x, 0, ()).item()
    while flag != 0:
        ct.atomic_add(Out, 0, 1)


@ct.kernel
def sum_into_first(Xs):
    """Xs[0] += Xs[1] + ... (a list of arrays: cuTile's list parameter)."""
    acc = ct.load(Xs[0], index=(0,), shape=(16,))
    for i in range(1, len(Xs)):
        acc += ct.load(Xs[i], index=(0,), shape=(16,))
    ct.store(Xs[0], index=(0,), tile=acc)


def tune_scaled_copy(X, Y, scale, tiles=(16, 64, 256), stream=None, **kw):
    search_space = [SimpleNamespace(TILE=t, occupancy=o) for t in tiles for o in (1, 2)]
    with ct.compiler_timeout(60):
        result = exhaustive_search(
            search_space, stream,
            grid_fn=lambda cfg: (ct.cdiv(X.shape[0], cfg.TILE), 1, 1),
            kernel=scaled_copy,
            args_fn=lambda cfg: (X, np.empty_like(Y), scale, cfg.TILE),
            hints_fn=lambda cfg: {"occupancy": cfg.occupancy},
            **kw)
    return result
