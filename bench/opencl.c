/*
 * bench/opencl.c — the OpenCL plugin (backends/opencl, libtessera-opencl.so) measured against what
 * it is built on, in three parts, on one OpenCL device (opencl:0 unless --device N):
 *   compile  the plugin's first-run cost: in a fresh child process (this program again, with
 *            --compile-child) with PoCL's disk cache (POCL_CACHE_DIR) pointed at an empty temp
 *            folder, the time to load the plugin, to ts_compile a tiny program (the plugin builds
 *            its OpenCL program there) and its first and second runs (CLBlast builds its GEMM
 *            kernels at first use); then the same in a second child with that cache warm.
 *   matmul   for M = 1024 (8 sequences of 128 tokens) and (K, N) in {768, 3072} x {768, 3072},
 *            f32: a compiled program with one ts_matmul on "opencl:N" run by ts_program_run
 *            (public API only) against CLBlastSgemm called directly on cl_mem buffers of the
 *            same device (its own context and queue, clFinish after each call), interleaved;
 *            median GFLOP/s of each, their ratio, and the plugin's overhead from the medians,
 *            "paired" (the median over repeats of plugin run / the CLBlast run next to it, - 1) and
 *            "best" (the best plugin run / the best CLBlast run, - 1).
 *            Target <= 5%. The two outputs are compared, and the fixed cost per call is measured
 *            on a 16 x 16 x 16 product.
 *   bert     BERT-Base inference (BertModel's last_hidden_state, random weights from the graph's
 *            seed, batch 8 x 128, f32) on opencl:N and on the CPU, in this process, with the
 *            largest difference of the two outputs. On PoCL (OpenCL on this CPU) it is a
 *            correctness device and the figure a baseline, not a contest.
 * Without the plugin, an OpenCL platform or the device, it says so and exits 0 (a bench, not a
 * test); a build without OpenCL compiles the stub at the end.
 *
 * Usage: bench/opencl [--seconds S (1.0): per matmul shape and side] [--device N (0)]
 *                     [--bert-runs N (1): timed BERT runs per device after one warm-up]
 *                     [--layers L (12)] [--only compile,matmul,bert] [--plugin PATH]
 */
#ifdef TS_HAVE_OPENCL
#include "tessera_apps.h"
#include "tessera_backend.h"

#include "bench_util.h"

#include <CL/cl.h>
#include <clblast_c.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, "bench_opencl: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK_TS(x) do { if ((x) != TS_OK) DIE("%s failed: %s", #x, ts_last_error()); } while (0)
#define CHECK_CL(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS) DIE("%s failed: CL error %d", #x, (int)e_); } while (0)

enum { MAX_REPS = 21, MIN_REPS = 3, T = 128, V = 30522 };

typedef struct opts {
    double seconds;
    int device, bert_runs, layers;
    const char *only, *plugin;
    char devname[64]; /* "opencl:N" */
} opts;

static int wanted(const opts *o, const char *part) { return !o->only || strstr(o->only, part) != NULL; }

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* A [rows, cols] f32 tensor of values in [-1, 1). */
static ts_tensor *random_f32(int64_t rows, int64_t cols) {
    ts_tensor *t = ts_tensor_new(TS_F32, 2, (int64_t[]){rows, cols});
    if (!t) DIE("out of memory");
    float *v = ts_tensor_data(t);
    for (int64_t i = 0; i < rows * cols; i++) v[i] = (float)(next_rand() % 2000000) * 1e-6f - 1.f;
    return t;
}

/* The OpenCL device the plugin calls opencl:index: platforms in the ICD loader's order, each
 * platform's devices in order (as backends/opencl/plugin.c enumerates them). 0 when absent. */
static int find_device(int index, cl_platform_id *plat, cl_device_id *dev) {
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS) return 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id ds[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 64, ds, &nd) != CL_SUCCESS) continue;
        if (index < (int)nd) {
            *plat = ps[p], *dev = ds[index];
            return 1;
        }
        index -= (int)nd;
    }
    return 0;
}

/* ------------------------------------------------------------------ compile: first run and cached */

/* The child: load the plugin, compile and run a tiny program (gelu(a @ b) + a) on the device,
 * printing "load_s X", "compile_s X", "run1_s X", "run2_s X". */
static int compile_child(const opts *o) {
    double t = now();
    CHECK_TS(ts_backend_load(o->plugin));
    printf("load_s %.4f\n", now() - t);
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, 2, (int64_t[]){16, 16});
    ts_value b = ts_input(g, "b", TS_F32, 2, (int64_t[]){16, 16});
    ts_name(g, ts_add(g, ts_gelu(g, ts_matmul(g, a, b, 0, 0), 0), a), "y");
    const char *fetch[] = {"y"};
    t = now();
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = o->devname, .nfetch = 1, .fetches = fetch});
    if (!p) DIE("ts_compile on %s: %s", o->devname, ts_last_error());
    printf("compile_s %.4f\n", now() - t);
    ts_tensor *A = random_f32(16, 16), *B = random_f32(16, 16);
    CHECK_TS(ts_program_feed(p, "a", A));
    CHECK_TS(ts_program_feed(p, "b", B));
    for (int r = 1; r <= 2; r++) {
        t = now();
        CHECK_TS(ts_program_run(p));
        ts_tensor *y = NULL;
        CHECK_TS(ts_program_fetch(p, "y", &y));
        printf("run%d_s %.4f\n", r, now() - t);
        ts_tensor_free(y);
    }
    ts_tensor_free(A), ts_tensor_free(B);
    ts_program_free(p);
    ts_graph_free(g);
    return 0;
}

/* Run this program again as a compile child with POCL_CACHE_DIR=cache; its numbers into v[4]. */
static int spawn_compile_child(const opts *o, const char *cache, double v[4]) {
    char buf[4096];
    int fd[2];
    if (pipe(fd)) DIE("pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) DIE("fork failed");
    if (pid == 0) {
        close(fd[0]), dup2(fd[1], 1), close(fd[1]);
        setenv("POCL_CACHE_DIR", cache, 1);
        char dev[16];
        snprintf(dev, sizeof dev, "%d", o->device);
        execl("/proc/self/exe", "opencl", "--compile-child", "--device", dev, "--plugin", o->plugin, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    while (len + 1 < sizeof buf && (got = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)got;
    buf[len] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) return 0;
    const char *keys[4] = {"load_s", "compile_s", "run1_s", "run2_s"};
    for (int i = 0; i < 4; i++)
        if (bench_numbers(buf, keys[i], &v[i], 1) != 1) return 0;
    return 1;
}

static void part_compile(const opts *o) {
    char cache[] = "/tmp/tessera-bench-pocl-XXXXXX";
    if (!mkdtemp(cache)) DIE("mkdtemp failed");
    double cold[4], warm[4];
    int ok = spawn_compile_child(o, cache, cold) && spawn_compile_child(o, cache, warm);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    if (system(cmd) != 0) fprintf(stderr, "bench_opencl: could not remove %s\n", cache);
    printf("compile: a fresh process, load the plugin, ts_compile gelu(a @ b) + a (16 x 16) on %s, run it twice\n",
           o->devname);
    if (!ok) {
        printf("  a compile child failed (its error is above)\n\n");
        return;
    }
    printf("%-28s %9s %12s %12s %12s\n", "PoCL cache (POCL_CACHE_DIR)", "load s", "ts_compile s", "1st run s",
           "2nd run s");
    printf("%-28s %9.3f %12.3f %12.3f %12.3f\n", "empty (first run)", cold[0], cold[1], cold[2], cold[3]);
    printf("%-28s %9.3f %12.3f %12.3f %12.3f\n", "warm (cached)", warm[0], warm[1], warm[2], warm[3]);
    printf("ts_compile builds the plugin's OpenCL program (every kernel); the 1st run builds CLBlast's GEMM kernels\n"
           "(CLBlast keeps them in memory per process, PoCL on disk) and PoCL finishes each kernel's code at its first\n"
           "launch. Another driver has its own cache.\n\n");
}

/* ------------------------------------------------------------------ matmul: plugin vs CLBlast */

typedef struct clb {
    cl_context ctx;
    cl_command_queue q;
} clb;

static double clblast_run(clb *c, int64_t M, int64_t K, int64_t N, cl_mem a, cl_mem b, cl_mem y) {
    double t = now();
    cl_command_queue q = c->q;
    CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)M,
                                       (size_t)N, (size_t)K, 1.f, a, 0, (size_t)K, b, 0, (size_t)N, 0.f, y, 0,
                                       (size_t)N, &q, NULL);
    if (s != CLBlastSuccess) DIE("CLBlastSgemm failed: %d", (int)s);
    CHECK_CL(clFinish(c->q));
    return now() - t;
}

/* Every paired ratio (plugin run / the CLBlast run next to it) of every shape: their median is
 * the overhead least moved by the machine's slow spells, which a few repeats per shape are not. */
static double pool[4 * MAX_REPS];
static int npool;
/* Each shape's best plugin time over its best CLBlast time. */
static double best[16];
static int nbest;

static double ts_run(ts_program *p) {
    double t = now();
    CHECK_TS(ts_program_run(p));
    return now() - t;
}

/* One product on both sides: prints a table row, returns the median overhead in percent. With
 * fixed_cost set, prints instead the best time per call of each (tiny products, many repeats). */
static double matmul_row(const opts *o, clb *c, int64_t M, int64_t K, int64_t N, int fixed_cost) {
    ts_tensor *A = random_f32(M, K), *B = random_f32(K, N);
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, 2, (int64_t[]){M, K});
    ts_value b = ts_input(g, "b", TS_F32, 2, (int64_t[]){K, N});
    ts_name(g, ts_matmul(g, a, b, 0, 0), "y");
    const char *fetch[] = {"y"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = o->devname, .nfetch = 1, .fetches = fetch});
    if (!p) DIE("ts_compile on %s: %s", o->devname, ts_last_error());
    CHECK_TS(ts_program_feed(p, "a", A));
    CHECK_TS(ts_program_feed(p, "b", B));

    cl_int e;
    cl_mem ca = clCreateBuffer(c->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * (size_t)(M * K),
                               ts_tensor_data(A), &e);
    CHECK_CL(e);
    cl_mem cb = clCreateBuffer(c->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * (size_t)(K * N),
                               ts_tensor_data(B), &e);
    CHECK_CL(e);
    cl_mem cy = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, sizeof(float) * (size_t)(M * N), NULL, &e);
    CHECK_CL(e);

    double over = 0;
    if (fixed_cost) {
        double bt = 1e9, bd = 1e9;
        for (int r = 0; r < 200; r++) {
            bt = fmin(bt, ts_run(p));
            bd = fmin(bd, clblast_run(c, M, K, N, ca, cb, cy));
        }
        printf("fixed cost per call (%lldx%lldx%lld f32, best of 200): plugin %.1f us, CLBlast %.1f us, difference "
               "%.1f us\n", (long long)M, (long long)K, (long long)N, bt * 1e6, bd * 1e6, (bt - bd) * 1e6);
    } else {
        /* warm-up (CLBlast and the plugin build kernels at first use), then size the repeat count */
        double est = fmin(ts_run(p), clblast_run(c, M, K, N, ca, cb, cy));
        int reps = (int)(o->seconds / (est > 1e-6 ? est : 1e-6));
        reps = reps < MIN_REPS ? MIN_REPS : reps > MAX_REPS ? MAX_REPS : reps;
        double tt[MAX_REPS], td[MAX_REPS], pair[MAX_REPS];
        for (int r = 0; r < reps; r++) { /* alternate which side goes first */
            if (r & 1) td[r] = clblast_run(c, M, K, N, ca, cb, cy), tt[r] = ts_run(p);
            else tt[r] = ts_run(p), td[r] = clblast_run(c, M, K, N, ca, cb, cy);
            pair[r] = tt[r] / td[r];
            if (npool < 4 * MAX_REPS) pool[npool++] = pair[r];
        }
        double bt = tt[0], bd = td[0]; /* the best of each: the least disturbed by other load */
        for (int r = 1; r < reps; r++) bt = fmin(bt, tt[r]), bd = fmin(bd, td[r]);
        double mt = median_inplace(tt, reps), md = median_inplace(td, reps), mp = median_inplace(pair, reps);
        double flops = 2.0 * (double)M * (double)K * (double)N;

        ts_tensor *y = NULL;
        CHECK_TS(ts_program_fetch(p, "y", &y));
        float *ref = malloc(sizeof(float) * (size_t)(M * N));
        if (!ref) DIE("out of memory");
        CHECK_CL(clEnqueueReadBuffer(c->q, cy, CL_TRUE, 0, sizeof(float) * (size_t)(M * N), ref, 0, NULL, NULL));
        double diff = 0;
        for (int64_t i = 0; i < M * N; i++) diff = fmax(diff, fabs((double)((float *)ts_tensor_data(y))[i] - ref[i]));
        free(ref);
        ts_tensor_free(y);
        over = 100.0 * (mt / md - 1.0);
        if (nbest < 16) best[nbest++] = bt / bd;
        printf("%5lld %5lld %5lld | %9.2f %9.2f | %11.1f %11.1f | %6.3f %8.2f%% %8.2f%% %8.2f%% | %4d %.3g\n",
               (long long)M, (long long)K, (long long)N, mt * 1e3, md * 1e3, flops / mt * 1e-9, flops / md * 1e-9,
               md / mt, over, 100.0 * (mp - 1.0), 100.0 * (bt / bd - 1.0), reps, diff);
        fflush(stdout);
    }
    clReleaseMemObject(ca), clReleaseMemObject(cb), clReleaseMemObject(cy);
    ts_program_free(p);
    ts_graph_free(g);
    ts_tensor_free(A), ts_tensor_free(B);
    return over;
}

static void part_matmul(const opts *o, cl_platform_id plat, cl_device_id dev) {
    clb c;
    cl_int e;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    c.ctx = clCreateContext(props, 1, &dev, NULL, NULL, &e);
    CHECK_CL(e);
    c.q = clCreateCommandQueue(c.ctx, dev, 0, &e);
    CHECK_CL(e);
    printf("matmul f32: the plugin (ts_program_run on %s) vs CLBlastSgemm direct (own context and queue, clFinish),\n"
           "median of interleaved runs after one warm-up; overhead = plugin time / CLBlast time - 1\n\n", o->devname);
    printf("%5s %5s %5s | %9s %9s | %11s %11s | %6s %9s %9s %9s | %4s %s\n", "M", "K", "N", "plugin ms", "CLBlast ms",
           "plugin GF/s", "CLBlast GF/s", "ratio", "overhead", "overhead", "overhead", "reps", "max |diff|");
    printf("%5s %5s %5s | %9s %9s | %11s %11s | %6s %9s %9s %9s |\n", "", "", "", "(median)", "(median)", "", "", "",
           "(median)", "(paired)", "(best)");
    printf("------------------------------------------------------------------------------------------------------------\n");
    const int64_t M = 1024, KN[2] = {768, 3072};
    double worst = -1e9;
    for (int ki = 0; ki < 2; ki++)
        for (int ni = 0; ni < 2; ni++) worst = fmax(worst, matmul_row(o, &c, M, KN[ki], KN[ni], 0));
    double worst_best = -1e9;
    for (int i = 0; i < nbest; i++) worst_best = fmax(worst_best, 100.0 * (best[i] - 1.0));
    printf("\nworst median overhead %.2f%%; worst best-of overhead %.2f%%; paired overhead over all shapes (median of %d "
           "ratios) %.2f%% (target <= 5%%).\nTimings on a shared machine vary with other load: the best-of figures are "
           "the least disturbed; --seconds S for more repeats.\n",
           worst, worst_best, npool, 100.0 * (median_inplace(pool, npool) - 1.0));
    matmul_row(o, &c, 16, 16, 16, 1);
    printf("\n");
    clReleaseCommandQueue(c.q);
    clReleaseContext(c.ctx);
}

/* ------------------------------------------------------------------ bert: inference on both devices */

/* Build, compile (random weights, graph seed 1) and run BERT-Base's BertModel on device, batch
 * B x T: one warm-up run and `runs` timed ones. Returns the median seconds per run; the compile
 * time into *compile_s and the output into *out (the caller frees it). */
static double bert_side(const opts *o, const char *device, int B, int runs, double *compile_s, ts_tensor **out) {
    double t = now();
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.num_hidden_layers = o->layers;
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 1);
    ts_bert_outputs bo;
    if (ts_bert_build(g, &cfg, TS_BERT_MODEL, B, T, &bo) != TS_OK) DIE("building BERT: %s", ts_last_error());
    const char *fetch[] = {"last_hidden_state"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = device, .nfetch = 1, .fetches = fetch, .inference = 1});
    if (!p) DIE("compiling BERT on %s: %s", device, ts_last_error());
    ts_graph_free(g);
    *compile_s = now() - t;

    rng_state = 0x2545f4914f6cdd1dull; /* the same inputs on both devices */
    ts_tensor *in[3];
    const char *names[3] = {"input_ids", "token_type_ids", "attention_mask"};
    for (int k = 0; k < 3; k++) {
        in[k] = ts_tensor_new(TS_I32, 2, (int64_t[]){B, T});
        int32_t *v = ts_tensor_data(in[k]);
        for (int i = 0; i < B * T; i++) v[i] = k == 0 ? (int32_t)(next_rand() % V) : k == 1 ? i % T >= T / 2 : 1;
        CHECK_TS(ts_program_feed(p, names[k], in[k]));
    }
    double s[64];
    for (int r = 0; r <= runs; r++) {
        double t0 = now();
        CHECK_TS(ts_program_run(p));
        CHECK_TS(ts_program_fetch(p, "last_hidden_state", out)); /* the result on the host counts */
        if (r) s[r - 1] = now() - t0;
        if (r < runs) ts_tensor_free(*out), *out = NULL;
    }
    for (int k = 0; k < 3; k++) ts_tensor_free(in[k]);
    ts_program_free(p);
    return median_inplace(s, runs);
}

static void part_bert(const opts *o) {
    const int B = 8, C = 768, F = 3072;
    /* GFLOP per forward: per layer the four C x C projections, the two FFN products, and the two
     * attention products (QK^T and PV), 2 flops per multiply-add */
    double gflop = 2e-9 * B * T * o->layers * (4.0 * C * C + 2.0 * C * F + 2.0 * T * C);
    printf("BERT-Base inference (BertModel, %d layers, random weights), batch %d x %d, f32: %d timed run%s after one "
           "warm-up on each device\n", o->layers, B, T, o->bert_runs, o->bert_runs == 1 ? "" : "s");
    double cc, oc;
    ts_tensor *yo = NULL, *yc = NULL;
    double ot = bert_side(o, o->devname, B, o->bert_runs, &oc, &yo); /* OpenCL first: the CPU's OpenMP */
    double ct = bert_side(o, "cpu", B, o->bert_runs, &cc, &yc);      /* threads may spin after it   */
    double diff = 0, mag = 0;
    const float *a = ts_tensor_data(yo), *b = ts_tensor_data(yc);
    for (int64_t i = 0; i < (int64_t)B * T * C; i++)
        diff = fmax(diff, fabs((double)a[i] - b[i])), mag = fmax(mag, fabs((double)b[i]));
    printf("%-10s | %10s | %9s | %8s | %7s\n", "device", "compile s", "ms/batch", "seq/s", "GFLOP/s");
    printf("%-10s | %10.2f | %9.1f | %8.2f | %7.1f\n", o->devname, oc, ot * 1e3, B / ot, gflop / ot);
    printf("%-10s | %10.2f | %9.1f | %8.2f | %7.1f\n", "cpu", cc, ct * 1e3, B / ct, gflop / ct);
    printf("%s / cpu time: %.2fx; max |diff| of last_hidden_state %.3g (largest |value| %.3g)\n", o->devname, ot / ct,
           diff, mag);
    printf("A baseline: on PoCL (OpenCL on this CPU) opencl:N is a correctness device, not a fast one; on a GPU this\n"
           "row is the one to watch. %.1f GFLOP per forward (matrix products only).\n", gflop);
    ts_tensor_free(yo), ts_tensor_free(yc);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    opts o = {.seconds = 1.0, .device = 0, .bert_runs = 1, .layers = 12, .plugin = TS_OCL_PLUGIN};
    if (getenv("TESSERA_OPENCL_PLUGIN")) o.plugin = getenv("TESSERA_OPENCL_PLUGIN");
    int child = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--seconds") && more) o.seconds = atof(argv[++i]);
        else if (!strcmp(a, "--device") && more) o.device = atoi(argv[++i]);
        else if (!strcmp(a, "--bert-runs") && more) o.bert_runs = atoi(argv[++i]);
        else if (!strcmp(a, "--layers") && more) o.layers = atoi(argv[++i]);
        else if (!strcmp(a, "--only") && more) o.only = argv[++i];
        else if (!strcmp(a, "--plugin") && more) o.plugin = argv[++i];
        else if (!strcmp(a, "--compile-child")) child = 1;
        else DIE("unknown argument '%s' (usage: opencl [--seconds S] [--device N] [--bert-runs N] [--layers L] "
                 "[--only compile,matmul,bert] [--plugin PATH])", a);
    }
    if (!(o.seconds > 0) || o.bert_runs < 1 || o.bert_runs > 64 || o.layers < 1 || o.device < 0)
        DIE("--seconds must be > 0, --bert-runs in [1, 64], --layers >= 1, --device >= 0");
    snprintf(o.devname, sizeof o.devname, "opencl:%d", o.device);
    if (child) return compile_child(&o);

    struct stat st;
    if (stat(o.plugin, &st) != 0) {
        printf("opencl: no plugin at %s (build it with `make` where the OpenCL headers and CLBlast are installed): "
               "nothing measured\n", o.plugin);
        return 0;
    }
    cl_platform_id plat;
    cl_device_id dev;
    if (!find_device(o.device, &plat, &dev)) {
        printf("opencl: no OpenCL device %s (`clinfo -l` lists them; PoCL gives one on a CPU): nothing measured\n",
               o.devname);
        return 0;
    }
    char name[256] = "", version[256] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    printf("opencl: %s = %s (%s), plugin %s\n\n", o.devname, name, version, o.plugin);

    if (wanted(&o, "compile")) part_compile(&o); /* before this process touches OpenCL through tessera */
    if (ts_backend_load(o.plugin) != TS_OK) {
        printf("opencl: the plugin does not load: %s: nothing more measured\n", ts_last_error());
        return 0;
    }
    if (wanted(&o, "matmul")) part_matmul(&o, plat, dev);
    if (wanted(&o, "bert")) part_bert(&o);
    return 0;
}

#else /* a build without OpenCL or CLBlast */
#include <stdio.h>

int main(void) {
    printf("opencl: no OpenCL in this build (CMake found no OpenCL headers and CLBlast): nothing measured\n");
    return 0;
}
#endif
