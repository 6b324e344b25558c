# test_train.py — tessera.train against `tessera finetune`: 20 steps with the same seed, data and
# options give the same model.safetensors and config.json, byte for byte, and the same losses;
# the metrics callback sees every step's row.
import json

import pytest

import tessera
from conftest import THREADS, run_cli


def losses(rows):
    return [r["loss"] for r in rows if "step" in r and "loss" in r]


def test_twenty_steps_equal_the_command(pre, work):
    args = dict(max_steps=20, batch=4, max_len=32, lr=1e-3, seed=5, threads=int(THREADS))
    run_cli("finetune", "--model", pre, "--train", work / "data.tsv", "--out", work / "cli20", "--max-steps", "20",
            "--batch", "4", "--max-len", "32", "--lr", "1e-3", "--seed", "5", "--threads", THREADS)
    seen = []
    rows = tessera.train(str(pre), str(work / "data.tsv"), str(work / "py20"), callback=seen.append, verbose=False,
                         **args)
    assert seen == rows and len(losses(rows)) == 20
    for f in ("model.safetensors", "config.json", "vocab.txt"):
        assert (work / "py20" / f).read_bytes() == (work / "cli20" / f).read_bytes(), f
    cli_rows = [json.loads(l) for l in (work / "cli20" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    assert losses(cli_rows) == losses(rows)
    assert any("test_accuracy" in json.dumps(r) for r in rows)


def test_precision_and_packing_equal_the_command(pre, work):
    """bf16 weights with stochastic rounding and packed texts: the command's model, byte for byte."""
    run_cli("finetune", "--model", pre, "--train", work / "data.tsv", "--out", work / "clisr", "--max-steps", "6",
            "--batch", "4", "--max-len", "32", "--seed", "5", "--threads", THREADS, "--precision", "bf16-sr",
            "--pack", "4")
    tessera.train(str(pre), str(work / "data.tsv"), str(work / "pysr"), verbose=False, max_steps=6, batch=4, max_len=32,
                  seed=5, threads=int(THREADS), precision="bf16-sr", pack=4)
    assert (work / "pysr" / "model.safetensors").read_bytes() == (work / "clisr" / "model.safetensors").read_bytes()
    with pytest.raises(tessera.Error, match="precision"):
        tessera.train(str(pre), str(work / "data.tsv"), str(work / "pybad"), verbose=False, max_steps=1,
                      precision="f8")


def test_bad_data_raises(pre, work, tmp_path):
    (tmp_path / "bad.tsv").write_text("label\ttext\npos\tthe cat runs\nneg\n")
    with pytest.raises(tessera.Error, match="bad.tsv"):
        tessera.train(str(pre), str(tmp_path / "bad.tsv"), str(tmp_path / "out"), verbose=False)
    with pytest.raises(tessera.Error, match="truncate"):
        tessera.train(str(pre), str(work / "data.tsv"), str(tmp_path / "out"), truncate="middle", verbose=False)


def test_qa_steps_equal_the_command(pre, work):
    common = ["--max-len", "48", "--doc-stride", "16", "--max-query-len", "12", "--batch", "4", "--max-steps", "6",
              "--lr", "2e-3", "--seed", "3", "--threads", THREADS]
    run_cli("finetune", "--task", "qa", "--model", pre, "--train", work / "squad.json", "--eval", work / "squad.json",
            "--out", work / "cliqa", *common)
    rows = tessera.train(str(pre), str(work / "squad.json"), str(work / "pyqa"), task="qa", dev=str(work / "squad.json"),
                         max_len=48, doc_stride=16, max_query_len=12, batch=4, max_steps=6, lr=2e-3, seed=3,
                         threads=int(THREADS), verbose=False)
    cli_rows = [json.loads(l) for l in (work / "cliqa" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    assert losses(rows) == losses(cli_rows) and len(losses(rows)) == 3  # 3 epochs of one step
    assert [r.get("dev_f1") for r in rows if "dev_f1" in r] == [r.get("dev_f1") for r in cli_rows if "dev_f1" in r]
    for f in ("model.safetensors", "config.json"):
        assert (work / "pyqa" / f).read_bytes() == (work / "cliqa" / f).read_bytes(), f
    qa = tessera.bert.QuestionAnswering.load(work / "pyqa")
    assert len(qa.predict([("who runs?", "the cat runs.")])) == 1


def test_callback_errors_come_back(pre, work, tmp_path):
    def boom(row):
        raise ValueError("stop")
    with pytest.raises(ValueError, match="stop"):
        tessera.train(str(pre), str(work / "data.tsv"), str(tmp_path / "o"), max_steps=2, batch=4, max_len=32,
                      callback=boom, verbose=False)
