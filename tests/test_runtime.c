/*
 * test_runtime.c — using programs: feeds and fetches, parameters (initializers, get / set,
 * ts_program_copy_params from a training to an inference program), the step counter and
 * dropout reproducibility (same seed and step: same mask; another step: another mask;
 * inference: identity), SGD and AdamW (one exact step against the PyTorch formulas, then a tiny
 * regression whose loss must fall), f32 <-> bf16 / f16 conversions (exact IEEE cases and every
 * 16-bit pattern), ts_cast, and an arena reused across runs (same results, same report, no
 * tensor-sized allocation in a warm step).
 */
#define TU_ALLOC_COUNTER
#include "test_util.h"

/* ------------------------------------------------------------------ feeds and fetches */

/* y = tanh(x @ w + b) * 2, x input [4, 3], w [3, 5], b [5] parameters */
static void test_feed_fetch(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 3));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(3, 5), ts_init_uniform(-1, 1));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(5), ts_init_uniform(-0.5f, 0.5f));
    ts_value y = ts_name(g, ts_scale(g, ts_tanh(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b)), 2.f, 0.f), "y");
    int64_t sh[TS_MAX_DIMS];
    CHECK(ts_value_shape(g, y, sh) == 2 && sh[0] == 4 && sh[1] == 5, "y is not [4,5]");
    CHECK(ts_value_dtype(g, y) == TS_F32, "y is not f32");
    CHECK(ts_lookup(g, "y") == y && ts_lookup(g, "w") == w && ts_lookup(g, "nope") == TS_NONE, "ts_lookup");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) { ts_graph_free(g); return; }
    ts_tensor *wt = NULL, *bt = NULL;
    CHECK_OK(ts_program_get_param(p, "w", &wt));
    CHECK_OK(ts_program_get_param(p, "b", &bt));
    tu_rng r = tu_rng_seed(1);
    for (int round = 0; round < 3 && wt && bt; round++) {
        ts_tensor *xt = tu_rand_tensor(&r, DIMS(4, 3), -2, 2);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        ts_tensor *yt = TU_FETCH(p, "y");
        if (yt) {
            CHECK(ts_tensor_ndim(yt) == 2 && ts_tensor_shape(yt)[0] == 4 && ts_tensor_shape(yt)[1] == 5 &&
                      ts_tensor_dtype(yt) == TS_F32 && ts_tensor_nbytes(yt) == 80,
                  "fetched y has the wrong shape");
            double err = 0;
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 5; j++) {
                    double s = tu_f32(bt)[j];
                    for (int k = 0; k < 3; k++) s += (double)tu_f32(xt)[i * 3 + k] * tu_f32(wt)[k * 5 + j];
                    err = fmax(err, fabs(tu_f32(yt)[i * 5 + j] - 2 * tanh(s)));
                }
            CHECK(err < 1e-5, "round %d: y differs from the host by %.3e", round, err);
        }
        ts_tensor_free(yt);
        ts_tensor_free(xt);
    }
    /* every fetch is a new tensor the caller owns */
    ts_tensor *y1 = TU_FETCH(p, "y"), *y2 = TU_FETCH(p, "y");
    CHECK(y1 && y2 && y1 != y2 && ts_tensor_data(y1) != ts_tensor_data(y2) && tu_bitwise_equal(y1, y2),
          "two fetches should be equal, separate tensors");
    if (y1) tu_f32(y1)[0] = 1e9f; /* writing to a fetched tensor does not touch the program */
    ts_tensor *y3 = TU_FETCH(p, "y");
    CHECK(y3 && y2 && tu_bitwise_equal(y2, y3), "a fetched tensor aliases program memory");
    ts_tensor_free(y1);
    ts_tensor_free(y2);
    ts_tensor_free(y3);
    ts_tensor_free(wt);
    ts_tensor_free(bt);
    ts_program_free(p);
    ts_graph_free(g);
}

/* Fetching an input, a constant-derived value, and a value computed from a scalar input. */
static void test_scalar_input(void) {
    ts_graph *g = ts_graph_new();
    ts_value s = ts_input(g, "s", TS_F32, 0, NULL);
    ts_value v = ts_input(g, "v", TS_F32, DIMS(3));
    ts_name(g, ts_mul(g, v, s), "vs");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("vs"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        float sv = 3.f, vv[3] = {1, -2, 0.5f};
        ts_tensor *st = ts_tensor_from(TS_F32, 0, NULL, &sv), *vt = ts_tensor_from(TS_F32, DIMS(3), vv);
        CHECK_OK(ts_program_feed(p, "s", st));
        CHECK_OK(ts_program_feed(p, "v", vt));
        CHECK_OK(ts_program_run(p));
        ts_tensor *o = TU_FETCH(p, "vs");
        CHECK(o && tu_f32(o)[0] == 3.f && tu_f32(o)[1] == -6.f && tu_f32(o)[2] == 1.5f, "v * s is wrong");
        ts_tensor_free(o);
        ts_tensor_free(st);
        ts_tensor_free(vt);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* Degenerate graphs compile and run: no values at all, and parameters without any op. */
static void test_graph_without_ops(void) {
    ts_graph *g = ts_graph_new();
    ts_program *p = ts_compile(g, NULL);
    CHECK(p != NULL, "an empty graph does not compile: %s", ts_last_error());
    if (p) CHECK_OK(ts_program_run(p));
    ts_program_free(p);
    ts_graph_free(g);

    g = ts_graph_new();
    ts_param(g, "w", TS_F32, DIMS(3), ts_init_const(2.f));
    ts_input(g, "x", TS_F32, DIMS(3));
    p = ts_compile(g, NULL);
    CHECK(p != NULL, "a graph of a parameter and an input does not compile: %s", ts_last_error());
    if (p) {
        CHECK_OK(ts_program_run(p));
        ts_tensor *w = TU_FETCH(p, "w");
        CHECK(w && tu_f32(w)[2] == 2.f, "parameter w of an op-less graph");
        ts_tensor_free(w);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ parameters */

static ts_tensor *param_of(ts_program *p, const char *name) {
    ts_tensor *t = NULL;
    CHECK_OK(ts_program_get_param(p, name, &t));
    return t;
}

static void test_initializers(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 123);
    ts_param(g, "zeros", TS_F32, DIMS(7, 3), ts_init_zeros());
    ts_param(g, "ones", TS_F32, DIMS(5), ts_init_ones());
    ts_param(g, "const", TS_F32, DIMS(2, 2), ts_init_const(0.75f));
    ts_param(g, "unif", TS_F32, DIMS(100, 100), ts_init_uniform(-0.3f, 0.5f));
    ts_param(g, "normal", TS_F32, DIMS(100, 200), ts_init_normal(0.02f));
    ts_param(g, "half", TS_BF16, DIMS(4), ts_init_const(1.5f));
    ts_program *p = ts_compile(g, NULL);
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) { ts_graph_free(g); return; }
    CHECK(ts_program_num_params(p) == 6, "%d parameters, expected 6", ts_program_num_params(p));
    const char *names[] = {"zeros", "ones", "const", "unif", "normal", "half"};
    for (int k = 0; k < 6; k++) {
        int found = 0;
        for (int i = 0; i < ts_program_num_params(p); i++) found += strcmp(ts_program_param_name(p, i), names[k]) == 0;
        CHECK(found == 1, "parameter %s listed %d times", names[k], found);
    }
    ts_tensor *z = param_of(p, "zeros"), *o = param_of(p, "ones"), *c = param_of(p, "const");
    ts_tensor *u = param_of(p, "unif"), *n = param_of(p, "normal"), *h = param_of(p, "half");
    int ok = 1;
    for (int i = 0; z && i < 21; i++) ok &= tu_f32(z)[i] == 0.f;
    CHECK(z && ok, "zeros");
    ok = 1;
    for (int i = 0; o && i < 5; i++) ok &= tu_f32(o)[i] == 1.f;
    CHECK(o && ok, "ones");
    ok = 1;
    for (int i = 0; c && i < 4; i++) ok &= tu_f32(c)[i] == 0.75f;
    CHECK(c && ok, "const 0.75");
    if (u) {
        double mn = 1e9, mx = -1e9, mean = 0;
        for (int i = 0; i < 10000; i++) {
            double v = tu_f32(u)[i];
            mn = fmin(mn, v), mx = fmax(mx, v), mean += v / 10000;
        }
        CHECK(mn >= -0.3 && mx < 0.5, "uniform [-0.3, 0.5) gave [%g, %g]", mn, mx);
        CHECK(mn < -0.29 && mx > 0.49, "uniform does not cover its range: [%g, %g]", mn, mx);
        CHECK(fabs(mean - 0.1) < 0.01, "uniform mean %g, expected 0.1", mean);
    }
    if (n) {
        double mean = 0, sq = 0, mx = 0;
        for (int i = 0; i < 20000; i++) {
            double v = tu_f32(n)[i];
            mean += v / 20000;
            sq += v * v / 20000;
            mx = fmax(mx, fabs(v));
        }
        double sd = sqrt(sq - mean * mean);
        /* a normal truncated at 2 std has std 0.880 of the untruncated one */
        CHECK(mx <= 0.04 + 1e-6, "normal(0.02) truncated at 2 std has |v| = %g", mx);
        CHECK(fabs(mean) < 0.001, "normal mean %g", mean);
        CHECK(sd > 0.0165 && sd < 0.019, "normal(0.02) truncated: std %g, expected about 0.0176", sd);
    }
    if (h) {
        CHECK(ts_tensor_dtype(h) == TS_BF16, "bf16 parameter read back as %s", ts_dtype_name(ts_tensor_dtype(h)));
        uint16_t *hv = ts_tensor_data(h);
        CHECK(hv[0] == 0x3FC0 && hv[3] == 0x3FC0, "bf16 const 1.5 is 0x%04x, expected 0x3fc0", hv[0]);
    }

    /* draws depend only on (seed, name): the same parameter in another graph with other
     * parameters around it is equal; another seed gives another draw */
    ts_graph *g2 = ts_graph_new(), *g3 = ts_graph_new();
    ts_graph_set_seed(g2, 123);
    ts_graph_set_seed(g3, 124);
    ts_param(g2, "other", TS_F32, DIMS(3), ts_init_normal(1.f));
    ts_param(g2, "normal", TS_F32, DIMS(100, 200), ts_init_normal(0.02f));
    ts_param(g3, "normal", TS_F32, DIMS(100, 200), ts_init_normal(0.02f));
    ts_program *p2 = ts_compile(g2, NULL), *p3 = ts_compile(g3, NULL);
    CHECK(p2 && p3, "compile: %s", ts_last_error());
    if (p2 && p3 && n) {
        ts_tensor *n2 = param_of(p2, "normal"), *n3 = param_of(p3, "normal");
        CHECK(tu_bitwise_equal(n, n2), "the same (seed, name) gave another initial value");
        CHECK(n3 && !tu_bitwise_equal(n, n3), "another seed gave the same initial value");
        ts_tensor_free(n2);
        ts_tensor_free(n3);
    }
    ts_program_free(p2);
    ts_program_free(p3);
    ts_graph_free(g2);
    ts_graph_free(g3);
    ts_tensor_free(z);
    ts_tensor_free(o);
    ts_tensor_free(c);
    ts_tensor_free(u);
    ts_tensor_free(n);
    ts_tensor_free(h);
    ts_program_free(p);
    ts_graph_free(g);
}

/* y = x @ w + b; a training program (SGD) and an inference program of the same graph, plus a
 * third graph that shares only some parameter names / shapes. */
static ts_graph *linear_graph(int with_sgd) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(6, 4));
    ts_value t = ts_input(g, "t", TS_F32, DIMS(6, 2));
    ts_value w = ts_param(g, "fc.weight", TS_F32, DIMS(4, 2), ts_init_normal(0.5f));
    ts_value b = ts_param(g, "fc.bias", TS_F32, DIMS(2), ts_init_zeros());
    ts_value y = ts_name(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b), "y");
    ts_value d = ts_sub(g, y, t);
    ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, d, d), 0, NULL, 0), "loss");
    if (with_sgd) {
        CHECK_OK(ts_backward(g, loss));
        CHECK_OK(ts_sgd(g, ts_scalar(g, 0.1f), 0.f, 0.f));
    }
    return g;
}

static void test_set_get_copy_params(void) {
    ts_graph *g = linear_graph(1);
    ts_program *train = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "y")});
    ts_program *infer = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(train && infer, "compile: %s", ts_last_error());
    if (!train || !infer) goto out;
    /* set / get round trip */
    float wv[8] = {1, -1, 0.5f, 2, -0.25f, 0, 3, 1};
    ts_tensor *w = ts_tensor_from(TS_F32, DIMS(4, 2), wv);
    CHECK_OK(ts_program_set_param(train, "fc.weight", w));
    ts_tensor *w2 = param_of(train, "fc.weight");
    CHECK(tu_bitwise_equal(w, w2), "get_param after set_param differs");
    ts_tensor_free(w2);
    w2 = param_of(infer, "fc.weight");
    CHECK(w2 && !tu_bitwise_equal(w, w2), "set_param on one program changed another");
    ts_tensor_free(w2);

    /* train a few steps: parameters move */
    tu_rng r = tu_rng_seed(4);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(6, 4), -1, 1), *t = tu_rand_tensor(&r, DIMS(6, 2), -1, 1);
    CHECK_OK(ts_program_feed(train, "x", x));
    CHECK_OK(ts_program_feed(train, "t", t));
    for (int i = 0; i < 3; i++) CHECK_OK(ts_program_run(train));
    ts_tensor *wt = param_of(train, "fc.weight"), *bt = param_of(train, "fc.bias");
    CHECK(wt && !tu_bitwise_equal(w, wt), "SGD did not move the weight");

    /* copy into the inference program: both parameters */
    int n = ts_program_copy_params(infer, train);
    CHECK(n == 2, "copy_params copied %d, expected 2", n);
    ts_tensor *wi = param_of(infer, "fc.weight"), *bi = param_of(infer, "fc.bias");
    CHECK(tu_bitwise_equal(wt, wi) && tu_bitwise_equal(bt, bi), "copied parameters differ");
    /* and the inference program computes y from them */
    CHECK_OK(ts_program_feed(infer, "x", x));
    CHECK_OK(ts_program_feed(infer, "t", t)); /* an input the inference program may not read */
    CHECK_OK(ts_program_run(infer));
    ts_tensor *y = TU_FETCH(infer, "y");
    if (y && wt && bt) {
        double err = 0;
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 2; j++) {
                double s = tu_f32(bt)[j];
                for (int k = 0; k < 4; k++) s += (double)tu_f32(x)[i * 4 + k] * tu_f32(wt)[k * 2 + j];
                err = fmax(err, fabs(tu_f32(y)[i * 2 + j] - s));
            }
        CHECK(err < 1e-5, "inference y after copy_params is off by %.3e", err);
    }
    /* the inference program drops the optimizer: its parameters stay put */
    ts_tensor *wi2 = param_of(infer, "fc.weight");
    CHECK(tu_bitwise_equal(wi, wi2), "an inference run changed a parameter");
    ts_tensor_free(wi2);

    /* a program with one matching name, one name with another shape, one new name */
    {
        ts_graph *g3 = ts_graph_new();
        ts_value x3 = ts_input(g3, "x", TS_F32, DIMS(6, 4));
        ts_value w3 = ts_param(g3, "fc.weight", TS_F32, DIMS(4, 2), ts_init_zeros());
        ts_value b3 = ts_param(g3, "fc.bias", TS_F32, DIMS(3), ts_init_zeros());
        ts_value e3 = ts_param(g3, "extra", TS_F32, DIMS(2), ts_init_ones());
        ts_name(g3, ts_add(g3, ts_matmul(g3, x3, w3, 0, 0), e3), "y");
        ts_name(g3, ts_tanh(g3, b3), "bb");
        ts_program *p3 = ts_compile(g3, &(ts_compile_opts){TU_FETCHES("y", "bb"), .inference = 1});
        CHECK(p3 != NULL, "compile: %s", ts_last_error());
        if (p3) {
            CHECK(ts_program_copy_params(p3, train) == 1, "copy into a partly matching program: expected 1");
            ts_tensor *w3t = param_of(p3, "fc.weight"), *b3t = param_of(p3, "fc.bias"), *e3t = param_of(p3, "extra");
            CHECK(tu_bitwise_equal(w3t, wt), "fc.weight not copied");
            CHECK(b3t && tu_f32(b3t)[0] == 0 && tu_f32(b3t)[2] == 0, "fc.bias of another shape was overwritten");
            CHECK(e3t && tu_f32(e3t)[1] == 1.f, "extra changed");
            ts_tensor_free(w3t);
            ts_tensor_free(b3t);
            ts_tensor_free(e3t);
        }
        ts_program_free(p3);
        ts_graph_free(g3);
    }
    ts_tensor_free(y);
    ts_tensor_free(wi);
    ts_tensor_free(bi);
    ts_tensor_free(wt);
    ts_tensor_free(bt);
    ts_tensor_free(x);
    ts_tensor_free(t);
    ts_tensor_free(w);
out:
    ts_program_free(train);
    ts_program_free(infer);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ dropout */

static ts_program *dropout_program(uint64_t seed, int inference, float p) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, seed);
    ts_value w = ts_param(g, "w", TS_F32, DIMS(64, 64), ts_init_ones());
    ts_value y = ts_name(g, ts_dropout(g, w, p), "y");
    ts_name(g, ts_dropout(g, w, p), "y2"); /* a second dropout op on the same input */
    ts_value loss = ts_reduce_sum(g, y, 0, NULL, 0);
    CHECK_OK(ts_backward(g, loss));
    ts_program *pr = ts_compile(g, inference ? &(ts_compile_opts){TU_FETCHES("y", "y2"), .inference = 1}
                                             : &(ts_compile_opts){TU_FETCHES("y", "y2", "w@GRAD")});
    CHECK(pr != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    return pr;
}

static ts_tensor *run_fetch(ts_program *p, uint64_t step, const char *name) {
    ts_program_set_step(p, step);
    if (CHECK_OK(ts_program_run(p)) != TS_OK) return NULL;
    return TU_FETCH(p, name);
}

static int count_diff(ts_tensor *a, ts_tensor *b) {
    int n = 0;
    for (int64_t i = 0; i < ts_tensor_numel(a); i++) n += tu_f32(a)[i] != tu_f32(b)[i];
    return n;
}

static void test_dropout(void) {
    const float p = 0.25f;
    ts_program *a = dropout_program(7, 0, p), *b = dropout_program(7, 0, p), *c = dropout_program(8, 0, p);
    ts_program *inf = dropout_program(7, 1, p);
    if (!a || !b || !c || !inf) goto out;
    CHECK(ts_program_step(a) == 0, "a new program is at step %llu", (unsigned long long)ts_program_step(a));
    ts_tensor *a5 = run_fetch(a, 5, "y"), *a5g = TU_FETCH(a, "w@GRAD"), *a5y2 = TU_FETCH(a, "y2");
    CHECK(ts_program_step(a) == 6, "after a run at step 5 the step is %llu", (unsigned long long)ts_program_step(a));
    ts_tensor *a5again = run_fetch(a, 5, "y");
    ts_tensor *b5 = run_fetch(b, 5, "y");
    ts_tensor *a6 = run_fetch(a, 6, "y");
    ts_tensor *c5 = run_fetch(c, 5, "y");
    ts_tensor *i5 = run_fetch(inf, 5, "y");
    if (!a5 || !a5g || !a5y2 || !a5again || !b5 || !a6 || !c5 || !i5) goto free_all;
    CHECK(tu_bitwise_equal(a5, a5again), "the same program and step gave another mask");
    CHECK(tu_bitwise_equal(a5, b5), "another program of the same graph and seed, same step, gave another mask");
    int d6 = count_diff(a5, a6), dc = count_diff(a5, c5), d2 = count_diff(a5, a5y2);
    CHECK(d6 > 500, "step 6 changed only %d of 4096 mask elements", d6);
    CHECK(dc > 500, "another graph seed changed only %d of 4096 mask elements", dc);
    CHECK(d2 > 500, "two dropout ops of one step share their mask (%d differences)", d2);
    /* values: 0 or 1 / (1 - p), about p of them dropped */
    int zeros = 0, bad = 0;
    for (int i = 0; i < 4096; i++) {
        float v = tu_f32(a5)[i];
        if (v == 0.f) zeros++;
        else if (fabsf(v - 1.f / (1.f - p)) > 1e-6f) bad++;
    }
    CHECK(bad == 0, "%d kept values are not x / (1 - p)", bad);
    CHECK(fabs(zeros / 4096.0 - p) < 0.03, "dropped fraction %.3f, expected %.2f", zeros / 4096.0, p);
    /* the backward uses the forward's mask: d sum(dropout(w)) / dw = mask / (1 - p) = y here */
    CHECK(tu_bitwise_equal(a5, a5g), "the gradient's mask differs from the forward's");
    /* inference: identity */
    int ident = 1;
    for (int i = 0; i < 4096; i++) ident &= tu_f32(i5)[i] == 1.f;
    CHECK(ident, "dropout in an inference program is not the identity");
free_all:
    ts_tensor_free(a5);
    ts_tensor_free(a5g);
    ts_tensor_free(a5y2);
    ts_tensor_free(a5again);
    ts_tensor_free(b5);
    ts_tensor_free(a6);
    ts_tensor_free(c5);
    ts_tensor_free(i5);
out:
    ts_program_free(a);
    ts_program_free(b);
    ts_program_free(c);
    ts_program_free(inf);
}

/* p = 0 is the identity in training too */
static void test_dropout_zero(void) {
    ts_program *a = dropout_program(1, 0, 0.f);
    if (!a) return;
    ts_tensor *y = run_fetch(a, 3, "y");
    int ident = 1;
    for (int i = 0; y && i < 4096; i++) ident &= tu_f32(y)[i] == 1.f;
    CHECK(y && ident, "dropout p = 0 is not the identity");
    ts_tensor_free(y);
    ts_program_free(a);
}

/* ------------------------------------------------------------------ optimizers */

/* linear regression: X [32, 4], targets from fixed w*, b*; model w [4, 1], b [1];
 * loss = mean((X w + b - y)^2). The learning rate is an input fed every step. */
typedef struct reg {
    ts_graph *g;
    ts_program *p;
    ts_tensor *X, *Y, *lr;
} reg;

static int reg_setup(reg *r, int adamw, float momentum, float wd, float lr) {
    memset(r, 0, sizeof *r);
    r->g = ts_graph_new();
    ts_graph *g = r->g;
    ts_value x = ts_input(g, "x", TS_F32, DIMS(32, 4));
    ts_value y = ts_input(g, "y", TS_F32, DIMS(32, 1));
    ts_value lrv = ts_input(g, "lr", TS_F32, 0, NULL);
    ts_value w = ts_param(g, "w", TS_F32, DIMS(4, 1), ts_init_uniform(-0.5f, 0.5f));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(1), ts_init_const(0.3f));
    ts_value d = ts_sub(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b), y);
    ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, d, d), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    if (adamw) CHECK_OK(ts_adamw(g, lrv, 0.9f, 0.999f, 1e-8f, wd));
    else CHECK_OK(ts_sgd(g, lrv, momentum, wd));
    /* one thread: hundreds of tiny steps, where a busy machine makes every OpenMP barrier slow */
    r->p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "w@GRAD", "b@GRAD"), .num_threads = 1});
    CHECK(r->p != NULL, "compile: %s", ts_last_error());
    if (!r->p) return 0;
    tu_rng rng = tu_rng_seed(77);
    r->X = tu_rand_tensor(&rng, DIMS(32, 4), -1, 1);
    r->Y = ts_tensor_new(TS_F32, DIMS(32, 1));
    const double wstar[4] = {1.5, -2.0, 0.7, 0.25}, bstar = -0.4;
    for (int i = 0; i < 32; i++) {
        double s = bstar;
        for (int k = 0; k < 4; k++) s += wstar[k] * tu_f32(r->X)[i * 4 + k];
        tu_f32(r->Y)[i] = (float)s;
    }
    r->lr = ts_tensor_from(TS_F32, 0, NULL, &lr);
    CHECK_OK(ts_program_feed(r->p, "x", r->X));
    CHECK_OK(ts_program_feed(r->p, "y", r->Y));
    CHECK_OK(ts_program_feed(r->p, "lr", r->lr));
    return 1;
}

static void reg_free(reg *r) {
    ts_program_free(r->p);
    ts_graph_free(r->g);
    ts_tensor_free(r->X);
    ts_tensor_free(r->Y);
    ts_tensor_free(r->lr);
}

/* params as one host vector: w[0..3], b */
static void reg_params(reg *r, double *v) {
    ts_tensor *w = param_of(r->p, "w"), *b = param_of(r->p, "b");
    for (int k = 0; k < 4; k++) v[k] = w ? tu_f32(w)[k] : NAN;
    v[4] = b ? tu_f32(b)[0] : NAN;
    ts_tensor_free(w);
    ts_tensor_free(b);
}
static void reg_grads(reg *r, double *v) {
    ts_tensor *w = TU_FETCH(r->p, "w@GRAD"), *b = TU_FETCH(r->p, "b@GRAD");
    for (int k = 0; k < 4; k++) v[k] = w ? tu_f32(w)[k] : NAN;
    v[4] = b ? tu_f32(b)[0] : NAN;
    ts_tensor_free(w);
    ts_tensor_free(b);
}
static double reg_loss(reg *r) {
    ts_tensor *l = TU_FETCH(r->p, "loss");
    double v = l ? tu_f32(l)[0] : NAN;
    ts_tensor_free(l);
    return v;
}

/* The analytic gradient of this loss, computed on the host, against the fetched one. */
static void reg_check_grad(reg *r, const double *param, const double *grad) {
    double gh[5] = {0};
    for (int i = 0; i < 32; i++) {
        double s = param[4] - tu_f32(r->Y)[i];
        for (int k = 0; k < 4; k++) s += param[k] * tu_f32(r->X)[i * 4 + k];
        for (int k = 0; k < 4; k++) gh[k] += 2 * s * tu_f32(r->X)[i * 4 + k] / 32;
        gh[4] += 2 * s / 32;
    }
    double err = 0;
    for (int k = 0; k < 5; k++) err = fmax(err, fabs(gh[k] - grad[k]));
    CHECK(err < 1e-5, "regression gradient differs from the host's by %.3e", err);
}

static void test_sgd(void) {
    const float lr = 0.1f, mom = 0.9f, wd = 0.01f;
    reg r;
    if (!reg_setup(&r, 0, mom, wd, lr)) { reg_free(&r); return; }
    /* two exact steps: g' = g + wd p; m = mom m + g' (m = g' first); p -= lr m */
    double p0[5], p1[5], p2[5], g0[5], g1[5], m[5];
    reg_params(&r, p0);
    CHECK_OK(ts_program_run(r.p));
    double loss0 = reg_loss(&r);
    reg_grads(&r, g0);
    reg_check_grad(&r, p0, g0);
    reg_params(&r, p1);
    double err = 0;
    for (int k = 0; k < 5; k++) {
        m[k] = g0[k] + wd * p0[k];
        err = fmax(err, fabs(p1[k] - (p0[k] - lr * m[k])));
    }
    CHECK(err < 1e-6, "SGD step 1 differs from p - lr (g + wd p) by %.3e", err);
    /* step 2 with a new learning rate fed as an input */
    const float lr2 = 0.05f;
    ts_tensor *lrt = ts_tensor_from(TS_F32, 0, NULL, &lr2);
    CHECK_OK(ts_program_feed(r.p, "lr", lrt));
    ts_tensor_free(lrt);
    CHECK_OK(ts_program_run(r.p));
    reg_grads(&r, g1);
    reg_check_grad(&r, p1, g1);
    reg_params(&r, p2);
    err = 0;
    for (int k = 0; k < 5; k++) {
        m[k] = mom * m[k] + g1[k] + wd * p1[k];
        err = fmax(err, fabs(p2[k] - (p1[k] - lr2 * m[k])));
    }
    CHECK(err < 1e-6, "SGD step 2 (momentum, fed lr) differs from the PyTorch formula by %.3e", err);
    /* train on: the loss falls */
    lrt = ts_tensor_from(TS_F32, 0, NULL, &lr);
    CHECK_OK(ts_program_feed(r.p, "lr", lrt));
    ts_tensor_free(lrt);
    double loss = loss0;
    for (int i = 0; i < 150; i++) {
        CHECK_OK(ts_program_run(r.p));
        loss = reg_loss(&r);
    }
    printf("  sgd: loss %.4g -> %.4g after 152 steps\n", loss0, loss);
    CHECK(loss < 0.01 * loss0, "SGD loss fell only from %.4g to %.4g", loss0, loss);
    reg_free(&r);
}

static void test_adamw(void) {
    const float lr = 0.05f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.1f;
    reg r;
    if (!reg_setup(&r, 1, 0, wd, lr)) { reg_free(&r); return; }
    double p[5], pn[5], g[5], m[5] = {0}, v[5] = {0};
    reg_params(&r, p);
    double loss0 = 0, err = 0;
    for (int t = 1; t <= 3; t++) {
        CHECK_OK(ts_program_run(r.p));
        if (t == 1) loss0 = reg_loss(&r);
        reg_grads(&r, g);
        reg_check_grad(&r, p, g);
        reg_params(&r, pn);
        for (int k = 0; k < 5; k++) {
            m[k] = b1 * m[k] + (1 - b1) * g[k];
            v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
            double mh = m[k] / (1 - pow(b1, t)), vh = v[k] / (1 - pow(b2, t));
            double expect = p[k] * (1 - lr * wd) - lr * mh / (sqrt(vh) + eps);
            err = fmax(err, fabs(pn[k] - expect));
            p[k] = pn[k];
        }
    }
    CHECK(err < 2e-6, "AdamW steps 1-3 differ from the PyTorch formula by %.3e", err);
    double loss = loss0;
    for (int i = 0; i < 300; i++) {
        CHECK_OK(ts_program_run(r.p));
        loss = reg_loss(&r);
    }
    printf("  adamw: loss %.4g -> %.4g after 303 steps\n", loss0, loss);
    CHECK(loss < 0.05 * loss0, "AdamW loss fell only from %.4g to %.4g", loss0, loss);
    reg_free(&r);
}

/* ------------------------------------------------------------------ conversions */

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t bf16(float f) {
    uint16_t h;
    ts_f32_to_bf16(&f, &h, 1);
    return h;
}
static uint16_t f16(float f) {
    uint16_t h;
    ts_f32_to_f16(&f, &h, 1);
    return h;
}
static float from_f16(uint16_t h) {
    float f;
    ts_f16_to_f32(&h, &f, 1);
    return f;
}
static float from_bf16(uint16_t h) {
    float f;
    ts_bf16_to_f32(&h, &f, 1);
    return f;
}

static void test_conversions(void) {
    /* bf16: the top 16 bits, round to nearest even */
    CHECK(bf16(1.f) == 0x3F80 && bf16(-2.f) == 0xC000 && bf16(0.f) == 0 && bf16(-0.f) == 0x8000, "bf16 basics");
    CHECK(bf16(1.f + 0x1p-8f) == 0x3F80, "bf16: a tie rounds to even (down)");
    CHECK(bf16(1.f + 3 * 0x1p-8f) == 0x3F82, "bf16: a tie rounds to even (up)");
    CHECK(bf16(1.f + 0x1p-8f + 0x1p-20f) == 0x3F81, "bf16: above a tie rounds up");
    CHECK(bf16(INFINITY) == 0x7F80 && bf16(-INFINITY) == 0xFF80, "bf16 infinities");
    CHECK(bf16(3.4028235e38f) == 0x7F80, "bf16: FLT_MAX rounds to inf");
    uint16_t nb = bf16(NAN);
    CHECK((nb & 0x7F80) == 0x7F80 && (nb & 0x7F), "bf16 NaN is 0x%04x", nb);
    CHECK(bf16(u2f(0x7F800001)) != 0x7F80, "a NaN with a low payload must not become inf");
    CHECK(from_bf16(0x3FC0) == 1.5f && from_bf16(0xC000) == -2.f, "bf16 -> f32");
    /* f16 */
    CHECK(f16(1.f) == 0x3C00 && f16(-2.f) == 0xC000 && f16(0.5f) == 0x3800 && f16(-0.f) == 0x8000, "f16 basics");
    CHECK(f16(65504.f) == 0x7BFF, "f16 max");
    CHECK(f16(65519.f) == 0x7BFF, "f16: 65519 rounds down to 65504");
    CHECK(f16(65520.f) == 0x7C00, "f16: 65520 rounds to inf");
    CHECK(f16(1e6f) == 0x7C00 && f16(-1e6f) == 0xFC00, "f16 overflow to inf");
    CHECK(f16(0x1p-14f) == 0x0400, "f16 smallest normal");
    CHECK(f16(0x1p-24f) == 0x0001, "f16 smallest subnormal");
    CHECK(f16(0x1p-25f) == 0x0000, "f16: half the smallest subnormal ties to even (0)");
    CHECK(f16(3 * 0x1p-26f) == 0x0001, "f16: above half the smallest subnormal rounds up");
    CHECK(f16(3 * 0x1p-25f) == 0x0002, "f16: 1.5 subnormal steps ties to even (2)");
    CHECK(f16(1e-8f) == 0x0000, "f16 underflow to 0");
    CHECK(f16(1.f + 0x1p-11f) == 0x3C00 && f16(1.f + 3 * 0x1p-11f) == 0x3C02, "f16 ties to even");
    CHECK(f16(0x1p-14f - 0x1p-25f) == 0x0400, "f16: rounding up from the subnormals into the normals");
    CHECK(f16(INFINITY) == 0x7C00 && f16(-INFINITY) == 0xFC00, "f16 infinities");
    uint16_t nh = f16(NAN);
    CHECK((nh & 0x7C00) == 0x7C00 && (nh & 0x3FF), "f16 NaN is 0x%04x", nh);
    CHECK(from_f16(0x0001) == 0x1p-24f && from_f16(0x7BFF) == 65504.f && from_f16(0x03FF) == 0x3FFp-24f,
          "f16 -> f32 subnormals / max");
    CHECK(isinf(from_f16(0x7C00)) && isnan(from_f16(0x7E00)), "f16 -> f32 inf / NaN");

    /* every 16-bit pattern survives a round trip through f32 */
    int bad_b = 0, bad_h = 0;
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t h = (uint16_t)u;
        float fb = from_bf16(h), fh = from_f16(h);
        if (isnan(fb)) bad_b += !isnan(from_bf16(bf16(fb)));
        else bad_b += bf16(fb) != h || f2u(fb) != ((uint32_t)h << 16);
        if (isnan(fh)) bad_h += !isnan(from_f16(f16(fh)));
        else bad_h += f16(fh) != h;
    }
    CHECK(bad_b == 0, "%d bf16 patterns do not round-trip", bad_b);
    CHECK(bad_h == 0, "%d f16 patterns do not round-trip", bad_h);

    /* Bulk f32 -> bf16 (32 at a time in hardware where the CPU has AVX512_BF16, which treats a
     * denormal as zero unless caught) equals the one-at-a-time conversion bit for bit: every
     * 32-float block holds specials at shifting positions, and denormals only in some blocks */
    {
        enum { NB = 4099 };
        static float bulk_src[NB];
        static uint16_t bulk[NB];
        static const uint32_t special[] = {0x7F800001, 0xFF812345, 0x7FC00000, 0x7F800000, 0xFF800000, 0x00000001,
                                           0x807FFFFF, 0x00400000, 0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x80000000,
                                           0x3F80FFFF, 0x477FFF80};
        enum { NS = sizeof special / sizeof *special };
        tu_rng rs = tu_rng_seed(31);
        for (int i = 0; i < NB; i++) bulk_src[i] = (float)tu_uniform(&rs, -3, 3);
        for (int i = 0; i < NB; i += 5) {
            uint32_t u = special[(i / 5) % NS];
            int denormal = (u & 0x7F800000u) == 0 && (u & 0x7FFFFFu) != 0;
            if (!denormal || (i / 32) % 3 == 0) bulk_src[i] = u2f(u);
        }
        ts_f32_to_bf16(bulk_src, bulk, NB);
        int bad = 0;
        for (int i = 0; i < NB; i++) bad += bulk[i] != bf16(bulk_src[i]);
        CHECK(bad == 0, "%d of %d floats converted in bulk differ from one at a time", bad, NB);
    }

    /* random values: relative error within half an ulp (2^-8 bf16, 2^-11 f16) */
    tu_rng r = tu_rng_seed(12);
    enum { N = 10000 };
    static float src[N], back[N];
    static uint16_t half[N];
    for (int i = 0; i < N; i++) src[i] = (float)(tu_uniform(&r, -1, 1) * pow(10, tu_uniform(&r, -4, 4)));
    ts_f32_to_bf16(src, half, N);
    ts_bf16_to_f32(half, back, N);
    double eb = 0;
    for (int i = 0; i < N; i++) eb = fmax(eb, fabs(back[i] - src[i]) / fabs(src[i]));
    CHECK(eb <= 0x1p-8, "bf16 round trip relative error %.3e > 2^-8", eb);
    ts_f32_to_f16(src, half, N);
    ts_f16_to_f32(half, back, N);
    double eh = 0;
    for (int i = 0; i < N; i++)
        if (fabsf(src[i]) >= 0x1p-14f) eh = fmax(eh, fabs(back[i] - src[i]) / fabs(src[i]));
    CHECK(eh <= 0x1p-11, "f16 round trip relative error %.3e > 2^-11", eh);
    CHECK(ts_dtype_size(TS_BF16) == 2 && ts_dtype_size(TS_F16) == 2 && ts_dtype_size(TS_I64) == 8 &&
              ts_dtype_size(TS_U8) == 1,
          "dtype sizes");
    CHECK(strcmp(ts_dtype_name(TS_BF16), "bf16") == 0 && strcmp(ts_dtype_name(TS_I32), "i32") == 0, "dtype names");
}

/* ts_cast in a program, against the host conversions and C's truncation toward zero */
static void test_cast_forward(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(8));
    ts_name(g, ts_cast(g, x, TS_BF16), "bf");
    ts_name(g, ts_cast(g, x, TS_F16), "hf");
    ts_name(g, ts_cast(g, x, TS_I32), "i");
    ts_name(g, ts_cast(g, ts_cast(g, x, TS_I64), TS_F32), "i64f");
    ts_name(g, ts_cast(g, ts_cast(g, x, TS_F16), TS_F32), "hff");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("bf", "hf", "i", "i64f", "hff"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        float xv[8] = {-2.7f, -0.5f, 0.f, 0.49f, 1.f + 0x1p-8f, 3.99f, 70000.f, -123456.8f};
        ts_tensor *xt = ts_tensor_from(TS_F32, DIMS(8), xv);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        ts_tensor *bf = TU_FETCH(p, "bf"), *hf = TU_FETCH(p, "hf"), *it = TU_FETCH(p, "i"), *i64f = TU_FETCH(p, "i64f"),
                  *hff = TU_FETCH(p, "hff");
        if (bf && hf && it && i64f && hff) {
            CHECK(ts_tensor_dtype(bf) == TS_BF16 && ts_tensor_dtype(hf) == TS_F16 && ts_tensor_dtype(it) == TS_I32,
                  "cast dtypes");
            int ok = 1;
            for (int i = 0; i < 8; i++) {
                ok &= ((uint16_t *)ts_tensor_data(bf))[i] == bf16(xv[i]);
                ok &= ((uint16_t *)ts_tensor_data(hf))[i] == f16(xv[i]);
                ok &= ((int32_t *)ts_tensor_data(it))[i] == (int32_t)xv[i];
                ok &= tu_f32(i64f)[i] == (float)(int64_t)xv[i];
                ok &= tu_f32(hff)[i] == from_f16(f16(xv[i]));
            }
            CHECK(ok, "ts_cast disagrees with the host conversions");
            CHECK(((int32_t *)ts_tensor_data(it))[0] == -2 && ((int32_t *)ts_tensor_data(it))[5] == 3,
                  "float -> int must truncate toward zero");
        }
        ts_tensor_free(bf);
        ts_tensor_free(hf);
        ts_tensor_free(it);
        ts_tensor_free(i64f);
        ts_tensor_free(hff);
        ts_tensor_free(xt);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ arena reuse */

static void test_arena_reuse(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(64, 96));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(96, 80), ts_init_normal(0.1f));
    ts_value h = ts_gelu(g, ts_matmul(g, x, w, 0, 0), 0);
    ts_value y = ts_name(g, ts_softmax(g, ts_layer_norm(g, h, TS_NONE, TS_NONE, 1e-5f), TS_NONE), "y");
    ts_value loss = ts_name(g, ts_reduce_sum(g, ts_mul(g, y, y), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y", "loss", "w@GRAD")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) { ts_graph_free(g); return; }
    tu_rng r = tu_rng_seed(2);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(64, 96), -1, 1);
    CHECK_OK(ts_program_feed(p, "x", xt));
    ts_memory m0 = {.struct_size = sizeof m0}, m1 = {.struct_size = sizeof m1};
    CHECK_OK(ts_program_memory(p, &m0));
    CHECK_OK(ts_program_run(p));
    ts_tensor *first = TU_FETCH(p, "w@GRAD");
    int counting = tu_alloc_counter_init();
    long all = 0, big = 0, dnnl = 0, a = 0, b = 0, d = 0;
    int same = 1;
    for (int i = 0; i < 10; i++) {
        tu_alloc_count_start();
        ts_status s = ts_program_run(p);
        tu_alloc_count_stop(&a, &b, &d);
        all += a, big += b, dnnl += d;
        CHECK(s == TS_OK, "run %d: %s", i, ts_last_error());
        ts_tensor *gw = TU_FETCH(p, "w@GRAD");
        same &= tu_bitwise_equal(first, gw);
        ts_tensor_free(gw);
    }
    CHECK_OK(ts_program_memory(p, &m1));
    if (counting)
        printf("  10 warm runs: %ld heap allocations of >= %d bytes, %ld in all, and %ld tensor-sized ones by oneDNN "
               "itself\n",
               big, TU_BIG_ALLOC, all, dnnl);
    CHECK(same, "repeated runs with the same input gave different gradients");
    CHECK(!counting || big == 0, "warm runs made %ld tensor-sized heap allocations", big);
    CHECK(memcmp(&m0, &m1, sizeof m0) == 0, "the memory report changed across runs");
    CHECK(ts_program_step(p) == 11, "step %llu after 11 runs", (unsigned long long)ts_program_step(p));
    ts_tensor_free(first);
    ts_tensor_free(xt);
    ts_program_free(p);
    ts_graph_free(g);
}

/* num_threads = 1 and the default give the same values (up to summation order). The default
 * program runs first: ts_compile / ts_program_run with num_threads > 0 call
 * omp_set_num_threads, which also changes the default of the calling thread afterwards. */
static void test_num_threads(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(256, 300));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(300, 200), ts_init_normal(0.05f));
    ts_name(g, ts_softmax(g, ts_tanh(g, ts_matmul(g, x, w, 0, 0)), TS_NONE), "y");
    tu_rng r = tu_rng_seed(6);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(256, 300), -1, 1), *y1 = NULL, *y2 = NULL;
    ts_program *p2 = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p2 != NULL, "compile: %s", ts_last_error());
    if (p2) {
        CHECK_OK(ts_program_feed(p2, "x", xt));
        CHECK_OK(ts_program_run(p2));
        y2 = TU_FETCH(p2, "y");
    }
    ts_program *p1 = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1, .num_threads = 1});
    CHECK(p1 != NULL, "compile: %s", ts_last_error());
    if (p1) {
        CHECK_OK(ts_program_feed(p1, "x", xt));
        CHECK_OK(ts_program_run(p1));
        y1 = TU_FETCH(p1, "y");
    }
    CHECK(y1 && y2 && tu_max_abs_diff_f(tu_f32(y1), tu_f32(y2), 256 * 200) < 1e-6,
          "one thread and the default disagree");
    ts_tensor_free(y1);
    ts_tensor_free(y2);
    ts_tensor_free(xt);
    ts_program_free(p1);
    ts_program_free(p2);
    ts_graph_free(g);
}

/* Device iterations: one run of a K = 4 program fed [4, ...] does what four runs of a K = 1
 * program fed one slice each do — same losses (fetched [4]), same parameters, same dropout
 * masks (the step counter advances per iteration) — bit for bit. A reshape of the input
 * (an alias of its buffer) must follow the slice too. */
static ts_graph *iter_graph(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 5);
    int64_t xs[2] = {6, 4}, ws[2] = {4, 3}, flat[1] = {24};
    ts_value x = ts_input(g, "x", TS_F32, 2, xs);
    ts_value xf = ts_reshape(g, x, 1, flat); /* an alias of x's buffer */
    ts_value x2 = ts_reshape(g, xf, 2, xs);
    ts_value w = ts_param(g, "w", TS_F32, 2, ws, ts_init_normal(0.5f));
    ts_value y = ts_dropout(g, ts_tanh(g, ts_matmul(g, x2, w, 0, 0)), 0.3f);
    ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, y, y), 0, NULL, 0), "loss");
    ts_backward(g, loss);
    ts_tensor *lrt = ts_tensor_from(TS_F32, 0, NULL, &(float){0.2f});
    ts_adamw(g, ts_constant(g, lrt), 0.9f, 0.999f, 1e-8f, 0.01f);
    ts_tensor_free(lrt);
    return g;
}

static void test_device_iterations(void) {
    enum { K = 4 };
    ts_graph *g = iter_graph();
    CHECK_OK(ts_graph_status(g));
    ts_program *one = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    ts_program *many = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss"), .device_iterations = K});
    CHECK(one && many, "compile: %s", ts_last_error());
    if (!one || !many) goto out;
    tu_rng r = tu_rng_seed(11);
    int64_t ks[3] = {K, 6, 4};
    ts_tensor *xk = tu_rand_tensor(&r, 3, ks, -1, 1);
    float losses[K];
    for (int k = 0; k < K; k++) {
        ts_tensor *xi = ts_tensor_from(TS_F32, 2, ks + 1, tu_f32(xk) + k * 24);
        CHECK_OK(ts_program_feed(one, "x", xi));
        CHECK_OK(ts_program_run(one));
        ts_tensor *l = TU_FETCH(one, "loss");
        losses[k] = l ? tu_f32(l)[0] : NAN;
        ts_tensor_free(l);
        ts_tensor_free(xi);
    }
    /* a [6, 4] tensor is refused by the K = 4 program, with the shape it wants */
    ts_tensor *bad = ts_tensor_new(TS_F32, 2, ks + 1);
    CHECK_STATUS(ts_program_feed(many, "x", bad), TS_ERR_SHAPE);
    CHECK_ERRMSG("'x'", "[4, 6, 4]", "device iterations");
    ts_tensor_free(bad);
    CHECK_OK(ts_program_feed(many, "x", xk));
    CHECK_OK(ts_program_run(many));
    CHECK(ts_program_step(many) == K && ts_program_step(one) == K, "steps %llu and %llu, expected %d",
          (unsigned long long)ts_program_step(many), (unsigned long long)ts_program_step(one), K);
    ts_tensor *lk = TU_FETCH(many, "loss");
    if (lk) {
        CHECK(ts_tensor_ndim(lk) == 1 && ts_tensor_shape(lk)[0] == K, "fetched loss has rank %d", ts_tensor_ndim(lk));
        CHECK(memcmp(tu_f32(lk), losses, sizeof losses) == 0,
              "losses %g %g %g %g differ from one-batch runs %g %g %g %g", tu_f32(lk)[0], tu_f32(lk)[1],
              tu_f32(lk)[2], tu_f32(lk)[3], losses[0], losses[1], losses[2], losses[3]);
        CHECK(losses[0] != losses[1], "two iterations gave the same loss: the slices were not used");
    }
    ts_tensor *w1 = NULL, *wk = NULL;
    CHECK_OK(ts_program_get_param(one, "w", &w1));
    CHECK_OK(ts_program_get_param(many, "w", &wk));
    CHECK(tu_bitwise_equal(w1, wk), "parameters after %d device iterations differ from %d runs", K, K);
    ts_tensor_free(w1);
    ts_tensor_free(wk);
    ts_tensor_free(lk);
    ts_tensor_free(xk);
    CHECK(ts_compile(g, &(ts_compile_opts){.device_iterations = -1}) == NULL &&
          strstr(ts_last_error(), "device_iterations"), "device_iterations -1 was accepted");
out:
    ts_program_free(one);
    ts_program_free(many);
    ts_graph_free(g);
}

/* skip_param_init: parameters start at zero (for a program loaded next) instead of their draws;
 * without it the initializer's values are there. */
static void test_skip_param_init(void) {
    ts_graph *g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, 2, (int64_t[]){4, 8}, ts_init_normal(0.5f));
    ts_value b = ts_param(g, "b", TS_F32, 1, (int64_t[]){8}, ts_init_ones());
    ts_name(g, ts_add(g, ts_matmul(g, ts_input(g, "x", TS_F32, 2, (int64_t[]){2, 4}), w, 0, 0), b), "y");
    for (int skip = 0; skip < 2; skip++) {
        ts_program *p = ts_compile(g, &(ts_compile_opts){.inference = 1, .skip_param_init = skip});
        CHECK(p != NULL, "%s", ts_last_error());
        ts_tensor *tw = NULL, *tb = NULL;
        if (p) CHECK_OK(ts_program_get_param(p, "w", &tw));
        if (p) CHECK_OK(ts_program_get_param(p, "b", &tb));
        int nonzero = 0, ones = 0;
        for (int i = 0; tw && i < 32; i++) nonzero += ((float *)ts_tensor_data(tw))[i] != 0.f;
        for (int i = 0; tb && i < 8; i++) ones += ((float *)ts_tensor_data(tb))[i] == 1.f;
        if (skip) CHECK(nonzero == 0 && ones == 0, "skip_param_init: %d of w non-zero, %d of b one", nonzero, ones);
        else CHECK(nonzero == 32 && ones == 8, "initialised: %d of w non-zero, %d of b one", nonzero, ones);
        ts_tensor_free(tw);
        ts_tensor_free(tb);
        ts_program_free(p);
    }
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_feed_fetch);
    RUN(test_scalar_input);
    RUN(test_graph_without_ops);
    RUN(test_initializers);
    RUN(test_set_get_copy_params);
    RUN(test_dropout);
    RUN(test_dropout_zero);
    RUN(test_sgd);
    RUN(test_adamw);
    RUN(test_conversions);
    RUN(test_cast_forward);
    RUN(test_arena_reuse);
    RUN(test_num_threads);
    RUN(test_device_iterations);
    RUN(test_skip_param_init);
    return tu_finish("test_runtime");
}
