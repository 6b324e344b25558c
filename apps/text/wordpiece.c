/*
 * wordpiece.c — text to ids: special tokens found in the raw text, basic tokenization
 * (basic.c) of the text between them, greedy longest-match-first WordPiece of each word; and
 * BERT encoding of a sentence or a pair: [CLS] A [SEP] (B [SEP]), token type ids, truncation
 * and padding, the way Hugging Face tokenizers' BERT post-processor and truncation do it.
 */
#include "text/basic.h"
#include "text/tokenizer.h"

/* A growable list of ids. */
typedef struct idlist {
    int32_t *v;
    size_t n, cap;
} idlist;

static int push_id(idlist *l, int32_t id) {
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 256;
        int32_t *v = realloc(l->v, c * sizeof *v);
        if (!v) return 0;
        l->v = v;
        l->cap = c;
    }
    l->v[l->n++] = id;
    return 1;
}

/* Greedy longest-match-first WordPiece of one word; [UNK] for the whole word when it is longer
 * than TS_WORDPIECE_MAX_CHARS characters or some part of it matches nothing. */
static int wordpiece(const ts_tokenizer *tok, const char *w, size_t len, size_t nchars, idlist *out) {
    int32_t unk = tok->special[TS_SPECIAL_UNK];
    if (nchars > TS_WORDPIECE_MAX_CHARS) return push_id(out, unk);
    size_t mark = out->n, start = 0;
    while (start < len) {
        const char *prefix = start ? "##" : NULL;
        size_t room = tok->max_len - (start ? 2 : 0); /* longest piece that could match */
        size_t end = len - start > room ? start + room : len;
        while (end > start && end < len && ((unsigned char)w[end] & 0xC0) == 0x80) end--;
        int32_t id = -1;
        while (end > start) {
            id = ts_vocab_find(tok, prefix, w + start, end - start);
            if (id >= 0) break;
            do end--; while (end > start && ((unsigned char)w[end] & 0xC0) == 0x80);
        }
        if (id < 0) {
            out->n = mark;
            return push_id(out, unk);
        }
        if (!push_id(out, id)) return 0;
        start = end;
    }
    return 1;
}

/* The special token that starts at s (longest match), or -1. */
static int special_at(const ts_tokenizer *tok, const char *s, size_t *len) {
    int best = -1;
    size_t blen = 0;
    for (int k = 0; k < TS_NSPECIAL; k++) {
        if (tok->special[k] < 0) continue;
        size_t n = strlen(ts_special_names[k]);
        if (n > blen && strncmp(s, ts_special_names[k], n) == 0) best = k, blen = n;
    }
    *len = blen;
    return best;
}

/* Words of text[0..len) through WordPiece, appended to out. With limit != 0, stops after the
 * word that brings the ids since out[base] to limit or more, and sets *done. */
static ts_status tokenize_span(const ts_tokenizer *tok, const char *text, size_t len, ts_words *ws,
                               idlist *out, size_t base, size_t limit, int *done) {
    if (len == 0) return TS_OK;
    ts_words_clear(ws);
    ts_status st = ts_basic_tokenize(text, len, tok->lowercase, ws);
    if (st != TS_OK) return st;
    for (size_t i = 0; i < ws->n; i++) {
        if (!wordpiece(tok, ws->buf + ws->w[i].off, ws->w[i].len, ws->w[i].nchars, out))
            return ts_set_error(TS_ERR_NOMEM, "tokenizer: out of memory");
        if (limit && out->n - base >= limit) {
            *done = 1;
            break;
        }
    }
    return TS_OK;
}

/* Every id of text: special tokens as written, everything else through WordPiece. limit != 0:
 * stop early, once a word brings the count to limit or more (whole words are kept, and special
 * tokens do not trigger the stop): what tokenizers does before truncating to max_length, which
 * decides how a pair is cut. */
static ts_status tokenize_text(const ts_tokenizer *tok, const char *text, idlist *out, size_t limit) {
    ts_words ws;
    ts_words_init(&ws);
    ts_status st = TS_OK;
    const char *span = text, *p = text;
    size_t base = out->n;
    int done = 0;
    while (st == TS_OK && !done && (p = strchr(p, '['))) {
        size_t n;
        int k = special_at(tok, p, &n);
        if (k < 0) {
            p++;
            continue;
        }
        st = tokenize_span(tok, span, (size_t)(p - span), &ws, out, base, limit, &done);
        if (st == TS_OK && !done && !push_id(out, tok->special[k]))
            st = ts_set_error(TS_ERR_NOMEM, "tokenizer: out of memory");
        p += n;
        span = p;
    }
    if (st == TS_OK && !done) st = tokenize_span(tok, span, strlen(span), &ws, out, base, limit, &done);
    ts_words_free(&ws);
    return st;
}

ts_status ts_tokenize(const ts_tokenizer *tok, const char *text, int32_t *ids, int cap, int *n) {
    if (n) *n = 0;
    if (!tok || !text || !n || cap < 0 || (cap > 0 && !ids))
        return ts_set_error(TS_ERR_ARG, "ts_tokenize: NULL tokenizer, text, ids or n, or cap < 0");
    idlist l = {0};
    ts_status st = tokenize_text(tok, text, &l, 0);
    if (st == TS_OK && l.n > (size_t)INT32_MAX) st = ts_set_error(TS_ERR_ARG, "ts_tokenize: more than 2^31 ids");
    if (st == TS_OK) {
        size_t k = l.n < (size_t)cap ? l.n : (size_t)cap;
        if (k) memcpy(ids, l.v, k * sizeof *ids);
        *n = (int)l.n;
        if (l.n > (size_t)cap)
            st = ts_set_error(TS_ERR_SHAPE, "ts_tokenize: the text has %zu wordpieces, ids holds only %d", l.n, cap);
    }
    free(l.v);
    return st;
}

/* Lengths that Hugging Face tokenizers keeps of a pair under longest-first truncation to
 * max_len, 3 of which go to [CLS] [SEP] [SEP] (na, nb: lengths after tokenize_text's early
 * stop): if both do not fit, the shorter keeps all it can up to what leaves the longer half of
 * the budget; if both are longer than the budget, each gets a half (the second input the larger
 * half). */
static void truncate_pair(size_t *na, size_t *nb, size_t max_len) {
    size_t budget = max_len - 3, a = *na, b = *nb;
    if (a + b > budget) {
        int swap = a > b;
        size_t n1 = swap ? b : a, n2;
        n2 = n1 > budget ? n1 : (n1 > budget - n1 ? n1 : budget - n1);
        if (n1 + n2 > budget) {
            n1 = budget / 2;
            n2 = n1 + budget % 2;
        }
        if (swap) {
            size_t t = n1;
            n1 = n2;
            n2 = t;
        }
        if (a > n1) a = n1;
        if (b > n2) b = n2;
    }
    *na = a;
    *nb = b;
}

/* Write the n of l's pieces that survive the cut (n <= l->n) to out: the first keep_head (or n)
 * and the last n - that (when n == l->n, all of them in order). Returns n. */
static int keep_pieces(const ts_tokenizer *tok, const idlist *l, size_t n, int32_t *out) {
    size_t head = tok->keep_head < 0 || (size_t)tok->keep_head > n ? n : (size_t)tok->keep_head;
    for (size_t i = 0; i < head; i++) out[i] = l->v[i];
    for (size_t i = head; i < n; i++) out[i] = l->v[l->n - n + i];
    return (int)n;
}

void ts_tokenizer_set_truncation(ts_tokenizer *tok, int keep_head) {
    if (tok) tok->keep_head = keep_head < 0 ? -1 : keep_head;
}

ts_status ts_encode(const ts_tokenizer *tok, const char *text_a, const char *text_b, int max_len,
                    int32_t *input_ids, int32_t *token_type_ids, int32_t *attention_mask, int *n) {
    if (n) *n = 0;
    if (!tok || !text_a || !input_ids)
        return ts_set_error(TS_ERR_ARG, "ts_encode: NULL tokenizer, text_a or input_ids");
    int nspecial = text_b ? 3 : 2;
    if (max_len < nspecial)
        return ts_set_error(TS_ERR_ARG, "ts_encode: max_len %d cannot hold [CLS] and %d [SEP]", max_len, nspecial - 1);
    idlist a = {0}, b = {0};
    /* Cutting at the end needs only the first max_len or so pieces; keeping the tail needs all. */
    size_t limit = tok->keep_head < 0 ? (size_t)max_len : 0;
    ts_status st = tokenize_text(tok, text_a, &a, limit);
    if (st == TS_OK && text_b) st = tokenize_text(tok, text_b, &b, limit);
    if (st == TS_OK) {
        size_t na = a.n, nb = b.n;
        if (text_b) truncate_pair(&na, &nb, (size_t)max_len);
        else if (na > (size_t)max_len - 2) na = (size_t)max_len - 2;
        int32_t cls = tok->special[TS_SPECIAL_CLS], sep = tok->special[TS_SPECIAL_SEP];
        int k = 0;
        input_ids[k++] = cls;
        k += keep_pieces(tok, &a, na, input_ids + k);
        input_ids[k++] = sep;
        int first_end = k;
        if (text_b) {
            k += keep_pieces(tok, &b, nb, input_ids + k);
            input_ids[k++] = sep;
        }
        for (int i = 0; i < max_len; i++) {
            if (i >= k) input_ids[i] = tok->special[TS_SPECIAL_PAD];
            if (token_type_ids) token_type_ids[i] = (i >= first_end && i < k) ? 1 : 0;
            if (attention_mask) attention_mask[i] = i < k;
        }
        if (n) *n = k;
    }
    free(a.v);
    free(b.v);
    return st;
}
