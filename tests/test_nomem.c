/*
 * test_nomem.c — the library never aborts when an allocation fails: it reports TS_ERR_NOMEM
 * (issue 38). This program defines malloc, calloc, realloc, strdup, strndup, posix_memalign and
 * aligned_alloc itself (the static library's calls resolve to them; they forward to glibc's
 * __libc_* functions) and fails the N-th allocation that tessera's code asks for — those whose
 * caller lies in this executable's text, which holds the static library; libc's, libgomp's and
 * oneDNN's own stay untouched — for N = 1, 2, ... until a run no longer reaches N:
 *  - once: only the N-th allocation fails (the later ones succeed: the clean-up paths run);
 *  - from N on: every allocation from the N-th fails (the error paths must not need memory).
 * Each run must end in success or in a clean TS_ERR_NOMEM from some call, never in a crash or
 * another error:
 *  - graph: a small training graph (inputs, parameters, matmul, bias, GELU, layer norm, dropout in
 *    a recompute segment, cross-entropy), ts_backward, an lr schedule and AdamW with gradient
 *    clipping and accumulation, then ts_compile of the training and the inference program: a
 *    builder call that fails leaves the graph's sticky TS_ERR_NOMEM (ts_graph_status), which
 *    ts_compile then refuses with; a compile that fails returns NULL with TS_ERR_NOMEM. A program
 *    that compiled (after a failure that was recovered from, or none) runs a step. Then
 *    ts_calib_new on the graph (NULL with TS_ERR_NOMEM, or a calibrator).
 *  - pipeline: the same on two pipeline stages (stage_devices cpu:0, cpu:1; no recompute segment,
 *    a fed lr).
 *  - onnx: ts_onnx_load of tests/fixtures/onnx/cnn.onnx, ts_onnx_import (TS_ERR_NOMEM:
 *    "ts_onnx_import: out of memory ...") and ts_compile of its inference program.
 * After each run the main heap must be back to what it held before the sweep (glibc's mallinfo2,
 * exact once glibc's thread cache is off: the program runs itself again with GLIBC_TUNABLES
 * glibc.malloc.tcache_count=0): the failure paths leak nothing. A crash prints the case, the mode
 * and N before the signal is raised again. A sweep takes well under a second (Release).
 * Under a sanitizer (AddressSanitizer replaces the allocator itself) nothing runs: the program
 * says so and exits 0 (the other tests check the normal paths for leaks there).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "test_util.h"

#include "tessera_onnx.h"

#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define NM_SANITIZED 1
#endif
#endif

#ifndef NM_SANITIZED
/* ------------------------------------------------------------------ failing allocations */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern char __executable_start, etext; /* this executable's text: tessera's code and this test's */

static long nm_fail_at;  /* the allocation that fails (1, 2, ...); 0: none */
static int nm_sticky;    /* every allocation from nm_fail_at on fails */
static long nm_count;    /* tessera's allocations since nm_arm */
static int nm_armed, nm_fired;
/* outcomes of a sweep, for its line */
static long nm_built_nomem, nm_compile_nomem, nm_compiled, nm_calib_nomem, nm_load_nomem, nm_import_nomem;

static void nm_arm(long at, int sticky) {
    __atomic_store_n(&nm_count, 0, __ATOMIC_SEQ_CST);
    nm_fail_at = at, nm_sticky = sticky, nm_fired = 0;
    __atomic_store_n(&nm_armed, 1, __ATOMIC_SEQ_CST);
}
static void nm_disarm(void) { __atomic_store_n(&nm_armed, 0, __ATOMIC_SEQ_CST); }

/* Does this allocation, asked for from `caller`, fail? */
static int nm_fail(const void *caller) {
    if (!__atomic_load_n(&nm_armed, __ATOMIC_RELAXED)) return 0;
    if ((const char *)caller < &__executable_start || (const char *)caller >= &etext) return 0;
    long k = __atomic_add_fetch(&nm_count, 1, __ATOMIC_RELAXED);
    if (k == nm_fail_at || (nm_sticky && k >= nm_fail_at)) {
        __atomic_store_n(&nm_fired, 1, __ATOMIC_RELAXED);
        return 1;
    }
    return 0;
}

#define NM_CALLER __builtin_extract_return_addr(__builtin_return_address(0))
void *malloc(size_t n) { return nm_fail(NM_CALLER) ? NULL : __libc_malloc(n); }
void *calloc(size_t a, size_t b) { return nm_fail(NM_CALLER) ? NULL : __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return nm_fail(NM_CALLER) ? NULL : __libc_realloc(p, n); }
void *aligned_alloc(size_t al, size_t n) { return nm_fail(NM_CALLER) ? NULL : __libc_memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n) {
    if (nm_fail(NM_CALLER)) return ENOMEM;
    void *p = __libc_memalign(al, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
char *strdup(const char *s) {
    if (nm_fail(NM_CALLER)) return NULL;
    size_t n = strlen(s) + 1;
    char *d = __libc_malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}
char *strndup(const char *s, size_t max) {
    if (nm_fail(NM_CALLER)) return NULL;
    size_t n = strnlen(s, max);
    char *d = __libc_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* ------------------------------------------------------------------ where a crash happened */

static const char *nm_what = "";
static volatile long nm_at;
static volatile int nm_mode;

static void nm_on_crash(int sig) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "test_nomem: signal %d in %s with allocation %ld failing %s\n", sig, nm_what,
                     nm_at, nm_mode ? "and every one after it" : "once");
    if (n > 0 && write(2, buf, (size_t)n) < 0) {}
    signal(sig, SIG_DFL);
    raise(sig);
}
static void nm_catch(const char *what) {
    nm_what = what;
    signal(SIGSEGV, nm_on_crash);
    signal(SIGABRT, nm_on_crash);
    signal(SIGBUS, nm_on_crash);
    signal(SIGFPE, nm_on_crash);
}

/* Bytes in use in the main thread's heap (glibc's main arena and its mmapped blocks): what a run
 * that frees all it made leaves as it found (after a first run, which fills the library's caches).
 * Exact only without glibc's per-thread cache (its blocks count as in use): main runs the test
 * again with GLIBC_TUNABLES=glibc.malloc.tcache_count=0, else the leak check is off. */
static int nm_exact_heap;
static size_t live_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void check_leak(size_t base, long at, int mode) {
    size_t now = live_bytes();
    if (nm_exact_heap)
        CHECK(now <= base, "%zu bytes leaked with allocation %ld failing %s", now - base, at,
              mode ? "and after" : "once");
}

/* A status that is fine after a failed allocation: TS_OK or TS_ERR_NOMEM. */
#define CHECK_OK_OR_NOMEM(st, what, at, mode)                                                                        \
    CHECK((st) == TS_OK || (st) == TS_ERR_NOMEM, "%s with allocation %ld failing (%s): %s: %s", what, at,           \
          mode ? "and after" : "once", ts_status_name(st), ts_last_error())

/* ------------------------------------------------------------------ the graph */

enum { B = 4, IN = 8, HID = 16, CLS = 5 };

/* Build the training graph (on two pipeline stages when `staged`); the graph's status (TS_OK, or
 * the first failure's), or TS_ERR_NOMEM when even the graph could not be made (*out NULL). */
static ts_status build(ts_graph **out, int staged, long at, int mode) {
    ts_graph *g = *out = ts_graph_new();
    if (!g) return ts_last_status();
    ts_graph_set_seed(g, 5);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, IN)), y = ts_input(g, "labels", TS_I32, DIMS(B));
    ts_value w1 = ts_param(g, "w1", TS_F32, DIMS(IN, HID), ts_init_normal(0.1f));
    ts_value b1 = ts_param(g, "b1", TS_F32, DIMS(HID), ts_init_zeros());
    ts_value gam = ts_param(g, "gamma", TS_F32, DIMS(HID), ts_init_ones());
    ts_value bet = ts_param(g, "beta", TS_F32, DIMS(HID), ts_init_zeros());
    ts_value w2 = ts_param(g, "w2", TS_F32, DIMS(HID, CLS), ts_init_normal(0.1f));
    if (staged) CHECK_OK_OR_NOMEM(ts_graph_stage_begin(g, 0), "ts_graph_stage_begin", at, mode);
    /* (not on pipeline stages: a recomputed node that reads only fed inputs and parameters is
     * placed in the update there, and the compile refuses the graph) */
    if (!staged) CHECK_OK_OR_NOMEM(ts_graph_recompute_begin(g), "ts_graph_recompute_begin", at, mode);
    ts_value h = ts_gelu(g, ts_add(g, ts_matmul(g, x, w1, 0, 0), b1), 0);
    h = ts_dropout(g, ts_layer_norm(g, h, gam, bet, 1e-5f), 0.1f);
    if (!staged) CHECK_OK_OR_NOMEM(ts_graph_recompute_end(g), "ts_graph_recompute_end", at, mode);
    if (staged) {
        CHECK_OK_OR_NOMEM(ts_graph_stage_end(g), "ts_graph_stage_end", at, mode);
        CHECK_OK_OR_NOMEM(ts_graph_stage_begin(g, 1), "ts_graph_stage_begin", at, mode);
    }
    ts_value logits = ts_name(g, ts_matmul(g, h, w2, 0, 0), "logits");
    ts_value loss = ts_name(g, ts_cross_entropy(g, logits, y, -100), "loss");
    if (staged) CHECK_OK_OR_NOMEM(ts_graph_stage_end(g), "ts_graph_stage_end", at, mode);
    if (loss == TS_NONE) return ts_graph_status(g);
    CHECK_OK_OR_NOMEM(ts_backward(g, loss), "ts_backward", at, mode);
    ts_lr_schedule_opts so = {sizeof so, TS_LR_COSINE, 1e-3f, 2, 10, 0.f, 0.f, 0.f};
    /* a pipeline's update reads no value made by the update: its lr is fed */
    ts_value lr = staged ? ts_input(g, "lr", TS_F32, 0, NULL) : ts_lr_schedule(g, &so);
    ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_ADAMW);
    oo.max_grad_norm = 1.0f;
    oo.accumulation_steps = 2;
    if (lr != TS_NONE) CHECK_OK_OR_NOMEM(ts_optimizer(g, lr, &oo), "ts_optimizer", at, mode);
    return ts_graph_status(g);
}

/* One step of p (a training program fetching "loss", or the inference one fetching "logits") on
 * fixed data: 0 when it ran and gave finite numbers. */
static int run_step(ts_program *p, const char *fetch, int iters, int labels) {
    int64_t xs[3] = {iters, B, IN}, ys[2] = {iters, B};
    ts_tensor *x = ts_tensor_new(TS_F32, iters > 1 ? 3 : 2, iters > 1 ? xs : xs + 1);
    ts_tensor *y = ts_tensor_new(TS_I32, iters > 1 ? 2 : 1, iters > 1 ? ys : ys + 1);
    ts_tensor *out = NULL;
    int bad = 1;
    if (x && y) {
        for (int64_t i = 0; i < ts_tensor_numel(x); i++) tu_f32(x)[i] = (float)((i * 7) % 11) * 0.1f - 0.5f;
        for (int64_t i = 0; i < ts_tensor_numel(y); i++) ((int32_t *)ts_tensor_data(y))[i] = (int32_t)(i % CLS);
        ts_status st = ts_program_feed(p, "x", x);
        if (!st && labels) st = ts_program_feed(p, "labels", y);
        if (!st && iters > 1) /* a pipeline's fed lr, one a micro-batch */
            st = ts_program_feed_data(p, "lr", TS_F32, 1, (int64_t[]){iters}, (float[]){1e-3f, 1e-3f});
        if (!st) st = ts_program_run(p);
        if (!st) st = ts_program_fetch(p, fetch, &out);
        CHECK(st == TS_OK, "running the program compiled after the failures: %s", ts_last_error());
        bad = st != TS_OK;
        for (int64_t i = 0; out && i < ts_tensor_numel(out); i++) bad |= !isfinite(tu_f32(out)[i]);
    }
    ts_tensor_free(x), ts_tensor_free(y), ts_tensor_free(out);
    return bad;
}

/* ts_compile with allocation `at` failing: NULL with TS_ERR_NOMEM, or a program that runs.
 * Returns 1 when the failure fired (since nm_arm). */
static int compile_checked(ts_graph *g, const ts_compile_opts *o, const char *fetch, int iters, long at, int mode,
                            ts_status built) {
    ts_program *p = ts_compile(g, o);
    int fired = nm_fired;
    nm_disarm();
    ts_status st = p ? TS_OK : ts_last_status();
    CHECK_OK_OR_NOMEM(st, "ts_compile", at, mode);
    if (built == TS_OK) p ? nm_compiled++ : nm_compile_nomem++;
    CHECK(!p || built == TS_OK, "ts_compile took a graph that failed (%s)", ts_status_name(built));
    CHECK(p || fired || built != TS_OK, "ts_compile failed with no allocation failing: %s", ts_last_error());
    if (p) CHECK(run_step(p, fetch, iters, !o->inference) == 0, "the program compiled with allocation %ld failing", at);
    ts_program_free(p);
    return fired;
}

/* Build and compile (training and, unstaged, inference programs) with allocation `at` failing
 * (0: none); 1 when the failure fired. */
static int graph_once(int staged, long at, int mode) {
    const char *devs[2] = {"cpu:0", "cpu:1"};
    ts_compile_opts train = {.num_threads = 1, TU_FETCHES("loss")};
    ts_compile_opts infer = {.num_threads = 1, TU_FETCHES("logits"), .inference = 1};
    if (staged) train.stage_devices = devs, train.nstage_devices = 2, train.device_iterations = 2;
    ts_graph *g = NULL;
    nm_arm(at, mode);
    ts_status built = build(&g, staged, at, mode);
    CHECK_OK_OR_NOMEM(built, "building the graph", at, mode);
    nm_built_nomem += built == TS_ERR_NOMEM;
    if (g && built != TS_OK) CHECK(ts_graph_status(g) == built, "the graph's status is not its first failure's");
    int fired = nm_fired;
    if (g) {
        fired |= compile_checked(g, &train, "loss", staged ? 2 : 1, at, mode, built);
        if (!staged) {
            nm_arm(at, mode); /* the inference program: the same N counted from its compile */
            fired |= compile_checked(g, &infer, "logits", 1, at, mode, built);
            nm_arm(at, mode); /* a calibrator (it names the activations it observes in its copy) */
            ts_calib *c = ts_calib_new(g, &infer, TS_CALIB_MINMAX);
            fired |= nm_fired;
            nm_disarm();
            ts_status cs = c ? TS_OK : ts_last_status();
            if (built == TS_OK) CHECK_OK_OR_NOMEM(cs, "ts_calib_new", at, mode);
            nm_calib_nomem += built == TS_OK && cs == TS_ERR_NOMEM;
            ts_calib_free(c);
        }
    }
    nm_disarm();
    ts_graph_free(g);
    return fired;
}

/* Sweep N over the graph's build and compile; `staged`: on two pipeline stages. */
static void sweep_graph(int staged) {
    graph_once(staged, 0, 0); /* the library's caches filled, before the heap's baseline */
    for (int mode = 0; mode < 2; mode++) {
        nm_mode = mode;
        nm_built_nomem = nm_compile_nomem = nm_compiled = nm_calib_nomem = 0;
        size_t base = live_bytes();
        long at = 1;
        for (; !tu_nfail; at++) {
            nm_at = at;
            int fired = graph_once(staged, at, mode);
            check_leak(base, at, mode);
            if (!fired) break; /* the whole run took fewer allocations than N: every N was tried */
        }
        char calib[64] = "";
        if (!staged) snprintf(calib, sizeof calib, ", ts_calib_new %ld times", nm_calib_nomem);
        printf("  %s, allocation N failing %s: N = 1..%ld; TS_ERR_NOMEM from the graph %ld times, ts_compile %ld "
               "times%s; %ld programs compiled and ran\n", staged ? "pipeline" : "graph",
               mode ? "and every one after it" : "once", at, nm_built_nomem, nm_compile_nomem, calib, nm_compiled);
    }
}

static void test_graph(void) {
    nm_catch("graph");
    sweep_graph(0);
}

static void test_pipeline(void) {
    nm_catch("pipeline");
    sweep_graph(1);
}

/* ------------------------------------------------------------------ ONNX */

#define CNN TS_SOURCE_DIR "/tests/fixtures/onnx/cnn.onnx"

/* Load, import and compile cnn.onnx with allocation `at` failing; returns 1 when the failure
 * fired. */
static int onnx_once(long at, int mode) {
    nm_arm(at, mode);
    ts_onnx *m = ts_onnx_load(CNN);
    ts_graph *g = NULL;
    ts_status st = m ? TS_OK : ts_last_status();
    CHECK_OK_OR_NOMEM(st, "ts_onnx_load", at, mode);
    nm_load_nomem += st == TS_ERR_NOMEM;
    if (m) {
        int64_t sh[TS_MAX_DIMS];
        ts_dtype dt;
        int nd = ts_onnx_input_shape(m, 0, &dt, sh);
        for (int i = 0; i < nd; i++)
            if (sh[i] < 0) sh[i] = 2;
        const int64_t *shapes[1] = {sh};
        ts_value out = TS_NONE;
        g = ts_graph_new();
        st = g ? ts_onnx_import(m, g, &nd, shapes, NULL, &out) : ts_last_status();
        CHECK_OK_OR_NOMEM(st, "ts_onnx_import", at, mode);
        if (st == TS_ERR_NOMEM && g) CHECK_ERRMSG("ts_onnx_import: out of memory"), nm_import_nomem++;
        if (st == TS_OK) {
            const char *name = ts_onnx_output_name(m, 0);
            ts_program *p = ts_compile(g, &(ts_compile_opts){.num_threads = 1, .nfetch = 1, .fetches = &name,
                                                             .inference = 1});
            st = p ? TS_OK : ts_last_status();
            CHECK_OK_OR_NOMEM(st, "ts_compile of the imported model", at, mode);
            p ? nm_compiled++ : nm_compile_nomem++;
            ts_program_free(p);
        }
    }
    int fired = nm_fired;
    nm_disarm();
    ts_graph_free(g);
    ts_onnx_free(m);
    return fired;
}

static void test_onnx(void) {
    nm_catch("onnx");
    ts_onnx *m = ts_onnx_load(CNN);
    if (!m && ts_last_status() == TS_ERR_UNSUPPORTED) { /* a library built without ONNX */
        printf("  onnx: not run, %s\n", ts_last_error());
        return;
    }
    ts_onnx_free(m);
    onnx_once(0, 0); /* the library's caches filled, before the heap's baseline */
    for (int mode = 0; mode < 2; mode++) {
        nm_mode = mode;
        nm_load_nomem = nm_import_nomem = nm_compile_nomem = nm_compiled = 0;
        long at = 1;
        size_t base = live_bytes();
        for (; !tu_nfail; at++) {
            nm_at = at;
            int fired = onnx_once(at, mode);
            check_leak(base, at, mode);
            if (!fired) break;
        }
        printf("  onnx, allocation N failing %s: N = 1..%ld; TS_ERR_NOMEM from ts_onnx_load %ld times, ts_onnx_import "
               "%ld times, ts_compile %ld times; %ld programs compiled\n", mode ? "and every one after it" : "once", at,
               nm_load_nomem, nm_import_nomem, nm_compile_nomem, nm_compiled);
    }
}

/* The interposed allocator counts: a build with nothing failing asks for memory. */
static void test_counts(void) {
    nm_arm(0, 0);
    ts_graph *g = NULL;
    ts_status st = build(&g, 0, 0, 0);
    long n = nm_count;
    nm_disarm();
    CHECK(st == TS_OK && !nm_fired, "the graph without failures: %s", ts_last_error());
    CHECK(n > 10, "tessera's allocations are not seen (%ld counted)", n);
    ts_graph_free(g);
}
#endif /* !NM_SANITIZED */

int main(int argc, char **argv) {
    tu_args(argc, argv);
#ifdef NM_SANITIZED
    /* 0, not 77: ctest would count 77 as a failure here (no SKIP_RETURN_CODE for it) */
    printf("test_nomem: not run, a sanitizer replaces the allocator (the failing allocations are interposed only "
           "in a build without one)\n");
    return 0;
#else
    const char *tun = getenv("GLIBC_TUNABLES");
    nm_exact_heap = tun && strstr(tun, "glibc.malloc.tcache_count=0");
    if (!nm_exact_heap && !getenv("NM_NO_REEXEC")) { /* once: the leak check needs the exact heap */
        char val[1024];
        snprintf(val, sizeof val, "%s%sglibc.malloc.tcache_count=0", tun ? tun : "", tun ? ":" : "");
        setenv("GLIBC_TUNABLES", val, 1);
        setenv("NM_NO_REEXEC", "1", 1);
        execv("/proc/self/exe", argv);
        printf("test_nomem: cannot run again without glibc's thread cache (%s): no leak check\n", strerror(errno));
    }
    RUN(test_counts);
    RUN(test_graph);
    RUN(test_pipeline);
    RUN(test_onnx);
    return tu_finish("test_nomem");
#endif
}
