/*
 * test_util.h — the small test framework shared by every tests/test_*.c.
 *
 *  - CHECK(cond, fmt, ...): on failure prints "file:line: [case] CHECK(cond) failed: <message>"
 *    and carries on. CHECK_OK / CHECK_STATUS / CHECK_ERRMSG for ts_status results and messages.
 *  - RUN(fn): runs one test case in a forked child (so a crash or a hang in one case is reported
 *    and the next case still runs), with a timeout. TS_TEST_NOFORK=1 runs cases in-process
 *    (handy under a debugger). tu_finish() prints the summary line and gives the exit code
 *    (1 on any failure, 77 when something was skipped and nothing failed). TS_TEST_VERBOSE=1
 *    prints every error message CHECK_ERRMSG looks at.
 *  - tu_args(argc, argv), the first line of every main: `test_x CASE...` runs only the cases
 *    named (RUN knows each case's name); an argument starting with "--" is left to the test's
 *    own parsing. A name no RUN has is an error ("no case named X", exit 2).
 *  - tu_skip(why) / tu_skip_part(why): what cannot run for want of data or a tool is reported
 *    as skipped (exit 77, which ctest shows as "Not Run", never as passed); with CI=true (CI
 *    installs everything, scripts/install-deps.sh) a skip is a failure instead.
 *  - A seeded RNG (splitmix64), host tensor helpers, n-d index helpers for host references.
 *  - Optionally (#define TU_ALLOC_COUNTER before including): a heap-allocation counter, used
 *    to check that a step allocates no buffers.
 *
 * Everything is static: each test is one translation unit.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#ifdef TU_ALLOC_COUNTER
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <execinfo.h>
#endif

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tessera.h"

/* ------------------------------------------------------------------ checks */

static int tu_nchecks, tu_nfail;
static const char *tu_case = "";

__attribute__((format(printf, 4, 5), unused))
static void tu_fail_at(const char *file, int line, const char *expr, const char *fmt, ...) {
    const char *base = strrchr(file, '/');
    fprintf(stdout, "%s:%d: [%s] CHECK(%s) failed: ", base ? base + 1 : file, line, tu_case, expr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    tu_nfail++;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        tu_nchecks++;                                                                              \
        if (!(cond)) tu_fail_at(__FILE__, __LINE__, #cond, __VA_ARGS__);                           \
    } while (0)

/* expr must return TS_OK; on failure show the status and ts_last_error(). Yields the status. */
#define CHECK_OK(expr)                                                                             \
    ({                                                                                             \
        ts_status s_ = (expr);                                                                     \
        CHECK(s_ == TS_OK, "%s returned %s: %s", #expr, ts_status_name(s_), ts_last_error());      \
        s_;                                                                                        \
    })

/* expr must return exactly `code`. */
#define CHECK_STATUS(expr, code)                                                                   \
    ({                                                                                             \
        ts_status s_ = (expr);                                                                     \
        CHECK(s_ == (code), "%s returned %s, expected %s (message: \"%s\")", #expr,                \
              ts_status_name(s_), ts_status_name(code), ts_last_error());                          \
        s_;                                                                                        \
    })

/* ts_last_error() must contain every one of the given words (case-sensitive). */
#define CHECK_ERRMSG(...) tu_check_msg(__FILE__, __LINE__, ts_last_error(), __VA_ARGS__, (const char *)NULL)

__attribute__((sentinel, unused))
static int tu_check_msg(const char *file, int line, const char *msg, ...) {
    va_list ap;
    va_start(ap, msg);
    int ok = 1;
    if (getenv("TS_TEST_VERBOSE")) printf("    message: %s\n", msg ? msg : "(null)");
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *)) {
        tu_nchecks++;
        if (!msg || !strstr(msg, w)) {
            tu_fail_at(file, line, "message has word", "\"%s\" is not in the error message \"%s\"", w,
                       msg ? msg : "(null)");
            ok = 0;
        }
    }
    va_end(ap);
    return ok;
}

/* Does msg mention the shape dims (any of the usual spellings: "[2, 3]", "[2,3]", "(2, 3)",
 * "2x3")? */
__attribute__((unused))
static int tu_msg_has_shape(const char *msg, int nd, const int64_t *d) {
    static const char *const open[] = {"[", "[", "(", "("}, *const sep[] = {", ", ",", ", ", ","},
                             *const close[] = {"]", "]", ")", ")"};
    char buf[256];
    for (int f = 0; f < 5; f++) {
        size_t o = 0;
        if (f < 4) o += (size_t)snprintf(buf + o, sizeof buf - o, "%s", open[f]);
        for (int i = 0; i < nd; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%lld", i ? (f < 4 ? sep[f] : "x") : "",
                                  (long long)d[i]);
        if (f < 4) snprintf(buf + o, sizeof buf - o, "%s", close[f]);
        if (strstr(msg, buf)) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ running cases */

static int tu_ncases, tu_ncase_fail, tu_nskip;
static const char *tu_prog = "test";     /* the program's name, for messages */
static char **tu_names;                  /* the cases named on the command line (NULL: all) */
static int tu_nnames, *tu_name_seen;

/* The first line of every test's main: remembers the program's name and the case names given
 * (every argument not starting with "--"; flags are the test's own to parse). */
__attribute__((unused))
static void tu_args(int argc, char **argv) {
    if (argc > 0 && argv[0]) {
        const char *base = strrchr(argv[0], '/');
        tu_prog = base ? base + 1 : argv[0];
    }
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--", 2)) continue;
        if (!tu_names) {
            tu_names = calloc((size_t)argc, sizeof *tu_names);
            tu_name_seen = calloc((size_t)argc, sizeof *tu_name_seen);
            if (!tu_names || !tu_name_seen) abort();
        }
        tu_names[tu_nnames++] = argv[i];
    }
}

/* Is case `name` to run (no names given, or one of them)? */
static int tu_wanted(const char *name) {
    if (!tu_names) return 1;
    int want = 0;
    for (int i = 0; i < tu_nnames; i++)
        if (!strcmp(tu_names[i], name)) want = tu_name_seen[i] = 1;
    return want;
}

/* Does CI (CI=true) run this? Then whatever CI should be able to run must run. */
static inline int tu_in_ci(void) {
    const char *ci = getenv("CI");
    return ci && !strcmp(ci, "true");
}

#define TU_CI_NOTE "CI=true: CI installs every tool and data set the tests use (bash scripts/install-deps.sh), so this is a failure"

/* The whole test cannot run (missing data or tool, said in `why`): prints "<test>: skipped,
 * <why>" and exits 77, which ctest shows as skipped; with CI=true prints why it fails and exits
 * 1. Called before any case runs. */
__attribute__((format(printf, 1, 2), noreturn, unused))
static void tu_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s: skipped, ", tu_prog);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    if (tu_in_ci()) printf("%s: FAIL: %s\n", tu_prog, TU_CI_NOTE);
    fflush(stdout);
    exit(tu_in_ci() ? 1 : 77);
}

/* Part of a test cannot run (missing data or tool, said in `why`): the case calling it (which
 * then returns), or, called from main, some check. The rest runs; tu_finish() then exits 77 when
 * nothing failed. With CI=true it is a failed check instead. */
#define tu_skip_part(...) tu_skip_part_at(__FILE__, __LINE__, __VA_ARGS__)
__attribute__((format(printf, 3, 4), unused))
static void tu_skip_part_at(const char *file, int line, const char *fmt, ...) {
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (tu_in_ci()) {
        tu_nchecks++;
        tu_fail_at(file, line, "nothing skipped", "skipped, %s (%s)", why, TU_CI_NOTE);
        return;
    }
    printf("%s%s%s: skipped, %s\n", tu_prog, *tu_case ? ": " : "", tu_case, why);
    fflush(stdout);
    tu_nskip++;
}

static inline double tu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef void (*tu_fn)(void);

/* Run fn as one case. In a forked child unless TS_TEST_NOFORK is set; a crash, a timeout or a
 * failed CHECK in the child marks the case failed. */
__attribute__((unused))
static void tu_run(const char *name, tu_fn fn, unsigned timeout_s) {
    if (!tu_wanted(name)) return;
    tu_ncases++;
    fflush(stdout);
    fflush(stderr);
    const char *nf = getenv("TS_TEST_NOFORK");
    if (nf && *nf && *nf != '0') {
        int before = tu_nfail;
        tu_case = name;
        fn();
        tu_case = "";
        if (tu_nfail != before) {
            tu_ncase_fail++;
            printf("---- %s: FAILED (%d checks)\n", name, tu_nfail - before);
        }
        return;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        tu_ncase_fail++;
        tu_nfail++;
        return;
    }
    double t0 = tu_now();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        close(fds[0]);
        close(fds[1]);
        tu_ncase_fail++;
        tu_nfail++;
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        tu_case = name;
        tu_nfail = 0;
        tu_nchecks = 0;
        tu_nskip = 0;
        alarm(timeout_s);
        fn();
        fflush(stdout);
        fflush(stderr);
        int counts[3] = {tu_nchecks, tu_nfail, tu_nskip};
        if (write(fds[1], counts, sizeof counts) != (ssize_t)sizeof counts) perror("write");
        close(fds[1]);
        exit(tu_nfail > 120 ? 120 : tu_nfail);
    }
    close(fds[1]);
    int counts[3] = {0, 0, 0};
    ssize_t got = 0;
    while ((got = read(fds[0], counts, sizeof counts)) < 0 && errno == EINTR) {}
    close(fds[0]);
    int finished = got == (ssize_t)sizeof counts;
    if (finished) tu_nchecks += counts[0], tu_nskip += counts[2];
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        printf("---- %s: CRASHED with signal %d (%s)%s\n", name, sig, strsignal(sig),
               sig == SIGALRM ? ": timed out" : "");
        tu_ncase_fail++;
        tu_nfail += finished && counts[1] ? counts[1] : 1;
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        int code = WEXITSTATUS(st);
        if (finished && counts[1])
            printf("---- %s: FAILED (%d checks)\n", name, counts[1]);
        else if (finished)
            printf("---- %s: FAILED: exit code %d after its checks passed (a leak or sanitizer report at exit?)\n",
                   name, code);
        else
            printf("---- %s: FAILED: exit code %d before the case finished (a sanitizer report?)\n", name, code);
        tu_ncase_fail++;
        tu_nfail += finished && counts[1] ? counts[1] : 1;
    }
    double dt = tu_now() - t0;
    if (dt > 1.0) printf("---- %s took %.1f s\n", name, dt);
    fflush(stdout);
}

#define RUN(fn) tu_run(#fn, fn, 300)

/* The summary line; the exit code of main: 1 on any failure, else 77 when something was
 * skipped (tu_skip_part), else 0. A case named on the command line that no RUN has: "no case
 * named X", exit 2. */
__attribute__((unused))
static int tu_finish(const char *suite) {
    int unknown = 0;
    for (int i = 0; i < tu_nnames; i++)
        if (!tu_name_seen[i]) {
            printf("%s: no case named %s\n", tu_prog, tu_names[i]);
            unknown = 1;
        }
    if (unknown) {
        fflush(stdout);
        return 2;
    }
    const char *verdict = tu_nfail ? "FAIL" : tu_nskip ? "SKIPPED" : "PASS";
    printf("== %s: %d cases, %d failed; %d checks, %d failed", suite, tu_ncases, tu_ncase_fail, tu_nchecks, tu_nfail);
    if (tu_nskip) printf("; %d skipped", tu_nskip);
    printf(" -> %s\n", verdict);
    fflush(stdout);
    return tu_nfail ? 1 : tu_nskip ? 77 : 0;
}

/* ------------------------------------------------------------------ RNG */

typedef struct tu_rng {
    uint64_t s;
} tu_rng;

static inline tu_rng tu_rng_seed(uint64_t seed) {
    tu_rng r = {seed * 0x9e3779b97f4a7c15ull + 0x1234567ull};
    return r;
}
static inline uint64_t tu_next(tu_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* [0, 1) */
static inline double tu_unif(tu_rng *r) { return (double)(tu_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static inline double tu_uniform(tu_rng *r, double lo, double hi) { return lo + (hi - lo) * tu_unif(r); }
static inline double tu_normal(tu_rng *r) {
    double u = tu_unif(r), v = tu_unif(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}
/* [0, n) */
static inline int64_t tu_randint(tu_rng *r, int64_t n) { return (int64_t)(tu_next(r) % (uint64_t)n); }

/* Fisher-Yates shuffle of idx[0..n). */
__attribute__((unused))
static void tu_shuffle(tu_rng *r, int64_t *idx, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = tu_randint(r, i + 1), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* ------------------------------------------------------------------ shapes and tensors */

/* DIMS(2, 3) expands to the two arguments "ndim, shape": ts_input(g, "x", TS_F32, DIMS(2, 3)). */
#define DIMS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

static inline int64_t tu_numel(int nd, const int64_t *sh) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sh[i];
    return n;
}

/* Coordinates c[0..nd) of flat index i in a row-major shape. */
static inline void tu_unravel(int64_t i, int nd, const int64_t *sh, int64_t *c) {
    for (int k = nd - 1; k >= 0; k--) {
        c[k] = i % sh[k];
        i /= sh[k];
    }
}

/* Flat index into a tensor of shape sh (rank nd) that broadcasts (numpy rules) onto output
 * coordinates c of rank ndo. */
static inline int64_t tu_bcast_index(const int64_t *c, int ndo, int nd, const int64_t *sh) {
    int64_t idx = 0;
    for (int k = 0; k < nd; k++) {
        int64_t ck = c[ndo - nd + k];
        idx = idx * sh[k] + (sh[k] == 1 ? 0 : ck);
    }
    return idx;
}

/* A new f32 tensor with uniform [lo, hi) values. */
__attribute__((unused))
static ts_tensor *tu_rand_tensor(tu_rng *r, int nd, const int64_t *sh, double lo, double hi) {
    ts_tensor *t = ts_tensor_new(TS_F32, nd, sh);
    if (!t) return NULL;
    float *d = ts_tensor_data(t);
    for (int64_t i = 0; i < ts_tensor_numel(t); i++) d[i] = (float)tu_uniform(r, lo, hi);
    return t;
}

static inline float *tu_f32(ts_tensor *t) { return (float *)ts_tensor_data(t); }

/* x rounded to bf16 (nearest even) and back to f32. */
static inline float tu_bf16(float x) {
    uint16_t h;
    float y;
    ts_f32_to_bf16(&x, &h, 1);
    ts_bf16_to_f32(&h, &y, 1);
    return y;
}

/* Fetch a value; NULL (and a failed CHECK) on error. */
#define TU_FETCH(p, name) tu_fetch_at(__FILE__, __LINE__, (p), (name))
__attribute__((unused))
static ts_tensor *tu_fetch_at(const char *file, int line, ts_program *p, const char *name) {
    ts_tensor *t = NULL;
    ts_status s = ts_program_fetch(p, name, &t);
    tu_nchecks++;
    if (s != TS_OK || !t) {
        tu_fail_at(file, line, "fetch", "ts_program_fetch('%s') -> %s: %s", name, ts_status_name(s),
                   ts_last_error());
        return NULL;
    }
    return t;
}

/* Same dtype and shape? */
__attribute__((unused))
static int tu_same_shape(const ts_tensor *a, const ts_tensor *b) {
    if (ts_tensor_dtype(a) != ts_tensor_dtype(b) || ts_tensor_ndim(a) != ts_tensor_ndim(b)) return 0;
    for (int i = 0; i < ts_tensor_ndim(a); i++)
        if (ts_tensor_shape(a)[i] != ts_tensor_shape(b)[i]) return 0;
    return 1;
}

/* Bytes equal? (Same shape and identical contents.) */
__attribute__((unused))
static int tu_bitwise_equal(ts_tensor *a, ts_tensor *b) {
    return a && b && tu_same_shape(a, b) &&
           memcmp(ts_tensor_data(a), ts_tensor_data(b), ts_tensor_nbytes(a)) == 0;
}

__attribute__((unused))
static double tu_max_abs_diff_f(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as a huge error */
    }
    return m;
}

/* Designated initializers of ts_compile_opts for a fetch list:
 *   ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "w@GRAD"), .inference = 0}) */
#define TU_FETCHES(...)                                                                            \
    .nfetch = (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)),             \
    .fetches = (const char *const[]){__VA_ARGS__}

/* ------------------------------------------------------------------ allocation counter */
#ifdef TU_ALLOC_COUNTER
/* Counts heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) on
 * every thread while counting is on: tu_allocs all of them, tu_big_allocs those of at least
 * TU_BIG_ALLOC bytes (the size of a tensor buffer in the programs that use this, as opposed to
 * bookkeeping: libgomp allocates a team of ~1-3 KiB for every parallel region that runs on one
 * thread, oneDNN an argument map for every primitive execution).
 * Under AddressSanitizer it uses the sanitizer's malloc hook; under other sanitizers it is off
 * (tu_alloc_counter_init() returns 0); otherwise this executable interposes the allocator and
 * forwards to glibc. */
#define TU_BIG_ALLOC 16384
static long tu_allocs, tu_big_allocs, tu_dnnl_allocs;
static int tu_counting;
/* 1 when the allocation being counted was asked for by oneDNN itself (a frame of the call
 * stack lies in libdnnl). oneDNN's gemm-based matmul ("gemm:jit", what oneDNN 2.6 picks on
 * CPUs without AVX-512, such as AVX2-only EPYCs) packs its operands into buffers it mallocs on
 * every call, whatever scratchpad it is given; the brgemm kernels used with AVX-512 take all of
 * theirs from the scratchpad tessera plans. Those are the library's, not a tessera buffer made
 * per step, so they are counted apart. */
static int tu_from_dnnl(void) {
    void *frames[48];
    int n = backtrace(frames, 48);
    for (int i = 1; i < n; i++) {
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname && strstr(info.dli_fname, "libdnnl")) return 1;
    }
    return 0;
}
static inline void tu_count_one(size_t n) {
    if (!__atomic_load_n(&tu_counting, __ATOMIC_RELAXED)) return;
    __atomic_add_fetch(&tu_allocs, 1, __ATOMIC_RELAXED);
    if (n >= TU_BIG_ALLOC) __atomic_add_fetch(tu_from_dnnl() ? &tu_dnnl_allocs : &tu_big_allocs, 1, __ATOMIC_RELAXED);
}
/* backtrace() loads its unwinder (and allocates) on its first call: make that call now, outside
 * any allocator hook. */
static void tu_backtrace_warm(void) {
    void *frames[4];
    (void)backtrace(frames, 4);
}
/* which allocator hook: ASan's (gcc or clang), none under other sanitizers, else interposition */
#if defined(__SANITIZE_ADDRESS__)
#define TU_HOOK_ASAN 1
#elif defined(__SANITIZE_THREAD__)
#define TU_HOOK_NONE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_HOOK_ASAN 1
#elif __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TU_HOOK_NONE 1
#endif
#endif
#if defined(TU_HOOK_ASAN)
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
static void tu_malloc_hook(const volatile void *p, size_t n) { (void)p; tu_count_one(n); }
static void tu_free_hook(const volatile void *p) { (void)p; }
/* 1 when allocations can be counted in this build */
static int tu_alloc_counter_init(void) {
    tu_backtrace_warm();
    return __sanitizer_install_malloc_and_free_hooks(tu_malloc_hook, tu_free_hook) != 0;
}
#elif defined(TU_HOOK_NONE)
static int tu_alloc_counter_init(void) { return 0; }
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
void *malloc(size_t n) { tu_count_one(n); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { tu_count_one(a * b); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { tu_count_one(n); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t al, size_t n) { tu_count_one(n); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { tu_count_one(n); return __libc_memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n) {
    tu_count_one(n);
    void *p = __libc_memalign(al, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
static int tu_alloc_counter_init(void) {
    tu_backtrace_warm();
    return 1;
}
#endif
static inline void tu_alloc_count_start(void) {
    __atomic_store_n(&tu_allocs, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tu_dnnl_allocs, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tu_big_allocs, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tu_counting, 1, __ATOMIC_RELAXED);
}
/* all: every allocation; big: tensor-sized ones asked for by anything but oneDNN; dnnl: tensor-
 * sized ones oneDNN asked for itself (see tu_from_dnnl). */
static inline void tu_alloc_count_stop(long *all, long *big, long *dnnl) {
    __atomic_store_n(&tu_counting, 0, __ATOMIC_RELAXED);
    *all = __atomic_load_n(&tu_allocs, __ATOMIC_RELAXED);
    *big = __atomic_load_n(&tu_big_allocs, __ATOMIC_RELAXED);
    *dnnl = __atomic_load_n(&tu_dnnl_allocs, __ATOMIC_RELAXED);
}
#endif

#endif /* TEST_UTIL_H */
