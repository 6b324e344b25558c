/*
 * cpu_backend.c — the CPU backend: host memory, OpenMP kernels, oneDNN where it is faster.
 * It goes through the device ABI like any other backend would.
 */
#include "backend/cpu/cpu.h"

#include <stdio.h>
#include <unistd.h>

typedef struct {
    const ts_cpu_kernel **kern; /* per scheduled node: own kernel or NULL */
    void **state;               /* per scheduled node */
    int n;
} cpu_prog;

/* Not zeroed: the runtime initialises every persistent buffer, and every arena value is written
 * by its node before it is read (zeroing a BERT-Base arena would touch ~1.5 GB at compile). */
static void *cpu_alloc(const ts_backend *be, size_t bytes) { (void)be; return ts_alloc(bytes, 0); }
static void cpu_free(const ts_backend *be, void *p) { (void)be; ts_free(p); }
static ts_status cpu_copy(const ts_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memcpy(dst, src, bytes);
    return TS_OK;
}

static void cpu_release(const ts_backend *be, void *compiled) {
    (void)be;
    cpu_prog *cp = compiled;
    if (!cp) return;
    for (int i = 0; i < cp->n; i++)
        if (cp->kern[i] && cp->kern[i]->release && cp->state[i]) cp->kern[i]->release(cp->state[i]);
    free(cp->kern);
    free(cp->state);
    free(cp);
}

static ts_status cpu_compile(const ts_backend *be, const ts_plan *plan, size_t *workspace, void **out) {
    cpu_prog *cp = calloc(1, sizeof *cp);
    if (!cp) return ts_err(TS_ERR_NOMEM, "cpu: out of memory");
    cp->n = plan->nsched;
    cp->kern = calloc((size_t)cp->n + 1, sizeof *cp->kern);
    cp->state = calloc((size_t)cp->n + 1, sizeof *cp->state);
    if (!cp->kern || !cp->state) { cpu_release(be, cp); return ts_err(TS_ERR_NOMEM, "cpu: out of memory"); }
    size_t ws = 0;
    for (int i = 0; i < plan->nsched; i++) {
        const ts_node *n = &plan->g->nodes[plan->sched[i]];
        const ts_op_def *d = ts_op_get(n->op);
        size_t need = 0;
        cp->kern[i] = ts_cpu_kernel_for(n->op);
        if (cp->kern[i] && cp->kern[i]->prepare) {
            ts_status s = cp->kern[i]->prepare(plan->g, n, &cp->state[i], &need);
            if (s != TS_OK) { cpu_release(be, cp); return s; }
        } else if (!cp->kern[i] && d->scratch) {
            need = d->scratch(plan->g, n);
        }
        if (!cp->kern[i] && !d->kernel) {
            cpu_release(be, cp);
            return ts_err(TS_ERR_UNSUPPORTED, "cpu: op %s has no kernel", d->name);
        }
        if (need > ws) ws = need;
    }
    *workspace = ws;
    *out = cp;
    return TS_OK;
}

static ts_status cpu_run(const ts_backend *be, void *compiled, const ts_plan *plan, uint64_t step) {
    (void)be;
    cpu_prog *cp = compiled;
    ts_kargs a;
    memset(&a, 0, sizeof a);
    a.g = plan->g;
    a.scratch = plan->workspace;
    a.scratch_bytes = plan->workspace_bytes;
    a.step = step;
    for (int i = 0; i < plan->nsched; i++) {
        const ts_node *n = &plan->g->nodes[plan->sched[i]];
        a.node = n;
        for (int j = 0; j < TS_MAX_IN; j++) a.in[j] = j < n->nin && n->in[j] >= 0 ? plan->buf[n->in[j]] : NULL;
        for (int k = 0; k < TS_MAX_OUT; k++) a.out[k] = k < n->nout ? plan->buf[n->out[k]] : NULL;
        a.state = cp->state[i];
        ts_status s = cp->kern[i] ? cp->kern[i]->run(&a) : ts_op_get(n->op)->kernel(&a);
        if (s != TS_OK) return s;
    }
    return TS_OK;
}

static ts_status cpu_sync(const ts_backend *be) { (void)be; return TS_OK; }

/* A number of bytes from the first line of a file ("max" or unreadable: 0). */
static size_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    int ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    return ok ? (size_t)v : 0;
}

/* The CPU's memory: physical memory, or the control group's limit when that is lower (a
 * container: cgroup v2's memory.max, v1's memory.limit_in_bytes). */
static size_t cpu_memory(const ts_backend *be) {
    (void)be;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t phys = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    const char *const limits[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (int i = 0; i < 2; i++) {
        size_t lim = read_limit(limits[i]);
        if (lim && (!phys || lim < phys)) phys = lim;
    }
    return phys;
}

const ts_backend ts_backend_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_in = cpu_copy,
    .copy_out = cpu_copy,
    .compile = cpu_compile,
    .run = cpu_run,
    .release = cpu_release,
    .synchronize = cpu_sync,
    .memory_bytes = cpu_memory,
    /* collectives: filled by the distributed work (MPI) */
};
