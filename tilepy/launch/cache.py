"""The disk cache of compiled artifacts (cubins, PTX, CPU shared libraries), content-addressed.

Layout: `<cache dir>/<kind>/<key[:2]>/<key><suffix>`; the cache dir is
`$XDG_CACHE_HOME/tilepy/<version>` unless TILEPY_CACHE_DIR says otherwise ("off": no disk cache).
A key hashes everything that determines the bytes (callers pass tilepy's version, the compiler's
version, target, options and the source).

One entry is one file: the payload, a JSON metadata block, then a fixed trailer

    magic "TPCACHE1" | payload length (u64) | metadata length (u32) | sha256(payload + metadata)

so a truncated or corrupt file is recognized and treated as a miss, never as a kernel. The
metadata names the entry it was written as (`"entry": "<kind>/<key>"`): a file copied or moved
over another entry's name is a miss too (an entry never serves a key it was not built for). A
shared library stays loadable with the trailer appended (the ELF loader reads only what the headers
point at). Writes go to a temporary file in the same folder and are published with os.replace,
so concurrent processes see a whole entry or none; two processes compiling the same key both
write equivalent bytes. Past the size cap (TILEPY_CACHE_SIZE) the least recently used entries
are evicted; a hit refreshes the entry's mtime, which is the "last used" time.

The folder must be the user's own, private and marked as tilepy's, and only the names tilepy
writes are ever listed, evicted or cleared (cache_fs.py says how and why).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import time
from dataclasses import dataclass

from ..settings import settings
from . import cache_fs as fs

MAGIC = b"TPCACHE1"
_TRAILER = struct.Struct("<8sQI32s")
TMP_PREFIX = fs.TMP_PREFIX
STALE_TMP_SECONDS = 3600


def key_of(*parts) -> str:
    """Hash of the parts (bytes, str, or anything with a stable str); 40 hex digits."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.key_bytes() if isinstance(p, _KeyOnce)
                 else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


class _KeyOnce:
    """A large key part that does not change (the runtime headers' texts, 340 KB, in every
    kernel's key): its str(), which key_of hashes, is made once (it took 4-10 ms a key). The
    same text as the plain tuple's or dict's: the same keys."""

    def key_bytes(self) -> bytes:
        found = self.__dict__.get("_key_bytes")
        if found is None:
            found = self.__dict__["_key_bytes"] = super().__str__().encode()
        return found


class KeyTexts(_KeyOnce, tuple):
    """A tuple of texts that key_of reads once."""


class KeyTextMap(_KeyOnce, dict):
    """A dict of texts that key_of reads once (not to be changed after its first key)."""


@dataclass
class Entry:
    path: str
    payload: bytes
    meta: dict


def cache_dir() -> str | None:
    """The cache folder from the settings (None: TILEPY_CACHE_DIR=off). Whether it may be used
    is `root()`'s question."""
    return settings().cache_dir


def root(create: bool = False) -> str | None:
    """The cache folder when the cache may use it (private, owned, marked: cache_fs.py); with
    `create`, made when absent. None: off, refused (warned once), or (without create) absent."""
    d = cache_dir()
    return d if d is not None and fs.claim(d, create) else None


def path_for(kind: str, key: str, suffix: str = "", create: bool = False) -> str | None:
    if kind not in fs.KINDS or suffix not in fs.SUFFIXES or not fs.KEY_RE.fullmatch(key):
        raise ValueError(f"not a cache entry name: {kind}/{key}{suffix}")
    d = root(create)
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


def _name(kind: str, key: str) -> str:
    return f"{kind}/{key}"


def get(kind: str, key: str, suffix: str = "") -> Entry | None:
    """The entry for `key`, or None (no cache, absent, truncated, corrupt, not a regular file,
    unreadable, written for another key)."""
    path = path_for(kind, key, suffix)
    if path is None:
        return None
    data = fs.read_file(path)
    found = None if data is None else decode(data)
    if found is None or found[1].get("entry") != _name(kind, key):
        return None
    try:
        os.utime(path, follow_symlinks=False)      # last used, for eviction
    except (OSError, NotImplementedError):
        pass
    return Entry(path, found[0], found[1])


def put(kind: str, key: str, payload: bytes, meta: dict, suffix: str = "") -> str | None:
    """Store an entry atomically; returns its path (None when the cache is off or not writable)."""
    path = path_for(kind, key, suffix, create=True)
    data = encode(payload, {**meta, "entry": _name(kind, key)})
    if path is None or not fs.write_file(path, data):
        return None
    cap = settings().cache_size
    if cap is not None:
        _evict_when_due(cap, path, len(data))
    return path


# Evicting lists the cache (a stat of every entry: 20 ms at 1,000 entries, which every new kernel
# paid), so a put lists it again only when the total this process last listed plus what it has
# put since passes the cap, or when that listing is RELIST_SECONDS old: the cache may pass its
# cap by what other processes stored meanwhile (each of them counts its own puts).
RELIST_SECONDS = 10.0
_LISTED: dict = {}        # (folder, cap) -> [bytes listed + bytes put since, time of the listing]


def _evict_when_due(cap: int, path: str, size: int):
    d = os.path.dirname(os.path.dirname(os.path.dirname(path)))     # <folder>/<kind>/<xx>/<entry>
    seen = _LISTED.get((d, cap))
    if seen is not None and time.monotonic() - seen[1] < RELIST_SECONDS:
        seen[0] += size
        if seen[0] <= cap:
            return
    evict(cap, keep=path, root_dir=d)


def read_memo(name: str) -> bytes | None:
    """A memo file tilepy keeps at the top of the cache folder (fs.MEMOS), or None."""
    d = root()
    return None if d is None else fs.read_file(os.path.join(d, name))


def write_memo(name: str, data: bytes):
    assert name in fs.MEMOS, name
    d = root(create=True)
    if d is not None:
        fs.write_file(os.path.join(d, name), data)


# ----------------------------------------------------------------------------- listing, eviction
@dataclass
class Listed:
    path: str
    kind: str
    key: str
    size: int
    mtime: float


def listing(root_dir: str | None = None) -> list[Listed]:
    """Every entry file tilepy wrote under the cache folder, oldest use first (only names of the
    form <kind>/<key[:2]>/<key><suffix>; never a link, a temporary or a foreign file)."""
    d = root_dir or root()
    out = []
    if d is None or not fs.is_regular(os.path.join(d, fs.MARKER)):
        return out
    for kind, shard in fs.shard_dirs(d):
        for e in fs.files(shard, lambda n, s=shard: fs.is_entry_name(s, n)):
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            out.append(Listed(e.path, kind, e.name.split(".")[0], st.st_size, st.st_mtime))
    out.sort(key=lambda e: e.mtime)
    return out


def read_meta(path: str) -> dict | None:
    data = fs.read_file(path)
    found = None if data is None else decode(data)
    return None if found is None else found[1]


def evict(cap: int, keep: str | None = None, root_dir: str | None = None) -> list[str]:
    """Remove least recently used entries until the cache is under `cap` bytes; also removes
    temporary files left by processes that died mid-write. Returns the removed paths."""
    d = root_dir or root()
    removed = []
    if d is None:
        return removed
    now = time.time()
    for t in _tmp_files(d):
        st = _lstat(t)
        if st is not None and now - st.st_mtime > STALE_TMP_SECONDS and fs.unlink(t.path):
            removed.append(t.path)
    listed_at = time.monotonic()
    entries = listing(d)
    total = sum(e.size for e in entries)
    for e in entries:
        if total <= cap:
            break
        if e.path == keep:
            continue
        if fs.unlink(e.path):
            removed.append(e.path)
        total -= e.size
    _LISTED[(d, cap)] = [total, listed_at]
    return removed


def _tmp_files(d: str) -> list:
    """tilepy's temporary files: at the top (memos) and in the entry folders."""
    if not fs.is_regular(os.path.join(d, fs.MARKER)):
        return []
    folders = [d] + [s for _, s in fs.shard_dirs(d)]
    return [e for f in folders for e in fs.files(f, fs.is_tmp_name)]


def clear(root_dir: str | None = None) -> tuple[int, int]:
    """Remove every entry, memo and temporary file tilepy wrote (nothing else, and not the
    marker); returns (files removed, bytes freed)."""
    d = root_dir or root()
    n = freed = 0
    if d is None or not fs.is_regular(os.path.join(d, fs.MARKER)):
        return n, freed
    paths = [(e.path, e.size) for e in listing(d)]
    for e in _tmp_files(d) + fs.files(d, fs.MEMOS.__contains__):
        st = _lstat(e)
        if st is not None:
            paths.append((e.path, st.st_size))
    for p, size in paths:
        if fs.unlink(p):
            n += 1
            freed += size
    for kind in fs.subdirs(d, fs.KINDS):       # folders left empty (rmdir fails on others)
        for shard in fs.subdirs(kind, fs.SHARD_RE):
            _rmdir(shard)
        _rmdir(kind)
    return n, freed


def _lstat(e: os.DirEntry):
    try:
        return e.stat(follow_symlinks=False)
    except OSError:
        return None


def _rmdir(path: str):
    try:
        os.rmdir(path)
    except OSError:
        pass
