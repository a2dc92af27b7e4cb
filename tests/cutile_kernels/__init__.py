"""Kernels written as cuTile Python code (`import tilepy as ct` is the only change): the
compatibility suite run by tests/test_cutile_suite.py against numpy on the CPU backend."""
