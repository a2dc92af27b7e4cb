"""tilepy.torch ops on CUDA tensors (skipped without a GPU and a CUDA build of torch): the op on
torch's current stream, inside torch.compile(fullgraph=True), and captured in a CUDA graph."""
import pytest

from gpu_machine import needs_real_gpu

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, needs_real_gpu(),
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA build of torch")]

import tilepy.torch as tpt  # noqa: E402
from torch_tutorial import tutorial6  # noqa: E402

_t6 = tutorial6()
gelu_backward = tpt.op("tilepy_gpu::gelu_backward", _t6.gelu_backward)
gelu = tpt.op("tilepy_gpu::gelu", _t6.gelu, backward=gelu_backward, save=("x",))


def _ref(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def test_op_on_a_side_stream_and_compiled():
    x = torch.randn(300, 500, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = gelu(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.testing.assert_close(y, _ref(x), rtol=1e-5, atol=1e-5)
    xr = x.clone().requires_grad_()
    out = torch.compile(lambda t: gelu(t) * 2, fullgraph=True)(xr)
    out.sum().backward()
    xe = x.clone().requires_grad_()
    (_ref(xe) * 2).sum().backward()
    torch.testing.assert_close(xr.grad, xe.grad, rtol=1e-5, atol=1e-5)


def test_op_captured_in_a_cuda_graph():
    x = torch.randn(64, 256, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        gelu(x)                                    # warm-up: the first launch compiles and loads
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = gelu(x)
    for k in range(3):
        x.copy_(torch.randn_like(x) * (k + 1))
        graph.replay()
        torch.testing.assert_close(y, _ref(x), rtol=1e-5, atol=1e-5)
