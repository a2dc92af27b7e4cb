"""GPU launches through NVIDIA's tileiras: a specialization's Tile IR, as tilepy's bytecode, is
the code the launch path loads (`@tilepy.kernel(compiler="tileiras")`, or TILEPY_GPU_COMPILER).

Which compiler a launch uses: the kernel's `compiler` option when it names one, else
TILEPY_GPU_COMPILER (default "nvrtc"). CPU launches never use tileiras.

What stays the same as with NVRTC: the specialization, the parameter packing (tileiras lays the
entry's parameters out as NVRTC lays out the emitted C++'s: pointers, then int32 extents and
strides, then scalars; tests/test_tileiras.py checks it for the cuTile suite), the launch plans,
the disk cache (kind "tileiras", launch/tileiras.py), compiler errors at the user's line (from
the bytecode's debug locations). What differs: the block size is the cubin's (REQNTID, chosen by
tileiras), there is no dynamic shared memory (tileiras sizes its own), the C++ emitter is not
involved (a kernel it refuses can still run through tileiras), and the driver must know Tile IR
kernels: r580+ (CUDA 13.0).
"""
from __future__ import annotations

from ..settings import gpu_compiler_requested

MIN_DRIVER = 13000          # CUDA 13.0 (driver r580): the first to load tileiras' cubins


def compiler_for(kernel) -> str:
    """The GPU compiler a launch of `kernel` uses now: its option, else TILEPY_GPU_COMPILER."""
    return kernel.options.get("compiler") or gpu_compiler_requested()


class TileirasKernel:
    """One specialization compiled by tileiras for GPU launches: what launch/dispatch.py's
    `launch_gpu` asks of a compiled kernel (as of api/compiler.CompiledKernel)."""
    compiler = "tileiras"
    min_driver = MIN_DRIVER

    def __init__(self, module):
        from ..bytecode import write_module
        self.module = module
        self.name = self.symbol = module.entry().sym_name       # tileiras names it so
        self.bytecode = write_module(module)

    def code_key(self) -> tuple:
        return self.compiler, self.name, self.bytecode

    def gpu_code(self, target: str):
        """The cubin for `target` (disk-cached) and the block size it requires."""
        from ..cuda_c.targets import check_target_ops, target_needs
        from ..errors import TileCompileError
        from ..launch.gpu import GpuCode
        from ..launch.tileiras import required_threads
        from .device_compile import build
        check_target_ops(target_needs(self.module), target)
        code = build(self, target)
        block = required_threads(code.data, self.name)
        if block is None:
            raise TileCompileError(f"tileiras' cubin for kernel '{self.name}' ({target}) does not "
                                   f"say its block size (no REQNTID)")
        return GpuCode(code.kind, code.data, block, log=code.log)

    def debug_ops(self) -> tuple[bool, bool]:
        """(asserts, prints): does the kernel assert or print on the device?"""
        names = {op.name for op in self.module.walk()}
        return "assert" in names, "print_tko" in names


def compile_tileiras(kernel, key, params) -> TileirasKernel:
    """The specialization `key` for tileiras launches, made once per process and kernel."""
    from .compiler import tile_ir
    done = kernel.__dict__.setdefault("_tp_tileiras", {})
    hit = done.get(key)
    if hit is None:
        hit = done[key] = TileirasKernel(tile_ir(kernel, key, params))
    return hit
