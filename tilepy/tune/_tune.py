"""`exhaustive_search`: cuTile's autotuner (`cuda.tile.tune`), its names and behavior.

Every configuration of the search space is launched and timed (`_tune_utils._benchmark`: CUDA
events on the launch stream for GPU arrays, the wall clock on the CPU backend); the result's
`best` has the lowest mean. The search runs in three phases, so that configurations that cannot
win stop early:
  0. each configuration: `_WARM_UP_REPEATS` untimed launches (the first through
     `benchmark_with_timeout` when `single_run_timeout_sec` is given: a launch that does not end
     in time is stopped and fails its configuration), then `_BATCH_REPEATS` timed ones;
  1. the fastest configuration not converged yet gets another batch, until `_TOP_K` have
     converged (or none is left);
  2. each remaining one gets batches while it is not converged and could still be faster than
     the slowest of the `_TOP_K` fastest converged ones (its mean less its error margin below
     that mean); then it is reported with the samples it has.
A configuration has converged after `_MIN_REPEATS` samples once the half-width of the 95%
confidence interval of its mean is within 1% of the mean or 0.5 us, or after `_MAX_REPEATS`
samples, or `_MAX_MEASURE_TIME_US` of launches. A configuration whose kernel fails to compile or
launch is a failure `(config, exception type, message)`; when every one fails, ValueError says
why each did.

tilepy adds an opt-in disk cache (`cache=True`; _cache.py): the same search later returns the
stored result without launching anything (so without the launches' side effects).
"""
from __future__ import annotations

import heapq
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from ._tune_utils import _benchmark, benchmark_with_timeout

T = TypeVar("T")

__all__ = ["exhaustive_search", "TuningResult", "Measurement"]

_TOP_K = 5
_WARM_UP_REPEATS = 3
_BATCH_REPEATS = 5
_MIN_REPEATS = 5
_MAX_REPEATS = 1000
_MAX_MEASURE_TIME_US = 5_000_000


@dataclass(frozen=True, kw_only=True)
class Measurement(Generic[T]):
    """A configuration and its timing."""
    config: T
    mean_us: float              # mean time of one launch in microseconds
    num_samples: int            # number of launches timed
    error_margin_us: float      # half of the 95% confidence interval of the mean


@dataclass(frozen=True, kw_only=True)
class TuningResult(Generic[T]):
    """The measurement of every configuration that ran, and the failures of the others."""
    best: Measurement
    successes: Sequence[Measurement]
    failures: Sequence[tuple[T, type[BaseException], str]]    # (config, exception type, message)

    def summary(self, *, top_k=10, bottom_k=2) -> str:
        """The fastest `top_k` and slowest `bottom_k` configurations, then the failures."""
        ranked = sorted(self.successes, key=lambda m: m.mean_us)
        lines = [f"{len(self.successes)} succeeded, {len(self.failures)} failed"]
        hidden = range(top_k, max(top_k, len(ranked) - bottom_k))
        if len(hidden) == 1:                     # one line hidden: show it instead
            hidden = range(0)
        cw = max(len(str(m.config)) for m in ranked)
        mw = max(len(f"{m.mean_us:.1f}") for m in ranked)
        ew = max(len(f"{m.error_margin_us:.1f}") for m in ranked)
        nw = max(len(str(m.num_samples)) for m in ranked)
        for i, m in enumerate(ranked):
            if i in hidden:
                if i == hidden.start:
                    lines.append(f"    ... {len(hidden)} more not shown")
                continue
            star = "*" if m == self.best else " "
            lines.append(f"{star} {str(m.config):<{cw}}: {m.mean_us:>{mw}.1f}±"
                         f"{m.error_margin_us:<{ew}.1f} us ({m.num_samples:{nw}} samples)")
        if self.failures:
            lines.append(f"  {len(self.failures)} failed:")
            for cfg, exc, msg in self.failures[:top_k]:
                first = msg.split("\n", 1)[0]
                first = first if len(first) <= 60 else first[:57] + "..."
                lines.append(f"    {cfg}: {exc.__name__}: {first}")
            if len(self.failures) > top_k:
                lines.append(f"    ... {len(self.failures) - top_k} more not shown")
        if len(self.successes) > top_k or len(self.failures) > top_k:
            lines.append("Use .successes and .failures for full results.")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def exhaustive_search(search_space: Sequence[T], stream, grid_fn: Callable[[T], tuple[int, ...]],
                      kernel, args_fn: Callable[[T], tuple[Any, ...]],
                      hints_fn: Callable[[T], dict[str, Any]] | None = None, *,
                      quiet: bool = False, single_run_timeout_sec: float | None = None,
                      cache: bool = False) -> TuningResult[T]:
    """Time `kernel` with every configuration of `search_space` and return the result (the
    module docstring says how).

    grid_fn(cfg), args_fn(cfg) and hints_fn(cfg) give each configuration's grid, arguments and
    kernel options (`kernel.replace_hints(**hints)`); `kernel` may also be a function of the
    configuration returning the kernel. `quiet`: print nothing (else the result, and the
    progress in a terminal). `single_run_timeout_sec`: the first launch of each configuration
    runs in a worker process stopped at this many seconds (None: every launch runs here).
    `cache` (tilepy): reuse a result stored on disk for the same kernel, device, configurations
    and argument shapes, or store this one.
    """
    configs = list(search_space)
    if not configs:
        raise ValueError("Search space is empty.")
    candidates = [_Candidate.make(i, cfg, grid_fn, kernel, args_fn, hints_fn)
                  for i, cfg in enumerate(configs)]
    from . import _cache
    key = _cache.key(candidates, args_fn(configs[0])) if cache else None
    result = _cache.load(key, configs, TuningResult, Measurement)
    if result is None:
        result = _search(candidates, stream, single_run_timeout_sec,
                         _Progress(not quiet and _in_terminal(), len(candidates)))
        _cache.store(key, result, configs)
    if not quiet:
        print(result)
    return result


# ----------------------------------------------------------------------------- the search
@dataclass
class _Candidate:
    order: int
    config: Any
    grid: tuple
    kernel: Any
    args_fn: Callable
    n: int = 0                    # samples
    mean: float = 0.0
    m2: float = 0.0               # sum of squared deviations from the mean (Welford's update)
    margin: float = 0.0           # half-width of the mean's 95% confidence interval

    @staticmethod
    def make(order, cfg, grid_fn, kernel, args_fn, hints_fn):
        from ..api.kernel import Kernel
        k = kernel if isinstance(kernel, Kernel) else kernel(cfg)
        if hints_fn is not None:
            k = k.replace_hints(**hints_fn(cfg))
        return _Candidate(order, cfg, tuple(grid_fn(cfg)), k, lambda: args_fn(cfg))

    def warm_up(self, stream, timeout_sec):
        for i in range(_WARM_UP_REPEATS):
            if i == 0 and timeout_sec is not None:
                benchmark_with_timeout(stream, self.grid, self.kernel, self.args_fn(), timeout_sec)
            else:
                _benchmark(stream, self.grid, self.kernel, self.args_fn())

    def batch(self, stream):
        for _ in range(min(_BATCH_REPEATS, _MAX_REPEATS - self.n)):
            self.add(_benchmark(stream, self.grid, self.kernel, self.args_fn()))

    def add(self, us: float):
        self.n += 1
        delta = us - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (us - self.mean)
        if self.n > 1:
            self.margin = 1.96 * math.sqrt(self.m2 / (self.n - 1) / self.n)

    def converged(self) -> bool:
        return self.n >= _MIN_REPEATS and (
            self.margin <= 0.01 * self.mean or self.margin <= 0.5 or self.n >= _MAX_REPEATS
            or self.mean * self.n > _MAX_MEASURE_TIME_US)

    def rank(self) -> tuple:
        return self.mean, self.margin, self.order

    def measurement(self) -> Measurement:
        return Measurement(config=self.config, mean_us=self.mean, num_samples=self.n,
                           error_margin_us=self.margin)


def _search(candidates: list[_Candidate], stream, timeout_sec, progress) -> TuningResult:
    done: list[_Candidate] = []
    waiting: list[tuple] = []               # a heap of (rank, candidate) not converged yet
    failures: list[tuple] = []

    def attempt(c: _Candidate, step) -> bool:
        try:
            step()
            return True
        except Exception as e:
            failures.append((c.config, type(e), str(e)))
            return False

    for i, c in enumerate(candidates):                          # phase 0
        progress.show(0, i, len(failures))
        if attempt(c, lambda: (c.warm_up(stream, timeout_sec), c.batch(stream))):
            if c.converged():
                done.append(c)
            else:
                heapq.heappush(waiting, (*c.rank(), c))
    while len(done) < _TOP_K and waiting:                      # phase 1
        c = heapq.heappop(waiting)[-1]
        if not attempt(c, lambda: c.batch(stream)):
            continue
        if c.converged():
            progress.show(1, len(done), len(failures))
            done.append(c)
        else:
            heapq.heappush(waiting, (*c.rank(), c))
    if done and waiting:                                       # phase 2
        cutoff = max(c.mean for c in heapq.nsmallest(_TOP_K, done, key=lambda c: c.mean))
        for *_, c in waiting:
            def more(c=c):
                while not c.converged() and c.mean - c.margin < cutoff:
                    c.batch(stream)
            if attempt(c, more):
                progress.show(2, len(done), len(failures))
                done.append(c)
    progress.end()
    if not done:
        raise ValueError(f"No valid config found in search space: all {len(failures)} failed."
                         + "".join(f"\nConfig: {cfg}\n    {exc.__name__}: {_first_line(msg)}"
                                   for cfg, exc, msg in failures))
    ok = [c.measurement() for c in done]
    return TuningResult(best=min(ok, key=lambda m: m.mean_us), successes=tuple(ok),
                        failures=tuple(failures))


def _first_line(msg: str) -> str:
    """A located error's first line names the problem (its source excerpt follows)."""
    return msg.strip().splitlines()[0] if msg.strip() else ""


def _in_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class _Progress:
    """One status line, rewritten in place, while a search runs in a terminal."""
    PHASES = ("warm-up and first samples", "converging the fastest", "converging the rest")

    def __init__(self, on: bool, total: int):
        self.on, self.total, self.shown = on, total, False

    def show(self, phase: int, n: int, failed: int):
        if self.on:
            self.shown = True
            print(f"\r\033[K[phase {phase}/2] {self.PHASES[phase]}: {n}/{self.total}, "
                  f"{failed} failed", end="", flush=True)

    def end(self):
        if self.shown:
            print("\r\033[K", end="", flush=True)
