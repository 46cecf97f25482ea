"""DLPack export: a dense object's data handed to any framework without a
copy, in its own dtype (bf16 as bf16, FP8 as FP8, which numpy lacks).

    t = f.dlpack("w")            # a ztensor.Tensor
    torch.from_dlpack(t)         # torch.bfloat16, shares t's memory
    numpy.from_dlpack(t)         # for the dtypes numpy has
    jax.dlpack.from_dlpack(t)

The legacy (unversioned) DLPack capsule carries no read-only flag, so what
a consumer receives must be writable: raw data is a copy-on-write private
mapping of the file (a write changes the consumer's pages, never the file),
anything else a decoded buffer of its own. Either stays valid after the
File is closed, for as long as a consumer holds it. A capsule no consumer
took (a consumer that refused its dtype, say) is freed at the next export,
when its Tensor goes, after a garbage collection, or at exit: never inside
the consumer's failing call, where the destructor would hide its error.
"""

import atexit
import ctypes
import gc
import sys
import threading
from ctypes import POINTER, CFUNCTYPE, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p
from typing import Tuple

import numpy as np

# DLDataType codes (dlpack.h, DLPack 1.1).
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6
_FLOAT8 = {"f8_e4m3fn": 10, "f8_e4m3fnuz": 11, "f8_e5m2": 12, "f8_e5m2fnuz": 13, "f8_e8m0": 14}
_CPU = 1  # kDLCPU

# (storage dtype, type) -> (code, bits)
_CODES = {
    ("f64", None): (_FLOAT, 64), ("f32", None): (_FLOAT, 32), ("f16", None): (_FLOAT, 16),
    ("bf16", None): (_BFLOAT, 16),
    ("i64", None): (_INT, 64), ("i32", None): (_INT, 32), ("i16", None): (_INT, 16), ("i8", None): (_INT, 8),
    ("u64", None): (_UINT, 64), ("u32", None): (_UINT, 32), ("u16", None): (_UINT, 16), ("u8", None): (_UINT, 8),
    ("bool", None): (_BOOL, 8), ("u8", "bool"): (_BOOL, 8),
    ("f32", "complex64"): (_COMPLEX, 64), ("f64", "complex128"): (_COMPLEX, 128),
}
_CODES.update({("u8", t): (code, 8) for t, code in _FLOAT8.items()})


class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32), ("dtype", _DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(Structure):
    pass


_Deleter = CFUNCTYPE(None, POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", _Deleter)]

# What each exported tensor keeps alive until its consumer lets it go:
# manager_ctx (a number) -> (the struct, its shape array, the memory's owner).
_alive = {}
# Re-entrant: a garbage collection may run anywhere under it (any allocation
# starts one) and finalize a consumer's tensor, whose deleter (_delete)
# takes it again in this very thread: with a plain Lock that waited forever.
_alive_lock = threading.RLock()
_next_key = [1]


@_Deleter
def _delete(managed, _alive=_alive, _alive_lock=_alive_lock):
    # (Module globals bound as defaults: a consumer may free a tensor while
    # the interpreter tears the module down.)
    with _alive_lock:
        _alive.pop(managed.contents.manager_ctx, None)


_NAME = ctypes.create_string_buffer(b"dltensor")
_Destructor = CFUNCTYPE(None, c_void_p)
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_void_p, _Destructor]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [c_void_p, c_void_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [c_void_p, c_void_p]


# Every capsule handed out is held here too, so that it dies only when
# _sweep lets it go, in code of ours: never inside a consumer's call that is
# failing. Its destructor is a ctypes callback (Python code), which cannot
# run while the consumer's exception is set: any call in it raised
# SystemError, the consumer's own error was lost (numpy 1.24 refusing a bool
# tensor said "returned NULL without setting an exception") and the tensor
# was never freed.
_handed_out = []
_sweeping = [False]  # a sweep is walking _handed_out (read and set under the lock)


def _sweep(wait=True):
    """Lets go of the capsules that nobody else holds any more: their
    destructors run now, freeing the tensors of those never consumed. With
    wait=False (from the garbage collector and finalizers, which may run
    while another thread holds the lock), nothing is done if the lock is
    taken. A sweep started inside a sweep (a collection during its walk
    finalizing a Tensor) returns at once: the outer one goes on."""
    if not _alive_lock.acquire(blocking=wait):
        return
    kept, dropped = [], []
    try:
        if _sweeping[0]:
            return
        _sweeping[0] = True
        try:
            for c in _handed_out:
                # Held by this list alone: 3 references here (the list's, the
                # loop's and getrefcount's argument).
                (dropped if sys.getrefcount(c) <= 3 else kept).append(c)
            _handed_out[:] = kept
        finally:
            _sweeping[0] = False
    finally:
        _alive_lock.release()
    c = None
    del dropped  # outside the lock: their destructors take it


def _after_collection(phase, info):
    if phase == "stop":
        _sweep(wait=False)


# Sweeps run at each export, when a Tensor goes, after each garbage
# collection (gc.collect() included) and at exit: a capsule nobody consumed
# is freed at the first of them after it is dropped.
gc.callbacks.append(_after_collection)
atexit.register(_sweep)


@_Destructor
def _capsule_gone(capsule, _api=_api, _name=ctypes.addressof(_NAME), _cast=ctypes.cast,
                  _managed=POINTER(_DLManagedTensor), _delete=_delete):
    # A consumer renames the capsule "used_dltensor" once it owns the tensor;
    # one still called "dltensor" was never consumed: we free it.
    if _api.PyCapsule_IsValid(capsule, _name):
        _delete(_cast(_api.PyCapsule_GetPointer(capsule, _name), _managed))


def _capsule(array: np.ndarray, code: int, bits: int, shape: Tuple[int, ...]):
    """A "dltensor" capsule over a C-contiguous, writable numpy array's memory,
    described as `shape` of (code, bits); the array lives until the
    consumer calls the deleter (or the capsule dies unconsumed)."""
    _sweep()
    dims = (c_int64 * max(len(shape), 1))(*shape)
    managed = _DLManagedTensor()
    t = managed.dl_tensor
    t.data = array.ctypes.data if array.nbytes else None
    t.device = _DLDevice(_CPU, 0)
    t.ndim = len(shape)
    t.dtype = _DLDataType(code, bits, 1)
    t.shape = dims
    t.strides = None  # compact, row-major
    t.byte_offset = 0
    with _alive_lock:
        key = _next_key[0]
        _next_key[0] += 1
        _alive[key] = (managed, dims, array)
    managed.manager_ctx = key
    managed.deleter = _delete
    capsule = _api.PyCapsule_New(ctypes.addressof(managed), ctypes.addressof(_NAME), _capsule_gone)
    with _alive_lock:
        _handed_out.append(capsule)
    return capsule


class Tensor:
    """A dense object's data as File.dlpack gives it: its bytes in memory of
    its own (a copy-on-write mapping of the file for raw data, a decoded
    buffer otherwise), exported through DLPack in the object's own dtype,
    and through numpy (np.asarray(t): the storage as numpy has it, bf16 as
    uint16 codes) and so the buffer protocol (memoryview(np.asarray(t)))."""

    def __init__(self, name: str, storage: np.ndarray, dtype: str, ltype, shape: Tuple[int, ...]):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = ltype or dtype  # the zTensor type name: "bf16", "f8_e4m3fn", "complex64", ...
        self._code = _CODES[(dtype, ltype)]
        self._storage = storage

    def __repr__(self):
        return f"<ztensor.Tensor {self.name!r} {self.dtype}{list(self.shape)}>"

    def __del__(self):
        # A consumer that refused this tensor's capsule has dropped it by now
        # (its exception is set aside while __del__ runs): free it here.
        # Without waiting: a finalizer may run inside a collection that
        # another thread started while holding the lock.
        if _sweep is not None:  # None at interpreter shutdown
            _sweep(wait=False)

    @property
    def nbytes(self) -> int:
        return self._storage.nbytes

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_CPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if dl_device is not None and tuple(dl_device) != (_CPU, 0):
            raise BufferError(f"{self!r} is in CPU memory; DLPack cannot move it to {dl_device}")
        storage = self._storage.copy() if copy else self._storage
        return _capsule(storage, *self._code, self.shape)

    def __array__(self, dtype=None, copy=None):
        a = self._storage
        return a.astype(dtype) if dtype is not None else (a.copy() if copy else a)
