# training.py — tessera.train(...): fine-tune a model directory, the run `tessera finetune` makes
# (task "classify": a sequence classifier on a TSV / CSV / JSONL file; task "qa": question
# answering on a SQuAD v1.1 file), as one call of the library's ts_finetune_run, the function the
# command calls, so the same options, seed and data give the same model, byte for byte. Each
# metrics row goes to OUT/metrics.jsonl (the library writes it) and to the callback.
import ctypes as C
import json

from ._abi import (TS_ERR_ARG, TS_FINETUNE_CLASSIFY, TS_FINETUNE_QA, TS_SQUAD_MAX_ANSWER_LEN, TS_SQUAD_N_BEST)
from ._lib import Error, FinetuneRunOpts, TextSink, b, fn, last_error

_finetune_run = fn("ts_finetune_run", C.c_int, C.POINTER(FinetuneRunOpts))
_TASKS = {"classify": TS_FINETUNE_CLASSIFY, "qa": TS_FINETUNE_QA}
NAME = b"tessera.train"


class _Rows:
    """The metrics sink: rows (a row may come in several pieces) parsed, kept and handed to the
    callback; an exception of the callback is kept to be raised after the run (C cannot unwind it)."""

    def __init__(self, callback):
        self.callback, self.rows, self.errors, self.pending = callback, [], [], ""
        self.sink = TextSink(self.write)

    def write(self, text):
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            if line.strip():
                row = json.loads(line)
                self.rows.append(row)
                try:
                    if self.callback:
                        self.callback(row)
                except Exception as e:
                    self.errors.append(e)


def train(model, train, out, *, task="classify", dev=None, epochs=3, batch=32, max_len=0, lr=1e-4, warmup=0.1,
          weight_decay=0.01, max_grad_norm=0.0, optimizer="adamw", momentum=0.0, max_steps=0, seed=42,
          split_seed=-1, test_split=0.2, test_every=1, text_column="text", text_b_column=None,
          label_column="label", truncate="head", doc_stride=0, max_query_len=0, n_best=TS_SQUAD_N_BEST,
          max_answer_len=TS_SQUAD_MAX_ANSWER_LEN, relocate_answers=False, threads=0, bf16=False, recompute=False,
          precision=None, pack=0, callback=None, verbose=True):
    """Fine-tune model directory `model` on file `train` into model directory `out`, with the
    options of `tessera finetune` (the same names with _ for -, the same defaults). task
    "classify": a labelled TSV / CSV / JSONL file; "qa": a SQuAD v1.1 JSON file (dev: scored
    after each epoch). callback(row) is called with each metrics row (a dict: step, loss, lr, ...,
    and the test rows); the rows are also written to OUT/metrics.jsonl. Returns the rows."""
    if task not in _TASKS:
        raise Error("task=%r: the tasks are classify and qa" % task, TS_ERR_ARG)
    qa = task == "qa"
    lines = TextSink((lambda s: print(s, end="", flush=True)) if verbose else (lambda s: None))
    errors, rows = TextSink(), _Rows(callback)
    o = FinetuneRunOpts(
        struct_size=C.sizeof(FinetuneRunOpts), name=NAME, out=lines.fn, err=errors.fn, metrics=rows.sink.fn,
        model_dir=b(model), train_file=b(train), eval_file=b(dev), out_dir=b(out), task=_TASKS[task],
        text_column=b(text_column), text_b_column=b(text_b_column), label_column=b(label_column),
        truncate=None if qa and truncate == "head" else b(truncate),  # the default: none for qa
        test_split=test_split, split_seed=split_seed, test_every=test_every, doc_stride=doc_stride,
        max_query_len=max_query_len, n_best=0 if n_best == TS_SQUAD_N_BEST else n_best,
        max_answer_len=0 if max_answer_len == TS_SQUAD_MAX_ANSWER_LEN else max_answer_len,
        relocate_answers=int(relocate_answers), optimizer=b(optimizer), lr=lr, warmup=warmup,
        weight_decay=weight_decay, max_grad_norm=max_grad_norm, momentum=momentum, epochs=epochs, batch=batch,
        max_len=max_len, max_steps=max_steps, seed=seed, threads=threads, bf16=int(bf16), recompute=int(recompute),
        precision=b(precision), pack=pack)
    status = _finetune_run(C.byref(o))
    if rows.errors:
        raise rows.errors[0]
    if status:
        message = errors.text().strip() or (last_error() or b"").decode("utf-8", "replace")
        raise Error(message or "fine-tuning failed", status)
    return rows.rows
