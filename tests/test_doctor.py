"""`python -m tilepy doctor` here (no GPU: said plainly, exit 0 when every backend works, under
5 s with a warm cache), on the fake driver (GPUs, targets, a vector add on each), its problems
with their fixes, and `doctor --gpu` (benchmarks/gpu.py) on the fake driver at small sizes."""
import io
import json
import os
import subprocess
import sys
import time

import pytest

from fake_driver import FakeDriver
from tutorial_cases import gpu_benchmark
from tilepy.__main__ import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def doctor(*argv):
    out = io.StringIO()
    rc = main(["doctor", *argv], out)
    return rc, out.getvalue()


def test_doctor_without_a_gpu():
    rc, text = doctor()
    for heading in ("versions", "NVRTC (GPU compiler)", "host C++ compiler (CPU backend)",
                    "disk cache", "NVIDIA driver and GPUs", "tileiras"):
        assert f"\n{heading}" in text
    assert "no GPU: tilepy runs kernels on the CPU backend" in text
    for backend in ("CPU fast", "CPU faithful", "interpreter"):
        assert f"  {backend + ':':<22} ok" in text, text
    assert "GPU:                   not run: no GPU" in text
    assert rc == 0 and "no problems found" in text
    t0 = time.perf_counter()
    assert doctor()[0] == 0
    assert time.perf_counter() - t0 < 5, "doctor with a warm cache"


def test_doctor_as_a_command():
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-m", "tilepy", "doctor"], capture_output=True, text=True,
                       env=env, cwd=ROOT)
    assert p.returncode == 0 and "no problems found" in p.stdout, p.stdout + p.stderr


def test_doctor_with_gpus():
    with FakeDriver(cc=(10, 3), devices=2):
        rc, text = doctor()
    assert "GPU 0:" in text and "compute capability 10.3" in text
    assert "GPU 1 target:          sm_103: a cubin for the GPU's own arch" in text   # NVRTC 13.5
    assert "  GPU 0:                 ok" in text and "  GPU 1:                 ok" in text
    if gpu_benchmark().table_compilers(FakeDriver()) == ["nvrtc", "tileiras"]:
        # the vector add per GPU compiler present; tileiras is usable for launches
        assert "  GPU 0 tileiras:        ok" in text and "  GPU 1 tileiras:        ok" in text
        assert "GPU launches of kernels with compiler=\"tileiras\"" in text
        assert "GPU launches use:      nvrtc (TILEPY_GPU_COMPILER" in text
    assert rc == 0
    with FakeDriver(cc=(11, 5), devices=1):                    # an arch NVRTC 13.5 does not know
        text = doctor()[1]
    assert "sm_110: NVRTC 13.5 does not know sm_115; a cubin for sm_110 (same major" in text


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


def test_doctor_gpu_needs_a_gpu():
    rc, text = doctor("--gpu")
    assert "--gpu:                 not run: no GPU" in text and rc == 0


def test_gpu_validation_on_the_fake_driver(tmp_path):
    bench = gpu_benchmark()
    from tutorial_cases import CASES
    with FakeDriver():
        rows = bench.validate(CASES, "tutorial", ["vector_add", "layernorm"])
        fuzz = bench.fuzz_rows(batches=1, per_batch=4)
    assert [r.status for r in rows] == ["ok", "ok"], rows
    assert fuzz and all(r.status == "ok" for r in fuzz), fuzz


def test_gpu_speed_table_on_the_fake_driver(tmp_path):
    torch = pytest.importorskip("torch")
    bench = gpu_benchmark()
    with FakeDriver() as drv:
        info = drv.device_info(drv.core.Device(0))
        compilers = bench.table_compilers(drv)
        rows = bench.speed_table(torch, "cpu", info, scale=64, iters=1, repeat=1,
                                 compilers=compilers)
    names = [r.problem for r in rows]
    assert len(rows) == 9 * len(compilers) and names[0].startswith("matmul float16")
    assert "bfloat16" in names[2]
    assert [r.compiler for r in rows[::9]] == [bench.COMPILER_NAMES[c] for c in compilers]
    assert all(r.tilepy_ms > 0 and r.torch_ms > 0 and r.peak_pct is not None for r in rows)
    text = bench.markdown(rows, info)
    assert text.count("\n| ") == len(rows) + 1 and "attention f16" in text
    path = tmp_path / "r.json"
    path.write_text(json.dumps([r.__dict__ for r in rows]))
    assert json.loads(path.read_text())[0]["unit"] == "TFLOP/s"


class _CorruptingDriver(FakeDriver):
    """A GPU that computes, but whose copies back to the host lose the last element."""

    def to_host(self, host, ptr):
        super().to_host(host, ptr)
        host.reshape(-1)[-1] = -1


def test_doctor_reports_wrong_results():
    with _CorruptingDriver(devices=1):
        rc, text = doctor()
    assert "  GPU 0:                 WRONG: 1 of 1000 elements differ from numpy" in text
    assert "GPU 0: the vector add gave wrong results" in text and "fix: check the driver" in text
    assert rc == 1
