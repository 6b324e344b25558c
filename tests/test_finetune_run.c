/*
 * test_finetune_run.c — ts_finetune_run (tessera_tasks.h), the whole fine-tuning run, called
 * directly, without the command: a tiny BERT (1 layer x 16 hidden, 32 positions) is written as a
 * model directory with ts_model_save_dir, then
 *  - classify: a few steps on a labelled TSV write the model directory and metrics.jsonl, the
 *    rows reach the metrics sink, the lines begin with `name`;
 *  - qa: a few steps on a SQuAD file (scored on it as eval_file) write a question-answering model,
 *    and task auto on that model chooses qa again;
 *  - bad options: each is refused with TS_ERR_ARG before any work, the message (ts_last_error and
 *    the err line) naming the field, and no output directory is made.
 * Every run happens in a forked child (RUN), in a temporary directory.
 */
#define _GNU_SOURCE /* nftw */
#include <ftw.h>
#include <sys/stat.h>

#include "tessera_apps.h"
#include "test_util.h"

/* A ts_write_fn that appends to a growing string. */
typedef struct capture {
    char *buf;
    size_t n;
} capture;

static void cap_write(void *ctx, const char *text, size_t len) {
    capture *c = ctx;
    char *b = realloc(c->buf, c->n + len + 1);
    if (!b) return;
    memcpy(b + c->n, text, len);
    c->buf = b, c->n += len, c->buf[c->n] = 0;
}

static const char *cap_text(const capture *c) { return c->buf ? c->buf : ""; }

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void write_str(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0, "cannot write %s", path);
    if (f) fclose(f);
}

/* The whole of a small file ("" when it cannot be read). */
static const char *read_str(const char *path) {
    static char buf[65536];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return buf;
}

static const char *const WORDS[] = {"the", "cat", "dog", "bird", "runs", "sleeps", "sings", "in", "park", "house",
                                    "tree", "where", "does", "who", "what", "?", ".", "and", "a", "small"};
#define NWORDS ((int)(sizeof WORDS / sizeof *WORDS))

/* vocab.txt, data.tsv, squad.json and the model directory "pre" (a sequence classifier of fresh
 * weights: what a pretrained encoder's directory holds, and a head to be replaced). */
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
    for (int i = 0; i < 24; i++)
        fprintf(d, "%s\tthe %s %s in the %s %d\n", i % 2 ? "pos" : "neg", i % 2 ? "cat" : "dog",
                WORDS[4 + i % 3], WORDS[8 + i % 3], i);
    fclose(d);
    write_str("squad.json",
              "{\"version\": \"1.1\", \"data\": [{\"title\": \"t\", \"paragraphs\": ["
              "{\"context\": \"the cat runs in the park and the dog sleeps in the house.\", \"qas\": ["
              "{\"id\": \"q1\", \"question\": \"who runs?\", \"answers\": [{\"text\": \"the cat\", \"answer_start\": 0}]},"
              "{\"id\": \"q2\", \"question\": \"where does the dog sleep?\", \"answers\": [{\"text\": \"in the house\", "
              "\"answer_start\": 44}]}]},"
              "{\"context\": \"a small bird sings in the tree.\", \"qas\": ["
              "{\"id\": \"q3\", \"question\": \"what sings?\", \"answers\": [{\"text\": \"a small bird\", "
              "\"answer_start\": 0}]}]}]}]}\n");
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = 5 + NWORDS, cfg.hidden_size = 16, cfg.num_hidden_layers = 1, cfg.num_attention_heads = 2;
    cfg.intermediate_size = 32, cfg.max_position_embeddings = 32, cfg.num_labels = 2;
    cfg.head = TS_BERT_SEQ_CLASSIFICATION;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &cfg, .head = cfg.head, .batch = 1, .seq = 8, .seed = 1,
                            .threads = 1, .infer_fetches = (const char *const[]){"logits"}, .ninfer_fetches = 1};
    ts_program *p = NULL;
    CHECK_OK(ts_bert_train_programs(&o, NULL, &p));
    ts_model_meta meta = {.max_len = 32, .lowercase = 1};
    if (p) CHECK_OK(ts_model_save_dir("pre", p, &cfg, "vocab.txt", &meta));
    ts_program_free(p);
}

/* A run's options: the defaults, model "pre", the sinks into the captures, one thread. */
static ts_finetune_run_opts run_opts(const char *train, const char *out, capture *lines, capture *errs,
                                     capture *rows) {
    ts_finetune_run_opts o;
    ts_finetune_run_defaults(&o);
    o.name = "ft-test", o.out = cap_write, o.out_ctx = lines, o.err = cap_write, o.err_ctx = errs;
    o.metrics = cap_write, o.metrics_ctx = rows;
    o.model_dir = "pre", o.train_file = train, o.out_dir = out, o.threads = 1, o.batch = 4, o.max_len = 16;
    return o;
}

static void test_classify(void) {
    capture lines = {0}, errs = {0}, rows = {0};
    ts_finetune_run_opts o = run_opts("data.tsv", "ft", &lines, &errs, &rows);
    o.max_steps = 3, o.epochs = 1, o.test_split = 0.25;
    CHECK_OK(ts_finetune_run(&o));
    CHECK(exists("ft/model.safetensors") && exists("ft/vocab.txt") && exists("ft/metrics.jsonl"),
          "the model directory: %s", cap_text(&errs));
    CHECK(strstr(read_str("ft/config.json"), "BertForSequenceClassification"), "config: %s",
          read_str("ft/config.json"));
    CHECK(strstr(cap_text(&rows), "\"loss\"") && strstr(cap_text(&rows), "test_accuracy"), "rows: %s",
          cap_text(&rows));
    CHECK(!strcmp(cap_text(&rows), read_str("ft/metrics.jsonl")), "the sink's rows are not metrics.jsonl's:\n%s\n%s",
          cap_text(&rows), read_str("ft/metrics.jsonl"));
    CHECK(!strncmp(cap_text(&lines), "ft-test: data.tsv: 24 rows", 26) &&
              strstr(cap_text(&lines), "2 labels (neg, pos)"), "lines: %s", cap_text(&lines));
    CHECK(errs.n == 0, "error lines: %s", cap_text(&errs));
    free(lines.buf), free(errs.buf), free(rows.buf);
}

static void test_qa(void) {
    capture lines = {0}, errs = {0}, rows = {0};
    ts_finetune_run_opts o = run_opts("squad.json", "qa", &lines, &errs, &rows);
    o.task = TS_FINETUNE_QA, o.eval_file = "squad.json", o.max_len = 32, o.doc_stride = 8, o.max_query_len = 8;
    o.batch = 2, o.max_steps = 2, o.lr = 1e-3;
    CHECK_OK(ts_finetune_run(&o));
    CHECK(strstr(read_str("qa/config.json"), "BertForQuestionAnswering"), "config: %s", read_str("qa/config.json"));
    CHECK(strstr(cap_text(&lines), "3 questions in") && strstr(cap_text(&lines), "parameters new (qa_outputs)"),
          "lines: %s", cap_text(&lines));
    CHECK(strstr(cap_text(&rows), "dev_f1"), "rows: %s", cap_text(&rows));
    /* task auto on a question-answering model: qa (the window options are qa's) */
    capture l2 = {0}, e2 = {0}, r2 = {0};
    ts_finetune_run_opts a = run_opts("squad.json", "qa2", &l2, &e2, &r2);
    a.model_dir = "qa", a.max_len = 32, a.max_steps = 1, a.batch = 2, a.doc_stride = 8, a.max_query_len = 8;
    CHECK_OK(ts_finetune_run(&a));
    CHECK(strstr(read_str("qa2/config.json"), "BertForQuestionAnswering"), "auto did not choose qa: %s",
          cap_text(&l2));
    free(lines.buf), free(errs.buf), free(rows.buf), free(l2.buf), free(e2.buf), free(r2.buf);
}

/* One bad option: TS_ERR_ARG, the message naming the field (in ts_last_error and the err line),
 * and no output directory made. */
static void refused(ts_finetune_run_opts *o, const char *want, int line) {
    capture errs = {0};
    o->err = cap_write, o->err_ctx = &errs;
    ts_status st = ts_finetune_run(o);
    CHECK(st == TS_ERR_ARG && strstr(ts_last_error(), want) && strstr(cap_text(&errs), want),
          "line %d: %s, want TS_ERR_ARG naming \"%s\": %s / %s", line, ts_status_name(st), want, ts_last_error(),
          cap_text(&errs));
    CHECK(!exists("bad"), "line %d: the output directory was made", line);
    free(errs.buf);
}

#define REFUSED(field, value, want)                                                                                \
    do {                                                                                                           \
        ts_finetune_run_opts o_ = run_opts("data.tsv", "bad", &lines, NULL, &rows);                                 \
        o_.field = value;                                                                                          \
        refused(&o_, want, __LINE__);                                                                              \
    } while (0)

static void test_bad_options(void) {
    capture lines = {0}, rows = {0};
    REFUSED(max_len, 600, "max_len 600 exceeds the model's 32 positions");
    REFUSED(batch, 0, "batch 0: at least 1");
    REFUSED(epochs, -1, "epochs -1: at least 1");
    REFUSED(task, 7, "task 7");
    REFUSED(truncate, "middle", "truncate middle: expected head, tail or head+tail");
    REFUSED(doc_stride, 8, "doc_stride is for task qa");
    REFUSED(n_best, 5, "n_best is for task qa");
    REFUSED(warmup, 2, "warmup 2 is a fraction of the steps");
    REFUSED(lr, NAN, "lr nan");
    REFUSED(test_split, 1, "test_split 1 leaves nothing to train on");
    REFUSED(optimizer, "adam", "optimizer adam");
    REFUSED(momentum, 0.9, "momentum 0.9");
    REFUSED(model_dir, NULL, "model_dir is needed");
    REFUSED(model_dir, "no_such_model", "model_dir no_such_model");
    REFUSED(stages, "auto", "stages \"auto\" needs devices");
    ts_finetune_run_opts o = run_opts("data.tsv", "bad", &lines, NULL, &rows);
    o.bf16 = o.fp16 = 1;
    refused(&o, "bf16 and fp16 exclude each other", __LINE__);
    o = run_opts("data.tsv", "bad", &lines, NULL, &rows);
    o.device_iterations = 2, o.max_steps = 3;
    refused(&o, "multiples of device_iterations 2", __LINE__);
    o = run_opts("data.tsv", "bad", &lines, NULL, &rows);
    o.deterministic = 1, o.max_minutes = 1;
    refused(&o, "max_minutes makes the run depend on the clock", __LINE__);
    o = run_opts("squad.json", "bad", &lines, NULL, &rows);
    o.task = TS_FINETUNE_QA, o.random_init = 1;
    refused(&o, "random_init is for task classify, not qa", __LINE__);
    o = run_opts("squad.json", "bad", &lines, NULL, &rows);
    o.task = TS_FINETUNE_QA, o.max_len = 32, o.max_query_len = 30;
    refused(&o, "max_len 32 leaves no room for context after max_query_len 30", __LINE__);
    o = run_opts("data.tsv", "bad", &lines, NULL, &rows);
    o.struct_size = 5;
    CHECK_STATUS(ts_finetune_run(&o), TS_ERR_ARG);
    CHECK_ERRMSG("ts_finetune_run_opts.struct_size");
    CHECK(rows.n == 0, "a refused run wrote metrics rows: %s", cap_text(&rows));
    free(lines.buf), free(rows.buf);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/test_finetune_run_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) {
        printf("test_finetune_run: cannot make a temporary directory\n");
        return 1;
    }
    make_inputs();
    RUN(test_classify);
    RUN(test_qa);
    RUN(test_bad_options);
    if (chdir("/") == 0) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return tu_finish("test_finetune_run");
}
