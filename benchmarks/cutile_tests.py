"""Run NVIDIA cutile-python's test/ files unchanged on tilepy's CPU backend; one line per test.

    python benchmarks/cutile_tests.py /path/to/cutile-python [--only test_copy.py ...]
        [--mode fast|faithful] [--capability 10.0] [--timeout 900] [--per-test N]
        [-k EXPR] [--summary] [--json out.json]

Each test file runs under pytest in a child process of its own, with its source (and the
checkout's conftest.py and util.py) untouched, under the emulation of cutile_samples.py
(`cuda.tile` is tilepy, torch's "cuda" device is the CPU). cuTile's test files and their
conftest/util import private modules of cuTile (`cuda.tile._compile`, `_cext`, `_bytecode`,
`_exception`, `_ir.typing_support`, `_ir.cast_ops`, ...); this harness gives them the few
facts those imports are read for: the emulated device's capability and bytecode version, the
exception classes, torch dtype -> DType, and the implicit-cast and promotion rules (tilepy's,
which follow cuTile's table: tests that compute an expectation from them check tilepy against
its own rule); `cconv_v3_enabled()` is True (calling convention 3, which cuTile's releases keep
to development builds: dataclass parameters and dtype/None/string/Enum constants, which tilepy
has), so the tests it guards run; cutile_internals.py gives more (the bytecode's SimpleType and
float encodings, CompilerOptions, the dtype categories). Any other private name a test file
imports (cuTile's IR classes, its bytecode writer, its cache tool) is a placeholder: the file is
collected and its tests run; a test that *uses* one (calls it, reads an attribute, isinstance,
iterates, compares) cannot run on another implementation and is counted INTERNALS, that test
only, whatever it made of the error (a placeholder never lets a test pass).

Per test: PASS; WRONG (an assertion failed: a value, or an expected error that did not come,
or came with another message); REFUSED (tilepy raised a located error, TileTypeError/
TileValueError/..., where the test expected none or another class); CRASH (any other
exception, TileInternalError included); UNSUPPORTED (TileUnsupportedFeatureError); MISSING (a
public cuTile name tilepy does not define); INTERNALS (the test uses a cuTile internal: a
placeholder of cutile_internals.py, cuTile's own compile for its IR (`compile_tile` with its
arguments), or a private member such as `ct.kernel._compile`; a file is INTERNALS as a whole
only when its import itself uses one: a base class, a module-level call); SKIP (the test skipped
itself: a capability, a missing package); MEMORY (an allocation outside tilepy failed: the
test's own tensors, or torch's comparison of them, need more memory than this machine has free;
the detail says how much; one inside tilepy stays a CRASH); TIMEOUT (the file's time ran out
before the test finished); LIFTED (the test expects an error cuTile raises for what it does not
support and tilepy does right: the LIFTED table names each and why). The detail column says the
first line of the error. `--replay
run.json` prints a saved run's table again (with this version's statuses).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
STATUSES = ("PASS", "WRONG", "REFUSED", "CRASH", "UNSUPPORTED", "MISSING", "INTERNALS", "SKIP",
            "MEMORY", "TIMEOUT", "LIFTED")
# Tests that expect cuTile to refuse something tilepy does right (each with the reason), so
# tilepy's "DID NOT RAISE" there is LIFTED, not WRONG; any other failure of them stays what it is.
LIFTED = {
    ("test_cudagraph.py", "test_list_of_array"):
        "cuTile stages a list's table in a stream buffer that later launches reuse, so it refuses "
        "lists under graph capture; tilepy passes each item's pointer, extents and strides as "
        "kernel parameters, which the capture copies (tests/test_fake_driver.py replays one)",
    **{("test_typeinfer.py", f"test_control_flow_type_mismatch[{k}]"):
       "cuTile refuses a loop variable whose type changes (a = 1, then a *= 2.0); tilepy carries "
       "it as the float its body makes and stores what Python computes (1024.0, 32.0); a "
       "variable of two types after an if stays an error where it is read"
       for k in ("kernel_for_loop", "kernel_while_loop")},
    **{("test_typeinfer.py", t):
       "cuTile refuses calling a host function in device code; tilepy evaluates a call of one "
       "on constants while tracing (eval('2 + 2') is 4, Foo() a compile-time object), as Python "
       "would, and refuses one on runtime values"
       for t in ("test_unsupported_builtin_function", "test_unsupported_class_constructor")},
    ("test_print.py", "test_ct_print_error_dynamic_format_spec"):
        "cuTile refuses a format spec an f-string computes ({tx:{width}}); tilepy evaluates it "
        "when it is a constant (width = 5 here) and prints with it (tests/test_print_log.py's "
        "tuples kernel)",
}
MEMORY: dict = {}           # the child's memory limit and the memory free when it started


# ---- the child: one test file under pytest --------------------------------------------------

class Launches:
    """The Record of cutile_samples' `cuda.tile.launch`: which kernels a test launched."""

    def __init__(self):
        self.names: list[str] = []

    def launched(self, name):
        self.names.append(name)

    def mark(self, name, status, detail=""):
        pass


def _internals(capability):
    """The private cuTile modules the test files import, with what they are read for."""
    import torch
    import tilepy
    import tilepy.errors as errors
    import tilepy.frontend.promotion as promotion
    from tilepy.compilation import CallingConvention
    from tilepy.host.intake import torch_dtype
    from tilepy.types.dtype import from_numpy
    ct_bytecode = sys.modules["cuda.tile._bytecode"]
    version = ct_bytecode.version

    class BytecodeVersion(tuple):
        def __new__(cls, major, minor):
            return super().__new__(cls, (major, minor))

        def major(self):
            return self[0]

        def minor(self):
            return self[1]

        def as_string(self):
            return f"{self[0]}.{self[1]}"
    for v in ((13, 1), (13, 2), (13, 3), (13, 4), (13, 5)):
        setattr(BytecodeVersion, f"V_{v[0]}_{v[1]}", BytecodeVersion(*v))
    version.BytecodeVersion = ct_bytecode.BytecodeVersion = BytecodeVersion
    newest = BytecodeVersion(13, 5)
    compile_ = sys.modules["cuda.tile._compile"]
    compile_._get_max_supported_bytecode_version = lambda *a, **k: newest
    compile_._SUPPORTED_VERSIONS = frozenset(getattr(BytecodeVersion, f"V_13_{m}")
                                             for m in range(1, 6))
    compile_._find_compiler_bin = lambda *a, **k: types.SimpleNamespace(path="(tilepy)")
    compile_.format_sm_arch = lambda major, minor: f"sm_{major}{minor}"
    compile_.get_sm_arch = lambda *a: compile_.format_sm_arch(*capability)
    # `compile_tile` is called once per kernel compilation (tests count recompilations by
    # patching it): tilepy's compile of a specialization not compiled yet in this process
    import tilepy.api.compiler as compiler
    compile_specialization = compiler.compile_specialization

    def compile_tile(kernel, key, params):
        return tilepy.kernel._compile(kernel, key, params, capability)

    def _compile(kernel, key, params, compute_capability):   # cuTile's per-device compile
        compiled = compile_specialization(kernel, key, params)
        if tuple(compute_capability) != tuple(capability):    # a test asked for another device:
            from tilepy.bytecode.targets import check_target  # what tileiras and that GPU take
            from tilepy.cuda_c.targets import check_target_ops
            arch = compile_.format_sm_arch(*compute_capability)
            module = compiler.tile_ir(kernel, key, params)      # (the compile's, not traced again)
            check_target(module, arch, compute_capability[0] * 10 + compute_capability[1])
            check_target_ops(module, arch)
        return compiled
    tilepy.kernel._compile = _compile

    def counted(kernel, key, params):
        if key in kernel.cache and not kernel.changed():
            return kernel.cache[key]
        return sys.modules["cuda.tile._compile"].compile_tile(kernel, key, params)
    compile_.compile_tile, compiler.compile_specialization = compile_tile, counted
    tilepy.Kernel._pyfunc = property(lambda k: k.func)     # cuTile's kernel's Python function
    cext = sys.modules["cuda.tile._cext"]
    cext.CallingConvention = CallingConvention
    cext.cconv_v3_enabled = lambda: True      # dataclass parameters: tilepy has them
    exception = types.ModuleType("cuda.tile._exception")
    for name in dir(errors):
        if name.startswith("Tile"):
            setattr(exception, name, getattr(errors, name))
    exception.TypeCheckingError = errors.TileTypeError       # cuTile's other name for it
    numeric = types.ModuleType("cuda.tile._numeric_semantics")
    numeric.RoundingMode, numeric.PaddingMode = tilepy.RoundingMode, tilepy.PaddingMode
    memory = types.ModuleType("cuda.tile._memory_model")
    memory.MemoryOrder, memory.MemoryScope = tilepy.MemoryOrder, tilepy.MemoryScope
    ir = types.ModuleType("cuda.tile._ir")
    typing_support = types.ModuleType("cuda.tile._ir.typing_support")

    def to_dtype(t):
        if isinstance(t, torch.dtype):
            return torch_dtype(t)
        return t if isinstance(t, tilepy.DType) else from_numpy(t)
    typing_support.to_dtype = to_dtype
    ir.typing_support = typing_support
    # the dtype rules tests compute their expectations from: tilepy's (cuTile's table, checked
    # by tilepy's own tests), so these tests check that tilepy follows its own rule everywhere
    cast_ops = types.ModuleType("cuda.tile._ir.cast_ops")
    cast_ops._is_implicit_cast_ok = promotion.can_cast_implicitly
    ops_utils = types.ModuleType("cuda.tile._ir.ops_utils")
    ops_utils.promote_dtypes = promotion.promote
    ir.cast_ops, ir.ops_utils = cast_ops, ops_utils
    # cuTile's private mangling and signature names its tests import: tilepy's
    # (api/name_mangling.py, api/compilation.py), with calling convention 3's dataclasses
    import tilepy.api.name_mangling as names
    from tilepy.compilation import DataclassConstraint
    mangling = types.ModuleType("cuda.tile.compilation._name_mangling")
    mangling._mangle_string, mangling._demangle_string = names.mangle_string, names.demangle_string
    mangling._Cursor = names.Cursor

    def _demangle_kernel_name(symbol, alias_group_names, allowed_dataclasses, allowed_enums):
        return names._demangle(symbol, alias_group_names, allowed_dataclasses, allowed_enums)
    mangling._demangle_kernel_name = _demangle_kernel_name
    signature = types.ModuleType("cuda.tile.compilation._signature")
    signature.DataclassConstraint = DataclassConstraint
    tilepy.compilation._signature = signature      # read as `ct.compilation._signature.X` too
    sys.modules.update({"cuda.tile._exception": exception,
                        "cuda.tile.compilation._name_mangling": mangling,
                        "cuda.tile.compilation._signature": signature,
                        "cuda.tile._numeric_semantics": numeric,
                        "cuda.tile._memory_model": memory, "cuda.tile._ir": ir,
                        "cuda.tile._ir.cast_ops": cast_ops, "cuda.tile._ir.ops_utils": ops_utils,
                        "cuda.tile._ir.typing_support": typing_support})


INTERNAL_MODULES = ("cuda.tile._", "cuda.tile_internal", "cutile_cache")


def status_of(name: str, text: str) -> str:
    """The status of a test that raised exception `name` with message `text` (also what
    --replay applies to a saved run's details)."""
    if name == "TileUnsupportedFeatureError":
        return "UNSUPPORTED"
    if name == "CuTileInternalsUsed":       # a placeholder of cutile_internals.py was used
        return "INTERNALS"
    if name in ("ImportError", "ModuleNotFoundError", "AttributeError") and \
            any(m in text for m in INTERNAL_MODULES):
        return "INTERNALS"
    if name == "AttributeError" and re.search(r"has no attribute '_(?!_)", text):
        return "INTERNALS"      # a private member of a public cuTile object (ct.kernel._compile)
    if name in ("TileAttributeError", "ImportError") and ("'tilepy" in text or
                                                          "tilepy." in text):
        return "MISSING"
    if name == "TileInternalError":
        return "CRASH"
    if name.startswith("Tile") and name.endswith("Error"):
        return "REFUSED"
    if name in ("AssertionError", "Failed"):
        return "WRONG"
    return "CRASH"


def _out_of_memory(e) -> str | None:
    """What a failed allocation outside tilepy asked for, if `e` (or an exception that caused
    it: torch's assert_close wraps its own) is one: torch's allocator error, numpy's
    MemoryError. None otherwise, and for one raised with tilepy's code on the stack (tilepy
    allocates nothing per array beyond the user's tensors: such a failure is tilepy's)."""
    import resource
    import traceback
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        text = str(e)
        if isinstance(e, MemoryError) or "can't allocate memory" in text or \
                type(e).__name__ == "OutOfMemoryError":
            if any(f"{os.sep}tilepy{os.sep}" in f.filename
                   for f in traceback.extract_tb(e.__traceback__)):
                return None
            m = re.search(r"tried to allocate (\d+) bytes", text)
            asked = f"{int(m.group(1)) / 2**30:.2f} GiB more" if m else \
                re.sub(r"^Unable to allocate ([^ ]+ [^ ]+).*", r"\1 more", text.splitlines()[0])
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            return (f"the test asked for {asked} with {peak:.1f} GiB in use at the peak; this "
                    f"run's limit is {MEMORY['limit'] / 2**30:.1f} GiB, with "
                    f"{MEMORY['free'] / 2**30:.1f} GiB available on this machine at its start")
        e = e.__cause__ or e.__context__
    return None


def _classify(excinfo) -> tuple[str, str]:
    e = excinfo.value
    memory = _out_of_memory(e)
    if memory is not None:
        return "MEMORY", memory
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    name = type(e).__name__
    if name in ("Failed", "AssertionError") and "Regex pattern did not match" in str(e):
        first = "error message: " + " ".join(text[:3])
    return status_of(name, first), f"{name}: {first}"


def emulate(capability, sms) -> Launches:
    """This process as the harness's child sees it: the CUDA emulation, cuda.tile, the internals."""
    sys.path.insert(0, HERE)
    import cutile_samples as samples
    launches = Launches()
    samples._emulate_cuda(capability, sms)
    samples._cuda_tile(launches, capability)
    _internals(capability)
    import cutile_internals
    cutile_internals.install()
    return launches


def _emulate_in_subprocesses(capability, sms):
    """Python processes a test starts (test_debug runs its kernel in one) get the same
    emulation: a sitecustomize.py on their PYTHONPATH calls `emulate` as they start."""
    import atexit
    import shutil
    folder = tempfile.mkdtemp(prefix="cutile-emulation-")
    atexit.register(shutil.rmtree, folder, True)
    with open(os.path.join(folder, "sitecustomize.py"), "w") as f:
        f.write(f"import sys\nsys.path.insert(0, {HERE!r})\nimport cutile_tests\n"
                f"cutile_tests.emulate({tuple(capability)!r}, {sms!r})\n")
    # (absolute: the child runs in the test folder, where a relative entry names nothing)
    inherited = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([folder, *inherited])


def _available_memory():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def run_child(test_paths, out_path, capability, sms, per_test=0, select=None):
    import resource
    # a test's tensors past this fail (MemoryError: the MEMORY status) here: the memory available
    # at the start (free, and the page cache the kernel gives back) less 1 GiB, at least 8 GB
    # (test_array's int64_index test needs 16 GiB: two 4 GiB tensors, torch's x + 1 and the bool
    # tensor of its comparison; test_list's 20 GiB)
    free = _available_memory()
    limit = max(8 << 30, free - (1 << 30))
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    MEMORY.update(limit=limit, free=free)
    fd, used = tempfile.mkstemp(prefix="cutile-internals-")     # placeholder uses, per test
    os.close(fd)
    os.environ["CUTILE_INTERNALS_LOG"] = used
    launches = emulate(capability, sms)
    _emulate_in_subprocesses(capability, sms)
    import cutile_internals
    import pytest
    out = open(out_path, "a")

    class BenchmarkHooks:
        """pytest-benchmark's hooks, which the checkout's conftest implements (the benchmarks
        are not run here, so the plugin is not needed)."""
        @pytest.hookspec
        def pytest_benchmark_update_machine_info(self, config, machine_info):
            pass

        @pytest.hookspec
        def pytest_benchmark_update_json(self, config, benchmarks, output_json):
            pass

    class Collector:
        def pytest_addhooks(self, pluginmanager):
            pluginmanager.add_hookspecs(BenchmarkHooks)

        def pytest_runtest_logstart(self, nodeid, location):
            cutile_internals.clear()

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            outcome = yield
            rep = outcome.get_result()
            row = None
            if call.when == "setup":
                launches.names.clear()
            internal = cutile_internals.uses()
            if internal and (rep.failed or call.when == "call"):
                row = ("INTERNALS", internal[0])    # whatever the test made of the error
            elif rep.skipped and call.when in ("setup", "call"):
                reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
                row = ("SKIP", reason)
            elif rep.failed:
                row = _classify(call.excinfo)
            elif rep.passed and call.when == "call":
                row = ("PASS", "")
            if row is not None:
                file, _, test = item.nodeid.partition("::")
                out.write(json.dumps({"file": os.path.basename(file), "test": test,
                                      "status": row[0],
                                      "detail": row[1][:300],
                                      "launched": sorted(set(launches.names))}) + "\n")
                out.flush()

        def pytest_collection_modifyitems(self, session, config, items):
            if not per_test:
                return
            seen, keep, dropped = {}, [], []
            for item in items:
                fn = getattr(item, "originalname", item.name)
                seen[fn] = seen.get(fn, 0) + 1
                (keep if seen[fn] <= per_test else dropped).append(item)
            items[:] = keep
            config.hook.pytest_deselected(items=dropped)

        def pytest_collectreport(self, report):
            if report.failed:
                lines = str(report.longrepr).strip().splitlines()
                err = next((ln for ln in reversed(lines) if ln.startswith("E ")), lines[-1])
                name, _, text = err[1:].strip().partition(": ")
                status = status_of(name.rsplit(".", 1)[-1], text)
                out.write(json.dumps({"file": os.path.basename(report.nodeid.split("::")[0]),
                                      "test": "(collection)", "status": status,
                                      "detail": err[:300], "launched": []}) + "\n")
                out.flush()

    folder = os.path.dirname(os.path.abspath(test_paths[0]))
    os.chdir(folder)
    pytest.main([*test_paths, "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                 "-W", "ignore", "--rootdir", os.path.dirname(folder), "--tb=no",
                 "--continue-on-collection-errors", *(["-k", select] if select else [])],
                plugins=[Collector()])
    out.close()
    os.unlink(used)


# ---- the parent: every test file in a child process -----------------------------------------

def run_files(paths, args):
    """Rows of the tests of `paths` (one pytest session in one child process)."""
    fd, out = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", out, *paths,
           "--capability", args.capability, "--sms", str(args.sms),
           "--per-test", str(args.per_test), *(["-k", args.k] if args.k else [])]
    env = dict(os.environ, TILEPY_CPU_MODE=args.mode)
    t0 = time.perf_counter()
    ended = "completed"
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        ended = f"timed out after {args.timeout:.0f} s"
    with open(out) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    os.unlink(out)
    if ended != "completed":
        done = {r["file"] for r in rows}
        last = rows[-1]["file"] if rows else None
        for p in paths:
            name = os.path.basename(p)
            if name == last or name not in done:
                rows.append({"file": name, "test": "(the rest)", "status": "TIMEOUT",
                             "detail": ended, "launched": []})
    return rows, time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", nargs="?", help="a cutile-python work tree (its test/ is run)")
    p.add_argument("--only", nargs="*", help="test file names (default: every test_*.py)")
    sys.path.insert(0, HERE)
    import cutile_samples
    cutile_samples.emulation_arguments(p)
    p.add_argument("--timeout", type=float, default=900, help="seconds per test file")
    p.add_argument("--per-test", type=int, default=0,
                   help="run only the first N parameter cases of each test function (0: all)")
    p.add_argument("-k", help="run only the tests this pytest -k expression selects")
    p.add_argument("--summary", action="store_true", help="one line per file, not per test")
    p.add_argument("--json", help="also write every row to this file")
    p.add_argument("--replay", help="print the table of a run saved with --json")
    p.add_argument("--files-per-child", type=int, default=1,
                   help="test files run in one pytest session (saves the imports per file)")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    capability = tuple(int(x) for x in args.capability.split("."))
    if args.child:
        return run_child(args.child[1:], args.child[0], capability, args.sms, args.per_test,
                         args.k)
    saved = {}
    if args.replay:
        with open(args.replay) as f:
            for r in json.load(f):
                if r["status"] not in ("PASS", "SKIP", "MEMORY", "TIMEOUT", "LIFTED"):
                    # a collection error's detail is pytest's line ("E   ImportError: ...")
                    name, _, text = re.sub(r"^E\s+", "", r["detail"]).partition(": ")
                    r["status"] = status_of(name, text) if text else r["status"]
                saved.setdefault(r["file"], []).append(r)
        names = list(saved)
    else:
        folder = os.path.join(args.checkout, "test")
        names = args.only or sorted(n for n in os.listdir(folder)
                                    if n.startswith("test_") and n.endswith(".py"))
    total = dict.fromkeys(STATUSES, 0)
    every = []
    if args.summary:
        print("| file | " + " | ".join(STATUSES) + " | seconds | first failure |")
        print("|---" * (len(STATUSES) + 3) + "|")
    else:
        print("| file | test | status | detail |\n|---|---|---|---|")
    chunk = max(1, args.files_per_child)
    groups = [[n] for n in names] if args.replay else \
        [names[i:i + chunk] for i in range(0, len(names), chunk)]
    for group in groups:
        if args.replay:
            found, seconds = saved[group[0]], 0.0
        else:
            found, seconds = run_files([os.path.join(folder, n) for n in group], args)
            silent = [n for n in group if not any(r["file"] == n for r in found)]
            if len(group) > 1 and silent:       # the session died before them: one at a time
                for n in silent:
                    rows, more = run_files([os.path.join(folder, n)], args)
                    found, seconds = found + rows, seconds + more
        for name in group:
            rows = [r for r in found if r["file"] == name]
            _report(name, rows, seconds / len(group), args, total, every)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(every, f, indent=0)
    print("\ntotal: " + ", ".join(f"{k} {v}" for k, v in total.items()))


def _report(name, rows, seconds, args, total, every):
    """Print one file's rows (or its summary line) and add them to the totals."""
    counts = dict.fromkeys(STATUSES, 0)
    for r in rows:
        reason = LIFTED.get((name, r["test"]))
        if reason and r["status"] == "WRONG" and "DID NOT RAISE" in r["detail"]:
            r = dict(r, status="LIFTED", detail=f"{reason} ({r['detail']})")
        counts[r["status"]] += 1
        total[r["status"]] += 1
        every.append(dict(r, file=name))
        if not args.summary:
            print(f"| {name} | {r['test']} | {r['status']} | "
                  f"{r['detail'].replace('|', '/')} |", flush=True)
    if args.summary:
        bad = next((r for r in rows if r["status"] in ("WRONG", "REFUSED", "CRASH",
                                                       "UNSUPPORTED", "MISSING")), None)
        first = f"{bad['test']}: {bad['status']}: {bad['detail']}" if bad else ""
        print(f"| {name} | " + " | ".join(str(counts[s]) for s in STATUSES) +
              f" | {seconds:.0f} | {first.replace('|', '/')[:160]} |", flush=True)


if __name__ == "__main__":
    main()
