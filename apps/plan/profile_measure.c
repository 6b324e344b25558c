/*
 * profile_measure.c — ts_device_profile_measure: a device of this machine measured through the
 * public API, as a program runs on it (ts_compile, feed, run, fetch), in about `seconds`:
 *  - the time of a run of one tiny node (the run's fixed cost) and of a chain of 64 tiny nodes
 *    (node_overhead: the time each further node adds);
 *  - GEMMs of BERT's shapes and a few small ones per dtype the device runs (a dtype it refuses
 *    under strict_device is left out): each one's time is a run's less the run of one tiny node;
 *  - the fused attention op's forward and backward at BERT-Base's heads, in f32 and bf16 (what
 *    the cost model prices attention nodes at);
 *  - memory bandwidth from a large elementwise add, and the copy bandwidth host <-> device from
 *    feeding and fetching its operands.
 * Every figure's source says "measured by tessera profile-device on <UTC date>, <device>".
 */
#include "common/app.h"
#include "plan/profile.h"
#include "tessera_backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* C[m, n] = A[m, k] B[k, n], `batch` of them at once (attention's batched products). */
typedef struct gemm_shape {
    int64_t m, n, k, batch;
} gemm_shape;

/* BERT-Base's products at 8 x 128 tokens (QKV / output, FFN up, FFN down, attention scores over
 * 8 x 12 heads), and smaller ones (a batch of 128 or 8 rows). */
static const gemm_shape SHAPES[] = {
    {1024, 768, 768, 1}, {1024, 3072, 768, 1}, {1024, 768, 3072, 1}, {128, 128, 64, 96}, {128, 768, 768, 1}, {8, 768, 768, 1},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof *SHAPES))
#define CHAIN 64             /* tiny nodes of the overhead program */
#define BIG ((int64_t)1 << 24) /* elements of each operand of the memory-bound add: 64 MB in f32 */
#define MAX_RUNS 64

/* Feed input `name` with small nonzero values of dtype (a pattern, so no kernel sees only zeros). */
static ts_status feed_filled(ts_program *p, const char *name, ts_dtype dt, int ndim, const int64_t *shape) {
    int64_t n = ts_numel(ndim, shape);
    float *f = malloc((size_t)n * sizeof *f);
    uint16_t *h = dt == TS_F32 ? NULL : malloc((size_t)n * sizeof *h);
    if (!f || (dt != TS_F32 && !h)) {
        free(f), free(h);
        return ts_set_error(TS_ERR_NOMEM, "ts_device_profile_measure: out of memory");
    }
    for (int64_t i = 0; i < n; i++) f[i] = (float)((i * 7919) % 17 - 8) * 0.0625f;
    if (dt == TS_BF16) ts_f32_to_bf16(f, h, (size_t)n);
    if (dt == TS_F16) ts_f32_to_f16(f, h, (size_t)n);
    ts_status s = ts_program_feed_data(p, name, dt, ndim, shape, dt == TS_F32 ? (const void *)f : (const void *)h);
    free(f), free(h);
    return s;
}

/* Compile g for device, fetching "out" (inference only; no_fusion keeps every node; strict: a node
 * the device refuses is TS_ERR_UNSUPPORTED rather than a CPU fallback). */
static ts_program *compile_threads(const ts_graph *g, const char *device, int no_fusion, int threads) {
    const char *fetch[] = {"out"};
    ts_compile_opts o = {.struct_size = sizeof o, .device = device, .nfetch = 1, .fetches = fetch, .inference = 1,
                         .no_fusion = no_fusion, .strict_device = 1, .num_threads = threads};
    return ts_compile(g, &o);
}
static ts_program *compile_for(const ts_graph *g, const char *device, int no_fusion) {
    return compile_threads(g, device, no_fusion, 0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median time of a run of p: one warm-up run, then as many as fit in budget seconds (at
 * least 1, at most MAX_RUNS). */
static ts_status time_runs(ts_program *p, double budget, double *median) {
    double t0 = ts_seconds();
    ts_status s = ts_program_run(p);
    if (s) return s;
    double first = ts_seconds() - t0, t[MAX_RUNS];
    int n = first > 0 ? (int)(budget / first) : MAX_RUNS;
    n = n < 1 ? 1 : n > MAX_RUNS ? MAX_RUNS : n;
    for (int i = 0; i < n; i++) {
        t0 = ts_seconds();
        if ((s = ts_program_run(p))) return s;
        t[i] = ts_seconds() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    return TS_OK;
}

/* The median run time of a chain of `len` adds of [1] f32 (no fusion). */
static ts_status time_chain(const char *device, int len, double budget, double *t) {
    ts_graph *g = ts_graph_new();
    int64_t one = 1;
    ts_value x = ts_input(g, "x", TS_F32, 1, &one), c = ts_scalar(g, 1.f);
    for (int i = 0; i < len; i++) x = ts_add(g, x, c);
    ts_name(g, x, "out");
    ts_program *p = ts_graph_status(g) ? NULL : compile_for(g, device, 1);
    ts_graph_free(g);
    if (!p) return ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
    ts_status s = feed_filled(p, "x", TS_F32, 1, &one);
    if (!s) s = time_runs(p, budget, t);
    ts_program_free(p);
    return s;
}

/* The GEMM `sh` in dtype dt on device: its FLOP/s into *flops, the time of a tiny run (t_one)
 * taken off. TS_ERR_UNSUPPORTED (error cleared) when the device does not run it. */
static ts_status time_gemm(const char *device, ts_dtype dt, const gemm_shape *sh, double budget, double t_one,
                           double *flops) {
    ts_graph *g = ts_graph_new();
    int batched = sh->batch > 1, nd = batched ? 3 : 2;
    int64_t as[3] = {sh->batch, sh->m, sh->k}, bs[3] = {sh->batch, sh->k, sh->n};
    ts_value a = ts_input(g, "a", dt, nd, as + !batched), b = ts_input(g, "b", dt, nd, bs + !batched);
    ts_name(g, ts_matmul(g, a, b, 0, 0), "out");
    ts_program *p = ts_graph_status(g) ? NULL : compile_for(g, device, 0);
    ts_status s = p ? TS_OK : ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
    ts_graph_free(g);
    if (s == TS_ERR_UNSUPPORTED) ts_err_clear();
    if (s) return s;
    double t = 0;
    if (!(s = feed_filled(p, "a", dt, nd, as + !batched)) && !(s = feed_filled(p, "b", dt, nd, bs + !batched)))
        s = time_runs(p, budget, &t);
    ts_program_free(p);
    if (s) return s;
    /* the kernel's time: the run's, less a run of one tiny node (never below a quarter of it) */
    double k = t - t_one > 0.25 * t ? t - t_one : 0.25 * t;
    *flops = 2.0 * (double)sh->m * (double)sh->n * (double)sh->k * (double)sh->batch / k;
    return TS_OK;
}

/* The fused attention op (ts_attention, layout BTHD, no mask or dropout) at BERT-Base's heads for
 * 8 x 128 tokens, computing in dt (f32 or bf16): its forward's FLOP/s (4 B H T S D, the run of an
 * inference program less a tiny run) and its backward's (10 B H T S D, the run of a program that
 * also takes the gradients of q, k and v through a sum, less the forward's run). Both 0 (error
 * cleared) when the device does not run the op. */
static ts_status time_attention(const char *device, ts_dtype dt, double budget, double t_one, double *fwd,
                                double *bwd) {
    enum { AB = 8, AT = 128, AH = 12, AD = 64 };
    const int64_t shape[4] = {AB, AT, AH, AD};
    double t[2] = {0, 0}, flop = (double)AB * AH * AT * AT * AD;
    *fwd = *bwd = 0;
    for (int train = 0; train < 2; train++) {
        ts_graph *g = ts_graph_new();
        ts_value qkv[3];
        const char *names[3] = {"q", "k", "v"}, *gnames[3] = {"gq", "gk", "gv"};
        for (int i = 0; i < 3; i++) qkv[i] = ts_param(g, names[i], TS_F32, 4, shape, ts_init_normal(0.5f));
        ts_value y = ts_attention(g, qkv[0], qkv[1], qkv[2], TS_NONE, 0.125f, 0.f, TS_ATTN_BTHD, dt);
        ts_name(g, y, "out");
        const char *fetch[3] = {"out"};
        int nfetch = 1;
        if (train && !ts_graph_status(g) && ts_backward(g, ts_reduce_sum(g, y, 0, NULL, 0)) == TS_OK) {
            for (int i = 0; i < 3; i++) ts_name(g, ts_grad(g, qkv[i]), gnames[i]), fetch[i] = gnames[i];
            nfetch = 3;
        }
        ts_compile_opts o = {.struct_size = sizeof o, .device = device, .nfetch = nfetch, .fetches = fetch,
                             .inference = !train, .strict_device = 1};
        ts_program *p = ts_graph_status(g) ? NULL : ts_compile(g, &o);
        ts_status s = p ? TS_OK : ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
        ts_graph_free(g);
        if (!s) s = time_runs(p, budget / 2, &t[train]);
        ts_program_free(p);
        if (s == TS_ERR_UNSUPPORTED) {
            ts_err_clear();
            return TS_OK;
        }
        if (s) return s;
    }
    double f = t[0] - t_one > 0.25 * t[0] ? t[0] - t_one : 0.25 * t[0], b = t[1] - t[0] > 0.25 * t[1] ? t[1] - t[0] : 0.25 * t[1];
    *fwd = 4 * flop / f, *bwd = 10 * flop / b;
    return TS_OK;
}

/* Host <-> device copies and the memory-bound add c = a + b over BIG f32 elements (a run reads
 * 2 x 64 MB and writes 64 MB): medians of feeding a (to_dev: a copy into the program's buffer),
 * fetching c (to_host: into a new tensor, its pages faulted in), and the add's run less a tiny
 * run (mem_bw). */
static ts_status time_memory(const char *device, double budget, double t_one, double *mem_bw, double *to_dev,
                             double *to_host) {
    ts_graph *g = ts_graph_new();
    int64_t n = BIG;
    ts_name(g, ts_add(g, ts_input(g, "a", TS_F32, 1, &n), ts_input(g, "b", TS_F32, 1, &n)), "out");
    ts_program *p = ts_graph_status(g) ? NULL : compile_for(g, device, 0);
    ts_graph_free(g);
    if (!p) return ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
    ts_status s = feed_filled(p, "a", TS_F32, 1, &n);
    if (!s) s = feed_filled(p, "b", TS_F32, 1, &n);
    double t = 0, bytes = (double)BIG * 4, tf[8], tb[8];
    if (!s) s = time_runs(p, budget / 2, &t);
    float *host = s ? NULL : calloc((size_t)BIG, sizeof *host);
    if (!s && !host) s = ts_set_error(TS_ERR_NOMEM, "ts_device_profile_measure: out of memory");
    int reps = 0;
    for (double start = ts_seconds(); !s && reps < 8 && (reps < 2 || ts_seconds() - start < budget / 2); reps++) {
        double t0 = ts_seconds();
        s = ts_program_feed_data(p, "a", TS_F32, 1, &n, host);
        tf[reps] = ts_seconds() - t0;
        ts_tensor *c = NULL;
        t0 = ts_seconds();
        if (!s) s = ts_program_fetch(p, "out", &c);
        tb[reps] = ts_seconds() - t0;
        ts_tensor_free(c);
    }
    free(host);
    ts_program_free(p);
    if (s) return s;
    qsort(tf, (size_t)reps, sizeof *tf, cmp_double);
    qsort(tb, (size_t)reps, sizeof *tb, cmp_double);
    double k = t - t_one > 0.25 * t ? t - t_one : 0.25 * t;
    *mem_bw = 3 * bytes / k;
    *to_dev = bytes / tf[reps / 2];
    *to_host = bytes / tb[reps / 2];
    return TS_OK;
}

/* The add of time_memory on one thread (the built-in CPU device, whose programs take a thread
 * count): what one of several devices sharing the host's cores reaches. */
static ts_status time_memory_thread(const char *device, double budget, double t_one, double *mem_bw) {
    ts_graph *g = ts_graph_new();
    int64_t n = BIG;
    ts_name(g, ts_add(g, ts_input(g, "a", TS_F32, 1, &n), ts_input(g, "b", TS_F32, 1, &n)), "out");
    ts_program *p = ts_graph_status(g) ? NULL : compile_threads(g, device, 0, 1);
    ts_graph_free(g);
    if (!p) return ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
    ts_status s = feed_filled(p, "a", TS_F32, 1, &n);
    if (!s) s = feed_filled(p, "b", TS_F32, 1, &n);
    double t = 0;
    if (!s) s = time_runs(p, budget, &t);
    ts_program_free(p);
    if (s) return s;
    double k = t - t_one > 0.25 * t ? t - t_one : 0.25 * t;
    *mem_bw = 3 * (double)BIG * 4 / k;
    return TS_OK;
}

/* The latency of a copy each way: the median of feeding then fetching a [1] f32 value. */
static ts_status time_latency(const char *device, double *latency) {
    ts_graph *g = ts_graph_new();
    int64_t one = 1;
    ts_name(g, ts_add(g, ts_input(g, "x", TS_F32, 1, &one), ts_scalar(g, 1.f)), "out");
    ts_program *p = ts_graph_status(g) ? NULL : compile_for(g, device, 0);
    ts_graph_free(g);
    if (!p) return ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
    ts_status s = feed_filled(p, "x", TS_F32, 1, &one);
    if (!s) s = ts_program_run(p);
    double t[33];
    float x = 1.f;
    for (int i = 0; i < 33 && !s; i++) {
        ts_tensor *c = NULL;
        double t0 = ts_seconds();
        s = ts_program_feed_data(p, "x", TS_F32, 1, &one, &x);
        if (!s) s = ts_program_fetch(p, "out", &c);
        t[i] = (ts_seconds() - t0) / 2;
        ts_tensor_free(c);
    }
    ts_program_free(p);
    if (s) return s;
    qsort(t, 33, sizeof *t, cmp_double);
    *latency = t[16];
    return TS_OK;
}

/* Append "field: text" to p->sources. */
__attribute__((format(printf, 3, 4))) static void source(ts_device_profile *p, const char *field, const char *fmt, ...) {
    size_t len = strlen(p->sources);
    int n = snprintf(p->sources + len, sizeof p->sources - len, "%s: ", field);
    if (n < 0 || (size_t)n >= sizeof p->sources - len) return;
    len += (size_t)n;
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(p->sources + len, sizeof p->sources - len - 1, fmt, ap);
    va_end(ap);
    len = strlen(p->sources);
    if (len + 1 < sizeof p->sources) p->sources[len] = '\n', p->sources[len + 1] = 0;
}

/* The CPU's model name from /proc/cpuinfo into buf ("" when unknown). */
static void cpu_model(char *buf, size_t cap) {
    buf[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        snprintf(buf, cap, "%s", colon + 2);
        buf[strcspn(buf, "\n")] = 0;
        break;
    }
    if (f) fclose(f);
}

/* The GEMMs of every shape in each dtype the device runs, into p (gemm, peak_flops, eff_matmul). */
static ts_status measure_gemms(const char *device, double budget, double t_one, ts_device_profile *p) {
    for (int dt = TS_F32; dt <= TS_F16; dt++) {
        for (int i = 0; i < NSHAPES; i++) {
            const gemm_shape *sh = &SHAPES[i];
            double f = 0;
            ts_status s = time_gemm(device, (ts_dtype)dt, sh, budget / (3 * NSHAPES), t_one, &f);
            if (s == TS_ERR_UNSUPPORTED) break; /* the device does not compute in dt */
            if (s) return s;
            p->gemm[p->ngemm++] = (ts_gemm_point){sh->m, sh->n, sh->k, (ts_dtype)dt, f};
            if (f > p->peak_flops[dt]) p->peak_flops[dt] = f;
            p->eff_matmul[dt] = 1;
        }
    }
    if (p->ngemm == 0)
        return ts_set_error(TS_ERR_UNSUPPORTED,
                            "ts_device_profile_measure: device %s runs no matmul in f32, bf16 or f16", device);
    return TS_OK;
}

ts_status ts_device_profile_measure(const char *device, double seconds, ts_device_profile *out) {
    if (!out) return ts_set_error(TS_ERR_ARG, "ts_device_profile_measure: out is NULL");
    if (!device || !*device) device = "cpu";
    if (!ts_profile_name_ok(device))
        return ts_set_error(TS_ERR_ARG, "ts_device_profile_measure: \"%s\" is not a device name", device);
    if (!(seconds >= 0)) return ts_set_error(TS_ERR_ARG, "ts_device_profile_measure: seconds %g is negative", seconds);
    const ts_backend_api *api = ts_device_backend(device);
    if (!api) return ts_last_status();
    double budget = seconds > 0 ? seconds : 10, t_one = 0, t_chain = 0, lat = 0, bw = 0, to_dev = 0, to_host = 0, bw1 = 0;
    int cpu = api == ts_backend_find("cpu"); /* the built-in CPU backend (a plugin cannot take its name) */
    ts_device_profile *p = calloc(1, sizeof *p);
    if (!p) return ts_set_error(TS_ERR_NOMEM, "ts_device_profile_measure: out of memory");
    ts_status s;
    if ((s = time_chain(device, 1, 0.05 * budget, &t_one)) || (s = time_chain(device, CHAIN, 0.05 * budget, &t_chain)) ||
        (s = time_latency(device, &lat)) || (s = measure_gemms(device, 0.6 * budget, t_one, p)) ||
        (s = time_attention(device, TS_F32, 0.05 * budget, t_one, &p->attention_fwd_flops[TS_F32],
                            &p->attention_bwd_flops[TS_F32])) ||
        (p->peak_flops[TS_BF16] > 0 &&
         (s = time_attention(device, TS_BF16, 0.05 * budget, t_one, &p->attention_fwd_flops[TS_BF16],
                             &p->attention_bwd_flops[TS_BF16]))) ||
        (s = time_memory(device, 0.15 * budget, t_one, &bw, &to_dev, &to_host)) ||
        (cpu && (s = time_memory_thread(device, 0.05 * budget, t_one, &bw1)))) {
        free(p);
        return s;
    }
    char when[64], model[256] = "", who[400];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &tm));
    if (!strcmp(api->name, "cpu")) cpu_model(model, sizeof model);
    snprintf(who, sizeof who, "%s%s%s", device, *model ? ", " : "", model);
    p->struct_size = sizeof *p;
    snprintf(p->name, sizeof p->name, "%s", device);
    snprintf(p->description, sizeof p->description, "%s of this machine%s%.200s%s", device, *model ? " (" : "", model,
             *model ? ")" : "");
    p->measured = 1;
    /* A transfer between stages copies into a buffer already there: one copy at the feed's rate
     * (to_dev) between devices of a backend that copies directly, else two (device -> host ->
     * device). The fetch's rate also pays for a new tensor's pages: reported, not used. */
    int direct = TS_API_HAS(api, copy_from_device);
    p->link_bw = direct ? to_dev : to_dev / 2;
    p->link_latency = direct ? lat : 2 * lat;
    p->host_bw = p->link_bw, p->host_latency = p->link_latency, p->devices_per_host = 1;
    p->mem_bw = bw, p->eff_mem = 1, p->mem_bw_thread = bw1 < bw ? bw1 : bw;
    p->node_overhead = t_chain > t_one ? (t_chain - t_one) / (CHAIN - 1) : 0;
    size_t mem = ts_device_memory_bytes(device);
    p->memory_bytes = mem ? (double)mem : (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    const char *by = "measured by tessera profile-device on";
    source(p, "memory_bytes", "%s (%s %s, %s)", mem ? "what the device reports" : "the device reports none: the host's physical memory",
           by, when, who);
    source(p, "peak_flops", "%s %s, %s: the best GEMM rate of each dtype (see gemm); 0: a dtype the device refuses", by, when, who);
    source(p, "eff_matmul", "1: the measured gemm table is used first (%s %s)", by, when);
    source(p, "gemm", "%s %s, %s: median run of C = A B, less a run of one tiny node; batched: the rate of all %d "
           "products of one [96, m, k] x [96, k, n]", by, when, who, (int)SHAPES[3].batch);
    if (p->attention_fwd_flops[TS_F32] > 0) {
        source(p, "attention_fwd_flops", "%s %s, %s: ts_attention on q, k, v [8, 128, 12, 64] computing in f32%s: median "
               "run less a run of one tiny node", by, when, who, p->attention_fwd_flops[TS_BF16] > 0 ? " and bf16" : "");
        source(p, "attention_bwd_flops", "%s %s, %s: the same with the gradients of q, k and v (through a sum): "
               "median run less the forward's", by, when, who);
    }
    source(p, "mem_bw", "%s %s, %s: c = a + b over 2^24 f32 (3 x 64 MB moved per run)", by, when, who);
    if (cpu)
        source(p, "mem_bw_thread", "%s %s, %s: the add of mem_bw on one thread", by, when, who);
    source(p, "eff_mem", "1: mem_bw is measured on a memory-bound kernel (%s %s)", by, when);
    source(p, "node_overhead", "%s %s, %s: a chain of %d adds of [1] less one, per node", by, when, who, CHAIN);
    source(p, "link_bw", "%s %s, %s: feeding 64 MB (%.3g GB/s; fetching it into a new tensor: %.3g GB/s)%s", by, when, who,
           to_dev / 1e9, to_host / 1e9, direct ? "; one copy between two devices of this backend" : "; two copies, through the host");
    source(p, "link_latency", "%s %s, %s: feeding then fetching [1] f32, per copy", by, when, who);
    source(p, "host_bw", "assumed: replicas under mpirun on this machine exchange through shared memory, at link_bw");
    source(p, "host_latency", "assumed: as link_latency");
    source(p, "devices_per_host", "one device of this machine");
    source(p, "streaming_bytes", "none: a measured device has no streaming memory beside it");
    ts_status st = TS_STRUCT_WRITE(out, p, ts_device_profile, "ts_device_profile_measure");
    free(p);
    return st;
}

ts_status ts_device_profile_measure_save(const char *device, double seconds, const char *path, ts_device_profile *out,
                                         char *written, size_t cap) {
    if (!written || !cap) return ts_set_error(TS_ERR_ARG, "ts_device_profile_measure_save: written is NULL");
    ts_status st = path ? ts_path_join(written, cap, "", path) : ts_device_profile_cache_path(device, written, cap);
    if (!st) st = ts_device_profile_measure(device, seconds, out);
    return st ? st : ts_device_profile_save(written, out);
}
