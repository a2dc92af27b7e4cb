"""`tilepy.launch(stream, grid, kernel, args)`: intake, checks, specialize, compile (cached),
pack, run.

The device of the array arguments picks the backend (ARCHITECTURE.md, decision 2): CPU arrays
run on the CPU backend, CUDA arrays on the GPU that holds them. Misuse is an error, never a
silent copy or a wrong answer: arrays on different devices, a CUDA stream with CPU arrays,
CUDA arrays without a GPU, read-only or zero-stride arrays the kernel stores to, shapes and
strides that do not fit the kernel's 32-bit parameters.

A repeated CPU call with the same argument signature skips all of this (dispatch.py).
"""
from __future__ import annotations

import ctypes
import functools

from ..errors import (TileError, TileLaunchError, TileTypeError, TileUnsupportedFeatureError,
                      TileValueError, for_user)
from ..host.grid import normalize_grid
from ..host.intake import ArrayInfo, array_leaves, check_call, intake_arg
from ..host.params import ArrayParam, ScalarParam, flat
from ..launch import dispatch, warm
from ..launch.dispatch import MISS, CpuPlan, cpu_mode_now, grid3, plans_of, signature
from ..settings import interpret_requested, settings
from ..types import dtype as D

_CTYPE = {D.bool_: ctypes.c_bool, D.int8: ctypes.c_int8, D.int16: ctypes.c_int16,
          D.int32: ctypes.c_int32, D.int64: ctypes.c_int64, D.uint8: ctypes.c_uint8,
          D.uint16: ctypes.c_uint16, D.uint32: ctypes.c_uint32, D.uint64: ctypes.c_uint64,
          D.float32: ctypes.c_float, D.float64: ctypes.c_double, D.float16: ctypes.c_uint16,
          D.bfloat16: ctypes.c_uint16}


# ----------------------------------------------------------------------------- packing
def scalar_converter(dtype, what: str):
    """Python value -> the value a ctypes field of the parameter's type holds, range-checked."""
    if dtype in (D.float16, D.bfloat16):
        return dispatch._half_bits(dtype.numpy)
    if dtype is D.bool_:
        return bool
    if dtype.is_float:
        return float
    bits = dtype.bits
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype.signed else (0, (1 << bits) - 1)
    return dispatch._int_setter(lo, hi, what)


def pack_args(params, infos, slots: list | None = None) -> list:
    """ctypes values for the kernel's C parameters, in order (see ArrayParam.c_params). With
    `slots`, appends per kernel argument (index of its first C value, converter) or None."""
    values = []
    for p, info in flat(params, infos):
        if isinstance(p, ArrayParam):
            if slots is not None:
                slots.append((len(values), None))
            values.append(ctypes.c_void_p(info.ptr))
            index = ctypes.c_int64 if p.index_dtype.bits == 64 else ctypes.c_int32
            values += [index(s) for s in info.shape]        # in range: specialize.param_for
            values += [index(st) for i, st in enumerate(info.strides) if not p.unit_stride[i]]
        elif isinstance(p, ScalarParam):
            ct = _CTYPE.get(p.dtype)
            if ct is None:
                raise TileUnsupportedFeatureError(f"scalar arguments of dtype {p.dtype.name} are not "
                                                  f"supported yet")
            conv = scalar_converter(p.dtype, f"argument '{p.name}'")
            if slots is not None:
                slots.append((len(values), conv))
            values.append(ct(conv(info)))
        elif slots is not None:
            slots.append(None)
    return values


# ----------------------------------------------------------------------------- checks
def check_devices(infos, names) -> tuple[str, int | None]:
    """The one device all array arguments are on: ("cpu", 0) or ("cuda", ordinal)."""
    arrays = [leaf for n, i in zip(names, infos) for leaf in array_leaves(i, n)]
    kinds = {i.device for _, i in arrays}
    if len(kinds) > 1:
        desc = ", ".join(f"'{n}' on {i.device}" for n, i in arrays)
        raise TileValueError(f"kernel arguments are on different devices ({desc}): CPU and CUDA "
                             f"arrays cannot be mixed in one launch; move them to one device")
    if kinds != {"cuda"}:
        return "cpu", 0
    ids = {i.device_id for _, i in arrays if i.device_id is not None}
    if len(ids) > 1:
        desc = ", ".join(f"'{n}' on cuda:{i.device_id}" for n, i in arrays)
        raise TileValueError(f"kernel arguments are on different GPUs ({desc}); a launch runs on "
                             f"one GPU: move them to one device")
    return "cuda", (ids.pop() if ids else None)


def check_outputs(ck, params, infos):
    """Arrays the kernel writes must be writable and must not alias elements (stride 0)."""
    stored = ck.__dict__.get("_tp_stored")
    if stored is None:
        from ..ir.writes import stored_arrays
        stored = ck.__dict__["_tp_stored"] = stored_arrays(ck.module)
    for p, info in flat(params, infos):
        if not isinstance(p, ArrayParam) or p.name not in stored:
            continue
        if info.readonly:
            raise TileValueError(f"argument '{p.name}' is read-only but the kernel stores to it")
        for i, (s, d) in enumerate(zip(info.strides, info.shape)):
            if s == 0 and d > 1 and 0 not in info.shape:      # an empty array aliases nothing
                raise TileValueError(f"argument '{p.name}': unsupported strides {info.strides}: "
                                     f"the kernel stores to it, and stride 0 in dimension {i} "
                                     f"makes {d} elements one (a broadcast view); pass a copy")


# ----------------------------------------------------------------------------- launch
def _check_pdl(flag):
    if type(flag) is not bool:
        raise TileTypeError(f"launch(): programmatic_dependent_launch must be a bool (got "
                            f"{type(flag).__name__})")


def launch(stream, grid, kernel, args, *, backend=None, programmatic_dependent_launch=False):
    """Launch `kernel` over `grid` with `args` (a tuple) on the device of its array arguments.
    `backend="interpret"` (or TILEPY_INTERPRET=1) runs it in the reference interpreter.

    `programmatic_dependent_launch=True` (cuTile's keyword) allows the kernel to start before its
    stream predecessor finished, running up to its `grid_dependency_control_wait()` while the
    predecessor runs past its `grid_dependency_control_launch_dependents()`. It is a permission,
    never a requirement: on every backend (GPU, both CPU modes, the interpreter) tilepy starts the
    kernel after its predecessor completed, one of the executions the flag allows, where both
    grid dependency controls are no-ops. Only its type is checked (a bool).

    A repeated call is served by the C warm path (launch/warm.py) when it is built, else by the
    Python one below (dispatch.py); both take the same decisions; anything else, the full path."""
    if programmatic_dependent_launch is not False:
        _check_pdl(programmatic_dependent_launch)
    if backend is None:
        fast = warm.launch
        if fast is not None:
            try:
                done = fast(kernel, args, grid, stream)
            except TileError as e:
                for_user(e)
                raise
            if done is not MISS:
                return done
    if backend is None and type(args) is tuple and not interpret_requested():
        try:
            kp = kernel._tp_plans           # set by dispatch.plans_of after a full launch
        except AttributeError:
            kp = None
        if kp is not None and kernel.reads.items and kernel.changed():   # a global rebound
            kp = None
        found = None if kp is None else signature(args, kp.consts)
        plan = None if found is None else kp.table.get(found[0])
        if plan is not None:
            g = grid3(grid)
            if g is not None and plan.overlap.same(found[1]):
                try:
                    s = plan.stream_for(stream, cpu_mode_now)
                    if s is not False:
                        warm.adopt(kp, args, plan)      # the next such call: the C path
                        return plan.run(g, found[1], s)
                except TileError as e:
                    for_user(e)
                    raise
    if backend is not None or interpret_requested():
        try:
            return _interpret(grid, kernel, args, backend)
        except TileError as e:
            for_user(e)
            raise
    try:
        return _launch(stream, grid, kernel, args)
    except TileError as e:
        for_user(e)
        raise


def _launch(stream, grid, kernel, args):
    from .compiler import compile_specialization
    from .tileiras_kernel import compile_tileiras, compiler_for
    from ..launch.gpu import consumer_stream, driver_available, is_cuda_stream
    check_call(kernel, args)
    g = normalize_grid(grid)
    names = list(kernel.signature.parameters)
    consumer = consumer_stream(stream, args)
    infos = [intake_arg(a, n, consumer) for a, n in zip(args, names)] + list(args[len(names):])
    device, _ = check_devices(infos, names)
    if device == "cpu" and stream is not None:
        if is_cuda_stream(stream):
            raise TileValueError(f"CPU arrays passed to a GPU launch: the stream is a CUDA stream "
                                 f"({type(stream).__name__}) but the array arguments are in host "
                                 f"memory; pass CUDA arrays, or stream=None to run on the CPU backend")
        raise TileValueError(f"cannot use a {type(stream).__name__} as a stream: pass None for the "
                             f"CPU backend (or a CUDA stream with CUDA arrays)")
    if device == "cuda" and not driver_available():
        raise TileLaunchError("CUDA arrays were passed but no NVIDIA driver/GPU was found; pass CPU "
                              "arrays (numpy, torch CPU) to run on the CPU backend")
    compiler = compiler_for(kernel) if device == "cuda" else "nvrtc"
    key, params = kernel.specialize(infos, exact=compiler == "tileiras")
    if compiler == "tileiras":
        ck = compile_tileiras(kernel, key, params)
    else:
        ck = compile_specialization(kernel, key, params)
    check_outputs(ck, params, infos)
    slots: list = []
    values = pack_args(params, infos, slots)
    pairs = list(flat(params, infos))
    infos = [i for _, i in pairs]     # per slot: array lists expanded
    if device == "cuda":
        plan = dispatch.launch_gpu(stream, g, ck, infos, values, slots,
                                   compiler_fixed="compiler" in kernel.options, consumer=consumer,
                                   names=[p.name for p, _ in pairs])
    else:
        from ..launch import cpu
        from .device_compile import build
        lib = build(ck, "cpu")
        block = (1, 1, 1) if lib.mode == "fast" else (lib.threads, 1, 1)
        plan = CpuPlan(lib, cpu.raw_entry(lib), values, slots,
                       lambda: settings().cpu_workers, extra=(*block, ck.emitted.smem_bytes),
                       mode=lib.mode, check=functools.partial(cpu.check_launch, lib))
        if g[0] * g[1] * g[2]:
            plan.run(g, [i.ptr if isinstance(i, ArrayInfo) else i for i in infos])
    if type(args) is tuple:
        found = signature(args, plans_of(kernel).consts)
        if found is not None:
            plan.overlap = dispatch.Overlap.of(infos)
            plans_of(kernel).store(found[0], plan)


def _interpret(grid, kernel, args, backend):
    if backend not in (None, "interpret"):
        raise TileValueError(f"backend must be None or 'interpret' (got {backend!r})")
    from ..interpret.kernel import launch
    return launch(grid, kernel, args)


