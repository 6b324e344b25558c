/*
 * encode_all.c — a text or a pair encoded whole (tessera_text.h: ts_encode_all): [CLS] A [SEP]
 * (B [SEP]) with nothing cut, into a buffer grown as the pieces need, as `tessera tokenize`
 * prints a line without --max-len; a line as `tessera tokenize` reads it (ts_encode_line), and
 * many lines as one batch in a safetensors file that `tessera run` reads (ts_encode_lines_save).
 */
#include "common/app.h"

#include <errno.h>
#include <stdio.h>

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

/* Line (len bytes, no line break) made texts in place: NUL bytes dropped, as the normalizer
 * drops U+0000; with pair, the first tab ends text A and the rest is text B ("" without a tab).
 * Returns text B (NULL without pair). */
static char *line_texts(char *line, size_t len, int pair) {
    if (memchr(line, 0, len)) {
        size_t k = 0;
        for (size_t j = 0; j < len; j++)
            if (line[j]) line[k++] = line[j];
        line[len = k] = 0;
    }
    char *text_b = pair ? strchr(line, '\t') : NULL;
    if (text_b) *text_b++ = 0;
    return pair && !text_b ? "" : text_b;
}

ts_status ts_encode_line(const ts_tokenizer *tok, char *line, size_t len, int pair, int max_len, int pad,
                         int32_t **ids, int *cap, int *n) {
    if (!tok || !line || !ids || !cap || !n) return ts_set_error(TS_ERR_ARG, "ts_encode_line: NULL argument");
    if (max_len < 0) return ts_set_error(TS_ERR_ARG, "ts_encode_line: max_len %d is negative", max_len);
    char *text_b = line_texts(line, len, pair);
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

/* The texts of the lines read, kept for the second pass: a[i], b[i] (b NULL without pair). */
typedef struct lines {
    char **a, **b;
    int n, cap;
} lines;

static void lines_free(lines *l) {
    for (int i = 0; i < l->n; i++) free(l->a[i]);
    free(l->a), free(l->b);
}

/* Every line of in, made texts (line_texts); TS_ERR_IO on a read error. */
static ts_status read_lines(FILE *in, int pair, lines *l) {
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    ts_status st = TS_OK;
    while (st == TS_OK && (len = getline(&line, &lcap, in)) >= 0) {
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (l->n == l->cap) {
            int c = l->cap ? 2 * l->cap : 64;
            char **a = realloc(l->a, (size_t)c * sizeof *a), **b = a ? realloc(l->b, (size_t)c * sizeof *b) : NULL;
            if (a) l->a = a;
            if (b) l->b = b, l->cap = c;
            if (!a || !b) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
        }
        if (st == TS_OK) {
            char *b = line_texts(line, (size_t)len, pair);
            l->b[l->n] = b; /* into the line, "" or NULL */
            l->a[l->n] = line, l->n++; /* the line's buffer moves to the list: b points into it */
            line = NULL, lcap = 0;
        }
    }
    free(line);
    if (st == TS_OK && ferror(in)) st = ts_set_error(TS_ERR_IO, "reading the lines: %s", strerror(errno));
    return st;
}

ts_status ts_encode_lines_save(const ts_tokenizer *tok, const char *lines_path, int pair, int max_len, const char *path,
                               int *rows, int *len) {
    if (!tok || !path) return ts_set_error(TS_ERR_ARG, "ts_encode_lines_save: NULL argument");
    if (max_len && max_len < (pair ? 3 : 2))
        return ts_set_error(TS_ERR_ARG, "ts_encode_lines_save: max_len %d cannot hold [CLS] and [SEP]%s", max_len,
                            pair ? " twice" : "");
    FILE *in = lines_path ? fopen(lines_path, "r") : stdin;
    if (!in) return ts_set_error(TS_ERR_IO, "cannot open %s: %s", lines_path, strerror(errno));
    lines l = {0};
    ts_status st = read_lines(in, pair, &l);
    if (in != stdin) fclose(in);
    if (st == TS_OK && !l.n) st = ts_set_error(TS_ERR_ARG, "no lines to encode: the input is empty");
    int T = max_len, cap = 0, n = 0;
    int32_t *ids = NULL;
    for (int i = 0; st == TS_OK && !max_len && i < l.n; i++) { /* T: the longest line's ids */
        st = ts_encode_all(tok, l.a[i], l.b[i], &ids, &cap, &n);
        if (st != TS_OK) ts_set_error(st, "line %d: %s", i + 1, ts_last_error());
        if (n > T) T = n;
    }
    free(ids);
    int64_t shape[2] = {l.n, T};
    ts_tensor *t[3] = {NULL, NULL, NULL};
    for (int k = 0; st == TS_OK && k < 3; k++)
        if (!(t[k] = ts_tensor_new(TS_I32, 2, shape))) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    for (int i = 0; st == TS_OK && i < l.n; i++) {
        size_t at = (size_t)i * (size_t)T;
        st = ts_encode(tok, l.a[i], l.b[i], T, (int32_t *)ts_tensor_data(t[0]) + at,
                       (int32_t *)ts_tensor_data(t[1]) + at, (int32_t *)ts_tensor_data(t[2]) + at, NULL);
        if (st != TS_OK) ts_set_error(st, "line %d: %s", i + 1, ts_last_error());
    }
    static const char *const names[3] = {"input_ids", "token_type_ids", "attention_mask"};
    if (st == TS_OK) st = ts_safetensors_save(path, 3, names, (const ts_tensor *const *)t, NULL);
    if (st == TS_OK && rows) *rows = l.n;
    if (st == TS_OK && len) *len = T;
    for (int k = 0; k < 3; k++) ts_tensor_free(t[k]);
    lines_free(&l);
    return st;
}
