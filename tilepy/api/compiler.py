"""The pipeline, in order: specialize -> trace -> verify -> lower -> plan -> emit.

    arguments --intake--> ArrayInfo/values --Kernel.specialize--> params (cache key)
      --Kernel.trace--> Tile IR module --verify--> --dce--> --plan_kernel--> lowering plan
      --backend.emit--> kernel artifact (CUDA C++)

The order matters: the verifier runs on the traced module exactly as printed by `kernel.mlir()`
(what the user reads is what was checked); dead-code elimination runs before planning so the
plan and the C++ only have ops that contribute; layouts, barriers and pipelines are planned
here, on the verified module, for the backend's thread count, and the backend only follows the
plan. The backend is an object (`BACKEND`, cuda_c/backend.py says what one is): a second one
(Tile IR bytecode) is chosen here and touches nothing else.

A specialization is compiled once per process (`kernel.cache`) and, across processes, found in
the disk index (api/index.py) when nothing the trace read has changed: then none of the
pipeline runs (nor is it imported), and the module is re-traced only if someone asks for it.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass

from ..errors import TileError, TileInternalError
from ..host.intake import infos_for

if typing.TYPE_CHECKING:
    from ..ir import Module


class CompiledKernel:
    """One compiled specialization: the Tile IR text, the emitted kernel, and the module (traced
    again on first use when the kernel came from the disk index)."""

    def __init__(self, name: str, key: tuple, params: list, module, mlir: str, emitted,
                 kernel=None):
        self.name, self.key, self.params = name, key, params
        self.mlir = mlir
        self.emitted = emitted       # the backend's kernel artifact (cuda_c/backend.py)
        self._module = module
        self._kernel = kernel

    @property
    def module(self) -> Module:
        if self._module is None:
            self._module = _lower(self._kernel, self.params)[0]
        return self._module

    @property
    def symbol(self) -> str:
        """The kernel's C++ symbol in its source (cuda_c/names.kernel_symbol)."""
        return self.emitted.name

    @property
    def cuda_source(self) -> str:
        return self.emitted.source(line_directives=False)

    def compile_source(self) -> str:
        """The source given to compilers: #line directives point errors at the user's code."""
        return self.emitted.source(line_directives=True)

    compiler = "nvrtc"              # the GPU compiler of `gpu_code` (api/tileiras_kernel.py: the other)
    min_driver = 0                  # NVRTC's target choice handles drivers (launch/gpu.py)

    def code_key(self) -> tuple:
        """What identifies this kernel's GPU code (launch/gpu.py loads it once per device)."""
        return self.compiler, self.name, self.compile_source()

    def gpu_code(self, target: str):
        """What a GPU launch loads for `target`: the binary, block size, dynamic shared memory."""
        from ..launch.gpu import GpuCode
        code = self.binary(target)
        return GpuCode(code.kind, code.data, (self.emitted.nt, 1, 1), self.emitted.smem_for(target),
                       self.emitted, code.log)

    def debug_ops(self) -> tuple[bool, bool]:
        """(asserts, prints): does the kernel assert or print on the device?"""
        from ..launch.gpu import debug_ops
        return debug_ops(self.compile_source())

    def binary(self, target: str):
        """The GPU code for `target` ("sm_XX": a cubin, "compute_XX": PTX), a launch.nvrtc.Cubin:
        what the launch path loads. The C++ backend's toolchain is NVRTC (disk-cached); a
        backend with another toolchain is chosen here, with its backend."""
        from ..cuda_c.targets import check_fits, check_target_ops
        from .device_compile import build
        check_target_ops(self.emitted.needs, target)
        check_fits(self.emitted, target)
        return build(self, target)


def compile_for_args(kernel, args) -> CompiledKernel:
    key, params = kernel.specialize(infos_for(args))
    return compile_specialization(kernel, key, params)


def tile_ir(kernel, key, params) -> Module:
    """The specialization's Tile IR, verified and without dead code, with no backend involved:
    what the bytecode writer and tileiras take (they do not need the C++ emitter's support)."""
    hit = kernel.cache.get(key)
    if hit is not None and not kernel.changed() and \
            not getattr(hit.module, "views_as_pointers", False):   # (lowering/view_pointers.py)
        return hit.module
    from ..frontend.identity import Deps
    from ..ir import verify
    from ..lowering.dce import dce
    module = kernel.trace(params, Deps(kernel.func, reads(kernel)))
    verify(module)
    dce(module)
    return module


def disjoint_args(module: Module, params) -> frozenset:
    """The entry arguments (array base pointers) the specialization proved disjoint."""
    from ..host.params import ArrayParam, expand
    args, out = iter(module.entry().body.block.args), []
    for p in expand(params):
        c = p.c_params()
        if c:
            first = next(args)
            for _ in c[1:]:
                next(args)
            if isinstance(p, ArrayParam) and p.disjoint:
                out.append(first)
    return frozenset(out)


def reads(kernel):
    """The kernel's record of what its traces read (frontend/identity.Reads), made on first use."""
    from ..frontend.identity import Reads
    if not isinstance(kernel.reads, Reads):
        kernel.reads = Reads()
    return kernel.reads


def compile_specialization(kernel, key, params) -> CompiledKernel:
    """The kernel compiled for the specialization: from this process's cache (unless a value
    its traces read has changed since: `kernel.changed()`), the disk index, or traced."""
    hit = kernel.cache.get(key)
    if hit is not None and not kernel.changed():
        return hit
    from . import index
    slot = index.slot_key(kernel, params)
    ck = _from_record(kernel, key, params, index.find(kernel, slot)) if slot is not None else None
    if ck is None:
        from ..frontend.identity import Deps
        deps = Deps(kernel.func, reads(kernel))
        module, mlir, emitted = _lower(kernel, params, deps)
        ck = CompiledKernel(kernel.name, key, params, module, mlir, emitted, kernel)
        if slot is not None and deps.why is None:
            index.store(kernel, slot, _record(ck, deps))
    kernel.cache[key] = ck
    return ck


def _lower(kernel, params, deps=None):
    """Trace, then `lower_module`: (module, Tile IR text, EmittedKernel)."""
    module = kernel.trace(params, deps)
    return (module,) + lower_module(module, f"'{kernel.name}'", disjoint_args(module, params))


def backend():
    """The backend kernels are compiled with (the CUDA C++ emitter; one object, loaded late)."""
    from ..cuda_c.backend import CPP
    return CPP


def lower_module(module: Module, what: str, disjoint: frozenset = frozenset()) -> tuple:
    """Verify, print, eliminate dead code (in place), plan the lowering, emit: (Tile IR text,
    kernel artifact). `disjoint`: the entry arguments known not to overlap (hazards.py)."""
    from ..ir import verify
    from ..ir.printer import print_module
    from ..lowering.dce import dce
    from ..lowering.plan import plan_kernel, threads_for
    from ..lowering.view_pointers import views_to_pointers
    verify(module)
    mlir = print_module(module)
    be = backend()
    if be.lowering:          # gather_scatter/strided views as pointer tiles for the C++ emitter
        views_to_pointers(module)
    dce(module)
    be.check(module)
    try:
        plan = plan_kernel(module, threads_for(module, be.threads), disjoint) \
            if be.lowering else None
        emitted = be.emit(module, plan)
    except TileError:
        raise
    except Exception as e:
        raise TileInternalError(f"internal error while emitting C++ for {what}: "
                                f"{type(e).__name__}: {e}") from e
    return mlir, emitted


def _record(ck: CompiledKernel, deps) -> dict:
    """The disk index's record: backend-neutral, the artifact as its backend records it; `files`:
    the source files of the kernel and its helpers (`Deps.files`, for `index.find`)."""
    from ..ir.writes import stored_arrays
    be = backend()
    return {"deps": deps.items, "mlir": ck.mlir, "stored": sorted(stored_arrays(ck.module)),
            "files": sorted([f, ref] for f, ref in deps.files.items()),
            "backend": be.name, "kernel": be.record(ck.emitted)}


def _from_record(kernel, key, params, r: dict | None) -> CompiledKernel | None:
    be = backend()
    try:
        if r["backend"] != be.name:
            return None
        emitted = be.from_record(r["kernel"])
        if r.get("moved"):                          # files now elsewhere (index.find)
            emitted = be.relocate(emitted, r["moved"])
    except (KeyError, TypeError, ValueError, AttributeError):   # not a record this code wrote
        return None
    ck = CompiledKernel(kernel.name, key, params, None, "", emitted, kernel)
    reads(kernel).add_recorded(r["deps"], r["values"], kernel.func)
    ck.__dict__["_tp_stored"] = set(r.get("stored", ()))       # launcher.check_outputs
    ck.mlir = str(r.get("mlir", ""))
    return ck


@dataclass
class CompiledModule:
    """A Tile IR module built directly (not traced from Python), compiled to C++."""
    name: str
    module: Module
    mlir: str
    emitted: object              # the backend's kernel artifact

    @property
    def symbol(self) -> str:
        return self.emitted.name

    @property
    def cuda_source(self) -> str:
        return self.emitted.source(line_directives=False)

    def compile_source(self) -> str:
        return self.emitted.source(line_directives=True)

    def run_cpu(self, grid, args, mode: str | None = None):
        """Run on the CPU backend: one argument per entry parameter, as `tilepy.interpret.run`
        takes them (a numpy array or (array, element offset) per pointer, scalars otherwise).
        The entry's pointers are bare (no shapes cross the boundary), so element-space accesses
        run unchecked, as in hand-written kernels."""
        from ..launch import cpu
        from ..host.grid import normalize_grid
        lib = cpu.build(self.emitted, self.compile_source(), mode=mode, checked=False)
        cpu.run(lib, normalize_grid(grid), module_args(self.module, args),
                smem=self.emitted.smem_bytes)


def module_args(module: Module, args) -> list:
    """ctypes values for the entry parameters of a module built with tilepy.ir."""
    import ctypes

    import numpy as np

    from ..errors import TileTypeError
    from ..types import PtrType
    from ..types import element as E
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
    mlir, emitted = lower_module(module, f"module '{module.name}'")
    return CompiledModule(module.entry().sym_name, module, mlir, emitted)
