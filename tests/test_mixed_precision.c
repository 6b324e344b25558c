/*
 * test_mixed_precision.c — BERT trained with bf16 and with f16 matmuls (ts_bert_config.
 * compute_dtype; f32 master weights and optimizer state) learns as well as in f32: a small
 * BertForMaskedLM (2 layers, hidden 64) trains STEPS AdamW steps on the same synthetic batches in
 * each dtype — f16 with dynamic loss scaling (ts_backward_scaled, default options) — and the
 * mean loss of the last 10 steps must be within 2% of f32's. The task is learnable but not
 * trivial: the label at each labelled position is the token before it (attention has to find
 * it). Fixed seeds; no dropout. Prints the figures docs/benchmarks.md quotes.
 */
#include "tessera_apps.h"
#include "test_util.h"

enum { V = 96, B = 8, T = 32, STEPS = 80, TAIL = 10 };

/* Batch `step`: random tokens 5 .. V-1 after [CLS] (2); every third position from 1 on is
 * labelled with the token before it, the rest ignored. */
static void make_batch(int step, int32_t *ids, int32_t *labels) {
    tu_rng r = tu_rng_seed(77 + (uint64_t)step);
    for (int i = 0; i < B; i++) {
        for (int t = 0; t < T; t++) ids[i * T + t] = t == 0 ? 2 : 5 + (int32_t)tu_randint(&r, V - 5);
        for (int t = 0; t < T; t++) labels[i * T + t] = t >= 1 && t % 3 == 1 ? ids[i * T + t - 1] : -100;
    }
}

/* Train STEPS steps with matmuls in dt; returns the mean loss of the last TAIL steps, the last
 * loss in *last, the skipped steps in *skipped (f16) and the seconds taken in *secs. */
static double train(ts_dtype dt, double *last, double *skipped, double *secs) {
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = V;
    cfg.hidden_size = 64;
    cfg.num_hidden_layers = 2;
    cfg.num_attention_heads = 4;
    cfg.intermediate_size = 128;
    cfg.max_position_embeddings = T;
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.f;
    cfg.compute_dtype = dt;
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 11);
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &cfg, TS_BERT_MASKED_LM, B, T, &o));
    CHECK_OK(dt == TS_F16 ? ts_backward_scaled(g, o.loss, NULL) : ts_backward(g, o.loss));
    ts_optim_opts opt = ts_optim_defaults(TS_OPTIM_ADAMW);
    opt.max_grad_norm = 1.f;
    ts_value lr = ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = TS_LR_LINEAR, .lr = 2e-3f,
                                                          .warmup_steps = 8, .total_steps = STEPS});
    CHECK_OK(ts_optimizer(g, lr, &opt));
    int nf = dt == TS_F16 ? 2 : 1;
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = nf,
                                                     .fetches = (const char *[]){"loss", "optimizer@SKIPPED_STEPS"}});
    CHECK(p != NULL, "compile (%s): %s", ts_dtype_name(dt), ts_last_error());
    ts_graph_free(g);
    if (!p) return NAN;
    ts_tensor *ids = ts_tensor_new(TS_I32, DIMS(B, T)), *labels = ts_tensor_new(TS_I32, DIMS(B, T));
    ts_tensor *types = ts_tensor_new(TS_I32, DIMS(B, T)), *mask = ts_tensor_new(TS_I32, DIMS(B, T));
    for (int i = 0; i < B * T; i++) ((int32_t *)ts_tensor_data(mask))[i] = 1;
    CHECK_OK(ts_program_feed(p, "token_type_ids", types));
    CHECK_OK(ts_program_feed(p, "attention_mask", mask));
    double tail = 0, t0 = tu_now();
    for (int s = 0; s < STEPS; s++) {
        make_batch(s, ts_tensor_data(ids), ts_tensor_data(labels));
        CHECK_OK(ts_program_feed(p, "input_ids", ids));
        CHECK_OK(ts_program_feed(p, "labels", labels));
        if (CHECK_OK(ts_program_run(p))) break;
        ts_tensor *l = TU_FETCH(p, "loss");
        double v = l ? tu_f32(l)[0] : NAN;
        ts_tensor_free(l);
        if (s >= STEPS - TAIL) tail += v / TAIL;
        *last = v;
    }
    *secs = tu_now() - t0;
    *skipped = 0;
    if (dt == TS_F16) {
        ts_tensor *k = TU_FETCH(p, "optimizer@SKIPPED_STEPS");
        *skipped = k ? tu_f32(k)[0] : NAN;
        ts_tensor_free(k);
    }
    ts_tensor_free(ids);
    ts_tensor_free(labels);
    ts_tensor_free(types);
    ts_tensor_free(mask);
    ts_program_free(p);
    return tail;
}

static void test_loss_matches_f32(void) {
    double last[3], skipped[3], secs[3], tail[3];
    const ts_dtype dts[3] = {TS_F32, TS_BF16, TS_F16};
    for (int i = 0; i < 3; i++) tail[i] = train(dts[i], &last[i], &skipped[i], &secs[i]);
    printf("  BERT-MLM 2 x 64, batch %d x %d, %d AdamW steps: initial loss ~ln(%d) = %.3f\n", B, T, STEPS, V - 5,
           log(V - 5.0));
    for (int i = 0; i < 3; i++) {
        double rel = (tail[i] - tail[0]) / tail[0];
        printf("  %-4s mean loss of the last %d steps %.5f (%+.3f%% vs f32), last %.5f, %.1f s",
               ts_dtype_name(dts[i]), TAIL, tail[i], 100 * rel, last[i], secs[i]);
        if (dts[i] == TS_F16) printf(", %g steps skipped by loss scaling", skipped[i]);
        printf("\n");
        CHECK(fabs(rel) < 0.02, "%s: loss %.4f is %.2f%% from f32's %.4f", ts_dtype_name(dts[i]), tail[i],
              100 * rel, tail[0]);
    }
    CHECK(tail[0] < 0.8 * log(V - 5.0), "f32 did not learn: loss %.4f", tail[0]);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_loss_matches_f32);
    return tu_finish("test_mixed_precision");
}
