"""A tileiras without the ptxas, libnvvm and nvJitLink of its release beside it (issue 26: on a
GPU machine every compile failed with only "failed to compile Tile IR program"): a fake
executable that fails as that one did; tilepy names what is missing and the wheels to install,
in the compile error, in `tileiras.unusable()` (the tests' skip reason) and in the doctor."""
import io
import os
import stat

import pytest

from tilepy.errors import TileCompileError
from tilepy.launch import tileiras

RELEASE = "13.9"         # no real tileiras has it: the disk cache holds no cubin of it


def _tool(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def fake_tileiras(folder, release=RELEASE):
    """A `tileiras` in folder/bin that knows its release and fails every compile."""
    _tool(folder / "bin" / "tileiras",
          f'#!/bin/sh\nif [ "$1" = --version ]; then echo "Cuda compilation tools, release '
          f'{release}, V{release}.1"; exit 0; fi\n'
          'echo "error: failed to compile Tile IR program" >&2\nexit 5\n')


def fake_ptxas(folder, release):
    _tool(folder / "ptxas", f'#!/bin/sh\necho "Cuda compilation tools, release {release}, V{release}.0"\n')


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """The fake tileiras alone, an older toolkit's ptxas on PATH (as on that machine)."""
    fake_tileiras(tmp_path / "tileiras")
    fake_ptxas(tmp_path / "toolkit", "13.0")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "tileiras" / "bin"),
                                                str(tmp_path / "toolkit"), os.environ["PATH"]]))
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "tileiras" / "bin" / "tileiras"


def test_missing_companions_are_named_with_their_wheels(broken):
    assert tileiras.find_tileiras() == str(broken)
    why = tileiras.unusable()
    assert why.startswith(f"tileiras {RELEASE} ({broken}) lacks its companions of the same release")
    assert "ptxas" in why and "is release 13.0, not 13.9" in why
    assert "no libnvvm in" in why and "no nvJitLink in" in why
    assert why.endswith("pip install 'nvidia-cuda-nvcc==13.9.*' 'nvidia-nvvm==13.9.*' "
                        "'nvidia-nvjitlink==13.9.*'")


def test_a_failed_compile_says_why(broken):
    with pytest.raises(TileCompileError) as e:
        tileiras.assemble(b"not read by the fake", "sm_90", "k")
    msg = str(e.value)
    assert "tileiras could not compile kernel 'k' for sm_90 (tileiras 13.9" in msg
    assert "lacks its companions" in msg and "pip install 'nvidia-cuda-nvcc==13.9.*'" in msg
    assert "failed to compile Tile IR program" in e.value.log


def test_companions_beside_it_make_it_usable(tmp_path, monkeypatch):
    fake_tileiras(tmp_path)
    fake_ptxas(tmp_path / "bin", RELEASE)
    (tmp_path / "lib").mkdir()
    for lib in ("libnvvm.so.4", "libnvJitLink.so.13"):
        (tmp_path / "lib" / lib).write_bytes(b"")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "bin"), os.environ["PATH"]]))
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "cache"))
    assert tileiras.unusable() is None


def test_the_doctor_names_the_missing_wheels(broken):
    from tilepy.doctor import backends, environment
    from tilepy.doctor.report import Report
    report = Report(io.StringIO())
    environment.tileiras(report)
    rc = report.finish()
    text = report.out.getvalue()
    assert f"  companions:            MISSING: tileiras {RELEASE}" in text
    assert "- tileiras cannot compile: tileiras 13.9" in text
    assert "fix: pip install 'nvidia-cuda-nvcc==13.9.*'" in text
    assert rc == 0, text          # NVRTC works: a broken optional compiler is not fatal
    assert backends.gpu_compilers() == ["nvrtc"]      # no tileiras row in the vector add
