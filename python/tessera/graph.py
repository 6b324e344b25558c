# graph.py — building a graph (values, parameters, ops as methods of Graph and operators of
# Value), the backward pass and optimizers, and compiling it into a Program for a device. Every
# builder call is checked: a bad shape or dtype raises tessera.Error with the library's message
# at the op that caused it.
import contextlib
import ctypes as C

import numpy as np

from . import _abi as A
from . import _tensor as T
from ._abi import TS_ERR_ARG, TS_ERR_NOT_FOUND, TS_IGNORE_INDEX, TS_MAX_DIMS, TS_NONE
from ._lib import (CP, I64P, P, CompileOpts, ConvOpts, Error, Handle, Init, LrScheduleOpts, OptimOpts, PoolOpts,
                   ResizeOpts, b, check, checked, error, fn, shape_arr, strings)
from .program import Program

V = C.c_int32  # ts_value
IP = C.POINTER(C.c_int)
_g = {
    "new": fn("ts_graph_new", P), "free": fn("ts_graph_free", None, P),
    "seed": fn("ts_graph_set_seed", None, P, C.c_uint64), "status": fn("ts_graph_status", C.c_int, P),
    "input": fn("ts_input", V, P, CP, C.c_int, C.c_int, I64P),
    "param": fn("ts_param", V, P, CP, C.c_int, C.c_int, I64P, Init),
    "constant": fn("ts_constant", V, P, P), "scalar": fn("ts_scalar", V, P, C.c_float),
    "name": fn("ts_name", V, P, V, CP), "lookup": fn("ts_lookup", V, P, CP),
    "shape": fn("ts_value_shape", C.c_int, P, V, I64P), "dtype": fn("ts_value_dtype", C.c_int, P, V),
    "compile": fn("ts_compile", P, P, C.POINTER(CompileOpts)),
    "backward": fn("ts_backward", C.c_int, P, V), "grad": fn("ts_grad", V, P, V),
    "sgd": fn("ts_sgd", C.c_int, P, V, C.c_float, C.c_float),
    "adamw": fn("ts_adamw", C.c_int, P, V, C.c_float, C.c_float, C.c_float, C.c_float),
    "optim_defaults": fn("ts_optim_defaults", OptimOpts, C.c_int),
    "optimizer": fn("ts_optimizer", C.c_int, P, V, C.POINTER(OptimOpts)),
    "lr_schedule": fn("ts_lr_schedule", V, P, C.POINTER(LrScheduleOpts)),
    "stage_begin": fn("ts_graph_stage_begin", C.c_int, P, C.c_int),
    "stage_end": fn("ts_graph_stage_end", C.c_int, P),
    "recompute_begin": fn("ts_graph_recompute_begin", C.c_int, P),
    "recompute_end": fn("ts_graph_recompute_end", C.c_int, P),
    "recompute_gelu": fn("ts_graph_recompute_gelu", C.c_int, P),
    "recompute_casts": fn("ts_graph_recompute_casts", C.c_int, P),
    "onnx_export": fn("ts_onnx_export", C.c_int, P, P, C.c_int, C.POINTER(V), CP),
}
_INITS = {"zeros": A.TS_INIT_ZEROS, "ones": A.TS_INIT_ONES, "const": A.TS_INIT_CONST, "uniform": A.TS_INIT_UNIFORM,
          "normal": A.TS_INIT_NORMAL}
_OPTIMS = {"sgd": A.TS_OPTIM_SGD, "adamw": A.TS_OPTIM_ADAMW, "lamb": A.TS_OPTIM_LAMB}
_LR = {"constant": A.TS_LR_CONSTANT, "linear": A.TS_LR_LINEAR, "cosine": A.TS_LR_COSINE,
       "polynomial": A.TS_LR_POLYNOMIAL}
# Graph.math's names: ts_math_fn's, lower case (TS_MATH_LEAKY_RELU: "leaky_relu")
_MATH = {k[len("TS_MATH_"):].lower(): v for k, v in vars(A).items() if k.startswith("TS_MATH_")}
_BINOPS = {"equal": A.TS_BIN_EQUAL, "less": A.TS_BIN_LESS, "less_equal": A.TS_BIN_LESS_EQUAL,
           "greater": A.TS_BIN_GREATER, "greater_equal": A.TS_BIN_GREATER_EQUAL, "logical_and": A.TS_BIN_AND,
           "logical_or": A.TS_BIN_OR, "logical_xor": A.TS_BIN_XOR, "minimum": A.TS_BIN_MIN, "maximum": A.TS_BIN_MAX,
           "mod": A.TS_BIN_MOD, "fmod": A.TS_BIN_FMOD}
_REDUCTIONS = {"none": A.TS_REDUCE_NONE, "sum": A.TS_REDUCE_SUM, "mean": A.TS_REDUCE_MEAN}
_PADS = {"constant": A.TS_PAD_CONSTANT, "reflect": A.TS_PAD_REFLECT, "edge": A.TS_PAD_EDGE}
_RESIZES = {"nearest": A.TS_RESIZE_NEAREST, "linear": A.TS_RESIZE_LINEAR}


def _pick(table, key, what):
    """table[key], or tessera.Error (TS_ERR_ARG) naming the choices."""
    if key not in table:
        raise Error("unknown %s '%s' (one of %s)" % (what, key, ", ".join(table)), TS_ERR_ARG)
    return table[key]


def _opt(v):
    """An optional value argument: its ts_value, or TS_NONE for None."""
    return TS_NONE if v is None else v.v


def _axes(axes):
    if axes is None:
        return 0, None
    axes = [axes] if isinstance(axes, int) else list(axes)
    return len(axes), (C.c_int * len(axes))(*axes)


class Value:
    """A value of a graph (an input, parameter, constant or op output). Arithmetic operators build
    ops: a + b, a - b, a * b, a / b, a @ b, -a, a ** b."""

    def __init__(self, graph, v):
        self.graph, self.v = graph, v

    @property
    def shape(self):
        return self.graph.shape_of(self)

    @property
    def dtype(self):
        return T.DTYPE_NAMES[_g["dtype"](self.graph.handle, self.v)]

    def _other(self, x):
        return x if isinstance(x, Value) else self.graph.scalar(float(x))

    def __add__(self, x): return self.graph.add(self, self._other(x))
    def __radd__(self, x): return self.graph.add(self._other(x), self)
    def __sub__(self, x): return self.graph.sub(self, self._other(x))
    def __rsub__(self, x): return self.graph.sub(self._other(x), self)
    def __mul__(self, x): return self.graph.mul(self, self._other(x))
    def __rmul__(self, x): return self.graph.mul(self._other(x), self)
    def __truediv__(self, x): return self.graph.div(self, self._other(x))
    def __rtruediv__(self, x): return self.graph.div(self._other(x), self)
    def __pow__(self, x): return self.graph.pow(self, self._other(x))
    def __matmul__(self, x): return self.graph.matmul(self, x)
    def __neg__(self): return self.graph.scale(self, -1.0, 0.0)

    def __repr__(self):
        return "<tessera.Value %d %s%s>" % (self.v, self.dtype, list(self.shape))


def _op(cname, restype, *argtypes):
    f = fn(cname, restype, *argtypes)

    def call(self, *args):
        return self._value(f(self.handle, *[a.v if isinstance(a, Value) else a for a in args]))
    return call


class Graph(Handle):
    """A graph under construction. Ops are methods (g.matmul(x, w), g.relu(h), ...) named as the
    C calls without ts_ (include/tessera_graph_ops.h); each returns a Value. Freed by free() or
    when collected; programs compiled from it do not need it."""

    def __init__(self, seed=None):
        self._h = checked(_g["new"]())
        if seed is not None:
            _g["seed"](self._h, int(seed))

    _what = "graph"

    def _free_handle(self, h):
        _g["free"](h)

    def _value(self, v):
        if v < 0:
            raise error(_g["status"](self._h) or TS_ERR_ARG)
        return Value(self, v)

    def _check_values(self, *vals):
        for x in vals:
            if isinstance(x, Value) and x.graph is not self:
                raise Error("a value of another graph", TS_ERR_ARG)

    # ---- leaves
    def input(self, name, shape, dtype="f32"):
        shp, nd = shape_arr(shape)
        return self._value(_g["input"](self.handle, b(name), T.dtype_code(dtype), nd, shp))

    def param(self, name, shape, init="normal", a=0.02, b_=0.0, dtype="f32"):
        """A trainable parameter; init: "zeros", "ones", ("const", v), "uniform" on [a, b_),
        "normal" with std a (truncated at 2 std)."""
        if isinstance(init, tuple):
            init, a = init
        kind = _pick(_INITS, init, "initializer")
        if kind == A.TS_INIT_NORMAL:
            ini = Init(kind, 0.0, a)
        elif kind == A.TS_INIT_UNIFORM:
            ini = Init(kind, a, b_)
        else:
            ini = Init(kind, a, 0.0)
        shp, nd = shape_arr(shape)
        return self._value(_g["param"](self.handle, b(name), T.dtype_code(dtype), nd, shp, ini))

    def constant(self, array):
        t = T.Tensor(array)
        return self._value(_g["constant"](self.handle, t.ptr))

    def scalar(self, v):
        return self._value(_g["scalar"](self.handle, float(v)))

    def name(self, value, name):
        return self._value(_g["name"](self.handle, value.v, b(name)))

    def __getitem__(self, name):
        v = _g["lookup"](self.handle, b(name))
        if v < 0:
            raise Error("no value named '%s' in the graph" % name, TS_ERR_NOT_FOUND)
        return Value(self, v)

    def shape_of(self, value):
        out = (C.c_int64 * TS_MAX_DIMS)()
        nd = _g["shape"](self.handle, value.v, out)
        return tuple(out[i] for i in range(nd))

    # ---- ops with attributes
    def matmul(self, a, b_, trans_a=False, trans_b=False):
        self._check_values(a, b_)
        return self._value(_mm(self.handle, a.v, b_.v, int(trans_a), int(trans_b)))

    def gelu(self, x, tanh_approx=False):
        return self._value(_gelu(self.handle, x.v, int(tanh_approx)))

    def scale(self, x, alpha, beta=0.0):
        return self._value(_scale(self.handle, x.v, alpha, beta))

    def reshape(self, x, shape):
        shp, nd = shape_arr(shape)
        return self._value(_reshape(self.handle, x.v, nd, shp))

    def transpose(self, x, perm=None):
        return self._value(_transpose(self.handle, x.v, None if perm is None else (C.c_int * len(perm))(*perm)))

    def slice(self, x, axis, start, end):
        return self._value(_slice(self.handle, x.v, axis, start, end))

    def concat(self, xs, axis):
        arr = (V * len(xs))(*[x.v for x in xs])
        return self._value(_concat(self.handle, len(xs), arr, axis))

    def expand(self, x, shape):
        shp, nd = shape_arr(shape)
        return self._value(_expand(self.handle, x.v, nd, shp))

    def reduce_sum(self, x, axes=None, keepdims=False):
        return self._value(_rsum(self.handle, x.v, *_axes(axes), int(keepdims)))

    def reduce_mean(self, x, axes=None, keepdims=False):
        return self._value(_rmean(self.handle, x.v, *_axes(axes), int(keepdims)))

    def reduce_max(self, x, axes=None, keepdims=False):
        return self._value(_rmax(self.handle, x.v, *_axes(axes), int(keepdims)))

    def softmax(self, x, mask=None):
        return self._value(_softmax(self.handle, x.v, _opt(mask)))

    def layer_norm(self, x, gamma=None, beta=None, eps=1e-12):
        return self._value(_ln(self.handle, x.v, _opt(gamma), _opt(beta), eps))

    def dropout(self, x, p):
        return self._value(_dropout(self.handle, x.v, p))

    def cross_entropy(self, logits, labels, ignore_index=TS_IGNORE_INDEX):
        return self._value(_ce(self.handle, logits.v, labels.v, ignore_index))

    def cast(self, x, dtype):
        return self._value(_cast(self.handle, x.v, T.dtype_code(dtype)))

    def argmax(self, x, axis=-1, keepdims=False):
        return self._value(_argmax(self.handle, x.v, axis, int(keepdims), 0))  # select_last 0: the first

    def math(self, fname, x, alpha=0.0, beta=0.0):
        return self._value(_math(self.handle, _pick(_MATH, fname, "math function"), x.v, alpha, beta))

    def binary(self, op, a, b_):
        return self._value(_binary(self.handle, _pick(_BINOPS, op, "binary op"), a.v, b_.v))

    def clip(self, x, lo, hi):
        return self._value(_clip(self.handle, x.v, lo, hi))

    def reduce_min(self, x, axes=None, keepdims=False):
        return self._value(_rmin(self.handle, x.v, *_axes(axes), int(keepdims)))

    def reduce_prod(self, x, axes=None, keepdims=False):
        return self._value(_rprod(self.handle, x.v, *_axes(axes), int(keepdims)))

    def argmin(self, x, axis=-1, keepdims=False):
        return self._value(_argmin(self.handle, x.v, axis, int(keepdims), 0))  # select_last 0: the first

    def isinf(self, x, detect_pos=True, detect_neg=True):
        return self._value(_isinf(self.handle, x.v, int(detect_pos), int(detect_neg)))

    def hard_sigmoid(self, x, alpha=0.2, beta=0.5):
        return self._value(_hsig(self.handle, x.v, alpha, beta))

    def trilu(self, x, upper=True, k=0):
        return self._value(_trilu(self.handle, x.v, int(upper), k))

    def gather_elements(self, data, indices, axis):
        return self._value(_gather_el(self.handle, data.v, indices.v, axis))

    def nll_loss(self, logp, target, weight=None, ignore_index=TS_IGNORE_INDEX, reduction="mean"):
        red = _pick(_REDUCTIONS, reduction, "reduction")
        return self._value(_nll(self.handle, logp.v, target.v, _opt(weight), ignore_index, red))

    def tile(self, x, repeats):
        return self._value(_tile(self.handle, x.v, (C.c_int64 * len(repeats))(*repeats)))

    def pad(self, x, pads, mode="constant", value=0.0):
        """pads: before for each axis, then after for each axis (ONNX's order)."""
        return self._value(_pad(self.handle, x.v, (C.c_int64 * len(pads))(*pads),
                                _pick(_PADS, mode, "pad mode"), value))

    def split(self, x, axis, n, sizes=None):
        outs = (V * n)()
        check(_split(self.handle, x.v, axis, n, None if sizes is None else (C.c_int64 * n)(*sizes), outs))
        return [Value(self, v) for v in outs]

    def topk(self, x, k, axis=-1, largest=True):
        """(values, indices) of the k largest (or smallest) along axis."""
        outs = (V * 2)()
        check(_topk(self.handle, x.v, k, axis, int(largest), outs))
        return Value(self, outs[0]), Value(self, outs[1])

    def conv2d(self, x, w, bias=None, stride=(1, 1), pad=(0, 0, 0, 0), dilation=(1, 1), groups=1):
        """x [N, C, H, W], w [O, C/groups, KH, KW]; pad: top, left, bottom, right."""
        o = ConvOpts((C.c_int * 2)(*stride), (C.c_int * 4)(*pad), (C.c_int * 2)(*dilation), groups)
        return self._value(_conv(self.handle, x.v, w.v, _opt(bias), C.byref(o)))

    def _pool(self, f, x, kernel, stride, pad, dilation, ceil_mode, count_include_pad):
        o = PoolOpts((C.c_int * 2)(*kernel), (C.c_int * 2)(*(stride or kernel)), (C.c_int * 4)(*pad),
                     (C.c_int * 2)(*dilation), int(ceil_mode), int(count_include_pad))
        return self._value(f(self.handle, x.v, C.byref(o)))

    def max_pool2d(self, x, kernel, stride=None, pad=(0, 0, 0, 0), dilation=(1, 1), ceil_mode=False):
        return self._pool(_maxpool, x, kernel, stride, pad, dilation, ceil_mode, False)

    def avg_pool2d(self, x, kernel, stride=None, pad=(0, 0, 0, 0), ceil_mode=False, count_include_pad=False):
        return self._pool(_avgpool, x, kernel, stride, pad, (1, 1), ceil_mode, count_include_pad)

    def resize2d(self, x, height, width, mode="nearest"):
        o = ResizeOpts(_pick(_RESIZES, mode, "resize mode"), A.TS_COORD_HALF_PIXEL, A.TS_ROUND_PREFER_FLOOR,
                       (C.c_float * 2)(0, 0))
        return self._value(_resize(self.handle, x.v, height, width, C.byref(o)))

    # ---- placement
    @contextlib.contextmanager
    def stage(self, k):
        """Ops built inside `with g.stage(k):` go on pipeline stage k (compile with one device
        per stage to run them as a pipeline)."""
        check(_g["stage_begin"](self.handle, k))
        try:
            yield
        finally:
            check(_g["stage_end"](self.handle))

    @contextlib.contextmanager
    def recompute(self):
        """Ops built inside `with g.recompute():` are recomputed in the backward pass instead of
        kept (activation checkpointing; same gradients)."""
        check(_g["recompute_begin"](self.handle))
        try:
            yield
        finally:
            check(_g["recompute_end"](self.handle))

    def recompute_gelu(self):
        """Before backward(): the backward recomputes GELU outputs from their inputs instead of
        keeping them (ts_graph_recompute_gelu; same gradients)."""
        check(_g["recompute_gelu"](self.handle))

    def recompute_casts(self):
        """Before backward(): the backward makes the 16-bit casts of parameters again instead of
        keeping the forward's (ts_graph_recompute_casts; same gradients)."""
        check(_g["recompute_casts"](self.handle))

    # ---- training
    def backward(self, loss):
        """Append the backward pass of scalar loss (gradients named "<param>@GRAD")."""
        check(_g["backward"](self.handle, loss.v))

    def grad(self, param):
        return self._value(_g["grad"](self.handle, param.v))

    def _lr(self, lr):
        return lr if isinstance(lr, Value) else self.scalar(lr)

    def sgd(self, lr, momentum=0.0, weight_decay=0.0):
        check(_g["sgd"](self.handle, self._lr(lr).v, momentum, weight_decay))

    def adamw(self, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
        check(_g["adamw"](self.handle, self._lr(lr).v, beta1, beta2, eps, weight_decay))

    def optimizer(self, kind, lr, no_decay=None, **opts):
        """ts_optimizer: kind "sgd", "adamw" or "lamb" with PyTorch's defaults, changed by opts
        (weight_decay, momentum, dampening, nesterov, beta1, beta2, eps, max_grad_norm,
        accumulation_steps, updates_in_backward, ...: ts_optim_opts' fields); no_decay: names or
        globs without weight decay."""
        o = _g["optim_defaults"](_pick(_OPTIMS, kind, "optimizer"))
        for k, v in opts.items():
            if k not in dict(OptimOpts._fields_):
                raise Error("unknown optimizer option '%s'" % k, TS_ERR_ARG)
            setattr(o, k, v)
        keep, n = strings(no_decay)
        o.no_decay, o.nno_decay = keep, n
        check(_g["optimizer"](self.handle, self._lr(lr).v, C.byref(o)))

    def lr_schedule(self, kind, lr, warmup_steps=0, total_steps=0, lr_end=1e-7, power=1.0, num_cycles=0.5):
        o = LrScheduleOpts(C.sizeof(LrScheduleOpts), _pick(_LR, kind, "schedule"), lr, warmup_steps, total_steps,
                           lr_end, power, num_cycles)
        return self._value(_g["lr_schedule"](self.handle, C.byref(o)))

    # ---- compiling
    def compile(self, fetches=(), devices=None, inference=False, threads=0, profile=False, memory_limit=0,
                device_iterations=0, skip_param_init=False, no_fusion=False):
        """A Program for the device devices[0] ("cpu", "cpu:0", a backend's), or a pipeline over
        several devices (one per stage); fetches: the names (or named Values) to read after a run."""
        names = [f if isinstance(f, str) else self._name_of(f) for f in fetches]
        farr, nf = strings(names)
        devs = list(devices or [])
        o = CompileOpts(struct_size=C.sizeof(CompileOpts), num_threads=threads, nfetch=nf, fetches=farr,
                        inference=int(inference), no_fusion=int(no_fusion), device_iterations=device_iterations,
                        memory_limit=memory_limit, skip_param_init=int(skip_param_init), profile=int(profile))
        if len(devs) == 1:
            o.device = b(devs[0])
        elif devs:
            sarr, ns = strings(devs)
            o.stage_devices, o.nstage_devices = sarr, ns
        return Program(checked(_g["compile"](self.handle, C.byref(o))), names)

    def _name_of(self, value):
        raise Error("fetch by name: give the value a name with g.name(value, \"...\")", TS_ERR_ARG)

    def export_onnx(self, program, outputs, path):
        """Write the forward graph computing the named values `outputs` as an ONNX file."""
        arr = (V * len(outputs))(*[self[o].v if isinstance(o, str) else o.v for o in outputs])
        check(_g["onnx_export"](self.handle, program.handle, len(outputs), arr, b(path)))


_rmin = fn("ts_reduce_min", V, P, V, C.c_int, IP, C.c_int)
_rprod = fn("ts_reduce_prod", V, P, V, C.c_int, IP, C.c_int)
_argmin = fn("ts_argmin", V, P, V, C.c_int, C.c_int, C.c_int)
_isinf = fn("ts_isinf", V, P, V, C.c_int, C.c_int)
_hsig = fn("ts_hard_sigmoid", V, P, V, C.c_float, C.c_float)
_trilu = fn("ts_trilu", V, P, V, C.c_int, C.c_int64)
_gather_el = fn("ts_gather_elements", V, P, V, V, C.c_int)
_nll = fn("ts_nll_loss", V, P, V, V, V, C.c_int64, C.c_int)
_tile = fn("ts_tile", V, P, V, I64P)
_pad = fn("ts_pad", V, P, V, I64P, C.c_int, C.c_double)
_split = fn("ts_split", C.c_int, P, V, C.c_int, C.c_int, I64P, C.POINTER(V))
_topk = fn("ts_topk", C.c_int, P, V, C.c_int64, C.c_int, C.c_int, C.POINTER(V))
_conv = fn("ts_conv2d", V, P, V, V, V, P)
_maxpool = fn("ts_max_pool2d", V, P, V, P)
_avgpool = fn("ts_avg_pool2d", V, P, V, P)
_resize = fn("ts_resize2d", V, P, V, C.c_int64, C.c_int64, P)
_mm = fn("ts_matmul", V, P, V, V, C.c_int, C.c_int)
_gelu = fn("ts_gelu", V, P, V, C.c_int)
_scale = fn("ts_scale", V, P, V, C.c_float, C.c_float)
_reshape = fn("ts_reshape", V, P, V, C.c_int, I64P)
_transpose = fn("ts_transpose", V, P, V, IP)
_slice = fn("ts_slice", V, P, V, C.c_int, C.c_int64, C.c_int64)
_concat = fn("ts_concat", V, P, C.c_int, C.POINTER(V), C.c_int)
_expand = fn("ts_expand", V, P, V, C.c_int, I64P)
_rsum = fn("ts_reduce_sum", V, P, V, C.c_int, IP, C.c_int)
_rmean = fn("ts_reduce_mean", V, P, V, C.c_int, IP, C.c_int)
_rmax = fn("ts_reduce_max", V, P, V, C.c_int, IP, C.c_int)
_softmax = fn("ts_softmax", V, P, V, V)
_ln = fn("ts_layer_norm", V, P, V, V, V, C.c_float)
_dropout = fn("ts_dropout", V, P, V, C.c_float)
_ce = fn("ts_cross_entropy", V, P, V, V, C.c_int64)
_cast = fn("ts_cast", V, P, V, C.c_int)
_argmax = fn("ts_argmax", V, P, V, C.c_int, C.c_int, C.c_int)
_math = fn("ts_math", V, P, C.c_int, V, C.c_float, C.c_float)
_binary = fn("ts_binary", V, P, C.c_int, V, V)
_clip = fn("ts_clip", V, P, V, C.c_float, C.c_float)

# the plain ops: ts_<name>(g, a[, b]) -> value
for _name in ("add", "sub", "mul", "div", "pow", "where", "select", "gather"):
    setattr(Graph, _name, _op("ts_" + _name, V, P, V, V) if _name not in ("where", "select")
            else _op("ts_" + _name, V, P, V, V, V))
for _name in ("sqrt", "exp", "log", "relu", "tanh", "sigmoid", "log_softmax", "isnan", "not", "hard_swish", "det"):
    setattr(Graph, _name if _name != "not" else "logical_not", _op("ts_" + _name, V, P, V))
