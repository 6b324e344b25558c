/*
 * search.c — ts_plan_search: the layouts a request leaves open — replicas R dividing the device
 * count, stage specs over the D = count / R devices of a replica, micro-batches, recomputation,
 * optimizer sharding — each estimated (estimate.c), sorted: those that fit by seq/s, then the rest
 * by how much they overflow; each with why it lost to the best. A stage layout is compiled for
 * planning once (per spec and recomputation) and cached: R, M and sharding are arithmetic on it.
 */
#include "plan/cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Micro-batches are tried in powers of two from the devices of a replica to MICRO_LIMIT (Graphcore's
 * BERT-Large: 2,048 on a Pod16); with a global batch, the one it leaves; with split_batch, each M
 * that leaves a micro-batch of at most batch (the first MAX_MICRO of them). */
enum { MAX_SPECS = 3, MAX_CACHE = 256, MICRO_LIMIT = 4096, MAX_MICRO = 16, MAX_FOUND = 4096 };

/* Layers [lo, hi] as a part list: "4-7", "5", or "" when empty. */
static int layer_range(char *buf, size_t cap, int lo, int hi) {
    if (hi < lo) return snprintf(buf, cap, "%s", "");
    return lo == hi ? snprintf(buf, cap, "%d", lo) : snprintf(buf, cap, "%d-%d", lo, hi);
}

/* L layers over devices first .. first + n - 1, evenly (the remainder to the middle ones),
 * appended to spec at o. */
static size_t spread(char *spec, size_t cap, size_t o, int L, int first, int n) {
    int at = 0;
    for (int k = 0; k < n && o < cap; k++) {
        int share = L / n + (k >= (n - L % n) / 2 && k < (n - L % n) / 2 + L % n);
        char r[32];
        layer_range(r, sizeof r, at, at + share - 1);
        at += share;
        o += (size_t)snprintf(spec + o, cap - o, " %d:%s", first + k, r);
    }
    return o;
}

/* Parts first .. last (0 the embeddings, 1 .. L the layers, L + 1 the heads) as a spec's list. */
static size_t parts_list(char *buf, size_t cap, size_t o, int first, int last, int L) {
    int lo = first < 1 ? 1 : first, hi = last > L ? L : last;
    char r[32];
    layer_range(r, sizeof r, lo - 1, hi - 1);
    if (first == 0 && o < cap) o += (size_t)snprintf(buf + o, cap - o, "emb%s", *r || last > L ? "," : "");
    if (*r && o < cap) o += (size_t)snprintf(buf + o, cap - o, "%s%s", r, last > L ? "," : "");
    if (last > L && o < cap) o += (size_t)snprintf(buf + o, cap - o, "heads");
    return o;
}

/* The embeddings on the first device, the heads on the last, the layers between cut where the
 * parts' estimated costs balance (ts_stage_plan_balance): a layer's FLOPs per sequence
 * 24 T C^2 + 4 T^2 C, the heads' 2 P C (V + C) (P masked positions, T without), the embeddings'
 * a memory-bound pass over [T, C] (costed as 10 T C). */
static void balanced_spec(const ts_plan_request *rq, int D, char *spec, size_t cap) {
    const ts_bert_config *c = rq->cfg;
    int L = c->num_hidden_layers;
    double T = rq->seq_len, C = c->hidden_size, V = c->vocab_size;
    double P = rq->task == TS_PLAN_PRETRAIN && rq->max_predictions > 0 ? rq->max_predictions : T;
    double cost[TS_BERT_MAX_LAYERS + 2];
    cost[0] = 10 * T * C, cost[L + 1] = rq->task == TS_PLAN_PRETRAIN ? 2 * P * C * (V + C) : 2 * C * C;
    for (int k = 1; k <= L; k++) cost[k] = 24 * T * C * C + 4 * T * T * C;
    ts_stage_plan pp;
    memset(&pp, 0, sizeof pp);
    pp.ndev = D;
    spec[0] = 0;
    if (ts_stage_plan_balance(cost, L, &pp) != TS_OK) return;
    size_t o = 0;
    for (int s = 0; s < pp.nstages && o < cap; s++) {
        o += (size_t)snprintf(spec + o, cap - o, "%s%d:", s ? " " : "", pp.stage_dev[s]);
        o = parts_list(spec, cap, o, pp.stage_first[s], pp.stage_last[s], L);
    }
}

/* The stage specs tried over D devices of L layers: the seed system's (embeddings and heads on
 * the first device, the layers evenly over the others) and the embeddings on the first and the
 * heads on the last with the layers balanced by estimated cost (balanced_spec). */
static int make_specs(const ts_plan_request *rq, int D, int L, char specs[MAX_SPECS][256]) {
    int n = 0;
    if (D == 1) {
        snprintf(specs[n++], 256, "0:emb,0-%d,heads", L - 1);
        return n;
    }
    if (D - 1 <= L) {
        size_t o = (size_t)snprintf(specs[n], 256, "0:emb,heads");
        spread(specs[n++], 256, o, L, 1, D - 1);
    }
    if (D <= L + 2) {
        balanced_spec(rq, D, specs[n], 256);
        if (specs[n][0] && strcmp(specs[n], specs[0])) n++;
    }
    return n;
}

/* One compiled stage layout, kept for every R, M and sharding that use it. */
typedef struct cached {
    char spec[256];
    int recompute, micro_plan, batch, replicated; /* replicated: compiled for R > 1 (gradients kept) */
    ts_plan_compiled pc;
} cached;

typedef struct found {
    ts_plan_layout l;
    double overflow;
} found;

/* The compiled layout of (spec, recompute, micro_plan, R > 1), compiled on first use. */
static const ts_plan_compiled *compiled(const ts_plan_request *rq, cached *cache, int *ncache, const char *spec, int D,
                                        int recompute, int micro_plan, int R) {
    for (int i = 0; i < *ncache; i++)
        if (!strcmp(cache[i].spec, spec) && cache[i].recompute == recompute && cache[i].micro_plan == micro_plan &&
            cache[i].batch == rq->batch && cache[i].replicated == (R > 1))
            return &cache[i].pc;
    if (*ncache == MAX_CACHE) return NULL;
    cached *c = &cache[*ncache];
    snprintf(c->spec, sizeof c->spec, "%.255s", spec);
    c->recompute = recompute, c->micro_plan = micro_plan, c->batch = rq->batch, c->replicated = R > 1;
    if (ts_plan_compile(rq, spec, D, recompute, micro_plan, R, &c->pc) != TS_OK) return NULL;
    (*ncache)++;
    return &c->pc;
}

/* How far a layout that does not fit is, in steps of a quarter of the device's memory: layouts of
 * one step are about as close (docs/cost-model.md, "When nothing fits"). */
static int overflow_step(double overflow) { return (int)ceil((overflow - 1) * 4); }

/* Fitting layouts first, by seq/s; then the rest by what a user would change first: of those
 * about as close (one overflow_step), the fewest pipeline stages per replica (a deeper pipeline
 * is the costliest change: more bubble, more transfers), then the smallest overflow (with the
 * recomputation and the streaming and sharding of optimizer state that help it), then seq/s. */
static int by_rank(const void *a, const void *b) {
    const found *x = a, *y = b;
    if (x->l.fits != y->l.fits) return y->l.fits - x->l.fits;
    if (x->l.fits) return x->l.seq_per_s < y->l.seq_per_s ? 1 : x->l.seq_per_s > y->l.seq_per_s ? -1 : 0;
    int sx = overflow_step(x->overflow), sy = overflow_step(y->overflow);
    if (sx != sy) return sx - sy;
    if (x->l.ndevices != y->l.ndevices) return x->l.ndevices - y->l.ndevices;
    if (x->overflow != y->overflow) return x->overflow > y->overflow ? 1 : -1;
    return x->l.seq_per_s < y->l.seq_per_s ? 1 : x->l.seq_per_s > y->l.seq_per_s ? -1 : 0;
}

/* Why layout l lost to the best b (both fit), in words. */
static void why_lost(const ts_plan_layout *l, const ts_plan_layout *b, char *why, size_t cap) {
    double slower = b->seq_per_s > 0 ? 100 * (1 - l->seq_per_s / b->seq_per_s) : 0;
    double exposed = l->allreduce_s - l->allreduce_hidden_s, best_exposed = b->allreduce_s - b->allreduce_hidden_s;
    const char *reason = l->ndevices != b->ndevices ? "another pipeline depth"
                         : strcmp(l->stages, b->stages) ? "another cut of the stages"
                         : l->batch < b->batch ? "smaller micro-batches (their products run slower)"
                         : l->micro_batches < b->micro_batches ? "fewer micro-batches (the bubble and update weigh more)"
                         : l->bubble > b->bubble + 0.02 ? "a larger bubble"
                         : exposed > best_exposed + 1e-4 ? "more exposed all-reduce"
                         : l->shard_state < b->shard_state ? "an unsharded optimizer (a longer update)"
                         : l->recompute > b->recompute ? "recomputation" : "a slower step";
    snprintf(why, cap, "%.1f%% slower than the best: %s (%d x %d devices, M %d; bubble %.1f%% vs %.1f%%, step %.4f s "
             "vs %.4f s)", slower, reason, l->replicas, l->ndevices, l->micro_batches, 100 * l->bubble, 100 * b->bubble,
             l->step_s, b->step_s);
}

/* The micro-batch counts tried over R replicas of D devices into micro (at most MAX_MICRO), each
 * with its micro-batch size into batch; how many. */
static int micro_batches(const ts_plan_request *rq, int R, int D, int micro[MAX_MICRO], int batch[MAX_MICRO]) {
    int n = 0, G = rq->global_batch;
    if (rq->task == TS_PLAN_INFER) micro[n] = 1, batch[n++] = rq->batch;
    else if (G > 0 && rq->split_batch) { /* every M that leaves a micro-batch of at most batch */
        for (int M = rq->micro_batches > 0 ? rq->micro_batches : 1; M <= G / R && n < MAX_MICRO; M++) {
            if (G % (R * M) == 0 && G / (R * M) <= rq->batch) micro[n] = M, batch[n++] = G / (R * M);
            if (rq->micro_batches > 0) break;
        }
    } else if (G > 0) { /* the one M that makes it, if any */
        int M = G % (R * rq->batch) ? 0 : G / (R * rq->batch);
        if (M > 0 && (rq->micro_batches <= 0 || rq->micro_batches == M)) micro[n] = M, batch[n++] = rq->batch;
    } else if (rq->micro_batches > 0)
        micro[n] = rq->micro_batches, batch[n++] = rq->batch;
    else
        for (int M = D; M <= MICRO_LIMIT && n < MAX_MICRO; M *= 2) micro[n] = M, batch[n++] = rq->batch;
    return n;
}

/* Every layout over R replicas rq leaves open, appended to f. */
static void search_replicas(const ts_plan_request *rq, int R, cached *cache, int *ncache, found *f, int *nf) {
    int D = rq->count / R, L = rq->cfg->num_hidden_layers, infer = rq->task == TS_PLAN_INFER;
    char specs[MAX_SPECS][256];
    int nspec = rq->stages ? 1 : infer ? 1 : make_specs(rq, D, L, specs);
    if (rq->stages) snprintf(specs[0], 256, "%s", rq->stages);
    else if (infer) snprintf(specs[0], 256, "0:emb,0-%d,heads", L - 1), D = 1;
    int micro[MAX_MICRO], batch[MAX_MICRO], nmicro = micro_batches(rq, R, D, micro, batch);
    ts_plan_request r = *rq; /* with each micro-batch size */
    for (int sp = 0; sp < nspec; sp++)
        for (int rc = rq->recompute < 0 ? 0 : rq->recompute; rc <= (rq->recompute < 0 ? 1 : rq->recompute); rc++)
            for (int mi = 0; mi < nmicro; mi++) {
                int M = micro[mi];
                if (D > 1 && M < 2) continue;
                r.batch = batch[mi];
                const ts_plan_compiled *pc =
                    compiled(&r, cache, ncache, specs[sp], D, rc, D > 1 ? 0 : M > 1 ? 2 : 1, R);
                if (!pc) return;
                int shard_lo = rq->shard_state < 0 ? 0 : rq->shard_state, shard_hi = rq->shard_state < 0 ? R > 1 : rq->shard_state;
                for (int sh = shard_lo; sh <= shard_hi && *nf < MAX_FOUND; sh++) {
                    ts_plan_evaluate(&r, pc, specs[sp], R, M, sh, &f[*nf].l, &f[*nf].overflow);
                    (*nf)++;
                }
            }
}

ts_status ts_plan_search(const ts_plan_request *rq, ts_plan_layout *out, int cap, int *n) {
    if (!out || !n || cap < 1) return ts_set_error(TS_ERR_ARG, "ts_plan_search: out, cap >= 1 and n are required");
    *n = 0;
    ts_plan_request_copy c;
    if (ts_plan_request_read(&c, rq, "ts_plan_search") != TS_OK) return TS_ERR_ARG;
    rq = &c.rq;
    if (ts_plan_check_request(rq) != TS_OK) return ts_last_status();
    cached *cache = calloc(MAX_CACHE, sizeof *cache);
    found *f = calloc(MAX_FOUND, sizeof *f);
    if (!cache || !f) {
        free(cache), free(f);
        return ts_set_error(TS_ERR_NOMEM, "ts_plan_search: out of memory");
    }
    int ncache = 0, nf = 0;
    for (int R = 1; R <= rq->count; R++)
        if (rq->count % R == 0 && (rq->replicas <= 0 || rq->replicas == R))
            search_replicas(rq, R, cache, &ncache, f, &nf);
    ts_status st = nf                  ? TS_OK
                   : rq->global_batch > 0 ? ts_set_error(TS_ERR_ARG, "ts_plan_search: no layout makes global_batch %d "
                                                         "as replicas x micro_batches x batch %d (replicas dividing "
                                                         "count %d%s)", rq->global_batch, rq->batch, rq->count,
                                                         rq->count > 1 ? "; a pipeline needs micro_batches >= 2" : "")
                   : ts_last_status() ? ts_last_status()
                                      : ts_set_error(TS_ERR_ARG, "ts_plan_search: no layout to try (a pipeline of %d "
                                                     "devices needs micro_batches >= 2)", rq->count);
    qsort(f, (size_t)nf, sizeof *f, by_rank);
    ts_plan_layout *l = malloc(sizeof *l); /* each as it goes out (ts_plan_layout_write) */
    if (!l) nf = 0, st = ts_set_error(TS_ERR_NOMEM, "ts_plan_search: out of memory");
    for (int i = 0; i < nf && i < cap; i++) {
        *l = f[i].l;
        if (i > 0 && f[i].l.fits) why_lost(&f[i].l, &f[0].l, l->why, sizeof l->why);
        else if (i == 0 && f[i].l.fits) snprintf(l->why, sizeof l->why, "the fastest layout that fits");
        else if (i == 0) {
            char w[400];
            snprintf(w, sizeof w, "%s", f[i].l.why);
            snprintf(l->why, sizeof l->why, "no layout fits; the closest: %s", w);
        }
        if (ts_plan_layout_write(out, i, l, "ts_plan_search") != TS_OK) {
            nf = 0, st = TS_ERR_ARG;
            break;
        }
        (*n)++;
    }
    free(l), free(cache), free(f);
    return nf ? TS_OK : st;
}

int ts_plan_suggest(const ts_plan_request *asked, const ts_stage_plan *pp, double *need_bytes, ts_plan_layout *best,
                    int *found) {
    if (need_bytes) *need_bytes = 0;
    if (found) *found = 0;
    ts_plan_request_copy *c = calloc(1, sizeof *c);
    if (!c) return ts_set_error(TS_ERR_NOMEM, "ts_plan_suggest: out of memory"), -1;
    int unfit = -1, n = 0;
    char spec[256];
    if (!best || !found) ts_set_error(TS_ERR_ARG, "ts_plan_suggest: best and found are required");
    else if (ts_plan_request_read(c, asked, "ts_plan_suggest") == TS_OK && ts_plan_check_request(&c->rq) == TS_OK) {
        ts_stage_plan_spec(pp, c->rq.cfg->num_hidden_layers, spec, sizeof spec);
        c->rq.stages = spec;
        unfit = ts_plan_unfit_stage(&c->rq, need_bytes);
        if (c->rq.global_batch <= 0) /* the run's own global batch, kept by every layout suggested */
            c->rq.global_batch = c->rq.replicas * c->rq.micro_batches * c->rq.batch, c->rq.split_batch = 1;
        c->rq.stages = NULL, c->rq.replicas = 0, c->rq.micro_batches = 0, c->rq.recompute = -1, c->rq.shard_state = -1;
        *found = ts_plan_search(&c->rq, best, 1, &n) == TS_OK && n >= 1;
    }
    free(c);
    return unfit;
}
