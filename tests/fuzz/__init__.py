"""Differential fuzzing of Tile IR executions against the reference interpreter.

`batches(n)` is a hypothesis strategy of (cases, seed): n random valid kernels sharing one grid;
`runner.run_batch` runs them through the interpreter and every execution in `runner.EXECUTIONS`.
"""
from __future__ import annotations

from hypothesis import strategies as st

from .draw import draw_case
from .gen import Draw


@st.composite
def batches(draw, size: int):
    d = Draw(draw)
    grid = (d.int(1, 3), d.int(1, 2))
    return [draw_case(d, grid) for _ in range(size)], d.seed()
