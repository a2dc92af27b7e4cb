"""A lent GPU's fifteen minutes in one prepared command (issues 28 and 29).

    python benchmarks/gpu_kit.py pack [--cutile] [--import-linter] [--tileirdisasm] [--nvrtc]
                                      [--nvjitlink] [--no-tileiras]   # here, with network
    python benchmarks/gpu_kit.py run [--budget 540]   # there: the device tool's one command

The device machine (/work/.library/device/: README.md, KINDS.md) has torch, Triton, cuda-core,
cuda-bindings, NVRTC 13.0, pytest, pytest-xdist, pytest-timeout and hypothesis; it cannot
download anything, and what travels with a call (the working tree and the carried paths) is at
most 64 MiB. `pack` builds `.gpukit/` in the repository root (ignored by git, the call's
`carry`), every file xz-compressed under files/ with its size and SHA-256 in manifest.json:
- the tileiras release's binaries: tileiras with the ptxas and libnvvm of its release (the
  version of the nvidia-cuda-tileiras wheel installed here), out of those wheels (LZMA2 preset
  9e after the x86 branch filter: `xz -9e --x86`): 58.8 MB;
- CPython 3.12 manylinux x86-64 wheels (the device README's `pip download --no-deps` recipe),
  at the versions installed here, of the tests' tools the device lacks (filecheck, jupytext,
  nbclient, ipykernel) and of all they need that it lacks; each rewritten uncompressed, then xz
  (4.8 MB of wheels carried in 3.2);
- side_by_side.py: a copy of ../shared/gpu/side_by_side.py (BASELINE.md's script), which lives
  outside the repository and would not travel.
Behind flags (sizes carried, measured 2026-11-28): --cutile (cuda-tile 1.7.0, the cuTile columns:
0.3 MB), --import-linter (with grimp, tests/test_layers.py: 2.1 MB), --tileirdisasm
(tests/test_bytecode.py's NVIDIA verifier: 0.9 MB), --nvrtc (NVRTC of the version installed here,
13.5, and its headers, the version the SASS tests are tuned on; the device has 13.0: 37.6 MB),
--nvjitlink (tileiras' own nvJitLink, 31.5 MB; without it `run` links the device's: the tileiras
tests' compiles ran with an empty file in its place here); --no-tileiras drops the binaries
(58.8 MB). The kit with --cutile is 62.4 MB: with a 3.7 MB working tree, 66.0 of the 67.1 MB a call
carries; --nvrtc and --nvjitlink fit only with --no-tileiras.
`pack` refuses a kit that would not travel beside the working tree, naming what to drop, and
prints the device call: its command (at most 2,000 characters), carry and timeout_s.

`run` (there; the steps are benchmarks/gpu_kit_steps.py) restores the kit, says what the machine
is, then runs the measurements in priority order, each under its own cap, inside `--budget`
seconds, and writes $OUT/summary.md and $OUT/logs.tar.xz after every step. A developer tool:
tilepy never imports it.
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / ".gpukit"
LIMIT = 64 << 20                         # what one device call carries, working tree included
COMMAND_LIMIT = 2000                     # characters of the device call's command
DEVICE_RECORD = Path("/work/.library/device/KINDS.md")   # the image's package list, as last read
SIDE_BY_SIDE = ROOT.parent / "shared" / "gpu" / "side_by_side.py"
DEFAULT_BUDGET = 540                     # seconds: ends inside the call's 600 with time to spare
DEVICE_TIMEOUT = 600
PYTHON = ("3.12", "cp")                  # the device's python3 (KINDS.md: 3.12.3)
PLATFORMS = ([f"manylinux_2_{n}_x86_64" for n in range(39, 4, -1)]
             + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"])
# xz filter chains: LZMA2 at preset 9e (`xz -9e`); for executables and shared libraries after
# the x86 branch filter (`xz -9e --x86`: ptxas 11.8 -> 10.7 MB).
XZ = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]
XZ_X86 = [{"id": lzma.FILTER_X86}, *XZ]

# The tests' tools the device lacks (KINDS.md), with why the suite wants each.
TOOLS = {
    "filecheck": "the IR tests' # CHECK lines",
    "jupytext": "the tutorials opened as notebooks",
    "nbclient": "the tutorials run as notebooks",
    "ipykernel": "the Jupyter kernel nbclient starts",
}
# --import-linter: tests/test_layers.py's contracts, which read source only (the same answer on
# any machine), and grimp, its Rust engine: 2.1 MB after xz, more than the default kit has left.
LINTER = "import-linter"
# Left out although a tool names it: why, in one line (`run` says so).
LEAVE_OUT = {"debugpy": "ipykernel's debugger only (4 MB); kernels start without it",
             "jedi": "IPython's completions only (4.9 MB, parso too); IPython runs without it"}


@dataclass
class Part:
    """Binaries of one or more nvidia wheels of one release, stored xz-compressed."""
    why: str
    version_of: str                      # the wheel installed here whose version is the release's
    members: dict = field(default_factory=dict)   # wheel -> patterns of its files to take
    flag: str = ""                       # the pack flag that adds it (drops it: --no-...)
    root: str = ""                       # the folder of DEST it is restored into (its name)


PARTS = {
    "tileiras": Part("tileiras with the ptxas and libnvvm of its release", "nvidia-cuda-tileiras",
                     {"nvidia-cuda-tileiras": ["nvidia/cu13/bin/tileiras"],
                      "nvidia-cuda-nvcc": ["nvidia/cu13/bin/ptxas"],
                      "nvidia-nvvm": ["nvidia/cu13/lib/libnvvm.so.4"]}, "--no-tileiras"),
    "tileirdisasm": Part("tileirdisasm, NVIDIA's bytecode reader (tests/test_bytecode.py: static, "
                         "the same answer on any machine)", "nvidia-cuda-tileiras",
                         {"nvidia-cuda-tileiras": ["nvidia/cu13/bin/tileirdisasm"]}, "--tileirdisasm",
                         "tileiras"),
    "nvjitlink": Part("the nvJitLink of tileiras' release (else the device's is linked)",
                      "nvidia-cuda-tileiras",
                      {"nvidia-nvjitlink": ["nvidia/cu13/lib/libnvJitLink.so.13"]}, "--nvjitlink",
                      "tileiras"),
    "nvrtc": Part("NVRTC of the version installed here and its CUDA headers",
                  "nvidia-cuda-nvrtc",
                  {"nvidia-cuda-nvrtc": ["nvidia/cu13/lib/libnvrtc.so.*",
                                         "nvidia/cu13/lib/libnvrtc-builtins.so.*", "nvidia/cu13/include/*"],
                   "nvidia-cuda-runtime": ["nvidia/cu13/include/*"],
                   "nvidia-cuda-crt": ["nvidia/cu13/include/*"]}, "--nvrtc"),
}
# tileiras looks for nvJitLink here, relative to the part's root; `run` links the device's copy
# when the kit carries none.
NVJITLINK = "nvidia/cu13/lib/libnvJitLink.so.13"
CUTILE = "cuda-tile==1.7.0"              # --cutile: NVIDIA's cuTile, the cuTile columns


# ----------------------------------------------------------------------------- stored files
def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def store(src: Path, kit: Path, part: str, path: str, old: dict | None = None,
          root: str = "", filters=XZ_X86) -> dict:
    """`src` xz-compressed into kit/files/<part>/<path>.xz; its manifest entry (restored to
    DEST/<root or part>/<path>). An entry of the previous manifest with the same content is
    reused without compressing again (then the entry says "reused": True)."""
    entry = {"part": part, "root": root or part, "path": path, "stored": f"files/{part}/{path}.xz",
             "size": src.stat().st_size, "sha256": sha256_of(src), "mode": src.stat().st_mode & 0o777}
    target = kit / entry["stored"]
    if (old and old.get("sha256") == entry["sha256"] and target.is_file()
            and target.stat().st_size == old.get("stored_size")):
        return {**entry, "stored_size": old["stored_size"], "reused": True}
    target.parent.mkdir(parents=True, exist_ok=True)
    compressor = lzma.LZMACompressor(format=lzma.FORMAT_XZ, filters=filters)
    with open(src, "rb") as f, open(target, "wb") as out:
        for block in iter(lambda: f.read(1 << 22), b""):
            out.write(compressor.compress(block))
        out.write(compressor.flush())
    return {**entry, "stored_size": target.stat().st_size}


def restore_files(kit: Path, entries: list[dict], dest: Path) -> list[str]:
    """Every stored file decompressed to dest/<root>/<path>, its size and SHA-256 checked
    against the manifest and its mode set; returns what did not match (empty: all verified)."""
    problems = []
    for e in entries:
        target = dest / e["root"] / e["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        h, size = hashlib.sha256(), 0
        try:
            with lzma.open(kit / e["stored"]) as f, open(target, "wb") as out:
                for block in iter(lambda: f.read(1 << 22), b""):
                    h.update(block)
                    size += len(block)
                    out.write(block)
        except (OSError, lzma.LZMAError) as err:
            problems.append(f"{e['path']}: cannot decompress {e['stored']} ({err})")
            continue
        os.chmod(target, e["mode"])
        if size != e["size"] or h.hexdigest() != e["sha256"]:
            problems.append(f"{e['path']}: {size} bytes, sha256 {h.hexdigest()[:16]}..., "
                            f"the manifest says {e['size']} bytes, {e['sha256'][:16]}...")
    return problems


def wheel_is_pure(name: str) -> bool:
    """py3-none-any (and py2.py3-none-any): installable on any Python; else built for one."""
    return name.endswith("-none-any.whl")


def installable_here(name: str) -> bool:
    """Whether this interpreter can install the wheel file `name` (its tags)."""
    if wheel_is_pure(name):
        return True
    try:
        from packaging.tags import sys_tags
        from packaging.utils import parse_wheel_filename
    except ImportError:
        return f"-cp{sys.version_info[0]}{sys.version_info[1]}-" in name
    here = set(sys_tags())
    return any(t in here for t in parse_wheel_filename(name)[3])


# ----------------------------------------------------------------------------- size and call
def tree_bytes(root: Path = ROOT) -> int:
    """What travels of the working tree: tracked and untracked-not-ignored files."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=root, capture_output=True, check=True).stdout.split(b"\0")
    total = 0
    for n in filter(None, names):
        p = root / os.fsdecode(n)
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def over_limit(parts: dict[str, int], flags: dict[str, str], tree: int,
               limit: int = LIMIT) -> str | None:
    """None when the kit's parts (name -> bytes) fit beside the working tree (`tree` bytes) in
    one call's `limit`; else the refusal, naming what to drop, the largest first: the parts a
    pack flag adds, then those one drops (`flags`: part -> flag, "--no-..."), then the others."""
    total = sum(parts.values()) + tree
    if total <= limit:
        return None
    over = total - limit
    drop, freed = [], 0
    rank = {n: 2 if n not in flags else 1 if flags[n].startswith("--no-") else 0 for n in parts}
    for name in sorted(parts, key=lambda n: (rank[n], -parts[n])):
        if freed >= over:
            break
        how = flags.get(name, "")
        drop.append(f"{name} ({mb(parts[name])}: pack "
                    + (f"with {how})" if how.startswith("--no-") else f"without {how})" if how
                       else "it elsewhere, it is not optional)"))
        freed += parts[name]
    return (f"the kit ({mb(total - tree)}) and the working tree ({mb(tree)}) make {mb(total)}, "
            f"{mb(over)} over the {mb(limit)} one device call carries: drop "
            + ", then ".join(drop))


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def device_call(budget: int = DEFAULT_BUDGET) -> dict:
    """The device tool's `run` arguments that run the kit there."""
    command = f"PYTHONUNBUFFERED=1 python3 benchmarks/gpu_kit.py run --budget {budget}"
    return {"command": command, "carry": [KIT.name], "timeout_s": DEVICE_TIMEOUT}


# ----------------------------------------------------------------------------- pack
def device_packages(record: Path = DEVICE_RECORD) -> set[str]:
    """The device image's Python packages, from KINDS.md's list ("Packages: a, b, ...")."""
    from packaging.utils import canonicalize_name
    m = re.search(r"Packages: ([^\n]+)", record.read_text())
    if not m:
        raise SystemExit(f"{record}: no 'Packages:' list of the device image")
    return {canonicalize_name(p.strip(" .")) for p in m.group(1).split(",")}


def tool_closure(device_has: set[str], roots) -> dict[str, str]:
    """name -> version (as installed here) of the packages `roots` and of what they need on
    CPython 3.12 Linux x86-64, less what the device has and LEAVE_OUT."""
    from importlib import metadata

    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    env = {**default_environment(), "python_version": PYTHON[0], "python_full_version": PYTHON[0] + ".3",
           "sys_platform": "linux", "platform_machine": "x86_64", "extra": ""}
    todo, carry = list(roots), {}
    while todo:
        name = canonicalize_name(todo.pop())
        if name in carry or name in device_has or name in LEAVE_OUT:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{name} is needed on Python {PYTHON[0]} but not installed here: "
                             f"install it (the kit carries the versions installed here)") from None
        carry[name] = dist.version
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate(env):
                todo.append(req.name)
    return dict(sorted(carry.items()))


def pip_download(specs: list[str], dest: Path):
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
           "--python-version", PYTHON[0], "--implementation", PYTHON[1], "-d", str(dest)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run(cmd + specs, check=True)


def wheel_file(folder: Path, project: str) -> Path:
    stem = re.sub(r"[-_.]+", "_", project).lower()
    found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(stem + "-")]
    if len(found) != 1:
        raise SystemExit(f"expected one wheel of {project} in {folder}, found {found}")
    return found[0]


def pack_part(name: str, part: Part, downloads: Path, kit: Path, old: dict) -> list[dict]:
    """The part's files taken out of its wheels (downloaded at its release) and stored."""
    from importlib import metadata
    version = metadata.version(part.version_of)
    pip_download([f"{w}=={version}" for w in part.members], downloads)
    entries = []
    for wheel, patterns in part.members.items():
        with zipfile.ZipFile(wheel_file(downloads, wheel)) as z, tempfile.TemporaryDirectory() as tmp:
            for info in z.infolist():
                if info.is_dir() or not any(fnmatch.fnmatch(info.filename, p) for p in patterns):
                    continue
                src = Path(z.extract(info, tmp))
                src.chmod((info.external_attr >> 16) & 0o777 or 0o644)
                t0 = time.monotonic()
                entries.append(store(src, kit, name, info.filename, old.get((name, info.filename)),
                                     part.root))
                e = entries[-1]
                print(f"  {name}: {info.filename} {mb(e['size'])} -> {mb(e['stored_size'])} "
                      + ("(stored before)" if e.pop("reused", False) else
                         f"({time.monotonic() - t0:.0f} s)"), flush=True)
    return [{**e, "version": version} for e in entries]


def pack(args) -> int:
    kit = KIT
    kit.mkdir(exist_ok=True)
    old_manifest = read_manifest(kit)
    old = {(e["part"], e.get("path")): e
           for e in old_manifest.get("files", []) + old_manifest.get("wheels", [])}
    device_has = device_packages(Path(args.device_record))
    closure = tool_closure(device_has, TOOLS)
    wheel_specs = {"tools": [f"{n}=={v}" for n, v in closure.items()]}
    if args.import_linter:
        linter = tool_closure(device_has | set(closure), [LINTER])
        wheel_specs[LINTER] = [f"{n}=={v}" for n, v in linter.items()]
    if args.cutile:
        wheel_specs["cutile"] = [CUTILE]
    wheels, files = [], []
    with tempfile.TemporaryDirectory(prefix="gpukit-downloads-") as downloads:
        for part, specs in wheel_specs.items():
            folder = Path(downloads) / part
            pip_download(specs, folder)
            for w in sorted(folder.glob("*.whl")):
                plain = stored_zip(w, folder / "stored" / w.name)
                entry = store(plain, kit, part, w.name, old.get((part, w.name)), "wheels", XZ)
                entry.pop("reused", None)
                wheels.append({**entry, "pure": wheel_is_pure(w.name), "download_size": w.stat().st_size})
        for name, part in PARTS.items():
            if getattr(args, part.flag[2:].replace("-", "_")) == part.flag.startswith("--no-"):
                continue
            files += pack_part(name, part, Path(downloads), kit, old)
    kept = {e["stored"] for e in files + wheels} | {"manifest.json", "side_by_side.py"}
    for stale in [p for p in kit.rglob("*") if not p.is_dir()]:
        if str(stale.relative_to(kit)) not in kept:         # what an earlier pack left
            stale.unlink()
    for folder in sorted((p for p in kit.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    src = Path(args.side_by_side)
    shutil.copy2(src, kit / "side_by_side.py")
    manifest = {"made": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(),
                "leave_out": LEAVE_OUT, "wheels": wheels, "files": files,
                "links": [{"root": "tileiras", "path": NVJITLINK, "from_device": NVJITLINK}]
                if not args.no_tileiras and not args.nvjitlink else []}
    (kit / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return report_pack(kit, manifest, src)


def report_pack(kit: Path, manifest: dict, side_by_side: Path) -> int:
    """The size breakdown, the size check, and (when it fits) the device call."""
    parts: dict[str, int] = {}
    for w in manifest["wheels"]:
        parts[w["part"] + " wheels"] = parts.get(w["part"] + " wheels", 0) + w["stored_size"]
    for e in manifest["files"]:
        parts[e["part"]] = parts.get(e["part"], 0) + e["stored_size"]
    parts["manifest, side_by_side.py"] = ((kit / "manifest.json").stat().st_size
                                          + (kit / "side_by_side.py").stat().st_size)
    pure = [w for w in manifest["wheels"] if w["pure"]]
    print(f"\nkit {kit} (commit {manifest['commit'][:12]}): {len(manifest['wheels'])} wheels "
          f"({len(pure)} pure-Python, {len(manifest['wheels']) - len(pure)} built for CPython "
          f"{PYTHON[0]} or abi3)")
    for w in manifest["wheels"]:
        print(f"  {w['path']:<76} {w['download_size'] / 1e6:5.2f} -> {w['stored_size'] / 1e6:5.2f} MB  "
              f"{'pure' if w['pure'] else 'binary'}")
    print(f"  side_by_side.py copied from {side_by_side}")
    print("\n| part | bytes carried |\n|---|---:|")
    for name, n in parts.items():
        print(f"| {name} | {mb(n)} |")
    tree = tree_bytes()
    print(f"| (working tree) | {mb(tree)} |\n| total | {mb(sum(parts.values()) + tree)} "
          f"of {mb(LIMIT)} |")
    flags = {**{p: PARTS[p].flag for p in PARTS}, "cutile wheels": "--cutile",
             f"{LINTER} wheels": f"--{LINTER}"}
    refused = over_limit(parts, flags, tree)
    if refused:
        print(f"\nrefused: {refused}", file=sys.stderr)
        return 2
    call = device_call()
    print("\nThe device call (the device tool's `run`), then `give_back`:\n" + json.dumps(call))
    return 0


def stored_zip(wheel: Path, dest: Path) -> Path:
    """The wheel rewritten without compression, for xz to compress far better than deflate did
    (RECORD's hashes are of the files: it stays the same valid wheel)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            info.compress_type = zipfile.ZIP_STORED
            zout.writestr(info, data)
    return dest


def read_manifest(kit: Path) -> dict:
    try:
        return json.loads((kit / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def commit() -> str:
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return r.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


# ----------------------------------------------------------------------------- cli
def cli(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="build .gpukit/ here (network)")
    p.add_argument("--cutile", action="store_true", help=f"add {CUTILE} (the cuTile columns)")
    p.add_argument(f"--{LINTER}", action="store_true", help="add import-linter and grimp "
                                                            "(tests/test_layers.py)")
    p.add_argument("--nvrtc", action="store_true", help=PARTS["nvrtc"].why)
    p.add_argument("--nvjitlink", action="store_true", help=PARTS["nvjitlink"].why)
    p.add_argument("--tileirdisasm", action="store_true", help=PARTS["tileirdisasm"].why)
    p.add_argument("--no-tileiras", action="store_true", help="leave out " + PARTS["tileiras"].why)
    p.add_argument("--device-record", default=str(DEVICE_RECORD),
                   help="the file listing the device image's packages")
    p.add_argument("--side-by-side", default=str(SIDE_BY_SIDE))
    r = sub.add_parser("run", help="on the device machine: restore, then measure")
    r.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds for everything")
    r.add_argument("--dest", help="where the kit is restored (default /opt/gpukit; with --rehearse a "
                                  "new temporary folder)")
    r.add_argument("--only", help="comma-separated step names to run (restore always runs)")
    r.add_argument("--suite", default="tests", help="what the whole-suite step gives pytest")
    r.add_argument("--speed-tool", choices=("gpu", "side_by_side"), default="gpu",
                   help="the speed table by benchmarks/gpu.py (a child per problem) or by "
                        "BASELINE.md's side_by_side.py (one process)")
    r.add_argument("--rehearse", action="store_true",
                   help="without a GPU: every GPU step on tests/fake_driver.py's sm_90 device (the "
                        "CPU backend) at small sizes; restore, environment and the GPU steps unless --only "
                        "names others")
    s = sub.add_parser("restore", help="unpack and verify the kit (run's first step)")
    s.add_argument("--dest", default="/opt/gpukit")
    sub.add_parser("describe", help="the machine, the versions, tilepy's doctor (run's second step)")
    args = ap.parse_args(argv)
    if args.cmd == "pack":
        return pack(args)
    import gpu_kit_steps as steps
    return {"run": steps.run, "restore": steps.restore, "describe": steps.describe}[args.cmd](args)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(cli())
