# ocr.py — tessera.ocr.read(image): the lines of text in an image (a PNG / JPEG path, its bytes,
# or an RGB uint8 array [H, W, 3]) with PaddleOCR's PP-OCRv4 models (ts_ocr_*), as `tessera ocr`
# reads them. Models: models_dir, else $TESSERA_DATA/ocr, else the installed share/tessera/ocr,
# else the source tree's data/ocr beside the build the library came from.
import ctypes as C
import os

import numpy as np

from ._abi import TS_ERR_DTYPE
from ._lib import CP, LIB_PATH, P, Image, OcrLine, OcrOpts, Error, b, check, checked, fn

_image_read = fn("ts_image_read", C.POINTER(Image), CP)
_image_decode = fn("ts_image_decode", C.POINTER(Image), C.c_char_p, C.c_size_t, CP)
_image_new = fn("ts_image_new", C.POINTER(Image), C.c_int, C.c_int, C.c_uint8)
_image_free = fn("ts_image_free", None, C.POINTER(Image))
_ocr_new = fn("ts_ocr_new", P, C.POINTER(OcrOpts))
_ocr_free = fn("ts_ocr_free", None, P)
_ocr_run = fn("ts_ocr_run", C.c_int, P, C.POINTER(Image), C.POINTER(C.POINTER(OcrLine)), C.POINTER(C.c_int))
_lines_free = fn("ts_ocr_lines_free", None, C.POINTER(OcrLine), C.c_int)
DET = "ch_PP-OCRv4_det_infer.onnx"


def default_models_dir():
    env = os.environ.get("TESSERA_DATA")
    libdir = os.path.dirname(os.path.abspath(LIB_PATH))
    for d in ([os.path.join(env, "ocr")] if env else []) + [
            os.path.join(libdir, "..", "share", "tessera", "ocr"), os.path.join(libdir, "..", "data", "ocr")]:
        if os.path.exists(os.path.join(d, DET)):
            return os.path.normpath(d)
    return "."


class Line:
    """One line of text: box (four (x, y) corners: top-left, top-right, bottom-right,
    bottom-left), text and confidence."""

    def __init__(self, box, text, confidence):
        self.box, self.text, self.confidence = box, text, confidence

    def __repr__(self):
        return "Line(%r, %.4f, %r)" % (self.text, self.confidence, self.box)


class Reader:
    """The OCR models loaded once, to read many images."""

    def __init__(self, models_dir=None, lang="ch", no_cls=False, threads=0, device=None):
        o = OcrOpts(struct_size=C.sizeof(OcrOpts), models_dir=b(models_dir or default_models_dir()), lang=b(lang),
                    no_cls=int(no_cls), num_threads=threads, device=b(device))
        self._h = checked(_ocr_new(C.byref(o)))

    def __del__(self):
        if getattr(self, "_h", None):
            _ocr_free(self._h)
            self._h = None

    def read(self, image):
        im = _to_image(image)
        lines, n = C.POINTER(OcrLine)(), C.c_int(0)
        try:
            check(_ocr_run(self._h, im, C.byref(lines), C.byref(n)))
            return [Line([(l.box[k][0], l.box[k][1]) for k in range(4)], l.text.decode("utf-8", "replace"),
                         l.confidence) for l in (lines[i] for i in range(n.value))]
        finally:
            _lines_free(lines, n.value)
            _image_free(im)


def _to_image(image):
    if isinstance(image, (str, os.PathLike)):
        return checked(_image_read(b(os.fspath(image))))
    if isinstance(image, (bytes, bytearray)):
        return checked(_image_decode(bytes(image), len(image), b"image"))
    a = np.asarray(image)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
        raise Error("an image array is uint8 [height, width, 3] (RGB) or [height, width], not %s %s" % (
            a.dtype, list(a.shape)), TS_ERR_DTYPE)
    a = np.ascontiguousarray(a)
    im = checked(_image_new(a.shape[1], a.shape[0], 255))
    C.memmove(im.contents.rgb, a.ctypes.data, a.nbytes)
    return im


def read(image, **opts):
    """The lines of text in image (a path, PNG / JPEG bytes, or an RGB uint8 array), in reading
    order. opts: models_dir, lang ("ch" or "en"), no_cls, threads, device."""
    return Reader(**opts).read(image)


def format_lines(lines):
    """The lines as `tessera ocr` prints them: corners, confidence and text, tab-separated."""
    return "".join("%s\t%.4f\t%s\n" % (" ".join("%.0f,%.0f" % p for p in l.box), l.confidence, l.text)
                   for l in lines)
