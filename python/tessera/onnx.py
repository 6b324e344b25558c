# onnx.py — ONNX models with ONNX Runtime's Python signature, so a user switches by changing the
# import: InferenceSession(path).run(None, {"x": array}), get_inputs() / get_outputs() with
# .name, .shape, .type. Runs on the library's importer and sessions (ts_onnx_session_*: one
# compiled program per set of input shapes), as `tessera run --model MODEL.onnx` does.
import ctypes as C
import os

import numpy as np

from . import _tensor as T
from ._abi import (TS_BF16, TS_ERR_ARG, TS_ERR_DTYPE, TS_ERR_NOT_FOUND, TS_F16, TS_F32, TS_I32, TS_I64, TS_MAX_DIMS,
                   TS_U8)
from ._lib import CP, P, CompileOpts, Error, b, check, checked, error, fn

_load = fn("ts_onnx_load", P, CP)
_free = fn("ts_onnx_free", None, P)
_nin = fn("ts_onnx_num_inputs", C.c_int, P)
_nout = fn("ts_onnx_num_outputs", C.c_int, P)
_in_name = fn("ts_onnx_input_name", CP, P, C.c_int)
_out_name = fn("ts_onnx_output_name", CP, P, C.c_int)
_out_shape = fn("ts_onnx_output_shape", C.c_int, P, C.c_int, C.POINTER(C.c_int), C.POINTER(C.c_int64))
_in_shape = fn("ts_onnx_input_shape", C.c_int, P, C.c_int, C.POINTER(C.c_int), C.POINTER(C.c_int64))
_session_new = fn("ts_onnx_session_new", P, P, C.POINTER(CompileOpts))
_session_run = fn("ts_onnx_session_run", C.c_int, P, C.POINTER(P), C.POINTER(P))
_session_free = fn("ts_onnx_session_free", None, P)
_ORT_TYPES = {TS_F32: "tensor(float)", TS_BF16: "tensor(bfloat16)", TS_F16: "tensor(float16)", TS_I32: "tensor(int32)",
              TS_I64: "tensor(int64)", TS_U8: "tensor(uint8)"}
# ONNX's TensorProto.DataType numbers -> onnxruntime's type strings
_ONNX_TYPES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
               9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
               16: "bfloat16"}


class NodeArg:
    """An input or output of the model: name, shape (a list: an int per dimension, None for a
    dynamic one; None when the file does not declare the rank) and type ("tensor(float)"), as
    onnxruntime.NodeArg (which gives a dynamic dimension's symbolic name where this gives None)."""

    def __init__(self, name, shape, type_):
        self.name, self.shape, self.type = name, shape, type_

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _names(args):
    return ", ".join("'%s'" % a.name for a in args)


class InferenceSession:
    """onnxruntime.InferenceSession's interface over tessera's ONNX importer. providers is
    accepted and ignored; device picks tessera's device ("cpu", "cpu:1", a backend's). A session
    runs any number of times, with any inputs of the declared shapes: the library compiles one
    program per set of input shapes (and per value of an input a shape or an If depends on) and
    keeps the 8 last used."""

    def __init__(self, path, sess_options=None, providers=None, device="cpu", threads=0):
        path = os.fspath(path)
        self._m = checked(_load(b(path)))
        self._opts = CompileOpts(device=b(device), num_threads=threads)
        self._s = _session_new(self._m, C.byref(self._opts))
        if not self._s:
            e = error()
            _free(self._m)
            self._m = None
            raise e
        self._what = path
        self._inputs = []
        for i in range(_nin(self._m)):
            dt, shp = C.c_int(0), (C.c_int64 * TS_MAX_DIMS)()
            nd = _in_shape(self._m, i, C.byref(dt), shp)
            shape = None if nd < 0 else [None if shp[k] < 0 else shp[k] for k in range(nd)]
            self._inputs.append(NodeArg(_in_name(self._m, i).decode(), shape, _ORT_TYPES[dt.value]))
            self._inputs[-1].code = dt.value
        self._outputs = []
        for j in range(_nout(self._m)):
            et, shp = C.c_int(0), (C.c_int64 * TS_MAX_DIMS)()
            nd = _out_shape(self._m, j, C.byref(et), shp)
            shape = None if nd < 0 else [None if shp[k] < 0 else shp[k] for k in range(nd)]
            kind = "tensor(%s)" % _ONNX_TYPES.get(et.value, "unknown") if et.value else None
            self._outputs.append(NodeArg(_out_name(self._m, j).decode(), shape, kind))

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

    def _input(self, arg, value):
        """value as a tensor of arg's declared dtype. As onnxruntime, a dtype other than the
        declared one is refused (tessera.DtypeError, a TypeError, naming the input and both
        types), with one convenience: an integer array into an integer input of another width
        (numpy's default int64 into int32 input_ids) is converted when every value fits, else
        tessera.InvalidArgument (a ValueError) naming the input."""
        a = np.asarray(value)
        want = np.dtype(T.numpy_dtype(arg.code))
        if a.dtype != want:
            if a.dtype.kind not in "iu" or want.kind not in "iu":
                raise Error("input '%s' is %s but the model's input is %s (give a %s array)" % (
                    arg.name, "tensor(%s)" % a.dtype, arg.type, want), TS_ERR_DTYPE)
            info = np.iinfo(want)
            if a.size and (a.min() < info.min or a.max() > info.max):
                raise Error("input '%s' is %s with values in [%d, %d], outside %s's range [%d, %d]" % (
                    arg.name, a.dtype, a.min(), a.max(), arg.type, info.min, info.max), TS_ERR_ARG)
            a = a.astype(want)
        return T.Tensor(a)

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named in output_names (None: every output), in that order, as numpy arrays.
        input_feed maps every input's name to an array of its declared dtype (see _input for the
        one conversion made) and shape. An unknown input or output name, or a missing input, is
        tessera.NotFound (a KeyError) naming it and the model's names."""
        for name in input_feed:
            if name not in (a.name for a in self._inputs):
                raise Error("%s has no input '%s' (its inputs: %s)" % (self._what, name, _names(self._inputs)),
                            TS_ERR_NOT_FOUND)
        for name in output_names or []:
            if name not in (o.name for o in self._outputs):
                raise Error("%s has no output '%s' (its outputs: %s)" % (self._what, name, _names(self._outputs)),
                            TS_ERR_NOT_FOUND)
        held = []
        for arg in self._inputs:
            if arg.name not in input_feed:
                raise Error("no input '%s' given (the model's inputs: %s)" % (arg.name, _names(self._inputs)),
                            TS_ERR_NOT_FOUND)
            held.append(self._input(arg, input_feed[arg.name]))
        ins = (P * max(1, len(held)))(*[t.ptr for t in held])
        outs = (P * max(1, len(self._outputs)))()
        st = _session_run(self._s, ins, outs)
        result = {o.name: T.to_numpy(outs[j]) for j, o in enumerate(self._outputs) if outs[j]}  # freed with them
        check(st)
        return [result[n] for n in (output_names or [o.name for o in self._outputs])]
