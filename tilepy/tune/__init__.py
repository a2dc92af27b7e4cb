"""`tilepy.tune`: cuTile's tuning module (`cuda.tile.tune`), laid out as cuTile's: `_tune`
(the search: `exhaustive_search`, `TuningResult`, `Measurement`, and the constants and timing
functions it looks up when it runs) and `_tune_utils` (timing one launch, here or in a worker
process stopped at a time limit)."""
from . import _tune, _tune_utils  # noqa: F401
from ._tune import Measurement, TuningResult, exhaustive_search

__all__ = ["exhaustive_search", "TuningResult", "Measurement"]
