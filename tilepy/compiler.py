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
