/*
 * test_bert_parity.c — BERT (apps/models/bert.c) against a PyTorch reference of Hugging Face's
 * BertForPreTraining (tools/make_bert_fixture.py, float64; fixtures in tests/fixtures/bert):
 *  - one training step at the fixture's weights (loaded by Hugging Face name, strictly, with the
 *    tied cls.predictions.decoder.* copies in the file ignored): last_hidden_state,
 *    pooler_output, prediction_logits, seq_relationship_logits, loss, mlm_loss, nsp_loss and
 *    every parameter's gradient; then every parameter after 3 AdamW steps on the same batch;
 *  - programs compiled for inference with the config's dropout (identity there), an f32
 *    attention mask, and the tanh GELU ("gelu_new") forward;
 *  - ts_bert_config_load: a full Hugging Face config, and errors that name the file and field;
 *  - the other heads (BertModel, masked LM, sequence classification and regression, question
 *    answering): inputs, output shapes, parameter sets, one training step each;
 *  - ts_bert_build's argument errors, and a save that omits the tied decoder weight.
 *
 * Error measure, per tensor: max |tessera - reference| / max |reference| (the reference is
 * float64 rounded to float32), at most 1e-4. Two kinds of tensor are measured otherwise:
 *  - the gradient of each attention.self.key.bias is zero in exact arithmetic (softmax does not
 *    change when one q.b is added to every score of a row), so both sides hold rounding noise:
 *    it must be below 1e-6 of the largest gradient of its layer's query bias;
 *  - after AdamW steps, the error is measured against the update, max |a - b| / (steps * lr), at
 *    most 1e-2 (one hundredth of a step), except key biases, whose noise gradients Adam turns
 *    into steps of up to lr · |g| / (|g| + eps): they may differ by up to steps * lr.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <sys/stat.h>

#ifndef TS_BERT_FIXTURE_DIR
#ifdef TS_SOURCE_DIR
#define TS_BERT_FIXTURE_DIR TS_SOURCE_DIR "/tests/fixtures/bert"
#else
#define TS_BERT_FIXTURE_DIR "tests/fixtures/bert"
#endif
#endif

#define FIX_B 3
#define FIX_T 11
#define ADAM_LR 1e-3f
#define ADAM_STEPS 3
#define TOL 1e-4

static const char *fixture(const char *name) {
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", TS_BERT_FIXTURE_DIR, name);
    return buf[k];
}

/* ------------------------------------------------------------------ comparisons */

static double max_abs(const ts_tensor *t) {
    const float *d = ts_tensor_data((ts_tensor *)t);
    double m = 0;
    for (int64_t i = 0; i < ts_tensor_numel(t); i++) m = fmax(m, fabs(d[i]));
    return m;
}

/* max |a - b|; +inf when shapes differ. */
static double max_diff(ts_tensor *a, ts_tensor *b) {
    if (!a || !b || !tu_same_shape(a, b)) return INFINITY;
    return tu_max_abs_diff_f(tu_f32(a), tu_f32(b), ts_tensor_numel(a));
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Fetch `name` from p and check max|a-b| / max|b| <= TOL against expected[name]; prints it. */
static double compare_fetch(ts_program *p, ts_safetensors *exp, const char *name, const char *exp_name) {
    ts_tensor *a = TU_FETCH(p, name), *b = NULL;
    CHECK_OK(ts_safetensors_get(exp, exp_name ? exp_name : name, &b));
    double err = max_diff(a, b) / fmax(b ? max_abs(b) : 1, 1e-30);
    printf("    %-62s rel err %.2e\n", name, err);
    CHECK(err <= TOL, "%s: relative error %.3e > %.0e", name, err, TOL);
    ts_tensor_free(a);
    ts_tensor_free(b);
    return err;
}

/* ------------------------------------------------------------------ fixture programs */

static ts_tensor *get_tensor(ts_safetensors *st, const char *name) {
    ts_tensor *t = NULL;
    CHECK_OK(ts_safetensors_get(st, name, &t));
    return t;
}

/* Feed the fixture's inputs (those p has) but `skip` (may be NULL); the mask as f32 when mask_f32. */
static void feed_inputs_but(ts_program *p, int mask_f32, const char *skip) {
    ts_safetensors *in = ts_safetensors_open(fixture("inputs.safetensors"));
    CHECK(in != NULL, "open inputs: %s", ts_last_error());
    if (!in) return;
    static const char *const names[] = {"input_ids", "token_type_ids", "attention_mask", "labels",
                                        "next_sentence_label"};
    for (int i = 0; i < 5; i++) {
        if (skip && !strcmp(names[i], skip)) continue;
        ts_tensor *t = get_tensor(in, names[i]);
        if (!t) continue;
        if (mask_f32 && i == 2) {
            ts_tensor *f = ts_tensor_new(TS_F32, ts_tensor_ndim(t), ts_tensor_shape(t));
            for (int64_t j = 0; j < ts_tensor_numel(t); j++) tu_f32(f)[j] = (float)((int32_t *)ts_tensor_data(t))[j];
            ts_tensor_free(t);
            t = f;
        }
        CHECK_OK(ts_program_feed(p, names[i], t));
        ts_tensor_free(t);
    }
    ts_safetensors_close(in);
}

static void feed_inputs(ts_program *p, int mask_f32) { feed_inputs_but(p, mask_f32, NULL); }

static int load_fixture_config(ts_bert_config *cfg) {
    cfg->struct_size = sizeof *cfg; /* an output struct: the size the library may write */
    ts_status s = CHECK_OK(ts_bert_config_load(fixture("config.json"), cfg));
    return s == TS_OK;
}

static const char *const OUTPUTS[] = {"last_hidden_state", "pooler_output", "prediction_logits",
                                      "seq_relationship_logits", "loss", "mlm_loss", "nsp_loss"};
#define NOUT 7

/* ------------------------------------------------------------------ parity: training */

static void test_parity_training(void) {
    ts_bert_config cfg;
    if (!load_fixture_config(&cfg)) return;
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.f;
    ts_safetensors *exp = ts_safetensors_open(fixture("expected.safetensors"));
    CHECK(exp != NULL, "open expected: %s", ts_last_error());
    if (!exp) return;

    ts_graph *g = ts_graph_new();
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &cfg, TS_BERT_PRETRAINING, FIX_B, FIX_T, &o));
    CHECK_OK(ts_backward(g, o.loss));
    CHECK_OK(ts_adamw(g, ts_scalar(g, ADAM_LR), 0.9f, 0.999f, 1e-8f, 0.01f));

    /* fetches: the outputs and every "<param>@GRAD" the reference has */
    int ne = ts_safetensors_count(exp), nf = 0, ngrad = 0;
    const char **fetch = calloc((size_t)ne + NOUT, sizeof *fetch);
    for (int i = 0; i < NOUT; i++) fetch[nf++] = OUTPUTS[i];
    for (int i = 0; i < ne; i++)
        if (ends_with(ts_safetensors_name(exp, i), "@GRAD")) fetch[nf++] = ts_safetensors_name(exp, i), ngrad++;
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = nf, .fetches = fetch});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p) goto out;

    /* the program's parameters are exactly the reference's */
    int np = ts_program_num_params(p);
    CHECK(np == ngrad, "the program has %d parameters, the reference %d", np, ngrad);
    for (int i = 0; i < np; i++) {
        char gn[512];
        snprintf(gn, sizeof gn, "%s@GRAD", ts_program_param_name(p, i));
        CHECK(ts_safetensors_info(exp, gn, NULL, NULL, NULL) == TS_OK, "no reference gradient for %s", gn);
        CHECK(!strstr(gn, "decoder"), "parameter %s: the decoder is tied to the word embeddings", gn);
    }

    int nmissing = -1;
    if (CHECK_OK(ts_program_load(p, fixture("model.safetensors"), 1, &nmissing))) goto out;
    CHECK(nmissing == 0, "%d parameters missing from model.safetensors", nmissing);
    feed_inputs(p, 0);
    if (CHECK_OK(ts_program_run(p))) goto out;

    printf("  step 1, forward (max |a-b| / max |b|):\n");
    double worst = 0;
    for (int i = 0; i < NOUT; i++) worst = fmax(worst, compare_fetch(p, exp, OUTPUTS[i], NULL));
    printf("  step 1, gradients:\n");
    double worst_grad = 0;
    for (int i = NOUT; i < nf; i++) {
        const char *gn = fetch[i];
        if (strstr(gn, "attention.self.key.bias")) {
            /* zero in exact arithmetic: noise, bounded by the query bias's gradient scale */
            char qn[512];
            snprintf(qn, sizeof qn, "%.*squery.bias@GRAD", (int)(strstr(gn, "key.bias") - gn), gn);
            ts_tensor *a = TU_FETCH(p, gn), *qref = get_tensor(exp, qn);
            if (a && qref) {
                double r = max_abs(a) / max_abs(qref);
                printf("    %-62s |a| / max|%s| %.2e (zero in exact arithmetic)\n", gn, "query grad", r);
                CHECK(r <= 1e-6, "%s: %.3e of the query bias gradient; it should be rounding noise", gn, r);
            }
            ts_tensor_free(a);
            ts_tensor_free(qref);
            continue;
        }
        worst_grad = fmax(worst_grad, compare_fetch(p, exp, gn, NULL));
    }

    for (int s = 1; s < ADAM_STEPS; s++) CHECK_OK(ts_program_run(p));
    printf("  after %d AdamW steps: max |a-b| / max |b|, and / (steps * lr):\n", ADAM_STEPS);
    double worst_adam = 0, worst_adam_rel = 0;
    for (int i = 0; i < np; i++) {
        const char *pn = ts_program_param_name(p, i);
        char en[512];
        snprintf(en, sizeof en, "%s@ADAMW3", pn);
        ts_tensor *a = NULL, *b = get_tensor(exp, en);
        CHECK_OK(ts_program_get_param(p, pn, &a));
        double d = max_diff(a, b), e = d / (ADAM_STEPS * ADAM_LR), rel = d / fmax(b ? max_abs(b) : 1, 1e-30);
        int key_bias = strstr(pn, "attention.self.key.bias") != NULL;
        printf("    %-62s rel err %.2e, of the update %.2e%s\n", pn, rel, e, key_bias ? " (noise gradient)" : "");
        if (key_bias) {
            CHECK(e <= 1.0, "%s after %d steps: max |a-b| = %.3e steps * lr", pn, ADAM_STEPS, e);
        } else {
            CHECK(e <= 1e-2 && rel <= TOL, "%s after %d steps: max |a-b| = %.3e steps * lr, %.3e max |b|", pn,
                  ADAM_STEPS, e, rel);
            worst_adam = fmax(worst_adam, e);
            worst_adam_rel = fmax(worst_adam_rel, rel);
        }
        ts_tensor_free(a);
        ts_tensor_free(b);
    }
    printf("  worst (key biases aside): forward %.2e, gradients %.2e, after AdamW %.2e (%.2e of the "
           "update)\n", worst, worst_grad, worst_adam_rel, worst_adam);
out:
    free(fetch);
    ts_program_free(p);
    ts_safetensors_close(exp);
}


/* max_predictions_per_seq: the MLM head on the labelled positions only, fed as
 * masked_lm_positions with the labels compacted to [B, P]. Losses, the gathered logits rows and
 * every gradient must match the reference's full-head values (the same math: the mean of the
 * cross-entropies over the labelled positions). */
static void test_parity_masked_positions(void) {
    ts_bert_config cfg;
    if (!load_fixture_config(&cfg)) return;
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.f;
    ts_safetensors *exp = ts_safetensors_open(fixture("expected.safetensors"));
    ts_safetensors *in = ts_safetensors_open(fixture("inputs.safetensors"));
    CHECK(exp && in, "open fixtures: %s", ts_last_error());
    ts_tensor *labels = in ? get_tensor(in, "labels") : NULL, *want_logits = exp ? get_tensor(exp, "prediction_logits") : NULL;
    ts_graph *g = NULL;
    ts_program *p = NULL;
    const char **fetch = NULL;
    if (!labels || !want_logits) goto out;
    /* P = the most labelled positions of a row; rows with fewer are padded (position 0, -100) */
    const int32_t *lab = ts_tensor_data(labels);
    int P = 0;
    for (int b = 0; b < FIX_B; b++) {
        int n = 0;
        for (int t = 0; t < FIX_T; t++) n += lab[b * FIX_T + t] != -100;
        if (n > P) P = n;
    }
    CHECK(P > 0 && P < FIX_T, "the fixture has %d labelled positions in its fullest row", P);
    ts_tensor *pos = ts_tensor_new(TS_I32, 2, (int64_t[]){FIX_B, P}), *plab = ts_tensor_new(TS_I32, 2, (int64_t[]){FIX_B, P});
    int32_t *pp = ts_tensor_data(pos), *pl = ts_tensor_data(plab);
    for (int b = 0; b < FIX_B; b++) {
        int n = 0;
        for (int t = 0; t < FIX_T; t++)
            if (lab[b * FIX_T + t] != -100) pp[b * P + n] = t, pl[b * P + n] = lab[b * FIX_T + t], n++;
        for (; n < P; n++) pp[b * P + n] = 0, pl[b * P + n] = -100;
    }
    cfg.max_predictions_per_seq = P;
    g = ts_graph_new();
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &cfg, TS_BERT_PRETRAINING, FIX_B, FIX_T, &o));
    CHECK(o.masked_lm_positions != TS_NONE, "no masked_lm_positions input");
    CHECK_OK(ts_backward(g, o.loss));
    int ne = ts_safetensors_count(exp), nf = 0;
    fetch = calloc((size_t)ne + 4, sizeof *fetch);
    static const char *const outs[] = {"loss", "mlm_loss", "nsp_loss", "prediction_logits"};
    for (int i = 0; i < 4; i++) fetch[nf++] = outs[i];
    for (int i = 0; i < ne; i++)
        if (ends_with(ts_safetensors_name(exp, i), "@GRAD") && !strstr(ts_safetensors_name(exp, i), "key.bias"))
            fetch[nf++] = ts_safetensors_name(exp, i);
    p = ts_compile(g, &(ts_compile_opts){.nfetch = nf, .fetches = fetch});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p && !CHECK_OK(ts_program_load(p, fixture("model.safetensors"), 1, NULL))) {
        feed_inputs_but(p, 0, "labels");
        CHECK_OK(ts_program_feed(p, "masked_lm_positions", pos));
        CHECK_OK(ts_program_feed(p, "labels", plab));
        if (!CHECK_OK(ts_program_run(p))) {
            printf("  MLM head on %d gathered positions per row (of %d):\n", P, FIX_T);
            for (int i = 0; i < 3; i++) compare_fetch(p, exp, outs[i], NULL);
            double worst = 0;
            for (int i = 4; i < nf; i++) {
                ts_tensor *a = TU_FETCH(p, fetch[i]), *b = get_tensor(exp, fetch[i]);
                worst = fmax(worst, max_diff(a, b) / fmax(b ? max_abs(b) : 1, 1e-30));
                ts_tensor_free(a);
                ts_tensor_free(b);
            }
            printf("    every gradient (%d, key biases aside): worst rel err %.2e\n", nf - 4, worst);
            CHECK(worst <= TOL, "gradients with gathered MLM positions: relative error %.3e", worst);
            /* the gathered logits rows are the full head's rows at those positions */
            ts_tensor *lg = TU_FETCH(p, "prediction_logits");
            int V = cfg.vocab_size;
            double d = 0;
            for (int b = 0; lg && b < FIX_B; b++)
                for (int k = 0; k < P; k++)
                    if (pl[b * P + k] != -100)
                        d = fmax(d, tu_max_abs_diff_f(tu_f32(lg) + ((int64_t)b * P + k) * V,
                                                      tu_f32(want_logits) + ((int64_t)b * FIX_T + pp[b * P + k]) * V, V));
            d /= max_abs(want_logits);
            printf("    prediction_logits rows at the positions: rel err %.2e\n", d);
            CHECK(lg && d <= TOL, "gathered prediction_logits: relative error %.3e", d);
            ts_tensor_free(lg);
        }
    }
    /* a bad P is refused at build time */
    ts_graph *g2 = ts_graph_new();
    cfg.max_predictions_per_seq = FIX_T + 1;
    CHECK_STATUS(ts_bert_build(g2, &cfg, TS_BERT_PRETRAINING, FIX_B, FIX_T, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("max_predictions_per_seq");
    ts_graph_free(g2);
    ts_tensor_free(pos);
    ts_tensor_free(plab);
out:
    free(fetch);
    ts_program_free(p);
    ts_graph_free(g);
    ts_tensor_free(labels);
    ts_tensor_free(want_logits);
    ts_safetensors_close(exp);
    ts_safetensors_close(in);
}

/* ------------------------------------------------------------------ parity: inference */

/* An inference program with the config's dropout (0.1, identity at inference): forward outputs
 * against `expected`, the mask fed as f32 or i32, the activation as given. */
static void inference_parity(const char *expected, ts_bert_act act, int mask_f32) {
    ts_bert_config cfg;
    if (!load_fixture_config(&cfg)) return;
    CHECK(cfg.hidden_dropout_prob > 0.f, "the fixture config should have dropout");
    cfg.hidden_act = act;
    cfg.attention_mask_dtype = mask_f32 ? TS_F32 : TS_I32;
    ts_safetensors *exp = ts_safetensors_open(fixture(expected));
    CHECK(exp != NULL, "open %s: %s", expected, ts_last_error());
    if (!exp) return;
    ts_graph *g = ts_graph_new();
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &cfg, TS_BERT_PRETRAINING, FIX_B, FIX_T, &o));
    CHECK(ts_value_dtype(g, o.attention_mask) == cfg.attention_mask_dtype, "attention_mask dtype");
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = NOUT, .fetches = OUTPUTS, .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (p && !CHECK_OK(ts_program_load(p, fixture("model.safetensors"), 1, NULL))) {
        feed_inputs(p, mask_f32);
        if (!CHECK_OK(ts_program_run(p))) {
            printf("  %s, %s mask:\n", expected, mask_f32 ? "f32" : "i32");
            for (int i = 0; i < NOUT; i++) compare_fetch(p, exp, OUTPUTS[i], NULL);
        }
    }
    ts_program_free(p);
    ts_safetensors_close(exp);
}

static void test_parity_inference_f32_mask(void) { inference_parity("expected.safetensors", TS_BERT_GELU, 1); }
static void test_parity_gelu_new(void) { inference_parity("expected_gelu_new.safetensors", TS_BERT_GELU_TANH, 0); }

/* ------------------------------------------------------------------ config files */

static char tdir[256];

static const char *write_config(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tdir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) { perror(path); exit(1); }
    return path;
}

static void remove_config(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tdir, name);
    unlink(path);
}

/* The required fields, each value given as JSON text; BASE_FIELDS a valid set of them. */
#define SIZES(vocab, hidden, layers, heads, inter)                                                 \
    "\"vocab_size\": " vocab ", \"hidden_size\": " hidden ", \"num_hidden_layers\": " layers           \
    ", \"num_attention_heads\": " heads ", \"intermediate_size\": " inter                             \
    ", \"max_position_embeddings\": 64, \"type_vocab_size\": 2"
#define BASE_FIELDS SIZES("99", "32", "2", "4", "37")

static void test_config_load(void) {
    snprintf(tdir, sizeof tdir, "/tmp/ts_bert_XXXXXX");
    if (!mkdtemp(tdir)) { perror("mkdtemp"); exit(1); }
    ts_bert_config c = {.struct_size = sizeof c};
    /* a config as transformers writes it, extra keys included */
    const char *p = write_config("full.json",
        "{\"_name_or_path\": \"bert-base-uncased\", \"architectures\": [\"BertForSequenceClassification\"],"
        " \"attention_probs_dropout_prob\": 0.05, \"classifier_dropout\": null, \"gradient_checkpointing\": false,"
        " \"hidden_act\": \"gelu_new\", \"hidden_dropout_prob\": 0.2, \"hidden_size\": 768,"
        " \"id2label\": {\"0\": \"NEG\", \"1\": \"NEU\", \"2\": \"POS\"}, \"label2id\": {\"NEG\": 0},"
        " \"initializer_range\": 0.03, \"intermediate_size\": 3072, \"layer_norm_eps\": 1e-12,"
        " \"max_position_embeddings\": 512, \"model_type\": \"bert\", \"num_attention_heads\": 12,"
        " \"num_hidden_layers\": 12, \"pad_token_id\": 0, \"position_embedding_type\": \"absolute\","
        " \"torch_dtype\": \"float32\", \"transformers_version\": \"4.30.0\", \"type_vocab_size\": 2,"
        " \"use_cache\": true, \"vocab_size\": 30522}");
    if (!CHECK_OK(ts_bert_config_load(p, &c))) {
        CHECK(c.vocab_size == 30522 && c.hidden_size == 768 && c.num_hidden_layers == 12 &&
              c.num_attention_heads == 12 && c.intermediate_size == 3072 &&
              c.max_position_embeddings == 512 && c.type_vocab_size == 2, "sizes");
        CHECK(c.hidden_act == TS_BERT_GELU_TANH, "hidden_act %d", (int)c.hidden_act);
        CHECK(c.hidden_dropout_prob == 0.2f && c.attention_probs_dropout_prob == 0.05f &&
              c.classifier_dropout < 0.f, "dropouts %g %g %g", (double)c.hidden_dropout_prob,
              (double)c.attention_probs_dropout_prob, (double)c.classifier_dropout);
        CHECK(c.layer_norm_eps == 1e-12f && c.initializer_range == 0.03f, "eps / initializer_range");
        CHECK(c.num_labels == 3, "num_labels %d from id2label", c.num_labels);
        CHECK(c.head == TS_BERT_SEQ_CLASSIFICATION && !strcmp(c.architecture, "BertForSequenceClassification"),
              "head %d '%s'", (int)c.head, c.architecture);
        CHECK(c.attention_mask_dtype == TS_I32, "mask dtype");
    }
    /* only the required fields: defaults for the rest; an unknown architecture keeps BertModel */
    p = write_config("min.json", "{" BASE_FIELDS ", \"architectures\": [\"BertForTokenClassification\"],"
                                 " \"num_labels\": 5}");
    if (!CHECK_OK(ts_bert_config_load(p, &c))) {
        ts_bert_config d;
        ts_bert_config_default(&d);
        CHECK(c.hidden_act == d.hidden_act && c.hidden_dropout_prob == d.hidden_dropout_prob &&
              c.layer_norm_eps == d.layer_norm_eps && c.initializer_range == d.initializer_range,
              "defaults");
        CHECK(c.num_labels == 5 && c.head == TS_BERT_MODEL && !strcmp(c.architecture, "BertForTokenClassification"),
              "num_labels %d head %d", c.num_labels, (int)c.head);
    }

    /* errors: status, and the words the message must hold (the file's path is always checked) */
    static const struct {
        const char *file, *text;
        ts_status code;
        const char *w1, *w2;
    } bad[] = {
        {"missing.json", "{\"vocab_size\": 99, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                         "\"intermediate_size\": 37, \"max_position_embeddings\": 64, \"type_vocab_size\": 2}",
         TS_ERR_ARG, "hidden_size", "missing"},
        {"badjson.json", "{\"vocab_size\": 99, \"hidden_size\": 32,, }", TS_ERR_IO, "JSON", "byte"},
        {"notobj.json", "[1, 2, 3]", TS_ERR_IO, "object", NULL},
        {"empty.json", "", TS_ERR_IO, "JSON", NULL},
        {"string.json", "{" SIZES("99", "\"32\"", "2", "4", "37") "}", TS_ERR_ARG, "hidden_size", "integer"},
        {"frac.json", "{" SIZES("99", "32", "2.5", "4", "37") "}", TS_ERR_ARG, "num_hidden_layers", "integer"},
        {"zero.json", "{" SIZES("0", "32", "2", "4", "37") "}", TS_ERR_ARG, "vocab_size", "positive"},
        {"neg.json", "{" SIZES("99", "32", "2", "4", "-3") "}", TS_ERR_ARG, "intermediate_size", "positive"},
        {"div.json", "{" SIZES("99", "32", "2", "5", "37") "}", TS_ERR_ARG, "hidden_size", "num_attention_heads"},
        {"act.json", "{" BASE_FIELDS ", \"hidden_act\": \"swish\"}", TS_ERR_UNSUPPORTED, "hidden_act", "swish"},
        {"acttype.json", "{" BASE_FIELDS ", \"hidden_act\": 1}", TS_ERR_ARG, "hidden_act", "string"},
        {"prob.json", "{" BASE_FIELDS ", \"hidden_dropout_prob\": 1.5}", TS_ERR_ARG, "hidden_dropout_prob", NULL},
        {"probtype.json", "{" BASE_FIELDS ", \"attention_probs_dropout_prob\": \"0.1\"}", TS_ERR_ARG,
         "attention_probs_dropout_prob", "number"},
        {"eps.json", "{" BASE_FIELDS ", \"layer_norm_eps\": 0}", TS_ERR_ARG, "layer_norm_eps", "positive"},
        {"labels.json", "{" BASE_FIELDS ", \"num_labels\": 2, \"id2label\": {\"0\": \"a\", \"1\": \"b\", \"2\": \"c\"}}",
         TS_ERR_ARG, "num_labels", "id2label"},
        {"arch.json", "{" BASE_FIELDS ", \"architectures\": \"BertModel\"}", TS_ERR_ARG, "architectures", "array"},
        {"pos.json", "{" BASE_FIELDS ", \"position_embedding_type\": \"relative_key\"}", TS_ERR_UNSUPPORTED,
         "position_embedding_type", "relative_key"},
        {"decoder.json", "{" BASE_FIELDS ", \"is_decoder\": true}", TS_ERR_UNSUPPORTED, "is_decoder", NULL},
    };
    ts_bert_config before;
    ts_bert_config_default(&before);
    before.vocab_size = 7;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        p = write_config(bad[i].file, bad[i].text);
        c = before;
        ts_status s = ts_bert_config_load(p, &c);
        CHECK(s == bad[i].code, "%s: status %s, expected %s (%s)", bad[i].file, ts_status_name(s),
              ts_status_name(bad[i].code), ts_last_error());
        CHECK_ERRMSG(p, bad[i].w1 ? bad[i].w1 : p, bad[i].w2 ? bad[i].w2 : p);
        CHECK(memcmp(&c, &before, sizeof c) == 0, "%s: a failed load changed the config", bad[i].file);
    }
    char nofile[512];
    snprintf(nofile, sizeof nofile, "%s/does_not_exist.json", tdir);
    CHECK_STATUS(ts_bert_config_load(nofile, &c), TS_ERR_IO);
    CHECK_ERRMSG("does_not_exist.json");
    CHECK_STATUS(ts_bert_config_load(NULL, &c), TS_ERR_ARG);
    CHECK_STATUS(ts_bert_config_load(p, NULL), TS_ERR_ARG);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) remove_config(bad[i].file);
    remove_config("full.json");
    remove_config("min.json");
    rmdir(tdir);
}

/* ------------------------------------------------------------------ heads */

static ts_bert_config small_config(void) {
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.vocab_size = 50;
    c.hidden_size = 16;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.intermediate_size = 24;
    c.max_position_embeddings = 16;
    c.num_labels = 3;
    return c;
}

static int has_shape(const ts_graph *g, ts_value v, int nd, const int64_t *want) {
    int64_t sh[TS_MAX_DIMS];
    if (ts_value_shape(g, v, sh) != nd) return 0;
    for (int i = 0; i < nd; i++)
        if (sh[i] != want[i]) return 0;
    return 1;
}

static int has_param(const ts_program *p, const char *name) {
    for (int i = 0; i < ts_program_num_params(p); i++)
        if (!strcmp(ts_program_param_name(p, i), name)) return 1;
    return 0;
}

/* Feed random valid inputs (row b padded after T - b tokens) and labels for every head. */
static void feed_random(ts_program *p, const ts_bert_config *c, int B, int T, tu_rng *r) {
    ts_tensor *ids = ts_tensor_new(TS_I32, DIMS(B, T)), *tt = ts_tensor_new(TS_I32, DIMS(B, T)),
              *mask = ts_tensor_new(TS_I32, DIMS(B, T)), *lab = ts_tensor_new(TS_I32, DIMS(B, T)),
              *cls = ts_tensor_new(TS_I32, DIMS(B)), *nsp = ts_tensor_new(TS_I32, DIMS(B)),
              *reg = ts_tensor_new(TS_F32, DIMS(B)),
              *sp = ts_tensor_new(TS_I32, DIMS(B)), *ep = ts_tensor_new(TS_I32, DIMS(B));
    int32_t *I = ts_tensor_data(ids), *TT = ts_tensor_data(tt), *M = ts_tensor_data(mask), *L = ts_tensor_data(lab);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            int real = t < T - b;
            I[b * T + t] = real ? (int32_t)tu_randint(r, c->vocab_size) : 0;
            TT[b * T + t] = real && t >= T / 2;
            M[b * T + t] = real;
            L[b * T + t] = real && tu_randint(r, 3) == 0 ? (int32_t)tu_randint(r, c->vocab_size) : -100;
        }
        L[b * T + 1] = 3;
        ((int32_t *)ts_tensor_data(cls))[b] = (int32_t)tu_randint(r, c->num_labels);
        ((int32_t *)ts_tensor_data(nsp))[b] = (int32_t)tu_randint(r, 2);
        tu_f32(reg)[b] = (float)tu_uniform(r, -1, 1);
        ((int32_t *)ts_tensor_data(sp))[b] = b == 0 ? T : (int32_t)tu_randint(r, T); /* T: ignored */
        ((int32_t *)ts_tensor_data(ep))[b] = (int32_t)tu_randint(r, T);
    }
    CHECK_OK(ts_program_feed(p, "input_ids", ids));
    CHECK_OK(ts_program_feed(p, "token_type_ids", tt));
    CHECK_OK(ts_program_feed(p, "attention_mask", mask));
    const char *const opt[] = {"labels", "labels", "next_sentence_label", "start_positions", "end_positions", "labels"};
    ts_tensor *const val[] = {lab, cls, nsp, sp, ep, reg};
    for (int i = 0; i < 6; i++) { /* the label inputs of whichever head this is, by shape */
        ts_status s = ts_program_feed(p, opt[i], val[i]);
        CHECK(s == TS_OK || s == TS_ERR_NOT_FOUND || s == TS_ERR_SHAPE || s == TS_ERR_DTYPE, "feed %s: %s",
              opt[i], ts_last_error());
    }
    ts_tensor *all[] = {ids, tt, mask, lab, cls, nsp, reg, sp, ep};
    for (int i = 0; i < 9; i++) ts_tensor_free(all[i]);
}

static void check_head(ts_bert_head head, int num_labels) {
    const int B = 3, T = 7;
    ts_bert_config c = small_config();
    c.num_labels = num_labels;
    int C = c.hidden_size, V = c.vocab_size;
    ts_graph *g = ts_graph_new();
    ts_bert_outputs o;
    if (CHECK_OK(ts_bert_build(g, &c, head, B, T, &o))) { ts_graph_free(g); return; }
    CHECK(has_shape(g, o.input_ids, DIMS(B, T)) && has_shape(g, o.token_type_ids, DIMS(B, T)) &&
              has_shape(g, o.attention_mask, DIMS(B, T)), "inputs");
    CHECK(ts_lookup(g, "input_ids") == o.input_ids && ts_lookup(g, "attention_mask") == o.attention_mask,
          "inputs by name");
    CHECK(has_shape(g, o.last_hidden_state, DIMS(B, T, C)) && ts_lookup(g, "last_hidden_state") == o.last_hidden_state,
          "last_hidden_state");
    const char *fetch[4] = {"last_hidden_state"};
    int nf = 1;
    switch (head) {
    case TS_BERT_MODEL:
        CHECK(has_shape(g, o.pooler_output, DIMS(B, C)) && o.loss == TS_NONE && o.logits == TS_NONE, "BertModel");
        fetch[nf++] = "pooler_output";
        break;
    case TS_BERT_PRETRAINING:
        CHECK(has_shape(g, o.prediction_logits, DIMS(B, T, V)) && has_shape(g, o.seq_relationship_logits, DIMS(B, 2)) &&
              has_shape(g, o.labels, DIMS(B, T)) && has_shape(g, o.next_sentence_label, DIMS(B)) &&
              has_shape(g, o.mlm_loss, 0, NULL) && has_shape(g, o.nsp_loss, 0, NULL), "pre-training");
        fetch[nf++] = "prediction_logits";
        break;
    case TS_BERT_MASKED_LM:
        CHECK(has_shape(g, o.logits, DIMS(B, T, V)) && has_shape(g, o.labels, DIMS(B, T)) &&
              o.pooler_output == TS_NONE && ts_lookup(g, "logits") == o.logits, "masked LM");
        fetch[nf++] = "logits";
        break;
    case TS_BERT_SEQ_CLASSIFICATION:
        CHECK(has_shape(g, o.logits, DIMS(B, num_labels)) && has_shape(g, o.labels, DIMS(B)) &&
              ts_value_dtype(g, o.labels) == (num_labels == 1 ? TS_F32 : TS_I32), "classification");
        fetch[nf++] = "logits";
        break;
    case TS_BERT_QUESTION_ANSWERING:
        CHECK(has_shape(g, o.start_logits, DIMS(B, T)) && has_shape(g, o.end_logits, DIMS(B, T)) &&
              has_shape(g, o.start_positions, DIMS(B)) && has_shape(g, o.end_positions, DIMS(B)) &&
              o.pooler_output == TS_NONE, "question answering");
        fetch[nf++] = "start_logits";
        fetch[nf++] = "end_logits";
        break;
    }
    if (head != TS_BERT_MODEL) {
        CHECK(has_shape(g, o.loss, 0, NULL) && ts_lookup(g, "loss") == o.loss, "loss");
        fetch[nf++] = "loss";
        CHECK_OK(ts_backward(g, o.loss));
        CHECK_OK(ts_adamw(g, ts_scalar(g, 1e-3f), 0.9f, 0.999f, 1e-8f, 0.01f));
    }
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = nf, .fetches = fetch});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p) return;
    /* parameter sets: the pooler only where transformers has one; the decoder is tied */
    int want_pooler = head == TS_BERT_MODEL || head == TS_BERT_PRETRAINING || head == TS_BERT_SEQ_CLASSIFICATION;
    CHECK(has_param(p, "bert.pooler.dense.weight") == want_pooler, "pooler present: %d", !want_pooler);
    CHECK(has_param(p, "bert.encoder.layer.1.output.LayerNorm.bias") && !has_param(p, "bert.encoder.layer.2.output.dense.bias"),
          "encoder layers");
    CHECK(!has_param(p, "cls.predictions.decoder.weight"), "decoder weight should be tied");
    CHECK(has_param(p, "cls.predictions.bias") == (head == TS_BERT_PRETRAINING || head == TS_BERT_MASKED_LM), "MLM bias");
    CHECK(has_param(p, "cls.seq_relationship.weight") == (head == TS_BERT_PRETRAINING), "NSP");
    CHECK(has_param(p, "classifier.weight") == (head == TS_BERT_SEQ_CLASSIFICATION), "classifier");
    CHECK(has_param(p, "qa_outputs.weight") == (head == TS_BERT_QUESTION_ANSWERING), "qa_outputs");
    int np = ts_program_num_params(p);

    tu_rng r = tu_rng_seed(7 + (uint64_t)head);
    feed_random(p, &c, B, T, &r);
    double first = NAN, last = NAN;
    for (int step = 0; step < (head == TS_BERT_MODEL ? 1 : 20); step++) {
        if (CHECK_OK(ts_program_run(p))) break;
        if (head == TS_BERT_MODEL) break;
        ts_tensor *l = TU_FETCH(p, "loss");
        if (!l) break;
        last = tu_f32(l)[0];
        if (step == 0) first = last;
        ts_tensor_free(l);
    }
    for (int i = 0; i < nf; i++) {
        ts_tensor *t = TU_FETCH(p, fetch[i]);
        int finite = 1;
        for (int64_t j = 0; t && j < ts_tensor_numel(t); j++) finite &= isfinite(tu_f32(t)[j]);
        CHECK(t && finite, "%s has non-finite values", fetch[i]);
        ts_tensor_free(t);
    }
    if (head != TS_BERT_MODEL) {
        CHECK(isfinite(first) && last < first, "20 steps on one batch should lower the loss: %g -> %g", first, last);
        printf("  head %d (num_labels %d): %d parameters, loss %.4f -> %.4f over 20 steps\n", (int)head,
               num_labels, np, first, last);
    }
    ts_program_free(p);
}

static void test_head_model(void) { check_head(TS_BERT_MODEL, 2); }
static void test_head_pretraining(void) { check_head(TS_BERT_PRETRAINING, 2); }
static void test_head_masked_lm(void) { check_head(TS_BERT_MASKED_LM, 2); }
static void test_head_classification(void) { check_head(TS_BERT_SEQ_CLASSIFICATION, 3); }
static void test_head_regression(void) { check_head(TS_BERT_SEQ_CLASSIFICATION, 1); }
static void test_head_qa(void) { check_head(TS_BERT_QUESTION_ANSWERING, 2); }

/* ------------------------------------------------------------------ build errors, save */

static void test_build_errors(void) {
    ts_bert_config c = small_config();
    ts_graph *g = ts_graph_new();
    CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_MODEL, 2, 17, NULL), TS_ERR_SHAPE);
    CHECK_ERRMSG("17", "max_position_embeddings");
    CHECK(ts_graph_status(g) == TS_ERR_SHAPE, "the error is recorded in the graph");
    ts_graph_free(g);

    c.num_attention_heads = 3;
    g = ts_graph_new();
    CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_MODEL, 2, 8, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("hidden_size", "num_attention_heads");
    ts_graph_free(g);

    c = small_config();
    c.attention_mask_dtype = TS_F16;
    g = ts_graph_new();
    CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_MODEL, 2, 8, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("attention_mask");
    ts_graph_free(g);

    c = small_config();
    g = ts_graph_new();
    ts_bert_outputs o;
    CHECK_STATUS(ts_bert_build(g, &c, (ts_bert_head)42, 2, 8, &o), TS_ERR_ARG);
    CHECK(o.input_ids == TS_NONE && o.loss == TS_NONE, "outputs are TS_NONE on failure");
    ts_graph_free(g);
    g = ts_graph_new();
    CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_MODEL, 0, 8, NULL), TS_ERR_ARG);
    ts_graph_free(g);
    CHECK_STATUS(ts_bert_build(NULL, &c, TS_BERT_MODEL, 2, 8, NULL), TS_ERR_ARG);

    /* a second BERT in the same graph: the names are taken */
    g = ts_graph_new();
    CHECK_OK(ts_bert_build(g, &c, TS_BERT_MODEL, 2, 8, NULL));
    CHECK(ts_bert_build(g, &c, TS_BERT_MODEL, 2, 8, NULL) != TS_OK, "a second BERT in one graph");
    CHECK_ERRMSG("input_ids");
    ts_graph_free(g);
}

/* A saved pre-training program has no decoder weight and loads back strictly. */
static void test_save_load(void) {
    ts_bert_config c = small_config();
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 5);
    CHECK_OK(ts_bert_build(g, &c, TS_BERT_PRETRAINING, 2, 8, NULL));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss"), .inference = 1});
    ts_graph *g2 = ts_graph_new();
    ts_graph_set_seed(g2, 99);
    CHECK_OK(ts_bert_build(g2, &c, TS_BERT_PRETRAINING, 2, 8, NULL));
    ts_program *q = ts_compile(g2, &(ts_compile_opts){TU_FETCHES("loss"), .inference = 1});
    ts_graph_free(g);
    ts_graph_free(g2);
    CHECK(p && q, "compile: %s", ts_last_error());
    if (p && q) {
        char path[] = "/tmp/ts_bert_save_XXXXXX";
        int fd = mkstemp(path);
        if (fd >= 0) close(fd);
        if (!CHECK_OK(ts_program_save(p, path, TS_F32))) {
            ts_safetensors *st = ts_safetensors_open(path);
            CHECK(st && ts_safetensors_count(st) == ts_program_num_params(p), "saved tensor count");
            CHECK(st && ts_safetensors_info(st, "cls.predictions.decoder.weight", NULL, NULL, NULL) == TS_ERR_NOT_FOUND,
                  "the tied decoder weight is not saved");
            ts_safetensors_close(st);
            ts_tensor *a = NULL, *b = NULL;
            CHECK_OK(ts_program_get_param(q, "bert.embeddings.word_embeddings.weight", &b));
            CHECK_OK(ts_program_get_param(p, "bert.embeddings.word_embeddings.weight", &a));
            CHECK(a && b && !tu_bitwise_equal(a, b), "two seeds should give two initialisations");
            ts_tensor_free(a);
            ts_tensor_free(b);
            a = b = NULL;
            CHECK_OK(ts_program_load(q, path, 1, NULL));
            CHECK_OK(ts_program_get_param(p, "bert.embeddings.word_embeddings.weight", &a));
            CHECK_OK(ts_program_get_param(q, "bert.embeddings.word_embeddings.weight", &b));
            CHECK(tu_bitwise_equal(a, b), "round trip");
            ts_tensor_free(a);
            ts_tensor_free(b);
        }
        unlink(path);
    }
    ts_program_free(p);
    ts_program_free(q);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_parity_training);
    RUN(test_parity_masked_positions);
    RUN(test_parity_inference_f32_mask);
    RUN(test_parity_gelu_new);
    RUN(test_config_load);
    RUN(test_head_model);
    RUN(test_head_pretraining);
    RUN(test_head_masked_lm);
    RUN(test_head_classification);
    RUN(test_head_regression);
    RUN(test_head_qa);
    RUN(test_build_errors);
    RUN(test_save_load);
    return tu_finish("test_bert_parity");
}
