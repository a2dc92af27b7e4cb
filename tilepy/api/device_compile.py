"""The step from a compiled kernel to the code its device runs, and cuTile's crash dump when
the compiler of that step fails.

`compile_cubin(ck, target)` (cuTile's name for its tileiras step) makes the code: for a target
"sm_XX"/"compute_XX", NVRTC's cubin or PTX of the kernel's C++, or tileiras' cubin of its
bytecode (a TileirasKernel); for "cpu", the host compiler's library of the C++ (the CPU
backend, in the current CPU mode). Every launch, and `Kernel.compile` for a GPU target, goes
through `build`, which calls it by this module's attribute: replacing
`device_compile.compile_cubin` changes what runs (cuTile's tests replace
`cuda.tile._compile.compile_cubin`; the cuda.tile of benchmarks/cutile_samples.py is this
function).

Crash dumps (TILEPY_CRASH_DUMP=1, or cuTile's CUDA_TILE_ENABLE_CRASH_DUMP=1): when that compiler
fails (TileCompilerExecutionError, TileCompilerTimeoutError), `crash_dump_<kernel>_<timestamp>.zip`
is written into the working folder, holding what a report of the failure needs and nothing of
the user's disk: `debug_info.txt` (the error and the compiler's log, the compiler, its flags and
version, the target, tilepy's version), `<kernel>.bytecode` (the kernel's Tile IR bytecode, its
debug locations naming files without their folders), `<kernel>.0.cutileir` (its Tile IR text)
and, for the C++ backend, `<kernel>.cu` (the source the compiler read). A file already there is
never replaced (the name gets a number), and a dump that cannot be written is a note on the
compiler's error, which is raised as it came.
"""
from __future__ import annotations

import datetime
import os
import sys
import zipfile

from ..errors import TileCompilerExecutionError, TileCompilerTimeoutError, TileValueError


def compile_cubin(ck, target: str):
    """The code of compiled kernel `ck` for `target` (see the module docstring)."""
    if target == "cpu":
        from ..launch import cpu
        return cpu.build(ck.emitted, ck.compile_source())
    if ck.compiler == "tileiras":
        from ..launch.tileiras import assemble
        return assemble(ck.bytecode, target, ck.name)
    from ..launch.nvrtc import compile_cubin as nvrtc_cubin
    return nvrtc_cubin(ck.compile_source(), target, ck.name)


def build(ck, target: str):
    """`compile_cubin(ck, target)`, with a crash dump when its compiler fails and dumps are on."""
    try:
        return compile_cubin(ck, target)
    except (TileCompilerExecutionError, TileCompilerTimeoutError) as e:
        from ..settings import crash_dumps_requested
        try:
            wanted = crash_dumps_requested()
        except TileValueError as bad:                # the compiler's error matters more
            e.notes.append(f"no crash dump was written: {bad.message}")
            raise e from None
        if wanted:
            _dump_for(ck, target, e)
        raise


def _dump_for(ck, target: str, e):
    """Write the crash dump of `e`; say where on stderr and in a note of `e` (or why not)."""
    try:
        path = write_crash_dump(ck, target, e)
    except Exception as why:                       # the compiler's error matters more
        e.notes.append(f"no crash dump was written: {type(why).__name__}: {why}")
        return
    print(f"tilepy: crash dump of kernel '{ck.name}' written to {path}", file=sys.stderr)
    e.notes.append(f"crash dump: {path}")


def write_crash_dump(ck, target: str, e, folder: str = ".") -> str:
    """The crash dump of compiler error `e` for kernel `ck` and `target`, as a new zip file in
    `folder`; its path."""
    name = ck.name
    files = {"debug_info.txt": _debug_info(ck, target, e),
             f"{name}.0.cutileir": f"{ck.module}\n"}
    try:
        files[f"{name}.bytecode"] = _anonymous_bytecode(ck.module)
    except Exception as why:                       # (a kernel the bytecode writer refuses)
        files["debug_info.txt"] += f"\nbytecode:\nnot written: {type(why).__name__}: {why}\n"
    if ck.compiler != "tileiras":
        files[f"{name}.cu"] = ck.cuda_source
    base = os.path.abspath(os.path.join(folder, f"crash_dump_{name}_{_timestamp()}"))
    for n in range(100):
        path = f"{base}.zip" if n == 0 else f"{base}_{n}.zip"
        try:
            f = open(path, "xb")                   # never over a file already there
        except FileExistsError:
            continue
        with f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for member, data in files.items():
                z.writestr(member, data)
        return path
    raise FileExistsError(f"{base}.zip and 99 numbered names beside it exist")


def _timestamp() -> float:
    return datetime.datetime.now().timestamp()


def _anonymous_bytecode(module) -> bytes:
    """The module's bytecode, its locations naming files without their folders."""
    import copy
    import dataclasses

    from ..bytecode import write_module
    mine = copy.deepcopy(module)
    for op in mine.walk():
        if op.loc is not None:
            op.loc = dataclasses.replace(op.loc, file=os.path.basename(op.loc.file),
                                         source_line=None)
    return write_module(mine)


def _debug_info(ck, target: str, e) -> str:
    from ..version import __version__
    compiler, flags, version = _compiler(ck, target)
    log = f"\n--- compiler log ---\n{e.log}" if e.log else ""
    return (f"error:\n{e.message}{log}\n\n"
            f"compiler:\n{compiler} for {target}\n\n"
            f"compiler flags:\n{e.compiler_flags or flags}\n\n"
            f"compiler version:\n{e.compiler_version or version}\n\n"
            f"tilepy version:\n{__version__}\n")


def _compiler(ck, target: str) -> tuple[str, str, str]:
    """(the compiler of this step, its flags, its version), as far as tilepy knows them."""
    if target == "cpu":
        from ..launch import cpu
        name = f"host C++ compiler {cpu.host_compiler()} ({cpu.current_mode()} mode)"
    else:
        name = "tileiras" if ck.compiler == "tileiras" else "NVRTC"
    try:
        if target == "cpu":
            mode = cpu.current_mode()
            return name, " ".join(cpu.flags(mode, ck.emitted.nt)), cpu.compiler_id(
                cpu.host_compiler())
        if ck.compiler == "tileiras":
            from ..launch.tileiras import tileiras_version
            return name, f"--gpu-name={target} --opt-level=3", tileiras_version() or "unknown"
        from ..launch import nvrtc
        return (name, " ".join(nvrtc.options(target, ck.compile_source())),
                ".".join(map(str, nvrtc.nvrtc_version())))
    except Exception as why:                       # (a toolchain not installed)
        return name, f"unknown ({type(why).__name__}: {why})", "unknown"
