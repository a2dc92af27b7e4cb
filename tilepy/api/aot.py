"""Ahead-of-time compilation: `kernel.compile(*args, arch="sm_90")` -> a cubin + metadata,
without a GPU.

Each argument is an example value (a numpy array, a torch tensor, a Python scalar, a
Constant's value) or a type: an `ArraySpec` (`tilepy.aot.array(ct.float16, 2)`), a string in
the numba-like form "float16[:, ::1]" ("::1" marks a unit-stride dimension, so "float32[:]"
is any 1-D float32 array and "float32[::1]" a contiguous one), or a scalar dtype
(`ct.int32` / "int32") for a non-Constant scalar parameter.

`arch` is "sm_XX" (a cubin), "compute_XX" (PTX) or "cpu" (the CPU backend's shared library).
The result carries everything a loader needs: the entry symbol, the block size, the C
parameter list, the specialization, the compiler log; `save()` writes the binary beside a
JSON file and `load()` reads them back. `Compiled.launch()` checks its arguments against the
signature it was compiled for (dtype, rank, unit strides, device) before running.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from ..errors import TileError, TileLaunchError, TileTypeError, TileValueError, for_user
from ..types import DType
from ..types import dtype as D

_ODD = 17          # placeholder extent/stride: not 1 and not divisible by 2, 4, 8, 16


@dataclass(frozen=True)
class ArraySpec:
    """An array parameter's type and every property the code was specialized on: dtype, rank,
    unit-stride dimensions, 16-byte base alignment, extents/strides that are multiples of 16
    bytes, and whether the array overlaps no other array argument (the JIT's facts,
    frontend/specialize.divisors: 16 bytes or nothing), and its
    index dtype (int64: 64-bit extents and strides, cuTile's IndexedWithInt64; None: the
    parameter's annotation decides). As text: ``float16[:, ::1]`` plus, when any property
    holds, ``{align16 shape16:0,1 stride16:0 disjoint index64}``."""
    dtype: DType
    ndim: int
    unit_stride: tuple[bool, ...] = ()
    aligned16: bool = False
    shape_div16: tuple[bool, ...] = ()
    stride_div16: tuple[bool, ...] = ()
    disjoint: bool = False
    index_dtype: DType | None = None

    def __post_init__(self):
        for f in ("unit_stride", "shape_div16", "stride_div16"):
            v = getattr(self, f)
            if not v:
                object.__setattr__(self, f, (False,) * self.ndim)
            elif len(v) != self.ndim:
                raise TileValueError(f"{f} {v} does not have {self.ndim} entries")

    @staticmethod
    def of(p) -> "ArraySpec":
        """The spec of a frontend ArrayParam."""
        full = _full(p.dtype)
        return ArraySpec(p.dtype, p.ndim, tuple(p.unit_stride), p.align >= 16,
                         tuple(d >= full for d in p.shape_div) or (False,) * p.ndim,
                         tuple(d >= full for d in p.stride_div) or (False,) * p.ndim, p.disjoint,
                         p.index_dtype)

    def param(self, name: str):
        from ..host.params import ArrayParam
        full = _full(self.dtype)
        return ArrayParam(name, self.dtype, self.ndim, self.unit_stride,
                          16 if self.aligned16 else 1,
                          tuple(full if f else 1 for f in self.shape_div16),
                          tuple(full if f else 1 for f in self.stride_div16), self.disjoint,
                          index_dtype=self.index_dtype or D.int32)

    def __str__(self) -> str:
        base = f"{self.dtype.name}[{', '.join('::1' if u else ':' for u in self.unit_stride)}]"
        props = (["align16"] if self.aligned16 else []) + [
            f"{tag}:{','.join(str(i) for i, f in enumerate(flags) if f)}"
            for tag, flags in (("shape16", self.shape_div16), ("stride16", self.stride_div16))
            if any(flags)] + (["disjoint"] if self.disjoint else []) + \
            (["index64"] if self.index_dtype is D.int64 else [])
        return base + ("{" + " ".join(props) + "}" if props else "")

    def example(self, index: int = 0):
        """An ArrayInfo with exactly this spec's properties and no others. Disjoint examples
        get memory of their own; the others all start at one address (they overlap)."""
        from ..host.intake import ArrayInfo
        shape = tuple(16 * _ODD if d16 else _ODD for d16 in self.shape_div16)
        strides = tuple(1 if u else (16 if d16 else 1) * _ODD ** (self.ndim - i)
                        for i, (u, d16) in enumerate(zip(self.unit_stride, self.stride_div16)))
        base = (index + 1) << 40 if self.disjoint else 0x10000
        ptr = base if self.aligned16 else base + self.dtype.itemsize
        return ArrayInfo(None, ptr, shape, strides, self.dtype, "cpu", 0,
                         index_dtype=self.index_dtype)


def _full(dtype: DType) -> int:
    """The elements in 16 bytes: the divisor an AOT "shape16"/"stride16" fact stands for."""
    return max(1, 16 // dtype.itemsize)


def array(dtype, ndim: int, *, contiguous: bool = True) -> ArraySpec:
    """The type of an `ndim`-D array of `dtype`; `contiguous` (C order): unit last stride."""
    dt = _dtype(dtype)
    return ArraySpec(dt, ndim, tuple(contiguous and i == ndim - 1 for i in range(ndim)))


def _dtype(d) -> DType:
    if isinstance(d, DType):
        return d
    if isinstance(d, str):
        alias = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
                 "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "bool": "bool_",
                 "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}.get(d, d)
        if alias in D.BY_NAME:
            return D.BY_NAME[alias]
        raise TileTypeError(f"unknown dtype {d!r} (expected one of {', '.join(D.BY_NAME)})")
    return D.from_numpy(d)


def parse(text: str):
    """"float16[:, ::1]" (optionally "{align16 shape16:0 stride16:0 disjoint}") -> ArraySpec;
    "int32" -> DType."""
    m = re.fullmatch(r"\s*(\w+)\s*(?:\[([^\]]*)\]\s*(?:\{([^}]*)\})?)?\s*", text)
    if not m:
        raise TileTypeError(f"cannot read the type {text!r} (expected e.g. 'float32[:]', "
                            f"'float16[:, ::1]' or 'int32')")
    dt = _dtype(m.group(1))
    if m.group(2) is None:
        return dt
    dims = [d.strip() for d in m.group(2).split(",")]
    if not all(d in (":", "::1") for d in dims):
        raise TileTypeError(f"cannot read the dimensions of {text!r}: each is ':' or '::1'")
    n = len(dims)
    props = {"align16": False, "disjoint": False, "index64": False, "shape16": (False,) * n,
             "stride16": (False,) * n}
    for tok in (m.group(3) or "").split():
        tag, _, dims_text = tok.partition(":")
        if tag in ("align16", "disjoint", "index64") and not dims_text:
            props[tag] = True
        elif tag in ("shape16", "stride16") and re.fullmatch(r"\d+(,\d+)*", dims_text) and \
                all(int(i) < n for i in dims_text.split(",")):
            chosen = {int(i) for i in dims_text.split(",")}
            props[tag] = tuple(i in chosen for i in range(n))
        else:
            raise TileTypeError(f"cannot read the property {tok!r} of {text!r} (expected align16, "
                                f"disjoint, index64, shape16:<dims> or stride16:<dims>)")
    return ArraySpec(dt, n, tuple(d == "::1" for d in dims), props["align16"], props["shape16"],
                     props["stride16"], props["disjoint"], D.int64 if props["index64"] else None)


# ----------------------------------------------------------------------------- compile
@dataclass
class Compiled:
    """An ahead-of-time compiled kernel."""
    name: str                       # the kernel's name
    arch: str                       # "sm_90", "compute_90" or "cpu"
    kind: str                       # "cubin" | "ptx" | "cpu"
    data: bytes
    block: tuple[int, int, int]
    smem: int                       # dynamic shared memory per block in bytes (the emitter's)
    signature: list[str]            # per kernel parameter: "float16[:, ::1]", "int32", "const 64"
    c_params: list[tuple[str, str]]  # (C type, name) in launch order
    log: str = ""
    source: str = ""
    versions: dict = field(default_factory=dict)
    _specs: list = field(default_factory=list, repr=False)     # (parameter name, spec)
    _lib: object = field(default=None, repr=False)   # the loaded CPU library / GPU kernels
    symbol: str = ""                # the entry's symbol in `data` (extern "C")

    @property
    def metadata(self) -> dict:
        return {"name": self.name, "arch": self.arch, "kind": self.kind, "block": list(self.block),
                "smem": self.smem, "signature": self.signature,
                "params": [n for n, _ in self._specs],
                "c_params": [list(p) for p in self.c_params], "log": self.log,
                "versions": self.versions, "symbol": self.symbol}

    def resource_usage(self) -> dict:
        from ..launch.nvrtc import Cubin
        return Cubin(self.arch, self.data, self.log).resource_usage()

    def save(self, prefix: str) -> tuple[str, str]:
        """Write `<prefix>.<ext>` (cubin/ptx/so) and `<prefix>.json`; returns both paths."""
        ext = {"cubin": "cubin", "ptx": "ptx", "cpu": "so"}[self.kind]
        paths = (f"{prefix}.{ext}", f"{prefix}.json")
        with open(paths[0], "wb") as f:
            f.write(self.data)
        with open(paths[1], "w") as f:
            json.dump(self.metadata, f, indent=1)
        return paths

    def check_args(self, args) -> list:
        """ArrayInfos/values for `args`, or an error naming what differs from the signature."""
        from ..host.intake import ArrayInfo, intake
        if len(args) != len(self._specs):
            raise TileTypeError(f"kernel '{self.name}' was compiled for {len(self._specs)} "
                                f"argument(s) ({', '.join(self.signature)}), got {len(args)}")
        infos = []
        for (pname, spec), a in zip(self._specs, args):
            info = intake(a, pname)
            infos.append(a if info is None else info)
            if isinstance(spec, ArraySpec):
                _check_array(self, pname, spec, info if info is not None else a)
            else:
                if isinstance(info, ArrayInfo):
                    raise TileTypeError(f"argument '{pname}': kernel '{self.name}' was compiled "
                                        f"for {_spec_str(spec)}, got an array")
                _check_scalar(self, pname, spec, a)
        _check_specialization(self, infos)
        return infos

    def launch(self, stream, grid, args):
        """Run on the device this was compiled for (a GPU for cubin/ptx, the CPU for "cpu")."""
        from ..host.grid import normalize_grid
        from .launcher import check_devices
        try:
            infos = self.check_args(tuple(args))
            device, _ = check_devices(infos, [n for n, _ in self._specs])
            want = "cpu" if self.kind == "cpu" else "cuda"
            if device != want and any(getattr(i, "device", None) for i in infos):
                raise TileValueError(_device_mismatch(self, device))
            return _run(self, stream, normalize_grid(grid), infos)
        except TileError as e:
            for_user(e)
            raise


def _device_mismatch(c: Compiled, device: str) -> str:
    if device == "cpu":
        return (f"CPU arrays passed to a GPU launch: kernel '{c.name}' was compiled for {c.arch}; "
                f"pass CUDA arrays (torch CUDA, cupy, ...)")
    return (f"CUDA arrays passed to a CPU launch: kernel '{c.name}' was compiled for the CPU "
            f"backend; pass host arrays (numpy, torch CPU)")


def _spec_str(spec) -> str:
    if isinstance(spec, ArraySpec):
        return str(spec)
    if isinstance(spec, DType):
        return spec.name
    return f"const {spec!r}"


def _check_scalar(c: Compiled, pname: str, spec, a):
    pre = f"argument '{pname}': kernel '{c.name}' was compiled for {_spec_str(spec)}"
    if not isinstance(spec, DType):
        if type(a) is not type(spec) or a != spec:
            raise TileValueError(f"{pre} (a Constant baked into the binary), got {a!r}")
        return
    ok = {True: (bool, int, float), False: (bool, int)}[spec.is_float]
    if spec is D.bool_:
        ok = (bool,)
    import numpy as np
    if not isinstance(a, ok + (np.generic,)):
        raise TileTypeError(f"{pre}, got {type(a).__name__}")


def _check_array(c: Compiled, pname: str, spec: ArraySpec, info):
    from ..host.intake import ArrayInfo
    pre = f"argument '{pname}': kernel '{c.name}' was compiled for {spec}"
    if not isinstance(info, ArrayInfo):
        raise TileTypeError(f"{pre}, got {type(info).__name__}")
    if info.dtype != spec.dtype:
        raise TileTypeError(f"{pre}, got dtype {info.dtype.name}: the kernel was not specialized "
                            f"for {info.dtype.name} (compile it for that dtype too)")
    if len(info.shape) != spec.ndim:
        raise TileTypeError(f"{pre}, got a {len(info.shape)}-D array (wrong rank)")
    for i, (u, s, d) in enumerate(zip(spec.unit_stride, info.strides, info.shape)):
        if u and s != 1 and d != 1:
            raise TileValueError(f"{pre}, got strides {info.strides}: dimension {i} must have "
                                 f"unit stride (unsupported strides for this build)")


def _check_specialization(c: Compiled, infos):
    """Every property the code assumes (alignment, divisibility, no overlap) holds for `infos`."""
    import dataclasses

    from ..frontend.specialize import divisors, mark_disjoint, param_for
    params = [spec.param(n) if isinstance(spec, ArraySpec) else None for n, spec in c._specs]
    actual = mark_disjoint([param_for(n, i, False, index_dtype=p.index_dtype)
                            if p is not None else p
                            for (n, _), p, i in zip(c._specs, params, infos)], infos)
    for (name, spec), have, info in zip(c._specs, actual, infos):
        if not isinstance(spec, ArraySpec):
            continue
        _, shape_div, stride_div = divisors(info)     # every dimension's (a spec may state
        got = ArraySpec.of(dataclasses.replace(        # facts the JIT does not key on)
            have, shape_div=shape_div, stride_div=stride_div))
        pre = f"argument '{name}': kernel '{c.name}' was compiled for {spec}"
        if spec.aligned16 and not got.aligned16:
            raise TileValueError(f"{pre}, but its base address is not 16-byte aligned")
        for what, need, has in (("extent", spec.shape_div16, got.shape_div16),
                                ("stride", spec.stride_div16, got.stride_div16)):
            bad = [i for i, (n, h) in enumerate(zip(need, has)) if n and not h]
            if bad:
                raise TileValueError(f"{pre}, but its {what} of dimension {bad[0]} is not "
                                     f"a multiple of 16 bytes")
        if spec.disjoint and not got.disjoint:
            raise TileValueError(f"{pre}, but its memory overlaps another array argument")


COMPILERS = ("nvrtc", "tileiras")


def specialization(kernel, args) -> tuple:
    """`kernel.specialize` of example arguments (ArraySpecs, dtypes, constants, tuples and
    dataclasses of them), one per kernel parameter: the (key, params) they compile to."""
    return kernel.specialize([_info_for(a, n in kernel.constants, i)
                              for i, (a, n) in enumerate(zip(args, kernel.signature.parameters))])


def compile_kernel(kernel, args, arch: str = "sm_90", compiler: str = "nvrtc") -> Compiled:
    """`kernel.compile(*args, arch=..., compiler=...)`: "nvrtc" compiles tilepy's CUDA C++,
    "tileiras" gives tilepy's Tile IR (as bytecode) to NVIDIA's Tile IR compiler. A tuple
    argument's items are the compiled kernel's parameters (`<name>_<i>`, flattened in order,
    as the kernel's C parameters are)."""
    from .compiler import compile_specialization, tile_ir
    from ..host.params import ArrayParam, ConstParam, expand
    names = list(kernel.signature.parameters)
    if len(args) != len(names):
        raise TileTypeError(f"kernel '{kernel.name}' takes {len(names)} argument(s) "
                            f"({', '.join(names)}) but {len(args)} were given")
    if compiler not in COMPILERS:
        raise TileValueError(f"compiler must be one of {', '.join(COMPILERS)} (got {compiler!r})")
    key, params = specialization(kernel, args)
    specs = []
    for p in expand(params):          # a tuple's items: parameters of their own (`<name>_<i>`)
        if isinstance(p, ArrayParam):
            specs.append((p.name, ArraySpec.of(p)))
        elif isinstance(p, ConstParam):
            specs.append((p.name, p.value))
        else:
            specs.append((p.name, p.dtype))
    if compiler == "tileiras":
        return _tileiras(tile_ir(kernel, key, params), arch, specs)
    ck = compile_specialization(kernel, key, params)
    data, log, kind, versions = _binary(ck, arch)
    return Compiled(ck.name, arch, kind, data, (ck.emitted.nt, 1, 1), ck.emitted.smem_for(arch),
                    [_spec_str(s) for _, s in specs], [tuple(p) for p in ck.emitted.params], log,
                    ck.compile_source(), versions, specs, symbol=ck.symbol)


def _tileiras(module, arch: str, specs) -> Compiled:
    """A cubin from NVIDIA's tileiras: its kernel takes the entry's parameters (pointers and
    scalars, in order) and requires the block size the cubin records."""
    from ..ir.printer import print_module
    from ..launch.tileiras import tileiras_version
    from ..types import PtrType
    from ..types.element import CPP_TYPE
    from ..version import __version__
    from .tileiras_kernel import TileirasKernel
    if arch == "cpu" or not arch.startswith("sm_"):
        raise TileValueError(f"compiler='tileiras' makes cubins: arch must be sm_XX (got {arch!r})")
    entry = module.entry()
    code = TileirasKernel(module).gpu_code(arch)
    c_params = []
    for a in entry.regions[0].block.args:
        e = a.type.elem
        c_params.append((f"{CPP_TYPE[e.pointee]}*" if isinstance(e, PtrType) else CPP_TYPE[e],
                         a.hint or f"arg{len(c_params)}"))
    return Compiled(entry.sym_name, arch, "cubin", code.data, code.block, 0,
                    [_spec_str(s) for _, s in specs], c_params, code.log, print_module(module),
                    {"tilepy": __version__, "tileiras": tileiras_version()}, specs,
                    symbol=entry.sym_name)


def _info_for(a, constant: bool, index: int = 0):
    """What the specializer takes for example argument `a` (an ArraySpec, a dtype, a value, an
    array; a tuple or a dataclass object of them); `index`: the example's own memory, when disjoint."""
    from ..host.intake import ArgRecord, ArgTuple, intake, record_fields
    fields = record_fields(a)
    if fields is not None:       # a dataclass: its fields' (a Constant's are constants)
        return ArgRecord(type(a), [_info_for(x, constant, index * 64 + i + 1)
                                   for i, (_, x) in enumerate(fields)])
    if constant:
        return a
    if type(a) is tuple:
        return ArgTuple(_info_for(x, False, index * 64 + i + 1) for i, x in enumerate(a))
    if isinstance(a, str):
        a = parse(a)
    if isinstance(a, ArraySpec):
        return a.example(index)
    if isinstance(a, DType):
        if a is D.tfloat32:
            raise TileTypeError("tfloat32 is not a scalar argument type")
        return a.numpy.type(0)
    info = intake(a)
    return a if info is None else info


def _binary(ck, arch: str):
    from ..version import __version__
    if arch == "cpu":
        from ..launch import cpu
        built = cpu.build(ck.emitted, ck.compile_source(), own_pool=True)   # runs elsewhere
        with open(built.lib._name, "rb") as f:
            data = f.read()
        from ..launch.cache import decode
        found = decode(data)                  # a cache entry: strip the trailer
        return (found[0] if found else data), "", "cpu", {"tilepy": __version__,
                                                          "cpu_mode": built.mode,
                                                          "cpu_stack": built.stack}
    code = ck.binary(arch)
    return code.data, code.log, code.kind, {"tilepy": __version__, "nvrtc": code.nvrtc}


def load(prefix: str) -> Compiled:
    """A kernel saved with `Compiled.save(prefix)`."""
    with open(f"{prefix}.json") as f:
        meta = json.load(f)
    ext = {"cubin": "cubin", "ptx": "ptx", "cpu": "so"}[meta["kind"]]
    with open(f"{prefix}.{ext}", "rb") as f:
        data = f.read()
    names = meta.get("params") or [f"arg{i}" for i in range(len(meta["signature"]))]
    specs = [_spec_from_str(s, n) for s, n in zip(meta["signature"], names)]
    return Compiled(meta["name"], meta["arch"], meta["kind"], data, tuple(meta["block"]),
                    meta["smem"], meta["signature"], [tuple(p) for p in meta["c_params"]],
                    meta.get("log", ""), "", meta.get("versions", {}), specs,
                    symbol=meta.get("symbol") or _old_symbol(meta["name"]))


def _old_symbol(name: str) -> str:
    """The symbol of a kernel saved before the files recorded it: its name when that was a safe
    C++ identifier, else the prefixed one."""
    from ..cuda_c.names import kernel_symbol, safe
    return name if safe(name) else kernel_symbol(name)


def _spec_from_str(s: str, name: str):
    if s.startswith("const "):
        import ast
        return (name, ast.literal_eval(s[len("const "):]))
    return (name, parse(s))


def _run(c: Compiled, stream, grid, infos):
    from . import launcher
    params = _params(c)
    values = launcher.pack_args(params, infos)
    if grid[0] * grid[1] * grid[2] == 0:
        return
    if c.kind == "cpu":
        if stream is not None:
            raise TileValueError(_device_mismatch(c, "cpu"))
        return _run_cpu(c, grid, values)
    from ..host import driver as gpu_driver
    from ..launch import gpu
    drv = gpu_driver.current()
    if not drv.available():
        raise TileLaunchError(f"kernel '{c.name}' was compiled for {c.arch} but no NVIDIA "
                              f"driver/GPU was found")
    ids = {i.device_id for i in infos if getattr(i, "device_id", None) is not None}
    dev = drv.core.Device(ids.pop() if ids else 0)
    why = cubin_mismatch(c.arch, tuple(dev.compute_capability)) if c.kind == "cubin" else None
    if why:
        raise TileLaunchError(f"kernel '{c.name}': {why}")
    gpu.check_grid(grid)
    ctx = gpu.DeviceContext(dev, drv)
    prev = ctx.enter()
    try:
        kernels = c._lib if isinstance(c._lib, dict) else {}
        loaded = kernels.get((drv, dev.device_id))
        if loaded is None:                    # loaded once per device, with its print log
            kern = gpu.load_code(c.kind, c.data, c.symbol, c.name, drv)
            gpu.allow_dynamic_smem(kern, dev, _SmemNeed(c.name, c.smem), c.arch, drv)
            loaded = kernels[(drv, dev.device_id)] = (kern, gpu.kernel_log(kern, c.data, c.name,
                                                                           drv))
            c._lib = kernels
        kern, log = loaded
        stream = gpu.resolve_stream(stream, infos, dev, drv)
        cfg = drv.core.LaunchConfig(grid=grid, block=c.block, shmem_size=c.smem)
        args = [gpu.gpu_arg(v) for v in values]
        if log is None:
            drv.core.launch(stream, cfg, kern, *args)
        else:                                 # a kernel that prints (launch/print_log.py)
            log.run(lambda: (drv.core.launch(stream, cfg, kern, *args), stream.sync()), c.name,
                    stream)
    except drv.errors as e:
        raise TileLaunchError(f"launching kernel '{c.name}' failed: {e}") from None
    finally:
        ctx.leave(prev)


@dataclass
class _SmemNeed:
    """What gpu.allow_dynamic_smem reads of a kernel (a saved kernel has no source locations)."""
    name: str
    smem_bytes: int

    def smem_for(self, arch: str) -> int:     # already its arch's size (Compiled.smem)
        return self.smem_bytes


def cubin_mismatch(arch: str, cc: tuple[int, int]) -> str | None:
    """Why a cubin for `arch` cannot run on a device of compute capability `cc` (None if it
    can): SASS runs on the same major version and an equal or newer minor; "a"/"f" variants
    only on exactly their own arch."""
    m = re.fullmatch(r"sm_(\d+?)(\d)([af]?)", arch)
    if not m:
        return f"cannot tell which GPUs a cubin for {arch} runs on"
    major, minor, variant = int(m.group(1)), int(m.group(2)), m.group(3)
    ok = (major, minor) == cc if variant else (major == cc[0] and minor <= cc[1])
    return None if ok else (f"the cubin was compiled for {arch} and cannot run on this GPU "
                            f"(sm_{cc[0]}{cc[1]}); compile it for sm_{cc[0]}{cc[1]}")


def _params(c: Compiled) -> list:
    from ..host.params import ConstParam, ScalarParam
    out = []
    for name, spec in c._specs:
        if isinstance(spec, ArraySpec):
            out.append(spec.param(name))
        elif isinstance(spec, DType):
            out.append(ScalarParam(name, spec))
        else:
            out.append(ConstParam(name, spec))
    return out


def _run_cpu(c: Compiled, grid, values):
    from ..launch import cpu
    if c._lib is None:
        lib = cpu._load_bytes(c.data)
        if lib is None:
            raise TileLaunchError(f"the CPU library of compiled kernel '{c.name}' does not load")
        mode = c.versions.get("cpu_mode", "fast")
        c._lib = cpu.library(lib, c.name, mode, 1 if mode == "fast" else c.block[0],
                             int(c.versions.get("cpu_stack", 0)))
    cpu.run(c._lib, grid, values, smem=c.smem)
