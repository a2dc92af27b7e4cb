"""Run cases through every execution and compare each with the reference interpreter.

Executions are a table: the interpreter runs each case alone; every other execution runs all
cases of a batch in one launch of one compiled module (one C++ build per batch). Adding an
execution is adding a row to `EXECUTIONS`.

NVIDIA's verifier: when `tileirdisasm` (wheel nvidia-cuda-tileiras) is installed, each batch's
module is also written as Tile IR bytecode and read by it (NVIDIA's reader and verifier); a
case it rejects says so in its outcome (`nvidia`). Without the wheel the check is skipped
(`nvidia` is "").

Comparison: outputs the spec pins down must be identical bit for bit (any NaN matches any NaN:
payloads are not specified); inexact outputs (see gen.py) must be within
`2 * err * eps * M`, where err is the case's error budget in ulps, eps the unit roundoff of the
least precise float type among its inexact values and M the largest finite magnitude the
interpreter saw among the inputs and results of the ops involved. Whole allocations are compared,
so a stray write into padding or past a ragged edge is a mismatch too.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

import tilepy.interpret as interp
from tilepy.api.compiler import compile_module
from tilepy.errors import TileCompileError, TileUnsupportedFeatureError
from tilepy.interpret import floats as F
from tilepy.launch import cpu
from tilepy.launch.nvrtc import compile_cubin
from tilepy.types import NUMPY_DTYPE, element_type

from .case import Case, materialize, parse_type
from .values import random_values


@dataclass(frozen=True)
class CpuExecution:
    """The emitted C++ built and run by the CPU backend in one mode."""
    mode: str

    def build(self, cm):
        return cpu.build(cm.emitted, cm.compile_source(), mode=self.mode), cm.emitted.smem_bytes

    def run(self, lib, grid, values):
        cpu.run(lib[0], grid, values, smem=lib[1])     # its shared memory, as a GPU launch


EXECUTIONS = {            # every execution compared with the interpreter (the reference)
    "cpu-fast": CpuExecution("fast"),
    "cpu-faithful": CpuExecution("faithful"),
}


# ------------------------------------------------------------------------------ buffers
@dataclass
class Arrays:
    bases: list = field(default_factory=list)    # the allocations (compared after the run)
    views: list = field(default_factory=list)    # the logical arrays the kernel sees
    params: list = field(default_factory=list)   # Python values, one per entry parameter


def make_arrays(case: Case, seed: int) -> Arrays:
    rng = np.random.default_rng(seed)
    out = Arrays()
    for a in case.arrays:
        elem = element_type(a.elem)
        if len(a.shape) == 1:
            alloc = (a.shape[0] + a.pad,)
        elif a.col_major:
            alloc = (a.shape[1], a.shape[0] + a.pad)
        else:
            alloc = (a.shape[0], a.shape[1] + a.pad)
        if a.role == "in":
            base = random_values(elem, alloc, rng)
        else:
            dt = NUMPY_DTYPE[elem]
            base = np.full(alloc + (dt.itemsize,), 0xA5, dtype=np.uint8).view(dt).reshape(alloc) \
                if elem.name != "i1" else np.zeros(alloc, dtype=bool)
        if len(a.shape) == 1:
            view = base[:a.shape[0]]
        elif a.col_major:
            view = base[:, :a.shape[0]].T
        else:
            view = base[:, :a.shape[1]]
        if a.values is not None:
            view[...] = np.array(a.values).astype(base.dtype).reshape(a.shape)
        out.bases.append(base)
        out.views.append(view)
        out.params += [view, *a.shape]
        if len(a.shape) == 2:
            out.params.append(alloc[1])
    return out


def copy_arrays(arrs: Arrays, case: Case) -> Arrays:
    """Fresh copies with the same layout (each execution gets its own memory)."""
    out = Arrays()
    it = iter(arrs.params)
    for a, base, view in zip(case.arrays, arrs.bases, arrs.views):
        nb = base.copy()
        if len(a.shape) == 1:
            nv = nb[:a.shape[0]]
        elif a.col_major:
            nv = nb[:, :a.shape[0]].T
        else:
            nv = nb[:, :a.shape[1]]
        out.bases.append(nb)
        out.views.append(nv)
        next(it)
        out.params.append(nv)
        out.params += [next(it) for _ in range(len(a.shape) + (len(a.shape) == 2))]
    return out


def ctypes_values(params) -> list:
    vals = []
    for p in params:
        if isinstance(p, np.ndarray):
            vals.append(ctypes.c_void_p(p.__array_interface__["data"][0]))
        else:
            vals.append(ctypes.c_int32(int(p)))
    return vals


# ------------------------------------------------------------------------------ tolerance
def _involved(case: Case, step) -> bool:
    return any(r in case.inexact for r, _ in step.results)


def interpret_case(case: Case, arrs: Arrays) -> float:
    """Run the interpreter; returns M (0 when the case has no inexact value)."""
    module, op_steps = materialize([case], "case")
    mag = [0.0]

    def hook(ev):
        st = op_steps.get(id(ev.op))
        if st is None or not _involved(case, st):
            return
        for v in list(ev.inputs) + list(ev.outputs):
            if isinstance(v, np.ndarray) and v.dtype.kind in "fV" and v.size:
                x = F.to_f64(v)
                x = np.abs(x[np.isfinite(x)])
                if x.size:
                    mag[0] = max(mag[0], float(x.max()))
    interp.run(module, case.grid, arrs.params, on_op=hook if case.inexact else None)
    return mag[0]


def _eps(case: Case) -> float:
    eps = 0.0
    for st in _walk(case.steps):
        for r, t in st.results:
            if r in case.inexact:
                e = parse_type(t).elem
                if e.is_float:
                    eps = max(eps, 2.0 ** (1 - F.FORMATS[e].p))
    return eps


def _factors(case: Case) -> int:
    """The most factors one product in the case multiplies: 2 (a mulf), or n for a product
    reduce/scan over a dimension of n elements (its partial products, in an order the spec
    leaves open, reach mag**n)."""
    shapes = {vid: case.arrays[ai].tile for vid, ai in case.loads}
    for st in _walk(case.steps):
        shapes.update((r, parse_type(t).shape) for r, t in st.results)
        shapes.update((r, parse_type(t).shape) for args, _, _ in st.regions for r, t in args)
    n = 2
    for st in _walk(case.steps):
        if st.op in ("reduce", "scan") and any(b.op == "mulf" for _, body, _ in st.regions
                                               for b in body) and st.args[0] in shapes:
            n = max(n, shapes[st.args[0]][st.attrs["dim"]])
    return n


def _walk(steps):
    for st in steps:
        yield st
        for _, body, _ in st.regions:
            yield from _walk(body)


# ------------------------------------------------------------------------------ comparison
def compare(case: Case, ref: Arrays, got: Arrays, mag: float) -> str | None:
    """None when `got` agrees with the reference, else what differs."""
    stored = list(case.stores) + [(st.args[0], st.attrs["array"]) for st in _walk(case.steps)
                                  if st.op in ("reload", "scatter", "atomic")]
    exact_out = {}
    for vid, ai in stored:
        exact_out[ai] = exact_out.get(ai, True) and vid not in case.inexact
    tol = 2 * case.weights.get("err", 0) * _eps(case) * mag
    for ai, a in enumerate(case.arrays):
        if a.role != "out":
            continue
        elem = element_type(a.elem)
        r, g = ref.bases[ai], got.bases[ai]
        if np.array_equal(r.view(np.uint8), g.view(np.uint8)):
            continue
        if elem.is_float:
            x, y = F.to_f64(r), F.to_f64(g)
            same = (x.view(np.uint64) == y.view(np.uint64)) | (np.isnan(x) & np.isnan(y))
            if not exact_out.get(ai, True):
                big = F.FORMATS[elem].max / 2
                with np.errstate(invalid="ignore"):
                    same |= np.abs(x - y) <= tol
                    same |= (np.isinf(x) & (np.abs(y) >= big)) | (np.isinf(y) & (np.abs(x) >= big))
                if mag >= F.FORMATS[elem].max ** (1 / _factors(case)):
                    # values this large reach the format's range in a product of that many
                    # factors (two: one mulf; n: a product reduce/scan over n elements), so an
                    # evaluation order the spec leaves open may overflow where the interpreter's
                    # did not, and inf * 0 or inf - inf gives NaN: past this magnitude a
                    # non-finite value on either side is a legitimate outcome
                    same |= ~np.isfinite(x) | ~np.isfinite(y)
            if same.all():
                continue
        else:
            same = r == g
        bad = np.argwhere(~np.asarray(same))
        i = tuple(int(k) for k in bad[0])
        return (f"{a.name} ({a.elem}, {'exact' if exact_out.get(ai, True) else f'tol {tol:.3g}'}): "
                f"{len(bad)} element(s) differ, first at allocation index {i}: "
                f"interpreter {r[i]!r} vs {g[i]!r}")
    return None


# ------------------------------------------------------------------------------ batches
@dataclass
class Outcome:
    case: Case
    status: str        # "agree" | "interpreter-only" | "mismatch" | "compile-error"
    detail: str = ""
    execution: str = ""
    nvidia: str = ""   # NVIDIA's verifier: "accepted", "rejected: <why>", "" (not installed)


def nvidia_verdicts(cases: list[Case]) -> dict:
    """{id(case): verdict} of NVIDIA's verifier (tileirdisasm) on the cases' bytecode: one
    module for the batch, each case alone when the batch is rejected; "" without the tool."""
    import bytecode_util as bu
    from tilepy.bytecode import write_module
    if bu.TILEIRDISASM is None:
        return {id(c): "" for c in cases}

    def verdict(cs) -> str:
        try:
            result = bu.disasm(write_module(materialize(cs, "fuzz_batch")[0]))
        except TileUnsupportedFeatureError as e:          # tilepy's writer refuses it
            return f"rejected: {e}"
        return "accepted" if result.returncode == 0 else f"rejected: {result.stderr[-2000:]}"
    if verdict(cases) == "accepted":
        return {id(c): "accepted" for c in cases}
    return {id(c): verdict([c]) for c in cases}


def cpu_supported(case: Case) -> bool:
    module, _ = materialize([case], "probe")
    try:
        compile_module(module)
        return True
    except TileUnsupportedFeatureError:
        return False


def build(cases: list[Case], executions) -> tuple[dict, dict]:
    """({execution name: library}, failures): one build of all cases per execution (and one
    NVRTC compile); on a compiler error each case alone finds the culprits, the rest is rebuilt."""
    def attempt(cs):
        cm = compile_module(materialize(cs, "fuzz_batch")[0])
        compile_cubin(cm.compile_source(), "sm_80", "fuzz_batch")    # the GPU compiler too
        return {name: ex.build(cm) for name, ex in executions.items()}
    if not cases:
        return {}, {}
    try:
        return attempt(cases), {}
    except TileCompileError:
        pass
    failures = {}
    for c in cases:
        try:
            attempt([c])
        except TileCompileError as e:
            failures[id(c)] = str(e)[-3000:]
    rest = [c for c in cases if id(c) not in failures]
    return (attempt(rest) if rest else {}), failures


def run_batch(cases: list[Case], seeds: list[int], executions=None) -> list[Outcome]:
    """Every case through the interpreter and every execution, for each input seed."""
    executions = EXECUTIONS if executions is None else executions
    if len({c.grid for c in cases}) != 1:
        raise ValueError("the cases of a batch run in one launch: they must share their grid")
    results = {id(c): Outcome(c, "agree" if cpu_supported(c) else "interpreter-only")
               for c in cases}
    libs, failures = build([c for c in cases if results[id(c)].status == "agree"], executions)
    for cid, log in failures.items():
        results[cid].status, results[cid].detail = "compile-error", log
    batch = [c for c in cases if results[id(c)].status == "agree"]
    grid = (*cases[0].grid, 1)
    for seed in seeds:
        arrs = {id(c): make_arrays(c, seed + 7919 * k) for k, c in enumerate(cases)}
        refs, mags = {}, {}
        for c in cases:
            refs[id(c)] = copy_arrays(arrs[id(c)], c)
            mags[id(c)] = interpret_case(c, refs[id(c)])
        if not batch:
            continue
        for name, execute in executions.items():
            got = [copy_arrays(arrs[id(c)], c) for c in batch]
            values = ctypes_values([p for g in got for p in g.params])
            if getattr(execute, "device_memory", False):    # copies the allocations itself
                execute.run(libs[name], grid, values, [b for g in got for b in g.bases])
            else:
                execute.run(libs[name], grid, values)
            for c, g in zip(batch, got):
                msg = compare(c, refs[id(c)], g, mags[id(c)])
                if msg and results[id(c)].status == "agree":
                    results[id(c)] = Outcome(c, "mismatch", f"seed {seed}: {msg}", name)
    verdicts = nvidia_verdicts(cases)
    for c in cases:
        results[id(c)].nvidia = verdicts[id(c)]
    return [results[id(c)] for c in cases]
