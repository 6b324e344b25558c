# text.py — BERT's WordPiece tokenizer (ts_tokenizer): Tokenizer.from_dir(model dir) or
# Tokenizer.from_vocab(vocab.txt), tokenize, encode one text or a pair, and batch encoding with
# padding and truncation as Hugging Face's tokenizers return it (numpy int32 [B, T]).
import ctypes as C
import os

import numpy as np

from ._abi import TS_ERR_SHAPE
from ._lib import CP, P, BertConfig, Error, Handle, ModelMeta, b, check, checked, fn

I32P = C.POINTER(C.c_int32)
_load = fn("ts_tokenizer_load", P, CP, C.c_int)
_free = fn("ts_tokenizer_free", None, P)
_vocab_size = fn("ts_tokenizer_vocab_size", C.c_int, P)
_to_id = fn("ts_token_to_id", C.c_int32, P, CP)
_to_token = fn("ts_id_to_token", CP, P, C.c_int32)
_tokenize = fn("ts_tokenize", C.c_int, P, CP, I32P, C.c_int, C.POINTER(C.c_int))
_encode = fn("ts_encode", C.c_int, P, CP, CP, C.c_int, I32P, I32P, I32P, C.POINTER(C.c_int))
_encode_all = fn("ts_encode_all", C.c_int, P, CP, CP, C.POINTER(C.c_void_p), C.POINTER(C.c_int),
                 C.POINTER(C.c_int))
_libc_free = C.CDLL(None).free
_libc_free.argtypes = [C.c_void_p]
_set_trunc = fn("ts_tokenizer_set_truncation", None, P, C.c_int)
model_load_dir = fn("ts_model_load_dir", P, CP, C.POINTER(BertConfig), C.POINTER(ModelMeta))
meta_free = fn("ts_model_meta_free", None, C.POINTER(ModelMeta))


class Tokenizer(Handle):
    """A WordPiece tokenizer (id for id Hugging Face's BertWordPiece). max_len: the model's
    sequence length when loaded from a model directory."""

    def __init__(self, handle, max_len=512):
        self._h, self.max_len = handle, max_len

    @classmethod
    def from_vocab(cls, vocab_path, lowercase=True):
        return cls(checked(_load(b(vocab_path), int(lowercase))))

    @classmethod
    def from_dir(cls, directory):
        """The tokenizer of a model directory: its vocab.txt with config.json's case and cut;
        a directory with only a vocab.txt is read as uncased."""
        if not os.path.exists(os.path.join(directory, "config.json")):
            return cls.from_vocab(os.path.join(directory, "vocab.txt"))
        cfg, meta = BertConfig(struct_size=C.sizeof(BertConfig)), ModelMeta()
        h = checked(model_load_dir(b(directory), C.byref(cfg), C.byref(meta)))
        max_len = meta.max_len or cfg.max_position_embeddings
        meta_free(C.byref(meta))
        return cls(h, max_len)

    _what = "tokenizer"

    def _free_handle(self, h):
        _free(h)

    @property
    def vocab_size(self):
        return _vocab_size(self.handle)

    def token_to_id(self, token):
        return _to_id(self.handle, b(token))

    def id_to_token(self, i):
        t = _to_token(self.handle, int(i))
        return t.decode() if t is not None else None

    def tokenize_ids(self, text):
        """The wordpiece ids of text, without [CLS] / [SEP]."""
        n = C.c_int(0)
        cap = 4 * len(text.encode()) + 8
        buf = (C.c_int32 * cap)()
        check(_tokenize(self.handle, b(text), buf, cap, C.byref(n)))
        return list(buf[:n.value])

    def tokenize(self, text):
        return [self.id_to_token(i) for i in self.tokenize_ids(text)]

    def set_truncation(self, keep_head):
        """Where a text too long is cut: keep_head < 0 keeps its start, 0 its end, k > 0 its first
        k pieces and then its end (see ts_tokenizer_set_truncation)."""
        _set_trunc(self.handle, int(keep_head))

    def encode(self, text, text_b=None, max_len=None):
        """input_ids, token_type_ids, attention_mask (lists of max_len) and the real tokens' count."""
        T = int(max_len or self.max_len)
        ids, types, mask = (C.c_int32 * T)(), (C.c_int32 * T)(), (C.c_int32 * T)()
        n = C.c_int(0)
        check(_encode(self.handle, b(text), b(text_b), T, ids, types, mask, C.byref(n)))
        return list(ids), list(types), list(mask), n.value

    def length(self, text, text_b=None):
        """Tokens of [CLS] text [SEP] (text_b [SEP]) with nothing cut."""
        ids, cap, n = C.c_void_p(), C.c_int(0), C.c_int(0)
        try:
            check(_encode_all(self.handle, b(text), b(text_b), C.byref(ids), C.byref(cap), C.byref(n)))
            return n.value
        finally:
            _libc_free(ids.value)

    def __call__(self, texts, text_pairs=None, padding="longest", truncation=True, max_length=None):
        """Batch encoding as Hugging Face's tokenizers: {"input_ids", "token_type_ids",
        "attention_mask"} as int32 arrays [B, T]. padding "longest" (or True): T is the longest
        row; "max_length": T = max_length. truncation: rows are cut to max_length (default the
        model's length); without it a longer row is an error."""
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        pairs = [None] * len(texts) if text_pairs is None else ([text_pairs] if single else list(text_pairs))
        limit = int(max_length or self.max_len)
        full = [self.length(t, p) for t, p in zip(texts, pairs)]
        if not truncation and any(n > limit for n in full):
            raise Error("a text is %d tokens, more than max_length %d (truncation=False)" % (max(full), limit),
                        TS_ERR_SHAPE)
        T = limit if padding == "max_length" else min(limit, max(full or [2]))
        rows = [self.encode(t, p, T) for t, p in zip(texts, pairs)]
        out = {k: np.array([r[i] for r in rows], dtype=np.int32).reshape(len(rows), T)
               for i, k in enumerate(("input_ids", "token_type_ids", "attention_mask"))}
        return out
