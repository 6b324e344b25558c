/*
 * arena.c — the device memory of a program's intermediates, as the memory plan laid it out
 * (graph/memplan.c: a byte offset per value in one arena), allocated in chunks when the device
 * caps a single allocation (backend max_alloc: OpenCL's CL_DEVICE_MAX_MEM_ALLOC_SIZE). The arena
 * is cut at offsets no value straddles, each chunk as long as the cap allows; a value then lives
 * in the chunk holding its offset. Without a cap (the CPU), or when the arena fits, one chunk.
 */
#include "runtime/exec.h"

#include <stdio.h>

/* A value's bytes in the arena. */
typedef struct { uint64_t start, end; } span;

static int by_start(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

ts_status ts_arena_alloc(ts_exec *p, const int64_t *offset, const uint8_t *in_arena, size_t total) {
    size_t cap = ts_dev_max_alloc(p->dev);
    p->nchunks = 0;
    if (!total) return TS_OK;
    int nv = p->g->nvals, n = 0;
    span *s = malloc(sizeof *s * ((size_t)nv + 1));
    p->chunk = malloc(sizeof *p->chunk * ((size_t)nv + 2));
    p->chunk_at = malloc(sizeof *p->chunk_at * ((size_t)nv + 3));
    if (!s || !p->chunk || !p->chunk_at) { free(s); return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory"); }
    for (int v = 0; v < nv; v++)
        if (in_arena[v] && offset[v] >= 0)
            s[n++] = (span){(uint64_t)offset[v], (uint64_t)offset[v] + ts_val_bytes(&p->g->vals[v])};
    qsort(s, (size_t)n, sizeof *s, by_start);
    /* cuts: walk the spans by start, keeping the furthest end so far; a start at or past it is a
     * place no value straddles. Take the last such place that keeps the chunk within the cap. */
    uint64_t begin = 0, reach = 0, last_cut = 0;
    ts_status st = TS_OK;
    p->chunk_at[0] = 0;
    for (int i = 0; i <= n && !st; i++) {
        uint64_t at = i < n ? s[i].start : total;
        if (at >= reach) { /* a clean cut at `at` */
            if (cap && at - begin > cap) {
                if (last_cut == begin)
                    st = ts_err(TS_ERR_NOMEM, "ts_compile: device %s allocates at most %.2f GiB at once, and the "
                                "intermediates cannot be cut into pieces that small (%.2f GiB without a place "
                                "between values)", p->dev->name, (double)cap / (1 << 30),
                                (double)(at - begin) / (1 << 30));
                else
                    p->chunk_at[++p->nchunks] = begin = last_cut;
                if (!st && at - begin > cap)
                    st = ts_err(TS_ERR_NOMEM, "ts_compile: device %s allocates at most %.2f GiB at once, and a value "
                                "of the intermediates is larger (%.2f GiB)", p->dev->name, (double)cap / (1 << 30),
                                (double)(at - begin) / (1 << 30));
            }
            last_cut = at;
        }
        if (i < n && s[i].end > reach) reach = s[i].end;
    }
    free(s);
    if (st) return st;
    p->chunk_at[++p->nchunks] = total;
    for (int k = 0; k < p->nchunks; k++) {
        size_t bytes = (size_t)(p->chunk_at[k + 1] - p->chunk_at[k]);
        ts_status s = ts_dev_alloc(p->dev, bytes, &p->chunk[k]);
        if (s != TS_OK) { /* the device's message kept */
            p->nchunks = k;
            return ts_err(s, "ts_compile: cannot allocate a %zu-byte arena%s on device %s: %s", bytes,
                          p->chunk_at[1] < total ? " piece" : "", p->dev->name, ts_last_error());
        }
    }
    return TS_OK;
}

ts_buffer ts_arena_at(const ts_exec *p, int64_t off) {
    int k = 0;
    while (k + 1 < p->nchunks && (uint64_t)off >= p->chunk_at[k + 1]) k++;
    return ts_buf_at(p->chunk[k], (uint64_t)off - p->chunk_at[k]);
}

void ts_arena_free(ts_exec *p) {
    for (int k = 0; k < p->nchunks; k++) ts_dev_free(p->dev, &p->chunk[k]);
    free(p->chunk), free(p->chunk_at);
    p->chunk = NULL, p->chunk_at = NULL, p->nchunks = 0;
}
