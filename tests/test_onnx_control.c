/*
 * test_onnx_control.c — ONNX If and state across session runs, on small models written in the
 * test (tests/onnx_builder.h):
 *  - an If whose condition the importer folds from shapes takes only its branch, with a nested
 *    If on a constant inside it, for two input shapes (one per branch);
 *  - an If on an input (Silero's `sr`): branches whose outputs disagree are refused, naming the
 *    node, unless the input is fixed (ts_onnx_import_opts.values, ts_onnx_session_fix); a session
 *    that is not told imports again with the input's value known by itself;
 *  - an If on a condition computed at run time: both branches run and Where selects, nested;
 *  - bad Ifs: a missing branch, a branch with the wrong number of outputs, both branches naming
 *    an output alike when both must run, an unknown op inside a branch (refused at load);
 *  - a state bound from an output to an input (ts_onnx_session_bind): N runs equal N chained
 *    manual runs, and a reset starts again from zeros; under it, ts_program_feed_value (an
 *    output copied into an input on the device) and its refusals.
 */
#include <stdio.h>

#include "graph/ir.h"
#include "graph/opdef.h"
#include "onnx_builder.h"
#include "tessera.h"
#include "test_util.h"

static const int64_t D3[1] = {3};

static ts_onnx *load(ob m, const char *what) {
    ts_onnx *o = ts_onnx_load_bytes(m.b, m.n, what);
    free(m.b);
    CHECK(o != NULL, "%s: %s", what, ts_last_error());
    return o;
}

/* One output from a session run on x (and extra inputs), compared with want (n elements). */
static void run_check(ts_onnx_session *s, const ts_tensor *const *in, int nout, const float *want, int64_t n,
                      const char *what) {
    ts_tensor *out[2] = {0};
    ts_status st = ts_onnx_session_run(s, in, out);
    CHECK(st == TS_OK, "%s: %s", what, ts_last_error());
    if (st == TS_OK) {
        CHECK(ts_tensor_numel(out[0]) == n, "%s: %lld elements", what, (long long)ts_tensor_numel(out[0]));
        for (int64_t i = 0; i < n && ts_tensor_numel(out[0]) == n; i++)
            CHECK(tu_f32(out[0])[i] == want[i], "%s: [%lld] %g, want %g", what, (long long)i, tu_f32(out[0])[i], want[i]);
    }
    for (int j = 0; j < nout; j++) ts_tensor_free(out[j]);
}

/* If (Equal(Shape(x)[0], 3)) { If (false) { 2x * x } else { 2x + x } } else { x * x } */
static ob folded_model(void) {
    int64_t zero = 0, three = 3;
    uint8_t no = 0;
    ob inner_t[] = {ob_node("Mul", "it", "t1,x", "t2a", OB_NONE, OB_NONE)};
    ob inner_e[] = {ob_node("Add", "ie", "t1,x", "t2b", OB_NONE, OB_NONE)};
    ob ot_t[] = {ob_value("t2a", OB_FLOAT, 1, D3)}, ot_e[] = {ob_value("t2b", OB_FLOAT, 1, D3)};
    ob then_nodes[] = {
        ob_node("Add", "t_add", "x,x", "t1", OB_NONE, OB_NONE),
        ob_node("If", "inner_if", "cf", "ti", ob_attr_graph("then_branch", ob_graph("it", inner_t, 1, NULL, 0, ot_t, 1)),
                ob_attr_graph("else_branch", ob_graph("ie", inner_e, 1, NULL, 0, ot_e, 1))),
    };
    ob else_nodes[] = {ob_node("Mul", "e_mul", "x,x", "e1", OB_NONE, OB_NONE)};
    ob to[] = {ob_value("ti", OB_FLOAT, -1, NULL)}, eo[] = {ob_value("e1", OB_FLOAT, -1, NULL)};
    ob nodes[] = {
        ob_const("cf", OB_BOOL, 0, NULL, &no),
        ob_node("Shape", "shape", "x", "s", OB_NONE, OB_NONE),
        ob_const("zero", OB_INT64, 0, NULL, &zero),
        ob_node("Gather", "gather", "s,zero", "d", OB_NONE, OB_NONE),
        ob_const("three", OB_INT64, 0, NULL, &three),
        ob_node("Equal", "eq", "d,three", "c", OB_NONE, OB_NONE),
        ob_node("If", "outer_if", "c", "y", ob_attr_graph("then_branch", ob_graph("t", then_nodes, 2, NULL, 0, to, 1)),
                ob_attr_graph("else_branch", ob_graph("e", else_nodes, 1, NULL, 0, eo, 1))),
    };
    int64_t dyn = -1;
    ob in[] = {ob_value("x", OB_FLOAT, 1, &dyn)}, out[] = {ob_value("y", OB_FLOAT, -1, NULL)};
    return ob_model(13, ob_graph("folded", nodes, 7, in, 1, out, 1));
}

static void test_if_folded(void) {
    ts_onnx *m = load(folded_model(), "folded.onnx");
    if (!m) return;
    ts_onnx_session *s = ts_onnx_session_new(m, NULL);
    float x3[3] = {1, 2, 3}, x4[4] = {1, -2, 3, 0.5f};
    ts_tensor *a = ts_tensor_from(TS_F32, 1, D3, x3), *b = ts_tensor_from(TS_F32, 1, (int64_t[]){4}, x4);
    float want3[3] = {3, 6, 9}, want4[4] = {1, 4, 9, 0.25f};
    run_check(s, (const ts_tensor *const[]){a}, 1, want3, 3, "then branch, nested else");
    run_check(s, (const ts_tensor *const[]){b}, 1, want4, 4, "else branch");
    /* only the taken branch is in the graph: no Mul in the [3] import */
    ts_graph *g = ts_graph_new();
    CHECK_OK(ts_onnx_import(m, g, (int[]){1}, (const int64_t *const[]){D3}, NULL, NULL));
    int muls = 0;
    for (int i = 0; i < g->nnodes; i++) muls += g->nodes[i].op == TS_OP_MUL;
    CHECK(muls == 0, "%d mul nodes imported from the branches not taken", muls);
    ts_graph_free(g);
    ts_tensor_free(a);
    ts_tensor_free(b);
    ts_onnx_session_free(s);
    ts_onnx_free(m);
}

/* If (sr == 16000) { x + x : [3] } else { ReduceSum(x) : [1] } */
static ob sr_model(void) {
    int64_t k = 16000;
    ob t[] = {ob_node("Add", "sr_add", "x,x", "a", OB_NONE, OB_NONE)};
    ob e[] = {ob_node("ReduceSum", "sr_sum", "x", "b", OB_NONE, OB_NONE)};
    ob to[] = {ob_value("a", OB_FLOAT, -1, NULL)}, eo[] = {ob_value("b", OB_FLOAT, -1, NULL)};
    ob nodes[] = {
        ob_const("k16", OB_INT64, 0, NULL, &k),
        ob_node("Equal", "sr_eq", "sr,k16", "c", OB_NONE, OB_NONE),
        ob_node("If", "sr_if", "c", "y", ob_attr_graph("then_branch", ob_graph("t", t, 1, NULL, 0, to, 1)),
                ob_attr_graph("else_branch", ob_graph("e", e, 1, NULL, 0, eo, 1))),
    };
    ob in[] = {ob_value("x", OB_FLOAT, 1, D3), ob_value("sr", OB_INT64, 0, NULL)};
    ob out[] = {ob_value("y", OB_FLOAT, -1, NULL)};
    return ob_model(13, ob_graph("sr", nodes, 3, in, 2, out, 1));
}

static void test_if_fixed_input(void) {
    ts_onnx *m = load(sr_model(), "sr.onnx");
    if (!m) return;
    float x[3] = {1, 2, 4}, twice[3] = {2, 4, 8}, sum[1] = {7};
    int64_t k16 = 16000, k8 = 8000;
    ts_tensor *xt = ts_tensor_from(TS_F32, 1, D3, x), *sr16 = ts_tensor_from(TS_I64, 0, NULL, &k16),
              *sr8 = ts_tensor_from(TS_I64, 0, NULL, &k8);
    /* the condition unknown: both branches, whose outputs disagree */
    ts_graph *g = ts_graph_new();
    CHECK_STATUS(ts_onnx_import(m, g, NULL, NULL, NULL, NULL), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG("node 'sr_if' (If)", "then_branch gives f32 [3] and else_branch f32 [1]");
    ts_graph_free(g);
    /* fixed at import */
    g = ts_graph_new();
    ts_value y;
    const ts_tensor *vals[2] = {NULL, sr16};
    CHECK_OK(ts_onnx_import(m, g, NULL, NULL, &(ts_onnx_import_opts){.struct_size = sizeof(ts_onnx_import_opts), .values = vals}, &y));
    int64_t sh[TS_MAX_DIMS];
    CHECK(ts_value_shape(g, y, sh) == 1 && sh[0] == 3, "output shape");
    ts_graph_free(g);
    /* a session not told imports again with sr known, one program per value */
    ts_onnx_session *s = ts_onnx_session_new(m, NULL);
    run_check(s, (const ts_tensor *const[]){xt, sr16}, 1, twice, 3, "sr 16000 found by the session");
    run_check(s, (const ts_tensor *const[]){xt, sr8}, 1, sum, 1, "sr 8000 found by the session");
    /* fixed in the session: NULL for it, and another value refused */
    CHECK_OK(ts_onnx_session_fix(s, "sr", sr16));
    run_check(s, (const ts_tensor *const[]){xt, NULL}, 1, twice, 3, "sr fixed to 16000");
    ts_tensor *out[1] = {0};
    CHECK_STATUS(ts_onnx_session_run(s, (const ts_tensor *const[]){xt, sr8}, out), TS_ERR_ARG);
    CHECK_ERRMSG("'sr' is fixed");
    CHECK_STATUS(ts_onnx_session_fix(s, "nope", sr16), TS_ERR_NOT_FOUND);
    CHECK_STATUS(ts_onnx_session_fix(s, "sr", xt), TS_ERR_DTYPE);
    CHECK_OK(ts_onnx_session_fix(s, "sr", NULL));
    run_check(s, (const ts_tensor *const[]){xt, sr8}, 1, sum, 1, "sr fed again");
    ts_onnx_session_free(s);
    ts_tensor_free(xt);
    ts_tensor_free(sr16);
    ts_tensor_free(sr8);
    ts_onnx_free(m);
}

/* If (flag) { If (flag) { x + x } else { x - x } } else { x * x }: flag known only at run time */
static ob select_model(void) {
    ob it[] = {ob_node("Add", "s_add", "x,x", "p", OB_NONE, OB_NONE)};
    ob ie[] = {ob_node("Sub", "s_sub", "x,x", "q", OB_NONE, OB_NONE)};
    ob ito[] = {ob_value("p", OB_FLOAT, -1, NULL)}, ieo[] = {ob_value("q", OB_FLOAT, -1, NULL)};
    ob t[] = {ob_node("If", "s_inner", "flag", "r", ob_attr_graph("then_branch", ob_graph("it", it, 1, NULL, 0, ito, 1)),
                      ob_attr_graph("else_branch", ob_graph("ie", ie, 1, NULL, 0, ieo, 1)))};
    ob e[] = {ob_node("Mul", "s_mul", "x,x", "w", OB_NONE, OB_NONE)};
    ob to[] = {ob_value("r", OB_FLOAT, -1, NULL)}, eo[] = {ob_value("w", OB_FLOAT, -1, NULL)};
    ob nodes[] = {ob_node("If", "s_outer", "flag", "y", ob_attr_graph("then_branch", ob_graph("t", t, 1, NULL, 0, to, 1)),
                          ob_attr_graph("else_branch", ob_graph("e", e, 1, NULL, 0, eo, 1)))};
    ob in[] = {ob_value("x", OB_FLOAT, 1, D3), ob_value("flag", OB_BOOL, 0, NULL)};
    ob out[] = {ob_value("y", OB_FLOAT, -1, NULL)};
    return ob_model(13, ob_graph("select", nodes, 1, in, 2, out, 1));
}

static void test_if_selected(void) {
    ts_onnx *m = load(select_model(), "select.onnx");
    if (!m) return;
    float x[3] = {1, -2, 3}, twice[3] = {2, -4, 6}, sq[3] = {1, 4, 9};
    uint8_t yes = 1, no = 0;
    ts_tensor *xt = ts_tensor_from(TS_F32, 1, D3, x), *ft = ts_tensor_from(TS_U8, 0, NULL, &yes),
              *ff = ts_tensor_from(TS_U8, 0, NULL, &no);
    ts_onnx_session *s = ts_onnx_session_new(m, NULL);
    run_check(s, (const ts_tensor *const[]){xt, ft}, 1, twice, 3, "flag true");
    run_check(s, (const ts_tensor *const[]){xt, ff}, 1, sq, 3, "flag false");
    run_check(s, (const ts_tensor *const[]){xt, ft}, 1, twice, 3, "flag true again (the same program)");
    ts_onnx_session_free(s);
    ts_tensor_free(xt);
    ts_tensor_free(ft);
    ts_tensor_free(ff);
    ts_onnx_free(m);
}

static void test_if_bad(void) {
    uint8_t yes = 1;
    ob t[] = {ob_node("Neg", "b_neg", "x", "n1", OB_NONE, OB_NONE)};
    ob to[] = {ob_value("n1", OB_FLOAT, -1, NULL)};
    ob nodes[] = {ob_const("c", OB_BOOL, 0, NULL, &yes),
                  ob_node("If", "no_else", "c", "y", ob_attr_graph("then_branch", ob_graph("t", t, 1, NULL, 0, to, 1)), OB_NONE)};
    ob in[] = {ob_value("x", OB_FLOAT, 1, D3)}, out[] = {ob_value("y", OB_FLOAT, -1, NULL)};
    ts_onnx *m = load(ob_model(13, ob_graph("bad", nodes, 2, in, 1, out, 1)), "no_else.onnx");
    ts_graph *g = ts_graph_new();
    CHECK_STATUS(ts_onnx_import(m, g, NULL, NULL, NULL, NULL), TS_ERR_IO);
    CHECK_ERRMSG("node 'no_else' (If)", "'else_branch' is missing");
    ts_graph_free(g);
    ts_onnx_free(m);

    ob t2[] = {ob_node("Neg", "b_neg", "x", "n1", OB_NONE, OB_NONE)}, e2[] = {ob_node("Abs", "b_abs", "x", "n2", OB_NONE, OB_NONE)};
    ob to2[] = {ob_value("n1", OB_FLOAT, -1, NULL)};
    ob eo2[] = {ob_value("n2", OB_FLOAT, -1, NULL), ob_value("n1", OB_FLOAT, -1, NULL)};
    ob nodes2[] = {ob_const("c", OB_BOOL, 0, NULL, &yes),
                   ob_node("If", "two_outs", "c", "y", ob_attr_graph("then_branch", ob_graph("t", t2, 1, NULL, 0, to2, 1)),
                           ob_attr_graph("else_branch", ob_graph("e", e2, 1, NULL, 0, eo2, 2)))};
    ob in2[] = {ob_value("x", OB_FLOAT, 1, D3)}, out2[] = {ob_value("y", OB_FLOAT, -1, NULL)};
    m = load(ob_model(13, ob_graph("bad2", nodes2, 2, in2, 1, out2, 1)), "two_outs.onnx");
    g = ts_graph_new();
    CHECK_STATUS(ts_onnx_import(m, g, NULL, NULL, NULL, NULL), TS_ERR_IO);
    CHECK_ERRMSG("node 'two_outs' (If)", "else_branch has 2 outputs; the If has 1");
    ts_graph_free(g);
    ts_onnx_free(m);

    /* the condition unknown and both branches naming their output alike: refused, not clobbered */
    ob t4[] = {ob_node("Neg", "b_neg", "x", "same", OB_NONE, OB_NONE)}, e4[] = {ob_node("Abs", "b_abs", "x", "same", OB_NONE, OB_NONE)};
    ob to4[] = {ob_value("same", OB_FLOAT, -1, NULL)}, eo4[] = {ob_value("same", OB_FLOAT, -1, NULL)};
    ob nodes4[] = {ob_node("If", "same_names", "flag", "y", ob_attr_graph("then_branch", ob_graph("t", t4, 1, NULL, 0, to4, 1)),
                           ob_attr_graph("else_branch", ob_graph("e", e4, 1, NULL, 0, eo4, 1)))};
    ob in4[] = {ob_value("x", OB_FLOAT, 1, D3), ob_value("flag", OB_BOOL, 0, NULL)}, out4[] = {ob_value("y", OB_FLOAT, -1, NULL)};
    m = load(ob_model(13, ob_graph("bad4", nodes4, 1, in4, 2, out4, 1)), "same_names.onnx");
    g = ts_graph_new();
    CHECK_STATUS(ts_onnx_import(m, g, NULL, NULL, NULL, NULL), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG("node 'same_names' (If)", "both branches name output 0 'same'");
    ts_graph_free(g);
    ts_onnx_free(m);

    /* an op the importer lacks inside a branch is listed at load */
    ob t3[] = {ob_node("NoSuchOp", "deep_bad", "x", "n1", OB_NONE, OB_NONE)}, e3[] = {ob_node("Abs", "b_abs", "x", "n2", OB_NONE, OB_NONE)};
    ob to3[] = {ob_value("n1", OB_FLOAT, -1, NULL)}, eo3[] = {ob_value("n2", OB_FLOAT, -1, NULL)};
    ob nodes3[] = {ob_const("c", OB_BOOL, 0, NULL, &yes),
                   ob_node("If", "if3", "c", "y", ob_attr_graph("then_branch", ob_graph("t", t3, 1, NULL, 0, to3, 1)),
                           ob_attr_graph("else_branch", ob_graph("e", e3, 1, NULL, 0, eo3, 1)))};
    ob in3[] = {ob_value("x", OB_FLOAT, 1, D3)}, out3[] = {ob_value("y", OB_FLOAT, -1, NULL)};
    ob mb = ob_model(13, ob_graph("bad3", nodes3, 2, in3, 1, out3, 1));
    m = ts_onnx_load_bytes(mb.b, mb.n, "deep_bad.onnx");
    free(mb.b);
    CHECK(!m && ts_last_status() == TS_ERR_UNSUPPORTED, "loaded");
    CHECK_ERRMSG("node 'deep_bad' (NoSuchOp): op not supported");
    ts_onnx_free(m);
}

/* stateN = state + x; y = stateN * stateN */
static ob state_model(void) {
    int64_t d[2] = {1, 4};
    ob nodes[] = {ob_node("Add", "acc", "state,x", "stateN", OB_NONE, OB_NONE),
                  ob_node("Mul", "sq", "stateN,stateN", "y", OB_NONE, OB_NONE)};
    ob in[] = {ob_value("x", OB_FLOAT, 2, d), ob_value("state", OB_FLOAT, 2, d)};
    ob out[] = {ob_value("y", OB_FLOAT, 2, d), ob_value("stateN", OB_FLOAT, 2, d)};
    return ob_model(13, ob_graph("state", nodes, 2, in, 2, out, 2));
}

static void test_state_binding(void) {
    ts_onnx *m = load(state_model(), "state.onnx");
    if (!m) return;
    ts_onnx_session *bound = ts_onnx_session_new(m, NULL), *manual = ts_onnx_session_new(m, NULL);
    CHECK_OK(ts_onnx_session_bind(bound, "stateN", "state"));
    CHECK_STATUS(ts_onnx_session_bind(bound, "nope", "state"), TS_ERR_NOT_FOUND);
    tu_rng r = tu_rng_seed(7);
    ts_tensor *state = ts_tensor_new(TS_F32, 2, (int64_t[]){1, 4});
    for (int pass = 0; pass < 2; pass++) {
        memset(ts_tensor_data(state), 0, 16);
        for (int k = 0; k < 6; k++) {
            ts_tensor *x = tu_rand_tensor(&r, 2, (int64_t[]){1, 4}, -1, 1), *ob_[2] = {0}, *om[2] = {0};
            CHECK_OK(ts_onnx_session_run(bound, (const ts_tensor *const[]){x, NULL}, ob_));
            CHECK_OK(ts_onnx_session_run(manual, (const ts_tensor *const[]){x, state}, om));
            for (int j = 0; j < 2 && ob_[j] && om[j]; j++)
                CHECK(tu_bitwise_equal(ob_[j], om[j]), "pass %d run %d output %d differs", pass, k, j);
            if (om[1]) memcpy(ts_tensor_data(state), ts_tensor_data(om[1]), 16);
            for (int j = 0; j < 2; j++) ts_tensor_free(ob_[j]), ts_tensor_free(om[j]);
            ts_tensor_free(x);
        }
        ts_onnx_session_reset(bound); /* the second pass starts from zeros again */
    }
    ts_tensor_free(state);
    ts_onnx_session_free(bound);
    ts_onnx_session_free(manual);
    ts_onnx_free(m);
}

/* ts_program_feed_value: y = s + 1 fed back into s on the device, three runs give s0 + 3. */
static void test_program_feed_value(void) {
    ts_graph *g = ts_graph_new();
    int64_t two = 2;
    ts_value s = ts_input(g, "s", TS_F32, 1, &two), u = ts_input(g, "u", TS_F32, 1, (int64_t[]){3});
    ts_name(g, ts_add(g, s, ts_scalar(g, 1)), "y");
    ts_name(g, ts_add(g, u, ts_scalar(g, 1)), "z");
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 2, .fetches = (const char *[]){"y", "z"}, .inference = 1});
    ts_graph_free(g);
    CHECK(p != NULL, "%s", ts_last_error());
    if (!p) return;
    float s0[2] = {0.5f, -2}, u0[3] = {0};
    ts_tensor *st = ts_tensor_from(TS_F32, 1, &two, s0), *ut = ts_tensor_from(TS_F32, 1, (int64_t[]){3}, u0);
    CHECK_OK(ts_program_feed(p, "s", st));
    CHECK_OK(ts_program_feed(p, "u", ut));
    for (int r = 0; r < 3; r++) {
        CHECK_OK(ts_program_run(p));
        if (r < 2) CHECK_OK(ts_program_feed_value(p, "s", "y"));
    }
    ts_tensor *y = TU_FETCH(p, "y");
    CHECK(y && tu_f32(y)[0] == 3.5f && tu_f32(y)[1] == 1, "y = %g %g", y ? tu_f32(y)[0] : 0, y ? tu_f32(y)[1] : 0);
    CHECK_STATUS(ts_program_feed_value(p, "s", "z"), TS_ERR_SHAPE);
    CHECK_ERRMSG("input 's' is f32 [2] but 'z' is f32 [3]");
    CHECK_STATUS(ts_program_feed_value(p, "y", "y"), TS_ERR_NOT_FOUND);
    CHECK_STATUS(ts_program_feed_value(p, "s", "nope"), TS_ERR_NOT_FOUND);
    ts_tensor_free(y);
    ts_tensor_free(st);
    ts_tensor_free(ut);
    ts_program_free(p);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_if_folded);
    RUN(test_if_fixed_input);
    RUN(test_if_selected);
    RUN(test_if_bad);
    RUN(test_state_binding);
    RUN(test_program_feed_value);
    return tu_finish("test_onnx_control");
}
