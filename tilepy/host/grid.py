"""The grid of a launch: 1 to 3 non-negative extents, each at most GRID_LIMIT (spec 8.3.10),
as three ints. Used by every way to run a kernel (tilepy.launch, AOT, compile_module's
run_cpu, the interpreter) and by the launch fast path's limit check."""
from __future__ import annotations

import numpy as np

from ..errors import TileValueError

GRID_LIMIT = 2**24 - 1     # spec 8.3.10: grid dimensions are limited to 2^24-1 per axis


def normalize_grid(grid) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, (bool, np.bool_)):
        grid = (int(grid),)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise TileValueError(f"grid must be an int or a tuple of 1 to 3 ints (got {grid!r})")
    out = []
    for g in grid:
        if isinstance(g, (bool, np.bool_)) or not isinstance(g, (int, np.integer)):
            raise TileValueError(f"grid extents must be ints (got {grid!r})")
        if not 0 <= int(g) <= GRID_LIMIT:
            raise TileValueError(f"grid extent {int(g)} is out of range: each of the 3 grid "
                                 f"dimensions must be in [0, {GRID_LIMIT}] (spec 8.3.10; 0 "
                                 f"launches nothing)")
        out.append(int(g))
    return tuple(out + [1] * (3 - len(out)))
