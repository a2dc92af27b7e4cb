"""`python -m tilepy cache list|clear|dir`: look at and empty the disk cache of compiled kernels."""
from __future__ import annotations

import argparse
import os
import re
import sys
import time


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _age(t: float) -> str:
    s = max(0.0, time.time() - t)
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= span:
            return f"{s / span:.0f}{unit} ago"
    return f"{s:.0f}s ago"


def cache_list(out) -> int:
    from .launch import cache
    root = cache.cache_dir()
    if root is None:
        print("the disk cache is off (TILEPY_CACHE_DIR=off)", file=out)
        return 0
    entries = cache.listing()
    print(f"cache dir: {root}", file=out)
    if not entries:
        print("no entries", file=out)
        return 0
    print(f"{'kind':<6} {'key':<14} {'size':>10}  {'last used':<10}  what", file=out)
    for e in reversed(entries):               # most recently used first
        meta = cache.read_meta(e.path)
        what = "CORRUPT (will be recompiled)" if meta is None else \
            " ".join(str(meta[k]) for k in ("name", "arch") if k in meta)
        print(f"{e.kind:<6} {e.key[:12]:<14} {_size(e.size):>10}  {_age(e.mtime):<10}  {what}",
              file=out)
    total = sum(e.size for e in entries)
    print(f"{len(entries)} entries, {_size(total)}", file=out)
    return 0


def cache_clear(out, everything: bool) -> int:
    from .launch import cache, cache_fs
    from .settings import settings
    root = cache.cache_dir()
    if root is None:
        print("the disk cache is off (TILEPY_CACHE_DIR=off)", file=out)
        return 0
    targets = [root]
    if everything and settings().cache_dir_is_default:      # every version's folder
        parent = os.path.dirname(root)
        targets = [d for d in cache_fs.subdirs(parent, re.compile(".+"))
                   if cache_fs.is_regular(os.path.join(d, cache_fs.MARKER))]
    for target in targets:
        if not cache_fs.claim(target, create=False):
            print(f"left {target} alone: it is not a tilepy cache of yours", file=out)
            continue
        n, freed = cache.clear(target)
        print(f"removed {n} files ({_size(freed)}) from {target}", file=out)
    return 0


def main(argv=None, out=sys.stdout) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilepy", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cache", help="the disk cache of compiled kernels")
    csub = c.add_subparsers(dest="action", required=True)
    csub.add_parser("list", help="list entries, most recently used first")
    clr = csub.add_parser("clear", help="remove every entry")
    clr.add_argument("--all", action="store_true",
                     help="also the caches of other tilepy versions (default cache dir only)")
    csub.add_parser("dir", help="print the cache dir")
    args = ap.parse_args(argv)
    if args.action == "list":
        return cache_list(out)
    if args.action == "clear":
        return cache_clear(out, args.all)
    from .launch import cache
    print(cache.cache_dir() or "off", file=out)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:          # `python -m tilepy cache list | head`
        sys.exit(0)
