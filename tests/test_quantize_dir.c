/*
 * test_quantize_dir.c — ts_quantize_model_dir (tessera_tasks.h), the int8 copy of a model
 * directory, called directly, without the command, on a tiny classifier (1 layer x 16 hidden,
 * fresh weights) written with ts_model_save_dir:
 *  - dynamic: the copy is complete (every file of the model, the weights and vocabulary byte for
 *    byte, the run lock left out), its config.json ends with the dynamic record, which
 *    ts_quant_record_load reads; no OUT.tmp-PID directory is left; the report says what was done;
 *  - static (each method): the scales calibrated on a labelled file, one per quantizable matmul,
 *    recorded and read back; eval_file scored float and int8 side by side; max_drop refuses a
 *    copy that loses more (when int8 lost anything), writing nothing;
 *  - an out_dir that holds files already: the copy's files moved in, config.json replaced, a file
 *    of its own kept;
 *  - a failure while writing (a file size limit below the weights' size): no out_dir and no
 *    temporary directory left;
 *  - bad options and inputs: TS_ERR_ARG naming the field (model_dir quantized already, out_dir
 *    equal to model_dir, calib_file of no rows, a missing model, calib_file with dynamic), nothing
 *    written; ts_calib_method_parse / _name.
 * Every case runs in a forked child (RUN), in a temporary directory.
 */
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tessera_apps.h"
#include "test_util.h"

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void write_str(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0, "cannot write %s", path);
    if (f) fclose(f);
}

/* The whole of a small file ("" when it cannot be read), in one of two buffers. */
static const char *read_str(const char *path) {
    static char buf[2][1 << 16];
    static int k;
    char *b = buf[k ^= 1];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(b, 1, sizeof buf[0] - 1, f) : 0;
    if (f) fclose(f);
    b[n] = 0;
    return b;
}

static int same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = ts_read_file(a, &na), *y = ts_read_file(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x), free(y);
    return same;
}

/* Entries of the current directory whose name starts with prefix. */
static int count_prefixed(const char *prefix) {
    DIR *d = opendir(".");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d) closedir(d);
    return n;
}

static const char *const WORDS[] = {"the", "cat", "dog", "bird", "runs", "sleeps", "sings", "in", "park", "house"};
#define NWORDS ((int)(sizeof WORDS / sizeof *WORDS))

/* vocab.txt, data.tsv, empty.tsv and the classifier directory "ft" (labels neg, pos). */
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
        fprintf(d, "%s\tthe %s %s in the %s\n", i % 2 ? "pos" : "neg", i % 2 ? "cat" : "dog", WORDS[4 + i % 3],
                WORDS[8 + i % 2]);
    fclose(d);
    write_str("empty.tsv", "label\ttext\n");
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = 5 + NWORDS, cfg.hidden_size = 16, cfg.num_hidden_layers = 1, cfg.num_attention_heads = 2;
    cfg.intermediate_size = 32, cfg.max_position_embeddings = 32, cfg.num_labels = 2;
    cfg.head = TS_BERT_SEQ_CLASSIFICATION;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &cfg, .head = cfg.head, .batch = 1, .seq = 8, .seed = 3,
                            .threads = 1, .infer_fetches = (const char *const[]){"logits"}, .ninfer_fetches = 1};
    ts_program *p = NULL;
    CHECK_OK(ts_bert_train_programs(&o, NULL, &p));
    char *labels[] = {"neg", "pos"};
    ts_model_meta meta = {.max_len = 16, .lowercase = 1, .labels = labels, .nlabels = 2};
    if (p) CHECK_OK(ts_model_save_dir("ft", p, &cfg, "vocab.txt", &meta));
    ts_program_free(p);
    write_str("ft/.tessera.lock", "123\n"); /* a finished run's lock: not part of the copy */
}

static ts_quantize_opts dyn_opts(const char *out) {
    return (ts_quantize_opts){.struct_size = sizeof(ts_quantize_opts), .model_dir = "ft", .out_dir = out,
                              .mode = TS_QUANT_DYNAMIC, .max_drop = -1, .batch = 4, .threads = 1};
}

static void test_dynamic(void) {
    ts_quantize_opts o = dyn_opts("out/ft8"); /* its parent made too */
    o.eval_file = "data.tsv";
    ts_quantize_report r = {.struct_size = sizeof r};
    CHECK_OK(ts_quantize_model_dir(&o, &r));
    CHECK(r.written && r.evaluated && !r.calibrated && r.task == TS_FINETUNE_CLASSIFY && r.eval_rows == 24,
          "report: written %d evaluated %d calibrated %d task %d rows %lld", r.written, r.evaluated, r.calibrated,
          r.task, (long long)r.eval_rows);
    CHECK(r.float_score >= 0 && r.float_score <= 100 && r.int8_score >= 0 && r.int8_score <= 100 &&
          fabs(r.drop - (r.float_score - r.int8_score)) < 1e-9 && r.max_prob_diff >= r.mean_prob_diff,
          "scores: float %g int8 %g drop %g, diffs %g %g", r.float_score, r.int8_score, r.drop, r.max_prob_diff,
          r.mean_prob_diff);
    CHECK(same_file("ft/model.safetensors", "out/ft8/model.safetensors") && same_file("ft/vocab.txt", "out/ft8/vocab.txt"),
          "the copy's weights or vocabulary differ");
    CHECK(!exists("out/ft8/.tessera.lock"), "the run lock was copied");
    const char *cfg = read_str("out/ft8/config.json"), *orig = read_str("ft/config.json");
    const char *rec = strstr(cfg, "\"quantization\": {\"mode\": \"dynamic\"");
    CHECK(rec && !strncmp(cfg, orig, strlen(orig) - 3) && strstr(cfg, "\"id2label\""), "config: %s", cfg);
    ts_quant_record q;
    CHECK_OK(ts_quant_record_load("out/ft8", &q));
    CHECK(q.mode == TS_QUANT_DYNAMIC, "record mode %d", q.mode);
    ts_quant_record_free(&q);
    DIR *d = opendir("out");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK(n == 1, "out/ holds %d entries (a temporary directory left?)", n);
}

static void test_static(void) {
    for (int m = 0; m < 3; m++) {
        char out[32];
        snprintf(out, sizeof out, "fts-%s", ts_calib_method_name(m));
        ts_quantize_opts o = dyn_opts(out);
        o.mode = TS_QUANT_STATIC, o.calib_file = "data.tsv", o.method = m, o.samples = 10, o.eval_file = "data.tsv";
        ts_quantize_report r = {.struct_size = sizeof r};
        CHECK_OK(ts_quantize_model_dir(&o, &r));
        CHECK(r.calibrated && r.calib_samples == 10 && r.nscales > 0 && r.written, "%s: calibrated %d on %lld, %d scales",
              out, r.calibrated, (long long)r.calib_samples, r.nscales);
        char path[64], want[96];
        snprintf(path, sizeof path, "%s/config.json", out);
        snprintf(want, sizeof want, "\"mode\": \"static\", \"method\": \"%s\", \"samples\": 10", ts_calib_method_name(m));
        const char *cfg = read_str(path);
        CHECK(strstr(cfg, want) && strstr(cfg, "\"classifier.weight\": "), "%s: %s", path, cfg);
        ts_quant_record q;
        CHECK_OK(ts_quant_record_load(out, &q));
        CHECK(q.mode == TS_QUANT_STATIC && q.nscales == r.nscales, "%s: record mode %d, %d scales", out, q.mode,
              q.nscales);
        ts_quant_record_free(&q);
        if (m == 0 && r.drop > 0) { /* int8 lost: a limit below that refuses the copy */
            o.out_dir = "refused", o.max_drop = r.drop / 2;
            CHECK_STATUS(ts_quantize_model_dir(&o, NULL), TS_ERR_RUNTIME);
            CHECK_ERRMSG("max_drop", "refused not written");
            CHECK(!exists("refused") && count_prefixed("refused") == 0, "a refused copy was written");
        }
    }
    CHECK(ts_calib_method_parse("kl") == -1 && ts_calib_method_parse("entropy") == TS_CALIB_ENTROPY &&
          !strcmp(ts_calib_method_name(9), "?"), "the methods' names");
}

static void test_existing_out(void) {
    CHECK(mkdir("busy", 0777) == 0, "mkdir busy");
    write_str("busy/notes.txt", "mine\n");
    write_str("busy/config.json", "{\"old\": 1}\n");
    ts_quantize_opts o = dyn_opts("busy");
    CHECK_OK(ts_quantize_model_dir(&o, NULL));
    CHECK(!strcmp(read_str("busy/notes.txt"), "mine\n"), "a file of out_dir's own was lost");
    CHECK(strstr(read_str("busy/config.json"), "\"quantization\"") && same_file("ft/vocab.txt", "busy/vocab.txt"),
          "busy/config.json: %s", read_str("busy/config.json"));
    CHECK(count_prefixed("busy.tmp-") == 0, "a temporary directory was left");
}

/* Writing fails part-way (the weights exceed the file size limit): nothing is left behind. */
static void test_write_failure(void) {
    signal(SIGXFSZ, SIG_IGN);
    struct stat sb;
    CHECK(stat("ft/model.safetensors", &sb) == 0 && sb.st_size > 8192, "the weights are too small to test with");
    struct rlimit rl = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit: %s", strerror(errno));
    ts_quantize_opts o = dyn_opts("partial");
    ts_status st = ts_quantize_model_dir(&o, NULL);
    CHECK(st == TS_ERR_IO, "a write over the size limit: %s (%s)", ts_status_name(st), ts_last_error());
    CHECK(!exists("partial") && count_prefixed("partial") == 0, "a partial copy was left");
}

static void test_bad_input(void) {
    ts_quantize_opts o = dyn_opts("ft8b");
    CHECK_OK(ts_quantize_model_dir(&o, NULL));
    o = dyn_opts("x");
    o.model_dir = "ft8b"; /* quantized already */
    CHECK_STATUS(ts_quantize_model_dir(&o, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("model_dir ft8b is quantized already");
    o = dyn_opts("ft");
    CHECK_STATUS(ts_quantize_model_dir(&o, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("out_dir is model_dir");
    o = dyn_opts("x");
    o.mode = TS_QUANT_STATIC, o.calib_file = "empty.tsv";
    CHECK_STATUS(ts_quantize_model_dir(&o, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("calib_file empty.tsv has no rows");
    o = dyn_opts("x");
    o.model_dir = "no_such_dir";
    CHECK_STATUS(ts_quantize_model_dir(&o, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("model_dir no_such_dir");
    o = dyn_opts("x");
    o.calib_file = "data.tsv";
    CHECK_STATUS(ts_quantize_model_dir(&o, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("calib_file");
    ts_quantize_report small = {.struct_size = 8};
    CHECK_STATUS(ts_quantize_model_dir(&o, &small), TS_ERR_ARG);
    CHECK(!exists("x") && count_prefixed("x.tmp-") == 0, "a refused copy was written");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/ts_quantize_dir_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    make_inputs();
    RUN(test_dynamic);
    RUN(test_static);
    RUN(test_existing_out);
    RUN(test_write_failure);
    RUN(test_bad_input);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return tu_finish("test_quantize_dir");
}
