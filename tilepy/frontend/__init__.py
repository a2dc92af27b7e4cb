"""The kernel language: decorator, builtins, tracing of Python functions into Tile IR."""
