/*
 * pairs.c — sentence pairs for next-sentence prediction from a window of documents, the way
 * Google's create_pretraining_data.py (create_instances_from_document, truncate_seq_pair) makes
 * them; see the pretraining section of tessera.h for the rules.
 */
#include "data/pretrain.h"

void ts_window_free(ts_window *w) {
    ts_i32vec_free(&w->toks);
    free(w->sent);
    free(w->doc);
    memset(w, 0, sizeof *w);
}

void ts_pairs_free(ts_pairs *p) {
    ts_i32vec_free(&p->toks);
    free(p->v);
    memset(p, 0, sizeof *p);
}

static int64_t sent_len(const ts_window *w, int64_t s) { return w->sent[s + 1] - w->sent[s]; }

/* Append sentences [s0, s1) of w to out; returns their token count. */
static int64_t append_sents(const ts_window *w, int64_t s0, int64_t s1, ts_i32vec *out) {
    int64_t n = w->sent[s1] - w->sent[s0];
    memcpy(out->v + out->n, w->toks.v + w->sent[s0], (size_t)n * sizeof *out->v);
    out->n += (size_t)n;
    return n;
}

/* Append one pair: A = sentences [a0, a1), B = sentences [b0, b1), cut to max_tokens by
 * trimming the longer side at a random end, one token at a time. */
static ts_status add_pair(const ts_window *w, int64_t a0, int64_t a1, int64_t b0, int64_t b1, int random_next,
                          int max_tokens, ts_drng *rng, ts_pairs *out) {
    size_t need = (size_t)(w->sent[a1] - w->sent[a0] + w->sent[b1] - w->sent[b0]);
    if (!ts_i32vec_reserve(&out->toks, need)) return ts_set_error(TS_ERR_NOMEM, "pretraining: out of memory");
    if (out->n == out->cap) {
        size_t c = out->cap ? out->cap * 2 : 1024;
        ts_pair *v = realloc(out->v, c * sizeof *v);
        if (!v) return ts_set_error(TS_ERR_NOMEM, "pretraining: out of memory");
        out->v = v;
        out->cap = c;
    }
    int64_t off = (int64_t)out->toks.n;
    int64_t la = append_sents(w, a0, a1, &out->toks), lb = append_sents(w, b0, b1, &out->toks);
    int64_t alo = 0, blo = 0; /* tokens dropped from the front of A and of B */
    while (la + lb > max_tokens) {
        int trim_a = la > lb;
        int front = ts_drng_unif(rng) < 0.5;
        if (trim_a) {
            alo += front;
            la--;
        } else {
            blo += front;
            lb--;
        }
    }
    int32_t *t = out->toks.v + off;
    int64_t la0 = w->sent[a1] - w->sent[a0];
    memmove(t, t + alo, (size_t)la * sizeof *t);
    memmove(t + la, t + la0 + blo, (size_t)lb * sizeof *t);
    out->toks.n = (size_t)(off + la + lb);
    out->v[out->n++] = (ts_pair){off, (int32_t)la, (int32_t)lb, random_next};
    return TS_OK;
}

/* Pairs of document d. */
static ts_status doc_pairs(const ts_window *w, int64_t d, int max_tokens, double short_seq_prob,
                           double random_next_prob, ts_drng *rng, ts_pairs *out) {
    int64_t first = w->doc[d], last = w->doc[d + 1], ndoc = (int64_t)w->ndoc;
    int64_t target = max_tokens;
    if (ts_drng_unif(rng) < short_seq_prob) target = 2 + (int64_t)ts_drng_below(rng, (uint64_t)max_tokens - 1);
    int64_t cs = first, len = 0;
    for (int64_t i = first; i < last; i++) {
        len += sent_len(w, i);
        if (i != last - 1 && len < target) continue;
        int64_t nchunk = i + 1 - cs;
        int64_t a_end = nchunk >= 2 ? 1 + (int64_t)ts_drng_below(rng, (uint64_t)nchunk - 1) : 1;
        int64_t la = w->sent[cs + a_end] - w->sent[cs];
        ts_status st = TS_OK;
        if (ndoc > 1 && (nchunk == 1 || ts_drng_unif(rng) < random_next_prob)) {
            int64_t target_b = target - la, rd = d;
            for (int k = 0; k < 10 && rd == d; k++) rd = (int64_t)ts_drng_below(rng, (uint64_t)ndoc);
            if (rd == d) rd = (d + 1) % ndoc;
            int64_t rf = w->doc[rd], rl = w->doc[rd + 1];
            int64_t rs = rf + (int64_t)ts_drng_below(rng, (uint64_t)(rl - rf)), re = rs, lb = 0;
            while (re < rl && lb < (target_b > 1 ? target_b : 1)) lb += sent_len(w, re++);
            st = add_pair(w, cs, cs + a_end, rs, re, 1, max_tokens, rng, out);
            i -= nchunk - a_end; /* the unused sentences start the next chunk */
        } else if (nchunk >= 2) {
            st = add_pair(w, cs, cs + a_end, cs + a_end, i + 1, 0, max_tokens, rng, out);
        } /* else: one sentence and no other document to pair it with */
        if (st != TS_OK) return st;
        cs = i + 1;
        len = 0;
    }
    return TS_OK;
}

ts_status ts_make_pairs(const ts_window *w, int max_tokens, double short_seq_prob, double random_next_prob,
                        ts_drng *rng, ts_pairs *out) {
    out->n = 0;
    out->toks.n = 0;
    for (size_t d = 0; d < w->ndoc; d++) {
        ts_status st = doc_pairs(w, (int64_t)d, max_tokens, short_seq_prob, random_next_prob, rng, out);
        if (st != TS_OK) return st;
    }
    for (size_t k = out->n; k > 1; k--) {
        size_t j = (size_t)ts_drng_below(rng, k);
        ts_pair t = out->v[k - 1];
        out->v[k - 1] = out->v[j];
        out->v[j] = t;
    }
    return TS_OK;
}
