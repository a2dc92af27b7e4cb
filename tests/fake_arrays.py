"""Fake CUDA arrays for tests without a GPU: objects that speak `__cuda_array_interface__` or
DLPack with a CUDA device, pointing at host memory they own (never dereferenced: launches of
them must fail before running anything)."""
import ctypes

import numpy as np


class FakeCAI:
    """A CUDA array by `__cuda_array_interface__` (v3)."""

    def __init__(self, shape, dtype=np.float32, readonly=False, strides=None, ptr=0x7f0000000000):
        self._host = np.zeros(shape, dtype)
        self.shape = tuple(shape)
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": np.dtype(dtype).str, "data": (ptr, readonly),
            "strides": strides, "version": 3, "stream": None}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_DL_CODE = {"i": 0, "u": 1, "f": 2, "b": 6}
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeDLPack:
    """A DLPack producer on (device_type, device_id): 2 = CUDA, 10 = ROCm, ..."""

    def __init__(self, shape, dtype=np.float32, device=(2, 0), ptr=0x7f0000000000, strides=None):
        dt = np.dtype(dtype)
        self.shape = tuple(shape)
        self._device = device
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(shape))(*strides)
        self._mt = _DLManagedTensor()
        t = self._mt.dl_tensor
        t.data = ptr
        t.device = _DLDevice(*device)
        t.ndim = len(shape)
        t.dtype = _DLDataType(_DL_CODE[dt.kind], dt.itemsize * 8, 1)
        t.shape = self._shape
        t.strides = self._strides
        t.byte_offset = 0

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return _capsule_new(ctypes.addressof(self._mt), b"dltensor", None)


class FakeStream:
    """Something with `__cuda_stream__` (a CUDA stream by protocol)."""

    def __cuda_stream__(self):
        return (0, 1234)
