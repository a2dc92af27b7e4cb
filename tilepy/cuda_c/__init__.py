"""Tile IR -> CUDA C++ (the emitter) and the runtime headers the emitted code includes."""
import os

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
