"""`gpu_kit.py run`: on the device machine, the kit restored and the measurements run in
priority order, each step a process group under its own cap, inside one budget.

Steps (names for --only), in order:
  restore        the kit: wheels into DEST/site, binaries decompressed and verified
  environment    nvidia-smi, versions, NVRTC and tileiras as tilepy finds them, `tilepy doctor`
  sm90a-check    TILEPY_SM90A=1 (the wgmma/TMA class, never run on a GPU before): the tutorial
                 and cuTile-suite matmul and attention cases on the GPU against the CPU backend
  speed-sm90a-0  the speed table (issue 28): every problem, tilepy (NVRTC, tileiras), cuTile,
                 Triton, torch; each output checked before it is timed
  speed-sm90a-1  the same with TILEPY_SM90A=1 (issue 29), the matmul and attention problems
  doctor-gpu     `python -m tilepy doctor --gpu`: validation, fuzz batches, the speed table
  pytest-gpu     the tests marked gpu
  suite          the whole suite, -n 16, a per-test timeout when pytest-timeout is there
  tileiras       tileiras' test files, and a vector add through tileiras on every backend
`--rehearse` (here, without a GPU) runs the GPU steps on tests/fake_driver.py's sm_90 device:
a sitecustomize.py on their PYTHONPATH puts the fake in the driver seam's place in every Python
process they start (as `pytest --as-gpu-machine` does), launches run the CPU build of the same
C++ (TILEPY_CPU_MODE's mode), the speed tables at 1/REHEARSE_SCALE of the sizes; the tests that
need a real driver (needs_real_gpu) skip, and torch, cuTile and Triton have no CUDA device.
A GPU step on a machine without a GPU says so in one line; a step that overruns its cap (or
what is left of the budget) is killed with its process group, and the next one runs; a step is
not started with less than its `least` seconds left, and a later, shorter one may still run.
After every step $OUT/summary.md (one line per step, the speed tables, the failing tests) and
$OUT/logs.tar.xz (every step's whole log and JSON) are rewritten, so a call stopped at its limit
still brings back what was done.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpu_kit import KIT, ROOT, installable_here, read_manifest, restore_files

RESERVE = 8                  # seconds kept for the last summary and archive
PY = sys.executable
SM90A_CASES = "tutorial:matmul,tutorial:attention,cutile:matmul_f16,cutile:matmul_persistent"
REHEARSE_SCALE = 32          # --rehearse: the speed tables' sizes divided by this
# --rehearse: what a step cannot show on the fake driver (said beside its outcome).
REHEARSAL_NOTES = {
    "speed-sm90a-0": "rehearsal: torch has no CUDA: tilepy took its CPU tensors for the fake GPU's, "
                     "torch ran on the CPU, cuTile and Triton not at all; not GPU timings",
    "speed-sm90a-1": "rehearsal: as speed-sm90a-0",
    "doctor-gpu": "rehearsal: its speed table is at full size (doctor --gpu has no size knob), so "
                  "the cap may end it there",
    "pytest-gpu": "rehearsal: the tests that need a real driver (needs_real_gpu) skip",
}
# --rehearse: put first on the GPU steps' PYTHONPATH, run by every Python process they start.
FAKE_GPU_SITE = """\
# gpu_kit.py run --rehearse: the fake sm_90 driver of tests/fake_driver.py in the seam's place.
import atexit
import os
import sys
import types
sys.path.append({tests!r})
from fake_driver import FakeDriver, torch_on_the_fake_gpu
from tilepy.cuda_c.targets import defines_wgmma

_fake = FakeDriver(devices=1).__enter__()      # in place for the process's life (`with` unclosed)


@atexit.register
def _said():
    if _fake.launches:
        wgmma = sum(map(defines_wgmma, _fake.sources.values()))
        print(f"[fake GPU] {{len(_fake.launches)}} launches of {{len(_fake.sources)}} kernels, "
              f"{{wgmma}} in the sm_90a (wgmma) class", file=sys.stderr, flush=True)


if os.environ.get("GPUKIT_TORCH_ON_FAKE"):     # the speed steps: torch's CPU tensors on the fake
    import torch
    torch_on_the_fake_gpu(types.SimpleNamespace(setattr=setattr), torch)
"""


@dataclass
class Step:
    name: str
    commands: list               # argv lists, run one after the other inside the cap
    cap: float                   # seconds
    needs_gpu: bool = False
    env: dict = field(default_factory=dict)
    least: float = 10            # not started with less time than this left
    digest: object = None        # (log text, logs folder) -> Markdown for the summary
    note: str = ""               # said beside its outcome in the summary (--rehearse: what is fake)


@dataclass
class Outcome:
    name: str
    status: str                  # ok | failed | timed out | no GPU | not run
    seconds: float
    note: str = ""
    digest: str = ""


# ----------------------------------------------------------------------------- the runner
def stop_group(proc: subprocess.Popen, grace: float = 5):
    """SIGTERM to the step's process group (the process and what it started), SIGKILL to what
    is left of it after `grace` seconds."""
    signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def signal_group(pgid: int, sig: int):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:           # nothing of the group is left
        pass


def run_step(step: Step, cap: float, log: Path, env: dict) -> Outcome:
    """The step's commands in turn, each a new process group, all within `cap` seconds."""
    t0 = time.monotonic()
    failed = []
    with open(log, "w") as out:
        for argv in step.commands:
            out.write(f"$ {shlex.join(argv)}\n")
            out.flush()
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                    env={**env, **step.env}, start_new_session=True)
            try:
                rc = proc.wait(timeout=max(0.1, cap - (time.monotonic() - t0)))
            except subprocess.TimeoutExpired:
                stop_group(proc)
                out.write(f"\n[gpu_kit] killed at the step's cap of {cap:.0f} s\n")
                return Outcome(step.name, "timed out", time.monotonic() - t0,
                               f"killed at its cap of {cap:.0f} s")
            stop_group(proc, grace=1)                    # what the command left running
            if rc != 0:
                failed.append(f"exit {rc}: {' '.join([Path(argv[0]).name, *argv[1:4]])}")
    return Outcome(step.name, "failed" if failed else "ok", time.monotonic() - t0, "; ".join(failed))


def run_steps(steps: list[Step], budget: float, logs: Path, env: dict, has_gpu: bool,
              after=lambda outcomes: None, start: float | None = None) -> list[Outcome]:
    """Each step in order under min(its cap, what is left of the budget); `after(outcomes)`
    once each step is done (the summary and the archive)."""
    start = time.monotonic() if start is None else start
    outcomes = []
    for step in steps:
        left = budget - (time.monotonic() - start) - RESERVE
        log = logs / f"{len(outcomes):02d}-{step.name}.log"
        if step.needs_gpu and not has_gpu:
            done = Outcome(step.name, "no GPU", 0, "not run: no NVIDIA GPU on this machine")
        elif left < step.least:
            done = Outcome(step.name, "not run", 0, f"{max(left, 0):.0f} s of the budget left")
        else:
            done = run_step(step, min(step.cap, left), log, env)
            if step.digest is not None and log.exists():
                try:
                    done.digest = step.digest(log.read_text(errors="replace"), logs)
                except Exception as e:        # a digest never stops the run
                    done.digest = f"(no digest: {type(e).__name__}: {e})"
        if step.note and done.status not in ("no GPU", "not run"):
            done.note = "; ".join(filter(None, [done.note, step.note]))
        outcomes.append(done)
        print(f"[gpu_kit] {done.name}: {done.status} ({done.seconds:.0f} s) {done.note}", flush=True)
        after(outcomes)
    return outcomes


# ----------------------------------------------------------------------------- digests
def pytest_digest(text: str, logs: Path) -> str:
    """The pytest summary line and the failing tests' names."""
    counts = [ln.strip("= ") for ln in text.splitlines()
              if re.search(r"\d+ (passed|failed|error|skipped)", ln) and " in " in ln]
    failing = sorted({m.group(0) for m in re.finditer(r"^(FAILED|ERROR) \S+", text, re.M)})
    lines = [f"pytest: {counts[-1] if counts else 'no summary line (stopped before the end?)'}"]
    lines += [f"- {f}" for f in failing[:200]]
    if len(failing) > 200:
        lines.append(f"- ... and {len(failing) - 200} more (logs.tar.xz)")
    return "\n".join(lines)


def table_digest(markdown_name: str):
    """The Markdown table benchmarks/gpu.py wrote (else the speed rows its log printed), the rows
    not ok, and its last line (else how many validation rows were ok before it stopped)."""
    def digest(text: str, logs: Path) -> str:
        table = logs / markdown_name
        rows = [ln.strip() for ln in text.splitlines() if re.match(r"\s+(speed|tutorial|cutile|fuzz) ", ln)]
        bad = [ln for ln in rows if not re.search(r"\bok\b", ln)]
        speed = [ln for ln in rows if ln.startswith("speed ")]
        checked = [ln for ln in rows if ln not in speed]
        shown = table.read_text() if table.exists() else "\n".join(speed)
        last = [ln for ln in text.splitlines() if re.match(r"(validation|speed): \d+ of \d+ ", ln)]
        end = last[-1:] or [f"(no last line) {sum(ln not in bad for ln in checked)} of {len(checked)} "
                            f"validation rows ok before it stopped"]
        return "\n".join(([shown] if shown else []) + (["not ok:"] + [f"- {b}" for b in bad] if bad else [])
                         + end)
    return digest


def tileiras_digest(text: str, logs: Path) -> str:
    """The tests' result, and what `tilepy doctor` says of tileiras and of its GPU vector add."""
    said = [ln.strip() for ln in text.splitlines() if re.match(r"\s+(tileiras|companions|GPU):", ln)]
    return "\n".join([pytest_digest(text, logs), ""] + [f"doctor: {ln}" for ln in said])


def side_by_side_digest(text: str, logs: Path) -> str:
    return "\n".join(ln for ln in text.splitlines() if ln.startswith("|") or "FAILED" in ln)


def fake_gpu_digest(digest):
    """--rehearse: `digest`, then what the fake driver's processes said they ran."""
    def both(text: str, logs: Path) -> str:
        said = [re.findall(r"\d+", ln) for ln in text.splitlines() if ln.startswith("[fake GPU] ")]
        launches, kernels, wgmma = (sum(int(n[i]) for n in said) for i in range(3))
        return (digest(text, logs) + f"\nfake GPU: {launches} launches of {kernels} kernels "
                f"({wgmma} in the sm_90a wgmma class) in {len(said)} process(es)")
    return both


def describe_digest(text: str, logs: Path) -> str:
    return "\n".join(ln[len("kit: "):] for ln in text.splitlines() if ln.startswith("kit: "))


def restore_digest(text: str, logs: Path) -> str:
    return "\n".join(ln for ln in text.splitlines() if ln.startswith(("restored", "PROBLEM", "not ")))


# ----------------------------------------------------------------------------- the steps
def gpu_test_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")
                  if "pytest.mark.gpu" in p.read_text(errors="replace"))


def pytest_argv(*args: str, workers: int = 0) -> list[str]:
    return [PY, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "-n", str(workers), *args]


def speed_argv(tool: str, logs: Path, tag: str, problems: str = "", scale: int = 1) -> list[str]:
    """The speed table by benchmarks/gpu.py (a child process per problem: a fault loses one
    row) or by BASELINE.md's side_by_side.py (one process; the kit's copy, SBS_ONLY, $OUT)."""
    if tool == "side_by_side":
        (logs / tag).mkdir(exist_ok=True)                  # its $OUT: side_by_side.json
        return [PY, str(KIT / "side_by_side.py")]
    return ([PY, "benchmarks/gpu.py", "--no-validation", "--json", str(logs / f"{tag}.json"),
             "--markdown", str(logs / f"{tag}.md")] + (["--problems", problems] if problems else [])
            + (["--scale", str(scale)] if scale != 1 else []))


def restore_step(dest: Path) -> Step:
    return Step("restore", [[PY, "benchmarks/gpu_kit.py", "restore", "--dest", str(dest)]], 120, least=5,
                digest=restore_digest)


def steps(args, logs: Path) -> list[Step]:
    """The measurements after the restore, in priority order (the module docstring)."""
    workers = min(16, os.cpu_count() or 1)
    timeout = ["--timeout=180"] if module_exists("pytest_timeout") else []
    by_sbs = args.speed_tool == "side_by_side"
    scale = REHEARSE_SCALE if getattr(args, "rehearse", False) else 1

    def speed(tag, sm90a, problems=""):
        env = {"TILEPY_SM90A": sm90a, "OUT": str(logs / tag), "SBS_SCALE": str(scale)}
        if problems:
            env["SBS_ONLY"] = problems
        return Step(tag, [speed_argv(args.speed_tool, logs, tag, problems, scale)],
                    180 if not problems else 150,
                    True, env, least=30, digest=side_by_side_digest if by_sbs else table_digest(f"{tag}.md"))
    return [
        Step("environment", [[PY, "benchmarks/gpu_kit.py", "describe"]], 90, least=5,
             digest=describe_digest),
        Step("sm90a-check", [[PY, "benchmarks/gpu.py", "--no-speed", "--fuzz-batches", "0", "--cases",
                              SM90A_CASES, "--json", str(logs / "sm90a-check.json"), "--markdown", ""]],
             90, True, {"TILEPY_SM90A": "1"}, digest=table_digest("sm90a-check.md")),
        speed("speed-sm90a-0", "0"),
        speed("speed-sm90a-1", "1", "matmul,attention"),
        Step("doctor-gpu", [[PY, "-m", "tilepy", "doctor", "--gpu", "--json", str(logs / "doctor-gpu.json"),
                             "--markdown", str(logs / "doctor-gpu.md")]], 200, True, least=30,
             digest=table_digest("doctor-gpu.md")),
        Step("pytest-gpu", [pytest_argv("-m", "gpu", *gpu_test_files())], 90, True, least=20,
             digest=pytest_digest),
        Step("suite", [pytest_argv(*timeout, *shlex.split(args.suite), workers=workers)], 240, least=30,
             digest=pytest_digest),
        Step("tileiras", [pytest_argv("tests/test_tileiras.py", "tests/test_tileiras_launch.py",
                                      "tests/test_tileiras_broken.py", workers=min(4, workers)),
                          ["env", "TILEPY_GPU_COMPILER=tileiras", PY, "-m", "tilepy", "doctor"]], 90,
             least=15, digest=tileiras_digest),
    ]


def module_exists(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None


def step_env(dest: Path, kit: dict) -> dict:
    """The environment every step runs in (set before the restore makes DEST): the restored
    wheels, tileiras on PATH, the kit's NVRTC first when it has one (tilepy takes the first
    nvidia/cu13 folder in sorted order, and /opt/gpukit sorts before the device's
    /opt/torch/.venv), a fresh tilepy cache shared by the steps."""
    nvrtc = [str(dest / "nvrtc")] if any(e["root"] == "nvrtc" for e in kit.get("files", [])) else []
    path = [str(ROOT), *nvrtc, str(dest / "site")]
    old = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path + ([old] if old else [])),
            "PATH": os.pathsep.join([str(dest / "bin"), str(dest / "site" / "bin"),   # + filecheck
                                     os.environ.get("PATH", "")]),
            "TILEPY_CACHE_DIR": str(dest / "cache"), "PYTHONUNBUFFERED": "1"}


def rehearsal(todo: list[Step], only: str | None, env: dict, site: Path) -> tuple[list[Step], str]:
    """--rehearse: the GPU steps (and restore, environment; the others when `only` names them)
    with the fake driver (its sitecustomize.py written to `site`) first on their PYTHONPATH
    (before `env`'s); and what the summary says."""
    (site / "sitecustomize.py").write_text(FAKE_GPU_SITE.format(tests=str(ROOT / "tests")))
    path = os.pathsep.join([str(site), env["PYTHONPATH"]])
    env["TILEPY_CACHE_DIR"] = str(site / "cache")         # empty, as on a fresh device machine
    kept = []
    for step in todo:
        if step.needs_gpu:
            step.cap = min(step.cap, 150)
            step.note = REHEARSAL_NOTES.get(step.name, "")
        if step.name == "pytest-gpu":        # the tests' own fake (their subprocesses see none)
            step.commands = [[*argv, "--as-gpu-machine"] for argv in step.commands]
        elif step.needs_gpu:
            step.env = {**step.env, "PYTHONPATH": path}
            step.digest = fake_gpu_digest(step.digest)
        if step.name.startswith("speed"):
            step.env["GPUKIT_TORCH_ON_FAKE"] = "1"
        if step.needs_gpu or step.name in ("restore", "environment") or only:
            kept.append(step)
    mode = os.environ.get("TILEPY_CPU_MODE") or "fast (tilepy's default)"
    return kept, (f"rehearsal: no GPU; the GPU steps on tests/fake_driver.py's sm_90 device (the CPU "
                  f"backend, {mode} mode), speed sizes / {REHEARSE_SCALE}")


def has_gpu() -> bool:
    return "GPU " in shell(["nvidia-smi", "-L"])


# ----------------------------------------------------------------------------- restore, describe
def restore(args) -> int:
    """The kit into DEST: files verified, nvJitLink linked from the device when not carried,
    tileiras on DEST/bin, the wheels this interpreter can install into DEST/site."""
    dest = Path(args.dest)
    manifest = read_manifest(KIT)
    if not manifest:
        print(f"PROBLEM: no {KIT}/manifest.json: was `gpu_kit.py pack` run and .gpukit carried?")
        return 1
    t0 = time.monotonic()
    problems = restore_files(KIT, manifest["files"] + manifest["wheels"], dest)
    for link in manifest.get("links", []):
        problems += link_from_device(dest / link["root"] / link["path"], link["from_device"], dest)
    (dest / "bin").mkdir(parents=True, exist_ok=True)
    for tool in ("tileiras", "tileirdisasm"):
        real = dest / "tileiras" / "nvidia" / "cu13" / "bin" / tool
        if real.exists():
            (dest / "bin" / tool).unlink(missing_ok=True)
            (dest / "bin" / tool).symlink_to(real)
    print(f"restored {len(manifest['files'])} files from the kit of {manifest['made']} "
          f"(commit {manifest['commit'][:12]}) in {time.monotonic() - t0:.1f} s, "
          f"{'every size and sha256 as in the manifest' if not problems else 'with problems'}")
    problems += install_wheels([dest / w["root"] / w["path"] for w in manifest["wheels"]], dest / "site")
    for why in manifest.get("leave_out", {}).items():
        print(f"not carried: {why[0]}: {why[1]}")
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


def link_from_device(target: Path, rel: str, dest: Path) -> list[str]:
    """`target` made a link to this machine's own <site-packages>/<rel> (a wheel of its python,
    outside DEST)."""
    import importlib.util
    spec = importlib.util.find_spec("nvidia")
    for d in sorted(spec.submodule_search_locations or []) if spec else []:
        found = Path(d).parent / rel
        if found.is_file() and dest not in found.parents:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            target.symlink_to(found)
            print(f"restored {target} as a link to the device's {found}")
            return []
    return [f"no {rel} on this machine to link at {target}: tileiras may not run"]


def install_wheels(wheels: list[Path], site: Path) -> list[str]:
    """The wheels this interpreter can install into `site`; the others are named."""
    problems, ok, skipped = [], [], []
    for path in wheels:
        if not path.is_file():
            problems.append(f"{path}: not restored")
        elif installable_here(path.name):
            ok.append(str(path))
        else:
            skipped.append(path.name)
    if skipped:
        print(f"not installable on Python {sys.version.split()[0]} (built for another): "
              + ", ".join(skipped))
    if ok:
        r = subprocess.run([PY, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                            "--no-cache-dir", "--upgrade", "--target", str(site), *ok])
        if r.returncode:
            problems.append(f"pip install --target {site} failed (exit {r.returncode})")
        else:
            print(f"restored {len(ok)} wheels into {site}")
    return problems


def describe(args) -> int:
    """What the machine is: lines starting "kit: " go into the summary."""
    smi = shell(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm",
                 "--format=csv,noheader"])
    print(f"kit: GPU: {smi or 'none (no nvidia-smi or no GPU)'}")
    print(f"kit: Python {sys.version.split()[0]} at {sys.executable}; {os.cpu_count()} CPUs")
    for name in ("numpy", "torch", "triton", "cuda.core", "cuda.bindings", "cuda.tile"):
        print(f"kit: {name} {version_of(name)}", flush=True)
    from tilepy.launch import tileiras, toolchain
    try:
        tc = toolchain.info()
        print(f"kit: NVRTC {tc.nvrtc_version} ({tc.nvrtc_lib}), headers {tc.runtime_version} "
              f"({tc.include_dir})")
    except Exception as e:
        print(f"kit: NVRTC: {type(e).__name__}: {e}")
    tool = tileiras.find_tileiras()
    print(f"kit: tileiras {tileiras.tileiras_version() if tool else '-'} ({tool}): "
          f"{tileiras.unusable() or 'usable'}")
    print(f"kit: working tree {read_manifest(KIT).get('commit', '?')}")
    sys.stdout.flush()
    for argv in (["nvidia-smi"], [PY, "-m", "pip", "list"], [PY, "-m", "tilepy", "doctor"]):
        print(f"\n$ {shlex.join(argv)}", flush=True)
        try:
            subprocess.run(argv)
        except OSError as e:
            print(f"not run: {e}", flush=True)
    return 0


def shell(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return r.stdout.strip() if r.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def version_of(module: str) -> str:
    import importlib
    try:
        return str(getattr(importlib.import_module(module), "__version__", "?"))
    except Exception as e:               # not installed, or no driver it accepts
        return f"not importable ({type(e).__name__}: {str(e)[:120]})"


# ----------------------------------------------------------------------------- run
def run(args) -> int:
    start = time.monotonic()
    out = Path(os.environ.get("OUT") or ROOT / "gpukit-out")
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="gpukit-logs-"))
    dest = Path(args.dest or (tempfile.mkdtemp(prefix="gpukit-dest-") if args.rehearse else "/opt/gpukit"))
    gpu, kit = has_gpu(), read_manifest(KIT)
    seen = "yes" if gpu else "none found (nvidia-smi -L)"
    todo = [restore_step(dest)] + steps(args, logs)
    env = step_env(dest, kit)
    scratch = Path(tempfile.mkdtemp(prefix="gpukit-fake-gpu-")) if args.rehearse else None
    if scratch:
        todo, seen = rehearsal(todo, args.only, env, scratch)
        gpu = True
    header = (f"# GPU kit run, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
              f"budget {args.budget:.0f} s; GPU: {seen}; "
              f"kit of {kit.get('made', '?')}, commit {kit.get('commit', '?')}\n")
    if args.only:
        wanted = set(args.only.split(",")) | {"restore"}
        todo = [s for s in todo if s.name in wanted]

    def after(outcomes):
        write_summary(out / "summary.md", header, outcomes, time.monotonic() - start)
        archive(logs, out / "logs.tar.xz")
    outcomes = run_steps(todo, args.budget, logs, env, gpu, after, start)
    if scratch:                          # the fake's folder and its cache; the kit restored (0.26 GB)
        shutil.rmtree(scratch, ignore_errors=True)      # into a temporary folder
        if not args.dest:
            shutil.rmtree(dest, ignore_errors=True)
    print("\n" + (out / "summary.md").read_text())
    return 0 if all(o.status in ("ok", "no GPU") for o in outcomes) else 1


def write_summary(path: Path, header: str, outcomes: list[Outcome], used: float):
    lines = [header, f"{used:.0f} s used\n", "| step | status | seconds | note |", "|---|---|---:|---|"]
    lines += [f"| {o.name} | {o.status} | {o.seconds:.0f} | {o.note} |" for o in outcomes]
    for o in outcomes:
        if o.digest:
            lines += ["", f"## {o.name}", "", o.digest]
    tmp = path.with_name(path.name + ".part")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def archive(folder: Path, path: Path):
    tmp = path.with_name(path.name + ".part")
    with tarfile.open(tmp, "w:xz") as tar:
        tar.add(folder, arcname="logs")
    os.replace(tmp, path)
