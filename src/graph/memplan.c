/*
 * memplan.c — the memory planner. Every intermediate lives in one arena sized before the first
 * step; no allocation happens inside a step.
 *
 * 1. Storage roots: an alias op's output (reshape) shares its input's root.
 * 2. Lifetimes: a root lives from the position of the node that defines it to the last position
 *    that reads any value sharing it (the end of the step when pinned).
 * 3. In place: an elementwise node whose input 0 root dies at that node, with equal byte size,
 *    writes its output into that root. Into a sink (a parameter's gradient, which has a buffer of
 *    its own): the producer of the value a reshape makes the gradient from, or of an add's input
 *    that dies there (input 0 or 1 of an add of equal shapes), writes into the gradient's buffer
 *    directly and never takes the arena (a [V, C] embedding gradient, or a weight's gradient made
 *    as [1, K, N] at batch 1, is a gradient, not an activation).
 * 4. Placement, greedy by size: roots in decreasing size, each at the lowest 64-byte-aligned
 *    offset that overlaps no already placed root whose lifetime intersects its own.
 */
#include "graph/memplan.h"
#include "graph/opdef.h"

typedef struct {
    int v;
    int def, last;
    size_t bytes;
    int64_t off;
} storage;

static int by_size_desc(const void *a, const void *b) {
    const storage *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->def - y->def;
}

static int by_offset(const void *a, const void *b) {
    const storage *x = *(const storage *const *)a, *y = *(const storage *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}


static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Do values a and b have one shape? */
static int same_shape(const ts_val *a, const ts_val *b) {
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

/* Can root r (a value's storage in the arena) live in sink o's buffer instead: r dies at schedule
 * position p (last[r] == p), is made by a scheduled node, is neither pinned nor kept longer, and
 * has o's size; o is a sink, outside the arena, not already holding another value. */
static int into_sink(const ts_graph *g, const uint8_t *in_arena, const uint8_t *pinned, const int *until,
                     const uint8_t *sink, const int *def, const int *last, const ts_memplan *mp, int r, int o, int p,
                     const uint8_t *taken) {
    if (!sink || !sink[o] || in_arena[o] || taken[o] || mp->root[o] != o) return 0;
    if (!in_arena[r] || mp->root[r] != r || pinned[r] || (until && until[r] >= 0) || def[r] < 0 || last[r] != p)
        return 0;
    return ts_val_bytes(&g->vals[r]) == ts_val_bytes(&g->vals[o]);
}

/* Root r and the values stored in it move into sink o's buffer (r leaves the arena). */
static void move_into(ts_memplan *mp, int nv, int r, int o, uint8_t *taken) {
    for (int w = 0; w < nv; w++)
        if (mp->root[w] == r) mp->root[w] = o;
    taken[o] = 1;
}

/* Step 3 into sinks: the node at position p writes its output o, a sink; which dying arena input
 * may be written into o's buffer directly (see the file's comment). */
static void sink_node(const ts_graph *g, const ts_node *n, int p, const uint8_t *in_arena, const uint8_t *pinned,
                      const int *until, const uint8_t *sink, const int *def, int *last, ts_memplan *mp,
                      uint8_t *taken) {
    const ts_op_def *d = ts_op_get(n->op);
    int o = n->out[0], nv = g->nvals;
    if (n->nout < 1 || !sink || !sink[o]) return;
    if ((d->flags & TS_OPF_ALIAS0) && n->in[0] >= 0) { /* a reshape made the gradient: its input is it */
        int r = mp->root[n->in[0]];
        if (r == o) return;
        if (into_sink(g, in_arena, pinned, until, sink, def, last, mp, r, o, last[r], taken)) {
            move_into(mp, nv, r, o, taken);
        } else { /* the gradient stays a view of r, which lives as long as the gradient */
            mp->root[o] = r;
            if (last[o] > last[r]) last[r] = last[o];
        }
        return;
    }
    if (!(d->flags & TS_OPF_INPLACE0)) return;
    int k = n->op == TS_OP_ADD && n->nin == 2 ? 2 : 1; /* an add of equal shapes: either input */
    for (int j = 0; j < k; j++) {
        if (n->in[j] < 0 || (k == 2 && !same_shape(&g->vals[n->in[0]], &g->vals[n->in[1]]))) continue;
        int r = mp->root[n->in[j]];
        if (into_sink(g, in_arena, pinned, until, sink, def, last, mp, r, o, p, taken)) {
            move_into(mp, nv, r, o, taken);
            return;
        }
    }
}

ts_status ts_memplan_build(const ts_graph *g, const int *sched, int nsched, const uint8_t *in_arena,
                           const uint8_t *pinned, const int *until, const uint8_t *sink, ts_memplan *mp) {
    int nv = g->nvals;
    memset(mp, 0, sizeof *mp);
    mp->offset = malloc(sizeof(int64_t) * (size_t)nv);
    mp->root = malloc(sizeof(int) * (size_t)nv);
    int *def = malloc(sizeof(int) * (size_t)nv), *last = malloc(sizeof(int) * (size_t)nv);
    storage *s = malloc(sizeof(storage) * (size_t)(nv ? nv : 1));
    storage **ov = malloc(sizeof(storage *) * (size_t)(nv + 1));
    uint8_t *taken = calloc((size_t)nv + 1, 1);
    if (!mp->offset || !mp->root || !def || !last || !s || !ov || !taken) {
        free(def), free(last), free(s), free(ov), free(taken);
        ts_memplan_free(mp);
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory planning the memory of %d values", nv);
    }
    for (int v = 0; v < nv; v++) {
        mp->offset[v] = -1;
        mp->root[v] = v;
        def[v] = -1;
        last[v] = -1;
    }
    /* roots of aliases, definitions, last uses */
    for (int p = 0; p < nsched; p++) {
        const ts_node *n = &g->nodes[sched[p]];
        const ts_op_def *d = ts_op_get(n->op);
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) {
                int r = mp->root[n->in[j]];
                last[r] = p;
            }
        for (int k = 0; k < n->nout; k++) {
            def[n->out[k]] = p;
            last[n->out[k]] = p;
        }
        /* (a reshape into a sink is linked by sink_node below, which may turn it around) */
        if ((d->flags & TS_OPF_ALIAS0) && n->in[0] >= 0 && !(sink && sink[n->out[0]] && !in_arena[n->out[0]]))
            mp->root[n->out[0]] = mp->root[n->in[0]];
    }
    for (int v = 0; v < nv; v++) {
        if (pinned[v]) last[mp->root[v]] = nsched;
        if (until && until[v] > last[mp->root[v]]) last[mp->root[v]] = until[v];
    }
    /* last[] of a root now covers its aliases' uses only if they were visited as that root:
     * uses of an alias were recorded on its root above because root[] was set before them. */

    /* in place: into a sink (a gradient's own buffer), then into a dying arena input */
    for (int p = 0; p < nsched; p++)
        sink_node(g, &g->nodes[sched[p]], p, in_arena, pinned, until, sink, def, last, mp, taken);
    free(taken);
    for (int p = 0; p < nsched; p++) {
        const ts_node *n = &g->nodes[sched[p]];
        const ts_op_def *d = ts_op_get(n->op);
        if (!(d->flags & TS_OPF_INPLACE0) || n->in[0] < 0) continue;
        int r = mp->root[n->in[0]], o = n->out[0];
        if (!in_arena[r] || !in_arena[o] || pinned[r] || (until && until[r] >= 0) || last[r] != p) continue;
        if (ts_val_bytes(&g->vals[r]) != ts_val_bytes(&g->vals[o])) continue;
        if (mp->root[o] != o) continue;
        for (int w = 0; w < nv; w++) /* o's aliases (defined later) follow it */
            if (mp->root[w] == o) mp->root[w] = r;
        mp->root[o] = r;
        last[r] = last[o];
        mp->inplace++;
    }
    /* aliases created after an in-place merge still point at an old root: resolve chains */
    for (int v = 0; v < nv; v++) {
        int r = mp->root[v];
        while (mp->root[r] != r) r = mp->root[r];
        mp->root[v] = r;
    }

    /* placement */
    int ns = 0;
    for (int v = 0; v < nv; v++) {
        if (!in_arena[v] || def[v] < 0) continue;
        if (!(ts_op_get(g->nodes[g->vals[v].node].op)->flags & TS_OPF_ALIAS0))
            mp->total_bytes += align64(ts_val_bytes(&g->vals[v]));
        if (mp->root[v] != v || !in_arena[mp->root[v]]) continue;
        s[ns].v = v;
        s[ns].def = def[v];
        s[ns].last = last[v] > def[v] ? last[v] : def[v];
        s[ns].bytes = align64(ts_val_bytes(&g->vals[v]));
        s[ns].off = -1;
        ns++;
    }
    qsort(s, (size_t)ns, sizeof *s, by_size_desc);
    for (int i = 0; i < ns; i++) {
        /* the placed storages alive at the same time, by offset; take the lowest gap that fits */
        int k = 0;
        for (int j = 0; j < i; j++)
            if (s[j].def <= s[i].last && s[i].def <= s[j].last) ov[k++] = &s[j];
        qsort(ov, (size_t)k, sizeof *ov, by_offset);
        int64_t cur = 0;
        for (int j = 0; j < k; j++) {
            if (ov[j]->off >= cur + (int64_t)s[i].bytes) break;
            int64_t end = ov[j]->off + (int64_t)ov[j]->bytes;
            if (end > cur) cur = end;
        }
        s[i].off = cur;
        if ((size_t)cur + s[i].bytes > mp->arena_bytes) mp->arena_bytes = (size_t)cur + s[i].bytes;
        mp->offset[s[i].v] = cur;
    }
    free(ov);
    for (int v = 0; v < nv; v++)
        if (in_arena[v] && def[v] >= 0) mp->offset[v] = mp->offset[mp->root[v]];
    free(s);
    free(def);
    free(last);
    return TS_OK;
}

void ts_memplan_free(ts_memplan *mp) {
    free(mp->offset);
    free(mp->root);
    memset(mp, 0, sizeof *mp);
}
