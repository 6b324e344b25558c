# onnx.py — ONNX models with ONNX Runtime's Python signature, so a user switches by changing the
# import: InferenceSession(path).run(None, {"x": array}), get_inputs() / get_outputs() with
# .name, .shape, .type. Runs on the library's importer and sessions (ts_onnx_session_*: one
# compiled program per set of input shapes), as `tessera run --model MODEL.onnx` does.
import ctypes as C

import numpy as np

from . import _tensor as T
from ._abi import TS_BF16, TS_ERR_DTYPE, TS_ERR_NOT_FOUND, TS_F16, TS_F32, TS_I32, TS_I64, TS_MAX_DIMS, TS_U8
from ._lib import CP, I64P, P, CompileOpts, Error, b, check, checked, error, fn

_load = fn("ts_onnx_load", P, CP)
_free = fn("ts_onnx_free", None, P)
_nin = fn("ts_onnx_num_inputs", C.c_int, P)
_nout = fn("ts_onnx_num_outputs", C.c_int, P)
_in_name = fn("ts_onnx_input_name", CP, P, C.c_int)
_out_name = fn("ts_onnx_output_name", CP, P, C.c_int)
_in_shape = fn("ts_onnx_input_shape", C.c_int, P, C.c_int, C.POINTER(C.c_int), I64P)
_session_new = fn("ts_onnx_session_new", P, P, C.POINTER(CompileOpts))
_session_run = fn("ts_onnx_session_run", C.c_int, P, C.POINTER(P), C.POINTER(P))
_session_free = fn("ts_onnx_session_free", None, P)
_session_fix = fn("ts_onnx_session_fix", C.c_int, P, CP, P)
_ORT_TYPES = {TS_F32: "tensor(float)", TS_BF16: "tensor(bfloat16)", TS_F16: "tensor(float16)", TS_I32: "tensor(int32)",
              TS_I64: "tensor(int64)", TS_U8: "tensor(uint8)"}


class NodeArg:
    """An input or output of the model: name, shape (None for a dynamic dimension) and type
    ("tensor(float)"), as onnxruntime.NodeArg."""

    def __init__(self, name, shape, type_):
        self.name, self.shape, self.type = name, shape, type_

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


class InferenceSession:
    """onnxruntime.InferenceSession's interface over tessera's ONNX importer. providers is
    accepted and ignored; device picks tessera's device ("cpu", "cpu:1", a backend's)."""

    def __init__(self, path, sess_options=None, providers=None, device="cpu", threads=0):
        self._m = checked(_load(b(path)))
        self._opts = CompileOpts(device=b(device), num_threads=threads)
        self._s = _session_new(self._m, C.byref(self._opts))
        if not self._s:
            e = error()
            _free(self._m)
            self._m = None
            raise e
        self._inputs, self._fixed = [], set()
        for i in range(_nin(self._m)):
            dt, shp = C.c_int(0), (C.c_int64 * TS_MAX_DIMS)()
            nd = _in_shape(self._m, i, C.byref(dt), shp)
            shape = [None if shp[k] < 0 else shp[k] for k in range(max(nd, 0))]
            self._inputs.append(NodeArg(_in_name(self._m, i).decode(), shape, _ORT_TYPES[dt.value]))
            self._inputs[-1].code = dt.value
        self._outputs = [NodeArg(_out_name(self._m, j).decode(), None, None) for j in range(_nout(self._m))]

    def __del__(self):
        if getattr(self, "_s", None):
            _session_free(self._s)
            self._s = None
        if getattr(self, "_m", None):
            _free(self._m)
            self._m = None

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["TesseraCPUExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named in output_names (None: every output), in that order, as numpy arrays.
        Inputs are converted to the declared dtype; an integer input of one element is fixed for
        the import, as `tessera run` does (an If on it keeps one branch)."""
        held = []
        for arg in self._inputs:
            if arg.name not in input_feed:
                raise Error("no input '%s' given (the model's inputs: %s)" % (
                    arg.name, ", ".join(a.name for a in self._inputs)), TS_ERR_NOT_FOUND)
            a = np.asarray(input_feed[arg.name])
            want = T.numpy_dtype(arg.code)
            if a.dtype != want:
                if a.dtype.kind != np.dtype(want).kind and not (a.dtype.kind in "iu" and np.dtype(want).kind in "iu"):
                    raise Error("input '%s' is %s but the model's input is %s" % (arg.name, a.dtype, arg.type),
                                TS_ERR_DTYPE)
                a = a.astype(want)
            t = T.Tensor(a)
            if a.size == 1 and a.dtype.kind in "iu" and arg.name not in self._fixed:
                check(_session_fix(self._s, arg.name.encode(), t.ptr))
                self._fixed.add(arg.name)
            held.append(t)
        ins = (P * max(1, len(held)))(*[t.ptr for t in held])
        outs = (P * max(1, len(self._outputs)))()
        check(_session_run(self._s, ins, outs))
        result = {o.name: T.to_numpy(outs[j]) for j, o in enumerate(self._outputs)}
        names = output_names or [o.name for o in self._outputs]
        return [result[n] for n in names]
