"""The host compiler's runs for the CPU backend: its build folder, its processes, its report of
the library's stack frames.

A build happens in `<tmp>/tilepy-build-<pid>-<random>` (`pid`: the Python process that made
it). The compiler runs in a process group of its own: when the build is interrupted (Ctrl-C, the
compile timeout, any exception) the whole group (the driver, cc1plus, as, ld) is killed before
the folder is removed. A process killed outright (SIGKILL, a crash) cannot clean up: the first
build of a later process removes the folders of processes that no longer exist, after killing
any process of this user still working in them (an orphaned compiler).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile

PREFIX = "tilepy-build-"
_STALE = re.compile(re.escape(PREFIX) + r"(\d+)-")
STACK_MARGIN = 256 * 1024          # cpu_stack.h kStackMargin
_reaped: list = []


@contextlib.contextmanager
def folder():
    """A private build folder named after this process, removed afterwards."""
    if not _reaped:
        _reaped.append(True)
        reap_stale()
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as d:
        yield d


def run(cmd: list[str], limit: float | None, cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run the compiler (in folder `cwd`) in a process group of its own;
    subprocess.TimeoutExpired past `limit`. However the wait ends early, the group is killed
    first."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=limit)
    except BaseException:
        kill_group(proc.pid)
        proc.communicate()           # reaps it and closes its pipes
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def kill_group(pgid: int):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap_stale(tmp: str | None = None) -> list[str]:
    """Remove the build folders of processes that no longer exist (killed mid-build), killing
    this user's processes still working in them first; returns the folders removed."""
    import shutil
    tmp = tmp or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        m = _STALE.match(name)
        path = os.path.join(tmp, name)
        if m is None or _alive(int(m.group(1))) or not _own_folder(path):
            continue
        _kill_workers_in(path)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _own_folder(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    import stat
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def _kill_workers_in(path: str):
    """SIGKILL every process of this user whose command line names something in `path`."""
    key = (path.rstrip("/") + "/").encode()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for p in pids:
        try:
            if os.stat(f"/proc/{p}").st_uid != os.geteuid():
                continue
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if key not in f.read():
                    continue
            os.kill(int(p), signal.SIGKILL)
        except (OSError, ValueError):
            continue


def remove_reports(build_dir: str):
    """Remove the -fstack-usage reports of a compile (before the folder's next compile)."""
    for f in os.listdir(build_dir):
        if f.endswith(".su"):
            os.unlink(os.path.join(build_dir, f))


def frames_size(build_dir: str, more: int = 0) -> int:
    """The stack a block may need: every function's frame from the compiler's -fstack-usage
    report (`<file>:<line>:<col>:<function>\\t<bytes>\\t<static|dynamic|...>`) added up, as
    if all were on one call chain, with `more` (the frames of an object linked in: `frames`),
    plus cpu_stack.h's margin when that is more than the margin (0: a thread's own stack is
    enough; also when the compiler writes no report)."""
    total = frames(build_dir) + more
    return total + STACK_MARGIN if total > STACK_MARGIN else 0


def frames(build_dir: str) -> int:
    """The bytes of every frame in the -fstack-usage reports of `build_dir`, added up."""
    total = 0
    for f in os.listdir(build_dir):
        if f.endswith(".su"):
            with open(os.path.join(build_dir, f), errors="replace") as lines:
                for line in lines:
                    parts = line.rsplit("\t", 2)
                    if len(parts) == 3 and parts[1].isdigit():
                        total += int(parts[1])
    return total


# The linker of kernel libraries: GNU gold where it is installed. GNU ld (bfd) took 0.06-0.1 of a
# fast-mode vector add's 0.32 CPU-s (g++ 12, with the PCH and the support object), gold 0.025-0.04:
# half of it reading libstdc++.so's symbols. Like the PCH it is an accelerator, never an input:
# the library does the same either way (its cache key does not name the linker), and a build
# that fails with it is rerun with the compiler's own linker (cpu._compile), which then links
# every later library of this process (a failure that names the linker; one that does not blames
# the PCH).
GOLD = ["-fuse-ld=gold"]
_linker: dict[str, list[str]] = {}            # compiler -> its link flags (GOLD or [])
_LINK_ERROR = re.compile(r"collect2|ld\.gold|linker")   # the link step failed (GCC, clang)


def link_flags(cxx: str, gcc_or_clang: bool) -> list[str]:
    """GOLD where the compiler can use it (`gcc_or_clang`, and ld.gold on the PATH), else []."""
    found = _linker.get(cxx)
    if found is None:
        import shutil
        found = _linker[cxx] = GOLD if gcc_or_clang and shutil.which("ld.gold") else []
    return found


def link_failed(stderr: str) -> bool:
    """Does the compiler's report say the link step failed?"""
    return _LINK_ERROR.search(stderr) is not None


def without_gold(cxx: str):
    """Gold failed where the compiler's own linker did not: this process links without it."""
    _linker[cxx] = []
