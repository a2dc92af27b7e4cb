"""Cache keys at their call sites: the key a real CPU build or NVRTC compile uses changes when a
runtime header, the compiler flags or options, the NVRTC version or tilepy's version changes
(test_cache.py tests `key_of` alone; a call site that forgets to pass a part is caught here).

The key is read by wrapping `cache.key_of`; after the first (real) compile, a changed input only
has its key computed: the spy stops the build right after, so no compiler runs for it.
"""
import dataclasses

import numpy as np
import pytest

import tilepy as ct
from tilepy import version       # where the key builders read tilepy's version
from tilepy.api.compiler import compile_for_args
from tilepy.launch import cache, cpu, nvrtc, toolchain


@ct.kernel
def axpy(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * 2.0 + ct.load(y, (i,), (TILE,)))


class _Stop(Exception):
    pass


@pytest.fixture
def keys(monkeypatch):
    """keys(kind) -> the key of the last key_of call for `kind`; keys.stop makes later calls
    raise right after computing the key."""
    seen, real = {}, cache.key_of

    def spy(*parts):
        k = real(*parts)
        seen[parts[0]] = k
        if spy.stop:
            raise _Stop
        return k
    spy.stop = False
    spy.seen = seen
    monkeypatch.setattr(cache, "key_of", spy)
    return spy


@pytest.fixture(scope="module")
def compiled():
    x = np.ones(256, np.float32)
    return compile_for_args(axpy, (x, x.copy(), 128))


def _changed_headers(real):
    """The headers with one line of runtime.h changed (as an edit of the file would)."""
    def headers():
        h = real()
        if isinstance(h, dict):
            return {n: t + ("\n// edited" if n.endswith("runtime.h") else "") for n, t in h.items()}
        return tuple(t + ("\n// edited" if t.startswith("runtime.h\n") else "") for t in h)
    return headers


def _cpu_key(keys, ck):
    try:
        cpu.build(ck.emitted, ck.compile_source(), mode="fast")
    except _Stop:
        pass
    return keys.seen["cpu"]


CPU_CHANGES = {
    "a runtime header": lambda mp: mp.setattr(cpu, "_headers", _changed_headers(cpu._headers)),
    "the compiler flags": lambda mp: mp.setattr(cpu, "flags", lambda *a, _f=cpu.flags:
                                                 _f(*a) + ["-DTP_EXTRA=1"]),
    "tilepy's version": lambda mp: mp.setattr(version, "__version__", version.__version__ + ".1"),
    "the host compiler": lambda mp: mp.setattr(cpu, "compiler_id", lambda c: "g++ 99.0"),
}


@pytest.mark.parametrize("change", CPU_CHANGES)
def test_cpu_build_key_changes_with(keys, compiled, monkeypatch, change):
    base = _cpu_key(keys, compiled)                 # a real build (or this process's copy)
    assert cpu.build(compiled.emitted, compiled.compile_source(), mode="fast") is not None
    assert _cpu_key(keys, compiled) == base          # the same inputs: the same key
    keys.stop = True
    CPU_CHANGES[change](monkeypatch)
    assert _cpu_key(keys, compiled) != base, f"changing {change} keeps the CPU cache key"


def _nvrtc_key(keys, ck):
    try:
        nvrtc.compile_cubin(ck.compile_source(), "sm_80", "axpy")
    except _Stop:
        pass
    return keys.seen["cubin"]


def _toolchain_with(**changes):
    real = toolchain.info()
    return lambda: dataclasses.replace(real, **changes)


NVRTC_CHANGES = {
    "a runtime header": lambda mp: mp.setattr(nvrtc, "_headers", _changed_headers(nvrtc._headers)),
    "the NVRTC options": lambda mp: mp.setattr(nvrtc, "BASE_OPTIONS", [*nvrtc.BASE_OPTIONS,
                                                                       "-DTP_EXTRA=1"]),
    "the NVRTC version": lambda mp: mp.setattr(toolchain, "info", _toolchain_with(
        nvrtc_version="12.9")),
    "tilepy's version": lambda mp: mp.setattr(version, "__version__", version.__version__ + ".1"),
}


@pytest.mark.parametrize("change", NVRTC_CHANGES)
def test_nvrtc_compile_key_changes_with(keys, compiled, monkeypatch, change):
    try:
        cubin = nvrtc.compile_cubin(compiled.compile_source(), "sm_80", "axpy")
    except ct.TileError as e:                        # NVRTC wheel missing: nothing to key
        pytest.skip(f"NVRTC unavailable: {e}")
    assert cubin.data[:4] == b"\x7fELF"
    base = keys.seen["cubin"]
    assert _nvrtc_key(keys, compiled) == base
    keys.stop = True
    NVRTC_CHANGES[change](monkeypatch)
    assert _nvrtc_key(keys, compiled) != base, f"changing {change} keeps the NVRTC cache key"


def test_the_spy_sees_the_key_the_cache_stores_under(keys, compiled, tmp_path, monkeypatch):
    """The key read here is the one the disk cache files the library under."""
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path))
    cpu._LOADED.clear()
    cpu.build(compiled.emitted, compiled.compile_source(), mode="fast")
    assert cache.get("cpu", keys.seen["cpu"], ".so") is not None
