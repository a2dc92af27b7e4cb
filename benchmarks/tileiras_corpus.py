"""tilepy's Tile IR through NVIDIA's tileiras, over the tutorial kernels and the cuTile-style suite:
which modules compile for which architecture, and how long each takes (no GPU needed).

    python benchmarks/tileiras_corpus.py [--arch sm_80 sm_90 sm_100]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", nargs="+", default=["sm_80", "sm_90", "sm_100"])
    args = ap.parse_args(argv)
    import bytecode_util as bu
    from tilepy.bytecode import write_module
    from tilepy.errors import TileError
    from tilepy.launch.tileiras import assemble
    corpus = {**bu.tutorial_modules(), **bu.cutile_modules()}
    failed = 0
    print(f"{'module':48} " + " ".join(f"{a:>8}" for a in args.arch))
    for name, build in corpus.items():
        data, cells = write_module(build()), []
        for arch in args.arch:
            t = time.perf_counter()
            try:
                assemble(data, arch, "kernel")
                cells.append(f"{time.perf_counter() - t:7.2f}s")
            except TileError:
                failed += 1
                cells.append(f"{'FAIL':>8}")
        print(f"{name:48} " + " ".join(cells))
    print(f"\n{len(corpus)} modules x {len(args.arch)} archs: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
