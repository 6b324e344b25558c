/*
 * test_memplan.c — the memory planner and the memory report (ts_program_memory).
 *
 *  - BERT-Base-sized training graph (12 layers, hidden 768, 12 heads, FFN 3072, seq 128,
 *    batch 8, f32; input x [8, 128, 768] without embeddings; loss = mean of the output):
 *    compile only, print intermediates_total, the arena and their ratio, CHECK
 *    arena <= 0.60 * intermediates_total, and CHECK params / grads against the parameter count.
 *  - Small graphs whose plan can be predicted exactly from the planner's documented rules
 *    (64-byte-aligned sizes, in-place reuse of a dying input 0 of equal size, lifetimes that
 *    do not overlap may share bytes): chain, diamond, growing and shrinking tensors.
 *  - params / grads / optimizer_state of SGD (momentum) and AdamW programs.
 *  - A small training program run twice gives bitwise identical outputs and gradients, a warm
 *    step allocates no tensor-sized heap block, and the report does not change.
 *  - Fusion of act(matmul(x, w) + b), act = gelu erf / gelu tanh / relu (fuse.c rules 1 and 4):
 *    forward-only, the program is one matmul node carrying the activation (attr i[2]) and its
 *    output, the unfused program's and the op's reference kernel's match a double-precision
 *    reference within 1e-5 * max(1, |ref|); the reference kernel's gradient refuses such a node
 *    and the shape rule refuses an unknown activation code. With ts_backward the activation is
 *    not fused (its backward reads the product) and loss and gradients match the unfused
 *    program's; the same graph compiled for inference fuses.
 *  - Binary ops by a one-element constant as scale links of a chain (fuse.c rule 11), and
 *    hard_swish as ONNX exports spell it made one node (rule 12), bit for bit.
 */
#define TU_ALLOC_COUNTER
#include "test_util.h"
#include "encoder.h"
#include "ops/op.h"
#include "runtime/program.h"

static size_t a64(size_t n) { return (n + 63) & ~(size_t)63; }

static void print_mem(const char *what, const ts_memory *m) {
    printf("  %s: params %zu, grads %zu, optimizer_state %zu, arena %zu, workspace %zu, "
           "intermediates_total %zu, nodes %d, fused %d\n",
           what, m->params, m->grads, m->optimizer_state, m->activations, m->workspace,
           m->intermediates_total, m->nodes, m->fused);
}

/* ------------------------------------------------------------------ BERT-Base */

static void test_bert_base(void) {
    enc_cfg c = {8, 128, 768, 12, 3072, 0.1f, 1e-12f, ts_init_zeros(), 0};
    const int layers = 12;
    double t0 = tu_now();
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(8, 128, 768));
    ts_value pad = ts_input(g, "attention_mask", TS_F32, DIMS(8, 128));
    ts_value mask = enc_additive_mask(g, pad, c.B, c.T);
    ts_value out = enc_stack(g, &c, layers, x, mask);
    ts_value loss = ts_name(g, ts_reduce_mean(g, out, 0, NULL, 0), "loss");
    CHECK(ts_graph_status(g) == TS_OK, "building BERT-Base: %s", ts_last_error());
    CHECK_OK(ts_backward(g, loss));
    double t1 = tu_now();
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    double t2 = tu_now();
    CHECK(p != NULL, "compile BERT-Base: %s", ts_last_error());
    if (p) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(p, &m));
        print_mem("BERT-Base train", &m);
        double ratio = m.intermediates_total ? (double)m.activations / (double)m.intermediates_total : 1.0;
        printf("  BERT-Base: intermediates_total %.1f MiB, arena %.1f MiB, ratio %.3f "
               "(build %.2fs, compile %.2fs)\n",
               m.intermediates_total / 1048576.0, m.activations / 1048576.0, ratio, t1 - t0, t2 - t1);
        CHECK(m.activations > 0 && m.intermediates_total > 0, "empty memory report");
        CHECK(m.activations <= 0.60 * (double)m.intermediates_total,
              "arena %zu is more than 0.60 of intermediates_total %zu (ratio %.3f)", m.activations,
              m.intermediates_total, ratio);
        /* per layer: 4 C*C + 2 C*F weights, 4 C + F + C biases, 2 LayerNorms of 2 C */
        size_t C = 768, F = 3072;
        size_t per_layer = 4 * C * C + 2 * C * F + 4 * C + F + C + 4 * C;
        size_t nparam = per_layer * (size_t)layers;
        CHECK(ts_program_num_params(p) == 16 * layers, "%d parameters, expected %d", ts_program_num_params(p),
              16 * layers);
        CHECK(m.params == nparam * 4, "params %zu bytes, expected %zu (%zu floats)", m.params, nparam * 4, nparam);
        CHECK(m.grads == nparam * 4, "grads %zu bytes, expected %zu", m.grads, nparam * 4);
        CHECK(m.optimizer_state == 0, "optimizer_state %zu without an optimizer", m.optimizer_state);
        /* a lower bound of any plan: the loss's inputs live together at the end of the forward:
         * at least the output [8,128,768] f32 */
        CHECK(m.activations >= (size_t)8 * 128 * 768 * 4, "arena %zu smaller than one activation", m.activations);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ predictable plans */

static ts_program *compile_small(ts_graph *g, int no_fusion) {
    CHECK(ts_graph_status(g) == TS_OK, "build: %s", ts_last_error());
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("out"), .inference = 1, .no_fusion = no_fusion});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    return p;
}

/* out = scale(sigmoid(tanh(exp(x)))), x [1000] f32 (an input, not in the arena). exp reads the
 * input, so it gets a buffer; each later op's input 0 dies at it and has its size: in place.
 * arena = one 4032-byte buffer (4000 rounded up to 64); intermediates_total = 4 of them. */
static void test_plan_chain(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(1000));
    ts_value y = ts_scale(g, ts_sigmoid(g, ts_tanh(g, ts_exp(g, x))), 2.f, 1.f);
    ts_name(g, y, "out");
    ts_program *p = compile_small(g, 1);
    if (p) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(p, &m));
        print_mem("chain of 4", &m);
        CHECK(m.activations == a64(4000), "chain arena %zu, expected %zu", m.activations, a64(4000));
        CHECK(m.intermediates_total == 4 * a64(4000), "chain intermediates_total %zu, expected %zu",
              m.intermediates_total, 4 * a64(4000));
        CHECK(m.nodes == 4 && m.fused == 0, "nodes %d fused %d, expected 4 and 0", m.nodes, m.fused);
        CHECK(m.params == 0 && m.grads == 0 && m.optimizer_state == 0, "no parameters, yet params %zu grads %zu",
              m.params, m.grads);
        /* and it computes the right thing */
        float xv[1000];
        for (int i = 0; i < 1000; i++) xv[i] = (float)(i - 500) / 250.f;
        ts_tensor *xt = ts_tensor_from(TS_F32, DIMS(1000), xv);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        ts_tensor *o = TU_FETCH(p, "out");
        double err = 0;
        for (int i = 0; o && i < 1000; i++) {
            double r = 2.0 / (1.0 + exp(-tanh(exp((double)xv[i])))) + 1.0;
            err = fmax(err, fabs(tu_f32(o)[i] - r));
        }
        CHECK(o && err < 1e-5, "in-place chain computes wrong values (max err %.3e)", err);
        ts_tensor_free(o);
        ts_tensor_free(xt);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* a = exp(x); b = tanh(a); out = a + b. a is still needed by the add when tanh runs, so b needs
 * a second buffer; the add's input 0 (a) dies there: the output takes a's buffer. */
static void test_plan_diamond(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(1000));
    ts_value a = ts_exp(g, x);
    ts_name(g, ts_add(g, a, ts_tanh(g, a)), "out");
    ts_program *p = compile_small(g, 1);
    if (p) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(p, &m));
        print_mem("diamond", &m);
        CHECK(m.activations == 2 * a64(4000), "diamond arena %zu, expected %zu", m.activations, 2 * a64(4000));
        CHECK(m.intermediates_total == 3 * a64(4000), "diamond intermediates_total %zu, expected %zu",
              m.intermediates_total, 3 * a64(4000));
        float xv[1000];
        for (int i = 0; i < 1000; i++) xv[i] = (float)(i % 37) / 20.f - 0.9f;
        ts_tensor *xt = ts_tensor_from(TS_F32, DIMS(1000), xv);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        ts_tensor *o = TU_FETCH(p, "out");
        double err = 0;
        for (int i = 0; o && i < 1000; i++) {
            double e = exp((double)xv[i]);
            err = fmax(err, fabs(tu_f32(o)[i] - (e + tanh(e))) / (e + 1));
        }
        CHECK(o && err < 1e-5, "diamond computes wrong values (max rel err %.3e): a buffer was reused too early", err);
        ts_tensor_free(o);
        ts_tensor_free(xt);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* a = exp(x) [1000]; e = expand(a, [2, 1000]); out = tanh(e) (in place on e).
 * a and e are both live at the expand: arena = 4032 + 8000, total = 4032 + 8000 + 8000. */
static void test_plan_grow(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(1000));
    ts_value e = ts_expand(g, ts_exp(g, x), DIMS(2, 1000));
    ts_name(g, ts_tanh(g, e), "out");
    ts_program *p = compile_small(g, 1);
    if (p) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(p, &m));
        print_mem("grow", &m);
        CHECK(m.activations == a64(4000) + a64(8000), "grow arena %zu, expected %zu", m.activations,
              a64(4000) + a64(8000));
        CHECK(m.intermediates_total == a64(4000) + 2 * a64(8000), "grow intermediates_total %zu, expected %zu",
              m.intermediates_total, a64(4000) + 2 * a64(8000));
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* a = exp(x) [1000]; b = expand(a, [2,1000]); c = reduce_sum(b, {0}) [1000];
 * out = expand(c, [2,1000]). Lifetimes a [0,1], b [1,2], c [2,3], out [3,end]: at every step
 * one 4000-byte and one 8000-byte tensor are live, and the two big ones never overlap in time,
 * nor do the two small ones: arena = 4032 + 8000 (not the 24064 total). */
static void test_plan_reuse(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(1000));
    ts_value b = ts_expand(g, ts_exp(g, x), DIMS(2, 1000));
    ts_value c = ts_reduce_sum(g, b, 1, (int[]){0}, 0);
    ts_name(g, ts_expand(g, c, DIMS(2, 1000)), "out");
    ts_program *p = compile_small(g, 1);
    if (p) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(p, &m));
        print_mem("reuse", &m);
        CHECK(m.intermediates_total == 2 * a64(4000) + 2 * a64(8000), "reuse intermediates_total %zu, expected %zu",
              m.intermediates_total, 2 * a64(4000) + 2 * a64(8000));
        CHECK(m.activations == a64(4000) + a64(8000), "reuse arena %zu, expected %zu", m.activations,
              a64(4000) + a64(8000));
        float xv[1000];
        for (int i = 0; i < 1000; i++) xv[i] = (float)(i % 11) * 0.1f;
        ts_tensor *xt = ts_tensor_from(TS_F32, DIMS(1000), xv);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        ts_tensor *o = TU_FETCH(p, "out");
        double err = 0;
        for (int i = 0; o && i < 2000; i++) {
            double r = 2 * exp((double)xv[i % 1000]);
            err = fmax(err, fabs(tu_f32(o)[i] - r) / r);
        }
        CHECK(o && err < 1e-6, "reuse plan computes wrong values (max rel err %.3e)", err);
        ts_tensor_free(o);
        ts_tensor_free(xt);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

/* A one-element f32 constant of the given shape. */
static ts_value scalar_const(ts_graph *g, float v, int ndim) {
    ts_tensor *t = ts_tensor_new(TS_F32, ndim, (int64_t[]){1, 1, 1, 1});
    *(float *)ts_tensor_data(t) = v;
    ts_value c = ts_constant(g, t);
    ts_tensor_free(t);
    return c;
}

/* fuse.c rule 11: mul, add, sub (either side) and div by a power of two, of x by a one-element
 * constant, become scale nodes that rule 3 chains: relu((-0.75 - (2.5 x + -0.75)) / 4) / 6 is two
 * nodes (a fused_elementwise of four steps, then the relu: a chain holds four) plus the div by 6
 * (1/6 inexact: left alone); out2 = x * -3 is one scale. Both outputs equal the unfused program's
 * bit for bit, zeros' signs included (x holds +0 and -0). Without the rule: 7 nodes. */
static void test_scalar_ops_to_scale(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(3, 1000));
    ts_value t = ts_add(g, ts_mul(g, scalar_const(g, 2.5f, 1), x), scalar_const(g, -0.75f, 2));
    t = ts_div(g, ts_sub(g, scalar_const(g, -0.75f, 1), t), scalar_const(g, 4.f, 1));
    ts_name(g, ts_div(g, ts_relu(g, t), scalar_const(g, 6.f, 1)), "out");
    ts_name(g, ts_mul(g, x, scalar_const(g, -3.f, 1)), "out2");
    CHECK(ts_graph_status(g) == TS_OK, "build: %s", ts_last_error());
    ts_program *p[2];
    for (int k = 0; k < 2; k++) {
        p[k] = ts_compile(g, &(ts_compile_opts){TU_FETCHES("out", "out2"), .inference = 1, .no_fusion = k});
        CHECK(p[k] != NULL, "compile: %s", ts_last_error());
    }
    tu_rng r = tu_rng_seed(5);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(3, 1000), -2, 2);
    tu_f32(xt)[0] = 0.f, tu_f32(xt)[1] = -0.f, tu_f32(xt)[2] = 0.3f; /* 2.5 x - 0.75 = 0 at 0.3 */
    ts_tensor *o[2][2] = {{NULL, NULL}, {NULL, NULL}};
    for (int k = 0; k < 2 && p[0] && p[1]; k++) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(p[k], &m));
        if (k == 0)
            CHECK(m.nodes == 4 && m.fused == 3, "fused: nodes %d, fused %d (expected 4 and 3)", m.nodes, m.fused);
        else CHECK(m.nodes == 7 && m.fused == 0, "unfused: nodes %d, fused %d (expected 7 and 0)", m.nodes, m.fused);
        CHECK_OK(ts_program_feed(p[k], "x", xt));
        CHECK_OK(ts_program_run(p[k]));
        o[k][0] = TU_FETCH(p[k], "out"), o[k][1] = TU_FETCH(p[k], "out2");
    }
    for (int j = 0; j < 2; j++)
        CHECK(o[0][j] && o[1][j] && !memcmp(tu_f32(o[0][j]), tu_f32(o[1][j]), sizeof(float) * 3000),
              "%s: the fused program's bits differ from the unfused one's", j ? "out2" : "out");
    CHECK(o[0][1] && signbit(tu_f32(o[0][1])[0]) && !signbit(tu_f32(o[0][1])[1]), "x * -3 lost a zero's sign");
    for (int k = 0; k < 2; k++) ts_tensor_free(o[k][0]), ts_tensor_free(o[k][1]), ts_program_free(p[k]);
    ts_tensor_free(xt);
    ts_graph_free(g);
}

/* fuse.c rule 12: hard_swish as ONNX exports spell it, (x clip(x + 3, 0, 6)) / 6, becomes one
 * hard_swish node with the same bits as the four ops and as ts_hard_swish; with the mul's operands
 * swapped too; a clip to [0, 5] is left as it is (4 nodes, the + 3 a scale). x spans the clip's
 * three pieces and the points -3 and 3. */
static void test_hard_swish_pattern(void) {
    for (int variant = 0; variant < 3; variant++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 500));
        ts_value v = ts_clip(g, ts_add(g, x, scalar_const(g, 3.f, 1)), 0.f, variant == 2 ? 5.f : 6.f);
        ts_value y = ts_div(g, variant == 1 ? ts_mul(g, v, x) : ts_mul(g, x, v), scalar_const(g, 6.f, 1));
        ts_name(g, y, "out");
        ts_name(g, ts_hard_swish(g, ts_input(g, "x2", TS_F32, DIMS(2, 500))), "op");
        CHECK(ts_graph_status(g) == TS_OK, "build: %s", ts_last_error());
        ts_program *p[2];
        for (int k = 0; k < 2; k++) {
            p[k] = ts_compile(g, &(ts_compile_opts){TU_FETCHES("out", "op"), .inference = 1, .no_fusion = k});
            CHECK(p[k] != NULL, "compile: %s", ts_last_error());
        }
        ts_tensor *xt = ts_tensor_new(TS_F32, DIMS(2, 500));
        for (int i = 0; i < 1000; i++) tu_f32(xt)[i] = -5.f + 10.f * (float)i / 999.f;
        tu_f32(xt)[0] = -3.f, tu_f32(xt)[1] = 3.f, tu_f32(xt)[2] = -0.f;
        ts_tensor *o[2] = {NULL, NULL}, *op = NULL;
        for (int k = 0; k < 2 && p[0] && p[1]; k++) {
            ts_memory m = {.struct_size = sizeof m};
            CHECK_OK(ts_program_memory(p[k], &m));
            int want = k || variant == 2 ? 4 : 1; /* + the hard_swish op */
            CHECK(m.nodes == want + 1, "variant %d, %s: %d nodes, expected %d", variant, k ? "unfused" : "fused",
                  m.nodes, want + 1);
            CHECK_OK(ts_program_feed(p[k], "x", xt));
            CHECK_OK(ts_program_feed(p[k], "x2", xt));
            CHECK_OK(ts_program_run(p[k]));
            o[k] = TU_FETCH(p[k], "out");
            if (k == 0) op = TU_FETCH(p[k], "op");
        }
        CHECK(o[0] && o[1] && !memcmp(tu_f32(o[0]), tu_f32(o[1]), sizeof(float) * 1000),
              "variant %d: the fused program's bits differ from the unfused one's", variant);
        if (variant < 2)
            CHECK(o[1] && op && !memcmp(tu_f32(o[1]), tu_f32(op), sizeof(float) * 1000),
                  "variant %d: the four ops' bits differ from ts_hard_swish's", variant);
        ts_tensor_free(o[0]), ts_tensor_free(o[1]), ts_tensor_free(op), ts_tensor_free(xt);
        ts_program_free(p[0]), ts_program_free(p[1]);
        ts_graph_free(g);
    }
}

/* With fusion on, the elementwise chain loses nodes (fused counts them) and gives the same
 * values as the unfused program. */
static void test_plan_fusion_report(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(3, 1000));
    ts_value y = ts_scale(g, ts_sigmoid(g, ts_tanh(g, ts_exp(g, x))), 2.f, 1.f);
    ts_name(g, y, "out");
    ts_program *pf = compile_small(g, 0), *pn = compile_small(g, 1);
    if (pf && pn) {
        ts_memory mf = {.struct_size = sizeof mf}, mn = {.struct_size = sizeof mn};
        CHECK_OK(ts_program_memory(pf, &mf));
        CHECK_OK(ts_program_memory(pn, &mn));
        print_mem("chain fused", &mf);
        CHECK(mf.fused >= 1 && mf.nodes + mf.fused == 4, "fused chain: nodes %d + fused %d should be 4, fused >= 1",
              mf.nodes, mf.fused);
        CHECK(mf.activations <= mn.activations, "fusion grew the arena: %zu > %zu", mf.activations, mn.activations);
        tu_rng r = tu_rng_seed(3);
        ts_tensor *xt = tu_rand_tensor(&r, DIMS(3, 1000), -2, 2);
        CHECK_OK(ts_program_feed(pf, "x", xt));
        CHECK_OK(ts_program_feed(pn, "x", xt));
        CHECK_OK(ts_program_run(pf));
        CHECK_OK(ts_program_run(pn));
        ts_tensor *of = TU_FETCH(pf, "out"), *on = TU_FETCH(pn, "out");
        if (of && on) {
            double d = tu_max_abs_diff_f(tu_f32(of), tu_f32(on), 3000);
            CHECK(d <= 1e-6, "fused and unfused chains differ by %.3e", d);
        }
        ts_tensor_free(of);
        ts_tensor_free(on);
        ts_tensor_free(xt);
    }
    ts_program_free(pf);
    ts_program_free(pn);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ matmul + activation fusion */

enum { FA_B = 2, FA_T = 24, FA_K = 40, FA_N = 56 };
static const char *const fa_name[4] = {"none", "gelu erf", "gelu tanh", "relu"};

static ts_value fa_act(ts_graph *g, int act, ts_value v) {
    return act == 3 ? ts_relu(g, v) : ts_gelu(g, v, act == 2);
}
static double fa_ref_act(int act, double v) {
    if (act == 3) return v > 0 ? v : 0;
    if (act == 2) return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    return 0.5 * v * (1 + erf(v / sqrt(2)));
}

/* Scheduled matmul nodes of p with activation code act (any nonzero code when act < 0). */
static int fa_count(const ts_program *p, int act) {
    int c = 0;
    for (int i = 0; i < p->one->nsched; i++) {
        const ts_node *n = &p->one->g->nodes[p->one->sched[i]];
        if (n->op == TS_OP_MATMUL && (act < 0 ? n->attr.i[2] != 0 : n->attr.i[2] == act)) c++;
    }
    return c;
}

/* max over elements of |y - ref| / max(1, |ref|), ref = act(alpha x @ w + b) in double. */
static double fa_err(int act, float alpha, const float *x, const float *w, const float *b, const float *y) {
    double worst = 0;
    for (int r = 0; r < FA_B * FA_T; r++)
        for (int n = 0; n < FA_N; n++) {
            double v = 0;
            for (int k = 0; k < FA_K; k++) v += (double)x[r * FA_K + k] * w[k * FA_N + n];
            v = alpha * v + b[n];
            double ref = fa_ref_act(act, v), e = fabs(y[r * FA_N + n] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
            if (!(e <= worst)) worst = e;
        }
    return worst;
}

/* act(alpha * x @ w + b); alpha != 1 goes in as scale(matmul), which rule 2 folds into the matmul
 * (oneDNN then takes the bias as a binary post-op before the activation's). */
static void fuse_act_forward(int act, float alpha) {
    printf("  %s, alpha %g:\n", fa_name[act], alpha);
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(FA_B, FA_T, FA_K));
    ts_value w = ts_input(g, "w", TS_F32, DIMS(FA_K, FA_N));
    ts_value b = ts_input(g, "b", TS_F32, DIMS(FA_N));
    ts_value mm = ts_matmul(g, x, w, 0, 0);
    if (alpha != 1.f) mm = ts_scale(g, mm, alpha, 0.f);
    ts_name(g, fa_act(g, act, ts_add(g, mm, b)), "out");
    int nn = alpha != 1.f ? 4 : 3;
    ts_program *pf = compile_small(g, 0), *pn = compile_small(g, 1);
    tu_rng r = tu_rng_seed(11);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(FA_B, FA_T, FA_K), -1, 1), *wt = tu_rand_tensor(&r, DIMS(FA_K, FA_N), -0.5, 0.5),
              *bt = tu_rand_tensor(&r, DIMS(FA_N), -1, 1);
    if (pf && pn) {
        ts_memory mf = {.struct_size = sizeof mf}, mn = {.struct_size = sizeof mn};
        CHECK_OK(ts_program_memory(pf, &mf));
        CHECK_OK(ts_program_memory(pn, &mn));
        CHECK(mn.nodes == nn && mn.fused == 0, "unfused: nodes %d fused %d, expected %d and 0", mn.nodes, mn.fused, nn);
        CHECK(mf.nodes == 1 && mf.fused == nn - 1, "fused: nodes %d fused %d, expected 1 and %d", mf.nodes, mf.fused,
              nn - 1);
        CHECK(fa_count(pf, act) == 1, "the fused program has no matmul with activation %d", act);
        ts_program *ps[2] = {pf, pn};
        ts_tensor *o[2] = {0};
        for (int k = 0; k < 2; k++) {
            CHECK_OK(ts_program_feed(ps[k], "x", xt));
            CHECK_OK(ts_program_feed(ps[k], "w", wt));
            CHECK_OK(ts_program_feed(ps[k], "b", bt));
            CHECK_OK(ts_program_run(ps[k]));
            o[k] = TU_FETCH(ps[k], "out");
        }
        if (o[0] && o[1]) {
            double ef = fa_err(act, alpha, tu_f32(xt), tu_f32(wt), tu_f32(bt), tu_f32(o[0]));
            double en = fa_err(act, alpha, tu_f32(xt), tu_f32(wt), tu_f32(bt), tu_f32(o[1]));
            double d = tu_max_abs_diff_f(tu_f32(o[0]), tu_f32(o[1]), FA_B * FA_T * FA_N);
            printf("    fused err %.2e, unfused err %.2e (vs double), fused - unfused max abs %.2e\n", ef, en, d);
            CHECK(ef <= 1e-5, "fused %s(matmul + b) is off the reference by %.3e", fa_name[act], ef);
            CHECK(en <= 1e-5, "unfused %s(matmul + b) is off the reference by %.3e", fa_name[act], en);
        }
        ts_tensor_free(o[0]);
        ts_tensor_free(o[1]);
    }
    ts_program_free(pf);
    ts_program_free(pn);
    ts_graph_free(g);

    /* the op's reference kernel (the backend's fallback) on a node carrying the activation */
    g = ts_graph_new();
    int in[3] = {ts_input(g, "x", TS_F32, DIMS(FA_B, FA_T, FA_K)), ts_input(g, "w", TS_F32, DIMS(FA_K, FA_N)),
                 ts_input(g, "b", TS_F32, DIMS(FA_N))};
    ts_attrs at = {0};
    at.i[2] = act;
    at.ni = 3;
    at.f[0] = alpha == 1.f ? 0.f : alpha;
    ts_value y = ts_node_add(g, TS_OP_MATMUL, 3, in, &at, NULL);
    CHECK(y != TS_NONE, "matmul with activation %d refused: %s", act, ts_last_error());
    if (y != TS_NONE) {
        const ts_node *n = &g->nodes[g->vals[y].node];
        float *out = calloc(FA_B * FA_T * FA_N, sizeof(float));
        ts_kargs k = {.g = g, .node = n, .in = {tu_f32(xt), tu_f32(wt), tu_f32(bt)}, .out = {out}};
        CHECK_OK(ts_op_get(TS_OP_MATMUL)->kernel(&k));
        double e = fa_err(act, alpha, tu_f32(xt), tu_f32(wt), tu_f32(bt), out);
        printf("    reference kernel err %.2e\n", e);
        CHECK(e <= 1e-5, "reference kernel %s(matmul + b) is off by %.3e", fa_name[act], e);
        free(out);
        ts_value gy = ts_input(g, "gy", TS_F32, DIMS(FA_B, FA_T, FA_N)), gin[3] = {TS_NONE, TS_NONE, TS_NONE};
        n = &g->nodes[g->vals[y].node];
        ts_status st = ts_op_get(TS_OP_MATMUL)->grad(g, n, &gy, gin);
        CHECK(st == TS_ERR_UNSUPPORTED && strstr(ts_last_error(), "fused activation"),
              "gradient of an activated matmul: %s, %s", ts_status_name(st), ts_last_error());
    }
    ts_graph_free(g);
    if (act == 3) { /* an unknown code is refused by the shape rule */
        g = ts_graph_new();
        int in2[2] = {ts_input(g, "x", TS_F32, DIMS(3, 4)), ts_input(g, "w", TS_F32, DIMS(4, 5))};
        at.i[2] = 7;
        CHECK(ts_node_add(g, TS_OP_MATMUL, 2, in2, &at, NULL) == TS_NONE && strstr(ts_last_error(), "i[2] = 7"),
              "activation code 7 accepted: %s", ts_last_error());
        ts_graph_free(g);
    }
    ts_tensor_free(xt);
    ts_tensor_free(wt);
    ts_tensor_free(bt);
}

/* Training: loss = mean(act(x @ w + b)^2), w and b parameters; recompute: the forward in a
 * recompute segment, whose originals no backward node reads (fuse.c leaves them unfused). */
static void fuse_act_training(int act, int recompute) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 5);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(FA_B, FA_T, FA_K));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(FA_K, FA_N), ts_init_normal(0.3f));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(FA_N), ts_init_normal(0.5f));
    if (recompute) CHECK_OK(ts_graph_recompute_begin(g));
    ts_value h = ts_name(g, fa_act(g, act, ts_add(g, ts_matmul(g, x, w, 0, 0), b)), "out");
    if (recompute) CHECK_OK(ts_graph_recompute_end(g));
    ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, h, h), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_program *pf = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "w@GRAD", "b@GRAD")});
    ts_program *pn = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "w@GRAD", "b@GRAD"), .no_fusion = 1});
    ts_program *pi = ts_compile(g, &(ts_compile_opts){TU_FETCHES("out"), .inference = 1});
    CHECK(pf && pn && pi, "compile: %s", ts_last_error());
    if (pf && pn && pi) {
        CHECK(fa_count(pf, -1) == 0, "%s fused into a matmul of a training program", fa_name[act]);
        CHECK(fa_count(pi, act) == 1, "%s not fused in the inference program of a training graph", fa_name[act]);
        tu_rng r = tu_rng_seed(12);
        ts_tensor *xt = tu_rand_tensor(&r, DIMS(FA_B, FA_T, FA_K), -1, 1);
        const char *names[3] = {"loss", "w@GRAD", "b@GRAD"};
        ts_tensor *of[3] = {0}, *on[3] = {0};
        CHECK_OK(ts_program_feed(pf, "x", xt));
        CHECK_OK(ts_program_feed(pn, "x", xt));
        CHECK_OK(ts_program_run(pf));
        CHECK_OK(ts_program_run(pn));
        for (int k = 0; k < 3; k++) {
            of[k] = TU_FETCH(pf, names[k]);
            on[k] = TU_FETCH(pn, names[k]);
            if (!of[k] || !on[k]) continue;
            int64_t cnt = ts_tensor_numel(on[k]);
            double d = tu_max_abs_diff_f(tu_f32(of[k]), tu_f32(on[k]), cnt), mx = 0;
            for (int64_t j = 0; j < cnt; j++) mx = fmax(mx, fabs(tu_f32(on[k])[j]));
            printf("    training %s%s: %s fused - unfused max abs %.2e (max |value| %.2e)\n", fa_name[act],
                   recompute ? " (recompute)" : "", names[k], d, mx);
            CHECK(d <= 1e-5 * fmax(mx, 1e-3), "training %s: %s differs by %.3e", fa_name[act], names[k], d);
        }
        for (int k = 0; k < 3; k++) {
            ts_tensor_free(of[k]);
            ts_tensor_free(on[k]);
        }
        ts_tensor_free(xt);
    }
    ts_program_free(pf);
    ts_program_free(pn);
    ts_program_free(pi);
    ts_graph_free(g);
}

static void test_fuse_matmul_act(void) {
    for (int act = 1; act <= 3; act++) {
        fuse_act_forward(act, 1.f);
        fuse_act_training(act, 0);
    }
    fuse_act_training(1, 1);
    fuse_act_forward(1, 0.5f);
}

/* ------------------------------------------------------------------ what an activation's backward keeps */

/* unary_grad reads the activation's input x (gelu, relu, log) or its output y (sqrt, exp, tanh,
 * sigmoid), never both, so the other can be freed after the forward (BERT under autocast: GELU's
 * f32 output lives only until its cast to bf16; BERT-Base's bf16 training arena 952 -> 808 MiB). */
static void test_unary_grad_reads(void) {
    static const struct { int op, tanh_form, reads_x; const char *name; } ops[] = {
        {TS_OP_SQRT, 0, 0, "sqrt"}, {TS_OP_EXP, 0, 0, "exp"},   {TS_OP_TANH, 0, 0, "tanh"},
        {TS_OP_SIGMOID, 0, 0, "sigmoid"}, {TS_OP_LOG, 0, 1, "log"}, {TS_OP_RELU, 0, 1, "relu"},
        {TS_OP_GELU, 0, 1, "gelu erf"}, {TS_OP_GELU, 1, 1, "gelu tanh"}};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_scale(g, ts_param(g, "w", TS_F32, DIMS(4, 6), ts_init_normal(0.05f)), 1.f, 1.f); /* > 0 */
        ts_attrs at = {0};
        at.i[0] = ops[k].tanh_form;
        at.ni = 1;
        ts_value y = ts_node_add(g, ops[k].op, 1, &x, &at, NULL);
        CHECK_OK(ts_backward(g, ts_reduce_mean(g, ts_mul(g, y, y), 0, NULL, 0)));
        int found = 0;
        for (int i = 0; i < g->nnodes; i++) {
            const ts_node *n = &g->nodes[i];
            if (n->op != TS_OP_UNARY_GRAD || n->attr.i[0] != ops[k].op) continue;
            found++;
            int want_x = ops[k].reads_x ? x : -1, want_y = ops[k].reads_x ? -1 : y;
            CHECK(n->in[0] == want_x && n->in[1] == want_y, "%s backward reads x %d, y %d; want %d, %d",
                  ops[k].name, n->in[0], n->in[1], want_x, want_y);
        }
        CHECK(found == 1, "%s: %d unary_grad nodes, want 1", ops[k].name, found);
        ts_graph_free(g);
    }

    /* a gelu node's backward without its input is refused, naming what it needs */
    ts_graph *g = ts_graph_new();
    ts_value gy = ts_input(g, "gy", TS_F32, DIMS(3)), in[3] = {TS_NONE, ts_input(g, "y", TS_F32, DIMS(3)), gy};
    ts_attrs at = {0};
    at.i[0] = TS_OP_GELU;
    at.ni = 2;
    CHECK(ts_node_add(g, TS_OP_UNARY_GRAD, 3, in, &at, NULL) == TS_NONE && strstr(ts_last_error(), "input x"),
          "gelu's unary_grad without x: %s", ts_last_error());
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ report of persistent memory */

/* w [13, 7] and b [7]: 98 floats. SGD with momentum keeps one buffer per parameter, AdamW two. */
static void optim_report(const char *name, int which) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(5, 13));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(13, 7), ts_init_normal(0.1f));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(7), ts_init_zeros());
    ts_value loss = ts_reduce_mean(g, ts_tanh(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b)), 0, NULL, 0);
    ts_name(g, loss, "loss");
    CHECK_OK(ts_backward(g, loss));
    if (which == 1) CHECK_OK(ts_sgd(g, ts_scalar(g, 0.1f), 0.9f, 0.f));
    if (which == 2) CHECK_OK(ts_adamw(g, ts_scalar(g, 1e-3f), 0.9f, 0.999f, 1e-8f, 0.01f));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(p, &m));
        print_mem(name, &m);
        size_t pb = (13 * 7 + 7) * 4;
        CHECK(m.params == pb, "%s: params %zu, expected %zu", name, m.params, pb);
        CHECK(m.grads == pb, "%s: grads %zu, expected %zu", name, m.grads, pb);
        size_t st = which == 0 ? 0 : which == 1 ? pb : 2 * pb;
        /* AdamW may also keep a step counter: allow a few bytes on top */
        CHECK(m.optimizer_state >= st && m.optimizer_state <= st + 64, "%s: optimizer_state %zu, expected %zu",
              name, m.optimizer_state, st);
    }
    ts_program *pi = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss"), .inference = 1});
    CHECK(pi != NULL, "compile (inference): %s", ts_last_error());
    if (pi) {
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(pi, &m));
        CHECK(m.grads == 0, "%s: an inference program keeps %zu bytes of gradients", name, m.grads);
        CHECK(m.params == (13 * 7 + 7) * 4, "%s: inference params %zu", name, m.params);
    }
    ts_program_free(pi);
    ts_program_free(p);
    ts_graph_free(g);
}
static void test_report_plain(void) { optim_report("no optimizer", 0); }
static void test_report_sgd(void) { optim_report("sgd momentum", 1); }
static void test_report_adamw(void) { optim_report("adamw", 2); }

/* ------------------------------------------------------------------ two runs */

/* A small training program (a projection and an encoder layer with dropout, backward, no
 * optimizer) run three times: runs 0 and 2 have the same input and step and must agree bitwise
 * (outputs and gradients); run 1 has another input and must differ (no stale buffers). The warm
 * run 2 must allocate no tensor-sized heap block (>= TU_BIG_ALLOC = 16 KiB; the activations
 * [2, 64, 32] and the scores [2, 2, 64, 64] are at least that big): all buffers come from the
 * planned arena. Smaller allocations are only reported: libgomp allocates a team for each
 * single-thread parallel region and oneDNN's dnnl_primitive_execute an argument map per call. */
static void test_two_runs_identical(void) {
    enum { B = 2, T = 64, C = 32, H = 2, F = 64 };
    enc_cfg c = {B, T, C, H, F, 0.1f, 1e-5f, ts_init_normal(0.2f), 0};
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 42);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, T, C));
    ts_value w = ts_param(g, "proj", TS_F32, DIMS(C, C), ts_init_normal(0.3f));
    ts_value h = ts_matmul(g, x, w, 0, 0);
    ts_value out = ts_name(g, enc_layer(g, &c, "encoder.layer.0.", h, TS_NONE), "out");
    ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, out, out), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("out", "loss", "proj@GRAD")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) { ts_graph_free(g); return; }
    tu_rng r = tu_rng_seed(8);
    ts_tensor *x1 = tu_rand_tensor(&r, DIMS(B, T, C), -1, 1), *x2 = tu_rand_tensor(&r, DIMS(B, T, C), -1, 1);
    ts_tensor *o[3] = {0}, *gw[3] = {0};
    ts_memory m0 = {.struct_size = sizeof m0}, m1 = {.struct_size = sizeof m1};
    CHECK_OK(ts_program_memory(p, &m0));
    int counting = tu_alloc_counter_init();
    long allocs = -1, big = -1, dnnl = -1;
    for (int run = 0; run < 3; run++) {
        ts_program_set_step(p, 7); /* the same dropout masks */
        CHECK_OK(ts_program_feed(p, "x", run == 1 ? x2 : x1));
        if (run == 2) tu_alloc_count_start();
        ts_status s = ts_program_run(p);
        if (run == 2) tu_alloc_count_stop(&allocs, &big, &dnnl);
        CHECK(s == TS_OK, "run %d: %s", run, ts_last_error());
        o[run] = TU_FETCH(p, "out");
        gw[run] = TU_FETCH(p, "proj@GRAD");
    }
    CHECK(tu_bitwise_equal(o[0], o[2]), "two runs of the same step and input give different outputs");
    CHECK(tu_bitwise_equal(gw[0], gw[2]), "two runs of the same step and input give different gradients");
    CHECK(o[0] && o[1] && tu_max_abs_diff_f(tu_f32(o[0]), tu_f32(o[1]), B * T * C) > 1e-3,
          "another input gave the same output: stale buffers?");
    if (counting)
        printf("  heap allocations during a warm run: %ld of >= %d bytes, %ld in all (bookkeeping), and %ld "
               "tensor-sized ones by oneDNN itself\n",
               big, TU_BIG_ALLOC, allocs, dnnl);
    else
        printf("  heap allocations not counted in this build (sanitizer without a malloc hook)\n");
    CHECK(!counting || big == 0, "a warm run made %ld heap allocations of >= %d bytes: a buffer allocated per step?", big,
          TU_BIG_ALLOC);
    CHECK(ts_program_step(p) == 8, "step after the runs is %llu, expected 8", (unsigned long long)ts_program_step(p));
    CHECK_OK(ts_program_memory(p, &m1));
    CHECK(memcmp(&m0, &m1, sizeof m0) == 0, "the memory report changed across runs");
    for (int i = 0; i < 3; i++) {
        ts_tensor_free(o[i]);
        ts_tensor_free(gw[i]);
    }
    ts_tensor_free(x1);
    ts_tensor_free(x2);
    ts_program_free(p);
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_plan_chain);
    RUN(test_plan_diamond);
    RUN(test_plan_grow);
    RUN(test_plan_reuse);
    RUN(test_plan_fusion_report);
    RUN(test_scalar_ops_to_scale);
    RUN(test_hard_swish_pattern);
    RUN(test_fuse_matmul_act);
    RUN(test_unary_grad_reads);
    RUN(test_report_plain);
    RUN(test_report_sgd);
    RUN(test_report_adamw);
    RUN(test_two_runs_identical);
    RUN(test_bert_base);
    return tu_finish("test_memplan");
}
