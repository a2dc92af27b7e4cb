"""Items of `doctor --gpu` run in child processes, so that a CUDA error loses nothing but the item
that caused it (issue 26: an illegal address in the fuzz batch left the CUDA context unusable
and the whole validation unprinted).

A child (`python benchmarks/gpu.py --child ITEMS.json`, or a test's bootstrap) runs its items in
order and writes one protocol line per event on stdout, `@@gpu {json}`:
  {"start": item, "source": kernel source}   before an item;
  {"row": {...}}                              each result (an item may give several);
  {"fatal": item, "error": text}              a CUDA error left the context unusable: it exits.
Other lines (a kernel's printf) are not the protocol's. The parent reads the lines as they come
(`on_row` prints each row at once), and when a child exits before its items are done it names
the item in progress as the faulting one -- with its kernel source -- and starts a fresh child
for the rest. A child silent for `timeout` seconds is killed (a hung kernel) the same way.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading

MARK = "@@gpu "


def emit(out, **event):
    """A protocol line (the child's side)."""
    print(MARK + json.dumps(event), file=out, flush=True)


class Child:
    """One child process over `items`: its events, in order, through `events()`."""

    def __init__(self, cmd: list[str], items: list[str], timeout: float, env=None):
        fd, self.path = tempfile.mkstemp(suffix=".json", prefix="tilepy-gpu-items-")
        with os.fdopen(fd, "w") as f:
            json.dump(items, f)
        self.proc = subprocess.Popen([*cmd, self.path], stdout=subprocess.PIPE, text=True,
                                     errors="replace", env=env, bufsize=1)
        self.timeout, self.timed_out = timeout, False
        self._timer = None

    def _arm(self):
        if self._timer:
            self._timer.cancel()
        self._timer = threading.Timer(self.timeout, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self):
        self.timed_out = True
        self.proc.kill()

    def events(self):
        self._arm()
        try:
            for line in self.proc.stdout:
                self._arm()
                if line.startswith(MARK):
                    yield json.loads(line[len(MARK):])
        finally:
            self._timer.cancel()
            self.proc.wait()
            os.unlink(self.path)


def run_isolated(cmd: list[str], items: list[str], on_row, timeout: float = 120,
                 env=None) -> list[dict]:
    """Run `items` in children started with `cmd` (+ the items file), a fresh child after each
    fault; `on_row(row)` gets every row as it comes. Returns the rows, faults included."""
    rows, todo = [], list(items)
    while todo:
        child = Child(cmd, todo, timeout, env)
        started, source, done = None, "", set()
        for ev in child.events():
            if "start" in ev:
                started, source = ev["start"], ev.get("source", "")
            elif "row" in ev:
                rows.append(ev["row"])
                on_row(ev["row"])
                done.add(ev["row"]["item"])
            elif "fatal" in ev:
                row = fault_row(ev["fatal"], ev["error"], source)
                rows.append(row)
                on_row(row)
                done.add(ev["fatal"])
        if started is not None and started not in done:      # died (or hung) inside an item
            why = (f"no answer in {timeout:.0f} s (killed)" if child.timed_out else
                   f"the process ended with exit status {child.proc.returncode}")
            row = fault_row(started, why, source, "HUNG" if child.timed_out else "CRASHED")
            rows.append(row)
            on_row(row)
            done.add(started)
        if started is None:                                  # died before its first item
            row = fault_row(todo[0], f"the child process ended with exit status "
                                     f"{child.proc.returncode} before its first item", "",
                            "CRASHED")
            rows.append(row)
            on_row(row)
        todo = todo[todo.index(started) + 1:] if started is not None else todo[1:]
    return rows


def fault_row(item: str, error: str, source: str, status: str = "CUDA ERROR") -> dict:
    suite, _, name = item.partition(":")
    return {"item": item, "suite": suite, "name": name, "status": status,
            "detail": f"{error}; the rest ran in a fresh process", "source": source}


def run_parallel(cmd: list[str], items: list[str], on_row, workers: int, **kw) -> list[dict]:
    """`items` split over `workers` isolated runners at once (validation: the GPU is shared,
    nothing is timed). Rows stream through `on_row` (called under a lock)."""
    lock = threading.Lock()
    chunks = [items[i::workers] for i in range(workers) if items[i::workers]]
    results: list[list] = [[] for _ in chunks]

    def locked(row):
        with lock:
            on_row(row)

    def work(k):
        results[k] = run_isolated(cmd, chunks[k], locked, **kw)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(chunks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    order = {item: i for i, item in enumerate(items)}
    return sorted((r for rs in results for r in rs), key=lambda r: order.get(r["item"], 0))
