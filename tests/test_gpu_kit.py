"""benchmarks/gpu_kit.py, what a lent GPU session runs as its one command, checked here without a
GPU or network: the step runner keeps its order and budget (a step past its cap is killed with
what it started, and the next one runs), the kit's files come back as packed or are named, the
size check names what to drop, and the device call fits the device tool's limits."""
import lzma
import os
import sys
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))
import gpu_kit  # noqa: E402
import gpu_kit_steps as ks  # noqa: E402

PY = sys.executable
MB = 10 ** 6


def gone(pid: int, wait: float = 5) -> bool:
    """The process ended (a zombie nobody reaped yet counts as ended)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_a_step_past_its_cap_is_killed_with_its_children_and_the_next_one_runs(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    sleeper = ("import subprocess, sys, time; "
               "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
               f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    steps = [ks.Step("sleepy", [[PY, "-c", sleeper]], cap=1.5, least=0),
             ks.Step("next", [[PY, "-c", "print('ran')"], [PY, "-c", "raise SystemExit(3)"]], cap=30,
                     least=0, digest=lambda text, logs: text.splitlines()[1]),
             ks.Step("gpu-only", [[PY, "-c", "pass"]], cap=30, needs_gpu=True, least=0),
             ks.Step("late", [[PY, "-c", "pass"]], cap=30, least=1000)]
    seen = []
    t0 = time.monotonic()
    out = ks.run_steps(steps, budget=120, logs=tmp_path, env=dict(os.environ), has_gpu=False,
                       after=lambda done: seen.append([o.name for o in done]))
    assert [(o.name, o.status) for o in out] == [("sleepy", "timed out"), ("next", "failed"),
                                                 ("gpu-only", "no GPU"), ("late", "not run")]
    assert out[0].seconds < 8 and time.monotonic() - t0 < 15
    assert "killed at the step's cap of 2 s" in (tmp_path / "00-sleepy.log").read_text()
    assert gone(int(pidfile.read_text())), "the killed step's own child still runs"
    assert out[1].digest == "ran" and out[1].note.startswith("exit 3: ")   # both commands ran
    assert "no NVIDIA GPU" in out[2].note and "left" in out[3].note
    assert seen == [["sleepy"], ["sleepy", "next"], ["sleepy", "next", "gpu-only"],
                    ["sleepy", "next", "gpu-only", "late"]]


def test_the_budget_caps_a_step_below_its_own_cap(tmp_path):
    step = ks.Step("long", [[PY, "-c", "import time; time.sleep(60)"]], cap=60, least=0)
    out = ks.run_steps([step], budget=ks.RESERVE + 1.0, logs=tmp_path, env=dict(os.environ),
                       has_gpu=True)
    assert out[0].status == "timed out" and out[0].seconds < 8 and "cap of 1 s" in out[0].note


def test_the_steps_come_in_the_issues_priority_order(tmp_path):
    args = SimpleNamespace(speed_tool="gpu", suite="tests")
    steps = ks.steps(args, tmp_path)
    assert [s.name for s in steps] == ["environment", "sm90a-check", "speed-sm90a-0", "speed-sm90a-1",
                                       "doctor-gpu", "pytest-gpu", "suite", "tileiras"]
    by_name = {s.name: s for s in steps}
    assert by_name["sm90a-check"].env["TILEPY_SM90A"] == "1"           # its check before its speed
    assert by_name["speed-sm90a-1"].env["TILEPY_SM90A"] == "1"
    assert not by_name["suite"].needs_gpu and by_name["doctor-gpu"].needs_gpu
    assert "tests/test_gpu.py" in by_name["pytest-gpu"].commands[0]


def test_a_stored_file_comes_back_verified_or_is_named(tmp_path):
    kit, dest, src = tmp_path / "kit", tmp_path / "dest", tmp_path / "tool"
    src.write_bytes(os.urandom(2048) + bytes(30000))
    src.chmod(0o755)
    entry = gpu_kit.store(src, kit, "fake", "nvidia/cu13/bin/tool")
    stored = kit / entry["stored"]
    assert entry["stored_size"] == stored.stat().st_size < entry["size"]
    assert gpu_kit.restore_files(kit, [entry], dest) == []
    back = dest / "fake" / "nvidia/cu13/bin/tool"
    assert back.read_bytes() == src.read_bytes() and back.stat().st_mode & 0o777 == 0o755
    mtime = stored.stat().st_mtime_ns
    again = gpu_kit.store(src, kit, "fake", "nvidia/cu13/bin/tool", old=entry)
    assert again.pop("reused") and again == entry
    assert stored.stat().st_mtime_ns == mtime                          # not compressed again
    stored.write_bytes(lzma.compress(b"another binary", format=lzma.FORMAT_XZ))
    [why] = gpu_kit.restore_files(kit, [entry], dest)
    assert why.startswith("nvidia/cu13/bin/tool: 14 bytes, sha256 ") and "the manifest says" in why
    stored.write_bytes(b"not xz at all")
    [why] = gpu_kit.restore_files(kit, [entry], dest)
    assert "cannot decompress" in why


def test_a_wheel_is_carried_uncompressed_inside_xz_and_stays_the_same_wheel(tmp_path):
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("demo/__init__.py", "x = 1\n" * 200)
        z.writestr("demo-1.0.dist-info/RECORD", "demo/__init__.py,,\n")
    plain = gpu_kit.stored_zip(wheel, tmp_path / "plain" / wheel.name)
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(plain) as b:
        def files(z):
            return [(i.filename, z.read(i)) for i in z.infolist()]
        assert files(a) == files(b)
        assert {i.compress_type for i in b.infolist()} == {zipfile.ZIP_STORED}
    assert gpu_kit.wheel_is_pure(wheel.name) and gpu_kit.installable_here(wheel.name)
    assert not gpu_kit.wheel_is_pure("grimp-3.20-cp312-cp312-manylinux2014_x86_64.whl")


def test_the_size_check_refuses_naming_what_to_drop():
    flags = {"tileiras": "--no-tileiras", "nvrtc": "--nvrtc", "cutile wheels": "--cutile"}
    fits = {"tileiras": 57 * MB, "tools wheels": 5 * MB, "cutile wheels": MB // 2}
    assert gpu_kit.over_limit(fits, flags, tree=4 * MB) is None
    why = gpu_kit.over_limit({**fits, "nvrtc": 30 * MB}, flags, tree=4 * MB)
    assert "over the 67.1 MB one device call carries: drop nvrtc (30.0 MB: pack without --nvrtc)" in why
    assert "tileiras" not in why.split("drop")[1]
    why = gpu_kit.over_limit({**fits, "tools wheels": 9 * MB}, flags, tree=4 * MB)
    assert why.endswith("drop cutile wheels (0.5 MB: pack without --cutile), "   # what a flag added,
                        "then tileiras (57.0 MB: pack with --no-tileiras)")      # then what one drops
    why = gpu_kit.over_limit({"tools wheels": 70 * MB}, flags, tree=0)
    assert "tools wheels (70.0 MB: pack it elsewhere, it is not optional)" in why


def test_the_device_call_fits_the_tools_limits_and_carries_the_ignored_kit():
    call = gpu_kit.device_call()
    assert len(call["command"]) <= gpu_kit.COMMAND_LIMIT
    assert call["carry"] == [".gpukit"] and gpu_kit.KIT.name == ".gpukit"
    assert gpu_kit.DEFAULT_BUDGET + 30 <= call["timeout_s"] <= 600
    assert f"run --budget {gpu_kit.DEFAULT_BUDGET}" in call["command"]
    ignores = (gpu_kit.ROOT / ".gitignore").read_text().splitlines()
    assert ".gpukit/" in ignores, ".gpukit/ must be ignored: it travels as carry, not in the tree"


def test_the_speed_steps_name_their_problems_to_benchmarks_gpu():
    import gpu
    names = [p.name for p in gpu.problems()]
    picked = [names[i] for i in gpu.speed_problems("matmul,attention")]
    assert picked and all(n.startswith(("matmul", "attention")) for n in picked)
    assert len(picked) == sum(n.startswith(("matmul", "attention")) for n in names)
    assert gpu.speed_problems(None) is None


class Parsed(Exception):
    """What the patched ArgumentParser.parse_args raises once a command line parsed."""


def test_every_step_command_line_parses_with_its_programs_own_options(tmp_path, monkeypatch):
    """Each step's argv (with and without --rehearse) is parsed by the argparse of the program it
    runs, stopped right after parsing: a flag a step passes that the program lacks fails here,
    not in a lent GPU's fifteen minutes."""
    import argparse

    import gpu

    import tilepy.__main__ as tilepy_main
    programs = {"benchmarks/gpu.py": gpu.cli, "benchmarks/gpu_kit.py": gpu_kit.cli,
                "tilepy": tilepy_main.main}
    real = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        raise Parsed(real(self, args, namespace))
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    parsed, tests = [], []
    for rehearse in (False, True):
        args = SimpleNamespace(speed_tool="gpu", suite="tests", rehearse=rehearse)
        for step in [ks.restore_step(tmp_path)] + ks.steps(args, tmp_path):
            for argv in step.commands:
                argv = argv[argv.index(PY):]                       # after `env NAME=VALUE`
                program, rest = (argv[2], argv[3:]) if argv[1] == "-m" else (argv[1], argv[2:])
                if program == "pytest":
                    tests += [a for a in rest if a.startswith("tests/")]
                    continue
                try:
                    programs[program](rest)
                except Parsed as e:
                    parsed.append((step.name, program, e.args[0]))
                except SystemExit:                                  # argparse's error, printed
                    raise AssertionError(f"{step.name}: {program} refuses {rest}") from None
                else:
                    raise AssertionError(f"{step.name}: {program} {rest} was not parsed")
    assert {p for _, p, _ in parsed} == set(programs)
    assert tests and all((gpu_kit.ROOT / t).is_file() for t in tests)
    got = {(name, ns.scale) for name, program, ns in parsed if name.startswith("speed")}
    assert got == {("speed-sm90a-0", 1), ("speed-sm90a-1", 1), ("speed-sm90a-0", ks.REHEARSE_SCALE),
                   ("speed-sm90a-1", ks.REHEARSE_SCALE)}
    [check] = {ns.cases for name, _, ns in parsed if name == "sm90a-check"}
    from test_cutile_suite import CASES as CUTILE
    from tutorial_cases import CASES as TUTORIAL
    known = {f"tutorial:{n}" for n in TUTORIAL} | {f"cutile:{n}" for n in CUTILE}
    assert check.split(",") and set(check.split(",")) <= known, set(check.split(",")) - known
    doctor = [ns for name, program, ns in parsed if name == "doctor-gpu"]
    assert doctor and all(ns.gpu and ns.json.endswith(".json") for ns in doctor)


# Lines of the logs of a rehearsal (`gpu_kit.py run --rehearse`, 2026-11-28), one row made to fail.
VALIDATION_LOG = """\
$ python benchmarks/gpu.py --no-speed --fuzz-batches 0 --cases tutorial:matmul,cutile:matmul_f16
validation on Fake GPU 0 (CPU backend): each case and fuzz batch in a child process (1 at once)
  tutorial matmul                                           ok      max relative difference GPU vs CPU 0
  cutile   matmul_f16                                       FAILED  CUDA_ERROR_ILLEGAL_ADDRESS
validation: 1 of 2 ok; 1 row(s) not ok
"""
KILLED_LOG = """\
$ python -m tilepy doctor --gpu --json doctor-gpu.json --markdown doctor-gpu.md
  fuzz     batch 3 of 4 (seed 15)                           ok      8 random kernels agree

speed: every output checked against float64, then timed
  speed    matmul float16 4096^3 t128x128x32 [tilepy]       ok      2246.8392 ms, 0.1 TFLOP/s, error 1.0e-07

[gpu_kit] killed at the step's cap of 150 s
"""
PYTEST_LOG = """\
Fssssssssssssssssssssss                                                  [100%]
FAILED tests/test_gpu.py::test_driver_probe_is_safe_without_a_driver - Assert...
1 failed, 22 skipped, 27 deselected in 3.72s
"""


def test_the_digests_of_recorded_logs(tmp_path):
    assert ks.table_digest("sm90a-check.md")(VALIDATION_LOG, tmp_path).splitlines() == [
        "not ok:", "- cutile   matmul_f16                                       FAILED  "
        "CUDA_ERROR_ILLEGAL_ADDRESS", "validation: 1 of 2 ok; 1 row(s) not ok"]
    killed = ks.table_digest("doctor-gpu.md")(KILLED_LOG, tmp_path).splitlines()
    assert killed[0].startswith("speed    matmul float16 4096^3") and killed[0].endswith("error 1.0e-07")
    assert killed[1:] == ["(no last line) 1 of 1 validation rows ok before it stopped"]
    (tmp_path / "doctor-gpu.md").write_text("| problem | tilepy |\n|---|---:|\n")
    assert ks.table_digest("doctor-gpu.md")(KILLED_LOG, tmp_path).startswith("| problem | tilepy |\n")
    fake = VALIDATION_LOG + ("[fake GPU] 3 launches of 1 kernels, 1 in the sm_90a (wgmma) class\n"
                             "[fake GPU] 2 launches of 2 kernels, 0 in the sm_90a (wgmma) class\n")
    assert ks.fake_gpu_digest(ks.table_digest("sm90a-check.md"))(fake, tmp_path).splitlines()[-2:] == [
        "validation: 1 of 2 ok; 1 row(s) not ok",
        "fake GPU: 5 launches of 3 kernels (1 in the sm_90a wgmma class) in 2 process(es)"]
    assert ks.pytest_digest(PYTEST_LOG, tmp_path).splitlines() == [
        "pytest: 1 failed, 22 skipped, 27 deselected in 3.72s",
        "- FAILED tests/test_gpu.py::test_driver_probe_is_safe_without_a_driver"]


def test_a_rehearsal_puts_the_fake_gpu_before_the_steps_own_path(tmp_path):
    """--rehearse keeps restore, environment and the GPU steps; each GPU step's processes find the
    fake driver's sitecustomize.py first and then the restored kit's path (the first rehearsal
    lost that path: tilepy was not importable and gpu.py said "no GPU")."""
    args = SimpleNamespace(speed_tool="gpu", suite="tests", rehearse=True)
    env = {"PYTHONPATH": os.pathsep.join([str(gpu_kit.ROOT), "/opt/gpukit/site"])}
    todo = [ks.restore_step(tmp_path / "dest")] + ks.steps(args, tmp_path)
    kept, said = ks.rehearsal(todo, None, env, tmp_path)
    assert [s.name for s in kept] == ["restore", "environment", "sm90a-check", "speed-sm90a-0",
                                      "speed-sm90a-1", "doctor-gpu", "pytest-gpu"]
    assert "fake_driver.py's sm_90 device" in said and env["TILEPY_CACHE_DIR"].startswith(str(tmp_path))
    site = tmp_path / "sitecustomize.py"
    compile(site.read_text(), str(site), "exec")
    by_name = {s.name: s for s in kept}
    for name in ("sm90a-check", "speed-sm90a-0", "speed-sm90a-1", "doctor-gpu"):
        assert by_name[name].env["PYTHONPATH"] == os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
        assert by_name[name].cap <= 150 and by_name[name].digest is not None
    assert by_name["speed-sm90a-1"].env["GPUKIT_TORCH_ON_FAKE"] == "1"
    assert by_name["pytest-gpu"].commands[0][-1] == "--as-gpu-machine"
    assert "PYTHONPATH" not in by_name["pytest-gpu"].env and by_name["pytest-gpu"].note
    assert "PYTHONPATH" not in by_name["environment"].env
