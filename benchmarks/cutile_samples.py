"""Run NVIDIA cutile-python's samples unchanged on tilepy's CPU backend; one line per kernel.

    python benchmarks/cutile_samples.py /path/to/cutile-python [--only FFT.py ...]
        [--mode fast|faithful] [--capability 10.0] [--timeout 1200]

The checkout is a cutile-python work tree (fetch it; never commit it). Each sample of its
`samples/` folder runs as `__main__` with `--correctness-check`, in a child process of its own,
with its source untouched:
  - `import cuda.tile as ct` resolves to a module that is tilepy's namespace (with `launch`
    recorded per kernel) plus the few cuTile internals samples read to decide what to run
    (`_cext.get_compute_capability`, the tileiras bytecode version: the emulated device's);
  - torch's "cuda" device is the CPU: tensors asked for on "cuda" are made on the CPU (a
    TorchFunctionMode rewrites `device=` and `.to`/`.cuda`), `Tensor.is_cuda` is true for them,
    `torch.cuda.current_stream()` is None (tilepy's CPU backend takes no stream), and
    `torch.cuda` answers for one device of `--capability` with `--sms` multiprocessors, and
    its streams (`torch.cuda.Stream()`, or its `cuda_stream` handle) run as no stream;
  - the torch references compute as on CUDA where the CPU's kernels differ: f16/bf16 matmuls
    sum exactly, as tensor cores nearly do (the CPU sums product by product in f32), float32
    ones too after rounding their inputs to tf32 under `set_float32_matmul_precision("high")`,
    layer_norm of f16/bf16 accumulates in float32, the attention backends a sample picks
    (cuDNN, flash) fall back to the math one;
  - CUDA graphs: `torch.cuda.graph(g)` captures the `cuda.tile.launch`es inside it without
    running them, and `g.replay()` launches them again (torch's own ops inside a capture run
    once, eagerly: the CPU has no stream capture);
  - torch.distributed is one rank: NCCL is gloo, `mp.spawn` runs rank 0 here, symmetric memory
    is the rank's tensor (AllGatherMatmul gathers from a list of one array);
  - the sample's own checks decide: each `torch.testing.assert_close` judges the kernels launched
    since the previous group of checks. A failed check is recorded and the sample goes on.

Per kernel: PASS (launched, every check after it passed), WRONG (a check after it failed),
CRASH (an error inside tilepy or the launch), UNSUPPORTED (tilepy refused it:
TileUnsupportedFeatureError), UNCHECKED (launched, no check followed), NOT RUN (the sample did
not launch it: it skipped it, or stopped earlier; the detail says why). test/ is run by
cutile_tests.py (under pytest, with the checkout's own conftest).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import types

STATUSES = ("PASS", "WRONG", "CRASH", "UNSUPPORTED", "UNCHECKED", "NOT RUN")
CAPTURING: list = []        # the emulated CUDA graph being captured (innermost last)
RANK = {s: i for i, s in enumerate(("NOT RUN", "UNCHECKED", "PASS", "WRONG", "UNSUPPORTED",
                                    "CRASH"))}     # a later failure outranks an earlier pass


# ---- the child: one sample, under the emulation --------------------------------------------

class Record:
    """What happened to each kernel of one sample."""

    def __init__(self):
        self.status: dict[str, str] = {}
        self.detail: dict[str, str] = {}
        self.pending: set[str] = set()          # launched since the last group of checks
        self.checked_since_launch = False

    def mark(self, name, status, detail=""):
        if RANK[status] >= RANK[self.status.get(name, "NOT RUN")]:
            self.status[name] = status
            self.detail[name] = detail[:300]

    def launched(self, name):
        if self.checked_since_launch:
            self.pending, self.checked_since_launch = set(), False
        self.pending.add(name)
        self.mark(name, "UNCHECKED")

    def checked(self, ok, detail=""):
        self.checked_since_launch = True
        for name in self.pending:
            self.mark(name, "PASS" if ok else "WRONG", detail)


def _cpu_device(d):
    import torch
    if isinstance(d, str) and d.startswith("cuda"):
        return "cpu"
    if isinstance(d, torch.device) and d.type == "cuda":
        return torch.device("cpu")
    if isinstance(d, int) and not isinstance(d, bool):
        return "cpu"                            # `.to(0)`, `device=0`: a CUDA ordinal
    return d


CPU_STREAMS: set = set()        # the handles of the emulated device's streams


def _cpu_stream(stream):
    """The stream tilepy's CPU backend takes for a stream of the emulated device, its null
    stream (0) included: None."""
    handle = getattr(stream, "cuda_stream", stream)
    return None if type(handle) is int and (handle == 0 or handle in CPU_STREAMS) else stream


def _emulate_cuda(capability, sms):
    """torch's "cuda" device as the CPU (see the module docstring)."""
    import torch
    from torch.overrides import TorchFunctionMode

    import torch.nn.attention as attention
    import torch.nn.functional as F
    fp32_math = {F.layer_norm}      # CUDA accumulates these in fp32 for f16/bf16 inputs (and
    #                                 so in backward); torch's CPU kernels accumulate bf16 sums
    #                                 in bf16 (layer_norm's dW/dB off by 0.5 at 1024 rows)

    # f16/bf16 matmuls run on CUDA's tensor cores (products exact, each k step's sum added to an
    # f32 accumulator), and so do float32 ones under torch.set_float32_matmul_precision("high"/
    # "medium"), in tf32 (inputs rounded to 10 mantissa bits). The CPU ignores the setting and
    # sums product by product in f32: its f16 result is farther from CUDA's than the exact sum
    # (a 512x768 @ 768x512 f16 GEMM: 497 outputs round differently from the exact sum, 3 of
    # them past assert_close's f16 tolerance; tensor cores' per-k-step sums, 189 and 0). So the
    # reference is the exact sum (float64) rounded once, after the tf32 rounding where CUDA
    # makes it
    tensor_core_math = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm,
                        torch.bmm, torch.Tensor.__rmatmul__}
    half_types = (torch.float16, torch.bfloat16)

    def tf32(t):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
            return t
        bits = t.contiguous().view(torch.int32)
        bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF    # round to nearest even
        return bits.view(torch.float32)

    # CUDA kernels the CPU lacks: `abs` of a bool tensor (the identity on CUDA)
    abs_ops = {torch.abs, torch.Tensor.abs, torch.Tensor.__abs__}

    class CpuAsCuda(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            # `torch.mm(a, b, out_dtype=)` (f16/bf16 in, f32 out: the CPU has no such kernel)
            # is the exact sum rounded once to out_dtype, as tensor cores accumulate in f32
            out_dtype = kwargs.pop("out_dtype", None) if func is torch.mm else None
            if func in tensor_core_math and not kwargs:
                ts = [a for a in args if isinstance(a, torch.Tensor)]
                tf = all(t.dtype == torch.float32 for t in ts) and \
                    torch.get_float32_matmul_precision() != "highest"
                if ts and (tf or out_dtype is not None or
                           all(t.dtype in half_types for t in ts)):
                    wide = [a.double() if isinstance(a, torch.Tensor) else a
                            for a in (map(tf32, args) if tf else args)]
                    return func(*wide).to(out_dtype or ts[0].dtype)
            if out_dtype is not None:
                kwargs["out_dtype"] = out_dtype
            if func in abs_ops and args[0].dtype == torch.bool:
                return args[0].clone()
            if func in fp32_math and args[0].dtype in (torch.float16, torch.bfloat16):
                up = lambda a: a.float() if isinstance(a, torch.Tensor) else a  # noqa: E731
                return func(*map(up, args), **{k: up(v) for k, v in kwargs.items()}).to(
                    args[0].dtype)
            if "device" in kwargs:
                kwargs["device"] = _cpu_device(kwargs["device"])
            if func is torch.Tensor.cuda:
                return args[0]
            if func is torch.Tensor.to:
                args = tuple(_cpu_device(a) for a in args)
            return func(*args, **kwargs)

    class Event:
        def __init__(self, enable_timing=False, **_):
            self.t = None

        def record(self, stream=None):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3

    class Stream:
        """A stream of the emulated device: CPU launches complete before they return, so it
        has nothing to wait for; its handle (`cuda_stream`) is a number no pointer has."""

        def __init__(self, *_, **__):
            self.cuda_stream = (id(self) << 4) | 1
            CPU_STREAMS.add(self.cuda_stream)

        def synchronize(self):
            pass

        def wait_stream(self, other):
            pass

        def query(self):
            return True

        def wait_event(self, event):
            pass

        def record_event(self, event=None):
            event = event or Event()
            event.record(self)
            return event

    class CUDAGraph:
        def __init__(self, *a, **k):
            self.launches = []

        def replay(self):
            for run in self.launches:
                run()

        def reset(self):
            self.launches = []

    @contextlib.contextmanager
    def graph(g, *a, **k):
        CAPTURING.append(g)
        try:
            yield g
        finally:
            CAPTURING.pop()

    props = types.SimpleNamespace(multi_processor_count=sms, name="CPU (tilepy)",
                                  major=capability[0], minor=capability[1],
                                  total_memory=16 << 30)
    cuda = torch.cuda
    for name, value in {
            "is_available": lambda: True, "device_count": lambda: 1,
            "current_device": lambda: 0, "current_stream": lambda device=None: None,
            "default_stream": lambda device=None: None, "synchronize": lambda device=None: None,
            "get_device_capability": lambda device=None: capability,
            "get_device_properties": lambda device=None: props,
            "get_device_name": lambda device=None: props.name, "Event": Event,
            "Stream": Stream, "device": lambda device=None: contextlib.nullcontext(),
            "stream": lambda s=None: contextlib.nullcontext(s), "CUDAGraph": CUDAGraph,
            "graph": graph}.items():
        setattr(cuda, name, value)
    real_sdpa_kernel = attention.sdpa_kernel
    # CUDA's attention backends (cuDNN, flash) as the CPU's: the math one is always allowed
    attention.sdpa_kernel = lambda backends, *a, **k: real_sdpa_kernel(
        [*(backends if isinstance(backends, (list, tuple)) else [backends]),
         attention.SDPBackend.MATH], *a, **k)
    torch.Tensor.is_cuda = property(lambda t: t.device.type in ("cpu", "cuda"))
    CpuAsCuda().__enter__()


def _emulate_one_rank():
    """torch.distributed as one CUDA rank on the CPU: NCCL is gloo, `mp.spawn` runs the one rank
    in this process, symmetric memory is the rank's own tensor (AllGatherMatmul.py)."""
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
    import torch.multiprocessing as mp
    real_init = dist.init_process_group

    def init_process_group(backend=None, *a, device_id=None, **k):
        return real_init("gloo", *a, **k)

    class Handle:
        world_size = 1

        def __init__(self, t):
            self.t = t

        def get_buffer(self, rank, shape, dtype, offset=0):
            return self.t.view(dtype).flatten()[offset:].view(shape)
    dist.is_nccl_available = lambda: True
    dist.init_process_group = init_process_group
    mp.spawn = lambda fn, args=(), nprocs=1, **k: [fn(r, *args) for r in range(nprocs)]
    symm_mem.rendezvous = lambda t, group_name=None: Handle(t)
    symm_mem.empty = lambda *shape, dtype=None, device=None: torch.empty(
        *shape, dtype=dtype or torch.get_default_dtype())


def _cuda_tile(record, capability):
    """`cuda.tile`: tilepy's names, `launch` recorded per kernel, the internals samples read."""
    import tilepy
    import tilepy.tune
    from tilepy.errors import TileUnsupportedFeatureError

    mod = types.ModuleType("cuda.tile")
    mod.__getattr__ = lambda name: getattr(tilepy, name)

    def launch(stream, grid, kernel, args, **kw):
        name = getattr(kernel, "name", repr(kernel))
        if CAPTURING:                   # into an emulated CUDA graph: run at its replay
            CAPTURING[-1].launches.append(lambda: launch(stream, grid, kernel, args, **kw))
            return None
        record.launched(name)
        try:
            return tilepy.launch(_cpu_stream(stream), grid, kernel, args, **kw)
        except TileUnsupportedFeatureError as e:
            record.mark(name, "UNSUPPORTED", _first_line(e))
            raise
        except Exception as e:
            record.mark(name, "CRASH", f"{type(e).__name__}: {_first_line(e)}")
            raise
    mod.launch = launch
    # cuTile internals read by samples to decide what to run: the emulated device's facts
    cext = types.ModuleType("cuda.tile._cext")
    cext.get_compute_capability = lambda *a: capability
    cext.dev_features_enabled = lambda: False
    version = types.ModuleType("cuda.tile._bytecode.version")

    class BytecodeVersion(tuple):
        def __new__(cls, major, minor):
            return super().__new__(cls, (major, minor))
    for v in ((13, 1), (13, 2), (13, 3), (13, 4), (13, 5)):
        setattr(BytecodeVersion, f"V_{v[0]}_{v[1]}", BytecodeVersion(*v))
    version.BytecodeVersion = BytecodeVersion
    compile_ = _CompileModule("cuda.tile._compile")
    compile_._get_max_supported_bytecode_version = lambda *a, **k: BytecodeVersion(13, 5)
    bytecode = types.ModuleType("cuda.tile._bytecode")
    bytecode.version = version
    mods = {"cuda.tile": mod, "cuda.tile.tune": tilepy.tune, "cuda.tile._cext": cext,
            "cuda.tile._bytecode": bytecode, "cuda.tile._bytecode.version": version,
            "cuda.tile._compile": compile_}
    for n, ours in (("_datatype", "tilepy.types.dtype"), ("compilation", "tilepy.compilation"),
                     ("_stub", "tilepy")):
        try:
            mods[f"cuda.tile.{n}"] = __import__(ours, fromlist=["_"])
        except ImportError:                     # not in tilepy yet: the sample's import fails
            pass
    mod.tune, mod._cext, mod._bytecode, mod._compile = tilepy.tune, cext, bytecode, compile_
    sys.modules.update(mods)
    import cuda
    cuda.tile = mod


class _CompileModule(types.ModuleType):
    """cuda.tile._compile, whose `compile_cubin` (cuTile's step from bytecode to the cubin) is
    tilepy's step from a compiled kernel to the code its device runs (api/device_compile.py; the
    CPU backend's host library here, where the CPU stands in for the GPU): reading or replacing
    it here reads or replaces tilepy's, which every launch calls."""

    def __getattr__(self, name):
        if name == "compile_cubin":
            from tilepy.api import device_compile
            return device_compile.compile_cubin
        if "__getattr__" in vars(self):         # a fallback cutile_internals.py installs
            return vars(self)["__getattr__"](name)
        raise AttributeError(f"module 'cuda.tile._compile' has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name == "compile_cubin":
            from tilepy.api import device_compile
            device_compile.compile_cubin = value
        else:
            super().__setattr__(name, value)


def _first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _wrap_checks(record):
    import torch.testing
    real = torch.testing.assert_close

    def assert_close(actual, expected, *a, **kw):
        try:
            real(actual, expected, *a, **kw)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if "mismatched" in ln.lower()
                     or "greatest" in ln.lower()]
            record.checked(False, "; ".join(lines) or _first_line(e))
            return None
        record.checked(True)
    torch.testing.assert_close = assert_close


def run_child(sample_path, out_path, capability, sms):
    record = Record()
    _emulate_cuda(capability, sms)
    _emulate_one_rank()
    _cuda_tile(record, capability)
    _wrap_checks(record)
    folder = os.path.dirname(os.path.abspath(sample_path))
    sys.path[:0] = [folder, os.path.dirname(folder)]
    sys.argv = [sample_path, "--correctness-check"]
    module = types.ModuleType("__main__")
    module.__file__ = sample_path
    sys.modules["__main__"] = module
    ended = "completed"
    try:
        with open(sample_path) as f:
            code = compile(f.read(), sample_path, "exec")
        exec(code, module.__dict__)
    except SystemExit as e:
        ended = f"exited ({e.code})"
    except BaseException as e:                   # noqa: BLE001 - recorded, reported
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{os.path.basename(fr.filename)}:{fr.lineno}" for fr in reversed(tb)
                      if fr.filename == sample_path), "?")
        ended = f"stopped at {where}: {type(e).__name__}: {_first_line(e)}"
    from tilepy.frontend.kernel import KernelFunction
    kernels = [v.name for v in module.__dict__.values() if isinstance(v, KernelFunction)]
    write_rows(out_path, kernels + list(record.status), record, ended)


def write_rows(out_path, names, record, ended):
    """The child's answer for the parent (run_in_child): one row per kernel of `names` (in
    order, once each) with its status in `record`, and how the child `ended`."""
    rows = []
    for name in dict.fromkeys(names):
        status = record.status.get(name, "NOT RUN")
        detail = record.detail.get(name, "") or ("" if status != "NOT RUN" else ended)
        if status == "UNCHECKED" and not ended.startswith("completed"):
            detail = ended
        rows.append({"kernel": name, "status": status, "detail": detail})
    with open(out_path, "w") as f:
        json.dump({"ended": ended, "rows": rows}, f)


# ---- the parent: every sample in a child process --------------------------------------------

def run_sample(path, args):
    return run_in_child(lambda out: [sys.executable, os.path.abspath(__file__), "--child", path,
                                     out, "--capability", args.capability, "--sms",
                                     str(args.sms)], args)


def run_in_child(command, args):
    """Run the child `command(out)` (which writes its rows to `out`: write_rows) in args.mode
    within args.timeout; its {"ended", "rows", "seconds"}."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    env = dict(os.environ, TILEPY_CPU_MODE=args.mode)
    t0 = time.perf_counter()
    proc = None
    try:
        proc = subprocess.run(command(out), capture_output=True, text=True,
                              timeout=args.timeout, env=env)
        with open(out) as f:
            result = json.load(f)
    except subprocess.TimeoutExpired:
        result = {"ended": f"timed out after {args.timeout} s", "rows": []}
    except (OSError, ValueError):
        tail = ((proc.stdout + proc.stderr) if proc else "").strip().splitlines()[-1:] or ["?"]
        result = {"ended": f"child failed: {tail[0]}", "rows": []}
    finally:
        if os.path.exists(out):
            os.unlink(out)
    result["seconds"] = time.perf_counter() - t0
    return result


def print_table(what, items, run, statuses=STATUSES):
    """The Markdown table of `run(item)` (run_in_child's result) for each item, a row per
    kernel, then the totals per status (`statuses`, in order)."""
    counts = dict.fromkeys(statuses, 0)
    print(f"| {what} | kernel | status | detail |\n|---|---|---|---|")
    for item in items:
        result = run(item)
        rows = result["rows"] or [{"kernel": "-", "status": "CRASH", "detail": result["ended"]}]
        for r in rows:
            counts[r["status"]] += 1
            detail = r["detail"].replace("|", "/")
            print(f"| {item} | {r['kernel']} | {r['status']} | {detail} |", flush=True)
        print(f"| {item} | | | ({result['ended']}, {result['seconds']:.0f} s) |", flush=True)
    print("\ntotal: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def emulation_arguments(p: argparse.ArgumentParser):
    """The options of the emulated device and CPU mode (this script's and cutile_tests.py's)."""
    p.add_argument("--mode", default="fast", choices=("fast", "faithful"))
    p.add_argument("--capability", default="10.0", help="the emulated device (major.minor)")
    p.add_argument("--sms", type=int, default=8, help="the emulated multiprocessor count")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", nargs="?", help="a cutile-python work tree (its samples/ folder is run)")
    p.add_argument("--only", nargs="*", help="sample file names (default: all)")
    emulation_arguments(p)
    p.add_argument("--timeout", type=float, default=1200, help="seconds per sample")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    capability = tuple(int(x) for x in args.capability.split("."))
    if args.child:
        return run_child(args.child[0], args.child[1], capability, args.sms)
    folder = os.path.join(args.checkout, "samples")
    names = args.only or sorted(n for n in os.listdir(folder)
                                if n.endswith(".py") and n[0].isupper())
    print_table("sample", names, lambda name: run_sample(os.path.join(folder, name), args))


if __name__ == "__main__":
    main()
