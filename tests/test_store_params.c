/*
 * test_store_params.c — training with 16-bit weights (ts_graph_store_params, ts_optimizer's
 * stochastic rounding, ts_assign), on a small BERT pretraining graph:
 *  - the parameters, their gradients and their Adam moments are bf16 (f16), the step counters
 *    f32, and the program's memory for parameters + gradients + optimizer state is at most 8 bytes a
 *    parameter against 16 for f32 (as ts_program_memory reports it; without gradient accumulation,
 *    whose accumulators are f32);
 *  - it trains: the loss falls on repeated batches, in bf16 and in f16 with loss scaling;
 *    rounding to nearest instead (round_nearest) gives other weights;
 *  - stochastic rounding is bit-identical across a pipeline (4 stages on 1, 2 and 4 devices
 *    against one device) and across a checkpoint and resume;
 *  - errors: store_params after the backward pass or to f32, assign to a non-parameter or of
 *    another shape.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "tessera_apps.h"
#include "test_util.h"

enum { B = 2, T = 16, M = 2 };

typedef struct model {
    int layers, hidden, stages[8], emb, head, placed;
    ts_dtype store;    /* TS_F32: not stored in 16 bits */
    int fp16, round_nearest, no_accum;
} model;

static ts_graph *bert_graph(const model *md) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 11);
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.vocab_size = 60, c.hidden_size = md->hidden, c.num_hidden_layers = md->layers, c.num_attention_heads = 2;
    c.intermediate_size = 2 * md->hidden, c.max_position_embeddings = T, c.max_predictions_per_seq = 4;
    if (md->fp16) c.compute_dtype = TS_F16;
    if (md->placed) c.layer_stages = md->stages, c.embedding_stage = md->emb, c.head_stage = md->head;
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &c, TS_BERT_PRETRAINING, B, T, &o));
    if (md->store != TS_F32) CHECK_OK(ts_graph_store_params(g, md->store));
    ts_value lr = ts_input(g, "lr", TS_F32, 0, NULL);
    CHECK_OK(md->fp16 ? ts_backward_scaled(g, o.loss, NULL) : ts_backward(g, o.loss));
    ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_ADAMW);
    oo.accumulation_steps = md->no_accum ? 1 : M;
    oo.max_grad_norm = 1.0f;
    oo.round_nearest = md->round_nearest;
    static const char *const nd[] = {"bias", "LayerNorm.weight"};
    oo.no_decay = nd, oo.nno_decay = 2;
    CHECK_OK(ts_optimizer(g, lr, &oo));
    return g;
}

static ts_program *compile(ts_graph *g, const char *const *devs, int n) {
    ts_compile_opts o = {.num_threads = 1, TU_FETCHES("loss"), .device_iterations = M, .stage_devices = devs,
                         .nstage_devices = n};
    ts_program *p = ts_compile(g, &o);
    CHECK(p != NULL, "compile on %d devices: %s", n, ts_last_error());
    return p;
}

/* Feed step `stepno`'s M micro-batches (a function of stepno, or the same every step when
 * stepno < 0) and run; the mean loss. */
static double step(ts_program *p, int stepno) {
    int64_t sbt[3] = {M, B, T}, sbp[3] = {M, B, 4}, sb[2] = {M, B};
    ts_tensor *ids = ts_tensor_new(TS_I32, 3, sbt), *tt = ts_tensor_new(TS_I32, 3, sbt), *mask = ts_tensor_new(TS_I32, 3, sbt);
    ts_tensor *pos = ts_tensor_new(TS_I32, 3, sbp), *lab = ts_tensor_new(TS_I32, 3, sbp), *nsp = ts_tensor_new(TS_I32, 2, sb);
    ts_tensor *lr = ts_tensor_new(TS_F32, 1, (int64_t[]){M});
    int s = stepno < 0 ? 0 : stepno;
    for (int i = 0; i < M * B * T; i++) {
        ((int32_t *)ts_tensor_data(ids))[i] = 5 + (i * 7 + s * 3) % 50;
        ((int32_t *)ts_tensor_data(tt))[i] = (i % T) >= T / 2;
        ((int32_t *)ts_tensor_data(mask))[i] = (i % T) < T - (i / T) % 3;
    }
    for (int i = 0; i < M * B * 4; i++) {
        ((int32_t *)ts_tensor_data(pos))[i] = 1 + (i * 5 + s) % (T - 2);
        ((int32_t *)ts_tensor_data(lab))[i] = i % 4 == 3 ? -100 : (i * 13 + s) % 60;
    }
    for (int i = 0; i < M * B; i++) ((int32_t *)ts_tensor_data(nsp))[i] = (i + s) & 1;
    for (int i = 0; i < M; i++) ((float *)ts_tensor_data(lr))[i] = 2e-3f;
    CHECK_OK(ts_program_feed(p, "input_ids", ids));
    CHECK_OK(ts_program_feed(p, "token_type_ids", tt));
    CHECK_OK(ts_program_feed(p, "attention_mask", mask));
    CHECK_OK(ts_program_feed(p, "masked_lm_positions", pos));
    CHECK_OK(ts_program_feed(p, "labels", lab));
    CHECK_OK(ts_program_feed(p, "next_sentence_label", nsp));
    CHECK_OK(ts_program_feed(p, "lr", lr));
    CHECK_OK(ts_program_run(p));
    ts_tensor *all[] = {ids, tt, mask, pos, lab, nsp, lr};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ts_tensor_free(all[i]);
    ts_tensor *l = TU_FETCH(p, "loss");
    double mean = 0;
    for (int i = 0; l && i < M; i++) mean += ((float *)ts_tensor_data(l))[i] / M;
    ts_tensor_free(l);
    return mean;
}

/* Every parameter and its Adam moments in a and b: bit for bit (same = 1), or not all (same = 0). */
static int states_equal(ts_program *a, ts_program *b) {
    for (int i = 0; i < ts_program_num_params(a); i++) {
        const char *n = ts_program_param_name(a, i);
        char m1[300], m2[300];
        snprintf(m1, sizeof m1, "%s@MOMENT1", n);
        snprintf(m2, sizeof m2, "%s@MOMENT2", n);
        const char *names[3] = {n, m1, m2};
        for (int k = 0; k < 3; k++) {
            ts_tensor *x = NULL, *y = NULL;
            ts_program_fetch(a, names[k], &x);
            ts_program_fetch(b, names[k], &y);
            int same = x && y && tu_bitwise_equal(x, y);
            ts_tensor_free(x), ts_tensor_free(y);
            if (!same) return 0;
        }
    }
    return 1;
}

static ts_dtype dtype_of(ts_program *p, const char *name) {
    ts_tensor *t = NULL;
    if (ts_program_fetch(p, name, &t) != TS_OK || !t) return TS_DTYPE_COUNT;
    ts_dtype d = ts_tensor_dtype(t);
    ts_tensor_free(t);
    return d;
}

static void test_dtypes_and_memory(void) {
    model f32 = {.layers = 2, .hidden = 32, .store = TS_F32, .no_accum = 1}, bf = f32;
    bf.store = TS_BF16;
    ts_graph *g0 = bert_graph(&f32), *g1 = bert_graph(&bf);
    ts_program *p0 = compile(g0, NULL, 0), *p1 = compile(g1, NULL, 0);
    if (!p0 || !p1) goto out;
    const char *w = "bert.encoder.layer.0.attention.self.query.weight";
    char m1[200], st[200];
    snprintf(m1, sizeof m1, "%s@MOMENT1", w);
    snprintf(st, sizeof st, "%s@STEP", w);
    CHECK(dtype_of(p1, w) == TS_BF16 && dtype_of(p1, m1) == TS_BF16, "a weight and its moment are bf16");
    CHECK(dtype_of(p1, st) == TS_F32, "its step counter stays f32");
    CHECK(dtype_of(p0, w) == TS_F32 && dtype_of(p0, m1) == TS_F32, "without store_params they stay f32");
    ts_memory a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
    CHECK_OK(ts_program_memory(p0, &a));
    CHECK_OK(ts_program_memory(p1, &b));
    double n = (double)a.params / 4; /* parameters (elements) */
    double per0 = (a.params + a.grads + a.optimizer_state) / n, per1 = (b.params + b.grads + b.optimizer_state) / n;
    printf("  bytes a parameter (weights + gradients + optimizer state): f32 %.2f, bf16 weights %.2f\n", per0, per1);
    CHECK(per0 >= 16.0 && per1 <= 8.05, "f32 %.2f bytes a parameter (>= 16), bf16 weights %.2f (<= 8 and the step "
          "counters)", per0, per1);
out:
    ts_program_free(p0), ts_program_free(p1);
    ts_graph_free(g0), ts_graph_free(g1);
}

/* The loss of 25 steps on one repeated batch falls; the weights differ from round to nearest's. */
static void test_trains(int fp16) {
    model sr = {.layers = 2, .hidden = 32, .store = fp16 ? TS_F16 : TS_BF16, .fp16 = fp16}, rn = sr;
    rn.round_nearest = 1;
    ts_graph *g0 = bert_graph(&sr), *g1 = bert_graph(&rn);
    ts_program *p0 = compile(g0, NULL, 0), *p1 = compile(g1, NULL, 0);
    if (!p0 || !p1) goto out;
    double first = 0, last = 0, last_rn = 0;
    for (int s = 0; s < 25; s++) {
        double l = step(p0, -1);
        if (s == 0) first = l;
        last = l;
        last_rn = step(p1, -1);
    }
    printf("  %s weights: loss %.4f -> %.4f (stochastic rounding), %.4f (to nearest)\n", fp16 ? "f16" : "bf16", first,
           last, last_rn);
    CHECK(last < first - 0.5, "%s weights train: loss %.4f -> %.4f", fp16 ? "f16" : "bf16", first, last);
    CHECK(!states_equal(p0, p1), "round_nearest rounds otherwise");
out:
    ts_program_free(p0), ts_program_free(p1);
    ts_graph_free(g0), ts_graph_free(g1);
}

/* 4 stages on 1, 2 and 4 devices against one device: the same weights and moments, bit for bit. */
static void test_pipeline_bitwise(void) {
    model md = {.layers = 4, .hidden = 32, .store = TS_BF16, .placed = 1, .emb = 0, .head = 3};
    for (int l = 0; l < 4; l++) md.stages[l] = 1 + l / 2;
    ts_graph *g = bert_graph(&md);
    const char *d1[] = {"cpu:0", "cpu:0", "cpu:0", "cpu:0"}, *d2[] = {"cpu:0", "cpu:1", "cpu:0", "cpu:1"};
    const char *d4[] = {"cpu:0", "cpu:1", "cpu:2", "cpu:3"};
    ts_program *one = compile(g, NULL, 0), *p[3] = {compile(g, d1, 4), compile(g, d2, 4), compile(g, d4, 4)};
    if (!one || !p[0] || !p[1] || !p[2]) goto out;
    for (int s = 0; s < 3; s++) {
        step(one, s);
        for (int k = 0; k < 3; k++) step(p[k], s);
    }
    for (int k = 0; k < 3; k++) CHECK(states_equal(one, p[k]), "pipeline %d: the weights of one device, bit for bit", k);
out:
    ts_program_free(one);
    for (int k = 0; k < 3; k++) ts_program_free(p[k]);
    ts_graph_free(g);
}

/* 4 steps straight against 2, a checkpoint, a fresh program loading it, and 2 more. */
static void test_resume_bitwise(void) {
    model md = {.layers = 2, .hidden = 32, .store = TS_BF16};
    ts_graph *g = bert_graph(&md);
    ts_program *a = compile(g, NULL, 0), *b = compile(g, NULL, 0), *c = compile(g, NULL, 0);
    char dir[] = "/tmp/ts_store_params_XXXXXX";
    if (!a || !b || !c || !mkdtemp(dir)) goto out;
    char ck[300];
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    for (int s = 0; s < 4; s++) step(a, s);
    for (int s = 0; s < 2; s++) step(b, s);
    CHECK_OK(ts_program_save_state(b, ck, NULL));
    CHECK_OK(ts_program_load_state(c, ck, NULL));
    for (int s = 2; s < 4; s++) step(c, s);
    CHECK(states_equal(a, c), "resumed after 2 steps: the weights of 4 straight steps, bit for bit");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleaned %s", dir);
out:
    ts_program_free(a), ts_program_free(b), ts_program_free(c);
    ts_graph_free(g);
}

static void test_errors(void) {
    ts_graph *g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, 2, (int64_t[]){3, 4}, ts_init_normal(0.1f));
    ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){2, 3});
    CHECK(ts_graph_store_params(g, TS_F32) == TS_ERR_DTYPE, "store_params to f32: TS_ERR_DTYPE");
    CHECK(strstr(ts_last_error(), "bf16 or f16") != NULL, "the message names the dtypes: %s", ts_last_error());
    ts_graph_free(g);
    g = ts_graph_new();
    w = ts_param(g, "w", TS_F32, 2, (int64_t[]){3, 4}, ts_init_normal(0.1f));
    x = ts_input(g, "x", TS_F32, 2, (int64_t[]){2, 3});
    ts_value loss = ts_reduce_mean(g, ts_matmul(g, x, w, 0, 0), 0, NULL, 0);
    CHECK_OK(ts_backward(g, loss));
    CHECK(ts_graph_store_params(g, TS_BF16) == TS_ERR_ARG, "store_params after the backward pass: TS_ERR_ARG");
    ts_graph_free(g);
    g = ts_graph_new();
    w = ts_param(g, "w", TS_F32, 2, (int64_t[]){3, 4}, ts_init_normal(0.1f));
    x = ts_input(g, "x", TS_F32, 2, (int64_t[]){2, 3});
    CHECK(ts_assign(g, x, x) == TS_ERR_ARG && strstr(ts_last_error(), "parameter or a state"),
          "assign into an input: %s", ts_last_error());
    ts_graph_free(g);
    g = ts_graph_new();
    w = ts_param(g, "w", TS_F32, 2, (int64_t[]){3, 4}, ts_init_normal(0.1f));
    x = ts_input(g, "x", TS_F32, 2, (int64_t[]){2, 3});
    CHECK(ts_assign(g, w, x) == TS_ERR_SHAPE, "assign of another shape: %s", ts_last_error());
    ts_graph_free(g);
}

/* assign writes src into the parameter: a program that assigns 2 w to w doubles w each run. */
static void test_assign_runs(void) {
    ts_graph *g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, 1, (int64_t[]){5}, ts_init_normal(1.f));
    CHECK_OK(ts_assign(g, w, ts_scale(g, w, 2.f, 0.f)));
    ts_program *p = ts_compile(g, &(ts_compile_opts){.num_threads = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        ts_tensor *a = TU_FETCH(p, "w");
        CHECK_OK(ts_program_run(p));
        CHECK_OK(ts_program_run(p));
        ts_tensor *b = TU_FETCH(p, "w");
        int ok = a && b;
        for (int i = 0; ok && i < 5; i++) ok = ((float *)ts_tensor_data(b))[i] == 4.f * ((float *)ts_tensor_data(a))[i];
        CHECK(ok, "two runs of w <- 2 w quadruple w");
        ts_tensor_free(a), ts_tensor_free(b);
    }
    ts_program_free(p);
    ts_graph_free(g);
}

int main(void) {
    RUN(test_errors);
    RUN(test_assign_runs);
    RUN(test_dtypes_and_memory);
    printf("test_trains(bf16)\n");
    test_trains(0);
    printf("test_trains(f16)\n");
    test_trains(1);
    RUN(test_pipeline_bitwise);
    RUN(test_resume_bitwise);
    return tu_finish("test_store_params");
}
