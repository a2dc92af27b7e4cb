"""Crash dumps of a failed device compile (api/device_compile.py: TILEPY_CRASH_DUMP, or cuTile's
CUDA_TILE_ENABLE_CRASH_DUMP), through the one step every launch calls, `compile_cubin`. The
compilers are replaced by one that fails: nothing is compiled, no driver is needed."""
import os
import zipfile

import numpy as np
import pytest

import tilepy as ct
from tilepy.api import device_compile
from tilepy.errors import TileCompilerExecutionError, TileCompilerTimeoutError


@ct.kernel
def doubled(X, Y):
    ct.store(Y, index=(0,), tile=ct.load(X, index=(0,), shape=(16,)) * 2)


def _args():
    return np.arange(16, dtype=np.float32), np.zeros(16, np.float32)


@pytest.fixture
def failing(monkeypatch, tmp_path):
    """The device compile fails as cuTile's test makes it fail; the working folder is tmp_path."""
    calls = []

    def fail(ck, target):
        calls.append(target)
        raise TileCompilerExecutionError(1, "error: compiler error", "--flag", "13.3")
    monkeypatch.setattr(device_compile, "compile_cubin", fail)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TILEPY_CRASH_DUMP", raising=False)
    monkeypatch.delenv("CUDA_TILE_ENABLE_CRASH_DUMP", raising=False)
    return calls


def _dumps(folder):
    return sorted(p for p in os.listdir(folder) if p.startswith("crash_dump_"))


@pytest.mark.parametrize("var", ["TILEPY_CRASH_DUMP", "CUDA_TILE_ENABLE_CRASH_DUMP"])
def test_a_failed_compile_of_a_launch_writes_a_dump(failing, monkeypatch, tmp_path, var):
    monkeypatch.setenv(var, "1")
    k = ct.kernel(doubled.func)                      # a kernel no launch has compiled yet
    with pytest.raises(TileCompilerExecutionError) as e:
        ct.launch(None, (1,), k, _args())
    assert failing == ["cpu"]                        # the launch called the replaced step
    [name] = _dumps(tmp_path)
    assert name.startswith("crash_dump_doubled_") and name.endswith(".zip")
    assert f"crash dump: {tmp_path / name}" in str(e.value)
    with zipfile.ZipFile(tmp_path / name) as z:
        assert sorted(z.namelist()) == ["debug_info.txt", "doubled.0.cutileir", "doubled.bytecode",
                                        "doubled.cu"]
        info = z.read("debug_info.txt").decode()
        ir, bytecode, cu = (z.read(f"doubled.{x}") for x in ("0.cutileir", "bytecode", "cu"))
    assert "return code 1" in info and "error: compiler error" in info
    assert "compiler flags:\n--flag\n" in info and "compiler version:\n13.3\n" in info
    assert "host C++ compiler" in info
    assert ir.startswith(b"cuda_tile.module @doubled") and bytecode.startswith(b"\x7fTileIR")
    assert b"tp::" in cu
    here = os.path.dirname(os.path.abspath(__file__)).encode()
    assert here not in bytecode and here not in info.encode()      # no folder of the user's


def test_off_by_default(failing, tmp_path):
    with pytest.raises(TileCompilerExecutionError):
        ct.launch(None, (1,), ct.kernel(doubled.func), _args())
    assert _dumps(tmp_path) == []


def test_a_compile_for_a_gpu_target_dumps_without_a_driver(failing, monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CRASH_DUMP", "1")
    monkeypatch.setattr(device_compile, "compile_cubin", lambda ck, target: (_ for _ in ()).throw(
        TileCompilerTimeoutError("NVRTC took too long", "-arch=sm_90", "13.5")))
    with pytest.raises(TileCompilerTimeoutError):
        doubled.compile(*_args(), arch="sm_90")
    [name] = _dumps(tmp_path)
    with zipfile.ZipFile(tmp_path / name) as z:
        assert "NVRTC for sm_90" in z.read("debug_info.txt").decode()


def test_a_dump_never_replaces_a_file_and_never_hides_the_error(failing, monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CRASH_DUMP", "1")
    monkeypatch.setattr(device_compile, "_timestamp", lambda: 17.5)
    (tmp_path / "crash_dump_doubled_17.5.zip").write_text("the user's")
    for _ in range(2):
        with pytest.raises(TileCompilerExecutionError):
            ct.launch(None, (1,), ct.kernel(doubled.func), _args())
    assert (tmp_path / "crash_dump_doubled_17.5.zip").read_text() == "the user's"
    assert _dumps(tmp_path)[1:] == ["crash_dump_doubled_17.5_1.zip", "crash_dump_doubled_17.5_2.zip"]
    monkeypatch.setattr(device_compile, "write_crash_dump",
                        lambda *a: (_ for _ in ()).throw(PermissionError("read-only folder")))
    with pytest.raises(TileCompilerExecutionError, match="compiler error") as e:
        ct.launch(None, (1,), ct.kernel(doubled.func), _args())
    assert "no crash dump was written: PermissionError: read-only folder" in str(e.value)


def test_a_bad_switch_value_is_a_note_not_a_new_error(failing, monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CRASH_DUMP", "maybe")
    with pytest.raises(TileCompilerExecutionError) as e:
        ct.launch(None, (1,), ct.kernel(doubled.func), _args())
    assert "no crash dump was written: TILEPY_CRASH_DUMP='maybe' is not valid" in str(e.value)
    assert _dumps(tmp_path) == []


def test_a_host_compiler_that_fails_writes_a_dump_with_its_log(monkeypatch, tmp_path):
    """No replaced step: the CPU backend's own compile fails (a compiler that prints an error)."""
    failing_cxx = tmp_path / "failcxx"
    failing_cxx.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "failcxx 1.0" && exit 0\n'
                           'echo "kernel.cu:1:1: error: simulated internal compiler error" >&2\n'
                           'exit 1\n')
    failing_cxx.chmod(0o755)
    monkeypatch.setenv("TILEPY_CXX", str(failing_cxx))
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    monkeypatch.setenv("TILEPY_CRASH_DUMP", "1")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TileCompilerExecutionError, match="could not build kernel"):
        ct.launch(None, (1,), ct.kernel(doubled.func), _args())
    [name] = _dumps(tmp_path)
    with zipfile.ZipFile(tmp_path / name) as z:
        info = z.read("debug_info.txt").decode()
    assert "simulated internal compiler error" in info and str(failing_cxx) in info
