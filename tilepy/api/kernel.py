"""`@tilepy.kernel`: the user's kernel object. What it is compiled from (its function, options,
specialization and tracing) is the frontend's `KernelFunction`; this layer adds the views a
user asks for, which run the pipeline (compiler.py, aot.py)."""
from __future__ import annotations

from ..errors import TileError, for_user
from ..frontend.kernel import KernelFunction


class Kernel(KernelFunction):
    """A tile kernel. Launch it with `tilepy.launch(stream, grid, kernel, args)`."""

    def replace_hints(self, **options) -> "Kernel":
        """A new kernel with the same function and these options changed (cuTile API)."""
        return Kernel(self.func, **{**self.options, **options})

    def trace(self, params, deps=None):
        """Run the kernel's Python body on tracing values: the Tile IR module. `deps`
        (frontend/identity.Deps) records what the trace reads from outside the arguments."""
        from ..frontend.trace import trace_kernel      # the compiler: loaded on the first trace
        return trace_kernel(self, params, deps)

    # ------------------------------------------------------------------ views for users
    def mlir(self, *args, dialect: str = "nvidia") -> str:
        """The Tile IR (`cuda_tile` dialect text) of this kernel specialized for `args`:
        NVIDIA's 13.4 syntax, as `tileirdisasm` prints it (`dialect="nvidia"`), or the 13.1
        spec chapters' syntax (`dialect="spec"`). tilepy's parser reads both."""
        from .compiler import compile_for_args
        try:
            ck = compile_for_args(self, args)
            if dialect == "nvidia":
                return ck.mlir
            from ..ir.printer import print_module
            return print_module(ck.module, dialect=dialect)
        except TileError as e:
            for_user(e)
            raise           # adds no frame: the traceback ends at the user's line

    def cuda_source(self, *args) -> str:
        """The CUDA C++ this kernel becomes for `args`."""
        from .compiler import compile_for_args
        try:
            return compile_for_args(self, args).cuda_source
        except TileError as e:
            for_user(e)
            raise

    def bytecode(self, *args, version: tuple[int, int] | str | None = None) -> bytes:
        """This kernel's Tile IR for `args` as NVIDIA's Tile IR bytecode (what `tileiras` and
        `tileirdisasm` read); `version` ((13, 5) or "13.5") defaults to tilepy.bytecode's
        DEFAULT_VERSION (13.4: the newest every supported tileiras reads), with the exact
        divisibility facts a tileiras launch specializes on."""
        from ..bytecode import DEFAULT_VERSION, write_module
        from .compiler import infos_for, tile_ir
        try:
            module = tile_ir(self, *self.specialize(infos_for(args), exact=True))
            return write_module(module, version or DEFAULT_VERSION)
        except TileError as e:
            for_user(e)
            raise

    def compile(self, *args, arch: str = "sm_90", compiler: str = "nvrtc"):
        """Compile ahead of time for example arguments or a signature (tilepy.aot): a cubin
        ("sm_XX"), PTX ("compute_XX") or CPU library ("cpu") with its metadata; no GPU needed.
        `compiler="tileiras"`: the cubin from NVIDIA's Tile IR compiler (tilepy[tileiras])."""
        from .aot import compile_kernel
        try:
            return compile_kernel(self, args, arch, compiler)
        except TileError as e:
            for_user(e)
            raise

    def inspect(self, *args, arch: str = "sm_90"):
        """The Tile IR, CUDA C++, PTX and SASS statistics of this kernel for `args`, side by
        side with syntax highlighting in a notebook, as plain text in a terminal."""
        from .inspect_view import inspect_kernel
        try:
            return inspect_kernel(self, args, arch)
        except TileError as e:
            for_user(e)
            raise


class _KernelDecorator(type):
    """`isinstance(k, tilepy.kernel)` is true for a kernel, as in cuTile (whose `kernel` is the
    class of kernels)."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Kernel)


class kernel(metaclass=_KernelDecorator):
    """Decorate a function as a tile kernel (`@tilepy.kernel` or `@tilepy.kernel(...)`).

    Options (cuTile's; a value may be a `ByTarget(sm_90=..., default=...)`), written into the
    entry's optimization hints (tileiras honors them): `occupancy` (1-32): the blocks per SM to
    plan registers for, `__launch_bounds__(threads, occupancy)` in the C++; `num_ctas` (1-16, a
    power of 2): cuTile's blocks per cluster, a no-op in the C++ backend (its blocks share no
    data: cuda_c/kernel_options.py); `num_worker_warps` (4 or 8, as cuTile): the
    `num_worker_warps_per_cta` hint of tileiras 13.3+ (dropped with cuTile's warning from older
    bytecode), no effect in the C++ backend; `opt_level` (0-3): accepted, no effect.
    tilepy's `compiler` ("nvrtc" or "tileiras"): the GPU compiler of launches."""

    def __new__(cls, func=None, /, **options):
        if func is None:
            return lambda f: Kernel(f, **options)
        return Kernel(func, **options)


def function(func=None, /, *, host=False, tile=True):
    """Mark a helper as usable in kernels. Helpers are inlined where they are called."""
    if func is None:
        return lambda f: f
    return func
