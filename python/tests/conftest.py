# conftest.py — what the tests share: the `tessera` command beside the library under test
# (TS_CLI, else <the library's directory>/tessera), a run helper, and a tiny BERT made once per
# session with the command (a vocabulary, 3 pretraining steps, a classifier and a QA model of 3
# fine-tuning steps each) on generated data, as tests/test_cli_*.c make theirs.
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tessera  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
A = ["cat", "dog", "bird", "fish", "horse", "mouse"]
B = ["runs", "sleeps", "eats", "jumps", "swims", "sings"]
THREADS = "2"  # the CLI and the package run with the same count: results are bitwise equal for one count


def cli_path():
    p = os.environ.get("TS_CLI") or os.path.join(os.path.dirname(tessera.library_path), "tessera")
    if not os.access(p, os.X_OK):
        pytest.skip("the tessera command is not built (%s)" % p)
    return p


def run_cli(*args, stdin=None, cwd=None):
    r = subprocess.run([cli_path()] + [str(a) for a in args], input=stdin, cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, "tessera %s: exit %d\n%s%s" % (" ".join(map(str, args)), r.returncode, r.stdout,
                                                              r.stderr)
    return r.stdout


def write_corpus(path):
    with open(path, "w") as f:
        for d in range(8):
            for s in range(6):
                f.write("the %s %s and the %s %s quickly.\n" % (A[(d + s) % 6], B[(d * s) % 6], A[(s + 3) % 6],
                                                               B[(d + 1) % 6]))
            f.write("\n")


def write_labelled(path):
    with open(path, "w") as f:
        f.write("label\ttext\n")
        for i in range(40):
            f.write("%s\tthe %s %s %d times\n" % ("pos" if i % 2 else "neg", A[1] if i % 2 else A[3 + i % 3],
                                                 B[i % 6], i))


QUESTIONS = [("who runs in the park?", "the cat runs in the park and the dog sleeps in the house."),
             ("where does the dog sleep?", "the cat runs in the park and the dog sleeps in the house."),
             ("what does the bird eat?", "the bird eats seeds every morning while the fish swims.")]


def write_squad(path):
    paras = []
    for i, (q, c) in enumerate(QUESTIONS):
        ans = {"who runs in the park?": "the cat", "where does the dog sleep?": "in the house",
               "what does the bird eat?": "seeds"}[q]
        paras.append({"context": c, "qas": [{"id": "q%d" % i, "question": q,
                                            "answers": [{"text": ans, "answer_start": c.index(ans)}]}]})
    with open(path, "w") as f:
        json.dump({"version": "1.1", "data": [{"title": "t", "paragraphs": paras}]}, f)


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("tessera_py")
    write_corpus(d / "corpus.txt")
    write_labelled(d / "data.tsv")
    write_squad(d / "squad.json")
    return d


@pytest.fixture(scope="session")
def pre(work):
    run_cli("vocab", "--out", work / "vocab.txt", "--size", "120", work / "corpus.txt")
    run_cli("pretrain", "--vocab", work / "vocab.txt", "--corpus", work / "corpus.txt", "--out", work / "pre",
            "--layers", "1", "--hidden", "32", "--heads", "2", "--intermediate", "64", "--max-len", "64",
            "--batch", "4", "--max-steps", "3", "--threads", THREADS)
    return work / "pre"


@pytest.fixture(scope="session")
def ft(work, pre):
    run_cli("finetune", "--model", pre, "--train", work / "data.tsv", "--out", work / "ft", "--max-steps", "3",
            "--batch", "4", "--max-len", "32", "--threads", THREADS)
    return work / "ft"


@pytest.fixture(scope="session")
def qa(work, pre):
    run_cli("finetune", "--task", "qa", "--model", pre, "--train", work / "squad.json", "--out", work / "qa",
            "--max-len", "48", "--doc-stride", "16", "--max-query-len", "12", "--batch", "4", "--max-steps", "3",
            "--threads", THREADS)
    return work / "qa"
