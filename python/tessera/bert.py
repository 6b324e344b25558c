# bert.py — BERT model directories (Hugging Face layout: config.json, model.safetensors,
# vocab.txt) for inference, through the calls `tessera run` and `tessera predict` make:
#   Classifier.load(DIR).predict(texts)         a sequence classifier's labels and scores, as Hugging
#                                               Face's text-classification pipeline gives them
#   pipeline("text-classification", model=DIR)  the same as Hugging Face's pipeline() call
#   QuestionAnswering.load(DIR).predict(pairs)  a SQuAD-style model's answer spans
#   Model.load(DIR).run(input_ids, ...)         every output of the model's head, by name
# and config/meta reading and model-directory writing (load_dir, save_dir).
import ctypes as C
import json
import os

import numpy as np

from . import _tensor as T
from ._abi import (TS_BERT_QUESTION_ANSWERING, TS_BERT_SEQ_CLASSIFICATION, TS_ERR_ARG, TS_ERR_DTYPE, TS_ERR_NOMEM,
                   TS_ERR_SHAPE, TS_OPTIM_ADAMW, TS_SQUAD_MAX_ANSWER_LEN, TS_SQUAD_N_BEST, TS_TRUNC_HEAD)
from ._lib import (CP, P, BatchBuf, BertConfig, BertInferOpts, BertTrainOpts, Error, ModelMeta, TextSink, b, check,
                   checked, fn, strings)
from .program import Program
from .text import Tokenizer, meta_free, model_load_dir

INFER_MAX_FETCHES = 7  # ts_bert_infer_build names at most 7 outputs
_TOP1 = object()  # predict's top_k when not given: the best label alone, as a dict (not a list)
_train_programs = fn("ts_bert_train_programs", C.c_int, C.POINTER(BertTrainOpts), C.POINTER(P), C.POINTER(P))
_config_load = fn("ts_bert_config_load", C.c_int, CP, C.POINTER(BertConfig))
_config_default = fn("ts_bert_config_default", None, C.POINTER(BertConfig))
_config_inference = fn("ts_bert_config_inference", None, C.POINTER(BertConfig), C.c_int)
_infer_build = fn("ts_bert_infer_build", C.c_int, C.POINTER(BertInferOpts), C.POINTER(P), C.POINTER(CP),
                  C.POINTER(C.c_int), C.POINTER(C.c_double))
_run_batch = fn("ts_bert_run_batch", C.c_int, P, C.POINTER(P), C.c_int, C.c_int, C.POINTER(CP), C.POINTER(P),
                C.POINTER(C.c_double), C.POINTER(C.c_double))
_bb_init = fn("ts_batch_buf_init", C.c_int, C.POINTER(BatchBuf), C.c_int, C.c_int, C.c_int)
_bb_free = fn("ts_batch_buf_free", None, C.POINTER(BatchBuf))
_add_probs = fn("ts_classify_texts_add_probs", C.c_int, P, C.POINTER(BatchBuf), P, C.POINTER(CP), C.c_int,
                C.c_int, C.c_int, C.POINTER(C.c_double))
_squad_jsonl = fn("ts_squad_parse_jsonl", P, CP, CP, C.c_size_t, P, C.c_void_p)
_squad_free = fn("ts_squad_free", None, P)
_squad_n = fn("ts_squad_num_examples", C.c_int64, P)
_squad_logits = fn("ts_squad_logits", C.c_int, P, P, C.c_int, C.c_int, C.POINTER(C.c_void_p),
                   C.POINTER(C.c_void_p))
_squad_answer = fn("ts_squad_answer", C.c_void_p, P, C.c_int64, C.c_void_p, C.c_void_p, C.c_int, C.c_int)
_squad_stride = fn("ts_squad_default_stride", C.c_int, C.c_int)
_squad_query = fn("ts_squad_default_query", C.c_int, C.c_int)
_save_dir = fn("ts_model_save_dir", C.c_int, CP, P, C.POINTER(BertConfig), CP, C.POINTER(ModelMeta))
_libc_free = C.CDLL(None).free
_libc_free.argtypes = [C.c_void_p]


class ModelDir:
    """A model directory read: .config (the ts_bert_config struct), .meta (a dict: max_len,
    lowercase, labels, text_b_column, doc_stride, max_query_len, truncation), .tokenizer."""

    def __init__(self, directory):
        self.path = directory
        self.config = BertConfig(struct_size=C.sizeof(BertConfig))
        m = ModelMeta()
        tok = checked(model_load_dir(b(directory), C.byref(self.config), C.byref(m)))
        self.meta = {"max_len": m.max_len, "lowercase": m.lowercase, "doc_stride": m.doc_stride,
                     "max_query_len": m.max_query_len, "truncation": m.truncation,
                     "labels": [m.labels[i].decode() for i in range(m.nlabels)] if m.labels else [],
                     "text_b_column": m.text_b_column.decode() if m.text_b_column else None}
        meta_free(C.byref(m))
        self.tokenizer = Tokenizer(tok, self.meta["max_len"] or self.config.max_position_embeddings)


def load_dir(directory):
    return ModelDir(directory)


def meta_struct(meta, keep):
    """A ModelMeta from a dict; keep holds what its pointers point to."""
    labels, n = strings(meta.get("labels"))
    keep.append(labels)
    return ModelMeta(max_len=meta.get("max_len", 0), lowercase=meta.get("lowercase", 1), labels=labels, nlabels=n,
                     text_b_column=b(meta.get("text_b_column")), doc_stride=meta.get("doc_stride", 0),
                     max_query_len=meta.get("max_query_len", 0), truncation=meta.get("truncation", TS_TRUNC_HEAD))


def save_dir(directory, program, config, vocab_path, meta=None):
    """Write DIR/model.safetensors, vocab.txt (a copy of vocab_path) and config.json (from
    config, a ts_bert_config, and meta, a dict as ModelDir.meta)."""
    keep = []
    m = meta_struct(meta, keep) if meta else None
    check(_save_dir(b(directory), program.handle, C.byref(config), b(vocab_path), C.byref(m) if m else None))


def bert_programs(config, head, batch, seq, seed=0, threads=0, train=False, weight_decay=0.0, optimizer=TS_OPTIM_ADAMW,
                  max_grad_norm=0.0, momentum=0.0, train_fetches=("loss",), infer_fetches=("logits",)):
    """ts_bert_train_programs: (training program or None, inference program)."""
    cfg = BertConfig.from_buffer_copy(config)
    tf, ntf = strings(train_fetches if train else ())
    inf, nif = strings(infer_fetches)
    o = BertTrainOpts(struct_size=C.sizeof(BertTrainOpts), cfg=C.pointer(cfg), head=head, batch=batch, seq=seq,
                      seed=seed, threads=threads, infer_threads=threads, optimizer=optimizer,
                      weight_decay=weight_decay, max_grad_norm=max_grad_norm, momentum=momentum, accumulation=1,
                      steps_per_call=1, train_fetches=tf, infer_fetches=inf, ntrain_fetches=ntf,
                      ninfer_fetches=nif, skip_param_init=int(not train))
    tp, ip = P(), P()
    check(_train_programs(C.byref(o), C.byref(tp) if train else None, C.byref(ip)))
    return (Program(tp.value, train_fetches) if train else None), Program(ip.value, infer_fetches)


def _infer_program(md, head, batch, fetches, threads):
    if md.config.head != head:
        raise Error("%s is not a %s model (architecture '%s')" % (
            md.path, "sequence classification" if head == TS_BERT_SEQ_CLASSIFICATION else "question-answering",
            md.config.architecture.decode()), TS_ERR_ARG)
    _, p = bert_programs(md.config, head, batch, md.meta["max_len"], threads=threads, infer_fetches=fetches)
    p.load(os.path.join(md.path, "model.safetensors"), strict=True)
    return p


class Classifier:
    """A fine-tuned sequence classifier (BertForSequenceClassification) of a model directory,
    predicting as `tessera predict` does (batches of `batch` texts padded to the model's length)."""

    def __init__(self, md, program, batch):
        self.dir, self.program, self.batch = md, program, batch
        self.labels = md.meta["labels"]
        self.pairs = md.meta["text_b_column"] is not None
        self._bb = BatchBuf()
        if not _bb_init(C.byref(self._bb), batch, md.meta["max_len"], 0):
            raise Error("out of memory for a batch of %d x %d tokens" % (batch, md.meta["max_len"]), TS_ERR_NOMEM)

    @classmethod
    def load(cls, directory, batch=8, threads=0):
        md = ModelDir(directory)
        return cls(md, _infer_program(md, TS_BERT_SEQ_CLASSIFICATION, batch, ("logits",), threads), batch)

    def __del__(self):
        if getattr(self, "_bb", None) is not None:
            _bb_free(C.byref(self._bb))
            self._bb = None

    def _texts(self, texts):
        """texts (one text, or a list of them) as a list of C strings, and whether one was given.
        A text is a str; for a text-pair classifier also a (text, text_b) pair, a {"text",
        "text_pair"} dict (as Hugging Face's pipeline takes) or "text<TAB>text_b"."""
        one = isinstance(texts, (str, dict))
        items = [texts] if one else texts
        if not isinstance(items, (list, tuple)):
            raise Error("texts must be a str or a list of them, not %s" % type(texts).__name__, TS_ERR_DTYPE)
        out = []
        for i, t in enumerate(items):
            if isinstance(t, dict) and isinstance(t.get("text"), str):
                t = (t["text"], t["text_pair"]) if t.get("text_pair") is not None else t["text"]
            if isinstance(t, (tuple, list)) and len(t) == 2 and all(isinstance(x, str) for x in t):
                t = "\t".join(t)
            if not isinstance(t, str):
                raise Error("text %d is %s (%.60r), not a str%s" % (i, type(t).__name__, t, (
                    " or a (text, text_b) pair" if self.pairs else "")), TS_ERR_DTYPE)
            out.append(b(t))
        return out, one

    def predict_proba(self, texts):
        """Class probabilities [n, labels] (float64): the softmax of the logits, a row per text
        (a lone str counts as one text). A text-pair classifier takes (text, text_b) tuples or
        "text<TAB>text_b" strings. tessera.DtypeError (a TypeError) for a text that is not one."""
        return self._probs(self._texts(texts)[0])

    def _probs(self, texts):
        """predict_proba of texts checked by _texts."""
        nl = len(self.labels)
        out = np.zeros((len(texts), nl), np.float64)
        for s in range(0, len(texts), self.batch):
            chunk = texts[s:s + self.batch]
            arr = (CP * len(chunk))(*chunk)
            probs = np.zeros((len(chunk), nl), np.float64)
            check(_add_probs(self.program.handle, C.byref(self._bb), self.dir.tokenizer.handle, arr, len(chunk),
                             int(self.pairs), nl, probs.ctypes.data_as(C.POINTER(C.c_double))))
            out[s:s + len(chunk)] = probs
        return out

    def predict(self, texts, top_k=_TOP1):
        """Labels and scores as Hugging Face's text-classification pipeline returns them (the score:
        the label's softmax probability):
          predict("a text")              [{"label": "pos", "score": 0.93}]
          predict(["text 1", "text 2"])  [{"label", "score"}, {"label", "score"}]: one dict a text
          predict("a text", top_k=k)     the k best labels' dicts, best first (top_k=None: all)
          predict([...], top_k=k)        such a list for each text.
        As in transformers, passing top_k at all (even top_k=1) gives the lists. A text that is
        not a str (nor a pair, for a pair classifier) is tessera.DtypeError (a TypeError) naming
        its index and type."""
        texts, one = self._texts(texts)
        probs = self._probs(texts)
        if top_k is _TOP1:  # a list either way: of one dict for one text
            return [{"label": self.labels[int(np.argmax(r))], "score": float(r.max())} for r in probs]
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
            raise Error("top_k must be a positive int or None (every label), not %r" % (top_k,), TS_ERR_ARG)
        k = len(self.labels) if top_k is None else min(top_k, len(self.labels))
        ranked = [[{"label": self.labels[j], "score": float(r[j])} for j in np.argsort(-r, kind="stable")[:k]]
                  for r in probs]
        return ranked[0] if one else ranked


class TextClassificationPipeline:
    """What pipeline("text-classification", model=DIR) returns: pipe(texts, top_k=...) is
    Classifier.predict (Hugging Face's pipeline's results); .model is the Classifier."""

    task = "text-classification"

    def __init__(self, classifier):
        self.model = classifier

    def __call__(self, texts, top_k=_TOP1):
        return self.model.predict(texts, top_k=top_k)


PIPELINE_TASKS = {"text-classification": TextClassificationPipeline, "sentiment-analysis": TextClassificationPipeline}


def pipeline(task, model, batch=8, threads=0):
    """Hugging Face's pipeline(task, model=...) over a tessera model directory: task
    "text-classification" (or its alias "sentiment-analysis") and model a directory of a
    fine-tuned sequence classifier (tessera finetune's output). tessera.InvalidArgument (a
    ValueError) for another task."""
    if task not in PIPELINE_TASKS:
        raise Error("pipeline: task '%s' is not supported (supported: %s)" % (task, ", ".join(PIPELINE_TASKS)),
                    TS_ERR_ARG)
    return PIPELINE_TASKS[task](Classifier.load(model, batch=batch, threads=threads))


class QuestionAnswering:
    """A fine-tuned question-answering model (BertForQuestionAnswering) of a model directory,
    answering as `tessera predict` does (run_squad's windows and n-best decoding)."""

    def __init__(self, md, program, batch, n_best, max_answer_len):
        self.dir, self.program, self.batch = md, program, batch
        self.n_best, self.max_answer_len = n_best, max_answer_len

    @classmethod
    def load(cls, directory, batch=8, threads=0, n_best=TS_SQUAD_N_BEST, max_answer_len=TS_SQUAD_MAX_ANSWER_LEN):
        md = ModelDir(directory)
        p = _infer_program(md, TS_BERT_QUESTION_ANSWERING, batch, ("start_logits", "end_logits"), threads)
        return cls(md, p, batch, n_best, max_answer_len)

    def predict(self, questions):
        """The answer text of each question: a list of {"question", "context"} dicts or
        (question, context) pairs."""
        rows = [q if isinstance(q, dict) else {"question": q[0], "context": q[1]} for q in questions]
        if not rows:
            return []
        text = "".join(json.dumps({"question": r["question"], "context": r["context"]}) + "\n" for r in rows)
        raw = text.encode("utf-8")
        seq, meta = self.dir.meta["max_len"], self.dir.meta
        from ._lib import SquadOpts
        so = SquadOpts(struct_size=C.sizeof(SquadOpts), max_seq_len=seq,
                       doc_stride=meta["doc_stride"] or _squad_stride(seq),
                       max_query_len=meta["max_query_len"] or _squad_query(seq), relocate_answers=1)
        s = checked(_squad_jsonl(b"questions", raw, len(raw), self.dir.tokenizer.handle, C.byref(so)))
        st, en = C.c_void_p(), C.c_void_p()
        try:
            check(_squad_logits(self.program.handle, s, self.batch, seq, C.byref(st), C.byref(en)))
            answers = []
            for i in range(_squad_n(s)):
                a = _squad_answer(s, i, st, en, self.n_best, self.max_answer_len)
                if not a:
                    raise Error("out of memory", TS_ERR_NOMEM)
                answers.append(C.string_at(a).decode("utf-8", "replace"))
                _libc_free(a)
            return answers
        finally:
            _libc_free(st.value)
            _libc_free(en.value)
            _squad_free(s)


class Model:
    """A BERT model directory run on whole batches as `tessera run` does: Model.load(DIR).run(
    input_ids, token_type_ids, attention_mask) -> {output name: float32 array}. A program is
    built and compiled per batch shape."""

    def __init__(self, directory, dtype="f32", device="cpu", threads=0):
        self.path, self.device, self.threads = directory, device, threads
        self.config_path = os.path.join(directory, "config.json")
        self.config = BertConfig(struct_size=C.sizeof(BertConfig))
        _config_default(C.byref(self.config))
        check(_config_load(b(self.config_path), C.byref(self.config)))
        _config_inference(C.byref(self.config), T.dtype_code(dtype))
        self._programs = {}

    load = classmethod(lambda cls, directory, **kw: cls(directory, **kw))

    def _program(self, B, S):
        if (B, S) not in self._programs:
            sink = TextSink()
            o = BertInferOpts(struct_size=C.sizeof(BertInferOpts), cfg=C.pointer(self.config), batch=B, seq=S,
                              device=b(self.device), threads=self.threads,
                              weights=b(os.path.join(self.path, "model.safetensors")), name=b"tessera",
                              err=sink.fn, config_path=b(self.config_path), inputs=b"inputs")
            p, names, n, secs = P(), (CP * INFER_MAX_FETCHES)(), C.c_int(0), (C.c_double * 2)()
            st = _infer_build(C.byref(o), C.byref(p), names, C.byref(n), secs)
            if st:
                raise Error(sink.text().strip() or "building the model failed", st)
            self._programs[(B, S)] = (Program(p.value), [names[i] for i in range(n.value)])
        return self._programs[(B, S)]

    def run(self, input_ids, token_type_ids=None, attention_mask=None):
        ids = np.asarray(input_ids)
        if ids.ndim != 2:
            raise Error("input_ids must be [batch, seq], not %s" % (list(ids.shape),), TS_ERR_SHAPE)
        types = np.zeros_like(ids) if token_type_ids is None else np.asarray(token_type_ids)
        mask = np.ones_like(ids) if attention_mask is None else np.asarray(attention_mask)
        for name, a in (("token_type_ids", types), ("attention_mask", mask)):
            if a.shape != ids.shape:
                raise Error("%s is %s, input_ids %s" % (name, list(a.shape), list(ids.shape)), TS_ERR_SHAPE)
        p, names = self._program(*ids.shape)
        feeds = [T.Tensor(a, np.int32) for a in (ids, types, mask)]
        farr = (P * 3)(*[t.ptr for t in feeds])
        outs = (P * INFER_MAX_FETCHES)()
        check(_run_batch(p.handle, farr, 1, len(names), (CP * len(names))(*names), outs, None, None))
        return {names[i].decode(): T.to_numpy(outs[i]) for i in range(len(names))}
