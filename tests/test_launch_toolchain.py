"""CUDA 12 / 13 toolchain choice: NVRTC and headers of cuda-bindings' CUDA major version, with
both wheel layouts installed side by side (the `cu12` extra keeps the CUDA 13 wheels)."""
import pytest

import tilepy as ct
from tilepy.launch import toolchain


@pytest.fixture
def two_layouts(tmp_path, monkeypatch):
    """A site-packages `nvidia` folder with the CUDA 13 layout (nvidia/cu13/...) and the CUDA 12
    one (nvidia/cuda_nvrtc, nvidia/cuda_runtime)."""
    nv = tmp_path / "nvidia"
    for sub, lib, ver in (("cu13", "libnvrtc.so.13", 13050), ("cuda_nvrtc", "libnvrtc.so.12", None),
                          ("cuda_runtime", None, 12090)):
        (nv / sub / "lib").mkdir(parents=True)
        if lib:
            (nv / sub / "lib" / lib).write_bytes(b"")
        if ver:
            (nv / sub / "include").mkdir()
            (nv / sub / "include" / "cuda_runtime_api.h").write_text(
                f"#pragma once\n#define CUDART_VERSION  {ver}\n")
    monkeypatch.setattr(toolchain, "_site_nvidia_dirs", lambda: [str(nv)])
    toolchain.runtime_version.cache_clear()
    yield nv
    toolchain.runtime_version.cache_clear()


@pytest.mark.parametrize("major,nvrtc,include", [(13, "cu13/lib/libnvrtc.so.13", "cu13/include"),
                                                 (12, "cuda_nvrtc/lib/libnvrtc.so.12",
                                                  "cuda_runtime/include")])
def test_the_bindings_major_version_picks_nvrtc_and_headers(two_layouts, monkeypatch, major,
                                                            nvrtc, include):
    monkeypatch.setattr(toolchain, "bindings_major", lambda: major)
    assert toolchain.find_nvrtc() == str(two_layouts / nvrtc)
    inc, rt = toolchain.include_dir_for(major)
    assert inc == str(two_layouts / include) and int(rt) // 1000 == major


def test_missing_headers_of_the_major_version(two_layouts, monkeypatch):
    import shutil

    import cuda.pathfinder
    monkeypatch.setenv("CUDA_HOME", str(two_layouts / "nowhere"))
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_header_directory", lambda name: None)
    shutil.rmtree(two_layouts / "cuda_runtime")
    with pytest.raises(ct.TileCompileError, match=r"cannot find CUDA 12 headers .*"
                                                  r"\(pip install 'tilepy\[cu12\]'\)"):
        toolchain.include_dir_for(12)
    with pytest.raises(ct.TileCompileError, match="CUDA 12 or 13 wheels"):
        toolchain.include_dir_for(11)


def test_bindings_major_matches_the_installed_package():
    import cuda.bindings
    assert toolchain.bindings_major() == int(cuda.bindings.__version__.split(".")[0])


def test_installed_toolchain_is_consistent():
    tc = toolchain.probe()
    assert tc.major == toolchain.bindings_major()
    assert f"libnvrtc.so.{tc.major}" in tc.nvrtc_lib
    assert int(tc.runtime_version) // 1000 == tc.major


def test_nvrtc_builtins_are_loaded_with_it():
    """NVRTC opens libnvrtc-builtins.so.MAJOR.MINOR by name at its first compile; the 13.0
    wheel's libnvrtc has no RPATH $ORIGIN to find it beside itself (NVRTC_ERROR_BUILTIN_OPERATION_
    FAILURE at every compile of a process that had not loaded it otherwise), so tilepy loads the
    sibling with the library."""
    import os
    nv = toolchain.nvrtc_lib()
    major, minor = nv.version()
    sibling = os.path.join(os.path.dirname(os.path.realpath(toolchain.info().nvrtc_lib)),
                           f"libnvrtc-builtins.so.{major}.{minor}")
    if not os.path.isfile(sibling):     # a system NVRTC laid out otherwise: its own search
        assert nv.builtins is None
        return
    assert nv.builtins is not None and nv.builtins._name == sibling
    with open("/proc/self/maps") as f:
        assert os.path.realpath(sibling) in f.read()
