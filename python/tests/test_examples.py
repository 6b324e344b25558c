# test_examples.py — the two examples run: the spam filter fine-tuned for a few steps from the
# session's tiny pretrained model (on data/spam/spam.tsv), and the MNIST MLP for 300 steps
# (it exits non-zero below 90% accuracy). Skipped when data/ lacks their data.
import os
import subprocess
import sys

import pytest

from conftest import REPO

EX = os.path.join(REPO, "python", "examples")


def run_example(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), OMP_NUM_THREADS="1")  # ctest runs others beside
    r = subprocess.run([sys.executable] + [str(a) for a in args], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def need(path):
    if not os.path.exists(path):
        pytest.skip("%s is missing (scripts/install-deps.sh fetches it)" % path)
    return path


def test_finetune_spam(pre, tmp_path):
    spam = need(os.path.join(REPO, "data", "spam", "spam.tsv"))
    out = run_example(os.path.join(EX, "finetune_spam.py"), pre, spam, tmp_path / "spam", 3)
    assert "test accuracy" in out and out.count("\n") >= 3
    assert (tmp_path / "spam" / "model.safetensors").exists()


def test_mnist_mlp():
    mnist = need(os.path.join(REPO, "data", "mnist"))
    out = run_example(os.path.join(EX, "mnist_mlp.py"), mnist, 300)
    assert "test accuracy" in out
