/*
 * share.c — programs that read one copy of their parameters (ts_program_share_params): a
 * refcounted ts_param_share (exec.h) holds the buffers; each program points its parameters (and
 * the values that alias them) into it and frees its own. A write through any program moves the
 * share's generation, which every program takes at its next run (exec.c), so a prepacked copy of
 * a weight is remade wherever it was derived from the old bytes. Called by program.c and exec.c.
 */
#include "runtime/exec.h"

#include <stdio.h>

void ts_exec_unshare(ts_exec *e) {
    ts_param_share *s = e->share;
    e->share = NULL;
    if (!s || --s->refs > 0) return;
    for (int i = 0; i < s->nbufs; i++) ts_dev_free(s->dev, &s->bufs[i]);
    free(s->bufs);
    free(s);
}

/* 1 when no run of e writes its parameters: its plans take param_gen (compile.c: frozen). */
static int frozen(const ts_exec *e) {
    for (int k = 0; k < e->nparts; k++)
        if (!e->parts[k].abi.param_gen) return 0;
    return 1;
}

/* e's borrowed flags, made when missing. */
static int need_borrowed(ts_exec *e) {
    if (!e->borrowed) e->borrowed = calloc((size_t)e->g->nvals + 1, 1);
    return e->borrowed != NULL;
}

/* A new share of src's own parameter buffers (they become borrowed: freed with the share). */
static ts_status share_begin(ts_exec *src) {
    ts_param_share *s = calloc(1, sizeof *s);
    ts_buffer *bufs = malloc(sizeof *bufs * ((size_t)src->nparams + 1));
    if (!s || !bufs || !need_borrowed(src)) {
        free(s), free(bufs);
        return ts_err(TS_ERR_NOMEM, "ts_program_share_params: out of memory");
    }
    *s = (ts_param_share){.refs = 1, .gen = src->param_gen, .dev = src->dev, .bufs = bufs};
    for (int i = 0; i < src->nparams; i++) {
        int v = src->params[i];
        if (!src->owned[v] || !src->vals[v].buf.mem) continue;
        s->bufs[s->nbufs++] = src->vals[v].buf;
        src->borrowed[v] = 1;
    }
    src->share = s;
    return TS_OK;
}

/* Value sv of src: a shared parameter of dst's value dv's name, dtype and shape? */
static int matches(const ts_exec *dst, int dv, const ts_exec *src, int sv) {
    const ts_val *x = &dst->g->vals[dv], *y = &src->g->vals[sv];
    return sv >= 0 && y->kind == TS_V_PARAM && src->borrowed[sv] && x->dtype == y->dtype && x->ndim == y->ndim &&
           !memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim);
}

/* Point dst's value dv (and every value of dst inside its buffer: aliases) at src's sv, freeing
 * dst's own buffer; the bytes freed. */
static size_t repoint(ts_exec *dst, int dv, const ts_exec *src, int sv) {
    ts_buffer old = dst->vals[dv].buf, to = src->vals[sv].buf;
    for (int w = 0; w < dst->g->nvals; w++) {
        ts_buffer *b = &dst->vals[w].buf;
        if (b->mem == old.mem) *b = ts_buf_at(to, b->offset - old.offset);
    }
    ts_dev_free(dst->dev, &old);
    dst->borrowed[dv] = 1;
    return ts_val_bytes(&dst->g->vals[dv]);
}

int ts_exec_share_params(ts_exec *dst, ts_exec *src) {
    if (dst == src) { ts_err(TS_ERR_ARG, "ts_program_share_params: dst and src are the same program"); return -1; }
    if (dst->dev != src->dev) {
        ts_err(TS_ERR_ARG, "ts_program_share_params: dst is on device %s, src on %s (one device only)", dst->dev->name,
               src->dev->name);
        return -1;
    }
    if (!frozen(dst) || !frozen(src)) {
        ts_err(TS_ERR_UNSUPPORTED, "ts_program_share_params: a program whose runs write its parameters (training) "
               "cannot share them");
        return -1;
    }
    if (dst->share) {
        ts_err(TS_ERR_ARG, "ts_program_share_params: dst already reads %s parameters", dst->share == src->share ?
               "src's" : "another program's");
        return -1;
    }
    if (!src->share && share_begin(src) != TS_OK) return -1;
    if (!need_borrowed(dst)) { ts_err(TS_ERR_NOMEM, "ts_program_share_params: out of memory"); return -1; }
    ts_param_share *s = src->share;
    int n = 0;
    size_t freed = 0;
    for (int i = 0; i < dst->nparams; i++) {
        int dv = dst->params[i];
        const char *name = dst->g->vals[dv].name;
        int sv = name ? ts_lookup(src->g, name) : -1;
        if (!dst->owned[dv] || !dst->vals[dv].buf.mem || !matches(dst, dv, src, sv)) continue;
        freed += repoint(dst, dv, src, sv);
        n++;
    }
    dst->mem.params -= freed < dst->mem.params ? freed : dst->mem.params;
    s->refs++;
    dst->share = s;
    /* a new generation: what dst's kernels derived from its own bytes is stale */
    dst->param_gen = src->param_gen = s->gen = ts_param_gen_next();
    return n;
}
