"""Precompiled headers for the CPU backend: the host compiler parses tilepy/runtime.h (and the C++
library headers it includes) once per compiler and flags instead of once per kernel.

Every kernel's source starts with `#include "tilepy/runtime.h"` (after a `#define TP_NT` that
the command line's -DTP_NT makes a no-op), and parsing it is most of a small kernel's compile
(about 1 CPU-s of the fast mode's 1.3 for a vector add). GCC looks for `tilepy/runtime.h.gch` in
each include folder before `tilepy/runtime.h` and uses it when it is valid for the compile (the
same compiler, code-generation options and, as far as the header mentions them, macros);
otherwise it goes on to the next folder and parses the header. A compile that may use a PCH gets
`-I<build folder>/pch` ahead of its flags, where `tilepy/runtime.h.gch` links to the cache entry.

A PCH is an accelerator, never an input:

* The kernel's cache key is computed without it and its library is the same, byte for byte
  (tests/test_cpu_pch.py compares them).
* It is a cache entry (kind `pch`) keyed by tilepy's version, the compiler, the flags less the
  link-only ones (`-shared`, `-l...`) and the headers' text; its checksum is verified once per
  process before its first use, and a corrupt one is removed (and built again when due). A
  compile that fails with a PCH is run again without it and that run is the answer; when the
  plain run succeeds, the PCH is removed.
* No cache (TILEPY_CACHE_DIR=off, an unwritable folder), TILEPY_CPU_PCH=0, or a compiler other
  than GCC (clang reads no .gch through `#include`): no PCH, plain compiles.

When it is built: building one costs about two plain compiles (2.5 CPU-s: parsing plus writing
a 50 MB file) and saves about 0.5 s of each later compile with the same flags. It is built at
the fourth compile with the same flags in a cache (BUILD_AT, counted in the cache's memo
`pch.json` across processes): a session, or a test with a cache of its own, that compiles a
few kernels never pays for it, and a cache in steady use has it after its first kernels (a
cache lives across sessions, and each later compile wins back a fifth of the build).
Only in caches capped at MIN_CACHE_SIZE or more (the default cap is 2 GiB): a smaller one would
evict kernels for it. One process builds it at a time (a lock file beside the entry); the
others compile plainly meanwhile.

The faithful mode's headers need its thread count at parse time (`NT` is a constexpr of TP_NT
that layouts' static members and static_asserts read outside any template argument; GCC
rejects a PCH made with another TP_NT), so it has one PCH per TP_NT; the fast mode (TP_NT=1)
one.
"""
from __future__ import annotations

import json
import os
import re
import stat
import time

from ..settings import settings
from . import cache, cache_fs as fs

HEADER = "tilepy/runtime.h"
BUILD_AT = 4                  # the compile with the same flags (in a cache) that builds the PCH
MIN_CACHE_SIZE = 1 << 30      # a smaller cache would evict kernels for PCHs (~50 MB each)
LOCK_SECONDS = 300            # a build lock older than this is left by a killed build
MEMO = "pch.json"             # {PCH key: compiles counted}, the most recent MEMO_KEYS keys
MEMO_KEYS = 64
_GCC = re.compile(r"g\+\+|c\+\+|\bgcc\b|\bGCC\b")

_verified: dict[str, tuple] = {}        # entry path -> (device, inode, size) checked
_refused: set[str] = set()              # entry paths this process could not build or keep
builds = 0                              # PCHs this process built (tests read it)


def supported(compiler_id: str) -> bool:
    """Whether the compiler (its `--version` line) reads GCC's precompiled headers."""
    return "clang" not in compiler_id.lower() and _GCC.search(compiler_id) is not None


def build_flags(opts: list[str]) -> list[str]:
    """The flags a PCH is built with: the kernel's, less the ones only linking reads."""
    return [f for f in opts if f != "-shared" and not f.startswith("-l")]


def source_defines(source: str) -> list[str]:
    """What an emitted source defines before including the runtime, as flags: a kernel with an
    sm_90a class defines TP_WGMMA first (targets.WGMMA_MACRO; 0 with a host compiler), which the
    runtime reads, and GCC takes a PCH only where such macros were defined alike when it was
    made. So those kernels' PCH is made with -DTP_WGMMA=0, and with -DTP_WGMMA=1 for a build
    that defines it 1 itself (the sm_90a class on the CPU; GCC checks the PCH against each compile
    and parses the header where they differ)."""
    from ..cuda_c.targets import WGMMA_MACRO, defines_wgmma
    head = source[:max(0, source.find(f'#include "{HEADER}"'))]
    if defines_wgmma(head):
        return ["-DTP_WGMMA=1"]
    return ["-DTP_WGMMA=0"] if "\n".join(WGMMA_MACRO) in head else []


def key_of(compiler_id: str, opts: list[str], headers) -> str:
    from ..version import __version__
    return cache.key_of("pch", __version__, compiler_id, build_flags(opts), headers)


def include_flags(cxx: str, compiler_id: str, opts: list[str], headers, include_dir: str,
                  folder: str, source: str = "") -> list[str]:
    """`-I` flags that let this compile (flags `opts`, in build folder `folder`, of `source`)
    use the PCH, building it when due; [] when there is none to use."""
    s = settings()
    small = s.cache_size is not None and s.cache_size < MIN_CACHE_SIZE
    if not s.cpu_pch or small or not supported(compiler_id):
        return []
    opts = [*opts, *source_defines(source)]
    key = key_of(compiler_id, opts, headers)
    path = _ready(key)
    if path is None:
        if not _due(key):
            return []
        path = _build(cxx, compiler_id, opts, include_dir, key)
        if path is None:
            return []
    inc = os.path.join(folder, "pch")
    try:
        os.makedirs(os.path.join(inc, os.path.dirname(HEADER)), exist_ok=True)
        os.symlink(path, os.path.join(inc, HEADER + ".gch"))
        # GCC takes the PCH only for a source's first include; a later include of the header
        # (a hand-written source that includes it again, `#pragma once` makes that a no-op)
        # finds the .gch here, may not use it and then wants the header beside it: without
        # this link that compile failed, was rerun plainly and removed the PCH (rebuilt at the
        # next compile with these flags)
        os.symlink(os.path.join(include_dir, HEADER), os.path.join(inc, HEADER))
    except OSError:
        return []
    return [f"-I{inc}"]


def failed(flags: list[str]):
    """A compile failed with `flags` (include_flags') and succeeded without: remove its PCH."""
    for f in flags:
        link = os.path.join(f[2:], HEADER + ".gch")
        try:
            path = os.readlink(link)
        except OSError:
            continue
        _verified.pop(path, None)
        fs.unlink(path)


def _ready(key: str) -> str | None:
    """The path of the verified PCH entry for `key`, or None (absent; corrupt, then removed)."""
    path = cache.path_for("pch", key, ".gch")
    if path is None:
        return None
    ident = _identity(path)
    if ident is None:
        return None
    if _verified.get(path) == ident:
        try:
            os.utime(path, follow_symlinks=False)        # last used, for eviction
        except OSError:
            pass
        return path
    if cache.get("pch", key, ".gch") is None:          # truncated, corrupt, another key's
        fs.unlink(path)
        return None
    _verified[path] = ident
    return path


def _identity(path: str) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size) if stat.S_ISREG(st.st_mode) else None


def _due(key: str) -> bool:
    """Count this compile in the cache's memo; whether it is the BUILD_AT-th (or later) with
    these flags."""
    try:
        memo = json.loads(cache.read_memo(MEMO) or b"{}")
    except ValueError:
        memo = {}
    if not isinstance(memo, dict):
        memo = {}
    seen = memo.pop(key, 0)
    n = (seen if isinstance(seen, int) else 0) + 1
    if n < BUILD_AT:
        memo[key] = n
        cache.write_memo(MEMO, json.dumps(dict(list(memo.items())[-MEMO_KEYS:])).encode())
    return n >= BUILD_AT


def _build(cxx: str, compiler_id: str, opts: list[str], include_dir: str, key: str) -> str | None:
    """Build the PCH for `key` and keep it in the cache; its path, or None (another process is
    building it, the compiler failed, the cache did not keep it)."""
    global builds
    path = cache.path_for("pch", key, ".gch", create=True)
    if path is None or path in _refused:
        return None
    lock = _lock(path)
    if lock is None:
        return None
    from . import cpu_build
    try:
        with cpu_build.folder() as d:
            out = os.path.join(d, "runtime.h.gch")
            try:                    # a failure here is no PCH, never a failed kernel compile
                proc = cpu_build.run([cxx, *build_flags(opts), "-x", "c++-header",
                                      os.path.join(include_dir, HEADER), "-o", out], None)
                with open(out, "rb") as f:
                    data = f.read() if proc.returncode == 0 else b""
            except OSError:
                data = b""
        meta = {"kind": "pch", "name": f"{HEADER} (precompiled, {_shown(opts)})",
                "compiler": compiler_id}
        kept = bool(data) and cache.put("pch", key, data, meta, ".gch") is not None
    finally:
        fs.unlink(lock)
    ident = _identity(path) if kept else None
    if ident is None:
        _refused.add(path)
        return None
    builds += 1
    _verified[path] = ident
    return path


def _shown(opts: list[str]) -> str:
    """The flags that tell a PCH from another in `cache list`: the mode, TP_NT, the macros."""
    mode = "faithful" if "-DTP_FAITHFUL" in opts else "fast"
    return ", ".join([mode] + [f[2:] for f in opts if f.startswith("-DTP_") and f != "-DTP_FAITHFUL"])


def _lock(path: str) -> str | None:
    """A lock file beside the entry `path`, made here (its path), or None when another process
    holds it (younger than LOCK_SECONDS)."""
    lock = os.path.join(os.path.dirname(path), fs.TMP_PREFIX + os.path.basename(path) + ".lock")
    if not fs.make_private_dirs(os.path.dirname(path)):
        return None
    for _ in range(2):
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return lock
        except FileExistsError:
            try:
                if time.time() - os.lstat(lock).st_mtime < LOCK_SECONDS:
                    return None
            except OSError:
                continue
            fs.unlink(lock)                          # a killed build's
        except OSError:
            return None
    return None
