"""The reference kernels of the code-quality work (issue 6), in the kernel language.

Each module imports `tilepy as ct` and nothing else from tilepy, so the very same source also
compiles with NVIDIA's cuTile (`import cuda.tile as ct`; benchmarks/sass.py loads it that way).
`cases.py` has, per kernel, its default configuration, arguments, grid and numpy reference.
"""
