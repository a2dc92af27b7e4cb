"""Real-GPU tests: skipped cleanly when no NVIDIA driver/GPU is present."""
import pytest

import tilepy as ct
from tilepy.launch.gpu import driver_available

pytestmark = pytest.mark.gpu


def test_driver_probe_is_safe_without_a_driver():
    # Must never hang or raise, with or without a driver.
    assert driver_available() in (True, False)


@pytest.mark.skipif(not driver_available(), reason="no NVIDIA driver/GPU")
def test_vector_add_on_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")

    @ct.kernel
    def vadd(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
    a = torch.randn(10_000, device="cuda")
    b = torch.randn(10_000, device="cuda")
    c = torch.zeros_like(a)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(10_000, 256),), vadd, (a, b, c, 256))
    torch.cuda.synchronize()
    assert torch.allclose(c, a + b)
