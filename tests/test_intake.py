"""Argument intake: numpy, torch (CPU), DLPack and __cuda_array_interface__ producers, and a
clear error for every array a kernel cannot take."""
import numpy as np
import pytest
from fake_arrays import FakeCAI, FakeDLPack

import tilepy as ct
from tilepy.host.intake import ArrayInfo, intake, numpy_ptr


def test_numpy_pointer_shape_strides():
    base = np.zeros((6, 8), np.float32)
    for a in (base, base[1:, 2:], base[::2, ::4], base.T, np.zeros(0, np.int8)):
        info = intake(a)
        assert info.ptr == a.__array_interface__["data"][0] == numpy_ptr(a)
        assert info.shape == a.shape
        assert info.strides == tuple(s // a.itemsize for s in a.strides)
        assert info.device == "cpu" and not info.readonly


def test_numpy_readonly_is_seen():
    a = np.zeros(4, np.float32)
    a.flags.writeable = False
    assert intake(a).readonly


def test_broadcast_view_has_stride_zero():
    a = np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4))
    assert intake(a).strides == (0, 1)


def test_not_arrays_are_none():
    for v in (1, 2.0, True, np.float32(1), "s", None, ct.float32, [1, 2]):
        assert intake(v) is None


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.dtype("U3"), object,
                                   np.dtype([("a", np.int32)])])
def test_unsupported_dtype(dtype):
    with pytest.raises(ct.TileTypeError, match=r"argument 'x': arrays of dtype .* are not supported"):
        intake(np.zeros(3, dtype), "x")


def test_negative_strides():
    with pytest.raises(ct.TileValueError, match=r"argument 'x': unsupported strides: negative "
                                                r"strides \(-1,\)"):
        intake(np.arange(4, dtype=np.float32)[::-1], "x")


def test_byte_strides_not_multiple_of_itemsize():
    raw = np.zeros(64, np.uint8)
    odd = np.lib.stride_tricks.as_strided(raw[:60].view(np.float32), shape=(5,), strides=(6,))
    with pytest.raises(ct.TileValueError, match="not multiples of the element size 4"):
        intake(odd, "x")


def test_array_interface_producer():
    class Wrapped:
        def __init__(self, a):
            self.__array_interface__ = a.__array_interface__
            self._a = a
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    info = intake(Wrapped(a))
    assert info.ptr == a.__array_interface__["data"][0] and info.shape == (2, 3)
    assert info.dtype == ct.int16 and info.source == "array_interface"


# ----------------------------------------------------------------------------- CUDA producers
def test_cuda_array_interface_without_driver(no_driver):
    info = intake(FakeCAI((4, 8), np.float16, readonly=True), "x")
    assert info.device == "cuda" and info.device_id is None
    assert info.shape == (4, 8) and info.strides == (8, 1) and info.dtype == ct.float16
    assert info.readonly and info.ptr == 0x7f0000000000


def test_cuda_array_interface_strides_and_errors(no_driver):
    assert intake(FakeCAI((4, 8), np.float32, strides=(4, 32))).strides == (1, 8)
    with pytest.raises(ct.TileValueError, match="negative strides"):
        intake(FakeCAI((4,), np.float32, strides=(-4,)), "x")
    with pytest.raises(ct.TileTypeError, match="complex64 are not supported"):
        intake(FakeCAI((4,), np.complex64), "x")
    masked = FakeCAI((4,), np.float32)
    masked.__cuda_array_interface__["mask"] = object()
    with pytest.raises(ct.TileValueError, match="masked"):
        intake(masked, "x")
    broken = FakeCAI((4,), np.float32)
    del broken.__cuda_array_interface__["data"]
    with pytest.raises(ct.TileTypeError, match="malformed __cuda_array_interface__"):
        intake(broken, "x")


def test_dlpack_cuda_through_strided_memory_view():
    info = intake(FakeDLPack((4, 8), np.float32, (2, 1), strides=(1, 4)))
    assert info.device == "cuda" and info.device_id == 1 and info.source == "dlpack"
    assert info.shape == (4, 8) and info.strides == (1, 4) and info.dtype == ct.float32
    managed = intake(FakeDLPack((3,), np.int32, (13, 0)))
    assert managed.device == "cuda" and managed.dtype == ct.int32


@pytest.mark.parametrize("dev,name", [((10, 0), "ROCm"), ((4, 0), "OpenCL"), ((8, 0), "Metal")])
def test_dlpack_other_devices_are_rejected(dev, name):
    with pytest.raises(ct.TileValueError, match=f"DLPack device {name} are not supported"):
        intake(FakeDLPack((4,), np.float32, dev), "x")


def test_dlpack_cpu_producer():
    class Producer:                      # a CPU DLPack producer that is not numpy
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, **kw):
            return self._a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()
    a = np.arange(5, dtype=np.float64)
    info = intake(Producer(a))
    assert info.ptr == a.__array_interface__["data"][0] and info.source == "dlpack"
    assert info.device == "cpu" and info.dtype == ct.float64


# ----------------------------------------------------------------------------- torch (CPU)
def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    info = intake(t.T)
    assert isinstance(info, ArrayInfo) and info.source == "torch"
    assert info.ptr == t.data_ptr() and info.shape == (4, 3) and info.strides == (1, 4)
    assert info.device == "cpu"
    for td, d in ((torch.bfloat16, ct.bfloat16), (torch.float16, ct.float16), (torch.bool, ct.bool_),
                  (torch.int64, ct.int64), (torch.uint8, ct.uint8)):
        assert intake(torch.zeros(2, dtype=td)).dtype == d
    grad = torch.zeros(3, requires_grad=True)          # DLPack refuses these; data_ptr does not
    assert intake(grad).ptr == grad.data_ptr()


def test_torch_errors():
    torch = pytest.importorskip("torch")
    with pytest.raises(ct.TileTypeError, match="torch.complex64 are not supported"):
        intake(torch.zeros(2, dtype=torch.complex64), "x")
    with pytest.raises(ct.TileTypeError, match="sparse"):
        intake(torch.zeros(2, 2).to_sparse(), "x")
    with pytest.raises(ct.TileValueError, match="tensors on device 'meta'"):
        intake(torch.zeros(2, device="meta"), "x")
    with pytest.raises(ct.TileValueError, match="negation"):
        intake(torch.zeros(2)._neg_view(), "x")


def test_fake_tensors_are_refused():
    """A fake tensor (torch.compile's tracing) reports a null data pointer: launching on it ran
    the kernel on address 0 (a segfault) before this check."""
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        fake = torch.empty(64)
    with pytest.raises(ct.TileValueError, match="argument 'x': the tensor has no data"):
        intake(fake, "x")
    assert intake(torch.empty(0), "x").shape == (0,)      # an empty tensor may have no pointer
