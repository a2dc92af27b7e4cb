"""Each CPU kernel library has its own launch state (issue 27 item 7: the lock, the error and
the signal used to be C++ `inline` variables, merged across every library in the process): a
launch of one kernel does not wait behind a long launch of another, Ctrl-C reaches a main thread
waiting behind another thread's launch of the same kernel at once, and a child forked while
another thread launches can launch (the same kernel included). The long launch is a kernel
spinning until the test releases it; every wait is bounded, so a regression fails, not hangs."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from tilepy.launch import cpu

SPIN = """#include "tilepy/runtime.h"
extern "C" __global__ void spin(int* started, volatile int* release) {
  started[0] = 1;
  while (!release[0]) {}
}
"""
ONE = """#include "tilepy/runtime.h"
extern "C" __global__ void one(int* out) { out[0] = 7; }
"""
BOUND = 20.0            # seconds: far beyond what any step takes, even on a loaded machine


@pytest.fixture
def spinning():
    """A thread inside a launch of `spin` until the test ends; yields the kernels."""
    spin = cpu.compile_kernel(SPIN, "spin", threads=1, mode="fast")
    one = cpu.compile_kernel(ONE, "one", threads=1, mode="fast")
    started, release = np.zeros(1, np.int32), np.zeros(1, np.int32)
    t = threading.Thread(target=spin, args=(1, started, release), daemon=True)
    t.start()
    end = time.monotonic() + BOUND
    while not started[0] and time.monotonic() < end:
        time.sleep(0.005)
    assert started[0], "the spinning launch did not start"
    watchdog = threading.Timer(BOUND, release.fill, (1,))     # a hung test ends all the same
    watchdog.start()
    try:
        yield spin, one
    finally:
        watchdog.cancel()
        release[0] = 1
        t.join(BOUND)
    assert not t.is_alive()


def test_an_unrelated_launch_is_not_blocked_by_a_long_one(spinning):
    _, one = spinning
    out = np.zeros(1, np.int32)
    t = threading.Thread(target=one, args=(1, out), daemon=True)
    t.start()
    t.join(BOUND)
    assert out[0] == 7, "a launch of another kernel waited behind the spinning one"


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_ctrl_c_while_waiting_for_the_same_kernel_is_prompt(spinning):
    spin, _ = spinning
    go = np.ones(1, np.int32)
    # Ctrl-C as at a terminal: a library loaded earlier in this worker process may have left
    # SIGINT ignored, and the runtime rightly leaves an ignored SIGINT alone
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
            spin(1, np.zeros(1, np.int32), go)      # waits: the other thread holds this library
        assert time.monotonic() - t0 < BOUND / 2
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_during_a_launch_can_launch(spinning):
    spin, one = spinning
    pid = os.fork()
    if pid == 0:                                 # the child: never returns into pytest
        code = 1
        try:
            out = np.zeros(1, np.int32)
            one(1, out)
            spin(1, np.zeros(1, np.int32), np.ones(1, np.int32))   # its parent's lock was held
            code = 0 if out[0] == 7 else 2
        finally:
            os._exit(code)
    end = time.monotonic() + BOUND
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's launch hung")
