"""`tilepy.tune`: cuTile's tuning module (`cuda.tile.tune`) under its names. The code is
tilepy/api/tune.py (the user-facing layer)."""
from ..api.tune import Measurement, TuningResult, exhaustive_search  # noqa: F401

__all__ = ["exhaustive_search", "TuningResult", "Measurement"]
