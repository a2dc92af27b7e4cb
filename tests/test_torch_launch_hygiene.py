"""tilepy.torch's launch guarantee, checked without a GPU: a cached launch of a tilepy op on CUDA
tensors does no host synchronization, no allocation and no driver query, and launches on
torch's current stream of the tensors' device -- so it can be captured in a CUDA graph.

No CUDA tensors exist here (torch is a CPU build), so the test makes CPU tensors look like
CUDA ones to the launcher (their ArrayInfo says "cuda", device 0) and puts a recording stub in
place of cuda.core and the driver bindings (tests/cuda_core_stub.py); torch's current stream
is a stand-in that says which stream torch would launch on. The kernel is compiled by the real
NVRTC (sm_90 cubin) on the first launch. Everything a launch does through cuda.core or the
driver is recorded; the cached launch may only make the device's context current and launch.
On a machine with a GPU, tests/test_torch_ops_gpu.py captures the op in a real CUDA graph.
"""
import dataclasses

import pytest

torch = pytest.importorskip("torch")
import tilepy as ct  # noqa: E402
import tilepy.torch as tpt  # noqa: E402
from cuda_core_stub import install  # noqa: E402
from torch_tutorial import tutorial6  # noqa: E402
from tilepy.api import launcher  # noqa: E402

_t6 = tutorial6()


class _TorchStream:
    """What torch.cuda.current_stream returns, as far as a launch looks at it."""

    def __init__(self, handle):
        self.cuda_stream = handle


@pytest.fixture
def gpu_world(monkeypatch):
    """The stub, torch's current stream (changeable), and a record of torch.cuda calls."""
    stub = install(monkeypatch)
    current = {"stream": 0x5100}
    torch_calls = []

    def current_stream(device=None):
        torch_calls.append(("torch.cuda.current_stream", device))
        return _TorchStream(current["stream"])

    for name in ("synchronize", "empty_cache", "mem_get_info", "get_device_properties"):
        monkeypatch.setattr(torch.cuda, name,
                            lambda *a, _n=name, **k: torch_calls.append((f"torch.cuda.{_n}",)))
    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    real_intake = launcher._intake

    def as_cuda(a, name):          # the launcher sees the CPU tensors as CUDA tensors
        info = real_intake(a, name)
        if getattr(info, "source", None) == "torch":
            return dataclasses.replace(info, device="cuda", device_id=0)
        return info
    monkeypatch.setattr(launcher, "_intake", as_cuda)
    return stub, current, torch_calls


def _fresh_gelu(tag):
    """Tutorial 6's GELU op over a fresh copy of its kernel (the stub's plans must not reach
    other tests' launches of the tutorial kernel)."""
    kernel = _t6.gelu_forward_kernel.replace_hints()
    globs = {**_t6.gelu.__globals__, "gelu_forward_kernel": kernel}
    body = type(_t6.gelu)(_t6.gelu.__code__, globs, "gelu")
    body.__annotations__ = _t6.gelu.__annotations__
    return tpt.op(f"tilepy_hygiene::gelu_{tag}", body), kernel


def test_cached_launch_only_sets_the_context_and_launches_on_torchs_stream(gpu_world):
    stub, current, torch_calls = gpu_world
    gelu, kernel = _fresh_gelu("cached")
    x = torch.randn(40, 100)
    gelu(x)                                           # first launch: compile, load, ask
    first = [c[0] for c in stub.calls]
    assert "ObjectCode.from_cubin" in first and "Device.compute_capability" in first
    assert first[-1] == "launch"

    stub.calls.clear()
    torch_calls.clear()
    x2 = torch.randn(40, 100)
    y2 = gelu(x2)                                     # cached: same signature, new tensors
    assert [c[0] for c in stub.calls] == ["Device.set_current", "launch"], stub.calls
    _, handle, grid, block, launched, args = stub.calls[1]
    assert handle == 0x5100 and grid == (3, 2, 1) and launched == ("kernel", kernel.name)
    assert args[0] == x2.data_ptr() and y2.data_ptr() in args    # this call's tensors
    assert torch_calls == [("torch.cuda.current_stream", 0)]     # the tensors' device

    stub.calls.clear()
    current["stream"] = 0x5200                        # torch switched streams
    gelu(x2)
    assert [c[0] for c in stub.calls] == ["Device.set_current", "launch"]
    assert stub.calls[1][1] == 0x5200


def test_first_launch_is_where_the_queries_are(gpu_world):
    """The other side of the guarantee: the driver is asked once per signature, then never."""
    stub, _, _ = gpu_world
    gelu, _ = _fresh_gelu("queries")
    for shape in ((16, 64), (16, 64), (16, 64), (32, 64), (32, 64)):
        gelu(torch.randn(*shape))
    queries = [c for c in stub.calls if c[0] in ("Device.compute_capability", "cuDriverGetVersion",
                                                 "ObjectCode.get_kernel", "LaunchConfig")]
    # one compile/load for the kernel; a LaunchConfig per new grid (two shapes, one plan each)
    assert [c[0] for c in queries].count("ObjectCode.get_kernel") == 1
    assert [c[0] for c in queries].count("LaunchConfig") == 2
    assert [c[0] for c in stub.calls].count("launch") == 5
    assert not [c for c in stub.calls if "not modelled" in c[0] or c[0] in
                ("Device.sync", "Device.allocate")]


def test_stub_reports_what_it_does_not_model(monkeypatch):
    stub = install(monkeypatch)
    import cuda.core
    with pytest.raises(AttributeError, match="does not model cuda.core.Stream"):
        cuda.core.Stream  # noqa: B018
    assert stub.calls == [("cuda.core.Stream (not modelled)",)]
    ct.cdiv(1, 1)   # tilepy itself is untouched
