/*
 * test_cast_stochastic.c — ts_cast_stochastic, f32 rounded stochastically to bf16 / f16 (issue 39):
 *   unbiased: for fixed values (1/4, 1/2 and 0.9 of the way between two bf16 / f16 values,
 *     negative, tiny, large, subnormal) every output is one of the two neighbours and the mean of
 *     2^22 roundings (2^20 elements x 4 steps) is the value within 1e-3 relative, and within 5
 *     standard errors of it (the rate of rounding up is the fraction of the gap); one element over
 *     4096 steps too;
 *   exact: values the target holds stay; NaN, inf and f16 / bf16 overflow as ts_cast gives them;
 *   deterministic: the same (seed, step, key) gives the same bits in another program, after more
 *     runs, with 1 and 2 threads, and from a graph that holds other nodes before it; another step,
 *     key or seed gives other bits; an i32 or f32 step gives the i64 step's bits;
 *   errors: a non-f32 x, a target other than bf16 / f16, a step of the wrong dtype or size are
 *     refused naming the op and the value.
 */
#include "test_util.h"

#include "core/core.h" /* ts_f32_f16, ts_f16_f32, ts_f32_bf16: the round-to-nearest casts */

#define N_ELEMS (1 << 20)
#define N_STEPS 4

/* ------------------------------------------------------------------ helpers */

/* x [n] f32 and step [] of dtype sdt -> "y" = cast_stochastic(x, step) to dt. pre > 0 puts pre
 * other nodes in the graph first (the value ids and node position move). */
static ts_program *build(ts_dtype dt, int64_t n, ts_dtype sdt, uint64_t seed, uint64_t key, int threads, int pre) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 1, (int64_t[]){n});
    for (int i = 0; i < pre; i++) x = ts_add(g, x, ts_input(g, i ? "z1" : "z0", TS_F32, 1, (int64_t[]){n}));
    ts_value s = ts_input(g, "step", sdt, 0, NULL);
    ts_name(g, ts_cast_stochastic(g, x, s, dt, seed, key), "y");
    const char *f[] = {"y"};
    ts_compile_opts o = {.nfetch = 1, .fetches = f, .inference = 1, .num_threads = threads};
    ts_program *p = ts_compile(g, &o);
    CHECK(p, "compile: %s", ts_last_error());
    ts_graph_free(g);
    return p;
}

/* Run p on x (n floats) with step value `step` of dtype sdt; the 16-bit results to y. */
static void run(ts_program *p, const float *x, int64_t n, ts_dtype sdt, int64_t step, uint16_t *y) {
    int64_t s64 = step;
    int32_t s32 = (int32_t)step;
    float sf = (float)step;
    const void *sp = sdt == TS_I64 ? (const void *)&s64 : sdt == TS_I32 ? (const void *)&s32 : (const void *)&sf;
    ts_tensor *t = NULL;
    CHECK_OK(ts_program_feed_data(p, "x", TS_F32, 1, (int64_t[]){n}, x));
    CHECK_OK(ts_program_feed_data(p, "step", sdt, 0, NULL, sp));
    CHECK_OK(ts_program_run(p));
    if (!CHECK_OK(ts_program_fetch(p, "y", &t))) memcpy(y, ts_tensor_data(t), sizeof(uint16_t) * (size_t)n);
    ts_tensor_free(t);
}

static double to_f(ts_dtype dt, uint16_t h) { return dt == TS_BF16 ? ts_bf16_f32(h) : ts_f16_f32(h); }
static uint16_t rne(ts_dtype dt, float v) { return dt == TS_BF16 ? ts_f32_bf16(v) : ts_f32_f16(v); }

/* The two target values around v, lo nearer zero (lo == hi when v is exact). */
static void neighbours(ts_dtype dt, float v, uint16_t *lo, uint16_t *hi) {
    uint16_t r = rne(dt, v);
    double rv = to_f(dt, r);
    if (rv == v) *lo = *hi = r;
    else if (fabs(rv) > fabs((double)v)) *hi = r, *lo = (uint16_t)(r - 1);
    else *lo = r, *hi = (uint16_t)(r + 1);
}

/* ------------------------------------------------------------------ unbiased */

/* N_STEPS runs of p over x = v: every output a neighbour of v, the mean v within 1e-3 relative
 * and within 5 standard errors; prints the figures. */
static void check_mean(ts_program *p, ts_dtype dt, float v, float *x, uint16_t *y) {
    uint16_t lo, hi;
    neighbours(dt, v, &lo, &hi);
    double flo = to_f(dt, lo), fhi = to_f(dt, hi), gap = fabs(fhi - flo);
    double pexp = gap > 0 ? (fabs((double)v) - fabs(flo)) / gap : 0, sum = 0;
    int64_t ups = 0, bad = 0, m = (int64_t)N_ELEMS * N_STEPS;
    for (int64_t i = 0; i < N_ELEMS; i++) x[i] = v;
    for (int s = 0; s < N_STEPS; s++) {
        run(p, x, N_ELEMS, TS_I64, 1000 + s, y);
        for (int64_t i = 0; i < N_ELEMS; i++) {
            bad += y[i] != lo && y[i] != hi;
            ups += y[i] == hi && hi != lo;
            sum += to_f(dt, y[i]);
        }
    }
    double mean = sum / (double)m, rel = fabs(mean - v) / fabs((double)v), pm = (double)ups / (double)m;
    double se = gap * sqrt(pexp * (1 - pexp) / (double)m), z = se > 0 ? fabs(mean - v) / se : 0;
    printf("  %-4s x = %-14.8g P(up) %.6f, measured %.6f; mean rel. bias %.2e (%.2f std errors)\n",
           ts_dtype_name(dt), (double)v, pexp, pm, rel, z);
    CHECK(bad == 0, "%s %.8g: %lld outputs are not one of the neighbours %.8g, %.8g", ts_dtype_name(dt),
          (double)v, (long long)bad, flo, fhi);
    CHECK(rel <= 1e-3, "%s %.8g: mean %.10g, relative bias %.3g", ts_dtype_name(dt), (double)v, mean, rel);
    CHECK(z <= 5, "%s %.8g: mean %.10g is %.2f standard errors off", ts_dtype_name(dt), (double)v, mean, z);
}

static void unbiased_case(ts_dtype dt, const float *vals, int nv) {
    ts_program *p = build(dt, N_ELEMS, TS_I64, 42, ts_cast_stochastic_key("encoder.w"), 0, 0);
    float *x = malloc(sizeof(float) * N_ELEMS);
    uint16_t *y = malloc(sizeof(uint16_t) * N_ELEMS);
    for (int k = 0; p && k < nv; k++) check_mean(p, dt, vals[k], x, y);
    free(x);
    free(y);
    ts_program_free(p);
}

/* Between 1 and 1 + 2^-7 at 1/4, 1/2, 0.9 of the gap; negative; tiny; large; subnormal. */
static void test_unbiased_bf16(void) {
    const float g = 0x1p-7f;
    const float vals[] = {1 + 0.25f * g, 1 + 0.5f * g, 1 + 0.9f * g, -(3 + 0.25f * 2 * g), -0.1f,
                          1.2345e-30f, 1.2345e20f, 3.1e38f, -2.5e-39f /* f32 / bf16 subnormal */};
    unbiased_case(TS_BF16, vals, (int)(sizeof vals / sizeof vals[0]));
}

/* Between 1 and 1 + 2^-10 at 1/4, 1/2, 0.9; negative; tiny normal; large; subnormal. */
static void test_unbiased_f16(void) {
    const float g = 0x1p-10f;
    const float vals[] = {1 + 0.25f * g, 1 + 0.5f * g, 1 + 0.9f * g, -(3 + 0.25f * 2 * g), -0.1f,
                          1.0e-4f, 60000.5f, 65500.f, 1.0e-6f, -3.0e-7f /* subnormals */};
    unbiased_case(TS_F16, vals, (int)(sizeof vals / sizeof vals[0]));
}

/* One element over 4096 steps: the rate of rounding up is the fraction, per element. */
static void test_unbiased_over_steps(void) {
    enum { NE = 16, NS = 4096 };
    const float v = 1 + 0.25f * 0x1p-7f;
    float x[NE];
    uint16_t y[NE], lo, hi;
    int ups[NE] = {0};
    neighbours(TS_BF16, v, &lo, &hi);
    for (int i = 0; i < NE; i++) x[i] = v;
    ts_program *p = build(TS_BF16, NE, TS_I64, 7, 99, 1, 0);
    for (int s = 0; p && s < NS; s++) {
        run(p, x, NE, TS_I64, s, y);
        for (int i = 0; i < NE; i++) ups[i] += y[i] == hi;
    }
    double se = sqrt(0.25 * 0.75 / NS);
    for (int i = 0; p && i < NE; i++)
        CHECK(fabs(ups[i] / (double)NS - 0.25) <= 5 * se, "element %d rounded up %d times in %d steps", i, ups[i],
              NS);
    ts_program_free(p);
}

/* ------------------------------------------------------------------ exact and special values */

static void exact_case(ts_dtype dt, const float *vals, int nv) {
    enum { REP = 4096 };
    float *x = malloc(sizeof(float) * (size_t)nv * REP);
    uint16_t *y = malloc(sizeof(uint16_t) * (size_t)nv * REP);
    for (int k = 0; k < nv; k++)
        for (int r = 0; r < REP; r++) x[k * REP + r] = vals[k];
    ts_program *p = build(dt, (int64_t)nv * REP, TS_I64, 1, 2, 0, 0);
    for (int s = 0; p && s < 3; s++) {
        run(p, x, (int64_t)nv * REP, TS_I64, s, y);
        for (int k = 0; k < nv; k++) {
            uint16_t want = rne(dt, vals[k]);
            int64_t bad = 0;
            for (int r = 0; r < REP; r++)
                bad += isnan(vals[k]) ? !isnan(to_f(dt, y[k * REP + r])) || (y[k * REP + r] ^ want) >> 15
                                      : y[k * REP + r] != want;
            CHECK(bad == 0, "%s %.9g (step %d): %lld of %d outputs are not the plain cast's 0x%04x", ts_dtype_name(dt),
                  (double)vals[k], s, (long long)bad, REP, want);
        }
    }
    ts_program_free(p);
    free(x);
    free(y);
}

static void test_exact_bf16(void) {
    const float vals[] = {0.f, -0.f, 1.f, -2.5f, 1 + 0x1p-7f, 0x1p-133f /* smallest subnormal */,
                          0x1.fep127f /* largest */, 0x1.fe4p127f /* past it: nearest */, 3.4e38f /* to inf */,
                          INFINITY, -INFINITY, NAN, -NAN};
    exact_case(TS_BF16, vals, (int)(sizeof vals / sizeof vals[0]));
}

static void test_exact_f16(void) {
    const float vals[] = {0.f, -0.f, 1.f, -2.5f, 1 + 0x1p-10f, 0x1p-24f /* smallest subnormal */,
                          0x1p-14f /* smallest normal */, 65504.f, -65504.f, 65519.f /* nearest: 65504 */,
                          65520.f /* the tie: inf */, 1e6f, -1e6f, 3e38f, INFINITY, -INFINITY, NAN, -NAN};
    exact_case(TS_F16, vals, (int)(sizeof vals / sizeof vals[0]));
}

/* ------------------------------------------------------------------ determinism */

/* Elements of a and b that differ. */
static int64_t ndiff(const uint16_t *a, const uint16_t *b, int64_t n) {
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += a[i] != b[i];
    return d;
}

static void determinism_case(ts_dtype dt) {
    const int64_t n = N_ELEMS;
    const float g = dt == TS_BF16 ? 0x1p-7f : 0x1p-10f;
    const uint64_t key = ts_cast_stochastic_key("bert.encoder.layer.0.attention.self.query.weight");
    float *x = malloc(sizeof(float) * (size_t)n), *z = calloc((size_t)n, sizeof(float));
    uint16_t *ref = malloc(2 * (size_t)n), *y = malloc(2 * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = 1 + (float)(i % 7 + 1) / 8.f * g; /* P(up) 1/8 .. 7/8 */
    ts_program *p1 = build(dt, n, TS_I64, 5, key, 1, 0);
    run(p1, x, n, TS_I64, 17, ref);
    run(p1, x, n, TS_I64, 17, y); /* the run counter moved: the bits do not follow it */
    CHECK(ndiff(ref, y, n) == 0, "%s: a second run with step 17 differs", ts_dtype_name(dt));
    ts_program *p2 = build(dt, n, TS_I64, 5, key, ts_max_threads() >= 2 ? 2 : 0, 0);
    run(p2, x, n, TS_I64, 17, y);
    CHECK(ndiff(ref, y, n) == 0, "%s: 2 threads differ from 1", ts_dtype_name(dt));
    ts_program *p3 = build(dt, n, TS_I64, 5, key, 0, 2); /* other nodes first: x + z0 + z1 */
    if (p3) CHECK_OK(ts_program_feed_data(p3, "z0", TS_F32, 1, (int64_t[]){n}, z));
    if (p3) CHECK_OK(ts_program_feed_data(p3, "z1", TS_F32, 1, (int64_t[]){n}, z));
    run(p3, x, n, TS_I64, 17, y);
    CHECK(ndiff(ref, y, n) == 0, "%s: another graph with the same key differs", ts_dtype_name(dt));
    ts_program *pi = build(dt, n, TS_I32, 5, key, 0, 0), *pf = build(dt, n, TS_F32, 5, key, 0, 0);
    run(pi, x, n, TS_I32, 17, y);
    CHECK(ndiff(ref, y, n) == 0, "%s: an i32 step 17 differs from the i64", ts_dtype_name(dt));
    run(pf, x, n, TS_F32, 17, y);
    CHECK(ndiff(ref, y, n) == 0, "%s: an f32 step 17 differs from the i64", ts_dtype_name(dt));
    /* another step, key, seed: about 2 p (1 - p) of the elements change (0.22 .. 0.5) */
    ts_program *pk = build(dt, n, TS_I64, 5, key + 1, 0, 0), *ps = build(dt, n, TS_I64, 6, key, 0, 0);
    run(p1, x, n, TS_I64, 18, y);
    int64_t d_step = ndiff(ref, y, n);
    run(pk, x, n, TS_I64, 17, y);
    int64_t d_key = ndiff(ref, y, n);
    run(ps, x, n, TS_I64, 17, y);
    int64_t d_seed = ndiff(ref, y, n);
    printf("  %s: another step changes %.3f of the elements, another key %.3f, another seed %.3f\n",
           ts_dtype_name(dt), d_step / (double)n, d_key / (double)n, d_seed / (double)n);
    CHECK(d_step > n / 4 && d_key > n / 4 && d_seed > n / 4, "%s: %lld / %lld / %lld elements changed",
          ts_dtype_name(dt), (long long)d_step, (long long)d_key, (long long)d_seed);
    ts_program *ps_all[] = {p1, p2, p3, pi, pf, pk, ps};
    for (int k = 0; k < 7; k++) ts_program_free(ps_all[k]);
    free(x);
    free(z);
    free(ref);
    free(y);
}

static void test_determinism_bf16(void) { determinism_case(TS_BF16); }
static void test_determinism_f16(void) { determinism_case(TS_F16); }

/* The key of a name is FNV-1a: fixed numbers, so every process agrees. */
static void test_key(void) {
    CHECK(ts_cast_stochastic_key("") == 0xcbf29ce484222325ull, "key of \"\"");
    CHECK(ts_cast_stochastic_key(NULL) == ts_cast_stochastic_key(""), "key of NULL");
    CHECK(ts_cast_stochastic_key("a") == 0xaf63dc4c8601ec8cull, "key of \"a\"");
    CHECK(ts_cast_stochastic_key("w.0") != ts_cast_stochastic_key("w.1"), "keys of two names");
}

/* ------------------------------------------------------------------ errors */

static void test_errors(void) {
    struct {
        ts_dtype xdt, sdt, to;
        int64_t sn;
        ts_status code;
        const char *word;
    } cases[] = {
        {TS_I32, TS_I64, TS_BF16, 1, TS_ERR_DTYPE, "i32"},  {TS_BF16, TS_I64, TS_F16, 1, TS_ERR_DTYPE, "bf16"},
        {TS_F32, TS_I64, TS_F32, 1, TS_ERR_DTYPE, "f32"},   {TS_F32, TS_I64, TS_I32, 1, TS_ERR_DTYPE, "i32"},
        {TS_F32, TS_I64, (ts_dtype)99, 1, TS_ERR_DTYPE, "99"}, {TS_F32, TS_U8, TS_BF16, 1, TS_ERR_DTYPE, "u8"},
        {TS_F32, TS_I64, TS_BF16, 2, TS_ERR_SHAPE, "one element"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", cases[c].xdt, 2, (int64_t[]){3, 4});
        ts_value s = ts_input(g, "step", cases[c].sdt, 1, (int64_t[]){cases[c].sn});
        CHECK(ts_cast_stochastic(g, x, s, cases[c].to, 1, 2) == TS_NONE, "case %zu built", c);
        CHECK_STATUS(ts_graph_status(g), cases[c].code);
        CHECK_ERRMSG("cast_stochastic", cases[c].word, c == 5 || c == 6 ? "'step'" : "'x'");
        ts_graph_free(g);
    }
    ts_graph *g = ts_graph_new(); /* a missing step */
    ts_value x = ts_input(g, "x", TS_F32, 1, (int64_t[]){3});
    CHECK(ts_cast_stochastic(g, x, TS_NONE, TS_BF16, 1, 2) == TS_NONE, "no step");
    CHECK_STATUS(ts_graph_status(g), TS_ERR_ARG);
    CHECK_ERRMSG("cast_stochastic", "input 1");
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    printf("cast_stochastic: unbiased, exact where it must be, deterministic by (seed, step, key, i)\n");
    RUN(test_unbiased_bf16);
    RUN(test_unbiased_f16);
    RUN(test_unbiased_over_steps);
    RUN(test_exact_bf16);
    RUN(test_exact_f16);
    RUN(test_determinism_bf16);
    RUN(test_determinism_f16);
    RUN(test_key);
    RUN(test_errors);
    return tu_finish("test_cast_stochastic");
}
