"""Mutation run: does the test suite kill small deliberate bugs in the core?

    python benchmarks/mutate.py                    # every mutant of benchmarks/mutants.py
    python benchmarks/mutate.py --only rt-cosh-sinh fe-minmax-identity
    python benchmarks/mutate.py --named            # the four mutants issue 22 names
    python benchmarks/mutate.py --list             # the set, no runs
    python benchmarks/mutate.py --json out.json    # also the raw results

The tree (tilepy/, tests/, tutorials/) is copied once when the run starts; for each mutant a
fresh copy of that snapshot gets the mutant's edits (the working tree is never touched) and
runs the mutant's own small test subset with `python -m pytest -q -x`. A failing run kills the
mutant; a passing one lets it survive. Mutants of cache-key code get an empty tilepy cache (a
shared one could hide them); the others share one cache folder for the whole run (keys cover
the mutated source and headers, so a mutated kernel never hits an unmutated entry). The
baseline (no mutant) runs every subset first and must pass, or the run stops. Prints one
Markdown table and the score.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutants import MUTANT_SET_VERSION, MUTANTS, Mutant  # noqa: E402

COPIED = ("tilepy", "tests", "tutorials", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.so", "*.pyc")


def copy_tree(dst: str, root: str = ROOT):
    for name in COPIED:
        src = os.path.join(root, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dst, name), ignore=IGNORED)
        elif os.path.exists(src):
            shutil.copy2(src, os.path.join(dst, name))


def apply(mutant: Mutant, tree: str):
    """Apply the edits; ValueError when a text is not found exactly once (a stale mutant)."""
    for path, text, repl in mutant.edits:
        full = os.path.join(tree, path)
        with open(full) as f:
            src = f.read()
        if src.count(text) != 1:
            raise ValueError(f"{mutant.id}: {text!r} occurs {src.count(text)} times in {path}")
        with open(full, "w") as f:
            f.write(src.replace(text, repl))


def run_tests(tree: str, tests, cache: str, timeout: int) -> tuple[str, float, str]:
    """('pass' | 'fail' | 'timeout' | 'no tests', seconds, last output lines)."""
    env = dict(os.environ, PYTHONPATH=tree, TILEPY_CACHE_DIR=cache, PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.time() - t0, ""
    tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-3:])
    verdict = {0: "pass", 5: "no tests"}.get(p.returncode, "fail")
    return verdict, time.time() - t0, tail


def run_mutant(mutant: Mutant | None, tests, work: str, timeout: int) -> dict:
    """One test run on a fresh copy of the tree at the same path every time (`work`/tree): the
    CPU build flags name the include folder, so a kernel the mutant leaves alone keeps its key
    and hits the shared cache (`work`/cache)."""
    tree = os.path.join(work, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    copy_tree(tree, os.path.join(work, "snapshot"))
    fresh = mutant is not None and mutant.area == "cache keys"
    cache = os.path.join(work, "fresh-cache" if fresh else "cache")
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
    if mutant is not None:
        apply(mutant, tree)
    verdict, secs, tail = run_tests(tree, tests, cache, timeout)
    return {"verdict": verdict, "seconds": round(secs, 1), "tail": tail}


def baseline(mutants, work: str, timeout: int) -> list[str]:
    """Every subset must pass on the unmutated tree; returns the failures."""
    subsets = sorted({m.tests for m in mutants})
    bad = []
    for tests in subsets:
        r = run_mutant(None, tests, work, timeout)
        if r["verdict"] != "pass":
            bad.append(f"{' '.join(tests)}: {r['verdict']}\n{r['tail']}")
    return bad


def table(results: list[tuple[Mutant, dict]]) -> str:
    rows = ["| mutant | area | bug | verdict | s |", "|---|---|---|---|---|"]
    for mu, r in results:
        verdict = {"fail": "killed", "timeout": "killed (timeout)", "pass": "**survived**",
                   "no tests": "**no tests ran**"}[r["verdict"]]
        rows.append(f"| {mu.id}{' (named)' if mu.named else ''} | {mu.area} | {mu.what} | "
                    f"{verdict} | {r['seconds']} |")
    killed = sum(r["verdict"] in ("fail", "timeout") for _, r in results)
    rows.append(f"\nmutant set v{MUTANT_SET_VERSION}: {killed}/{len(results)} killed "
                f"({100 * killed / max(1, len(results)):.0f}%)")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="mutant ids")
    ap.add_argument("--named", action="store_true", help="only the four the issue names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per test run")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    chosen = [mu for mu in MUTANTS if (not a.only or mu.id in a.only) and (not a.named or mu.named)]
    if a.list:
        for mu in chosen:
            print(f"{mu.id:22} {mu.area:15} {mu.what}  [{' '.join(mu.tests)}]")
        return 0
    with tempfile.TemporaryDirectory(prefix="tp-mutate-") as work:
        copy_tree(os.path.join(work, "snapshot"))       # the tree as it is now, for every run
        if not a.skip_baseline:
            bad = baseline(chosen, work, a.timeout)
            if bad:
                print("baseline fails (fix the tree or the subsets first):\n" + "\n".join(bad))
                return 2
        results = []
        for mu in chosen:
            r = run_mutant(mu, mu.tests, work, a.timeout)
            print(f"{mu.id}: {r['verdict']} ({r['seconds']} s)", file=sys.stderr, flush=True)
            results.append((mu, r))
    print(table(results))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"version": MUTANT_SET_VERSION,
                       "results": [{"id": mu.id, **r} for mu, r in results]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
