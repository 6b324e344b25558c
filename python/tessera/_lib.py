# _lib.py — the one place that talks to libtessera.so: finding and loading it, the C structs of
# the public API (include/tessera*.h) as ctypes structures, the functions' signatures, and
# tessera.Error, raised for every non-zero ts_status with ts_last_error()'s message. A struct is
# its C struct's name in CamelCase without ts_ (ts_compile_opts: CompileOpts) and mirrors every
# field of it, by the same names in the same order; tests/test_python_abi.py checks each size and
# offset against the C compiler's (tools/gen_abi_layout.c). The constants are in _abi.py.
# tessera.Error has one subclass per kind of failure that Python has a built-in type for (a
# ValueError for a bad value or shape, TypeError for a dtype, KeyError for an unknown name,
# FileNotFoundError for a missing file, ...): Error(message, code) picks it from the code.
import ctypes as C
import ctypes.util
import errno
import os

from ._abi import (STATUS_NAMES, TS_ERR_ARG, TS_ERR_DTYPE, TS_ERR_IO, TS_ERR_NOMEM, TS_ERR_NOT_FOUND, TS_ERR_SHAPE,
                   TS_ERR_UNSUPPORTED)

P, CP, I64P = C.c_void_p, C.c_char_p, C.POINTER(C.c_int64)
CPP = C.POINTER(C.c_char_p)
# ts_write_fn: void (*)(void *ctx, const char *text, size_t len)
WRITE_FN = C.CFUNCTYPE(None, C.c_void_p, C.POINTER(C.c_char), C.c_size_t)

class Error(Exception):
    """A failure reported by libtessera: .code is the ts_status (an int), .status its name
    ("TS_ERR_SHAPE"), and the message is the library's (ts_last_error()).

    Error(message, code) returns the subclass that fits the code, as OSError(errno, ...) returns
    FileNotFoundError: each is also the built-in exception Python code expects, so both
    `except tessera.Error` and `except ValueError` (say) catch a bad shape:
      TS_ERR_ARG, TS_ERR_SHAPE  InvalidArgument, ShapeError  (ValueError)
      TS_ERR_DTYPE              DtypeError                    (TypeError)
      TS_ERR_NOT_FOUND          NotFound                      (KeyError: an unknown name)
      TS_ERR_IO                 IOFailure                     (OSError)
      a missing file            FileNotFound                  (FileNotFoundError: TS_ERR_IO or
                                                               TS_ERR_NOT_FOUND whose message ends
                                                               in strerror(ENOENT))
      TS_ERR_NOMEM              OutOfMemory                   (MemoryError)
      TS_ERR_UNSUPPORTED        Unsupported                   (NotImplementedError)
      TS_ERR_RUNTIME, TS_ERR_COMM and others: Error itself."""

    default_code = TS_ERR_ARG  # the code when none is given (each subclass: its own)

    def __new__(cls, message="", code=None, *rest):
        if cls is Error:
            cls = _error_class(str(message), cls.default_code if code is None else int(code))
        return (OSError if issubclass(cls, OSError) else Exception).__new__(cls)  # the C base that allocates it

    def __init__(self, message="", code=None, *rest):
        Exception.__init__(self, message)
        self.message = str(message)
        self.code = self.default_code if code is None else int(code)
        self.status = STATUS_NAMES.get(self.code, str(self.code))
        if isinstance(self, OSError):  # OSError's own fields, as Python's would be
            self.errno = errno.ENOENT if isinstance(self, FileNotFoundError) else None
            self.strerror = self.message

    def __str__(self):  # KeyError and OSError would print their arguments otherwise
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.code))


class InvalidArgument(Error, ValueError):
    """A value the library refuses (TS_ERR_ARG)."""


class ShapeError(Error, ValueError):
    """A shape that does not fit (TS_ERR_SHAPE)."""
    default_code = TS_ERR_SHAPE


class DtypeError(Error, TypeError):
    """A dtype or type that does not fit (TS_ERR_DTYPE)."""
    default_code = TS_ERR_DTYPE


class NotFound(Error, KeyError):
    """An unknown name: an input, output, parameter, tensor or device (TS_ERR_NOT_FOUND)."""
    default_code = TS_ERR_NOT_FOUND


class IOFailure(Error, OSError):
    """A file that could not be read or written (TS_ERR_IO)."""
    default_code = TS_ERR_IO


class FileNotFound(Error, FileNotFoundError):
    """A file or directory that does not exist."""
    default_code = TS_ERR_IO


class OutOfMemory(Error, MemoryError):
    """TS_ERR_NOMEM."""
    default_code = TS_ERR_NOMEM


class Unsupported(Error, NotImplementedError):
    """What this build or device does not do (TS_ERR_UNSUPPORTED)."""
    default_code = TS_ERR_UNSUPPORTED


_BY_CODE = {TS_ERR_ARG: InvalidArgument, TS_ERR_SHAPE: ShapeError, TS_ERR_DTYPE: DtypeError,
            TS_ERR_NOT_FOUND: NotFound, TS_ERR_IO: IOFailure, TS_ERR_NOMEM: OutOfMemory,
            TS_ERR_UNSUPPORTED: Unsupported}
_ENOENT = os.strerror(errno.ENOENT)  # the C library's words, as its messages end ("PATH: No such file ...")


def _error_class(message, code):
    """The subclass of Error for a failure with this message and ts_status."""
    if code in (TS_ERR_IO, TS_ERR_NOT_FOUND) and message.rstrip(").").endswith(_ENOENT):
        return FileNotFound
    return _BY_CODE.get(code, Error)


for _cls in [Error] + list(_BY_CODE.values()) + [FileNotFound]:
    _cls.__module__ = "tessera"


class Handle:
    """An object of the library owned by Python: freed by free() or when collected. A subclass
    names what it is (_what) and the library call that frees it (_free_handle)."""

    _what = "object"
    _h = None

    def _free_handle(self, h):
        raise NotImplementedError

    @property
    def handle(self):
        if not self._h:
            raise Error("the %s was freed" % self._what, TS_ERR_ARG)
        return self._h

    def free(self):
        if self._h:
            self._free_handle(self._h)
            self._h = None

    def __del__(self):
        try:
            self.free()
        except Exception:  # at interpreter exit the module may be gone
            pass


def _candidates():
    """Where the library may be: TESSERA_LIB, beside the package (an in-tree build: build/ under
    the repository; an install: <prefix>/lib), then the linker's search path."""
    env = os.environ.get("TESSERA_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in ("..", "../../build", "../../../../lib", "../../../../../lib", "../../../lib"):
        d = os.path.normpath(os.path.join(here, rel))
        for name in ("libtessera.so", "libtessera.so.0"):
            yield os.path.join(d, name)
    found = ctypes.util.find_library("tessera")
    if found:
        yield found


def _apps_beside(core_path):
    """libtessera_apps.so (the applications: BERT, text, speech, OCR, serving) beside the core
    library at core_path, loaded after it; ctypes looks a name up in it and in the libraries it
    needs, so one handle reaches both. The core's path itself when it is a bare name."""
    if os.sep not in core_path:
        return C.CDLL("libtessera_apps.so")
    d, base = os.path.split(os.path.abspath(core_path))
    return C.CDLL(os.path.join(d, base.replace("libtessera.so", "libtessera_apps.so", 1)))


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            C.CDLL(path, mode=C.RTLD_GLOBAL)
            return _apps_beside(path), os.path.abspath(path) if os.sep in path else path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("tessera: libtessera.so (with libtessera_apps.so beside it) not found; set TESSERA_LIB "
                      "to its path (tried: %s)" % ", ".join(tried))


lib, LIB_PATH = _load()


def fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


last_error = fn("ts_last_error", CP)
last_status = fn("ts_last_status", C.c_int)


def error(code=None):
    """A tessera.Error from the thread's last failure (code: the status returned, if any)."""
    msg = last_error()
    msg = msg.decode("utf-8", "replace") if msg else ""
    return Error(msg or "tessera call failed", last_status() if code is None else code)


def check(status):
    """Raise tessera.Error for a non-zero ts_status."""
    if status != 0:
        raise error(status)
    return status


def checked(ptr):
    """Raise tessera.Error for a NULL handle."""
    if not ptr:
        raise error()
    return ptr


def b(s):
    """str -> bytes for a const char * (None stays NULL)."""
    return None if s is None else s.encode("utf-8") if isinstance(s, str) else bytes(s)


def strings(items):
    """A const char *const * array of the given strings, and its length (None, 0 when empty)."""
    items = list(items or [])
    if not items:
        return None, 0
    return (C.c_char_p * len(items))(*[b(s) for s in items]), len(items)


def shape_arr(shape):
    shape = [int(d) for d in shape]
    return (C.c_int64 * max(1, len(shape)))(*shape), len(shape)


class TextSink:
    """A ts_write_fn that collects text (or hands each piece to `each`); keep it alive while C
    may call it."""

    def __init__(self, each=None):
        self.parts, self.each = [], each
        self.fn = WRITE_FN(self._write)

    def _write(self, ctx, text, n):
        s = C.string_at(text, n).decode("utf-8", "replace")
        if self.each:
            self.each(s)
        else:
            self.parts.append(s)

    def text(self):
        return "".join(self.parts)


# ---------------------------------------------------------------- structs (tessera_core.h)
class Init(C.Structure):
    _fields_ = [("kind", C.c_int), ("a", C.c_float), ("b", C.c_float)]


class CompileOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("device", CP), ("num_threads", C.c_int), ("nfetch", C.c_int),
                ("fetches", CPP), ("inference", C.c_int), ("no_fusion", C.c_int),
                ("device_iterations", C.c_int), ("memory_limit", C.c_size_t), ("stage_devices", CPP),
                ("nstage_devices", C.c_int), ("skip_param_init", C.c_int), ("profile", C.c_int),
                ("strict_device", C.c_int), ("plan_only", C.c_int), ("quantize", C.c_int),
                ("quant_scales", P), ("nquant_scales", C.c_int)]


class Memory(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("params", C.c_size_t), ("grads", C.c_size_t),
                ("optimizer_state", C.c_size_t), ("activations", C.c_size_t), ("workspace", C.c_size_t),
                ("intermediates_total", C.c_size_t), ("nodes", C.c_int), ("fused", C.c_int),
                ("grad_buckets", C.c_size_t), ("weight_copies", C.c_size_t), ("quantized", C.c_int)]


# ---------------------------------------------------------------- tessera_graph_ops.h
class ConvOpts(C.Structure):
    _fields_ = [("stride", C.c_int * 2), ("pad", C.c_int * 4), ("dilation", C.c_int * 2), ("groups", C.c_int)]


class PoolOpts(C.Structure):
    _fields_ = [("kernel", C.c_int * 2), ("stride", C.c_int * 2), ("pad", C.c_int * 4), ("dilation", C.c_int * 2),
                ("ceil_mode", C.c_int), ("count_include_pad", C.c_int)]


class ResizeOpts(C.Structure):
    _fields_ = [("mode", C.c_int), ("coord", C.c_int), ("round", C.c_int), ("scale", C.c_float * 2)]


# ---------------------------------------------------------------- tessera_train.h
class OptimOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("kind", C.c_int), ("weight_decay", C.c_float),
                ("momentum", C.c_float), ("dampening", C.c_float), ("nesterov", C.c_int),
                ("beta1", C.c_float), ("beta2", C.c_float), ("eps", C.c_float), ("no_decay", CPP),
                ("nno_decay", C.c_int), ("max_grad_norm", C.c_float), ("accumulation_steps", C.c_int),
                ("no_trust", CPP), ("nno_trust", C.c_int), ("comm", P), ("bucket_bytes", C.c_size_t),
                ("shard_state", C.c_int), ("round_nearest", C.c_int), ("rounding_seed", C.c_uint64),
                ("updates_in_backward", C.c_int)]


class LrScheduleOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("kind", C.c_int), ("lr", C.c_float), ("warmup_steps", C.c_int64),
                ("total_steps", C.c_int64), ("lr_end", C.c_float), ("power", C.c_float),
                ("num_cycles", C.c_float)]


# ---------------------------------------------------------------- tessera_bert.h / tessera_text.h
class BertConfig(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("vocab_size", C.c_int), ("hidden_size", C.c_int),
                ("num_hidden_layers", C.c_int), ("num_attention_heads", C.c_int),
                ("intermediate_size", C.c_int), ("max_position_embeddings", C.c_int),
                ("type_vocab_size", C.c_int), ("hidden_act", C.c_int), ("hidden_dropout_prob", C.c_float),
                ("attention_probs_dropout_prob", C.c_float), ("classifier_dropout", C.c_float),
                ("layer_norm_eps", C.c_float), ("initializer_range", C.c_float), ("num_labels", C.c_int),
                ("head", C.c_int), ("architecture", C.c_char * 64), ("attention_mask_dtype", C.c_int),
                ("compute_dtype", C.c_int), ("recompute", C.c_int), ("layer_stages", C.POINTER(C.c_int)),
                ("embedding_stage", C.c_int), ("head_stage", C.c_int), ("untie_word_embeddings", C.c_int),
                ("max_predictions_per_seq", C.c_int), ("max_sequences_per_pack", C.c_int),
                ("eager_attention", C.c_int)]


class ModelMeta(C.Structure):
    _fields_ = [("max_len", C.c_int), ("lowercase", C.c_int), ("labels", CPP), ("nlabels", C.c_int),
                ("text_b_column", CP), ("doc_stride", C.c_int), ("max_query_len", C.c_int),
                ("truncation", C.c_int)]


class Batch(C.Structure):
    _fields_ = [(n, C.POINTER(C.c_int32)) for n in ("input_ids", "token_type_ids", "attention_mask", "labels",
                                                   "next_sentence_label", "start_positions", "end_positions")]


class BatchBuf(C.Structure):
    _fields_ = [("ids", P), ("types", P), ("mask", P), ("labels", P), ("nsp", P), ("b", Batch),
                ("slices", C.c_int), ("batch", C.c_int), ("seq", C.c_int), ("predictions", C.c_int),
                ("positions", P), ("plabels", P)]


class BertTrainOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("cfg", C.POINTER(BertConfig)), ("head", C.c_int),
                ("batch", C.c_int), ("seq", C.c_int), ("seed", C.c_uint64), ("threads", C.c_int),
                ("infer_threads", C.c_int), ("optimizer", C.c_int), ("weight_decay", C.c_float),
                ("max_grad_norm", C.c_float), ("momentum", C.c_float), ("accumulation", C.c_int),
                ("steps_per_call", C.c_int), ("memory_limit", C.c_size_t), ("stage_devices", CPP),
                ("nstage_devices", C.c_int), ("train_fetches", CPP), ("infer_fetches", CPP),
                ("ntrain_fetches", C.c_int), ("ninfer_fetches", C.c_int), ("comm", P), ("shard_state", C.c_int),
                ("bucket_bytes", C.c_size_t), ("skip_param_init", C.c_int), ("profile", C.c_int),
                ("plan_only", C.c_int), ("quantize", C.c_int), ("quant_scales", P), ("nquant_scales", C.c_int),
                ("device", CP), ("weight_dtype", C.c_int), ("round_nearest", C.c_int)]


class BertInferOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("cfg", C.POINTER(BertConfig)), ("batch", C.c_int), ("seq", C.c_int),
                ("seed", C.c_uint64), ("device", CP), ("threads", C.c_int), ("profile", C.c_int),
                ("memory_limit", C.c_size_t), ("weights", CP), ("load_flags", C.c_int), ("name", CP),
                ("err", WRITE_FN), ("err_ctx", P), ("config_path", CP), ("inputs", CP),
                ("quantize", C.c_int), ("quant_scales", P), ("nquant_scales", C.c_int)]


class TextOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("format", C.c_int), ("text_column", CP), ("text_b_column", CP),
                ("label_column", CP), ("no_header", C.c_int), ("labels", CPP), ("nlabels", C.c_int)]


class SquadOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("max_seq_len", C.c_int), ("doc_stride", C.c_int),
                ("max_query_len", C.c_int), ("relocate_answers", C.c_int)]


# ---------------------------------------------------------------- tessera_tasks.h (fine-tuning)
class FinetuneRunOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("name", CP), ("out", WRITE_FN), ("out_ctx", P), ("tty", C.c_int),
                ("err", WRITE_FN), ("err_ctx", P), ("metrics", WRITE_FN), ("metrics_ctx", P), ("model_dir", CP),
                ("train_file", CP), ("eval_file", CP), ("out_dir", CP), ("resume", CP), ("task", C.c_int),
                ("text_column", CP), ("text_b_column", CP), ("label_column", CP), ("truncate", CP),
                ("test_split", C.c_double), ("split_seed", C.c_int), ("test_every", C.c_int),
                ("random_init", C.c_int), ("doc_stride", C.c_int), ("max_query_len", C.c_int),
                ("max_answer_len", C.c_int), ("n_best", C.c_int), ("relocate_answers", C.c_int), ("optimizer", CP),
                ("lr", C.c_double), ("warmup", C.c_double), ("weight_decay", C.c_double),
                ("max_grad_norm", C.c_double), ("momentum", C.c_double), ("epochs", C.c_int), ("batch", C.c_int),
                ("max_len", C.c_int), ("max_steps", C.c_int), ("accumulation", C.c_int),
                ("device_iterations", C.c_int), ("max_minutes", C.c_double), ("seed", C.c_int),
                ("save_every", C.c_int), ("keep", C.c_int), ("stop_after", C.c_int), ("threads", C.c_int),
                ("bf16", C.c_int), ("fp16", C.c_int), ("recompute", C.c_int), ("deterministic", C.c_int),
                ("profile", C.c_int), ("memory_limit", C.c_size_t), ("load_flags", C.c_int), ("devices", CP),
                ("stages", CP), ("micro_batches", C.c_int), ("comm", P), ("shard", C.c_int), ("pack", C.c_int),
                ("precision", CP), ("round_nearest", C.c_int)]


# ---------------------------------------------------------------- tessera_ocr.h
class Image(C.Structure):
    _fields_ = [("width", C.c_int), ("height", C.c_int), ("rgb", C.POINTER(C.c_uint8))]


class OcrOpts(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("models_dir", CP), ("det_model", CP), ("rec_model", CP),
                ("cls_model", CP), ("keys", CP), ("lang", CP), ("no_cls", C.c_int), ("num_threads", C.c_int),
                ("limit_side_len", C.c_int), ("det_thresh", C.c_float), ("box_thresh", C.c_float),
                ("unclip_ratio", C.c_float), ("drop_score", C.c_float), ("device", CP),
                ("strict_device", C.c_int), ("quantize", C.c_int)]


class OcrLine(C.Structure):
    _fields_ = [("box", (C.c_float * 2) * 4), ("text", CP), ("confidence", C.c_float)]
