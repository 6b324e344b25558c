/*
 * test_backend_abi.c — the device ABI (include/tessera_backend.h, docs/backend-abi.md) from the
 * outside, as a plugin would use it:
 *  - the CPU backend is found through the registry by name and by index, with tessera's ABI
 *    version; devices "cpu" and "cpu:N" compile and run the same program to the same bits;
 *  - "toy", a backend written here against the public header alone (host memory of its own,
 *    four ops: matmul, add, mul, relu on f32), registers, runs a small program to the CPU's
 *    numbers, refuses a program with an op it lacks (naming every unsupported node at once), and
 *    takes parameters copied from a CPU program (device to device through the host);
 *  - the thread rule, always checked: a copy into a device while
 *    another thread is inside its execute fails naming the device;
 *  - a backend built for a newer ABI major is refused with a message naming both versions, one
 *    without a required entry is refused naming the entry, a table of ABI 1.x (the major before
 *    2.0) is refused saying so, and one without the optional entries at the end (a smaller
 *    struct_size) is accepted.
 */
#include "test_util.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

#include "tessera_backend.h"

/* ------------------------------------------------------------------ the toy backend */

typedef struct toy_dev {
    int index;
    long allocs;
} toy_dev;

static int toy_count(void) { return 2; }
static ts_status toy_open(const ts_device_args *a, void **dev) {
    toy_dev *d = calloc(1, sizeof *d);
    if (!d) return ts_abi_error(TS_ERR_NOMEM, "toy: out of memory");
    d->index = a->index;
    *dev = d;
    return TS_OK;
}
static void toy_close(void *dev) { free(dev); }
static long toy_allocs; /* every device's */
static ts_status toy_alloc(void *dev, size_t bytes, void **mem) {
    ((toy_dev *)dev)->allocs++;
    toy_allocs++;
    *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
    return *mem ? TS_OK : ts_abi_error(TS_ERR_NOMEM, "toy: out of memory");
}
static void toy_free(void *dev, void *mem) {
    (void)dev;
    free(mem);
}
static float *at(ts_buffer b) { return (float *)((char *)b.mem + b.offset); }
static ts_status toy_to_dev(void *dev, ts_buffer dst, const void *src, size_t n) {
    (void)dev;
    memcpy(at(dst), src, n);
    return TS_OK;
}
static ts_status toy_to_host(void *dev, void *dst, ts_buffer src, size_t n) {
    (void)dev;
    memcpy(dst, at(src), n);
    return TS_OK;
}
/* f32 only; a matmul only without transposes, bias, activation or scale (the ABI shows the
 * whole node, so fusion never makes one the toy cannot run) */
static int toy_supports(void *dev, const ts_abi_node *n, const ts_abi_value *v) {
    (void)dev;
    for (int k = 0; k < n->nout; k++)
        if (v[n->out[k]].dtype != TS_F32) return 0;
    if (!strcmp(n->op, "matmul"))
        return n->nin == 2 && !n->iattr[0] && !n->iattr[1] && !n->iattr[2] && !n->iattr[3] && n->fattr[0] == 0.f;
    return !strcmp(n->op, "add") || !strcmp(n->op, "mul") || !strcmp(n->op, "relu");
}
static ts_status toy_compile(void *dev, const ts_abi_plan *plan, size_t *ws, void **exe) {
    (void)dev, (void)plan;
    *ws = 0;
    *exe = (void *)1;
    return TS_OK;
}
static int64_t numel(const ts_abi_value *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}
/* test_thread_rule: execute raises toy_inside and waits while toy_hold is set */
static int toy_hold, toy_inside;
static ts_status toy_execute(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer ws, uint64_t step) {
    (void)dev, (void)exe, (void)ws, (void)step;
    __atomic_store_n(&toy_inside, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&toy_hold, __ATOMIC_SEQ_CST)) sched_yield();
    for (int i = 0; i < plan->nnodes; i++) {
        const ts_abi_node *n = &plan->nodes[i];
        const ts_abi_value *a = &plan->values[n->in[0]], *o = &plan->values[n->out[0]];
        float *y = at(o->buf), *x = at(a->buf);
        if (!strcmp(n->op, "relu")) {
            for (int64_t k = 0; k < numel(o); k++) y[k] = x[k] > 0 ? x[k] : 0;
            continue;
        }
        const ts_abi_value *b = &plan->values[n->in[1]];
        float *w = at(b->buf);
        if (!strcmp(n->op, "matmul")) { /* [M, K] x [K, N] */
            int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1];
            for (int64_t r = 0; r < M; r++)
                for (int64_t c = 0; c < N; c++) {
                    float s = 0;
                    for (int64_t k = 0; k < K; k++) s += x[r * K + k] * w[k * N + c];
                    y[r * N + c] = s;
                }
            continue;
        }
        int64_t nb = numel(b); /* b broadcast over the leading dims */
        for (int64_t k = 0; k < numel(o); k++) y[k] = !strcmp(n->op, "add") ? x[k] + w[k % nb] : x[k] * w[k % nb];
    }
    return TS_OK;
}
static void toy_release(void *dev, void *exe) { (void)dev, (void)exe; }

static const ts_backend_api toy = {
    .struct_size = sizeof(ts_backend_api), .abi_major = TS_ABI_MAJOR, .abi_minor = TS_ABI_MINOR, .name = "toy",
    .device_count = toy_count, .device_open = toy_open, .device_close = toy_close, .alloc = toy_alloc,
    .free = toy_free, .copy_to_device = toy_to_dev, .copy_to_host = toy_to_host, .supports = toy_supports,
    .compile = toy_compile, .execute = toy_execute, .release = toy_release,
};

/* ------------------------------------------------------------------ cases */

/* y = relu(x @ w + b) * s, x fed [4, 8], w [8, 3] and b [3] parameters, s a constant [4, 3] */
static ts_graph *small_graph(int with_tanh) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 8));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(8, 3), ts_init_normal(0.5f));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(3), ts_init_uniform(-0.5f, 0.5f));
    float sv[12];
    for (int i = 0; i < 12; i++) sv[i] = 0.5f + 0.25f * (float)(i % 3);
    ts_tensor *st = ts_tensor_from(TS_F32, 2, (int64_t[]){4, 3}, sv);
    ts_value h = ts_relu(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b));
    if (with_tanh) h = ts_tanh(g, h);
    ts_name(g, ts_mul(g, h, ts_constant(g, st)), "y");
    ts_tensor_free(st);
    return g;
}

static ts_tensor *run_on(ts_graph *g, const char *device, ts_program **keep) {
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = device, TU_FETCHES("y"), .inference = 1, .no_fusion = 1});
    CHECK(p != NULL, "compile on %s: %s", device, ts_last_error());
    if (!p) return NULL;
    tu_rng r = tu_rng_seed(3);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(4, 8), -1, 1);
    CHECK_OK(ts_program_feed(p, "x", x));
    CHECK_OK(ts_program_run(p));
    ts_tensor *y = TU_FETCH(p, "y");
    ts_tensor_free(x);
    if (keep) *keep = p;
    else ts_program_free(p);
    return y;
}

static void test_cpu_registry(void) {
    CHECK(ts_backend_count() >= 1, "no backend registered");
    const ts_backend_api *a = ts_backend_at(0), *b = ts_backend_find("cpu");
    CHECK(a && b && a == b && !strcmp(a->name, "cpu"), "the CPU backend by index and by name");
    CHECK(a && a->abi_major == TS_ABI_MAJOR && a->abi_minor == TS_ABI_MINOR && a->struct_size == sizeof(ts_backend_api),
          "the CPU backend's ABI version");
    CHECK(ts_backend_at(-1) == NULL && ts_backend_at(ts_backend_count()) == NULL, "out of range");
    CHECK(ts_backend_find("tpu") == NULL, "an unknown backend found");
    CHECK_ERRMSG("unknown device 'tpu'", "cpu");
    ts_graph *g = small_graph(0);
    ts_tensor *y0 = run_on(g, "cpu", NULL), *y1 = run_on(g, "cpu:1", NULL), *y3 = run_on(g, "cpu:3", NULL);
    CHECK(y0 && y1 && y3 && tu_bitwise_equal(y0, y1) && tu_bitwise_equal(y0, y3), "cpu, cpu:1 and cpu:3 differ");
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = "cpu:x", TU_FETCHES("y")});
    CHECK(p == NULL, "device cpu:x accepted");
    CHECK_ERRMSG("cpu:x");
    p = ts_compile(g, &(ts_compile_opts){.device = "cpu:100000", TU_FETCHES("y")});
    CHECK(p == NULL, "device cpu:100000 accepted");
    CHECK_ERRMSG("cpu:100000", "devices");
    ts_tensor_free(y0), ts_tensor_free(y1), ts_tensor_free(y3);
    ts_graph_free(g);
}

static void test_plugin(void) {
    CHECK_OK(ts_backend_register(&toy));
    int n = ts_backend_count();
    CHECK(ts_backend_find("toy") == &toy && ts_backend_at(n - 1) == &toy, "toy by name and index");
    CHECK_STATUS(ts_backend_register(&toy), TS_ERR_ARG);
    CHECK_ERRMSG("'toy' is already registered");
    ts_graph *g = small_graph(0);
    ts_program *pc = NULL, *pt = NULL;
    ts_tensor *yc = run_on(g, "cpu", &pc), *yt = run_on(g, "toy:1", &pt);
    if (yc && yt) CHECK(tu_max_abs_diff_f(tu_f32(yc), tu_f32(yt), 12) < 1e-5, "toy and cpu disagree");
    /* parameters from the CPU program into the toy one, and back */
    if (pc && pt) {
        ts_tensor *w = ts_tensor_new(TS_F32, 2, (int64_t[]){8, 3});
        for (int i = 0; i < 24; i++) tu_f32(w)[i] = (float)i / 24.f;
        CHECK_OK(ts_program_set_param(pc, "w", w));
        CHECK(ts_program_copy_params(pt, pc) == 2, "copy cpu -> toy: %s", ts_last_error());
        ts_tensor *back = TU_FETCH(pt, "w");
        CHECK(back && tu_bitwise_equal(back, w), "the toy program's w after the copy");
        ts_tensor_free(back);
        ts_tensor_free(w);
    }
    ts_program_free(pc), ts_program_free(pt);
    ts_tensor_free(yc), ts_tensor_free(yt);
    ts_graph_free(g);
    /* an op the device lacks: strict, every such node named at compile time; else the CPU runs
     * it, with the copies, to the CPU's numbers */
    g = small_graph(1);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = "toy", TU_FETCHES("y"), .inference = 1, .no_fusion = 1,
                                                     .strict_device = 1, .struct_size = sizeof(ts_compile_opts)});
    CHECK(p == NULL && ts_last_status() == TS_ERR_UNSUPPORTED, "tanh compiled on toy");
    CHECK_ERRMSG("device toy has no kernel for 1 node", "tanh x1", "no CPU fallback");
    ts_program_free(p);
    yc = run_on(g, "cpu", NULL), yt = run_on(g, "toy", &pt);
    CHECK(yc && yt && tu_max_abs_diff_f(tu_f32(yc), tu_f32(yt), 12) < 1e-5, "toy with a CPU fallback and cpu disagree");
    const char *where = ts_program_placement(pt);
    CHECK(strstr(where, "placement: toy runs 4 of 5 nodes; the CPU runs 1 (tanh x1) in 1 part; 2 copies per run"),
          "placement: %s", where);
    ts_program_free(pt);
    ts_tensor_free(yc), ts_tensor_free(yt);
    p = ts_compile(g, &(ts_compile_opts){.device = "toy:2", TU_FETCHES("y")});
    CHECK(p == NULL, "toy:2 of 2 devices accepted");
    CHECK_ERRMSG("'toy' has 2 devices");
    ts_graph_free(g);
}

static void *run_program(void *p) { return (void *)(intptr_t)ts_program_run(p); }

/* With the check on (main sets it before the first device call), a feed into toy:1 while
 * another thread is inside toy:1's execute is refused, naming the device; after it, accepted. */
static void test_thread_rule(void) {
    ts_graph *g = small_graph(0);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = "toy:1", TU_FETCHES("y"), .inference = 1, .no_fusion = 1});
    CHECK(p != NULL, "compile on toy:1: %s", ts_last_error());
    ts_graph_free(g);
    if (!p) return;
    ts_tensor *x = ts_tensor_new(TS_F32, 2, (int64_t[]){4, 8});
    toy_hold = 1, toy_inside = 0;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, run_program, p) == 0, "thread");
    while (!__atomic_load_n(&toy_inside, __ATOMIC_SEQ_CST)) sched_yield();
    CHECK_STATUS(ts_program_feed(p, "x", x), TS_ERR_RUNTIME);
    CHECK_ERRMSG("device toy:1", "copy_to_device called while another thread was using the device");
    __atomic_store_n(&toy_hold, 0, __ATOMIC_SEQ_CST);
    void *rc;
    pthread_join(th, &rc);
    CHECK((intptr_t)rc == TS_OK, "the run on the other thread: %s", ts_last_error());
    CHECK_OK(ts_program_feed(p, "x", x));
    ts_tensor_free(x);
    ts_program_free(p);
}

static void test_versions(void) {
    ts_backend_api newer = toy;
    newer.name = "toy_next";
    newer.abi_major = TS_ABI_MAJOR + 1;
    newer.abi_minor = 0;
    CHECK_STATUS(ts_backend_register(&newer), TS_ERR_UNSUPPORTED);
    char want[96];
    snprintf(want, sizeof want, "built for device ABI %d.0", TS_ABI_MAJOR + 1);
    CHECK_ERRMSG("'toy_next'", want, "majors must match");
    CHECK(ts_backend_find("toy_next") == NULL, "the refused backend is registered");
    ts_backend_api missing = toy;
    missing.name = "toy_half";
    missing.execute = NULL;
    CHECK_STATUS(ts_backend_register(&missing), TS_ERR_ARG);
    CHECK_ERRMSG("'toy_half' has no 'execute'");
    /* a table of the major before: its layout differs (supports took an op name and a dtype) */
    ts_backend_api v1 = toy;
    v1.name = "toy_v1";
    v1.abi_major = 1;
    v1.abi_minor = 0;
    CHECK_STATUS(ts_backend_register(&v1), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG("'toy_v1' was built for device ABI 1.0", "implements ABI 2.");
    /* a backend without the optional entries at the end: its struct is shorter */
    static ts_backend_api older; /* registered: lives as long as the process */
    older = toy;
    older.name = "toy_old";
    older.struct_size = offsetof(ts_backend_api, max_alloc);
    older.abi_minor = 0;
    CHECK_OK(ts_backend_register(&older));
    ts_graph *g = small_graph(0);
    ts_tensor *y = run_on(g, "toy_old", NULL);
    CHECK(y != NULL, "the older table's device did not run");
    ts_tensor_free(y);
    ts_graph_free(g);
}

/* A device that allocates at most 128 bytes at once: the arena of intermediates comes in pieces,
 * each value whole in one, and the program computes what it does on the CPU. */
static size_t toy_cap(void *dev) { (void)dev; return 128; }

static void test_capped_allocations(void) {
    static ts_backend_api capped; /* registered: lives as long as the process */
    capped = toy;
    capped.name = "toycap";
    capped.max_alloc = toy_cap;
    CHECK_OK(ts_backend_register(&capped));
    /* [4, 8] f32 values (128 bytes), several alive at once */
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 8));
    ts_value a = ts_relu(g, ts_add(g, x, x)), b = ts_mul(g, x, x), c = ts_add(g, a, b);
    ts_name(g, ts_mul(g, ts_relu(g, ts_mul(g, c, a)), b), "y");
    long before = toy_allocs;
    ts_tensor *y0 = run_on(g, "cpu", NULL), *y1 = run_on(g, "toy", NULL);
    long uncapped = toy_allocs - before;
    before = toy_allocs;
    ts_tensor *y2 = run_on(g, "toycap", NULL);
    long capped_allocs = toy_allocs - before;
    CHECK(y0 && y1 && y2 && tu_bitwise_equal(y0, y1) && tu_bitwise_equal(y0, y2), "toycap's result differs");
    CHECK(capped_allocs > uncapped, "the capped device made %ld allocations, the uncapped %ld: no pieces", capped_allocs,
          uncapped);
    ts_tensor_free(y0), ts_tensor_free(y1), ts_tensor_free(y2);
    /* one value larger than the cap: refused, saying so */
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(4, 16));
    ts_name(g, ts_relu(g, ts_add(g, ts_mul(g, x, x), x)), "y");
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = "toycap", TU_FETCHES("y"), .inference = 1});
    CHECK(p == NULL && ts_last_status() == TS_ERR_NOMEM, "a 256-byte value on a 128-byte-capped device compiled");
    CHECK_ERRMSG("toycap allocates at most");
    ts_program_free(p);
    ts_graph_free(g);
}

static void test_plugin_and_versions(void) {
    test_plugin();
    test_thread_rule();
    test_versions();
    test_capped_allocations();
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_cpu_registry);
    /* registering lasts for the process: one case registers and uses every backend */
    RUN(test_plugin_and_versions);
    return tu_finish("test_backend_abi");
}
