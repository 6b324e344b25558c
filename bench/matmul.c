/*
 * bench/matmul.c — tessera's matmul against oneDNN called directly, on the BERT-Base shapes.
 *
 * For M = 1024 (e.g. 8 sequences of 128 tokens) and (K, N) in {768, 3072} x {768, 3072}, in f32
 * and bf16, it times
 *   tessera: a compiled program with inputs a [M, K], b [K, N] and one ts_matmul, run by
 *            ts_program_run (public API only), and
 *   oneDNN:  the same matmul primitive made here directly (plain row-major layouts, no
 *            attributes but a user scratchpad, like tessera's CPU backend) on the same data,
 * interleaving the two so that load from other processes hits both alike, and prints the median
 * GFLOP/s (2 M K N flops per product) of each, their ratio and tessera's overhead in percent:
 * from the two medians, and "paired", the median over repeats of (tessera run / the oneDNN run
 * next to it) - 1, which cancels slow drifts of the machine's load. The target is
 * an overhead <= 5%. It also checks that both produced the same output, and ends with the fixed
 * cost per call, measured on a tiny 16 x 16 x 16 product where it dominates.
 * Where oneDNN has no bf16 matmul (2.6 on CPUs without AVX-512) the bf16 rows ("bf16*") time
 * tessera's bf16 matmul against oneDNN's f32 primitive on the same values widened to f32 — the
 * product tessera's backend runs there, without its conversions — so their overhead is the cost of
 * widening a, b and rounding the product to bf16 (those rows are left out of the worst overhead,
 * whose 5% target is for like against like); max |diff| compares with that f32 product rounded
 * to bf16.
 *
 * Then the int8 rows (int8_rows): tessera's int8 matmul (ts_compile_opts.quantize), dynamic and with
 * a calibrated (static) activation scale, on the same shapes beside oneDNN's own int8 GEMM with s8
 * and with u8 activations (its roofline here).
 *
 * Usage: bench_matmul [seconds per measurement, default 1.0]. Threads: OMP_NUM_THREADS.
 */
#include "tessera.h"

#include "bench_util.h"

#include <oneapi/dnnl/dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_DNNL(x)                                                                    \
    do {                                                                                 \
        dnnl_status_t s_ = (x);                                                          \
        if (s_ != dnnl_success) {                                                        \
            fprintf(stderr, "bench_matmul: %s failed (%d)\n", #x, (int)s_);              \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
#define CHECK_TS(x)                                                                      \
    do {                                                                                 \
        if ((x) != TS_OK) {                                                              \
            fprintf(stderr, "bench_matmul: %s failed: %s\n", #x, ts_last_error());       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* A tensor of rows x cols random values in dtype dt. */
static ts_tensor *random_tensor(ts_dtype dt, int64_t rows, int64_t cols) {
    int64_t shape[2] = {rows, cols}, n = rows * cols;
    ts_tensor *t = ts_tensor_new(dt, 2, shape);
    float *tmp = malloc(sizeof(float) * (size_t)n);
    if (!t || !tmp) exit(1);
    for (int64_t i = 0; i < n; i++) tmp[i] = urand();
    if (dt == TS_F32) memcpy(ts_tensor_data(t), tmp, sizeof(float) * (size_t)n);
    else ts_f32_to_bf16(tmp, ts_tensor_data(t), (size_t)n);
    free(tmp);
    return t;
}

/* oneDNN matmul, plain layouts, user scratchpad: the configuration tessera's backend uses. */
typedef struct direct {
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, scratch;
    void *scratch_buf, *c_buf;
    dnnl_exec_arg_t args[4];
    int nargs;
} direct;

/* 0 when oneDNN has no matmul for this dtype on this CPU (bf16 without AVX-512), else 1. */
static int direct_init(direct *d, dnnl_engine_t eng, dnnl_data_type_t dt, int64_t M, int64_t K,
                       int64_t N, void *A, void *B) {
    dnnl_memory_desc_t ma, mb, mc;
    CHECK_DNNL(dnnl_memory_desc_init_by_strides(&ma, 2, (dnnl_dims_t){M, K}, dt, (dnnl_dims_t){K, 1}));
    CHECK_DNNL(dnnl_memory_desc_init_by_strides(&mb, 2, (dnnl_dims_t){K, N}, dt, (dnnl_dims_t){N, 1}));
    CHECK_DNNL(dnnl_memory_desc_init_by_strides(&mc, 2, (dnnl_dims_t){M, N}, dt, (dnnl_dims_t){N, 1}));
    dnnl_matmul_desc_t desc;
    CHECK_DNNL(dnnl_matmul_desc_init(&desc, &ma, &mb, NULL, &mc));
    dnnl_primitive_attr_t attr;
    CHECK_DNNL(dnnl_primitive_attr_create(&attr));
    CHECK_DNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    dnnl_primitive_desc_t pd;
    dnnl_status_t made = dnnl_primitive_desc_create(&pd, &desc, attr, eng, NULL);
    if (made == dnnl_unimplemented) {
        dnnl_primitive_attr_destroy(attr);
        return 0;
    }
    CHECK_DNNL(made);
    CHECK_DNNL(dnnl_primitive_create(&d->prim, pd));
    const dnnl_memory_desc_t *ms = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = ms ? dnnl_memory_desc_get_size(ms) : 0;
    size_t cbytes = dnnl_memory_desc_get_size(&mc);
    d->c_buf = aligned_alloc(64, (cbytes + 63) / 64 * 64);
    d->scratch_buf = sbytes ? aligned_alloc(64, (sbytes + 63) / 64 * 64) : NULL;
    CHECK_DNNL(dnnl_memory_create(&d->a, &ma, eng, A));
    CHECK_DNNL(dnnl_memory_create(&d->b, &mb, eng, B));
    CHECK_DNNL(dnnl_memory_create(&d->c, &mc, eng, d->c_buf));
    d->nargs = 0;
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, d->a};
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, d->b};
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, d->c};
    d->scratch = NULL;
    if (sbytes) {
        CHECK_DNNL(dnnl_memory_create(&d->scratch, ms, eng, d->scratch_buf));
        d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, d->scratch};
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return 1;
}

static void direct_free(direct *d) {
    dnnl_memory_destroy(d->a);
    dnnl_memory_destroy(d->b);
    dnnl_memory_destroy(d->c);
    if (d->scratch) dnnl_memory_destroy(d->scratch);
    dnnl_primitive_destroy(d->prim);
    free(d->scratch_buf);
    free(d->c_buf);
}

static double direct_run(direct *d, dnnl_stream_t st) {
    double t = now();
    CHECK_DNNL(dnnl_primitive_execute(d->prim, st, d->nargs, d->args));
    CHECK_DNNL(dnnl_stream_wait(st));
    return now() - t;
}

static double ts_run(ts_program *p) {
    double t = now();
    CHECK_TS(ts_program_run(p));
    return now() - t;
}

/* ------------------------------------------------------------------ int8 */

/* oneDNN's own int8 GEMM at its best, the roofline of tessera's int8 matmul: src (s8 or u8)
 * [M, K] row-major, s8 weights [K, N] reordered once into the layout the primitive picks
 * ("any": blocked, with the s8 x s8 compensation), s32 output, no scales or post-ops. */
typedef struct direct8 {
    direct d;
    void *a_buf, *w_buf;
} direct8;

static void direct8_init(direct8 *x, dnnl_engine_t eng, dnnl_stream_t st, dnnl_data_type_t src, int64_t M, int64_t K,
                         int64_t N) {
    dnnl_memory_desc_t ma, mw, mw_user, mc;
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&ma, 2, (dnnl_dims_t){M, K}, src, dnnl_ab));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&mw, 2, (dnnl_dims_t){K, N}, dnnl_s8, dnnl_format_tag_any));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&mw_user, 2, (dnnl_dims_t){K, N}, dnnl_s8, dnnl_ab));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&mc, 2, (dnnl_dims_t){M, N}, dnnl_s32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    CHECK_DNNL(dnnl_matmul_desc_init(&desc, &ma, &mw, NULL, &mc));
    dnnl_primitive_attr_t attr;
    CHECK_DNNL(dnnl_primitive_attr_create(&attr));
    CHECK_DNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    dnnl_primitive_desc_t pd;
    CHECK_DNNL(dnnl_primitive_desc_create(&pd, &desc, attr, eng, NULL));
    CHECK_DNNL(dnnl_primitive_create(&x->d.prim, pd));
    const dnnl_memory_desc_t *mwc = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ms = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = ms ? dnnl_memory_desc_get_size(ms) : 0, wbytes = dnnl_memory_desc_get_size(mwc);
    x->a_buf = aligned_alloc(64, (size_t)(M * K + 63) / 64 * 64);
    x->w_buf = aligned_alloc(64, (wbytes + 63) / 64 * 64);
    x->d.c_buf = aligned_alloc(64, (size_t)(4 * M * N + 63) / 64 * 64);
    x->d.scratch_buf = sbytes ? aligned_alloc(64, (sbytes + 63) / 64 * 64) : NULL;
    int8_t *wu = malloc((size_t)(K * N));
    if (!x->a_buf || !x->w_buf || !x->d.c_buf || !wu) exit(1);
    for (int64_t i = 0; i < M * K; i++) ((int8_t *)x->a_buf)[i] = (int8_t)(urand() * 100.f);
    for (int64_t i = 0; i < K * N; i++) wu[i] = (int8_t)(urand() * 127.f);
    dnnl_memory_t from, to;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t reorder;
    CHECK_DNNL(dnnl_memory_create(&from, &mw_user, eng, wu));
    CHECK_DNNL(dnnl_memory_create(&to, mwc, eng, x->w_buf));
    CHECK_DNNL(dnnl_reorder_primitive_desc_create(&rpd, &mw_user, eng, mwc, eng, NULL));
    CHECK_DNNL(dnnl_primitive_create(&reorder, rpd));
    CHECK_DNNL(dnnl_primitive_execute(reorder, st, 2, (dnnl_exec_arg_t[]){{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}));
    CHECK_DNNL(dnnl_stream_wait(st));
    dnnl_primitive_destroy(reorder), dnnl_primitive_desc_destroy(rpd), dnnl_memory_destroy(from);
    free(wu);
    x->d.b = to;
    CHECK_DNNL(dnnl_memory_create(&x->d.a, &ma, eng, x->a_buf));
    CHECK_DNNL(dnnl_memory_create(&x->d.c, &mc, eng, x->d.c_buf));
    x->d.nargs = 0;
    x->d.args[x->d.nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, x->d.a};
    x->d.args[x->d.nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, x->d.b};
    x->d.args[x->d.nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, x->d.c};
    x->d.scratch = NULL;
    if (sbytes) {
        CHECK_DNNL(dnnl_memory_create(&x->d.scratch, ms, eng, x->d.scratch_buf));
        x->d.args[x->d.nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, x->d.scratch};
    }
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (src == dnnl_u8 && M * K * N > 1000000) printf("  (oneDNN's int8 kernel for %lldx%lldx%lld: %s)\n",
                                                      (long long)M, (long long)K, (long long)N, impl);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
}

static void direct8_free(direct8 *x) {
    direct_free(&x->d);
    free(x->a_buf), free(x->w_buf);
}

/* The int8 rows: tessera's int8 matmul (ts_compile_opts.quantize: a [M, K] f32 input, w [K, N] an
 * f32 parameter; per run, dynamic: the activations' max-abs sweep, their quantization and the f32
 * output with its per-channel scale; static (TS_QUANT_STATIC, the scale max |a| / 127 given): no
 * sweep) beside oneDNN's own int8 GEMM (direct8_init) with s8 and u8 activations, interleaved;
 * "% roof" = tessera's GOP/s / the better oneDNN's, for each. */
static void int8_rows(double budget, dnnl_engine_t eng, dnnl_stream_t st, int64_t M, const int64_t *KN) {
    enum { REPS = 41 };
    printf("\nint8 (tessera: f32 in and out, quantizing a every run, its scale taken per run (dynamic) or given\n"
           "(static)) vs oneDNN's int8 GEMM (int8 in, s32 out, weights prepacked), GOP/s, medians of interleaved runs\n");
    printf("%5s %5s %5s | %12s %12s %12s %12s | %7s %7s\n", "M", "K", "N", "tessera dyn", "tessera stat", "oneDNN s8s8",
           "oneDNN u8s8", "% roof", "% roof");
    printf("%5s %5s %5s | %12s %12s %12s %12s | %7s %7s\n", "", "", "", "", "", "", "", "dyn", "static");
    for (int ki = 0; ki < 2; ki++)
        for (int ni = 0; ni < 2; ni++) {
            int64_t K = KN[ki], N = KN[ni];
            ts_tensor *A = random_tensor(TS_F32, M, K);
            ts_graph *g = ts_graph_new();
            ts_value a = ts_input(g, "a", TS_F32, 2, (int64_t[]){M, K});
            ts_value w = ts_param(g, "w", TS_F32, 2, (int64_t[]){K, N}, ts_init_normal(0.05f));
            ts_name(g, ts_matmul(g, a, w, 0, 0), "y");
            const char *fetch[] = {"y"};
            float amax = 0.f;
            for (int64_t i = 0; i < M * K; i++) amax = fmaxf(amax, fabsf(((float *)ts_tensor_data(A))[i]));
            ts_quant_scale sc = {"w", amax / 127.f};
            ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                             .fetches = fetch, .inference = 1,
                                                             .quantize = TS_QUANT_DYNAMIC});
            ts_program *ps = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                              .fetches = fetch, .inference = 1, .quantize = TS_QUANT_STATIC,
                                                              .quant_scales = &sc, .nquant_scales = 1});
            if (!p || !ps) {
                fprintf(stderr, "bench_matmul: ts_compile (int8): %s\n", ts_last_error());
                exit(1);
            }
            CHECK_TS(ts_program_feed(p, "a", A));
            CHECK_TS(ts_program_feed(ps, "a", A));
            direct8 s8, u8;
            direct8_init(&s8, eng, st, dnnl_s8, M, K, N);
            direct8_init(&u8, eng, st, dnnl_u8, M, K, N);
            double est = 1e9;
            for (int r = 0; r < 3; r++)
                est = fmin(est, ts_run(p)), ts_run(ps), direct_run(&s8.d, st), direct_run(&u8.d, st);
            int reps = (int)(budget / (est > 1e-6 ? est : 1e-6));
            reps = reps < 5 ? 5 : reps > REPS ? REPS : reps;
            double tt[REPS], tst[REPS], ts8[REPS], tu8[REPS];
            for (int r = 0; r < reps; r++) {
                tt[r] = ts_run(p);
                tst[r] = ts_run(ps);
                ts8[r] = direct_run(&s8.d, st);
                tu8[r] = direct_run(&u8.d, st);
            }
            qsort(tt, (size_t)reps, sizeof(double), cmp_double);
            qsort(tst, (size_t)reps, sizeof(double), cmp_double);
            qsort(ts8, (size_t)reps, sizeof(double), cmp_double);
            qsort(tu8, (size_t)reps, sizeof(double), cmp_double);
            double ops = 2.0 * (double)(M * K * N) * 1e-9, roof = fmin(ts8[reps / 2], tu8[reps / 2]);
            printf("%5lld %5lld %5lld | %12.1f %12.1f %12.1f %12.1f | %6.1f%% %6.1f%%\n", (long long)M, (long long)K,
                   (long long)N, ops / tt[reps / 2], ops / tst[reps / 2], ops / ts8[reps / 2], ops / tu8[reps / 2],
                   100.0 * roof / tt[reps / 2], 100.0 * roof / tst[reps / 2]);
            fflush(stdout);
            direct8_free(&s8), direct8_free(&u8);
            ts_program_free(p);
            ts_program_free(ps);
            ts_graph_free(g);
            ts_tensor_free(A);
        }
}

int main(int argc, char **argv) {
    double budget = argc > 1 ? atof(argv[1]) : 1.0; /* seconds per (shape, side) */
    if (!(budget > 0)) budget = 1.0;
    const int64_t M = 1024, KN[2] = {768, 3072};
    enum { MAX_REPS = 41, MIN_REPS = 5 };

    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK_DNNL(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK_DNNL(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();

    printf("matmul: tessera (ts_program_run) vs oneDNN %d.%d.%d direct, %d OpenMP threads, M = %lld\n",
           v->major, v->minor, v->patch, omp_get_max_threads(), (long long)M);
    printf("median of interleaved runs after warm-up; overhead = tessera time / oneDNN time - 1\n\n");
    printf("%-5s %5s %5s %5s | %12s %12s | %7s %9s | %9s | %5s %s\n", "dtype", "M", "K", "N", "tessera GF/s",
           "oneDNN GF/s", "ratio", "overhead", "overhead", "reps", "max |diff|");
    printf("%-5s %5s %5s %5s | %12s %12s | %7s %9s | %9s |\n", "", "", "", "", "(median)", "(median)", "", "(median)",
           "(paired)");
    printf("------------------------------------------------------------------------------------------------------\n");

    double worst = -1e9;
    int any_fallback = 0;
    for (int di = 0; di < 2; di++) {
        ts_dtype dt = di ? TS_BF16 : TS_F32;
        for (int ki = 0; ki < 2; ki++)
            for (int ni = 0; ni < 2; ni++) {
                int64_t K = KN[ki], N = KN[ni];
                ts_tensor *A = random_tensor(dt, M, K), *B = random_tensor(dt, K, N);

                ts_graph *g = ts_graph_new();
                ts_value a = ts_input(g, "a", dt, 2, (int64_t[]){M, K});
                ts_value b = ts_input(g, "b", dt, 2, (int64_t[]){K, N});
                ts_name(g, ts_matmul(g, a, b, 0, 0), "y");
                const char *fetch[] = {"y"};
                ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = fetch});
                if (!p) {
                    fprintf(stderr, "bench_matmul: ts_compile: %s\n", ts_last_error());
                    return 1;
                }
                CHECK_TS(ts_program_feed(p, "a", A));
                CHECK_TS(ts_program_feed(p, "b", B));

                direct d;
                float *Af = NULL, *Bf = NULL; /* bf16 without a oneDNN bf16 matmul: f32 copies */
                int fallback = 0;
                if (!direct_init(&d, eng, di ? dnnl_bf16 : dnnl_f32, M, K, N, ts_tensor_data(A), ts_tensor_data(B))) {
                    if (dt != TS_BF16) {
                        fprintf(stderr, "bench_matmul: oneDNN has no %s matmul\n", ts_dtype_name(dt));
                        return 1;
                    }
                    if (!any_fallback)
                        printf("bf16*: oneDNN %d.%d has no bf16 matmul on this CPU (it needs AVX-512): oneDNN's column is its "
                               "f32 matmul on the bf16 values widened to f32\n", v->major, v->minor);
                    fallback = any_fallback = 1;
                    Af = malloc(sizeof(float) * (size_t)(M * K)), Bf = malloc(sizeof(float) * (size_t)(K * N));
                    if (!Af || !Bf) return 1;
                    ts_bf16_to_f32(ts_tensor_data(A), Af, (size_t)(M * K));
                    ts_bf16_to_f32(ts_tensor_data(B), Bf, (size_t)(K * N));
                    if (!direct_init(&d, eng, dnnl_f32, M, K, N, Af, Bf)) return 1;
                }

                /* warm-up (primitive JIT, page faults, caches), then size the repeat count */
                double est = 0;
                for (int w = 0; w < 3; w++) {
                    est = ts_run(p);
                    est = fmin(est, direct_run(&d, st));
                }
                int reps = (int)(budget / (est > 1e-6 ? est : 1e-6));
                reps = reps < MIN_REPS ? MIN_REPS : reps > MAX_REPS ? MAX_REPS : reps;
                double tt[MAX_REPS], td[MAX_REPS], pair[MAX_REPS];
                for (int r = 0; r < reps; r++) { /* alternate which side goes first */
                    if (r & 1) {
                        td[r] = direct_run(&d, st);
                        tt[r] = ts_run(p);
                    } else {
                        tt[r] = ts_run(p);
                        td[r] = direct_run(&d, st);
                    }
                }
                for (int r = 0; r < reps; r++) pair[r] = tt[r] / td[r];
                qsort(pair, (size_t)reps, sizeof(double), cmp_double);
                qsort(tt, (size_t)reps, sizeof(double), cmp_double);
                qsort(td, (size_t)reps, sizeof(double), cmp_double);
                double mt = tt[reps / 2], md = td[reps / 2], flops = 2.0 * (double)(M * K * N);

                /* same result? (same primitive and data: expect exactly 0) */
                ts_tensor *y = NULL;
                CHECK_TS(ts_program_fetch(p, "y", &y));
                double diff = 0;
                for (int64_t i = 0; i < M * N; i++) {
                    float u, w;
                    if (dt == TS_F32) {
                        u = ((float *)ts_tensor_data(y))[i];
                        w = ((float *)d.c_buf)[i];
                    } else if (fallback) { /* against the f32 product rounded to bf16 */
                        uint16_t hu = ((uint16_t *)ts_tensor_data(y))[i], hw;
                        ts_bf16_to_f32(&hu, &u, 1);
                        ts_f32_to_bf16(&((float *)d.c_buf)[i], &hw, 1);
                        ts_bf16_to_f32(&hw, &w, 1);
                    } else {
                        uint16_t hu = ((uint16_t *)ts_tensor_data(y))[i], hw = ((uint16_t *)d.c_buf)[i];
                        ts_bf16_to_f32(&hu, &u, 1);
                        ts_bf16_to_f32(&hw, &w, 1);
                    }
                    diff = fmax(diff, fabs((double)u - (double)w));
                }
                double over = 100.0 * (mt / md - 1.0), over_pair = 100.0 * (pair[reps / 2] - 1.0);
                if (over > worst && !fallback) worst = over;
                printf("%-5s %5lld %5lld %5lld | %12.1f %12.1f | %7.3f %8.2f%% | %8.2f%% | %5d %.3g\n",
                       fallback ? "bf16*" : ts_dtype_name(dt), (long long)M, (long long)K, (long long)N, flops / mt * 1e-9,
                       flops / md * 1e-9, md / mt, over, over_pair, reps, diff);
                fflush(stdout);

                ts_tensor_free(y);
                direct_free(&d);
                free(Af);
                free(Bf);
                ts_program_free(p);
                ts_graph_free(g);
                ts_tensor_free(A);
                ts_tensor_free(B);
            }
    }
    printf("\nworst median overhead %.2f%% (target <= 5%%%s). Timings on a shared machine vary with other load.\n",
           worst, any_fallback ? "; bf16* rows left out: their overhead is the bf16 <-> f32 conversions" : "");
    int8_rows(budget, eng, st, M, KN);

    /* fixed cost per call: a tiny product, best of many */
    {
        const int64_t S = 16;
        ts_tensor *A = random_tensor(TS_F32, S, S), *B = random_tensor(TS_F32, S, S);
        ts_graph *g = ts_graph_new();
        ts_value a = ts_input(g, "a", TS_F32, 2, (int64_t[]){S, S});
        ts_value b = ts_input(g, "b", TS_F32, 2, (int64_t[]){S, S});
        ts_name(g, ts_matmul(g, a, b, 0, 0), "y");
        const char *fetch[] = {"y"}; /* a fetch keeps the matmul from being dead code */
        ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = fetch});
        if (!p) {
            fprintf(stderr, "bench_matmul: ts_compile: %s\n", ts_last_error());
            return 1;
        }
        CHECK_TS(ts_program_feed(p, "a", A));
        CHECK_TS(ts_program_feed(p, "b", B));
        direct d;
        direct_init(&d, eng, dnnl_f32, S, S, S, ts_tensor_data(A), ts_tensor_data(B));
        double bt = 1e9, bd = 1e9;
        for (int r = 0; r < 2000; r++) {
            bt = fmin(bt, ts_run(p));
            bd = fmin(bd, direct_run(&d, st));
        }
        printf("fixed cost per call (16x16x16 f32, best of 2000): tessera %.2f us, oneDNN %.2f us, "
               "difference %.2f us\n", bt * 1e6, bd * 1e6, (bt - bd) * 1e6);
        direct_free(&d);
        ts_program_free(p);
        ts_graph_free(g);
        ts_tensor_free(A);
        ts_tensor_free(B);
    }
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
