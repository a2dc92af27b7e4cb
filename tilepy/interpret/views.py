"""Element coordinates of the tile a load/store addresses through NVIDIA's 13.3 views
(types/views.py): per tensor dimension, a tile-shaped array of element indices.

- gather_scatter_view: at sparse_dim the rows listed by the 1-d index tile (read unsigned),
  elsewhere [start, start + T_d) from the 0-d element offset;
- strided_view: [I_d * traversal_strides[d], + T_d) for tile index I_d (read unsigned).
A tile entirely outside the tensor is undefined behavior (raises); elements outside it are
padding on a load and not written by a store, as partition views do.
"""
from __future__ import annotations

import numpy as np

from ..errors import TileValueError
from ..types import GatherScatterViewType


def unsigned(v) -> np.ndarray:
    """Integer index values (0-d or 1-d) read unsigned, as int64-safe Python-sized uint64."""
    a = np.asarray(v)
    return a.astype(np.uint64) if a.dtype == bool else a.view(f"u{a.dtype.itemsize}").astype(np.uint64)


def view_coords(t, index, coords) -> list[np.ndarray]:
    """Per dimension d of the tensor, the element index of every tile element (tile-shaped)."""
    out = []
    for d in range(t.view.rank):
        i = unsigned(index[d])
        if isinstance(t, GatherScatterViewType) and d == t.sparse_dim:
            out.append(i[coords[d]].astype(object))         # exact: rows may be huge unsigned
        elif isinstance(t, GatherScatterViewType):
            out.append(int(i) + coords[d].astype(object))
        else:
            out.append(int(i) * t.traversal_strides[d] + coords[d].astype(object))
    return out


def check_not_all_outside(inb: np.ndarray, t, what: str) -> None:
    if not inb.any():
        raise TileValueError(f"{what}: the addressed tile of the {t} lies entirely outside the "
                             f"tensor (undefined behavior)")
