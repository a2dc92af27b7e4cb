"""The doctor's description of the machine: versions, NVRTC, compiler, cache, driver, GPUs."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

from .report import size as _size

PACKAGES = ("numpy", "ml_dtypes", "cuda-core", "cuda-bindings", "cuda-pathfinder",
            "nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "torch", "cupy-cuda12x", "cupy-cuda13x")
CUDA_FIX = "pip install 'tilepy[cu13]' (or 'tilepy[cu12]' for a CUDA 12 driver)"


def describe(report):
    versions(report)
    nvrtc(report)
    host_compiler(report)
    disk_cache(report)
    driver(report)
    tileiras(report)


def versions(report):
    from importlib import metadata

    from ..version import __version__
    report.section("versions")
    report.line("python", f"{platform.python_version()} ({sys.executable})")
    report.line("tilepy", __version__)
    for pkg in PACKAGES:
        try:
            report.line(pkg, metadata.version(pkg))
        except metadata.PackageNotFoundError:
            if pkg in ("numpy", "cuda-core", "cuda-bindings"):
                report.line(pkg, "not installed")
                report.problem(f"{pkg} is not installed", "pip install tilepy (it depends on it)")


def nvrtc(report):
    from ..errors import TileCompileError
    from ..launch import toolchain
    report.section("NVRTC (GPU compiler)")
    try:
        tc = toolchain.info()
    except TileCompileError as e:
        report.line("NVRTC", "not found")
        report.problem(f"NVRTC: {e.message}", CUDA_FIX, fatal=False)
        return
    report.line("version", tc.nvrtc_version)
    report.line("library", tc.nvrtc_lib)
    headers = os.path.join(tc.include_dir, "cuda_fp16.h")
    report.line("CUDA headers", f"{tc.include_dir} (CUDART {tc.runtime_version})")
    if not os.path.exists(headers):
        report.problem(f"cuda_fp16.h is missing from {tc.include_dir}", CUDA_FIX, fatal=False)
    report.line("targets", " ".join(f"sm_{a}" for a in tc.supported_archs))


def host_compiler(report):
    from ..errors import TileCompileError
    from ..launch import cpu, toolchain
    report.section("host C++ compiler (CPU backend)")
    try:
        cxx = cpu.host_compiler()
    except TileCompileError as e:
        report.line("compiler", "not found")
        report.problem(f"no host C++ compiler: {e.message}",
                       "install g++ (apt install g++) or set TILEPY_CXX to a C++20 compiler")
        return
    report.line("compiler", cxx)
    report.line("version", toolchain.compiler_version(cxx))
    from ..launch import warm
    if warm.module() is not None:
        report.line("warm launches", "the C path (tilepy/launch/warm.cpp, built with it)")
        what, problem = warm.torch_reader_status()
        report.line("torch tensors", what)
        if problem:
            report.problem(f"warm launches read torch tensors through their attributes (a few "
                           f"microseconds more per launch): {problem}",
                           "use a torch wheel that ships its C++ headers (torch/include), as "
                           "PyPI's do", fatal=False)
    else:
        report.line("warm launches", "the Python path only")
        report.problem(f"the C warm launch path could not be built: {warm.why()}",
                       "install Python's development headers (apt install python3-dev) for "
                       "launches a few times cheaper", fatal=False)


def disk_cache(report):
    from ..launch import cache
    from ..settings import settings
    report.section("disk cache")
    root = cache.cache_dir()
    if root is None:
        report.line("dir", "off (TILEPY_CACHE_DIR=off): every process compiles again")
        return
    entries = cache.listing()
    cap = settings().cache_size
    report.line("dir", root)
    report.line("entries", f"{len(entries)} ({_size(sum(e.size for e in entries))}; cap "
                           f"{_size(cap) if cap else 'none'})")


def driver(report):
    from ..errors import TileError
    from ..host import driver as gpu_driver
    from ..launch import gpu
    drv = gpu_driver.current()
    report.section("NVIDIA driver and GPUs")
    if not drv.available():
        report.line("driver", "none found")
        report.line("GPUs", "no GPU: tilepy runs kernels on the CPU backend here (CUDA arrays "
                            "cannot be used)")
        return
    report.line("driver", f"{drv.name}, CUDA {gpu._ver(drv.version())}")
    for i in range(drv.device_count()):
        dev = drv.core.Device(i)
        info = drv.device_info(dev)
        cc = info["cc"]
        report.line(f"GPU {i}", f"{info['name']}, compute capability {cc[0]}.{cc[1]}, "
                                f"{info['sms']} SMs, {_size(info['memory'])}, "
                                f"{info['clock_mhz']} MHz (memory {info['memory_clock_mhz']} MHz)")
        try:
            target, why = _target(cc, drv)
            report.line(f"GPU {i} target", f"{target}: {why}")
        except TileError as e:
            report.line(f"GPU {i} target", "none")
            report.problem(f"GPU {i}: no target: {e.message}", _target_fix(drv.version()))


def _target_fix(driver_version: int) -> str:
    from ..launch import toolchain
    major = driver_version // 1000
    if major < toolchain.info().major:
        return f"pip install 'tilepy[cu{major}]' (NVRTC of the driver's CUDA version), or update the NVIDIA driver"
    return "pip install -U 'tilepy[cu13]' (a newer NVRTC knows more GPUs), or update the NVIDIA driver"


def _target(cc, drv):
    from ..launch import gpu, toolchain
    tc = toolchain.info()
    major, minor = (int(x) for x in tc.nvrtc_version.split("."))
    from ..settings import settings
    return gpu.target_and_reason(tuple(cc), drv.version(), (major, minor), tc.supported_archs,
                                 settings().sm90a)


def tileiras(report):
    from ..launch.tileiras import find_tileiras, missing_companions
    report.section("tileiras (NVIDIA's Tile IR compiler, optional)")
    path = find_tileiras()
    if path is None:
        report.line("tileiras", "not installed (optional: pip install nvidia-cuda-tileiras)")
        return
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        version = next((ln for ln in out.splitlines() if "release" in ln.lower()), out.strip()[:80])
    except (OSError, subprocess.SubprocessError) as e:
        version = f"does not run ({e})"
    report.line("tileiras", f"{path} ({version.strip()})")
    missing = missing_companions()
    if missing:
        report.line("companions", f"MISSING: {missing[0]}")
        report.problem(f"tileiras cannot compile: {missing[0]}", missing[1], fatal=False)
        return
    report.line("companions", "ptxas, libnvvm and nvJitLink of its release beside it")
    report.line("used by tilepy", "GPU launches of kernels with compiler=\"tileiras\" (or all, with "
                "TILEPY_GPU_COMPILER=tileiras), kernel.compile(..., compiler=\"tileiras\"); its "
                "cubins need driver r580+ (CUDA 13.0)")
    from ..settings import settings
    report.line("GPU launches use", f"{settings().gpu_compiler} (TILEPY_GPU_COMPILER; a kernel's "
                "compiler= option wins)")
