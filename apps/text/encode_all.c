/*
 * encode_all.c — a text or a pair encoded whole (tessera_text.h: ts_encode_all): [CLS] A [SEP]
 * (B [SEP]) with nothing cut, into a buffer grown as the pieces need, as `tessera tokenize`
 * prints a line without --max-len.
 */
#include "common/app.h"

/* The pieces of text at (*ids)[at ..], *ids grown to hold them and `more` ids after; their count
 * into *n. */
static ts_status pieces_at(const ts_tokenizer *tok, const char *text, int32_t **ids, int *cap, int at, int more,
                           int *n) {
    int room = *cap - at - more;
    ts_status st = ts_tokenize(tok, text, *ids && room > 0 ? *ids + at : NULL, room > 0 ? room : 0, n);
    if (st != TS_ERR_SHAPE) return st;
    int need = at + *n + more;
    int32_t *g = realloc(*ids, (size_t)need * sizeof *g);
    if (!g) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    *ids = g, *cap = need;
    return ts_tokenize(tok, text, *ids + at, *n, n);
}

ts_status ts_encode_all(const ts_tokenizer *tok, const char *text_a, const char *text_b, int32_t **ids, int *cap,
                        int *n) {
    if (!tok || !text_a || !ids || !cap || !n) return ts_set_error(TS_ERR_ARG, "ts_encode_all: NULL argument");
    int na = 0, nb = 0;
    ts_status st = pieces_at(tok, text_a, ids, cap, 1, text_b ? 2 : 1, &na);
    if (st == TS_OK && text_b) st = pieces_at(tok, text_b, ids, cap, na + 2, 1, &nb);
    if (st != TS_OK) return st;
    int need = na + nb + (text_b ? 3 : 2);
    if (need > *cap) {
        int32_t *g = realloc(*ids, (size_t)need * sizeof *g);
        if (!g) return ts_set_error(TS_ERR_NOMEM, "out of memory");
        *ids = g, *cap = need;
    }
    int32_t sep = ts_token_to_id(tok, "[SEP]");
    (*ids)[0] = ts_token_to_id(tok, "[CLS]");
    (*ids)[na + 1] = sep;
    if (text_b) (*ids)[na + nb + 2] = sep;
    *n = need;
    return TS_OK;
}

ts_status ts_encode_line(const ts_tokenizer *tok, char *line, size_t len, int pair, int max_len, int pad,
                         int32_t **ids, int *cap, int *n) {
    if (!tok || !line || !ids || !cap || !n) return ts_set_error(TS_ERR_ARG, "ts_encode_line: NULL argument");
    if (max_len < 0) return ts_set_error(TS_ERR_ARG, "ts_encode_line: max_len %d is negative", max_len);
    if (memchr(line, 0, len)) { /* NUL bytes: dropped, as the normalizer drops U+0000 */
        size_t k = 0;
        for (size_t j = 0; j < len; j++)
            if (line[j]) line[k++] = line[j];
        line[len = k] = 0;
    }
    char *text_b = NULL;
    if (pair && (text_b = strchr(line, '\t'))) *text_b++ = 0;
    else if (pair) text_b = "";
    *n = 0;
    if (!max_len) return ts_encode_all(tok, line, text_b, ids, cap, n);
    if (max_len > *cap) {
        int32_t *g = realloc(*ids, (size_t)max_len * sizeof *g);
        if (!g) return ts_set_error(TS_ERR_NOMEM, "out of memory");
        *ids = g, *cap = max_len;
    }
    ts_status st = ts_encode(tok, line, text_b, max_len, *ids, NULL, NULL, n);
    if (st == TS_OK && pad) *n = max_len;
    return st;
}
