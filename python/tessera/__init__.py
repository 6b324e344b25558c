# tessera — Python bindings of libtessera (a deep-learning framework in C), pure Python over the
# shared library with ctypes and numpy:
#   tessera.Graph / Program       build, differentiate, optimize, compile, feed, run, fetch
#   tessera.safetensors           load / save tensor files
#   tessera.Tokenizer             BERT's WordPiece tokenizer
#   tessera.bert                  model directories: Classifier, QuestionAnswering, Model
#   tessera.pipeline              Hugging Face's pipeline("text-classification", model=DIR)
#   tessera.train                 fine-tuning, as `tessera finetune`
#   tessera.onnx.InferenceSession ONNX Runtime's interface
#   tessera.ocr.read              text in images
# Every failure of the library raises tessera.Error with its message, as the subclass that is also
# Python's exception for it (ShapeError is a ValueError, NotFound a KeyError, ...: see _lib.Error).
from . import _lib
from ._lib import (DtypeError, Error, FileNotFound, InvalidArgument, IOFailure, NotFound, OutOfMemory, ShapeError,
                   Unsupported)
from .graph import Graph, Value
from .program import Program
from .text import Tokenizer
from . import safetensors, bert, onnx, ocr
from .training import train
from .bert import pipeline

__version__ = "0.1.0"


def version():
    """The version of the loaded libtessera ("0.1.0")."""
    return _lib.fn("ts_version", _lib.CP)().decode()


def devices():
    """The backends of the loaded library ("cpu", ...)."""
    return _lib.fn("ts_devices", _lib.CP)().decode().split(",")


def build_features():
    """The optional features of the loaded libraries: {"core": [...], "apps": [...]}, the names
    ts_build_features and ts_apps_build_features give ("onnx", "mpi"; "images", "audio", ...)."""
    return {"core": _lib.fn("ts_build_features", _lib.CP)().decode().split(),
            "apps": _lib.fn("ts_apps_build_features", _lib.CP)().decode().split()}


def set_device_option(device, key, value):
    """Set option `key` of `device` ("cpu", "opencl:0") to `value` for every program compiled for it
    afterwards (ts_device_set_option): "fallback" "cpu" or "none" on any device; "conv_algorithm",
    "conv_layout", "matmul_weights" on the CPU. Raises tessera.Error naming what is accepted."""
    _lib.check(_lib.fn("ts_device_set_option", _lib.C.c_int, _lib.CP, _lib.CP, _lib.CP)(
        _lib.b(device), _lib.b(key), _lib.b(str(value))))


_notice_callback = None  # kept alive while the library holds it


def set_notice_sink(write):
    """Where the library's notices go (ts_set_notice_sink): write(line) is called with each line
    (str, newline included), from any thread that compiles; None (the default) drops them.
    Example: tessera.set_notice_sink(sys.stderr.write)."""
    global _notice_callback
    sink = _lib.fn("ts_set_notice_sink", None, _lib.WRITE_FN, _lib.C.c_void_p)
    if write is None:
        sink(_lib.WRITE_FN(), None)
        _notice_callback = None
        return
    cb = _lib.WRITE_FN(lambda ctx, text, n: write(_lib.C.string_at(text, n).decode("utf-8", "replace")))
    sink(cb, None)
    _notice_callback = cb


library_path = _lib.LIB_PATH
__all__ = ["Error", "InvalidArgument", "ShapeError", "DtypeError", "NotFound", "IOFailure", "FileNotFound",
           "OutOfMemory", "Unsupported", "pipeline", "Graph", "Value", "Program", "Tokenizer", "safetensors", "bert",
           "onnx", "ocr", "train", "version", "devices", "build_features", "set_device_option", "set_notice_sink",
           "library_path"]
