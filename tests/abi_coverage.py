"""Which parameter-ABI classes the test suite compiles, and whether tests/test_gpu_abi.py checks
them all (the conftest records every compiled specialization; see test_gpu_abi.py's docstring
for why per-parameter classes are enough).

A class is one C parameter: (its C++ type in the emitted kernel, the ctypes type launcher.
pack_args packs for it, which GpuPlan hands cuda.core as the matching scalar). Both are functions
of the specialization's host parameters alone (host/params.py: array -> pointer, int32 extents
and the non-unit strides; scalar -> its dtype), so `classes(ck, params)` computes them from the
compiled kernel and its params, packing placeholder values with the real pack_args.
"""
from __future__ import annotations

import ctypes
import types

from tilepy.host.params import ArrayListParam, ArrayParam, ScalarParam, TupleParam

# The classes test_gpu_abi.py::test_every_parameter_class checks against NVRTC's cubins (it also
# checks that its kernel, `every_parameter`, has exactly these).
COVERED = frozenset({
    ("tp::ptr<bool>", "pointer"), ("tp::ptr<int8_t>", "pointer"), ("tp::ptr<int16_t>", "pointer"),
    ("tp::ptr<int32_t>", "pointer"), ("tp::ptr<int64_t>", "pointer"), ("tp::ptr<__half>", "pointer"),
    ("tp::ptr<__nv_bfloat16>", "pointer"), ("tp::ptr<float>", "pointer"),
    ("tp::ptr<double>", "pointer"), ("tp::ptr<tp::f8e4m3>", "pointer"),
    ("tp::ptr<tp::f8e5m2>", "pointer"), ("tp::ptr<tp::f8e8m0>", "pointer"),
    ("int32_t", "int32"),
    ("bool", "bool"), ("int8_t", "int8"), ("int8_t", "uint8"), ("int16_t", "int16"),
    ("int16_t", "uint16"), ("int32_t", "uint32"), ("int64_t", "int64"), ("int64_t", "uint64"),
    ("__half", "uint16"), ("float", "float32"),
})
# pack_args's ctypes types by what they hold (c_int64 is c_long or c_longlong by platform).
PACKED = {ctypes.c_void_p: "pointer", ctypes.c_bool: "bool", ctypes.c_int8: "int8",
          ctypes.c_uint8: "uint8", ctypes.c_int16: "int16", ctypes.c_uint16: "uint16",
          ctypes.c_int32: "int32", ctypes.c_uint32: "uint32", ctypes.c_int64: "int64",
          ctypes.c_uint64: "uint64", ctypes.c_float: "float32", ctypes.c_double: "float64"}


def _placeholder(p):
    if isinstance(p, ArrayParam):
        return types.SimpleNamespace(ptr=0, shape=(1,) * p.ndim, strides=(1,) * p.ndim)
    if isinstance(p, (ArrayListParam, TupleParam)):
        return [_placeholder(q) for q in p.items]
    return 0 if isinstance(p, ScalarParam) else None


def classes(ck, params, pack_args=None) -> set[tuple[str, str]]:
    """The parameter classes of one compiled specialization (a C++-backend kernel)."""
    if pack_args is None:
        from tilepy.api.launcher import pack_args
    emitted = getattr(ck.emitted, "params", None)
    if emitted is None:                      # not the C++ backend: no GpuPlan launch
        return set()
    from tilepy.errors import TileError
    try:
        values = pack_args(params, [_placeholder(p) for p in params])
    except TileError:                        # arguments tilepy cannot pack: never launched
        return set()
    if len(values) != len(emitted):
        return {(f"{len(emitted)} C++ parameters", f"{len(values)} packed values")}
    return {(t, PACKED.get(type(v), type(v).__name__)) for (t, _), v in zip(emitted, values)}


class Recorder:
    """Wraps api.compiler.compile_specialization (every compile of a tilepy kernel goes through
    it: tilepy.launch, compile_for_args, AOT, tilepy.torch) and collects the classes seen, with
    one kernel that has each."""

    def __init__(self):
        self.seen: dict[tuple[str, str], str] = {}

    def install(self):
        from tilepy.api import compiler, launcher
        original, pack = compiler.compile_specialization, launcher.pack_args   # (tests patch it)

        def recording(kernel, key, params, *a, **k):
            ck = original(kernel, key, params, *a, **k)
            for c in classes(ck, params, pack):
                self.seen.setdefault(c, kernel.name)
            return ck
        compiler.compile_specialization = recording

    def uncovered(self, seen: dict | None = None) -> list[str]:
        seen = self.seen if seen is None else seen
        return [f"kernel '{name}' has a parameter {c[0]} packed as {c[1]}"
                for c, name in sorted(seen.items()) if tuple(c) not in COVERED]
