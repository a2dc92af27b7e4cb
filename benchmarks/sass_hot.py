"""The hot loops of GEMM and attention on sm_90 beside Triton and cuTile (issue 28), no GPU needed.

    python benchmarks/sass.py --hot [--arch sm_90 sm_90a] [--json]

Rows: the issue's problems (matmul f16 4096^3 at 128x128x32, the ragged 4000x3000x5000 and the
odd 4095x4097x4099 at the same tiles, bf16 at 128x128x64, f16 at 128x256x64; attention d=64 at
BM 128 BN 64 and d=128 at BM 64 BN 64, 32 heads of 4096). Per compiler: registers, threads,
shared memory (KiB: the ELF's static part plus the dynamic size a launch passes), blocks per SM
(from registers x threads, shared memory and threads, for the arch's SM), and in the innermost
loop holding an mma (tilepy/tools/sass_stats.py `mma_loop`): instructions per mma, BAR, LDG,
LDS (LDSM apart) and LDGSTS. tilepy: the tutorials' kernels (03_matmul.py `matmul`,
05_attention.py `attention`) through NVRTC. Instructions per mma count the mma instructions of
each (HMMA m16n8k16 for tilepy on sm_90; Triton and cuTile use HGMMA there, one instruction for
a 64xNx16 product: compare their counts with that in mind, the mma column names the kind; sm_90a:
tilepy's warpgroup-MMA class, HGMMA too, while Triton and cuTile compile sm_90). Triton (when
`import triton` works; it need not be in this venv: PYTHONPATH=<a pip --target folder>):
benchmarks/triton_kernels.py compiled ahead of time for the arch with Triton's defaults (4 warps,
3 stages) and 16-divisibility of the pointers and of the int arguments that have it. cuTile (when
installed): the same tutorial source decorated by cuTile (benchmarks/sass.py `theirs`). A compiler that is
missing says so in its columns."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tutorials"))
from definitions import load  # noqa: E402

# SM limits: registers, shared memory per SM (bytes; 1 KiB of it reserved per block), threads
SM = {"sm_80": (65536, 164 * 1024, 2048), "sm_86": (65536, 100 * 1024, 1536),
      "sm_89": (65536, 100 * 1024, 1536), "sm_90": (65536, 228 * 1024, 2048)}
HOT = ("per_mma", "BAR", "LDG", "LDS", "LDGSTS")
MMA = ("HMMA", "HGMMA", "IMMA")
HEAD = ("regs", "threads", "smem KiB", "blocks/SM", "mma", "instr/mma", "BAR", "LDG", "LDS",
        "LDGSTS")


def sm(arch: str) -> int:
    """sm_90a -> 90 (the SM of an arch-specific target)."""
    return int(arch[3:].rstrip("a"))


def blocks_per_sm(regs: int, threads: int, smem: int, arch: str) -> int:
    rf, sm_smem, sm_threads = SM.get(arch.rstrip("a"), SM["sm_90"])
    per_warp = -(-regs * 32 // 256) * 256                # allocated in units of 256 per warp
    by_regs = rf // (per_warp * (threads // 32)) if regs else 32
    reserved = 0 if sm(arch) >= 90 else 1024     # sm_90 cubins hold it in .nv.shared
    by_smem = sm_smem // (smem + reserved)
    return min(by_regs, by_smem, sm_threads // threads)


def _gemm(m, n, k, dtype, tiles):
    a, b, c = np.zeros((m, k), dtype), np.zeros((k, n), dtype), np.zeros((m, n), np.float32)
    tm, tn, tk = tiles
    sig = {"A": "*fp16" if dtype == np.float16 else "*bf16", "B": None, "C": "*fp32", "M": "i32",
           "N": "i32", "K": "i32", "stride_a": "i32", "stride_b": "i32", "stride_c": "i32"}
    sig["B"] = sig["A"]
    ints = (m, n, k, k, n, n)
    return ("03_matmul", "matmul", (a, b, c, *tiles)), \
        ("matmul", sig, ints, {"BM": tm, "BN": tn, "BK": tk})


def _attention(d, bm, bn, s=4096, bh=32):
    q = np.zeros((bh, s, d), np.float16)
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "seq_len": "i32",
           "qk_scale": "fp32", "stride_bh": "i32", "stride_s": "i32"}
    return (("05_attention", "attention", (q, q, q, q.copy(), 0.125, bm, bn, d)),
            ("attention", sig, (s, s * d, d), {"BM": bm, "BN": bn, "D": d}))


def cases() -> dict:
    import ml_dtypes
    return {
        "gemm f16 4096^3 128x128x32": lambda: _gemm(4096, 4096, 4096, np.float16, (128, 128, 32)),
        "gemm f16 4000x3000x5000 128x128x32":
            lambda: _gemm(4000, 3000, 5000, np.float16, (128, 128, 32)),
        "gemm f16 4095x4097x4099 128x128x32":
            lambda: _gemm(4095, 4097, 4099, np.float16, (128, 128, 32)),
        "gemm bf16 4096^3 128x128x64":
            lambda: _gemm(4096, 4096, 4096, ml_dtypes.bfloat16, (128, 128, 64)),
        "gemm f16 4096^3 128x256x64": lambda: _gemm(4096, 4096, 4096, np.float16, (128, 256, 64)),
        "attention d64 BM128 BN64": lambda: _attention(64, 128, 64),
        "attention d128 BM64 BN64": lambda: _attention(128, 64, 64),
    }


def summary(r: dict, threads: int, smem: int, arch: str) -> dict:
    loop = r.get("hot_loop") or {}
    full = loop.get("full_ops", {})
    lds = sum(n for op, n in full.items() if op.split(".")[0] == "LDS")
    ops = loop.get("ops", {})
    return {"regs": r["registers"], "threads": threads or "?", "smem": smem,
            "blocks": blocks_per_sm(r["registers"], threads, smem, arch) if threads else "?",
            "mma": " ".join(f"{ops[k]} {k}" for k in MMA if k in ops) or "-",
            "per_mma": loop.get("per_mma", "-"), "BAR": ops.get("BAR", 0),
            "LDG": ops.get("LDG", 0), "LDS": lds, "LDGSTS": ops.get("LDGSTS", 0),
            "spill": r.get("spill_bytes", 0)}


def ours(case, arch: str) -> dict:
    from tilepy.api.compiler import compile_for_args
    from tilepy.launch.nvrtc import compile_cubin
    from tilepy.tools.sass_stats import stats
    tutorial, name, args = case
    ck = compile_for_args(getattr(load(tutorial), name), args)
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    (r,) = stats(cb.data, cb.log).values()
    return summary(r, ck.emitted.nt, r["smem"] + ck.emitted.smem_for(arch), arch)


def triton_available() -> bool:
    try:
        import triton  # noqa: F401
        return True
    except ImportError:
        return False


def triton_row(spec, arch: str) -> dict | str:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    import triton_kernels
    from tilepy.tools.sass_stats import stats
    name, sig, ints, constexprs = spec
    sig = {**sig, **{k: "constexpr" for k in constexprs}}
    names = list(sig)
    scalars = [n for n in names if sig[n] == "i32"]
    div16 = [names.index(n) for n in names if sig[n].startswith("*")] + \
        [names.index(n) for n, v in zip(scalars, ints) if v % 16 == 0]
    attrs = {(i,): [["tt.divisibility", 16]] for i in div16}
    try:
        src = ASTSource(fn=getattr(triton_kernels, name), signature=sig, constexprs=constexprs,
                        attrs=attrs)
        k = triton.compile(src, target=GPUTarget("cuda", sm(arch), 32))
    except Exception as e:                     # noqa: BLE001 (reported in the table)
        return f"{type(e).__name__}: {str(e).splitlines()[0][:60]}"
    (r,) = stats(k.asm["cubin"]).values()
    return summary(r, k.metadata.num_warps * 32, r["smem"] + k.metadata.shared, arch)


def cutile_row(ct, case, arch: str, tmp: str) -> dict | str:
    from sass import theirs
    tutorial, name, args = case
    r = theirs(ct, (getattr(load(tutorial), name), args, None, None), arch, tmp,
               fn=getattr(load(tutorial, ct=ct), name))
    if isinstance(r, str):
        return r
    return summary(r, r["threads"], r["smem"], arch)


def cells(r) -> list[str]:
    if isinstance(r, str):
        return [f"n/a ({r})"] + [""] * (len(HEAD) - 1)
    return [str(r["regs"]) + (f" (spill {r['spill']})" if r["spill"] else ""), str(r["threads"]),
            f"{r['smem'] / 1024:.1f}", str(r["blocks"]), r["mma"], *(str(r[k]) for k in HOT)]


def main(opts, ct):
    import json
    import tempfile
    tri = triton_available()
    head = ["problem", "arch", *(f"tilepy {h}" for h in HEAD), *(f"Triton {h}" for h in HEAD),
            *(f"cuTile {h}" for h in HEAD)]
    rows, data = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in cases().items():
            case, spec = make()
            for arch in opts.arch:
                mine = ours(case, arch)
                other = triton_row(spec, arch) if tri else "Triton not installed"
                cut = cutile_row(ct, case, arch, tmp) if ct is not None else "cuTile not installed"
                data[f"{name}/{arch}"] = {"tilepy": mine, "triton": other, "cutile": cut}
                rows.append([name, arch, *cells(mine), *cells(other), *cells(cut)])
    if opts.json:
        print(json.dumps(data, indent=1))
        return
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
