# training.py — tessera.train(...): fine-tune a model directory as a sequence classifier, the run
# `tessera finetune --task classify` makes, through the same library calls in the same order
# (ts_classify_rows_load, ts_bert_train_programs, ts_program_load, ts_classify_task_new,
# ts_train_epochs, ts_model_save_dir), so the same options, seed and data give the same model,
# byte for byte. Each step's metrics row goes to OUT/metrics.jsonl and to the callback.
import ctypes as C
import json
import os

from ._lib import (CP, P, ClassifyRowsOpts, EpochTask, EpochsOpts, Error, FinetuneTaskOpts, SAVE_FN, CKPT_FN,
                   TextOpts, TextSink, b, check, checked, fn, strings)
from .bert import SEQ_CLASSIFICATION, ModelDir, bert_programs, save_dir

_rows_load = fn("ts_classify_rows_load", C.c_int, C.POINTER(ClassifyRowsOpts), C.POINTER(P), C.POINTER(P))
_ds_free = fn("ts_text_dataset_free", None, P)
_ds_size = fn("ts_text_dataset_size", C.c_int64, P)
_ds_nlabels = fn("ts_text_dataset_num_labels", C.c_int, P)
_ds_label = fn("ts_text_dataset_label_name", CP, P, C.c_int)
_trunc_apply = fn("ts_truncation_apply", None, P, C.c_int, C.c_int)
_trunc_parse = fn("ts_truncation_parse", C.c_int, CP)
_task_new = fn("ts_classify_task_new", P, C.POINTER(FinetuneTaskOpts), C.POINTER(EpochTask))
_task_free = fn("ts_finetune_task_free", None, P)
_train_epochs = fn("ts_train_epochs", C.c_int, C.POINTER(EpochsOpts), C.POINTER(EpochTask), C.c_int64)
_make_dirs = fn("ts_make_dirs", C.c_int, CP)
_OPTIM = {"sgd": 0, "adamw": 1, "lamb": 2}


def _log_sink(verbose):
    return TextSink((lambda s: print(s, end="", flush=True)) if verbose else (lambda s: None))


def train(model, train, out, *, dev=None, epochs=3, batch=32, max_len=0, lr=1e-4, warmup=0.1,
          weight_decay=0.01, max_grad_norm=0.0, optimizer="adamw", momentum=0.0, max_steps=0, seed=42,
          split_seed=-1, test_split=0.2, test_every=1, text_column="text", text_b_column=None,
          label_column="label", truncate="head", threads=0, bf16=False, recompute=False,
          callback=None, verbose=True):
    """Fine-tune model directory `model` on the labelled file `train` (TSV / CSV / JSONL) into
    model directory `out`, with the options of `tessera finetune` (same names, same defaults).
    callback(row) is called with each metrics row (a dict: step, loss, lr, ... and the test
    accuracy rows); the rows are also appended to OUT/metrics.jsonl. Returns the rows."""
    md = ModelDir(model)
    cfg, tok = md.config, md.tokenizer
    truncation = _trunc_parse(b(truncate))
    if truncation < 0:
        raise Error("truncate=%r: expected head, tail or head+tail" % truncate, 1)
    sink_out, sink_err = _log_sink(verbose), TextSink()
    ro = ClassifyRowsOpts(struct_size=C.sizeof(ClassifyRowsOpts), name=b"tessera.train", out=sink_out.fn,
                          err=sink_err.fn, train=b(train), dev=b(dev), test_split=test_split,
                          split_seed=split_seed if split_seed >= 0 else seed,
                          text=TextOpts(text_column=b(text_column), text_b_column=b(text_b_column),
                                        label_column=b(label_column)))
    tr, te = P(), P()
    st = _rows_load(C.byref(ro), C.byref(tr), C.byref(te))
    held = {"tr": tr.value, "te": te.value, "task": None}
    try:
        if st:
            raise Error(sink_err.text().strip() or "reading the data failed", st)
        seq = max_len or min(128, cfg.max_position_embeddings)
        if seq > cfg.max_position_embeddings:
            raise Error("max_len %d exceeds the model's %d positions" % (seq, cfg.max_position_embeddings), 1)
        nl = _ds_nlabels(tr.value)
        labels = [_ds_label(tr.value, i).decode() for i in range(nl)]
        meta = dict(md.meta, max_len=seq, truncation=truncation, text_b_column=text_b_column, labels=labels,
                    nlabels=nl)
        _trunc_apply(tok.handle, truncation, seq)
        cfg.num_labels, cfg.head = nl, SEQ_CLASSIFICATION
        cfg.compute_dtype = 1 if bf16 else 0
        cfg.recompute = int(recompute)
        tp, ip = bert_programs(cfg, SEQ_CLASSIFICATION, batch, seq, seed=seed, threads=threads, train=True,
                               weight_decay=weight_decay, optimizer=_OPTIM[optimizer], max_grad_norm=max_grad_norm,
                               momentum=momentum)
        missing = tp.load(os.path.join(model, "model.safetensors"))
        if missing == len(tp.param_names()):
            raise Error("%s/model.safetensors holds none of the model's parameters" % model, 1)
        check(_make_dirs(b(out)))
        return _run(locals(), held)
    finally:
        _task_free(held["task"])
        _ds_free(held["tr"])
        _ds_free(held["te"])


def _run(a, held):
    """The epochs of train() (a: its locals), with the task and the loop's options."""
    rows, mfile = [], open(os.path.join(a["out"], "metrics.jsonl"), "w")

    def on_row(text):
        mfile.write(text)
        mfile.flush()
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                rows.append(row)
                if a["callback"]:
                    a["callback"](row)

    sink_m, tp, ip = TextSink(on_row), a["tp"], a["ip"]
    vocab = os.path.join(a["model"], "vocab.txt")
    errors = []

    def save(ctx):
        try:
            save_dir(a["out"], tp, a["cfg"], vocab, a["meta"])
            return 0
        except Error as e:
            errors.append(e)
            return 1

    save_fn, ckpt_fn = SAVE_FN(save), CKPT_FN(lambda ctx, step: 0)
    labels, _ = strings(a["labels"])
    common = dict(name=b"tessera.train", out=a["sink_out"].fn, err=a["sink_err"].fn, metrics=sink_m.fn)
    to = FinetuneTaskOpts(struct_size=C.sizeof(FinetuneTaskOpts), train=tp.handle, infer=ip.handle,
                          batch=a["batch"], seq=a["seq"], slices=1, out_dir=b(a["out"]), tok=a["tok"].handle,
                          train_rows=held["tr"], test_rows=held["te"], test_every=a["test_every"], labels=labels,
                          n_best=20, max_answer_len=30, save=save_fn, checkpoint=ckpt_fn, **common)
    t = EpochTask()
    held["task"] = checked(_task_new(C.byref(to), C.byref(t)))
    eo = EpochsOpts(struct_size=C.sizeof(EpochsOpts), batch=a["batch"], accumulation=1, device_iterations=1,
                    epochs=a["epochs"], max_steps=a["max_steps"], seed=a["seed"], lr=a["lr"], warmup=a["warmup"],
                    out_dir=b(a["out"]), **common)
    try:
        st = _train_epochs(C.byref(eo), C.byref(t), 0)
    finally:
        mfile.close()
    if errors:
        raise errors[0]
    if st:
        raise Error(a["sink_err"].text().strip() or "training failed", st)
    return rows
