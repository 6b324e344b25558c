/*
 * test_fuse_casts.c — the fusion rules about autocast's casts (graph/passes/fuse.c), each against
 * the same graph where the rule cannot fire (a value fetched: pinned) and every other rule fires
 * alike, so the outputs must be equal bit for bit.
 *
 * Rule 8, cast_sum_to (ops/cast_sum.c): a cast and a bias gradient's sum of one value.
 * The graph: an autocast two-layer perceptron with biases, x [B, T, C] -> bf16 (or f16) products
 * with f32 biases -> GELU -> ... -> loss = sum(y * R). Its backward casts each layer's output
 * gradient to 16 bits for the products and sums it over [B, T] for the bias: the pattern rule 8
 * fuses. Checked:
 *  - the fused program has a cast_sum_to per layer; the reference, the same graph with both
 *    output gradients named (pinned: a third reader, so rule 8 leaves them while every other
 *    fusion rule fires alike; no_fusion would also drop rule 5's unrounded bf16 products), none;
 *  - every gradient and the loss equal the reference's bit for bit (the fused op's outputs are
 *    the cast op's and sum_to's own), in bf16 and f16, at row counts below, at and above a sum
 *    chunk (64 rows), on 1 and 2 threads;
 *  - sum_to's sums do not depend on the thread count (an f32 graph, 1 vs 2 threads);
 *  - a gradient that is also fetched (a third reader) is left unfused, and still equal.
 * Rule 9: a bf16 product whose f32 epilogue (bias, GELU) is cast back to bf16 writes bf16 itself
 *  (an inference program: the FFN's first product, read by the second in bf16).
 * Rule 10: three casts of one value to bf16 (the query, key and value products' inputs) are one,
 *  and a cast whose output is named stays its own.
 * Rule 13: the GELU's output cast to bf16 (the second product's input) is one fused_elementwise
 *  node that stores bf16, with the unfused ops' bits.
 * Rule 14: a bf16 product's f32 result split into heads and cast to bf16 (the fused attention's
 *  query) is written in bf16 by the product itself, with the cast's bits.
 */
#include "test_util.h"

#include "ops/op.h"          /* TS_OP_CAST_SUM_TO */
#include "runtime/program.h" /* a compiled program's nodes */

enum { C = 40, F = 72 };

static const char *const GRADS[] = {"loss", "w1@GRAD", "b1@GRAD", "w2@GRAD", "b2@GRAD"};
enum { NG = 5 };

/* The perceptron at [B, T], products in dt (TS_F32: no casts), and its backward. */
static ts_graph *mlp(int64_t B, int64_t T, ts_dtype dt) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 7);
    int64_t xs[3] = {B, T, C}, w1s[2] = {F, C}, w2s[2] = {C, F}, b1s[1] = {F}, b2s[1] = {C};
    ts_value x = ts_input(g, "x", TS_F32, 3, xs), r = ts_input(g, "r", TS_F32, 3, xs);
    ts_value w1 = ts_param(g, "w1", TS_F32, 2, w1s, ts_init_normal(0.3f));
    ts_value w2 = ts_param(g, "w2", TS_F32, 2, w2s, ts_init_normal(0.3f));
    ts_value b1 = ts_param(g, "b1", TS_F32, 1, b1s, ts_init_uniform(-0.1f, 0.1f));
    ts_value b2 = ts_param(g, "b2", TS_F32, 1, b2s, ts_init_uniform(-0.1f, 0.1f));
    ts_value h;
    if (dt == TS_F32) {
        h = ts_gelu(g, ts_add(g, ts_matmul(g, x, w1, 0, 1), b1), 0);
        h = ts_add(g, ts_matmul(g, h, w2, 0, 1), b2);
    } else {
        h = ts_cast(g, ts_matmul(g, ts_cast(g, x, dt), ts_cast(g, w1, dt), 0, 1), TS_F32);
        h = ts_gelu(g, ts_add(g, h, b1), 0);
        h = ts_cast(g, ts_matmul(g, ts_cast(g, h, dt), ts_cast(g, w2, dt), 0, 1), TS_F32);
        h = ts_add(g, h, b2);
    }
    ts_value loss = ts_name(g, ts_reduce_sum(g, ts_mul(g, h, r), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    return g;
}

/* Nodes of op `op` the program runs. */
static int count_op(const ts_program *p, int op) {
    int n = 0;
    for (int i = 0; i < p->one->nsched; i++) n += p->one->g->nodes[p->one->sched[i]].op == op;
    return n;
}

/* Compile g on `threads` threads, fetching GRADS and the first `pins` of "dy1", "dy2" (output
 * gradients pin_dy named: a fetched value is pinned, a third reader, so rule 8 leaves its cast and
 * sum_to apart while every other rule fires alike), run it once on x and r, GRADS into out[NG].
 * The count of cast_sum_to nodes in *fused. */
static void run_grads(ts_graph *g, int pins, int threads, ts_tensor *x, ts_tensor *r, ts_tensor **out,
                      int *fused) {
    const char *names[NG + 2];
    for (int k = 0; k < NG; k++) names[k] = GRADS[k];
    if (pins == 1) names[NG] = "dy2";
    if (pins == 2) names[NG] = "dy1", names[NG + 1] = "dy2";
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = NG + pins,
                                                     .fetches = names,
                                                     .num_threads = threads});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    for (int k = 0; k < NG; k++) out[k] = NULL;
    if (!p) return;
    *fused = count_op(p, TS_OP_CAST_SUM_TO);
    CHECK_OK(ts_program_feed(p, "x", x));
    CHECK_OK(ts_program_feed(p, "r", r));
    CHECK_OK(ts_program_run(p));
    for (int k = 0; k < NG; k++) out[k] = TU_FETCH(p, GRADS[k]);
    ts_program_free(p);
}

static void free_all(ts_tensor **t) {
    for (int k = 0; k < NG; k++) ts_tensor_free(t[k]), t[k] = NULL;
}

/* Each of a's tensors equals b's bit for bit; what names the comparison. */
static void same_bits(ts_tensor **a, ts_tensor **b, const char *what) {
    for (int k = 0; k < NG; k++)
        CHECK(tu_bitwise_equal(a[k], b[k]), "%s: %s differs (max |diff| %g)", what, GRADS[k],
              a[k] && b[k] ? tu_max_abs_diff_f(tu_f32(a[k]), tu_f32(b[k]), ts_tensor_numel(a[k])) : -1.0);
}

/* Name the output gradient whose sum is bias b's gradient (the input of the sum_to that makes
 * b@GRAD) `name`, for run_grads to fetch. 1 when found. */
static int pin_dy(ts_graph *g, const char *b, const char *name) {
    int gb = g->vals[ts_lookup(g, b)].grad;
    if (gb < 0 || g->vals[gb].node < 0 || g->nodes[g->vals[gb].node].op != TS_OP_SUM_TO) return 0;
    ts_name(g, g->nodes[g->vals[gb].node].in[0], name);
    return 1;
}

/* The fused program against the same graph with both output gradients fetched (the reference:
 * the cast and sum_to ops, every other fusion alike), at [B, T] in dt, on 1 and 2 threads. */
static void fused_case(int64_t B, int64_t T, ts_dtype dt) {
    tu_rng rng = tu_rng_seed((uint64_t)(B * 1000 + T));
    ts_tensor *x = tu_rand_tensor(&rng, 3, (int64_t[]){B, T, C}, -2, 2);
    ts_tensor *r = tu_rand_tensor(&rng, 3, (int64_t[]){B, T, C}, -1, 1);
    ts_graph *g = mlp(B, T, dt);
    CHECK(pin_dy(g, "b1", "dy1") && pin_dy(g, "b2", "dy2"), "a bias gradient is not a sum_to of an output gradient");
    ts_tensor *ref[NG], *got[NG];
    int nf = -1, nu = -1;
    run_grads(g, 2, 2, x, r, ref, &nu);
    for (int threads = 1; threads <= 2; threads++) {
        run_grads(g, 0, threads, x, r, got, &nf);
        char what[96];
        snprintf(what, sizeof what, "%s, rows %lld, %d thread%s", ts_dtype_name(dt), (long long)(B * T), threads,
                 threads > 1 ? "s" : "");
        CHECK(nf == 2 && nu == 0, "%s: cast_sum_to nodes: %d fused (want 2, one per layer), %d pinned (want 0)", what,
              nf, nu);
        same_bits(got, ref, what);
        free_all(got);
    }
    printf("  %s, %lld rows: 2 cast_sum_to nodes, gradients equal to the unfused ops' bit for bit\n",
           ts_dtype_name(dt), (long long)(B * T));
    free_all(ref);
    ts_graph_free(g);
    ts_tensor_free(x);
    ts_tensor_free(r);
}

static void test_bf16(void) {
    fused_case(1, 5, TS_BF16);   /* one chunk */
    fused_case(2, 32, TS_BF16);  /* exactly one chunk of 64 rows */
    fused_case(3, 70, TS_BF16);  /* 210 rows: 4 chunks, the last short */
}
static void test_f16(void) { fused_case(3, 70, TS_F16); }

/* sum_to alone (f32 products: no casts, no fusion): the bias gradients on 1 thread equal those on
 * 2 threads bit for bit, at 210 rows (4 chunks). */
static void test_sum_to_threads(void) {
    tu_rng rng = tu_rng_seed(5);
    ts_tensor *x = tu_rand_tensor(&rng, 3, (int64_t[]){3, 70, C}, -2, 2);
    ts_tensor *r = tu_rand_tensor(&rng, 3, (int64_t[]){3, 70, C}, -1, 1);
    ts_graph *g = mlp(3, 70, TS_F32);
    ts_tensor *one[NG], *two[NG];
    int nf;
    run_grads(g, 0, 1, x, r, one, &nf);
    run_grads(g, 0, 2, x, r, two, &nf);
    same_bits(one, two, "f32, 1 vs 2 threads");
    CHECK(nf == 0, "an f32 graph has %d cast_sum_to nodes (no casts to fuse)", nf);
    free_all(one);
    free_all(two);
    ts_graph_free(g);
    ts_tensor_free(x);
    ts_tensor_free(r);
}

/* A third reader keeps the siblings apart: with the second layer's output gradient fetched, only
 * the first layer's fuses, and the gradients equal the reference's (both fetched). */
static void test_third_reader(void) {
    tu_rng rng = tu_rng_seed(9);
    ts_tensor *x = tu_rand_tensor(&rng, 3, (int64_t[]){2, 33, C}, -2, 2);
    ts_tensor *r = tu_rand_tensor(&rng, 3, (int64_t[]){2, 33, C}, -1, 1);
    ts_graph *g = mlp(2, 33, TS_BF16);
    CHECK(pin_dy(g, "b1", "dy1") && pin_dy(g, "b2", "dy2"), "a bias gradient is not a sum_to of an output gradient");
    ts_tensor *ref[NG], *got[NG];
    int nf = -1, nu = -1;
    run_grads(g, 2, 2, x, r, ref, &nu);
    run_grads(g, 1, 2, x, r, got, &nf);
    CHECK(nf == 1 && nu == 0, "cast_sum_to nodes: %d with one gradient fetched (want 1), %d with both (want 0)", nf, nu);
    same_bits(got, ref, "one gradient fetched");
    free_all(ref);
    free_all(got);
    ts_graph_free(g);
    ts_tensor_free(x);
    ts_tensor_free(r);
}

/* y = cast(gelu(cast(x16 W1^T16, f32) + b1), bf16) W2^T16, the GELU's output named "h" when
 * name_h (a named value: rule 9 leaves the product that makes it). */
static ts_graph *ffn(int name_h) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 3);
    int64_t xs[3] = {2, 9, C}, w1s[2] = {F, C}, w2s[2] = {C, F}, b1s[1] = {F};
    ts_value x = ts_input(g, "x", TS_F32, 3, xs);
    ts_value w1 = ts_param(g, "w1", TS_F32, 2, w1s, ts_init_normal(0.3f));
    ts_value w2 = ts_param(g, "w2", TS_F32, 2, w2s, ts_init_normal(0.3f));
    ts_value b1 = ts_param(g, "b1", TS_F32, 1, b1s, ts_init_uniform(-0.1f, 0.1f));
    ts_value h = ts_cast(g, ts_matmul(g, ts_cast(g, x, TS_BF16), ts_cast(g, w1, TS_BF16), 0, 1), TS_F32);
    h = ts_gelu(g, ts_add(g, h, b1), 0);
    if (name_h) ts_name(g, h, "h");
    ts_name(g, ts_cast(g, ts_matmul(g, ts_cast(g, h, TS_BF16), ts_cast(g, w2, TS_BF16), 0, 1), TS_F32), "y");
    return g;
}

/* Rule 9, inference: the fused program's first product writes bf16 (f32_out 0, the bias and the
 * GELU its epilogue); the reference (h named) writes f32 and casts. The outputs are equal bit for
 * bit. */
static void test_bf16_out(void) {
    int64_t xs[3] = {2, 9, C};
    tu_rng rng = tu_rng_seed(4);
    ts_tensor *xt = tu_rand_tensor(&rng, 3, xs, -2, 2), *y[2] = {NULL, NULL};
    int bf16_out[2] = {0, 0};
    for (int f = 0; f < 2; f++) { /* f = 1: the fused program; 0: h named */
        ts_graph *g = ffn(!f);
        ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
        ts_graph_free(g);
        CHECK(p != NULL, "compile: %s", ts_last_error());
        if (!p) continue;
        for (int i = 0; i < p->one->nsched; i++) {
            const ts_node *n = &p->one->g->nodes[p->one->sched[i]];
            bf16_out[f] += n->op == TS_OP_MATMUL && n->attr.i[2] != 0 && p->one->g->vals[n->out[0]].dtype == TS_BF16;
        }
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        y[f] = TU_FETCH(p, "y");
        ts_program_free(p);
    }
    CHECK(bf16_out[1] == 1 && bf16_out[0] == 0, "matmuls with an activation and a bf16 product: %d fused (want 1), %d "
          "with h named (want 0)", bf16_out[1], bf16_out[0]);
    CHECK(tu_bitwise_equal(y[0], y[1]), "the output differs (max |diff| %g)",
          y[0] && y[1] ? tu_max_abs_diff_f(tu_f32(y[0]), tu_f32(y[1]), ts_tensor_numel(y[0])) : -1.0);
    ts_tensor_free(y[0]);
    ts_tensor_free(y[1]);
    ts_tensor_free(xt);
}

/* Casts of value x the program runs. */
static int casts_of(const ts_program *p, const char *input) {
    const ts_graph *g = p->one->g;
    int x = ts_lookup(g, input), n = 0;
    for (int i = 0; i < p->one->nsched; i++) {
        const ts_node *m = &g->nodes[p->one->sched[i]];
        n += m->op == TS_OP_CAST && m->in[0] == x;
    }
    return n;
}

/* q, k, v = cast(x, bf16) Wq^T, cast(x, bf16) Wk^T, cast(x, bf16) Wv^T (three casts of x, as
 * models/bert.c makes them); the value product's cast named "xv" when name_v. */
static ts_graph *qkv(int name_v) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 5);
    int64_t xs[2] = {11, C}, ws[2] = {C, C};
    ts_value x = ts_input(g, "x", TS_F32, 2, xs);
    const char *names[3] = {"q", "k", "v"};
    for (int j = 0; j < 3; j++) {
        char wn[8];
        snprintf(wn, sizeof wn, "w%s", names[j]);
        ts_value xc = ts_cast(g, x, TS_BF16);
        if (j == 2 && name_v) ts_name(g, xc, "xv");
        ts_value w = ts_param(g, wn, TS_F32, 2, ws, ts_init_normal(0.3f));
        ts_name(g, ts_matmul(g, xc, ts_cast(g, w, TS_BF16), 0, 1), names[j]);
    }
    return g;
}

/* Rule 10: fused, one cast of x; with the value product's cast named, two; with no_fusion, three.
 * The products equal bit for bit in all three. */
static void test_same_cast(void) {
    int64_t xs[2] = {11, C};
    const char *names[3] = {"q", "k", "v"};
    tu_rng rng = tu_rng_seed(6);
    ts_tensor *xt = tu_rand_tensor(&rng, 2, xs, -2, 2), *out[3][3];
    int ncast[3] = {0, 0, 0};
    for (int f = 0; f < 3; f++) { /* 0: no_fusion; 1: fused, "xv" named; 2: fused */
        ts_graph *g = qkv(f == 1);
        ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("q", "k", "v"), .inference = 1, .no_fusion = f == 0});
        ts_graph_free(g);
        CHECK(p != NULL, "compile: %s", ts_last_error());
        for (int j = 0; j < 3; j++) out[f][j] = NULL;
        if (!p) continue;
        ncast[f] = casts_of(p, "x");
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        for (int j = 0; j < 3; j++) out[f][j] = TU_FETCH(p, names[j]);
        ts_program_free(p);
    }
    CHECK(ncast[0] == 3 && ncast[1] == 2 && ncast[2] == 1,
          "casts of x: %d unfused (want 3), %d with one named (want 2), %d fused (want 1)", ncast[0], ncast[1],
          ncast[2]);
    for (int f = 1; f < 3; f++)
        for (int j = 0; j < 3; j++)
            CHECK(tu_bitwise_equal(out[f][j], out[0][j]), "program %d: %s differs from the unfused program's", f,
                  names[j]);
    for (int f = 0; f < 3; f++)
        for (int j = 0; j < 3; j++) ts_tensor_free(out[f][j]);
    ts_tensor_free(xt);
}

/* Rule 13: the GELU's output cast to bf16 for the second product is one fused_elementwise node
 * storing bf16 (training: the GELU's gradient reads its input, not its output), against the same
 * graph with the GELU's output named and fetched (pinned: the GELU and the cast stay apart). Every
 * gradient and the loss equal bit for bit, on 1 and 2 threads, at rows below and above a block. */
static void test_unary_bf16_out(void) {
    static const int64_t rows[2][2] = {{1, 7}, {3, 70}};
    for (int c = 0; c < 2; c++) {
        int64_t B = rows[c][0], T = rows[c][1];
        tu_rng rng = tu_rng_seed((uint64_t)(31 + c));
        ts_tensor *x = tu_rand_tensor(&rng, 3, (int64_t[]){B, T, C}, -2, 2);
        ts_tensor *r = tu_rand_tensor(&rng, 3, (int64_t[]){B, T, C}, -1, 1);
        ts_tensor *got[2][NG];
        int fused[2] = {0, 0};
        for (int f = 0; f < 2; f++) { /* f = 1: fused; 0: the GELU's output named and fetched */
            ts_graph *g = mlp(B, T, TS_BF16);
            for (int i = 0; i < g->nnodes && !f; i++)
                if (g->nodes[i].op == TS_OP_GELU) ts_name(g, g->nodes[i].out[0], "act");
            const char *names[NG + 1];
            for (int k = 0; k < NG; k++) names[k] = GRADS[k];
            names[NG] = "act";
            ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts),
                                                             .nfetch = NG + !f, .fetches = names,
                                                             .num_threads = 1 + c});
            ts_graph_free(g);
            CHECK(p != NULL, "compile: %s", ts_last_error());
            for (int k = 0; k < NG; k++) got[f][k] = NULL;
            if (!p) continue;
            for (int i = 0; i < p->one->nsched; i++) {
                const ts_node *n = &p->one->g->nodes[p->one->sched[i]];
                fused[f] += n->op == TS_OP_FUSED_ELEMENTWISE && p->one->g->vals[n->out[0]].dtype == TS_BF16;
            }
            CHECK_OK(ts_program_feed(p, "x", x));
            CHECK_OK(ts_program_feed(p, "r", r));
            CHECK_OK(ts_program_run(p));
            for (int k = 0; k < NG; k++) got[f][k] = TU_FETCH(p, GRADS[k]);
            ts_program_free(p);
        }
        char what[64];
        snprintf(what, sizeof what, "GELU to bf16, %lld rows", (long long)(B * T));
        CHECK(fused[1] == 1 && fused[0] == 0, "%s: fused nodes storing bf16: %d (want 1), %d with the output named "
              "(want 0)", what, fused[1], fused[0]);
        same_bits(got[1], got[0], what);
        printf("  %s: %d fused node storing bf16, the loss and gradients equal bit for bit\n", what, fused[1]);
        free_all(got[0]), free_all(got[1]);
        ts_tensor_free(x), ts_tensor_free(r);
    }
}

/* Rule 14: q = x Wq^T + b in bf16 autocast, split into heads (reshape) and cast to bf16 for the
 * fused attention. The fused program's product writes bf16 and no cast is left; the reference
 * (the reshaped f32 value named and fetched: pinned) writes f32 and casts. The bf16 heads (read
 * back as f32 by a last cast, "y") are the same bits, inference and training (the gradient of
 * the weight and bias too). */
static void test_bf16_view(void) {
    enum { B = 2, T = 9, H = 4, D = C / H };
    tu_rng rng = tu_rng_seed(8);
    ts_tensor *xt = tu_rand_tensor(&rng, 3, (int64_t[]){B, T, C}, -2, 2);
    for (int train = 0; train < 2; train++) {
        ts_tensor *y[2] = {NULL, NULL}, *gw[2] = {NULL, NULL};
        int bf16_mm[2] = {0, 0}, casts[2] = {0, 0};
        for (int f = 0; f < 2; f++) { /* f = 1: fused; 0: the heads named */
            ts_graph *g = ts_graph_new();
            ts_graph_set_seed(g, 3);
            ts_value x = ts_input(g, "x", TS_F32, 3, (int64_t[]){B, T, C});
            ts_value w = ts_param(g, "w", TS_F32, 2, (int64_t[]){C, C}, ts_init_normal(0.3f));
            ts_value b = ts_param(g, "b", TS_F32, 1, (int64_t[]){C}, ts_init_uniform(-0.1f, 0.1f));
            ts_value q = ts_cast(g, ts_matmul(g, ts_cast(g, x, TS_BF16), ts_cast(g, w, TS_BF16), 0, 1), TS_F32);
            ts_value heads = ts_reshape(g, ts_add(g, q, b), 4, (int64_t[]){B, T, H, D});
            if (!f) ts_name(g, heads, "heads");
            ts_value out = ts_name(g, ts_cast(g, ts_cast(g, heads, TS_BF16), TS_F32), "y");
            if (train) CHECK_OK(ts_backward(g, ts_name(g, ts_reduce_sum(g, ts_mul(g, out, out), 0, NULL, 0), "loss")));
            /* y, then the weight's gradient in training, then (the reference) the heads */
            const char *names[3] = {"y", train ? "w@GRAD" : "heads", "heads"};
            int nf = (train ? 2 : 1) + !f;
            ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = nf,
                                                             .fetches = names, .inference = !train});
            ts_graph_free(g);
            CHECK(p != NULL, "compile: %s", ts_last_error());
            if (!p) continue;
            for (int i = 0; i < p->one->nsched; i++) {
                const ts_node *n = &p->one->g->nodes[p->one->sched[i]];
                int fwd = !train || p->one->sched[i] < p->one->g->bwd_start; /* the forward's nodes */
                bf16_mm[f] += fwd && n->op == TS_OP_MATMUL && p->one->g->vals[n->out[0]].dtype == TS_BF16;
                casts[f] += fwd && n->op == TS_OP_CAST && p->one->g->vals[n->out[0]].dtype == TS_BF16 &&
                            p->one->g->vals[n->in[0]].ndim == 4;
            }
            CHECK_OK(ts_program_feed(p, "x", xt));
            CHECK_OK(ts_program_run(p));
            y[f] = TU_FETCH(p, "y");
            if (train) gw[f] = TU_FETCH(p, "w@GRAD");
            ts_program_free(p);
        }
        CHECK(bf16_mm[1] == 1 && casts[1] == 0 && bf16_mm[0] == 0 && casts[0] == 1,
              "%s: fused: %d products writing bf16 (want 1), %d casts of the heads (want 0); with the heads named: %d "
              "and %d (want 0 and 1)", train ? "training" : "inference", bf16_mm[1], casts[1], bf16_mm[0], casts[0]);
        CHECK(tu_bitwise_equal(y[0], y[1]), "%s: the heads differ", train ? "training" : "inference");
        if (train) CHECK(tu_bitwise_equal(gw[0], gw[1]), "training: the weight's gradient differs");
        printf("  bf16 heads, %s: the product writes bf16, no cast; the same bits\n", train ? "training" : "inference");
        for (int f = 0; f < 2; f++) ts_tensor_free(y[f]), ts_tensor_free(gw[f]);
    }
    ts_tensor_free(xt);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    printf("the fusion rules about casts, against the same graphs where they cannot fire\n");
    RUN(test_bf16);
    RUN(test_f16);
    RUN(test_sum_to_threads);
    RUN(test_third_reader);
    RUN(test_bf16_out);
    RUN(test_same_cast);
    RUN(test_unary_bf16_out);
    RUN(test_bf16_view);
    return tu_finish("test_fuse_casts");
}
