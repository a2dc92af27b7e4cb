import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

try:
    import resource                  # CPU time of the process and its children (POSIX)
except ImportError:                  # elsewhere the time budget is not checked
    resource = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "tutorials"))     # definitions.load: a tutorial's kernels
import cache_seed                    # noqa: E402 (from HERE) a test's own cache, given the helpers
import cpu_account                   # noqa: E402 (from HERE) a test's CPU time in a process that outlives it
pytest_plugins = ["gpu_machine"]      # the driver seams: no_driver, --as-gpu-machine, their check


def filecheck(text: str, checks: str):
    """Run the `filecheck` tool (LLVM FileCheck clone) on `text` with `# CHECK:` lines."""
    exe = shutil.which("filecheck") or os.path.join(os.path.dirname(sys.executable), "filecheck")
    if not os.path.exists(exe):                   # (a GPU machine's image lacks it)
        pytest.skip("filecheck is not installed (pip install filecheck)")
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"checks-{os.getpid()}.txt"), "w") as f:
        f.write(checks)
        path = f.name
    proc = subprocess.run([exe, path], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, f"FileCheck failed:\n{proc.stdout}{proc.stderr}\n--- input ---\n{text}"


@pytest.fixture
def check():
    return filecheck


@pytest.fixture(params=["c", "python"])
def warm_path(request):
    """Run a launch test twice: with the C warm launch path (tilepy/launch/warm.py) and with
    the Python path alone (its fallback where the C one cannot be built or does not apply)."""
    from tilepy.launch import warm
    if request.param == "python":
        with warm.python_only():
            yield "python"
        return
    if warm.module() is None:
        pytest.skip(f"the C warm launch path is not available here: {warm.why()}")
    yield "c"


# ----------------------------------------------------------------------------- ABI coverage
# Every compile of the session records its parameter-ABI classes (abi_coverage.py); the run fails
# when one is not among those tests/test_gpu_abi.py checks against NVRTC's cubins. With xdist,
# each worker hands its record to the controller (workeroutput), which checks the union.
_ABI = None
_ABI_SEEN: dict = {}


def pytest_configure(config):
    global _ABI
    _use_test_cache(config)
    from abi_coverage import Recorder
    _ABI = Recorder()
    _ABI.install()


def pytest_testnodedown(node, error):
    for c, name in getattr(node, "workeroutput", {}).get("abi_classes", []):
        _ABI_SEEN.setdefault(tuple(c), name)
    _OVER.extend(tuple(o) for o in getattr(node, "workeroutput", {}).get("over_budget", []))


def pytest_sessionfinish(session, exitstatus):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:                       # an xdist worker: report to the controller
        workeroutput["abi_classes"] = [[list(c), n] for c, n in _ABI.seen.items()]
        workeroutput["over_budget"] = [list(o) for o in _OVER]
        return
    _report_over_budget(session, _OVER)
    seen = {**_ABI.seen, **_ABI_SEEN}
    problems = _ABI.uncovered(seen)
    if problems:
        sys.stderr.write("\nparameter ABI classes that tests/test_gpu_abi.py does not check (add "
                         "an argument of that kind to its `every_parameter` kernel and the class "
                         "to tests/abi_coverage.py COVERED):\n  " + "\n  ".join(problems) + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ----------------------------------------------------------------------------- the tests' cache
# The suite never touches the user's tilepy cache: the first process (the xdist controller, or the
# only one with -n 0) points TILEPY_CACHE_DIR at a fresh private folder, which the workers,
# subprocesses and notebook kernels the tests start inherit through the environment, and removes
# it at the end. TILEPY_TEST_CACHE_DIR=<folder> keeps the kernels in that folder instead, for
# faster reruns while developing (made private when it does not exist yet). A test that gives a
# new process a cache folder of its own seeds it with this cache's CPU helpers (cache_seed.py).
_SESSION_CACHE: str | None = None


def _use_test_cache(config):
    global _SESSION_CACHE
    if hasattr(config, "workerinput"):              # an xdist worker: the controller chose it
        cache_seed.SESSION = os.environ["TILEPY_CACHE_DIR"]
        return
    _compile_tilepy_once()
    keep = os.environ.get("TILEPY_TEST_CACHE_DIR")
    if keep:
        os.makedirs(keep, mode=0o700, exist_ok=True)
        os.environ["TILEPY_CACHE_DIR"] = cache_seed.SESSION = keep
        return
    _SESSION_CACHE = tempfile.mkdtemp(prefix="tilepy-test-cache-")
    os.environ["TILEPY_CACHE_DIR"] = cache_seed.SESSION = _SESSION_CACHE


def _compile_tilepy_once():
    """Where PYTHONDONTWRITEBYTECODE is set (these machines set it), every Python process the
    tests start (workers, children, notebook kernels: about a hundred) compiled tilepy's sources
    afresh, 0.4 CPU-s each. The first process compiles them once into their __pycache__ folders
    (ignored by git), which the others read: the variable stops writing bytecode, not reading it.
    Python checks each file's bytecode against its source, so an edit is never run stale."""
    if not sys.flags.dont_write_bytecode:
        return
    import compileall
    import importlib.util
    spec = importlib.util.find_spec("tilepy")         # (found, not imported)
    if spec is not None and spec.origin:
        compileall.compile_dir(os.path.dirname(spec.origin), quiet=2)


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


# ----------------------------------------------------------------------------- time budget
# Every test has a budget of CPU time (this process and the compilers and kernels it waits for:
# a measure that other work on the machine hardly changes), so that the suite stays within
# README's few minutes. A test over it fails the run (listed at the end); the few that must be
# longer say so with `@pytest.mark.budget(seconds)`. TILEPY_TEST_BUDGET=<seconds> sets the default
# budget, `off` turns the check off (a profiler, a debugger, a sanitizer build).
# TILEPY_TEST_CPU_LOG=<file> appends every test's CPU and wall seconds to that file (a line each:
# seconds, wall seconds, node id; tab-separated), to see where the suite's time goes.
BUDGET_S = 40.0           # the largest unmarked today: about 16 s (test_frontend_fuzz, test_cache_safety)
_OVER: list = []


def _cpu_seconds() -> float:
    if resource is None:
        return 0.0
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """The files holding a test allowed more than the default budget (the longest: the fuzz
    chunks, the torch tutorial in Jupyter) run first, the longest first, each file whole (a
    module fixture is made once) and the rest in their order: a long test started last would
    run alone at the end while the other worker idles (pytest-xdist's worksteal moves only
    tests that have not started)."""
    longest: dict = {}
    for item in items:
        mark = item.get_closest_marker("budget")
        longest[item.path] = max(longest.get(item.path, BUDGET_S), mark.args[0] if mark else 0)
    items.sort(key=lambda item: -longest[item.path])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, wall = _cpu_seconds(), time.perf_counter()
    yield
    used = _cpu_seconds() - start + cpu_account.take()
    log = os.environ.get("TILEPY_TEST_CPU_LOG")
    if log:
        with open(log, "a") as f:                      # one short write: workers append whole lines
            f.write(f"{used:.3f}\t{time.perf_counter() - wall:.3f}\t{item.nodeid}\n")
    setting = os.environ.get("TILEPY_TEST_BUDGET") or str(BUDGET_S)
    mark = item.get_closest_marker("budget")
    if resource is None or setting == "off":
        return
    allowed = mark.args[0] if mark else float(setting)
    if used > allowed:
        _OVER.append((item.nodeid, round(used, 1), allowed))


def _report_over_budget(session, over):
    if not over:
        return
    sys.stderr.write("\ntests over their CPU-time budget (seconds used / allowed; mark a test "
                     "that must take longer with @pytest.mark.budget(seconds)):\n  " +
                     "\n  ".join(f"{n}: {u} / {a}" for n, u, a in sorted(over)) + "\n")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
