"""`python -m tilepy doctor` here (no GPU: said plainly, exit 0 when every backend works, under
5 s with a warm cache), on the fake driver (GPUs, targets, a vector add on each), its problems
with their fixes, and `doctor --gpu` (benchmarks/gpu.py) on the fake driver at small sizes."""
import io
import json
import os
import subprocess
import sys
import time
import types

import pytest

from fake_driver import FakeDriver
from tutorial_cases import gpu_benchmark
from tilepy.__main__ import main
from tilepy.launch import toolchain

gpu_benchmark()                       # (puts benchmarks/ on sys.path: its gpu_* modules)
import gpu_isolate  # noqa: E402
import gpu_items  # noqa: E402
import gpu_speed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def doctor(*argv):
    out = io.StringIO()
    rc = main(["doctor", *argv], out)
    return rc, out.getvalue()


def test_doctor_without_a_gpu(no_driver):
    rc, text = doctor()
    for heading in ("versions", "NVRTC (GPU compiler)", "host C++ compiler (CPU backend)",
                    "disk cache", "NVIDIA driver and GPUs", "tileiras"):
        assert f"\n{heading}" in text
    assert "no GPU: tilepy runs kernels on the CPU backend" in text
    for backend in ("CPU fast", "CPU faithful", "interpreter"):
        assert f"  {backend + ':':<22} ok" in text, text
    assert "GPU:                   not run: no GPU" in text
    if "warm launches:         the C path" in text:
        assert "\n  torch tensors:         " in text
    assert rc == 0 and "no problems found" in text
    t0 = time.perf_counter()
    assert doctor()[0] == 0
    assert time.perf_counter() - t0 < 5, "doctor with a warm cache"


def test_doctor_says_how_warm_launches_read_torch_tensors(no_driver, monkeypatch, tmp_path):
    """The doctor's "torch tensors" line: this process's torch reader, else what the headers
    and the cache say (never importing torch or building the reader), and the problem with
    its fix when the reader cannot be used."""
    import importlib.machinery
    import importlib.util

    from tilepy.launch import warm
    if warm.module() is None:
        pytest.skip(f"the C warm launch path is not available here: {warm.why()}")
    monkeypatch.setitem(warm._state, "torch_reader", False)
    monkeypatch.setitem(warm._state, "torch_why", "a reason of this process")
    rc, text = doctor()
    assert "  torch tensors:         read through their attributes\n" in text
    problems = text[text.index("\nproblems"):]
    assert "through their attributes (a few microseconds more per launch): a reason of this " \
           "process\n    fix: use a torch wheel that ships its C++ headers" in problems
    assert rc == 0                                 # (slower, not broken)
    monkeypatch.delitem(warm._state, "torch_reader")
    real_find = importlib.util.find_spec
    root = tmp_path / "torch"
    torch_spec = importlib.machinery.ModuleSpec("torch", None, origin=str(root / "__init__.py"))
    found = {"torch": None}
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: found[name] if name in found else real_find(name, *a))
    assert warm.torch_reader_status() == ("torch is not installed", None)
    found["torch"] = torch_spec                    # a torch without its C++ headers
    what, problem = warm.torch_reader_status()
    assert what == "read through their attributes"
    assert "ships no include/c10/core/TensorImpl.h (its C++ headers)" in problem
    for h in ("c10/core/TensorImpl.h", "ATen/PythonTorchFunctionTLS.h"):
        (root / "include" / h).parent.mkdir(parents=True, exist_ok=True)
        (root / "include" / h).write_text("")
    var_h = root / "include" / "torch" / "csrc" / "autograd" / "python_variable.h"
    var_h.parent.mkdir(parents=True)
    var_h.write_text("struct THPVariable {\n  PyObject_HEAD\n  c10::MaybeOwned<at::Tensor> cdata;")
    assert "does not begin with `at::Tensor cdata`" in warm.torch_reader_status()[1]
    var_h.write_text("struct THPVariable {\n  PyObject_HEAD\n  // the tensor\n  at::Tensor cdata;")
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))      # (empty)
    what, problem = warm.torch_reader_status()
    assert problem is None and what.startswith("read in C once warm_torch.cpp is built for torch")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.so"))


def test_doctor_as_a_command():
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-m", "tilepy", "doctor"], capture_output=True, text=True,
                       env=env, cwd=ROOT)
    assert p.returncode == 0 and "no problems found" in p.stdout, p.stdout + p.stderr


def test_doctor_with_gpus():
    with FakeDriver(cc=(10, 3), devices=2):
        rc, text = doctor()
    assert "GPU 0:" in text and "compute capability 10.3" in text
    assert "GPU 1 target:          sm_103: a cubin for the GPU's own arch" in text   # NVRTC 13.0+
    assert "  GPU 0:                 ok" in text and "  GPU 1:                 ok" in text
    if gpu_benchmark().table_compilers(FakeDriver()) == ["nvrtc", "tileiras"]:
        # the vector add per GPU compiler present; tileiras is usable for launches
        assert "  GPU 0 tileiras:        ok" in text and "  GPU 1 tileiras:        ok" in text
        assert "GPU launches of kernels with compiler=\"tileiras\"" in text
        assert "GPU launches use:      nvrtc (TILEPY_GPU_COMPILER" in text
    assert rc == 0
    with FakeDriver(cc=(11, 5), devices=1):            # an arch NVRTC 13.0 to 13.5 does not know
        text = doctor()[1]
    nv = toolchain.info().nvrtc_version
    assert f"sm_110: NVRTC {nv} does not know sm_115; a cubin for sm_110 (same major" in text


def test_doctor_reports_problems_with_their_fixes():
    with FakeDriver(version=12080):             # a CUDA 12 driver, NVRTC 13
        rc, text = doctor()
    assert "GPU 0 target:          none" in text
    problems = text[text.index("\nproblems"):]
    assert "driver supports CUDA 12.8, older than tilepy's NVRTC" in problems
    assert "fix: " in problems and "tilepy[cu12]" in problems
    if "tileiras" in gpu_benchmark().table_compilers(FakeDriver()):
        assert ("GPU tileiras:          not run: the driver supports CUDA 12.8; tileiras' cubins "
                "need r580+") in text
    assert rc == 1


def test_doctor_gpu_needs_a_gpu(no_driver):
    rc, text = doctor("--gpu")
    assert "--gpu:                 not run: no GPU" in text and rc == 1     # issue 30 item 7


class _Lines(io.StringIO):
    """An output that notes, with each line, how many child processes had started then."""

    def __init__(self, children):
        super().__init__()
        self.children, self.noted = children, []

    def write(self, text):
        self.noted += [(line, len(self.children)) for line in text.splitlines() if line.strip()]
        return super().write(text)


def test_doctor_gpu_isolates_a_cuda_error_and_streams_its_rows(tmp_path, monkeypatch):
    """A CUDA error in one case (the child tests/gpu_child.py makes layernorm's launch an
    illegal address): the case is named with its kernel source, the rest runs in a fresh
    process, each row is printed when known (vector_add's before the second child started); the
    speed table's rows come from a child too, on torch's CPU tensors here (no Triton or cuTile:
    their columns are absent), as Markdown and JSON."""
    pytest.importorskip("torch")
    bench = gpu_benchmark()
    children = []
    real_child = gpu_isolate.Child

    def counted(*a, **k):
        children.append(1)
        return real_child(*a, **k)
    monkeypatch.setattr(gpu_isolate, "Child", counted)
    out = _Lines(children)
    child = [sys.executable, os.path.join(ROOT, "tests", "gpu_child.py"), "--fault", "layernorm"]
    with FakeDriver(devices=1):
        rc = bench.main(out, str(tmp_path / "r.json"), str(tmp_path / "r.md"), scale=64,
                        fuzz_batches=1, per_batch=2, child=child, workers=1, speed_only=[8],
                        cases=["tutorial:vector_add", "tutorial:layernorm", "tutorial:softmax"])
    noted = dict((line.split()[1], n) for line, n in out.noted if line.startswith("  tutorial"))
    assert noted == {"vector_add": 1, "layernorm": 1, "softmax": 2}, out.noted
    text = out.getvalue()
    assert "tutorial layernorm" in text and "CUDA ERROR FakeCUDAError: CUDA_ERROR_ILLEGAL_ADDRESS" in text
    assert "the rest ran in a fresh process\n    the faulting kernel:\n      @ct.kernel\n      " \
           "def layernorm(" in text
    assert "fuzz     batch 0 of 1 (seed 15)" in text and "2 random kernels agree" in text
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert [r["status"] for r in rows if r["suite"] != "speed"] == ["ok", "CUDA ERROR", "ok", "ok"]
    assert "def layernorm(" in rows[1]["source"]
    assert "speed    vector add f32 n=1048576 [tilepy]" in text
    tools = ["tilepy"] + (["tilepy tileiras"] if "tileiras" in bench.table_compilers(FakeDriver())
                          else []) + ["torch"]
    table = (tmp_path / "r.md").read_text()
    assert table in text and f"| problem | {' | '.join(tools)} | tilepy % of peak |" in table
    assert "| vector add f32 n=1048576 (GB/s) | " in table
    speed = [r for r in rows if r["suite"] == "speed"]
    assert [r["tool"] for r in speed] == tools
    assert all(r["status"] == "ok" and r["ms"] > 0 for r in speed), speed
    assert rc == 1


def test_doctor_gpu_without_fuzz(tmp_path):
    """fuzz_batches=0 is allowed (it was hypothesis's InvalidArgument)."""
    out = io.StringIO()
    with FakeDriver(devices=1):
        rc = gpu_benchmark().main(out, None, None, fuzz_batches=0, cases=[], speed=False)
    assert rc == 0 and "validation: 0 of 0 ok" in out.getvalue()


class _FakeTritonKernel:
    """`kernel[grid](*args, **meta)` as Triton's launch is called; computes with torch."""

    def __init__(self, fn):
        self.fn, self.launches = fn, 0

    def __getitem__(self, grid):
        def launch(*args, **meta):
            self.launches += 1
            self.fn(*args)
        return launch


def test_speed_table_columns_checks_and_timing(monkeypatch):
    """The Triton column (a fake triton_kernels; its wrong softmax is said, not timed), the
    cuTile column (the same tutorial source through a cuda.tile-like module: tilepy itself here),
    torch's attention on (B, H, S, D) tensors, every cell timed by triton.testing.do_bench."""
    torch = pytest.importorskip("torch")
    import tilepy
    benched = []
    triton = types.ModuleType("triton")
    triton.testing = types.SimpleNamespace(
        do_bench=lambda fn, **kw: benched.append(kw) or gpu_speed.wall_clock(fn))
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.testing", triton.testing)
    tk = types.SimpleNamespace(vector_add=_FakeTritonKernel(lambda a, b, c, n: c.copy_(a + b)),
                               softmax=_FakeTritonKernel(lambda x, y, *_: y.copy_(x)))   # wrong
    env = gpu_speed.Env(torch, "cpu", ("nvrtc",), cutile=tilepy, triton_kernels=tk)

    def cells(index, env=env):
        return list(gpu_speed.speed_item(f"speed:{index}/256", lambda s: None,
                                         gpu_items.row, env=env))
    vadd = cells(8)
    assert [(c["tool"], c["status"]) for c in vadd] == [("tilepy", "ok"), ("cuTile", "ok"),
                                                         ("Triton", "ok"), ("torch", "ok")]
    assert len(benched) == 4 and all(kw["return_mode"] == "median" for kw in benched)
    assert tk.vector_add.launches > 1
    wrong = {c["tool"]: c for c in cells(4, gpu_speed.Env(torch, "cpu", (), triton_kernels=tk))}
    assert wrong["Triton"]["status"] == "WRONG" and "not timed" in wrong["Triton"]["detail"]
    assert "ms" not in wrong["Triton"] and wrong["torch"]["status"] == "ok"
    shapes = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda q, k, v: shapes.append(q.dim()) or sdpa(q, k, v))
    (att,) = cells(6, gpu_speed.Env(torch, "cpu", ()))
    assert att["tool"] == "torch" and att["status"] == "ok" and 4 in shapes


def test_cuda_event_timing_flushes_the_l2():
    """Without Triton: CUDA events around each call, each after writing a 256 MiB buffer."""
    log = []

    class Event:
        def __init__(self, enable_timing):
            assert enable_timing

        def record(self):
            log.append("record")
            self.t = len(log)

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return float(end.t - self.t)
    flush = types.SimpleNamespace(zero_=lambda: log.append("flush"))
    torch = types.SimpleNamespace(int8="int8", cuda=types.SimpleNamespace(Event=Event),
                                  empty=lambda n, dtype, device: flush)
    ms = gpu_speed.events(torch, lambda: log.append("call"), reps=3)
    assert log == ["call"] + ["flush", "record", "call", "record"] * 3 and ms == 2.0


@pytest.mark.parametrize("how,status,said", [
    ("os._exit(139)", "CRASHED", "the process ended with exit status 139"),
    ("time.sleep(60)", "HUNG", "no answer in 1 s (killed)")])
def test_isolation_names_a_crash_and_a_hang(how, status, said):
    """A child that dies inside an item (a segfault) or hangs (a kernel that never ends): the
    item is named, the next one runs in a fresh child."""
    code = ("import json, os, sys, time\nitems = json.load(open(sys.argv[1]))\n"
            "print('@@gpu ' + json.dumps({'start': items[0], 'source': 'def k(): ...'}), flush=True)\n"
            f"if items[0] == 'tutorial:bad':\n    {how}\n"
            "print('@@gpu ' + json.dumps({'row': {'item': items[0], 'suite': 'tutorial', "
            "'name': 'good', 'status': 'ok', 'detail': ''}}), flush=True)\n")
    rows = []
    gpu_isolate.run_isolated([sys.executable, "-c", code], ["tutorial:bad", "tutorial:good"],
                             rows.append, timeout=1)
    assert [(r["name"], r["status"]) for r in rows] == [("bad", status), ("good", "ok")]
    assert rows[0]["detail"].startswith(said) and rows[0]["source"] == "def k(): ..."


def test_a_failing_tool_is_a_cell_not_the_end_of_the_problem():
    torch = pytest.importorskip("torch")

    def broken(*a, **k):
        raise RuntimeError("Triton's own error")
    tk = types.SimpleNamespace(vector_add=_FakeTritonKernel(broken))
    cells = list(gpu_speed.speed_item("speed:8/256", lambda s: None, gpu_items.row,
                                      env=gpu_speed.Env(torch, "cpu", (), triton_kernels=tk)))
    assert [(c["tool"], c["status"]) for c in cells] == [("Triton", "FAILED"), ("torch", "ok")]
    assert "RuntimeError: Triton's own error" in cells[0]["detail"]
    with pytest.raises(RuntimeError):          # the context died: the child's fault path
        list(gpu_speed.speed_item("speed:8/256", lambda s: None, gpu_items.row,
                                  env=gpu_speed.Env(torch, "cpu", (), triton_kernels=tk),
                                  alive=lambda: False))
