/*
 * test_vision_ops.c — the vision ops: conv2d, conv_transpose2d, max_pool2d, avg_pool2d,
 * resize2d, clip, hard_sigmoid and hard_swish.
 *
 *  - Forward against naive loops written here (a gather per output for conv2d and pooling, a
 *    scatter per input for conv_transpose2d, the coordinate formulas of ONNX Resize for
 *    resize2d), in double, over shapes that cover groups = 1, 2 and C (depthwise), dilation,
 *    strides with dropped rows, asymmetric pads, 1x1 kernels, batches, output padding, ceil_mode,
 *    count_include_pad and every resize mode / coordinate transform / rounding; a few values
 *    written out by hand (PyTorch's results) pin the conventions.
 *  - Convolutions twice: on oneDNN (the CPU backend's default) and on the reference kernels of
 *    src/ops/conv.c (the CPU device's option conv_algorithm "reference" while the program is
 *    compiled: ts_device_set_option).
 *  - Gradients of every differentiable op in each input by finite differences (fd_check.h).
 *  - Bad inputs (channel mismatch, groups that do not divide, a kernel bigger than the padded
 *    input, wrong ranks, bad attributes) fail the builder with a message naming the op.
 */
#include "fd_check.h"

/* ------------------------------------------------------------------ helpers */

/* Value of parameter / input name in host values. */
static const float *PV(const fd_host *h, const char *name) {
    const float *v = fd_param_val(h, name);
    if (!v) {
        fprintf(stderr, "reference: no parameter '%s'\n", name);
        abort();
    }
    return v;
}

static void use_reference_kernels(int on) {
    CHECK_OK(ts_device_set_option("cpu", "conv_algorithm", on ? "reference" : "auto"));
}

/* ------------------------------------------------------------------ convolutions */

typedef struct conv_case {
    int64_t N, C, H, W, O, KH, KW; /* x [N, C, H, W]; conv: w [O, C/G, KH, KW]; transpose: w [C, O/G, KH, KW] */
    ts_conv_opts o;
    int bias, transpose;
    int out_pad[2];
} conv_case;

static int64_t sd(int v) { return v ? v : 1; }

/* The output extents the public header promises. */
static void conv_out(const conv_case *c, int64_t *OH, int64_t *OW) {
    int64_t sh = sd(c->o.stride[0]), sw = sd(c->o.stride[1]), dh = sd(c->o.dilation[0]), dw = sd(c->o.dilation[1]);
    if (c->transpose) {
        *OH = sh * (c->H - 1) + c->out_pad[0] + dh * (c->KH - 1) + 1 - c->o.pad[0] - c->o.pad[2];
        *OW = sw * (c->W - 1) + c->out_pad[1] + dw * (c->KW - 1) + 1 - c->o.pad[1] - c->o.pad[3];
    } else {
        *OH = (c->H + c->o.pad[0] + c->o.pad[2] - dh * (c->KH - 1) - 1) / sh + 1;
        *OW = (c->W + c->o.pad[1] + c->o.pad[3] - dw * (c->KW - 1) - 1) / sw + 1;
    }
}

/* conv2d: y[n, o, oh, ow] = b[o] + sum over (c, kh, kw) inside the input of
 * x[n, g Cg + c, oh sh - pt + kh dh, ow sw - pl + kw dw] w[o, c, kh, kw]. */
static void naive_conv(const conv_case *c, const float *x, const float *w, const float *b, double *y) {
    int64_t OH, OW, G = sd(c->o.groups), Cg = c->C / G, Og = c->O / G;
    conv_out(c, &OH, &OW);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t o = 0; o < c->O; o++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = b ? b[o] : 0;
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t kh = 0; kh < c->KH; kh++)
                            for (int64_t kw = 0; kw < c->KW; kw++) {
                                int64_t h = oh * sd(c->o.stride[0]) - c->o.pad[0] + kh * sd(c->o.dilation[0]);
                                int64_t v = ow * sd(c->o.stride[1]) - c->o.pad[1] + kw * sd(c->o.dilation[1]);
                                if (h < 0 || h >= c->H || v < 0 || v >= c->W) continue;
                                s += (double)x[((n * c->C + o / Og * Cg + ci) * c->H + h) * c->W + v] *
                                     w[((o * Cg + ci) * c->KH + kh) * c->KW + kw];
                            }
                    y[((n * c->O + o) * OH + oh) * OW + ow] = s;
                }
}

/* conv_transpose2d: every x[n, ci, h, v] adds x * w[ci, oo, kh, kw] to y[n, g Og + oo,
 * h sh - pt + kh dh, v sw - pl + kw dw] (where that lies in y), g = ci / (C/G); plus b. */
static void naive_conv_transpose(const conv_case *c, const float *x, const float *w, const float *b, double *y) {
    int64_t OH, OW, G = sd(c->o.groups), Cg = c->C / G, Og = c->O / G;
    conv_out(c, &OH, &OW);
    for (int64_t i = 0; i < c->N * c->O * OH * OW; i++) y[i] = b ? b[i / (OH * OW) % c->O] : 0;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t ci = 0; ci < c->C; ci++)
            for (int64_t h = 0; h < c->H; h++)
                for (int64_t v = 0; v < c->W; v++)
                    for (int64_t oo = 0; oo < Og; oo++)
                        for (int64_t kh = 0; kh < c->KH; kh++)
                            for (int64_t kw = 0; kw < c->KW; kw++) {
                                int64_t oh = h * sd(c->o.stride[0]) - c->o.pad[0] + kh * sd(c->o.dilation[0]);
                                int64_t ow = v * sd(c->o.stride[1]) - c->o.pad[1] + kw * sd(c->o.dilation[1]);
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                                int64_t o = ci / Cg * Og + oo;
                                y[((n * c->O + o) * OH + oh) * OW + ow] +=
                                    (double)x[((n * c->C + ci) * c->H + h) * c->W + v] *
                                    w[((ci * Og + oo) * c->KH + kh) * c->KW + kw];
                            }
}

static void conv_wshape(const conv_case *c, int64_t *ws) {
    int64_t G = sd(c->o.groups);
    ws[0] = c->transpose ? c->C : c->O;
    ws[1] = c->transpose ? c->O / G : c->C / G;
    ws[2] = c->KH, ws[3] = c->KW;
}

static int build_conv(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const conv_case *c = ctx;
    ts_value b = c->bias ? p[2] : TS_NONE;
    o[0] = c->transpose ? ts_conv_transpose2d(g, p[0], p[1], b, &c->o, c->out_pad) : ts_conv2d(g, p[0], p[1], b, &c->o);
    return 1;
}

static void ref_conv(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const conv_case *c = ctx;
    int64_t OH, OW;
    conv_out(c, &OH, &OW);
    const int64_t want[4] = {c->N, c->O, OH, OW};
    CHECK(o[0].nd == 4 && memcmp(o[0].shape, want, sizeof want) == 0,
          "output shape [%lld, %lld, %lld, %lld], the header's formula gives [%lld, %lld, %lld, %lld]",
          (long long)o[0].shape[0], (long long)o[0].shape[1], (long long)o[0].shape[2], (long long)o[0].shape[3],
          (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3]);
    const float *b = c->bias ? PV(h, "b") : NULL;
    if (c->transpose) naive_conv_transpose(c, PV(h, "x"), PV(h, "w"), b, o[0].ref);
    else naive_conv(c, PV(h, "x"), PV(h, "w"), b, o[0].ref);
    (void)nout;
}

/* Forward against the naive loops and gradients in x, w (and b) by finite differences. */
static void conv_fd(const char *name, const conv_case *c, int reference) {
    use_reference_kernels(reference);
    char full[160];
    snprintf(full, sizeof full, "%s%s", name, reference ? " [reference kernel]" : "");
    fd_spec s;
    fd_init(&s, full, build_conv, c);
    int64_t ws[4];
    conv_wshape(c, ws);
    fd_param(&s, "x", GEN_UNIF, 4, (int64_t[]){c->N, c->C, c->H, c->W});
    fd_param(&s, "w", GEN_WEIGHT, 4, ws);
    if (c->bias) fd_param(&s, "b", GEN_SMALL, 1, (int64_t[]){c->O});
    s.ref = ref_conv;
    s.max_check = 48;
    fd_run(&s);
    use_reference_kernels(0);
}

/* The shapes of the convolution cases (forward and gradients). */
static const conv_case conv_cases[] = {
    /* plain 3x3, pad 1, batch 2, bias */
    {2, 3, 7, 6, 4, 3, 3, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}, 1, 0, {0, 0}},
    /* depthwise (groups = C), stride 2, pad 1: rows dropped by the floor */
    {1, 4, 8, 7, 4, 3, 3, {{2, 2}, {1, 1, 1, 1}, {1, 1}, 4}, 1, 0, {0, 0}},
    /* groups 2 with 2 output channels per group, no bias */
    {2, 4, 5, 6, 4, 3, 2, {{1, 1}, {0, 1, 0, 0}, {1, 1}, 2}, 0, 0, {0, 0}},
    /* dilation 2 */
    {1, 2, 9, 8, 3, 3, 3, {{1, 1}, {2, 2, 2, 2}, {2, 2}, 1}, 1, 0, {0, 0}},
    /* stride (2, 3), asymmetric pads {0, 1, 2, 0}, dilation (1, 2) */
    {1, 3, 9, 11, 2, 2, 3, {{2, 3}, {0, 1, 2, 0}, {1, 2}, 1}, 1, 0, {0, 0}},
    /* 1x1 conv, batch 3 */
    {3, 5, 4, 3, 6, 1, 1, {{1, 1}, {0, 0, 0, 0}, {1, 1}, 1}, 1, 0, {0, 0}},
    /* 1x1 stride 2 (a shortcut projection) */
    {1, 4, 6, 5, 3, 1, 1, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}, 0, 0, {0, 0}},
    /* wide depthwise rows (the CPU backend's direct kernel, 8 outputs at a time): stride 1 with
     * dilation (1, 2) and pads {1, 2, 0, 1}; 5x5 stride 2 */
    {2, 3, 5, 29, 3, 3, 3, {{1, 1}, {1, 2, 0, 1}, {1, 2}, 3}, 1, 0, {0, 0}},
    {1, 2, 6, 37, 2, 5, 5, {{2, 2}, {2, 2, 2, 2}, {1, 1}, 2}, 1, 0, {0, 0}},
};
static const char *const conv_names[] = {
    "conv2d 3x3 p1 N2 bias", "conv2d depthwise 3x3 s2 p1", "conv2d groups 2 3x2", "conv2d dilation 2 p2",
    "conv2d s(2,3) pads{0,1,2,0} dil(1,2)", "conv2d 1x1 N3", "conv2d 1x1 s2", "conv2d depthwise wide dil(1,2)",
    "conv2d depthwise wide 5x5 s2",
};

static const conv_case convt_cases[] = {
    /* stride 2, pad 1, output padding 1 (the adjoint of a stride-2 conv that dropped a row) */
    {2, 3, 4, 3, 2, 3, 3, {{2, 2}, {1, 1, 1, 1}, {1, 1}, 1}, 1, 1, {1, 1}},
    /* kernel 2 stride 2 (DB head upsampling) */
    {1, 4, 3, 4, 3, 2, 2, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}, 1, 1, {0, 0}},
    /* groups 2, dilation 2, asymmetric pads, output padding (1, 0) */
    {1, 4, 4, 5, 6, 3, 2, {{2, 1}, {1, 0, 0, 1}, {2, 2}, 2}, 0, 1, {1, 0}},
    /* depthwise transpose, stride 3 */
    {1, 3, 3, 3, 3, 3, 3, {{3, 3}, {1, 1, 1, 1}, {1, 1}, 3}, 1, 1, {2, 0}},
};
static const char *const convt_names[] = {
    "conv_transpose2d 3x3 s2 p1 out_pad 1", "conv_transpose2d 2x2 s2", "conv_transpose2d groups 2 dil 2",
    "conv_transpose2d depthwise s3 out_pad 2",
};

static void test_conv_fd(void) {
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) conv_fd(conv_names[i], &conv_cases[i], 0);
}
static void test_conv_fd_reference(void) {
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) conv_fd(conv_names[i], &conv_cases[i], 1);
}
static void test_conv_transpose_fd(void) {
    for (size_t i = 0; i < sizeof convt_cases / sizeof *convt_cases; i++) conv_fd(convt_names[i], &convt_cases[i], 0);
}
static void test_conv_transpose_fd_reference(void) {
    for (size_t i = 0; i < sizeof convt_cases / sizeof *convt_cases; i++) conv_fd(convt_names[i], &convt_cases[i], 1);
}

/* A forward-only program on inputs x, w (, b): outputs large enough for the parallel paths. */
static void conv_forward_big(const conv_case *c, int reference) {
    use_reference_kernels(reference);
    tu_rng r = tu_rng_seed(77);
    int64_t ws[4], OH, OW;
    conv_wshape(c, ws);
    conv_out(c, &OH, &OW);
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){c->N, c->C, c->H, c->W});
    ts_value w = ts_input(g, "w", TS_F32, 4, ws);
    ts_value b = c->bias ? ts_input(g, "b", TS_F32, 1, (int64_t[]){c->O}) : TS_NONE;
    ts_value y = c->transpose ? ts_conv_transpose2d(g, x, w, b, &c->o, c->out_pad) : ts_conv2d(g, x, w, b, &c->o);
    ts_name(g, y, "y");
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"y"}, .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_tensor *tx = tu_rand_tensor(&r, 4, (int64_t[]){c->N, c->C, c->H, c->W}, -1, 1);
    ts_tensor *tw = tu_rand_tensor(&r, 4, ws, -0.5, 0.5);
    ts_tensor *tb = tu_rand_tensor(&r, 1, (int64_t[]){c->O}, -1, 1);
    if (p) {
        CHECK_OK(ts_program_feed(p, "x", tx));
        CHECK_OK(ts_program_feed(p, "w", tw));
        if (c->bias) CHECK_OK(ts_program_feed(p, "b", tb));
        CHECK_OK(ts_program_run(p));
        ts_tensor *ty = TU_FETCH(p, "y");
        if (ty) {
            int64_t n = c->N * c->O * OH * OW;
            CHECK(ts_tensor_numel(ty) == n, "y has %lld elements, expected %lld", (long long)ts_tensor_numel(ty),
                  (long long)n);
            double *ref = malloc(sizeof(double) * (size_t)n), err = 0;
            const float *bv = c->bias ? tu_f32(tb) : NULL;
            if (c->transpose) naive_conv_transpose(c, tu_f32(tx), tu_f32(tw), bv, ref);
            else naive_conv(c, tu_f32(tx), tu_f32(tw), bv, ref);
            for (int64_t i = 0; i < n && ts_tensor_numel(ty) == n; i++)
                err = fmax(err, fabs(tu_f32(ty)[i] - ref[i]) / fmax(1.0, fabs(ref[i])));
            CHECK(err < 1e-4, "max relative error %.3e against the naive loops", err);
            printf("  ok   %s forward [%lld, %lld, %lld, %lld]%s: err %.2e\n",
                   c->transpose ? "conv_transpose2d" : "conv2d", (long long)c->N, (long long)c->O, (long long)OH,
                   (long long)OW, reference ? " [reference kernel]" : "", err);
            free(ref);
            ts_tensor_free(ty);
        }
    }
    ts_tensor_free(tx);
    ts_tensor_free(tw);
    ts_tensor_free(tb);
    ts_program_free(p);
    ts_graph_free(g);
    use_reference_kernels(0);
}

static const conv_case big_cases[] = {
    {2, 8, 20, 19, 16, 3, 3, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}, 1, 0, {0, 0}},
    {1, 32, 24, 24, 32, 5, 5, {{2, 2}, {2, 2, 2, 2}, {1, 1}, 32}, 1, 0, {0, 0}},
    {2, 16, 30, 45, 16, 3, 3, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 16}, 1, 0, {0, 0}},
    {1, 8, 31, 64, 8, 7, 3, {{3, 3}, {3, 1, 3, 1}, {1, 1}, 8}, 0, 0, {0, 0}},
    {1, 4, 9, 150, 4, 3, 5, {{2, 2}, {1, 2, 1, 1}, {1, 1}, 4}, 1, 0, {0, 0}},
    /* depthwise on a one-column image (stride 2), and with stride 3 and dilation 2 */
    {1, 3, 7, 1, 3, 3, 1, {{2, 2}, {1, 0, 1, 0}, {1, 1}, 3}, 1, 0, {0, 0}},
    {2, 2, 10, 11, 2, 3, 3, {{3, 3}, {1, 1, 1, 1}, {2, 1}, 2}, 1, 0, {0, 0}},
    {1, 16, 12, 13, 8, 2, 2, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}, 1, 1, {0, 0}},
};
static void test_conv_forward_big(void) {
    for (int ref = 0; ref < 2; ref++)
        for (size_t i = 0; i < sizeof big_cases / sizeof *big_cases; i++) conv_forward_big(&big_cases[i], ref);
}

/* ------------------------------------------------------------------ pooling */

typedef struct pool_case {
    int64_t N, C, H, W;
    ts_pool_opts o;
    int is_max;
} pool_case;

static void pool_out(const pool_case *c, int64_t *OH, int64_t *OW) {
    int64_t in[2] = {c->H, c->W}, out[2];
    for (int a = 0; a < 2; a++) {
        int64_t s = sd(c->o.stride[a]), d = c->is_max ? sd(c->o.dilation[a]) : 1;
        int64_t p0 = c->o.pad[a], p1 = c->o.pad[a + 2];
        int64_t span = in[a] + p0 + p1 - d * (c->o.kernel[a] - 1) - 1;
        out[a] = (c->o.ceil_mode ? (span + s - 1) / s : span / s) + 1;
        if (c->o.ceil_mode && (out[a] - 1) * s >= in[a] + p0) out[a]--; /* the last window starts in the padding */
    }
    *OH = out[0], *OW = out[1];
}

static void naive_pool(const pool_case *c, const float *x, double *y) {
    int64_t OH, OW;
    pool_out(c, &OH, &OW);
    int64_t sh = sd(c->o.stride[0]), sw = sd(c->o.stride[1]);
    int64_t dh = c->is_max ? sd(c->o.dilation[0]) : 1, dw = c->is_max ? sd(c->o.dilation[1]) : 1;
    for (int64_t p = 0; p < c->N * c->C; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double best = -INFINITY, sum = 0;
                int64_t inside = 0, in_padded = 0;
                for (int i = 0; i < c->o.kernel[0]; i++)
                    for (int j = 0; j < c->o.kernel[1]; j++) {
                        int64_t h = oh * sh - c->o.pad[0] + i * dh, v = ow * sw - c->o.pad[1] + j * dw;
                        if (h >= -c->o.pad[0] && h < c->H + c->o.pad[2] && v >= -c->o.pad[1] && v < c->W + c->o.pad[3])
                            in_padded++;
                        if (h < 0 || h >= c->H || v < 0 || v >= c->W) continue;
                        double xv = x[(p * c->H + h) * c->W + v];
                        if (xv > best) best = xv;
                        sum += xv;
                        inside++;
                    }
                y[(p * OH + oh) * OW + ow] = c->is_max ? best : sum / (double)(c->o.count_include_pad ? in_padded : inside);
            }
}

static int build_pool(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const pool_case *c = ctx;
    o[0] = c->is_max ? ts_max_pool2d(g, p[0], &c->o) : ts_avg_pool2d(g, p[0], &c->o);
    return 1;
}
static void ref_pool(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const pool_case *c = ctx;
    int64_t OH, OW;
    pool_out(c, &OH, &OW);
    CHECK(o[0].shape[2] == OH && o[0].shape[3] == OW, "pooled to %lldx%lld, expected %lldx%lld",
          (long long)o[0].shape[2], (long long)o[0].shape[3], (long long)OH, (long long)OW);
    naive_pool(c, PV(h, "x"), o[0].ref);
    (void)nout;
}

static const pool_case pool_cases[] = {
    /* max 3x3 s2 p1 (floor) */
    {2, 3, 7, 8, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {0, 0}, 0, 0}, 1},
    /* max 3x3 s2 p1 ceil_mode */
    {1, 2, 8, 7, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {0, 0}, 1, 0}, 1},
    /* max 2x2 dilation 2, stride (1, 2), asymmetric pads {1, 0, 0, 1}, ceil */
    {1, 2, 6, 7, {{2, 2}, {1, 2}, {1, 0, 0, 1}, {2, 2}, 1, 0}, 1},
    /* avg 3x3 s2 p1, count_include_pad 1, ceil_mode */
    {1, 3, 7, 6, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {0, 0}, 1, 1}, 0},
    /* avg 3x3 s2 p1, count_include_pad 0, ceil_mode, asymmetric pads */
    {2, 2, 7, 6, {{3, 3}, {2, 2}, {1, 0, 1, 1}, {0, 0}, 1, 0}, 0},
    /* avg 2x2 s2 (floor, drops the odd row / column) */
    {1, 2, 5, 7, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {0, 0}, 0, 0}, 0},
    /* global average pooling (kernel = the image) */
    {2, 3, 4, 5, {{4, 5}, {1, 1}, {0, 0, 0, 0}, {0, 0}, 0, 0}, 0},
};
static const char *const pool_names[] = {
    "max_pool2d 3x3 s2 p1", "max_pool2d 3x3 s2 p1 ceil", "max_pool2d 2x2 dil 2 s(1,2) pads{1,0,0,1} ceil",
    "avg_pool2d 3x3 s2 p1 ceil include_pad", "avg_pool2d 3x3 s2 pads{1,0,1,1} ceil exclude_pad",
    "avg_pool2d 2x2 s2", "avg_pool2d global",
};

static void test_pool_fd(void) {
    for (size_t i = 0; i < sizeof pool_cases / sizeof *pool_cases; i++) {
        fd_spec s;
        fd_init(&s, pool_names[i], build_pool, &pool_cases[i]);
        const pool_case *c = &pool_cases[i];
        /* distinct values 0.05 apart: no two cells of a window within 2 eps of each other */
        fd_param(&s, "x", GEN_DISTINCT, 4, (int64_t[]){c->N, c->C, c->H, c->W});
        s.ref = ref_pool;
        fd_run(&s);
    }
}

/* Output shapes PyTorch gives (nn.MaxPool2d / AvgPool2d with ceil_mode=True). */
static void test_pool_shapes(void) {
    struct { int64_t H; int k, s, p; int64_t want; } t[] = {
        {8, 3, 2, 1, 5}, {6, 2, 2, 0, 3}, {5, 2, 2, 0, 3}, {6, 1, 2, 0, 3}, {5, 3, 3, 1, 2}, {4, 2, 2, 1, 3},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){1, 1, t[i].H, t[i].H});
        ts_pool_opts o = {{t[i].k, t[i].k}, {t[i].s, t[i].s}, {t[i].p, t[i].p, t[i].p, t[i].p}, {1, 1}, 1, 0};
        int64_t sh[TS_MAX_DIMS];
        for (int m = 0; m < 2; m++) {
            ts_value y = m ? ts_avg_pool2d(g, x, &o) : ts_max_pool2d(g, x, &o);
            CHECK(ts_value_shape(g, y, sh) == 4 && sh[2] == t[i].want && sh[3] == t[i].want,
                  "%s H %lld k %d s %d p %d ceil: %lld, PyTorch gives %lld (%s)", m ? "avg" : "max",
                  (long long)t[i].H, t[i].k, t[i].s, t[i].p, (long long)sh[2], (long long)t[i].want, ts_last_error());
        }
        ts_graph_free(g);
    }
}

/* Runs y = op(x) with x a parameter, loss = sum(y * r); returns y and x@GRAD (caller frees). */
static void run_with_grad(ts_value (*op)(ts_graph *, ts_value, const void *), const void *ctx, int nd,
                          const int64_t *xs, const float *xv, const float *r, ts_tensor **y, ts_tensor **gx) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_param(g, "x", TS_F32, nd, xs, ts_init_zeros());
    ts_value out = op(g, x, ctx);
    int64_t ys[TS_MAX_DIMS];
    int ynd = ts_value_shape(g, out, ys);
    ts_tensor *rt = ts_tensor_from(TS_F32, ynd < 0 ? 0 : ynd, ys, r);
    ts_value loss = ts_reduce_sum(g, ts_mul(g, out, ts_constant(g, rt)), 0, NULL, 0);
    ts_tensor_free(rt);
    ts_name(g, out, "y");
    CHECK_OK(ts_backward(g, loss));
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 2, .fetches = (const char *[]){"y", "x@GRAD"}});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    *y = *gx = NULL;
    if (p) {
        ts_tensor *xt = ts_tensor_from(TS_F32, nd, xs, xv);
        CHECK_OK(ts_program_set_param(p, "x", xt));
        ts_tensor_free(xt);
        CHECK_OK(ts_program_run(p));
        *y = TU_FETCH(p, "y");
        *gx = TU_FETCH(p, "x@GRAD");
    }
    ts_program_free(p);
    ts_graph_free(g);
}

static ts_value op_max_pool(ts_graph *g, ts_value x, const void *ctx) { return ts_max_pool2d(g, x, ctx); }

/* Ties: the gradient goes to the first maximum in window order; padded cells never win, even
 * over negative inputs. */
static void test_max_pool_ties_and_pads(void) {
    /* all ones, 2x2 windows with stride 1: each window's top-left cell takes its gradient */
    float x[16], r[9];
    for (int i = 0; i < 16; i++) x[i] = 1.f;
    for (int i = 0; i < 9; i++) r[i] = (float)(i + 1);
    ts_pool_opts o = {{2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0, 0};
    ts_tensor *y, *gx;
    run_with_grad(op_max_pool, &o, 4, (int64_t[]){1, 1, 4, 4}, x, r, &y, &gx);
    if (y && gx) {
        for (int i = 0; i < 9; i++) CHECK(tu_f32(y)[i] == 1.f, "y[%d] = %g", i, tu_f32(y)[i]);
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < 4; w++) {
                float want = h < 3 && w < 3 ? r[h * 3 + w] : 0.f;
                CHECK(tu_f32(gx)[h * 4 + w] == want, "gx[%d, %d] = %g, expected %g (first max of each window)", h, w,
                      tu_f32(gx)[h * 4 + w], want);
            }
    }
    ts_tensor_free(y);
    ts_tensor_free(gx);
    /* all negative, 3x3 windows with pad 1: the padding (zeros) must not win */
    float xn[9];
    for (int i = 0; i < 9; i++) xn[i] = -1.f - (float)i;
    ts_pool_opts op = {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0};
    float r4[4] = {1, 1, 1, 1};
    run_with_grad(op_max_pool, &op, 4, (int64_t[]){1, 1, 3, 3}, xn, r4, &y, &gx);
    if (y && gx) {
        /* windows at rows / cols {-1..1} and {1..3}: maxima at (0,0), (0,1)... the first cell */
        float want[4] = {-1.f, -2.f, -4.f, -5.f};
        for (int i = 0; i < 4; i++) CHECK(tu_f32(y)[i] == want[i], "y[%d] = %g, expected %g", i, tu_f32(y)[i], want[i]);
        float gw[9] = {1, 1, 0, 1, 1, 0, 0, 0, 0};
        for (int i = 0; i < 9; i++) CHECK(tu_f32(gx)[i] == gw[i], "gx[%d] = %g, expected %g", i, tu_f32(gx)[i], gw[i]);
    }
    ts_tensor_free(y);
    ts_tensor_free(gx);
}

/* ------------------------------------------------------------------ resize */

typedef struct resize_case {
    int nd;
    int64_t shape[5];
    int64_t oh, ow;
    ts_resize_opts o;
} resize_case;

/* Coordinate of output index o along an axis, as ONNX Resize defines it. */
static double rz_coord(int coord, int64_t o, int64_t in, int64_t out, float scale) {
    double s = scale > 0 ? scale : (double)out / (double)in;
    switch (coord) {
    case TS_COORD_ASYMMETRIC: return o / s;
    case TS_COORD_ALIGN_CORNERS: return out > 1 ? (double)o * (double)(in - 1) / (double)(out - 1) : 0.0;
    case TS_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (o + 0.5) / s - 0.5 : 0.0;
    default: return (o + 0.5) / s - 0.5;
    }
}
static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }
static int64_t rz_nearest(int rnd, double c, int64_t in) {
    double f = floor(c), fr = c - f, r;
    switch (rnd) {
    case TS_ROUND_PREFER_CEIL: r = fr >= 0.5 ? f + 1 : f; break;
    case TS_ROUND_FLOOR: r = f; break;
    case TS_ROUND_CEIL: r = fr > 0 ? f + 1 : f; break;
    default: r = fr > 0.5 ? f + 1 : f; break; /* prefer floor: a .5 goes down */
    }
    return clampi((int64_t)r, 0, in - 1);
}

static void naive_resize(const resize_case *c, const float *x, double *y) {
    int64_t H = c->shape[c->nd - 2], W = c->shape[c->nd - 1], planes = 1;
    for (int i = 0; i < c->nd - 2; i++) planes *= c->shape[i];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oh = 0; oh < c->oh; oh++)
            for (int64_t ow = 0; ow < c->ow; ow++) {
                double ch = rz_coord(c->o.coord, oh, H, c->oh, c->o.scale[0]);
                double cw = rz_coord(c->o.coord, ow, W, c->ow, c->o.scale[1]);
                const float *xp = x + p * H * W;
                double v;
                if (c->o.mode == TS_RESIZE_NEAREST) {
                    v = xp[rz_nearest(c->o.round, ch, H) * W + rz_nearest(c->o.round, cw, W)];
                } else {
                    ch = fmin(fmax(ch, 0), (double)(H - 1));
                    cw = fmin(fmax(cw, 0), (double)(W - 1));
                    int64_t h0 = (int64_t)floor(ch), w0 = (int64_t)floor(cw);
                    int64_t h1 = clampi(h0 + 1, 0, H - 1), w1 = clampi(w0 + 1, 0, W - 1);
                    double lh = ch - h0, lw = cw - w0;
                    v = (1 - lh) * ((1 - lw) * xp[h0 * W + w0] + lw * xp[h0 * W + w1]) +
                        lh * ((1 - lw) * xp[h1 * W + w0] + lw * xp[h1 * W + w1]);
                }
                y[(p * c->oh + oh) * c->ow + ow] = v;
            }
}

static int build_resize(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const resize_case *c = ctx;
    o[0] = ts_resize2d(g, p[0], c->oh, c->ow, &c->o);
    return 1;
}
static void ref_resize(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    naive_resize(ctx, PV(h, "x"), o[0].ref);
    (void)nout;
}

static void test_resize_fd(void) {
    static const char *const coord[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"};
    static const char *const rnd[] = {"prefer_floor", "prefer_ceil", "floor", "ceil"};
    static resize_case cases[64];
    int nc = 0;
    /* nearest: every coordinate transform with every rounding, up- and down-sampling */
    for (int co = 0; co < 4; co++)
        for (int r = 0; r < 4; r++)
            cases[nc++] = (resize_case){4, {1, 2, 3, 5}, r % 2 ? 4 : 7, r % 2 ? 3 : 10,
                                        {TS_RESIZE_NEAREST, co, r, {0, 0}}};
    /* linear: every coordinate transform, up, down, and to a single row */
    for (int co = 0; co < 4; co++) {
        cases[nc++] = (resize_case){4, {2, 1, 4, 3}, 7, 8, {TS_RESIZE_LINEAR, co, 0, {0, 0}}};
        cases[nc++] = (resize_case){3, {2, 7, 6}, 3, 4, {TS_RESIZE_LINEAR, co, 0, {0, 0}}};
        cases[nc++] = (resize_case){4, {1, 2, 5, 4}, 1, 3, {TS_RESIZE_LINEAR, co, 0, {0, 0}}};
    }
    /* explicit scales (ONNX scales: the formula uses them, the size is floor(in * scale)) */
    cases[nc++] = (resize_case){4, {1, 2, 3, 3}, 6, 7, {TS_RESIZE_NEAREST, TS_COORD_ASYMMETRIC, TS_ROUND_FLOOR, {2.f, 2.5f}}};
    cases[nc++] = (resize_case){4, {1, 2, 3, 3}, 6, 7, {TS_RESIZE_LINEAR, TS_COORD_HALF_PIXEL, 0, {2.f, 2.5f}}};
    /* rank 2 and rank 5 */
    cases[nc++] = (resize_case){2, {3, 4}, 5, 9, {TS_RESIZE_LINEAR, TS_COORD_ALIGN_CORNERS, 0, {0, 0}}};
    cases[nc++] = (resize_case){5, {1, 2, 2, 3, 2}, 6, 4, {TS_RESIZE_NEAREST, TS_COORD_HALF_PIXEL, 0, {0, 0}}};
    for (int i = 0; i < nc; i++) {
        char name[128];
        resize_case *c = &cases[i];
        snprintf(name, sizeof name, "resize2d %s %s%s%s [%lld,%lld]->[%lld,%lld]%s",
                 c->o.mode == TS_RESIZE_NEAREST ? "nearest" : "linear", coord[c->o.coord],
                 c->o.mode == TS_RESIZE_NEAREST ? " " : "", c->o.mode == TS_RESIZE_NEAREST ? rnd[c->o.round] : "",
                 (long long)c->shape[c->nd - 2], (long long)c->shape[c->nd - 1], (long long)c->oh, (long long)c->ow,
                 c->o.scale[0] > 0 ? " scales" : "");
        fd_spec s;
        fd_init(&s, name, build_resize, c);
        fd_param(&s, "x", GEN_UNIF, c->nd, c->shape);
        s.ref = ref_resize;
        s.max_check = 24;
        fd_run(&s);
    }
}

/* Values PyTorch's F.interpolate gives for x = [1, 2] -> 4 columns. */
static void test_resize_values(void) {
    struct { ts_resize_opts o; float want[4]; } t[] = {
        {{TS_RESIZE_NEAREST, TS_COORD_ASYMMETRIC, TS_ROUND_FLOOR, {0, 0}}, {1, 1, 2, 2}},        /* mode='nearest' */
        {{TS_RESIZE_LINEAR, TS_COORD_HALF_PIXEL, 0, {0, 0}}, {1, 1.25f, 1.75f, 2}},              /* align_corners=False */
        {{TS_RESIZE_LINEAR, TS_COORD_ALIGN_CORNERS, 0, {0, 0}}, {1, 4.f / 3, 5.f / 3, 2}},       /* align_corners=True */
        {{TS_RESIZE_NEAREST, TS_COORD_HALF_PIXEL, TS_ROUND_PREFER_FLOOR, {0, 0}}, {1, 1, 2, 2}}, /* ONNX default */
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){1, 1, 1, 2});
        ts_name(g, ts_resize2d(g, x, 1, 4, &t[i].o), "y");
        ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"y"}});
        CHECK(p != NULL, "compile: %s", ts_last_error());
        if (p) {
            ts_tensor *xt = ts_tensor_from(TS_F32, 4, (int64_t[]){1, 1, 1, 2}, (float[]){1, 2});
            CHECK_OK(ts_program_feed(p, "x", xt));
            CHECK_OK(ts_program_run(p));
            ts_tensor *y = TU_FETCH(p, "y");
            for (int j = 0; y && j < 4; j++)
                CHECK(fabsf(tu_f32(y)[j] - t[i].want[j]) < 1e-6f, "case %zu: y[%d] = %g, PyTorch gives %g", i, j,
                      tu_f32(y)[j], t[i].want[j]);
            ts_tensor_free(y);
            ts_tensor_free(xt);
        }
        ts_program_free(p);
        ts_graph_free(g);
    }
}

/* ------------------------------------------------------------------ clip, hard_sigmoid, hard_swish */

enum { A_CLIP, A_HSIG, A_HSWISH };
static int build_act(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    int which = *(const int *)ctx;
    /* x = 2 p + 0.05 with p on a 0.05 grid: every x is 0.05 from the kinks at +-0.5, +-2.5, +-3 */
    ts_value x = ts_scale(g, p[0], 2.f, 0.05f);
    o[0] = which == A_CLIP ? ts_clip(g, x, -0.5f, 0.5f) : which == A_HSIG ? ts_hard_sigmoid(g, x, 0.2f, 0.5f)
                                                                        : ts_hard_swish(g, x);
    return 1;
}
static void ref_act(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    int which = *(const int *)ctx;
    const float *p = PV(h, "x");
    for (int64_t i = 0; i < o[0].n; i++) {
        double x = (double)(2.f * p[i] + 0.05f), r;
        if (which == A_CLIP) r = x < -0.5 ? -0.5 : x > 0.5 ? 0.5 : x;
        else if (which == A_HSIG) r = fmax(0, fmin(1, 0.2 * x + 0.5));
        else r = x * fmax(0, fmin(6, x + 3)) / 6;
        o[0].ref[i] = r;
    }
    (void)nout;
}
static void test_hard_acts_fd(void) {
    static const int ops[3] = {A_CLIP, A_HSIG, A_HSWISH};
    static const char *const names[3] = {"clip [-0.5, 0.5]", "hard_sigmoid (0.2, 0.5)", "hard_swish"};
    for (int i = 0; i < 3; i++) {
        fd_spec s;
        fd_init(&s, names[i], build_act, &ops[i]);
        fd_param(&s, "x", GEN_DISTINCT, 2, (int64_t[]){2, 40}); /* 2 p + 0.05 spans [-3.95, 4.05) */
        s.ref = ref_act;
        s.max_check = 80;
        s.no_fusion = i == 1; /* once with the fusion pass off: the op stays outside fused chains either way */
        fd_run(&s);
    }
}

/* A chain the fusion pass rewrites (scale -> relu) around hard_swish and clip: results equal
 * the unfused program's. */
static void test_hard_acts_with_fusion(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){4, 300});
    ts_value y = ts_clip(g, ts_relu(g, ts_scale(g, ts_hard_swish(g, ts_tanh(g, ts_scale(g, x, 3.f, 0.f))), 2.f, -1.f)),
                         0.f, 2.5f);
    ts_name(g, y, "y");
    tu_rng r = tu_rng_seed(5);
    ts_tensor *xt = tu_rand_tensor(&r, 2, (int64_t[]){4, 300}, -2, 2);
    ts_tensor *out[2] = {NULL, NULL};
    for (int f = 0; f < 2; f++) {
        ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"y"}, .no_fusion = f});
        CHECK(p != NULL, "compile: %s", ts_last_error());
        if (!p) continue;
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        out[f] = TU_FETCH(p, "y");
        ts_program_free(p);
    }
    if (out[0] && out[1]) {
        CHECK(tu_bitwise_equal(out[0], out[1]), "fused and unfused programs differ");
        const float *xv = tu_f32(xt), *yv = tu_f32(out[0]);
        double err = 0;
        for (int i = 0; i < 1200; i++) {
            double t = tanh(3.0 * xv[i]), hs = t * fmax(0, fmin(6, t + 3)) / 6, v = fmax(0, 2 * hs - 1);
            err = fmax(err, fabs(yv[i] - fmin(2.5, v)));
        }
        CHECK(err < 1e-5, "max error %.3e", err);
    }
    ts_tensor_free(out[0]);
    ts_tensor_free(out[1]);
    ts_tensor_free(xt);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ conv2d's fused epilogue */

/* conv2d -> leaky relu -> max(x, constant) (openWakeWord's block), conv2d -> relu -> clip and a
 * depthwise conv2d -> leaky relu -> max: the fusion pass folds each into the conv2d (nodes
 * fused counted), and the results equal the unfused program's within 1e-5 on oneDNN, on the
 * depthwise kernel and on the reference kernel (conv_algorithm "reference" at compile). */
static ts_value conv_block(ts_graph *g, ts_value x, int64_t C, int64_t O, int groups, int which, const char *w) {
    ts_value wt = ts_param(g, w, TS_F32, 4, (int64_t[]){O, C / groups, 3, 3}, ts_init_normal(0.3f));
    ts_conv_opts o = {{1, 1}, {1, 1, 1, 1}, {1, 1}, groups};
    ts_value y = ts_conv2d(g, x, wt, TS_NONE, &o);
    if (which == 1) return ts_clip(g, ts_relu(g, y), 0.f, 0.5f);
    ts_tensor *floor = ts_tensor_from(TS_F32, 1, (int64_t[]){1}, (float[]){-0.05f});
    ts_value c = ts_constant(g, floor); /* the graph keeps a copy */
    ts_tensor_free(floor);
    return ts_binary(g, TS_BIN_MAX, ts_math(g, TS_MATH_LEAKY_RELU, y, 0.2f, 0.f), c);
}

static void test_conv_epilogue_fusion(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 11);
    ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){2, 8, 10, 12});
    ts_value a = conv_block(g, x, 8, 16, 1, 0, "w0");
    ts_value b = conv_block(g, a, 16, 16, 1, 1, "w1");
    ts_value y = conv_block(g, b, 16, 16, 16, 0, "w2"); /* depthwise */
    ts_name(g, y, "y");
    tu_rng r = tu_rng_seed(9);
    ts_tensor *xt = tu_rand_tensor(&r, 4, (int64_t[]){2, 8, 10, 12}, -2, 2);
    ts_tensor *out[3] = {NULL, NULL, NULL};
    for (int f = 0; f < 3; f++) { /* fused, unfused, fused on the reference kernels */
        use_reference_kernels(f == 2);
        ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"y"},
                                                         .no_fusion = f == 1, .inference = 1});
        use_reference_kernels(0);
        CHECK(p != NULL, "compile: %s", ts_last_error());
        if (!p) continue;
        ts_memory m = {.struct_size = sizeof m};
        ts_program_memory(p, &m);
        CHECK(m.fused == (f == 1 ? 0 : 6), "program %d: %d nodes fused (want %d)", f, m.fused, f == 1 ? 0 : 6);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        out[f] = TU_FETCH(p, "y");
        ts_program_free(p);
    }
    for (int f = 0; f < 3 && out[0] && out[1]; f += 2) {
        if (!out[f]) continue;
        const float *u = tu_f32(out[1]), *v = tu_f32(out[f]);
        double err = 0;
        int floor_hit = 0;
        for (int64_t i = 0; i < ts_tensor_numel(out[1]); i++) {
            err = fmax(err, fabs(u[i] - v[i]));
            floor_hit += u[i] == -0.05f;
        }
        CHECK(err < 1e-5, "fused program %d differs from the unfused one by %.3e", f, err);
        CHECK(floor_hit > 0, "no output at the max's floor: the test does not reach the clamp");
    }
    for (int f = 0; f < 3; f++) ts_tensor_free(out[f]);
    ts_tensor_free(xt);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ a small CNN trains */

/* conv -> hard_swish -> max pool -> depthwise conv -> avg pool -> resize back up -> conv 1x1:
 * the loss against a fixed target falls over a few SGD steps (the ops compose in a training
 * graph: backward, fusion and memory planning included). */
static void test_small_cnn_trains(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 3);
    ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){2, 3, 12, 12});
    ts_value t = ts_input(g, "t", TS_F32, 4, (int64_t[]){2, 2, 12, 12});
    ts_value w1 = ts_param(g, "c1.weight", TS_F32, 4, (int64_t[]){8, 3, 3, 3}, ts_init_normal(0.2f));
    ts_value b1 = ts_param(g, "c1.bias", TS_F32, 1, (int64_t[]){8}, ts_init_zeros());
    ts_value w2 = ts_param(g, "dw.weight", TS_F32, 4, (int64_t[]){8, 1, 3, 3}, ts_init_normal(0.3f));
    ts_value w3 = ts_param(g, "pw.weight", TS_F32, 4, (int64_t[]){2, 8, 1, 1}, ts_init_normal(0.3f));
    ts_value b3 = ts_param(g, "pw.bias", TS_F32, 1, (int64_t[]){2}, ts_init_zeros());
    ts_value h = ts_hard_swish(g, ts_conv2d(g, x, w1, b1, &(ts_conv_opts){{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}));
    h = ts_max_pool2d(g, h, &(ts_pool_opts){{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0});
    h = ts_conv2d(g, h, w2, TS_NONE, &(ts_conv_opts){{1, 1}, {1, 1, 1, 1}, {1, 1}, 8});
    h = ts_avg_pool2d(g, ts_clip(g, h, -3.f, 3.f), &(ts_pool_opts){{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 0, 1});
    h = ts_resize2d(g, h, 12, 12, &(ts_resize_opts){TS_RESIZE_LINEAR, TS_COORD_HALF_PIXEL, 0, {0, 0}});
    ts_value y = ts_conv2d(g, h, w3, b3, NULL);
    ts_value d = ts_sub(g, y, t);
    ts_value loss = ts_reduce_mean(g, ts_mul(g, d, d), 0, NULL, 0);
    ts_name(g, loss, "loss");
    CHECK_OK(ts_backward(g, loss));
    CHECK_OK(ts_sgd(g, ts_scalar(g, 0.1f), 0.9f, 0.f));
    /* one thread: tiny tensors, and a busy machine makes every OpenMP barrier slow */
    ts_program *p =
        ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"loss"}, .num_threads = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    tu_rng r = tu_rng_seed(9);
    ts_tensor *xt = tu_rand_tensor(&r, 4, (int64_t[]){2, 3, 12, 12}, -1, 1);
    /* target: channel 0 = 0.3 + mean over channels of x, channel 1 = -0.2 - that mean */
    ts_tensor *tt = ts_tensor_new(TS_F32, 4, (int64_t[]){2, 2, 12, 12});
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 144; i++) {
            const float *xv = tu_f32(xt) + n * 3 * 144 + i;
            float m = (xv[0] + xv[144] + xv[288]) / 3.f;
            tu_f32(tt)[(n * 2) * 144 + i] = 0.3f + m;
            tu_f32(tt)[(n * 2 + 1) * 144 + i] = -0.2f - m;
        }
    double first = 0, last = 0;
    for (int step = 0; p && step < 30; step++) {
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_feed(p, "t", tt));
        CHECK_OK(ts_program_run(p));
        ts_tensor *l = TU_FETCH(p, "loss");
        if (!l) break;
        last = tu_f32(l)[0];
        if (step == 0) first = last;
        ts_tensor_free(l);
    }
    printf("  %-4s small CNN: loss %.4f -> %.4f after 30 SGD steps\n", last < 0.7 * first ? "ok" : "FAIL", first, last);
    CHECK(isfinite(last) && last < 0.7 * first, "the loss went from %g to %g", first, last);
    ts_tensor_free(xt);
    ts_tensor_free(tt);
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ bad inputs */

/* The builder call gave TS_NONE, the graph holds the error, and the message has the words. */
#define EXPECT_FAIL(g, v, code, ...)                                                                        \
    do {                                                                                                    \
        CHECK((v) == TS_NONE, "%s succeeded", #v);                                                          \
        CHECK(ts_graph_status(g) == (code), "status %s, expected %s (%s)", ts_status_name(ts_graph_status(g)), \
              ts_status_name(code), ts_last_error());                                                       \
        CHECK_ERRMSG(__VA_ARGS__);                                                                          \
    } while (0)

static ts_graph *graph_with(ts_value *x, int nd, const int64_t *xs, ts_value *w, int wnd, const int64_t *wsh) {
    ts_graph *g = ts_graph_new();
    *x = ts_input(g, "x", TS_F32, nd, xs);
    if (w) *w = ts_input(g, "w", TS_F32, wnd, wsh);
    return g;
}

static void test_bad_inputs(void) {
    ts_value x, w;
    ts_graph *g;
    /* channel mismatch: x has 3 channels, w expects 4 */
    g = graph_with(&x, 4, (int64_t[]){1, 3, 8, 8}, &w, 4, (int64_t[]){6, 4, 3, 3});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, NULL), TS_ERR_SHAPE, "conv2d", "channel", "'x'", "'w'");
    ts_graph_free(g);
    /* groups that do not divide the channels */
    g = graph_with(&x, 4, (int64_t[]){1, 6, 8, 8}, &w, 4, (int64_t[]){6, 1, 3, 3});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, &(ts_conv_opts){.groups = 4}), TS_ERR_ARG, "conv2d", "groups 4",
                "divide");
    ts_graph_free(g);
    /* the kernel bigger than the padded input */
    g = graph_with(&x, 4, (int64_t[]){1, 2, 4, 4}, &w, 4, (int64_t[]){2, 2, 5, 5});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, NULL), TS_ERR_SHAPE, "conv2d", "kernel 5x5", "bigger", "padded");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 2, 4, 4}, &w, 4, (int64_t[]){2, 2, 3, 3});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, &(ts_conv_opts){.dilation = {3, 1}}), TS_ERR_SHAPE, "conv2d",
                "dilation", "bigger");
    ts_graph_free(g);
    /* wrong ranks */
    g = graph_with(&x, 3, (int64_t[]){3, 8, 8}, &w, 4, (int64_t[]){2, 3, 3, 3});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, NULL), TS_ERR_SHAPE, "conv2d", "rank 4", "'x'");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 3, 8, 8}, &w, 2, (int64_t[]){2, 27});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, NULL), TS_ERR_SHAPE, "conv2d", "rank 4", "'w'");
    ts_graph_free(g);
    /* a bias of the wrong size, a negative pad, a zero-size stride made negative */
    g = graph_with(&x, 4, (int64_t[]){1, 3, 8, 8}, &w, 4, (int64_t[]){2, 3, 3, 3});
    ts_value b = ts_input(g, "b", TS_F32, 1, (int64_t[]){3});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, b, NULL), TS_ERR_SHAPE, "conv2d", "bias", "[2]");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 3, 8, 8}, &w, 4, (int64_t[]){2, 3, 3, 3});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, &(ts_conv_opts){.pad = {0, -1, 0, 0}}), TS_ERR_ARG, "conv2d", "pads",
                "-1");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 3, 8, 8}, &w, 4, (int64_t[]){2, 3, 3, 3});
    EXPECT_FAIL(g, ts_conv2d(g, x, w, TS_NONE, &(ts_conv_opts){.stride = {-2, 1}}), TS_ERR_ARG, "conv2d", "stride");
    ts_graph_free(g);
    /* conv_transpose2d: channel mismatch, output padding not below the stride, groups */
    g = graph_with(&x, 4, (int64_t[]){1, 3, 4, 4}, &w, 4, (int64_t[]){4, 2, 3, 3});
    EXPECT_FAIL(g, ts_conv_transpose2d(g, x, w, TS_NONE, NULL, NULL), TS_ERR_SHAPE, "conv_transpose2d", "channel");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 3, 4, 4}, &w, 4, (int64_t[]){3, 2, 3, 3});
    EXPECT_FAIL(g, ts_conv_transpose2d(g, x, w, TS_NONE, &(ts_conv_opts){.stride = {2, 2}}, (int[]){2, 0}),
                TS_ERR_ARG, "conv_transpose2d", "output padding", "stride");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 3, 4, 4}, &w, 4, (int64_t[]){3, 2, 3, 3});
    EXPECT_FAIL(g, ts_conv_transpose2d(g, x, w, TS_NONE, &(ts_conv_opts){.groups = 2}, NULL), TS_ERR_ARG,
                "conv_transpose2d", "groups 2");
    ts_graph_free(g);
    /* pooling: rank, window bigger than the padded input, pad over half the kernel, NULL opts */
    g = graph_with(&x, 3, (int64_t[]){2, 8, 8}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_max_pool2d(g, x, &(ts_pool_opts){.kernel = {2, 2}}), TS_ERR_SHAPE, "max_pool2d", "rank 4");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 1, 3, 3}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_avg_pool2d(g, x, &(ts_pool_opts){.kernel = {4, 2}}), TS_ERR_SHAPE, "avg_pool2d", "bigger");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 1, 8, 8}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_max_pool2d(g, x, &(ts_pool_opts){.kernel = {3, 3}, .pad = {2, 0, 0, 0}}), TS_ERR_ARG,
                "max_pool2d", "pads", "half");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 1, 8, 8}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_max_pool2d(g, x, NULL), TS_ERR_ARG, "ts_max_pool2d", "NULL");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 1, 8, 8}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_avg_pool2d(g, x, &(ts_pool_opts){.kernel = {2, 2}, .dilation = {2, 2}}), TS_ERR_ARG,
                "ts_avg_pool2d", "dilation");
    ts_graph_free(g);
    /* resize: rank 1, zero output, unknown mode, negative scale */
    g = graph_with(&x, 1, (int64_t[]){5}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_resize2d(g, x, 2, 2, NULL), TS_ERR_SHAPE, "resize2d", "rank", "'x'");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 1, 8, 8}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_resize2d(g, x, 0, 4, NULL), TS_ERR_SHAPE, "resize2d", "0x4");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 1, 8, 8}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_resize2d(g, x, 4, 4, &(ts_resize_opts){.mode = 7}), TS_ERR_ARG, "resize2d", "mode 7");
    ts_graph_free(g);
    g = graph_with(&x, 4, (int64_t[]){1, 1, 8, 8}, NULL, 0, NULL);
    EXPECT_FAIL(g, ts_resize2d(g, x, 4, 4, &(ts_resize_opts){.scale = {-1.f, 1.f}}), TS_ERR_ARG, "resize2d", "scale");
    ts_graph_free(g);
    /* dtypes */
    g = ts_graph_new();
    x = ts_input(g, "x", TS_I32, 4, (int64_t[]){1, 1, 8, 8});
    EXPECT_FAIL(g, ts_hard_swish(g, x), TS_ERR_DTYPE, "hard_swish", "i32");
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_BF16, 4, (int64_t[]){1, 1, 8, 8});
    EXPECT_FAIL(g, ts_max_pool2d(g, x, &(ts_pool_opts){.kernel = {2, 2}}), TS_ERR_DTYPE, "max_pool2d", "bf16");
    ts_graph_free(g);
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, 2, (int64_t[]){4, 4});
    EXPECT_FAIL(g, ts_clip(g, x, NAN, 1.f), TS_ERR_ARG, "clip", "NaN");
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_conv_fd);
    RUN(test_conv_fd_reference);
    RUN(test_conv_transpose_fd);
    RUN(test_conv_transpose_fd_reference);
    RUN(test_conv_forward_big);
    RUN(test_pool_fd);
    RUN(test_pool_shapes);
    RUN(test_max_pool_ties_and_pads);
    RUN(test_resize_fd);
    RUN(test_resize_values);
    RUN(test_hard_acts_fd);
    RUN(test_hard_acts_with_fusion);
    RUN(test_conv_epilogue_fusion);
    RUN(test_small_cnn_trains);
    RUN(test_bad_inputs);
    return tu_finish("test_vision_ops");
}
