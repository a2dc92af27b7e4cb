"""Resource usage and SASS instruction counts of a cubin, without a GPU.

    python -m tilepy.tools.sass_stats [--json] KERNEL.cubin [...]

* registers, static shared memory: parsed from the cubin ELF (EIATTR_REGCOUNT in .nv.info, else
  the `.text.<fn>` section's sh_info >> 24; the size of `.nv.shared.<fn>`, which on sm_90 includes
  1 KiB of shared memory the system reserves);
* `stack`, the stack frame bytes per thread (spills, local arrays): EIATTR_FRAME_SIZE in .nv.info;
* spill bytes: from the ptxas report NVRTC puts in its log with -Xptxas=-v (pass `log=`);
* SASS: `nvdisasm -c` (or `cuobjdump -sass`) from the nvidia-cuda-nvdisasm / -cuobjdump wheels,
  found with cuda.pathfinder, on $PATH or in the wheels' folders. Instructions predicated @!PT
  (never executed) are not counted.

`stats(data, log)` returns, per kernel, a dict with `registers`, `smem`, `spill_bytes` and
`counts` (instruction class -> count; the classes of CLASSES), `ops` (every mnemonic) and
`hot_loop`: `mma_loop(lines)`, the innermost loop holding an mma with its instruction count and
instructions per mma (None without one). `mma_loops(data)` gives only that, per kernel.
(Adapted from the prototype in shared/prototype/sass_stats.py.)
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

CLASSES = ("HMMA", "HGMMA", "IMMA", "LDSM", "LDGSTS", "LDG.E.128", "STG.E.128", "SHFL", "BAR",
           "LDL/STL", "UTMA")


@functools.cache
def find_tool(name: str) -> str | None:
    try:
        import cuda.pathfinder as p
        t = p.find_nvidia_binary_utility(name)
        if t:
            return t
    except Exception:
        pass
    t = shutil.which(name)
    if t:
        return t
    for base in sys.path:
        for cu in ("cu13", "cu12"):
            c = os.path.join(base, "nvidia", cu, "bin", name)
            if os.path.isfile(c):
                return c
    return None


def available() -> bool:
    return bool(find_tool("nvdisasm") or find_tool("cuobjdump"))


# ---------------------------------------------------------------------------------- ELF
def _sections(data: bytes):
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 cubin")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def cstr(tab_off, i):
        return data[tab_off + i:data.index(b"\0", tab_off + i)].decode()
    secs, symbols = {}, []
    for name, typ, _flags, _addr, off, size, link, info, _align, entsize in raw:
        secs[cstr(raw[shstrndx][4], name)] = (typ, info, off, size)
        if typ == 2:                                              # SHT_SYMTAB
            for j in range(size // entsize):
                st_name, = struct.unpack_from("<I", data, off + j * entsize)
                symbols.append(cstr(raw[link][4], st_name))
    return secs, symbols


# EIATTR_REGCOUNT (sm_90 keeps it only here); EIATTR_FRAME_SIZE: the stack frame in bytes per
# thread, spills included (ptxas's "bytes stack frame"; cuobjdump -res-usage's STACK, where LOCAL
# stays 0 for spills)
_NV_INFO = {0x2F: "registers", 0x11: "stack"}


def elf_resources(data: bytes) -> dict:
    secs, symbols = _sections(data)
    res = {}
    for name, (_t, info, _o, size) in secs.items():
        if name.startswith(".text."):
            fn = name[len(".text."):]
            res[fn] = {"registers": info >> 24, "stack": 0,
                       "smem": secs.get(".nv.shared." + fn, (0, 0, 0, 0))[3]}
    if ".nv.info" in secs:                   # per-kernel values (symbol, value): _NV_INFO
        _t, _i, p, size = secs[".nv.info"]
        end = p + size
        while p + 4 <= end:
            fmt, attr = data[p], data[p + 1]
            if fmt == 4:
                n, = struct.unpack_from("<H", data, p + 2)
                if attr in _NV_INFO and n == 8:
                    sym, val = struct.unpack_from("<II", data, p + 4)
                    if sym < len(symbols) and symbols[sym] in res:
                        res[symbols[sym]][_NV_INFO[attr]] = val
                p += 4 + n
            else:
                p += 4
    return res


# ---------------------------------------------------------------------------------- SASS
_INSN = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?P<pred>@!?U?P[T0-9]+\s+)?(?P<op>[A-Z][A-Z0-9_.]*)")


def disassemble(path: str) -> dict[str, list[str]]:
    """The SASS text of each kernel of a cubin, one line per instruction or label."""
    nvd, cuo = find_tool("nvdisasm"), find_tool("cuobjdump")
    if nvd:
        txt = subprocess.run([nvd, "-c", path], capture_output=True, text=True, check=True).stdout
        head = re.compile(r"^\.text\.(\S+):\s*$")
    elif cuo:
        txt = subprocess.run([cuo, "-sass", path], capture_output=True, text=True, check=True).stdout
        head = re.compile(r"^\s+Function : (\S+)\s*$")
    else:
        raise RuntimeError("neither nvdisasm nor cuobjdump found: pip install nvidia-cuda-nvdisasm")
    funcs, fn = collections.defaultdict(list), None
    for line in txt.splitlines():
        m = head.match(line)
        if m:
            fn = m.group(1)
        elif fn:
            funcs[fn].append(line)
    return funcs


def _executed(line: str):
    m = _INSN.match(line)
    return m if m and (m.group("pred") or "").strip() != "@!PT" else None


def _mnemonics(lines: list[str]) -> list[str]:
    return [m.group("op") for m in map(_executed, lines) if m]


def sass_ops(path: str) -> dict[str, list[str]]:
    """Mnemonics per kernel (in program order)."""
    return {fn: _mnemonics(lines) for fn, lines in disassemble(path).items()}


@contextlib.contextmanager
def _cubin_file(data: bytes):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(data)
        yield path


def classify(op: str) -> str | None:
    parts = op.split(".")
    base = parts[0]
    if base in ("HMMA", "HGMMA", "IMMA", "LDSM", "LDGSTS", "SHFL", "BAR"):
        return base
    if base in ("LDG", "STG") and "128" in parts:
        return f"{base}.E.128"
    if base in ("LDL", "STL"):
        return "LDL/STL"
    if base.startswith("UTMA"):
        return "UTMA"
    return None


# ------------------------------------------------------------------------------ hot loop
MMA = ("HMMA", "IMMA", "HGMMA")
_ADDR = re.compile(r"^\s+/\*(?P<addr>[0-9a-f]{4,})\*/")
_LABEL = re.compile(r"^(?P<label>\.L\w*):")
_BRANCH = re.compile(r"\bBRA(?:\.[A-Z]+)*\s+(?:!?U?P[T0-9]+,\s*)?"   # BRA.U !UP0, target (sm_100)
                     r"(?:`\((?P<label>[^)]+)\)|0x(?P<addr>[0-9a-f]+))")


def _listing(lines: list[str]):
    """Executed instructions [(address, mnemonic)], label -> address, branches [(address,
    target label or address)] of one kernel's SASS text."""
    insns, labels, branches, pending = [], {}, [], []
    for line in lines:
        lab = _LABEL.match(line)
        if lab:
            pending.append(lab.group("label"))
            continue
        a, m = _ADDR.match(line), _executed(line)
        if not a:
            continue
        addr = int(a.group("addr"), 16)
        labels.update((p, addr) for p in pending)
        pending = []
        if m:
            insns.append((addr, m.group("op")))
            b = _BRANCH.search(line)
            if b:
                branches.append((addr, b.group("label") or int(b.group("addr"), 16)))
    return insns, labels, branches


def mma_loop(lines: list[str]) -> dict | None:
    """The innermost loop that holds an mma in one kernel's SASS (nvdisasm -c or cuobjdump
    -sass text): `{"start", "end", "instructions", "mma", "per_mma", "ops", "full_ops"}` (byte
    addresses of its first and last instruction; `ops`: mnemonic without modifiers -> count,
    `full_ops`: with them, "LDS.U8"), or None.

    A loop is the address range from a backward branch's target to the branch; the innermost
    one holding an HMMA/IMMA/HGMMA is the shortest such range. `instructions` counts what it
    holds (NOPs and @!PT instructions apart, cold paths inside the range included: a static
    count), `mma` its mma instructions, `per_mma` their ratio: the issue's "instructions per mma
    in the hot loop"."""
    insns, labels, branches = _listing(lines)
    best = None
    for end, target in branches:
        start = labels.get(target) if isinstance(target, str) else target
        if start is None or start > end:
            continue
        full = [op for addr, op in insns if start <= addr <= end and op != "NOP"]
        body = [op.split(".")[0] for op in full]
        mma = sum(op in MMA for op in body)
        if mma and (best is None or len(body) < best["instructions"]):
            best = {"start": start, "end": end, "instructions": len(body), "mma": mma,
                    "per_mma": round(len(body) / mma, 2), "ops": dict(collections.Counter(body)),
                    "full_ops": dict(collections.Counter(full))}
    return best


def mma_loops(data: bytes) -> dict[str, dict | None]:
    """`mma_loop` of every kernel of a cubin (needs nvdisasm or cuobjdump)."""
    with _cubin_file(data) as path:
        return {fn: mma_loop(lines) for fn, lines in disassemble(path).items()}


def spill_bytes(log: str) -> dict[str, int]:
    """Spill bytes (stores + loads) per kernel from a ptxas -v report."""
    out = {}
    for fn, st, ld in re.findall(r"Function properties for (\S+)\n.*?(\d+) bytes spill stores, "
                                 r"(\d+) bytes spill loads", log, re.DOTALL):
        out[fn] = int(st) + int(ld)
    return out


def local_bytes(path: str) -> dict[str, int]:
    """Per-thread local memory (spills and local arrays) per kernel, from cuobjdump -res-usage."""
    cuo = find_tool("cuobjdump")
    if not cuo:
        return {}
    out = subprocess.run([cuo, "-res-usage", path], capture_output=True, text=True).stdout
    return {fn: int(m.group(1)) for fn, body in re.findall(r"Function (\S+):\s*\n\s*(REG:.*)", out)
            for m in [re.search(r"LOCAL:(\d+)", body)] if m}


def stats(data: bytes, log: str = "") -> dict:
    return stats_and_text(data, log)[0]


def stats_and_text(data: bytes, log: str = "") -> tuple[dict, dict[str, list[str]]]:
    """`stats` and the SASS text of each kernel (`disassemble`'s) from one disassembly."""
    res = elf_resources(data)
    spills = spill_bytes(log)
    with _cubin_file(data) as path:
        text = disassemble(path)
        local = local_bytes(path)
    for fn, r in res.items():
        r["spill_bytes"] = spills.get(fn, 0)
        r["local_bytes"] = local.get(fn)
        r["ops"] = _mnemonics(text.get(fn, []))
        r["hot_loop"] = mma_loop(text.get(fn, []))
        c = collections.Counter(k for k in map(classify, r["ops"]) if k)
        r["counts"] = {k: c.get(k, 0) for k in CLASSES}
    return res, text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cubins", nargs="+")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out = {}
    for p in a.cubins:
        with open(p, "rb") as f:
            out[p] = {fn: {k: v for k, v in r.items() if k != "ops"}
                      for fn, r in stats(f.read()).items()}
    if a.json:
        print(json.dumps(out, indent=1))
        return
    for p, res in out.items():
        for fn, r in res.items():
            counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items() if v)
            loop = r["hot_loop"]
            hot = f"; {loop['per_mma']} instructions per mma in the hot loop" if loop else ""
            print(f"{os.path.basename(p)} :: {fn}: {r['registers']} registers, {r['smem']} B smem; "
                  f"{counts}{hot}")


if __name__ == "__main__":
    main()
