/*
 * profile.c — ts_compile_opts.profile: per scheduled node, the time spent in its kernel (the
 * backend's node loop adds to ts_abi_plan.prof_ns / prof_calls), the wall time of each
 * ts_program_run, and the report: totals, the share outside kernels, time per op type and per
 * layer (the layer rule is documented with ts_program_profile_report in tessera.h), and the
 * largest op instances by shape; an op is named with the kernel the device chose for it where it
 * chose among several (ts_abi_plan.prof_kernel). Calls nothing in the runtime; called by exec.c (the counters)
 * and program.c (enabling them); the report reads a program on one device (exec.h).
 */
#include "runtime/program.h"

#include <stdio.h>
#include <string.h>

typedef struct ts_profile {
    uint64_t *ns, *calls; /* per scheduled node (p->sched order) */
    const char **kernel;  /* per scheduled node: the kernel the device chose, or NULL (ts_abi_plan) */
    uint64_t wall_ns;     /* ts_program_run calls since the last reset */
    uint64_t runs;
} ts_profile;

ts_status ts_profile_enable(ts_exec *p) {
    ts_profile *pr = calloc(1, sizeof *pr);
    if (pr) {
        pr->ns = calloc((size_t)p->nsched + 1, sizeof *pr->ns);
        pr->calls = calloc((size_t)p->nsched + 1, sizeof *pr->calls);
        pr->kernel = calloc((size_t)p->nsched + 1, sizeof *pr->kernel);
    }
    if (!pr || !pr->ns || !pr->calls || !pr->kernel) {
        if (pr) free(pr->ns), free(pr->calls), free(pr->kernel);
        free(pr);
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the profile counters");
    }
    p->prof = pr;
    for (int k = 0; k < p->nparts; k++) {
        p->parts[k].abi.prof_ns = pr->ns + p->parts[k].begin;
        p->parts[k].abi.prof_calls = pr->calls + p->parts[k].begin;
        p->parts[k].abi.prof_kernel = pr->kernel + p->parts[k].begin;
    }
    return TS_OK;
}

void ts_profile_free(ts_exec *p) {
    if (!p->prof) return;
    for (int k = 0; k < p->nparts; k++) {
        p->parts[k].abi.prof_ns = p->parts[k].abi.prof_calls = NULL;
        p->parts[k].abi.prof_kernel = NULL;
    }
    free(p->prof->ns);
    free(p->prof->kernel);
    free(p->prof->calls);
    free(p->prof);
    p->prof = NULL;
}

void ts_profile_add_run(ts_exec *p, uint64_t ns) {
    p->prof->wall_ns += ns;
    p->prof->runs++;
}

void ts_program_profile_reset(ts_program *prog) {
    ts_exec *p = prog ? prog->one : NULL; /* a pipeline has no profile */
    if (!p || !p->prof) return;
    memset(p->prof->ns, 0, sizeof *p->prof->ns * (size_t)p->nsched);
    memset(p->prof->calls, 0, sizeof *p->prof->calls * (size_t)p->nsched);
    p->prof->wall_ns = p->prof->runs = 0;
}

/* The layer a value name tells (see tessera.h) into buf; 0 when it tells none. */
static int layer_of_name(const char *name, char *buf, size_t cap) {
    if (!name || !*name) return 0;
    size_t len = strcspn(name, "@");
    if (len >= cap) len = cap - 1;
    memcpy(buf, name, len);
    buf[len] = 0;
    /* the prefix through the first all-digit component */
    for (char *c = buf; *c;) {
        size_t n = strcspn(c, ".");
        size_t d = strspn(c, "0123456789");
        if (n > 0 && d == n) {
            c[n] = 0;
            return 1;
        }
        c += n;
        if (*c) c++;
    }
    /* else the first two components, never the last one */
    int ncomp = 1;
    for (const char *c = buf; *c; c++) ncomp += *c == '.';
    if (ncomp < 2) return 0;
    int keep = ncomp - 1 < 2 ? ncomp - 1 : 2;
    char *c = buf;
    for (int k = 0; k < keep; k++) c += strcspn(c, ".") + (k + 1 < keep);
    *c = 0;
    return buf[0] != 0;
}

#define LAYER_SEARCH 256

/* Node n's layer into buf ("other" when none): its inputs' names, then breadth-first back
 * through producers. */
static void layer_of_node(const ts_graph *g, const ts_node *n, char *buf, size_t cap) {
    int q[LAYER_SEARCH], nq = 0;
    for (int j = 0; j < n->nin && nq < LAYER_SEARCH; j++)
        if (n->in[j] >= 0) q[nq++] = n->in[j];
    for (int i = 0; i < nq; i++) {
        const ts_val *x = &g->vals[q[i]];
        if (layer_of_name(x->name, buf, cap)) return;
        if (x->kind != TS_V_NODE || x->node < 0) continue;
        const ts_node *m = &g->nodes[x->node];
        for (int j = 0; j < m->nin && nq < LAYER_SEARCH; j++) {
            int v = m->in[j], seen = v < 0;
            for (int k = 0; k < nq && !seen; k++) seen = q[k] == v;
            if (!seen) q[nq++] = v;
        }
    }
    snprintf(buf, cap, "other");
}

typedef struct {
    char *name;
    uint64_t ns, calls;
    int nodes;
} prof_row;

/* Add to the row called name (a new one at the end when absent); -1 when out of memory. */
static int add_row(prof_row **rows, int *nrows, int *cap, const char *name, uint64_t ns, uint64_t calls) {
    int i = 0;
    while (i < *nrows && strcmp((*rows)[i].name, name) != 0) i++;
    if (i == *nrows) {
        if (*nrows == *cap) {
            int nc = *cap ? 2 * *cap : 32;
            prof_row *r = realloc(*rows, sizeof *r * (size_t)nc);
            if (!r) return -1;
            *rows = r, *cap = nc;
        }
        char *copy = malloc(strlen(name) + 1);
        if (!copy) return -1;
        strcpy(copy, name);
        (*rows)[(*nrows)++] = (prof_row){copy, 0, 0, 0};
    }
    (*rows)[i].ns += ns;
    (*rows)[i].calls += calls;
    (*rows)[i].nodes++;
    return 0;
}

static int by_time(const void *a, const void *b) {
    const prof_row *x = a, *y = b;
    if (x->ns != y->ns) return x->ns < y->ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void free_rows(prof_row *rows, int n) {
    for (int i = 0; i < n; i++) free(rows[i].name);
    free(rows);
}

/* Node n's op as the report names it, into buf[64]: its name, and the kernel the device chose for
 * it where it chose among several ("conv2d_i8 (f32)"). */
static void node_op(const ts_node *n, const char *kernel, char *buf) {
    snprintf(buf, 64, kernel ? "%s (%s)" : "%s", ts_op_get(n->op)->name, kernel);
}

/* Node n's shape signature, "matmul bf16[1024, 768] -> f32[768, 3072]" (its op as node_op names
 * it, first input, first output), into buf[256]. */
static void node_sig(const ts_graph *g, const ts_node *n, const char *op, char *buf) {
    char a[96] = "", b[96] = "";
    const ts_val *x = n->nin > 0 && n->in[0] >= 0 ? &g->vals[n->in[0]] : NULL;
    const ts_val *y = n->nout > 0 && n->out[0] >= 0 ? &g->vals[n->out[0]] : NULL;
    snprintf(buf, 256, "%s %s%s -> %s%s", op, x ? ts_dtype_name(x->dtype) : "-",
             x ? ts_shape_str(x->ndim, x->shape, a, sizeof a) : "", y ? ts_dtype_name(y->dtype) : "-",
             y ? ts_shape_str(y->ndim, y->shape, b, sizeof b) : "");
}

enum { TOP_SHAPES = 15 };

static double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0.0; }

/* The report's three tables, printed to out. */
static ts_status print_report(const ts_exec *p, FILE *out);

ts_status ts_program_profile_report(const ts_program *prog, ts_write_fn write, void *ctx) {
    if (!prog || !write) return ts_err(TS_ERR_ARG, "ts_program_profile_report: %s is NULL", prog ? "write" : "program");
    const ts_exec *p = prog->one; /* a pipeline has no profile */
    if (!p || !p->prof)
        return ts_err(TS_ERR_UNSUPPORTED, "ts_program_profile_report: the program was compiled without "
                      "ts_compile_opts.profile = 1");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return ts_err(TS_ERR_NOMEM, "ts_program_profile_report: out of memory");
    if (!ts_device_is_builtin_cpu(p->dev)) fprintf(out, "placement: %s\n", p->placement ? p->placement : "");
    ts_status st = print_report(p, out);
    if (fclose(out) && !st) st = ts_err(TS_ERR_NOMEM, "ts_program_profile_report: out of memory");
    if (!st) write(ctx, text, len);
    free(text);
    return st;
}

static ts_status print_report(const ts_exec *p, FILE *out) {
    const ts_profile *pr = p->prof;
    prof_row *ops = NULL, *layers = NULL, *sigs = NULL;
    int nops = 0, capops = 0, nlayers = 0, caplayers = 0, nsigs = 0, capsigs = 0;
    uint64_t kernel = 0;
    char layer[256], sig[256], op[64];
    for (int i = 0; i < p->nsched; i++) {
        const ts_node *n = &p->g->nodes[p->sched[i]];
        kernel += pr->ns[i];
        layer_of_node(p->g, n, layer, sizeof layer);
        node_op(n, pr->kernel[i], op);
        node_sig(p->g, n, op, sig);
        if (add_row(&ops, &nops, &capops, op, pr->ns[i], pr->calls[i]) ||
            add_row(&layers, &nlayers, &caplayers, layer, pr->ns[i], pr->calls[i]) ||
            add_row(&sigs, &nsigs, &capsigs, sig, pr->ns[i], pr->calls[i])) {
            free_rows(ops, nops), free_rows(layers, nlayers), free_rows(sigs, nsigs);
            return ts_err(TS_ERR_NOMEM, "ts_program_profile_report: out of memory");
        }
    }
    if (nops > 1) qsort(ops, (size_t)nops, sizeof *ops, by_time);
    if (nsigs > 1) qsort(sigs, (size_t)nsigs, sizeof *sigs, by_time);
    uint64_t outside = pr->wall_ns > kernel ? pr->wall_ns - kernel : 0;
    fprintf(out, "profile: %llu run%s, %.3f ms in ts_program_run, %.3f ms in kernels (%.1f%%), "
            "%.3f ms outside kernels (%.1f%%)\n",
            (unsigned long long)pr->runs, pr->runs == 1 ? "" : "s", (double)pr->wall_ns / 1e6,
            (double)kernel / 1e6, pct(kernel, pr->wall_ns), (double)outside / 1e6, pct(outside, pr->wall_ns));
    fprintf(out, "%-28s %6s %10s %12s %9s\n", "op", "nodes", "calls", "total ms", "% kernel");
    for (int i = 0; i < nops; i++)
        fprintf(out, "%-28s %6d %10llu %12.3f %9.1f\n", ops[i].name, ops[i].nodes, (unsigned long long)ops[i].calls,
                (double)ops[i].ns / 1e6, pct(ops[i].ns, kernel));
    fprintf(out, "%-28s %6s %10s %12s %9s\n", "layer (first run first)", "nodes", "calls", "total ms", "% kernel");
    for (int i = 0; i < nlayers; i++)
        fprintf(out, "%-28s %6d %10llu %12.3f %9.1f\n", layers[i].name, layers[i].nodes,
                (unsigned long long)layers[i].calls, (double)layers[i].ns / 1e6, pct(layers[i].ns, kernel));
    fprintf(out, "%6s %10s %12s %9s  %s\n", "nodes", "calls", "total ms", "% kernel",
            "op: first input -> output (the largest by time)");
    for (int i = 0; i < nsigs && i < TOP_SHAPES; i++)
        fprintf(out, "%6d %10llu %12.3f %9.1f  %s\n", sigs[i].nodes, (unsigned long long)sigs[i].calls,
                (double)sigs[i].ns / 1e6, pct(sigs[i].ns, kernel), sigs[i].name);
    free_rows(ops, nops);
    free_rows(layers, nlayers);
    free_rows(sigs, nsigs);
    return ferror(out) ? ts_err(TS_ERR_NOMEM, "ts_program_profile_report: out of memory") : TS_OK;
}
