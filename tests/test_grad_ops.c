/*
 * test_grad_ops.c — finite-difference gradient checks of every differentiable op of the public
 * API, plus a forward check of each op against a host reference computed in double.
 *
 * Method (see fd_check.h): the op's inputs are trainable parameters set with
 * ts_program_set_param; loss = reduce_sum(out * R) with R a fixed random constant; the analytic
 * gradient "<param>@GRAD" comes from ts_backward; the numeric one is the central difference with
 * eps = 1e-2 (5e-3 for layer_norm / softmax / log_softmax / cross_entropy), the loss recomputed
 * on the host in double from the fetched f32 outputs. Tolerance: max |num - ana| / max(1, |ana|)
 * <= 1e-2 over every checked element (up to 64 per parameter, a random sample beyond that).
 * Shapes are small and odd (1, 3, 5, 7, 13) so that no kernel gets a lucky vector-width size;
 * the *_random cases draw shapes, transposes, broadcast patterns and axes from a fixed seed.
 * Each op variant is its own case, run in a forked child: a failing or crashing op does not stop
 * the others.
 */
#include "fd_check.h"

/* ------------------------------------------------------------------ host views */

typedef struct hp {
    int nd;
    const int64_t *sh;
    const float *v;
    int64_t n;
} hp;

static hp HP(const fd_host *h, const char *name) {
    hp r = {0, NULL, NULL, 0};
    for (int i = 0; i < h->np; i++)
        if (strcmp(h->name[i], name) == 0) {
            r.nd = h->nd[i];
            r.sh = h->shape[i];
            r.v = h->val[i];
            r.n = tu_numel(r.nd, r.sh);
        }
    if (!r.v) {
        fprintf(stderr, "reference: no parameter '%s'\n", name);
        abort();
    }
    return r;
}

/* ------------------------------------------------------------------ matmul */

typedef struct mm_ctx {
    int ta, tb;
} mm_ctx;

static int build_matmul(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const mm_ctx *c = ctx;
    o[0] = ts_matmul(g, p[0], p[1], c->ta, c->tb);
    return 1;
}

static void ref_matmul(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const mm_ctx *c = ctx;
    hp a = HP(h, "a"), b = HP(h, "b");
    int nd = o[0].nd;
    int64_t M = o[0].shape[nd - 2], N = o[0].shape[nd - 1];
    int64_t K = c->ta ? a.sh[a.nd - 2] : a.sh[a.nd - 1];
    int64_t co[TS_MAX_DIMS];
    for (int64_t i = 0; i < o[0].n; i++) {
        tu_unravel(i, nd, o[0].shape, co);
        int64_t m = co[nd - 2], n = co[nd - 1];
        int64_t ab = tu_bcast_index(co, nd - 2, a.nd - 2, a.sh);
        int64_t bb = b.nd > 2 ? tu_bcast_index(co, nd - 2, b.nd - 2, b.sh) : 0;
        double s = 0;
        for (int64_t k = 0; k < K; k++) {
            double av = a.v[ab * M * K + (c->ta ? k * M + m : m * K + k)];
            double bv = b.v[bb * K * N + (c->tb ? n * K + k : k * N + n)];
            s += av * bv;
        }
        o[0].ref[i] = s;
    }
    (void)nout;
}

static void mm_case(const char *name, int ta, int tb, int na, const int64_t *sa, int nb, const int64_t *sb) {
    static mm_ctx ctx;
    ctx.ta = ta;
    ctx.tb = tb;
    fd_spec s;
    fd_init(&s, name, build_matmul, &ctx);
    fd_param(&s, "a", GEN_UNIF, na, sa);
    fd_param(&s, "b", GEN_UNIF, nb, sb);
    s.ref = ref_matmul;
    fd_run(&s);
}

static void test_matmul_plain(void) { mm_case("matmul [5,7]@[7,3]", 0, 0, DIMS(5, 7), DIMS(7, 3)); }
static void test_matmul_trans_a(void) { mm_case("matmul trans_a [7,5]^T@[7,3]", 1, 0, DIMS(7, 5), DIMS(7, 3)); }
static void test_matmul_trans_b(void) { mm_case("matmul trans_b [5,7]@[3,7]^T", 0, 1, DIMS(5, 7), DIMS(3, 7)); }
static void test_matmul_trans_ab(void) { mm_case("matmul trans_a trans_b [7,5]^T@[3,7]^T", 1, 1, DIMS(7, 5), DIMS(3, 7)); }
static void test_matmul_vec(void) { mm_case("matmul [1,13]@[13,1]", 0, 0, DIMS(1, 13), DIMS(13, 1)); }
static void test_matmul_shared_b(void) { mm_case("matmul batched, shared 2-D b [2,5,7]@[7,3]", 0, 0, DIMS(2, 5, 7), DIMS(7, 3)); }
/* a batch of one with a shared 2-D b: the CPU backend folds [1, M, K] into [M, K] as for larger batches */
static void test_matmul_batch1_shared_b(void) { mm_case("matmul batch of 1, shared 2-D b [1,5,7]@[7,3]", 0, 0, DIMS(1, 5, 7), DIMS(7, 3)); }
static void test_matmul_batch1_shared_b_tb(void) { mm_case("matmul batch of 1, shared 2-D b^T [1,1,5,7]@[4,7]^T", 0, 1, DIMS(1, 1, 5, 7), DIMS(4, 7)); }
static void test_matmul_shared_b_tb(void) { mm_case("matmul batched, shared 2-D b^T [3,5,7]@[4,7]^T", 0, 1, DIMS(3, 5, 7), DIMS(4, 7)); }
static void test_matmul_batched(void) { mm_case("matmul batched [2,5,7]@[2,7,3]", 0, 0, DIMS(2, 5, 7), DIMS(2, 7, 3)); }
static void test_matmul_bcast(void) { mm_case("matmul broadcast batch [2,1,5,7]@[3,7,4]", 0, 0, DIMS(2, 1, 5, 7), DIMS(3, 7, 4)); }
static void test_matmul_batched_tt(void) { mm_case("matmul batched ta tb [2,3,7,5]^T@[2,3,4,7]^T", 1, 1, DIMS(2, 3, 7, 5), DIMS(2, 3, 4, 7)); }
static void test_matmul_batched_tb(void) { mm_case("matmul batched tb [2,3,5,3]@[2,3,7,3]^T", 0, 1, DIMS(2, 3, 5, 3), DIMS(2, 3, 7, 3)); }

/* ------------------------------------------------------------------ binary elementwise */

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_POW };
static const char *const bin_name[] = {"add", "sub", "mul", "div", "pow"};

typedef struct bin_ctx {
    int op;
    int const_exp; /* pow: b is a constant scalar with this value (0: b is the parameter "b") */
} bin_ctx;

static ts_value apply_bin(ts_graph *g, int op, ts_value a, ts_value b) {
    switch (op) {
    case B_ADD: return ts_add(g, a, b);
    case B_SUB: return ts_sub(g, a, b);
    case B_MUL: return ts_mul(g, a, b);
    case B_DIV: return ts_div(g, a, b);
    default: return ts_pow(g, a, b);
    }
}

static int build_bin(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const bin_ctx *c = ctx;
    ts_value b = c->const_exp ? ts_scalar(g, (float)c->const_exp) : p[1];
    o[0] = apply_bin(g, c->op, p[0], b);
    return 1;
}

static void ref_bin(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const bin_ctx *c = ctx;
    hp a = HP(h, "a"), b = {0, NULL, NULL, 1};
    float cexp = (float)c->const_exp;
    if (c->const_exp) b.v = &cexp;
    else b = HP(h, "b");
    int64_t co[TS_MAX_DIMS];
    for (int64_t i = 0; i < o[0].n; i++) {
        tu_unravel(i, o[0].nd, o[0].shape, co);
        double x = a.v[tu_bcast_index(co, o[0].nd, a.nd, a.sh)];
        double y = b.v[tu_bcast_index(co, o[0].nd, b.nd, b.sh)];
        double r;
        switch (c->op) {
        case B_ADD: r = x + y; break;
        case B_SUB: r = x - y; break;
        case B_MUL: r = x * y; break;
        case B_DIV: r = x / y; break;
        default: r = pow(x, y); break;
        }
        o[0].ref[i] = r;
    }
    (void)nout;
}

static void bin_case(int op, int na, const int64_t *sa, int nb, const int64_t *sb) {
    static bin_ctx ctx;
    static char name[256];
    char sh1[64], sh2[64];
    ctx.op = op;
    ctx.const_exp = 0;
    size_t o = 0;
    o += (size_t)snprintf(sh1 + o, sizeof sh1 - o, "[");
    for (int i = 0; i < na; i++) o += (size_t)snprintf(sh1 + o, sizeof sh1 - o, i ? ",%lld" : "%lld", (long long)sa[i]);
    snprintf(sh1 + o, sizeof sh1 - o, "]");
    o = 0;
    o += (size_t)snprintf(sh2 + o, sizeof sh2 - o, "[");
    for (int i = 0; i < nb; i++) o += (size_t)snprintf(sh2 + o, sizeof sh2 - o, i ? ",%lld" : "%lld", (long long)sb[i]);
    snprintf(sh2 + o, sizeof sh2 - o, "]");
    snprintf(name, sizeof name, "%s %s %s", bin_name[op], sh1, sh2);
    fd_spec s;
    fd_init(&s, name, build_bin, &ctx);
    int ga = op == B_POW ? GEN_POS : GEN_UNIF;
    int gb = op == B_DIV ? GEN_SIGNED_POS : GEN_UNIF;
    fd_param(&s, "a", ga, na, sa);
    fd_param(&s, "b", gb, nb, sb);
    s.ref = ref_bin;
    fd_run(&s);
}

#define BIN_TESTS(OP, ID)                                                                           \
    static void test_##OP##_same(void) { bin_case(ID, DIMS(3, 5), DIMS(3, 5)); }                    \
    static void test_##OP##_col_row(void) { bin_case(ID, DIMS(5, 1), DIMS(1, 7)); }                 \
    static void test_##OP##_scalar_a(void) { bin_case(ID, 0, NULL, DIMS(3, 5)); }                   \
    static void test_##OP##_scalar_b(void) { bin_case(ID, DIMS(3, 5), 0, NULL); }                   \
    static void test_##OP##_trailing(void) { bin_case(ID, DIMS(3, 5, 7), DIMS(7)); }                \
    static void test_##OP##_mixed(void) { bin_case(ID, DIMS(2, 1, 5), DIMS(3, 1)); }
BIN_TESTS(add, B_ADD)
BIN_TESTS(sub, B_SUB)
BIN_TESTS(mul, B_MUL)
BIN_TESTS(div, B_DIV)
BIN_TESTS(pow, B_POW)

static void test_pow_const_exp(void) {
    static bin_ctx ctx = {B_POW, 3};
    fd_spec s;
    fd_init(&s, "pow [3,5] ** scalar constant 3", build_bin, &ctx);
    fd_param(&s, "a", GEN_UNIF, DIMS(3, 5)); /* integer exponent: negative bases are fine */
    s.ref = ref_bin;
    fd_run(&s);
}

/* the same parameter on both sides: gradients of both operands add up */
static int build_mul_self(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    (void)ctx;
    o[0] = ts_mul(g, p[0], ts_add(g, p[0], p[0]));
    return 1;
}
static void ref_mul_self(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    hp a = HP(h, "a");
    for (int64_t i = 0; i < o[0].n; i++) o[0].ref[i] = 2.0 * a.v[i] * a.v[i];
    (void)nout;
    (void)ctx;
}
static void test_mul_self(void) {
    fd_spec s;
    fd_init(&s, "mul a * (a + a) (one value used 3 times)", build_mul_self, NULL);
    fd_param(&s, "a", GEN_UNIF, DIMS(3, 5));
    s.ref = ref_mul_self;
    fd_run(&s);
}

/* ------------------------------------------------------------------ unary */

enum { U_SCALE, U_SQRT, U_EXP, U_LOG, U_RELU, U_TANH, U_SIGMOID, U_GELU, U_GELU_TANH };

typedef struct un_ctx {
    int op;
    float alpha, beta;
} un_ctx;

static int build_unary(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const un_ctx *c = ctx;
    ts_value x = p[0];
    switch (c->op) {
    case U_SCALE: o[0] = ts_scale(g, x, c->alpha, c->beta); break;
    case U_SQRT: o[0] = ts_sqrt(g, x); break;
    case U_EXP: o[0] = ts_exp(g, x); break;
    case U_LOG: o[0] = ts_log(g, x); break;
    case U_RELU: o[0] = ts_relu(g, x); break;
    case U_TANH: o[0] = ts_tanh(g, x); break;
    case U_SIGMOID: o[0] = ts_sigmoid(g, x); break;
    case U_GELU: o[0] = ts_gelu(g, x, 0); break;
    default: o[0] = ts_gelu(g, x, 1); break;
    }
    return 1;
}

static double unary_ref(int op, double v, double alpha, double beta) {
    switch (op) {
    case U_SCALE: return alpha * v + beta;
    case U_SQRT: return sqrt(v);
    case U_EXP: return exp(v);
    case U_LOG: return log(v);
    case U_RELU: return v > 0 ? v : 0;
    case U_TANH: return tanh(v);
    case U_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case U_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    default: return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    }
}

static void ref_unary(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const un_ctx *c = ctx;
    hp x = HP(h, "x");
    for (int64_t i = 0; i < o[0].n; i++) o[0].ref[i] = unary_ref(c->op, x.v[i], c->alpha, c->beta);
    (void)nout;
}

static void un_case(const char *name, int op, int gen, float alpha, float beta) {
    static un_ctx ctx;
    ctx.op = op;
    ctx.alpha = alpha;
    ctx.beta = beta;
    fd_spec s;
    fd_init(&s, name, build_unary, &ctx);
    fd_param(&s, "x", gen, DIMS(3, 5, 7));
    s.ref = ref_unary;
    fd_run(&s);
}

static void test_scale(void) { un_case("scale (-1.7 x + 0.3) [3,5,7]", U_SCALE, GEN_UNIF, -1.7f, 0.3f); }
static void test_sqrt(void) { un_case("sqrt [3,5,7] (x in [0.5, 2))", U_SQRT, GEN_POS, 0, 0); }
static void test_exp(void) { un_case("exp [3,5,7]", U_EXP, GEN_UNIF, 0, 0); }
static void test_log(void) { un_case("log [3,5,7] (x in [0.5, 2))", U_LOG, GEN_POS, 0, 0); }
static void test_relu(void) { un_case("relu [3,5,7] (|x| >= 0.1)", U_RELU, GEN_AWAY0, 0, 0); }
static void test_tanh(void) { un_case("tanh [3,5,7]", U_TANH, GEN_UNIF, 0, 0); }
static void test_sigmoid(void) { un_case("sigmoid [3,5,7]", U_SIGMOID, GEN_UNIF, 0, 0); }
static void test_gelu_erf(void) { un_case("gelu erf form [3,5,7]", U_GELU, GEN_UNIF, 0, 0); }
static void test_gelu_tanh(void) { un_case("gelu tanh form [3,5,7]", U_GELU_TANH, GEN_UNIF, 0, 0); }

/* ------------------------------------------------------------------ reshape / transpose */

typedef struct shape_ctx {
    int nd;
    int64_t shape[TS_MAX_DIMS];
    int perm[TS_MAX_DIMS];
    int use_perm, pre_tanh;
} shape_ctx;

static int build_reshape(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const shape_ctx *c = ctx;
    ts_value x = c->pre_tanh ? ts_tanh(g, p[0]) : p[0];
    o[0] = ts_reshape(g, x, c->nd, c->shape);
    return 1;
}
static void ref_reshape(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const shape_ctx *c = ctx;
    hp x = HP(h, "x");
    for (int64_t i = 0; i < o[0].n; i++) o[0].ref[i] = c->pre_tanh ? tanh(x.v[i]) : x.v[i];
    (void)nout;
}
static void reshape_case(const char *name, int pre_tanh, int nx, const int64_t *sx, int nd, const int64_t *sh) {
    static shape_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.nd = nd;
    memcpy(ctx.shape, sh, sizeof(int64_t) * (size_t)nd);
    ctx.pre_tanh = pre_tanh;
    fd_spec s;
    fd_init(&s, name, build_reshape, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    s.ref = ref_reshape;
    fd_run(&s);
}
static void test_reshape_infer(void) { reshape_case("reshape [3,5,7] -> [5,-1]", 0, DIMS(3, 5, 7), DIMS(5, -1)); }
static void test_reshape_flat(void) { reshape_case("reshape [3,5,7] -> [105]", 0, DIMS(3, 5, 7), DIMS(105)); }
static void test_reshape_mid(void) { reshape_case("reshape of an intermediate tanh [3,4]->[2,1,6]", 1, DIMS(3, 4), DIMS(2, 1, 6)); }

static int build_transpose(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const shape_ctx *c = ctx;
    o[0] = ts_transpose(g, p[0], c->use_perm ? c->perm : NULL);
    return 1;
}
static void ref_transpose(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const shape_ctx *c = ctx;
    hp x = HP(h, "x");
    int nd = x.nd;
    int perm[TS_MAX_DIMS];
    for (int i = 0; i < nd; i++) perm[i] = i;
    if (c->use_perm) memcpy(perm, c->perm, sizeof(int) * (size_t)nd);
    else { perm[nd - 2] = nd - 1; perm[nd - 1] = nd - 2; }
    int64_t co[TS_MAX_DIMS], ci[TS_MAX_DIMS];
    for (int64_t i = 0; i < o[0].n; i++) {
        tu_unravel(i, nd, o[0].shape, co);
        for (int k = 0; k < nd; k++) ci[perm[k]] = co[k];
        int64_t j = 0;
        for (int k = 0; k < nd; k++) j = j * x.sh[k] + ci[k];
        o[0].ref[i] = x.v[j];
    }
    (void)nout;
}
static void transpose_case(const char *name, int nx, const int64_t *sx, const int *perm) {
    static shape_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.use_perm = perm != NULL;
    if (perm) memcpy(ctx.perm, perm, sizeof(int) * (size_t)nx);
    fd_spec s;
    fd_init(&s, name, build_transpose, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    s.ref = ref_transpose;
    fd_run(&s);
}
static void test_transpose_perm3(void) { transpose_case("transpose [3,5,7] perm {2,0,1}", DIMS(3, 5, 7), (int[]){2, 0, 1}); }
static void test_transpose_null(void) { transpose_case("transpose [3,4,5] perm NULL (last two)", DIMS(3, 4, 5), NULL); }
static void test_transpose_2d(void) { transpose_case("transpose [5,7] perm {1,0}", DIMS(5, 7), (int[]){1, 0}); }
static void test_transpose_heads(void) { transpose_case("transpose [2,3,4,5] perm {0,2,1,3}", DIMS(2, 3, 4, 5), (int[]){0, 2, 1, 3}); }

/* ------------------------------------------------------------------ slice */

typedef struct slice_ctx {
    int axis;
    int64_t start, end;
} slice_ctx;

static int build_slice(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const slice_ctx *c = ctx;
    o[0] = ts_slice(g, p[0], c->axis, c->start, c->end);
    return 1;
}
static int64_t py_clamp(int64_t i, int64_t n) {
    if (i < 0) i += n;
    return i < 0 ? 0 : (i > n ? n : i);
}
static void ref_slice(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const slice_ctx *c = ctx;
    hp x = HP(h, "x");
    int ax = c->axis < 0 ? c->axis + x.nd : c->axis;
    int64_t st = py_clamp(c->start, x.sh[ax]);
    int64_t co[TS_MAX_DIMS];
    for (int64_t i = 0; i < o[0].n; i++) {
        tu_unravel(i, o[0].nd, o[0].shape, co);
        co[ax] += st;
        int64_t j = 0;
        for (int k = 0; k < x.nd; k++) j = j * x.sh[k] + co[k];
        o[0].ref[i] = x.v[j];
    }
    (void)nout;
}
static void slice_case(const char *name, int nx, const int64_t *sx, int axis, int64_t start, int64_t end,
                       int expect_len) {
    static slice_ctx ctx;
    ctx.axis = axis;
    ctx.start = start;
    ctx.end = end;
    fd_spec s;
    fd_init(&s, name, build_slice, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    s.ref = ref_slice;
    fd_run(&s);
    /* the output length along the axis, python semantics */
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, nx, sx);
    ts_value y = ts_slice(g, x, axis, start, end);
    int64_t sh[TS_MAX_DIMS];
    int nd = ts_value_shape(g, y, sh);
    int ax = axis < 0 ? axis + nx : axis;
    CHECK(nd == nx && sh[ax] == expect_len, "%s: output length along axis %d is %lld, expected %d", name,
          axis, nd == nx ? (long long)sh[ax] : -1LL, expect_len);
    ts_graph_free(g);
}
static void test_slice_mid(void) { slice_case("slice [3,7,5] axis 1 [1:4]", DIMS(3, 7, 5), 1, 1, 4, 3); }
static void test_slice_negative(void) { slice_case("slice [3,7] axis -1 [-4:-1]", DIMS(3, 7), -1, -4, -1, 3); }
static void test_slice_clamp_end(void) { slice_case("slice [5,3] axis 0 [2:100] (clamped)", DIMS(5, 3), 0, 2, 100, 3); }
static void test_slice_clamp_start(void) { slice_case("slice [3,5] axis 1 [-100:2] (clamped)", DIMS(3, 5), 1, -100, 2, 2); }

/* ------------------------------------------------------------------ concat / split */

typedef struct cat_ctx {
    int n, axis, self; /* self: concat(x, x) */
} cat_ctx;

static const char *const cat_names[] = {"x0", "x1", "x2", "x3"};

static int build_concat(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const cat_ctx *c = ctx;
    ts_value xs[4];
    for (int i = 0; i < c->n; i++) xs[i] = c->self ? p[0] : p[i];
    o[0] = ts_concat(g, c->n, xs, c->axis);
    return 1;
}
static void ref_concat(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const cat_ctx *c = ctx;
    int nd = o[0].nd, ax = c->axis < 0 ? c->axis + nd : c->axis;
    int64_t co[TS_MAX_DIMS];
    for (int64_t i = 0; i < o[0].n; i++) {
        tu_unravel(i, nd, o[0].shape, co);
        int64_t pos = co[ax];
        for (int k = 0; k < c->n; k++) {
            hp x = HP(h, cat_names[c->self ? 0 : k]);
            if (pos < x.sh[ax]) {
                co[ax] = pos;
                int64_t j = 0;
                for (int d = 0; d < nd; d++) j = j * x.sh[d] + co[d];
                o[0].ref[i] = x.v[j];
                break;
            }
            pos -= x.sh[ax];
        }
    }
    (void)nout;
}
static void test_concat_axis1(void) {
    static cat_ctx ctx = {3, 1, 0};
    fd_spec s;
    fd_init(&s, "concat [3,2,5] [3,4,5] [3,1,5] axis 1", build_concat, &ctx);
    fd_param(&s, "x0", GEN_UNIF, DIMS(3, 2, 5));
    fd_param(&s, "x1", GEN_UNIF, DIMS(3, 4, 5));
    fd_param(&s, "x2", GEN_UNIF, DIMS(3, 1, 5));
    s.ref = ref_concat;
    fd_run(&s);
}
static void test_concat_last(void) {
    static cat_ctx ctx = {2, -1, 0};
    fd_spec s;
    fd_init(&s, "concat [3,2] [3,5] axis -1", build_concat, &ctx);
    fd_param(&s, "x0", GEN_UNIF, DIMS(3, 2));
    fd_param(&s, "x1", GEN_UNIF, DIMS(3, 5));
    s.ref = ref_concat;
    fd_run(&s);
}
static void test_concat_axis0(void) {
    static cat_ctx ctx = {2, 0, 0};
    fd_spec s;
    fd_init(&s, "concat [2,3] [4,3] axis 0", build_concat, &ctx);
    fd_param(&s, "x0", GEN_UNIF, DIMS(2, 3));
    fd_param(&s, "x1", GEN_UNIF, DIMS(4, 3));
    s.ref = ref_concat;
    fd_run(&s);
}
static void test_concat_self(void) {
    static cat_ctx ctx = {2, 0, 1};
    fd_spec s;
    fd_init(&s, "concat (x, x) [3,5] axis 0", build_concat, &ctx);
    fd_param(&s, "x0", GEN_UNIF, DIMS(3, 5));
    s.ref = ref_concat;
    fd_run(&s);
}

typedef struct split_ctx {
    int axis, n;
    int64_t sizes[4];
    int use_sizes;
    int used[4]; /* which outputs feed the loss */
} split_ctx;

static int build_split(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const split_ctx *c = ctx;
    ts_value parts[4];
    ts_status s = ts_split(g, p[0], c->axis, c->n, c->use_sizes ? c->sizes : NULL, parts);
    if (s != TS_OK) return 0;
    int k = 0;
    for (int i = 0; i < c->n; i++)
        if (c->used[i]) o[k++] = parts[i];
    return k;
}
static void ref_split(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const split_ctx *c = ctx;
    hp x = HP(h, "x");
    int ax = c->axis < 0 ? c->axis + x.nd : c->axis;
    int64_t off = 0;
    int k = 0;
    for (int i = 0; i < c->n; i++) {
        int64_t len = c->use_sizes ? c->sizes[i] : x.sh[ax] / c->n;
        if (c->used[i]) {
            int64_t co[TS_MAX_DIMS];
            for (int64_t e = 0; e < o[k].n; e++) {
                tu_unravel(e, o[k].nd, o[k].shape, co);
                co[ax] += off;
                int64_t j = 0;
                for (int d = 0; d < x.nd; d++) j = j * x.sh[d] + co[d];
                o[k].ref[e] = x.v[j];
            }
            k++;
        }
        off += len;
    }
    (void)nout;
}
static void split_case(const char *name, const split_ctx *src, int nx, const int64_t *sx) {
    static split_ctx ctx;
    ctx = *src;
    fd_spec s;
    fd_init(&s, name, build_split, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    s.ref = ref_split;
    fd_run(&s);
}
static void test_split_sizes(void) {
    split_ctx c = {1, 2, {3, 7}, 1, {1, 1}};
    split_case("split [3,10] axis 1 sizes {3,7}", &c, DIMS(3, 10));
}
static void test_split_equal(void) {
    split_ctx c = {-1, 3, {0}, 0, {1, 1, 1}};
    split_case("split [3,9] axis -1 into 3 equal", &c, DIMS(3, 9));
}
static void test_split_unused(void) {
    split_ctx c = {0, 3, {1, 3, 2}, 1, {1, 0, 1}};
    split_case("split [6,4] axis 0 {1,3,2}, middle unused", &c, DIMS(6, 4));
}

/* ------------------------------------------------------------------ expand */

static int build_expand(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const shape_ctx *c = ctx;
    o[0] = ts_expand(g, p[0], c->nd, c->shape);
    return 1;
}
static void ref_expand(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    hp x = HP(h, "x");
    int64_t co[TS_MAX_DIMS];
    for (int64_t i = 0; i < o[0].n; i++) {
        tu_unravel(i, o[0].nd, o[0].shape, co);
        o[0].ref[i] = x.v[tu_bcast_index(co, o[0].nd, x.nd, x.sh)];
    }
    (void)nout;
    (void)ctx;
}
static void expand_case(const char *name, int nx, const int64_t *sx, int nd, const int64_t *sh) {
    static shape_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.nd = nd;
    memcpy(ctx.shape, sh, sizeof(int64_t) * (size_t)nd);
    fd_spec s;
    fd_init(&s, name, build_expand, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    s.ref = ref_expand;
    fd_run(&s);
}
static void test_expand_mid(void) { expand_case("expand [3,1,5] -> [2,3,4,5]", DIMS(3, 1, 5), DIMS(2, 3, 4, 5)); }
static void test_expand_scalar(void) { expand_case("expand [] -> [3,4]", 0, NULL, DIMS(3, 4)); }
static void test_expand_row(void) { expand_case("expand [5] -> [3,5]", DIMS(5), DIMS(3, 5)); }

/* ------------------------------------------------------------------ gather */

typedef struct gather_ctx {
    ts_dtype dt;
    int nd;
    int64_t shape[TS_MAX_DIMS];
    int64_t idx[16];
} gather_ctx;

static int build_gather(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const gather_ctx *c = ctx;
    ts_tensor *t = ts_tensor_new(c->dt, c->nd, c->shape);
    int64_t n = ts_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (c->dt == TS_I32) ((int32_t *)ts_tensor_data(t))[i] = (int32_t)c->idx[i];
        else ((int64_t *)ts_tensor_data(t))[i] = c->idx[i];
    }
    ts_value ix = ts_constant(g, t);
    ts_tensor_free(t);
    o[0] = ts_gather(g, p[0], ix);
    return 1;
}
static void ref_gather(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const gather_ctx *c = ctx;
    hp t = HP(h, "table");
    int64_t row = t.n / t.sh[0], ni = tu_numel(c->nd, c->shape);
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < row; j++) o[0].ref[i * row + j] = t.v[c->idx[i] * row + j];
    (void)nout;
}
static void test_gather_i64(void) {
    static gather_ctx ctx = {TS_I64, 2, {4, 3}, {0, 3, 3, 6, 0, 3, 1, 1, 1, 5, 2, 0}};
    fd_spec s;
    fd_init(&s, "gather table [7,5], i64 indices [4,3] (duplicates)", build_gather, &ctx);
    fd_param(&s, "table", GEN_UNIF, DIMS(7, 5));
    s.ref = ref_gather;
    fd_run(&s);
}
static void test_gather_i32(void) {
    static gather_ctx ctx = {TS_I32, 1, {6}, {2, 2, 0, 4, 2, 1}};
    fd_spec s;
    fd_init(&s, "gather table [6,2,3], i32 indices [6] (duplicates)", build_gather, &ctx);
    fd_param(&s, "table", GEN_UNIF, DIMS(6, 2, 3));
    s.ref = ref_gather;
    fd_run(&s);
}

/* ------------------------------------------------------------------ reductions */

enum { R_SUM, R_MEAN, R_MAX };
typedef struct red_ctx {
    int op, naxes, keep;
    int axes[TS_MAX_DIMS];
} red_ctx;

static int build_reduce(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const red_ctx *c = ctx;
    const int *ax = c->naxes ? c->axes : NULL;
    switch (c->op) {
    case R_SUM: o[0] = ts_reduce_sum(g, p[0], c->naxes, ax, c->keep); break;
    case R_MEAN: o[0] = ts_reduce_mean(g, p[0], c->naxes, ax, c->keep); break;
    default: o[0] = ts_reduce_max(g, p[0], c->naxes, ax, c->keep); break;
    }
    return 1;
}
static void ref_reduce(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const red_ctx *c = ctx;
    hp x = HP(h, "x");
    int red[TS_MAX_DIMS] = {0};
    for (int i = 0; i < x.nd; i++) red[i] = c->naxes == 0;
    for (int i = 0; i < c->naxes; i++) red[c->axes[i] < 0 ? c->axes[i] + x.nd : c->axes[i]] = 1;
    /* output index of each input element (keepdims or not, the row-major order is the same) */
    int64_t *cnt = calloc((size_t)o[0].n, sizeof(int64_t));
    for (int64_t i = 0; i < o[0].n; i++) o[0].ref[i] = c->op == R_MAX ? -INFINITY : 0.0;
    int64_t ci[TS_MAX_DIMS];
    for (int64_t i = 0; i < x.n; i++) {
        tu_unravel(i, x.nd, x.sh, ci);
        int64_t j = 0;
        for (int k = 0; k < x.nd; k++)
            if (!red[k]) j = j * x.sh[k] + ci[k];
        if (c->op == R_MAX) o[0].ref[j] = fmax(o[0].ref[j], x.v[i]);
        else o[0].ref[j] += x.v[i];
        cnt[j]++;
    }
    if (c->op == R_MEAN)
        for (int64_t j = 0; j < o[0].n; j++) o[0].ref[j] /= (double)cnt[j];
    free(cnt);
    (void)nout;
}
static void reduce_case(const char *name, int op, int naxes, const int *axes, int keep, int expect_nd) {
    static red_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.op = op;
    ctx.naxes = naxes;
    ctx.keep = keep;
    for (int i = 0; i < naxes; i++) ctx.axes[i] = axes[i];
    fd_spec s;
    fd_init(&s, name, build_reduce, &ctx);
    fd_param(&s, "x", op == R_MAX ? GEN_DISTINCT : GEN_UNIF, DIMS(3, 5, 7));
    s.ref = ref_reduce;
    fd_run(&s);
    /* output rank */
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(3, 5, 7));
    ts_value pv[1] = {x}, out[1];
    build_reduce(g, pv, out, &ctx);
    CHECK(ts_value_shape(g, out[0], NULL) == expect_nd, "%s: output rank %d, expected %d", name,
          ts_value_shape(g, out[0], NULL), expect_nd);
    ts_graph_free(g);
}
#define RED_TESTS(OP, ID, NAME)                                                                      \
    static void test_##OP##_axis1(void) { reduce_case(NAME " [3,5,7] axes {1}", ID, 1, (int[]){1}, 0, 2); } \
    static void test_##OP##_axes02_keep(void) {                                                      \
        reduce_case(NAME " [3,5,7] axes {0,2} keepdims", ID, 2, (int[]){0, 2}, 1, 3);                \
    }                                                                                                \
    static void test_##OP##_all(void) { reduce_case(NAME " [3,5,7] all axes", ID, 0, NULL, 0, 0); } \
    static void test_##OP##_last_keep(void) {                                                        \
        reduce_case(NAME " [3,5,7] axes {-1} keepdims", ID, 1, (int[]){-1}, 1, 3);                   \
    }
RED_TESTS(reduce_sum, R_SUM, "reduce_sum")
RED_TESTS(reduce_mean, R_MEAN, "reduce_mean")
RED_TESTS(reduce_max, R_MAX, "reduce_max")

/* ------------------------------------------------------------------ softmax / log_softmax */

typedef struct sm_ctx {
    int log;
    int mask_nd;
    int64_t mask_shape[TS_MAX_DIMS];
    float mask[64];
} sm_ctx;

static int build_softmax(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const sm_ctx *c = ctx;
    if (c->log) {
        o[0] = ts_log_softmax(g, p[0]);
        return 1;
    }
    ts_value m = TS_NONE;
    if (c->mask_nd) {
        ts_tensor *t = ts_tensor_from(TS_F32, c->mask_nd, c->mask_shape, c->mask);
        m = ts_constant(g, t);
        ts_tensor_free(t);
    }
    o[0] = ts_softmax(g, p[0], m);
    return 1;
}
static void ref_softmax(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const sm_ctx *c = ctx;
    hp x = HP(h, "x");
    int64_t C = x.sh[x.nd - 1], rows = x.n / C;
    int64_t co[TS_MAX_DIMS];
    double *z = malloc(sizeof(double) * (size_t)C);
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, s = 0;
        for (int64_t j = 0; j < C; j++) {
            z[j] = x.v[r * C + j];
            if (c->mask_nd) {
                tu_unravel(r * C + j, x.nd, x.sh, co);
                z[j] += c->mask[tu_bcast_index(co, x.nd, c->mask_nd, c->mask_shape)];
            }
            mx = fmax(mx, z[j]);
        }
        for (int64_t j = 0; j < C; j++) s += exp(z[j] - mx);
        for (int64_t j = 0; j < C; j++)
            o[0].ref[r * C + j] = c->log ? z[j] - mx - log(s) : exp(z[j] - mx) / s;
    }
    free(z);
    (void)nout;
}
static void softmax_case(const char *name, const sm_ctx *src, int nx, const int64_t *sx) {
    static sm_ctx ctx;
    ctx = *src;
    fd_spec s;
    fd_init(&s, name, build_softmax, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    s.ref = ref_softmax;
    s.eps = 5e-3;
    fd_run(&s);
}
static void test_softmax_plain(void) {
    sm_ctx c = {0};
    softmax_case("softmax [3,5,7]", &c, DIMS(3, 5, 7));
}
static void test_softmax_padmask(void) {
    /* an additive padding mask [2,1,1,7]: batch 0 masks its last 2 keys, batch 1 its last 4 */
    sm_ctx c = {0};
    c.mask_nd = 4;
    c.mask_shape[0] = 2, c.mask_shape[1] = 1, c.mask_shape[2] = 1, c.mask_shape[3] = 7;
    for (int j = 0; j < 7; j++) {
        c.mask[j] = j >= 5 ? -10000.f : 0.f;
        c.mask[7 + j] = j >= 3 ? -10000.f : 0.f;
    }
    softmax_case("softmax [2,3,4,7] + padding mask [2,1,1,7]", &c, DIMS(2, 3, 4, 7));
}
static void test_softmax_rowmask(void) {
    sm_ctx c = {0};
    c.mask_nd = 1;
    c.mask_shape[0] = 13;
    tu_rng r = tu_rng_seed(99);
    for (int j = 0; j < 13; j++) c.mask[j] = (float)tu_uniform(&r, -2, 2);
    softmax_case("softmax [5,13] + additive mask [13]", &c, DIMS(5, 13));
}
static void test_softmax_width1(void) {
    sm_ctx c = {0};
    softmax_case("softmax [4,1] (one class: constant output)", &c, DIMS(4, 1));
}
static void test_log_softmax_2d(void) {
    sm_ctx c = {0};
    c.log = 1;
    softmax_case("log_softmax [5,7]", &c, DIMS(5, 7));
}
static void test_log_softmax_3d(void) {
    sm_ctx c = {0};
    c.log = 1;
    softmax_case("log_softmax [2,3,13]", &c, DIMS(2, 3, 13));
}

/* ------------------------------------------------------------------ layer_norm */

typedef struct ln_ctx {
    int gamma, beta;
    float eps;
} ln_ctx;

static int build_ln(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const ln_ctx *c = ctx;
    int k = 1;
    ts_value gm = c->gamma ? p[k++] : TS_NONE;
    ts_value bt = c->beta ? p[k++] : TS_NONE;
    o[0] = ts_layer_norm(g, p[0], gm, bt, c->eps);
    return 1;
}
static void ref_ln(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const ln_ctx *c = ctx;
    hp x = HP(h, "x");
    const float *gm = c->gamma ? HP(h, "gamma").v : NULL, *bt = c->beta ? HP(h, "beta").v : NULL;
    int64_t C = x.sh[x.nd - 1], rows = x.n / C;
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < C; j++) mean += x.v[r * C + j];
        mean /= (double)C;
        for (int64_t j = 0; j < C; j++) var += (x.v[r * C + j] - mean) * (x.v[r * C + j] - mean);
        var /= (double)C;
        double inv = 1.0 / sqrt(var + c->eps);
        for (int64_t j = 0; j < C; j++)
            o[0].ref[r * C + j] = (x.v[r * C + j] - mean) * inv * (gm ? gm[j] : 1.0) + (bt ? bt[j] : 0.0);
    }
    (void)nout;
}
static void ln_case(const char *name, int gamma, int beta, int nx, const int64_t *sx) {
    static ln_ctx ctx;
    ctx.gamma = gamma;
    ctx.beta = beta;
    ctx.eps = 1e-5f;
    fd_spec s;
    fd_init(&s, name, build_ln, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    if (gamma) fd_param(&s, "gamma", GEN_GAMMA, 1, &sx[nx - 1]);
    if (beta) fd_param(&s, "beta", GEN_UNIF, 1, &sx[nx - 1]);
    s.ref = ref_ln;
    s.eps = 5e-3;
    fd_run(&s);
}
static void test_layer_norm_both(void) { ln_case("layer_norm [3,5,13] gamma and beta", 1, 1, DIMS(3, 5, 13)); }
static void test_layer_norm_gamma(void) { ln_case("layer_norm [3,5,13] gamma only", 1, 0, DIMS(3, 5, 13)); }
static void test_layer_norm_beta(void) { ln_case("layer_norm [3,5,13] beta only", 0, 1, DIMS(3, 5, 13)); }
static void test_layer_norm_none(void) { ln_case("layer_norm [4,7] no gamma, no beta", 0, 0, DIMS(4, 7)); }

/* ------------------------------------------------------------------ dropout */

typedef struct do_ctx {
    float p;
} do_ctx;

static int build_dropout(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const do_ctx *c = ctx;
    o[0] = ts_dropout(g, p[0], c->p);
    return 1;
}
static void dropout_case(const char *name, float p, int nx, const int64_t *sx) {
    static do_ctx ctx;
    ctx.p = p;
    fd_spec s;
    fd_init(&s, name, build_dropout, &ctx);
    fd_param(&s, "x", GEN_UNIF, nx, sx);
    s.fd_train = 1; /* dropout is the identity in inference programs */
    fd_run(&s);     /* the forward values are checked in test_runtime (dropout semantics) */
}
static void test_dropout_03(void) { dropout_case("dropout p=0.3 [5,13] (step pinned)", 0.3f, DIMS(5, 13)); }
static void test_dropout_05(void) { dropout_case("dropout p=0.5 [3,4,7] (step pinned)", 0.5f, DIMS(3, 4, 7)); }

/* ------------------------------------------------------------------ cross_entropy */

typedef struct ce_ctx {
    ts_dtype dt;
    int nd;
    int64_t shape[TS_MAX_DIMS];
    int64_t labels[16];
    int64_t ignore;
} ce_ctx;

static int build_ce(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const ce_ctx *c = ctx;
    ts_tensor *t = ts_tensor_new(c->dt, c->nd, c->shape);
    for (int64_t i = 0; i < ts_tensor_numel(t); i++) {
        if (c->dt == TS_I32) ((int32_t *)ts_tensor_data(t))[i] = (int32_t)c->labels[i];
        else ((int64_t *)ts_tensor_data(t))[i] = c->labels[i];
    }
    ts_value lab = ts_constant(g, t);
    ts_tensor_free(t);
    o[0] = ts_cross_entropy(g, p[0], lab, c->ignore);
    return 1;
}
static void ref_ce(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const ce_ctx *c = ctx;
    hp x = HP(h, "logits");
    int64_t C = x.sh[x.nd - 1], rows = x.n / C;
    double sum = 0;
    int64_t cnt = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (c->labels[r] == c->ignore) continue;
        double mx = -INFINITY, s = 0;
        for (int64_t j = 0; j < C; j++) mx = fmax(mx, x.v[r * C + j]);
        for (int64_t j = 0; j < C; j++) s += exp(x.v[r * C + j] - mx);
        sum += -(x.v[r * C + c->labels[r]] - mx - log(s));
        cnt++;
    }
    o[0].ref[0] = cnt ? sum / (double)cnt : 0.0;
    (void)nout;
}
static void ce_case(const char *name, const ce_ctx *src, int nx, const int64_t *sx) {
    static ce_ctx ctx;
    ctx = *src;
    fd_spec s;
    fd_init(&s, name, build_ce, &ctx);
    fd_param(&s, "logits", GEN_UNIF, nx, sx);
    s.ref = ref_ce;
    s.eps = 5e-3;
    fd_run(&s);
}
static void test_ce_ignore(void) {
    ce_ctx c = {TS_I64, 1, {6}, {3, 0, -100, 6, 2, -100}, -100};
    ce_case("cross_entropy [6,7], i64 labels, 2 rows ignored", &c, DIMS(6, 7));
}
static void test_ce_3d_i32(void) {
    ce_ctx c = {TS_I32, 2, {2, 3}, {0, 1, 4, 1, 3, 2}, 1};
    ce_case("cross_entropy [2,3,5], i32 labels, ignore_index 1", &c, DIMS(2, 3, 5));
}
static void test_ce_all_ignored(void) {
    ce_ctx c = {TS_I64, 1, {2}, {-1, -1}, -1};
    ce_case("cross_entropy [2,4] every row ignored (loss 0)", &c, DIMS(2, 4));
}

/* ------------------------------------------------------------------ where / cast */

typedef struct where_ctx {
    int nd;
    int64_t shape[TS_MAX_DIMS];
    uint8_t cond[32];
} where_ctx;

static int build_where(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const where_ctx *c = ctx;
    ts_tensor *t = ts_tensor_from(TS_U8, c->nd, c->shape, c->cond);
    ts_value cv = ts_constant(g, t);
    ts_tensor_free(t);
    o[0] = ts_where(g, cv, p[0], p[1]);
    return 1;
}
static void ref_where(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const where_ctx *c = ctx;
    hp a = HP(h, "a"), b = HP(h, "b");
    int64_t co[TS_MAX_DIMS];
    for (int64_t i = 0; i < o[0].n; i++) {
        tu_unravel(i, o[0].nd, o[0].shape, co);
        int cond = c->cond[tu_bcast_index(co, o[0].nd, c->nd, c->shape)] != 0;
        o[0].ref[i] = cond ? a.v[tu_bcast_index(co, o[0].nd, a.nd, a.sh)]
                           : b.v[tu_bcast_index(co, o[0].nd, b.nd, b.sh)];
    }
    (void)nout;
}
static void test_where_full(void) {
    static where_ctx ctx = {2, {3, 5}, {1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 7, 0, 0, 1, 1}};
    fd_spec s;
    fd_init(&s, "where cond [3,5], a [3,5], b [1,5]", build_where, &ctx);
    fd_param(&s, "a", GEN_UNIF, DIMS(3, 5));
    fd_param(&s, "b", GEN_UNIF, DIMS(1, 5));
    s.ref = ref_where;
    fd_run(&s);
}
static void test_where_bcast(void) {
    static where_ctx ctx = {2, {3, 1}, {0, 1, 0}};
    fd_spec s;
    fd_init(&s, "where cond [3,1], a [3,5], b []", build_where, &ctx);
    fd_param(&s, "a", GEN_UNIF, DIMS(3, 5));
    fd_param(&s, "b", GEN_UNIF, 0, NULL);
    s.ref = ref_where;
    fd_run(&s);
}

static int build_cast(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    (void)ctx;
    o[0] = ts_cast(g, ts_tanh(g, p[0]), TS_F32);
    return 1;
}
static void ref_cast(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    hp x = HP(h, "x");
    for (int64_t i = 0; i < o[0].n; i++) o[0].ref[i] = tanh(x.v[i]);
    (void)nout;
    (void)ctx;
}
static void test_cast_f32(void) {
    fd_spec s;
    fd_init(&s, "cast f32 -> f32 (of tanh) [3,5]", build_cast, NULL);
    fd_param(&s, "x", GEN_UNIF, DIMS(3, 5));
    s.ref = ref_cast;
    fd_run(&s);
}

/* f32 -> bf16 -> f32 is too coarse for finite differences; its gradient is the upstream
 * gradient R rounded through bf16, so compare the analytic gradient with R directly. */
static void test_cast_bf16_grad(void) {
    tu_rng r = tu_rng_seed(5);
    ts_graph *g = ts_graph_new();
    ts_value x = ts_param(g, "x", TS_F32, DIMS(3, 5), ts_init_uniform(-1, 1));
    ts_value y = ts_cast(g, ts_cast(g, x, TS_BF16), TS_F32);
    ts_tensor *R = tu_rand_tensor(&r, DIMS(3, 5), -1, 1);
    ts_value loss = ts_reduce_sum(g, ts_mul(g, y, ts_constant(g, R)), 0, NULL, 0);
    CHECK(ts_value_dtype(g, ts_cast(g, x, TS_BF16)) == TS_BF16, "cast to bf16 has dtype %d",
          (int)ts_value_dtype(g, ts_cast(g, x, TS_BF16)));
    ts_program *p = NULL;
    if (CHECK_OK(ts_backward(g, loss)) == TS_OK) {
        p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("x@GRAD")});
        CHECK(p != NULL, "compile: %s", ts_last_error());
    }
    if (p && CHECK_OK(ts_program_run(p)) == TS_OK) {
        ts_tensor *gx = TU_FETCH(p, "x@GRAD");
        double maxrel = 0;
        for (int i = 0; gx && i < 15; i++)
            maxrel = fmax(maxrel, fabs(tu_f32(gx)[i] - tu_f32(R)[i]) / fabs(tu_f32(R)[i]));
        printf("  %-4s %-46s grad vs R rel err %.2e (bf16 rounding bound 2^-8)\n",
               gx && maxrel <= 1.0 / 256 ? "ok" : "FAIL", "cast f32 -> bf16 -> f32 [3,5]", maxrel);
        CHECK(gx && maxrel <= 1.0 / 256, "gradient through a bf16 round trip is off by %.3e", maxrel);
        ts_tensor_free(gx);
    }
    ts_program_free(p);
    ts_tensor_free(R);
    ts_graph_free(g);
}

/* cast_stochastic to f16 and back, step a constant: with the random bits fixed, x -> y is a
 * staircase within one gap of the identity, so the central difference is within gap / eps of the
 * straight-through gradient: 2^-14 / 1e-2 = 0.6% for x in [-0.11, 0.11] (GEN_SMALL, +- eps). */
static int build_cast_sr(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    (void)ctx;
    int64_t step = 12;
    ts_tensor *t = ts_tensor_from(TS_I64, 0, NULL, &step);
    ts_value sv = ts_constant(g, t);
    ts_tensor_free(t);
    o[0] = ts_cast(g, ts_cast_stochastic(g, p[0], sv, TS_F16, 3, ts_cast_stochastic_key("x")), TS_F32);
    return 1;
}
static void ref_cast_sr(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    hp x = HP(h, "x");
    for (int64_t i = 0; i < o[0].n; i++) o[0].ref[i] = x.v[i]; /* within a gap, 6.1e-5 < ref_tol */
    (void)nout;
    (void)ctx;
}
static void test_cast_stochastic_f16(void) {
    fd_spec s;
    fd_init(&s, "cast_stochastic f32 -> f16 -> f32 [5,13]", build_cast_sr, NULL);
    fd_param(&s, "x", GEN_SMALL, DIMS(5, 13));
    s.ref = ref_cast_sr;
    fd_run(&s);
}

/* cast_stochastic to bf16 is too coarse for finite differences (as the plain cast above): its
 * gradient is straight through, the upstream gradient R rounded through bf16 by the cast back. */
static void test_cast_stochastic_bf16_grad(void) {
    tu_rng r = tu_rng_seed(6);
    ts_graph *g = ts_graph_new();
    ts_value x = ts_param(g, "x", TS_F32, DIMS(3, 5), ts_init_uniform(-1, 1));
    ts_value step = ts_input(g, "step", TS_I64, 0, NULL);
    ts_value y = ts_cast(g, ts_cast_stochastic(g, x, step, TS_BF16, 1, 2), TS_F32);
    ts_tensor *R = tu_rand_tensor(&r, DIMS(3, 5), -1, 1);
    ts_value loss = ts_reduce_sum(g, ts_mul(g, y, ts_constant(g, R)), 0, NULL, 0);
    ts_program *p = NULL;
    if (CHECK_OK(ts_backward(g, loss)) == TS_OK) {
        p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("x@GRAD")});
        CHECK(p != NULL, "compile: %s", ts_last_error());
    }
    int64_t sv = 3;
    if (p && CHECK_OK(ts_program_feed_data(p, "step", TS_I64, 0, NULL, &sv)) == TS_OK &&
        CHECK_OK(ts_program_run(p)) == TS_OK) {
        ts_tensor *gx = TU_FETCH(p, "x@GRAD");
        double maxrel = 0;
        for (int i = 0; gx && i < 15; i++)
            maxrel = fmax(maxrel, fabs(tu_f32(gx)[i] - tu_f32(R)[i]) / fabs(tu_f32(R)[i]));
        printf("  %-4s %-46s grad vs R rel err %.2e (bf16 rounding bound 2^-8)\n",
               gx && maxrel <= 1.0 / 256 ? "ok" : "FAIL", "cast_stochastic f32 -> bf16 -> f32 [3,5]", maxrel);
        CHECK(gx && maxrel <= 1.0 / 256, "straight-through gradient off by %.3e", maxrel);
        ts_tensor_free(gx);
    }
    ts_program_free(p);
    ts_tensor_free(R);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ random shapes */

static const int64_t odd_dims[] = {1, 2, 3, 5, 7, 13};
static int64_t pick_dim(tu_rng *r) { return odd_dims[tu_randint(r, 6)]; }

static void shape_str(char *buf, size_t cap, int nd, const int64_t *sh) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < nd && o < cap; i++) o += (size_t)snprintf(buf + o, cap - o, i ? ",%lld" : "%lld", (long long)sh[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* matmul with random sizes, transposes and batch layouts (fixed seed: reproducible) */
static void test_matmul_random(void) {
    tu_rng r = tu_rng_seed(2024);
    for (int trial = 0; trial < 4; trial++) {
        int ta = (int)(tu_next(&r) & 1), tb = (int)(tu_next(&r) & 1), layout = (int)tu_randint(&r, 3);
        int64_t M = pick_dim(&r), K = pick_dim(&r), N = pick_dim(&r), B = pick_dim(&r) + 1;
        int64_t sa[4], sb[4];
        int na = 0, nb = 0;
        if (layout == 1) sa[na++] = B;                   /* batched a, shared 2-D b */
        if (layout == 2) sa[na++] = B, sa[na++] = 1, sb[nb++] = 2; /* broadcast batch */
        sa[na++] = ta ? K : M;
        sa[na++] = ta ? M : K;
        sb[nb++] = tb ? N : K;
        sb[nb++] = tb ? K : N;
        static char name[160];
        char s1[64], s2[64];
        shape_str(s1, sizeof s1, na, sa);
        shape_str(s2, sizeof s2, nb, sb);
        snprintf(name, sizeof name, "matmul random %s%s @ %s%s", s1, ta ? "^T" : "", s2, tb ? "^T" : "");
        mm_case(name, ta, tb, na, sa, nb, sb);
    }
}

/* binary ops with random broadcast patterns: b drops leading dims or has 1s */
static void test_binary_random(void) {
    tu_rng r = tu_rng_seed(77);
    for (int trial = 0; trial < 6; trial++) {
        int op = (int)tu_randint(&r, 5), nd = 1 + (int)tu_randint(&r, 3);
        int64_t sa[3], sb[3];
        for (int i = 0; i < nd; i++) sa[i] = pick_dim(&r);
        int nb = nd - (int)tu_randint(&r, nd);
        for (int i = 0; i < nb; i++) {
            int64_t d = sa[nd - nb + i];
            sb[i] = tu_next(&r) & 1 ? 1 : d;
        }
        if (tu_next(&r) & 1) /* swap: the broadcast operand first */
            bin_case(op, nb, sb, nd, sa);
        else
            bin_case(op, nd, sa, nb, sb);
    }
}

/* reductions over random axis subsets of random shapes */
static void test_reduce_random(void) {
    tu_rng r = tu_rng_seed(31);
    static const char *const opn[] = {"reduce_sum", "reduce_mean", "reduce_max"};
    for (int trial = 0; trial < 6; trial++) {
        static red_ctx ctx;
        memset(&ctx, 0, sizeof ctx);
        int nd = 2 + (int)tu_randint(&r, 3);
        int64_t sh[4];
        for (int i = 0; i < nd; i++) sh[i] = 2 + tu_randint(&r, 4);
        ctx.op = trial % 3;
        ctx.keep = (int)(tu_next(&r) & 1);
        for (int i = 0; i < nd; i++)
            if (tu_next(&r) & 1) ctx.axes[ctx.naxes++] = tu_next(&r) & 1 ? i : i - nd; /* +- spelling */
        if (ctx.naxes == 0) ctx.axes[ctx.naxes++] = -1;
        static char name[160];
        char s1[64];
        shape_str(s1, sizeof s1, nd, sh);
        size_t o = (size_t)snprintf(name, sizeof name, "%s random %s axes {", opn[ctx.op], s1);
        for (int i = 0; i < ctx.naxes; i++) o += (size_t)snprintf(name + o, sizeof name - o, i ? ",%d" : "%d", ctx.axes[i]);
        snprintf(name + o, sizeof name - o, "}%s", ctx.keep ? " keepdims" : "");
        fd_spec s;
        fd_init(&s, name, build_reduce, &ctx);
        fd_param(&s, "x", ctx.op == R_MAX ? GEN_DISTINCT : GEN_UNIF, nd, sh);
        s.ref = ref_reduce;
        fd_run(&s);
    }
}

/* softmax / layer_norm over a random last dim, random leading dims */
static void test_norm_random(void) {
    tu_rng r = tu_rng_seed(5);
    for (int trial = 0; trial < 3; trial++) {
        /* the normalised axis has >= 5 elements: over 2 or 3 the normalised values are nearly
         * piecewise constant and central differences lose their accuracy */
        int64_t sh[3] = {pick_dim(&r), pick_dim(&r), 5 + 2 * tu_randint(&r, 5)};
        static char name[160];
        char s1[64];
        shape_str(s1, sizeof s1, 3, sh);
        snprintf(name, sizeof name, "softmax random %s", s1);
        sm_ctx c = {0};
        softmax_case(name, &c, 3, sh);
        snprintf(name, sizeof name, "layer_norm random %s", s1);
        ln_case(name, 1, 1, 3, sh);
    }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    tu_args(argc, argv);
    printf("finite-difference gradient checks; tolerance max |num - ana| / max(1, |ana|) <= 1e-2\n");
    RUN(test_matmul_plain);
    RUN(test_matmul_trans_a);
    RUN(test_matmul_trans_b);
    RUN(test_matmul_trans_ab);
    RUN(test_matmul_vec);
    RUN(test_matmul_shared_b);
    RUN(test_matmul_shared_b_tb);
    RUN(test_matmul_batch1_shared_b);
    RUN(test_matmul_batch1_shared_b_tb);
    RUN(test_matmul_batched);
    RUN(test_matmul_bcast);
    RUN(test_matmul_batched_tt);
    RUN(test_matmul_batched_tb);
#define RUN_BIN(OP)                                                                                 \
    RUN(test_##OP##_same);                                                                          \
    RUN(test_##OP##_col_row);                                                                       \
    RUN(test_##OP##_scalar_a);                                                                      \
    RUN(test_##OP##_scalar_b);                                                                      \
    RUN(test_##OP##_trailing);                                                                      \
    RUN(test_##OP##_mixed);
    RUN_BIN(add)
    RUN_BIN(sub)
    RUN_BIN(mul)
    RUN_BIN(div)
    RUN_BIN(pow)
    RUN(test_pow_const_exp);
    RUN(test_mul_self);
    RUN(test_scale);
    RUN(test_sqrt);
    RUN(test_exp);
    RUN(test_log);
    RUN(test_relu);
    RUN(test_tanh);
    RUN(test_sigmoid);
    RUN(test_gelu_erf);
    RUN(test_gelu_tanh);
    RUN(test_reshape_infer);
    RUN(test_reshape_flat);
    RUN(test_reshape_mid);
    RUN(test_transpose_perm3);
    RUN(test_transpose_null);
    RUN(test_transpose_2d);
    RUN(test_transpose_heads);
    RUN(test_slice_mid);
    RUN(test_slice_negative);
    RUN(test_slice_clamp_end);
    RUN(test_slice_clamp_start);
    RUN(test_concat_axis1);
    RUN(test_concat_last);
    RUN(test_concat_axis0);
    RUN(test_concat_self);
    RUN(test_split_sizes);
    RUN(test_split_equal);
    RUN(test_split_unused);
    RUN(test_expand_mid);
    RUN(test_expand_scalar);
    RUN(test_expand_row);
    RUN(test_gather_i64);
    RUN(test_gather_i32);
#define RUN_RED(OP)                                                                                 \
    RUN(test_##OP##_axis1);                                                                         \
    RUN(test_##OP##_axes02_keep);                                                                   \
    RUN(test_##OP##_all);                                                                           \
    RUN(test_##OP##_last_keep);
    RUN_RED(reduce_sum)
    RUN_RED(reduce_mean)
    RUN_RED(reduce_max)
    RUN(test_softmax_plain);
    RUN(test_softmax_padmask);
    RUN(test_softmax_rowmask);
    RUN(test_softmax_width1);
    RUN(test_log_softmax_2d);
    RUN(test_log_softmax_3d);
    RUN(test_layer_norm_both);
    RUN(test_layer_norm_gamma);
    RUN(test_layer_norm_beta);
    RUN(test_layer_norm_none);
    RUN(test_dropout_03);
    RUN(test_dropout_05);
    RUN(test_ce_ignore);
    RUN(test_ce_3d_i32);
    RUN(test_ce_all_ignored);
    RUN(test_where_full);
    RUN(test_where_bcast);
    RUN(test_cast_f32);
    RUN(test_cast_bf16_grad);
    RUN(test_cast_stochastic_f16);
    RUN(test_cast_stochastic_bf16_grad);
    RUN(test_matmul_random);
    RUN(test_binary_random);
    RUN(test_reduce_random);
    RUN(test_norm_random);
    return tu_finish("test_grad_ops");
}
