/*
 * placement.c — which device runs each node of a program, and the copies that makes (what
 * ggml's scheduler does for a graph split across backends). Each scheduled node is asked of the
 * program's device (backend `supports`, on the whole node). A phase's schedule is cut into parts:
 * stretches of nodes the device runs, and stretches it does not, which run on the CPU. A CPU part
 * works on host copies of the values its nodes touch, laid out as they are on the device (see
 * stage_part: values that share bytes there share them on the host); before it runs, the values it
 * reads that were made elsewhere are copied in from the device, and after it, the values it made
 * that anything else reads (a later node, a fetch, a persistent buffer) and the inputs it writes
 * in place (optimizer updates) are copied back. With strict (ts_compile_opts.strict_device, or
 * the device's option "fallback" "none": ts_device_set_option), a node the device lacks is an
 * error instead. On a plugin's device the placement line is a notice (ts_set_notice_sink: the
 * host's log, registry.c; nothing printed unless the caller gave a sink). Calls: the device
 * layer. Called by compile.c (ts_exec_place) and exec.c (ts_part_run).
 */
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>

/* The ops of the scheduled nodes the device does not run, each once with its count, in the order
 * they first run: "matmul x12, add x20, gelu x2". Returns how many nodes that is. */
static int fallback_ops(const ts_exec *p, const uint8_t *native, char *out, size_t cap) {
    int *count = calloc((size_t)TS_OP_COUNT + 1, sizeof *count), nfall = 0;
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < p->nsched; i++)
        if (!native[i]) {
            nfall++;
            if (count) count[p->g->nodes[p->sched[i]].op]++;
        }
    if (!count) return nfall;
    for (int i = 0; i < p->nsched && o < cap; i++) {
        int op = p->g->nodes[p->sched[i]].op;
        if (native[i] || !count[op]) continue;
        o += (size_t)snprintf(out + o, cap - o, "%s%s x%d", o ? ", " : "", ts_op_get(op)->name, count[op]);
        count[op] = 0; /* said */
    }
    free(count);
    return nfall;
}

/* Every scheduled node the device has no kernel for, all in one message (strict). */
static ts_status refuse(const ts_exec *p, const uint8_t *native) {
    char ops[1024];
    int bad = fallback_ops(p, native, ops, sizeof ops);
    return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: device %s%s%s has no kernel for %d node%s of the program: %s "
                  "(strict device: no CPU fallback)", p->dev->name, p->label[0] ? ", " : "", p->label, bad,
                  bad == 1 ? "" : "s", ops);
}

static ts_part *add_part(ts_exec *p, ts_device *dev, int phase, int begin, int end) {
    ts_part *np = realloc(p->parts, sizeof *np * (size_t)(p->nparts + 1));
    if (!np) return NULL;
    p->parts = np;
    ts_part *pt = &p->parts[p->nparts++];
    memset(pt, 0, sizeof *pt);
    pt->dev = dev, pt->phase = phase, pt->begin = begin, pt->end = end;
    return pt;
}

/* reads[v]: how many inputs of scheduled nodes are value v (counted once for the placement). */
static int *count_reads(const ts_exec *p) {
    int *reads = calloc((size_t)p->g->nvals + 1, sizeof *reads);
    for (int s = 0; reads && s < p->nsched; s++) {
        const ts_node *n = &p->g->nodes[p->sched[s]];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) reads[n->in[j]]++;
    }
    return reads;
}

/* A value touched by a fallback part, by its device place (sorted: allocation, then offset). */
typedef struct placed_val {
    uintptr_t mem;
    uint64_t offset, end;
    int v;
} placed_val;

static int by_place(const void *a, const void *b) {
    const placed_val *x = a, *y = b;
    if (x->mem != y->mem) return x->mem < y->mem ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* A CPU part's host copies mirror the device's layout: the values it touches are grouped by
 * device allocation, the byte ranges they cover merged where they overlap, and each merged range
 * gets one stretch of the staging buffer, a value at the same offset within it as on the device.
 * So values that share bytes on the device share them on the host, whatever the sharing: a
 * reshape's alias, an output written in place, a gradient inside its bucket, two values the
 * memory plan gave one place because their lifetimes do not meet. Then the copies in and out. */
static ts_status stage_part(ts_exec *p, ts_part *pt, const uint8_t *pinned, const int *reads) {
    const ts_graph *g = p->g;
    int nv = g->nvals, ntouched = 0;
    pt->vals = calloc((size_t)nv + 1, sizeof *pt->vals);
    int64_t *at = malloc(sizeof(int64_t) * ((size_t)nv + 1)); /* per value: its offset in the stage, -1 */
    uint8_t *made = calloc((size_t)nv + 1, 1), *in = calloc((size_t)nv + 1, 1), *out = calloc((size_t)nv + 1, 1);
    placed_val *touched = malloc(sizeof *touched * ((size_t)nv + 1));
    int *here = calloc((size_t)nv + 1, sizeof(int)); /* reads here */
    pt->copy_in = malloc(sizeof(int) * ((size_t)nv + 1)), pt->copy_out = malloc(sizeof(int) * ((size_t)nv + 1));
    if (!pt->vals || !at || !made || !in || !out || !touched || !here || !pt->copy_in || !pt->copy_out) {
        free(at), free(made), free(in), free(out), free(touched), free(here);
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory placing the CPU fallback");
    }
    memcpy(pt->vals, p->vals, sizeof *pt->vals * (size_t)nv);
    for (int v = 0; v < nv; v++) at[v] = -1, pt->vals[v].buf = (ts_buffer){NULL, 0};
    for (int s = pt->begin; s < pt->end; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        int side = (ts_op_get(n->op)->flags & TS_OPF_SIDE_EFFECT) != 0;
        for (int j = 0; j < n->nin + n->nout; j++) {
            int v = j < n->nin ? n->in[j] : n->out[j - n->nin];
            if (v >= 0 && j < n->nin) here[v]++;
            if (v < 0 || !p->vals[v].buf.mem) continue;
            if (j < n->nin && !made[v]) in[v] = 1;              /* read before this part makes it */
            if (j >= n->nin) made[v] = 1;
            if (j >= n->nin || (side && g->vals[v].kind != TS_V_CONST)) out[v] = 1;
            if (at[v] != -1) continue;
            at[v] = -2;
            ts_buffer b = p->vals[v].buf;
            touched[ntouched++] = (placed_val){(uintptr_t)b.mem, b.offset, b.offset + ts_val_bytes(&g->vals[v]), v};
        }
    }
    /* merged ranges, in device order: [lo, hi) of one allocation at stage offset base */
    qsort(touched, (size_t)ntouched, sizeof *touched, by_place);
    size_t total = 0;
    for (int i = 0; i < ntouched;) {
        uint64_t lo = touched[i].offset, hi = touched[i].end;
        int j = i + 1;
        for (; j < ntouched && touched[j].mem == touched[i].mem && touched[j].offset < hi; j++)
            if (touched[j].end > hi) hi = touched[j].end;
        for (int k = i; k < j; k++) at[touched[k].v] = (int64_t)(total + (touched[k].offset - lo));
        total += (hi - lo + 63) / 64 * 64;
        i = j;
    }
    for (int v = 0; v < nv; v++) {
        size_t bytes = ts_val_bytes(&g->vals[v]);
        if (in[v]) pt->copy_in[pt->ncopy_in++] = v, pt->bytes_in += bytes;
        if (out[v] && (pinned[v] || p->owned[v] || g->vals[v].kind != TS_V_NODE || !made[v] || reads[v] > here[v]))
            pt->copy_out[pt->ncopy_out++] = v, pt->bytes_out += bytes;
    }
    ts_status st = ts_dev_alloc(p->cpu, total, &pt->stage);
    for (int v = 0; st == TS_OK && v < nv; v++)
        if (at[v] >= 0) pt->vals[v].buf = ts_buf_at(pt->stage, (uint64_t)at[v]);
    free(at), free(made), free(in), free(out), free(touched), free(here);
    return st ? ts_err(st, "ts_compile: cannot allocate %zu bytes of host copies for the CPU fallback", total) : TS_OK;
}

/* The line ts_program_placement returns: "placement, stage 1 of 2: cpuplugin runs 32 of 118
 * nodes; the CPU runs 86 (matmul x12, add x20, ...) in 15 parts; 143 copies per run, 1.22 MiB
 * moved". */
static void describe(ts_exec *p, const uint8_t *native) {
    int ncpu_parts = 0, ncopies = 0;
    size_t moved = 0;
    char ops[512];
    int nfall = fallback_ops(p, native, ops, sizeof ops);
    for (int k = 0; k < p->nparts; k++)
        if (p->parts[k].vals) {
            ncpu_parts++;
            ncopies += p->parts[k].ncopy_in + p->parts[k].ncopy_out;
            moved += p->parts[k].bytes_in + p->parts[k].bytes_out;
        }
    char label[64] = "", buf[768];
    if (p->label[0]) snprintf(label, sizeof label, "placement, %s: ", p->label);
    else snprintf(label, sizeof label, "placement: ");
    if (!nfall)
        snprintf(buf, sizeof buf, "%s%s runs all %d nodes", label, p->dev->name, p->nsched);
    else
        snprintf(buf, sizeof buf, "%s%s runs %d of %d nodes; the CPU runs %d (%s) in %d part%s; %d copies per run, "
                 "%.2f MiB moved", label, p->dev->name, p->nsched - nfall, p->nsched, nfall, ops, ncpu_parts,
                 ncpu_parts == 1 ? "" : "s", ncopies, (double)moved / (1024.0 * 1024.0));
    p->placement = strdup(buf);
}

ts_status ts_exec_place(ts_exec *p, int strict, const uint8_t *pinned) {
    if (p->dev->no_fallback) strict = 1; /* the device's option "fallback" "none" */
    uint8_t *native = malloc((size_t)p->nsched + 1);
    p->part_begin = malloc(sizeof(int) * ((size_t)p->nphases + 1));
    if (!native || !p->part_begin) { free(native); return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory"); }
    int nfall = 0;
    for (int i = 0; i < p->nsched; i++) nfall += !(native[i] = (uint8_t)ts_dev_supports(p->dev, p->g, &p->g->nodes[p->sched[i]]));
    ts_status st = TS_OK;
    if (nfall && strict) st = refuse(p, native);
    if (!st && nfall && !(p->cpu = ts_device_fallback(p->dev))) st = ts_last_status();
    int *reads = !st && nfall ? count_reads(p) : NULL;
    if (!st && nfall && !reads) st = ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    for (int ph = 0; !st && ph < p->nphases; ph++) {
        p->part_begin[ph] = p->nparts;
        for (int s = p->phase_begin[ph]; !st && s < p->phase_begin[ph + 1];) {
            int e = s;
            while (e < p->phase_begin[ph + 1] && native[e] == native[s]) e++;
            ts_part *pt = add_part(p, native[s] ? p->dev : p->cpu, ph, s, e);
            if (!pt) st = ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
            else if (!native[s]) st = stage_part(p, pt, pinned, reads);
            s = e;
        }
    }
    p->part_begin[p->nphases] = p->nparts;
    free(reads);
    if (!st) describe(p, native);
    if (!st && p->placement && !ts_device_is_builtin_cpu(p->dev))
        ts_host.log(nfall ? 1 : 0, p->placement); /* a notice at compile, for a device of a plugin */
    free(native);
    return st;
}

ts_status ts_part_run(ts_exec *p, int k, uint64_t step) {
    ts_part *pt = &p->parts[k];
    ts_buffer ws = pt->vals ? p->cpu_workspace : p->workspace;
    ts_status s = TS_OK;
    if (pt->vals) s = ts_dev_sync(p->dev);
    for (int i = 0; !s && i < pt->ncopy_in; i++) {
        int v = pt->copy_in[i];
        s = ts_dev_copy(pt->dev, pt->vals[v].buf, p->dev, p->vals[v].buf, ts_val_bytes(&p->g->vals[v]));
    }
    if (!s) s = ts_dev_execute(pt->dev, pt->exe, &pt->abi, ws, step);
    if (!s) s = ts_dev_sync(pt->dev); /* done before anyone reads its results */
    for (int i = 0; !s && i < pt->ncopy_out; i++) {
        int v = pt->copy_out[i];
        s = ts_dev_copy(p->dev, p->vals[v].buf, pt->dev, pt->vals[v].buf, ts_val_bytes(&p->g->vals[v]));
    }
    return s;
}

void ts_parts_free(ts_exec *p) {
    for (int k = 0; k < p->nparts; k++) {
        ts_part *pt = &p->parts[k];
        if (pt->exe) pt->dev->api->release(pt->dev->ctx, pt->exe);
        if (pt->vals) ts_dev_free(pt->dev, &pt->stage);
        free(pt->vals), free(pt->copy_in), free(pt->copy_out);
    }
    free(p->parts);
    free(p->part_begin);
    free(p->placement);
    if (p->cpu) ts_dev_free(p->cpu, &p->cpu_workspace);
    p->parts = NULL, p->part_begin = NULL, p->placement = NULL, p->nparts = 0;
}
