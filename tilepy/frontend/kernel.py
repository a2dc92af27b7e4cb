"""The traced side of a kernel: its function, options, specialization on arguments, tracing.

A kernel is compiled once per *specialization* (specialize.py: dtypes, ranks, strides,
alignment, divisibility, constant values); compiled specializations live in `kernel.cache`,
in memory. `trace()` (api/kernel.py, through trace.py) turns one specialization into a Tile IR
module. The user-facing kernel
object (`tilepy.Kernel`: `mlir`, `cuda_source`, `compile`) is api/kernel.py's subclass.
"""
from __future__ import annotations

import functools
import inspect

from ..errors import (TileArgumentCountError, TileOptionError, TileSyntaxError, TileTypeError,
                      TileValueError)
from ..settings import GPU_COMPILERS, settings
from .annotations import Leaf, parameter_nodes
from .api import ByTarget
from .specialize import argument_param, key_of, log_recompile, mark_disjoint

# cuTile's kernel options: each value's rule, as the message said when a value breaks it (a
# TileOptionError, a ValueError as cuTile raises, with cuTile's words), None when it keeps it.
def _in_range(name, low, high, powers_of_two=False):
    def rule(v):
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            return f"{name} should be [{low}, {high}], got {v!r}"
        if powers_of_two and v & (v - 1):
            return f"{name} should be power of 2, got {v!r}"
        return None
    return rule


OPTIONS = {
    "num_ctas": _in_range("num_ctas", 1, 16, powers_of_two=True),
    "occupancy": _in_range("occupancy", 1, 32),
    "opt_level": _in_range("opt_level", 0, 3),
    "num_worker_warps": lambda v: None if v in (4, 8) and not isinstance(v, bool) else
    f"num_worker_warps should be either 4 or 8, got {v!r}",
    # tilepy's: the GPU compiler of launches ("nvrtc" or "tileiras"; TILEPY_GPU_COMPILER else)
    "compiler": lambda v: None if v in GPU_COMPILERS else
    f"invalid value {v!r} for kernel option 'compiler' (expected one of "
    f"{', '.join(GPU_COMPILERS)})",
}
ONE_VALUE = frozenset({"compiler"})      # options that cannot differ by target (no ByTarget)


def _check_options(options: dict):
    for name, value in options.items():
        rule = OPTIONS.get(name)
        if rule is None:
            raise TileValueError(f"unknown kernel option '{name}' (known: {', '.join(OPTIONS)})")
        if name in ONE_VALUE and isinstance(value, ByTarget):
            raise TileValueError(f"kernel option '{name}' takes one value for every target "
                                 f"(got {value!r})")
        values = [value] if not isinstance(value, ByTarget) else \
            [v for v in [value.default, *value.values.values()] if v is not None]
        for v in values:
            broken = None if v is None else rule(v)
            if broken:
                raise TileOptionError(broken)


# The options that are entry optimization hints in Tile IR (cuTile's names there).
HINTS = {"num_ctas": "num_cta_in_cga", "occupancy": "occupancy",
         "num_worker_warps": "num_worker_warps_per_cta"}


def entry_hints(options: dict) -> dict | None:
    """The kernel's options as the entry's `optimization_hints`: {"default" | "sm_XX": {hint:
    value}}, a target's entry overriding `default` (ByTarget values), None without any."""
    out: dict[str, dict] = {}
    for name, hint in HINTS.items():
        value = options.get(name)
        by = value.values if isinstance(value, ByTarget) else {}
        default = value.default if isinstance(value, ByTarget) else value
        for target, v in [("default", default), *by.items()]:
            if v is not None:
                out.setdefault(target, {})[hint] = v
    return {t: out[t] for t in sorted(out, key=lambda t: (t != "default", t))} or None


class NothingRead:
    """What a kernel not traced yet has read: nothing (the compiler gives it an identity.Reads)."""
    items = ()

    def fresh(self) -> bool:
        return True


class KernelFunction:
    """A function traced as a tile kernel (api/kernel.py's `Kernel` is the user's object)."""

    def __init__(self, func, **options):
        if not inspect.isfunction(func):
            raise TileSyntaxError(f"@tilepy.kernel decorates functions (got {type(func).__name__})")
        _check_options(options)
        self.func = func
        self.options = options
        self.signature = inspect.signature(func)
        for p in self.signature.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TileSyntaxError(f"kernel parameter '{p.name}': *args, **kwargs and "
                                      f"keyword-only parameters are not supported")
        self.annotations = parameter_nodes(func, self.signature)   # name -> annotations.py tree
        self.constants = {n for n, a in self.annotations.items()
                          if isinstance(a, Leaf) and a.constant}
        self.cache: dict = {}            # specialization key -> compiled kernel (compiler.py)
        self.keys: list[tuple] = []      # keys in the order they were first seen
        self.reads = NothingRead()       # what its traces read (identity.Reads, api/compiler.py)
        functools.update_wrapper(self, func)

    def changed(self) -> bool:
        """Has a value a trace of this kernel read (a module global, a closure cell, an
        attribute of the program's module or class) been rebound since? Then its compiled
        specializations and launch plans are dropped: the next launch traces again (or finds
        the disk index's trace for the values as they are now)."""
        if self.reads.fresh():
            return False
        self.cache.clear()
        self.reads = type(self.reads)()
        for k in [k for k in self.__dict__ if k.startswith("_tp_")]:   # plans (launch/dispatch)
            del self.__dict__[k]
        return True

    @property
    def name(self) -> str:
        return self.func.__name__

    def __call__(self, *args, **kwargs):
        raise TileSyntaxError(f"kernel '{self.name}' cannot be called directly; launch it with "
                              f"tilepy.launch(stream, grid, {self.name}, args)")

    def __repr__(self) -> str:
        return f"<tilepy.kernel {self.name}>"

    # ------------------------------------------------------------------ specialization
    def specialize(self, infos, exact: bool = False) -> tuple[tuple, list]:
        """(cache key, params) for per-argument infos (ArrayInfo or Python values); `exact`:
        exact divisibility facts (what tileiras reads: frontend/specialize.py)."""
        names = list(self.signature.parameters)
        if len(infos) != len(names):
            n, m = len(names), len(infos)
            raise TileArgumentCountError(
                f"Kernel expects {n} argument{'s' if n != 1 else ''} but {m} "
                f"{'was' if m == 1 else 'were'} given: kernel '{self.name}' takes {n} "
                f"argument{'s' if n != 1 else ''} ({', '.join(names)})")
        params = [argument_param(name, info, self.annotations[name], i, exact=exact)
                  for i, (name, info) in enumerate(zip(names, infos))]
        params = mark_disjoint(params, infos)
        key = key_of(params)
        if key not in self.cache and key not in self.keys:
            if settings().logs("recompile"):
                log_recompile(self.name, self.keys, key)
            self.keys.append(key)
        return key, params

