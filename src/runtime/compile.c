/*
 * compile.c — a program on one device (ts_exec, exec.h) from a graph, in named steps (the table
 * of contents is ts_exec_compile at the bottom): pin what must survive, rewrite for inference, the
 * passes (dead code, fusion), the schedule by phase, where each value lives, the memory plan
 * checked against the device's (where a program compiled for planning only ends, unchecked), the
 * buffers, the value table, the device's support and its executables (one per phase), and the
 * initial values. A new step is a function here and a line in ts_exec_compile. Calls: exec.c, the graph passes, memplan, the device; called by program.c
 * (ts_compile on one device) and pipeline.c (one stage at a time, with a stage spec).
 */
#include "comm/comm.h"
#include "runtime/program.h"

#include <stdio.h>

static double gib(size_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

/* TS_ERR_NOMEM when what m's parts, `other` (inputs and constants) and ws (workspace) add up to,
 * with `before` (what a pipeline's earlier stages take on the same device), exceeds the device's
 * memory or the limit set. */
static ts_status check_memory(const ts_device *dev, const ts_compile_opts *o, const ts_graph *g, const ts_memory *m,
                              size_t other, size_t ws, int largest, size_t before) {
    const char *what = o->memory_limit ? "the limit set" : "its memory";
    size_t budget = o->memory_limit ? o->memory_limit : ts_device_memory(dev);
    size_t need = m->params + m->grads + m->optimizer_state + m->grad_buckets + m->activations + other + ws;
    if (!budget || need + before <= budget) return TS_OK;
    char big[320] = "", desc[256], earlier[128] = "";
    if (largest >= 0)
        snprintf(big, sizeof big, "; the largest value: %s, %.2f GiB", ts_val_str(g, largest, desc, sizeof desc),
                 gib(ts_val_bytes(&g->vals[largest])));
    if (before) snprintf(earlier, sizeof earlier, " beside the %.2f GiB of the pipeline's earlier stages there", gib(before));
    return ts_err(TS_ERR_NOMEM, "ts_compile: the program needs %.2f GiB on device %s (parameters %.2f, gradients %.2f, "
                  "optimizer state %.2f, activations %.2f, inputs and constants %.2f, workspace %.2f GiB%s)%s; the "
                  "device has %.2f GiB (%s)", gib(need), dev->name, gib(m->params), gib(m->grads),
                  gib(m->optimizer_state), gib(m->activations), gib(other), gib(ws), big, earlier, gib(budget), what);
}

/* Does parameter v have a gradient made in this program (any, without a stage spec) that the
 * program keeps to the end of the step? Not in inference, nor where the updates run in the
 * backward pass (ts_optim_opts.updates_in_backward: each gradient dies at its update). */
static int grad_kept(const ts_graph *g, int v, const ts_stage_spec *spec, const ts_compile_opts *o) {
    int gv = g->vals[v].kind == TS_V_PARAM ? g->vals[v].grad : -1;
    if (gv < 0 || o->inference || g->updates_in_backward) return 0;
    return !spec || (g->vals[gv].kind == TS_V_NODE && spec->alive[g->vals[gv].node]);
}

int ts_device_fuses(ts_device *dev, const ts_graph *g, const ts_node *fused, const ts_node *producer) {
    if (ts_dev_supports(dev, g, fused)) return 1;
    if (!producer || ts_dev_supports(dev, g, producer)) return 0;
    ts_device *cpu = ts_device_fallback(dev); /* the producer falls back: the merged node may too */
    return cpu && ts_dev_supports(cpu, g, fused);
}

/* Fusion asks the program's device (ts_fuse_accept). */
static int device_accepts(void *dev, const ts_graph *g, const ts_node *fused, const ts_node *producer) {
    return ts_device_fuses(dev, g, fused, producer);
}

/* What the steps of a compile share: the program being built, and per value / node what the
 * passes and the plan decided. */
typedef struct build {
    ts_exec *p;
    ts_graph *g;
    ts_device *dev;
    const ts_compile_opts *o;
    const ts_stage_spec *spec;  /* a pipeline stage's, or NULL */
    int nv;
    uint8_t *pinned;            /* per value: keeps its identity through the passes, lives to the end */
    uint8_t *alive;             /* per node: scheduled */
    uint8_t *used;              /* per value: read or written by a scheduled node, or pinned */
    uint8_t *is_grad;           /* per value: a parameter's gradient made here */
    uint8_t *in_arena;          /* per value: planned in the arena */
    int *until;                 /* per value: kept to this schedule position (-1: its last reader) */
    int *nslot;                 /* per value: > 0, a slotted buffer of that many copies */
    ts_memplan mp;
    int fused;                  /* nodes removed by fusion */
    int frozen, nkept;          /* parameters change only between runs; kept casts of weights */
    size_t other;               /* bytes of inputs and constants */
    int largest;                /* the largest used value (for the out-of-memory message) */
} build;

/* Start b: the program and the per-value tables; TS_ERR_NOMEM when out of memory (g freed when p
 * cannot be had, else p holds it and finish frees both). */
static ts_status begin(build *b, ts_graph *g, ts_device *dev, const ts_compile_opts *o, const ts_stage_spec *spec) {
    memset(b, 0, sizeof *b);
    ts_exec *p = b->p = calloc(1, sizeof *p);
    if (!p) {
        ts_graph_free(g);
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    }
    b->g = g, b->dev = dev, b->o = o, b->spec = spec, b->largest = -1;
    p->dev = dev;
    p->iters = o->device_iterations > 1 ? o->device_iterations : 1;
    p->num_threads = o->num_threads;
    p->g = g;
    int nv = b->nv = g->nvals;
    b->pinned = calloc((size_t)nv, 1), b->alive = malloc((size_t)(g->nnodes ? g->nnodes : 1));
    b->in_arena = calloc((size_t)nv, 1), b->used = calloc((size_t)nv, 1), b->is_grad = calloc((size_t)nv, 1);
    p->kept = calloc((size_t)nv ? (size_t)nv : 1, 1); /* the plans point at it */
    b->until = malloc(sizeof(int) * (size_t)(nv ? nv : 1)), b->nslot = calloc((size_t)nv, sizeof(int));
    p->vals = calloc((size_t)nv, sizeof *p->vals);
    p->owned = calloc((size_t)nv, 1);
    p->fetch = malloc(sizeof(int) * (size_t)(o->nfetch + 1));
    p->params = malloc(sizeof(int) * (size_t)(nv + 1));
    if (!b->pinned || !b->alive || !b->in_arena || !b->used || !b->is_grad || !p->kept || !b->until || !b->nslot ||
        !p->vals || !p->owned || !p->fetch || !p->params)
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the tables of %d values", nv);
    for (int v = 0; v < nv; v++) b->until[v] = -1;
    for (int i = 0; i < g->nnodes; i++) b->alive[i] = spec ? spec->alive[i] : 1;
    return TS_OK;
}

/* Pin what must survive the passes: the fetches, the parameters' gradients (to the end of the
 * step, like PyTorch's .grad — unless the updates run in the backward pass, which frees each at its
 * update; in a pipeline stage, those it makes), what a stage sends. */
static ts_status pin(build *b) {
    ts_exec *p = b->p;
    ts_graph *g = b->g;
    for (int i = 0; i < b->o->nfetch; i++) {
        const char *name = b->o->fetches[i];
        int v = ts_lookup(g, name ? name : "");
        if (v == TS_NONE)
            return ts_err(TS_ERR_NOT_FOUND, "ts_compile: fetch '%s' is not a named value of the graph",
                          name ? name : "(null)");
        b->pinned[v] = 1;
        p->fetch[p->nfetch++] = v;
    }
    for (int v = 0; v < b->nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM) continue;
        p->params[p->nparams++] = v;
        if (grad_kept(g, v, b->spec, b->o)) b->pinned[g->vals[v].grad] = 1;
    }
    if (b->spec) /* what a pipeline stage sends to others must survive dead-code elimination */
        for (int v = 0; v < b->nv; v++)
            if (b->spec->sent[v]) b->pinned[v] = 1;
    return TS_OK;
}

/* Inference: no updates, dropout is the identity — a reshape to its own shape, which the memory
 * plan makes an alias of its input (no copy: 37 passes over [B, T, C] or [B, H, T, T] in a
 * BERT-Base forward, 4% of it at batch 8). */
static void rewrite_for_inference(build *b) {
    ts_graph *g = b->g;
    if (!b->o->inference) return;
    for (int i = 0; i < g->nnodes; i++) {
        ts_node *n = &g->nodes[i];
        if (ts_op_get(n->op)->flags & TS_OPF_SIDE_EFFECT) b->alive[i] = 0;
        if (n->op == TS_OP_DROPOUT) {
            const ts_val *y = &g->vals[n->out[0]];
            n->op = TS_OP_RESHAPE;
            memset(&n->attr, 0, sizeof n->attr);
            n->attr.ni = y->ndim;
            for (int d = 0; d < y->ndim; d++) n->attr.i[d] = y->shape[d];
        }
        if (n->op == TS_OP_ATTENTION) n->attr.f[1] = 0.f; /* its dropout too */
    }
}

/* Dead code, then fusion (not in a pipeline stage: the pipeline fused before the split) and dead
 * code again; then pin what lives to the end of the step. TS_ERR_NOMEM when a pass ran out. */
static ts_status run_passes(build *b) {
    const ts_compile_opts *o = b->o;
    ts_graph *g = b->g;
    /* grads not needed in inference: unpinned, so dead code removes the backward pass */
    if (ts_pass_dce(g, b->alive, b->pinned, !o->inference) < 0) return TS_ERR_NOMEM;
    b->fused = o->no_fusion || b->spec ? 0 : ts_pass_fuse(g, b->alive, b->pinned, device_accepts, b->dev);
    if (b->fused < 0) return TS_ERR_NOMEM;
    if (b->fused && ts_pass_dce(g, b->alive, b->pinned, !o->inference) < 0) return TS_ERR_NOMEM;
    if (o->quantize && o->inference)
        b->p->mem.quantized = ts_pass_quantize(g, b->alive, o->quantize == TS_QUANT_STATIC ? o->quant_scales : NULL,
                                               o->quantize == TS_QUANT_STATIC ? o->nquant_scales : 0) +
                              ts_pass_quantize_conv(g, b->alive);
    if (b->spec) /* sent values are kept to their phase's end (choose_storage), not the step's */
        for (int v = 0; v < b->nv; v++)
            if (b->spec->sent[v]) b->pinned[v] = 0;
    for (int i = 0; i < b->p->nfetch; i++) b->pinned[b->p->fetch[i]] = 1;
    for (int v = 0; v < b->nv; v++)
        if (grad_kept(g, v, b->spec, o)) b->pinned[g->vals[v].grad] = 1;
    return TS_OK;
}

/* The schedule, phase by phase (node order within a phase), and the ABI's view of its nodes. */
static ts_status schedule(build *b) {
    ts_exec *p = b->p;
    ts_graph *g = b->g;
    p->nphases = b->spec ? b->spec->nphases : 1;
    p->sched = malloc(sizeof(int) * (size_t)(g->nnodes + 1));
    p->nodes = malloc(sizeof(ts_abi_node) * (size_t)(g->nnodes + 1));
    p->phase_begin = malloc(sizeof(int) * (size_t)(p->nphases + 1));
    if (!p->sched || !p->nodes || !p->phase_begin)
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the schedule of %d nodes", g->nnodes);
    for (int ph = 0; ph < p->nphases; ph++) {
        p->phase_begin[ph] = p->nsched;
        for (int i = 0; i < g->nnodes; i++)
            if (b->alive[i] && (b->spec ? b->spec->phase[i] : 0) == ph) p->sched[p->nsched++] = i;
    }
    p->phase_begin[p->nphases] = p->nsched;
    for (int s = 0; s < p->nsched; s++) ts_abi_node_from(&g->nodes[p->sched[s]], &p->nodes[s]);
    return TS_OK;
}

/* Frozen: no scheduled node writes persistent memory, so parameters change only between runs
 * (ts_plan.param_gen); then in a forward-only program the casts of weights are kept across runs
 * (ts_plan.kept; not with a backward, where recompute clones casts to keep less). */
static void keep_weight_casts(build *b) {
    ts_exec *p = b->p;
    const ts_graph *g = b->g;
    int forward_only = 1;
    b->frozen = !b->spec;
    for (int s = 0; s < p->nsched; s++) {
        int id = p->sched[s], op = g->nodes[id].op;
        if (ts_op_get(op)->flags & TS_OPF_SIDE_EFFECT) b->frozen = 0;
        if (ts_node_phase(g, id, op == TS_OP_ACCUM_GRAD) != 0) forward_only = 0;
    }
    for (int s = 0; s < p->nsched && b->frozen && forward_only; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        int kind = n->op == TS_OP_CAST && n->in[0] >= 0 ? g->vals[n->in[0]].kind : TS_V_NODE;
        if (kind == TS_V_PARAM || kind == TS_V_CONST) p->kept[n->out[0]] = 1, b->nkept++;
    }
}

/* The root of value v through ALIAS0 nodes (a reshape of a value is that value). */
static int alias_root(const ts_graph *g, int v) {
    int r = v;
    while (g->vals[r].kind == TS_V_NODE && (ts_op_get(g->nodes[g->vals[r].node].op)->flags & TS_OPF_ALIAS0) &&
           g->nodes[g->vals[r].node].in[0] >= 0)
        r = g->nodes[g->vals[r].node].in[0];
    return r;
}

/* Where each value lives: the arena holds every op output except parameter gradients, slotted
 * values (and their aliases) and kept casts of weights; a sent value lives to its phase's end. */
static void choose_storage(build *b) {
    ts_exec *p = b->p;
    const ts_graph *g = b->g;
    const ts_stage_spec *spec = b->spec;
    int nv = b->nv;
    for (int s = 0; s < p->nsched; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) b->used[n->in[j]] = 1;
        for (int k = 0; k < n->nout; k++) b->used[n->out[k]] = 1;
    }
    for (int v = 0; v < nv; v++) if (b->pinned[v]) b->used[v] = 1;
    for (int v = 0; v < nv; v++) /* a packed value's bucket holds it */
        if (b->used[v] && g->vals[v].pack > 0) b->used[g->vals[v].pack - 1] = 1;
    for (int v = 0; v < nv; v++)
        if (grad_kept(g, v, spec, b->o)) b->is_grad[g->vals[v].grad] = 1;
    for (int v = 0; v < nv; v++)
        b->nslot[v] = spec && spec->slots[v] > 0 ? spec->slots[v] : g->vals[v].kind == TS_V_INPUT && p->iters > 1 ? p->iters : 0;
    /* a slotted value's storage is its alias root's (a reshape of a kept value keeps the value) */
    for (int s = 0; spec && s < p->nsched; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        if (!(ts_op_get(n->op)->flags & TS_OPF_ALIAS0) || n->in[0] < 0) continue;
        int r = alias_root(g, n->in[0]);
        if (b->nslot[n->out[0]] > b->nslot[r]) b->nslot[r] = b->nslot[n->out[0]];
    }
    for (int v = 0; v < nv; v++) {
        int root_slotted = 0; /* an alias of a slotted root lives in its slots, not the arena */
        if (spec && g->vals[v].kind == TS_V_NODE && (ts_op_get(g->nodes[g->vals[v].node].op)->flags & TS_OPF_ALIAS0)) {
            int r = alias_root(g, v);
            root_slotted = r != v && b->nslot[r] > 0;
            if (root_slotted) b->nslot[v] = 0;
        }
        b->in_arena[v] = b->used[v] && g->vals[v].kind == TS_V_NODE && !b->is_grad[v] && !b->nslot[v] && !root_slotted &&
                         !p->kept[v];
    }
    for (int s = 0; spec && s < p->nsched; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        int ph = spec->phase[p->sched[s]];
        for (int k = 0; k < n->nout; k++)
            if (spec->sent[n->out[k]]) b->until[n->out[k]] = p->phase_begin[ph + 1];
    }
}

/* Does value v get a persistent or slotted buffer of its own? A program holds every parameter
 * (to load and save them) but a pipeline stage only the ones it uses. */
static int own_buffer(const build *b, int v) {
    const ts_val *x = &b->g->vals[v];
    int own = (x->kind != TS_V_NODE || b->is_grad[v] || b->nslot[v] || b->p->kept[v]) &&
              (b->used[v] || (x->kind == TS_V_PARAM && !b->spec)) && !x->pack;
    return own && b->mp.root[v] == v;
}

/* Bytes of value v's own buffer (all its slots), and the stride of one slot. */
static size_t buffer_bytes(const build *b, int v, size_t *stride) {
    const ts_val *x = &b->g->vals[v];
    *stride = b->spec ? (ts_val_bytes(x) + 63) & ~(size_t)63 : ts_val_bytes(x);
    return b->nslot[v] ? *stride * (size_t)b->nslot[v] : ts_val_bytes(x);
}

/* Gradient partials of g: values made by a node (or received from another stage) whose every
 * reader, in any stage, is an add or a reshape making a parameter's gradient or another partial
 * — the MLM decoder's [V, C] share of the
 * tied word embeddings' gradient, before it is added to the lookup's. Gradient data, whatever the
 * batch: counted with the gradients where it has a buffer of its own (plan_memory). NULL when out
 * of memory. */
static uint8_t *gradient_partials(const ts_graph *g) {
    int nv = g->nvals;
    uint8_t *part = calloc((size_t)nv + 1, 1), *grad = calloc((size_t)nv + 1, 1);
    int *readers = calloc((size_t)nv + 1, sizeof(int)), *into = calloc((size_t)nv + 1, sizeof(int));
    if (!part || !grad || !readers || !into) {
        free(part), free(grad), free(readers), free(into);
        return NULL;
    }
    for (int v = 0; v < nv; v++)
        if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0) grad[g->vals[v].grad] = 1;
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].nin; j++)
            if (g->nodes[i].in[j] >= 0) readers[g->nodes[i].in[j]]++;
    for (int changed = 1; changed;) { /* to a fixed point: a partial may feed another */
        changed = 0;
        memset(into, 0, sizeof(int) * (size_t)nv);
        for (int i = 0; i < g->nnodes; i++) {
            const ts_node *n = &g->nodes[i];
            int o = n->nout > 0 ? n->out[0] : -1;
            if (o < 0 || !(grad[o] || part[o]) ||
                !(n->op == TS_OP_ADD || (ts_op_get(n->op)->flags & TS_OPF_ALIAS0)))
                continue;
            for (int j = 0; j < n->nin; j++)
                if (n->in[j] >= 0) into[n->in[j]]++;
        }
        for (int v = 0; v < nv; v++) {
            int k = g->vals[v].kind; /* a node's output, or a value a pipeline stage receives (an input) */
            int is = (k == TS_V_NODE || k == TS_V_INPUT) && !grad[v] && readers[v] > 0 && into[v] == readers[v];
            if (is != part[v]) part[v] = (uint8_t)is, changed = 1;
        }
    }
    free(grad), free(readers), free(into);
    return part;
}

/* The memory plan of the arena, and what the program needs in all (ts_memory), which must fit
 * the device's memory or the limit set. A parameter's gradient made here is a sink of the plan
 * (the value it is made from may be written into its buffer: ts_memplan_build); a gradient partial
 * with a buffer of its own (the share a pipeline stage receives) counts with the gradients. */
static ts_status plan_memory(build *b) {
    ts_memory *m = &b->p->mem;
    const ts_graph *g = b->g;
    uint8_t *sink = calloc((size_t)b->nv + 1, 1), *partial = gradient_partials(g);
    if (!sink || !partial) {
        free(sink), free(partial);
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory planning the memory of %d values", b->nv);
    }
    for (int v = 0; v < b->nv; v++) sink[v] = b->is_grad[v] && !b->nslot[v];
    ts_status st = ts_memplan_build(b->g, b->p->sched, b->p->nsched, b->in_arena, b->pinned, b->until, sink, &b->mp);
    free(sink);
    if (st != TS_OK) {
        free(partial);
        return st;
    }
    for (int v = 0; v < b->nv; v++) {
        const ts_val *x = &g->vals[v];
        if (b->used[v] && (b->largest < 0 || ts_val_bytes(x) > ts_val_bytes(&g->vals[b->largest]))) b->largest = v;
        if (!own_buffer(b, v)) continue;
        size_t stride, bytes = buffer_bytes(b, v, &stride);
        if (x->bucket) m->grad_buckets += bytes;
        else if (x->kind == TS_V_PARAM) m->params += bytes;
        else if (b->p->kept[v]) m->weight_copies += bytes;
        else if (x->kind == TS_V_STATE) m->optimizer_state += bytes;
        else if (b->is_grad[v] || partial[v]) m->grads += bytes;
        else if (x->kind == TS_V_NODE || (b->spec && b->nslot[v])) m->activations += bytes;
        else b->other += bytes;
    }
    free(partial);
    m->activations += b->mp.arena_bytes;
    if (b->o->plan_only) return TS_OK; /* the planner wants the figures even when they do not fit */
    return check_memory(b->dev, b->o, g, m, b->other, 0, b->largest, b->spec ? b->spec->device_used : 0);
}

/* The persistent and slotted buffers (parameters, state, inputs, constants, gradients, values
 * kept or received across a pipeline's phases), and the arena. */
static ts_status alloc_buffers(build *b) {
    ts_exec *p = b->p;
    for (int v = 0; v < b->nv; v++) {
        const ts_val *x = &b->g->vals[v];
        if (!own_buffer(b, v)) continue;
        size_t stride, bytes = buffer_bytes(b, v, &stride), cap = ts_dev_max_alloc(b->dev);
        ts_buffer buf;
        if (cap && bytes > cap)
            return ts_err(TS_ERR_NOMEM, "ts_compile: %s needs %.2f GiB in one piece; device %s allocates at most "
                          "%.2f GiB at once", x->name ? x->name : "a buffer", gib(bytes), b->dev->name, gib(cap));
        ts_status as = ts_dev_alloc(b->dev, bytes, &buf);
        if (as != TS_OK) { /* the device's message (a guarded one's names the device) */
            char size[48];
            if (bytes < (1u << 20)) snprintf(size, sizeof size, "%zu bytes", bytes);
            else snprintf(size, sizeof size, "%.2f GiB", gib(bytes));
            return ts_err(as, "ts_compile: cannot allocate %s (%s)%s%s: %s", x->name ? x->name : "a buffer", size,
                          b->dev->guarded ? "" : " on device ", b->dev->guarded ? "" : b->dev->name, ts_last_error());
        }
        if (b->nslot[v]) {
            ts_slotted *ns = realloc(p->slots, sizeof *ns * (size_t)(p->nslots + 1));
            if (!ns) {
                ts_dev_free(b->dev, &buf);
                return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the table of slotted buffers");
            }
            p->slots = ns;
            ts_slotted *sl = &p->slots[p->nslots++];
            memset(sl, 0, sizeof *sl);
            sl->root = v, sl->nslots = b->nslot[v], sl->bytes = ts_val_bytes(x), sl->stride = stride, sl->base = buf;
        } else {
            p->vals[v].buf = buf;
            p->owned[v] = 1;
        }
    }
    return ts_arena_alloc(p, b->mp.offset, b->in_arena, b->mp.arena_bytes);
}

/* Point every value at its bytes: in the arena, inside its bucket, its alias root's buffer or a
 * member of the root's slotted buffer (slot 0); the host copies of the fetches of device
 * iterations; a stage's parameters: those it holds. */
static ts_status place_values(build *b) {
    ts_exec *p = b->p;
    const ts_graph *g = b->g;
    int nv = b->nv;
    for (int v = 0; v < nv; v++)
        if (b->in_arena[v] && b->mp.offset[v] >= 0) p->vals[v].buf = ts_arena_at(p, b->mp.offset[v]);
    for (int v = 0; v < nv; v++) /* packed values: inside their bucket */
        if (b->used[v] && g->vals[v].pack > 0) p->vals[v].buf = ts_buf_at(p->vals[g->vals[v].pack - 1].buf, (uint64_t)g->vals[v].pack_off);
    for (int v = 0; v < nv; v++) {
        int r = b->mp.root[v];
        ts_slotted *sl = NULL;
        for (int i = 0; i < p->nslots && !sl; i++)
            if (p->slots[i].root == r) sl = &p->slots[i];
        if (sl && (b->used[v] || v == r)) {
            int *vals = realloc(sl->vals, sizeof(int) * (size_t)(sl->nvals + 1));
            if (!vals) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the values of a slotted buffer");
            sl->vals = vals;
            sl->vals[sl->nvals++] = v;
        } else if (r != v && !p->vals[v].buf.mem) {
            p->vals[v].buf = p->vals[r].buf;
        }
    }
    for (int i = 0; i < p->nslots; i++) ts_slot_select(p, &p->slots[i], 0);
    if (p->iters > 1) {
        p->fetch_host = calloc((size_t)p->nfetch + 1, sizeof(void *));
        if (!p->fetch_host)
            return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the fetches of %d device iterations", p->iters);
        for (int i = 0; i < p->nfetch; i++) {
            size_t bytes = ts_val_bytes(&g->vals[p->fetch[i]]) * (size_t)p->iters;
            if (!(p->fetch_host[i] = calloc(1, bytes ? bytes : 1)))
                return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the fetches of %d device iterations", p->iters);
        }
    }
    if (b->spec) {
        int k = 0;
        for (int i = 0; i < p->nparams; i++)
            if (p->owned[p->params[i]]) p->params[k++] = p->params[i];
        p->nparams = k;
    }
    p->mem.intermediates_total = b->mp.total_bytes;
    p->mem.nodes = p->nsched;
    p->mem.fused = b->fused;
    ts_memplan_free(&b->mp);
    return TS_OK;
}

/* The ABI's value table: dtype, shape and name of every value (buffers set above). */
static void value_table(build *b) {
    for (int v = 0; v < b->nv; v++) {
        ts_abi_value *a = &b->p->vals[v];
        ts_abi_value_from(&b->g->vals[v], a);
        a->kept = b->p->kept[v] && b->frozen;
    }
}

/* A program compiled for planning only ends after its memory plan: the figures ts_program_memory
 * reports and a stage's parameters, with no buffer allocated (owned stays 0: it holds none). */
static void planned_only(build *b) {
    ts_exec *p = b->p;
    if (b->spec) {
        int k = 0;
        for (int i = 0; i < p->nparams; i++)
            if (own_buffer(b, p->params[i])) p->params[k++] = p->params[i];
        p->nparams = k;
    }
    p->mem.intermediates_total = b->mp.total_bytes;
    p->mem.nodes = p->nsched;
    p->mem.fused = b->fused;
    value_table(b);
}

/* The devices' executables, one per part (a phase's stretch on one device: placement.c), and the
 * largest workspace each device's parts ask, checked with the rest against the device's memory. */
static ts_status device_compile(build *b) {
    ts_exec *p = b->p;
    ts_memory *m = &p->mem;
    size_t ws = 0, cpu_ws = 0;
    ts_set_threads(b->o->num_threads);
    for (int k = 0; k < p->nparts; k++) {
        ts_part *pt = &p->parts[k];
        pt->abi = (ts_abi_plan){sizeof(ts_abi_plan), b->nv, pt->vals ? pt->vals : p->vals, pt->end - pt->begin,
                                p->nodes + pt->begin, b->frozen ? &p->param_gen : NULL, NULL, NULL, &m->weight_copies,
                                NULL};
        size_t need = 0;
        ts_status st = ts_dev_compile(pt->dev, &pt->abi, &need, &pt->exe);
        if (st != TS_OK) return st;
        size_t *w = pt->vals ? &cpu_ws : &ws;
        if (need > *w) *w = need;
    }
    ts_status st = check_memory(b->dev, b->o, b->g, m, b->other, ws, b->largest, b->spec ? b->spec->device_used : 0);
    if (st != TS_OK) return st;
    if (ws && ts_dev_alloc(b->dev, ws, &p->workspace) != TS_OK)
        return ts_err(TS_ERR_NOMEM, "ts_compile: cannot allocate %zu bytes of workspace", ws);
    if (cpu_ws && ts_dev_alloc(p->cpu, cpu_ws, &p->cpu_workspace) != TS_OK)
        return ts_err(TS_ERR_NOMEM, "ts_compile: cannot allocate %zu bytes of CPU workspace", cpu_ws);
    m->workspace = ws;
    return TS_OK;
}

/* Initial values of what the program owns, through one small staging buffer that stays in cache
 * (and a zero one, never written): a whole-value host copy of each parameter cost a page fault
 * per 4 KiB of it and a pass through memory, ~0.3 s of a BERT-Base compile. */
static ts_status init_values(build *b) {
    enum { STAGE = 1 << 20 }; /* elements per piece */
    ts_exec *p = b->p;
    const ts_graph *g = b->g;
    float *stage = malloc(sizeof(float) * STAGE);
    uint16_t *half = malloc(2 * (size_t)STAGE);
    void *zeros = calloc(STAGE, sizeof(float));
    ts_status st = stage && half && zeros ? TS_OK : ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    for (int v = 0; v < b->nv && st == TS_OK; v++) {
        const ts_val *x = &g->vals[v];
        if (!p->owned[v] || p->kept[v]) continue; /* a kept cast is made by its first run */
        int64_t n = ts_val_numel(x);
        if (x->kind == TS_V_CONST) {
            st = ts_dev_copy_in(b->dev, p->vals[v].buf, x->data->data, ts_val_bytes(x));
        } else if (x->kind == TS_V_PARAM) {
            size_t es = x->dtype == TS_F32 ? 4 : 2;
            for (int64_t at = 0; at < n && st == TS_OK; at += STAGE) {
                int64_t k = n - at < STAGE ? n - at : STAGE;
                if (b->o->skip_param_init) memset(stage, 0, sizeof(float) * (size_t)k); /* loaded next */
                else ts_init_fill(&x->init, g->seed, x->name, stage, at, k);
                if (x->dtype == TS_BF16) ts_f32_to_bf16(stage, half, (size_t)k);
                if (x->dtype == TS_F16) ts_f32_to_f16(stage, half, (size_t)k);
                st = ts_dev_copy_in(b->dev, ts_buf_at(p->vals[v].buf, (uint64_t)at * es),
                                    es == 4 ? (void *)stage : (void *)half, (size_t)k * es);
            }
        } else {
            size_t bytes = ts_val_bytes(x);
            for (size_t at = 0; at < bytes && st == TS_OK; at += sizeof(float) * STAGE) {
                size_t k = bytes - at < sizeof(float) * STAGE ? bytes - at : sizeof(float) * STAGE;
                st = ts_dev_copy_in(b->dev, ts_buf_at(p->vals[v].buf, at), zeros, k);
            }
        }
    }
    free(stage), free(half), free(zeros);
    return st;
}

/* Free b's tables; on failure also the program, keeping the error's message and code. */
static ts_exec *finish(build *b, ts_status st) {
    ts_memplan_free(&b->mp);
    free(b->pinned), free(b->alive), free(b->in_arena), free(b->used), free(b->is_grad), free(b->until), free(b->nslot);
    if (st == TS_OK) return b->p;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    ts_status code = ts_last_status();
    ts_exec_free(b->p);
    ts_err(code != TS_OK ? code : TS_ERR_ARG, "%s", msg);
    return NULL;
}

/* Which device runs each node (placement.c). A CPU fallback part copies back what is read
 * outside it: what this program reads later, fetches or keeps (pinned), and in a pipeline stage
 * what another stage receives (sent: unpinned above, since it lives only to its phase's end). */
static ts_status place_nodes(build *b) {
    if (b->spec) snprintf(b->p->label, sizeof b->p->label, "stage %d of %d", b->spec->stage, b->spec->nstages);
    uint8_t *outside = malloc((size_t)b->nv + 1);
    if (!outside) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    for (int v = 0; v < b->nv; v++) outside[v] = b->pinned[v] || (b->spec && b->spec->sent[v]);
    ts_status st = ts_exec_place(b->p, b->o->strict_device, outside);
    free(outside);
    return st;
}

ts_exec *ts_exec_compile(ts_graph *g, ts_device *dev, const ts_compile_opts *o, const ts_stage_spec *spec) {
    build b;
    ts_status st = begin(&b, g, dev, o, spec);
    if (st != TS_OK) return b.p ? finish(&b, st) : NULL; /* finish frees p, which holds g */
    b.p->param_gen = ts_param_gen_next();
    st = pin(&b);
    if (!st) rewrite_for_inference(&b);
    if (!st) st = run_passes(&b);
    if (!st) st = schedule(&b);
    if (!st) keep_weight_casts(&b);
    if (!st) choose_storage(&b);
    if (!st) st = plan_memory(&b);
    if (!st && o->plan_only) {
        planned_only(&b);
        return finish(&b, st);
    }
    if (!st) st = alloc_buffers(&b);
    if (!st) st = place_values(&b);
    if (!st) value_table(&b);
    if (!st) st = place_nodes(&b);
    if (!st) st = device_compile(&b);
    if (!st) st = init_values(&b);
    return finish(&b, st);
}
