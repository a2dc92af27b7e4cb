"""The pipeline, in order: specialize -> trace -> verify -> lower -> emit.

    arguments --intake--> ArrayInfo/values --Kernel.specialize--> params (cache key)
      --Kernel.trace--> Tile IR module --verify--> --dce--> --emit_kernel--> CUDA C++

The order matters: the verifier runs on the traced module exactly as printed by `kernel.mlir()`
(what the user reads is what was checked); dead-code elimination runs before emission so the
C++ only has ops that contribute; the emitter needs a verified module because it trusts types.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import TileError, TileInternalError
from .ir import Module, verify
from .ir.printer import print_module
from .launch.intake import intake


@dataclass
class CompiledKernel:
    name: str
    key: tuple
    params: list                 # frontend params (ArrayParam / ScalarParam / ConstParam)
    module: Module
    mlir: str
    emitted: object              # cuda_c.emitter.EmittedKernel

    @property
    def cuda_source(self) -> str:
        return self.emitted.source(line_directives=False)

    def compile_source(self) -> str:
        """The source given to compilers: #line directives point errors at the user's code."""
        return self.emitted.source(line_directives=True)


def infos_for(args) -> list:
    out = []
    for a in args:
        info = intake(a)
        out.append(a if info is None else info)
    return out


def compile_for_args(kernel, args) -> CompiledKernel:
    key, params = kernel.specialize(infos_for(args))
    return compile_specialization(kernel, key, params)


def disjoint_args(module: Module, params) -> frozenset:
    """The entry arguments (array base pointers) the specialization proved disjoint."""
    from .frontend.context import ArrayParam
    args, out = iter(module.entry().body.block.args), []
    for p in params:
        c = p.c_params()
        if c:
            first = next(args)
            for _ in c[1:]:
                next(args)
            if isinstance(p, ArrayParam) and p.disjoint:
                out.append(first)
    return frozenset(out)


def compile_specialization(kernel, key, params) -> CompiledKernel:
    hit = kernel.cache.get(key)
    if hit is not None:
        return hit
    from .cuda_c.emitter import emit_kernel
    from .lowering.dce import dce
    module = kernel.trace(params)
    verify(module)
    mlir = print_module(module)
    dce(module)
    try:
        emitted = emit_kernel(module, disjoint=disjoint_args(module, params))
    except TileError:
        raise
    except Exception as e:
        raise TileInternalError(f"internal error while emitting C++ for '{kernel.name}': "
                                f"{type(e).__name__}: {e}") from e
    ck = CompiledKernel(kernel.name, key, params, module, mlir, emitted)
    kernel.cache[key] = ck
    return ck


@dataclass
class CompiledModule:
    """A Tile IR module built directly (not traced from Python), compiled to C++."""
    name: str
    module: Module
    mlir: str
    emitted: object              # cuda_c.emitter.EmittedKernel

    @property
    def cuda_source(self) -> str:
        return self.emitted.source(line_directives=False)

    def compile_source(self) -> str:
        return self.emitted.source(line_directives=True)

    def run_cpu(self, grid, args, mode: str | None = None):
        """Run on the CPU backend: one argument per entry parameter, as `tilepy.interpret.run`
        takes them (a numpy array or (array, element offset) per pointer, scalars otherwise)."""
        from .launch import cpu
        from .launch.launcher import normalize_grid
        lib = cpu.build(self.emitted, self.compile_source(), mode=mode)
        cpu.run(lib, normalize_grid(grid), module_args(self.module, args))


def module_args(module: Module, args) -> list:
    """ctypes values for the entry parameters of a module built with tilepy.ir."""
    import ctypes

    import numpy as np

    from .errors import TileTypeError
    from .types import PtrType
    from .types import element as E
    scalars = {E.I1: ctypes.c_bool, E.I8: ctypes.c_int8, E.I16: ctypes.c_int16,
               E.I32: ctypes.c_int32, E.I64: ctypes.c_int64, E.F32: ctypes.c_float,
               E.F64: ctypes.c_double, E.TF32: ctypes.c_float}
    params = module.entry().body.block.args
    if not isinstance(args, (list, tuple)) or len(args) != len(params):
        raise TileTypeError(f"expected {len(params)} argument(s), one per entry parameter")
    out = []
    for p, v in zip(params, args):
        e = p.type.elem
        if isinstance(e, PtrType):
            arr, off = v if isinstance(v, tuple) else (v, 0)
            if not isinstance(arr, np.ndarray) or arr.dtype.itemsize != e.pointee.storage_bytes:
                raise TileTypeError(f"parameter {p.hint or ''}: expected an array of {e.pointee}")
            out.append(ctypes.c_void_p(arr.__array_interface__["data"][0] + off * arr.itemsize))
        elif e in (E.F16, E.BF16):
            out.append(ctypes.c_uint16(int(np.array(v, dtype=E.NUMPY_DTYPE[e]).view(np.uint16))))
        elif e in scalars:
            out.append(scalars[e](v))
        else:
            raise TileTypeError(f"parameter {p.hint or ''}: {e} scalars are not supported")
    return out


def compile_module(module: Module) -> CompiledModule:
    """verify -> dce -> emit for a module built with tilepy.ir (dce edits `module` in place).

    The entry's parameters are the kernel's C parameters in order (no Python-level
    specialization); run it on the CPU with `launch.cpu.build` and `launch.cpu.run`."""
    from .cuda_c.emitter import emit_kernel
    from .lowering.dce import dce
    verify(module)
    mlir = print_module(module)
    dce(module)
    try:
        emitted = emit_kernel(module)
    except TileError:
        raise
    except Exception as e:
        raise TileInternalError(f"internal error while emitting C++ for module '{module.name}': "
                                f"{type(e).__name__}: {e}") from e
    return CompiledModule(module.entry().sym_name, module, mlir, emitted)
