/*
 * bench/conv.c — tessera's conv2d on OCR-like shapes against oneDNN called directly, and a
 * MobileNet-like stack on a 960 x 960 image.
 *
 * Part 1, one convolution at a time (the shapes of PP-OCR's detection backbone at 960 x 960:
 * depthwise 3x3 and 5x5, a dense 3x3, a 1x1), f32, batch 1; it times
 *   tessera: a compiled program with one ts_conv2d (public API), the CPU backend's choice
 *            (src/backend/cpu/conv_dnnl.c: the direct NCHW kernel for depthwise, oneDNN on
 *            NCHW for 1x1, oneDNN in its blocked layouts with NCHW reorders for the rest);
 *   plain / blocked: the same program compiled with the CPU's option conv_layout "plain" (oneDNN
 *            on NCHW as it is) and "blocked" (oneDNN's layouts with reorders;
 *            ts_device_set_option), for every shape;
 *   oneDNN:  the primitive made here directly with the layouts it prefers, on data already in
 *            them (no reorders: the best oneDNN can do for the convolution alone),
 * interleaved, and prints the medians, GFLOP/s (2 N O OH OW C/G KH KW flops) and the ratio
 * oneDNN time / tessera time. It also checks that the outputs agree.
 *
 * Part 2, a forward pass of a MobileNetV3-like stack on [1, 3, 960, 960]: a 3x3 stride-2 stem,
 * depthwise-separable blocks (depthwise 3x3 or 5x5, some with stride 2, then a 1x1) with
 * hard_swish, down to 1/32, then an FPN-like neck (1x1 convs, nearest 2x resizes, adds) back to
 * 1/4 and a 3x3 head; median time per image with the backend's choice and each forced layout, and
 * in int8 (ts_compile_opts.quantize): with each convolution's kernel chosen by its timings (the
 * CPU's option conv_int8 "fastest", saying how many kept int8) and with every one int8 ("always").
 *
 * Part 3, conv_transpose2d (the PP-OCRv4 detector's two 2x2 stride-2 upsamplings, and wider ones):
 * the backend's layout (plain NCHW for every transposed convolution) against forced plain and
 * forced blocked, interleaved; median ms each.
 *
 * Usage: bench_conv [seconds per measurement, default 1.0]. Threads: OMP_NUM_THREADS.
 */
#include "tessera.h"

#include "bench_util.h"

#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_DNNL(x)                                                                    \
    do {                                                                                 \
        dnnl_status_t s_ = (x);                                                          \
        if (s_ != dnnl_success) {                                                        \
            fprintf(stderr, "bench_conv: %s failed (%d)\n", #x, (int)s_);                \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
#define CHECK_TS(x)                                                                      \
    do {                                                                                 \
        if ((x) != TS_OK) {                                                              \
            fprintf(stderr, "bench_conv: %s failed: %s\n", #x, ts_last_error());         \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static ts_tensor *random_tensor(int nd, const int64_t *shape, float scale) {
    ts_tensor *t = ts_tensor_new(TS_F32, nd, shape);
    if (!t) exit(1);
    float *v = ts_tensor_data(t);
    for (int64_t i = 0; i < ts_tensor_numel(t); i++) v[i] = scale * urand();
    return t;
}

typedef struct shape {
    const char *what;
    int64_t C, H, W, O, K;
    int stride, pad, groups;
} shape;

static int64_t out_dim(const shape *s, int64_t in) { return (in + 2 * s->pad - s->K) / s->stride + 1; }

/* ------------------------------------------------------------------ oneDNN direct */

typedef struct direct {
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bias, dst, scratch, dst_plain;
    dnnl_primitive_t to_plain; /* dst -> NCHW, for the comparison only */
    void *buf[6];
    dnnl_exec_arg_t args[5];
    int nargs;
} direct;

static dnnl_memory_t mem_in(dnnl_engine_t eng, dnnl_stream_t st, const dnnl_memory_desc_t *want, int nd,
                            const int64_t *dims, const float *data, void **buf) {
    dnnl_memory_desc_t plain;
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    static const dnnl_format_tag_t tag[] = {0, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde};
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&plain, nd, d, dnnl_f32, tag[nd]));
    size_t bytes = dnnl_memory_desc_get_size(want);
    *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    dnnl_memory_t m, p;
    CHECK_DNNL(dnnl_memory_create(&m, want, eng, *buf));
    CHECK_DNNL(dnnl_memory_create(&p, &plain, eng, (void *)data));
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    CHECK_DNNL(dnnl_reorder_primitive_desc_create(&rpd, &plain, eng, want, eng, NULL));
    CHECK_DNNL(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, p}, {DNNL_ARG_TO, m}};
    CHECK_DNNL(dnnl_primitive_execute(r, st, 2, a));
    CHECK_DNNL(dnnl_stream_wait(st));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(p);
    return m;
}

static void direct_init(direct *d, dnnl_engine_t eng, dnnl_stream_t st, const shape *s, const float *x,
                        const float *w, const float *b, float *y_plain) {
    int64_t OH = out_dim(s, s->H), OW = out_dim(s, s->W), G = s->groups;
    dnnl_memory_desc_t ms, mw, mb, md;
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&ms, 4, (dnnl_dims_t){1, s->C, s->H, s->W}, dnnl_f32, dnnl_format_tag_any));
    if (G == 1)
        CHECK_DNNL(dnnl_memory_desc_init_by_tag(&mw, 4, (dnnl_dims_t){s->O, s->C, s->K, s->K}, dnnl_f32,
                                                dnnl_format_tag_any));
    else
        CHECK_DNNL(dnnl_memory_desc_init_by_tag(&mw, 5, (dnnl_dims_t){G, s->O / G, s->C / G, s->K, s->K}, dnnl_f32,
                                                dnnl_format_tag_any));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&mb, 1, (dnnl_dims_t){s->O}, dnnl_f32, dnnl_a));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&md, 4, (dnnl_dims_t){1, s->O, OH, OW}, dnnl_f32, dnnl_format_tag_any));
    dnnl_convolution_desc_t cd;
    dnnl_dims_t str = {s->stride, s->stride}, dil = {0, 0}, pad = {s->pad, s->pad};
    CHECK_DNNL(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &ms, &mw,
                                                          &mb, &md, str, dil, pad, pad));
    dnnl_primitive_attr_t attr;
    CHECK_DNNL(dnnl_primitive_attr_create(&attr));
    CHECK_DNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    dnnl_primitive_desc_t pd;
    CHECK_DNNL(dnnl_primitive_desc_create(&pd, &cd, attr, eng, NULL));
    CHECK_DNNL(dnnl_primitive_create(&d->prim, pd));
    memset(d->buf, 0, sizeof d->buf);
    d->src = mem_in(eng, st, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), 4,
                    (int64_t[]){1, s->C, s->H, s->W}, x, &d->buf[0]);
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    d->wei = G == 1 ? mem_in(eng, st, wmd, 4, (int64_t[]){s->O, s->C, s->K, s->K}, w, &d->buf[1])
                    : mem_in(eng, st, wmd, 5, (int64_t[]){G, s->O / G, s->C / G, s->K, s->K}, w, &d->buf[1]);
    d->bias = mem_in(eng, st, &mb, 1, (int64_t[]){s->O}, b, &d->buf[2]);
    const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    size_t db = dnnl_memory_desc_get_size(dmd);
    d->buf[3] = aligned_alloc(64, (db + 63) / 64 * 64);
    CHECK_DNNL(dnnl_memory_create(&d->dst, dmd, eng, d->buf[3]));
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sb = smd ? dnnl_memory_desc_get_size(smd) : 0;
    d->nargs = 0;
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, d->src};
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, d->wei};
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, d->bias};
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, d->dst};
    d->scratch = NULL;
    if (sb) {
        d->buf[4] = aligned_alloc(64, (sb + 63) / 64 * 64);
        CHECK_DNNL(dnnl_memory_create(&d->scratch, smd, eng, d->buf[4]));
        d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, d->scratch};
    }
    dnnl_memory_desc_t plain;
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&plain, 4, (dnnl_dims_t){1, s->O, OH, OW}, dnnl_f32, dnnl_abcd));
    CHECK_DNNL(dnnl_memory_create(&d->dst_plain, &plain, eng, y_plain));
    dnnl_primitive_desc_t rpd;
    CHECK_DNNL(dnnl_reorder_primitive_desc_create(&rpd, dmd, eng, &plain, eng, NULL));
    CHECK_DNNL(dnnl_primitive_create(&d->to_plain, rpd));
    dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
}

static double direct_run(direct *d, dnnl_stream_t st) {
    double t = now();
    CHECK_DNNL(dnnl_primitive_execute(d->prim, st, d->nargs, d->args));
    CHECK_DNNL(dnnl_stream_wait(st));
    return now() - t;
}

static void direct_free(direct *d, dnnl_stream_t st) {
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, d->dst}, {DNNL_ARG_TO, d->dst_plain}};
    CHECK_DNNL(dnnl_primitive_execute(d->to_plain, st, 2, a));
    CHECK_DNNL(dnnl_stream_wait(st));
    dnnl_memory_t m[6] = {d->src, d->wei, d->bias, d->dst, d->scratch, d->dst_plain};
    for (int i = 0; i < 6; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    dnnl_primitive_destroy(d->prim);
    dnnl_primitive_destroy(d->to_plain);
    for (int i = 0; i < 6; i++) free(d->buf[i]);
}

/* ------------------------------------------------------------------ tessera */

/* The CPU device's conv_layout for the next compile: "plain" / "blocked" (NULL: "auto", the
 * backend's choice). */
static void set_layout(const char *layout) {
    if (ts_device_set_option("cpu", "conv_layout", layout ? layout : "auto") != TS_OK) {
        fprintf(stderr, "bench_conv: %s\n", ts_last_error());
        exit(1);
    }
}

/* g compiled for inference, fetching "y", with the given layout for every convolution (NULL: the
 * backend's choice; the option is read at compile); exits on failure. */
static ts_program *compile_y(ts_graph *g, const char *layout) {
    set_layout(layout);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"y"}, .inference = 1});
    set_layout(NULL);
    if (!p) {
        fprintf(stderr, "bench_conv: ts_compile: %s\n", ts_last_error());
        exit(1);
    }
    return p;
}

/* A program with one conv2d; layout "plain" / "blocked" (NULL: the backend's choice) is read
 * when it is compiled. */
static ts_program *one_conv(const shape *s, const char *layout, ts_graph **gout) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){1, s->C, s->H, s->W});
    ts_value w = ts_input(g, "w", TS_F32, 4, (int64_t[]){s->O, s->C / s->groups, s->K, s->K});
    ts_value b = ts_input(g, "b", TS_F32, 1, (int64_t[]){s->O});
    ts_conv_opts o = {{s->stride, s->stride}, {s->pad, s->pad, s->pad, s->pad}, {1, 1}, s->groups};
    ts_name(g, ts_conv2d(g, x, w, b, &o), "y");
    *gout = g;
    return compile_y(g, layout);
}

static double ts_run(ts_program *p) {
    double t = now();
    CHECK_TS(ts_program_run(p));
    return now() - t;
}

enum { MAX_REPS = 41, MIN_REPS = 5 };

static void bench_one(dnnl_engine_t eng, dnnl_stream_t st, const shape *s, double budget) {
    int64_t OH = out_dim(s, s->H), OW = out_dim(s, s->W);
    ts_tensor *X = random_tensor(4, (int64_t[]){1, s->C, s->H, s->W}, 1.f);
    ts_tensor *Wt = random_tensor(4, (int64_t[]){s->O, s->C / s->groups, s->K, s->K}, 0.2f);
    ts_tensor *B = random_tensor(1, (int64_t[]){s->O}, 0.1f);
    enum { NP = 3 };
    const char *layout[NP] = {NULL, "plain", "blocked"};
    ts_graph *g[NP];
    ts_program *p[NP];
    for (int k = 0; k < NP; k++) {
        p[k] = one_conv(s, layout[k], &g[k]);
        CHECK_TS(ts_program_feed(p[k], "x", X));
        CHECK_TS(ts_program_feed(p[k], "w", Wt));
        CHECK_TS(ts_program_feed(p[k], "b", B));
    }
    float *yd = malloc(sizeof(float) * (size_t)(s->O * OH * OW));
    direct d;
    direct_init(&d, eng, st, s, ts_tensor_data(X), ts_tensor_data(Wt), ts_tensor_data(B), yd);
    double est = 1e9;
    for (int w = 0; w < 3; w++) {
        for (int k = 0; k < NP; k++) est = fmin(est, ts_run(p[k]));
        est = fmin(est, direct_run(&d, st));
    }
    int reps = (int)(budget / (est > 1e-6 ? est : 1e-6));
    reps = reps < MIN_REPS ? MIN_REPS : reps > MAX_REPS ? MAX_REPS : reps;
    double t[NP + 1][MAX_REPS];
    for (int r = 0; r < reps; r++) { /* the order rotates, so load drifts hit every side alike */
        for (int j = 0; j < NP + 1; j++) {
            int k = (j + r) % (NP + 1);
            t[k][r] = k < NP ? ts_run(p[k]) : direct_run(&d, st);
        }
    }
    double med[NP + 1];
    for (int k = 0; k < NP + 1; k++) {
        qsort(t[k], (size_t)reps, sizeof(double), cmp_double);
        med[k] = t[k][reps / 2];
    }
    double flops = 2.0 * (double)(s->O * OH * OW) * (double)(s->C / s->groups * s->K * s->K);
    direct_free(&d, st); /* also brings the direct output to NCHW */
    double diff = 0;
    for (int k = 0; k < NP; k++) {
        ts_tensor *y = NULL;
        CHECK_TS(ts_program_fetch(p[k], "y", &y));
        const float *yv = ts_tensor_data(y);
        for (int64_t i = 0; i < s->O * OH * OW; i++) diff = fmax(diff, fabs((double)yv[i] - yd[i]));
        ts_tensor_free(y);
    }
    printf("%-24s %4lld %4lld %4lld %4lld %2lld %d %3d | %8.2f %8.2f %8.2f %8.2f | %6.1f %6.1f | %6.3f | %.2g\n",
           s->what, (long long)s->C, (long long)s->H, (long long)s->W, (long long)s->O, (long long)s->K, s->stride,
           s->groups, med[0] * 1e3, med[1] * 1e3, med[2] * 1e3, med[3] * 1e3, flops / med[0] * 1e-9,
           flops / med[3] * 1e-9, med[3] / med[0], diff);
    fflush(stdout);
    free(yd);
    for (int k = 0; k < NP; k++) {
        ts_program_free(p[k]);
        ts_graph_free(g[k]);
    }
    ts_tensor_free(X);
    ts_tensor_free(Wt);
    ts_tensor_free(B);
}

/* ------------------------------------------------------------------ transposed convolutions */

/* One conv_transpose2d x [1, C, H, H] by w [C, O, K, K] (stride S, pad P) with a bias, compiled with
 * the given layout (NULL: the backend's choice), w and b parameters (kept across runs). */
static ts_program *one_deconv(const int *d, const char *layout, ts_graph **gout) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){1, d[0], d[2], d[2]});
    ts_value w = ts_param(g, "w", TS_F32, 4, (int64_t[]){d[0], d[1], d[3], d[3]}, ts_init_normal(0.1f));
    ts_value b = ts_param(g, "b", TS_F32, 1, (int64_t[]){d[1]}, ts_init_normal(0.1f));
    ts_conv_opts o = {{d[4], d[4]}, {d[5], d[5], d[5], d[5]}, {1, 1}, 1};
    ts_name(g, ts_conv_transpose2d(g, x, w, b, &o, NULL), "y");
    *gout = g;
    return compile_y(g, layout);
}

/* Part 3: each shape's conv_transpose2d with the backend's layout, forced plain and forced blocked,
 * interleaved; median ms each. */
static void bench_deconvs(double budget) {
    /* C, O, H, K, stride, pad: the PP-OCRv4 detector's two (2x2 s2), and wider ones */
    static const int shapes[][6] = {{24, 1, 480, 2, 2, 0},  {24, 24, 240, 2, 2, 0}, {64, 64, 120, 2, 2, 0},
                                    {256, 128, 32, 4, 2, 1}, {64, 32, 120, 3, 2, 1}, {512, 256, 16, 2, 2, 0}};
    printf("\nconv_transpose2d, f32, batch 1 (median ms of interleaved runs; tessera: the backend's layout)\n");
    printf("%-30s | %8s %8s %8s\n", "C -> O, H, K, stride, pad", "tessera", "plain", "blocked");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int *d = shapes[i];
        const char *layout[3] = {NULL, "plain", "blocked"};
        ts_graph *g[3];
        ts_program *p[3];
        ts_tensor *X = random_tensor(4, (int64_t[]){1, d[0], d[2], d[2]}, 1.f);
        for (int k = 0; k < 3; k++) {
            p[k] = one_deconv(d, layout[k], &g[k]);
            CHECK_TS(ts_program_feed(p[k], "x", X));
            ts_run(p[k]);
        }
        double t[3][MAX_REPS], start = now();
        int reps = 0;
        while (reps < MAX_REPS && (reps < MIN_REPS || now() - start < budget))
            for (int k = 0; k < 3; k++) t[k][reps] = ts_run(p[k]), reps += k == 2;
        char name[64];
        snprintf(name, sizeof name, "%d -> %d, %d^2, %dx%d, s%d, p%d", d[0], d[1], d[2], d[3], d[3], d[4], d[5]);
        printf("%-30s |", name);
        for (int k = 0; k < 3; k++) {
            qsort(t[k], (size_t)reps, sizeof(double), cmp_double);
            printf(" %8.2f", t[k][reps / 2] * 1e3);
            ts_program_free(p[k]);
            ts_graph_free(g[k]);
        }
        printf("\n");
        fflush(stdout);
        ts_tensor_free(X);
    }
}

/* ------------------------------------------------------------------ a MobileNet-like stack */

typedef struct net {
    ts_graph *g;
    int nparam;
    int64_t flops;
} net;

static ts_value conv(net *n, ts_value x, int64_t O, int K, int stride, int groups, int act) {
    int64_t sh[TS_MAX_DIMS];
    ts_value_shape(n->g, x, sh);
    char name[64];
    snprintf(name, sizeof name, "c%d.weight", n->nparam);
    ts_value w = ts_param(n->g, name, TS_F32, 4, (int64_t[]){O, sh[1] / groups, K, K}, ts_init_normal(0.1f));
    snprintf(name, sizeof name, "c%d.bias", n->nparam++);
    ts_value b = ts_param(n->g, name, TS_F32, 1, (int64_t[]){O}, ts_init_zeros());
    int p = K / 2;
    ts_value y = ts_conv2d(n->g, x, w, b, &(ts_conv_opts){{stride, stride}, {p, p, p, p}, {1, 1}, groups});
    int64_t ys[TS_MAX_DIMS];
    ts_value_shape(n->g, y, ys);
    n->flops += 2 * ys[1] * ys[2] * ys[3] * (sh[1] / groups) * K * K;
    return act ? ts_hard_swish(n->g, y) : y;
}

/* depthwise K x K (stride s) + hard_swish, then 1x1 to O + hard_swish */
static ts_value dw_block(net *n, ts_value x, int64_t O, int K, int s) {
    int64_t sh[TS_MAX_DIMS];
    ts_value_shape(n->g, x, sh);
    return conv(n, conv(n, x, sh[1], K, s, (int)sh[1], 1), O, 1, 1, 1, 1);
}

static ts_value up2(net *n, ts_value x) {
    int64_t sh[TS_MAX_DIMS];
    ts_value_shape(n->g, x, sh);
    return ts_resize2d(n->g, x, 2 * sh[2], 2 * sh[3],
                       &(ts_resize_opts){TS_RESIZE_NEAREST, TS_COORD_ASYMMETRIC, TS_ROUND_FLOOR, {2.f, 2.f}});
}

/* The stack compiled with one layout for every convolution (NULL: the backend's choice), in f32 or
 * in int8 (quantize: ts_compile_opts.quantize, with the CPU's option conv_int8 set to conv_int8),
 * profiled when int8 (to count the kernels kept). */
static ts_program *mobilenet(const char *layout, int quantize, const char *conv_int8, net *n) {
    set_layout(layout);
    if (ts_device_set_option("cpu", "conv_int8", conv_int8 ? conv_int8 : "fastest") != TS_OK) {
        fprintf(stderr, "bench_conv: %s\n", ts_last_error());
        exit(1);
    }
    memset(n, 0, sizeof *n);
    n->g = ts_graph_new();
    ts_value x = ts_input(n->g, "x", TS_F32, 4, (int64_t[]){1, 3, 960, 960});
    ts_value h = conv(n, x, 16, 3, 2, 1, 1);                   /* 1/2 */
    h = dw_block(n, h, 32, 3, 1);
    ts_value c2 = dw_block(n, dw_block(n, h, 48, 3, 2), 48, 3, 1);     /* 1/4 */
    ts_value c3 = dw_block(n, dw_block(n, c2, 96, 3, 2), 96, 5, 1);    /* 1/8 */
    ts_value c4 = dw_block(n, dw_block(n, c3, 192, 5, 2), 192, 5, 1);  /* 1/16 */
    ts_value c5 = dw_block(n, dw_block(n, c4, 384, 5, 2), 384, 5, 1);  /* 1/32 */
    /* neck: lateral 1x1 to 64, top-down nearest 2x and add, then a 3x3 head at 1/4 */
    ts_value p5 = conv(n, c5, 64, 1, 1, 1, 0);
    ts_value p4 = ts_add(n->g, conv(n, c4, 64, 1, 1, 1, 0), up2(n, p5));
    ts_value p3 = ts_add(n->g, conv(n, c3, 64, 1, 1, 1, 0), up2(n, p4));
    ts_value p2 = ts_add(n->g, conv(n, c2, 64, 1, 1, 1, 0), up2(n, p3));
    ts_value y = conv(n, p2, 1, 3, 1, 1, 0);
    ts_name(n->g, y, "y");
    ts_program *p = ts_compile(n->g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                         .fetches = (const char *[]){"y"}, .inference = 1,
                                                         .quantize = quantize, .profile = quantize != 0});
    set_layout(NULL);
    ts_device_set_option("cpu", "conv_int8", "fastest");
    if (!p) {
        fprintf(stderr, "bench_conv: ts_compile: %s\n", ts_last_error());
        exit(1);
    }
    return p;
}

/* The profile report's text, to read the kernels the int8 convolutions kept. */
static char report[16384];
static void keep_report(void *ctx, const char *text, size_t len) {
    (void)ctx;
    snprintf(report, sizeof report, "%.*s", (int)len, text);
}

/* The number of nodes of the report's op row `op` (0 when absent). */
static int report_nodes(const char *op) {
    char key[64];
    snprintf(key, sizeof key, "\n%s ", op);
    const char *row = strstr(report, key);
    int nodes = 0;
    if (row && sscanf(row + strlen(key), "%d", &nodes) != 1) nodes = 0;
    return nodes;
}

int main(int argc, char **argv) {
    double budget = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(budget > 0)) budget = 1.0;
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK_DNNL(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK_DNNL(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    printf("conv2d: tessera (ts_program_run: the CPU backend's choice; plain / blocked: every convolution on oneDNN "
           "in NCHW / in its layouts with reorders) vs oneDNN %d.%d.%d direct (its layouts, data already in them), "
           "f32, batch 1, %d OpenMP threads\n", v->major, v->minor, v->patch, omp_get_max_threads());
    printf("median ms of interleaved runs after warm-up; ratio = oneDNN time / tessera time (> 1: tessera faster)\n\n");
    printf("%-24s %4s %4s %4s %4s %2s %s %3s | %8s %8s %8s %8s | %6s %6s | %6s | %s\n", "shape", "C", "H", "W", "O",
           "K", "s", "G", "tessera", "plain", "blocked", "oneDNN", "GF/s", "GF/s", "ratio", "max |diff|");
    printf("%-24s %4s %4s %4s %4s %2s %s %3s | %8s %8s %8s %8s | %6s %6s | %6s |\n", "", "", "", "", "", "", " ", "",
           "ms", "ms", "ms", "ms", "tess.", "oneDNN", "");
    const shape shapes[] = {
        {"depthwise 3x3 (1/4)", 64, 240, 240, 64, 3, 1, 1, 64},
        {"depthwise 3x3 s2 (1/4)", 64, 240, 240, 64, 3, 2, 1, 64},
        {"depthwise 5x5 (1/8)", 128, 120, 120, 128, 5, 1, 2, 128},
        {"dense 3x3 (1/4)", 32, 240, 240, 32, 3, 1, 1, 1},
        {"dense 3x3 stem s2", 3, 960, 960, 16, 3, 2, 1, 1},
        {"1x1 (1/4)", 64, 240, 240, 128, 1, 1, 0, 1},
        {"1x1 (1/16)", 192, 60, 60, 192, 1, 1, 0, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) bench_one(eng, st, &shapes[i], budget);

    printf("\nMobileNet-like stack on [1, 3, 960, 960] (forward, inference; int8: dynamic quantization, each\n"
           "convolution's int8 kernel timed against its f32 one on the first run (fastest), or int8 always):\n");
    const char *layouts[5] = {NULL, "plain", "blocked", NULL, NULL}, *label[5] = {NULL, NULL, NULL, "int8", "int8 all"};
    double med[5] = {0, 0, 0, 0, 0};
    for (int k = 0; k < 5; k++) {
        net n;
        ts_program *p = mobilenet(layouts[k], k >= 3 ? TS_QUANT_DYNAMIC : 0, k == 4 ? "always" : NULL, &n);
        ts_tensor *X = random_tensor(4, (int64_t[]){1, 3, 960, 960}, 1.f);
        CHECK_TS(ts_program_feed(p, "x", X));
        ts_run(p);
        double t[MAX_REPS];
        int reps = 0;
        double start = now();
        while (reps < MAX_REPS && (reps < MIN_REPS || now() - start < 3 * budget)) t[reps++] = ts_run(p);
        qsort(t, (size_t)reps, sizeof(double), cmp_double);
        med[k] = t[reps / 2];
        printf("  %-8s %8.1f ms per image (median of %d; %.2f GFLOP, %.1f GFLOP/s, %d convolutions",
               label[k] ? label[k] : layouts[k] ? layouts[k] : "tessera", med[k] * 1e3, reps, (double)n.flops * 1e-9,
               (double)n.flops / med[k] * 1e-9, n.nparam);
        report[0] = 0;
        if (k == 3) CHECK_TS(ts_program_profile_report(p, keep_report, NULL));
        if (k == 3)
            printf("; %d kept int8, %d run f32", report_nodes("conv2d_i8 (int8)"), report_nodes("conv2d_i8 (f32)"));
        printf(")\n");
        fflush(stdout);
        ts_tensor_free(X);
        ts_program_free(p);
        ts_graph_free(n.g);
    }
    printf("  time against all-plain: %.3f, against all-blocked: %.3f\n", med[0] / med[1], med[0] / med[2]);
    printf("  int8 time against f32: %.3f (int8 always: %.3f)\n", med[3] / med[0], med[4] / med[0]);
    bench_deconvs(budget);
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
