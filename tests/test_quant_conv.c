/*
 * test_quant_conv.c — int8 convolutions (ts_compile_opts.quantize = TS_QUANT_DYNAMIC): the op
 * conv2d_i8 (src/ops/conv_int8.c), its CPU kernel (backend/cpu/conv_int8.c, oneDNN int8) and the
 * pass that makes it (graph/passes/quantize_conv.c). These cases check that
 *  - the reference kernel is the quantized math of the op's comment, computed here in double from
 *    the same int8 values, on dense, strided, padded (asymmetric), dilated, grouped, depthwise and
 *    pointwise convolutions with bias and the fused epilogue, dynamic and fixed activation scales;
 *  - the CPU kernel agrees with the reference kernel on the same cases, and at the edges of its
 *    epilogue (activations all 0, a weight channel all 0, a bias too large to divide by the scales);
 *  - the pass rewrites the convolutions by a parameter, a constant or a reshape of a parameter and
 *    leaves one by a computed weight alone (mem.quantized counts them), the output close to f32;
 *  - ts_program_set_param between runs re-quantizes the weights (and a kept f32 kernel takes them);
 *  - the device option "conv_int8": "fastest" keeps whichever kernel its first run timed faster,
 *    and the output and the profile report agree on which; "always" keeps int8;
 *  - the op has no gradient, and a bad a_scale is refused.
 */
#include "test_util.h"

#include "backend/cpu/cpu.h" /* the op's id and the reference kernel */
#include "graph/op_attrs.h"

/* One convolution: x [N, C, H, W], w [O, C/G, KH, KW], its window and epilogue. */
typedef struct cc {
    const char *name;
    int N, C, H, W, O, KH, KW, sh, sw, pt, pl, pb, pr, dh, dw, G, bias, act, clamp;
    float alpha, lo, hi, a_scale;
} cc;

static const cc CASES[] = {
    {"dense 3x3 pad 1, bias, relu", 2, 8, 9, 11, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, TS_CONV_ACT_RELU, 0, 0, 0, 0, 0},
    {"strided 3x3 s2, asymmetric pads", 1, 6, 12, 10, 8, 3, 3, 2, 2, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"dilated 3x3 d2, leaky relu, clamp", 1, 4, 10, 10, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, TS_CONV_ACT_LEAKY_RELU,
     1, 0.1f, -0.5f, 2.f, 0},
    {"grouped G 2, 5x3, bias", 2, 8, 8, 9, 12, 5, 3, 1, 2, 2, 1, 2, 1, 1, 1, 2, 1, 0, 0, 0, 0, 0, 0},
    {"depthwise 3x3, bias, relu6", 2, 16, 14, 13, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 1, 0, 1, 0, 0, 6.f, 0},
    {"depthwise 5x5 s2", 1, 24, 15, 15, 24, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 24, 1, 0, 0, 0, 0, 0, 0},
    {"pointwise 1x1, bias", 3, 32, 7, 5, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
    {"fixed a_scale 0.01 (clips)", 1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0.01f},
};
enum { NCASES = sizeof CASES / sizeof *CASES };

static int64_t out_dim(int in, int p0, int p1, int k, int d, int s) { return (in + p0 + p1 - d * (k - 1) - 1) / s + 1; }

static void case_attrs(const cc *c, ts_attrs *at) {
    memset(at, 0, sizeof *at);
    int64_t v[11] = {c->sh, c->sw, c->pt, c->pl, c->pb, c->pr, c->dh, c->dw, c->G, c->act, c->clamp};
    memcpy(at->i, v, sizeof v);
    at->ni = 11;
    at->f[0] = c->alpha, at->f[1] = c->lo, at->f[2] = c->hi, at->f[3] = c->a_scale;
}

/* Numbers of elements of x, w, y. */
static void sizes(const cc *c, int64_t *nx, int64_t *nw, int64_t *ny) {
    *nx = (int64_t)c->N * c->C * c->H * c->W;
    *nw = (int64_t)c->O * (c->C / c->G) * c->KH * c->KW;
    *ny = (int64_t)c->N * c->O * out_dim(c->H, c->pt, c->pb, c->KH, c->dh, c->sh) *
          out_dim(c->W, c->pl, c->pr, c->KW, c->dw, c->sw);
}

/* A graph with x an input, w and bias parameters (or w an input: computed) and y = conv2d_i8. */
static ts_value build(ts_graph *g, const cc *c) {
    ts_value x = ts_input(g, "x", TS_F32, DIMS(c->N, c->C, c->H, c->W));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(c->O, c->C / c->G, c->KH, c->KW), ts_init_normal(0.2f));
    ts_value b = c->bias ? ts_param(g, "b", TS_F32, DIMS(c->O), ts_init_normal(0.5f)) : TS_NONE;
    ts_attrs at;
    case_attrs(c, &at);
    int in[3] = {x, w, b};
    return ts_name(g, ts_node_add(g, TS_OP_CONV2D_I8, c->bias ? 3 : 2, in, &at, NULL), "y");
}

/* y = conv2d_i8(x, w, bias) by the reference kernel on host arrays. */
static void reference(const cc *c, const float *x, const float *w, const float *bias, float *y) {
    ts_graph *g = ts_graph_new();
    ts_value vy = build(g, c);
    CHECK(vy != TS_NONE, "%s: building conv2d_i8: %s", c->name, ts_last_error());
    if (vy != TS_NONE) {
        ts_kargs k = {.g = g, .node = &g->nodes[g->vals[vy].node]};
        k.in[0] = (void *)x, k.in[1] = (void *)w, k.in[2] = (void *)bias, k.out[0] = y;
        CHECK_OK(ts_op_get(TS_OP_CONV2D_I8)->kernel(&k));
    }
    ts_graph_free(g);
}

/* q = clamp(rne(x inv)) over n floats with the op's formula; returns the scale (m / 127, or the
 * fixed one). */
static float quantize(const float *x, int64_t n, float fixed, int8_t *q) {
    float m = 0.f;
    for (int64_t i = 0; i < n; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    float inv = fixed > 0.f ? 1.f / fixed : m > 0.f ? 127.f / m : 0.f;
    for (int64_t i = 0; i < n; i++) {
        float v = nearbyintf(x[i] * inv);
        q[i] = (int8_t)(v > 127.f ? 127.f : v < -127.f ? -127.f : v);
    }
    return fixed > 0.f ? fixed : m / 127.f;
}

/* The quantized math of the op's comment in double, into ref [N, O, OH, OW]; quantized 0:
 * conv2d's f32 math instead, on x and w as they are (what the f32 kernel computes). */
static void double_math(const cc *c, const float *x, const float *w, const float *bias, int quantized, double *ref) {
    int64_t nx, nw, ny, Cg = c->C / c->G, Og = c->O / c->G, Kw = Cg * c->KH * c->KW;
    int64_t OH = out_dim(c->H, c->pt, c->pb, c->KH, c->dh, c->sh), OW = out_dim(c->W, c->pl, c->pr, c->KW, c->dw, c->sw);
    sizes(c, &nx, &nw, &ny);
    int8_t *qx = malloc((size_t)nx), *qw = malloc((size_t)nw);
    double sa = quantize(x, nx, c->a_scale, qx);
    for (int64_t i = 0; i < ny; i++) {
        int64_t ow = i % OW, oh = i / OW % OH, o = i / (OW * OH) % c->O, n = i / (OW * OH * c->O);
        double sw = quantize(w + o * Kw, Kw, 0.f, qw + o * Kw);
        double acc = 0; /* quantized: an exact integer */
        for (int64_t ci = 0; ci < Cg; ci++)
            for (int kh = 0; kh < c->KH; kh++)
                for (int kw = 0; kw < c->KW; kw++) {
                    int64_t h = oh * c->sh - c->pt + kh * c->dh, wc = ow * c->sw - c->pl + kw * c->dw;
                    if (h < 0 || h >= c->H || wc < 0 || wc >= c->W) continue;
                    int64_t xi = ((n * c->C + o / Og * Cg + ci) * c->H + h) * c->W + wc;
                    int64_t wi = ((o * Cg + ci) * c->KH + kh) * c->KW + kw;
                    acc += quantized ? (double)qx[xi] * qw[wi] : (double)x[xi] * w[wi];
                }
        double v = (quantized ? acc * sa * sw : acc) + (bias ? bias[o] : 0.0);
        if (c->act == TS_CONV_ACT_RELU) v = v < 0 ? 0 : v;
        if (c->act == TS_CONV_ACT_LEAKY_RELU) v = v < 0 ? c->alpha * v : v;
        if (c->clamp) v = v < c->lo ? c->lo : v > c->hi ? c->hi : v;
        ref[i] = v;
    }
    free(qx), free(qw);
}

static void fill(tu_rng *r, float *x, int64_t n, double s) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(s * tu_normal(r));
}

static double rel_err(double a, double b) { return fabs(a - b) / (fabs(b) > 1 ? fabs(b) : 1); }

/* The largest rel_err of y[i] from ref[i] over n values (NaN counts as the largest). */
static double worst_rel(const float *y, const double *ref, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = rel_err(y[i], ref[i]);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

/* The reference kernel against the quantized math in double. */
static void test_reference_is_the_quantized_math(void) {
    tu_rng r = tu_rng_seed(11);
    for (int t = 0; t < NCASES; t++) {
        const cc *c = &CASES[t];
        int64_t nx, nw, ny;
        sizes(c, &nx, &nw, &ny);
        float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw), *b = malloc(sizeof(float) * c->O);
        float *y = malloc(sizeof(float) * ny);
        double *ref = malloc(sizeof(double) * ny);
        fill(&r, x, nx, 1.0), fill(&r, w, nw, 0.2), fill(&r, b, c->O, 0.5);
        x[nx / 3] = 6.f; /* an outlier sets the dynamic scale */
        reference(c, x, w, c->bias ? b : NULL, y);
        double_math(c, x, w, c->bias ? b : NULL, 1, ref);
        double worst = worst_rel(y, ref, ny);
        printf("  %-36s largest relative |reference kernel - double| = %.2e\n", c->name, worst);
        CHECK(worst <= 1e-6, "%s: reference kernel off the quantized math by %.3e", c->name, worst);
        free(x), free(w), free(b), free(y), free(ref);
    }
}

/* The largest relative difference of y (ny values, from the CPU kernel) from the reference kernel
 * on x, w and bias (NULL: none); INFINITY out of memory. */
static double worst_vs_reference(const cc *c, ts_tensor *xt, ts_tensor *wt, ts_tensor *bt, ts_tensor *yt,
                                 int64_t ny) {
    float *ref = malloc(sizeof(float) * ny);
    if (!ref) return INFINITY;
    reference(c, tu_f32(xt), tu_f32(wt), bt ? tu_f32(bt) : NULL, ref);
    double worst = 0;
    for (int64_t i = 0; i < ny; i++) {
        double e = rel_err(tu_f32(yt)[i], ref[i]);
        if (!(e <= worst)) worst = e;
    }
    free(ref);
    return worst;
}

/* The CPU kernel (the op built directly, weights parameters) against the reference kernel. */
static void test_cpu_kernel_matches_reference(void) {
    tu_rng r = tu_rng_seed(12);
    for (int t = 0; t < NCASES; t++) {
        const cc *c = &CASES[t];
        ts_graph *g = ts_graph_new();
        ts_graph_set_seed(g, 3 + t);
        build(g, c);
        const char *f[] = {"y"};
        ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                         .fetches = f, .inference = 1});
        CHECK(p != NULL, "%s: compile: %s", c->name, ts_last_error());
        ts_graph_free(g);
        if (!p) continue;
        ts_tensor *xt = tu_rand_tensor(&r, DIMS(c->N, c->C, c->H, c->W), -2.0, 2.0), *wt = NULL, *bt = NULL, *yt;
        CHECK_OK(ts_program_feed(p, "x", xt));
        for (int run = 0; run < 2; run++) CHECK_OK(ts_program_run(p)); /* the second with the kept weights */
        yt = TU_FETCH(p, "y");
        CHECK_OK(ts_program_get_param(p, "w", &wt));
        if (c->bias) CHECK_OK(ts_program_get_param(p, "b", &bt));
        int64_t nx, nw, ny;
        sizes(c, &nx, &nw, &ny);
        double worst = yt && wt && (bt || !c->bias) ? worst_vs_reference(c, xt, wt, bt, yt, ny) : INFINITY;
        printf("  %-36s largest relative |CPU kernel - reference| = %.2e\n", c->name, worst);
        /* the same int32 sums; the f32 scaling and bias in oneDNN's order: a few ulps */
        CHECK(worst <= 1e-5, "%s: CPU kernel off the reference by %.3e", c->name, worst);
        ts_tensor_free(xt), ts_tensor_free(wt), ts_tensor_free(bt), ts_tensor_free(yt);
        ts_program_free(p);
    }
}

/* The CPU kernel's baked epilogue (constant per-channel scales, the bias divided by them:
 * backend/cpu/conv_int8.c) at its edges, against the reference kernel, on a dense and a pointwise
 * case with bias: x all 0 (sa 0: y is the bias through the epilogue), an output channel's weights
 * all 0, and x and w so small that bias / (sa sw) overflows (the run takes the reference kernel). */
static void test_baked_scale_edges(void) {
    tu_rng r = tu_rng_seed(13);
    const int which[2] = {0, 6};
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < 3; e++) {
            const cc *c = &CASES[which[t]];
            ts_graph *g = ts_graph_new();
            ts_graph_set_seed(g, 5 + t);
            build(g, c);
            const char *f[] = {"y"};
            ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                             .fetches = f, .inference = 1});
            ts_graph_free(g);
            CHECK(p != NULL, "%s: compile: %s", c->name, ts_last_error());
            if (!p) continue;
            int64_t nx, nw, ny;
            sizes(c, &nx, &nw, &ny);
            ts_tensor *xt = tu_rand_tensor(&r, DIMS(c->N, c->C, c->H, c->W), -2.0, 2.0);
            ts_tensor *wt = tu_rand_tensor(&r, DIMS(c->O, c->C / c->G, c->KH, c->KW), -0.3, 0.3), *bt = NULL, *yt;
            if (e == 0) memset(tu_f32(xt), 0, sizeof(float) * (size_t)nx);
            if (e == 1) memset(tu_f32(wt) + 2 * (nw / c->O), 0, sizeof(float) * (size_t)(nw / c->O));
            if (e == 2) {
                for (int64_t i = 0; i < nx; i++) tu_f32(xt)[i] *= 1e-21f;
                for (int64_t i = 0; i < nw; i++) tu_f32(wt)[i] *= 1e-20f;
            }
            CHECK_OK(ts_program_set_param(p, "w", wt));
            CHECK_OK(ts_program_feed(p, "x", xt));
            CHECK_OK(ts_program_run(p));
            yt = TU_FETCH(p, "y");
            CHECK_OK(ts_program_get_param(p, "b", &bt));
            double worst = yt && bt ? worst_vs_reference(c, xt, wt, bt, yt, ny) : INFINITY;
            static const char *const what[3] = {"x all 0", "a weight channel 0", "overflowing bias / scale"};
            printf("  %-36s %-26s largest relative |CPU kernel - reference| = %.2e\n", c->name, what[e], worst);
            CHECK(worst <= 1e-5, "%s, %s: CPU kernel off the reference by %.3e", c->name, what[e], worst);
            ts_tensor_free(xt), ts_tensor_free(wt), ts_tensor_free(bt), ts_tensor_free(yt);
            ts_program_free(p);
        }
}

/* x [2, 8, 12, 12] through four convolutions: by a parameter (bias, relu fused), by a constant,
 * by a reshape of a parameter, and by a computed weight (2 w2: not quantized); y their sum. */
static ts_program *four_convs(int q, int *nquant) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 31);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 8, 12, 12));
    ts_value w1 = ts_param(g, "w1", TS_F32, DIMS(8, 8, 3, 3), ts_init_normal(0.2f));
    ts_value b1 = ts_param(g, "b1", TS_F32, DIMS(8), ts_init_normal(0.5f));
    ts_tensor *ct = ts_tensor_new(TS_F32, DIMS(8, 1, 3, 3));
    tu_rng r = tu_rng_seed(32);
    fill(&r, tu_f32(ct), 72, 0.3);
    ts_value w2 = ts_constant(g, ct);
    ts_tensor_free(ct);
    ts_value w3 = ts_reshape(g, ts_param(g, "w3", TS_F32, DIMS(8, 72), ts_init_normal(0.2f)), DIMS(8, 8, 3, 3));
    ts_value w4 = ts_scale(g, ts_param(g, "w4", TS_F32, DIMS(8, 8, 1, 1), ts_init_normal(0.2f)), 2.f, 0.f);
    ts_conv_opts pad1 = {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}, dw = {{1, 1}, {1, 1, 1, 1}, {1, 1}, 8};
    ts_value y = ts_relu(g, ts_conv2d(g, x, w1, b1, &pad1));
    y = ts_add(g, y, ts_conv2d(g, x, w2, TS_NONE, &dw));
    y = ts_add(g, y, ts_conv2d(g, x, w3, TS_NONE, &pad1));
    y = ts_add(g, y, ts_conv2d(g, x, w4, TS_NONE, NULL));
    ts_name(g, y, "y");
    const char *f[] = {"y"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                     .fetches = f, .inference = 1, .quantize = q});
    CHECK(p != NULL, "compile (quantize %d): %s", q, ts_last_error());
    ts_graph_free(g);
    ts_memory mem = {.struct_size = sizeof mem};
    if (p) CHECK_OK(ts_program_memory(p, &mem));
    *nquant = mem.quantized;
    return p;
}

static ts_tensor *run_y(ts_program *p, const ts_tensor *x) {
    CHECK_OK(ts_program_feed(p, "x", x));
    CHECK_OK(ts_program_run(p));
    return TU_FETCH(p, "y");
}

/* Largest |a - b| over the largest |b|. */
static double scaled_diff(ts_tensor *a, ts_tensor *b, int64_t n) {
    if (!a || !b) return INFINITY;
    double mx = 0, big = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(tu_f32(a)[i] - tu_f32(b)[i]);
        mx = d > mx ? d : mx, big = fabs(tu_f32(b)[i]) > big ? fabs(tu_f32(b)[i]) : big;
    }
    return big > 0 ? mx / big : mx;
}

/* One program of four_convs in f32 and one in int8 under the device's options, compared. */
static void pass_and_set_param(void) {
    int nf = -1, nq = -1;
    ts_program *pf = four_convs(0, &nf), *pq = four_convs(TS_QUANT_DYNAMIC, &nq);
    CHECK(nf == 0 && nq == 3, "quantized: f32 program %d, int8 program %d (expected 0, 3)", nf, nq);
    tu_rng r = tu_rng_seed(33);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(2, 8, 12, 12), -1.0, 1.0);
    int64_t ny = 2 * 8 * 12 * 12;
    if (pf && pq) {
        ts_tensor *yf = run_y(pf, x), *yq = run_y(pq, x);
        double d0 = scaled_diff(yq, yf, ny);
        ts_tensor_free(yf), ts_tensor_free(yq);
        ts_tensor *w1 = tu_rand_tensor(&r, DIMS(8, 8, 3, 3), -3.0, 3.0); /* 10x the scale: stale would show */
        CHECK_OK(ts_program_set_param(pf, "w1", w1));
        CHECK_OK(ts_program_set_param(pq, "w1", w1));
        yf = run_y(pf, x), yq = run_y(pq, x);
        double d1 = scaled_diff(yq, yf, ny);
        printf("  int8 vs f32, largest difference over largest output: %.2e; after set_param %.2e\n", d0, d1);
        /* 4 int8 convolutions of 72 products each: about 1% of the output's scale */
        CHECK(d0 <= 0.03 && d1 <= 0.03, "int8 output off f32 by %.3e / %.3e of its scale", d0, d1);
        ts_tensor_free(yf), ts_tensor_free(yq), ts_tensor_free(w1);
    }
    ts_tensor_free(x);
    ts_program_free(pf), ts_program_free(pq);
}

/* The pass: three of the four convolutions quantized; the output close to f32; and after a
 * weight is written, close to the f32 program's with the same weight (re-quantized). Run with the
 * int8 kernel always, then with each convolution's faster kernel (the device option conv_int8):
 * a kept f32 kernel must take the new weight too. */
static void test_pass_and_set_param(void) {
    for (int mode = 0; mode < 2; mode++) {
        CHECK_OK(ts_device_set_option("cpu", "conv_int8", mode ? "fastest" : "always"));
        pass_and_set_param();
    }
    CHECK_OK(ts_device_set_option("cpu", "conv_int8", "always"));
}

/* No gradient; a negative or infinite a_scale refused, and a choose other than 0 or 1. */
static void test_refusals(void) {
    cc c = CASES[0];
    ts_graph *g = ts_graph_new();
    ts_value y = build(g, &c);
    CHECK(ts_backward(g, ts_reduce_sum(g, y, 0, NULL, 0)) == TS_ERR_UNSUPPORTED, "conv2d_i8 has a gradient");
    CHECK_ERRMSG("conv2d_i8", "inference");
    ts_graph_free(g);
    float bad[2] = {-1.f, INFINITY};
    for (int i = 0; i < 2; i++) {
        c.a_scale = bad[i];
        g = ts_graph_new();
        CHECK(build(g, &c) == TS_NONE && ts_last_status() == TS_ERR_ARG, "a_scale %g accepted", (double)bad[i]);
        CHECK_ERRMSG("conv2d_i8", "a_scale");
        ts_graph_free(g);
    }
    c = CASES[0];
    g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(c.N, c.C, c.H, c.W));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(c.O, c.C, c.KH, c.KW), ts_init_normal(0.2f));
    ts_attrs at;
    case_attrs(&c, &at);
    at.i[11] = 2, at.ni = 12;
    int in[2] = {x, w};
    CHECK(ts_node_add(g, TS_OP_CONV2D_I8, 2, in, &at, NULL) == TS_NONE && ts_last_status() == TS_ERR_ARG,
          "choose 2 accepted");
    CHECK_ERRMSG("conv2d_i8", "choose");
    ts_graph_free(g);
}


/* The profile report's text (ts_program_profile_report's one write), kept for a check. */
static char report[8192];
static void keep_report(void *ctx, const char *text, size_t len) {
    (void)ctx;
    snprintf(report, sizeof report, "%.*s", (int)len, text);
}

/* The device option "conv_int8" "fastest" (the default; the other cases run "always") on nodes
 * whose attribute choose is 1 (as the quantization pass makes them): each convolution times its
 * int8 kernel against the f32 one on its first run and keeps the faster. Which one wins depends on
 * this machine's timings, so each case checks that the output is the kernel's the profile names:
 * int8 within 1e-5 of the reference kernel, f32 within 1e-5 of conv2d's f32 math in double (both
 * differ from the other by about 1e-2: a wrong output shows); and that later runs keep it (the
 * same bits). With "always", or with choose 0 (a conv2d_i8 built as int8 math), the profile
 * names no kernel and the output is int8's. */
static void test_fastest_kernel_choice(void) {
    tu_rng r = tu_rng_seed(14);
    int chose[2] = {0, 0};
    for (int mode = 0; mode < 3; mode++) { /* fastest, always, fastest with choose 0 */
        CHECK_OK(ts_device_set_option("cpu", "conv_int8", mode == 1 ? "always" : "fastest"));
        for (int t = 0; t < NCASES; t++) {
            const cc *c = &CASES[t];
            ts_graph *g = ts_graph_new();
            ts_graph_set_seed(g, 7 + t);
            ts_value yv = build(g, c);
            ts_node *yn = yv != TS_NONE ? &g->nodes[g->vals[yv].node] : NULL;
            if (yn) yn->attr.i[11] = mode < 2, yn->attr.ni = 12;
            const char *f[] = {"y"};
            ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                             .fetches = f, .inference = 1, .profile = 1});
            ts_graph_free(g);
            CHECK(p != NULL, "%s: compile: %s", c->name, ts_last_error());
            if (!p) continue;
            int64_t nx, nw, ny;
            sizes(c, &nx, &nw, &ny);
            ts_tensor *xt = tu_rand_tensor(&r, DIMS(c->N, c->C, c->H, c->W), -2.0, 2.0), *wt = NULL, *bt = NULL;
            CHECK_OK(ts_program_feed(p, "x", xt));
            CHECK_OK(ts_program_run(p));
            ts_tensor *y1 = TU_FETCH(p, "y");
            CHECK_OK(ts_program_run(p));
            ts_tensor *y2 = TU_FETCH(p, "y");
            CHECK_OK(ts_program_get_param(p, "w", &wt));
            if (c->bias) CHECK_OK(ts_program_get_param(p, "b", &bt));
            report[0] = 0;
            CHECK_OK(ts_program_profile_report(p, keep_report, NULL));
            int f32 = strstr(report, "conv2d_i8 (f32)") != NULL, i8 = strstr(report, "conv2d_i8 (int8)") != NULL;
            if (mode) CHECK(!f32 && !i8 && strstr(report, "conv2d_i8 "), "%s, %s: the profile names a kernel:\n%s",
                            c->name, mode == 1 ? "always" : "choose 0", report);
            else CHECK(f32 + i8 == 1, "%s, fastest: the profile names %s:\n%s", c->name, f32 ? "both" : "neither",
                       report);
            double worst = INFINITY;
            if (y1 && wt && (bt || !c->bias) && !f32) worst = worst_vs_reference(c, xt, wt, bt, y1, ny);
            double *ref = f32 ? malloc(sizeof(double) * (size_t)ny) : NULL;
            if (ref && y1 && wt && (bt || !c->bias)) {
                double_math(c, tu_f32(xt), tu_f32(wt), bt ? tu_f32(bt) : NULL, 0, ref);
                worst = worst_rel(tu_f32(y1), ref, ny);
            }
            free(ref);
            if (!mode) chose[f32]++;
            static const char *const mode_name[3] = {"fastest", "always", "choose 0"};
            printf("  %-36s %-8s ran %-4s largest relative |y - its kernel's math| = %.2e\n", c->name,
                   mode_name[mode], f32 ? "f32" : "int8", worst);
            CHECK(worst <= 1e-5, "%s: the output is not the %s kernel's (off by %.3e)", c->name, f32 ? "f32" : "int8",
                  worst);
            CHECK(y1 && y2 && !memcmp(tu_f32(y1), tu_f32(y2), sizeof(float) * (size_t)ny),
                  "%s: the second run's output differs from the first's", c->name);
            ts_tensor_free(xt), ts_tensor_free(wt), ts_tensor_free(bt), ts_tensor_free(y1), ts_tensor_free(y2);
            ts_program_free(p);
        }
    }
    printf("  fastest: %d of %d cases kept int8, %d ran f32 on this machine\n", chose[0], NCASES, chose[1]);
    CHECK(ts_device_set_option("cpu", "conv_int8", "sometimes") == TS_ERR_ARG, "a bad value accepted");
    CHECK_ERRMSG("conv_int8", "fastest", "always", "'sometimes'");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    /* the int8 kernel's own checks: never the f32 one in its place (test_fastest_kernel_choice) */
    CHECK_OK(ts_device_set_option("cpu", "conv_int8", "always"));
    RUN(test_reference_is_the_quantized_math);
    RUN(test_cpu_kernel_matches_reference);
    RUN(test_baked_scale_edges);
    RUN(test_pass_and_set_param);
    RUN(test_refusals);
    RUN(test_fastest_kernel_choice);
    return tu_finish("test_quant_conv");
}
