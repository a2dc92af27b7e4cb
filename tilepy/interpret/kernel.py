"""Interpreting @tilepy.kernel functions: their arguments become the entry's flat parameters."""
from __future__ import annotations

import weakref

from ..errors import TileError, TileValueError, for_user
from ..host.intake import ArrayInfo, check_call, host_view, infos_for
from ..host.params import ArrayParam, ScalarParam, flat


def flat_args(params, infos) -> list:
    """One value per entry parameter, in ArrayParam.c_params order."""
    out = []
    for p, info in flat(params, infos):
        if isinstance(p, ArrayParam):
            host = host_view(info)
            if host is None:
                raise TileValueError(f"argument '{p.name}': the interpreter runs on the CPU and "
                                     f"needs host (CPU) arrays (got a {info.device} array)")
            out.append(host)
            out += [int(s) for s in info.shape]
            out += [int(st) for i, st in enumerate(info.strides) if not p.unit_stride[i]]
        elif isinstance(p, ScalarParam):
            out.append(info.item() if hasattr(info, "item") else info)
    return out


_MODULES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # kernel -> {key: module}


def traced_module(kernel, key, params):
    """The kernel's Tile IR for one specialization, traced and verified (no C++ emitted, so
    kernels the CUDA C++ backend cannot compile yet still run here)."""
    from ..ir import verify
    per_kernel = _MODULES.setdefault(kernel, {})
    if key not in per_kernel:
        per_kernel[key] = verify(kernel.trace(params))
    return per_kernel[key]


def run_compiled(module, grid, params, infos, **kw):
    """Interpret a kernel's module on already-intaken arguments (`tilepy.launch`'s hook)."""
    from ..ir.writes import stored_arrays
    from .run import run
    for p, info in flat(params, infos):
        if isinstance(p, ArrayParam) and isinstance(info, ArrayInfo) and info.readonly \
                and p.name in stored_arrays(module):
            raise TileValueError(f"argument '{p.name}' is read-only but the kernel stores to it")
    run(module, grid, flat_args(params, infos), **kw)


def launch_interpreted(kernel, key, params, infos, grid, **kw):
    """tilepy.launch's hook (backend="interpret" / TILEPY_INTERPRET=1)."""
    if {i.device for i in infos if isinstance(i, ArrayInfo)} - {"cpu"}:
        raise TileValueError("the interpreter runs on the CPU: pass CPU arrays (numpy, torch CPU "
                             "tensors)")
    run_compiled(traced_module(kernel, key, params), grid, params, infos, **kw)


def launch(grid, kernel, args, **kw):
    """Like `tilepy.launch(None, grid, kernel, args)`, interpreted (keywords go to `run`)."""
    try:
        check_call(kernel, args)
        infos = infos_for(args)
        key, params = kernel.specialize(infos)
        launch_interpreted(kernel, key, params, infos, grid, **kw)
    except TileError as e:
        for_user(e)
        raise
