/*
 * cpu_backend.c — the CPU backend: host memory, OpenMP kernels, oneDNN where it is faster. It is
 * a ts_backend_api table like any plugin's (include/tessera_backend.h), registered first.
 *
 * Devices: "cpu" (index 0) and "cpu:N". Each device is a context of its own — a oneDNN engine
 * and stream — so pipeline stages on cpu:0 .. cpu:3 run from four host threads at once, each
 * with its own OpenMP team (the thread count is the program's, set by the runtime on the calling
 * thread). Memory is the host's: a buffer's handle is its 64-byte-aligned address.
 */
#include "backend/cpu/cpu.h"

#include <stdio.h>
#include <unistd.h>

#define CPU_DEVICES 256 /* cpu:0 .. cpu:255: more devices than cores oversubscribe them */

static int cpu_count(void) { return CPU_DEVICES; }

static ts_status cpu_open(const ts_device_args *args, void **dev) {
    ts_cpu_dev *d = calloc(1, sizeof *d);
    if (!d) return ts_abi_error(TS_ERR_NOMEM, "cpu: out of memory");
    d->index = args->index;
    *dev = d;
    return TS_OK;
}

/* One option: its key, its values (the first the default: 0), and the field it sets. */
typedef struct cpu_option {
    const char *key;
    const char *values[3];
    size_t field; /* offsetof in ts_cpu_dev */
} cpu_option;

static const cpu_option OPTIONS[] = {
    {"conv_algorithm", {"auto", "reference", NULL}, offsetof(ts_cpu_dev, conv_reference)},
    {"conv_layout", {"auto", "plain", "blocked"}, offsetof(ts_cpu_dev, conv_layout)},
    {"matmul_weights", {"packed", "plain", NULL}, offsetof(ts_cpu_dev, matmul_plain)},
    {"conv_int8", {"fastest", "always", NULL}, offsetof(ts_cpu_dev, conv_int8_always)},
};

ts_status ts_cpu_set_option(void *ctx, const char *device, const char *key, const char *value) {
    for (size_t i = 0; i < sizeof OPTIONS / sizeof *OPTIONS; i++) {
        const cpu_option *o = &OPTIONS[i];
        if (strcmp(key, o->key)) continue;
        for (int v = 0; v < 3 && o->values[v]; v++)
            if (!strcmp(value, o->values[v])) {
                *(int *)((char *)ctx + o->field) = v;
                return TS_OK;
            }
        return ts_err(TS_ERR_ARG, "ts_device_set_option: device %s: option %s is %s or %s%s%s, not '%s'", device, key,
                      o->values[0], o->values[1], o->values[2] ? " or " : "", o->values[2] ? o->values[2] : "", value);
    }
    return ts_err(TS_ERR_ARG, "ts_device_set_option: device %s has no option '%s' (its options: fallback, "
                  "conv_algorithm, conv_layout, matmul_weights, conv_int8)", device, key);
}

static void cpu_close(void *dev) {
    ts_cpu_dev_release(dev);
    free(dev);
}

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
 * container: cgroup v2's memory.max, v1's memory.limit_in_bytes). Every cpu device shares it. */
static size_t cpu_memory(void *dev) {
    (void)dev;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t phys = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    const char *const limits[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (int i = 0; i < 2; i++) {
        size_t lim = read_limit(limits[i]);
        if (lim && (!phys || lim < phys)) phys = lim;
    }
    return phys;
}

/* Not zeroed: the runtime initialises every persistent buffer, and every arena value is written
 * by its node before it is read (zeroing a BERT-Base arena would touch ~1.5 GB at compile). */
static ts_status cpu_alloc(void *dev, size_t bytes, void **mem) {
    (void)dev;
    *mem = ts_alloc(bytes, 0);
    return *mem ? TS_OK : ts_abi_error(TS_ERR_NOMEM, "cpu: cannot allocate %zu bytes", bytes);
}

static void cpu_free(void *dev, void *mem) {
    (void)dev;
    ts_free(mem);
}

/* Copies of 1 MiB and more are split among the threads: into memory touched for the first time
 * (a compile's initial values) most of the time is the kernel clearing new pages, one fault at a
 * time per thread, so two cores fill a fresh BERT-Base program's 1.7 GB about twice as fast. */
static ts_status cpu_to_device(void *dev, ts_buffer dst, const void *src, size_t bytes) {
    (void)dev;
    char *d = ts_cpu_ptr(dst);
    const char *s = src;
    if (bytes < ((size_t)1 << 20)) {
        memcpy(d, s, bytes);
        return TS_OK;
    }
    enum { PIECE = 256 << 10 };
    int64_t pieces = (int64_t)((bytes + PIECE - 1) / PIECE);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < pieces; i++) {
        size_t at = (size_t)i * PIECE, k = bytes - at < PIECE ? bytes - at : PIECE;
        memcpy(d + at, s + at, k);
    }
    return TS_OK;
}

static ts_status cpu_to_host(void *dev, void *dst, ts_buffer src, size_t bytes) {
    (void)dev;
    memcpy(dst, ts_cpu_ptr(src), bytes);
    return TS_OK;
}

static ts_status cpu_from_device(void *dev, ts_buffer dst, void *src_dev, ts_buffer src, size_t bytes) {
    (void)dev, (void)src_dev;
    memmove(ts_cpu_ptr(dst), ts_cpu_ptr(src), bytes);
    return TS_OK;
}

/* Every op of tessera has a reference kernel in src/ops, so the CPU runs every node whose op
 * this build knows. */
static int cpu_supports(void *dev, const ts_abi_node *node, const ts_abi_value *values) {
    (void)dev, (void)values;
    return node && ts_op_find(node->op) >= 0;
}

typedef struct {
    ts_graph *g;                /* the plan rebuilt from the public tables (cpu_view.c) */
    ts_plan plan;
    const ts_cpu_kernel **kern; /* per scheduled node: own kernel or NULL */
    void **state;               /* per scheduled node */
    int n;
    size_t ws;                  /* the workspace bytes asked for */
} cpu_prog;

static void cpu_release(void *dev, void *exe) {
    (void)dev;
    cpu_prog *cp = exe;
    if (!cp) return;
    for (int i = 0; cp->kern && cp->state && i < cp->n; i++)
        if (cp->kern[i] && cp->kern[i]->release && cp->state[i]) cp->kern[i]->release(cp->state[i]);
    free(cp->kern);
    free(cp->state);
    ts_cpu_view_free(cp->g, &cp->plan);
    free(cp);
}

static ts_status cpu_compile(void *dev, const ts_abi_plan *abi, size_t *workspace, void **exe) {
    cpu_prog *cp = calloc(1, sizeof *cp);
    if (!cp) return ts_err(TS_ERR_NOMEM, "cpu: out of memory");
    ts_status vs = ts_cpu_view(abi, &cp->g, &cp->plan);
    if (vs) { free(cp); return vs; }
    const ts_plan *plan = &cp->plan;
    cp->n = plan->nsched;
    cp->kern = calloc((size_t)cp->n + 1, sizeof *cp->kern);
    cp->state = calloc((size_t)cp->n + 1, sizeof *cp->state);
    if (!cp->kern || !cp->state) { cpu_release(dev, cp); return ts_err(TS_ERR_NOMEM, "cpu: out of memory"); }
    size_t ws = 0;
    for (int i = 0; i < plan->nsched; i++) {
        const ts_node *n = &plan->g->nodes[plan->sched[i]];
        const ts_op_def *d = ts_op_get(n->op);
        size_t need = 0;
        cp->kern[i] = ts_cpu_kernel_for(n->op);
        if (cp->kern[i] && cp->kern[i]->prepare) {
            ts_status s = cp->kern[i]->prepare(dev, plan, n, &cp->state[i], &need);
            if (s != TS_OK) { cpu_release(dev, cp); return s; }
            if (cp->kern[i]->kept_bytes && cp->state[i] && plan->kernel_bytes)
                *plan->kernel_bytes += cp->kern[i]->kept_bytes(cp->state[i]);
        } else if (!cp->kern[i] && d->scratch) {
            need = d->scratch(plan->g, n);
        }
        if (!cp->kern[i] && !d->kernel) {
            cpu_release(dev, cp);
            return ts_err(TS_ERR_UNSUPPORTED, "cpu: op %s has no kernel", d->name);
        }
        if (need > ws) ws = need;
    }
    *workspace = cp->ws = ws;
    *exe = cp;
    return TS_OK;
}

static ts_status cpu_execute(void *dev, void *exe, const ts_abi_plan *abi, ts_buffer workspace, uint64_t step) {
    cpu_prog *cp = exe;
    ts_plan *plan = &cp->plan;
    plan->values = (ts_abi_value *)abi->values; /* buffers may have moved; profiling switched */
    plan->prof_ns = abi->prof_ns, plan->prof_calls = abi->prof_calls;
    plan->prof_kernel = abi->struct_size >= offsetof(ts_abi_plan, prof_kernel) + sizeof abi->prof_kernel
                            ? abi->prof_kernel : NULL; /* ABI 2.1 */
    const ts_abi_value *val = plan->values;
    ts_kargs a;
    memset(&a, 0, sizeof a);
    a.g = plan->g;
    a.scratch = workspace.mem ? ts_cpu_ptr(workspace) : NULL;
    a.scratch_bytes = a.scratch ? cp->ws : 0;
    a.step = step;
    a.device = dev;
    a.param_gen = plan->param_gen ? *plan->param_gen : 0;
    for (int i = 0; i < plan->nsched; i++) {
        const ts_node *n = &plan->g->nodes[plan->sched[i]];
        a.node = n;
        for (int j = 0; j < TS_MAX_IN; j++)
            a.in[j] = j < n->nin && n->in[j] >= 0 && val[n->in[j]].buf.mem ? ts_cpu_ptr(val[n->in[j]].buf) : NULL;
        for (int k = 0; k < TS_MAX_OUT; k++)
            a.out[k] = k < n->nout && val[n->out[k]].buf.mem ? ts_cpu_ptr(val[n->out[k]].buf) : NULL;
        a.state = cp->state[i];
        uint64_t t0 = plan->prof_ns ? ts_now_ns() : 0;
        ts_status s = cp->kern[i] ? cp->kern[i]->run(&a) : ts_op_get(n->op)->kernel(&a);
        if (plan->prof_ns) {
            plan->prof_ns[i] += ts_now_ns() - t0;
            plan->prof_calls[i]++;
            if (plan->prof_kernel)
                plan->prof_kernel[i] = cp->kern[i] && cp->kern[i]->variant && cp->state[i]
                                           ? cp->kern[i]->variant(cp->state[i]) : NULL;
        }
        if (s != TS_OK) return s;
    }
    return TS_OK;
}

/* Whose thread-local message a failure goes to: tessera's own (built in), or, for the CPU backend
 * built as a plugin (backends/cpu), the loading tessera's, through its host services: the plugin
 * carries a copy of tessera's core, whose ts_err records into the plugin's copy. */
static const ts_host_api *cpu_host = &ts_host;

static ts_status told(ts_status s) {
    if (s != TS_OK && cpu_host != &ts_host) cpu_host->error(s, ts_last_error());
    return s;
}
static ts_status open_entry(const ts_device_args *args, void **dev) { return told(cpu_open(args, dev)); }
static ts_status alloc_entry(void *dev, size_t bytes, void **mem) { return told(cpu_alloc(dev, bytes, mem)); }
static ts_status compile_entry(void *dev, const ts_abi_plan *plan, size_t *ws, void **exe) {
    return told(cpu_compile(dev, plan, ws, exe));
}
static ts_status execute_entry(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer ws, uint64_t step) {
    return told(cpu_execute(dev, exe, plan, ws, step));
}

const ts_backend_api ts_backend_cpu_api = {
    .struct_size = sizeof(ts_backend_api),
    .abi_major = TS_ABI_MAJOR,
    .abi_minor = TS_ABI_MINOR,
    .name = "cpu",
    .device_count = cpu_count,
    .device_open = open_entry,
    .device_close = cpu_close,
    .memory_bytes = cpu_memory,
    .alloc = alloc_entry,
    .free = cpu_free,
    .copy_to_device = cpu_to_device,
    .copy_to_host = cpu_to_host,
    .copy_from_device = cpu_from_device,
    .supports = cpu_supports,
    .compile = compile_entry,
    .execute = execute_entry,
    .release = cpu_release,
    .synchronize = NULL, /* synchronous */
    .max_alloc = NULL,   /* no cap but the host's memory */
};

const ts_backend_api *ts_cpu_backend_api(const ts_host_api *host) {
    if (host) cpu_host = host;
    return &ts_backend_cpu_api;
}
