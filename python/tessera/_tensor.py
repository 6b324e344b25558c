# _tensor.py — numpy arrays and tessera's host tensors (ts_tensor): dtypes both ways, a numpy view
# of a tensor the library returned (no copy: the array owns the tensor and frees it when
# collected), and a tensor made from an array (for the calls that take a ts_tensor).
import ctypes as C

import numpy as np

from ._abi import TS_BF16, TS_ERR_DTYPE, TS_F16, TS_F32, TS_I32, TS_I64, TS_U8
from ._lib import P, Error, checked, fn, shape_arr

DTYPE_NAMES = {TS_F32: "f32", TS_BF16: "bf16", TS_F16: "f16", TS_I32: "i32", TS_I64: "i64", TS_U8: "u8"}
_BY_NAME = {v: k for k, v in DTYPE_NAMES.items()}
# bf16 has no numpy type: such a tensor reads as uint16 (its raw bits)
_TO_NUMPY = {TS_F32: np.float32, TS_BF16: np.uint16, TS_F16: np.float16, TS_I32: np.int32, TS_I64: np.int64,
             TS_U8: np.uint8}
_FROM_NUMPY = {np.dtype(np.float32): TS_F32, np.dtype(np.float16): TS_F16, np.dtype(np.int32): TS_I32,
               np.dtype(np.int64): TS_I64, np.dtype(np.uint8): TS_U8, np.dtype(np.bool_): TS_U8}

tensor_new = fn("ts_tensor_new", P, C.c_int, C.c_int, C.POINTER(C.c_int64))
tensor_from = fn("ts_tensor_from", P, C.c_int, C.c_int, C.POINTER(C.c_int64), P)
tensor_free = fn("ts_tensor_free", None, P)
tensor_dtype = fn("ts_tensor_dtype", C.c_int, P)
tensor_ndim = fn("ts_tensor_ndim", C.c_int, P)
tensor_shape = fn("ts_tensor_shape", C.POINTER(C.c_int64), P)
tensor_nbytes = fn("ts_tensor_nbytes", C.c_size_t, P)
tensor_data = fn("ts_tensor_data", P, P)


def dtype_code(d):
    """tessera's dtype code of a numpy dtype or a name ("f32", "int32", ...); tessera.Error
    (TS_ERR_DTYPE) for one tessera has no type for."""
    if isinstance(d, int):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        return _FROM_NUMPY[np.dtype(d)]
    except (KeyError, TypeError):
        raise Error("dtype %s has no tessera type (f32, f16, i32, i64, u8; bf16 as uint16 bits)" % (d,), TS_ERR_DTYPE)


def numpy_dtype(code):
    return _TO_NUMPY[code]


def as_input(a, dtype=None):
    """a as a C-contiguous numpy array (no copy when it already is one) and its tessera dtype."""
    a = np.asarray(a)
    if dtype is not None and np.dtype(dtype) != a.dtype:
        a = a.astype(dtype)
    code = dtype_code(a.dtype)
    return np.ascontiguousarray(a), code


class _Owner:
    """Frees a ts_tensor when the last array viewing it goes."""

    def __init__(self, t):
        self.t = t

    def __del__(self):
        if self.t and tensor_free:
            tensor_free(self.t)
            self.t = None


def to_numpy(t):
    """A numpy array viewing ts_tensor t, which it takes over (freed with the array)."""
    checked(t)
    owner = _Owner(t)
    code = tensor_dtype(t)
    nd = tensor_ndim(t)
    sp = tensor_shape(t)
    shape = tuple(sp[i] for i in range(nd))
    n = tensor_nbytes(t)
    if n == 0:
        return np.zeros(shape, _TO_NUMPY[code])
    buf = (C.c_char * n).from_address(tensor_data(t))
    buf._owner = owner  # the buffer keeps the tensor alive; the array keeps the buffer
    return np.frombuffer(buf, dtype=_TO_NUMPY[code]).reshape(shape)


class Tensor:
    """A ts_tensor holding a copy of a numpy array (for calls that take const ts_tensor *); freed
    with this object."""

    def __init__(self, a, dtype=None):
        a, code = as_input(a, dtype)
        shp, nd = shape_arr(a.shape)
        self.ptr = checked(tensor_from(code, nd, shp, a.ctypes.data if a.size else None) if a.size
                           else tensor_new(code, nd, shp))

    def __del__(self):
        if getattr(self, "ptr", None):
            tensor_free(self.ptr)
            self.ptr = None
