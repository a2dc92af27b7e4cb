"""tilepy.torch's launch guarantee, checked without a GPU: a cached launch of a tilepy op on CUDA
tensors does no host synchronization, no allocation and no driver query, and launches on
torch's current stream of the tensors' device -- so it can be captured in a CUDA graph.

No CUDA tensors exist here (torch is a CPU build), so the test makes CPU tensors look like
CUDA ones to the launcher (their ArrayInfo says "cuda", device 0) and puts the fake driver of
tests/fake_driver.py in place of cuda.core and the driver (it runs the CPU build of the kernel
from the packed launch parameters, so the results are real); torch's current stream is a
stand-in that says which stream torch would launch on. The kernel is compiled by the real NVRTC
(sm_90 cubin) on the first launch. Everything a launch asks of the driver is recorded; the
cached launch may only read the thread's current context (to leave it as it was) and launch;
a stream handle seen for the first time is wrapped once as a cuda.core Stream.
On a machine with a GPU, tests/test_torch_ops_gpu.py captures the op in a real CUDA graph.
"""
import pytest

torch = pytest.importorskip("torch")
import tilepy as ct  # noqa: E402
import tilepy.torch as tpt  # noqa: E402
from fake_driver import FakeDriver, torch_on_the_fake_gpu  # noqa: E402
from torch_tutorial import tutorial6  # noqa: E402
from tilepy.cuda_c.names import kernel_symbol  # noqa: E402

_t6 = tutorial6()


@pytest.fixture
def gpu_world(monkeypatch):
    """The stub, torch's current stream (changeable: `current["stream"]`), and a record of
    torch.cuda calls."""
    stub = FakeDriver().install(monkeypatch)
    stub.set_context(0x1000)                          # torch's context on cuda:0 is current
    stub.calls.clear()
    torch_calls = []
    for name in ("synchronize", "empty_cache", "mem_get_info", "get_device_properties"):
        monkeypatch.setattr(torch.cuda, name,
                            lambda *a, _n=name, **k: torch_calls.append((f"torch.cuda.{_n}",)))
    current = torch_on_the_fake_gpu(monkeypatch, torch, 0x5100, torch_calls)
    return stub, current, torch_calls


def _fresh_gelu(tag):
    """Tutorial 6's GELU op over a fresh copy of its kernel (the stub's plans must not reach
    other tests' launches of the tutorial kernel)."""
    kernel = _t6.gelu_forward_kernel.replace_hints()
    globs = {**_t6.gelu.__globals__, "gelu_forward_kernel": kernel}
    body = type(_t6.gelu)(_t6.gelu.__code__, globs, "gelu")
    body.__annotations__ = _t6.gelu.__annotations__
    return tpt.op(f"tilepy_hygiene::gelu_{tag}", body), kernel


def _names(stub):
    return [c[0] for c in stub.calls]


def test_cached_launch_only_launches_on_torchs_stream(gpu_world):
    stub, current, torch_calls = gpu_world
    gelu, kernel = _fresh_gelu("cached")
    x = torch.randn(40, 100)
    y = gelu(x)                                       # first launch: compile, load, ask
    first = _names(stub)
    assert "objectcode.from_cubin" in first and "stream.from_handle" in first
    assert first[-1] == "launch"
    torch.testing.assert_close(y, torch.nn.functional.gelu(x, approximate="tanh"))   # it ran

    stub.calls.clear()
    torch_calls.clear()
    x2 = torch.randn(40, 100)
    y2 = gelu(x2)                                     # cached: same signature, new tensors
    assert _names(stub) == ["ctx.get", "launch"], stub.calls
    launched = stub.launches[-1]
    assert launched.stream == 0x5100 and launched.grid == (3, 2, 1)
    assert launched.kernel == kernel_symbol(kernel.name)
    assert launched.args[0] == x2.data_ptr() and y2.data_ptr() in launched.args   # this call's
    assert torch_calls == [("torch.cuda.current_stream", 0)]     # the tensors' device
    assert stub.current_context() == 0x1000                      # torch's context left current

    stub.calls.clear()
    current["stream"] = 0x5200                        # torch switched streams: wrapped once
    gelu(x2)
    assert _names(stub) == ["stream.from_handle", "ctx.get", "launch"]
    assert stub.launches[-1].stream == 0x5200
    stub.calls.clear()
    gelu(x2)
    assert _names(stub) == ["ctx.get", "launch"]


def test_first_launch_is_where_the_queries_are(gpu_world):
    """The other side of the guarantee: the driver is asked once per signature, then never."""
    stub, _, _ = gpu_world
    gelu, _ = _fresh_gelu("queries")
    for shape in ((16, 64), (16, 64), (16, 64), (32, 64), (32, 64)):
        gelu(torch.randn(*shape))
    names = _names(stub)
    # one compile/load for the kernel; a LaunchConfig per new grid (two shapes, one plan each)
    assert names.count("objectcode.get_kernel") == 1
    assert names.count("launchconfig") == 2
    assert names.count("launch") == 5
    assert not [n for n in names if "not modelled" in n or n in ("stream.sync", "printf_fifo")]


def test_the_fake_driver_reports_what_it_does_not_model(monkeypatch):
    stub = FakeDriver().install(monkeypatch)
    with pytest.raises(AttributeError, match="does not model cuda.core.Buffer"):
        stub.core.Buffer  # noqa: B018
    assert stub.calls == [("cuda.core.Buffer (not modelled)", None)]
    ct.cdiv(1, 1)   # tilepy itself is untouched
