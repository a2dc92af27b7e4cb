"""The disk cache owns a folder and nothing else (issue 16): foreign files at every level
survive eviction and `cache clear`; links, FIFOs and huge files are misses, not hangs; the folder
is private, and a folder others can write (or own) is refused; an entry evicted by another
process never fails a launch; processes sharing a cache with a 1-byte cap all succeed."""
import io
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import cache_seed
import tilepy as ct
from tilepy import __main__ as cli
from tilepy.launch import cache, cache_fs, cpu

KEY = "ab" * 20


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(d))
    cache_fs._warned.clear()
    return d


def foreign_tree(root, outside):
    """Foreign files at every level of a cache folder, some named like entries, and links
    (named like entries) to files and folders outside it. Returns every planted path."""
    (outside / "precious.txt").write_text("keep me")
    (outside / "linked_dir" / "ab").mkdir(parents=True)
    (outside / "linked_dir" / "ab" / KEY).write_text("keep me too")
    planted = {
        "top": root / "notes.txt",
        "top dir": root / "otherapp" / "ab" / KEY,
        "top memo-like": root / "toolchain.json.bak",
        "in kind": root / "cubin" / "readme",
        "kind-like dir": root / "cubins" / "ab" / KEY,
        "bad shard": root / "cubin" / "zz" / KEY,
        "in shard": root / "cubin" / "ab" / "notes.txt",
        "bad suffix": root / "cubin" / "ab" / (KEY + ".txt"),
        "wrong shard": root / "cubin" / "cd" / KEY,
        "short key": root / "cpu" / "ab" / ("ab" * 10 + ".so"),
    }
    for p in planted.values():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(cache.encode(b"foreign", {"name": "not tilepy's"}))
    (root / "ptx").mkdir(exist_ok=True)
    links = {"file link": root / "ptx" / "ab", "dir link": root / "spec"}
    (root / "ptx" / "ab").mkdir()
    links["file link"] = root / "ptx" / "ab" / KEY
    os.symlink(outside / "precious.txt", links["file link"])
    os.symlink(outside / "linked_dir", links["dir link"])
    return {**planted, **links}


def test_foreign_files_at_every_level_survive_eviction_and_clear(cache_dir, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    own = [cache.put("cubin", f"{i:02x}" * 20, b"\x7fELF" + bytes(100), {"name": f"k{i}"})
           for i in range(3)]
    planted = foreign_tree(cache_dir, outside)
    listed = {e.path for e in cache.listing()}
    assert listed == set(own)                                 # foreign files are not entries
    out = io.StringIO()
    cli.main(["cache", "list"], out)
    assert "CORRUPT" not in out.getvalue() and "3 entries" in out.getvalue()

    monkeypatch.setenv("TILEPY_CACHE_SIZE", "1")              # evict everything it may
    kept = cache.put("cubin", "ff" * 20, b"\x7fELF", {})
    assert not any(os.path.exists(p) for p in own) and os.path.exists(kept)
    out = io.StringIO()
    cli.main(["cache", "clear"], out)
    assert cache.listing() == [] and not os.path.exists(kept)
    cli.main(["cache", "clear", "--all"], io.StringIO())
    for what, p in planted.items():
        assert os.path.lexists(p), f"{what}: {p} was deleted"
    assert (outside / "precious.txt").read_text() == "keep me"
    assert (outside / "linked_dir" / "ab" / KEY).read_text() == "keep me too"
    assert (cache_dir / cache_fs.MARKER).exists()


def test_a_foreign_folder_is_not_used_or_cleared(tmp_path, monkeypatch):
    """TILEPY_CACHE_DIR=~/.cache: a folder of other programs' files is not a tilepy cache."""
    home_cache = tmp_path / "dotcache"
    (home_cache / "pip" / "http").mkdir(parents=True)
    (home_cache / "pip" / "http" / "blob").write_text("pip's")
    (home_cache / "cpu").mkdir()                              # even with a tilepy-like name
    (home_cache / "cpu" / "ab").mkdir()
    (home_cache / "cpu" / "ab" / (KEY + ".so")).write_text("not ours")
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(home_cache))
    cache_fs._warned.clear()
    with pytest.warns(UserWarning, match="not a tilepy cache"):
        assert cache.put("cubin", KEY, b"x", {}) is None
    assert cache.get("cpu", KEY, ".so") is None and cache.listing() == []
    cli.main(["cache", "clear"], io.StringIO())
    assert (home_cache / "pip" / "http" / "blob").read_text() == "pip's"
    assert (home_cache / "cpu" / "ab" / (KEY + ".so")).read_text() == "not ours"
    assert not (home_cache / cache_fs.MARKER).exists()


def test_a_folder_of_an_earlier_tilepy_is_adopted(cache_dir):
    (cache_dir / "cubin" / "ab").mkdir(parents=True)
    (cache_dir / "cubin" / "ab" / KEY).write_bytes(cache.encode(b"\x7fELF", {}))
    (cache_dir / "toolchain.json").write_text("{}")
    os.chmod(cache_dir, 0o700)
    assert cache.put("cubin", "cd" * 20, b"y", {}) is not None
    assert (cache_dir / cache_fs.MARKER).exists() and len(cache.listing()) == 2


# ----------------------------------------------------------------------------- non-regular files
def _in_time(fn, seconds=5.0):
    box = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert box, f"{fn} did not return within {seconds} s"
    return box[0]


@pytest.mark.parametrize("what", ["fifo", "link to /dev/zero", "link to an entry", "huge file"])
def test_non_regular_or_huge_entries_are_misses(cache_dir, tmp_path, what):
    good = cache.put("cubin", "cd" * 20, b"\x7fELF", {})
    path = cache_dir / "cubin" / "ab" / KEY
    path.parent.mkdir(parents=True, exist_ok=True)
    if what == "fifo":
        os.mkfifo(path)
    elif what == "link to /dev/zero":
        os.symlink("/dev/zero", path)
    elif what == "link to an entry":
        os.symlink(good, path)
    else:
        with open(path, "wb") as f:
            f.truncate(cache_fs.MAX_FILE_BYTES + 1)         # sparse: costs no disk
    assert _in_time(lambda: cache.get("cubin", KEY)) is None
    assert _in_time(lambda: cache.read_meta(str(path))) is None
    assert str(path) not in {e.path for e in cache.listing()} or what == "huge file"


def test_a_fifo_in_place_of_a_library_does_not_hang_a_launch(cache_dir):
    @ct.kernel
    def fill7(a):
        ct.store(a, (0,), ct.full((8,), 7.0, dtype=ct.float32))

    a = np.zeros(8, np.float32)
    ct.launch(None, (1,), fill7, (a,))
    (path,) = [e.path for e in cache.listing() if e.kind == "cpu" and      # not the pool's
               cache.get("cpu", e.key, os.path.splitext(e.path)[1]).meta["kind"] == "cpu"]
    os.unlink(path)
    os.mkfifo(path)
    cpu._LOADED.clear()
    fill7.__dict__.pop("_tp_plans", None)
    fill7.cache.clear()
    a[:] = 0
    _in_time(lambda: ct.launch(None, (1,), fill7, (a,)), 60)
    assert (a == 7).all()


# ----------------------------------------------------------------------------- who may write
def test_the_cache_folder_is_private(cache_dir):
    old = os.umask(0)
    try:
        path = cache.put("cpu", KEY, b"\x7fELF", {}, ".so")
    finally:
        os.umask(old)
    for d in (cache_dir, cache_dir / "cpu", cache_dir / "cpu" / "ab"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    for f in (path, cache_dir / cache_fs.MARKER):
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f


PLANT = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    import tilepy as ct
    warnings.simplefilter("always")
    @ct.kernel
    def put_one(a):
        ct.store(a, (0,), ct.full((4,), 1.0, dtype=ct.float32))
    @ct.kernel
    def put_two(a):
        ct.store(a, (0,), ct.full((4,), 2.0, dtype=ct.float32))
    a = np.zeros(4, np.float32)
    ct.launch(None, (1,), put_one if sys.argv[1] == "one" else put_two, (a,))
    print(a[0])
""")


def _run_plant(script, which):
    p = subprocess.run([sys.executable, str(script), which], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return float(p.stdout), p.stderr


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A cache holding put_one's and put_two's libraries, put_two's relabeled under put_one's
    key (made once: each test below copies it into its own folder)."""
    root = tmp_path_factory.mktemp("planted")
    script, d = root / "plant.py", root / "cache"
    script.write_text(PLANT)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILEPY_CACHE_DIR", str(d))
        cache_seed.seed(d)                       # the processes build only their kernels
        _run_plant(script, "one"), _run_plant(script, "two")
        libs = {cache.read_meta(e.path)["name"]: e.path for e in cache.listing() if e.kind == "cpu"}
        one = os.path.basename(libs["put_one"])[:40]
        tmp = libs["put_one"] + ".new"
        with open(libs["put_two"], "rb") as src, open(tmp, "wb") as dst:   # put_two's library,
            dst.write(cache.encode(cache.decode(src.read())[0], {"entry": f"cpu/{one}"}))  # relabeled
        os.replace(tmp, libs["put_one"])         # under put_one's key
        assert _run_plant(script, "one")[0] == 2.0   # a safe folder: the plant is what runs (as intended)
    return script, d, one


@pytest.mark.parametrize("how", ["group-writable", "others-writable", "another owner"])
def test_a_planted_entry_in_an_unsafe_folder_is_not_loaded(planted, cache_dir, how):
    if how == "another owner" and os.geteuid() != 0:
        pytest.skip("giving the folder to another user needs root")
    script, prepared, one = planted
    shutil.copytree(prepared, cache_dir)     # the planted cache, its modes kept (private)
    if how == "another owner":
        os.chown(cache_dir, 65534, 65534)
        match = "owned by another user"
    else:
        os.chmod(cache_dir, 0o720 if how == "group-writable" else 0o702)
        match = "writable by group or others"
    value, err = _run_plant(script, "one")
    assert value == 1.0 and match in err     # compiled afresh, the plant not loaded; warned
    assert err.startswith(f"{script}:") and "ct.launch(None" in err    # at the user's line
    with pytest.warns(UserWarning, match=match):                      # here too
        assert cache.get("cpu", one, ".so") is None
        assert cache.listing() == [] and cache.clear() == (0, 0)


# ----------------------------------------------------------------------------- eviction races
def test_a_library_evicted_before_it_loads_still_runs(cache_dir, monkeypatch):
    @ct.kernel
    def fill9(a):
        ct.store(a, (0,), ct.full((4,), 9.0, dtype=ct.float32))

    real_put = cache.put

    def put_then_evict(*args, **kw):         # another process evicts right after the write
        path = real_put(*args, **kw)
        if path:
            os.unlink(path)
        return path
    monkeypatch.setattr(cache, "put", put_then_evict)
    a = np.zeros(4, np.float32)
    ct.launch(None, (1,), fill9, (a,))
    assert (a == 9).all()


SHARED = textwrap.dedent("""
    import sys, time
    import numpy as np
    import tilepy as ct
    from tilepy.launch import cpu
    seed = int(sys.argv[1])
    @ct.kernel
    def cp(a, b):
        ct.store(b, (0,), ct.load(a, (0,), (8,)) * 2)
    ok = 0
    end = time.time() + 3
    while time.time() < end or ok < 2:
        cpu._LOADED.clear()
        cp.__dict__.pop("_tp_plans", None)
        cp.cache.clear()
        a = np.arange(8, dtype=np.float32) + seed
        b = np.zeros(8, np.float32)
        ct.launch(None, (1,), cp, (a, b))
        assert (b == a * 2).all(), b
        ok += 1
    print("ok", ok)
""")


def test_processes_sharing_a_cache_with_a_one_byte_cap(cache_dir, tmp_path):
    """4 processes launch, load and evict each other's entries for a few seconds."""
    script = tmp_path / "shared_cache.py"
    script.write_text(SHARED)
    env = {**os.environ, "TILEPY_CACHE_SIZE": "1"}
    procs = [subprocess.Popen([sys.executable, str(script), str(s)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for s in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.startswith("ok"), err[-2000:]
    assert sum(e.size for e in cache.listing()) <= 10 << 20
