"""Where each value lives in the emitted code (the first, simplest layout system).

- a tile of one element (0-d, or 1x1..) is a *scalar*: one C++ variable held by every thread;
- any larger tile is *distributed*: element e (row-major) in thread e % NT, slot e / NT;
- tensor and partition views are a `tp::View` (a partition view shares its tensor view's);
- tokens have no run-time representation: the emitted code keeps program order.
"""
from __future__ import annotations

from ..types import PartitionViewType, TensorViewType, TileType, TokenType

SCALAR, DIST, VIEW, NONE = "scalar", "dist", "view", "none"


def kind(t) -> str:
    if isinstance(t, TileType):
        return SCALAR if t.numel == 1 else DIST
    if isinstance(t, (TensorViewType, PartitionViewType)):
        return VIEW
    if isinstance(t, TokenType):
        return NONE
    raise TypeError(f"no layout for {t}")
