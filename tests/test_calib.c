/*
 * test_calib.c — calibration for static int8 quantization (ts_calib, runtime/calib.c and
 * calib_stats.c). These cases check that
 *  - the statistics: the histogram keeps exact counts when its range doubles; minmax is max|a| /
 *    127; the percentile lands within a bin of the exact 99.99th percentile; entropy on a
 *    Gaussian with a few far outliers clips them (a threshold well under max|a|) but keeps the
 *    bulk (above 3 sigma);
 *  - the observing program computes what the float program does (bitwise), and minmax over two
 *    runs gives max|x| / 127 of both batches for the one weight;
 *  - a small BERT classifier: one scale per weight matmul (Q, K, V sharing theirs), the
 *    observing program's logits are the float program's (bitwise), and the static int8
 *    program's logits stay close to f32;
 *  - bad use: a quantized or training program, an unknown method, scales before a run, and a
 *    non-finite activation name what is wrong.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "runtime/calib.h"

#include <stdlib.h>

static ts_calib_stats stats; /* 16 KiB: not on the stack */

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void test_stats(void) {
    tu_rng r = tu_rng_seed(1);
    enum { NB = 100000 };
    float *x = malloc(sizeof(float) * NB);
    memset(&stats, 0, sizeof stats);
    for (int i = 0; i < NB; i++) x[i] = (float)tu_normal(&r);
    CHECK_OK(ts_calib_stats_add(&stats, x, NB / 2));
    float r0 = stats.range;
    for (int i = NB / 2; i < NB; i++) x[i] *= 4.f; /* the second half is wider: the range doubles */
    CHECK_OK(ts_calib_stats_add(&stats, x + NB / 2, NB / 2));
    uint64_t total = 0;
    for (int j = 0; j < TS_CALIB_BINS; j++) total += stats.hist[j];
    float m = 0.f;
    for (int i = 0; i < NB; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    CHECK(total == NB && stats.count == NB, "histogram holds %llu of %d", (unsigned long long)total, NB);
    CHECK(stats.range >= m && stats.range > r0 && stats.amax == m, "range %g (first %g), amax %g, max %g",
          (double)stats.range, (double)r0, (double)stats.amax, (double)m);
    CHECK(ts_calib_stats_scale(&stats, TS_CALIB_MINMAX) == m / 127.f, "minmax is not max|a| / 127");

    /* percentile against sorting */
    float *s = malloc(sizeof(float) * NB);
    for (int i = 0; i < NB; i++) s[i] = fabsf(x[i]);
    qsort(s, NB, sizeof(float), cmp_float);
    double exact = s[(int)(0.9999 * NB) - 1], pct = 127.0 * ts_calib_stats_scale(&stats, TS_CALIB_PERCENTILE);
    double w = stats.range / TS_CALIB_BINS;
    printf("  percentile 99.99: %.4f from the histogram, %.4f exact (bin width %.4f)\n", pct, exact, w);
    CHECK(fabs(pct - exact) <= w + 1e-6, "percentile %.4f, exact %.4f", pct, exact);

    memset(&stats, 0, sizeof stats);
    for (int i = 0; i < NB; i++) x[i] = (float)tu_normal(&r);
    x[0] = 60.f, x[1] = -55.f;
    CHECK_OK(ts_calib_stats_add(&stats, x, NB));
    double ent = 127.0 * ts_calib_stats_scale(&stats, TS_CALIB_ENTROPY);
    printf("  entropy threshold %.3f (max |a| %.1f)\n", ent, (double)stats.amax);
    CHECK(ent > 3.0 && ent < 30.0, "entropy threshold %.3f for N(0, 1) with outliers at 60", ent);

    x[5] = NAN;
    CHECK(ts_calib_stats_add(&stats, x, 10) == TS_ERR_ARG, "a NaN was accepted");
    CHECK_ERRMSG("element 5", "nan");
    free(x), free(s);
}

/* y = x @ w^T + b on x [4, 6, 32] -> [4, 6, 16], named "y". */
static ts_graph *linear_graph(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 3);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 6, 32));
    ts_value h = ts_relu(g, ts_mul(g, x, ts_scalar(g, 2.f)));
    ts_value w = ts_param(g, "lin.weight", TS_F32, DIMS(16, 32), ts_init_normal(0.2f));
    ts_value b = ts_param(g, "lin.bias", TS_F32, DIMS(16), ts_init_normal(0.2f));
    ts_name(g, ts_add(g, ts_matmul(g, h, w, 0, 1), b), "y");
    return g;
}

static const char *const Y[] = {"y"};
#define INFER_OPTS(...) (&(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1, .fetches = Y, \
                                            .inference = 1, __VA_ARGS__})

static void test_linear(void) {
    ts_graph *g = linear_graph();
    ts_program *f = ts_compile(g, INFER_OPTS(.num_threads = 1));
    ts_calib *c = ts_calib_new(g, INFER_OPTS(.num_threads = 1), TS_CALIB_MINMAX);
    CHECK(f && c, "compile / calib: %s", ts_last_error());
    if (!f || !c) goto out;
    CHECK(ts_calib_num_weights(c) == 1, "%d weights", ts_calib_num_weights(c));
    const ts_quant_scale *sc = NULL;
    CHECK(ts_calib_scales(c, &sc) == -1, "scales before a run");
    CHECK_ERRMSG("no run observed");
    tu_rng r = tu_rng_seed(4);
    float amax = 0;
    for (int k = 0; k < 2; k++) {
        ts_tensor *xt = tu_rand_tensor(&r, DIMS(4, 6, 32), -1.0 - k, 1.0 + k);
        for (int i = 0; i < 4 * 6 * 32; i++) { /* h = relu(2 x) */
            float h = 2.f * tu_f32(xt)[i];
            amax = h > amax ? h : amax;
        }
        CHECK_OK(ts_program_feed(f, "x", xt));
        CHECK_OK(ts_program_feed(ts_calib_program(c), "x", xt));
        CHECK_OK(ts_program_run(f));
        CHECK_OK(ts_program_run(ts_calib_program(c)));
        CHECK_OK(ts_calib_observe(c));
        ts_tensor *y0 = TU_FETCH(f, "y"), *y1 = TU_FETCH(ts_calib_program(c), "y");
        CHECK(y0 && y1 && !memcmp(ts_tensor_data(y0), ts_tensor_data(y1), sizeof(float) * 4 * 6 * 16),
              "the observing program's y differs from the float program's");
        ts_tensor_free(y0), ts_tensor_free(y1), ts_tensor_free(xt);
    }
    int n = ts_calib_scales(c, &sc);
    CHECK(n == 1 && !strcmp(sc[0].weight, "lin.weight") && sc[0].scale == amax / 127.f,
          "scales: %d, %s %g (expected %g)", n, n > 0 ? sc[0].weight : "-", n > 0 ? (double)sc[0].scale : 0.0,
          (double)(amax / 127.f));
out:
    ts_calib_free(c), ts_program_free(f);
    ts_graph_free(g);
}

static void test_bad_use(void) {
    ts_graph *g = linear_graph();
    ts_calib *c = ts_calib_new(g, INFER_OPTS(.quantize = TS_QUANT_DYNAMIC), TS_CALIB_MINMAX);
    CHECK(!c, "a quantized program calibrated");
    CHECK_ERRMSG("TS_QUANT_NONE");
    c = ts_calib_new(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1, .fetches = Y},
                     TS_CALIB_MINMAX);
    CHECK(!c, "a training program calibrated");
    CHECK_ERRMSG("inference");
    c = ts_calib_new(g, INFER_OPTS(.num_threads = 1), 7);
    CHECK(!c, "method 7 accepted");
    CHECK_ERRMSG("method 7");
    c = ts_calib_new(g, INFER_OPTS(.num_threads = 1), TS_CALIB_PERCENTILE);
    if (c) {
        ts_tensor *xt = ts_tensor_new(TS_F32, DIMS(4, 6, 32));
        tu_f32(xt)[7] = INFINITY;
        CHECK_OK(ts_program_feed(ts_calib_program(c), "x", xt));
        CHECK_OK(ts_program_run(ts_calib_program(c)));
        CHECK(ts_calib_observe(c) == TS_ERR_ARG, "an infinite activation observed");
        CHECK_ERRMSG("lin.weight", "inf");
        ts_tensor_free(xt);
    }
    ts_calib_free(c);
    ts_graph_free(g);
}

/* A small BERT classifier calibrated on random batches: static int8 close to f32. */
static void test_bert(void) {
    enum { BB = 4, T = 32, L = 2 };
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = 200, cfg.hidden_size = 64, cfg.num_hidden_layers = L, cfg.num_attention_heads = 4;
    cfg.intermediate_size = 128, cfg.max_position_embeddings = 64, cfg.num_labels = 3;
    cfg.initializer_range = 0.1f;
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 21);
    CHECK_OK(ts_bert_build(g, &cfg, TS_BERT_SEQ_CLASSIFICATION, BB, T, NULL));
    const char *f[] = {"logits"};
    ts_compile_opts o = {.struct_size = sizeof o, .nfetch = 1, .fetches = f, .inference = 1};
    ts_calib *c = ts_calib_new(g, &o, TS_CALIB_ENTROPY);
    CHECK(c != NULL, "calib: %s", ts_last_error());
    /* per layer Q, K, V, attention output, FFN in, FFN out; then the pooler and the classifier */
    CHECK(c && ts_calib_num_weights(c) == 6 * L + 2, "%d weights", c ? ts_calib_num_weights(c) : -1);
    tu_rng r = tu_rng_seed(8);
    ts_tensor *in[3] = {ts_tensor_new(TS_I32, DIMS(BB, T)), ts_tensor_new(TS_I32, DIMS(BB, T)),
                        ts_tensor_new(TS_I32, DIMS(BB, T))};
    const char *names[3] = {"input_ids", "token_type_ids", "attention_mask"};
    ts_program *p[2] = {NULL, NULL};
    const ts_quant_scale *sc = NULL;
    int n = 0;
    for (int k = 0; c && k < 4; k++) { /* 3 calibration batches, then the one compared */
        for (int i = 0; i < BB * T; i++) {
            ((int32_t *)ts_tensor_data(in[0]))[i] = (int32_t)tu_randint(&r, cfg.vocab_size);
            ((int32_t *)ts_tensor_data(in[1]))[i] = i % T >= T / 2;
            ((int32_t *)ts_tensor_data(in[2]))[i] = i % T < T - 3 * (i / T);
        }
        if (k == 3) break;
        for (int j = 0; j < 3; j++) CHECK_OK(ts_program_feed(ts_calib_program(c), names[j], in[j]));
        CHECK_OK(ts_program_run(ts_calib_program(c)));
        CHECK_OK(ts_calib_observe(c));
    }
    if (c) n = ts_calib_scales(c, &sc);
    CHECK(n == 6 * L + 2, "%d scales", n);
    for (int i = 0; i + 2 < n; i += 6) /* Q, K and V of a layer read one activation */
        CHECK(sc[i].scale == sc[i + 1].scale && sc[i].scale == sc[i + 2].scale, "%s, %s, %s: %g %g %g",
              sc[i].weight, sc[i + 1].weight, sc[i + 2].weight, (double)sc[i].scale, (double)sc[i + 1].scale,
              (double)sc[i + 2].scale);
    ts_tensor *logits[2] = {0};
    for (int q = 0; q < 2 && n > 0; q++) {
        o.quantize = q ? TS_QUANT_STATIC : TS_QUANT_NONE, o.quant_scales = sc, o.nquant_scales = n;
        p[q] = ts_compile(g, &o);
        CHECK(p[q] != NULL, "compile (static %d): %s", q, ts_last_error());
        if (!p[q]) continue;
        for (int j = 0; j < 3; j++) CHECK_OK(ts_program_feed(p[q], names[j], in[j]));
        CHECK_OK(ts_program_run(p[q]));
        logits[q] = TU_FETCH(p[q], "logits");
    }
    if (logits[0] && c) { /* the observing program computes what the float program does */
        for (int j = 0; j < 3; j++) CHECK_OK(ts_program_feed(ts_calib_program(c), names[j], in[j]));
        CHECK_OK(ts_program_run(ts_calib_program(c)));
        ts_tensor *lc = TU_FETCH(ts_calib_program(c), "logits");
        CHECK(lc && !memcmp(ts_tensor_data(lc), ts_tensor_data(logits[0]), sizeof(float) * BB * 3),
              "the observing program's logits differ from the float program's");
        ts_tensor_free(lc);
    }
    if (logits[0] && logits[1]) {
        const float *a = tu_f32(logits[0]), *b = tu_f32(logits[1]);
        double mx = 0, big = 0;
        for (int i = 0; i < BB * cfg.num_labels; i++)
            mx = fabs(a[i] - b[i]) > mx ? fabs(a[i] - b[i]) : mx, big = fabs(a[i]) > big ? fabs(a[i]) : big;
        printf("  static int8 (entropy, 3 batches): logits max |f32| %.3f, max |f32 - int8| %.2e\n", big, mx);
        CHECK(mx <= 0.1 * big && isfinite(mx), "static int8 logits off f32 by %.3e (largest %.3f)", mx, big);
    }
    for (int q = 0; q < 2; q++) ts_tensor_free(logits[q]), ts_program_free(p[q]);
    for (int j = 0; j < 3; j++) ts_tensor_free(in[j]);
    ts_calib_free(c);
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_stats);
    RUN(test_linear);
    RUN(test_bad_use);
    RUN(test_bert);
    return tu_finish("test_calib");
}
