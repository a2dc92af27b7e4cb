"""The CPU backend's worker pool (cpu_pool.h): one pool per process, its helper threads kept
between launches and shared by every kernel library and both CPU modes, idle without CPU use,
rebuilt in a forked child, and a launch still complete when the system refuses threads.
Each check runs in a fresh process, which counts its own threads in /proc/self/task."""
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc")

PRELUDE = textwrap.dedent("""
    import os, time
    import numpy as np
    import tilepy as ct

    def tasks():
        return set(os.listdir("/proc/self/task"))

    @ct.kernel
    def bump(a):
        i = ct.bid(0)
        ct.store(a, (i,), ct.load(a, (i,), (1,)) + 1)

    @ct.kernel
    def twice(a):
        i = ct.bid(0)
        ct.store(a, (i,), ct.load(a, (i,), (1,)) * 2)

    a = np.zeros(4096, np.int32)
    ct.launch(None, (1,), bump, (a,))          # built; one block runs on this thread
    ct.launch(None, (1,), twice, (a,))
    a[:] = 0
    base = tasks()
""")

POOL = PRELUDE + textwrap.dedent("""
    ct.launch(None, (4096,), bump, (a,))
    helpers = tasks() - base
    for _ in range(10):                        # two libraries, one pool
        ct.launch(None, (4096,), bump, (a,))
        ct.launch(None, (4096,), twice, (a,))
    expected = 1
    for _ in range(10):
        expected = (expected + 1) * 2
    assert (a == expected).all(), a
    print("helpers", len(helpers), "kept", tasks() - base == helpers)
    time.sleep(0.2)                            # past the helpers' spin
    t0 = time.process_time()
    time.sleep(1.0)
    print("idle cpu %.4f" % (time.process_time() - t0))
    os.environ["TILEPY_CPU_WORKERS"] = "4"
    ct.launch(None, (4096,), bump, (a,))
    with ct.cpu_mode("faithful"):
        ct.launch(None, (4096,), bump, (a,))
    assert (a == expected + 2).all()
    print("helpers at 4 workers", len(tasks() - base))
    import ctypes
    from tilepy.launch import cpu
    path = cpu.pool_library()[0]
    print("pool library", cpu.POOL["run"] == ctypes.cast(ctypes.CDLL(path).tp_cpu_pool_run,
                                                         ctypes.c_void_p).value,
          "kernels carry it", any(hasattr(k.lib, "tp_cpu_pool_run") for k in cpu._LOADED.values()))
""")


def _run(script: str, tmp_path, workers="2"):
    path = tmp_path / "pool.py"
    path.write_text(script)
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TILEPY_CPU_WORKERS": workers})
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout.split("\n")


def test_one_pool_kept_between_launches_and_idle_without_cpu(tmp_path):
    """2 workers: one helper thread, started by the first multi-block launch and reused by every
    later launch of either library (before the pool each launch started and joined its own);
    asleep afterwards (about no CPU time in a second); grown to 3 helpers for 4 workers, and the
    faithful mode's launches use the same helpers."""
    kept, idle, grown, pool = _run(POOL, tmp_path)[:4]
    assert kept == "helpers 1 kept True"
    assert float(idle.split()[2]) < 0.05
    assert grown == "helpers at 4 workers 3"
    # the pool is a library of its own, built once per compiler (cpu_pool.h): no kernel carries it
    assert pool == "pool library True kernels carry it False"


FORK = PRELUDE + textwrap.dedent("""
    import signal
    ct.launch(None, (4096,), bump, (a,))       # the parent's pool has its helper
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)                       # a deadlock ends the child with SIGALRM
        child_base = tasks()
        ct.launch(None, (4096,), bump, (a,))
        ok = (a == 2).all() and len(tasks() - child_base) == 1
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
    ct.launch(None, (4096,), bump, (a,))
    print("parent", int(a.sum()) == 2 * 4096)
""")


def test_a_forked_child_starts_its_own_pool(tmp_path):
    """After fork the child has none of the parent's helpers: its launch does not wait for them,
    it starts a helper of its own and computes the right result; the parent is unaffected."""
    child, parent = _run(FORK, tmp_path)[:2]
    assert (child, parent) == ("child 0", "parent True")


REFUSED = PRELUDE + textwrap.dedent("""
    import resource
    size = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (size + (4 << 20), resource.RLIM_INFINITY))
    ct.launch(None, (4096,), bump, (a,))       # no room for a thread's stack: no helper starts
    print("refused", (a == 1).all(), len(tasks() - base))
""")


def test_a_launch_completes_when_the_system_refuses_threads(tmp_path):
    (line,) = _run(REFUSED, tmp_path, workers="8")[:1]
    assert line == "refused True 0"


def test_a_helper_library_evicted_before_it_loads_is_loaded_from_its_bytes(tmp_path, monkeypatch):
    """Another process sharing a small cache may evict the pool library's entry between its
    read and the load (test_cache_safety's one-byte cap found it): the bytes in hand load."""
    from tilepy.launch import cpu
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    path, scratch, data = found = cpu.pool_library()
    assert not scratch and os.path.exists(path)
    os.unlink(path)                                     # the other process's eviction
    assert cpu.load_helper(found).tp_cpu_pool_run
    assert not os.path.exists(path)
