/*
 * test_share_params.c — ts_program_share_params: two inference programs of one model at different
 * batch sizes reading one copy of the parameters. Their answers equal an unshared program's; a
 * set_param through either is seen by the other (read back, and in its next run's output: the
 * prepacked weight copies are remade); the shared bytes leave dst's memory report; freeing in
 * either order leaves the other working (the buffers are refcounted: run under ASan too); and
 * the refusals (the same program, a training program, dst already sharing, NULL). The first two
 * cases run again with the programs int8 (TS_QUANT_DYNAMIC), whose quantized weight copies are
 * shared the same way (backend/cpu/matmul_int8.c) and must be remade after a write through either.
 */
#include "test_util.h"

enum { K = 256, N = 128 };

/* y = tanh(x @ w + b): x input [B, K], w [K, N] (large enough for oneDNN to prepack), b [N];
 * with_sgd: also a loss and an SGD step (a program whose runs write w and b). */
static ts_graph *model(int B, int with_sgd) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, K));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(K, N), ts_init_normal(0.1f));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(N), ts_init_uniform(-0.5f, 0.5f));
    ts_value y = ts_name(g, ts_tanh(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b)), "y");
    if (with_sgd) {
        ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, y, y), 0, NULL, 0), "loss");
        CHECK_OK(ts_backward(g, loss));
        CHECK_OK(ts_sgd(g, ts_scalar(g, 0.1f), 0.f, 0.f));
    }
    return g;
}

static int g_quantize; /* the programs' ts_compile_opts.quantize */

static ts_program *compile_model(int B, uint64_t seed) {
    ts_graph *g = model(B, 0);
    ts_graph_set_seed(g, seed);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), TU_FETCHES("y"),
                                                     .inference = 1, .quantize = g_quantize});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_memory m = {.struct_size = sizeof m};
    if (p) CHECK_OK(ts_program_memory(p, &m));
    CHECK(m.quantized == (g_quantize ? 1 : 0), "%d int8 matmuls (quantize %d)", m.quantized, g_quantize);
    ts_graph_free(g);
    return p;
}

/* y of p for x (a new tensor; NULL on failure). */
static ts_tensor *run_y(ts_program *p, const ts_tensor *x) {
    if (CHECK_OK(ts_program_feed(p, "x", x)) || CHECK_OK(ts_program_run(p))) return NULL;
    return TU_FETCH(p, "y");
}

/* ref (unshared, B rows) and p must answer x alike, bit for bit. */
static void check_same(ts_program *p, ts_program *ref, const ts_tensor *x, const char *what) {
    ts_tensor *a = run_y(p, x), *b = run_y(ref, x);
    CHECK(tu_bitwise_equal(a, b), "%s: the output differs from an unshared program's", what);
    ts_tensor_free(a), ts_tensor_free(b);
}

static void test_share_and_write(int free_src_first) {
    ts_program *src = compile_model(8, 1), *dst = compile_model(2, 2), *ref = compile_model(2, 3);
    tu_rng r = tu_rng_seed(7);
    ts_tensor *x2 = tu_rand_tensor(&r, DIMS(2, K), -1, 1), *w2 = tu_rand_tensor(&r, DIMS(K, N), -0.1, 0.1);
    if (!src || !dst || !ref) goto out;
    ts_tensor *y0 = run_y(dst, x2); /* dst ran on its own weights first: its prepacked copy is made */
    ts_tensor_free(y0);
    int n = ts_program_share_params(dst, src);
    CHECK(n == 2, "shared %d parameters, expected 2: %s", n, ts_last_error());
    ts_memory m = {.struct_size = sizeof m};
    CHECK_OK(ts_program_memory(dst, &m));
    CHECK(m.params == 0, "dst still reports %zu bytes of parameters of its own", m.params);
    CHECK(ts_program_copy_params(ref, src) == 2, "copy_params: %s", ts_last_error());
    check_same(dst, ref, x2, "after sharing");

    /* a write through dst is seen by src, and the other way round */
    CHECK_OK(ts_program_set_param(dst, "w", w2));
    ts_tensor *ws = NULL;
    CHECK_OK(ts_program_get_param(src, "w", &ws));
    CHECK(tu_bitwise_equal(ws, w2), "set_param on dst not seen by src");
    ts_tensor_free(ws);
    CHECK_OK(ts_program_set_param(ref, "w", w2));
    check_same(dst, ref, x2, "after set_param on dst");
    ts_tensor *b2 = tu_rand_tensor(&r, DIMS(N), -1, 1);
    CHECK_OK(ts_program_set_param(src, "b", b2));
    CHECK_OK(ts_program_set_param(ref, "b", b2));
    check_same(dst, ref, x2, "after set_param on src");
    ts_tensor_free(b2);

    /* the other program keeps working after one is freed */
    ts_program **first = free_src_first ? &src : &dst, *left = free_src_first ? dst : src;
    ts_program_free(*first), *first = NULL;
    if (left == dst) check_same(dst, ref, x2, "after src was freed");
    else {
        ts_tensor *x8 = tu_rand_tensor(&r, DIMS(8, K), -1, 1), *y8 = run_y(src, x8);
        CHECK(y8 != NULL, "src does not run after dst was freed");
        ts_tensor_free(x8), ts_tensor_free(y8);
    }
out:
    ts_tensor_free(x2), ts_tensor_free(w2);
    ts_program_free(src), ts_program_free(dst), ts_program_free(ref);
}

static void test_free_src_first(void) { test_share_and_write(1); }
static void test_free_dst_first(void) { test_share_and_write(0); }
static void test_int8(void) {
    g_quantize = TS_QUANT_DYNAMIC;
    test_share_and_write(1);
    test_share_and_write(0);
    g_quantize = TS_QUANT_NONE;
}

/* Three programs on one share: a write through the third is seen in the first's run. */
static void test_three(void) {
    ts_program *a = compile_model(4, 1), *b = compile_model(2, 2), *c = compile_model(1, 3);
    ts_program *ref = compile_model(4, 4);
    tu_rng r = tu_rng_seed(9);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(4, K), -1, 1), *w = tu_rand_tensor(&r, DIMS(K, N), -0.1, 0.1);
    if (a && b && c && ref) {
        CHECK(ts_program_share_params(b, a) == 2, "b: %s", ts_last_error());
        CHECK(ts_program_share_params(c, b) == 2, "c from b: %s", ts_last_error());
        ts_tensor_free(run_y(a, x)); /* a's prepacked copy made from the old weights */
        CHECK_OK(ts_program_set_param(c, "w", w));
        CHECK(ts_program_copy_params(ref, a) == 2, "copy_params: %s", ts_last_error());
        check_same(a, ref, x, "a after set_param on c");
    }
    ts_tensor_free(x), ts_tensor_free(w);
    ts_program_free(b), ts_program_free(a), ts_program_free(c), ts_program_free(ref);
}

static void test_refusals(void) {
    ts_program *a = compile_model(2, 1), *b = compile_model(2, 2), *c = compile_model(2, 3);
    ts_graph *g = model(2, 1);
    ts_program *train = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    CHECK(train != NULL, "compile the training program: %s", ts_last_error());
    if (a && b && c && train) {
        CHECK(ts_program_share_params(NULL, a) == -1 && ts_last_status() == TS_ERR_ARG, "NULL dst accepted");
        CHECK(ts_program_share_params(a, a) == -1, "sharing with itself accepted");
        CHECK(ts_program_share_params(train, a) == -1 && ts_last_status() == TS_ERR_UNSUPPORTED &&
                  strstr(ts_last_error(), "training"), "a training program shared: %s", ts_last_error());
        CHECK(ts_program_share_params(b, train) == -1, "sharing a training program's parameters accepted");
        CHECK(ts_program_share_params(b, a) == 2, "b: %s", ts_last_error());
        CHECK(ts_program_share_params(b, c) == -1 && strstr(ts_last_error(), "already"),
              "dst sharing twice accepted: %s", ts_last_error());
    }
    ts_graph_free(g);
    ts_program_free(a), ts_program_free(b), ts_program_free(c), ts_program_free(train);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_free_src_first);
    RUN(test_free_dst_first);
    RUN(test_int8);
    RUN(test_three);
    RUN(test_refusals);
    return tu_finish("test_share_params");
}
