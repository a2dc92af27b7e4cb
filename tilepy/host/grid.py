"""The grid of a launch: 0 to 3 non-negative extents (`()` is one block, as in cuTile), each
at most GRID_LIMIT (spec 8.3.10), as three ints. Used by every way to run a kernel (tilepy.launch, AOT, compile_module's
run_cpu, the interpreter) and by the launch fast path's limit check."""
from __future__ import annotations

import numpy as np

from ..errors import TileGridError

GRID_LIMIT = 2**24 - 1     # spec 8.3.10: grid dimensions are limited to 2^24-1 per axis


def normalize_grid(grid) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, (bool, np.bool_)):
        grid = (int(grid),)
    if not isinstance(grid, (tuple, list)) or not len(grid) <= 3:
        raise TileGridError(f"grid must be an int or a tuple of 0 to 3 ints (got {grid!r}; () is "
                            f"one block)")
    out = []
    for i, g in enumerate(grid):
        if isinstance(g, (bool, np.bool_)) or not isinstance(g, (int, np.integer)):
            raise TileGridError(f"grid extents must be ints (got {grid!r})")
        if int(g) > GRID_LIMIT:
            raise TileGridError(f"Grid[{i}] exceeds 24-bit limit: max={GRID_LIMIT}, got={int(g)}. "
                                f"Use multiple kernel launches for larger workloads. (grid extent "
                                f"{int(g)} is out of range: each of the 3 grid dimensions must be "
                                f"in [0, {GRID_LIMIT}], spec 8.3.10)")
        if int(g) < 0:
            raise TileGridError(f"grid extent {int(g)} is out of range: each of the 3 grid "
                                f"dimensions must be in [0, {GRID_LIMIT}] (spec 8.3.10; 0 "
                                f"launches nothing)")
        out.append(int(g))
    return tuple(out + [1] * (3 - len(out)))
