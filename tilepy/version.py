"""tilepy's version (read by cache keys and build fingerprints, below every part)."""
__version__ = "0.1.0"
