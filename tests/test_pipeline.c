/*
 * test_pipeline.c — a training graph cut into pipeline stages over several devices
 * (ts_compile_opts.stage_devices), against the same graph on one device:
 *  - a BERT for pre-training (MLM + NSP, dropout on, tied word embeddings on the first and last
 *    stages, AdamW with clipping, 4 micro-batches a step) on 1, 2 and 4 devices (cpu:0 .. cpu:3,
 *    one thread each, so more devices than cores here): the same losses and parameters, bit for
 *    bit, after several steps, and with recomputation too;
 *  - the seed system's layout: embeddings and heads on device 0, 12 layers 4 / 4 / 4 on devices
 *    1 - 3 (5 stages on 4 devices), equal to one device;
 *  - checkpoints of a pipelined program resume exactly;
 *  - per stage activation memory within (micro-batches in flight / M) of the whole batch's on one
 *    device; the stages' report (devices, threads, in-flight counts, busy time, bubble);
 *  - what a pipeline refuses: one micro-batch, fp16 loss scaling, fewer devices than stages,
 *    calls that are not whole steps, stages that run backwards.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <unistd.h>

enum { B = 2, T = 16, M = 4 };

typedef struct model {
    int layers, hidden, recompute;
    int stages[16];    /* per layer */
    int emb, head;
    int placed;        /* layer_stages set */
} model;

static ts_graph *bert_graph(const model *md, int accum, int fp16) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 11);
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.vocab_size = 60, c.hidden_size = md->hidden, c.num_hidden_layers = md->layers, c.num_attention_heads = 2;
    c.intermediate_size = 2 * md->hidden, c.max_position_embeddings = T, c.max_predictions_per_seq = 4;
    c.recompute = md->recompute;
    if (fp16) c.compute_dtype = TS_F16;
    if (md->placed) c.layer_stages = md->stages, c.embedding_stage = md->emb, c.head_stage = md->head;
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &c, TS_BERT_PRETRAINING, B, T, &o));
    ts_value lr = ts_input(g, "lr", TS_F32, 0, NULL);
    CHECK_OK(fp16 ? ts_backward_scaled(g, o.loss, NULL) : ts_backward(g, o.loss));
    ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_ADAMW);
    oo.accumulation_steps = accum;
    oo.max_grad_norm = 1.0f;
    static const char *const nd[] = {"bias", "LayerNorm.weight"};
    oo.no_decay = nd, oo.nno_decay = 2;
    CHECK_OK(ts_optimizer(g, lr, &oo));
    return g;
}

static ts_program *compile(ts_graph *g, const char *const *devs, int n, int iters) {
    ts_compile_opts o = {.num_threads = 1, TU_FETCHES("loss", "mlm_loss"), .device_iterations = iters,
                         .stage_devices = devs, .nstage_devices = n};
    ts_program *p = ts_compile(g, &o);
    CHECK(p != NULL, "compile on %d devices: %s", n, ts_last_error());
    return p;
}

/* Feed step `step`'s M micro-batches (deterministic data) and run. Returns the losses [M]. */
static ts_tensor *step(ts_program *p, int stepno) {
    int64_t sbt[3] = {M, B, T}, sbp[3] = {M, B, 4}, sb[2] = {M, B};
    ts_tensor *ids = ts_tensor_new(TS_I32, 3, sbt), *tt = ts_tensor_new(TS_I32, 3, sbt), *mask = ts_tensor_new(TS_I32, 3, sbt);
    ts_tensor *pos = ts_tensor_new(TS_I32, 3, sbp), *lab = ts_tensor_new(TS_I32, 3, sbp), *nsp = ts_tensor_new(TS_I32, 2, sb);
    ts_tensor *lr = ts_tensor_new(TS_F32, 1, (int64_t[]){M});
    for (int i = 0; i < M * B * T; i++) {
        ((int32_t *)ts_tensor_data(ids))[i] = 5 + (i * 7 + stepno * 3) % 50;
        ((int32_t *)ts_tensor_data(tt))[i] = (i % T) >= T / 2;
        ((int32_t *)ts_tensor_data(mask))[i] = (i % T) < T - (i / T) % 3;
    }
    for (int i = 0; i < M * B * 4; i++) {
        ((int32_t *)ts_tensor_data(pos))[i] = 1 + (i * 5 + stepno) % (T - 2);
        ((int32_t *)ts_tensor_data(lab))[i] = i % 4 == 3 ? -100 : (i * 13 + stepno) % 60;
    }
    for (int i = 0; i < M * B; i++) ((int32_t *)ts_tensor_data(nsp))[i] = (i + stepno) & 1;
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
    return TU_FETCH(p, "loss");
}

/* Every parameter and optimizer state of a and b, bit for bit. */
static int same_state(ts_program *a, ts_program *b, const char *what) {
    for (int i = 0; i < ts_program_num_params(a); i++) {
        const char *n = ts_program_param_name(a, i);
        char m1[300];
        snprintf(m1, sizeof m1, "%s@MOMENT1", n);
        const char *names[2] = {n, m1};
        for (int k = 0; k < 2; k++) {
            ts_tensor *x = NULL, *y = NULL;
            ts_program_fetch(a, names[k], &x);
            ts_program_fetch(b, names[k], &y);
            int same = x && y && tu_bitwise_equal(x, y);
            ts_tensor_free(x), ts_tensor_free(y);
            if (!same) {
                CHECK(0, "%s: '%s' differs", what, names[k]);
                return 0;
            }
        }
    }
    return 1;
}

static void layout(model *md, int nstages) { /* embeddings on 0, layers spread over 1 .. nstages - 2, heads last */
    md->placed = 1;
    md->emb = 0;
    md->head = nstages - 1;
    for (int l = 0; l < md->layers; l++) md->stages[l] = nstages <= 2 ? l * nstages / md->layers : 1 + l * (nstages - 2) / md->layers;
}

/* 1, 2 and 4 devices: the same 4-stage graph; and a 2-stage graph on 2 devices */
static void check_equal(int recompute) {
    model md = {.layers = 4, .hidden = 32, .recompute = recompute};
    layout(&md, 4);
    ts_graph *g = bert_graph(&md, M, 0);
    const char *d1[] = {"cpu:0", "cpu:0", "cpu:0", "cpu:0"};
    const char *d2[] = {"cpu:0", "cpu:1", "cpu:0", "cpu:1"};
    const char *d4[] = {"cpu:0", "cpu:1", "cpu:2", "cpu:3"};
    ts_program *one = ts_compile(g, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss", "mlm_loss"),
                                                       .device_iterations = M});
    ts_program *p[3] = {compile(g, d1, 4, M), compile(g, d2, 4, M), compile(g, d4, 4, M)};
    if (!one || !p[0] || !p[1] || !p[2]) goto out;
    int same_loss = 1;
    for (int s = 0; s < 5; s++) {
        ts_tensor *l0 = step(one, s);
        for (int k = 0; k < 3; k++) {
            ts_tensor *lk = step(p[k], s);
            same_loss &= l0 && lk && tu_bitwise_equal(l0, lk);
            ts_tensor_free(lk);
        }
        ts_tensor_free(l0);
    }
    CHECK(same_loss, "losses differ between one device and the pipelines%s", recompute ? " (recompute)" : "");
    for (int k = 0; k < 3; k++) same_state(one, p[k], k == 0 ? "4 stages on cpu:0" : k == 1 ? "2 devices" : "4 devices");
    CHECK(ts_program_step(p[2]) == 5 * M, "step %llu after 5 steps of %d micro-batches",
          (unsigned long long)ts_program_step(p[2]), M);
    if (!recompute) { /* the report */
        double wall, bubble;
        CHECK_OK(ts_program_pipeline_stats(p[2], &wall, &bubble));
        CHECK(ts_program_num_stages(p[2]) == 4 && ts_program_num_stages(one) == 1, "stage counts");
        printf("  4 stages on 4 devices, 5 steps of %d micro-batches: wall %.3f s, bubble %.2f\n", M, wall, bubble);
        CHECK(wall > 0 && bubble > 0 && bubble < 1, "bubble %g", bubble);
        for (int s = 0; s < 4; s++) {
            ts_stage_info si = {.struct_size = sizeof si};
            CHECK_OK(ts_program_stage_info(p[2], s, &si));
            CHECK(si.in_flight == (M < 4 - s ? M : 4 - s) && si.threads == 1 && si.busy_s > 0, "stage %d info", s);
            char want[16];
            snprintf(want, sizeof want, "cpu%s%.0d", s ? ":" : "", s);
            CHECK(!strcmp(si.device, s ? want : "cpu"), "stage %d device %s", s, si.device);
        }
    }
out:
    ts_program_free(one);
    for (int k = 0; k < 3; k++) ts_program_free(p[k]);
    ts_graph_free(g);
}

static void test_equal(void) { check_equal(0); }
static void test_equal_recompute(void) { check_equal(1); }

/* The seed's layout: embeddings + heads on device 0, 12 layers 4/4/4 on devices 1-3. */
static void test_seed_layout(void) {
    model md = {.layers = 12, .hidden = 16, .placed = 1, .emb = 0, .head = 4};
    for (int l = 0; l < 12; l++) md.stages[l] = 1 + l / 4;
    ts_graph *g = bert_graph(&md, M, 0);
    CHECK(ts_graph_num_stages(g) == 5, "%d stages", ts_graph_num_stages(g));
    const char *d[] = {"cpu:0", "cpu:1", "cpu:2", "cpu:3", "cpu:0"};
    ts_program *one = ts_compile(g, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss", "mlm_loss"), .device_iterations = M});
    ts_program *p = compile(g, d, 5, M);
    if (one && p) {
        int same = 1;
        for (int s = 0; s < 3; s++) {
            ts_tensor *a = step(one, s), *b = step(p, s);
            same &= a && b && tu_bitwise_equal(a, b);
            ts_tensor_free(a), ts_tensor_free(b);
        }
        CHECK(same, "the seed's layout: losses differ from one device");
        same_state(one, p, "the seed's layout");
        ts_stage_info s0 = {.struct_size = sizeof s0}, s4 = {.struct_size = sizeof s4};
        ts_program_stage_info(p, 0, &s0);
        ts_program_stage_info(p, 4, &s4);
        CHECK(!strcmp(s0.device, "cpu") && !strcmp(s4.device, "cpu"), "stages 0 and 4 on device 0: %s %s", s0.device,
              s4.device);
    }
    ts_program_free(one), ts_program_free(p);
    ts_graph_free(g);
}

/* Save after 2 steps, restore into a fresh pipeline, 2 more: equal to 4 straight. */
static void test_resume(void) {
    model md = {.layers = 4, .hidden = 32};
    layout(&md, 3);
    ts_graph *g = bert_graph(&md, M, 0);
    const char *d[] = {"cpu:0", "cpu:1", "cpu:2"};
    ts_program *a = compile(g, d, 3, M), *b = compile(g, d, 3, M), *c = compile(g, d, 3, M);
    char dir[] = "/tmp/ts_pipeline_ckpt_XXXXXX", path[128];
    if (!a || !b || !c || !mkdtemp(dir)) goto out;
    snprintf(path, sizeof path, "%s/step-2", dir);
    for (int s = 0; s < 4; s++) ts_tensor_free(step(a, s));
    for (int s = 0; s < 2; s++) ts_tensor_free(step(b, s));
    CHECK_OK(ts_program_save_state(b, path, NULL));
    CHECK_OK(ts_program_load_state(c, path, NULL));
    CHECK(ts_program_step(c) == 2 * M, "restored step %llu", (unsigned long long)ts_program_step(c));
    for (int s = 2; s < 4; s++) ts_tensor_free(step(c, s));
    same_state(a, c, "saved after 2 steps, restored, 2 more");
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
out:
    ts_program_free(a), ts_program_free(b), ts_program_free(c);
    ts_graph_free(g);
}

/* Stage k keeps at most min(M, S - k) micro-batches of its activations: within that share of the
 * whole batch's (B x M sequences at once, on one device, no accumulation). */
static void test_memory(void) {
    enum { MM = 8 };
    model md = {.layers = 4, .hidden = 64};
    layout(&md, 4);
    ts_graph *g = bert_graph(&md, MM, 0);
    const char *d[] = {"cpu:0", "cpu:1", "cpu:2", "cpu:3"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss"), .device_iterations = MM,
                                                     .stage_devices = d, .nstage_devices = 4});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    /* the unpipelined plan: the whole batch of B x M sequences in one step */
    ts_graph *gf = ts_graph_new();
    ts_graph_set_seed(gf, 11);
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.vocab_size = 60, c.hidden_size = 64, c.num_hidden_layers = 4, c.num_attention_heads = 2;
    c.intermediate_size = 128, c.max_position_embeddings = T, c.max_predictions_per_seq = 4;
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(gf, &c, TS_BERT_PRETRAINING, B * MM, T, &o));
    CHECK_OK(ts_backward(gf, o.loss));
    CHECK_OK(ts_adamw(gf, ts_scalar(gf, 1e-3f), 0.9f, 0.999f, 1e-6f, 0.01f));
    ts_program *full = ts_compile(gf, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss")});
    ts_memory mf = {.struct_size = sizeof mf};
    if (p && full && !ts_program_memory(full, &mf)) {
        printf("  activations of the whole batch (%d x %d sequences) on one device: %zu bytes\n", B, MM, mf.activations);
        for (int s = 0; s < 4; s++) {
            ts_stage_info si = {.struct_size = sizeof si};
            CHECK_OK(ts_program_stage_info(p, s, &si));
            double share = (double)si.mem.activations / (double)mf.activations, bound = (double)si.in_flight / MM;
            printf("  stage %d: %d in flight, activations %zu bytes: %.3f of the whole batch's (bound %.3f)\n", s,
                   si.in_flight, si.mem.activations, share, bound);
            CHECK(share <= bound, "stage %d keeps %.3f of the whole batch's activations, above %d/%d", s, share,
                  si.in_flight, MM);
        }
    }
    ts_program_free(p), ts_program_free(full);
    ts_graph_free(g), ts_graph_free(gf);
}

/* Two stages on one device are checked together: a limit each stage fits alone but not the two
 * of them is refused on one device, naming what the earlier stage takes there, and accepted on
 * two devices. */
static void test_memory_per_device(void) {
    model md = {.layers = 2, .hidden = 64};
    layout(&md, 2);
    ts_graph *g = bert_graph(&md, M, 0);
    const char *two[] = {"cpu:0", "cpu:1"}, *one[] = {"cpu:0", "cpu:0"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss"), .device_iterations = M,
                                                     .stage_devices = two, .nstage_devices = 2});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    size_t total[2] = {0, 0};
    for (int s = 0; s < 2 && p; s++) {
        ts_stage_info si = {.struct_size = sizeof si};
        CHECK_OK(ts_program_stage_info(p, s, &si));
        const ts_stage_memory *m = &si.mem;
        total[s] = m->params + m->grads + m->optimizer_state + m->grad_buckets + m->activations + m->workspace;
    }
    ts_program_free(p);
    size_t big = total[0] > total[1] ? total[0] : total[1], small = total[0] + total[1] - big;
    size_t limit = big + small / 2;
    printf("  stages take %zu and %zu bytes; a limit of %zu per device\n", total[0], total[1], limit);
    p = ts_compile(g, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss"), .device_iterations = M,
                                         .stage_devices = one, .nstage_devices = 2, .memory_limit = limit});
    CHECK(p == NULL && ts_last_status() == TS_ERR_NOMEM, "two stages on cpu:0 fitted one stage's limit");
    CHECK_ERRMSG("stage 1 of the pipeline's 2", "on device cpu", "earlier stages there");
    ts_program_free(p);
    p = ts_compile(g, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss"), .device_iterations = M,
                                         .stage_devices = two, .nstage_devices = 2, .memory_limit = limit});
    CHECK(p != NULL, "each stage on its own device did not fit: %s", ts_last_error());
    ts_program_free(p);
    ts_graph_free(g);
}

static void test_refused(void) {
    model md = {.layers = 2, .hidden = 16};
    layout(&md, 2);
    const char *d[] = {"cpu:0", "cpu:1"};
    ts_graph *g = bert_graph(&md, 1, 0);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device_iterations = 1, .stage_devices = d, .nstage_devices = 2});
    CHECK(p == NULL, "one micro-batch accepted");
    CHECK_ERRMSG("M >= 2 micro-batches");
    ts_graph_free(g);
    g = bert_graph(&md, M, 0);
    p = ts_compile(g, &(ts_compile_opts){.device_iterations = M, .stage_devices = d, .nstage_devices = 1});
    CHECK(p == NULL, "fewer devices than stages accepted");
    CHECK_ERRMSG("2 pipeline stages but stage_devices names 1");
    p = ts_compile(g, &(ts_compile_opts){.device_iterations = M + 1, .stage_devices = d, .nstage_devices = 2});
    CHECK(p == NULL, "a call of a step and a bit accepted");
    CHECK_ERRMSG("multiple of the 4 micro-batches");
    ts_graph_free(g);
    g = bert_graph(&md, M, 1);
    p = ts_compile(g, &(ts_compile_opts){.device_iterations = M, .stage_devices = d, .nstage_devices = 2});
    CHECK(p == NULL && ts_last_status() == TS_ERR_UNSUPPORTED, "fp16 loss scaling accepted");
    ts_graph_free(g);
    g = ts_graph_new(); /* stages that run backwards */
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.num_hidden_layers = 2, c.max_position_embeddings = T;
    c.layer_stages = (const int[]){1, 0};
    CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_MODEL, B, T, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("must not decrease", "layer 1 is on stage 0 after stage 1");
    ts_graph_free(g);
    g = ts_graph_new();
    CHECK_OK(ts_graph_stage_begin(g, 1));
    CHECK_STATUS(ts_graph_stage_begin(g, 2), TS_ERR_ARG);
    CHECK_ERRMSG("stage 1 is still open");
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_equal);
    RUN(test_equal_recompute);
    RUN(test_seed_layout);
    RUN(test_resume);
    RUN(test_memory);
    RUN(test_memory_per_device);
    RUN(test_refused);
    return tu_finish("test_pipeline");
}
