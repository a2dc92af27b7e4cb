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

import types

from tilepy.host.params import ArrayListParam, ArrayParam, ScalarParam

# The classes test_gpu_abi.py::test_every_parameter_class checks against NVRTC's cubins (it also
# checks that its kernel, `every_parameter`, has exactly these).
COVERED = frozenset({
    ("tp::ptr<bool>", "c_void_p"), ("tp::ptr<int8_t>", "c_void_p"),
    ("tp::ptr<int16_t>", "c_void_p"), ("tp::ptr<int32_t>", "c_void_p"),
    ("tp::ptr<int64_t>", "c_void_p"), ("tp::ptr<__half>", "c_void_p"),
    ("tp::ptr<__nv_bfloat16>", "c_void_p"), ("tp::ptr<float>", "c_void_p"),
    ("tp::ptr<double>", "c_void_p"), ("tp::ptr<tp::f8e4m3>", "c_void_p"),
    ("tp::ptr<tp::f8e5m2>", "c_void_p"), ("tp::ptr<tp::f8e8m0>", "c_void_p"),
    ("int32_t", "c_int"),
    ("bool", "c_bool"), ("int8_t", "c_byte"), ("int8_t", "c_ubyte"), ("int16_t", "c_short"),
    ("int16_t", "c_ushort"), ("int32_t", "c_uint"), ("int64_t", "c_long"),
    ("int64_t", "c_ulong"), ("__half", "c_ushort"), ("float", "c_float"),
})


def _placeholder(p):
    if isinstance(p, ArrayParam):
        return types.SimpleNamespace(ptr=0, shape=(1,) * p.ndim, strides=(1,) * p.ndim)
    if isinstance(p, ArrayListParam):
        return [_placeholder(q) for q in p.items]
    return 0 if isinstance(p, ScalarParam) else None


def classes(ck, params, pack_args=None) -> set[tuple[str, str]]:
    """The parameter classes of one compiled specialization (a C++-backend kernel)."""
    if pack_args is None:
        from tilepy.api.launcher import pack_args
    emitted = getattr(ck.emitted, "params", None)
    if emitted is None:                      # not the C++ backend: no GpuPlan launch
        return set()
    values = pack_args(params, [_placeholder(p) for p in params])
    if len(values) != len(emitted):
        return {(f"{len(emitted)} C++ parameters", f"{len(values)} packed values")}
    return {(t, type(v).__name__) for (t, _), v in zip(emitted, values)}


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
