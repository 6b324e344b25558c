/*
 * test_quant.c — int8 quantization (ts_compile_opts.quantize = TS_QUANT_DYNAMIC / STATIC): the op
 * matmul_i8dyn (src/ops/matmul_int8.c), its CPU kernel (backend/cpu/matmul_int8.c) and the pass
 * that makes it (graph/passes/quantize.c). These cases check that
 *  - the reference kernel is the quantized math of the op's comment, computed here in double from
 *    the same int8 values (exact up to f32 rounding of the scaling);
 *  - the CPU kernel (oneDNN int8) agrees with the reference kernel, with and without a transposed
 *    weight, bias and fused GELU, a batch of rows folded;
 *  - the pass rewrites every weight matmul of a small BERT classifier (and no attention matmul),
 *    and its logits stay close to the f32 program's;
 *  - a fixed (static, calibrated) activation scale: the reference kernel is its math in double,
 *    saturating values beyond +-127 scale, and the CPU kernel agrees; a bad scale fails the
 *    compile naming the weight, and a matmul whose weight has no scale stays dynamic;
 *  - ts_program_set_param between runs re-quantizes the weights;
 *  - the CPU kernel's epilogue at its edges: activations all 0, a weight channel all 0, a static
 *    scale, a bias too large to divide by the scales;
 *  - a training program refuses the option, and the op has no gradient.
 * (No finite-difference gradient check: the op is inference-only.)
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "backend/cpu/cpu.h" /* the op's id and the reference kernel */
#include "graph/op_attrs.h"

enum { B = 3, M = 7, K = 48, N = 40 };

/* y = matmul_i8dyn(a, w, bias) by the reference kernel on host arrays; act, alpha as the op's. */
static void reference(const float *a, int64_t rows, const float *w, int trans_b, const float *bias, int act,
                      float alpha, float a_scale, float *y) {
    ts_graph *g = ts_graph_new();
    ts_value va = ts_input(g, "a", TS_F32, DIMS(rows, K));
    ts_value vw = ts_input(g, "w", TS_F32, trans_b ? 2 : 2, trans_b ? (int64_t[]){N, K} : (int64_t[]){K, N});
    ts_value vb = bias ? ts_input(g, "b", TS_F32, DIMS(N)) : TS_NONE;
    ts_attrs at = {0};
    at.i[0] = trans_b, at.i[1] = act, at.ni = 2, at.f[0] = alpha == 1.f ? 0.f : alpha, at.f[1] = a_scale;
    int in[3] = {va, vw, vb};
    ts_value vy = ts_node_add(g, TS_OP_MATMUL_I8DYN, bias ? 3 : 2, in, &at, NULL);
    CHECK(vy != TS_NONE, "building matmul_i8dyn: %s", ts_last_error());
    if (vy == TS_NONE) {
        ts_graph_free(g);
        return;
    }
    ts_kargs k = {.g = g, .node = &g->nodes[g->vals[vy].node]};
    k.in[0] = (void *)a, k.in[1] = (void *)w, k.in[2] = (void *)bias, k.out[0] = y;
    CHECK_OK(ts_op_get(TS_OP_MATMUL_I8DYN)->kernel(&k));
    ts_graph_free(g);
}

/* The op's quantization of x (n floats) with its own formula: q = clamp(rne(x * 127 / max|x|)). */
static float quantize_f32(const float *x, int64_t n, int64_t stride, int8_t *q) {
    float m = 0.f;
    for (int64_t i = 0; i < n; i++) m = fabsf(x[i * stride]) > m ? fabsf(x[i * stride]) : m;
    float inv = m > 0.f ? 127.f / m : 0.f;
    for (int64_t i = 0; i < n; i++) {
        float v = nearbyintf(x[i * stride] * inv);
        q[i] = (int8_t)(v > 127.f ? 127.f : v < -127.f ? -127.f : v);
    }
    return m / 127.f;
}

static void fill(tu_rng *r, float *x, int64_t n, double s) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(s * tu_normal(r));
}

/* The reference kernel against the quantized math in double. */
static void test_reference_is_the_quantized_math(void) {
    tu_rng r = tu_rng_seed(5);
    enum { R = B * M };
    float *a = malloc(sizeof(float) * R * K), *w = malloc(sizeof(float) * N * K), *bias = malloc(sizeof(float) * N);
    float *y = malloc(sizeof(float) * R * N);
    int8_t *qa = malloc(R * K), *qw = malloc(N * K);
    float *sw = malloc(sizeof(float) * N);
    fill(&r, a, R * K, 1.0), fill(&r, w, N * K, 0.1), fill(&r, bias, N, 0.5);
    a[3] = 7.5f; /* an outlier sets the activations' scale */
    for (int tb = 0; tb < 2; tb++) {
        reference(a, R, w, tb, bias, 0, 0.5f, 0.f, y);
        float sa = quantize_f32(a, R * K, 1, qa);
        for (int n = 0; n < N; n++) /* channel n: w[n, :] (trans_b) or w[:, n] */
            sw[n] = quantize_f32(tb ? w + n * K : w + n, K, tb ? 1 : N, qw + n * K);
        double worst = 0;
        for (int i = 0; i < R; i++)
            for (int n = 0; n < N; n++) {
                int64_t acc = 0;
                for (int k = 0; k < K; k++) acc += (int64_t)qa[i * K + k] * qw[n * K + k];
                double ref = (double)acc * 0.5 * sa * sw[n] + bias[n];
                double e = fabs(y[i * N + n] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
                if (!(e <= worst)) worst = e;
            }
        printf("  trans_b %d: largest relative |reference kernel - double| = %.2e\n", tb, worst);
        CHECK(worst <= 1e-6, "reference kernel off the quantized math by %.3e (trans_b %d)", worst, tb);
    }
    free(a), free(w), free(bias), free(y), free(qa), free(qw), free(sw);
}

/* A program y = act(x @ op(w) + b) on x [B, M, K], compiled with quantize (f32 when q = 0) and
 * the static scales sc (nsc of them). */
static ts_program *linear(int tb, int act, int q, const ts_quant_scale *sc, int nsc, int *nquant) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 9);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, M, K));
    ts_value w = tb ? ts_param(g, "w", TS_F32, DIMS(N, K), ts_init_normal(0.1f))
                    : ts_param(g, "w", TS_F32, DIMS(K, N), ts_init_normal(0.1f));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(N), ts_init_normal(0.5f));
    ts_value h = ts_add(g, ts_matmul(g, x, w, 0, tb), b);
    ts_name(g, act ? ts_gelu(g, h, 0) : h, "y");
    const char *f[] = {"y"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                     .fetches = f, .inference = 1, .quantize = q,
                                                     .quant_scales = sc, .nquant_scales = nsc});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    ts_memory mem = {.struct_size = sizeof mem};
    if (p) CHECK_OK(ts_program_memory(p, &mem));
    *nquant = mem.quantized;
    return p;
}

/* y of program p for x, and the reference kernel's (activation scale a_scale) on p's own
 * parameters; largest relative diff. */
static double kernel_vs_reference(ts_program *p, const ts_tensor *xt, int tb, int act, float a_scale) {
    ts_tensor *wt = NULL, *bt = NULL, *yt = NULL;
    CHECK_OK(ts_program_feed(p, "x", xt));
    CHECK_OK(ts_program_run(p));
    yt = TU_FETCH(p, "y");
    CHECK_OK(ts_program_get_param(p, "w", &wt));
    CHECK_OK(ts_program_get_param(p, "b", &bt));
    double worst = INFINITY;
    if (yt && wt && bt) {
        float *ref = malloc(sizeof(float) * B * M * N);
        reference(ts_tensor_data((ts_tensor *)xt), B * M, tu_f32(wt), tb, tu_f32(bt), act, 1.f, a_scale, ref);
        worst = 0;
        for (int i = 0; i < B * M * N; i++) {
            double e = fabs(tu_f32(yt)[i] - ref[i]) / (fabs(ref[i]) > 1 ? fabs(ref[i]) : 1);
            if (!(e <= worst)) worst = e;
        }
        free(ref);
    }
    ts_tensor_free(wt), ts_tensor_free(bt), ts_tensor_free(yt);
    return worst;
}

/* The CPU kernel, through the pass, against the reference kernel. */
static void test_cpu_kernel_matches_reference(void) {
    tu_rng r = tu_rng_seed(6);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(B, M, K), -2.0, 2.0);
    for (int tb = 0; tb < 2; tb++)
        for (int act = 0; act < 2; act++) {
            int nq = 0;
            ts_program *p = linear(tb, act, TS_QUANT_DYNAMIC, NULL, 0, &nq);
            if (!p) continue;
            CHECK(nq == 1, "trans_b %d act %d: %d matmuls quantized, expected 1", tb, act, nq);
            double e = kernel_vs_reference(p, xt, tb, act, 0.f);
            printf("  trans_b %d gelu %d: largest relative |CPU kernel - reference| = %.2e\n", tb, act, e);
            /* the same int32 sums; f32 scaling and bias in another order, oneDNN's GELU: a few ulps */
            CHECK(e <= 1e-5, "CPU kernel off the reference by %.3e (trans_b %d, gelu %d)", e, tb, act);
            ts_program_free(p);
        }
    ts_tensor_free(xt);
}

/* A fixed (static) activation scale: the reference kernel against the math in double, with a
 * scale small enough that some activations saturate at +-127; the CPU kernel, through the pass
 * with the scale listed for "w", against the reference kernel. */
static void test_static_scale(void) {
    tu_rng r = tu_rng_seed(10);
    enum { R = B * M };
    const float sa = 1.5f / 127.f, ia = 1.f / sa; /* |a| > 1.5 saturates */
    float *a = malloc(sizeof(float) * R * K), *w = malloc(sizeof(float) * N * K), *bias = malloc(sizeof(float) * N);
    float *y = malloc(sizeof(float) * R * N), *sw = malloc(sizeof(float) * N);
    int8_t *qw = malloc(N * K);
    fill(&r, a, R * K, 1.0), fill(&r, w, N * K, 0.1), fill(&r, bias, N, 0.5);
    a[5] = 40.f, a[9] = -9.f; /* far beyond the range: clamped, not the scale's setter as in dynamic */
    int clamped = 0;
    for (int i = 0; i < R * K; i++) clamped += fabsf(nearbyintf(a[i] * ia)) > 127.f;
    reference(a, R, w, 1, bias, 0, 0.5f, sa, y);
    for (int n = 0; n < N; n++) sw[n] = quantize_f32(w + n * K, K, 1, qw + n * K);
    double worst = 0;
    for (int i = 0; i < R; i++)
        for (int n = 0; n < N; n++) {
            double acc = 0;
            for (int k = 0; k < K; k++) {
                double q = nearbyint((double)(a[i * K + k] * ia)); /* the op's f32 product, rounded */
                acc += (q > 127 ? 127 : q < -127 ? -127 : q) * qw[n * K + k];
            }
            double ref = acc * 0.5 * sa * sw[n] + bias[n];
            double e = fabs(y[i * N + n] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
            if (!(e <= worst)) worst = e;
        }
    printf("  static scale %.4g, %d of %d activations clamped: largest relative |reference - double| = %.2e\n",
           (double)sa, clamped, R * K, worst);
    CHECK(clamped > 2, "only %d activations clamped: the test does not reach the saturation", clamped);
    CHECK(worst <= 1e-6, "reference kernel off the static quantized math by %.3e", worst);

    ts_tensor *xt = ts_tensor_new(TS_F32, DIMS(B, M, K));
    memcpy(ts_tensor_data(xt), a, sizeof(float) * R * K);
    for (int tb = 0; tb < 2; tb++) {
        int nq = 0;
        ts_program *p = linear(tb, 1, TS_QUANT_STATIC, (ts_quant_scale[]){{"w", sa}}, 1, &nq);
        if (!p) continue;
        CHECK(nq == 1, "static: %d matmuls quantized, expected 1", nq);
        double e = kernel_vs_reference(p, xt, tb, 1, sa);
        printf("  static, trans_b %d gelu: largest relative |CPU kernel - reference| = %.2e\n", tb, e);
        CHECK(e <= 1e-5, "static CPU kernel off the reference by %.3e (trans_b %d)", e, tb);
        ts_program_free(p);
    }
    ts_tensor_free(xt);
    free(a), free(w), free(bias), free(y), free(sw), free(qw);
}

/* Static scales: a bad one fails the compile naming its weight; a matmul whose weight is not
 * listed stays dynamic (the same output as TS_QUANT_DYNAMIC). */
static void test_static_scales_checked(void) {
    const float bad[] = {0.f, -1.f, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", TS_F32, DIMS(4, K));
        ts_value w = ts_param(g, "layer.w", TS_F32, DIMS(N, K), ts_init_normal(0.1f));
        ts_name(g, ts_matmul(g, x, w, 0, 1), "y");
        const char *f[] = {"y"};
        ts_quant_scale sc[] = {{"other", 0.5f}, {"layer.w", bad[i]}};
        ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                         .fetches = f, .inference = 1, .quantize = TS_QUANT_STATIC,
                                                         .quant_scales = sc, .nquant_scales = 2});
        CHECK(p == NULL && ts_last_status() == TS_ERR_ARG, "scale %g compiled", (double)bad[i]);
        CHECK_ERRMSG("layer.w", "scale");
        ts_program_free(p);
        ts_graph_free(g);
    }
    tu_rng r = tu_rng_seed(11);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(B, M, K), -2.0, 2.0), *y[2] = {0};
    for (int q = 0; q < 2; q++) {
        int nq = 0;
        ts_program *p = linear(1, 0, q ? TS_QUANT_STATIC : TS_QUANT_DYNAMIC, (ts_quant_scale[]){{"not_w", 0.1f}}, 1,
                               &nq);
        if (!p) continue;
        CHECK(nq == 1, "%d matmuls quantized, expected 1", nq);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        y[q] = TU_FETCH(p, "y");
        ts_program_free(p);
    }
    if (y[0] && y[1])
        CHECK(!memcmp(ts_tensor_data(y[0]), ts_tensor_data(y[1]), sizeof(float) * B * M * N),
              "a matmul whose weight is not listed differs from dynamic quantization");
    ts_tensor_free(xt), ts_tensor_free(y[0]), ts_tensor_free(y[1]);
}

/* Writing a weight between runs re-quantizes it: the output follows the new weight. */
static void test_set_param_requantizes(void) {
    tu_rng r = tu_rng_seed(7);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(B, M, K), -1.0, 1.0);
    int nq = 0;
    ts_program *p = linear(1, 0, TS_QUANT_DYNAMIC, NULL, 0, &nq);
    if (p) {
        double e0 = kernel_vs_reference(p, xt, 1, 0, 0.f);
        ts_tensor *w2 = tu_rand_tensor(&r, DIMS(N, K), -0.3, 0.3);
        CHECK_OK(ts_program_set_param(p, "w", w2));
        double e1 = kernel_vs_reference(p, xt, 1, 0, 0.f);
        printf("  before / after set_param: %.2e / %.2e\n", e0, e1);
        CHECK(e0 <= 1e-5 && e1 <= 1e-5, "output off the current weight's product: %.3e, %.3e (stale int8 weights?)",
              e0, e1);
        ts_tensor_free(w2);
        ts_program_free(p);
    }
    ts_tensor_free(xt);
}

/* The CPU kernel's baked epilogue (constant per-channel scales, the bias given divided by them:
 * backend/cpu/matmul_int8.c) at its edges, each against the reference kernel: all activations 0
 * (sa 0: y is the bias), a channel of weights all 0 (sw 0), a static scale (sa folded into the
 * scales), and activations and weights so small that bias / (sa sw) overflows (the run takes the
 * reference kernel). */
static void test_baked_scale_edges(void) {
    tu_rng r = tu_rng_seed(12);
    float *x = malloc(sizeof(float) * B * M * K), *w = malloc(sizeof(float) * N * K);
    for (int c = 0; c < 4 && x && w; c++) {
        fill(&r, x, B * M * K, 1.0);
        fill(&r, w, N * K, 0.1);
        if (c == 0) memset(x, 0, sizeof(float) * B * M * K);
        if (c == 1) memset(w + 5 * K, 0, sizeof(float) * K); /* channel 5 (trans_b: a row) */
        if (c == 3) {
            for (int i = 0; i < B * M * K; i++) x[i] *= 1e-21f;
            for (int i = 0; i < N * K; i++) w[i] *= 1e-20f;
        }
        float amax = 0.f;
        for (int i = 0; i < B * M * K; i++) amax = fmaxf(amax, fabsf(x[i]));
        ts_quant_scale sc = {"w", amax / 127.f};
        int nq = 0;
        ts_program *p = linear(1, c == 1, c == 2 ? TS_QUANT_STATIC : TS_QUANT_DYNAMIC, &sc, c == 2, &nq);
        if (!p) continue;
        ts_tensor *wt = ts_tensor_new(TS_F32, DIMS(N, K)), *xt = ts_tensor_new(TS_F32, DIMS(B, M, K));
        memcpy(ts_tensor_data(wt), w, sizeof(float) * N * K);
        memcpy(ts_tensor_data(xt), x, sizeof(float) * B * M * K);
        CHECK_OK(ts_program_set_param(p, "w", wt));
        double e = kernel_vs_reference(p, xt, 1, c == 1, c == 2 ? sc.scale : 0.f);
        printf("  case %d: largest relative |CPU kernel - reference| = %.2e\n", c, e);
        CHECK(e <= 1e-5, "case %d (%s): CPU kernel off the reference by %.3e", c,
              (const char *[]){"activations 0", "a weight channel 0", "static scale", "overflowing bias / scale"}[c], e);
        ts_tensor_free(wt), ts_tensor_free(xt);
        ts_program_free(p);
    }
    free(x), free(w);
}

/* The option refused for training, and the op's gradient refused. */
static void test_training_refused(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, K));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(N, K), ts_init_normal(0.1f));
    ts_value loss = ts_name(g, ts_reduce_sum(g, ts_matmul(g, x, w, 0, 1), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    const char *f[] = {"loss"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                     .fetches = f, .quantize = TS_QUANT_DYNAMIC});
    CHECK(p == NULL && ts_last_status() == TS_ERR_UNSUPPORTED, "a training program compiled with quantize");
    CHECK_ERRMSG("quantize", "inference");
    ts_program_free(p);
    ts_graph_free(g);

    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(4, K));
    w = ts_param(g, "w", TS_F32, DIMS(N, K), ts_init_normal(0.1f));
    ts_attrs at = {0};
    at.i[0] = 1, at.ni = 2;
    ts_value y = ts_node_add(g, TS_OP_MATMUL_I8DYN, 2, (int[]){x, w}, &at, NULL);
    CHECK(ts_backward(g, ts_reduce_sum(g, y, 0, NULL, 0)) == TS_ERR_UNSUPPORTED, "matmul_i8dyn has a gradient");
    CHECK_ERRMSG("matmul_i8dyn", "inference");
    ts_graph_free(g);
}

/* A small BERT classifier: every weight matmul quantized, logits close to f32. */
static void test_bert_classifier(void) {
    enum { BB = 4, T = 32, L = 2 };
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = 200, cfg.hidden_size = 64, cfg.num_hidden_layers = L, cfg.num_attention_heads = 4;
    cfg.intermediate_size = 128, cfg.max_position_embeddings = 64, cfg.num_labels = 3;
    cfg.initializer_range = 0.1f;
    ts_program *p[2] = {0};
    ts_tensor *logits[2] = {0};
    tu_rng r = tu_rng_seed(8);
    ts_tensor *ids = ts_tensor_new(TS_I32, DIMS(BB, T)), *types = ts_tensor_new(TS_I32, DIMS(BB, T));
    ts_tensor *mask = ts_tensor_new(TS_I32, DIMS(BB, T));
    for (int i = 0; i < BB * T; i++) {
        ((int32_t *)ts_tensor_data(ids))[i] = (int32_t)tu_randint(&r, cfg.vocab_size);
        ((int32_t *)ts_tensor_data(types))[i] = i % T >= T / 2;
        ((int32_t *)ts_tensor_data(mask))[i] = i % T < T - 3 * (i / T);
    }
    int nq = -1;
    for (int q = 0; q < 2; q++) {
        ts_graph *g = ts_graph_new();
        ts_graph_set_seed(g, 21);
        CHECK_OK(ts_bert_build(g, &cfg, TS_BERT_SEQ_CLASSIFICATION, BB, T, NULL));
        const char *f[] = {"logits"};
        p[q] = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1, .fetches = f,
                                                .inference = 1, .quantize = q});
        CHECK(p[q] != NULL, "compile BERT (quantize %d): %s", q, ts_last_error());
        ts_graph_free(g);
        if (!p[q]) continue;
        ts_memory mem = {.struct_size = sizeof mem};
        CHECK_OK(ts_program_memory(p[q], &mem));
        if (q) nq = mem.quantized;
        CHECK_OK(ts_program_feed(p[q], "input_ids", ids));
        CHECK_OK(ts_program_feed(p[q], "token_type_ids", types));
        CHECK_OK(ts_program_feed(p[q], "attention_mask", mask));
        CHECK_OK(ts_program_run(p[q]));
        logits[q] = TU_FETCH(p[q], "logits");
    }
    /* per layer Q, K, V, attention output, FFN in, FFN out; then the pooler and the classifier */
    CHECK(nq == 6 * L + 2, "%d matmuls quantized, expected %d", nq, 6 * L + 2);
    if (logits[0] && logits[1]) {
        const float *a = tu_f32(logits[0]), *b = tu_f32(logits[1]);
        double mx = 0, mean = 0, big = 0;
        int n = BB * cfg.num_labels;
        for (int i = 0; i < n; i++) {
            double d = fabs(a[i] - b[i]);
            mx = d > mx ? d : mx, mean += d / n, big = fabs(a[i]) > big ? fabs(a[i]) : big;
        }
        printf("  %d matmuls int8; logits max |f32| %.3f, max |f32 - int8| %.2e, mean %.2e\n", nq, big, mx, mean);
        /* Each int8 matmul adds a relative error of about 1/254 of the largest operand per
         * product term (per-tensor activations: half a step of 127); 14 of them in series, with
         * layer norms in between, give a few percent of the logits' scale. 0.1 of the largest
         * logit is a loose bound that a wrong scale, a stale weight or a dropped bias breaks. */
        CHECK(mx <= 0.1 * big && isfinite(mx), "int8 logits off f32 by %.3e (largest logit %.3f)", mx, big);
    }
    for (int q = 0; q < 2; q++) ts_tensor_free(logits[q]), ts_program_free(p[q]);
    ts_tensor_free(ids), ts_tensor_free(types), ts_tensor_free(mask);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_reference_is_the_quantized_math);
    RUN(test_cpu_kernel_matches_reference);
    RUN(test_static_scale);
    RUN(test_static_scales_checked);
    RUN(test_set_param_requantizes);
    RUN(test_baked_scale_edges);
    RUN(test_training_refused);
    RUN(test_bert_classifier);
    return tu_finish("test_quant");
}
