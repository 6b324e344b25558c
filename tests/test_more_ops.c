/*
 * test_more_ops.c — the ops of tessera.h's "more ops" section: each one's forward against a naive
 * host reference written here (in double, or exact for integer and index results), its gradient
 * by finite differences (fd_check.h) where it is differentiable, and its errors on bad input
 * (a status and a message naming the op and the value, never a crash).
 *
 * Cases: ts_math (every function, forward and gradient), ts_binary (comparisons, logic, min / max,
 * mod / fmod, integer arithmetic and shifts on f32 / i32 / i64 / u8 with broadcasting; integer
 * division by zero), ts_isnan / ts_isinf / ts_not, ts_select, ts_argmax / ts_argmin (ties, NaN,
 * select_last, keepdims), ts_reduce_min / ts_reduce_prod, ts_trilu, ts_gather_elements /
 * ts_scatter_elements, ts_nll_loss, ts_tile, ts_pad, ts_topk, ts_grid_sample (every mode, padding and
 * alignment), ts_det, ts_tfidf, ts_roi_align, ts_dft.
 */
#include "fd_check.h"

/* ------------------------------------------------------------------ helpers */

/* Compile g for inference fetching "out" (and "out2" when two), feed the inputs named in[i] with
 * t[i], run; the fetched tensors go to res[0..nout). Returns the run's status (TS_OK, or the
 * failure, with ts_last_error()). */
static ts_status run_graph(ts_graph *g, int nin, const char *const *in, ts_tensor *const *t, int nout,
                           ts_tensor **res) {
    const char *f2[] = {"out", "out2"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = nout, .fetches = f2, .inference = 1, .num_threads = 1});
    if (!p) return ts_last_status();
    ts_status s = TS_OK;
    for (int i = 0; i < nin && !s; i++) s = ts_program_feed(p, in[i], t[i]);
    if (!s) s = ts_program_run(p);
    for (int k = 0; k < nout && !s; k++) s = ts_program_fetch(p, f2[k], &res[k]);
    ts_program_free(p);
    return s;
}

static ts_tensor *tensor_i64(int nd, const int64_t *sh, const int64_t *v) { return ts_tensor_from(TS_I64, nd, sh, v); }

/* A constant of g holding a copy of data (the host tensor is freed again). */
static ts_value constant_of(ts_graph *g, ts_dtype dt, int nd, const int64_t *sh, const void *data) {
    ts_tensor *t = ts_tensor_from(dt, nd, sh, data);
    ts_value v = ts_constant(g, t);
    ts_tensor_free(t);
    return v;
}

/* ------------------------------------------------------------------ ts_math */

static const float math_alpha[TS_MATH_COUNT] = {
    [TS_MATH_ELU] = 0.7f, [TS_MATH_SELU] = 1.6732632f, [TS_MATH_CELU] = 1.3f, [TS_MATH_LEAKY_RELU] = 0.1f,
    [TS_MATH_THRESHOLDED_RELU] = 0.3f, [TS_MATH_SHRINK] = 0.4f,
};
static const float math_beta[TS_MATH_COUNT] = {[TS_MATH_SELU] = 1.050701f, [TS_MATH_SHRINK] = 0.25f};

static double math_ref(int fn, double x, double a, double b) {
    switch (fn) {
    case TS_MATH_ABS: return fabs(x);
    case TS_MATH_NEG: return -x;
    case TS_MATH_FLOOR: return floor(x);
    case TS_MATH_CEIL: return ceil(x);
    case TS_MATH_ROUND: { /* halves to even, written out */
        double f = floor(x), d = x - f;
        if (d < 0.5) return f;
        if (d > 0.5) return f + 1;
        return fmod(f, 2.0) == 0 ? f : f + 1;
    }
    case TS_MATH_SIGN: return x > 0 ? 1 : x < 0 ? -1 : x; /* 0, or NaN */
    case TS_MATH_RECIPROCAL: return 1 / x;
    case TS_MATH_SIN: return sin(x);
    case TS_MATH_COS: return cos(x);
    case TS_MATH_TAN: return tan(x);
    case TS_MATH_ASIN: return asin(x);
    case TS_MATH_ACOS: return acos(x);
    case TS_MATH_ATAN: return atan(x);
    case TS_MATH_SINH: return sinh(x);
    case TS_MATH_COSH: return cosh(x);
    case TS_MATH_ASINH: return log(x + sqrt(x * x + 1));
    case TS_MATH_ACOSH: return log(x + sqrt(x * x - 1));
    case TS_MATH_ATANH: return 0.5 * log((1 + x) / (1 - x));
    case TS_MATH_ERF: return erf(x);
    case TS_MATH_SOFTPLUS: return log(1 + exp(x));
    case TS_MATH_SOFTSIGN: return x / (1 + fabs(x));
    case TS_MATH_ELU: return x > 0 ? x : a * (exp(x) - 1);
    case TS_MATH_SELU: return b * (x > 0 ? x : a * (exp(x) - 1));
    case TS_MATH_CELU: return fmax(0, x) + fmin(0, a * (exp(x / a) - 1));
    case TS_MATH_LEAKY_RELU: return x < 0 ? a * x : x;
    case TS_MATH_THRESHOLDED_RELU: return x > a ? x : 0;
    default: return x < -a ? x + b : x > a ? x - b : 0; /* shrink */
    }
}

/* Inputs inside each function's domain, away from kinks by more than the FD step. */
static int math_gen(int fn) {
    switch (fn) {
    case TS_MATH_ACOSH: return GEN_POS; /* shifted by +1.2 in the builder */
    case TS_MATH_RECIPROCAL: return GEN_SIGNED_POS;
    case TS_MATH_ASIN: case TS_MATH_ACOS: case TS_MATH_ATANH: return GEN_SMALL;
    default: return GEN_AWAY0;
    }
}

typedef struct math_ctx {
    int fn;
} math_ctx;

static int build_math(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const math_ctx *c = ctx;
    ts_value x = c->fn == TS_MATH_ACOSH ? ts_scale(g, p[0], 1.f, 1.2f) : p[0];
    o[0] = ts_math(g, (ts_math_fn)c->fn, x, math_alpha[c->fn], math_beta[c->fn]);
    return 1;
}

static void ref_math(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const math_ctx *c = ctx;
    const float *x = fd_param_val(h, "x");
    for (int64_t i = 0; i < o[0].n; i++) {
        float v = c->fn == TS_MATH_ACOSH ? x[i] + 1.2f : x[i];
        o[0].ref[i] = math_ref(c->fn, v, math_alpha[c->fn], math_beta[c->fn]);
    }
    (void)nout;
}

/* Every differentiable function: forward against math_ref and FD gradient. */
static void test_math_grad(void) {
    for (int fn = 0; fn < TS_MATH_COUNT; fn++) {
        if (fn == TS_MATH_FLOOR || fn == TS_MATH_CEIL || fn == TS_MATH_ROUND || fn == TS_MATH_SIGN) continue;
        static math_ctx ctx;
        ctx.fn = fn;
        char name[64];
        snprintf(name, sizeof name, "math %s [3,5]", ts_math_fn_name((ts_math_fn)fn));
        fd_spec s;
        fd_init(&s, name, build_math, &ctx);
        fd_param(&s, "x", math_gen(fn), DIMS(3, 5));
        s.ref = ref_math;
        s.eps = 1e-3;
        fd_run(&s);
    }
}

/* Every function on a grid that crosses the kinks, the halves of round and the edges of the
 * domains; NaN in, NaN out. */
static void test_math_forward(void) {
    float xs[] = {-3.5f, -2.5f, -1.5f, -1.f, -0.5f, -0.3f, 0.f, 0.25f, 0.5f, 0.9f, 1.f, 1.5f, 2.5f, 3.7f, NAN};
    int n = (int)(sizeof xs / sizeof *xs);
    for (int fn = 0; fn < TS_MATH_COUNT; fn++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", TS_F32, DIMS(n));
        ts_name(g, ts_math(g, (ts_math_fn)fn, x, math_alpha[fn], math_beta[fn]), "out");
        ts_tensor *t = ts_tensor_from(TS_F32, DIMS(n), xs), *y = NULL;
        if (CHECK_OK(run_graph(g, 1, (const char *[]){"x"}, &t, 1, &y)) == TS_OK) {
            const float *v = tu_f32(y);
            for (int i = 0; i < n; i++) {
                double r = math_ref(fn, xs[i], math_alpha[fn], math_beta[fn]);
                int ok = isnan(r) ? isnan(v[i]) : isinf(r) ? v[i] == r : fabs(v[i] - r) <= 2e-6 * fmax(1, fabs(r));
                CHECK(ok, "math %s(%g) = %.9g, the reference %.9g", ts_math_fn_name((ts_math_fn)fn), xs[i], v[i], r);
            }
        }
        ts_tensor_free(t);
        ts_tensor_free(y);
        ts_graph_free(g);
    }
}

static void test_math_errors(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_I32, DIMS(4));
    CHECK(ts_math(g, TS_MATH_SIN, x, 0, 0) == TS_NONE, "ts_math took an i32 input");
    CHECK_STATUS(ts_graph_status(g), TS_ERR_DTYPE);
    CHECK_ERRMSG("math", "sin", "'x'", "i32");
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(4));
    CHECK(ts_math(g, (ts_math_fn)99, x, 0, 0) == TS_NONE, "ts_math took function 99");
    CHECK_ERRMSG("ts_math", "99");
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(4));
    CHECK(ts_math(g, TS_MATH_CELU, x, 0.f, 0) == TS_NONE, "celu took alpha 0");
    CHECK_ERRMSG("celu", "alpha");
    ts_graph_free(g);
    CHECK(ts_math_fn_name(TS_MATH_COUNT) == NULL && strcmp(ts_math_fn_name(TS_MATH_ERF), "erf") == 0,
          "ts_math_fn_name");
}

/* ------------------------------------------------------------------ ts_binary */

static double bin_ref_f(int op, double a, double b) {
    switch (op) {
    case TS_BIN_EQUAL: return a == b;
    case TS_BIN_LESS: return a < b;
    case TS_BIN_LESS_EQUAL: return a <= b;
    case TS_BIN_GREATER: return a > b;
    case TS_BIN_GREATER_EQUAL: return a >= b;
    case TS_BIN_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case TS_BIN_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case TS_BIN_MOD: return a - b * floor(a / b);
    default: return a - b * trunc(a / b); /* fmod */
    }
}

static int64_t bin_ref_i(int op, int64_t a, int64_t b, int bits) {
    switch (op) {
    case TS_BIN_EQUAL: return a == b;
    case TS_BIN_LESS: return a < b;
    case TS_BIN_LESS_EQUAL: return a <= b;
    case TS_BIN_GREATER: return a > b;
    case TS_BIN_GREATER_EQUAL: return a >= b;
    case TS_BIN_AND: return a && b;
    case TS_BIN_OR: return a || b;
    case TS_BIN_XOR: return !a != !b;
    case TS_BIN_MIN: return a < b ? a : b;
    case TS_BIN_MAX: return a > b ? a : b;
    case TS_BIN_MOD: { /* floor division, written out */
        if (b == -1) return 0;
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
        return (int64_t)((uint64_t)a - (uint64_t)b * (uint64_t)q); /* wraps, as the dtype does */
    }
    case TS_BIN_FMOD: return b == -1 ? 0 : (int64_t)((uint64_t)a - (uint64_t)b * (uint64_t)(a / b));
    case TS_BIN_ADD: return (int64_t)((uint64_t)a + (uint64_t)b); /* wraps */
    case TS_BIN_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case TS_BIN_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case TS_BIN_DIV: return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b; /* INT_MIN / -1 wraps */
    case TS_BIN_SHL: return b >= bits ? 0 : (int64_t)((uint64_t)a << b);
    default: { /* shr: logical, on the unsigned value of the width */
        uint64_t ua = bits == 64 ? (uint64_t)a : (uint64_t)a & ((1ull << bits) - 1);
        return b >= bits ? 0 : (int64_t)(ua >> b);
    }
    }
}

/* The result's value of element i as int64 / double, by dtype. */
static int64_t elem_i(ts_tensor *t, int64_t i) {
    switch (ts_tensor_dtype(t)) {
    case TS_I32: return ((int32_t *)ts_tensor_data(t))[i];
    case TS_I64: return ((int64_t *)ts_tensor_data(t))[i];
    case TS_U8: return ((uint8_t *)ts_tensor_data(t))[i];
    default: return (int64_t)tu_f32(t)[i];
    }
}

/* a [3, 1, 4] op b [5, 1] for one dtype and op: every element against the reference (integers
 * wrapped to the dtype's width). */
static void binary_case(ts_dtype dt, int op) {
    int64_t sa[] = {3, 1, 4}, sb[] = {5, 1};
    int64_t na = 12, nb = 5;
    ts_tensor *a = ts_tensor_new(dt, 3, sa), *b = ts_tensor_new(dt, 2, sb);
    tu_rng r = tu_rng_seed(100 + (uint64_t)op * 7 + dt);
    int div = op == TS_BIN_DIV || op == TS_BIN_MOD || op == TS_BIN_FMOD, shift = op == TS_BIN_SHL || op == TS_BIN_SHR;
    for (int64_t i = 0; i < na + nb; i++) {
        ts_tensor *t = i < na ? a : b;
        int64_t j = i < na ? i : i - na;
        int64_t v = tu_randint(&r, 21) - 10;
        if (dt == TS_U8 || (shift && t == b)) v = tu_randint(&r, shift && t == b ? 9 : 256);
        if (div && t == b && v == 0) v = 3;
        if (i == 1 && dt == TS_I32) v = INT32_MIN; /* extremes wrap */
        if (i == 1 && dt == TS_I64) v = INT64_MIN;
        switch (dt) {
        case TS_F32: tu_f32(t)[j] = (float)v * 0.75f; break;
        case TS_I32: ((int32_t *)ts_tensor_data(t))[j] = (int32_t)v; break;
        case TS_I64: ((int64_t *)ts_tensor_data(t))[j] = v; break;
        default: ((uint8_t *)ts_tensor_data(t))[j] = (uint8_t)v; break;
        }
    }
    if (dt == TS_F32) { /* a NaN among the floats, and exact ties */
        tu_f32(a)[5] = NAN;
        tu_f32(a)[6] = tu_f32(b)[0];
    }
    ts_graph *g = ts_graph_new();
    ts_value va = ts_input(g, "a", dt, 3, sa), vb = ts_input(g, "b", dt, 2, sb);
    ts_name(g, ts_binary(g, (ts_binop)op, va, vb), "out");
    ts_tensor *ins[2] = {a, b}, *y = NULL;
    if (CHECK_OK(run_graph(g, 2, (const char *[]){"a", "b"}, ins, 1, &y)) == TS_OK) {
        int cmp = op <= TS_BIN_XOR;
        CHECK(ts_tensor_dtype(y) == (cmp ? TS_U8 : dt) && ts_tensor_numel(y) == 60, "binary %d on %s: result %s %lld",
              op, ts_dtype_name(dt), ts_dtype_name(ts_tensor_dtype(y)), (long long)ts_tensor_numel(y));
        int bits = (int)ts_dtype_size(dt) * 8, bad = 0;
        for (int64_t i = 0; i < 60 && !bad; i++) {
            int64_t c0 = i / 20, c1 = i / 4 % 5, c2 = i % 4;
            int64_t ia = c0 * 4 + c2, ib = c1;
            if (dt == TS_F32) {
                double x = tu_f32(a)[ia], z = tu_f32(b)[ib];
                double want = bin_ref_f(op, x, z);
                double got = cmp ? (double)((uint8_t *)ts_tensor_data(y))[i] : tu_f32(y)[i];
                bad = isnan(want) ? !isnan(got) : fabs(got - want) > 1e-6 * fmax(1, fabs(want));
                CHECK(!bad, "binary %d f32 at %lld: %g op %g = %g, want %g", op, (long long)i, x, z, got, want);
            } else {
                int64_t x = elem_i(a, ia), z = elem_i(b, ib);
                int64_t want = bin_ref_i(op, x, z, bits);
                if (!cmp && dt == TS_I32) want = (int32_t)(uint32_t)want;
                if (!cmp && dt == TS_U8) want = (uint8_t)want;
                int64_t got = elem_i(y, i);
                bad = got != want;
                CHECK(!bad, "binary %d %s at %lld: %lld op %lld = %lld, want %lld", op, ts_dtype_name(dt),
                      (long long)i, (long long)x, (long long)z, (long long)got, (long long)want);
            }
        }
    }
    ts_tensor_free(a);
    ts_tensor_free(b);
    ts_tensor_free(y);
    ts_graph_free(g);
}

static void test_binary_forward(void) {
    ts_dtype dts[] = {TS_F32, TS_I32, TS_I64, TS_U8};
    for (int d = 0; d < 4; d++)
        for (int op = 0; op < TS_BIN_COUNT; op++) {
            int logic = op == TS_BIN_AND || op == TS_BIN_OR || op == TS_BIN_XOR;
            int shift = op == TS_BIN_SHL || op == TS_BIN_SHR;
            if ((logic && dts[d] != TS_U8) || (shift && dts[d] == TS_F32)) continue;
            if (dts[d] == TS_F32 && op >= TS_BIN_ADD) continue; /* ts_add ... (test_grad_ops) */
            binary_case(dts[d], op);
        }
}

static void test_binary_errors(void) {
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_I64, DIMS(3)), b = ts_input(g, "b", TS_I32, DIMS(3));
    CHECK(ts_binary(g, TS_BIN_ADD, a, b) == TS_NONE, "i64 + i32 was accepted");
    CHECK_ERRMSG("binary", "add", "'a'", "'b'", "dtype");
    ts_graph_free(g);

    g = ts_graph_new();
    a = ts_input(g, "a", TS_F32, DIMS(3));
    b = ts_input(g, "b", TS_F32, DIMS(3));
    CHECK(ts_binary(g, TS_BIN_AND, a, b) == TS_NONE, "and of f32 was accepted");
    CHECK_ERRMSG("binary", "and", "u8");
    ts_graph_free(g);

    g = ts_graph_new();
    a = ts_input(g, "a", TS_I32, DIMS(3));
    b = ts_input(g, "b", TS_I32, DIMS(4));
    CHECK(ts_binary(g, TS_BIN_LESS, a, b) == TS_NONE, "[3] < [4] was accepted");
    CHECK_ERRMSG("binary", "less", "broadcast");
    ts_graph_free(g);

    /* integer division by zero: a run-time error naming the op and the divisor, no SIGFPE */
    g = ts_graph_new();
    a = ts_input(g, "a", TS_I32, DIMS(3));
    b = ts_input(g, "b", TS_I32, DIMS(3));
    ts_name(g, ts_binary(g, TS_BIN_MOD, a, b), "out");
    ts_tensor *ta = ts_tensor_from(TS_I32, DIMS(3), (int32_t[]){1, 2, 3});
    ts_tensor *tb = ts_tensor_from(TS_I32, DIMS(3), (int32_t[]){1, 0, 3});
    ts_tensor *ins[2] = {ta, tb}, *y = NULL;
    CHECK_STATUS(run_graph(g, 2, (const char *[]){"a", "b"}, ins, 1, &y), TS_ERR_RUNTIME);
    CHECK_ERRMSG("binary", "mod", "zero", "'b'");
    ts_tensor_free(ta);
    ts_tensor_free(tb);
    ts_tensor_free(y);
    ts_graph_free(g);
}

/* f32 min / max / mod / fmod: forward and gradients (broadcast operands, no ties). */
typedef struct bin_ctx {
    int op;
} bin_ctx;
static int build_bin(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    o[0] = ts_binary(g, (ts_binop)((const bin_ctx *)ctx)->op, p[0], p[1]);
    return 1;
}
static void ref_bin(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const float *a = fd_param_val(h, "a"), *b = fd_param_val(h, "b");
    for (int64_t i = 0; i < o[0].n; i++) /* a [3, 5], b [5] */
        o[0].ref[i] = bin_ref_f(((const bin_ctx *)ctx)->op, a[i], b[i % 5]);
    (void)nout;
}
static void test_binary_grad(void) {
    int ops[] = {TS_BIN_MIN, TS_BIN_MAX, TS_BIN_MOD, TS_BIN_FMOD};
    const char *names[] = {"min", "max", "mod", "fmod"};
    for (int k = 0; k < 4; k++) {
        static bin_ctx ctx;
        ctx.op = ops[k];
        char name[64];
        snprintf(name, sizeof name, "binary %s [3,5] [5]", names[k]);
        fd_spec s;
        fd_init(&s, name, build_bin, &ctx);
        fd_param(&s, "a", k < 2 ? GEN_DISTINCT : GEN_UNIF, DIMS(3, 5));
        fd_param(&s, "b", k < 2 ? GEN_UNIF : GEN_SIGNED_POS, DIMS(5));
        s.ref = ref_bin;
        s.eps = 1e-3;
        if (k >= 2) s.seed = 7; /* the draw keeps a / b away from the jumps of floor / trunc */
        fd_run(&s);
    }
}

/* ------------------------------------------------------------------ predicates and select */

static void test_predicates_select(void) {
    float xs[] = {1.f, NAN, INFINITY, -INFINITY, -0.f, 3.f};
    uint8_t bs[] = {0, 1, 2, 0, 255, 1};
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(6)), b = ts_input(g, "b", TS_U8, DIMS(6));
    ts_value nan = ts_isnan(g, x), pos = ts_isinf(g, x, 1, 0), neg = ts_isinf(g, x, 0, 1), both = ts_isinf(g, x, 1, 1);
    ts_value nb = ts_not(g, b);
    /* pack the five u8 results as [5, 6] and select i64 values with them */
    ts_value all = ts_concat(g, 5, (ts_value[]){nan, pos, neg, both, nb}, 0);
    ts_name(g, ts_reshape(g, all, DIMS(5, 6)), "out");
    ts_value ia = constant_of(g, TS_I64, DIMS(6), (int64_t[]){10, 20, 30, 40, 50, 60});
    ts_value ib = constant_of(g, TS_I64, DIMS(1), (int64_t[]){-7});
    ts_name(g, ts_select(g, ts_reshape(g, nb, DIMS(6)), ia, ib), "out2");
    ts_tensor *tx = ts_tensor_from(TS_F32, DIMS(6), xs), *tb = ts_tensor_from(TS_U8, DIMS(6), bs);
    ts_tensor *ins[2] = {tx, tb}, *y[2] = {0};
    if (CHECK_OK(run_graph(g, 2, (const char *[]){"x", "b"}, ins, 2, y)) == TS_OK) {
        const uint8_t *v = ts_tensor_data(y[0]);
        const int64_t *s = ts_tensor_data(y[1]);
        for (int i = 0; i < 6; i++) {
            int want[5] = {isnan(xs[i]), xs[i] == INFINITY, xs[i] == -INFINITY, isinf(xs[i]) != 0, bs[i] == 0};
            for (int k = 0; k < 5; k++)
                CHECK(v[k * 6 + i] == want[k], "predicate %d of element %d: %d, want %d", k, i, v[k * 6 + i], want[k]);
            CHECK(s[i] == (bs[i] == 0 ? 10 * (i + 1) : -7), "select element %d: %lld", i, (long long)s[i]);
        }
    }
    ts_tensor_free(tx);
    ts_tensor_free(tb);
    ts_tensor_free(y[0]);
    ts_tensor_free(y[1]);
    ts_graph_free(g);

    g = ts_graph_new();
    x = ts_input(g, "x", TS_I32, DIMS(3));
    CHECK(ts_isnan(g, x) == TS_NONE, "isnan of i32 accepted");
    CHECK_ERRMSG("isnan", "'x'", "i32");
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_I32, DIMS(3));
    b = ts_input(g, "b", TS_I64, DIMS(3));
    ts_value c = ts_input(g, "c", TS_U8, DIMS(3));
    CHECK(ts_select(g, c, x, b) == TS_NONE, "select of i32 and i64 accepted");
    CHECK_ERRMSG("select", "'x'", "'b'");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ argmax / argmin */

static void test_argreduce(void) {
    /* x [2, 3, 4] with ties and a NaN */
    float xs[24];
    for (int i = 0; i < 24; i++) xs[i] = (float)((i * 7) % 5);
    xs[13] = NAN;
    int64_t sh[] = {2, 3, 4};
    for (int axis = -3; axis < 3; axis++)
        for (int mode = 0; mode < 8; mode++) {
            int keep = mode & 1, last = mode >> 1 & 1, is_min = mode >> 2 & 1, a = axis < 0 ? axis + 3 : axis;
            ts_graph *g = ts_graph_new();
            ts_value x = ts_input(g, "x", TS_F32, 3, sh);
            ts_value y = is_min ? ts_argmin(g, x, axis, keep, last) : ts_argmax(g, x, axis, keep, last);
            ts_name(g, y, "out");
            ts_tensor *t = ts_tensor_from(TS_F32, 3, sh, xs), *r = NULL;
            if (CHECK_OK(run_graph(g, 1, (const char *[]){"x"}, &t, 1, &r)) == TS_OK) {
                CHECK(ts_tensor_ndim(r) == (keep ? 3 : 2) && ts_tensor_dtype(r) == TS_I64, "argreduce result rank %d",
                      ts_tensor_ndim(r));
                const int64_t *v = ts_tensor_data(r);
                int64_t st[] = {12, 4, 1}, o = 0;
                for (int64_t c0 = 0; c0 < (a == 0 ? 1 : 2); c0++)
                    for (int64_t c1 = 0; c1 < (a == 1 ? 1 : 3); c1++)
                        for (int64_t c2 = 0; c2 < (a == 2 ? 1 : 4); c2++, o++) {
                            int64_t base = c0 * 12 + c1 * 4 + c2, best = 0;
                            for (int64_t j = 1; j < sh[a]; j++) { /* NaN beats all; ties per select_last */
                                float u = xs[base + j * st[a]], w = xs[base + best * st[a]];
                                if (isnan(w) && !(last && isnan(u))) continue;
                                if (isnan(u) || (is_min ? u < w : u > w) || (last && u == w)) best = j;
                            }
                            CHECK(v[o] == best, "arg%s axis %d keep %d last %d at %lld: %lld, want %lld",
                                  is_min ? "min" : "max", axis, keep, last, (long long)o, (long long)v[o],
                                  (long long)best);
                        }
            }
            ts_tensor_free(t);
            ts_tensor_free(r);
            ts_graph_free(g);
        }
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 3, sh);
    CHECK(ts_argmax(g, x, 3, 0, 0) == TS_NONE, "argmax axis 3 of rank 3 accepted");
    CHECK_ERRMSG("ts_argmax", "axis 3", "'x'");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ reduce_min / reduce_prod */

typedef struct red_ctx {
    int prod, naxes, axes[2], keep;
} red_ctx;
static int build_red(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const red_ctx *c = ctx;
    o[0] = (c->prod ? ts_reduce_prod : ts_reduce_min)(g, p[0], c->naxes, c->axes, c->keep);
    return 1;
}
static void ref_red(const fd_host *h, fd_out *o, int nout, const void *ctx) { /* x [3, 4, 5] */
    const red_ctx *c = ctx;
    const float *x = fd_param_val(h, "x");
    int red[3] = {c->naxes == 0, c->naxes == 0, c->naxes == 0};
    for (int k = 0; k < c->naxes; k++) red[(c->axes[k] + 3) % 3] = 1;
    for (int64_t i = 0; i < o[0].n; i++) o[0].ref[i] = c->prod ? 1 : INFINITY;
    for (int64_t i = 0; i < 60; i++) {
        int64_t cc[3] = {i / 20, i / 5 % 4, i % 5}, q = 0;
        int64_t dims[3] = {3, 4, 5};
        for (int d = 0; d < 3; d++)
            if (!red[d]) q = q * dims[d] + cc[d];
        o[0].ref[q] = c->prod ? o[0].ref[q] * x[i] : fmin(o[0].ref[q], x[i]);
    }
    (void)nout;
}
static void red_case(const char *name, int prod, int naxes, int a0, int a1, int keep) {
    static red_ctx ctx;
    ctx = (red_ctx){prod, naxes, {a0, a1}, keep};
    fd_spec s;
    fd_init(&s, name, build_red, &ctx);
    fd_param(&s, "x", prod ? GEN_SIGNED_POS : GEN_DISTINCT, DIMS(3, 4, 5));
    s.ref = ref_red;
    fd_run(&s);
}
static void test_reduce_min_prod(void) {
    red_case("reduce_min axis 1", 0, 1, 1, 0, 0);
    red_case("reduce_min axes (0, -1) keepdims", 0, 2, 0, -1, 1);
    red_case("reduce_min all", 0, 0, 0, 0, 0);
    red_case("reduce_prod axis 2", 1, 1, 2, 0, 0);
    red_case("reduce_prod axes (0, 1) keepdims", 1, 2, 0, 1, 1);
    red_case("reduce_prod all", 1, 0, 0, 0, 1);
}

/* a zero in the slot: the gradient is the product of the others (one zero) or 0 (two) */
static void test_reduce_prod_zeros(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_param(g, "x", TS_F32, DIMS(3, 3), ts_init_zeros());
    ts_value y = ts_reduce_prod(g, x, 1, (int[]){1}, 0);
    ts_name(g, y, "out");
    CHECK_OK(ts_backward(g, ts_reduce_sum(g, y, 0, NULL, 0)));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("out", "x@GRAD"), .num_threads = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) { ts_graph_free(g); return; }
    float xs[] = {2, 3, 4, 2, 0, 5, 0, 7, 0};
    ts_tensor *t = ts_tensor_from(TS_F32, DIMS(3, 3), xs);
    CHECK_OK(ts_program_set_param(p, "x", t));
    CHECK_OK(ts_program_run(p));
    ts_tensor *yo = TU_FETCH(p, "out"), *gx = TU_FETCH(p, "x@GRAD");
    if (yo && gx) {
        float wy[] = {24, 0, 0}, wg[] = {12, 8, 6, 0, 10, 0, 0, 0, 0};
        for (int i = 0; i < 3; i++) CHECK(tu_f32(yo)[i] == wy[i], "prod row %d = %g", i, tu_f32(yo)[i]);
        for (int i = 0; i < 9; i++)
            CHECK(tu_f32(gx)[i] == wg[i], "prod grad %d = %g, want %g", i, tu_f32(gx)[i], wg[i]);
    }
    ts_tensor_free(t);
    ts_tensor_free(yo);
    ts_tensor_free(gx);
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ trilu */

static void test_trilu_forward(void) {
    int64_t sh[] = {2, 3, 5}, xs[30];
    for (int i = 0; i < 30; i++) xs[i] = i + 1;
    for (int upper = 0; upper < 2; upper++)
        for (int k = -4; k <= 6; k += 2) {
            /* k fixed when built ("out"), and read at run time from an input ("out2") */
            ts_graph *g = ts_graph_new();
            ts_value x = ts_input(g, "x", TS_I64, 3, sh);
            ts_name(g, ts_trilu(g, x, upper, k), "out");
            ts_name(g, ts_trilu_k(g, x, upper, ts_input(g, "k", TS_I64, DIMS(1))), "out2");
            ts_tensor *t[2] = {tensor_i64(3, sh, xs), tensor_i64(DIMS(1), (int64_t[]){k})}, *r[2] = {0};
            if (CHECK_OK(run_graph(g, 2, (const char *[]){"x", "k"}, t, 2, r)) == TS_OK)
                for (int o = 0; o < 2; o++) {
                    const int64_t *v = ts_tensor_data(r[o]);
                    for (int i = 0; i < 30; i++) {
                        int64_t row = i / 5 % 3, col = i % 5;
                        int keep = upper ? col - row >= k : col - row <= k;
                        CHECK(v[i] == (keep ? xs[i] : 0), "trilu%s upper %d k %d at %d: %lld", o ? "_k" : "", upper,
                              k, i, (long long)v[i]);
                    }
                }
            for (int o = 0; o < 2; o++) {
                ts_tensor_free(t[o]);
                ts_tensor_free(r[o]);
            }
            ts_graph_free(g);
        }
    ts_graph *g = ts_graph_new();
    CHECK(ts_trilu(g, ts_input(g, "v", TS_F32, DIMS(4)), 1, 0) == TS_NONE, "trilu of a vector accepted");
    CHECK_ERRMSG("trilu", "'v'", "rank");
    ts_graph_free(g);
    g = ts_graph_new();
    CHECK(ts_trilu_k(g, ts_input(g, "m", TS_F32, DIMS(2, 2)), 1, ts_input(g, "kk", TS_I32, DIMS(1))) == TS_NONE,
          "trilu with an i32 k accepted");
    CHECK_ERRMSG("trilu", "'kk'", "i64");
    ts_graph_free(g);
}

static int build_trilu(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    o[0] = ts_trilu(g, p[0], 0, 1);
    o[1] = ts_trilu_k(g, p[0], 1, constant_of(g, TS_I64, DIMS(1), (int64_t[]){-1}));
    return 2;
}
static void test_trilu_grad(void) {
    fd_spec s;
    fd_init(&s, "trilu lower k=1, trilu_k upper k=-1 [2,4,3]", build_trilu, NULL);
    fd_param(&s, "x", GEN_UNIF, DIMS(2, 4, 3));
    fd_run(&s);
}

/* ------------------------------------------------------------------ gather / scatter elements */

/* indices [3, 2] into data [3, 4] along axis 1 (with a negative one) */
static const int64_t ge_idx[6] = {0, 3, -1, 1, 2, 0};

static int build_ge(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    ts_value idx = constant_of(g, TS_I64, DIMS(3, 2), ge_idx);
    o[0] = ts_gather_elements(g, p[0], idx, -1);
    o[1] = ts_scatter_elements(g, p[0], idx, p[1], 1, TS_SCATTER_NONE);
    o[2] = ts_scatter_elements(g, p[0], idx, p[1], 1, TS_SCATTER_ADD);
    return 3;
}
static void ref_ge(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const float *d = fd_param_val(h, "data"), *u = fd_param_val(h, "upd");
    for (int i = 0; i < 12; i++) o[1].ref[i] = o[2].ref[i] = d[i];
    for (int i = 0; i < 6; i++) {
        int64_t r = i / 2, c = ge_idx[i] < 0 ? ge_idx[i] + 4 : ge_idx[i];
        o[0].ref[i] = d[r * 4 + c];
        o[1].ref[r * 4 + c] = u[i];
        o[2].ref[r * 4 + c] += u[i];
    }
    (void)nout;
}
static void test_elements_grad(void) {
    fd_spec s;
    fd_init(&s, "gather/scatter_elements axis 1 [3,4] by [3,2]", build_ge, NULL);
    fd_param(&s, "data", GEN_UNIF, DIMS(3, 4));
    fd_param(&s, "upd", GEN_UNIF, DIMS(3, 2));
    s.ref = ref_ge;
    fd_run(&s);
}

static void test_elements_errors(void) {
    ts_graph *g = ts_graph_new();
    ts_value d = ts_input(g, "d", TS_I32, DIMS(3, 4)), ix = ts_input(g, "ix", TS_I64, DIMS(3, 2));
    ts_value u = constant_of(g, TS_I32, DIMS(3, 2), (int32_t[]){1, 2, 3, 4, 5, 6});
    ts_name(g, ts_gather_elements(g, d, ix, 1), "out");
    ts_name(g, ts_scatter_elements(g, d, ix, u, 1, TS_SCATTER_MUL), "out2");
    int32_t dv[12];
    for (int i = 0; i < 12; i++) dv[i] = i + 1;
    ts_tensor *td = ts_tensor_from(TS_I32, DIMS(3, 4), dv);
    ts_tensor *good = tensor_i64(DIMS(3, 2), (int64_t[]){0, 0, 3, -4, 2, 1});
    ts_tensor *ins[2] = {td, good}, *y[2] = {0};
    if (CHECK_OK(run_graph(g, 2, (const char *[]){"d", "ix"}, ins, 2, y)) == TS_OK) {
        int32_t wg[] = {1, 1, 8, 5, 11, 10}, ws[] = {2, 2, 3, 4, 20, 6, 7, 24, 9, 60, 55, 12};
        for (int i = 0; i < 6; i++) CHECK(((int32_t *)ts_tensor_data(y[0]))[i] == wg[i], "gather_elements i32 %d", i);
        for (int i = 0; i < 12; i++)
            CHECK(((int32_t *)ts_tensor_data(y[1]))[i] == ws[i], "scatter mul i32 %d: %d want %d", i,
                  ((int32_t *)ts_tensor_data(y[1]))[i], ws[i]);
    }
    ts_tensor_free(y[0]);
    ts_tensor_free(y[1]);
    ts_tensor *bad = tensor_i64(DIMS(3, 2), (int64_t[]){0, 0, 4, 0, 0, 0});
    ins[1] = bad;
    CHECK_STATUS(run_graph(g, 2, (const char *[]){"d", "ix"}, ins, 1, y), TS_ERR_RUNTIME);
    CHECK_ERRMSG("gather_elements", "index 4", "'ix'", "'d'");
    ts_tensor_free(td);
    ts_tensor_free(good);
    ts_tensor_free(bad);
    ts_graph_free(g);

    g = ts_graph_new();
    d = ts_input(g, "d", TS_F32, DIMS(3, 4));
    ix = ts_input(g, "ix", TS_I64, DIMS(3));
    CHECK(ts_gather_elements(g, d, ix, 0) == TS_NONE, "indices of another rank accepted");
    CHECK_ERRMSG("gather_elements", "'ix'", "rank");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ nll_loss */

typedef struct nll_ctx {
    int reduction, weighted;
} nll_ctx;
/* input [3, 4, 2] (N, C, d1), target [3, 2] with an ignored entry (ignore_index -5) */
static const int64_t nll_t[6] = {0, 3, 1, 2, -5, 0};
static int build_nll(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const nll_ctx *c = ctx;
    ts_value t = constant_of(g, TS_I64, DIMS(3, 2), nll_t);
    ts_value w = c->weighted ? constant_of(g, TS_F32, DIMS(4), (float[]){0.5f, 2.f, 1.f, 1.5f}) : TS_NONE;
    o[0] = ts_nll_loss(g, p[0], t, w, -5, (ts_reduction)c->reduction);
    return 1;
}
static void ref_nll(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const nll_ctx *c = ctx;
    const float *x = fd_param_val(h, "x");
    double w[4] = {0.5, 2, 1, 1.5}, sum = 0, wsum = 0;
    for (int p = 0; p < 6; p++) {
        int64_t n = p / 2, d = p % 2, t = nll_t[p];
        double wt = t == -5 ? 0 : c->weighted ? w[t] : 1;
        double l = t == -5 ? 0 : -wt * x[(n * 4 + t) * 2 + d];
        if (c->reduction == TS_REDUCE_NONE) o[0].ref[p] = l;
        sum += l;
        wsum += wt;
    }
    if (c->reduction == TS_REDUCE_SUM) o[0].ref[0] = sum;
    if (c->reduction == TS_REDUCE_MEAN) o[0].ref[0] = sum / wsum;
    (void)nout;
}
static void test_nll_loss(void) {
    const char *names[] = {"none", "sum", "mean"};
    for (int red = 0; red < 3; red++)
        for (int wt = 0; wt < 2; wt++) {
            static nll_ctx ctx;
            ctx = (nll_ctx){red, wt};
            char name[64];
            snprintf(name, sizeof name, "nll_loss %s%s [3,4,2]", names[red], wt ? " weighted" : "");
            fd_spec s;
            fd_init(&s, name, build_nll, &ctx);
            fd_param(&s, "x", GEN_UNIF, DIMS(3, 4, 2));
            s.ref = ref_nll;
            fd_run(&s);
        }
}

static void test_nll_errors(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 3)), t = ts_input(g, "t", TS_I64, DIMS(2));
    ts_name(g, ts_nll_loss(g, x, t, TS_NONE, -100, TS_REDUCE_MEAN), "out");
    ts_tensor *tx = ts_tensor_new(TS_F32, DIMS(2, 3)), *tt = tensor_i64(DIMS(2), (int64_t[]){1, 3});
    ts_tensor *ins[2] = {tx, tt}, *y = NULL;
    CHECK_STATUS(run_graph(g, 2, (const char *[]){"x", "t"}, ins, 1, &y), TS_ERR_RUNTIME);
    CHECK_ERRMSG("nll_loss", "target 3", "'t'", "[0, 3)");
    ts_tensor_free(tx);
    ts_tensor_free(tt);
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(2, 3, 4));
    t = ts_input(g, "t", TS_I64, DIMS(2, 3));
    CHECK(ts_nll_loss(g, x, t, TS_NONE, -100, TS_REDUCE_SUM) == TS_NONE, "target [2, 3] for input [2, 3, 4] accepted");
    CHECK_ERRMSG("nll_loss", "'x'", "'t'", "[N, C, d..]");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ tile and pad */

static int build_tile_pad(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    o[0] = ts_tile(g, p[0], (int64_t[]){2, 1, 3});
    o[1] = ts_pad(g, p[0], (int64_t[]){1, 0, 2, 0, -1, 1}, TS_PAD_CONSTANT, 0.5);
    o[2] = ts_pad(g, p[0], (int64_t[]){0, 1, 2, 1, 1, 2}, TS_PAD_REFLECT, 0);
    o[3] = ts_pad(g, p[0], (int64_t[]){2, 0, 1, 1, 3, 0}, TS_PAD_EDGE, 0);
    return 4;
}
/* x [2, 3, 4]: the source of output coordinate c per mode, as pad.c states it */
static int64_t pad_src(int mode, int64_t c, int64_t b, int64_t d) {
    int64_t s = c - b;
    if (s >= 0 && s < d) return s;
    if (mode == 0) return -1;
    if (mode == 2) return s < 0 ? 0 : d - 1;
    return s < 0 ? -s : 2 * (d - 1) - s;
}
static void ref_tile_pad(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const float *x = fd_param_val(h, "x");
    int64_t xd[3] = {2, 3, 4};
    for (int64_t i = 0; i < o[0].n; i++) { /* [4, 3, 12] */
        int64_t c0 = i / 36, c1 = i / 12 % 3, c2 = i % 12;
        o[0].ref[i] = x[(c0 % 2) * 12 + c1 * 4 + c2 % 4];
    }
    const int64_t pads[3][6] = {{1, 0, 2, 0, -1, 1}, {0, 1, 2, 1, 1, 2}, {2, 0, 1, 1, 3, 0}};
    const int modes[3] = {0, 1, 2};
    for (int k = 1; k < 4; k++) {
        const int64_t *pd = pads[k - 1];
        for (int64_t i = 0; i < o[k].n; i++) {
            int64_t c[3], od[3] = {o[k].shape[0], o[k].shape[1], o[k].shape[2]}, off = 0;
            c[0] = i / (od[1] * od[2]);
            c[1] = i / od[2] % od[1];
            c[2] = i % od[2];
            for (int a = 0; a < 3 && off >= 0; a++) {
                int64_t s = pad_src(modes[k - 1], c[a], pd[a], xd[a]);
                off = s < 0 ? -1 : off * xd[a] + s;
            }
            o[k].ref[i] = off < 0 ? 0.5 : x[off];
        }
    }
    (void)nout;
}
static void test_tile_pad_grad(void) {
    fd_spec s;
    fd_init(&s, "tile [2,1,3] and pad constant / reflect / edge of [2,3,4]", build_tile_pad, NULL);
    fd_param(&s, "x", GEN_UNIF, DIMS(2, 3, 4));
    s.ref = ref_tile_pad;
    fd_run(&s);
}

static void test_tile_pad_ints(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_I32, DIMS(2, 3));
    ts_name(g, ts_tile(g, x, (int64_t[]){1, 2}), "out");
    ts_name(g, ts_pad(g, x, (int64_t[]){0, 2, 0, 0}, TS_PAD_REFLECT, 0), "out2");
    ts_tensor *t = ts_tensor_from(TS_I32, DIMS(2, 3), (int32_t[]){1, 2, 3, 4, 5, 6}), *y[2] = {0};
    if (CHECK_OK(run_graph(g, 1, (const char *[]){"x"}, &t, 2, y)) == TS_OK) {
        int32_t wt[] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}, wp[] = {3, 2, 1, 2, 3, 6, 5, 4, 5, 6};
        for (int i = 0; i < 12; i++) CHECK(((int32_t *)ts_tensor_data(y[0]))[i] == wt[i], "tile i32 %d", i);
        for (int i = 0; i < 10; i++) CHECK(((int32_t *)ts_tensor_data(y[1]))[i] == wp[i], "pad reflect i32 %d", i);
    }
    ts_tensor_free(t);
    ts_tensor_free(y[0]);
    ts_tensor_free(y[1]);
    ts_graph_free(g);

    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_pad(g, x, (int64_t[]){0, 3, 0, 0}, TS_PAD_REFLECT, 0) == TS_NONE, "reflect pad 3 of 3 accepted");
    CHECK_ERRMSG("pad", "reflect", "'x'");
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(2, 3));
    CHECK(ts_tile(g, x, (int64_t[]){1, -2}) == TS_NONE, "tile by -2 accepted");
    CHECK_ERRMSG("tile", "'x'", ">= 1");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ topk */

typedef struct topk_ctx {
    int largest;
} topk_ctx;
static int build_topk(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    ts_value r[2];
    ts_topk(g, p[0], 3, 1, ((const topk_ctx *)ctx)->largest, r);
    o[0] = r[0];
    o[1] = ts_cast(g, r[1], TS_F32);
    return 2;
}
static void ref_topk(const fd_host *h, fd_out *o, int nout, const void *ctx) { /* x [2, 5, 3], k 3 along 1 */
    const float *x = fd_param_val(h, "x");
    int largest = ((const topk_ctx *)ctx)->largest;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++) {
            int used[5] = {0};
            for (int j = 0; j < 3; j++) { /* selection: the best unused, lowest index on ties */
                int best = -1;
                for (int i = 0; i < 5; i++) {
                    if (used[i]) continue;
                    float v = x[(a * 5 + i) * 3 + b];
                    if (best < 0 || (largest ? v > x[(a * 5 + best) * 3 + b] : v < x[(a * 5 + best) * 3 + b])) best = i;
                }
                used[best] = 1;
                o[0].ref[(a * 3 + j) * 3 + b] = x[(a * 5 + best) * 3 + b];
                o[1].ref[(a * 3 + j) * 3 + b] = best;
            }
        }
    (void)nout;
}
static void test_topk(void) {
    for (int largest = 0; largest < 2; largest++) {
        static topk_ctx ctx;
        ctx.largest = largest;
        fd_spec s;
        fd_init(&s, largest ? "topk largest k=3 axis 1 [2,5,3]" : "topk smallest k=3 axis 1 [2,5,3]", build_topk, &ctx);
        fd_param(&s, "x", GEN_DISTINCT, DIMS(2, 5, 3));
        s.ref = ref_topk;
        fd_run(&s);
    }
    /* ties keep the lower index first; k out of range is an error */
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(6)), r[2];
    CHECK_OK(ts_topk(g, x, 4, 0, 1, r));
    ts_name(g, r[1], "out");
    ts_tensor *t = ts_tensor_from(TS_F32, DIMS(6), (float[]){1, 3, 2, 3, NAN, 1}), *y = NULL;
    if (CHECK_OK(run_graph(g, 1, (const char *[]){"x"}, &t, 1, &y)) == TS_OK) {
        int64_t want[] = {4, 1, 3, 2};
        for (int i = 0; i < 4; i++)
            CHECK(((int64_t *)ts_tensor_data(y))[i] == want[i], "topk tie order %d: %lld", i,
                  (long long)((int64_t *)ts_tensor_data(y))[i]);
    }
    ts_tensor_free(t);
    ts_tensor_free(y);
    CHECK_STATUS(ts_topk(g, x, 7, 0, 1, r), TS_ERR_ARG);
    CHECK_ERRMSG("topk", "k = 7", "'x'");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ grid_sample */

/* the reference: grid_sample's definition written out per mode, in double */
static double gs_unnorm(double c, int64_t S, int align) {
    return align ? (c + 1) / 2 * (S - 1) : ((c + 1) * S - 1) / 2;
}
static double gs_pad(double c, int64_t S, int pad, int align) {
    if (pad == TS_GRID_ZEROS) return c;
    if (pad == TS_GRID_REFLECTION) { /* mirror about the edges until inside, then clamp */
        double lo = align ? 0 : -0.5, hi = align ? S - 1 : S - 0.5;
        if (hi > lo)
            while (c < lo || c > hi) c = c < lo ? 2 * lo - c : 2 * hi - c;
    }
    return c < 0 ? 0 : c > S - 1 ? S - 1 : c;
}
static double gs_px(const float *p, int64_t H, int64_t W, double y, double x) {
    return y >= 0 && y < H && x >= 0 && x < W ? p[(int64_t)y * W + (int64_t)x] : 0;
}
static double gs_cubic(double d) { /* the cubic convolution kernel, A = -0.75 */
    const double A = -0.75;
    d = fabs(d);
    return d <= 1 ? ((A + 2) * d - (A + 3)) * d * d + 1 : d < 2 ? ((A * d - 5 * A) * d + 8 * A) * d - 4 * A : 0;
}
static double gs_ref(const float *p, int64_t H, int64_t W, double gx, double gy, int mode, int pad, int align) {
    double u = gs_unnorm(gx, W, align), v = gs_unnorm(gy, H, align);
    if (mode == TS_GRID_BICUBIC) {
        double r = 0, fx = floor(u), fy = floor(v);
        for (int j = -1; j < 3; j++)
            for (int i = -1; i < 3; i++)
                r += gs_cubic(u - (fx + i)) * gs_cubic(v - (fy + j)) *
                     gs_px(p, H, W, floor(gs_pad(fy + j, H, pad, align)), floor(gs_pad(fx + i, W, pad, align)));
        return r;
    }
    u = gs_pad(u, W, pad, align);
    v = gs_pad(v, H, pad, align);
    if (mode == TS_GRID_NEAREST) return gs_px(p, H, W, nearbyint(v), nearbyint(u));
    double fx = floor(u), fy = floor(v), r = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++)
            r += (i ? u - fx : 1 - (u - fx)) * (j ? v - fy : 1 - (v - fy)) * gs_px(p, H, W, fy + j, fx + i);
    return r;
}

static void test_grid_sample(void) {
    int64_t xs[] = {1, 2, 3, 4}, gsh[] = {1, 2, 5, 2};
    float xv[24], gv[20] = {-1, -1, 1, 1, -0.9f, 0.3f, 0.25f, -0.5f, 1.4f, 0.2f,
                            -1.7f, 1.2f, 0.f, 0.f, 0.5f, 0.5f, -0.33f, 0.8f, 0.9f, -1.2f};
    for (int i = 0; i < 24; i++) xv[i] = (float)((i * 7) % 11) - 4.f;
    for (int mode = 0; mode < 3; mode++)
        for (int pad = 0; pad < 3; pad++)
            for (int align = 0; align < 2; align++) {
                ts_graph *g = ts_graph_new();
                ts_value x = ts_input(g, "x", TS_F32, 4, xs), gr = ts_input(g, "grid", TS_F32, 4, gsh);
                ts_name(g, ts_grid_sample(g, x, gr, (ts_grid_mode)mode, (ts_grid_padding)pad, align), "out");
                ts_tensor *t[2] = {ts_tensor_from(TS_F32, 4, xs, xv), ts_tensor_from(TS_F32, 4, gsh, gv)}, *y = NULL;
                if (CHECK_OK(run_graph(g, 2, (const char *[]){"x", "grid"}, t, 1, &y)) == TS_OK)
                    for (int c = 0; c < 2; c++)
                        for (int q = 0; q < 10; q++) {
                            double want = gs_ref(xv + c * 12, 3, 4, gv[2 * q], gv[2 * q + 1], mode, pad, align);
                            double got = tu_f32(y)[c * 10 + q];
                            CHECK(fabs(got - want) <= 1e-5 * fmax(1, fabs(want)),
                                  "grid_sample mode %d pad %d align %d channel %d point %d: %.7g, want %.7g", mode, pad,
                                  align, c, q, got, want);
                        }
                ts_tensor_free(t[0]);
                ts_tensor_free(t[1]);
                ts_tensor_free(y);
                ts_graph_free(g);
            }
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 4, xs), gr = ts_input(g, "grid", TS_F32, DIMS(1, 2, 5, 3));
    CHECK(ts_grid_sample(g, x, gr, TS_GRID_BILINEAR, TS_GRID_ZEROS, 0) == TS_NONE, "a grid of triples accepted");
    CHECK_ERRMSG("grid_sample", "'grid'", "[N, OH, OW, 2]");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ det */

static double det_ref(const double *a, int m) { /* cofactor expansion along the first row */
    if (m == 1) return a[0];
    double s = 0, sub[64];
    for (int c = 0; c < m; c++) {
        int k = 0;
        for (int i = 1; i < m; i++)
            for (int j = 0; j < m; j++)
                if (j != c) sub[k++] = a[i * m + j];
        s += (c % 2 ? -1 : 1) * a[c] * det_ref(sub, m - 1);
    }
    return s;
}

static void test_det(void) {
    tu_rng r = tu_rng_seed(77);
    for (int m = 1; m <= 4; m++) {
        int64_t sh[] = {3, m, m};
        float v[48];
        for (int i = 0; i < 3 * m * m; i++) v[i] = (float)tu_uniform(&r, -2, 2);
        if (m >= 2) /* matrix 2 singular: its second row a copy of the first */
            for (int j = 0; j < m; j++) v[2 * m * m + m + j] = v[2 * m * m + j];
        ts_graph *g = ts_graph_new();
        ts_name(g, ts_det(g, ts_input(g, "x", TS_F32, 3, sh)), "out");
        ts_tensor *t = ts_tensor_from(TS_F32, 3, sh, v), *y = NULL;
        if (CHECK_OK(run_graph(g, 1, (const char *[]){"x"}, &t, 1, &y)) == TS_OK) {
            CHECK(ts_tensor_ndim(y) == 1 && ts_tensor_shape(y)[0] == 3, "det of [3, %d, %d] has rank %d", m, m,
                  ts_tensor_ndim(y));
            for (int b = 0; b < 3; b++) {
                double a[16];
                for (int i = 0; i < m * m; i++) a[i] = v[b * m * m + i];
                double want = det_ref(a, m), got = tu_f32(y)[b];
                CHECK(fabs(got - want) <= 1e-5 * fmax(1, fabs(want)), "det %dx%d #%d: %.7g, want %.7g", m, m, b,
                      got, want);
            }
        }
        ts_tensor_free(t);
        ts_tensor_free(y);
        ts_graph_free(g);
    }
    ts_graph *g = ts_graph_new();
    CHECK(ts_det(g, ts_input(g, "x", TS_F32, DIMS(2, 3))) == TS_NONE, "det of a 2 x 3 matrix accepted");
    CHECK_ERRMSG("det", "'x'", "square");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ tfidf */

static void test_tfidf(void) {
    /* ONNX's example: unigrams {2, 3, 5, 4} and bigrams {(5, 6), (7, 8), (6, 7)}, skips up to 5 */
    static const int64_t pool[] = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7}, counts[] = {0, 4}, idx[] = {0, 1, 2, 3, 4, 5, 6};
    static const float w[] = {0.5f, 2.f, 1.f, 3.f, 1.5f, 0.25f, 4.f};
    int32_t xv[] = {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8};
    for (int mode = 0; mode < 3; mode++)
        for (int batch = 0; batch < 2; batch++) {
            ts_tfidf_opts o = {1, 2, 5, (ts_tfidf_mode)mode, pool, 10, counts, 2, idx, 7, mode ? w : NULL};
            ts_graph *g = ts_graph_new();
            int64_t xs[2] = {batch ? 2 : 12, 6};
            ts_value x = ts_input(g, "x", TS_I32, batch ? 2 : 1, xs);
            ts_name(g, ts_tfidf(g, x, &o), "out");
            ts_tensor *t = ts_tensor_from(TS_I32, batch ? 2 : 1, xs, xv), *y = NULL;
            if (CHECK_OK(run_graph(g, 1, (const char *[]){"x"}, &t, 1, &y)) == TS_OK) {
                /* counts: one row of 12 (worked out by hand), or rows of 6 (ONNX's batch example) */
                float c1[7] = {0, 3, 1, 0, 1, 3, 1}, cb[14] = {0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1};
                const float *cnt = batch ? cb : c1;
                for (int i = 0; i < (batch ? 14 : 7); i++) {
                    float c = cnt[i], wt = w[i % 7];
                    float want = mode == 0 ? c : mode == 1 ? (c > 0 ? wt : 0) : c * wt;
                    CHECK(tu_f32(y)[i] == want, "tfidf mode %d batch %d at %d: %g, want %g", mode, batch, i,
                          tu_f32(y)[i], want);
                }
            }
            ts_tensor_free(t);
            ts_tensor_free(y);
            ts_graph_free(g);
        }
    ts_graph *g = ts_graph_new();
    ts_tfidf_opts o = {1, 2, 0, TS_TFIDF_TF, pool, 10, counts, 2, idx, 7, NULL};
    CHECK(ts_tfidf(g, ts_input(g, "x", TS_F32, DIMS(4)), &o) == TS_NONE, "tfidf of floats accepted");
    CHECK_ERRMSG("tfidf", "'x'", "i32 or i64");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ roi_align */

static double ra_sample(const float *p, int H, int W, double y, double x) { /* written out as the header says */
    if (y < -1 || y > H || x < -1 || x > W) return 0;
    y = y < 0 ? 0 : y;
    x = x < 0 ? 0 : x;
    if (y > H - 1) y = H - 1;
    if (x > W - 1) x = W - 1;
    int y0 = (int)y, x0 = (int)x, y1 = y0 + 1 < H ? y0 + 1 : y0, x1 = x0 + 1 < W ? x0 + 1 : x0;
    double ly = y - y0, lx = x - x0;
    return (1 - ly) * (1 - lx) * p[y0 * W + x0] + (1 - ly) * lx * p[y0 * W + x1] + ly * (1 - lx) * p[y1 * W + x0] +
           ly * lx * p[y1 * W + x1];
}

static void test_roi_align(void) {
    float xv[2 * 5 * 6], rois[] = {0.5f, 1.f, 4.5f, 3.5f, -1.f, -0.5f, 7.f, 6.f, 2.f, 2.f, 2.2f, 2.1f};
    int64_t bidx[] = {1, 0, 1};
    for (int i = 0; i < 60; i++) xv[i] = (float)((i * 5) % 13);
    for (int half = 0; half < 2; half++)
        for (int ratio = 0; ratio < 3; ratio += 2) {
            ts_graph *g = ts_graph_new();
            ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 1, 5, 6)), rv = ts_input(g, "rois", TS_F32, DIMS(3, 4));
            ts_value bv = ts_input(g, "b", TS_I64, DIMS(3));
            ts_name(g, ts_roi_align(g, x, rv, bv, 2, 3, ratio, 0.9f, half), "out");
            ts_tensor *t[3] = {ts_tensor_from(TS_F32, DIMS(2, 1, 5, 6), xv), ts_tensor_from(TS_F32, DIMS(3, 4), rois),
                               tensor_i64(DIMS(3), bidx)}, *y = NULL;
            if (CHECK_OK(run_graph(g, 3, (const char *[]){"x", "rois", "b"}, t, 1, &y)) == TS_OK)
                for (int r = 0; r < 3; r++) {
                    double off = half ? 0.5 : 0, sx = rois[4 * r] * 0.9 - off, sy = rois[4 * r + 1] * 0.9 - off;
                    double w = rois[4 * r + 2] * 0.9 - off - sx, h = rois[4 * r + 3] * 0.9 - off - sy;
                    if (!half) w = fmax(w, 1), h = fmax(h, 1);
                    int gh = ratio ? ratio : (int)ceil(h / 2), gw = ratio ? ratio : (int)ceil(w / 3);
                    gh = gh < 1 ? 1 : gh;
                    gw = gw < 1 ? 1 : gw;
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 3; j++) {
                            double s = 0;
                            for (int a = 0; a < gh; a++)
                                for (int e = 0; e < gw; e++)
                                    s += ra_sample(xv + bidx[r] * 30, 5, 6, sy + i * h / 2 + (a + 0.5) * h / 2 / gh,
                                                   sx + j * w / 3 + (e + 0.5) * w / 3 / gw);
                            double want = s / (gh * gw), got = tu_f32(y)[(r * 2 + i) * 3 + j];
                            CHECK(fabs(got - want) <= 1e-5 * fmax(1, fabs(want)),
                                  "roi_align half %d ratio %d roi %d (%d, %d): %.7g, want %.7g", half, ratio, r, i,
                                  j, got, want);
                        }
                }
            ts_tensor_free(y);
            y = NULL;
            bidx[2] = 2; /* an image that is not there: a run-time error */
            ts_tensor_free(t[2]);
            t[2] = tensor_i64(DIMS(3), bidx);
            CHECK_STATUS(run_graph(g, 3, (const char *[]){"x", "rois", "b"}, t, 1, &y), TS_ERR_RUNTIME);
            CHECK_ERRMSG("roi_align", "batch index 2", "'x'");
            bidx[2] = 1;
            for (int k = 0; k < 3; k++) ts_tensor_free(t[k]);
            ts_tensor_free(y);
            ts_graph_free(g);
        }
}

/* ------------------------------------------------------------------ dft */

static void test_dft(void) {
    /* x [2, 5, 3, c]: transforms along axis 1, of lengths 5 (n), 4 (cut) and 7 (zero-padded) */
    tu_rng r = tu_rng_seed(5);
    float xv[2 * 5 * 3 * 2];
    for (int i = 0; i < 60; i++) xv[i] = (float)tu_uniform(&r, -1, 1);
    const int64_t lens[] = {0, 4, 7};
    for (int c = 1; c <= 2; c++)
        for (int li = 0; li < 3; li++)
            for (int mode = 0; mode < 3; mode++) { /* forward, inverse, onesided (real input only) */
                if (mode == 2 && c == 2) continue;
                int64_t L = lens[li] ? lens[li] : 5, K = mode == 2 ? L / 2 + 1 : L;
                ts_graph *g = ts_graph_new();
                ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 5, 3, c));
                ts_name(g, ts_dft(g, x, 1, mode == 1, mode == 2, lens[li]), "out");
                ts_tensor *t = ts_tensor_from(TS_F32, DIMS(2, 5, 3, c), xv), *y = NULL;
                if (CHECK_OK(run_graph(g, 1, (const char *[]){"x"}, &t, 1, &y)) == TS_OK) {
                    CHECK(ts_tensor_shape(y)[1] == K && ts_tensor_shape(y)[3] == 2, "dft result dims %lld, %lld",
                          (long long)ts_tensor_shape(y)[1], (long long)ts_tensor_shape(y)[3]);
                    for (int a = 0; a < 2; a++)
                        for (int64_t k = 0; k < K; k++)
                            for (int b = 0; b < 3; b++) {
                                double re = 0, im = 0, sg = mode == 1 ? 1 : -1;
                                for (int64_t m = 0; m < (L < 5 ? L : 5); m++) {
                                    const float *p = xv + ((a * 5 + m) * 3 + b) * c;
                                    double xr = p[0], xi = c == 2 ? p[1] : 0, ang = sg * 2 * M_PI * (double)(k * m) / (double)L;
                                    re += xr * cos(ang) - xi * sin(ang);
                                    im += xr * sin(ang) + xi * cos(ang);
                                }
                                if (mode == 1) re /= (double)L, im /= (double)L;
                                const float *o = tu_f32(y) + ((a * K + k) * 3 + b) * 2;
                                CHECK(fabs(o[0] - re) <= 1e-5 && fabs(o[1] - im) <= 1e-5,
                                      "dft c %d L %lld mode %d at (%d, %lld, %d): (%g, %g), want (%g, %g)", c,
                                      (long long)L, mode, a, (long long)k, b, o[0], o[1], re, im);
                            }
                }
                ts_tensor_free(t);
                ts_tensor_free(y);
                ts_graph_free(g);
            }
    ts_graph *g = ts_graph_new();
    CHECK(ts_dft(g, ts_input(g, "x", TS_F32, DIMS(4, 3)), 0, 0, 0, 0) == TS_NONE, "dft of [4, 3] accepted");
    CHECK_ERRMSG("dft", "'x'", "[.., 2]");
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    printf("more ops: forward against host references, finite-difference gradients, errors\n");
    RUN(test_math_forward);
    RUN(test_math_grad);
    RUN(test_math_errors);
    RUN(test_binary_forward);
    RUN(test_binary_grad);
    RUN(test_binary_errors);
    RUN(test_predicates_select);
    RUN(test_argreduce);
    RUN(test_reduce_min_prod);
    RUN(test_reduce_prod_zeros);
    RUN(test_trilu_forward);
    RUN(test_trilu_grad);
    RUN(test_elements_grad);
    RUN(test_elements_errors);
    RUN(test_nll_loss);
    RUN(test_nll_errors);
    RUN(test_tile_pad_grad);
    RUN(test_tile_pad_ints);
    RUN(test_topk);
    RUN(test_grid_sample);
    RUN(test_det);
    RUN(test_tfidf);
    RUN(test_roi_align);
    RUN(test_dft);
    return tu_finish("test_more_ops");
}
