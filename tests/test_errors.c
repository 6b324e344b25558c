/*
 * test_errors.c — bad input gets a clear error, never a crash: each case CHECKs the status code
 * (or the NULL / TS_NONE result) and that ts_last_error() names what is at fault (the op, the
 * tensor, the shapes, the bad index). Covers feeds, fetches, parameters, builder shape errors,
 * devices, axes, reshape, run-time index errors (gather, cross_entropy), ts_backward on a
 * non-scalar, the sticky first builder error, and NULL arguments everywhere.
 */
#include "test_util.h"

/* does ts_last_error() mention this shape? */
#define CHECK_SHAPE_IN_MSG(...)                                                                    \
    CHECK(tu_msg_has_shape(ts_last_error(), DIMS(__VA_ARGS__)), "shape [%s] not in the message \"%s\"", \
          #__VA_ARGS__, ts_last_error())

/* x [2, 3] f32 input, w [3, 4] parameter, y = x @ w named "y", z = tanh(y) named "z". */
static ts_graph *small_graph(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 3));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(3, 4), ts_init_uniform(-1, 1));
    ts_value y = ts_name(g, ts_matmul(g, x, w, 0, 0), "y");
    ts_name(g, ts_tanh(g, y), "z");
    return g;
}

static ts_program *small_program(ts_graph *g) {
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("z"), .inference = 1});
    CHECK(p != NULL, "compile of a good graph failed: %s", ts_last_error());
    return p;
}

/* ------------------------------------------------------------------ feeds and fetches */

static void test_feed_errors(void) {
    ts_graph *g = small_graph();
    ts_program *p = small_program(g);
    if (!p) { ts_graph_free(g); return; }
    ts_tensor *bad_shape = ts_tensor_new(TS_F32, DIMS(3, 2));
    CHECK_STATUS(ts_program_feed(p, "x", bad_shape), TS_ERR_SHAPE);
    CHECK_ERRMSG("'x'");
    CHECK_SHAPE_IN_MSG(3, 2);
    CHECK_SHAPE_IN_MSG(2, 3);

    ts_tensor *bad_rank = ts_tensor_new(TS_F32, DIMS(6));
    CHECK_STATUS(ts_program_feed(p, "x", bad_rank), TS_ERR_SHAPE);
    CHECK_ERRMSG("'x'");

    ts_tensor *bad_dtype = ts_tensor_new(TS_I32, DIMS(2, 3));
    CHECK_STATUS(ts_program_feed(p, "x", bad_dtype), TS_ERR_DTYPE);
    CHECK_ERRMSG("'x'", "i32", "f32");

    ts_tensor *good = ts_tensor_new(TS_F32, DIMS(2, 3));
    CHECK_STATUS(ts_program_feed(p, "nosuchinput", good), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("nosuchinput");
    /* a parameter is not an input: the message says what to do instead */
    ts_tensor *wt = ts_tensor_new(TS_F32, DIMS(3, 4));
    CHECK_STATUS(ts_program_feed(p, "w", wt), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("'w'", "parameter");
    /* the program still works after the rejected feeds */
    CHECK_OK(ts_program_feed(p, "x", good));
    CHECK_OK(ts_program_run(p));

    /* fetches */
    ts_tensor *out = (ts_tensor *)1;
    CHECK_STATUS(ts_program_fetch(p, "nosuchvalue", &out), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("nosuchvalue");
    CHECK(out == NULL, "a failed fetch left *out = %p", (void *)out);
    CHECK_STATUS(ts_program_fetch(p, "y", &out), TS_ERR_NOT_FOUND); /* named, but not fetched */
    CHECK_ERRMSG("'y'", "fetch");
    CHECK(out == NULL, "a failed fetch left *out set");
    CHECK_OK(ts_program_fetch(p, "z", &out));
    ts_tensor_free(out);
    out = NULL;
    CHECK_OK(ts_program_fetch(p, "w", &out)); /* a parameter is always fetchable */
    CHECK(out && ts_tensor_numel(out) == 12, "fetch of parameter w");
    ts_tensor_free(out);

    ts_tensor_free(bad_shape);
    ts_tensor_free(bad_rank);
    ts_tensor_free(bad_dtype);
    ts_tensor_free(good);
    ts_tensor_free(wt);
    ts_program_free(p);
    ts_graph_free(g);
}

static void test_compile_errors(void) {
    ts_graph *g = small_graph();
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("z", "nosuchfetch")});
    CHECK(p == NULL, "compile with an unknown fetch succeeded");
    CHECK_ERRMSG("nosuchfetch");
    ts_program_free(p);

    p = ts_compile(g, &(ts_compile_opts){.device = "gpu7"});
    CHECK(p == NULL, "compile for device gpu7 succeeded");
    CHECK_ERRMSG("gpu7", "cpu");
    ts_program_free(p);

    p = ts_compile(g, &(ts_compile_opts){.nfetch = 2, .fetches = NULL});
    CHECK(p == NULL, "compile with nfetch 2 and fetches NULL succeeded");
    CHECK_ERRMSG("fetches");
    ts_program_free(p);

    p = ts_compile(g, &(ts_compile_opts){.nfetch = -1});
    CHECK(p == NULL, "compile with nfetch -1 succeeded");
    ts_program_free(p);

    p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *const[]){NULL}});
    CHECK(p == NULL, "compile with a NULL fetch name succeeded");
    ts_program_free(p);

    p = ts_compile(NULL, NULL);
    CHECK(p == NULL, "ts_compile(NULL) returned a program");
    CHECK(strlen(ts_last_error()) > 0, "ts_compile(NULL) left no message");

    /* NULL options: the defaults (cpu, no fetches) */
    p = ts_compile(g, NULL);
    CHECK(p != NULL, "ts_compile(g, NULL) failed: %s", ts_last_error());
    ts_program_free(p);

    CHECK(strstr(ts_devices(), "cpu") != NULL, "ts_devices() = \"%s\" lacks cpu", ts_devices());
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ parameters */

static void test_param_errors(void) {
    ts_graph *g = small_graph();
    ts_program *p = small_program(g);
    if (!p) { ts_graph_free(g); return; }
    ts_tensor *t = (ts_tensor *)1;
    CHECK_STATUS(ts_program_get_param(p, "nosuchparam", &t), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("nosuchparam");
    CHECK(t == NULL, "a failed get_param left *out set");
    CHECK_STATUS(ts_program_get_param(p, "x", &t), TS_ERR_NOT_FOUND); /* an input, not a parameter */
    CHECK_ERRMSG("'x'");

    ts_tensor *good = ts_tensor_new(TS_F32, DIMS(3, 4));
    CHECK_STATUS(ts_program_set_param(p, "nosuchparam", good), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("nosuchparam");
    ts_tensor *bad = ts_tensor_new(TS_F32, DIMS(4, 3));
    CHECK_STATUS(ts_program_set_param(p, "w", bad), TS_ERR_SHAPE);
    CHECK_ERRMSG("'w'");
    CHECK_SHAPE_IN_MSG(4, 3);
    CHECK_SHAPE_IN_MSG(3, 4);
    ts_tensor *bad2 = ts_tensor_new(TS_BF16, DIMS(3, 4));
    CHECK_STATUS(ts_program_set_param(p, "w", bad2), TS_ERR_DTYPE);
    CHECK_ERRMSG("'w'", "bf16", "f32");

    /* the rejected writes did not change w */
    ts_tensor *before = NULL, *after = NULL;
    CHECK_OK(ts_program_get_param(p, "w", &before));
    CHECK_STATUS(ts_program_set_param(p, "w", bad), TS_ERR_SHAPE);
    CHECK_OK(ts_program_get_param(p, "w", &after));
    CHECK(tu_bitwise_equal(before, after), "a rejected set_param changed the parameter");

    CHECK(ts_program_param_name(p, -1) == NULL, "param_name(-1) is not NULL");
    CHECK(ts_program_param_name(p, ts_program_num_params(p)) == NULL, "param_name(n) is not NULL");

    ts_tensor_free(before);
    ts_tensor_free(after);
    ts_tensor_free(good);
    ts_tensor_free(bad);
    ts_tensor_free(bad2);
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ builder shape errors */

static void test_add_mismatch(void) {
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(2, 3));
    ts_value b = ts_input(g, "b", TS_F32, DIMS(4, 5));
    CHECK(ts_add(g, a, b) == TS_NONE, "add of [2,3] and [4,5] did not fail");
    CHECK(ts_graph_status(g) == TS_ERR_SHAPE, "graph status %s, expected TS_ERR_SHAPE",
          ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("add");
    CHECK_SHAPE_IN_MSG(2, 3);
    CHECK_SHAPE_IN_MSG(4, 5);
    ts_graph_free(g);

    /* broadcasting rules: [3,1] + [2] is fine, [3,2] + [3] is not */
    g = ts_graph_new();
    ts_value c = ts_input(g, "c", TS_F32, DIMS(3, 1)), d = ts_input(g, "d", TS_F32, DIMS(2));
    ts_value cd = ts_add(g, c, d);
    int64_t sh[TS_MAX_DIMS];
    CHECK(ts_value_shape(g, cd, sh) == 2 && sh[0] == 3 && sh[1] == 2, "[3,1] + [2] is not [3,2]");
    ts_value e = ts_input(g, "e", TS_F32, DIMS(3, 2)), f = ts_input(g, "f", TS_F32, DIMS(3));
    CHECK(ts_mul(g, e, f) == TS_NONE, "[3,2] * [3] did not fail");
    CHECK(ts_graph_status(g) == TS_ERR_SHAPE, "status %s", ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("mul");
    ts_graph_free(g);

    /* dtype errors */
    g = ts_graph_new();
    ts_value i = ts_input(g, "i", TS_I32, DIMS(2, 3)), x = ts_input(g, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_add(g, x, i) == TS_NONE, "add of f32 and i32 did not fail");
    CHECK(ts_graph_status(g) == TS_ERR_DTYPE, "status %s, expected TS_ERR_DTYPE", ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("add", "i32");
    ts_graph_free(g);
}

static void test_matmul_mismatch(void) {
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(2, 3));
    ts_value b = ts_input(g, "b", TS_F32, DIMS(4, 5));
    CHECK(ts_matmul(g, a, b, 0, 0) == TS_NONE, "matmul [2,3] @ [4,5] did not fail");
    CHECK(ts_graph_status(g) == TS_ERR_SHAPE, "status %s, expected TS_ERR_SHAPE", ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("matmul");
    CHECK_SHAPE_IN_MSG(2, 3);
    CHECK_SHAPE_IN_MSG(4, 5);
    ts_graph_free(g);

    /* trans_b makes [2,3] @ [4,3]^T fine; without it, it is an error */
    g = ts_graph_new();
    a = ts_input(g, "a", TS_F32, DIMS(2, 3));
    b = ts_input(g, "b", TS_F32, DIMS(4, 3));
    ts_value ok = ts_matmul(g, a, b, 0, 1);
    int64_t sh[TS_MAX_DIMS];
    CHECK(ts_value_shape(g, ok, sh) == 2 && sh[0] == 2 && sh[1] == 4, "[2,3]@[4,3]^T is not [2,4]");
    CHECK(ts_matmul(g, a, b, 0, 0) == TS_NONE, "matmul [2,3] @ [4,3] did not fail");
    CHECK_ERRMSG("matmul");
    ts_graph_free(g);

    /* batch dims that do not broadcast, and a rank-1 operand */
    g = ts_graph_new();
    a = ts_input(g, "a", TS_F32, DIMS(2, 5, 3));
    b = ts_input(g, "b", TS_F32, DIMS(3, 3, 4));
    CHECK(ts_matmul(g, a, b, 0, 0) == TS_NONE, "matmul batch [2] vs [3] did not fail");
    CHECK_ERRMSG("matmul");
    ts_graph_free(g);
    g = ts_graph_new();
    a = ts_input(g, "a", TS_F32, DIMS(3));
    b = ts_input(g, "b", TS_F32, DIMS(3, 4));
    CHECK(ts_matmul(g, a, b, 0, 0) == TS_NONE, "matmul of a rank-1 operand did not fail");
    CHECK_ERRMSG("matmul");
    ts_graph_free(g);
}

/* bad axes are TS_ERR_ARG (the header: "a bad argument: NULL handle, bad axis, bad option") */
static void test_invalid_axis(void) {
    struct {
        const char *op;
        int which;
    } cases[] = {{"reduce_sum", 0}, {"reduce_mean", 1}, {"reduce_max", 2}, {"slice", 3},
                 {"concat", 4},     {"split", 5},       {"transpose", 6},  {"transpose", 7},
                 {"reduce_sum", 8}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 3));
        ts_value r = 0;
        ts_value parts[2];
        switch (cases[k].which) {
        case 0: r = ts_reduce_sum(g, x, 1, (int[]){2}, 0); break;
        case 1: r = ts_reduce_mean(g, x, 1, (int[]){-3}, 0); break;
        case 2: r = ts_reduce_max(g, x, 1, (int[]){5}, 1); break;
        case 3: r = ts_slice(g, x, 2, 0, 1); break;
        case 4: r = ts_concat(g, 2, (ts_value[]){x, x}, 3); break;
        case 5: r = ts_split(g, x, -3, 2, NULL, parts) == TS_OK ? 0 : TS_NONE; break;
        case 6: r = ts_transpose(g, x, (int[]){0, 0}); break;  /* not a permutation */
        case 7: r = ts_transpose(g, x, (int[]){0, 2}); break;  /* out of range */
        case 8: r = ts_reduce_sum(g, x, 2, (int[]){1, 1}, 0); break; /* repeated axis */
        }
        CHECK(r == TS_NONE, "case %zu (%s): bad axis accepted", k, cases[k].op);
        CHECK(ts_graph_status(g) == TS_ERR_ARG, "case %zu (%s): status %s, expected TS_ERR_ARG (message \"%s\")", k,
              cases[k].op, ts_status_name(ts_graph_status(g)), ts_last_error());
        CHECK_ERRMSG(cases[k].op);
        ts_graph_free(g);
    }
    /* softmax needs rank >= 1: a scalar is rejected with a message */
    ts_graph *g = ts_graph_new();
    CHECK(ts_softmax(g, ts_scalar(g, 1.f), TS_NONE) == TS_NONE, "softmax of a scalar accepted");
    CHECK_ERRMSG("softmax");
    ts_graph_free(g);
    /* split sizes that do not add up, and a size that does not divide */
    g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 5));
    ts_value parts[2];
    CHECK(ts_split(g, x, 1, 2, (int64_t[]){2, 2}, parts) != TS_OK, "split sizes 2+2 of 5 accepted");
    CHECK_ERRMSG("split");
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(2, 5));
    CHECK(ts_split(g, x, 1, 2, NULL, parts) != TS_OK, "equal split of 5 in 2 accepted");
    CHECK_ERRMSG("split");
    ts_graph_free(g);
}

static void test_reshape_errors(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_reshape(g, x, DIMS(4, 2)) == TS_NONE, "reshape [2,3] -> [4,2] accepted");
    CHECK(ts_graph_status(g) == TS_ERR_SHAPE, "status %s, expected TS_ERR_SHAPE", ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("reshape");
    CHECK_SHAPE_IN_MSG(2, 3);
    CHECK_SHAPE_IN_MSG(4, 2);
    ts_graph_free(g);

    const struct {
        int nd;
        int64_t sh[3];
        const char *why;
    } bad[] = {{2, {-1, -1}, "two -1"}, {2, {4, -1}, "-1 that does not divide"}, {2, {0, 6}, "a zero dim"},
               {2, {-2, 3}, "a negative dim"}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        g = ts_graph_new();
        x = ts_input(g, "x", TS_F32, DIMS(2, 3));
        CHECK(ts_reshape(g, x, bad[k].nd, bad[k].sh) == TS_NONE, "reshape with %s accepted", bad[k].why);
        CHECK(ts_graph_status(g) != TS_OK, "reshape with %s: no error recorded", bad[k].why);
        CHECK_ERRMSG("reshape");
        ts_graph_free(g);
    }
    /* expand to a shape that does not broadcast */
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_expand(g, x, DIMS(2, 4)) == TS_NONE, "expand [2,3] -> [2,4] accepted");
    CHECK_ERRMSG("expand");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ run-time data errors */

static void test_gather_out_of_range(void) {
    ts_graph *g = ts_graph_new();
    ts_value table = ts_param(g, "table", TS_F32, DIMS(5, 3), ts_init_uniform(-1, 1));
    ts_value idx = ts_input(g, "idx", TS_I64, DIMS(4));
    ts_name(g, ts_gather(g, table, idx), "rows");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("rows"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        int64_t bad[4] = {0, 2, 1234, 1};
        ts_tensor *t = ts_tensor_from(TS_I64, DIMS(4), bad);
        CHECK_OK(ts_program_feed(p, "idx", t));
        CHECK_STATUS(ts_program_run(p), TS_ERR_RUNTIME);
        CHECK_ERRMSG("gather", "1234");
        int64_t neg[4] = {0, -7, 1, 1};
        ts_tensor *tn = ts_tensor_from(TS_I64, DIMS(4), neg);
        CHECK_OK(ts_program_feed(p, "idx", tn));
        CHECK_STATUS(ts_program_run(p), TS_ERR_RUNTIME);
        CHECK_ERRMSG("gather", "-7");
        int64_t edge[4] = {0, 5, 1, 1}; /* == V */
        ts_tensor *te = ts_tensor_from(TS_I64, DIMS(4), edge);
        CHECK_OK(ts_program_feed(p, "idx", te));
        CHECK_STATUS(ts_program_run(p), TS_ERR_RUNTIME);
        /* good indices afterwards: the program recovers */
        int64_t good[4] = {4, 0, 0, 2};
        ts_tensor *tg = ts_tensor_from(TS_I64, DIMS(4), good);
        CHECK_OK(ts_program_feed(p, "idx", tg));
        CHECK_OK(ts_program_run(p));
        ts_tensor_free(t);
        ts_tensor_free(tn);
        ts_tensor_free(te);
        ts_tensor_free(tg);
    }
    ts_program_free(p);
    ts_graph_free(g);

    /* i32 indices too, and a float index tensor is a dtype error at build time */
    g = ts_graph_new();
    table = ts_param(g, "table", TS_F32, DIMS(5, 3), ts_init_uniform(-1, 1));
    ts_value idx32 = ts_input(g, "idx", TS_I32, DIMS(2));
    ts_name(g, ts_gather(g, table, idx32), "rows");
    p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("rows"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        int32_t bad[2] = {3, 77};
        ts_tensor *t = ts_tensor_from(TS_I32, DIMS(2), bad);
        CHECK_OK(ts_program_feed(p, "idx", t));
        CHECK_STATUS(ts_program_run(p), TS_ERR_RUNTIME);
        CHECK_ERRMSG("gather", "77");
        ts_tensor_free(t);
    }
    ts_program_free(p);
    ts_graph_free(g);
    g = ts_graph_new();
    table = ts_param(g, "table", TS_F32, DIMS(5, 3), ts_init_uniform(-1, 1));
    ts_value fidx = ts_input(g, "idx", TS_F32, DIMS(2));
    CHECK(ts_gather(g, table, fidx) == TS_NONE, "gather with f32 indices accepted");
    CHECK(ts_graph_status(g) == TS_ERR_DTYPE, "status %s, expected TS_ERR_DTYPE", ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("gather");
    ts_graph_free(g);
}

static void test_cross_entropy_label_range(void) {
    ts_graph *g = ts_graph_new();
    ts_value logits = ts_param(g, "logits", TS_F32, DIMS(3, 4), ts_init_uniform(-1, 1));
    ts_value labels = ts_input(g, "labels", TS_I64, DIMS(3));
    ts_value loss = ts_name(g, ts_cross_entropy(g, logits, labels, -100), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        int64_t bad[3] = {0, 77, 1};
        ts_tensor *t = ts_tensor_from(TS_I64, DIMS(3), bad);
        CHECK_OK(ts_program_feed(p, "labels", t));
        CHECK_STATUS(ts_program_run(p), TS_ERR_RUNTIME);
        CHECK_ERRMSG("cross_entropy", "77");
        int64_t neg[3] = {0, -5, 1}; /* negative, and not the ignore_index */
        ts_tensor *tn = ts_tensor_from(TS_I64, DIMS(3), neg);
        CHECK_OK(ts_program_feed(p, "labels", tn));
        CHECK_STATUS(ts_program_run(p), TS_ERR_RUNTIME);
        CHECK_ERRMSG("cross_entropy", "-5");
        int64_t ign[3] = {0, -100, 3}; /* the ignore_index is fine */
        ts_tensor *ti = ts_tensor_from(TS_I64, DIMS(3), ign);
        CHECK_OK(ts_program_feed(p, "labels", ti));
        CHECK_OK(ts_program_run(p));
        ts_tensor_free(t);
        ts_tensor_free(tn);
        ts_tensor_free(ti);
    }
    ts_program_free(p);
    ts_graph_free(g);

    /* build-time: labels of the wrong shape or dtype */
    g = ts_graph_new();
    logits = ts_input(g, "logits", TS_F32, DIMS(3, 4));
    CHECK(ts_cross_entropy(g, logits, ts_input(g, "l", TS_I64, DIMS(4)), -100) == TS_NONE,
          "labels [4] for logits [3,4] accepted");
    CHECK_ERRMSG("cross_entropy");
    ts_graph_free(g);
    g = ts_graph_new();
    logits = ts_input(g, "logits", TS_F32, DIMS(3, 4));
    CHECK(ts_cross_entropy(g, logits, ts_input(g, "l", TS_F32, DIMS(3)), -100) == TS_NONE,
          "f32 labels accepted");
    CHECK(ts_graph_status(g) == TS_ERR_DTYPE, "status %s, expected TS_ERR_DTYPE", ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("cross_entropy");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ backward and sticky errors */

static void test_backward_errors(void) {
    ts_graph *g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, DIMS(2, 3), ts_init_ones());
    ts_value y = ts_tanh(g, w);
    CHECK(ts_backward(g, y) == TS_ERR_SHAPE, "ts_backward on a [2,3] loss: %s", ts_last_error());
    CHECK_ERRMSG("ts_backward");
    CHECK_SHAPE_IN_MSG(2, 3);
    ts_graph_free(g);

    g = ts_graph_new();
    w = ts_param(g, "w", TS_F32, DIMS(2, 3), ts_init_ones());
    ts_value l = ts_reduce_sum(g, w, 0, NULL, 0);
    CHECK(ts_backward(g, 12345) == TS_ERR_ARG, "ts_backward on value 12345: %s", ts_last_error());
    ts_graph_free(g);

    g = ts_graph_new();
    w = ts_param(g, "w", TS_F32, DIMS(2, 3), ts_init_ones());
    l = ts_reduce_sum(g, w, 0, NULL, 0);
    CHECK_OK(ts_backward(g, l));
    CHECK(ts_backward(g, l) != TS_OK, "a second ts_backward succeeded");
    CHECK_ERRMSG("ts_backward");
    ts_graph_free(g);

    CHECK(ts_backward(NULL, 0) == TS_ERR_ARG, "ts_backward(NULL)");
}

/* Compile of a graph with a recorded builder error reports the first error, not a later one. */
static void test_sticky_first_error(void) {
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(2, 3));
    ts_value b = ts_input(g, "b", TS_F32, DIMS(4, 5));
    ts_value bad = ts_add(g, a, b); /* first error: add [2,3] [4,5] */
    ts_value c = ts_input(g, "c", TS_F32, DIMS(7, 8));
    ts_value later = ts_matmul(g, c, c, 0, 0); /* would be a second, different error */
    ts_value prop = ts_tanh(g, bad);            /* TS_NONE propagates */
    CHECK(bad == TS_NONE && prop == TS_NONE, "errors did not propagate as TS_NONE");
    (void)later;
    CHECK(ts_graph_status(g) == TS_ERR_SHAPE, "graph status %s", ts_status_name(ts_graph_status(g)));
    ts_program *p = ts_compile(g, NULL);
    CHECK(p == NULL, "compile of a graph with a builder error succeeded");
    CHECK_ERRMSG("add");
    CHECK_SHAPE_IN_MSG(2, 3);
    CHECK(!strstr(ts_last_error(), "matmul"), "the message is about a later error: \"%s\"", ts_last_error());
    ts_program_free(p);
    ts_graph_free(g);

    /* the builder's own argument errors are recorded too */
    g = ts_graph_new();
    CHECK(ts_input(g, "x", TS_F32, DIMS(2, 3)) != TS_NONE, "input x");
    CHECK(ts_input(g, "x", TS_F32, DIMS(2, 3)) == TS_NONE, "a second input named x accepted");
    CHECK_ERRMSG("'x'");
    CHECK(ts_compile(g, NULL) == NULL, "compile after a duplicate name succeeded");
    CHECK_ERRMSG("x");
    ts_graph_free(g);

    g = ts_graph_new();
    CHECK(ts_input(g, "neg", TS_F32, DIMS(2, -3)) == TS_NONE, "a negative dim accepted");
    CHECK(ts_graph_status(g) == TS_ERR_SHAPE, "status %s", ts_status_name(ts_graph_status(g)));
    CHECK_ERRMSG("neg");
    ts_graph_free(g);

    g = ts_graph_new();
    CHECK(ts_param(g, "ip", TS_I32, DIMS(2), ts_init_zeros()) == TS_NONE, "an i32 parameter accepted");
    CHECK(ts_graph_status(g) == TS_ERR_DTYPE, "status %s", ts_status_name(ts_graph_status(g)));
    ts_graph_free(g);

    g = ts_graph_new();
    CHECK(ts_dropout(g, ts_input(g, "x", TS_F32, DIMS(3)), 1.5f) == TS_NONE, "dropout p = 1.5 accepted");
    CHECK_ERRMSG("dropout");
    ts_graph_free(g);

    /* a value of another graph, or a made-up id */
    ts_graph *g1 = ts_graph_new(), *g2 = ts_graph_new();
    ts_value x1 = ts_input(g1, "x", TS_F32, DIMS(2));
    ts_value x2 = ts_input(g2, "x", TS_F32, DIMS(2));
    (void)x2;
    CHECK(ts_add(g2, x2, 777) == TS_NONE, "ts_add with value id 777 accepted");
    CHECK(ts_graph_status(g2) == TS_ERR_ARG, "status %s", ts_status_name(ts_graph_status(g2)));
    CHECK(ts_tanh(g1, x1 + 100) == TS_NONE, "ts_tanh with value id 100 accepted");
    ts_graph_free(g1);
    ts_graph_free(g2);
}

/* ------------------------------------------------------------------ NULL arguments */

static void test_null_arguments(void) {
    ts_graph *g = small_graph();
    ts_program *p = small_program(g);
    ts_tensor *t = ts_tensor_new(TS_F32, DIMS(2, 3));
    ts_tensor *out = NULL;

    CHECK(ts_program_feed(NULL, "x", t) == TS_ERR_ARG, "feed(NULL program)");
    CHECK(ts_program_feed(p, "x", NULL) == TS_ERR_ARG, "feed(NULL tensor)");
    CHECK(ts_program_feed(p, NULL, t) != TS_OK, "feed(NULL name)");
    CHECK(ts_program_run(NULL) == TS_ERR_ARG, "run(NULL)");
    CHECK(ts_program_fetch(NULL, "z", &out) == TS_ERR_ARG, "fetch(NULL program)");
    CHECK(ts_program_fetch(p, "z", NULL) == TS_ERR_ARG, "fetch(NULL out)");
    CHECK(ts_program_fetch(p, NULL, &out) != TS_OK, "fetch(NULL name)");
    CHECK(ts_program_get_param(NULL, "w", &out) == TS_ERR_ARG, "get_param(NULL program)");
    CHECK(ts_program_get_param(p, "w", NULL) == TS_ERR_ARG, "get_param(NULL out)");
    CHECK(ts_program_get_param(p, NULL, &out) != TS_OK, "get_param(NULL name)");
    CHECK(ts_program_set_param(NULL, "w", t) == TS_ERR_ARG, "set_param(NULL program)");
    CHECK(ts_program_set_param(p, "w", NULL) == TS_ERR_ARG, "set_param(NULL tensor)");
    CHECK(ts_program_set_param(p, NULL, t) != TS_OK, "set_param(NULL name)");
    CHECK(ts_program_copy_params(NULL, p) == -1, "copy_params(NULL dst)");
    CHECK(ts_program_copy_params(p, NULL) == -1, "copy_params(NULL src)");
    ts_memory m = {.struct_size = sizeof m};
    CHECK(ts_program_memory(NULL, &m) == TS_ERR_ARG, "memory(NULL program)");
    CHECK(ts_program_memory(p, NULL) == TS_ERR_ARG, "memory(NULL out)");
    CHECK(ts_program_num_params(NULL) == 0, "num_params(NULL)");
    CHECK(ts_program_param_name(NULL, 0) == NULL, "param_name(NULL)");
    CHECK(ts_program_step(NULL) == 0, "step(NULL)");
    ts_program_set_step(NULL, 3);
    ts_program_free(NULL);

    CHECK(ts_graph_status(NULL) == TS_ERR_ARG, "graph_status(NULL)");
    ts_graph_set_seed(NULL, 1);
    ts_graph_free(NULL);
    CHECK(ts_input(NULL, "x", TS_F32, DIMS(2)) == TS_NONE, "input(NULL graph)");
    CHECK(ts_param(NULL, "w", TS_F32, DIMS(2), ts_init_zeros()) == TS_NONE, "param(NULL graph)");
    CHECK(ts_scalar(NULL, 1.f) == TS_NONE, "scalar(NULL graph)");
    CHECK(ts_lookup(NULL, "x") == TS_NONE, "lookup(NULL graph)");
    CHECK(ts_lookup(g, NULL) == TS_NONE, "lookup(NULL name)");
    CHECK(ts_lookup(g, "x") != TS_NONE, "lookup of x");
    CHECK(ts_value_shape(NULL, 0, NULL) == -1, "value_shape(NULL graph)");
    CHECK(ts_value_shape(g, TS_NONE, NULL) == -1, "value_shape(TS_NONE)");
    CHECK(ts_matmul(NULL, 0, 1, 0, 0) == TS_NONE, "matmul(NULL graph)");
    CHECK(ts_add(NULL, 0, 1) == TS_NONE, "add(NULL graph)");
    CHECK(ts_softmax(NULL, 0, TS_NONE) == TS_NONE, "softmax(NULL graph)");
    CHECK(ts_reduce_sum(NULL, 0, 0, NULL, 0) == TS_NONE, "reduce_sum(NULL graph)");
    CHECK(ts_reshape(NULL, 0, DIMS(6)) == TS_NONE, "reshape(NULL graph)");
    CHECK(ts_gather(NULL, 0, 1) == TS_NONE, "gather(NULL graph)");
    CHECK(ts_layer_norm(NULL, 0, TS_NONE, TS_NONE, 1e-5f) == TS_NONE, "layer_norm(NULL graph)");
    CHECK(ts_cross_entropy(NULL, 0, 1, -100) == TS_NONE, "cross_entropy(NULL graph)");
    CHECK(ts_name(NULL, 0, "n") == TS_NONE, "name(NULL graph)");
    CHECK(ts_grad(NULL, 0) == TS_NONE, "grad(NULL graph)");
    CHECK(ts_sgd(NULL, 0, 0.f, 0.f) != TS_OK, "sgd(NULL graph)");
    CHECK(ts_adamw(NULL, 0, 0.9f, 0.999f, 1e-8f, 0.f) != TS_OK, "adamw(NULL graph)");

    /* NULL pointers inside a live graph are recorded errors, not crashes */
    ts_graph *h = ts_graph_new();
    ts_value x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_input(h, NULL, TS_F32, DIMS(2)) == TS_NONE, "input with a NULL name");
    CHECK(ts_graph_status(h) == TS_ERR_ARG, "status %s", ts_status_name(ts_graph_status(h)));
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_input(h, "y", TS_F32, 2, NULL) == TS_NONE, "input with a NULL shape");
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_constant(h, NULL) == TS_NONE, "constant(NULL tensor)");
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_reshape(h, x, 2, NULL) == TS_NONE, "reshape with a NULL shape");
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_concat(h, 2, NULL, 0) == TS_NONE, "concat with NULL inputs");
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_concat(h, 0, (ts_value[]){x}, 0) == TS_NONE, "concat of 0 values");
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 4));
    CHECK(ts_split(h, x, 1, 2, NULL, NULL) != TS_OK, "split with NULL outs");
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_reduce_sum(h, x, 2, NULL, 0) == TS_NONE, "reduce_sum with 2 axes and a NULL list");
    ts_graph_free(h);
    h = ts_graph_new();
    x = ts_input(h, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_add(h, x, TS_NONE) == TS_NONE, "add(x, TS_NONE)");
    CHECK(ts_tanh(h, TS_NONE) == TS_NONE, "tanh(TS_NONE)");
    ts_graph_free(h);

    /* tensors */
    CHECK(ts_tensor_new((ts_dtype)99, DIMS(2)) == NULL, "tensor with dtype 99");
    CHECK(ts_tensor_new(TS_F32, DIMS(2, -1)) == NULL, "tensor with a negative dim");
    CHECK(ts_tensor_new(TS_F32, TS_MAX_DIMS + 1, (int64_t[TS_MAX_DIMS + 1]){1}) == NULL, "tensor of rank 9");
    CHECK(ts_tensor_new(TS_F32, 2, NULL) == NULL, "tensor with a NULL shape");
    ts_tensor_free(NULL);
    CHECK(ts_dtype_size((ts_dtype)99) == 0, "size of dtype 99");
    CHECK(strcmp(ts_status_name(TS_ERR_RUNTIME), "TS_ERR_RUNTIME") == 0, "status name");

    ts_tensor_free(t);
    ts_program_free(p);
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_feed_errors);
    RUN(test_compile_errors);
    RUN(test_param_errors);
    RUN(test_add_mismatch);
    RUN(test_matmul_mismatch);
    RUN(test_invalid_axis);
    RUN(test_reshape_errors);
    RUN(test_gather_out_of_range);
    RUN(test_cross_entropy_label_range);
    RUN(test_backward_errors);
    RUN(test_sticky_first_error);
    RUN(test_null_arguments);
    return tu_finish("test_errors");
}
