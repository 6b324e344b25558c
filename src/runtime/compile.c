/*
 * compile.c — ts_compile: copy the graph, run the passes (inference rewrite, dead code, fusion),
 * plan memory, check it against the device's, allocate the arena and the persistent and slotted
 * buffers, let the device compile its executables (one per phase), and initialise parameters.
 * A graph compiled with stage devices becomes a pipeline (pipeline.c), whose stages come back
 * here one by one through ts_compile_on with a stage spec.
 */
#include "dist/comm.h"
#include "runtime/program.h"

#include <omp.h>
#include <stdio.h>
#include <unistd.h>

void ts_set_threads(int n) {
    static int default_threads = 0;
    if (!default_threads) default_threads = omp_get_max_threads(); /* before any program set it */
    omp_set_dynamic(0); /* always the count asked for: results depend on it (see ts_compile_opts) */
    omp_set_num_threads(n > 0 ? n : default_threads);
}

void ts_program_free(ts_program *p) {
    if (!p) return;
    if (p->pipe) ts_pipeline_free(p->pipe);
    ts_profile_free(p);
    for (int k = 0; p->exe && k < p->nphases; k++)
        if (p->exe[k]) p->dev->api->release(p->dev->ctx, p->exe[k]);
    free(p->exe);
    free(p->plan);
    free(p->abi);
    free(p->phase_begin);
    if (p->vals && p->g)
        for (int v = 0; v < p->g->nvals; v++)
            if (p->owned[v]) ts_dev_free(p->dev, &p->vals[v].buf);
    for (int i = 0; i < p->nslots; i++) {
        ts_dev_free(p->dev, &p->slots[i].base);
        free(p->slots[i].vals);
    }
    free(p->slots);
    if (p->dev) {
        ts_dev_free(p->dev, &p->arena);
        ts_dev_free(p->dev, &p->workspace);
    }
    free(p->vals);
    free(p->owned);
    free(p->sched);
    free(p->nodes);
    free(p->fetch);
    free(p->params);
    free(p->kept);
    if (p->fetch_host)
        for (int i = 0; i < p->nfetch; i++) free(p->fetch_host[i]);
    free(p->fetch_host);
    ts_graph_free(p->g);
    free(p);
}

void ts_slot_select(ts_program *p, const ts_slotted *s, int k) {
    ts_buffer b = ts_buf_at(s->base, (uint64_t)k * s->stride);
    for (int i = 0; i < s->nvals; i++) p->vals[s->vals[i]].buf = b;
}

ts_slotted *ts_slot_of(ts_program *p, int v) {
    for (int i = 0; i < p->nslots; i++)
        for (int j = 0; j < p->slots[i].nvals; j++)
            if (p->slots[i].vals[j] == v) return &p->slots[i];
    return NULL;
}

static ts_program *fail(ts_program *p) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    ts_status code = ts_last_status();
    ts_program_free(p);
    ts_err(code != TS_OK ? code : TS_ERR_ARG, "%s", msg); /* keep the message and its code */
    return NULL;
}

int ts_max_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return 4 * (n > 0 ? (int)n : 1);
}

static double gib(size_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

/* TS_ERR_NOMEM when what m's parts, `other` (inputs and constants) and ws (workspace) add up to
 * exceeds the device's memory or the limit set. */
static ts_status check_memory(const ts_device *dev, const ts_compile_opts *o, const ts_graph *g, const ts_memory *m,
                              size_t other, size_t ws, int largest) {
    const char *what = o->memory_limit ? "the limit set" : "its memory";
    size_t budget = o->memory_limit ? o->memory_limit : ts_device_memory(dev);
    size_t need = m->params + m->grads + m->optimizer_state + m->grad_buckets + m->activations + other + ws;
    if (!budget || need <= budget) return TS_OK;
    char big[320] = "", desc[256];
    if (largest >= 0)
        snprintf(big, sizeof big, "; the largest value: %s, %.2f GiB", ts_val_str(g, largest, desc, sizeof desc),
                 gib(ts_val_bytes(&g->vals[largest])));
    return ts_err(TS_ERR_NOMEM, "ts_compile: the program needs %.2f GiB on device %s (parameters %.2f, gradients %.2f, "
                  "optimizer state %.2f, activations %.2f, inputs and constants %.2f, workspace %.2f GiB%s); the "
                  "device has %.2f GiB (%s)", gib(need), dev->name, gib(m->params), gib(m->grads),
                  gib(m->optimizer_state), gib(m->activations), gib(other), gib(ws), big, gib(budget), what);
}

/* Does parameter v have a gradient made in this program (any, without a stage spec)? */
static int has_grad_here(const ts_graph *g, int v, const ts_stage_spec *spec) {
    int gv = g->vals[v].kind == TS_V_PARAM ? g->vals[v].grad : -1;
    if (gv < 0) return 0;
    return !spec || (g->vals[gv].kind == TS_V_NODE && spec->alive[g->vals[gv].node]);
}

/* The ABI's view of scheduled node n. */
static void abi_node(const ts_graph *g, const ts_node *n, ts_abi_node *a) {
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->op = ts_op_get(n->op)->name;
    a->op_id = n->op;
    a->nin = n->nin;
    a->nout = n->nout;
    for (int j = 0; j < TS_ABI_MAX_IN; j++) a->in[j] = j < n->nin ? n->in[j] : -1;
    for (int k = 0; k < TS_ABI_MAX_OUT; k++) a->out[k] = k < n->nout ? n->out[k] : -1;
    for (int i = 0; i < TS_ABI_MAX_IATTR && i < TS_MAX_DIMS + 4; i++) a->iattr[i] = n->attr.i[i];
    memcpy(a->fattr, n->attr.f, sizeof a->fattr);
    (void)g;
}

/* Every scheduled node the device has no kernel for, all in one message. */
static ts_status check_supported(const ts_program *p) {
    const ts_backend_api *api = p->dev->api;
    char msg[1024];
    size_t o = 0;
    int bad = 0;
    for (int i = 0; i < p->nsched; i++) {
        const ts_node *n = &p->g->nodes[p->sched[i]];
        ts_dtype dt = n->nout ? p->g->vals[n->out[0]].dtype : TS_F32;
        if (api->supports(p->dev->ctx, ts_op_get(n->op)->name, dt)) continue;
        if (bad++ < 12 && o < sizeof msg)
            o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%s (%s)", bad > 1 ? ", " : "", ts_op_get(n->op)->name,
                                  ts_dtype_name(dt));
    }
    if (!bad) return TS_OK;
    return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: device %s has no kernel for %d node%s of the program: %s%s",
                  p->dev->name, bad, bad == 1 ? "" : "s", msg, bad > 12 ? ", ..." : "");
}

ts_program *ts_compile_on(ts_graph *g, ts_device *dev, const ts_compile_opts *opts, const ts_stage_spec *spec) {
    ts_compile_opts o = *opts;
    ts_program *p = calloc(1, sizeof *p);
    if (!p) {
        ts_graph_free(g);
        ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
        return NULL;
    }
    p->dev = dev;
    p->iters = o.device_iterations > 1 ? o.device_iterations : 1;
    p->num_threads = o.num_threads;
    p->g = g;
    int nv = g->nvals;
    uint8_t *pinned = calloc((size_t)nv, 1), *alive = malloc((size_t)(g->nnodes ? g->nnodes : 1));
    uint8_t *in_arena = calloc((size_t)nv, 1), *used = calloc((size_t)nv, 1), *is_grad = calloc((size_t)nv, 1);
    uint8_t *kept = p->kept = calloc((size_t)nv ? (size_t)nv : 1, 1); /* the plans point at it */
    int *until = malloc(sizeof(int) * (size_t)(nv ? nv : 1)), *nslot = calloc((size_t)nv, sizeof(int));
    p->vals = calloc((size_t)nv, sizeof *p->vals);
    p->owned = calloc((size_t)nv, 1);
    p->fetch = malloc(sizeof(int) * (size_t)(o.nfetch + 1));
    p->params = malloc(sizeof(int) * (size_t)(nv + 1));
    if (!pinned || !alive || !in_arena || !used || !is_grad || !kept || !until || !nslot || !p->vals || !p->owned || !p->fetch ||
        !p->params)
        abort();
    for (int v = 0; v < nv; v++) until[v] = -1;
    for (int i = 0; i < g->nnodes; i++) alive[i] = spec ? spec->alive[i] : 1;
    ts_memplan mp = {0};

    /* fetches */
    for (int i = 0; i < o.nfetch; i++) {
        const char *name = o.fetches[i];
        int v = ts_lookup(g, name ? name : "");
        if (v == TS_NONE) {
            ts_err(TS_ERR_NOT_FOUND, "ts_compile: fetch '%s' is not a named value of the graph",
                   name ? name : "(null)");
            goto error;
        }
        pinned[v] = 1;
        p->fetch[p->nfetch++] = v;
    }
    /* gradients of parameters stay to the end of the step, like PyTorch's .grad (in a pipeline
     * stage, those it makes) */
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM) continue;
        p->params[p->nparams++] = v;
        if (!o.inference && has_grad_here(g, v, spec)) pinned[g->vals[v].grad] = 1;
    }
    /* what a pipeline stage sends to others must survive dead-code elimination */
    if (spec)
        for (int v = 0; v < nv; v++)
            if (spec->sent[v]) pinned[v] = 1;

    /* inference: no updates, dropout is the identity — a reshape to its own shape, which the
     * memory plan makes an alias of its input (no copy: 37 passes over [B, T, C] or [B, H, T, T]
     * in a BERT-Base forward, 4% of it at batch 8) */
    if (o.inference)
        for (int i = 0; i < g->nnodes; i++) {
            ts_node *n = &g->nodes[i];
            if (ts_op_get(n->op)->flags & TS_OPF_SIDE_EFFECT) alive[i] = 0;
            if (n->op == TS_OP_DROPOUT) {
                const ts_val *y = &g->vals[n->out[0]];
                n->op = TS_OP_RESHAPE;
                memset(&n->attr, 0, sizeof n->attr);
                n->attr.ni = y->ndim;
                for (int d = 0; d < y->ndim; d++) n->attr.i[d] = y->shape[d];
            }
        }
    /* grads not needed in inference: unpin them so dead code removes the backward pass */
    ts_pass_dce(g, alive, pinned, !o.inference);
    int fused = o.no_fusion || spec ? 0 : ts_pass_fuse(g, alive, pinned, dev->api == &ts_backend_cpu_api); /* a pipeline fused before the split */
    if (fused) ts_pass_dce(g, alive, pinned, !o.inference);
    if (spec) /* sent values are kept to their phase's end (below), not the step's */
        for (int v = 0; v < nv; v++)
            if (spec->sent[v]) pinned[v] = 0;
    for (int i = 0; i < p->nfetch; i++) pinned[p->fetch[i]] = 1;
    for (int v = 0; v < nv; v++)
        if (!o.inference && has_grad_here(g, v, spec)) pinned[g->vals[v].grad] = 1;

    /* the schedule, phase by phase (node order within a phase) */
    p->nphases = spec ? spec->nphases : 1;
    p->sched = malloc(sizeof(int) * (size_t)(g->nnodes + 1));
    p->nodes = malloc(sizeof(ts_abi_node) * (size_t)(g->nnodes + 1));
    p->phase_begin = malloc(sizeof(int) * (size_t)(p->nphases + 1));
    p->plan = calloc((size_t)p->nphases, sizeof *p->plan);
    p->abi = calloc((size_t)p->nphases, sizeof *p->abi);
    p->exe = calloc((size_t)p->nphases, sizeof *p->exe);
    if (!p->sched || !p->nodes || !p->phase_begin || !p->plan || !p->abi || !p->exe) abort();
    for (int ph = 0; ph < p->nphases; ph++) {
        p->phase_begin[ph] = p->nsched;
        for (int i = 0; i < g->nnodes; i++)
            if (alive[i] && (spec ? spec->phase[i] : 0) == ph) p->sched[p->nsched++] = i;
    }
    p->phase_begin[p->nphases] = p->nsched;
    for (int s = 0; s < p->nsched; s++) abi_node(g, &g->nodes[p->sched[s]], &p->nodes[s]);

    /* frozen: no scheduled node writes persistent memory, so parameters change only between runs
     * (ts_plan.param_gen); then in a forward-only program the casts of weights are kept across runs
     * (ts_plan.kept; not with a backward, where recompute clones casts to keep less) */
    int frozen = !spec, forward_only = 1, nkept = 0;
    for (int s = 0; s < p->nsched; s++) {
        int id = p->sched[s], op = g->nodes[id].op;
        if (ts_op_get(op)->flags & TS_OPF_SIDE_EFFECT) frozen = 0;
        if (ts_node_phase(g, id, op == TS_OP_ACCUM_GRAD) != 0) forward_only = 0;
    }
    for (int s = 0; s < p->nsched && frozen && forward_only; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        int kind = n->op == TS_OP_CAST && n->in[0] >= 0 ? g->vals[n->in[0]].kind : TS_V_NODE;
        if (kind == TS_V_PARAM || kind == TS_V_CONST) kept[n->out[0]] = 1, nkept++;
    }

    /* which values live in the arena: every op output except parameter gradients, slotted ones and
     * kept casts of weights */
    for (int s = 0; s < p->nsched; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) used[n->in[j]] = 1;
        for (int k = 0; k < n->nout; k++) used[n->out[k]] = 1;
    }
    for (int v = 0; v < nv; v++) if (pinned[v]) used[v] = 1;
    for (int v = 0; v < nv; v++) /* a packed value's bucket holds it */
        if (used[v] && g->vals[v].pack > 0) used[g->vals[v].pack - 1] = 1;
    for (int v = 0; v < nv; v++)
        if (!o.inference && has_grad_here(g, v, spec)) is_grad[g->vals[v].grad] = 1;
    for (int v = 0; v < nv; v++)
        nslot[v] = spec && spec->slots[v] > 0 ? spec->slots[v] : g->vals[v].kind == TS_V_INPUT && p->iters > 1 ? p->iters : 0;
    /* a slotted value's storage is its alias root's (a reshape of a kept value keeps the value) */
    for (int s = 0; spec && s < p->nsched; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        if (!(ts_op_get(n->op)->flags & TS_OPF_ALIAS0) || n->in[0] < 0) continue;
        int r = n->in[0];
        while (g->vals[r].kind == TS_V_NODE && (ts_op_get(g->nodes[g->vals[r].node].op)->flags & TS_OPF_ALIAS0) &&
               g->nodes[g->vals[r].node].in[0] >= 0)
            r = g->nodes[g->vals[r].node].in[0];
        if (nslot[n->out[0]] > nslot[r]) nslot[r] = nslot[n->out[0]];
    }
    for (int v = 0; v < nv; v++) {
        int root_slotted = 0; /* an alias of a slotted root lives in its slots, not the arena */
        if (spec && g->vals[v].kind == TS_V_NODE && (ts_op_get(g->nodes[g->vals[v].node].op)->flags & TS_OPF_ALIAS0)) {
            int r = v;
            while (g->vals[r].kind == TS_V_NODE && (ts_op_get(g->nodes[g->vals[r].node].op)->flags & TS_OPF_ALIAS0) &&
                   g->nodes[g->vals[r].node].in[0] >= 0)
                r = g->nodes[g->vals[r].node].in[0];
            root_slotted = r != v && nslot[r] > 0;
            if (root_slotted) nslot[v] = 0;
        }
        in_arena[v] = used[v] && g->vals[v].kind == TS_V_NODE && !is_grad[v] && !nslot[v] && !root_slotted && !kept[v];
    }
    /* a sent value lives to the end of the phase that makes it */
    if (spec)
        for (int s = 0; s < p->nsched; s++) {
            const ts_node *n = &g->nodes[p->sched[s]];
            int ph = spec->phase[p->sched[s]];
            for (int k = 0; k < n->nout; k++)
                if (spec->sent[n->out[k]]) until[n->out[k]] = p->phase_begin[ph + 1];
        }
    ts_memplan_build(g, p->sched, p->nsched, in_arena, pinned, until, &mp);

    /* persistent and slotted buffers: parameters, state, inputs, constants, gradients, values
     * kept or received across a pipeline's phases. Pass 0 adds up their sizes, which with the
     * arena's must fit the device's memory; pass 1 allocates them. */
    ts_memory *m = &p->mem;
    size_t other = 0; /* inputs and constants */
    int largest = -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int v = 0; v < nv; v++) {
            ts_val *x = &g->vals[v];
            /* a program holds every parameter (to load and save them) but a pipeline stage only
             * the ones it uses */
            int own = (x->kind != TS_V_NODE || is_grad[v] || nslot[v] || kept[v]) && (used[v] || (x->kind == TS_V_PARAM && !spec)) &&
                      !x->pack;
            if (pass == 0 && used[v] && (largest < 0 || ts_val_bytes(x) > ts_val_bytes(&g->vals[largest])))
                largest = v;
            if (!own || mp.root[v] != v) continue;
            size_t stride = spec ? (ts_val_bytes(x) + 63) & ~(size_t)63 : ts_val_bytes(x);
            size_t bytes = nslot[v] ? stride * (size_t)nslot[v] : ts_val_bytes(x);
            if (pass == 0) {
                if (x->bucket) m->grad_buckets += bytes;
                else if (x->kind == TS_V_PARAM) m->params += bytes;
                else if (kept[v]) m->weight_copies += bytes;
                else if (x->kind == TS_V_STATE) m->optimizer_state += bytes;
                else if (is_grad[v]) m->grads += bytes;
                else if (x->kind == TS_V_NODE || (spec && nslot[v])) m->activations += bytes;
                else other += bytes;
                continue;
            }
            ts_buffer b;
            if (ts_dev_alloc(dev, bytes, &b) != TS_OK) {
                ts_err(TS_ERR_NOMEM, "ts_compile: out of device memory for %s (%.2f GiB)",
                       x->name ? x->name : "a buffer", gib(bytes));
                goto error;
            }
            if (nslot[v]) {
                ts_slotted *ns = realloc(p->slots, sizeof *ns * (size_t)(p->nslots + 1));
                if (!ns) abort();
                p->slots = ns;
                ts_slotted *sl = &p->slots[p->nslots++];
                memset(sl, 0, sizeof *sl);
                sl->root = v, sl->nslots = nslot[v], sl->bytes = ts_val_bytes(x), sl->stride = stride, sl->base = b;
            } else {
                p->vals[v].buf = b;
                p->owned[v] = 1;
            }
        }
        if (pass == 0) {
            m->activations += mp.arena_bytes;
            if (check_memory(dev, &o, g, m, other, 0, largest) != TS_OK) goto error;
        }
    }
    if (mp.arena_bytes && ts_dev_alloc(dev, mp.arena_bytes, &p->arena) != TS_OK) {
        ts_err(TS_ERR_NOMEM, "ts_compile: cannot allocate a %zu-byte arena", mp.arena_bytes);
        goto error;
    }
    for (int v = 0; v < nv; v++)
        if (in_arena[v] && mp.offset[v] >= 0) p->vals[v].buf = ts_buf_at(p->arena, (uint64_t)mp.offset[v]);
    for (int v = 0; v < nv; v++) /* packed values: inside their bucket */
        if (used[v] && g->vals[v].pack > 0) p->vals[v].buf = ts_buf_at(p->vals[g->vals[v].pack - 1].buf, (uint64_t)g->vals[v].pack_off);
    /* aliases: the root's buffer, or a member of the root's slotted buffer */
    for (int v = 0; v < nv; v++) {
        int r = mp.root[v];
        ts_slotted *sl = NULL;
        for (int i = 0; i < p->nslots && !sl; i++)
            if (p->slots[i].root == r) sl = &p->slots[i];
        if (sl && (used[v] || v == r)) {
            sl->vals = realloc(sl->vals, sizeof(int) * (size_t)(sl->nvals + 1));
            if (!sl->vals) abort();
            sl->vals[sl->nvals++] = v;
        } else if (r != v && !p->vals[v].buf.mem) {
            p->vals[v].buf = p->vals[r].buf;
        }
    }
    for (int i = 0; i < p->nslots; i++) ts_slot_select(p, &p->slots[i], 0);
    if (p->iters > 1) {
        p->fetch_host = calloc((size_t)p->nfetch + 1, sizeof(void *));
        if (!p->fetch_host) abort();
        for (int i = 0; i < p->nfetch; i++) {
            size_t bytes = ts_val_bytes(&g->vals[p->fetch[i]]) * (size_t)p->iters;
            if (!(p->fetch_host[i] = calloc(1, bytes ? bytes : 1))) {
                ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the fetches of %d device iterations", p->iters);
                goto error;
            }
        }
    }
    if (spec) { /* a stage's parameters: those it holds */
        int k = 0;
        for (int i = 0; i < p->nparams; i++)
            if (p->owned[p->params[i]]) p->params[k++] = p->params[i];
        p->nparams = k;
    }
    m->intermediates_total = mp.total_bytes;
    m->nodes = p->nsched;
    m->fused = fused;
    ts_memplan_free(&mp);

    /* the value table, then the device's executables: one per phase that has nodes */
    for (int v = 0; v < nv; v++) {
        const ts_val *x = &g->vals[v];
        ts_abi_value *a = &p->vals[v];
        a->struct_size = sizeof *a;
        a->dtype = x->dtype;
        a->ndim = x->ndim;
        memcpy(a->shape, x->shape, sizeof a->shape);
        a->name = x->name;
    }
    if (check_supported(p) != TS_OK) goto error;
    size_t ws = 0;
    ts_set_threads(o.num_threads);
    for (int ph = 0; ph < p->nphases; ph++) {
        int b = p->phase_begin[ph], e = p->phase_begin[ph + 1];
        if (e == b) continue;
        p->plan[ph] = (ts_plan){g, p->sched + b, e - b, p->vals, NULL, NULL, frozen ? &p->param_gen : NULL,
                                nkept ? kept : NULL, &m->weight_copies};
        p->abi[ph] = (ts_abi_plan){sizeof(ts_abi_plan), nv, p->vals, e - b, p->nodes + b, &p->plan[ph]};
        size_t need = 0;
        if (dev->api->compile(dev->ctx, &p->abi[ph], &need, &p->exe[ph]) != TS_OK) goto error;
        if (need > ws) ws = need;
    }
    if (check_memory(dev, &o, g, m, other, ws, largest) != TS_OK) goto error;
    if (ws && ts_dev_alloc(dev, ws, &p->workspace) != TS_OK) {
        ts_err(TS_ERR_NOMEM, "ts_compile: cannot allocate %zu bytes of workspace", ws);
        goto error;
    }
    m->workspace = ws;

    /* initial values of what the program owns, through one small staging buffer that stays in
     * cache (and a zero one, never written): a whole-value host copy of each parameter cost a
     * page fault per 4 KiB of it and a pass through memory, ~0.3 s of a BERT-Base compile */
    enum { STAGE = 1 << 20 }; /* elements per piece */
    float *stage = malloc(sizeof(float) * STAGE);
    uint16_t *half = malloc(2 * (size_t)STAGE);
    void *zeros = calloc(STAGE, sizeof(float));
    if (!stage || !half || !zeros) {
        free(stage), free(half), free(zeros);
        ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
        goto error;
    }
    for (int v = 0; v < nv; v++) {
        ts_val *x = &g->vals[v];
        if (!p->owned[v] || kept[v]) continue; /* a kept cast is made by its first run */
        int64_t n = ts_val_numel(x);
        ts_status st = TS_OK;
        if (x->kind == TS_V_CONST) {
            st = ts_dev_copy_in(dev, p->vals[v].buf, x->data->data, ts_val_bytes(x));
        } else if (x->kind == TS_V_PARAM) {
            size_t es = x->dtype == TS_F32 ? 4 : 2;
            for (int64_t at = 0; at < n && st == TS_OK; at += STAGE) {
                int64_t k = n - at < STAGE ? n - at : STAGE;
                if (o.skip_param_init) memset(stage, 0, sizeof(float) * (size_t)k); /* loaded next */
                else ts_init_fill(&x->init, g->seed, x->name, stage, at, k);
                if (x->dtype == TS_BF16) ts_f32_to_bf16(stage, half, (size_t)k);
                if (x->dtype == TS_F16) ts_f32_to_f16(stage, half, (size_t)k);
                st = ts_dev_copy_in(dev, ts_buf_at(p->vals[v].buf, (uint64_t)at * es),
                                    es == 4 ? (void *)stage : (void *)half, (size_t)k * es);
            }
        } else {
            size_t bytes = ts_val_bytes(x);
            for (size_t at = 0; at < bytes && st == TS_OK; at += sizeof(float) * STAGE) {
                size_t k = bytes - at < sizeof(float) * STAGE ? bytes - at : sizeof(float) * STAGE;
                st = ts_dev_copy_in(dev, ts_buf_at(p->vals[v].buf, at), zeros, k);
            }
        }
        if (st != TS_OK) {
            free(stage), free(half), free(zeros);
            goto error;
        }
    }
    free(stage), free(half), free(zeros);
    free(pinned), free(alive), free(in_arena), free(used), free(is_grad), free(until), free(nslot);
    return p;
error:
    ts_memplan_free(&mp);
    free(pinned), free(alive), free(in_arena), free(used), free(is_grad), free(until), free(nslot);
    return fail(p);
}

ts_program *ts_compile(const ts_graph *graph, const ts_compile_opts *opts) {
    ts_compile_opts o = {0};
    if (opts) o = *opts;
    if (!graph) { ts_err(TS_ERR_ARG, "ts_compile: graph is NULL"); return NULL; }
    if (TS_CHECK_STRUCT(&o, ts_compile_opts, "ts_compile")) return NULL;
    if (graph->status != TS_OK) {
        ts_err(graph->status, "ts_compile: the graph has an error from building: %s", graph->status_msg);
        return NULL;
    }
    if (o.nfetch < 0 || (o.nfetch > 0 && !o.fetches)) {
        ts_err(TS_ERR_ARG, "ts_compile: nfetch is %d but fetches is %s", o.nfetch, o.fetches ? "set" : "NULL");
        return NULL;
    }
    if (o.num_threads < 0 || o.num_threads > ts_max_threads()) {
        ts_err(TS_ERR_ARG, "ts_compile: num_threads %d is outside 0..%d (4 x the %d online CPUs)", o.num_threads,
               ts_max_threads(), ts_max_threads() / 4);
        return NULL;
    }
    if (o.device_iterations < 0) {
        ts_err(TS_ERR_ARG, "ts_compile: device_iterations is %d; it must be >= 0", o.device_iterations);
        return NULL;
    }
    if (o.nstage_devices < 0 || (o.nstage_devices > 0 && !o.stage_devices)) {
        ts_err(TS_ERR_ARG, "ts_compile: nstage_devices is %d but stage_devices is %s", o.nstage_devices,
               o.stage_devices ? "set" : "NULL");
        return NULL;
    }
    if (graph->replicas > 1 && !o.inference) { /* the collectives' channels: host, then one per stage */
        ts_comm *c = ts_comm_by_id(graph->comm_id);
        if (!c) {
            ts_err(TS_ERR_COMM, "ts_compile: the graph's optimizer sums over communicator %d, which does not exist "
                   "(finalized?)", graph->comm_id);
            return NULL;
        }
        if (ts_comm_channels(c, 1 + (graph->nstages > 0 ? graph->nstages : 1)) != TS_OK) return NULL;
    }
    if (o.profile && o.nstage_devices > 0 && !o.inference) {
        ts_err(TS_ERR_UNSUPPORTED, "ts_compile: profile is not supported for a pipelined program (stage_devices); "
               "profile it without stages");
        return NULL;
    }
    if (o.nstage_devices > 0 && !o.inference) return ts_pipeline_compile(graph, &o);
    ts_device *dev = ts_device_get(o.nstage_devices > 0 ? o.stage_devices[0] : o.device ? o.device : "cpu");
    if (!dev) return NULL;
    ts_graph *g = ts_graph_clone(graph);
    if (!g) { ts_err(TS_ERR_NOMEM, "ts_compile: out of memory"); return NULL; }
    ts_program *p = ts_compile_on(g, dev, &o, NULL);
    if (p && o.profile && ts_profile_enable(p) != TS_OK) {
        ts_program_free(p);
        return NULL;
    }
    return p;
}
