"""`python -m tilepy doctor [--gpu]`: what works here; `python -m tilepy cache list|clear|dir`: look
at and empty the disk cache of compiled kernels."""
from __future__ import annotations

import argparse
import os
import sys
import time

from .doctor.report import size as _size


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
    from .launch import cache
    root = cache.cache_dir()
    if root is None:
        print("the disk cache is off (TILEPY_CACHE_DIR=off)", file=out)
        return 0
    target = os.path.dirname(root) if everything and os.environ.get("TILEPY_CACHE_DIR") is None \
        else root
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
    doc = sub.add_parser("doctor", help="what tilepy finds here, and a vector add on every backend")
    doc.add_argument("--gpu", action="store_true",
                     help="also the tutorial kernels, the cuTile-style suite and a fuzz batch on "
                          "the GPU, and the speed table against torch")
    doc.add_argument("--json", help="where --gpu writes the speed table as JSON")
    doc.add_argument("--markdown", help="where --gpu writes the speed table as Markdown")
    args = ap.parse_args(argv)
    if args.cmd == "doctor":
        from .doctor import run
        return run(out, args.gpu, args.json, args.markdown)
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
