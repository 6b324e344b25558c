# test_onnx_ocr.py — tessera.onnx.InferenceSession (ONNX Runtime's interface) against `tessera run
# --model MODEL.onnx` on the same inputs, bit for bit, with its inputs and outputs described as
# onnxruntime does; and tessera.ocr.read against `tessera ocr` on an image drawn with ImageMagick
# (skipped without `convert` or the OCR models in data/ocr).
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import tessera
from conftest import REPO, THREADS, run_cli
from tessera import _lib

CNN = os.path.join(REPO, "tests", "fixtures", "onnx", "cnn.onnx")

# A library built without ONNX (or the applications without images) has the functions, which fail
# naming the build option: the module is skipped, saying so.
FEATURES = set((_lib.fn("ts_build_features", ctypes.c_char_p)() or b"").decode().split())
APPS_FEATURES = set((_lib.fn("ts_apps_build_features", ctypes.c_char_p)() or b"").decode().split())
pytestmark = pytest.mark.skipif("onnx" not in FEATURES, reason="this libtessera was built without ONNX (TS_WITH_ONNX)")


def test_inference_session_matches_run(tmp_path):
    sess = tessera.onnx.InferenceSession(CNN, providers=["CPUExecutionProvider"], threads=int(THREADS))
    (inp,) = sess.get_inputs()
    assert inp.name == "x" and inp.type == "tensor(float)"
    assert [o.name for o in sess.get_outputs()] == ["logits"]
    shape = [d if d is not None else 2 for d in inp.shape]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    tessera.safetensors.save(tmp_path / "in.safetensors", {"x": x})
    run_cli("run", "--model", CNN, "--inputs", tmp_path / "in.safetensors", "--outputs", tmp_path / "out.safetensors",
            "--threads", THREADS)
    want = tessera.safetensors.load(tmp_path / "out.safetensors")["logits"]
    (got,) = sess.run(None, {"x": x})
    assert got.tobytes() == want.tobytes()
    assert sess.run(["logits"], {"x": x})[0].tobytes() == want.tobytes()


def test_inference_session_errors(tmp_path):
    sess = tessera.onnx.InferenceSession(CNN)
    shape = [d if d is not None else 1 for d in sess.get_inputs()[0].shape]
    with pytest.raises(tessera.Error, match="no input"):
        sess.run(None, {"y": np.zeros(shape, np.float32)})
    with pytest.raises(tessera.Error):
        sess.run(None, {"x": np.zeros(shape, np.int32)})
    with pytest.raises(tessera.Error):
        sess.run(None, {"x": np.zeros([3, 3], np.float32)})
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(tessera.Error, match="junk.onnx"):
        tessera.onnx.InferenceSession(str(tmp_path / "junk.onnx"))


def ocr_models():
    d = os.path.join(REPO, "data", "ocr")
    if not os.path.exists(os.path.join(d, "ch_PP-OCRv4_det_infer.onnx")) or not shutil.which("convert"):
        pytest.skip("no OCR models in data/ocr or no ImageMagick convert")
    return d


@pytest.mark.skipif("images" not in APPS_FEATURES,
                    reason="this libtessera_apps was built without images (TS_WITH_IMAGES)")
def test_ocr_matches_the_command(tmp_path):
    models = ocr_models()
    img = tmp_path / "text.png"
    subprocess.run(["convert", "-background", "white", "-fill", "black", "-pointsize", "28", "label:HELLO WORLD",
                    "label:tessera reads 42", "-splice", "0x14", "-append", "-bordercolor", "white", "-border", "20",
                    str(img)], check=True)
    out = run_cli("ocr", img, "--model-store", models, "--threads", THREADS)
    reader = tessera.ocr.Reader(models_dir=models, threads=int(THREADS))
    lines = reader.read(str(img))
    assert tessera.ocr.format_lines(lines) == out and len(lines) >= 1
    assert tessera.ocr.format_lines(reader.read(img.read_bytes())) == out
    with pytest.raises(tessera.Error, match="notes.png"):
        (tmp_path / "notes.png").write_text("not a picture")
        reader.read(str(tmp_path / "notes.png"))
    with pytest.raises(tessera.Error):
        reader.read(np.zeros((4, 4, 3), np.float32))
    assert reader.read(np.full((60, 200, 3), 255, np.uint8)) == []
