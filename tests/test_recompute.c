/*
 * test_recompute.c — recomputation (activation checkpointing): ts_graph_recompute_begin / end,
 * ts_bert_config.recompute, ts_graph_recompute_gelu and ts_graph_recompute_casts.
 *
 *  - A small BERT for pre-training (2 layers, C 32, 2 heads, FFN 64, vocabulary 60, batch 3 x 8
 *    with padded rows, hidden and attention dropout 0.1) built with recompute off and on, same
 *    seed, inputs and step: the loss and every parameter gradient are bitwise identical; so are
 *    the parameters after 2 AdamW steps; with fusion on and off, and with bf16 compute. The
 *    same with only the GELU outputs recomputed (f32, and bf16 with 2 AdamW steps), and with the
 *    parameters' bf16 casts recomputed (alone and with the GELUs; bf16, 2 AdamW steps).
 *  - The small model's activation arena (ts_program_memory) is smaller with recompute on; an
 *    inference program from the same training graph is the same either way (clones are dead).
 *  - BERT-Base-sized (12 layers, C 768, 12 heads, FFN 3072, batch 8 x seq 128, f32): the bare
 *    encoder stack of test_memplan.c (tests/encoder.h), a segment per layer through the public
 *    calls, compiled only; prints both activation figures and the reduction; CHECK at least 40%.
 *  - With --bert-base (ctest recompute_bert_base, label slow, about a minute): ts_bert_build's
 *    BertForSequenceClassification at that size, one training step each way: every gradient
 *    bitwise identical, and at least 40% less activation memory.
 *  - Misuse: nested begin, end without begin, ts_backward with a segment open, begin after
 *    ts_backward: TS_ERR_ARG with a message that says so.
 */
#include "tessera_apps.h"
#include "encoder.h"
#include "test_util.h"

/* ------------------------------------------------------------------ training, on vs off */

enum { MAXP = 256 };

/* What to build and train: a config (recompute is set per run), a head, the batch. */
typedef struct spec {
    const char *what;
    ts_bert_config cfg;
    ts_bert_head head; /* TS_BERT_PRETRAINING or TS_BERT_SEQ_CLASSIFICATION */
    int B, T;
    int no_fusion;
    int adam_steps;    /* 0: gradients only; n: also n AdamW steps, then compare the parameters */
    int gelu;          /* 1: "on" is ts_graph_recompute_gelu instead of a segment per layer */
    int casts;         /* 1: "on" is ts_graph_recompute_casts (with gelu: both) */
} spec;

typedef struct result {
    ts_tensor *loss;
    int n;                    /* parameters */
    char names[MAXP][128];
    ts_tensor *grad[MAXP];    /* their gradients after one step */
    ts_tensor *after[MAXP];   /* their values after the AdamW steps (when asked) */
    ts_memory mem;
    double compile_s, step_s; /* ts_compile, the first ts_program_run */
} result;

static void result_free(result *r) {
    if (!r) return;
    ts_tensor_free(r->loss);
    for (int i = 0; i < r->n; i++) {
        ts_tensor_free(r->grad[i]);
        ts_tensor_free(r->after[i]);
    }
    free(r);
}

/* Fixed inputs: row b has its last b positions padded; every third real position is an MLM
 * label; sequence labels alternate. The label inputs go in by the head's shape. */
static void feed_inputs(ts_program *p, const spec *s) {
    int B = s->B, T = s->T, V = s->cfg.vocab_size;
    tu_rng r = tu_rng_seed(11);
    ts_tensor *ids = ts_tensor_new(TS_I32, DIMS(B, T)), *tt = ts_tensor_new(TS_I32, DIMS(B, T)),
              *mask = ts_tensor_new(TS_I32, DIMS(B, T)), *lab = ts_tensor_new(TS_I32, DIMS(B, T)),
              *per_row = ts_tensor_new(TS_I32, DIMS(B));
    int32_t *I = ts_tensor_data(ids), *TT = ts_tensor_data(tt), *M = ts_tensor_data(mask), *L = ts_tensor_data(lab);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            int real = t < T - b, i = b * T + t;
            I[i] = real ? (int32_t)tu_randint(&r, V) : 0;
            TT[i] = real && t >= T / 2;
            M[i] = real;
            L[i] = real && t % 3 == 1 ? (int32_t)tu_randint(&r, V) : TS_IGNORE_INDEX;
        }
        ((int32_t *)ts_tensor_data(per_row))[b] = b % 2;
    }
    CHECK_OK(ts_program_feed(p, "input_ids", ids));
    CHECK_OK(ts_program_feed(p, "token_type_ids", tt));
    CHECK_OK(ts_program_feed(p, "attention_mask", mask));
    if (s->head == TS_BERT_PRETRAINING) {
        CHECK_OK(ts_program_feed(p, "labels", lab));
        CHECK_OK(ts_program_feed(p, "next_sentence_label", per_row));
    } else {
        CHECK_OK(ts_program_feed(p, "labels", per_row));
    }
    ts_tensor *all[] = {ids, tt, mask, lab, per_row};
    for (int i = 0; i < 5; i++) ts_tensor_free(all[i]);
}

/* Build (recompute on or off), train one step (step 5, so dropout draws a mask) and fetch the
 * loss and every parameter's gradient; with adam_steps, take that many AdamW steps in all and
 * read the parameters. NULL on failure. */
static result *train(const spec *s, int recompute) {
    result *r = calloc(1, sizeof *r);
    ts_bert_config c = s->cfg;
    c.recompute = recompute && !s->gelu && !s->casts;
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 7);
    ts_bert_outputs o;
    if (CHECK_OK(ts_bert_build(g, &c, s->head, s->B, s->T, &o)) ||
        (recompute && s->gelu && CHECK_OK(ts_graph_recompute_gelu(g))) ||
        (recompute && s->casts && CHECK_OK(ts_graph_recompute_casts(g))) || CHECK_OK(ts_backward(g, o.loss)) ||
        (s->adam_steps && CHECK_OK(ts_adamw(g, ts_scalar(g, 1e-2f), 0.9f, 0.999f, 1e-8f, 0.01f)))) {
        ts_graph_free(g);
        result_free(r);
        return NULL;
    }
    /* fetch "<name>@GRAD" of every parameter BERT has (the count is checked against the
     * program's below, so none is left out) */
    const char *fetch[MAXP + 1] = {"loss"};
    char gname[MAXP][160];
    static const char *const known[] = {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
                                 "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
                                 "bert.embeddings.LayerNorm.bias", "bert.pooler.dense.weight", "bert.pooler.dense.bias"};
    static const char *const layer_params[] = {
        "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
        "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"};
    static const char *const head_pt[] = {"cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                                          "cls.predictions.transform.LayerNorm.weight",
                                          "cls.predictions.transform.LayerNorm.bias", "cls.predictions.bias",
                                          "cls.seq_relationship.weight", "cls.seq_relationship.bias"};
    static const char *const head_cls[] = {"classifier.weight", "classifier.bias"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) snprintf(r->names[r->n++], 128, "%s", known[i]);
    for (int l = 0; l < c.num_hidden_layers; l++)
        for (int k = 0; k < 8; k++)
            for (int wb = 0; wb < 2 && r->n < MAXP; wb++)
                snprintf(r->names[r->n++], 128, "bert.encoder.layer.%d.%s.%s", l, layer_params[k], wb ? "bias" : "weight");
    int pt = s->head == TS_BERT_PRETRAINING;
    for (int i = 0; i < (pt ? 7 : 2) && r->n < MAXP; i++) snprintf(r->names[r->n++], 128, "%s", pt ? head_pt[i] : head_cls[i]);
    for (int i = 0; i < r->n; i++) {
        snprintf(gname[i], sizeof gname[0], "%s@GRAD", r->names[i]);
        CHECK(ts_lookup(g, gname[i]) != TS_NONE, "no gradient named %s", gname[i]);
        fetch[1 + i] = gname[i];
    }
    double t0 = tu_now();
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1 + r->n, .fetches = fetch, .no_fusion = s->no_fusion});
    r->compile_s = tu_now() - t0;
    CHECK(p != NULL, "compile (recompute %d): %s", recompute, ts_last_error());
    ts_graph_free(g);
    if (!p) {
        result_free(r);
        return NULL;
    }
    CHECK(ts_program_num_params(p) == r->n, "%d parameters, %d named here", ts_program_num_params(p), r->n);
    r->mem.struct_size = sizeof r->mem;
    CHECK_OK(ts_program_memory(p, &r->mem));
    feed_inputs(p, s);
    ts_program_set_step(p, 5);
    t0 = tu_now();
    CHECK_OK(ts_program_run(p));
    r->step_s = tu_now() - t0;
    CHECK_OK(ts_program_fetch(p, "loss", &r->loss));
    for (int i = 0; i < r->n; i++) CHECK_OK(ts_program_fetch(p, fetch[1 + i], &r->grad[i]));
    for (int k = 1; k < s->adam_steps; k++) CHECK_OK(ts_program_run(p));
    for (int i = 0; s->adam_steps && i < r->n; i++) CHECK_OK(ts_program_get_param(p, r->names[i], &r->after[i]));
    ts_program_free(p);
    return r;
}

/* Train with recompute off and on; CHECK the loss, every gradient (and the parameters after the
 * AdamW steps) bitwise equal and the activation arena smaller; print the figures. */
static void compare(const spec *s, double min_cut) {
    result *off = train(s, 0), *on = off ? train(s, 1) : NULL;
    if (off && on) {
        const char *what = s->what;
        CHECK(off->n == on->n, "%s: %d parameters off, %d on", what, off->n, on->n);
        CHECK(tu_bitwise_equal(off->loss, on->loss), "%s: loss %.9g off, %.9g on", what,
              off->loss ? tu_f32(off->loss)[0] : -1.0, on->loss ? tu_f32(on->loss)[0] : -1.0);
        int same = 0, nonzero = 0;
        for (int i = 0; i < off->n && i < on->n; i++) {
            ts_tensor *a = off->grad[i], *b = on->grad[i];
            int eq = tu_bitwise_equal(a, b);
            same += eq;
            CHECK(eq, "%s: gradient of %s differs with recompute (max abs diff %.3e)", what, off->names[i],
                  a && b && tu_same_shape(a, b) ? tu_max_abs_diff_f(tu_f32(a), tu_f32(b), ts_tensor_numel(a)) : -1.0);
            int nz = 0;
            for (int64_t k = 0; a && k < ts_tensor_numel(a); k++) nz |= tu_f32(a)[k] != 0.f;
            nonzero += nz;
            if (s->adam_steps)
                CHECK(tu_bitwise_equal(off->after[i], on->after[i]), "%s: %s after %d AdamW steps differs", what,
                      off->names[i], s->adam_steps);
        }
        CHECK(nonzero == off->n, "%s: only %d of %d gradients are non-zero: a weak test", what, nonzero, off->n);
        double cut = 1.0 - (double)on->mem.activations / (double)off->mem.activations;
        printf("  %s: loss %.7f, %d / %d gradients bitwise identical%s; activations %.3f MiB -> %.3f MiB, "
               "%.1f%% less; nodes %d -> %d; compile %.2f s -> %.2f s, first (cold) step %.2f s -> %.2f s\n",
               what, off->loss ? tu_f32(off->loss)[0] : -1.0, same, off->n,
               s->adam_steps ? ", and the parameters after AdamW" : "", off->mem.activations / 1048576.0,
               on->mem.activations / 1048576.0, 100 * cut, off->mem.nodes, on->mem.nodes, off->compile_s, on->compile_s,
               off->step_s, on->step_s);
        CHECK(cut > min_cut, "%s: recompute saves %.1f%% of the activations (%zu -> %zu bytes), expected more than %.0f%%",
              what, 100 * cut, off->mem.activations, on->mem.activations, 100 * min_cut);
        CHECK(on->mem.params == off->mem.params && on->mem.grads == off->mem.grads, "%s: params / grads changed", what);
    }
    result_free(off);
    result_free(on);
}

/* 2 layers, C 32, 2 heads, FFN 64, vocabulary 60; dropout 0.1 (hidden and attention). */
static spec small_spec(const char *what) {
    spec s = {what, {0}, TS_BERT_PRETRAINING, 3, 8, 0, 0, 0, 0};
    ts_bert_config_default(&s.cfg);
    s.cfg.vocab_size = 60;
    s.cfg.hidden_size = 32;
    s.cfg.num_hidden_layers = 2;
    s.cfg.num_attention_heads = 2;
    s.cfg.intermediate_size = 64;
    s.cfg.max_position_embeddings = 16;
    s.cfg.hidden_dropout_prob = 0.1f;
    s.cfg.attention_probs_dropout_prob = 0.1f;
    return s;
}

static void test_small_bert(void) {
    spec s = small_spec("small BERT, dropout 0.1");
    compare(&s, 0.0);
}
static void test_small_bert_nofusion(void) {
    spec s = small_spec("small BERT, no fusion");
    s.no_fusion = 1;
    compare(&s, 0.0);
}
static void test_small_bert_bf16(void) {
    spec s = small_spec("small BERT, bf16 compute");
    s.cfg.compute_dtype = TS_BF16;
    compare(&s, 0.0);
}
/* GELU outputs recomputed in the backward (ts_graph_recompute_gelu): the same bits, with the FFN's
 * [B, T, F] activations (and bf16's cast of them) no longer kept; f32, bf16 and 2 AdamW steps. */
static void test_small_bert_gelu(void) {
    spec s = small_spec("small BERT, GELU recomputed");
    s.gelu = 1;
    compare(&s, 0.0);
    spec b = small_spec("small BERT, GELU recomputed, bf16");
    b.gelu = 1;
    b.cfg.compute_dtype = TS_BF16;
    b.adam_steps = 2;
    compare(&b, 0.0);
}
/* The parameters' bf16 casts made again in the backward (ts_graph_recompute_casts): the same bits
 * and less activation memory (the forward's 16-bit weight copies die after their forward use);
 * alone and with the GELU outputs recomputed, each with 2 AdamW steps. */
static void test_small_bert_casts(void) {
    spec s = small_spec("small BERT, bf16, casts recomputed");
    s.casts = 1;
    s.cfg.compute_dtype = TS_BF16;
    s.adam_steps = 2;
    compare(&s, 0.0);
    spec b = small_spec("small BERT, bf16, casts and GELU recomputed");
    b.casts = b.gelu = 1;
    b.cfg.compute_dtype = TS_BF16;
    b.adam_steps = 2;
    compare(&b, 0.0);
}
static void test_small_bert_adamw(void) {
    spec s = small_spec("small BERT, 2 AdamW steps");
    s.adam_steps = 2;
    compare(&s, 0.0);
}

/* An inference program compiled from the training graph drops the backward, clones included:
 * recompute on or off, the same nodes, the same arena and the same logits. */
static void test_inference_unchanged(void) {
    spec s = small_spec("small BERT, inference");
    ts_memory m[2] = {{.struct_size = sizeof m[0]}, {.struct_size = sizeof m[1]}};
    ts_tensor *logits[2] = {0};
    for (int rc = 0; rc < 2; rc++) {
        ts_bert_config c = s.cfg;
        c.recompute = rc;
        ts_graph *g = ts_graph_new();
        ts_graph_set_seed(g, 7);
        ts_bert_outputs o;
        ts_program *p = NULL;
        if (!CHECK_OK(ts_bert_build(g, &c, s.head, s.B, s.T, &o)) && !CHECK_OK(ts_backward(g, o.loss))) {
            p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("prediction_logits"), .inference = 1});
            CHECK(p != NULL, "compile (inference, recompute %d): %s", rc, ts_last_error());
        }
        ts_graph_free(g);
        if (!p) return;
        CHECK_OK(ts_program_memory(p, &m[rc]));
        feed_inputs(p, &s);
        CHECK_OK(ts_program_run(p));
        CHECK_OK(ts_program_fetch(p, "prediction_logits", &logits[rc]));
        ts_program_free(p);
    }
    printf("  inference: nodes %d / %d, activations %zu / %zu bytes (recompute off / on)\n", m[0].nodes, m[1].nodes,
           m[0].activations, m[1].activations);
    CHECK(m[0].nodes == m[1].nodes && m[0].activations == m[1].activations,
          "inference programs differ: nodes %d vs %d, activations %zu vs %zu", m[0].nodes, m[1].nodes,
          m[0].activations, m[1].activations);
    CHECK(tu_bitwise_equal(logits[0], logits[1]), "inference logits differ with recompute");
    ts_tensor_free(logits[0]);
    ts_tensor_free(logits[1]);
}

/* BERT-Base (bert-base-uncased's config, dropout 0.1) for sequence classification, batch 8 x
 * 128, f32: one training step each way (slow: --bert-base). */
static void test_bert_base_train(void) {
    spec s = {"BERT-Base 8x128 BertForSequenceClassification, one step", {0}, TS_BERT_SEQ_CLASSIFICATION, 8, 128,
              0, 0, 0, 0};
    ts_bert_config_default(&s.cfg);
    compare(&s, 0.40);
}

/* ------------------------------------------------------------------ BERT-Base encoder, memory */

/* test_memplan.c's BERT-Base encoder stack (input x [8, 128, 768], no embeddings, loss = mean
 * of the output, f32), each layer a segment when recompute; compiled, not run. */
static int encoder_stack_memory(int recompute, ts_memory *m) {
    enc_cfg c = {8, 128, 768, 12, 3072, 0.1f, 1e-12f, ts_init_zeros(), 0};
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(8, 128, 768));
    ts_value mask = enc_additive_mask(g, ts_input(g, "attention_mask", TS_F32, DIMS(8, 128)), c.B, c.T);
    char prefix[64];
    for (int l = 0; l < 12; l++) {
        snprintf(prefix, sizeof prefix, "encoder.layer.%d.", l);
        if (recompute) CHECK_OK(ts_graph_recompute_begin(g));
        x = enc_layer(g, &c, prefix, x, mask);
        if (recompute) CHECK_OK(ts_graph_recompute_end(g));
    }
    ts_value loss = ts_name(g, ts_reduce_mean(g, x, 0, NULL, 0), "loss");
    ts_program *p = NULL;
    if (!CHECK_OK(ts_backward(g, loss))) {
        p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"loss"}});
        CHECK(p != NULL, "compile: %s", ts_last_error());
    }
    if (p) CHECK_OK(ts_program_memory(p, m));
    ts_program_free(p);
    ts_graph_free(g);
    return p != NULL;
}

static void test_encoder_stack_memory(void) {
    ts_memory off = {.struct_size = sizeof off}, on = {.struct_size = sizeof on};
    double t0 = tu_now();
    if (!encoder_stack_memory(0, &off) || !encoder_stack_memory(1, &on)) return;
    double cut = 1.0 - (double)on.activations / (double)off.activations;
    printf("  BERT-Base 8x128 encoder stack, training: activations %.1f MiB without recompute, %.1f MiB with: "
           "%.1f%% less (nodes %d -> %d; both compiles %.1f s)\n",
           off.activations / 1048576.0, on.activations / 1048576.0, 100 * cut, off.nodes, on.nodes, tu_now() - t0);
    CHECK(cut >= 0.40, "recompute saves %.1f%% of the activations, the target is 40%%", 100 * cut);
    CHECK(on.params == off.params && on.grads == off.grads, "params / grads changed");
}

/* ------------------------------------------------------------------ misuse */

static void test_misuse(void) {
    ts_graph *g = ts_graph_new();
    CHECK_OK(ts_graph_recompute_begin(g));
    CHECK_STATUS(ts_graph_recompute_begin(g), TS_ERR_ARG);
    CHECK_ERRMSG("ts_graph_recompute_begin", "nest");
    CHECK(ts_graph_status(g) == TS_ERR_ARG, "the error is not recorded in the graph");
    ts_graph_free(g);

    g = ts_graph_new();
    CHECK_STATUS(ts_graph_recompute_end(g), TS_ERR_ARG);
    CHECK_ERRMSG("ts_graph_recompute_end", "no recompute segment");
    ts_graph_free(g);

    g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, DIMS(4), ts_init_ones());
    CHECK_OK(ts_graph_recompute_begin(g));
    ts_value loss = ts_reduce_sum(g, ts_tanh(g, w), 0, NULL, 0);
    CHECK_STATUS(ts_backward(g, loss), TS_ERR_ARG);
    CHECK_ERRMSG("ts_backward", "still open", "ts_graph_recompute_end");
    ts_graph_free(g);

    g = ts_graph_new();
    w = ts_param(g, "w", TS_F32, DIMS(4), ts_init_ones());
    CHECK_OK(ts_graph_recompute_begin(g));
    loss = ts_reduce_sum(g, ts_tanh(g, w), 0, NULL, 0);
    CHECK_OK(ts_graph_recompute_end(g));
    CHECK_OK(ts_backward(g, loss));
    CHECK_STATUS(ts_graph_recompute_begin(g), TS_ERR_ARG);
    CHECK_ERRMSG("ts_graph_recompute_begin", "backward");
    ts_graph_free(g);

    g = ts_graph_new();
    w = ts_param(g, "w", TS_F32, DIMS(4), ts_init_ones());
    CHECK_OK(ts_backward(g, ts_reduce_sum(g, ts_tanh(g, w), 0, NULL, 0)));
    CHECK_STATUS(ts_graph_recompute_casts(g), TS_ERR_ARG);
    CHECK_ERRMSG("ts_graph_recompute_casts", "backward");
    ts_graph_free(g);

    CHECK_STATUS(ts_graph_recompute_casts(NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_graph_recompute_begin(NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_graph_recompute_end(NULL), TS_ERR_ARG);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "--bert-base")) {
        RUN(test_bert_base_train);
        return tu_finish("test_recompute --bert-base");
    }
    RUN(test_misuse);
    RUN(test_small_bert);
    RUN(test_small_bert_nofusion);
    RUN(test_small_bert_bf16);
    RUN(test_small_bert_adamw);
    RUN(test_small_bert_gelu);
    RUN(test_small_bert_casts);
    RUN(test_inference_unchanged);
    RUN(test_encoder_stack_memory);
    return tu_finish("test_recompute");
}
