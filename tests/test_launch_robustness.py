"""Launches under concurrency, signals and bad configuration (issue 16): tile assertions are
counted per launch, Ctrl-C stops a long CPU launch, worker counts are clamped, a sparse tensor
on the cached path is a TileTypeError, bad TILEPY_* values are errors naming the variable."""
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tilepy as ct
from tilepy.launch import cpu
from tilepy.settings import MAX_CPU_WORKERS, settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@ct.kernel
def under(x, limit):
    t = ct.load(x, (0,), (8,))
    ct.printf("block %d: %.0f\n", ct.bid(0), t)
    ct.assert_(t < limit, "over the limit")


def test_assertions_are_counted_per_launch_across_threads(capfd):
    """8 threads launch one kernel (one library), half of the launches failing 1 assertion per
    block: each launch reports exactly its own failures, and every print comes out whole."""
    x = np.arange(8, dtype=np.float32)
    ct.launch(None, (4,), under, (x, 100.0))
    wrong = []

    def work(t):
        for i in range(40):
            fails = (t + i) % 2 == 0
            try:
                ct.launch(None, (4,), under, (x, 7.0 if fails else 100.0))
                if fails:
                    wrong.append((t, i, "passed"))
            except ct.TileLaunchError as e:
                if not fails or not str(e).startswith("4 tile assertion(s) failed"):
                    wrong.append((t, i, str(e)))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert wrong == []
    out, err = capfd.readouterr()
    assert err.count("over the limit (tile element 7") == 8 * 20 * 4
    lines = out.splitlines()
    assert len(lines) == 8 * 40 * 4 + 4
    assert set(lines) == {f"block {b}: [0, 1, 2, 3, 4, 5, 6, 7]" for b in range(4)}


INTERRUPT = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np
    import tilepy as ct
    @ct.kernel
    def spin(a):
        t = ct.load(a, (0,), (16,))
        for i in range(64):
            t = t * 1.0001 + 0.5
        ct.store(a, (0,), t)
    a = np.zeros(16, np.float32)
    ct.launch(None, (4,), spin, (a,))                  # compiled and cached
    sent = []
    def interrupt():
        time.sleep(0.5)
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt).start()
    start = time.perf_counter()
    try:
        ct.launch(None, (2**24 - 1, 2**20), spin, (a,))
        print("finished", time.perf_counter() - start)
    except KeyboardInterrupt:
        print("interrupted after %.3f s" % (time.perf_counter() - sent[0]))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ct.launch(None, (4,), spin, (a,))                  # the next launch runs normally
    print("next launch ok")
""")


def test_ctrl_c_stops_a_long_cpu_launch(tmp_path):
    script = tmp_path / "interrupt.py"
    script.write_text(INTERRUPT)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TILEPY_CPU_WORKERS": "2"})
    assert p.returncode == 0, p.stderr[-3000:]
    first, second = p.stdout.split("\n")[:2]
    assert first.startswith("interrupted after"), p.stdout
    assert float(first.split()[2]) < 1.0 and second == "next launch ok"


def test_a_launch_from_another_thread_leaves_sigint_alone():
    import signal
    x = np.arange(8, dtype=np.float32)
    before = signal.getsignal(signal.SIGINT)
    done = []
    th = threading.Thread(target=lambda: done.append(ct.launch(None, (64,), under, (x, 100.0))))
    th.start()
    th.join()
    assert done == [None]
    assert signal.getsignal(signal.SIGINT) is before
    assert cpu.new_report().watch_signals == 1


MANY = textwrap.dedent("""
    import numpy as np
    import tilepy as ct
    @ct.kernel
    def plus1(a):
        i = ct.bid(0)
        ct.store(a, (i,), ct.load(a, (i,), (1,)) + 1)
    a = np.zeros(200000, np.int32)
    ct.launch(None, (200000,), plus1, (a,))
    print(int(a.sum()))
""")


def test_a_huge_worker_count_is_clamped_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEPY_CPU_WORKERS", "100000")
    with pytest.warns(UserWarning, match="TILEPY_CPU_WORKERS=100000 is more threads"):
        assert settings().cpu_workers == MAX_CPU_WORKERS
    script = tmp_path / "many.py"
    script.write_text(MANY)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "200000", p.stderr[-3000:]
    assert "more threads than useful" in p.stderr


@pytest.mark.filterwarnings("ignore:Sparse CSR")
def test_a_sparse_tensor_on_the_cached_path_is_a_type_error():
    torch = pytest.importorskip("torch")

    @ct.kernel
    def bump(a):
        ct.store(a, (0,), ct.load(a, (0,), (4,)) + 1)

    dense = torch.zeros(4)
    ct.launch(None, (1,), bump, (dense,))
    ct.launch(None, (1,), bump, (dense,))                 # the cached fast path is set up
    for sparse in (torch.zeros(4).to_sparse(), torch.zeros(2, 2).to_sparse_csr()):
        with pytest.raises(ct.TileTypeError, match="tensors are not supported"):
            ct.launch(None, (1,), bump, (sparse,))


# ----------------------------------------------------------------------------- configuration
BAD = [("TILEPY_CACHE_SIZE", "-5"), ("TILEPY_CACHE_SIZE", "lots"), ("TILEPY_CPU_WORKERS", "0"),
       ("TILEPY_CPU_WORKERS", "-1"), ("TILEPY_CPU_WORKERS", "abc"), ("TILEPY_LOG", "bogus"),
       ("TILEPY_INTERPRET", "2"), ("TILEPY_CPU_MODE", "fibres"), ("TILEPY_CXX", "/no/such/c++")]


@pytest.mark.parametrize("name,value", BAD)
def test_a_bad_environment_value_is_an_error_naming_it(monkeypatch, name, value):
    @ct.kernel
    def first(x):
        ct.store(x, (0,), ct.load(x, (0,), (8,)) + 1)

    monkeypatch.setenv(name, value)
    with pytest.raises(ct.TileValueError, match=re.escape(f"{name}='{value}' is not valid: expected")):
        ct.launch(None, (1,), first, (np.arange(8, dtype=np.float32),))


@pytest.mark.parametrize("name,value,field,expected", [
    ("TILEPY_INTERPRET", "yes", "interpret", True), ("TILEPY_INTERPRET", "0", "interpret", False),
    ("TILEPY_LOG", "Recompile, all", "log", frozenset({"recompile", "all"})),
    ("TILEPY_CPU_MODE", " Faithful ", "cpu_mode", "faithful"),
    ("TILEPY_CACHE_SIZE", "1.5G", "cache_size", 3 << 29), ("TILEPY_CACHE_DIR", "OFF", "cache_dir", None),
    ("TILEPY_CPU_WORKERS", "", "cpu_workers", os.cpu_count() or 1)])
def test_good_environment_values(monkeypatch, name, value, field, expected):
    monkeypatch.setenv(name, value)
    assert getattr(settings(), field) == expected


def test_every_variable_is_in_the_readme_table():
    from tilepy.settings import CRASH_DUMP_VARS, VARS
    readme = pathlib.Path(ROOT, "README.md").read_text()
    for v in VARS + CRASH_DUMP_VARS:
        assert f"| `{v.name}` |" in readme, v.name


def test_a_compiler_that_writes_nothing_is_a_compile_error(monkeypatch, tmp_path):
    fake = tmp_path / "fakecxx"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TILEPY_CXX", str(fake))
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    with pytest.raises(ct.TileCompileError, match="exited without error but wrote no library"):
        cpu.compile_kernel('#include "tilepy/runtime.h"\n__global__ void k(float* p) {}\n',
                           "k", 1, "fast")


# ----------------------------------------------------------------------------- element addresses
@ct.kernel
def gather_scatter(a, idx, out):
    i = ct.load(idx, (0,), (8,))
    t = ct.gather(a, i, check_bounds=False)                 # GATHER
    ct.scatter(out, i, t + 1, check_bounds=False)           # SCATTER


@ct.kernel
def add_at(a, idx):
    i = ct.load(idx, (0,), (8,))
    ct.atomic_add(a, i, ct.full((8,), 1, dtype=ct.int32), check_bounds=False)  # ATOMIC


def _line_of(marker):
    src = pathlib.Path(__file__).read_text().splitlines()
    return next(n for n, line in enumerate(src, 1) if line.rstrip().endswith("# " + marker))


@pytest.mark.parametrize("wild,marker", [(1 << 28, "GATHER"), (-(1 << 28), "GATHER"),
                                         (16, "GATHER")])
def test_a_wild_gather_index_is_a_located_launch_error(wild, marker):
    base = np.arange(64, dtype=np.float32)
    a = base[16:32]                                          # neighbours that are not arguments
    idx = np.arange(8, dtype=np.int32)
    out = np.zeros(8 + 16, np.float32)[:16]
    ct.launch(None, (1,), gather_scatter, (a, idx, out))
    assert out[:8].tolist() == list(range(17, 25))
    idx[3] = wild
    with pytest.raises(ct.TileLaunchError, match="outside array argument 'a', the array it was "
                       "computed from") as e:
        ct.launch(None, (2,), gather_scatter, (a, idx, out))
    assert e.value.loc is not None and e.value.loc.line == _line_of(marker)
    assert e.value.loc.file == __file__


def test_a_wild_scatter_writes_nothing_outside_the_arrays():
    a = np.arange(16, dtype=np.float32)
    base = np.zeros(64, np.float32)
    out = base[16:32]
    idx = np.arange(8, dtype=np.int32)
    idx[5] = 16                                              # base[32]: just past `out`
    a_ok = np.arange(32, dtype=np.float32)                   # the gather of index 16 is valid
    with pytest.raises(ct.TileLaunchError) as e:
        ct.launch(None, (1,), gather_scatter, (a_ok, idx, out))
    assert e.value.loc.line == _line_of("SCATTER")
    assert base[32] == 0 and not base[:16].any() and not base[33:].any()


def test_a_wild_atomic_index_is_a_located_launch_error():
    a = np.zeros(16, np.int32)
    idx = np.arange(8, dtype=np.int32)
    ct.launch(None, (1,), add_at, (a, idx))
    idx[7] = 1 << 29
    with pytest.raises(ct.TileLaunchError, match="outside array argument 'a'") as e:
        ct.launch(None, (1,), add_at, (a, idx))
    assert e.value.loc.line == _line_of("ATOMIC")


def test_in_bounds_element_accesses_of_strided_views_pass():
    """Non-unit strides and 2-D arrays: every element is inside its extent."""
    @ct.kernel
    def pick(a, r, c, out):
        i = ct.load(r, (0,), (8,))
        j = ct.load(c, (0,), (8,))
        ct.scatter(out, (i, j), ct.gather(a, (i, j), check_bounds=False), check_bounds=False)

    big = np.arange(20 * 30, dtype=np.float32).reshape(20, 30)
    a = big[1::2, 3::3]                                       # 10 x 9, strided
    r = np.array([0, 9, 3, 9, 0, 5, 1, 2], np.int32)
    c = np.array([0, 8, 4, 0, 8, 2, 7, 1], np.int32)
    out = np.zeros((30, 40), np.float32)[::3, ::4]           # 10 x 10
    ct.launch(None, (1,), pick, (a, r, c, out))
    assert (out[r, c] == a[r, c]).all()


# ----------------------------------------------------------------------------- forward progress
FOREVER = textwrap.dedent("""
    import numpy as np
    import tilepy as ct
    @ct.kernel
    def forever(a, n):
        x = ct.load(a, (0,), (4,))
        i = n
        while i != 1:              # from 2: 4, 8, ..., 2^31, 0, 0, ...: never 1
            i = i * 2
        ct.store(a, (0,), x + 1)
    a = np.zeros(4, np.int32)
    ct.launch(None, (1,), forever, (a, 1))             # compiled (this one ends at once)
    print("launching", flush=True)
    ct.launch(None, (1,), forever, (a, 2))
    print("finished", a.tolist(), flush=True)
""")


def test_a_loop_that_never_ends_is_not_deleted(tmp_path):
    """The C++ compiler may delete a side-effect-free loop (the forward-progress rule); the
    kernel then 'finished' and stored. It must run instead (here: until it is killed)."""
    script = tmp_path / "forever.py"
    script.write_text(FOREVER)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "launching\n"
        out = []
        reader = threading.Thread(target=lambda: out.append(p.stdout.readline()), daemon=True)
        reader.start()
        reader.join(3)
        assert out == [] and p.poll() is None, f"the endless loop ended: {out}"
    finally:
        p.kill()
        p.wait()


def test_a_misaligned_view_is_rejected_before_any_launch():
    @ct.kernel
    def twice(a):
        ct.store(a, (0,), ct.load(a, (0,), (4,)) * 2)

    raw = np.zeros(64, np.uint8)
    view = raw[2:18].view(np.float32)                        # 2 bytes past a 4-byte boundary
    with pytest.raises(ct.TileValueError, match="not a multiple of its 4-byte element size"):
        ct.launch(None, (1,), twice, (view,))
    ok = raw[4:20].view(np.float32)
    ct.launch(None, (1,), twice, (ok,))
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(raw[6:22].view(np.float32))      # torch takes numpy's misaligned view
    with pytest.raises(ct.TileValueError, match="misaligned view"):
        ct.launch(None, (1,), twice, (t,))


# ----------------------------------------------------------------------------- bad arguments
@ct.kernel
def first_n(a, n: ct.Constant[int]):
    ct.store(a, (0,), ct.load(a, (0,), (n,)) + 1)


@pytest.mark.parametrize("value", [np.int32(16), np.int64(16), np.uint8(16)])
def test_a_numpy_integer_constant_is_that_int(value):
    a = np.zeros(16, np.float32)
    ct.launch(None, (1,), first_n, (a, value))
    assert (a == 1).all()


@pytest.mark.parametrize("value,shown", [(16.0, "16.0 (float"), (True, "True (bool")])
def test_a_constant_of_the_wrong_type_names_the_element(value, shown):
    with pytest.raises(ct.TileTypeError, match=re.escape(f"(element 0 is {shown}")):
        ct.launch(None, (1,), first_n, (np.zeros(16, np.float32), value))


@pytest.mark.parametrize("arch,match", [(90, "unknown target architecture 90 (expected a string"),
                                        ("sm_70", "cannot compile for sm_70: it supports sm_75"),
                                        ("sm_1000", "cannot compile for sm_1000: it supports")])
def test_a_bad_arch_is_a_clear_compile_error(arch, match):
    from tilepy.launch import nvrtc
    with pytest.raises(ct.TileCompileError, match=re.escape(match)):
        nvrtc.compile_cubin("__global__ void z() {}", arch, "z")
    with pytest.raises(ct.TileCompileError, match=re.escape(match)):
        first_n.compile(np.zeros(16, np.float32), 16, arch=arch)


def test_the_interpreter_shows_a_negative_index_as_written():
    import tilepy.interpret

    @ct.kernel
    def at(a, i):
        ct.store(a, (i,), ct.load(a, (i,), (4,)) + 1)

    with pytest.raises(ct.TileValueError, match=re.escape("index -1 (read unsigned: 4294967295)")):
        tilepy.interpret.launch((1,), at, (np.zeros(16, np.float32), -1))


@pytest.mark.parametrize("mode", ["fast", "faithful"])
def test_an_index_landing_in_another_argument_is_a_located_launch_error(mode):
    """The address check is against the array the pointer was computed from: a gather from `a`
    whose index lands inside `idx` or `out` (its neighbours in one buffer) is refused."""
    base = np.zeros(64, np.float32)
    a, out = base[0:16], base[32:48]
    a[:] = np.arange(16)
    idx = np.arange(8, dtype=np.int32)
    idx[2] = 40                                              # a + 40 = out[8]: inside `out`
    with ct.cpu_mode(mode):
        with pytest.raises(ct.TileLaunchError, match="outside array argument 'a', the array it "
                           "was computed from \\(it lands inside array argument 'out'\\)") as e:
            ct.launch(None, (1,), gather_scatter, (a, idx, out))
        assert e.value.loc.line == _line_of("GATHER")
        idx[2] = 20                                          # a + 20: between the arguments
        with pytest.raises(ct.TileLaunchError, match="outside array argument 'a'.*out of bounds"):
            ct.launch(None, (1,), gather_scatter, (a, idx, out))


def test_an_offset_that_comes_back_into_its_array_is_fine():
    """Only the pointer an access uses is checked: `a + i + 40 - 40` is `a + i`."""
    @ct.kernel
    def there_and_back(a, idx, out):
        p = ct.load(idx, (0,), (8,))
        t = ct.gather(a, p + 40 - 40, check_bounds=False)
        ct.store(out, (0,), t)

    base = np.arange(64, dtype=np.float32)
    a, out = base[0:16], np.zeros(8, np.float32)
    ct.launch(None, (1,), there_and_back, (a, np.arange(8, dtype=np.int32), out))
    assert out.tolist() == list(range(8))
