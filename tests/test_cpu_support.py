"""The CPU backend's support object (launch/cpu.py `support_object`): the launch machinery
compiled once per compiler and flags and linked into every kernel library. A library built split
and one built whole report the machinery's errors alike; one object serves every cache folder
of a process; a damaged cached object is built again; an object that does not link gives way
to a whole build."""
import struct

import numpy as np
import pytest

from kernels_util import record_compiler_commands
from tilepy.errors import TileCompileError, TileLaunchError
from tilepy.launch import cache, cpu

# A __syncthreads() that half the block never reaches (p[0] == 0), a write past the dynamic
# shared memory the launch gives (p[0] == 1): both reported by the machinery (cpu_fiber.h
# run_block, check_smem).
BROKEN = ('#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* p) {\n'
          '  extern __shared__ unsigned char s[];\n  const int how = p[0];\n'
          '  if (how == 0 && threadIdx.x < 16) __syncthreads();\n'
          '  if (how == 1) s[100] = 1;\n}\n')
FAST = '#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* p) { p[0] = %d; }\n'


@pytest.fixture
def commands(monkeypatch, tmp_path):
    """A cache of this test's own, this process's libraries forgotten; the compiler commands
    run, recorded."""
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu, "_LOADED", {})
    return record_compiler_commands(monkeypatch)


def _split(cmd) -> bool:
    return "-DTP_SPLIT" in cmd and any(f.endswith(cpu.SUPPORT_FILE) for f in cmd)


def _kernel_commands(commands):
    """The kernel libraries' compiles (not the worker pool's, nor the support object's)."""
    return [c for c in commands if "-fstack-usage" in c and "-c" not in c]


def _errors() -> list[str]:
    """The errors of BROKEN's two launches (one block of 32 threads each)."""
    k = cpu.CpuKernel(BROKEN, "k", threads=32, mode="faithful")
    out = []
    for how, smem in ((0, 0), (1, 16)):
        with pytest.raises(TileLaunchError) as e:
            k(1, np.full(1, how, np.int32), smem=smem)
        out.append(str(e.value))
    return out


def test_a_library_built_split_and_one_built_whole_report_alike(commands, monkeypatch):
    split = _errors()
    assert [_split(c) for c in _kernel_commands(commands)] == [True]
    monkeypatch.setattr(cpu, "_LOADED", {})
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    monkeypatch.setattr(cpu, "_SUPPORT", {})                 # none at hand, no cache: whole
    del commands[:]
    assert _errors() == split
    assert [_split(c) for c in _kernel_commands(commands)] == [False]
    assert "deadlock: threads 0-15 wait at __syncthreads(); threads 16-31 have exited" in split[0]
    assert "dynamic shared memory at byte 100, past the 16 bytes" in split[1]


def test_one_object_serves_every_cache_folder_of_a_process(commands, monkeypatch, tmp_path):
    out = np.zeros(1, np.int32)
    cpu.CpuKernel(FAST % 2, "k", threads=1, mode="fast")(1, out)
    builds = cpu.support_builds
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "other"))
    cpu.CpuKernel(FAST % 3, "k", threads=1, mode="fast")(1, out)
    assert out[0] == 3
    assert cpu.support_builds == builds
    assert all(_split(c) for c in _kernel_commands(commands))


def test_a_damaged_cached_object_is_built_again(commands, monkeypatch):
    key = cpu.support_key(cpu.host_compiler(), cpu.flags("fast"))
    monkeypatch.setattr(cpu, "_SUPPORT", {})                 # a new process: none in memory
    # an entry whose cache checksum holds but whose object is cut short: the linker would fail
    damaged = bytearray(b"\x7fELF\x02\x01\x01" + bytes(57))
    struct.pack_into("<Q10xHH", damaged, 0x28, 4096, 64, 13)   # 13 sections at 4096
    assert not cpu.elf_intact(damaged)
    cache.put("cpu", key, bytes(damaged), {"kind": "support"}, ".o")
    builds = cpu.support_builds
    out = np.zeros(1, np.int32)
    cpu.CpuKernel(FAST % 6, "k", threads=1, mode="fast")(1, out)
    assert out[0] == 6 and cpu.support_builds == builds + 1
    assert cpu.elf_intact(cache.get("cpu", key, ".o").payload)
    assert all(_split(c) for c in _kernel_commands(commands))


def test_an_object_that_does_not_link_gives_way_to_a_whole_build(commands, monkeypatch):
    key = cpu.support_key(cpu.host_compiler(), cpu.flags("fast"))
    monkeypatch.setattr(cpu, "_SUPPORT", {key: cpu.Support(b"not an object", 0)})
    out = np.zeros(1, np.int32)
    cpu.CpuKernel(FAST % 7, "k", threads=1, mode="fast")(1, out)
    assert out[0] == 7
    # refused by the linker, then whole
    assert [_split(c) for c in _kernel_commands(commands)] == [True, False]
    assert cpu._SUPPORT[key] is None                         # whole from now on


def test_a_source_that_defines_runtime_macros_first_is_built_whole():
    """TP_FIBER_UCONTEXT changes the fibers' context: not the support object's machinery."""
    emitted_head = "#ifndef TP_NT\n#define TP_NT 64\n#endif\n#define TP_SMEM_KIB 99\n"
    assert cpu.splittable(emitted_head + BROKEN)
    assert not cpu.splittable("#define TP_FIBER_UCONTEXT 1\n" + BROKEN)
    assert not cpu.splittable("  # undef TP_FAITHFUL\n" + BROKEN)
    assert cpu.splittable(BROKEN + "#define TP_FIBER_UCONTEXT 1\n")   # after: read by nothing


def test_a_split_kernel_outside_the_sm90a_class_builds_no_error_texts(commands):
    """A split kernel's translation unit builds no std::string (the support object builds the
    machinery's error texts: <string>'s inline functions cost every compile 0.04 CPU-s) and
    compiles no sm_90a emulation (cpu_tma.h, cpu_wgmma.h: its std::vector code 0.1 CPU-s of every
    faithful one), unless the kernel is of that class (TP_WGMMA); there, as on a GPU, its TMA
    operations are refused, by name, at compile time."""
    import subprocess
    cxx = cpu.host_compiler()
    for mode, nt in (("fast", 1), ("faithful", 128)):
        for wgmma in ("0", "1"):
            flags = [f for f in cpu.flags(mode, nt) if f != "-shared"] + ["-DTP_SPLIT"]
            deps = subprocess.run([cxx, *flags, f"-DTP_WGMMA={wgmma}", "-M", "-x", "c++", "-"],
                                  input='#include "tilepy/runtime.h"\n', capture_output=True,
                                  text=True, check=True).stdout
            assert ("basic_string.h" in deps) == (wgmma == "1"), (mode, wgmma)
    mbar = ('#include "tilepy/runtime.h"\nextern "C" __global__ void k(uint64_t* b) '
            '{\n  tp::mbar_init(b, 1);\n}\n')
    with pytest.raises(TileCompileError, match="need the sm_90a class: define TP_WGMMA 1"):
        cpu.CpuKernel(mbar, "k", threads=1, mode="fast")
    assert [_split(c) for c in _kernel_commands(commands)] == [True]
