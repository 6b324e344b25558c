# safetensors.py — reading and writing safetensors files (Hugging Face's format) through the
# library (ts_safetensors_*): load(path) -> {name: numpy array}, save(path, {name: array}).
import ctypes as C
import json

from . import _tensor as T
from ._lib import CP, P, b, check, checked, fn

_open = fn("ts_safetensors_open", P, CP)
_close = fn("ts_safetensors_close", None, P)
_count = fn("ts_safetensors_count", C.c_int, P)
_name = fn("ts_safetensors_name", CP, P, C.c_int)
_meta = fn("ts_safetensors_metadata", CP, P, CP)
_get = fn("ts_safetensors_get", C.c_int, P, CP, C.POINTER(P))
_save = fn("ts_safetensors_save", C.c_int, CP, C.c_int, C.POINTER(CP), C.POINTER(P), CP)


def load(path, metadata_keys=()):
    """Every tensor of the file, by name, as numpy arrays in their stored dtype (bf16 as uint16
    bits). With metadata_keys, also returns {key: value} of "__metadata__"."""
    st = checked(_open(b(path)))
    try:
        out = {}
        for i in range(_count(st)):
            name = _name(st, i)
            t = P()
            check(_get(st, name, C.byref(t)))
            out[name.decode()] = T.to_numpy(t.value)
        if metadata_keys:
            meta = {k: (lambda v: v.decode() if v else None)(_meta(st, b(k))) for k in metadata_keys}
            return out, meta
        return out
    finally:
        _close(st)


def save(path, tensors, metadata=None):
    """Write {name: array} to path atomically (metadata: {str: str} stored as "__metadata__")."""
    names = list(tensors)
    held = [T.Tensor(tensors[n]) for n in names]
    narr = (CP * max(1, len(names)))(*[b(n) for n in names])
    tarr = (P * max(1, len(held)))(*[t.ptr for t in held])
    check(_save(b(path), len(names), narr, tarr, b(json.dumps(metadata)) if metadata else None))
