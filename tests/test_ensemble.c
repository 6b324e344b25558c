/*
 * test_ensemble.c — ts_ensemble_* (tessera_tasks.h), several classifiers predicting as one,
 * called directly on tiny classifiers (1 layer x 16 hidden, fresh weights of different seeds)
 * written with ts_model_save_dir:
 *  - an ensemble's class probabilities are the mean of its members' (each opened alone), for
 *    texts (ts_ensemble_classify, more texts than a batch) and a dataset's rows
 *    (ts_ensemble_add_dataset: their sum);
 *  - ts_ensemble_add_text / _flush: each text's result (the label of the largest mean, that mean)
 *    reaches the callback in order, a batch at a time;
 *  - members that disagree are refused, the message beginning with the member at fault: other
 *    labels, a body without a classifier head, a missing directory; a text-pair ensemble refuses
 *    a text without a tab;
 *  - a caller's program hook is used for every member, and its failure is the open's.
 */
#include <sys/stat.h>

#include "tessera_apps.h"
#include "test_util.h"

static const char *const WORDS[] = {"the", "cat", "dog", "bird", "runs", "sleeps", "sings", "in", "park", "house"};
#define NWORDS ((int)(sizeof WORDS / sizeof *WORDS))

static const char *const TEXTS[] = {"the cat runs", "the dog sleeps in the park", "a bird sings", "the house",
                                    "cat dog bird", "in the park the cat sleeps", "runs"};
#define NTEXTS ((int)(sizeof TEXTS / sizeof *TEXTS))

/* Model directory dir: a classifier of labels[0 .. nlabels) (head `head`), weights from seed;
 * pair: a text-pair classifier (column "text_b"). */
static void make_model(const char *dir, ts_bert_head head, const char *const *labels, int nlabels, uint64_t seed,
                       int pair) {
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = 5 + NWORDS, cfg.hidden_size = 16, cfg.num_hidden_layers = 1, cfg.num_attention_heads = 2;
    cfg.intermediate_size = 32, cfg.max_position_embeddings = 32, cfg.num_labels = nlabels ? nlabels : 2;
    cfg.head = head;
    const char *fetch = head == TS_BERT_SEQ_CLASSIFICATION ? "logits" : "prediction_logits";
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &cfg, .head = head, .batch = 1, .seq = 8, .seed = seed,
                            .threads = 1, .infer_fetches = &fetch, .ninfer_fetches = 1};
    ts_program *p = NULL;
    CHECK_OK(ts_bert_train_programs(&o, NULL, &p));
    ts_model_meta meta = {.max_len = seed % 2 ? 16 : 12, .lowercase = 1, .labels = (char **)labels,
                          .nlabels = nlabels, .text_b_column = pair ? (char *)"text_b" : NULL};
    if (p) CHECK_OK(ts_model_save_dir(dir, p, &cfg, "vocab.txt", &meta));
    ts_program_free(p);
}

static void make_inputs(void) {
    FILE *v = fopen("vocab.txt", "w");
    CHECK(v != NULL, "vocab.txt");
    if (!v) return;
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", v);
    for (int i = 0; i < NWORDS; i++) fprintf(v, "%s\n", WORDS[i]);
    fclose(v);
    FILE *d = fopen("data.tsv", "w");
    CHECK(d != NULL, "data.tsv");
    if (!d) return;
    fputs("label\ttext\n", d);
    for (int i = 0; i < NTEXTS; i++) fprintf(d, "%s\t%s\n", i % 2 ? "pos" : "neg", TEXTS[i]);
    fclose(d);
    static const char *const pn[] = {"neg", "pos"}, *const xyz[] = {"x", "y", "z"};
    make_model("a", TS_BERT_SEQ_CLASSIFICATION, pn, 2, 1, 0);
    make_model("b", TS_BERT_SEQ_CLASSIFICATION, pn, 2, 2, 0);
    make_model("other", TS_BERT_SEQ_CLASSIFICATION, xyz, 3, 3, 0);
    make_model("body", TS_BERT_PRETRAINING, NULL, 0, 4, 0);
    make_model("pair", TS_BERT_SEQ_CLASSIFICATION, pn, 2, 5, 1);
}

static ts_ensemble *open_models(const char *const *dirs, int n, int batch) {
    ts_ensemble_opts o = {.struct_size = sizeof o, .batch = batch, .threads = 1};
    ts_ensemble *e = ts_ensemble_open(dirs, n, &o);
    CHECK(e != NULL, "ts_ensemble_open: %s", ts_last_error());
    return e;
}

static void test_mean(void) {
    static const char *const a[] = {"a"}, *const b[] = {"b"}, *const ab[] = {"a", "b"};
    ts_ensemble *ea = open_models(a, 1, 3), *eb = open_models(b, 1, 3), *e = open_models(ab, 2, 3);
    if (!ea || !eb || !e) return;
    CHECK(ts_ensemble_size(e) == 2 && ts_ensemble_meta(e)->nlabels == 2, "size %d", ts_ensemble_size(e));
    double pa[NTEXTS * 2], pb[NTEXTS * 2], pe[NTEXTS * 2];
    CHECK_OK(ts_ensemble_classify(ea, TEXTS, NTEXTS, pa));
    CHECK_OK(ts_ensemble_classify(eb, TEXTS, NTEXTS, pb));
    CHECK_OK(ts_ensemble_classify(e, TEXTS, NTEXTS, pe));
    double worst = 0, apart = 0;
    for (int i = 0; i < NTEXTS * 2; i++) {
        worst = fmax(worst, fabs(pe[i] - (pa[i] + pb[i]) / 2));
        apart = fmax(apart, fabs(pa[i] - pb[i]));
    }
    CHECK(worst < 1e-12 && apart > 1e-6, "ensemble vs the members' mean: %g (members %g apart)", worst, apart);
    CHECK(fabs(pe[0] + pe[1] - 1) < 1e-9, "a text's probabilities sum to %g", pe[0] + pe[1]);
    /* a dataset's rows: the members' sum */
    ts_text_opts to = {.labels = (const char *const *)ts_ensemble_meta(e)->labels, .nlabels = 2};
    ts_text_dataset *d = ts_text_dataset_load("data.tsv", &to);
    CHECK(d != NULL, "data.tsv: %s", ts_last_error());
    double ps[NTEXTS * 2] = {0};
    if (d) CHECK_OK(ts_ensemble_add_dataset(e, d, ps));
    worst = 0;
    for (int i = 0; d && i < NTEXTS * 2; i++) worst = fmax(worst, fabs(ps[i] - 2 * pe[i]));
    CHECK(worst < 1e-9, "the dataset's summed probabilities differ from the texts' by %g", worst);
    ts_text_dataset_free(d);
    ts_ensemble_free(ea), ts_ensemble_free(eb), ts_ensemble_free(e);
}

typedef struct results {
    int n, label[NTEXTS];
    double prob[NTEXTS];
    char text[NTEXTS][64];
} results;

static void on_result(void *ctx, const char *text, int label, double prob) {
    results *r = ctx;
    if (r->n < NTEXTS) snprintf(r->text[r->n], 64, "%s", text), r->label[r->n] = label, r->prob[r->n] = prob;
    r->n++;
}

static void test_queue(void) {
    static const char *const ab[] = {"a", "b"};
    results r = {0};
    ts_ensemble_opts o = {.struct_size = sizeof o, .batch = 3, .threads = 1, .result = on_result, .result_ctx = &r};
    ts_ensemble *e = ts_ensemble_open(ab, 2, &o);
    CHECK(e != NULL, "open: %s", ts_last_error());
    if (!e) return;
    double pe[NTEXTS * 2];
    CHECK_OK(ts_ensemble_classify(e, TEXTS, NTEXTS, pe));
    for (int i = 0; i < NTEXTS; i++) {
        CHECK_OK(ts_ensemble_add_text(e, TEXTS[i]));
        CHECK(r.n == (i + 1) / 3 * 3, "after %d texts, %d results (batches of 3)", i + 1, r.n);
    }
    CHECK_OK(ts_ensemble_flush(e));
    CHECK(r.n == NTEXTS, "%d results of %d texts", r.n, NTEXTS);
    for (int i = 0; i < NTEXTS && r.n == NTEXTS; i++) {
        int best = pe[2 * i + 1] > pe[2 * i];
        CHECK(!strcmp(r.text[i], TEXTS[i]) && r.label[i] == best && r.prob[i] == pe[2 * i + best],
              "result %d: '%s' label %d p %g, want '%s' %d %g", i, r.text[i], r.label[i], r.prob[i], TEXTS[i], best,
              pe[2 * i + best]);
    }
    ts_ensemble_free(e);
}

static void test_refused(void) {
    static const char *const other[] = {"a", "other"}, *const body[] = {"a", "body"}, *const missing[] = {"a", "nope"};
    ts_ensemble_opts o = {.struct_size = sizeof o, .threads = 1};
    CHECK(!ts_ensemble_open(other, 2, &o), "members with other labels were opened");
    CHECK_STATUS(ts_last_status(), TS_ERR_ARG);
    CHECK_ERRMSG("other is not the same kind of classifier as a");
    CHECK(!strncmp(ts_last_error(), "other ", 6), "the message begins with the member: %s", ts_last_error());
    CHECK(!ts_ensemble_open(body, 2, &o), "a body without a classifier was opened");
    CHECK_ERRMSG("body is not a fine-tuned model", "BertForPreTraining");
    CHECK(!ts_ensemble_open(missing, 2, &o), "a missing member was opened");
    CHECK_STATUS(ts_last_status(), TS_ERR_ARG);
    CHECK_ERRMSG("nope");
    CHECK(!ts_ensemble_open(other, 0, &o), "an ensemble of none");
    static const char *const pair[] = {"pair"}, *const mixed[] = {"a", "pair"};
    CHECK(!ts_ensemble_open(mixed, 2, &o), "a text-pair member beside a single-text one");
    ts_ensemble *e = ts_ensemble_open(pair, 1, &o);
    CHECK(e != NULL, "pair: %s", ts_last_error());
    CHECK_STATUS(ts_ensemble_add_text(e, "no tab here"), TS_ERR_ARG);
    CHECK_ERRMSG("text pairs");
    CHECK_OK(ts_ensemble_add_text(e, "the cat\tthe dog"));
    CHECK_OK(ts_ensemble_flush(e));
    ts_ensemble_free(e);
}

/* The caller's hook makes the programs: counted; failing, the open fails with its error. */
typedef struct hook {
    int calls, fail;
} hook;

static ts_program *make_program(void *ctx, const char *dir, const ts_bert_config *cfg, int batch, int seq) {
    hook *h = ctx;
    h->calls++;
    if (h->fail) return ts_set_error(TS_ERR_NOMEM, "hook refused %s", dir), NULL;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = cfg, .head = cfg->head, .batch = batch, .seq = seq,
                            .threads = 1, .infer_fetches = (const char *const[]){"logits"}, .ninfer_fetches = 1};
    ts_program *p = NULL;
    return ts_bert_train_programs(&o, NULL, &p) == TS_OK ? p : NULL;
}

static void test_hook(void) {
    static const char *const ab[] = {"a", "b"};
    hook h = {0};
    ts_ensemble_opts o = {.struct_size = sizeof o, .threads = 1, .program = make_program, .program_ctx = &h};
    ts_ensemble *e = ts_ensemble_open(ab, 2, &o);
    CHECK(e != NULL && h.calls == 2, "the hook ran %d times: %s", h.calls, ts_last_error());
    ts_ensemble_free(e);
    h.fail = 1;
    CHECK(!ts_ensemble_open(ab, 2, &o), "a failing hook");
    CHECK_STATUS(ts_last_status(), TS_ERR_NOMEM);
    CHECK_ERRMSG("hook refused a");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/ts_ensemble_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    make_inputs();
    RUN(test_mean);
    RUN(test_queue);
    RUN(test_refused);
    RUN(test_hook);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return tu_finish("test_ensemble");
}
