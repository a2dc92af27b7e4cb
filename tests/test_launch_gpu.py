"""Launches on a real GPU (marker `gpu`): skipped cleanly when there is no NVIDIA driver/GPU.

These run the code paths that need the driver: device from the arguments, the exact arch,
cuda.core module load and launch, streams (argument, __cuda_stream__, torch's current stream),
torch CUDA tensors and cupy arrays, and AOT cubins loaded on the device."""
import numpy as np
import pytest

import tilepy as ct
from gpu_machine import needs_real_gpu

pytestmark = [pytest.mark.gpu, needs_real_gpu()]


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def saxpy(x, y, alpha, n):
    i = ct.bid(0)
    t = ct.load(x, (i,), (128,)) * alpha + ct.load(y, (i,), (128,))
    ct.store(y, (i,), t + n)


def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def test_device_arch_is_compiled_exactly():
    from cuda.core import Device

    from tilepy.launch.gpu import device_target
    dev = Device(0)
    dev.set_current()
    target = device_target(dev)
    from tilepy.launch import toolchain
    supported = toolchain.info().supported_archs
    arch = int(dev.arch)
    # a cubin for the device's own arch when NVRTC knows it, else PTX of the newest older arch
    want = f"sm_{arch}" if arch in supported else f"compute_{max(a for a in supported if a < arch)}"
    assert target == want, (target, arch, supported)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_torch_cuda_current_stream(dtype):
    torch = torch_cuda()
    dt = getattr(torch, dtype)
    a = torch.randn(10_000, device="cuda").to(dt)
    b = torch.randn(10_000, device="cuda").to(dt)
    c = torch.zeros_like(a)
    ct.launch(None, (ct.cdiv(10_000, 256),), vadd, (a, b, c, 256))    # torch's current stream
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


def test_explicit_streams():
    """Launches on other streams than the one that made the tensors wait for it first (the
    tensors' producer is torch's current stream), and are waited for before reading."""
    torch = torch_cuda()
    from cuda.core import Device
    a = torch.randn(4096, device="cuda")
    b = torch.randn(4096, device="cuda")
    s = torch.cuda.Stream()
    for stream in (s, torch.cuda.current_stream(), s.cuda_stream):
        c = torch.zeros_like(a)
        s.wait_stream(torch.cuda.current_stream())
        ct.launch(stream, (16,), vadd, (a, b, c, 256))
        torch.cuda.synchronize()
        assert torch.equal(c, a + b)
    dev = Device(torch.cuda.current_device())
    dev.set_current()
    cs = dev.create_stream()
    c = torch.zeros_like(a)
    cs.wait(torch.cuda.current_stream())
    ct.launch(cs, (16,), vadd, (a, b, c, 256))
    cs.sync()
    assert torch.equal(c, a + b)


def test_a_kernel_with_asserts_runs_checked():
    """(A failing assert would leave the CUDA context unusable for the rest of the tests.)"""
    torch = torch_cuda()
    from definitions import load
    checked_sqrt = load("08_debugging").checked_sqrt
    x = torch.linspace(0, 1, 300, device="cuda")
    y = torch.zeros_like(x)
    ct.launch(None, (3,), checked_sqrt, (x, y, 128))
    torch.testing.assert_close(y, x.sqrt())


def test_scalars_and_repeated_launches():
    torch = torch_cuda()
    x = torch.randn(1024, device="cuda")
    for alpha, n in ((2.0, 1), (-0.5, 3), (1.5, -7)):
        y = torch.ones(1024, device="cuda")
        ct.launch(None, (8,), saxpy, (x, y, alpha, n))
        torch.cuda.synchronize()
        torch.testing.assert_close(y, x * alpha + 1 + n)


def test_strided_torch_views():
    torch = torch_cuda()
    m = torch.randn(64, 256, device="cuda")
    out = torch.zeros(256, 64, device="cuda").T
    ct.launch(None, (1,), vadd, (m[3], m[5], out[7], 256))
    torch.cuda.synchronize()
    assert torch.equal(out[7], m[3] + m[5])


def test_cupy_arrays():
    cp = pytest.importorskip("cupy")
    a = cp.arange(4096, dtype=cp.float32)
    b = cp.ones(4096, dtype=cp.float32)
    c = cp.zeros(4096, dtype=cp.float32)
    ct.launch(cp.cuda.get_current_stream(), (16,), vadd, (a, b, c, 256))
    cp.cuda.get_current_stream().synchronize()
    assert bool((c == a + b).all())


def test_cpu_and_cuda_mixed_is_an_error():
    torch = torch_cuda()
    a = torch.zeros(256, device="cuda")
    with pytest.raises(ct.TileValueError, match="different devices"):
        ct.launch(None, (1,), vadd, (a, np.zeros(256, np.float32), a, 256))


def test_aot_cubin_runs_on_the_device():
    torch = torch_cuda()
    from cuda.core import Device
    arch = f"sm_{Device(0).arch}"
    c = vadd.compile("float32[::1]", "float32[::1]", "float32[::1]", 256, arch=arch)
    a = torch.randn(4096, device="cuda")
    b = torch.randn(4096, device="cuda")
    out = torch.zeros_like(a)
    c.launch(torch.cuda.current_stream(), (16,), (a, b, out, 256))
    torch.cuda.synchronize()
    assert torch.equal(out, a + b)
    with pytest.raises(ct.TileValueError, match="CPU arrays passed to a GPU launch"):
        c.launch(None, (16,), (np.zeros(4096, np.float32),) * 3 + (256,))
