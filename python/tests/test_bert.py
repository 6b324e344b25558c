# test_bert.py — BERT model directories from Python against the `tessera` command on the same
# inputs, bit for bit: the tokenizer against `tessera tokenize`, Classifier.predict against
# `tessera predict` (its printed lines), QuestionAnswering against `tessera predict` on JSON
# lines, Model.run against `tessera run` (the outputs file, byte for byte), and the batch
# encoding's padding and truncation.
import json

import numpy as np
import pytest

import tessera
from conftest import QUESTIONS, THREADS, run_cli

TEXTS = ["the cat runs", "the fish swims 3 times", "the mouse sleeps and the dog eats quickly",
         "a horse", "the bird sings", "dog dog dog", "the cat sleeps", "fish", "the horse jumps 12 times"]


def test_tokenizer_matches_the_command(pre, work):
    tok = tessera.Tokenizer.from_dir(pre)
    assert tok.vocab_size == len(open(pre / "vocab.txt").read().splitlines())
    out = run_cli("tokenize", "--vocab", pre / "vocab.txt", stdin="".join(t + "\n" for t in TEXTS))
    for text, line in zip(TEXTS, out.splitlines()):
        ids, _, mask, n = tok.encode(text, max_len=64)
        assert ids[:n] == [int(v) for v in line.split()]
    assert tok.token_to_id("[CLS]") == tok.encode("x")[0][0]
    assert tok.tokenize("the cats")[0] == "the"


def test_batch_encoding_pads_and_truncates(pre):
    tok = tessera.Tokenizer.from_dir(pre)
    enc = tok(["the cat runs", "the mouse sleeps and the dog eats quickly"])
    T = enc["input_ids"].shape[1]
    assert enc["input_ids"].dtype == np.int32 and enc["attention_mask"][1].sum() == T
    assert enc["attention_mask"][0].sum() < T and enc["input_ids"][0, -1] == tok.token_to_id("[PAD]")
    fixed = tok(["the cat runs"], padding="max_length", max_length=16)
    assert fixed["input_ids"].shape == (1, 16)
    cut = tok(["the mouse sleeps and the dog eats quickly"], max_length=5)
    assert cut["input_ids"].shape == (1, 5) and cut["input_ids"][0, -1] == tok.token_to_id("[SEP]")
    with pytest.raises(tessera.Error):
        tok(["the mouse sleeps and the dog eats quickly"], max_length=5, truncation=False)
    pair = tok(["the cat"], text_pairs=["runs"])
    assert pair["token_type_ids"][0].tolist().count(1) == 2


def test_classifier_matches_predict(ft):
    out = run_cli("predict", "--model", ft, "--threads", THREADS, stdin="".join(t + "\n" for t in TEXTS))
    clf = tessera.bert.Classifier.load(ft, threads=int(THREADS))
    got = clf.predict(TEXTS)
    mine = ["%s\t%.4f\t%s" % (r["label"], r["score"], text) for r, text in zip(got, TEXTS)]
    assert mine == out.splitlines()
    probs = clf.predict_proba(TEXTS)
    assert probs.shape == (len(TEXTS), 2) and np.allclose(probs.sum(1), 1)
    assert clf.labels == ["neg", "pos"]


def test_qa_matches_predict(qa):
    lines = "".join(json.dumps({"question": q, "context": c}) + "\n" for q, c in QUESTIONS)
    out = run_cli("predict", "--model", qa, "--threads", THREADS, stdin=lines)
    model = tessera.bert.QuestionAnswering.load(qa, threads=int(THREADS))
    assert model.predict(QUESTIONS) == out.splitlines()
    assert model.predict([{"question": q, "context": c} for q, c in QUESTIONS]) == out.splitlines()


def test_model_run_matches_run(ft, work, pre):
    tok = tessera.Tokenizer.from_dir(ft)
    enc = tok(TEXTS[:4], padding="max_length", max_length=32)
    tessera.safetensors.save(work / "in.safetensors", enc)
    run_cli("run", "--model", ft, "--inputs", work / "in.safetensors", "--outputs", work / "out.safetensors",
            "--threads", THREADS)
    outs = tessera.bert.Model.load(ft, threads=int(THREADS)).run(**enc)
    want = tessera.safetensors.load(work / "out.safetensors")
    assert sorted(outs) == sorted(want) and "logits" in outs
    for k in want:
        assert outs[k].tobytes() == want[k].tobytes(), k
    tessera.safetensors.save(work / "mine.safetensors", outs, {"format": "pt"})
    assert (work / "mine.safetensors").read_bytes() == (work / "out.safetensors").read_bytes()


def test_model_dir_errors(ft, qa, tmp_path):
    with pytest.raises(tessera.Error) as e:
        tessera.bert.Classifier.load(tmp_path)
    assert "config.json" in str(e.value)
    with pytest.raises(tessera.Error, match="not a sequence classification"):
        tessera.bert.Classifier.load(qa)
    m = tessera.bert.Model.load(ft)
    with pytest.raises(tessera.Error):
        m.run(np.zeros((2, 8), np.int32), attention_mask=np.ones((2, 7), np.int32))
    with pytest.raises(tessera.Error):
        m.run(np.full((1, 8), 10 ** 6, np.int32))  # ids beyond the vocabulary


def test_model_dir_round_trip(ft, tmp_path):
    md = tessera.bert.load_dir(ft)
    assert md.meta["labels"] == ["neg", "pos"] and md.meta["max_len"] == 32
    clf = tessera.bert.Classifier.load(ft)
    tessera.bert.save_dir(tmp_path / "copy", clf.program, md.config, ft / "vocab.txt", md.meta)
    assert (tmp_path / "copy" / "model.safetensors").read_bytes() == (ft / "model.safetensors").read_bytes()
    assert json.loads((tmp_path / "copy" / "config.json").read_text()) == json.loads((ft / "config.json").read_text())
