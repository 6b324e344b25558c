/*
 * compile.c — ts_compile: copy the graph, run the passes (inference rewrite, dead code, fusion),
 * plan memory, let the backend prepare its kernels, then allocate the arena and the persistent
 * buffers and initialise parameters.
 */
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

static void *dev_alloc(ts_program *p, size_t bytes) {
    void *b = p->be->alloc(p->be, bytes ? bytes : 64);
    return b;
}

void ts_program_free(ts_program *p) {
    if (!p) return;
    if (p->compiled && p->be->release) p->be->release(p->be, p->compiled);
    if (p->buf && p->g)
        for (int v = 0; v < p->g->nvals; v++)
            if (p->owned[v]) p->be->free(p->be, p->buf[v]);
    if (p->arena) p->be->free(p->be, p->arena);
    if (p->workspace) p->be->free(p->be, p->workspace);
    free(p->buf);
    free(p->owned);
    free(p->sched);
    free(p->fetch);
    free(p->params);
    if (p->fetch_host)
        for (int i = 0; i < p->nfetch; i++) free(p->fetch_host[i]);
    free(p->fetch_host);
    free(p->iter_vals);
    free(p->iter_bytes);
    free(p->iter_base);
    ts_graph_free(p->g);
    free(p);
}

/* Device iterations: record every value whose buffer is (an alias of) an input's, so run()
 * can move it to slice k, and give every fetch a host buffer for K copies. */
static ts_status setup_iterations(ts_program *p, const ts_memplan *mp) {
    const ts_graph *g = p->g;
    int nv = g->nvals;
    p->iter_vals = malloc(sizeof(int) * (size_t)nv);
    p->iter_bytes = malloc(sizeof(size_t) * (size_t)nv);
    p->iter_base = malloc(sizeof(void *) * (size_t)nv);
    p->fetch_host = calloc((size_t)p->nfetch + 1, sizeof(void *));
    if (!p->iter_vals || !p->iter_bytes || !p->iter_base || !p->fetch_host)
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    for (int v = 0; v < nv; v++) {
        int r = mp->root[v];
        if (!p->buf[v] || g->vals[r].kind != TS_V_INPUT) continue;
        p->iter_vals[p->niter_vals] = v;
        p->iter_bytes[p->niter_vals] = ts_val_bytes(&g->vals[r]);
        p->iter_base[p->niter_vals++] = p->buf[v];
    }
    for (int i = 0; i < p->nfetch; i++) {
        size_t bytes = ts_val_bytes(&g->vals[p->fetch[i]]) * (size_t)p->iters;
        if (!(p->fetch_host[i] = calloc(1, bytes ? bytes : 1)))
            return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the fetches of %d device "
                          "iterations", p->iters);
    }
    return TS_OK;
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

/* The bytes the device may give this program: opts' limit, else the device's memory (0: no
 * limit known). *what says which. */
static size_t memory_budget(const ts_backend *be, const ts_compile_opts *o, const char **what) {
    if (o->memory_limit) {
        *what = "the limit set";
        return o->memory_limit;
    }
    *what = "its memory";
    return be->memory_bytes ? be->memory_bytes(be) : 0;
}

/* TS_ERR_NOMEM when `need` bytes (m's parts, and ws of workspace) exceed the budget. */
static ts_status check_memory(const ts_backend *be, const ts_compile_opts *o, const ts_graph *g, const ts_memory *m,
                              size_t other, size_t ws, int largest) {
    const char *what;
    size_t budget = memory_budget(be, o, &what);
    size_t need = m->params + m->grads + m->optimizer_state + m->activations + other + ws;
    if (!budget || need <= budget) return TS_OK;
    char big[320] = "", desc[256];
    if (largest >= 0)
        snprintf(big, sizeof big, "; the largest value: %s, %.2f GiB", ts_val_str(g, largest, desc, sizeof desc),
                 gib(ts_val_bytes(&g->vals[largest])));
    return ts_err(TS_ERR_NOMEM, "ts_compile: the program needs %.2f GiB on device %s (parameters %.2f, gradients %.2f, "
                  "optimizer state %.2f, activations %.2f, inputs and constants %.2f, workspace %.2f GiB%s); the "
                  "device has %.2f GiB (%s)", gib(need), be->name, gib(m->params), gib(m->grads),
                  gib(m->optimizer_state), gib(m->activations), gib(other), gib(ws), big, gib(budget), what);
}

ts_program *ts_compile(const ts_graph *graph, const ts_compile_opts *opts) {
    ts_compile_opts o = {0};
    if (opts) o = *opts;
    if (!graph) { ts_err(TS_ERR_ARG, "ts_compile: graph is NULL"); return NULL; }
    if (graph->status != TS_OK) {
        ts_err(graph->status, "ts_compile: the graph has an error from building: %s", graph->status_msg);
        return NULL;
    }
    const char *dev = o.device ? o.device : "cpu";
    const ts_backend *be = ts_backend_find(dev);
    if (!be) return NULL;
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

    ts_program *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->be = be;
    p->iters = o.device_iterations > 1 ? o.device_iterations : 1;
    p->num_threads = o.num_threads;
    p->g = ts_graph_clone(graph);
    ts_graph *g = p->g;
    int nv = g->nvals;

    uint8_t *pinned = calloc((size_t)nv, 1), *alive = malloc((size_t)(g->nnodes ? g->nnodes : 1));
    uint8_t *in_arena = calloc((size_t)nv, 1);
    p->buf = calloc((size_t)nv, sizeof(void *));
    p->owned = calloc((size_t)nv, 1);
    p->fetch = malloc(sizeof(int) * (size_t)(o.nfetch + 1));
    p->params = malloc(sizeof(int) * (size_t)(nv + 1));
    if (!pinned || !alive || !in_arena || !p->buf || !p->owned || !p->fetch || !p->params) abort();
    memset(alive, 1, (size_t)g->nnodes);

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
    /* gradients of parameters stay to the end of the step, like PyTorch's .grad */
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind == TS_V_PARAM) p->params[p->nparams++] = v;
        if (!o.inference && g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0) pinned[g->vals[v].grad] = 1;
    }

    /* inference: no updates, dropout is the identity */
    if (o.inference)
        for (int i = 0; i < g->nnodes; i++) {
            if (ts_op_get(g->nodes[i].op)->flags & TS_OPF_SIDE_EFFECT) alive[i] = 0;
            if (g->nodes[i].op == TS_OP_DROPOUT) g->nodes[i].attr.f[0] = 0.f;
        }
    /* grads not needed in inference: unpin them so dead code removes the backward pass */
    int removed = ts_pass_dce(g, alive, pinned, !o.inference);
    (void)removed;
    int fused = o.no_fusion ? 0 : ts_pass_fuse(g, alive, pinned);
    if (fused) ts_pass_dce(g, alive, pinned, !o.inference);

    p->sched = malloc(sizeof(int) * (size_t)(g->nnodes + 1));
    for (int i = 0; i < g->nnodes; i++)
        if (alive[i]) p->sched[p->nsched++] = i;

    /* which values live in the arena: every op output except parameter gradients */
    uint8_t *used = calloc((size_t)nv, 1);
    for (int s = 0; s < p->nsched; s++) {
        const ts_node *n = &g->nodes[p->sched[s]];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) used[n->in[j]] = 1;
        for (int k = 0; k < n->nout; k++) used[n->out[k]] = 1;
    }
    for (int v = 0; v < nv; v++) if (pinned[v]) used[v] = 1;
    uint8_t *is_grad = calloc((size_t)nv, 1);
    for (int v = 0; v < nv; v++)
        if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0 && !o.inference) is_grad[g->vals[v].grad] = 1;
    for (int v = 0; v < nv; v++)
        in_arena[v] = used[v] && g->vals[v].kind == TS_V_NODE && !is_grad[v];

    ts_memplan mp;
    ts_memplan_build(g, p->sched, p->nsched, in_arena, pinned, &mp);

    /* persistent buffers: parameters, state, inputs, constants, gradients. Pass 0 adds up their
     * sizes, which with the arena's must fit the device's memory; pass 1 allocates them. */
    ts_memory *m = &p->mem;
    size_t other = 0; /* inputs and constants */
    int largest = -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int v = 0; v < nv; v++) {
            ts_val *x = &g->vals[v];
            int persistent = x->kind != TS_V_NODE || is_grad[v];
            if (pass == 0 && used[v] && (largest < 0 || ts_val_bytes(x) > ts_val_bytes(&g->vals[largest])))
                largest = v;
            if (!persistent || !(used[v] || x->kind == TS_V_PARAM)) continue;
            if (mp.root[v] != v) continue;
            size_t bytes = ts_val_bytes(x) * (x->kind == TS_V_INPUT ? (size_t)p->iters : 1);
            if (pass == 0) {
                if (x->kind == TS_V_PARAM) m->params += bytes;
                else if (x->kind == TS_V_STATE) m->optimizer_state += bytes;
                else if (is_grad[v]) m->grads += bytes;
                else other += bytes;
                continue;
            }
            p->buf[v] = dev_alloc(p, bytes);
            if (!p->buf[v]) {
                ts_err(TS_ERR_NOMEM, "ts_compile: out of device memory for %s (%.2f GiB)",
                       x->name ? x->name : "a buffer", gib(bytes));
                ts_memplan_free(&mp); free(used); free(is_grad);
                goto error;
            }
            p->owned[v] = 1;
        }
        m->activations = mp.arena_bytes;
        if (pass == 0 && check_memory(be, &o, g, m, other, 0, largest) != TS_OK) {
            ts_memplan_free(&mp); free(used); free(is_grad);
            goto error;
        }
    }
    p->arena = mp.arena_bytes ? dev_alloc(p, mp.arena_bytes) : NULL;
    if (mp.arena_bytes && !p->arena) {
        ts_err(TS_ERR_NOMEM, "ts_compile: cannot allocate a %zu-byte arena", mp.arena_bytes);
        ts_memplan_free(&mp); free(used); free(is_grad);
        goto error;
    }
    for (int v = 0; v < nv; v++)
        if (in_arena[v] && mp.offset[v] >= 0) p->buf[v] = (char *)p->arena + mp.offset[v];
    for (int v = 0; v < nv; v++)
        if (mp.root[v] != v && !p->buf[v]) p->buf[v] = p->buf[mp.root[v]];
    if (p->iters > 1 && setup_iterations(p, &mp) != TS_OK) {
        ts_memplan_free(&mp); free(used); free(is_grad);
        goto error;
    }
    m->activations = mp.arena_bytes;
    m->intermediates_total = mp.total_bytes;
    m->nodes = p->nsched;
    m->fused = fused;
    ts_memplan_free(&mp);
    free(used);
    free(is_grad);

    /* backend compile */
    p->plan.g = g;
    p->plan.sched = p->sched;
    p->plan.nsched = p->nsched;
    p->plan.buf = p->buf;
    size_t ws = 0;
    ts_set_threads(o.num_threads);
    if (be->compile(be, &p->plan, &ws, &p->compiled) != TS_OK) goto error;
    if (check_memory(be, &o, g, m, other, ws, largest) != TS_OK) goto error;
    if (ws) {
        p->workspace = dev_alloc(p, ws);
        if (!p->workspace) { ts_err(TS_ERR_NOMEM, "ts_compile: cannot allocate %zu bytes of workspace", ws); goto error; }
    }
    p->plan.workspace = p->workspace;
    p->plan.workspace_bytes = ws;
    m->workspace = ws;

    /* initial values */
    for (int v = 0; v < nv; v++) {
        ts_val *x = &g->vals[v];
        if (!p->owned[v]) continue;
        int64_t n = ts_val_numel(x);
        if (x->kind == TS_V_CONST) {
            be->copy_in(be, p->buf[v], x->data->data, ts_val_bytes(x));
        } else if (x->kind == TS_V_PARAM) {
            float *tmp = malloc(sizeof(float) * (size_t)(n ? n : 1));
            if (!tmp) { ts_err(TS_ERR_NOMEM, "ts_compile: out of memory"); goto error; }
            ts_init_fill(&x->init, g->seed, x->name, tmp, n);
            if (x->dtype == TS_F32) be->copy_in(be, p->buf[v], tmp, (size_t)n * 4);
            else {
                uint16_t *h = malloc(2 * (size_t)(n ? n : 1));
                if (x->dtype == TS_BF16) ts_f32_to_bf16(tmp, h, (size_t)n);
                else ts_f32_to_f16(tmp, h, (size_t)n);
                be->copy_in(be, p->buf[v], h, (size_t)n * 2);
                free(h);
            }
            free(tmp);
        } else {
            void *z = calloc(1, ts_val_bytes(x) + 1);
            be->copy_in(be, p->buf[v], z, ts_val_bytes(x));
            free(z);
        }
    }
    free(pinned);
    free(alive);
    free(in_arena);
    return p;
error:
    free(pinned);
    free(alive);
    free(in_arena);
    return fail(p);
}
