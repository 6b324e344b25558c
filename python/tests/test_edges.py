# test_edges.py — the package where ONNX Runtime's and Hugging Face's users expect it to behave as
# those do (issue 41): an ONNX session run again and again with other values of a one-element int
# input (the tiny BERT of conftest exported by `tessera export --max-len 1`: int32 [1, 1] inputs);
# inputs' dtypes checked as onnxruntime checks them; Classifier.predict and tessera.pipeline
# giving transformers' text-classification results; outputs described and unknown names named;
# the library's failures raised as Python's built-in exception types, all tessera.Error.
import ctypes
import errno
import os
import re

import numpy as np
import pytest

import tessera
from conftest import REPO, THREADS, run_cli
from tessera import _abi, _lib

CNN = os.path.join(REPO, "tests", "fixtures", "onnx", "cnn.onnx")
HAS_ONNX = "onnx" in (_lib.fn("ts_build_features", ctypes.c_char_p)() or b"").decode().split()
needs_onnx = pytest.mark.skipif(not HAS_ONNX, reason="this libtessera was built without ONNX (TS_WITH_ONNX)")


@pytest.fixture(scope="module")
def one_token(ft, work):
    """The fine-tuned classifier as ONNX for one token ([1, 1] inputs), and what `tessera export`
    printed about it."""
    if not HAS_ONNX:
        pytest.skip("this libtessera was built without ONNX (TS_WITH_ONNX)")
    path = work / "one_token.onnx"
    out = run_cli("export", "--model", ft, "--out", path, "--max-len", "1", "--threads", THREADS)
    return str(path), out


def feeds(token, dtype=np.int32):
    return {"input_ids": np.array([[token]], dtype), "token_type_ids": np.zeros((1, 1), np.int32),
            "attention_mask": np.ones((1, 1), np.int32)}


def command_run(model, feed, tmp_path):
    """The outputs of `tessera run --model MODEL` on feed (a fresh process: nothing kept between)."""
    tessera.safetensors.save(tmp_path / "in.safetensors", feed)
    run_cli("run", "--model", model, "--inputs", tmp_path / "in.safetensors", "--outputs",
            tmp_path / "out.safetensors", "--threads", THREADS)
    return tessera.safetensors.load(tmp_path / "out.safetensors")


# 1. a session runs any number of times, whatever the value of a one-element int input
def test_session_runs_again_with_other_values(one_token, tmp_path):
    path, _ = one_token
    sess = tessera.onnx.InferenceSession(path, threads=int(THREADS))
    names = [o.name for o in sess.get_outputs()]
    first, other, again = (sess.run(None, feeds(t)) for t in (5, 7, 5))
    assert not np.array_equal(first[names.index("logits")], other[names.index("logits")])
    for a, c in zip(first, again):
        assert a.tobytes() == c.tobytes()
    for token, got in ((5, first), (7, other)):
        want = command_run(path, feeds(token), tmp_path)
        for name, g in zip(names, got):
            np.testing.assert_allclose(g, want[name], rtol=1e-5, atol=1e-6, err_msg="%s, token %d" % (name, token))
    for t in (9, 11, 13, 5):  # more values than that: still no error
        sess.run(["logits"], feeds(t))


# 2. dtypes as onnxruntime checks them, with int64 -> int32 accepted when the values fit
def test_input_dtypes_checked(one_token):
    sess = tessera.onnx.InferenceSession(one_token[0], threads=int(THREADS))
    exact = sess.run(["logits"], feeds(5))[0]
    assert sess.run(["logits"], feeds(5, np.int64))[0].tobytes() == exact.tobytes()
    with pytest.raises(ValueError, match="input_ids") as e:
        sess.run(None, feeds(2 ** 40, np.int64))
    assert isinstance(e.value, tessera.Error)
    with pytest.raises(TypeError) as e:
        sess.run(None, feeds(5, np.float32))
    msg = str(e.value)
    assert "'input_ids'" in msg and "tensor(int32)" in msg and "float32" in msg and isinstance(e.value, tessera.Error)


@needs_onnx
def test_float_input_dtypes_checked():
    sess = tessera.onnx.InferenceSession(CNN)
    shape = [d if d is not None else 1 for d in sess.get_inputs()[0].shape]
    for wrong in (np.int32, np.float64, np.int64):
        with pytest.raises(TypeError) as e:
            sess.run(None, {"x": np.zeros(shape, wrong)})
        msg = str(e.value)
        assert "'x'" in msg and "tensor(float)" in msg and np.dtype(wrong).name in msg, msg
    sess.run(None, {"x": np.zeros(shape, np.float32)})


# 3. Classifier.predict and tessera.pipeline as transformers' text-classification pipeline
def test_predict_as_the_pipeline(ft):
    texts = ["the cat runs", "apple banana", "the fish swims 3 times"]
    out = run_cli("predict", "--model", ft, "--threads", THREADS, stdin="".join(t + "\n" for t in texts))
    want = [line.split("\t")[:2] for line in out.splitlines()]  # label, probability (%.4f)
    clf = tessera.bert.Classifier.load(ft, threads=int(THREADS))
    one = clf.predict("apple banana")
    assert isinstance(one, list) and len(one) == 1 and sorted(one[0]) == ["label", "score"]
    assert [one[0]["label"], "%.4f" % one[0]["score"]] == want[1]
    many = clf.predict(texts)
    assert [[r["label"], "%.4f" % r["score"]] for r in many] == want
    assert all(type(r["score"]) is float and type(r["label"]) is str for r in many)
    top = clf.predict("apple banana", top_k=None)
    assert [d["label"] for d in top] in (["neg", "pos"], ["pos", "neg"]) and top[0] == one[0]
    assert top[0]["score"] >= top[1]["score"] and abs(top[0]["score"] + top[1]["score"] - 1) < 1e-6
    assert clf.predict("apple banana", top_k=1) == one  # an explicit top_k: a list of k dicts
    nested = clf.predict(texts, top_k=2)
    assert len(nested) == 3 and all(len(r) == 2 and r[0] == m for r, m in zip(nested, many))
    assert clf.predict_proba("apple banana").shape == (1, 2)
    with pytest.raises(TypeError, match=r"text 0 is int") as e:
        clf.predict([5])
    assert isinstance(e.value, tessera.Error)
    with pytest.raises(TypeError, match=r"text 1 is NoneType"):
        clf.predict(["the cat runs", None])
    pipe = tessera.pipeline("text-classification", model=ft, threads=int(THREADS))
    assert pipe(texts) == many and pipe("apple banana") == one and pipe(texts, top_k=2) == nested
    with pytest.raises(ValueError, match="text-classification"):
        tessera.pipeline("summarization", model=ft)


# 4. outputs described as the file declares them; unknown names named
def test_outputs_described_and_names_checked(one_token):
    path, printed = one_token
    sess = tessera.onnx.InferenceSession(path)
    # `tessera export` printed "outputs last_hidden_state [1, 1, 32], pooler_output [1, 32], logits [1, 2]"
    declared = re.findall(r"(\w+) \[([\d, ]+)\]", printed.split("outputs", 1)[1].split(";")[0])
    assert [(o.name, o.shape, o.type) for o in sess.get_outputs()] == [
        (n, [int(d) for d in dims.split(",")], "tensor(float)") for n, dims in declared]
    got = sess.run(None, feeds(3))
    assert [list(g.shape) for g in got] == [o.shape for o in sess.get_outputs()]
    with pytest.raises(KeyError) as e:
        sess.run(["nope"], feeds(3))
    assert "'nope'" in str(e.value) and "'logits'" in str(e.value) and isinstance(e.value, tessera.Error)
    with pytest.raises(KeyError) as e:
        sess.run(None, dict(feeds(3), input_idz=np.zeros((1, 1), np.int32)))
    assert "'input_idz'" in str(e.value) and "'input_ids'" in str(e.value)
    with pytest.raises(KeyError, match="attention_mask"):
        sess.run(None, {k: v for k, v in feeds(3).items() if k != "attention_mask"})


# 5. the library's failures as Python's exception types, every one a tessera.Error
def test_errors_are_python_types(tmp_path, ft):
    cases = [  # (what fails, the built-in type expected)
        (lambda: tessera.safetensors.load(str(tmp_path / "missing.safetensors")), FileNotFoundError),
        (lambda: tessera.bert.Classifier.load(tmp_path / "no_model"), FileNotFoundError),
        (lambda: tessera.Tokenizer.from_dir(str(tmp_path)), FileNotFoundError),
        (lambda: tessera.bert.Model.load(ft).run(np.zeros((2, 8), np.int32), attention_mask=np.ones((2, 7))),
         ValueError),
        (lambda: tessera._tensor.dtype_code("complex64"), TypeError),
    ]
    g = tessera.Graph(seed=1)
    x = g.input("x", [2, 3])
    g.name(x @ g.param("w", [3, 4], "normal", 0.1), "y")
    p = g.compile(["y"])
    cases += [(lambda: g.matmul(x, g.input("z", [5, 4])), ValueError),
              (lambda: p.run({"x": np.zeros((3, 3), np.float32)}, fetches=["y"]), ValueError),
              (lambda: p.run({"x": np.zeros((2, 3), np.float32)}, fetches=["nope"]), KeyError),
              (lambda: p.get_param("nope"), KeyError)]
    if HAS_ONNX:
        cases.append((lambda: tessera.onnx.InferenceSession(tmp_path / "missing.onnx"), FileNotFoundError))
    for i, (call, kind) in enumerate(cases):
        with pytest.raises(tessera.Error) as e:
            call()
        assert isinstance(e.value, kind), "case %d: %s is not a %s: %s" % (i, type(e.value), kind.__name__, e.value)
        assert str(e.value) and not str(e.value).startswith(("'", '"')), "case %d: %r" % (i, str(e.value))
    try:
        tessera.safetensors.load(str(tmp_path / "missing.safetensors"))
    except FileNotFoundError as e:
        assert e.errno == errno.ENOENT and "missing.safetensors" in str(e) and e.status == "TS_ERR_IO"
    # raised from Python with a code, the same classes
    assert type(tessera.Error("x", _abi.TS_ERR_NOT_FOUND)) is tessera.NotFound
    assert type(tessera.Error("bad", _abi.TS_ERR_SHAPE)) is tessera.ShapeError
    assert type(tessera.Error("rt", _abi.TS_ERR_RUNTIME)) is tessera.Error
