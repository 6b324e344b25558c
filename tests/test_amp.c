/*
 * test_amp.c — gradient accumulation and dynamic loss scaling (ts_optim_opts.accumulation_steps,
 * ts_backward_scaled; src/optim/optimizer.c, src/optim/loss_scale.c, src/ops/amp.c):
 *  - micro-batches of 2 accumulated 4 times give the parameters of batches of 8 (AdamW with
 *    clipping and a linear warm-up schedule; SGD with momentum; LAMB), counters count optimizer
 *    steps, a non-final micro-batch changes nothing, and a checkpoint taken mid-step resumes
 *    bit for bit;
 *  - loss scaling leaves the numbers of an unscaled run (scales are powers of 2), alone and with
 *    accumulation;
 *  - a forced fp16 overflow skips the step (parameters, moments, counters unchanged), halves
 *    the scale and counts the skip, until the scale fits; the scale grows after
 *    growth_interval clean steps; the scaler's state round-trips through a checkpoint; an
 *    inference program of a scaled, accumulating graph runs without any of that state;
 *  - the f16 matmul: products rounded to f16, overflow to inf; the bulk f16 conversions (F16C)
 *    agree with the scalar ones on every f16 value and on rounding ties, overflow, subnormals;
 *  - the bf16 matmul (with bf16 and f32 biases, alpha, transposes, folded, batched and
 *    broadcast batches) gets a oneDNN primitive — native, or f32 on widened operands where oneDNN
 *    has no bf16 kernel (AVX2 CPUs) — and gives round_to_bf16(the f32 product of the operands
 *    widened to f32) within one bf16 ulp; a weight gradient's form (a^T b of matrices, the f32
 *    product) runs on oneDNN's inner product backward-weights where oneDNN has bf16 kernels, and
 *    a backward-data form (a b, 1,036 rows; also in f32) on its backward-data;
 *  - bad options are errors naming the option.
 */
#include "test_util.h"

#include "backend/cpu/cpu.h" /* the CPU backend's matmul kernel: which path a node takes */
#include "core/core.h"        /* the scalar f16 conversions, reference for the bulk ones */
#include "ops/op.h"           /* ts_node_add: a matmul with a bias and alpha */
#include "runtime/program.h"  /* a compiled program's nodes: which matmuls were fused */

enum { IN = 12, HID = 16, NCLS = 5, BIG = 8 };

/* Example i of the synthetic data set: x uniform in [-1, 1), label the argmax of a fixed linear
 * map of x (learnable). */
static void example(int64_t i, float *x, int32_t *label) {
    tu_rng r = tu_rng_seed(1000 + (uint64_t)i);
    for (int k = 0; k < IN; k++) x[k] = (float)tu_uniform(&r, -1, 1);
    float best = -1e30f;
    for (int c = 0; c < NCLS; c++) {
        float s = 0;
        for (int k = 0; k < IN; k++) s += x[k] * (float)(((k * 7 + c * 3) % 5) - 2);
        if (s > best) best = s, *label = c;
    }
}

/* Feed examples first .. first + b - 1 as "x" and "y". */
static void feed(ts_program *p, int64_t first, int b) {
    ts_tensor *x = ts_tensor_new(TS_F32, DIMS(b, IN)), *y = ts_tensor_new(TS_I32, DIMS(b));
    for (int i = 0; i < b; i++) example(first + i, tu_f32(x) + i * IN, (int32_t *)ts_tensor_data(y) + i);
    CHECK_OK(ts_program_feed(p, "x", x));
    CHECK_OK(ts_program_feed(p, "y", y));
    ts_tensor_free(x);
    ts_tensor_free(y);
}

/* A 2-layer MLP over batches of b, mean cross-entropy; the products in dt (f32 or f16). */
static ts_value mlp(ts_graph *g, int b, ts_dtype dt) {
    ts_graph_set_seed(g, 7);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(b, IN)), y = ts_input(g, "y", TS_I32, DIMS(b));
    ts_value w1 = ts_param(g, "fc1.weight", TS_F32, DIMS(HID, IN), ts_init_normal(0.3f));
    ts_value b1 = ts_param(g, "fc1.bias", TS_F32, DIMS(HID), ts_init_uniform(-0.1f, 0.1f));
    ts_value w2 = ts_param(g, "fc2.weight", TS_F32, DIMS(NCLS, HID), ts_init_normal(0.3f));
    ts_value h = ts_matmul(g, ts_cast(g, x, dt), ts_cast(g, w1, dt), 0, 1);
    h = ts_tanh(g, ts_add(g, ts_cast(g, h, TS_F32), b1));
    ts_value logits = ts_cast(g, ts_matmul(g, ts_cast(g, h, dt), ts_cast(g, w2, dt), 0, 1), TS_F32);
    return ts_name(g, ts_cross_entropy(g, logits, y, -100), "loss");
}

typedef struct setup {
    ts_optim_opts o;
    int sched;                       /* 1: linear schedule with warm-up */
    const ts_loss_scale_opts *scale; /* NULL: plain ts_backward */
    ts_dtype dt;
} setup;

/* A training program over micro-batches of b. */
static ts_program *train_program(const setup *s, int b, int accum) {
    ts_graph *g = ts_graph_new();
    ts_value loss = mlp(g, b, s->dt);
    CHECK_OK(s->scale ? ts_backward_scaled(g, loss, s->scale) : ts_backward(g, loss));
    ts_value lr = s->sched ? ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = TS_LR_LINEAR, .lr = 0.05f,
                                                                     .warmup_steps = 2, .total_steps = 8})
                           : ts_scalar(g, 0.05f);
    ts_optim_opts o = s->o;
    o.accumulation_steps = accum;
    CHECK_OK(ts_optimizer(g, lr, &o));
    int norm = s->scale || o.max_grad_norm > 0.f; /* "optimizer@GRAD_NORM" exists */
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1 + norm, .num_threads = 1,
                                                     .fetches = (const char *[]){"loss", "optimizer@GRAD_NORM"}});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    return p;
}

static const char *const PN[3] = {"fc1.weight", "fc1.bias", "fc2.weight"};

/* Largest difference between the programs' parameters, relative to each tensor's largest value. */
static double param_diff(ts_program *a, ts_program *b) {
    double worst = 0;
    for (int k = 0; k < 3; k++) {
        ts_tensor *x = NULL, *y = NULL;
        CHECK_OK(ts_program_get_param(a, PN[k], &x));
        CHECK_OK(ts_program_get_param(b, PN[k], &y));
        if (!x || !y) { worst = INFINITY; ts_tensor_free(x); ts_tensor_free(y); continue; }
        int64_t n = ts_tensor_numel(x);
        double scale = 1e-30, d = 0;
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(tu_f32(x)[i]));
        for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)tu_f32(x)[i] - tu_f32(y)[i]));
        if (!(d / scale <= worst)) worst = d / scale;
        ts_tensor_free(x);
        ts_tensor_free(y);
    }
    return worst;
}

/* A rank-0 state value of p. */
static float scalar(ts_program *p, const char *name) {
    ts_tensor *t = TU_FETCH(p, name);
    float v = t ? tu_f32(t)[0] : NAN;
    ts_tensor_free(t);
    return v;
}

/* Train `steps` optimizer steps of BIG examples: big in one run each, micro in `accum` runs of
 * BIG / accum. Returns the parameters' largest relative difference. */
static double compare(const setup *s, int accum, int steps, ts_program **big_out, ts_program **micro_out) {
    ts_program *big = train_program(s, BIG, 1), *micro = train_program(s, BIG / accum, accum);
    if (!big || !micro) return INFINITY;
    for (int t = 0; t < steps; t++) {
        feed(big, (int64_t)t * BIG, BIG);
        CHECK_OK(ts_program_run(big));
        for (int m = 0; m < accum; m++) {
            feed(micro, (int64_t)t * BIG + m * (BIG / accum), BIG / accum);
            CHECK_OK(ts_program_run(micro));
        }
    }
    double d = param_diff(big, micro);
    if (big_out) *big_out = big; else ts_program_free(big);
    if (micro_out) *micro_out = micro; else ts_program_free(micro);
    return d;
}

/* ------------------------------------------------------------------ accumulation */

static void test_accumulation_matches_big_batch(void) {
    struct { const char *name; setup s; } cs[3] = {
        {"adamw+clip+schedule", {ts_optim_defaults(TS_OPTIM_ADAMW), 1, NULL, TS_F32}},
        {"sgd momentum", {ts_optim_defaults(TS_OPTIM_SGD), 0, NULL, TS_F32}},
        {"lamb", {ts_optim_defaults(TS_OPTIM_LAMB), 0, NULL, TS_F32}},
    };
    cs[0].s.o.max_grad_norm = 0.5f;
    cs[1].s.o.momentum = 0.9f;
    cs[1].s.o.weight_decay = 0.01f;
    for (int c = 0; c < 3; c++) {
        ts_program *big = NULL, *micro = NULL;
        double d = compare(&cs[c].s, 4, 6, &big, &micro);
        printf("  %-20s micro-batch 2 x accumulation 4 vs batch 8: max rel. parameter difference %.2e\n",
               cs[c].name, d);
        CHECK(d < 2e-5, "%s: parameters differ by %.3e", cs[c].name, d);
        if (big && micro && c != 1) {
            CHECK(scalar(micro, "fc1.weight@STEP") == 6.f && scalar(big, "fc1.weight@STEP") == 6.f,
                  "%s: step counters %g and %g, expected 6", cs[c].name, scalar(micro, "fc1.weight@STEP"),
                  scalar(big, "fc1.weight@STEP"));
        }
        if (micro) CHECK(scalar(micro, "optimizer@MICRO_STEP") == 0.f, "micro-batch counter %g",
                         scalar(micro, "optimizer@MICRO_STEP"));
        if (micro && cs[c].s.sched)
            CHECK(scalar(micro, "lr_schedule@STEP") == 6.f, "schedule counter %g after 6 optimizer "
                  "steps of 4 runs", scalar(micro, "lr_schedule@STEP"));
        ts_program_free(big);
        ts_program_free(micro);
    }
}

/* A micro-batch that is not the last of its step changes no parameter and no counter. */
static void test_partial_step_changes_nothing(void) {
    setup s = {ts_optim_defaults(TS_OPTIM_ADAMW), 0, NULL, TS_F32};
    ts_program *p = train_program(&s, 2, 3);
    ts_program *ref = train_program(&s, 2, 3);
    if (!p || !ref) return;
    for (int m = 0; m < 2; m++) {
        feed(p, m * 2, 2);
        CHECK_OK(ts_program_run(p));
    }
    CHECK(param_diff(p, ref) == 0.0, "parameters changed before the step's last micro-batch");
    CHECK(scalar(p, "fc1.weight@STEP") == 0.f && scalar(p, "optimizer@MICRO_STEP") == 2.f,
          "counters %g %g", scalar(p, "fc1.weight@STEP"), scalar(p, "optimizer@MICRO_STEP"));
    feed(p, 4, 2);
    CHECK_OK(ts_program_run(p));
    CHECK(param_diff(p, ref) > 0.0, "the step's last micro-batch did not update");
    CHECK(scalar(p, "fc1.weight@STEP") == 1.f && scalar(p, "optimizer@MICRO_STEP") == 0.f,
          "counters after the step: %g %g", scalar(p, "fc1.weight@STEP"), scalar(p, "optimizer@MICRO_STEP"));
    ts_program_free(p);
    ts_program_free(ref);
}

static char tmpdir[256];

static const char *mkroot(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ts_amp_XXXXXX");
    return mkdtemp(tmpdir);
}

/* Every parameter and the named states of a and b are bitwise equal. */
static void same_state(ts_program *a, ts_program *b, const char *const *names, int n, const char *what) {
    CHECK(param_diff(a, b) == 0.0, "%s: parameters differ", what);
    for (int i = 0; i < n; i++) {
        ts_tensor *x = TU_FETCH(a, names[i]), *y = TU_FETCH(b, names[i]);
        CHECK(x && y && tu_bitwise_equal(x, y), "%s: state %s differs", what, names[i]);
        ts_tensor_free(x);
        ts_tensor_free(y);
    }
}

/* A checkpoint in the middle of a step resumes exactly: accumulators and counter round-trip. */
static void test_accumulation_resume(void) {
    setup s = {ts_optim_defaults(TS_OPTIM_ADAMW), 1, NULL, TS_F32};
    const char *root = mkroot();
    CHECK(root != NULL, "mkdtemp");
    if (!root) return;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/ckpt", root);
    ts_program *a = train_program(&s, 2, 4), *b = train_program(&s, 2, 4);
    if (!a || !b) return;
    for (int r = 0; r < 10; r++) { /* 2 steps and 2 micro-batches */
        feed(a, r * 2, 2);
        CHECK_OK(ts_program_run(a));
    }
    CHECK_OK(ts_program_save_state(a, dir, NULL));
    CHECK_OK(ts_program_load_state(b, dir, NULL));
    for (int r = 10; r < 16; r++) {
        feed(a, r * 2, 2);
        feed(b, r * 2, 2);
        CHECK_OK(ts_program_run(a));
        CHECK_OK(ts_program_run(b));
    }
    static const char *const st[] = {"fc1.weight@ACCUM", "fc2.weight@MOMENT2", "fc1.bias@STEP",
                                     "optimizer@MICRO_STEP", "lr_schedule@STEP"};
    same_state(a, b, st, 5, "resumed mid-step");
    CHECK(scalar(b, "fc1.bias@STEP") == 4.f, "step counter %g after 16 runs of 4", scalar(b, "fc1.bias@STEP"));
    ts_program_free(a);
    ts_program_free(b);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0, "rm");
}

/* ------------------------------------------------------------------ loss scaling */

/* Scales that are powers of 2 leave an f32 run's numbers as they are: alone, and together with
 * accumulation (against batches of 8 without scaling). */
static void test_scaling_is_transparent(void) {
    ts_loss_scale_opts so = ts_loss_scale_defaults();
    so.init_scale = 1024.f;
    so.growth_interval = 2;
    setup plain = {ts_optim_defaults(TS_OPTIM_ADAMW), 1, NULL, TS_F32};
    plain.o.max_grad_norm = 0.5f;
    setup scaled = plain;
    scaled.scale = &so;
    ts_program *a = train_program(&plain, BIG, 1), *b = train_program(&scaled, BIG, 1);
    ts_program *c = train_program(&scaled, 2, 4);
    if (!a || !b || !c) return;
    for (int t = 0; t < 6; t++) {
        feed(a, t * BIG, BIG);
        feed(b, t * BIG, BIG);
        CHECK_OK(ts_program_run(a));
        CHECK_OK(ts_program_run(b));
        for (int m = 0; m < 4; m++) {
            feed(c, t * BIG + m * 2, 2);
            CHECK_OK(ts_program_run(c));
        }
    }
    double db = param_diff(a, b), dc = param_diff(a, c);
    printf("  scaled vs unscaled: %.2e; scaled with accumulation 4 vs unscaled batch 8: %.2e\n", db, dc);
    CHECK(db < 1e-6, "loss scaling changed the parameters by %.3e", db);
    CHECK(dc < 2e-5, "loss scaling with accumulation: parameters differ by %.3e", dc);
    /* 6 clean steps with growth_interval 2: three doublings */
    CHECK(scalar(b, "optimizer@LOSS_SCALE") == 8192.f && scalar(c, "optimizer@LOSS_SCALE") == 8192.f,
          "scale %g / %g after 6 clean steps, expected 8192", scalar(b, "optimizer@LOSS_SCALE"),
          scalar(c, "optimizer@LOSS_SCALE"));
    CHECK(scalar(b, "optimizer@SKIPPED_STEPS") == 0.f, "skipped %g", scalar(b, "optimizer@SKIPPED_STEPS"));
    ts_program_free(a);
    ts_program_free(b);
    ts_program_free(c);
}

/* fp16 products with a scale far too large: the gradient of the logits times 2^24 overflows
 * f16, every step is skipped and the scale halves until it fits; then training proceeds. */
static void test_overflow_skips_and_backs_off(void) {
    ts_loss_scale_opts so = ts_loss_scale_defaults();
    so.init_scale = 16777216.f; /* 2^24 */
    setup s = {ts_optim_defaults(TS_OPTIM_ADAMW), 1, &so, TS_F16};
    ts_program *p = train_program(&s, BIG, 1), *ref = train_program(&s, BIG, 1);
    if (!p || !ref) return;
    static const char *const st[] = {"fc1.weight@MOMENT1", "fc2.weight@MOMENT2", "fc1.weight@STEP",
                                     "lr_schedule@STEP"};
    feed(p, 0, BIG);
    CHECK_OK(ts_program_run(p));
    ts_tensor *gr = TU_FETCH(p, "optimizer@GRAD_NORM");
    CHECK(gr && !isfinite(tu_f32(gr)[0]), "the first step's gradient norm %g should be inf or NaN",
          gr ? tu_f32(gr)[0] : 0.0);
    ts_tensor_free(gr);
    same_state(p, ref, st, 4, "skipped step");
    CHECK(scalar(p, "optimizer@LOSS_SCALE") == 8388608.f, "scale %g after one overflow, expected 2^23",
          scalar(p, "optimizer@LOSS_SCALE"));
    CHECK(scalar(p, "optimizer@SKIPPED_STEPS") == 1.f, "skipped count %g", scalar(p, "optimizer@SKIPPED_STEPS"));
    int runs = 1;
    while (runs < 40 && scalar(p, "fc1.weight@STEP") == 0.f) {
        feed(p, (int64_t)runs * BIG, BIG);
        CHECK_OK(ts_program_run(p));
        runs++;
    }
    float skipped = scalar(p, "optimizer@SKIPPED_STEPS"), scale = scalar(p, "optimizer@LOSS_SCALE");
    printf("  init scale 2^24, f16 products: %g steps skipped, then scale %g (2^%g)\n", skipped, scale,
           log2(scale));
    CHECK(skipped == (float)(runs - 1) && skipped >= 4.f, "%g skipped of %d runs", skipped, runs);
    CHECK(scale == ldexpf(1.f, 24 - (int)skipped), "scale %g after %g backoffs", scale, skipped);
    CHECK(scalar(p, "lr_schedule@STEP") == 1.f, "schedule counter %g after one step taken",
          scalar(p, "lr_schedule@STEP"));
    feed(p, (int64_t)runs * BIG, BIG); /* the warm-up's first lr is 0: one more step */
    CHECK_OK(ts_program_run(p));
    CHECK(param_diff(p, ref) > 0.0, "no update after the scale came down");
    ts_tensor *l = TU_FETCH(p, "loss");
    CHECK(l && isfinite(tu_f32(l)[0]), "loss not finite");
    ts_tensor_free(l);
    ts_program_free(p);
    ts_program_free(ref);
}

/* Growth after growth_interval clean steps, and the scaler's state through a checkpoint. */
static void test_growth_and_resume(void) {
    ts_loss_scale_opts so = ts_loss_scale_defaults();
    so.init_scale = 256.f;
    so.growth_interval = 3;
    setup s = {ts_optim_defaults(TS_OPTIM_SGD), 0, &so, TS_F16};
    s.o.momentum = 0.9f;
    ts_program *a = train_program(&s, BIG, 1), *b = train_program(&s, BIG, 1);
    if (!a || !b) return;
    float want[7] = {256, 256, 512, 512, 512, 1024, 1024};
    for (int t = 0; t < 7; t++) {
        feed(a, t * BIG, BIG);
        CHECK_OK(ts_program_run(a));
        CHECK(scalar(a, "optimizer@LOSS_SCALE") == want[t], "scale %g after %d clean steps, expected %g",
              scalar(a, "optimizer@LOSS_SCALE"), t + 1, want[t]);
    }
    CHECK(scalar(a, "optimizer@LOSS_SCALE_CLEAN_STEPS") == 1.f, "clean steps %g",
          scalar(a, "optimizer@LOSS_SCALE_CLEAN_STEPS"));
    const char *root = mkroot();
    CHECK(root != NULL, "mkdtemp");
    if (!root) return;
    char dir[300], cmd[400];
    snprintf(dir, sizeof dir, "%s/ckpt", root);
    CHECK_OK(ts_program_save_state(a, dir, NULL));
    CHECK_OK(ts_program_load_state(b, dir, NULL));
    static const char *const st[] = {"optimizer@LOSS_SCALE", "optimizer@LOSS_SCALE_CLEAN_STEPS",
                                     "optimizer@SKIPPED_STEPS", "fc1.weight@MOMENTUM"};
    same_state(a, b, st, 4, "after load_state");
    for (int t = 7; t < 10; t++) {
        feed(a, t * BIG, BIG);
        feed(b, t * BIG, BIG);
        CHECK_OK(ts_program_run(a));
        CHECK_OK(ts_program_run(b));
    }
    same_state(a, b, st, 4, "resumed");
    /* the same graph compiled for inference: no backward, no scaler, no updates */
    ts_graph *g = ts_graph_new();
    ts_value loss = mlp(g, BIG, TS_F16);
    CHECK_OK(ts_backward_scaled(g, loss, &so));
    CHECK_OK(ts_optimizer(g, ts_scalar(g, 0.1f), &(ts_optim_opts){.kind = TS_OPTIM_SGD, .accumulation_steps = 2}));
    ts_program *inf = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss"), .inference = 1});
    CHECK(inf != NULL, "inference compile: %s", ts_last_error());
    ts_graph_free(g);
    if (inf) {
        CHECK(ts_program_copy_params(inf, b) == 3, "copy_params");
        feed(inf, 0, BIG);
        CHECK_OK(ts_program_run(inf));
        ts_tensor *l = TU_FETCH(inf, "loss");
        CHECK(l && isfinite(tu_f32(l)[0]), "inference loss");
        ts_tensor_free(l);
        ts_memory m = {.struct_size = sizeof m};
        CHECK_OK(ts_program_memory(inf, &m));
        CHECK(m.optimizer_state == 0, "an inference program holds %zu bytes of optimizer state", m.optimizer_state);
        ts_program_free(inf);
    }
    CHECK(scalar(b, "optimizer@LOSS_SCALE") == 2048.f, "scale %g after 10 clean steps", scalar(b, "optimizer@LOSS_SCALE"));
    ts_program_free(a);
    ts_program_free(b);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0, "rm");
}

/* ------------------------------------------------------------------ f16 matmul, errors */

/* A value rounded to f16 and back. */
static float f16(float x) {
    uint16_t h;
    float y;
    ts_f32_to_f16(&x, &h, 1);
    ts_f16_to_f32(&h, &y, 1);
    return y;
}

/* f16 operands (0.1 is not exact in f16), f32 accumulation, one rounding to f16; 300 x 300 =
 * 90000 is beyond f16's 65504: inf. */
static void test_f16_matmul(void) {
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(2, 3)), b = ts_input(g, "b", TS_F32, DIMS(3, 2));
    ts_name(g, ts_cast(g, ts_matmul(g, ts_cast(g, a, TS_F16), ts_cast(g, b, TS_F16), 0, 0), TS_F32), "c");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("c")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) { ts_graph_free(g); return; }
    float av[6] = {0.1f, 0.1f, 0.1f, 300.f, 0.f, 0.f}, bv[6] = {300.f, 1.f, 1.f, 1.f, 1.f, 1.f};
    ts_tensor *ta = ts_tensor_from(TS_F32, DIMS(2, 3), av), *tb = ts_tensor_from(TS_F32, DIMS(3, 2), bv);
    CHECK_OK(ts_program_feed(p, "a", ta));
    CHECK_OK(ts_program_feed(p, "b", tb));
    CHECK_OK(ts_program_run(p));
    ts_tensor *c = TU_FETCH(p, "c");
    if (c) {
        const float *cv = tu_f32(c);
        float h = f16(0.1f), want[4] = {f16(h * 300.f + h + h), f16(h + h + h), INFINITY, 300.f};
        for (int i = 0; i < 4; i++) CHECK(cv[i] == want[i], "c[%d] = %.8g, expected %.8g", i, cv[i], want[i]);
    }
    ts_tensor_free(c);
    ts_tensor_free(ta);
    ts_tensor_free(tb);
    ts_program_free(p);
    ts_graph_free(g);
}

/* Bulk (ts_f16_to_f32, ts_f32_to_f16: F16C where the CPU has it) against scalar conversions. */
static void test_f16_conversions(void) {
    enum { NH = 65536, NF = 4 * 65536 + 64 };
    uint16_t *h = malloc(2 * NF), *h2 = malloc(2 * NF);
    float *f = malloc(4 * NF);
    for (int i = 0; i < NH; i++) h[i] = (uint16_t)i;
    ts_f16_to_f32(h, f, NH);
    int bad = 0;
    for (int i = 0; i < NH; i++) {
        float want = ts_f16_f32(h[i]);
        bad += !(f[i] == want || (isnan(f[i]) && isnan(want))) || signbit(f[i]) != signbit(want);
    }
    CHECK(bad == 0, "%d of 65536 f16 values widen differently", bad);
    /* f32 inputs: each f16 value and the midpoints to its neighbours (ties), +-1 ulp around them,
     * beyond the largest f16, f32 subnormals and tiny values */
    tu_rng r = tu_rng_seed(5);
    int n = 0;
    for (int i = 0; i < 65536 && n + 4 <= NF; i += 1) {
        float a = ts_f16_f32((uint16_t)i), b = ts_f16_f32((uint16_t)(i + 1));
        if (!isfinite(a) || !isfinite(b)) continue;
        float mid = (a + b) / 2;
        f[n++] = mid;
        f[n++] = nextafterf(mid, INFINITY);
        f[n++] = nextafterf(mid, -INFINITY);
        f[n++] = (float)tu_uniform(&r, -70000, 70000);
    }
    float extra[] = {65504.f, 65519.f, 65520.f, 1e9f, -1e9f, INFINITY, -INFINITY, 1e-45f, -1e-40f, 5.9604645e-8f,
                     2.9802322e-8f, 2.9802326e-8f, 0.f, -0.f, NAN};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < NF; i++) f[n++] = extra[i];
    ts_f32_to_f16(f, h2, (size_t)n);
    bad = 0;
    for (int i = 0; i < n; i++) {
        uint16_t want = ts_f32_f16(f[i]);
        int both_nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff) && (h2[i] & 0x7c00) == 0x7c00 && (h2[i] & 0x3ff);
        if (h2[i] != want && !both_nan && bad++ < 5)
            printf("  %.9g -> 0x%04x, expected 0x%04x\n", f[i], h2[i], want);
    }
    CHECK(bad == 0, "%d of %d f32 values narrow differently", bad, n);
    free(h);
    free(h2);
    free(f);
}

/* Batched f16 products with transposes (the folded [B*M, K] x [K, N] case and a batch of
 * matrices) against products of the f16-rounded operands computed here in double, rounded once. */
static void test_f16_matmul_batched(void) {
    enum { BT = 3, M = 5, K = 7, N = 4 };
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(BT, M, K)), w = ts_input(g, "w", TS_F32, DIMS(N, K));
    ts_value at = ts_input(g, "at", TS_F32, DIMS(BT, K, M)), bb = ts_input(g, "bb", TS_F32, DIMS(BT, K, N));
    ts_value h = ts_cast(g, a, TS_F16), hw = ts_cast(g, w, TS_F16);
    ts_name(g, ts_cast(g, ts_matmul(g, h, hw, 0, 1), TS_F32), "folded");
    ts_name(g, ts_cast(g, ts_matmul(g, ts_cast(g, at, TS_F16), ts_cast(g, bb, TS_F16), 1, 0), TS_F32), "batch");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("folded", "batch")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p) return;
    tu_rng r = tu_rng_seed(3);
    ts_tensor *ta = tu_rand_tensor(&r, DIMS(BT, M, K), -3, 3), *tw = tu_rand_tensor(&r, DIMS(N, K), -3, 3);
    ts_tensor *tat = tu_rand_tensor(&r, DIMS(BT, K, M), -3, 3), *tb = tu_rand_tensor(&r, DIMS(BT, K, N), -3, 3);
    CHECK_OK(ts_program_feed(p, "a", ta));
    CHECK_OK(ts_program_feed(p, "w", tw));
    CHECK_OK(ts_program_feed(p, "at", tat));
    CHECK_OK(ts_program_feed(p, "bb", tb));
    CHECK_OK(ts_program_run(p));
    ts_tensor *f = TU_FETCH(p, "folded"), *b = TU_FETCH(p, "batch");
    int bad = 0;
    for (int q = 0; f && b && q < BT; q++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double s1 = 0, s2 = 0;
                for (int k = 0; k < K; k++) {
                    s1 += (double)f16(tu_f32(ta)[(q * M + m) * K + k]) * f16(tu_f32(tw)[n * K + k]);
                    s2 += (double)f16(tu_f32(tat)[(q * K + k) * M + m]) * f16(tu_f32(tb)[(q * K + k) * N + n]);
                }
                /* f32 accumulation may differ from double by an f32 rounding: allow one f16 step */
                float g1 = tu_f32(f)[(q * M + m) * N + n], g2 = tu_f32(b)[(q * M + m) * N + n];
                bad += fabs(g1 - f16((float)s1)) > fabs(s1) * 1e-3 + 1e-6;
                bad += fabs(g2 - f16((float)s2)) > fabs(s2) * 1e-3 + 1e-6;
                bad += g1 != f16(g1) || g2 != f16(g2); /* results are f16 values */
            }
    CHECK(f && b && bad == 0, "%d f16 products differ from the reference", bad);
    ts_tensor_free(f);
    ts_tensor_free(b);
    ts_tensor_free(ta);
    ts_tensor_free(tw);
    ts_tensor_free(tat);
    ts_tensor_free(tb);
    ts_program_free(p);
}

/* bf16 products through the CPU backend: out = alpha op(a) op(b) + bias over bf16 operands (bias
 * bf16 or f32), on odd sizes, checked against round_to_bf16 of the product of the widened
 * operands computed here (in double, rounded to f32): within one bf16 ulp of it, plus what a
 * different f32 summation order can move it (K f32 roundings of the partial sums, far below a
 * bf16 ulp unless the sum cancels). Every node must get a oneDNN primitive when oneDNN is usable
 * (on CPUs without AVX-512 oneDNN 2.6 has no bf16 matmul: the f32 one on widened copies). */
static void test_bf16_matmul(void) {
    enum { BT = 3, M = 37, K = 53, N = 29, NY = 8, BR = 28 };
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(M, K)), b = ts_input(g, "b", TS_F32, DIMS(K, N));
    ts_value w = ts_input(g, "w", TS_F32, DIMS(N, K)), c = ts_input(g, "c", TS_F32, DIMS(N));
    ts_value a3 = ts_input(g, "a3", TS_F32, DIMS(BT, M, K)), at = ts_input(g, "at", TS_F32, DIMS(BT, K, M));
    ts_value bb = ts_input(g, "bb", TS_F32, DIMS(BT, K, N)), a4 = ts_input(g, "a4", TS_F32, DIMS(2, 1, M, K));
    ts_value b4 = ts_input(g, "b4", TS_F32, DIMS(1, BT, K, N));
    ts_value a5 = ts_input(g, "a5", TS_F32, DIMS(K, M)), a6 = ts_input(g, "a6", TS_F32, DIMS(BR, M, K));
    ts_value h = ts_cast(g, a, TS_BF16), hb = ts_cast(g, b, TS_BF16), hw = ts_cast(g, w, TS_BF16);
    ts_value hc = ts_cast(g, c, TS_BF16);
    /* y0: a b + bias (bf16); y1: 0.5 a w^T + bias (bf16; the bias as a post-op); y2: a3 w^T + bias
     * (f32; the batch folded into the rows); y3: at^T bb (a batch of products); y4: [2, 1] x [1, 3]
     * broadcast batches; y5: a5^T b, matrices (fused: a weight gradient's form, which oneDNN's inner
     * product backward-weights runs where it has bf16 kernels); y6: a6 b, BR M = 1036 rows (fused: a
     * backward-data form, its backward-data); y7: the same in f32 (the backward-data form in both) */
    struct { int in[3], nin, ta, tb; float alpha; } def[NY] = {
        {{h, hb, hc}, 3, 0, 0, 1.f},
        {{h, hw, hc}, 3, 0, 1, 0.5f},
        {{ts_cast(g, a3, TS_BF16), hw, c}, 3, 0, 1, 1.f},
        {{ts_cast(g, at, TS_BF16), ts_cast(g, bb, TS_BF16), -1}, 2, 1, 0, 1.f},
        {{ts_cast(g, a4, TS_BF16), ts_cast(g, b4, TS_BF16), -1}, 2, 0, 0, 1.f},
        {{ts_cast(g, a5, TS_BF16), hb, -1}, 2, 1, 0, 1.f},
        {{ts_cast(g, a6, TS_BF16), hb, -1}, 2, 0, 0, 1.f},
        {{a6, b, -1}, 2, 0, 0, 1.f},
    };
    ts_value y[NY];
    char names[NY][8];
    for (int i = 0; i < NY; i++) {
        ts_attrs att = {0};
        att.i[0] = def[i].ta, att.i[1] = def[i].tb;
        att.ni = 2;
        att.f[0] = def[i].alpha == 1.f ? 0.f : def[i].alpha;
        y[i] = ts_node_add(g, TS_OP_MATMUL, def[i].nin, def[i].in, &att, NULL);
        CHECK(y[i] != TS_NONE && ts_value_dtype(g, y[i]) == (i == 7 ? TS_F32 : TS_BF16), "bf16 matmul %d: %s", i,
              ts_last_error());
        if (y[i] == TS_NONE) {
            ts_graph_free(g);
            return;
        }
        snprintf(names[i], sizeof names[i], "y%d", i);
        ts_name(g, i == 7 ? y[i] : ts_cast(g, y[i], TS_F32), names[i]);
    }

    /* the backend's kernel for each node: a oneDNN primitive, not the reference loops */
    ts_cpu_dev dev = {0};
    const ts_cpu_kernel *kk = ts_cpu_kernel_for(TS_OP_MATMUL);
    if (kk && kk->prepare && ts_cpu_dnnl_ready(&dev)) {
        for (int i = 0; i < NY; i++) {
            void *state = NULL;
            size_t scratch = 0;
            CHECK_OK(kk->prepare(&dev, &(ts_plan){.g = g}, &g->nodes[g->vals[y[i]].node], &state, &scratch));
            CHECK(state != NULL, "bf16 matmul y%d gets no oneDNN primitive (the reference kernel would run)", i);
            if (state && kk->release) kk->release(state);
        }
    }

    /* unfused: each bf16 product rounded to bf16, then widened by its cast; fused (rule 5 of
     * graph/passes/fuse.c): cast(matmul) is one matmul writing its f32 accumulation unrounded */
    ts_program *p[2];
    for (int f = 0; f < 2; f++) {
        p[f] = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y0", "y1", "y2", "y3", "y4", "y5", "y6", "y7"),
                                                .no_fusion = !f});
        CHECK(p[f] != NULL, "compile: %s", ts_last_error());
    }
    ts_graph_free(g);
    if (!p[0] || !p[1]) {
        ts_program_free(p[0]);
        ts_program_free(p[1]);
        ts_cpu_dev_release(&dev);
        return;
    }
    int f32_out[2] = {0, 0};
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < p[f]->one->nsched; i++) {
            const ts_node *n = &p[f]->one->g->nodes[p[f]->one->sched[i]];
            f32_out[f] += n->op == TS_OP_MATMUL && n->attr.i[3] == 1 && p[f]->one->g->vals[n->out[0]].dtype == TS_F32;
        }
    CHECK(f32_out[0] == 0 && f32_out[1] == NY - 1, /* y7's is f32 from the start */
          "matmuls with an f32 product: %d unfused (want 0), %d fused (want %d)", f32_out[0], f32_out[1], NY - 1);
    if (kk && kk->prepare && ts_cpu_dnnl_ready(&dev)) { /* the f32-product nodes get a primitive too */
        int weight_grads = 0, backward_data = 0, widened = 0;
        for (int i = 0; i < p[1]->one->nsched; i++) {
            const ts_node *n = &p[1]->one->g->nodes[p[1]->one->sched[i]];
            if (n->op != TS_OP_MATMUL) continue;
            void *state = NULL;
            size_t scratch = 0;
            CHECK_OK(kk->prepare(&dev, &(ts_plan){.g = p[1]->one->g}, n, &state, &scratch));
            CHECK(state != NULL, "fused bf16 matmul (node %d) gets no oneDNN primitive", p[1]->one->sched[i]);
            if (state) weight_grads += ts_cpu_matmul_path(state) == TS_CPU_MM_WEIGHT_GRAD;
            if (state) backward_data += ts_cpu_matmul_path(state) == TS_CPU_MM_BACKWARD_DATA;
            if (state) widened += ts_cpu_matmul_path(state) == TS_CPU_MM_WIDENED;
            if (state && kk->release) kk->release(state);
        }
        /* y5 alone has the weight gradient's form, y6 and y7 the backward-data's; through f32 (no
         * bf16 kernels) y5 and y6 are widened matmuls like the rest */
        CHECK(weight_grads == (widened ? 0 : 1) && backward_data == (widened ? 1 : 2),
              "inner product backward-weights, backward-data primitives: %d, %d (want %d, %d)", weight_grads,
              backward_data, widened ? 0 : 1, widened ? 1 : 2);
    }
    ts_cpu_dev_release(&dev);
    tu_rng r = tu_rng_seed(11);
    ts_tensor *ta = tu_rand_tensor(&r, DIMS(M, K), -2, 2), *tb = tu_rand_tensor(&r, DIMS(K, N), -2, 2);
    ts_tensor *tw = tu_rand_tensor(&r, DIMS(N, K), -2, 2), *tc = tu_rand_tensor(&r, DIMS(N), -2, 2);
    ts_tensor *ta3 = tu_rand_tensor(&r, DIMS(BT, M, K), -2, 2), *tat = tu_rand_tensor(&r, DIMS(BT, K, M), -2, 2);
    ts_tensor *tbb = tu_rand_tensor(&r, DIMS(BT, K, N), -2, 2), *ta4 = tu_rand_tensor(&r, DIMS(2, 1, M, K), -2, 2);
    ts_tensor *tb4 = tu_rand_tensor(&r, DIMS(1, BT, K, N), -2, 2), *ta5 = tu_rand_tensor(&r, DIMS(K, M), -2, 2);
    ts_tensor *ta6 = tu_rand_tensor(&r, DIMS(BR, M, K), -2, 2);
    const char *in_names[11] = {"a", "b", "w", "c", "a3", "at", "bb", "a4", "b4", "a5", "a6"};
    ts_tensor *ins[11] = {ta, tb, tw, tc, ta3, tat, tbb, ta4, tb4, ta5, ta6};
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < 11; i++) CHECK_OK(ts_program_feed(p[f], in_names[i], ins[i]));
        CHECK_OK(ts_program_run(p[f]));
        int bad = 0, checked = 0;
        double worst = 0, worst_beyond = 0; /* in bf16 ulps (unfused) or f32 ulps (fused); beyond the
                                             * summation-order allowance */
        for (int i = 0; i < NY; i++) {
            ts_tensor *out = TU_FETCH(p[f], names[i]);
            if (!out) {
                bad++;
                continue;
            }
            int nb = i < 2 || i == 5 ? 1 : i == 4 ? 2 * BT : i >= 6 ? BR : BT;
            for (int q = 0; q < nb; q++)
                for (int m = 0; m < M; m++)
                    for (int n = 0; n < N; n++) {
                        double s = 0, sa = 0;
                        for (int k = 0; k < K; k++) {
                            float x, v;
                            switch (i) {
                            case 0: x = tu_f32(ta)[m * K + k], v = tu_f32(tb)[k * N + n]; break;
                            case 1: x = tu_f32(ta)[m * K + k], v = tu_f32(tw)[n * K + k]; break;
                            case 2: x = tu_f32(ta3)[(q * M + m) * K + k], v = tu_f32(tw)[n * K + k]; break;
                            case 3: x = tu_f32(tat)[(q * K + k) * M + m], v = tu_f32(tbb)[(q * K + k) * N + n]; break;
                            case 5: x = tu_f32(ta5)[k * M + m], v = tu_f32(tb)[k * N + n]; break;
                            case 6:
                            case 7: x = tu_f32(ta6)[(q * M + m) * K + k], v = tu_f32(tb)[k * N + n]; break;
                            default: /* out [2, BT]: a4 [q / BT], b4 [q % BT] */
                                x = tu_f32(ta4)[(q / BT * M + m) * K + k], v = tu_f32(tb4)[(q % BT * K + k) * N + n];
                            }
                            if (i != 7) x = tu_bf16(x), v = tu_bf16(v); /* y7: f32 operands */
                            s += (double)x * v;
                            sa += fabs((double)x * v);
                        }
                        int fp = f || i == 7; /* an f32 product */
                        s *= def[i].alpha, sa *= def[i].alpha;
                        if (i <= 1) s += tu_bf16(tu_f32(tc)[n]);
                        if (i == 2) s += tu_f32(tc)[n];
                        float want = fp ? (float)s : tu_bf16((float)s), got = tu_f32(out)[(q * M + m) * N + n];
                        int e;
                        frexpf(want != 0.f ? want : 1e-30f, &e);
                        double ulp = ldexp(1.0, e - (fp ? 24 : 8)), slack = ldexp(sa + fabs(s), -23) * K;
                        double d = fabs((double)got - want);
                        if (d / ulp > worst) worst = d / ulp;
                        if ((d - slack) / ulp > worst_beyond) worst_beyond = (d - slack) / ulp;
                        bad += d > ulp + slack || (!fp && got != tu_bf16(got));
                        checked++;
                    }
            ts_tensor_free(out);
        }
        printf("  %s: %d bf16 products: largest difference from %s %.2f %s ulp, %.2f beyond the summation-order "
               "allowance\n", f ? "fused, f32 product" : "unfused", checked,
               f ? "the f32 product" : "round_to_bf16(f32 product)", worst, f ? "f32" : "bf16 (y7: f32)", worst_beyond);
        CHECK(bad == 0, "%s: %d of %d bf16 products differ from the reference by more than an ulp and the allowance",
              f ? "fused" : "unfused", bad, checked);
    }
    for (int i = 0; i < 11; i++) ts_tensor_free(ins[i]);
    ts_program_free(p[0]);
    ts_program_free(p[1]);
}

static void test_bad_options(void) {
    ts_graph *g = ts_graph_new();
    ts_value loss = mlp(g, 2, TS_F32);
    ts_loss_scale_opts so = ts_loss_scale_defaults();
    so.backoff_factor = 1.5f;
    CHECK_STATUS(ts_backward_scaled(g, loss, &so), TS_ERR_ARG);
    CHECK_ERRMSG("backoff_factor", "(0, 1)");
    ts_graph_free(g);
    struct { const char *field; ts_loss_scale_opts o; } bad[4] = {
        {"init_scale", ts_loss_scale_defaults()}, {"growth_factor", ts_loss_scale_defaults()},
        {"growth_interval", ts_loss_scale_defaults()}, {"backoff_factor", ts_loss_scale_defaults()}};
    bad[0].o.init_scale = 0.f;
    bad[1].o.growth_factor = 1.f;
    bad[2].o.growth_interval = 0;
    bad[3].o.backoff_factor = 0.f;
    for (int i = 0; i < 4; i++) {
        g = ts_graph_new();
        CHECK_STATUS(ts_backward_scaled(g, mlp(g, 2, TS_F32), &bad[i].o), TS_ERR_ARG);
        CHECK_ERRMSG(bad[i].field);
        ts_graph_free(g);
    }
    g = ts_graph_new();
    CHECK_OK(ts_backward(g, mlp(g, 2, TS_F32)));
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_ADAMW);
    o.accumulation_steps = -1;
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &o), TS_ERR_ARG);
    CHECK_ERRMSG("accumulation_steps", "-1");
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_accumulation_matches_big_batch);
    RUN(test_partial_step_changes_nothing);
    RUN(test_accumulation_resume);
    RUN(test_scaling_is_transparent);
    RUN(test_overflow_skips_and_backs_off);
    RUN(test_growth_and_resume);
    RUN(test_f16_matmul);
    RUN(test_f16_matmul_batched);
    RUN(test_f16_conversions);
    RUN(test_bf16_matmul);
    RUN(test_bad_options);
    return tu_finish("test_amp");
}
