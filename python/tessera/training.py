# training.py — tessera.train(...): fine-tune a model directory, the run `tessera finetune` makes
# (task "classify": a sequence classifier on a TSV / CSV / JSONL file; task "qa": question
# answering on a SQuAD v1.1 file), through the same library calls in the same order (the rows or
# windows read, ts_bert_train_programs, ts_program_load, ts_classify_task_new or
# ts_squad_task_new, ts_train_epochs, ts_model_save_dir), so the same options, seed and data give
# the same model, byte for byte. Each metrics row goes to OUT/metrics.jsonl and to the callback.
import ctypes as C
import json
import os

from ._abi import (TS_BERT_QUESTION_ANSWERING, TS_BERT_SEQ_CLASSIFICATION, TS_BF16, TS_ERR_ARG, TS_ERR_IO, TS_F32,
                   TS_OPTIM_ADAMW, TS_OPTIM_LAMB, TS_OPTIM_SGD, TS_SQUAD_MAX_ANSWER_LEN, TS_SQUAD_N_BEST)
from ._lib import (CP, P, ClassifyRowsOpts, EpochTask, EpochsOpts, Error, FinetuneTaskOpts, SAVE_FN, CKPT_FN,
                   SquadOpts, TextOpts, TextSink, WRITE_FN, b, check, checked, fn, last_status, strings)
from .bert import ModelDir, bert_programs, save_dir

_rows_load = fn("ts_classify_rows_load", C.c_int, C.POINTER(ClassifyRowsOpts), C.POINTER(P), C.POINTER(P))
_ds_free = fn("ts_text_dataset_free", None, P)
_ds_nlabels = fn("ts_text_dataset_num_labels", C.c_int, P)
_ds_label = fn("ts_text_dataset_label_name", CP, P, C.c_int)
_trunc_apply = fn("ts_truncation_apply", None, P, C.c_int, C.c_int)
_trunc_parse = fn("ts_truncation_parse", C.c_int, CP)
_squad_load = fn("ts_squad_load_checked", P, CP, P, C.POINTER(SquadOpts), C.c_int, CP, CP, WRITE_FN, P)
_squad_free = fn("ts_squad_free", None, P)
_squad_stride = fn("ts_squad_default_stride", C.c_int, C.c_int)
_squad_query = fn("ts_squad_default_query", C.c_int, C.c_int)
_cls_task = fn("ts_classify_task_new", P, C.POINTER(FinetuneTaskOpts), C.POINTER(EpochTask))
_qa_task = fn("ts_squad_task_new", P, C.POINTER(FinetuneTaskOpts), C.POINTER(EpochTask))
_task_free = fn("ts_finetune_task_free", None, P)
_train_epochs = fn("ts_train_epochs", C.c_int, C.POINTER(EpochsOpts), C.POINTER(EpochTask), C.c_int64)
_make_dirs = fn("ts_make_dirs", C.c_int, CP)
_OPTIM = {"sgd": TS_OPTIM_SGD, "adamw": TS_OPTIM_ADAMW, "lamb": TS_OPTIM_LAMB}
NAME = b"tessera.train"


class _Run:
    """One fine-tuning run: what the library's task borrows (kept alive here) and frees at the end."""

    def __init__(self, a):
        self.a, self.rows, self.errors = a, [], []
        self.out = TextSink((lambda s: print(s, end="", flush=True)) if a["verbose"] else (lambda s: None))
        self.err = TextSink()
        self.data, self.test, self.task = None, None, None
        self.free_data = _ds_free if a["task"] == "classify" else _squad_free

    def close(self):
        _task_free(self.task)
        self.free_data(self.data)
        self.free_data(self.test)

    def fail(self, status, what):
        raise Error(self.err.text().strip() or what, status)


def train(model, train, out, *, task="classify", dev=None, epochs=3, batch=32, max_len=0, lr=1e-4, warmup=0.1,
          weight_decay=0.01, max_grad_norm=0.0, optimizer="adamw", momentum=0.0, max_steps=0, seed=42,
          split_seed=-1, test_split=0.2, test_every=1, text_column="text", text_b_column=None,
          label_column="label", truncate="head", doc_stride=0, max_query_len=0, n_best=TS_SQUAD_N_BEST,
          max_answer_len=TS_SQUAD_MAX_ANSWER_LEN, relocate_answers=False, threads=0, bf16=False, recompute=False,
          callback=None, verbose=True):
    """Fine-tune model directory `model` on file `train` into model directory `out`, with the
    options of `tessera finetune` (the same names with _ for -, the same defaults). task
    "classify": a labelled TSV / CSV / JSONL file; "qa": a SQuAD v1.1 JSON file (dev: scored
    after each epoch). callback(row) is called with each metrics row (a dict: step, loss, lr, ...,
    and the test rows); the rows are also written to OUT/metrics.jsonl. Returns the rows."""
    if task not in ("classify", "qa"):
        raise Error("task=%r: the tasks are classify and qa" % task, TS_ERR_ARG)
    r = _Run(dict(locals(), task=task))
    try:
        md = ModelDir(model)
        r.md, r.cfg, r.tok = md, md.config, md.tokenizer
        (_classify_data if task == "classify" else _squad_data)(r)
        head = TS_BERT_SEQ_CLASSIFICATION if task == "classify" else TS_BERT_QUESTION_ANSWERING
        r.cfg.head = head
        r.cfg.compute_dtype = TS_BF16 if bf16 else TS_F32
        r.cfg.recompute = int(recompute)
        fetches = ("logits",) if task == "classify" else ("start_logits", "end_logits")
        r.tp, r.ip = bert_programs(r.cfg, head, batch, r.seq, seed=seed, threads=threads, train=True,
                                   weight_decay=weight_decay, optimizer=_OPTIM[optimizer],
                                   max_grad_norm=max_grad_norm, momentum=momentum, infer_fetches=fetches)
        missing = r.tp.load(os.path.join(model, "model.safetensors"))
        if missing == len(r.tp.param_names()):
            raise Error("%s/model.safetensors holds none of the model's parameters" % model, TS_ERR_ARG)
        check(_make_dirs(b(out)))
        return _epochs(r)
    finally:
        r.close()


def _classify_data(r):
    """The rows (deduplicated, split or from dev), the labels and the row length."""
    a = r.a
    truncation = _trunc_parse(b(a["truncate"]))
    if truncation < 0:
        raise Error("truncate=%r: expected head, tail or head+tail" % a["truncate"], TS_ERR_ARG)
    ro = ClassifyRowsOpts(struct_size=C.sizeof(ClassifyRowsOpts), name=NAME, out=r.out.fn, err=r.err.fn,
                          train=b(a["train"]), dev=b(a["dev"]), test_split=a["test_split"],
                          split_seed=a["split_seed"] if a["split_seed"] >= 0 else a["seed"],
                          text=TextOpts(text_column=b(a["text_column"]), text_b_column=b(a["text_b_column"]),
                                        label_column=b(a["label_column"])))
    tr, te = P(), P()
    st = _rows_load(C.byref(ro), C.byref(tr), C.byref(te))
    r.data, r.test = tr.value, te.value
    if st:
        r.fail(st, "reading the data failed")
    positions = r.cfg.max_position_embeddings
    r.seq = a["max_len"] or min(128, positions)
    if r.seq > positions:
        raise Error("max_len %d exceeds the model's %d positions" % (r.seq, positions), TS_ERR_ARG)
    r.labels = [_ds_label(r.data, i).decode() for i in range(_ds_nlabels(r.data))]
    r.meta = dict(r.md.meta, max_len=r.seq, truncation=truncation, text_b_column=a["text_b_column"],
                  labels=r.labels)
    _trunc_apply(r.tok.handle, truncation, r.seq)
    r.cfg.num_labels = len(r.labels)


def _squad_data(r):
    """The SQuAD files read into windows, and the row length."""
    a = r.a
    positions = r.cfg.max_position_embeddings
    r.seq = a["max_len"] or min(384, positions)
    if r.seq > positions:
        raise Error("max_len %d exceeds the model's %d positions" % (r.seq, positions), TS_ERR_ARG)
    so = SquadOpts(struct_size=C.sizeof(SquadOpts), max_seq_len=r.seq,
                   doc_stride=a["doc_stride"] or _squad_stride(r.seq),
                   max_query_len=a["max_query_len"] or _squad_query(r.seq),
                   relocate_answers=int(a["relocate_answers"]))
    if r.seq - so.max_query_len - 3 < 1:
        raise Error("max_len %d leaves no room for context after max_query_len %d" % (r.seq, so.max_query_len),
                    TS_ERR_ARG)
    for attr, flag in (("data", "train"), ("test", "dev")):
        if a[flag]:
            s = _squad_load(b(a[flag]), r.tok.handle, C.byref(so), 1, NAME, b("--" + flag), r.err.fn, None)
            if not s:
                r.fail(last_status() or TS_ERR_IO, "reading %s failed" % a[flag])
            setattr(r, attr, s)
    r.labels = []
    r.meta = {"max_len": r.seq, "lowercase": r.md.meta["lowercase"], "doc_stride": so.doc_stride,
              "max_query_len": so.max_query_len}


def _epochs(r):
    """The task and ts_train_epochs over it; the metrics rows."""
    a = r.a
    mfile = open(os.path.join(a["out"], "metrics.jsonl"), "w")

    def on_row(text):
        mfile.write(text)
        mfile.flush()
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                r.rows.append(row)
                try:
                    if a["callback"]:
                        a["callback"](row)
                except Exception as e:  # raised again after the run (C cannot unwind it)
                    r.errors.append(e)

    def save(ctx):
        try:
            save_dir(a["out"], r.tp, r.cfg, os.path.join(a["model"], "vocab.txt"), r.meta)
            return 0
        except Error as e:
            r.errors.append(e)
            return 1

    sink_m = TextSink(on_row)
    save_fn, ckpt_fn = SAVE_FN(save), CKPT_FN(lambda ctx, step: 0)
    labels, _ = strings(r.labels)
    common = dict(name=NAME, out=r.out.fn, err=r.err.fn, metrics=sink_m.fn)
    to = FinetuneTaskOpts(struct_size=C.sizeof(FinetuneTaskOpts), train=r.tp.handle, infer=r.ip.handle,
                          batch=a["batch"], seq=r.seq, slices=1, out_dir=b(a["out"]), tok=r.tok.handle,
                          test_every=a["test_every"], labels=labels, n_best=a["n_best"],
                          max_answer_len=a["max_answer_len"], save=save_fn, checkpoint=ckpt_fn, **common)
    if a["task"] == "classify":
        to.train_rows, to.test_rows = r.data, r.test
    else:
        to.squad_train, to.squad_dev = r.data, r.test
    t = EpochTask()
    r.task = checked((_cls_task if a["task"] == "classify" else _qa_task)(C.byref(to), C.byref(t)))
    eo = EpochsOpts(struct_size=C.sizeof(EpochsOpts), batch=a["batch"], accumulation=1, device_iterations=1,
                    epochs=a["epochs"], max_steps=a["max_steps"], seed=a["seed"], lr=a["lr"], warmup=a["warmup"],
                    out_dir=b(a["out"]), **common)
    try:
        st = _train_epochs(C.byref(eo), C.byref(t), 0)
    finally:
        mfile.close()
    if r.errors:
        raise r.errors[0]
    if st:
        r.fail(st, "training failed")
    return r.rows
