"""The host compiler's runs (launch/cpu_build.py; issue 27 item 8): an interrupted build kills
the compiler's whole process group, the build folders of processes killed mid-build are removed
by a later process (with the orphaned compiler still working in them), and an error of the
compiler's environment (a full disk) points at no line of the user's file."""
import os
import subprocess
import sys
import time

import pytest

from tilepy.launch import cpu_build
from tilepy.launch.diagnostics import compile_error


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_a_timed_out_build_kills_the_compilers_process_group(tmp_path):
    pidfile = tmp_path / "grandchild"
    cmd = ["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"]      # a driver and its child
    with pytest.raises(subprocess.TimeoutExpired):
        cpu_build.run(cmd, 1.0)
    assert _gone(int(pidfile.read_text())), "the compiler's child outlived the build"


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the orphan through /proc")
def test_the_folder_of_a_killed_build_is_removed_with_its_orphaned_compiler(tmp_path):
    stale = tmp_path / f"{cpu_build.PREFIX}{_dead_pid()}-abc"
    stale.mkdir()
    (stale / "k.cpp").write_text("// the source being compiled")
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                               str(stale / "k.cpp")])
    end = time.monotonic() + 10                   # its command line is readable once it runs
    while str(stale).encode() not in _cmdline(orphan.pid) and time.monotonic() < end:
        time.sleep(0.02)
    mine = tmp_path / f"{cpu_build.PREFIX}{os.getpid()}-def"       # a live process's build
    mine.mkdir()
    other = tmp_path / "tilepy-build-notapid"
    other.mkdir()
    try:
        assert cpu_build.reap_stale(str(tmp_path)) == [str(stale)]
        assert orphan.wait(10) != 0
    finally:
        orphan.kill()
        orphan.wait()
    assert not stale.exists() and mine.exists() and other.exists()


def test_an_out_of_space_compile_error_points_at_no_user_line(tmp_path):
    user = tmp_path / "k.py"
    user.write_text("import tilepy as ct\n\n@ct.kernel\ndef k(a):\n    pass\n")
    log = (f"{user}:812:1: fatal error: error writing to /tmp/ccQx.s: No space left on device\n"
           "compilation terminated.\n")
    e = compile_error("the host C++ compiler could not build kernel 'k'", log)
    assert e.loc is None and "No space left on device" in str(e) and "environment" in str(e)


def test_a_line_past_the_end_of_the_users_file_is_not_a_location(tmp_path):
    user = tmp_path / "k.py"
    user.write_text("x = 1\ny = 2\n")
    log = f"{user}:40:3: error: something in the host entry\n{user}:2:1: note: here\n"
    e = compile_error("could not build", log)
    assert e.loc is not None and e.loc.line == 2


def test_a_long_kernel_is_built_with_gccs_alias_query_caps():
    """A kernel of many ops gets LONG_KERNEL_FLAGS (quadratic alias walking was most of a long
    kernel's g++ time) and in the fast mode -O2 with the vectorizer (LONG_FAST_FLAGS); a short
    one and other compilers keep the plain flags, and g++ takes them."""
    import numpy as np
    from tilepy.launch import cpu
    short = '#include "tilepy/runtime.h"\nextern "C" __global__ void k(int* p) { p[0] = 5; }\n'
    long = short + "// padding\n" * cpu.LONG_KERNEL_LINES
    assert cpu.long_kernel_flags(short, "g++ (GCC) 12.2.0") == []
    assert cpu.long_kernel_flags(long, "clang version 17.0.6") == []
    assert cpu.long_kernel_flags(long, "g++ (GCC) 12.2.0") == cpu.LONG_KERNEL_FLAGS
    fast = cpu.flags("fast") + cpu.long_kernel_flags(long, "g++ (GCC) 12.2.0", "fast")
    assert [f for f in fast if f.startswith("-O")][-1] == "-O2" and "-ftree-vectorize" in fast
    out = np.zeros(1, np.int32)
    cpu.compile_kernel(long, "k", threads=1, mode="fast")(1, out)
    assert out[0] == 5


def test_a_link_that_fails_with_gold_is_rerun_with_the_compilers_own_linker(monkeypatch):
    """GNU gold is an accelerator (cpu_build.link_flags): a build whose link fails with it is answered
    by the plain build, and this process links with the compiler's own linker from then on."""
    from tilepy.launch import cpu
    cxx = cpu.host_compiler()
    monkeypatch.setitem(cpu_build._linker, cxx, cpu_build.GOLD)
    monkeypatch.setenv("TILEPY_CPU_PCH", "0")
    real, commands = cpu_build.run, []

    def run(cmd, limit, cwd=None):
        commands.append(cmd)
        if cpu_build.GOLD[0] in cmd:
            return subprocess.CompletedProcess(cmd, 1, "", "collect2: fatal error: cannot find 'ld'")
        return real(cmd, limit, cwd)
    monkeypatch.setattr(cpu_build, "run", run)
    source = '#include "tilepy/runtime.h"\n__global__ void k(int* out) { out[0] = 5; }\n'
    data, _ = cpu._compile(cxx, cpu.flags("fast"), source + cpu.host_entry("k", ["int*"]), "k")
    assert cpu.elf_intact(data)
    assert [cpu_build.GOLD[0] in c for c in commands] == [True, False]
    assert cpu_build.link_flags(cxx, True) == []
