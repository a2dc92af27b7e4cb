"""Kernels whose tiles need more stack than a thread has (issue 27 item 6): 8 live (65536,) f64
tiles in the fast mode (4 MiB of tiles, 9 MiB of frames: more than the main thread's 8 MiB) and 24
in the faithful mode (more than a fiber's 256 KiB) used to overflow the stack and kill the process.
The build measures the library's frames (g++ -fstack-usage) and the blocks run on stacks that
big (launch/cpu_build.py frames_size, cpu_stack.h). A child process runs them, so a regression is a failed
test, not a dead test run."""
import subprocess
import sys
import textwrap

import numpy as np

from tilepy.launch import cpu, cpu_build


def chain(n: int) -> str:
    """A kernel body keeping `n` (65536,) tiles live until its last line."""
    lines = ["t0 = ct.load(x, (0,), (65536,))"]
    lines += [f"t{i} = t{i - 1} * {1 + i % 3}.0 + t{(i - 1) // 2}" for i in range(1, n)]
    lines.append("ct.store(out, (0,), " + " + ".join(f"t{i}" for i in range(n)) + ")")
    return "\n".join("    " + line for line in lines)


def reference(x, n: int):
    t = [x]
    for i in range(1, n):
        t.append(t[i - 1] * (1 + i % 3) + t[(i - 1) // 2])
    return sum(t)


SCRIPT = """
import numpy as np
import tilepy as ct

@ct.kernel
def live8(x, out):
{live8}

@ct.kernel
def live24(x, out):
{live24}

x = np.linspace(-1, 1, 1 << 16)
for mode, k in (("fast", live8), ("faithful", live24)):
    out = np.zeros_like(x)
    with ct.cpu_mode(mode):
        ct.launch(None, (1,), k, (x, out))
    np.save("{tmp}/" + mode + ".npy", out)
"""


def test_big_live_tiles_run_in_both_modes(tmp_path):
    script = tmp_path / "big_tiles.py"
    script.write_text(SCRIPT.format(live8=chain(8), live24=chain(24), tmp=tmp_path))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}"
    x = np.linspace(-1, 1, 1 << 16)
    np.testing.assert_allclose(np.load(tmp_path / "fast.npy"), reference(x, 8), rtol=1e-12)
    np.testing.assert_allclose(np.load(tmp_path / "faithful.npy"), reference(x, 24), rtol=1e-12)


def test_frames_size_adds_up_the_compilers_report(tmp_path):
    (tmp_path / "k.so-k.su").write_text("k.cpp:3:1:void big()\t700000\tstatic\n"
                                        "k.cpp:9:1:void small()\t16\tdynamic,bounded\n")
    (tmp_path / "k.cpp").write_text("not a report\t12\tstatic\n")
    assert cpu_build.frames_size(str(tmp_path)) == 700016 + cpu_build.STACK_MARGIN
    (tmp_path / "k.so-k.su").write_text("k.cpp:3:1:void f()\t4096\tstatic\n")
    assert cpu_build.frames_size(str(tmp_path)) == 0        # a thread's own stack is enough


def test_a_launch_on_a_thread_with_a_small_stack_runs_big_frames():
    """A Python thread with a 256 KiB stack launching a kernel whose frames need 2 MiB."""
    import threading
    src = textwrap.dedent("""\
        #include "tilepy/runtime.h"
        extern "C" __global__ void deep(double* out) {
          volatile double big[1 << 18];              // 2 MiB on the stack
          for (int i = 0; i < (1 << 18); ++i) big[i] = i;
          out[0] = big[(1 << 18) - 1];
        }
        """)
    k = cpu.compile_kernel(src, "deep", threads=1, mode="fast")
    assert k.library.stack > 2 << 20
    out = np.zeros(1)
    old = threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=k, args=(1, out))
        t.start()
        t.join(60)
    finally:
        threading.stack_size(old)
    assert out[0] == (1 << 18) - 1
