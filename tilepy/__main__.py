"""`python -m tilepy`: tilepy's command line (alone: this help). `doctor [--gpu]`: what works here;
`cache list|clear|dir`: look at and empty the disk cache of compiled kernels."""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

from .doctor.report import size as _size


def _age(t: float) -> str:
    s = max(0.0, time.time() - t)
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= span:
            return f"{s / span:.0f}{unit} ago"
    return f"{s:.0f}s ago"


def cache_list(out, limit: int = 20, kernel: str | None = None) -> int:
    """The entries grouped by kernel, the most recently used kernel first: at most `limit`
    kernels (0: all), only those whose name matches `kernel` (a glob, or a part of the name)."""
    from .launch import cache
    root = cache.cache_dir()
    if root is None:
        print("the disk cache is off (TILEPY_CACHE_DIR=off)", file=out)
        return 0
    groups = _by_kernel(cache, cache.listing())
    total = sum(len(g) for g in groups.values())
    print(f"cache dir: {root}", file=out)
    if kernel is not None:
        groups = {n: g for n, g in groups.items() if _matches(n, kernel)}
    if not groups:
        print("no entries" + (f" for kernels matching {kernel!r}" if kernel is not None else ""),
              file=out)
        return 0
    shown = list(groups.items())[:limit or None]
    for name, group in shown:
        size = sum(e.size for e, _ in group)
        print(f"{name}: {len(group)} entr{'y' if len(group) == 1 else 'ies'}, {_size(size)}, "
              f"last used {_age(group[0][0].mtime)}", file=out)
        for e, what in group:
            print(f"  {e.kind:<6} {e.key[:12]:<13} {_size(e.size):>10}  {_age(e.mtime):<10}  {what}",
                  file=out)
    entries = [e for g in groups.values() for e, _ in g]
    print(f"{len(entries)} entries, {_size(sum(e.size for e in entries))}"
          + (f" (of {total} in the cache)" if len(entries) != total else ""), file=out)
    if len(shown) < len(groups):
        print(f"showing {len(shown)} of {len(groups)} kernels, most recently used first "
              f"(--limit 0 shows all, --kernel NAME one)", file=out)
    return 0


def _by_kernel(cache, entries) -> dict:
    """{kernel name: [(entry, description)], most recently used first}, kernels in the order of
    their last use (entries that are not readable are grouped as "(unreadable)")."""
    groups: dict[str, list] = {}
    for e in reversed(entries):               # most recently used first
        meta = cache.read_meta(e.path)
        if meta is None:
            name, what = "(unreadable)", "CORRUPT (will be recompiled)"
        else:
            name = str(meta.get("name", "(unnamed)"))
            what = " ".join(str(meta[k]) for k in ("name", "arch", "mode") if k in meta)
        groups.setdefault(name, []).append((e, what))
    return groups


def _matches(name: str, pattern: str) -> bool:
    import fnmatch
    return fnmatch.fnmatchcase(name, pattern) if any(c in pattern for c in "*?[") \
        else pattern in name


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
        if not os.path.lexists(target):
            print(f"{target} does not exist: nothing to clear", file=out)
            continue
        if not cache_fs.claim(target, create=False):
            print(f"left {target} alone: it is not a tilepy cache of yours", file=out)
            continue
        n, freed = cache.clear(target)
        print(f"removed {n} files ({_size(freed)}) from {target}", file=out)
    return 0


def main(argv=None, out=sys.stdout) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilepy", description=__doc__)
    sub = ap.add_subparsers(dest="cmd")
    c = sub.add_parser("cache", help="the disk cache of compiled kernels")
    csub = c.add_subparsers(dest="action")
    lst = csub.add_parser("list", help="list entries grouped by kernel, most recently used first")
    lst.add_argument("--limit", type=int, default=20, metavar="N",
                     help="show at most N kernels (default 20; 0: all)")
    lst.add_argument("--kernel", metavar="NAME",
                     help="only kernels whose name contains NAME (or matches it as a glob)")
    clr = csub.add_parser("clear", help="remove every entry")
    clr.add_argument("--all", action="store_true",
                     help="also the caches of other tilepy versions (default cache dir only)")
    csub.add_parser("dir", help="print the cache dir")
    doc = sub.add_parser("doctor", help="what tilepy finds here, and a vector add on every backend")
    doc.add_argument("--gpu", action="store_true",
                     help="also the tutorial kernels, the cuTile-style suite and fuzz batches on "
                          "the GPU, and the speed table beside cuTile, Triton and torch")
    doc.add_argument("--json", help="where --gpu writes the speed table as JSON")
    doc.add_argument("--markdown", help="where --gpu writes the speed table as Markdown")
    args = ap.parse_args(argv)
    if args.cmd is None:                      # `python -m tilepy` alone: what it can do
        ap.print_help(out)
        return 0
    if args.cmd == "doctor":
        from .doctor import run
        return run(out, args.gpu, args.json, args.markdown)
    if args.action is None:
        c.print_help(out)
        return 0
    if args.action == "list":
        return cache_list(out, args.limit, args.kernel)
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
