/*
 * test_plan_memory.c — the compiler's memory plan as the planner reads it (issue 39): activations
 * are what grows with the batch. Over BERT-Base, BERT-Large's shape (4 layers, small batches) and
 * a 2-layer tiny BERT, pretraining and fine-tuning, planned only (ts_compile_opts.plan_only):
 * micro-batch 1 never plans more activation memory than micro-batch 2 (a weight's gradient made as
 * [1, K, N] at batch 1 was an activation kept to the end of the step), and the embeddings' stage's
 * activations grow with the batch with a small intercept (the [V, C] embedding gradient and the
 * MLM decoder's share of it were activations that no batch changes: now gradients).
 */
#include "tessera_apps.h"
#include "test_util.h"

/* The activations of every stage of cfg's training program at `batch` (pipelined over spec on
 * devices "cpu:0,..." when spec is not NULL), into act[]; the embeddings' stage first. Returns the
 * number of stages, 0 on failure. */
static int plan_activations(const ts_bert_config *base, ts_bert_head head, int batch, const char *devices,
                            const char *spec, double *act) {
    ts_bert_config cfg = *base;
    ts_stage_plan pp;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &cfg, .head = head, .batch = batch, .seq = 64,
                            .optimizer = TS_OPTIM_ADAMW, .weight_decay = 0.01f, .plan_only = 1};
    if (spec) {
        if (ts_stage_plan_parse(devices, spec, cfg.num_hidden_layers, &pp) != TS_OK) return 0;
        ts_stage_plan_apply(&pp, &cfg);
        o.stage_devices = pp.stage_name, o.nstage_devices = pp.nstages, o.accumulation = 4;
    }
    ts_program *p = NULL;
    CHECK_OK(ts_bert_train_programs(&o, &p, NULL));
    if (!p) return 0;
    int S = ts_program_num_stages(p);
    for (int s = 0; s < S; s++) {
        ts_stage_info si = {.struct_size = sizeof si};
        CHECK_OK(ts_program_stage_info(p, s, &si));
        act[s] = (double)si.mem.activations;
    }
    ts_program_free(p);
    return S;
}

/* A model by name: BERT-Base, BERT-Large's widths over 4 layers, a 2-layer tiny BERT. */
static ts_bert_config model(const char *name) {
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.max_predictions_per_seq = 10;
    if (!strcmp(name, "large")) c.num_hidden_layers = 4, c.hidden_size = 1024, c.num_attention_heads = 16,
                                c.intermediate_size = 4096, c.vocab_size = 30400;
    if (!strcmp(name, "tiny")) c.num_hidden_layers = 2, c.hidden_size = 128, c.num_attention_heads = 2,
                               c.intermediate_size = 512;
    return c;
}

/* Micro-batch 1 plans no more activation memory than micro-batch 2, on every stage. */
static void check_monotone(const char *name, ts_bert_head head, const char *devices, int piped) {
    ts_bert_config c = model(name);
    char spec[64];
    snprintf(spec, sizeof spec, "0:emb,0,heads 1:1-%d", c.num_hidden_layers - 1);
    double a1[TS_MAX_STAGES] = {0}, a2[TS_MAX_STAGES] = {0};
    int n1 = plan_activations(&c, head, 1, devices, piped ? spec : NULL, a1),
        n2 = plan_activations(&c, head, 2, devices, piped ? spec : NULL, a2);
    CHECK(n1 > 0 && n1 == n2, "%s: %d and %d stages", name, n1, n2);
    for (int s = 0; s < n1 && s < n2; s++) {
        printf("  %s %s stage %d: activations %.1f MB at batch 1, %.1f MB at batch 2\n", name,
               head == TS_BERT_PRETRAINING ? "pretrain" : "finetune", s, a1[s] / 1e6, a2[s] / 1e6);
        CHECK(a1[s] <= a2[s], "%s stage %d: batch 1 plans %.1f MB of activations, batch 2 %.1f MB", name, s,
              a1[s] / 1e6, a2[s] / 1e6);
    }
}

static void test_batch_one(void) {
    const char *names[] = {"base", "large", "tiny"};
    for (int k = 0; k < 3; k++) {
        check_monotone(names[k], TS_BERT_PRETRAINING, NULL, 0);
        check_monotone(names[k], TS_BERT_SEQ_CLASSIFICATION, NULL, 0);
        check_monotone(names[k], TS_BERT_PRETRAINING, "cpu:0,cpu:1", 1);
    }
}

/* The embeddings' stage (the embeddings and one layer, the heads elsewhere on its device):
 * activations at batch 2 and 4 grow by about the same as from 4 to 8, and the line through them
 * meets batch 0 well below the [V, C] f32 vocabulary buffer. */
static void test_embedding_stage(void) {
    const char *names[] = {"base", "large"};
    for (int k = 0; k < 2; k++) {
        ts_bert_config c = model(names[k]);
        double a[3][TS_MAX_STAGES] = {{0}};
        int b[3] = {2, 4, 8};
        char spec[64];
        snprintf(spec, sizeof spec, "0:emb,0,heads 1:1-%d", c.num_hidden_layers - 1);
        for (int i = 0; i < 3; i++)
            CHECK(plan_activations(&c, TS_BERT_PRETRAINING, b[i], "cpu:0,cpu:1", spec, a[i]) == 3, "3 stages");
        double vocab = (double)c.vocab_size * c.hidden_size * 4, d1 = a[1][0] - a[0][0], d2 = a[2][0] - a[1][0];
        double intercept = a[0][0] - d1; /* the line through batch 2 and 4 at batch 0 */
        printf("  %s embeddings' stage: %.1f, %.1f, %.1f MB at batch 2, 4, 8; intercept %.1f MB; vocab buffer "
               "%.1f MB\n", names[k], a[0][0] / 1e6, a[1][0] / 1e6, a[2][0] / 1e6, intercept / 1e6, vocab / 1e6);
        CHECK(d1 > 0 && d2 > 1.5 * d1 && d2 < 2.5 * d1, "%s: the activations do not scale with the batch: +%.1f MB "
              "from 2 to 4, +%.1f MB from 4 to 8", names[k], d1 / 1e6, d2 / 1e6);
        CHECK(intercept < 0.25 * vocab, "%s: %.1f MB of activations at batch 0 (the vocabulary buffer is %.1f MB)",
              names[k], intercept / 1e6, vocab / 1e6);
    }
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_batch_one);
    RUN(test_embedding_stage);
    return tu_finish("test_plan_memory");
}
