"""Passes from the traced Tile IR to what the C++ emitter prints."""
