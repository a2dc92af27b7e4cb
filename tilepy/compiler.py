"""The pipeline, in order: specialize -> trace -> verify -> lower -> emit.

    arguments --intake--> ArrayInfo/values --Kernel.specialize--> params (cache key)
      --Kernel.trace--> Tile IR module --verify--> --dce--> --emit_kernel--> CUDA C++

The order matters: the verifier runs on the traced module exactly as printed by `kernel.mlir()`
(what the user reads is what was checked); dead-code elimination runs before emission so the
C++ only has ops that contribute; the emitter needs a verified module because it trusts types.

A specialization is compiled once per process (`kernel.cache`) and, across processes, found in
the disk index (launch/index.py) when nothing the trace read has changed: then none of the
pipeline runs (nor is it imported), and the module is re-traced only if someone asks for it.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass

from .errors import TileError, TileInternalError
from .launch.intake import intake

if typing.TYPE_CHECKING:
    from .ir import Module


@dataclass
class StoredKernel:
    """What the launch path uses of an emitted kernel (cuda_c.emitter.EmittedKernel), as kept
    in the disk index."""
    name: str
    params: list[tuple[str, str]]      # (C++ type, name) in launch order
    nt: int
    smem_bytes: int
    text: str                          # the source without / with #line directives
    text_lines: str

    def source(self, line_directives: bool = False) -> str:
        return self.text_lines if line_directives else self.text


class CompiledKernel:
    """One compiled specialization: the Tile IR text, the emitted kernel, and the module (traced
    again on first use when the kernel came from the disk index)."""

    def __init__(self, name: str, key: tuple, params: list, module, mlir: str, emitted,
                 kernel=None):
        self.name, self.key, self.params = name, key, params
        self.mlir = mlir
        self.emitted = emitted       # cuda_c.emitter.EmittedKernel, or a StoredKernel
        self._module = module
        self._kernel = kernel

    @property
    def module(self) -> Module:
        if self._module is None:
            self._module = _lower(self._kernel, self.params)[0]
        return self._module

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
    from .frontend.params import ArrayParam
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
    from .launch import index
    slot = index.slot_key(kernel, params)
    ck = _from_record(kernel, key, params, index.find(kernel, slot)) if slot is not None else None
    if ck is None:
        from .frontend.identity import Deps
        deps = Deps(kernel.func) if slot is not None else None
        module, mlir, emitted = _lower(kernel, params, deps)
        ck = CompiledKernel(kernel.name, key, params, module, mlir, emitted, kernel)
        if deps is not None and deps.why is None:
            index.store(kernel, slot, _record(ck, deps))
    kernel.cache[key] = ck
    return ck


def _lower(kernel, params, deps=None):
    """Trace, verify, print, eliminate dead code, emit: (module, Tile IR text, EmittedKernel)."""
    from .cuda_c.emitter import emit_kernel
    from .ir import verify
    from .ir.printer import print_module
    from .lowering.dce import dce
    module = kernel.trace(params, deps)
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
    return module, mlir, emitted


def _record(ck: CompiledKernel, deps) -> dict:
    e = ck.emitted
    return {"deps": deps.items, "name": e.name, "params": [list(p) for p in e.params],
            "nt": e.nt, "smem_bytes": e.smem_bytes, "text": ck.cuda_source,
            "text_lines": ck.compile_source(), "mlir": ck.mlir,
            "stored": sorted(stored_arrays(ck.module))}


def _from_record(kernel, key, params, r: dict | None) -> CompiledKernel | None:
    try:
        emitted = StoredKernel(r["name"], [tuple(p) for p in r["params"]], int(r["nt"]),
                               int(r["smem_bytes"]), str(r["text"]), str(r["text_lines"]))
    except (KeyError, TypeError, ValueError):       # no record, or not one this code wrote
        return None
    ck = CompiledKernel(kernel.name, key, params, None, "", emitted, kernel)
    ck.__dict__["_tp_stored"] = set(r.get("stored", ()))       # launcher.check_outputs
    ck.mlir = str(r.get("mlir", ""))
    return ck


# ----------------------------------------------------------------------------- facts for launches
WRITE_OPS = {"store_view_tko": "view", "store_ptr_tko": "destination",
             "atomic_cas_tko": "pointers", "atomic_rmw_tko": "pointers"}


def stored_arrays(module) -> set[str]:
    """Names of the array parameters the kernel writes (stores, scatters, atomics): the entry
    arguments reached backwards from a write's destination through view and pointer values."""
    from .types.tile import PartitionViewType, PtrType, TensorViewType, TileType

    def is_ref(t) -> bool:
        return (isinstance(t, (TensorViewType, PartitionViewType, PtrType))
                or (isinstance(t, TileType) and isinstance(t.elem, PtrType)))
    out = set()
    for op in module.walk():
        operand = WRITE_OPS.get(op.name)
        if operand is None:
            continue
        todo, seen = list(op.operand_group(operand)), set()
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            d = getattr(v, "op", None)
            if d is None:
                if v.hint:
                    out.add(v.hint)
                continue
            todo += [o for o in d.operands if is_ref(o.type)]
    return out
