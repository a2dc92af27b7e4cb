"""The CPU backend's support object (launch/cpu.py `support_object`): the launch machinery
compiled once per compiler and flags and linked into every kernel library. A library built split
and one built whole report the machinery's errors alike; one object serves every cache folder
of a process; a damaged cached object is built again; an object that does not link gives way
to a whole build."""
import ctypes

import numpy as np
import pytest

from tilepy.errors import TileLaunchError
from tilepy.launch import cache, cpu, cpu_build

# A __syncthreads() that half the block never reaches, and a write past the dynamic shared
# memory the launch gives: both reported by the machinery (cpu_fiber.h run_block, check_smem).
DEADLOCK = ('#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* p) {\n'
            '  if (threadIdx.x < 32) __syncthreads();\n  p[threadIdx.x] = 1;\n}\n')
OVERRUN = ('#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* p) {\n'
           '  extern __shared__ unsigned char s[];\n  s[100] = 1;\n  p[0] = s[100];\n}\n')
FAST = '#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* p) { p[0] = %d; }\n'


@pytest.fixture
def commands(monkeypatch, tmp_path):
    """A cache of this test's own, this process's libraries forgotten; the compiler commands
    run, recorded."""
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu, "_LOADED", {})
    recorded = []
    real = cpu_build.run

    def run(cmd, limit):
        recorded.append(cmd)
        return real(cmd, limit)
    monkeypatch.setattr(cpu_build, "run", run)
    return recorded


def _split(cmd) -> bool:
    return "-DTP_SPLIT" in cmd and any(f.endswith(cpu.SUPPORT_FILE) for f in cmd)


def _kernel_commands(commands):
    """The kernel libraries' compiles (not the worker pool's, nor the support object's)."""
    return [c for c in commands if "-fstack-usage" in c and "-c" not in c]


def _error(source: str, mode: str, threads: int, block: int, smem: int = 0) -> str:
    """The error of a launch of 2 blocks of `block` threads (the entry point called directly:
    CpuKernel runs a fast-mode kernel with one thread whatever its block says)."""
    lib = cpu.CpuKernel(source, "k", threads=threads, mode=mode).library
    out = np.zeros(64, np.int32)
    p = ctypes.c_void_p(out.ctypes.data)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(p), ctypes.c_void_p))
    report = cpu.new_report()
    rc = getattr(lib.lib, cpu.ENTRY)(params, 2, 1, 1, block, 1, 1, smem, 1, report)
    with pytest.raises(TileLaunchError) as e:
        cpu.check_launch(lib, rc, report)
    return str(e.value)


CASES = [(DEADLOCK, "faithful", 64, 64), (OVERRUN, "faithful", 32, 32, 16), (FAST % 1, "fast", 1, 2)]


def test_a_library_built_split_and_one_built_whole_report_alike(commands, monkeypatch):
    split = [_error(*case) for case in CASES]
    assert all(_split(c) for c in _kernel_commands(commands)) and len(split) == 3
    monkeypatch.setattr(cpu, "_LOADED", {})
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    monkeypatch.setattr(cpu, "_SUPPORT", {})                 # none at hand, no cache: whole
    del commands[:]
    whole = [_error(*case) for case in CASES]
    assert not any(_split(c) for c in commands) and len(_kernel_commands(commands)) == 3
    assert whole == split
    assert "deadlock: threads 0-31 wait at __syncthreads(); threads 32-63 have exited" in split[0]
    assert "dynamic shared memory at byte 100, past the 16 bytes" in split[1]
    assert "built for the fast CPU mode" in split[2]


def test_one_object_serves_every_cache_folder_of_a_process(commands, monkeypatch, tmp_path):
    out = np.zeros(1, np.int32)
    cpu.CpuKernel(FAST % 2, "k", threads=1, mode="fast")(1, out)
    builds = cpu.support_builds
    for i in range(2):
        monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / f"other{i}"))
        cpu.CpuKernel(FAST % (3 + i), "k", threads=1, mode="fast")(1, out)
        assert out[0] == 3 + i
    assert cpu.support_builds == builds
    assert all(_split(c) for c in _kernel_commands(commands))


def test_a_damaged_cached_object_is_built_again(commands, monkeypatch):
    key = cpu.support_key(cpu.host_compiler(), cpu.flags("fast"))
    monkeypatch.setattr(cpu, "_SUPPORT", {})
    out = np.zeros(1, np.int32)
    cpu.CpuKernel(FAST % 5, "k", threads=1, mode="fast")(1, out)
    good = cache.get("cpu", key, ".o")
    assert good is not None and cpu.elf_intact(good.payload)
    # truncated (its cache checksum intact): not an object the linker could read in full
    assert not cpu.elf_intact(good.payload[:-100])
    cache.put("cpu", key, good.payload[:-100], good.meta, ".o")
    monkeypatch.setattr(cpu, "_SUPPORT", {})                 # a new process: none in memory
    builds = cpu.support_builds
    cpu.CpuKernel(FAST % 6, "k", threads=1, mode="fast")(1, out)
    assert out[0] == 6 and cpu.support_builds == builds + 1
    assert cache.get("cpu", key, ".o").payload == good.payload
    assert all(_split(c) for c in _kernel_commands(commands))


def test_an_object_that_does_not_link_gives_way_to_a_whole_build(commands, monkeypatch):
    key = cpu.support_key(cpu.host_compiler(), cpu.flags("fast"))
    monkeypatch.setattr(cpu, "_SUPPORT", {key: cpu.Support(b"not an object", 0)})
    out = np.zeros(1, np.int32)
    cpu.CpuKernel(FAST % 7, "k", threads=1, mode="fast")(1, out)
    assert out[0] == 7
    assert [_split(c) for c in _kernel_commands(commands)] == [True, False]    # refused by the linker, then whole
    assert cpu._SUPPORT[key] is None                         # whole from now on


def test_a_source_that_defines_runtime_macros_first_is_built_whole():
    """TP_FIBER_UCONTEXT changes the fibers' context: not the support object's machinery."""
    emitted_head = "#ifndef TP_NT\n#define TP_NT 64\n#endif\n#define TP_SMEM_KIB 99\n"
    assert cpu.splittable(emitted_head + DEADLOCK)
    assert not cpu.splittable("#define TP_FIBER_UCONTEXT 1\n" + DEADLOCK)
    assert not cpu.splittable("  # undef TP_NT\n" + DEADLOCK)
    assert cpu.splittable(DEADLOCK + "#define TP_FIBER_UCONTEXT 1\n")   # after: read by nothing
