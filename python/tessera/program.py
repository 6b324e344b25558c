# program.py — a compiled program: feed numpy arrays (straight from the array's memory,
# ts_program_feed_data: no intermediate tensor), run, fetch (a numpy array over the tensor the
# library returns: no second copy), parameters by name, save and load (safetensors, full-state
# checkpoints), profile report and memory report. Freed by free() or when collected.
import ctypes as C

from . import _tensor as T
from ._abi import TS_LOAD_ALLOW_NONFINITE, TS_LOAD_STRICT
from ._lib import CP, I64P, P, Error, Handle, Memory, TextSink, WRITE_FN, b, check, error, fn, shape_arr

_f = {
    "free": fn("ts_program_free", None, P),
    "feed_data": fn("ts_program_feed_data", C.c_int, P, CP, C.c_int, C.c_int, I64P, P),
    "feed_value": fn("ts_program_feed_value", C.c_int, P, CP, CP),
    "run": fn("ts_program_run", C.c_int, P),
    "fetch": fn("ts_program_fetch", C.c_int, P, CP, C.POINTER(P)),
    "step": fn("ts_program_step", C.c_uint64, P), "set_step": fn("ts_program_set_step", None, P, C.c_uint64),
    "nparams": fn("ts_program_num_params", C.c_int, P), "param_name": fn("ts_program_param_name", CP, P, C.c_int),
    "get_param": fn("ts_program_get_param", C.c_int, P, CP, C.POINTER(P)),
    "set_param": fn("ts_program_set_param", C.c_int, P, CP, P),
    "copy_params": fn("ts_program_copy_params", C.c_int, P, P),
    "memory": fn("ts_program_memory", C.c_int, P, C.POINTER(Memory)),
    "placement": fn("ts_program_placement", CP, P),
    "profile": fn("ts_program_profile_report", C.c_int, P, WRITE_FN, P),
    "profile_reset": fn("ts_program_profile_reset", None, P),
    "load": fn("ts_program_load", C.c_int, P, CP, C.c_int, C.POINTER(C.c_int)),
    "save": fn("ts_program_save", C.c_int, P, CP, C.c_int),
    "save_state": fn("ts_program_save_state", C.c_int, P, CP, CP),
    "load_state": fn("ts_program_load_state", C.c_int, P, CP, C.POINTER(C.c_void_p)),
}
_libc_free = C.CDLL(None).free
_libc_free.argtypes = [C.c_void_p]


class Program(Handle):
    """A compiled program (Graph.compile, or the model loaders)."""

    def __init__(self, handle, fetches=()):
        self._h, self.fetches = handle, list(fetches)

    _what = "program"

    def _free_handle(self, h):
        _f["free"](h)

    def feed(self, name, array):
        """Copy array (its dtype and shape as the input's) into input `name`, once, from the
        array's own memory (a C-contiguous array is not copied on the Python side)."""
        a, code = T.as_input(array)
        shp, nd = shape_arr(a.shape)
        check(_f["feed_data"](self.handle, b(name), code, nd, shp, a.ctypes.data if a.size else shp))

    def feed_value(self, input, value):
        check(_f["feed_value"](self.handle, b(input), b(value)))

    def run(self, feeds=None, fetches=None):
        """Feed `feeds` ({name: array}), run one step, and return the fetches asked for (a dict of
        numpy arrays; fetches=None: none; "all": every fetch named at compile)."""
        for k, v in (feeds or {}).items():
            self.feed(k, v)
        check(_f["run"](self.handle))
        if fetches is None:
            return None
        names = self.fetches if fetches == "all" else fetches
        return {n: self.fetch(n) for n in names}

    def fetch(self, name):
        t = P()
        check(_f["fetch"](self.handle, b(name), C.byref(t)))
        return T.to_numpy(t.value)

    @property
    def step(self):
        return _f["step"](self.handle)

    @step.setter
    def step(self, s):
        _f["set_step"](self.handle, int(s))

    def param_names(self):
        h = self.handle
        return [_f["param_name"](h, i).decode() for i in range(_f["nparams"](h))]

    def get_param(self, name):
        t = P()
        check(_f["get_param"](self.handle, b(name), C.byref(t)))
        return T.to_numpy(t.value)

    def set_param(self, name, array):
        t = T.Tensor(array)
        check(_f["set_param"](self.handle, b(name), t.ptr))

    def params(self):
        return {n: self.get_param(n) for n in self.param_names()}

    def copy_params_from(self, other):
        n = _f["copy_params"](self.handle, other.handle)
        if n < 0:
            raise error()
        return n

    def memory(self):
        """What the program holds, in bytes (ts_memory) as a dict."""
        m = Memory(struct_size=C.sizeof(Memory))
        check(_f["memory"](self.handle, C.byref(m)))
        return {k: getattr(m, k) for k, _ in Memory._fields_ if k != "struct_size"}

    def placement(self):
        return _f["placement"](self.handle).decode()

    def profile_report(self):
        """The profile of the runs so far (a program compiled with profile=True), as text."""
        sink = TextSink()
        check(_f["profile"](self.handle, sink.fn, None))
        return sink.text()

    def profile_reset(self):
        _f["profile_reset"](self.handle)

    def load(self, path, strict=False, allow_nonfinite=False):
        """Load parameters from a safetensors file; returns how many of the program's the file
        lacked."""
        missing = C.c_int(0)
        flags = (TS_LOAD_STRICT if strict else 0) | (TS_LOAD_ALLOW_NONFINITE if allow_nonfinite else 0)
        check(_f["load"](self.handle, b(path), flags, C.byref(missing)))
        return missing.value

    def save(self, path, dtype="f32"):
        check(_f["save"](self.handle, b(path), T.dtype_code(dtype)))

    def save_state(self, directory, extra_json=None):
        check(_f["save_state"](self.handle, b(directory), b(extra_json)))

    def load_state(self, directory):
        """Restore a full-state checkpoint; returns its trainer.json text."""
        out = C.c_void_p()
        check(_f["load_state"](self.handle, b(directory), C.byref(out)))
        try:
            return C.string_at(out.value).decode() if out.value else None
        finally:
            _libc_free(out.value)
