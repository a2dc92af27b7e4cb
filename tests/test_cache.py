"""The disk cache: location, key, atomic entries, corruption = miss, concurrent processes,
size cap with eviction, the CLI, and the CPU backend's libraries in the same cache."""
import errno
import io
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import cache_seed
import tilepy as ct
from tilepy import __main__ as cli
from tilepy.launch import cache, cpu, nvrtc, toolchain
from tilepy.settings import parse_size, settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SRC = '#include "tilepy/runtime.h"\nextern "C" __global__ void k(float* p) { p[threadIdx.x] = %d; }\n'


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(d))
    return d


def entry_files(d, kind):
    """The kernels' entries of `kind` in cache `d` (not the CPU backend's helpers: the worker
    pool, the C warm launch path and the support objects, built once per cache)."""
    files = sorted(p for p in (d / kind).rglob("*") if p.is_file()) if (d / kind).exists() else []
    return [p for p in files if (cache.decode(p.read_bytes()) or (b"", {}))[1].get("kind")
            not in ("pool", "warm", "support")]


# ----------------------------------------------------------------------------- location, settings
def test_default_dir_is_xdg_with_version(monkeypatch, tmp_path):
    monkeypatch.delenv("TILEPY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert settings().cache_dir == os.path.join(str(tmp_path), "tilepy", ct.__version__)
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert settings().cache_dir == os.path.join(os.path.expanduser("~"), ".cache", "tilepy",
                                                ct.__version__)


def test_env_dir_and_off(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "x"))
    assert settings().cache_dir == str(tmp_path / "x")
    for off in ("off", "OFF", " off "):
        monkeypatch.setenv("TILEPY_CACHE_DIR", off)
        assert settings().cache_dir is None
        assert cache.put("cubin", "ab" * 20, b"data", {}) is None
        assert cache.get("cubin", "ab" * 20) is None


def test_cache_off_still_compiles_and_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    out = nvrtc.compile_cubin(SRC % 11, "sm_80", "k")
    assert out.data[:4] == b"\x7fELF"
    assert not (tmp_path / "xdg").exists()


@pytest.mark.parametrize("text,expected", [("500M", 500 << 20), ("2G", 2 << 30), ("1024", 1024),
                                           ("1.5k", 1536), ("0", None), ("unlimited", None)])
def test_size_parsing(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["lots", "-5", "inf", "nan", "5X", "0.0001"])
def test_bad_size_is_an_error(text):
    with pytest.raises(ct.TileValueError, match=f"TILEPY_CACHE_SIZE='{text}' is not valid"):
        parse_size(text)


# ----------------------------------------------------------------------------- entries
def test_key_covers_every_part():
    base = ("cubin", "0.1.0", "13.5", "sm_90", "opts", "src")
    keys = {cache.key_of(*base)}
    for i in range(len(base)):
        changed = list(base)
        changed[i] = changed[i] + "x"
        keys.add(cache.key_of(*changed))
    assert len(keys) == len(base) + 1
    assert cache.key_of("ab", "c") != cache.key_of("a", "bc")     # parts are delimited


def test_roundtrip_and_metadata(cache_dir):
    p = cache.put("cubin", "12" * 20, b"\x7fELFpayload", {"arch": "sm_90", "log": "x"})
    assert p.startswith(str(cache_dir)) and os.path.basename(os.path.dirname(p)) == "12"
    e = cache.get("cubin", "12" * 20)
    assert e.payload == b"\x7fELFpayload"
    assert e.meta == {"arch": "sm_90", "log": "x", "entry": "cubin/" + "12" * 20}


@pytest.mark.parametrize("kind,suffix", [("cubin", ""), ("spec", ""), ("cpu", ".so")])
def test_an_entry_copied_over_another_keys_is_a_miss(cache_dir, kind, suffix):
    """Each entry records the key it answers; a whole, valid entry under another key's name
    (copied, moved, planted) is refused, not served."""
    a = cache.put(kind, "56" * 20, b"\x7fELF first", {}, suffix)
    b = cache.put(kind, "78" * 20, b"\x7fELF second", {}, suffix)
    with open(a, "rb") as f:
        data = f.read()
    with open(b, "wb") as f:
        f.write(data)
    assert cache.get(kind, "56" * 20, suffix).payload == b"\x7fELF first"
    assert cache.get(kind, "78" * 20, suffix) is None


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_a_cache_that_cannot_be_written_says_so_once(cache_dir, monkeypatch, err):
    """A full or read-only disk: the entry is not kept, and a warning names the folder and the
    reason, once per process."""
    import tempfile
    from tilepy.launch import cache_fs

    def refuse(*a, **k):
        raise OSError(err, os.strerror(err))
    cache.put("cubin", "9a" * 20, b"first", {})                 # the folder exists
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    monkeypatch.setattr(cache_fs, "_warned", set())
    with pytest.warns(UserWarning, match=f"cannot write to {cache_dir}.*{os.strerror(err)}"):
        assert cache.put("cubin", "9b" * 20, b"second", {}) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.put("cubin", "9c" * 20, b"third", {}) is None     # said once


def test_a_cache_folder_that_cannot_be_made_says_so(tmp_path, monkeypatch):
    from tilepy.launch import cache_fs

    def refuse(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setenv("TILEPY_CACHE_DIR", str(tmp_path / "ro" / "cache"))
    monkeypatch.setattr(os, "mkdir", refuse)
    monkeypatch.setattr(cache_fs, "_warned", set())
    with pytest.warns(UserWarning, match=f"cannot write to {tmp_path}/ro/cache: Read-only"):
        assert cache.put("cubin", "9d" * 20, b"x", {}) is None


def test_a_cpu_library_copied_over_another_kernels_is_rebuilt(cache_dir):
    """Kernel 2's cached library (built by another process) replaced by kernel 1's: this
    process compiles kernel 2 again and runs kernel 2's code, not kernel 1's."""
    cache_seed.seed(cache_dir)                     # the child builds only its kernel
    out = np.zeros(1, np.float32)
    cpu.compile_kernel(SRC % 1, "k", threads=1, mode="fast")(1, out)
    (one,) = entry_files(cache_dir, "cpu")
    child = (f"from tilepy.launch import cpu\n"
             f"cpu.compile_kernel({SRC % 2!r}, 'k', threads=1, mode='fast')\n")
    subprocess.run([sys.executable, "-c", child], check=True, cwd=ROOT)
    (two,) = set(entry_files(cache_dir, "cpu")) - {one}
    tmp = two.with_suffix(".bad")
    tmp.write_bytes(one.read_bytes())
    os.replace(tmp, two)
    cpu._LOADED.clear()
    cpu.compile_kernel(SRC % 2, "k", threads=1, mode="fast")(1, out)
    assert out[0] == 2


def corruptions(data: bytes):
    yield "empty", b""
    yield "truncated", data[:len(data) // 2]
    yield "truncated trailer", data[:-3]
    yield "flipped payload byte", bytes([data[0] ^ 1]) + data[1:]
    yield "flipped metadata byte", data[:20] + bytes([data[20] ^ 1]) + data[21:]
    yield "appended", data + b"junk"
    yield "garbage", os.urandom(len(data))


@pytest.mark.parametrize("how", [c for c, _ in corruptions(b"x" * 64)])
def test_corrupt_entry_is_a_miss(cache_dir, how):
    path = cache.put("cubin", "34" * 20, b"\x7fELF" + b"p" * 40, {"arch": "sm_80"})
    data = pathlib.Path(path).read_bytes()
    bad = dict(corruptions(data))[how]
    with open(path, "wb") as f:
        f.write(bad)
    assert cache.get("cubin", "34" * 20) is None


@pytest.mark.parametrize("how", ["truncated", "flipped payload byte", "garbage"])
def test_corrupt_cubin_is_recompiled_not_returned(cache_dir, how):
    first = nvrtc.compile_cubin(SRC % 21, "sm_80", "k")
    (path,) = entry_files(cache_dir, "cubin")
    bad = dict(corruptions(path.read_bytes()))[how]
    path.write_bytes(bad)
    again = nvrtc.compile_cubin(SRC % 21, "sm_80", "k")
    assert again.data == first.data
    assert cache.decode(path.read_bytes()) is not None        # rewritten whole


def test_corrupt_cpu_library_is_rebuilt(cache_dir):
    @ct.kernel
    def fill(a):
        ct.store(a, (0,), ct.full((8,), 3.0, dtype=ct.float32))

    a = np.zeros(8, np.float32)
    ct.launch(None, (1,), fill, (a,))
    (path,) = entry_files(cache_dir, "cpu")
    # A truncated .so (as a new file: this process has the old one mapped, and truncating a
    # mapped file in place would crash it -- which is why the cache only ever renames).
    tmp = path.with_suffix(".bad")
    tmp.write_bytes(path.read_bytes()[:100])
    os.replace(tmp, path)
    cpu._LOADED.clear()
    fill.__dict__.pop("_tp_plans", None)
    fill.cache.clear()
    a[:] = 0
    ct.launch(None, (1,), fill, (a,))
    assert (a == 3).all()
    assert cache.decode(path.read_bytes()) is not None


INC = textwrap.dedent("""
    import sys, numpy as np
    import tilepy as ct
    from tilepy.launch import cpu
    if sys.argv[1] == "forbid":
        def no_compiler(*a):
            raise AssertionError("the host compiler ran despite a cache hit")
        cpu._compile = no_compiler
    @ct.kernel
    def inc(a):
        ct.store(a, (0,), ct.load(a, (0,), (4,)) + 1)
    a = np.zeros(4, np.int32)
    ct.launch(None, (1,), inc, (a,))
    print(a.tolist())
""")


def test_cpu_library_is_found_by_a_new_process(cache_dir, tmp_path):
    cache_seed.seed(cache_dir)                     # the processes build only the kernel
    src = tmp_path / "inc_kernel.py"
    src.write_text(INC)
    for mode in ("compile", "forbid"):
        proc = subprocess.run([sys.executable, str(src), mode], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "[1, 1, 1, 1]"
    (path,) = entry_files(cache_dir, "cpu")
    assert cache.read_meta(str(path))["name"] == "inc"
    assert path.read_bytes()[:4] == b"\x7fELF"         # loaded straight from the entry file


# ----------------------------------------------------------------------------- concurrency
WORKER = textwrap.dedent("""
    import sys
    from tilepy.launch import cache, nvrtc
    SRC = {src!r}
    seed = int(sys.argv[1])
    for i in range(6):
        n = (seed + i) % 3
        out = nvrtc.compile_cubin(SRC % n, "sm_80", "k")
        assert out.data[:4] == b"\\x7fELF", "bad cubin"
        # raw entries too: many writers of one key, readers never see a partial entry
        key = "ee" * 20
        cache.put("ptx", key, bytes([seed]) * 200000, {{"seed": seed}})
        e = cache.get("ptx", key)
        assert e is not None and len(set(e.payload)) == 1 and e.payload[0] == e.meta["seed"]
    print("ok")
""")


def test_concurrent_processes_share_the_cache_safely(cache_dir):
    script = WORKER.format(src=SRC)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(s)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for s in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err
    assert len(entry_files(cache_dir, "cubin")) == 3
    assert not [p for p in cache_dir.rglob(cache.TMP_PREFIX + "*")]
    for p in entry_files(cache_dir, "cubin"):
        assert cache.decode(p.read_bytes()) is not None


# ----------------------------------------------------------------------------- eviction
def test_size_cap_evicts_least_recently_used(cache_dir, monkeypatch):
    monkeypatch.setenv("TILEPY_CACHE_SIZE", "0")
    paths = []
    for i in range(5):
        paths.append(cache.put("ptx", f"{i:02d}" * 20, b"x" * 10_000, {}))
        os.utime(paths[-1], (1000 + i, 1000 + i))
    cache.get("ptx", "00" * 20)                    # a hit makes entry 0 the most recent
    monkeypatch.setenv("TILEPY_CACHE_SIZE", "35000")
    new = cache.put("ptx", "99" * 20, b"y" * 10_000, {})
    left = {p for p in map(str, entry_files(cache_dir, "ptx"))}
    assert new in left and paths[0] in left
    assert paths[1] not in left and paths[2] not in left      # the two least recently used
    assert sum(os.path.getsize(p) for p in left) <= 35000


def test_a_put_lists_the_cache_only_when_it_may_be_over_its_cap(cache_dir, monkeypatch):
    """Listing is a stat of every entry: a put evicts when what this process listed plus what
    it put since passes the cap, or when its listing is RELIST_SECONDS old."""
    monkeypatch.setenv("TILEPY_CACHE_SIZE", "45000")
    listings = []
    real = cache.listing
    monkeypatch.setattr(cache, "listing", lambda *a: listings.append(1) or real(*a))
    first = cache.put("ptx", "01" * 20, b"x" * 10_000, {})
    os.utime(first, (1, 1))                                    # the least recently used
    for i in range(2, 5):
        cache.put("ptx", f"{i:02d}" * 20, b"x" * 10_000, {})
    assert len(listings) == 1 and len(entry_files(cache_dir, "ptx")) == 4     # 40 KB: under
    cache.put("ptx", "05" * 20, b"x" * 10_000, {})            # 50 KB: listed, the first evicted
    assert len(listings) == 2 and not os.path.exists(first)
    (cache_dir / "ptx" / "01").mkdir(exist_ok=True)
    (cache_dir / "ptx" / "01" / ("01" * 20)).write_bytes(cache.encode(b"y" * 20_000, {}))
    cache.put("ptx", "06" * 20, b"x" * 10, {})               # another process's entry: unseen
    assert len(listings) == 2
    for seen in cache._LISTED.values():                       # the listing is old now
        seen[1] -= cache.RELIST_SECONDS
    cache.put("ptx", "07" * 20, b"x" * 10, {})
    assert len(listings) == 3 and sum(p.stat().st_size for p in entry_files(cache_dir, "ptx")) <= 45000


def test_stale_temporary_files_are_removed(cache_dir):
    cache.put("ptx", "aa" * 20, b"x", {})
    stale = cache_dir / "ptx" / "aa" / (cache.TMP_PREFIX + "dead")
    stale.write_bytes(b"partial")
    os.utime(stale, (1, 1))
    fresh = cache_dir / "ptx" / "aa" / (cache.TMP_PREFIX + "live")
    fresh.write_bytes(b"being written")
    removed = cache.evict(1 << 30)
    assert str(stale) in removed and fresh.exists()


# ----------------------------------------------------------------------------- CLI
def test_cli_list_and_clear(cache_dir):
    nvrtc.compile_cubin(SRC % 5, "sm_90", "listed_kernel")
    bad = cache.put("cubin", "bb" * 20, b"\x7fELF", {"name": "x"})
    with open(bad, "r+b") as f:
        f.write(b"XXXX")
    out = io.StringIO()
    assert cli.main(["cache", "list"], out) == 0
    text = out.getvalue()
    assert str(cache_dir) in text and "listed_kernel sm_90" in text
    assert "CORRUPT" in text and "2 entries" in text
    out = io.StringIO()
    assert cli.main(["cache", "clear"], out) == 0
    assert "removed" in out.getvalue()
    assert cache.listing() == []
    out = io.StringIO()
    cli.main(["cache", "list"], out)
    assert "no entries" in out.getvalue()


def test_cli_runs_as_module(cache_dir):
    proc = subprocess.run([sys.executable, "-m", "tilepy", "cache", "dir"], capture_output=True,
                          text=True, env={**os.environ})
    assert proc.returncode == 0 and proc.stdout.strip() == str(cache_dir)
    proc = subprocess.run([sys.executable, "-m", "tilepy", "cache", "list"], capture_output=True,
                          text=True, env={**os.environ, "TILEPY_CACHE_DIR": "off"})
    assert "off" in proc.stdout


# ----------------------------------------------------------------------------- toolchain memo
def test_toolchain_memo_is_used_and_invalidated(cache_dir, monkeypatch):
    toolchain.info.cache_clear()
    tc = toolchain.info()
    memo = cache_dir / toolchain.MEMO
    data = json.loads(memo.read_text())
    assert data["toolchain"]["nvrtc_version"] == tc.nvrtc_version
    # a valid memo is trusted without loading NVRTC
    toolchain.info.cache_clear()
    monkeypatch.setattr(toolchain, "probe", lambda: pytest.fail("probed despite a valid memo"))
    assert toolchain.info() == tc
    # a changed environment (fingerprint) re-derives it
    toolchain.info.cache_clear()
    monkeypatch.setenv("CUDA_HOME", "/elsewhere")
    probed = []
    monkeypatch.setattr(toolchain, "probe", lambda: probed.append(1) or tc)
    assert toolchain.info() == tc and probed == [1]
    # a corrupt memo too
    toolchain.info.cache_clear()
    memo.write_text("{not json")
    assert toolchain.info() == tc and probed == [1, 1]
    toolchain.info.cache_clear()


def test_headers_match_nvrtc_major():
    tc = toolchain.info()
    assert int(tc.runtime_version) // 1000 == tc.major
    assert os.path.exists(os.path.join(tc.include_dir, "cuda_fp16.h"))
    assert 80 in tc.supported_archs and 90 in tc.supported_archs


def test_host_compiler_version_is_remembered(cache_dir, monkeypatch):
    import shutil
    import subprocess as sp
    cxx = shutil.which("g++") or shutil.which("c++")
    first = toolchain.compiler_version(cxx)
    assert first and json.loads((cache_dir / toolchain.COMPILERS).read_text())
    monkeypatch.setattr(sp, "run", lambda *a, **k: pytest.fail("ran the compiler again"))
    assert toolchain.compiler_version(cxx) == first


def test_cache_off_cpu_backend_leaves_no_files(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPY_CACHE_DIR", "off")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)

    @ct.kernel
    def neg(a):
        ct.store(a, (0,), -ct.load(a, (0,), (4,)))
    a = np.arange(4, dtype=np.float32)
    ct.launch(None, (1,), neg, (a,))
    assert a.tolist() == [0, -1, -2, -3]
    assert list(tmp_path.iterdir()) == []


def test_settings_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("TILEPY_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for home in ("a", "b"):
        monkeypatch.setenv("HOME", str(tmp_path / home))
        assert settings().cache_dir == str(tmp_path / home / ".cache" / "tilepy" / ct.__version__)
    monkeypatch.setenv("TILEPY_CPU_WORKERS", "3")
    assert settings().cpu_workers == 3
    monkeypatch.setenv("TILEPY_CPU_WORKERS", "")
    assert settings().cpu_workers == (os.cpu_count() or 1)
