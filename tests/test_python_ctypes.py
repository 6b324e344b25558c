# test_python_ctypes.py — the public API binds from Python with ctypes alone: build y = relu(x W + b),
# compile, feed from a numpy array (ts_program_feed_data), run, fetch, check against numpy, read an
# error message, free. Usage: python3 test_python_ctypes.py <path to libtessera.so>; exit 77
# (skipped) without numpy.
import ctypes as C
import sys

try:
    import numpy as np
except ImportError:
    print("test_python_ctypes: skipped, numpy is missing (Debian: python3-numpy)")
    sys.exit(77)

lib = C.CDLL(sys.argv[1])
P, I64P = C.c_void_p, C.POINTER(C.c_int64)


class Init(C.Structure):  # ts_init
    _fields_ = [("kind", C.c_int), ("a", C.c_float), ("b", C.c_float)]


class CompileOpts(C.Structure):  # ts_compile_opts, in its 0.1.0 layout
    _fields_ = [("struct_size", C.c_size_t), ("device", C.c_char_p), ("num_threads", C.c_int),
                ("nfetch", C.c_int), ("fetches", C.POINTER(C.c_char_p)), ("inference", C.c_int),
                ("no_fusion", C.c_int), ("device_iterations", C.c_int), ("memory_limit", C.c_size_t),
                ("stage_devices", C.POINTER(C.c_char_p)), ("nstage_devices", C.c_int),
                ("skip_param_init", C.c_int), ("profile", C.c_int)]


def fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


version = fn("ts_version", C.c_char_p)
graph_new, graph_free = fn("ts_graph_new", P), fn("ts_graph_free", None, P)
inp = fn("ts_input", C.c_int32, P, C.c_char_p, C.c_int, C.c_int, I64P)
param = fn("ts_param", C.c_int32, P, C.c_char_p, C.c_int, C.c_int, I64P, Init)
init_uniform = fn("ts_init_uniform", Init, C.c_float, C.c_float)
matmul = fn("ts_matmul", C.c_int32, P, C.c_int32, C.c_int32, C.c_int, C.c_int)
add, relu = fn("ts_add", C.c_int32, P, C.c_int32, C.c_int32), fn("ts_relu", C.c_int32, P, C.c_int32)
name = fn("ts_name", C.c_int32, P, C.c_int32, C.c_char_p)
compile_ = fn("ts_compile", P, P, C.POINTER(CompileOpts))
feed_data = fn("ts_program_feed_data", C.c_int, P, C.c_char_p, C.c_int, C.c_int, I64P, C.c_void_p)
run = fn("ts_program_run", C.c_int, P)
fetch = fn("ts_program_fetch", C.c_int, P, C.c_char_p, C.POINTER(P))
get_param = fn("ts_program_get_param", C.c_int, P, C.c_char_p, C.POINTER(P))
program_free, tensor_free = fn("ts_program_free", None, P), fn("ts_tensor_free", None, P)
tensor_data, tensor_numel = fn("ts_tensor_data", P, P), fn("ts_tensor_numel", C.c_int64, P)
last_error = fn("ts_last_error", C.c_char_p)

F32, B, D, H = 0, 4, 3, 5
shape = lambda *d: (C.c_int64 * len(d))(*d)
g = graph_new()
x = inp(g, b"x", F32, 2, shape(B, D))
w = param(g, b"w", F32, 2, shape(D, H), init_uniform(-1.0, 1.0))
bias = param(g, b"b", F32, 1, shape(H), init_uniform(-0.5, 0.5))
name(g, relu(g, add(g, matmul(g, x, w, 0, 0), bias)), b"y")
fetches = (C.c_char_p * 1)(b"y")
opts = CompileOpts(struct_size=C.sizeof(CompileOpts), nfetch=1, fetches=fetches, inference=1)
p = compile_(g, C.byref(opts))
graph_free(g)  # the program does not need the graph
assert p, last_error()


def read(get, what):
    t = P()
    assert get(p, what, C.byref(t)) == 0, last_error()
    a = np.ctypeslib.as_array(C.cast(tensor_data(t), C.POINTER(C.c_float)), (tensor_numel(t),)).copy()
    tensor_free(t)
    return a


xs = np.arange(B * D, dtype=np.float32).reshape(B, D) / 7 - 0.5
assert feed_data(p, b"x", F32, 2, shape(B, D), xs.ctypes.data) == 0, last_error()
assert run(p) == 0, last_error()
y = read(fetch, b"y").reshape(B, H)
want = np.maximum(xs @ read(get_param, b"w").reshape(D, H) + read(get_param, b"b"), 0)
assert np.allclose(y, want, atol=1e-5), (y, want)

# a wrong shape is refused with a message naming the input
assert feed_data(p, b"x", F32, 2, shape(B, D + 1), xs.ctypes.data) == 2  # TS_ERR_SHAPE
assert b"'x'" in last_error(), last_error()
program_free(p)
print("test_python_ctypes: tessera %s from Python: y = relu(x W + b) matches numpy" % version().decode())
