"""The cache folder's ownership and the file operations the cache may do in it.

The cache runs what it finds (shared libraries are loaded, traced C++ is compiled), and it
deletes files. So, like ccache and pip, it works only in a folder that is its own:

* **Private.** Folders it creates are 0700 and entry files 0600, whatever the umask. A cache
  folder that is not owned by the user, or that group or others can write, is refused with a
  warning: the disk cache is then *off* for the process (nothing is read from it or written to
  it; kernels are compiled in memory). Anyone able to write there could plant an entry.
* **Marked.** The folder holds a marker file (`CACHEDIR.TAG`, the Cache Directory Tagging
  format, so backup tools skip it). tilepy creates the marker in a folder it creates or finds
  empty; a non-empty folder without it (e.g. TILEPY_CACHE_DIR=~/.cache) is someone else's, and
  the cache is off there too (with a warning).
* **Only its own names.** Listing, eviction and `cache clear` consider only paths of the form
  `<kind>/<key[:2]>/<key><suffix>` (known kinds, 40 hex digits), the memo files tilepy writes
  at the top, and its temporary files; never a symbolic link, never anything else.
* **Never follows links, never opens what is not a regular file, reads at most MAX_FILE_BYTES.**
  (A FIFO or a link to /dev/zero in place of an entry is a miss, not a hang.)
"""
from __future__ import annotations

import os
import re
import stat

from ..errors import warn_user

MARKER = "CACHEDIR.TAG"
MARKER_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
               "# This folder is a tilepy cache of compiled kernels (https://bford.info/cachedir/).\n"
               "# tilepy lists, evicts and clears only the entries it wrote here.\n")
KINDS = ("cubin", "ptx", "cpu", "spec", "tileiras", "tune", "pch")   # the folders entries live in
SUFFIXES = ("", ".so", ".o", ".gch")
MEMOS = ("toolchain.json", "compilers.json", "pch.json")   # at the top (toolchain.py, cpu_pch.py)
TMP_PREFIX = ".tmp-"
MAX_FILE_BYTES = 256 << 20                        # no cubin/.so/index entry comes near it
KEY_RE = re.compile(r"[0-9a-f]{40}")
SHARD_RE = re.compile(r"[0-9a-f]{2}")

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_warned: set = set()


def euid() -> int | None:
    """The user the process runs as (None where the platform has no uids)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def _warn_once(root: str, why: str):
    if (root, why) in _warned:
        return
    _warned.add((root, why))
    warn_user(f"tilepy's disk cache is off: {root} {why}. Kernels are compiled in memory "
              f"(set TILEPY_CACHE_DIR to a folder of your own, or 'off')")


def _warn_unwritable(folder: str, err: OSError):
    """A write into the cache failed (a full or read-only disk, a quota): said once per process
    and kind of error, naming the folder; the cache then serves what it holds and keeps nothing."""
    why = err.strerror or str(err)
    if ("write", why) in _warned:
        return
    _warned.add(("write", why))
    warn_user(f"tilepy's disk cache cannot write to {folder}: {why}. Compiled kernels are "
              f"not kept for later processes (free space there, or set TILEPY_CACHE_DIR to a "
              f"writable folder of your own, or 'off')")


def refusal(root: str, st: os.stat_result) -> str | None:
    """Why the folder with stat `st` cannot hold the cache, or None when it can."""
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    uid = euid()
    if uid is not None and st.st_uid != uid:
        return f"is owned by another user (uid {st.st_uid}); anyone who can write there could run code as you"
    if uid is not None and st.st_mode & 0o022:
        return (f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); anyone who "
                f"can write there could run code as you (chmod 700 it)")
    return None


def claim(root: str, create: bool) -> bool:
    """Can the cache use `root`? With `create`, makes it (0700, with the marker) when absent or
    empty. A refused folder is warned about once per process."""
    try:
        st = os.stat(root)
    except FileNotFoundError:
        if not create:
            return False
        err = _make_dirs(root)
        if err is not None:
            _warn_unwritable(root, err)
            return False
        st = os.stat(root)
    except OSError:
        return False
    why = refusal(root, st)
    if why is not None:
        _warn_once(root, why)
        return False
    marker = os.path.join(root, MARKER)
    if is_regular(marker):
        return True
    try:
        names = os.listdir(root)
    except OSError:
        return False
    if not all(_own_top_name(root, n) for n in names):
        _warn_once(root, f"holds files that are not tilepy's and no {MARKER} marker, so it is "
                         f"not a tilepy cache (tilepy keeps its entries in a folder of its own)")
        return False
    return create and write_file(marker, MARKER_TEXT.encode())


def _own_top_name(root: str, name: str) -> bool:
    """A name tilepy writes at the top of its folder (a folder of an earlier tilepy, made before
    the marker existed, holds only these and is adopted)."""
    path = os.path.join(root, name)
    if name in KINDS:
        return os.path.isdir(path) and not os.path.islink(path)
    return (name in MEMOS or is_tmp_name(name)) and is_regular(path)


def make_private_dirs(path: str) -> bool:
    """Create `path` and its missing parents as 0700 folders (the umask does not matter)."""
    return _make_dirs(path) is None


def _make_dirs(path: str) -> OSError | None:
    """make_private_dirs: None when done, else what failed."""
    missing = []
    p = os.path.abspath(path)
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    try:
        for d in reversed(missing):
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                continue
            os.chmod(d, 0o700)
    except OSError as e:
        return e
    return None if os.path.isdir(path) else NotADirectoryError(f"{path} is not a folder")


def is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_file(path: str, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of the regular file at `path`, or None: absent, a link, a FIFO or device,
    owned by someone else, larger than `limit`, unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        uid = euid()
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or (uid is not None
                                                                  and st.st_uid != uid):
            return None
        chunks, left = [], limit + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def write_file(path: str, data: bytes) -> bool:
    """Write `data` to `path` atomically (a 0600 temporary file in the same folder, renamed)."""
    import tempfile
    folder = os.path.dirname(path)
    try:
        err = _make_dirs(folder)
        if err is not None:
            raise err
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX)
    except OSError as e:
        _warn_unwritable(folder, e)
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o600) if hasattr(os, "fchmod") else None
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError as e:
        unlink(tmp)
        _warn_unwritable(folder, e)
        return False
    except BaseException:
        unlink(tmp)
        raise


def unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------- scanning
def subdirs(folder: str, pattern) -> list[str]:
    """Real (not linked) subfolders of `folder` whose names match `pattern` (a regex or a set)."""
    try:
        with os.scandir(folder) as it:
            return sorted(e.path for e in it if _matches(pattern, e.name)
                          and e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def files(folder: str, accept) -> list[os.DirEntry]:
    """Regular files (not links) of `folder` whose names `accept(name)` takes."""
    try:
        with os.scandir(folder) as it:
            return [e for e in it if accept(e.name) and e.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _matches(pattern, name: str) -> bool:
    return name in pattern if isinstance(pattern, (set, frozenset, tuple)) else \
        pattern.fullmatch(name) is not None


def shard_dirs(root: str) -> list[tuple[str, str]]:
    """(kind, shard folder) of every entry folder under the cache root."""
    return [(os.path.basename(k), s) for k in subdirs(root, KINDS) for s in subdirs(k, SHARD_RE)]


def is_entry_name(shard: str, name: str) -> bool:
    key, dot, rest = name.partition(".")
    return (KEY_RE.fullmatch(key) is not None and key[:2] == os.path.basename(shard)
            and (dot + rest) in SUFFIXES)


def is_tmp_name(name: str) -> bool:
    return name.startswith(TMP_PREFIX)
