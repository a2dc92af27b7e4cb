"""`tilepy.aot`: ahead-of-time compilation's public names. The code is tilepy/api/aot.py (the
user-facing layer); this is a package, not a module, so the moved file keeps its history."""
from ..api.aot import ArraySpec, Compiled, array, cubin_mismatch, load, parse  # noqa: F401

__all__ = ["ArraySpec", "Compiled", "array", "load", "parse", "cubin_mismatch"]
