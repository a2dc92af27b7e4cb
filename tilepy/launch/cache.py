"""The disk cache of compiled artifacts (cubins, PTX, CPU shared libraries), content-addressed.

Layout: `<cache dir>/<kind>/<key[:2]>/<key><suffix>`; the cache dir is
`$XDG_CACHE_HOME/tilepy/<version>` unless TILEPY_CACHE_DIR says otherwise ("off": no disk cache).
A key hashes everything that determines the bytes (callers pass tilepy's version, the compiler's
version, target, options and the source).

One entry is one file: the payload, a JSON metadata block, then a fixed trailer

    magic "TPCACHE1" | payload length (u64) | metadata length (u32) | sha256(payload + metadata)

so a truncated or corrupt file is recognized and treated as a miss, never as a kernel. A shared
library stays loadable with the trailer appended (the ELF loader reads only what the headers
point at). Writes go to a temporary file in the same folder and are published with os.replace,
so concurrent processes see a whole entry or none; two processes compiling the same key both
write equivalent bytes. Past the size cap (TILEPY_CACHE_SIZE) the least recently used entries
are evicted; a hit refreshes the entry's mtime, which is the "last used" time.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import time
from dataclasses import dataclass

from ..settings import settings

MAGIC = b"TPCACHE1"
_TRAILER = struct.Struct("<8sQI32s")
TMP_PREFIX = ".tmp-"
STALE_TMP_SECONDS = 3600


def key_of(*parts) -> str:
    """Hash of the parts (bytes, str, or anything with a stable str); 40 hex digits."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


@dataclass
class Entry:
    path: str
    payload: bytes
    meta: dict


def cache_dir() -> str | None:
    return settings().cache_dir


def path_for(kind: str, key: str, suffix: str = "") -> str | None:
    d = cache_dir()
    if d is None:
        return None
    return os.path.join(d, kind, key[:2], key + suffix)


def encode(payload: bytes, meta: dict) -> bytes:
    m = json.dumps(meta, sort_keys=True).encode()
    digest = hashlib.sha256(payload + m).digest()
    return payload + m + _TRAILER.pack(MAGIC, len(payload), len(m), digest)


def decode(data: bytes) -> tuple[bytes, dict] | None:
    """(payload, metadata) of a whole, uncorrupted entry; None for anything else."""
    if len(data) < _TRAILER.size:
        return None
    magic, n, m, digest = _TRAILER.unpack_from(data, len(data) - _TRAILER.size)
    if magic != MAGIC or n + m + _TRAILER.size != len(data):
        return None
    body = memoryview(data)[:n + m]
    if hashlib.sha256(body).digest() != digest:
        return None
    try:
        meta = json.loads(bytes(body[n:]))
    except ValueError:
        return None
    return bytes(body[:n]), meta if isinstance(meta, dict) else {}


def get(kind: str, key: str, suffix: str = "") -> Entry | None:
    """The entry for `key`, or None (no cache, absent, truncated, corrupt or unreadable)."""
    path = path_for(kind, key, suffix)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    found = decode(data)
    if found is None:
        return None
    try:
        os.utime(path)             # last used, for eviction
    except OSError:
        pass
    return Entry(path, found[0], found[1])


def put(kind: str, key: str, payload: bytes, meta: dict, suffix: str = "") -> str | None:
    """Store an entry atomically; returns its path (None when the cache is off or not writable)."""
    path = path_for(kind, key, suffix)
    if path is None:
        return None
    import tempfile
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(encode(payload, meta))
        os.replace(tmp, path)
    except OSError:
        _unlink(tmp)
        return None
    except BaseException:
        _unlink(tmp)
        raise
    cap = settings().cache_size
    if cap is not None:
        evict(cap, keep=path)
    return path


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------- listing, eviction
@dataclass
class Listed:
    path: str
    kind: str
    key: str
    size: int
    mtime: float


def listing(root: str | None = None) -> list[Listed]:
    """Every entry file under the cache dir (temporary files excluded), oldest use first."""
    root = root or cache_dir()
    out = []
    if root is None or not os.path.isdir(root):
        return out
    for kind in sorted(os.listdir(root)):
        kdir = os.path.join(root, kind)
        if not os.path.isdir(kdir):
            continue
        for dirpath, _, files in os.walk(kdir):
            for name in files:
                if name.startswith(TMP_PREFIX):
                    continue
                p = os.path.join(dirpath, name)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out.append(Listed(p, kind, name.split(".")[0], st.st_size, st.st_mtime))
    out.sort(key=lambda e: e.mtime)
    return out


def read_meta(path: str) -> dict | None:
    try:
        with open(path, "rb") as f:
            found = decode(f.read())
    except OSError:
        return None
    return None if found is None else found[1]


def evict(cap: int, keep: str | None = None, root: str | None = None) -> list[str]:
    """Remove least recently used entries until the cache is under `cap` bytes; also removes
    temporary files left by processes that died mid-write. Returns the removed paths."""
    root = root or cache_dir()
    removed = []
    if root is None:
        return removed
    _remove_stale_tmp(root, removed)
    entries = listing(root)
    total = sum(e.size for e in entries)
    for e in entries:
        if total <= cap:
            break
        if e.path == keep:
            continue
        if _unlink(e.path):
            removed.append(e.path)
        total -= e.size
    return removed


def _remove_stale_tmp(root: str, removed: list[str]):
    now = time.time()
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.startswith(TMP_PREFIX):
                p = os.path.join(dirpath, name)
                try:
                    old = now - os.stat(p).st_mtime > STALE_TMP_SECONDS
                except OSError:
                    continue
                if old and _unlink(p):
                    removed.append(p)


def clear(root: str | None = None) -> tuple[int, int]:
    """Remove every entry (and temporary file); returns (files removed, bytes freed)."""
    root = root or cache_dir()
    n = freed = 0
    if root is None or not os.path.isdir(root):
        return n, freed
    for dirpath, dirs, files in os.walk(root, topdown=False):
        for name in files:
            p = os.path.join(dirpath, name)
            try:
                size = os.stat(p).st_size
            except OSError:
                continue
            if _unlink(p):
                n += 1
                freed += size
        for d in dirs:
            try:
                os.rmdir(os.path.join(dirpath, d))
            except OSError:
                pass
    return n, freed
