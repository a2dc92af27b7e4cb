"""The disk cache of compiled artifacts (CPU shared libraries, cubins), content-addressed.

An entry's key hashes everything that determines its bytes; entries are written atomically
(temporary file + os.replace), so a reader sees a whole entry or none.
"""
from __future__ import annotations

import hashlib
import os
import tempfile

from ..settings import settings


def key_of(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def cache_path(kind: str, key: str, suffix: str) -> str | None:
    d = settings().cache_dir
    if d is None:
        return None
    return os.path.join(d, kind, key[:2], key + suffix)


def read(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def write_atomic(path: str, data: bytes) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
