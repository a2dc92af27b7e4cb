"""A launch in an op's fake implementation: nothing runs; the launch is checked against the
kernel and, when every shape and scalar is static, the kernel is specialized and traced for the
tensors' metadata, as the real launch will be.

A fake tensor has a dtype, shape, strides and storage offset but no data. The specialization
sees each storage at its own 16-byte aligned base address (torch's allocators align more than
that; tensors that share a storage share it) plus the storage offset, so overlaps between
arguments are what they will be, and the real launch usually finds the traced specialization
in the kernel's cache. With symbolic shapes (dynamic-shape tracing) nothing is specialized:
reading a symbolic size as an int would add a guard and specialize the caller's graph.
"""
from __future__ import annotations

import torch

from ..host.intake import ArrayInfo, torch_dtype
from ..host.intake import check_call

_SYMBOLIC = object()        # an argument whose value is not known while tracing
_SPACING = 1 << 44          # between the made-up base addresses of distinct storages


def check_launch(grid, kernel, args):
    """What a launch of `kernel` with `args` would check and compile, without running it (the
    grid is not checked: it may be symbolic)."""
    check_call(kernel, args)
    names = list(kernel.signature.parameters)
    bases: dict = {}
    infos = [_info(a, n, bases) for a, n in zip(args, names)] + list(args[len(names):])
    if any(i is _SYMBOLIC for i in infos):
        return
    from ..api.compiler import compile_specialization, tile_ir
    from ..api.tileiras_kernel import compiler_for
    key, params = kernel.specialize(infos)
    on_gpu = any(getattr(i, "device", None) == "cuda" for i in infos)
    if on_gpu and compiler_for(kernel) == "tileiras":
        tile_ir(kernel, key, params)        # what a tileiras launch compiles: no C++ emitter
    else:
        compile_specialization(kernel, key, params)


def _info(a, name: str, bases: dict):
    """What the specialization sees of an argument: an ArrayInfo for a tensor, the value of a
    scalar; _SYMBOLIC when it is not known while tracing. `bases`: storage -> base address."""
    if isinstance(a, torch.Tensor):
        # loaded by the tracers that call a fake implementation; 1.5 s to import eagerly
        from torch.fx.experimental.symbolic_shapes import is_concrete_int
        dims = (*a.shape, *a.stride(), a.storage_offset())
        if not all(is_concrete_int(d) for d in dims):
            return _SYMBOLIC
        dtype = torch_dtype(a.dtype, name)
        shape = tuple(int(d) for d in a.shape)
        strides = tuple(int(s) for s in a.stride())
        base = bases.setdefault(a.untyped_storage()._cdata, (len(bases) + 1) * _SPACING)
        ptr = base + int(a.storage_offset()) * a.element_size()
        return ArrayInfo(a, ptr, shape, strides, dtype, a.device.type, a.device.index, False,
                         None, "torch")
    if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return _SYMBOLIC
    return a
