/*
 * tokens.c — small shared helpers of the data readers: the growable int32 list, tokenizing a
 * text into one, and the public seeded permutation (the shuffle every reader and caller uses).
 */
#include "data/data.h"

int ts_i32vec_reserve(ts_i32vec *l, size_t more) {
    if (l->n + more <= l->cap) return 1;
    size_t c = l->cap ? l->cap : 256;
    while (c < l->n + more) c *= 2;
    int32_t *v = realloc(l->v, c * sizeof *v);
    if (!v) return 0;
    l->v = v;
    l->cap = c;
    return 1;
}

ts_status ts_tokenize_append(const ts_tokenizer *tok, const char *text, ts_i32vec *out) {
    /* Try with the room at hand; ts_tokenize reports the full count when it does not fit. */
    if (!ts_i32vec_reserve(out, 64)) return ts_set_error(TS_ERR_NOMEM, "tokenize: out of memory");
    size_t room = out->cap - out->n;
    int cap = room > (size_t)INT32_MAX ? INT32_MAX : (int)room, n = 0;
    ts_status st = ts_tokenize(tok, text, out->v + out->n, cap, &n);
    if (st == TS_ERR_SHAPE && n > cap) {
        if (!ts_i32vec_reserve(out, (size_t)n)) return ts_set_error(TS_ERR_NOMEM, "tokenize: out of memory");
        st = ts_tokenize(tok, text, out->v + out->n, n, &n);
    }
    if (st != TS_OK) return st;
    out->n += (size_t)n;
    return TS_OK;
}

void ts_permutation(uint64_t seed, int64_t n, int64_t *out) {
    if (!out || n <= 0) return;
    for (int64_t i = 0; i < n; i++) out[i] = i;
    ts_drng r = ts_drng_at(seed, 0x7065726dull /* "perm" */, (uint64_t)n, 0);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)ts_drng_below(&r, (uint64_t)i + 1), t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}
