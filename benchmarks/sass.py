"""SASS quality of the reference kernels, without a GPU: ours (NVRTC), ours through tileiras, cuTile's.

    python benchmarks/sass.py [--arch sm_75 sm_80 sm_90] [--json]
    python benchmarks/sass.py --real-size [--arch sm_80 sm_90 sm_90a] [--only NAME ...] [--json]
    python benchmarks/sass.py --hot [--arch sm_90 sm_90a] [--json]      (benchmarks/sass_hot.py)

sm_90a is the arch an sm_90 GPU gets with TILEPY_SM90A=1 (launch/gpu.py): the source's sm_90a class, warpgroup MMA
(HGMMA) for the GEMMs and attention's two mmas lowering/wgmma.py takes; sm_90 is the same source's mma.sync class.
cuTile and tileiras compile sm_90 for it (they use Hopper's features on sm_90 themselves).

`--real-size` is the matrix of the tile sizes users pick for speed (issue 13): GEMM f16/bf16 at
128x128x32, 128x128x64, 128x256x64, 256x128x32 (M=N=K=4096), attention d=64 and d=128 (BM 128,
BN 64, 16 heads of 4096), softmax and layernorm over 4096-wide rows, a 64x64 tile transpose of a
4096x4096 f32 array; ours beside cuTile's where cuTile is installed. Columns: registers, shared
memory (the ELF's static part plus, for ours, the dynamic size every launch passes), the stack
frame per thread (EIATTR_FRAME_SIZE: spills and local arrays, which cuobjdump's LOCAL misses)
and the number of LDL/STL instructions, HMMA (or HGMMA), LDSM, LDGSTS, LDG/STG.128, BAR, UTMA
(TMA: cuTile on sm_90) and the
instructions per mma in the innermost loop holding an mma (`stats()["hot_loop"]`; "-" where
sass_stats does not give it or the kernel has no mma).

For each reference kernel of tests/reference_kernels (vector add, softmax, layernorm, f16 matmul,
batched matmul, attention forward) in its default configuration, the emitted C++ is compiled with
NVRTC for each arch and the cubin read with nvdisasm (tilepy/tools/sass_stats.py): registers,
shared memory, the stack frame (spills) and the LDL/STL count, and counts of HMMA/HGMMA, LDSM, LDGSTS, LDG.E.128, SHFL
and BAR (and UTMA: TMA). When NVIDIA's cuTile is installed (`pip install -e ".[bench]"`: cuda-tile[tileiras]),
the very same kernel source is compiled with cuTile (`import cuda.tile as ct`,
`cuda.tile.compilation.export_kernel`, no GPU needed) for the same specialization (arrays
disjoint, 16-byte aligned, last dimension contiguous, divisibility by 16 as the arguments have
it) and its numbers are printed beside ours (the stack frame is read from each cubin the same
way: cuobjdump's LOCAL, which an earlier version showed for cuTile, stays 0 for spills). cuTile
does not target sm_75. Where tileiras is installed (tilepy[tileiras]),
a middle column group is tilepy's own Tile IR for the same specialization, written as bytecode
(`kernel.bytecode`) and compiled by tileiras: NVIDIA's compiler on tilepy's IR.
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import sys
import tempfile
from math import prod

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.reference_kernels import attention, layernorm, matmul, softmax, transpose
from tests.reference_kernels.cases import CASES
from tilepy.api.compiler import compile_for_args
from tilepy.launch.cubin_info import kernel_info
from tilepy.launch.nvrtc import compile_cubin
from tilepy.tools.sass_stats import stats

COLUMNS = ("HMMA", "LDSM", "LDGSTS", "LDG.E.128", "SHFL", "BAR", "UTMA")


def ours(case, arch: str) -> dict:
    kernel, args, _, _ = case
    ck = compile_for_args(kernel, args)
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    (r,) = stats(cb.data, cb.log).values()
    r["dynamic_smem"] = ck.emitted.smem_for(arch)
    return r


# ------------------------------------------------------------------ tilepy's Tile IR via tileiras
def via_tileiras(case, arch: str) -> dict | str:
    """The same specialization's Tile IR, as bytecode, through NVIDIA's tileiras."""
    from tilepy.bytecode import write_module
    from tilepy.errors import TileError
    from tilepy.launch.tileiras import assemble
    kernel, args, _, _ = case
    if int(arch[3:].rstrip("a")) < 80:
        return "tileiras targets sm_80+"
    try:
        code = assemble(write_module(compile_for_args(kernel, args).module), arch, kernel.name)
    except TileError as e:
        return str(e).splitlines()[0].replace("|", "/")[:70]
    (r,) = stats(code.data).values()
    return r


# ----------------------------------------------------------------------------------- cuTile
def cutile():
    try:
        import cuda.tile
        from cuda.tile import compilation  # noqa: F401
    except ImportError:
        return None
    bindir = os.path.join(os.path.dirname(os.path.dirname(cuda.tile.__file__)), "..", "nvidia",
                          "cu13", "bin")
    if os.path.isdir(bindir):                 # tileiras from the nvidia-cuda-tileiras wheel
        os.environ["PATH"] = os.path.abspath(bindir) + os.pathsep + os.environ.get("PATH", "")
    return cuda.tile


def cutile_kernel(ct, kernel, tmp: str):
    """The reference kernel's own source, imported with `import cuda.tile as ct`."""
    src_path = sys.modules[kernel.func.__module__].__file__
    with open(src_path) as f:
        src = f.read().replace("import tilepy as ct\n", "import cuda.tile as ct\n")
    name = "cutile_" + os.path.basename(src_path)[:-3]
    path = os.path.join(tmp, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, kernel.func.__name__)


def cutile_signature(ct, kernel, args):
    from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature, ScalarConstraint
    import ml_dtypes
    dtypes = {np.dtype(np.float32): ct.float32, np.dtype(np.float16): ct.float16,
              np.dtype(np.int32): ct.int32, np.dtype(np.float64): ct.float64,
              np.dtype(np.int8): ct.int8, np.dtype(ml_dtypes.bfloat16): ct.bfloat16}
    params = []
    for name, a in zip(kernel.signature.parameters, args):
        if name in kernel.constants:
            params.append(a)
        elif isinstance(a, np.ndarray):
            st = [s // a.itemsize for s in a.strides]
            params.append(ArrayConstraint(
                dtypes[a.dtype], a.ndim, index_dtype=ct.int32, stride_lower_bound_incl=0,
                alias_groups=(), may_alias_internally=False,
                stride_constant=(None,) * (a.ndim - 1) + (1,),
                stride_divisible_by=tuple(16 if s % 16 == 0 else 1 for s in st[:-1]) + (1,),
                shape_divisible_by=tuple(16 if d % 16 == 0 else 1 for d in a.shape),
                base_addr_divisible_by=16))
        else:
            params.append(ScalarConstraint(ct.float32 if isinstance(a, float) else ct.int32))
    return KernelSignature(params, CallingConvention.cutile_python_v1())


def theirs(ct, case, arch: str, tmp: str, fn=None) -> dict | str:
    """cuTile's cubin of the case's kernel source (`fn`: the kernel already made by cuTile)."""
    from cuda.tile.compilation import export_kernel
    kernel, args, _, _ = case
    try:
        out = io.BytesIO()
        export_kernel(fn or cutile_kernel(ct, kernel, tmp), [cutile_signature(ct, kernel, args)],
                      out, gpu_code=arch.rstrip("a"), output_format="cubin")   # (cuTile: sm_90)
    except Exception as e:                     # noqa: BLE001 (reported in the table)
        lines = [ln for ln in str(e).splitlines() if "tileiras" in ln] or [type(e).__name__]
        return lines[0].replace("|", "/")[:70]
    ((fn, r),) = stats(out.getvalue()).items()
    info = kernel_info(out.getvalue(), fn)
    r["threads"] = prod(info.req_threads or info.max_threads or (0,))   # 0: not recorded
    return r


# ------------------------------------------------------------------------ real-size matrix
def _gemm(dtype, tiles):
    a, b = np.zeros((4096, 4096), dtype), np.zeros((4096, 4096), dtype)
    return matmul.matmul, (a, b, np.zeros((4096, 4096), np.float32), *tiles), None, None


def _attention(d):
    q, k, v, o = (np.zeros((16, 4096, d), np.float16) for _ in range(4))
    return attention.attention, (q, k, v, o, 0.125, 128, 64, d), None, None


def _rows(kernel, *extra, n=4096):
    x, y = np.zeros((4096, n), np.float32), np.zeros((4096, n), np.float32)
    if kernel is layernorm.layernorm:
        w, b = np.zeros(n, np.float32), np.zeros(n, np.float32)
        return kernel, (x, w, b, y, 1e-5, n, *extra), None, None
    return kernel, (x, y, *extra), None, None


def real_size_cases() -> dict:
    import ml_dtypes
    out = {}
    for name, dtype in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        for tiles in ((128, 128, 32), (128, 128, 64), (128, 256, 64), (256, 128, 32)):
            out[f"gemm {name} {'x'.join(map(str, tiles))}"] = lambda d=dtype, t=tiles: _gemm(d, t)
    out["attention d64 128x64"] = lambda: _attention(64)
    out["attention d128 128x64"] = lambda: _attention(128)
    out["softmax 4096"] = lambda: _rows(softmax.softmax, 4096)
    out["layernorm 4096 tile 1024"] = lambda: _rows(layernorm.layernorm, 1024)
    out["transpose 64x64 f32"] = lambda: _rows(transpose.transpose, 64)
    return out


REAL_COLUMNS = ("LDSM", "LDGSTS", "LDG.E.128", "STG.E.128", "BAR", "UTMA")


def _per_mma(r) -> str:
    loop = r.get("hot_loop")                    # sass_stats' instructions per mma, where it has it
    return str(loop["per_mma"]) if loop else "-"


def real_row(r) -> list[str]:
    if isinstance(r, str):
        return [f"n/a ({r})"] + [""] * (5 + len(REAL_COLUMNS))
    smem = r["smem"] + r.get("dynamic_smem", 0)
    counts = [str(r["counts"][c]) for c in REAL_COLUMNS]
    return [str(r["registers"]), f"{smem / 1024:.1f}", str(r["stack"]), str(r["counts"]["LDL/STL"]),
            _mma(r), *counts, _per_mma(r)]


def real_size(opts, ct):
    side = ["regs", "smem KiB", "stack B", "LDL/STL", "HMMA/HGMMA", "LDSM", "LDGSTS", "LDG.128",
            "STG.128", "BAR", "UTMA", "instr/mma"]
    head = ["kernel", "arch", *side] + (["cuTile " + side[0], *side[1:]] if ct else [])
    lines, data = [], {}
    cases = real_size_cases()
    with tempfile.TemporaryDirectory() as tmp:
        for name in opts.only or cases:
            case = cases[name]()
            for arch in opts.arch:
                mine = ours(case, arch)
                cells = [name, arch, *real_row(mine)]
                data[f"{name}/{arch}"] = {"tilepy": _plain(mine)}
                if ct is not None:
                    other = theirs(ct, case, arch, tmp)
                    cells += real_row(other)
                    data[f"{name}/{arch}"]["cutile"] = _plain(other)
                lines.append(cells)
                if not opts.json:
                    print("| " + " | ".join(cells) + " |", flush=True) if len(lines) > 1 else \
                        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n| "
                              + " | ".join(cells) + " |", flush=True)
    if opts.json:
        print(json.dumps(data, indent=1))


def _plain(r):
    return r if isinstance(r, str) else {k: v for k, v in r.items() if k != "ops"}


# ----------------------------------------------------------------------------------- table
def _mma(r) -> str:
    c = r["counts"]
    return f"{c['HGMMA']} HGMMA" if c["HGMMA"] else str(c["HMMA"] + c["IMMA"])


def row(r) -> list[str]:
    if isinstance(r, str):
        return [f"n/a ({r})"] + [""] * (3 + len(COLUMNS))
    counts = [_mma(r)] + [str(r["counts"][c]) for c in COLUMNS[1:]]
    smem = r["smem"] + r.get("dynamic_smem", 0)        # ours: the ELF's part + the launch's
    return [str(r["registers"]), str(smem), f"{r['stack']} / {r['counts']['LDL/STL']}",
            *counts]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", nargs="+", default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--real-size", action="store_true", help="the matrix of real tile sizes")
    p.add_argument("--only", nargs="+", help="with --real-size: these rows (names as printed)")
    p.add_argument("--hot", action="store_true",
                   help="GEMM and attention hot loops beside Triton and cuTile (sass_hot.py)")
    opts = p.parse_args(argv)
    ct = cutile()
    if opts.hot:
        import sass_hot
        opts.arch = opts.arch or ["sm_90"]
        return sass_hot.main(opts, ct)
    if opts.real_size:
        opts.arch = opts.arch or ["sm_80", "sm_90", "sm_90a"]
        return real_size(opts, ct)
    opts.arch = opts.arch or ["sm_75", "sm_80", "sm_90"]
    from tilepy.launch.tileiras import unusable
    tas = unusable() is None
    stack = "stack B / LDL+STL"
    head = ["kernel", "arch", "regs", "smem B", stack, "HMMA/HGMMA", *COLUMNS[1:]]
    if tas:
        head += ["IR->tileiras regs", "smem B", stack, "HMMA/HGMMA", *COLUMNS[1:]]
    if ct is not None:
        head += ["cuTile regs", "smem B", stack, "HMMA/HGMMA", *COLUMNS[1:]]
    lines, data = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in CASES.items():
            case = make(np.random.default_rng(0))
            for arch in opts.arch:
                mine = ours(case, arch)
                cells = [name, arch, *row(mine)]
                data[f"{name}/{arch}"] = {"tilepy": {k: v for k, v in mine.items() if k != "ops"}}
                if tas:
                    second = via_tileiras(case, arch)
                    cells += row(second)
                    data[f"{name}/{arch}"]["tilepy_tileiras"] = second if isinstance(second, str) \
                        else {k: v for k, v in second.items() if k != "ops"}
                if ct is not None:
                    other = theirs(ct, case, arch, tmp)
                    cells += row(other)
                    data[f"{name}/{arch}"]["cutile"] = other if isinstance(other, str) else {
                        k: v for k, v in other.items() if k != "ops"}
                lines.append(cells)
    if opts.json:
        print(json.dumps(data, indent=1))
        return
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for cells in lines:
        print("| " + " | ".join(cells) + " |")
    if ct is None:
        print("\n(cuTile not installed: pip install -e \".[bench]\" to compare)")


if __name__ == "__main__":
    main()
