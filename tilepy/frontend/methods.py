"""The methods of kernel values: attribute name -> the builtin it calls with the value first
(the tracer reads them, and compile-time evaluation's proxies answer them)."""
from __future__ import annotations

from . import api

# Array and tiled-view methods: attribute name -> builtin taking the array / view first.
ARRAY_METHODS = {"tiled_view": api._array_tiled_view, "slice": api._array_slice,
                 "get_raw_memory": api._array_get_raw_memory}
RAW_MEMORY_METHODS = {"load_offset": api._raw_load_offset, "store_offset": api._raw_store_offset,
                      "atomic_cas_offset": api._raw_atomic_cas_offset,
                      **{f"atomic_{n}_offset": getattr(api, f"_raw_atomic_{n}_offset")
                         for n in ("add", "and", "or", "xor", "max", "min", "xchg")}}
TILED_VIEW_METHODS = {"load": api._tiled_view_load, "store": api._tiled_view_store,
                      "num_tiles": api._tiled_view_num_tiles,
                      **{f"atomic_store_{n}": getattr(api, f"_tiled_view_atomic_store_{n}")
                         for n in ("add", "max", "min", "and", "or", "xor")}}
# Tile methods: attribute name -> builtin taking the tile first.
TILE_METHODS = {"astype": api.astype, "reshape": api.reshape, "permute": api.permute,
                "transpose": api.transpose, "sum": api.sum, "max": api.max, "min": api.min,
                "prod": api.prod, "broadcast_to": api.broadcast_to, "extract": api.extract,
                "expand_dims": api.expand_dims, "argmax": api.argmax, "argmin": api.argmin,
                "cumsum": api.cumsum, "cumprod": api.cumprod, "bitcast": api.bitcast,
                "insert": api.insert}
