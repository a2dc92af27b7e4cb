"""The CPU backend's precompiled headers (launch/cpu_pch.py): built in the cache when due and
reused by later kernels, byte-identical libraries, two processes building at once, a corrupt
or failing PCH recovered from, compilers without PCH support and caches that cannot keep one
compiling plainly."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cache_seed
from definitions import load          # conftest.py puts tutorials/ on the path

from kernels_util import record_compiler_commands
from tilepy.launch import cache, cpu, cpu_build, cpu_pch

SRC = '#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* p) { p[0] = %d; }\n'

# Two processes compile the same new kernel at once in an empty cache where the first compile
# builds the PCH: one builds it (the other compiles plainly meanwhile, or uses it if it is done).
CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from tilepy.launch import cpu, cpu_pch
    cpu_pch.BUILD_AT = 1
    out = np.zeros(1, np.int32)
    cpu.compile_kernel(sys.argv[1], "k", threads=1, mode="fast")(1, out)
    print(int(out[0]), cpu_pch.builds)
""")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A cache holding the fast mode's PCH, built by two processes at once; their outputs."""
    d = tmp_path_factory.mktemp("pch") / "cache"
    cache_seed.seed(d)                 # the processes build the kernel and the PCH, not the helpers
    env = {**os.environ, "TILEPY_CACHE_DIR": str(d)}
    env.pop("TILEPY_CPU_PCH", None)
    env.pop("TILEPY_CACHE_SIZE", None)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, SRC % 11], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    return d, [p.communicate(timeout=300) + (p.returncode,) for p in procs]


@pytest.fixture
def fresh(monkeypatch):
    """This process's PCH state as a new process has it; the compiler commands run, recorded."""
    monkeypatch.setattr(cpu_pch, "_verified", {})
    monkeypatch.setattr(cpu_pch, "_refused", set())
    monkeypatch.delenv("TILEPY_CPU_PCH", raising=False)
    monkeypatch.delenv("TILEPY_CACHE_SIZE", raising=False)
    return record_compiler_commands(monkeypatch)


def _launch(value: int) -> int:
    out = np.zeros(1, np.int32)
    cpu.compile_kernel(SRC % value, "k", threads=1, mode="fast")(1, out)
    return int(out[0])


def _pch_files(d):
    return sorted(p for p in (d / "pch").rglob("*.gch"))


def _uses_pch(cmd) -> bool:
    return any(f.startswith("-I") and f.endswith(os.sep + "pch") for f in cmd)


def test_two_processes_building_it_at_once_both_succeed(built):
    d, results = built
    for out, err, rc in results:
        assert rc == 0 and out.split()[0] == "11", err
    assert sum(int(out.split()[1]) for out, _, _ in results) >= 1
    (pch,) = _pch_files(d)
    assert cache.decode(pch.read_bytes()) is not None
    assert not list(d.rglob(cache.TMP_PREFIX + "*")), "a lock or temporary file was left"


def test_a_later_kernel_uses_it_and_its_library_is_the_same(built, fresh, monkeypatch):
    d, _ = built
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(d))
    builds = cpu_pch.builds
    with_pch = _library(12)
    assert [_uses_pch(c) for c in fresh] == [True] and cpu_pch.builds == builds
    monkeypatch.setenv("TILEPY_CPU_PCH", "0")
    assert _library(12) == with_pch and [_uses_pch(c) for c in fresh] == [True, False]


def test_a_source_that_includes_the_runtime_again_uses_it(built, fresh, monkeypatch):
    """GCC takes a PCH for a source's first include only; a hand-written source that includes
    runtime.h again later (tests/test_faithful_broken.py's libraries) compiles with the PCH
    (it failed, was rerun plainly and removed the PCH), and its library is the plain one."""
    d, _ = built
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(d))
    monkeypatch.setattr(cpu_pch, "BUILD_AT", 1000)          # not rebuilt here
    again = SRC % 14 + '#include "tilepy/runtime.h"\n'
    with_pch = _library(again)
    assert [_uses_pch(c) for c in fresh] == [True] and len(_pch_files(d)) == 1
    monkeypatch.setenv("TILEPY_CPU_PCH", "0")
    assert _library(again) == with_pch and [_uses_pch(c) for c in fresh] == [True, False]


def _library(value) -> bytes:
    """The library cpu._compile makes of kernel `value` (or of that source; no cache lookup),
    split as compile_kernel builds it (the PCH the fixture built is for those flags)."""
    full = (SRC % value if isinstance(value, int) else value) + cpu.host_entry("k", ["int*"])
    return cpu._compile(cpu.host_compiler(), cpu.flags("fast"), full, "k", cpu.flags("fast"))[0]


def test_a_corrupt_pch_is_removed_and_the_compile_is_plain(built, fresh, monkeypatch):
    d, _ = built
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(d))
    monkeypatch.setattr(cpu_pch, "BUILD_AT", 1000)          # not rebuilt here
    (pch,) = _pch_files(d)
    good = pch.read_bytes()
    try:
        data = bytearray(good)
        data[len(data) // 2] ^= 0xFF
        pch.write_bytes(bytes(data))
        assert _launch(13) == 13
        assert not any(_uses_pch(c) for c in fresh) and not pch.exists()
    finally:
        pch.write_bytes(good)


def test_a_compile_that_fails_with_the_pch_is_rerun_without_it(built, fresh, monkeypatch):
    """The plain compile is the answer, and when it succeeds the PCH is removed."""
    d, _ = built
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(d))
    monkeypatch.setattr(cpu_pch, "BUILD_AT", 1000)
    (pch,) = _pch_files(d)
    good = pch.read_bytes()
    real = cpu_build.run

    def run(cmd, limit, cwd=None):  # GCC on a PCH damaged after this process verified it
        if _uses_pch(cmd):
            fresh.append(cmd)
            return subprocess.CompletedProcess(cmd, 1, "", "error: while reading precompiled "
                                                           "header: No such file or directory")
        return real(cmd, limit, cwd)    # the fixture's recorder
    monkeypatch.setattr(cpu_build, "run", run)
    try:
        assert _launch(14) == 14
        assert [_uses_pch(c) for c in fresh] == [True, False] and not pch.exists()
    finally:
        pch.write_bytes(good)


def test_compilers_without_pch_support_and_small_caches_compile_plainly(tmp_path, fresh,
                                                                         monkeypatch):
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(cpu_pch, "BUILD_AT", 1)
    args = ("c++", cpu.flags("fast"), cpu._headers(), cpu.INCLUDE_DIR, str(tmp_path))
    assert cpu_pch.include_flags(args[0], "clang version 17.0.6", *args[1:]) == []
    assert cpu_pch.include_flags(args[0], "Intel(R) oneAPI DPC++/C++ Compiler", *args[1:]) == []
    monkeypatch.setenv("TILEPY_CACHE_SIZE", "500M")
    assert cpu_pch.include_flags(args[0], "g++ (GCC) 12.2.0", *args[1:]) == []
    assert fresh == [] and not (tmp_path / "c" / "pch").exists()


def test_a_pch_the_cache_cannot_keep_is_not_built_again(tmp_path, fresh, monkeypatch):
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(cpu_pch, "BUILD_AT", 1)
    monkeypatch.setattr(cache, "put", lambda *a, **k: None)     # a full disk

    def compiler(cmd, limit):                                    # no real PCH build needed
        fresh.append(cmd)
        with open(cmd[cmd.index("-o") + 1], "wb") as f:
            f.write(b"gch")
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(cpu_build, "run", compiler)
    args = ("c++", "g++ (GCC) 12.2.0", cpu.flags("fast"), cpu._headers(), cpu.INCLUDE_DIR,
            str(tmp_path))
    assert cpu_pch.include_flags(*args) == [] and len(fresh) == 1
    assert cpu_pch.include_flags(*args) == [] and len(fresh) == 1
    assert not list((tmp_path / "c").rglob(cache.TMP_PREFIX + "*"))


def test_another_process_building_it_means_a_plain_compile_now(tmp_path, fresh, monkeypatch):
    """A fresh lock beside the entry: no second build; a lock left by a killed build (older
    than LOCK_SECONDS) is taken over."""
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(cpu_pch, "BUILD_AT", 1)
    args = ("c++", "g++ (GCC) 12.2.0", cpu.flags("fast"), cpu._headers(), cpu.INCLUDE_DIR,
            str(tmp_path))
    path = cache.path_for("pch", cpu_pch.key_of(*args[1:4]), ".gch", create=True)
    lock = cpu_pch._lock(path)
    assert lock is not None and cpu_pch._lock(path) is None
    os.utime(lock, (1, 1))
    assert cpu_pch._lock(path) == lock


def test_kernels_with_an_sm90a_class_get_the_pch_of_their_tp_wgmma():
    """A GEMM kernel's source defines TP_WGMMA (0 on the host) before the runtime: its PCH is
    made with -DTP_WGMMA=0 (GCC refuses one made without it); other sources define nothing."""
    a, b = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    gemm = load("03_matmul").matmul.cuda_source(a, b, np.zeros((64, 64), np.float32), 64, 64, 32)
    assert cpu_pch.source_defines(gemm) == ["-DTP_WGMMA=0"]
    assert cpu_pch.source_defines(SRC % 1) == []
    key = cpu_pch.key_of("g++ (GCC) 12.2.0", cpu.flags("fast"), cpu._headers())
    assert key != cpu_pch.key_of("g++ (GCC) 12.2.0", cpu.flags("fast") + ["-DTP_WGMMA=0"],
                                 cpu._headers())
