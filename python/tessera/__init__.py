# tessera — Python bindings of libtessera (a deep-learning framework in C), pure Python over the
# shared library with ctypes and numpy:
#   tessera.Graph / Program       build, differentiate, optimize, compile, feed, run, fetch
#   tessera.safetensors           load / save tensor files
#   tessera.Tokenizer             BERT's WordPiece tokenizer
#   tessera.bert                  model directories: Classifier, QuestionAnswering, Model
#   tessera.train                 fine-tuning, as `tessera finetune`
#   tessera.onnx.InferenceSession ONNX Runtime's interface
#   tessera.ocr.read              text in images
# Every failure of the library raises tessera.Error with its message.
from . import _lib
from ._lib import Error
from .graph import Graph, Value
from .program import Program
from .text import Tokenizer
from . import safetensors, bert, onnx, ocr
from .training import train

__version__ = "0.1.0"


def version():
    """The version of the loaded libtessera ("0.1.0")."""
    return _lib.fn("ts_version", _lib.CP)().decode()


def devices():
    """The backends of the loaded library ("cpu", ...)."""
    return _lib.fn("ts_devices", _lib.CP)().decode().split(",")


library_path = _lib.LIB_PATH
__all__ = ["Error", "Graph", "Value", "Program", "Tokenizer", "safetensors", "bert", "onnx", "ocr", "train",
           "version", "devices", "library_path"]
