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


def test_bad_data_raises(pre, work, tmp_path):
    (tmp_path / "bad.tsv").write_text("label\ttext\npos\tthe cat runs\nneg\n")
    with pytest.raises(tessera.Error, match="bad.tsv"):
        tessera.train(str(pre), str(tmp_path / "bad.tsv"), str(tmp_path / "out"), verbose=False)
    with pytest.raises(tessera.Error, match="truncate"):
        tessera.train(str(pre), str(work / "data.tsv"), str(tmp_path / "out"), truncate="middle", verbose=False)
