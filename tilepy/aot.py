"""`tilepy.aot`: ahead-of-time compilation's public names (the code is tilepy/api/aot.py)."""
from .api.aot import ArraySpec, Compiled, array, cubin_mismatch, load, parse  # noqa: F401

__all__ = ["ArraySpec", "Compiled", "array", "load", "parse", "cubin_mismatch"]
