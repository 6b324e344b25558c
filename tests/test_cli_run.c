/*
 * test_cli_run.c — `tessera run` (cli/run.c) end to end: the built command is run as a child
 * process (TS_CLI_PATH, else ./tessera in the build directory, where ctest runs) on files made
 * here, and its exit status, stderr and output file are checked.
 *  - the BERT parity fixture (tests/fixtures/bert, BertForPreTraining): a model directory of its
 *    config.json and model.safetensors gives last_hidden_state, pooler_output,
 *    prediction_logits and seq_relationship_logits within 1e-4 (max |a - b| / max |b|) of the
 *    PyTorch reference, and nothing else (no loss); i64 inputs give the same bits as i32, and
 *    absent token_type_ids / attention_mask the same as explicit zeros / ones; --dtype bf16
 *    agrees with f32 at cosine similarity >= 0.999 (and differs from it: bf16 did run);
 *  - the library side of --dtype bf16 (ts_bert_config.compute_dtype): a training step in bf16
 *    compute has every parameter's gradient, in f32, close to the f32 step's;
 *  - a bare BertModel checkpoint (names without "bert.") loads; --init-random is deterministic
 *    and needs no model.safetensors; --profile prints the op and layer tables;
 *  - `tessera tokenize --out` writes the batch `run` reads: lines of text through a vocabulary
 *    file to the fixture's outputs, each row's logits those of its line run alone; --tokens with
 *    --out refused;
 *  - bad input (flags, files, tensors): a non-zero exit, never a signal or a sanitizer report,
 *    and a message on stderr naming the flag, file or tensor at fault;
 *  - with the argument --bert-base (ctest cli_run_bert_base, label slow): a BERT-Base-sized
 *    random model (12 layers, hidden 768, 12 heads, FFN 3072, vocab 30522) on a batch of 8 x 128,
 *    f32 and bf16: cosine >= 0.999 on last_hidden_state and pooler_output; times printed.
 */
#define _GNU_SOURCE /* nftw */
#include "tessera_apps.h"
#include "test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#ifndef TS_CLI_PATH
#define TS_CLI_PATH "./tessera"
#endif
#ifdef TS_SOURCE_DIR
#define FIXTURE_DIR TS_SOURCE_DIR "/tests/fixtures/bert"
#else
#define FIXTURE_DIR "tests/fixtures/bert"
#endif

#define TOL 1e-4
#define MIN_COSINE 0.999

/* ------------------------------------------------------------------ files */

static char tmpdir[256];

/* A fresh temporary directory for this case (removed by cleanup()). */
static void make_tmpdir(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/ts_cli_run_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}
static void cleanup(void) {
    if (tmpdir[0]) nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    tmpdir[0] = 0;
}

/* dir/name in a buffer that lives to the end of the case (each case is a process of its own). */
static const char *path_in(const char *dir, const char *name) {
    static char pool[512][600];
    static int k;
    if (k == 512) {
        fprintf(stderr, "test_cli_run: out of path buffers\n");
        exit(1);
    }
    snprintf(pool[k], sizeof pool[k], "%s/%s", dir, name);
    return pool[k++];
}
static const char *tmp(const char *name) { return path_in(tmpdir, name); }
static const char *fixture(const char *name) { return path_in(FIXTURE_DIR, name); }

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* A model directory tmpdir/<dir> with links to the fixture's config.json and model.safetensors. */
static const char *fixture_model(const char *dir) {
    const char *d = tmp(dir);
    mkdir(d, 0700);
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/config.json", d);
    snprintf(b, sizeof b, "%s/model.safetensors", d);
    CHECK(symlink(fixture("config.json"), a) == 0, "symlink %s", a);
    CHECK(symlink(fixture("model.safetensors"), b) == 0, "symlink %s", b);
    return d;
}

/* The named tensor of a safetensors file (NULL and a failed CHECK when it cannot be read). */
static ts_tensor *load(const char *path, const char *name) {
    ts_safetensors *st = ts_safetensors_open(path);
    CHECK(st != NULL, "open %s: %s", path, ts_last_error());
    if (!st) return NULL;
    ts_tensor *t = NULL;
    CHECK_OK(ts_safetensors_get(st, name, &t));
    ts_safetensors_close(st);
    return t;
}

static void save(const char *path, int n, const char *const *names, ts_tensor *const *ts) {
    CHECK_OK(ts_safetensors_save(path, n, names, (const ts_tensor *const *)ts, NULL));
}

/* ------------------------------------------------------------------ running the command */

typedef struct cli_result {
    int signaled, sig, code;
    char out[8192], err[8192];
} cli_result;

static void slurp(const char *path, char *buf, size_t cap) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
}

/* Run `tessera run ARGS...` (NULL-terminated), stdout and stderr captured. */
static cli_result *run_cli(const char *first, ...) {
    static cli_result r;
    memset(&r, 0, sizeof r);
    const char *argv[64] = {TS_CLI_PATH, "run"};
    int n = 2;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 63; a = va_arg(ap, const char *)) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    static char outp[300], errp[300];
    snprintf(outp, sizeof outp, "%s/cli.stdout", tmpdir);
    snprintf(errp, sizeof errp, "%s/cli.stderr", tmpdir);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(126);
        execv(TS_CLI_PATH, (char *const *)argv);
        dprintf(2, "exec %s: %s\n", TS_CLI_PATH, strerror(errno));
        _exit(127);
    }
    int st = 0;
    CHECK(pid > 0, "fork failed");
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    r.signaled = WIFSIGNALED(st);
    r.sig = r.signaled ? WTERMSIG(st) : 0;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    slurp(outp, r.out, sizeof r.out);
    slurp(errp, r.err, sizeof r.err);
    return &r;
}

#define RUN_CLI(...) run_cli(__VA_ARGS__, (const char *)NULL)

/* The command succeeded (exit 0, no signal). */
static int ok_run(const cli_result *r, const char *what) {
    CHECK(!r->signaled && r->code == 0, "%s: exit code %d, signal %d; stderr: %s", what, r->code, r->sig, r->err);
    if (r->out[0]) printf("    %s", r->out);
    return !r->signaled && r->code == 0;
}

/* ------------------------------------------------------------------ comparisons */

static double max_abs(ts_tensor *t) {
    double m = 0;
    for (int64_t i = 0; i < ts_tensor_numel(t); i++) m = fmax(m, fabs(tu_f32(t)[i]));
    return m;
}

static double cosine(ts_tensor *a, ts_tensor *b) {
    if (!a || !b || !tu_same_shape(a, b)) return -2;
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < ts_tensor_numel(a); i++) {
        double x = tu_f32(a)[i], y = tu_f32(b)[i];
        ab += x * y, aa += x * x, bb += y * y;
    }
    return ab / sqrt(aa * bb);
}

/* Tensor `name` of files a and b: cosine similarity >= MIN_COSINE; prints it. */
static double check_cosine(const char *a, const char *b, const char *name) {
    ts_tensor *x = load(a, name), *y = load(b, name);
    double c = cosine(x, y);
    printf("    %-26s bf16 vs f32: cosine %.6f, max|diff| / max|f32| %.2e\n", name, c,
           x && y && tu_same_shape(x, y) ? tu_max_abs_diff_f(tu_f32(x), tu_f32(y), ts_tensor_numel(x)) / max_abs(y)
                                         : INFINITY);
    CHECK(c >= MIN_COSINE, "%s: cosine %.6f < %.3f", name, c, MIN_COSINE);
    ts_tensor_free(x);
    ts_tensor_free(y);
    return c;
}

/* Tensor `name` of files a and b bitwise equal. */
static void check_same(const char *a, const char *b, const char *name) {
    ts_tensor *x = load(a, name), *y = load(b, name);
    CHECK(tu_bitwise_equal(x, y), "%s differs between %s and %s", name, a, b);
    ts_tensor_free(x);
    ts_tensor_free(y);
}

static const char *const PRETRAINING_OUTPUTS[] = {"last_hidden_state", "pooler_output", "prediction_logits",
                                                  "seq_relationship_logits"};

/* ------------------------------------------------------------------ the parity fixture */

static void test_fixture_f32(void) {
    make_tmpdir();
    const char *model = fixture_model("model");
    cli_result *r = RUN_CLI("--model", model, "--inputs", fixture("inputs.safetensors"), "--outputs",
                            tmp("out.safetensors"));
    if (ok_run(r, "tessera run on the fixture")) {
        ts_safetensors *st = ts_safetensors_open(tmp("out.safetensors"));
        CHECK(st != NULL, "open output: %s", ts_last_error());
        if (st) {
            CHECK(ts_safetensors_count(st) == 4, "the output holds %d tensors, expected the 4 outputs",
                  ts_safetensors_count(st));
            CHECK(ts_safetensors_info(st, "loss", NULL, NULL, NULL) == TS_ERR_NOT_FOUND, "loss written");
            ts_safetensors_close(st);
        }
        for (int i = 0; i < 4; i++) {
            const char *n = PRETRAINING_OUTPUTS[i];
            ts_tensor *a = load(tmp("out.safetensors"), n), *b = load(fixture("expected.safetensors"), n);
            double err = a && b && tu_same_shape(a, b)
                             ? tu_max_abs_diff_f(tu_f32(a), tu_f32(b), ts_tensor_numel(a)) / fmax(max_abs(b), 1e-30)
                             : INFINITY;
            printf("    %-26s vs PyTorch: rel err %.2e\n", n, err);
            CHECK(err <= TOL, "%s: relative error %.3e > %.0e", n, err, TOL);
            ts_tensor_free(a);
            ts_tensor_free(b);
        }
    }
    cleanup();
}

/* i64 inputs give the bits of i32 ones; absent token_type_ids / attention_mask those of zeros /
 * ones. */
static void test_fixture_inputs(void) {
    make_tmpdir();
    const char *model = fixture_model("model");
    static const char *const names[] = {"input_ids", "token_type_ids", "attention_mask"};
    ts_tensor *in[3], *wide[3];
    for (int i = 0; i < 3; i++) {
        in[i] = load(fixture("inputs.safetensors"), names[i]);
        if (!in[i]) return cleanup();
        wide[i] = ts_tensor_new(TS_I64, 2, ts_tensor_shape(in[i]));
        for (int64_t j = 0; j < ts_tensor_numel(in[i]); j++)
            ((int64_t *)ts_tensor_data(wide[i]))[j] = ((int32_t *)ts_tensor_data(in[i]))[j];
    }
    save(tmp("in32.safetensors"), 3, names, in);
    save(tmp("in64.safetensors"), 3, names, wide);
    ok_run(RUN_CLI("--model", model, "--inputs", tmp("in32.safetensors"), "--outputs", tmp("o32.safetensors")),
           "i32 inputs");
    ok_run(RUN_CLI("--model", model, "--inputs", tmp("in64.safetensors"), "--outputs", tmp("o64.safetensors")),
           "i64 inputs");
    for (int i = 0; i < 4; i++) check_same(tmp("o32.safetensors"), tmp("o64.safetensors"), PRETRAINING_OUTPUTS[i]);

    /* defaults: zeros and ones, spelled out against left out */
    int64_t *sh = (int64_t *)ts_tensor_shape(in[0]);
    ts_tensor *zeros = ts_tensor_new(TS_I32, 2, sh), *ones = ts_tensor_new(TS_I32, 2, sh);
    for (int64_t j = 0; j < ts_tensor_numel(ones); j++) ((int32_t *)ts_tensor_data(ones))[j] = 1;
    save(tmp("full.safetensors"), 3, names, (ts_tensor *[]){in[0], zeros, ones});
    save(tmp("ids.safetensors"), 1, names, in);
    ok_run(RUN_CLI("--model", model, "--inputs", tmp("full.safetensors"), "--outputs", tmp("of.safetensors")),
           "explicit defaults");
    ok_run(RUN_CLI("--model", model, "--inputs", tmp("ids.safetensors"), "--outputs", tmp("oi.safetensors")),
           "input_ids only");
    for (int i = 0; i < 4; i++) check_same(tmp("of.safetensors"), tmp("oi.safetensors"), PRETRAINING_OUTPUTS[i]);
    ts_tensor_free(zeros);
    ts_tensor_free(ones);
    for (int i = 0; i < 3; i++) ts_tensor_free(in[i]), ts_tensor_free(wide[i]);
    cleanup();
}

static void test_fixture_bf16(void) {
    make_tmpdir();
    const char *model = fixture_model("model");
    ok_run(RUN_CLI("--model", model, "--inputs", fixture("inputs.safetensors"), "--outputs", tmp("f32.safetensors"),
                   "--dtype", "f32"),
           "--dtype f32");
    ok_run(RUN_CLI("--model", model, "--inputs", fixture("inputs.safetensors"), "--outputs",
                   tmp("bf16.safetensors"), "--dtype", "bf16", "--threads", "1"),
           "--dtype bf16");
    for (int i = 0; i < 4; i++)
        check_cosine(tmp("bf16.safetensors"), tmp("f32.safetensors"), PRETRAINING_OUTPUTS[i]);
    ts_tensor *x = load(tmp("bf16.safetensors"), "last_hidden_state");
    ts_tensor *y = load(tmp("f32.safetensors"), "last_hidden_state");
    CHECK(x && y && !tu_bitwise_equal(x, y), "--dtype bf16 gives the bits of f32: no bf16 matmul ran");
    ts_tensor_free(x);
    ts_tensor_free(y);
    cleanup();
}

/* The library side of --dtype bf16 (ts_bert_config.compute_dtype): a training step of the
 * fixture's BertForPreTraining in bf16 compute has gradients for every parameter, in f32, close
 * to the f32 step's (cosine >= 0.99 each; the loss within 1%). The key biases' gradients are
 * rounding noise around zero either way (see test_bert_parity.c) and are left out. */
static ts_program *fixture_step(ts_dtype compute, const char ***fetch_out, int *nf_out) {
    ts_bert_config cfg = {.struct_size = sizeof cfg};
    if (CHECK_OK(ts_bert_config_load(fixture("config.json"), &cfg))) return NULL;
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.f;
    cfg.compute_dtype = compute;
    ts_graph *g = ts_graph_new();
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &cfg, TS_BERT_PRETRAINING, 3, 11, &o));
    CHECK_OK(ts_backward(g, o.loss));
    /* fetches: the loss and every parameter's gradient, named after the parameters of a first
     * program compiled for the loss alone */
    static char names[64][256];
    static const char *fetch[65];
    int nf = 0;
    fetch[nf++] = "loss";
    ts_program *p0 = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = fetch});
    CHECK(p0 != NULL, "compile: %s", ts_last_error());
    if (!p0) return ts_graph_free(g), NULL;
    for (int i = 0; i < ts_program_num_params(p0) && nf < 65; i++) {
        snprintf(names[nf - 1], sizeof names[0], "%s@GRAD", ts_program_param_name(p0, i));
        fetch[nf] = names[nf - 1];
        nf++;
    }
    ts_program_free(p0);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = nf, .fetches = fetch});
    CHECK(p != NULL, "compile with gradients (%s): %s", ts_dtype_name(compute), ts_last_error());
    ts_graph_free(g);
    if (!p) return NULL;
    CHECK_OK(ts_program_load(p, fixture("model.safetensors"), 1, NULL));
    ts_safetensors *in = ts_safetensors_open(fixture("inputs.safetensors"));
    CHECK(in != NULL, "open inputs: %s", ts_last_error());
    for (int i = 0; in && i < ts_safetensors_count(in); i++) {
        ts_tensor *t = NULL;
        CHECK_OK(ts_safetensors_get(in, ts_safetensors_name(in, i), &t));
        CHECK_OK(ts_program_feed(p, ts_safetensors_name(in, i), t));
        ts_tensor_free(t);
    }
    ts_safetensors_close(in);
    CHECK_OK(ts_program_run(p));
    *fetch_out = fetch;
    *nf_out = nf;
    return p;
}

static void test_bf16_gradients(void) {
    const char **fetch = NULL;
    int nf = 0;
    ts_program *pf = fixture_step(TS_F32, &fetch, &nf);
    int nf32 = nf;
    ts_program *pb = fixture_step(TS_BF16, &fetch, &nf);
    if (!pf || !pb) goto out;
    CHECK(nf == nf32 && nf > 40, "%d and %d fetches", nf32, nf);
    double worst = 1;
    const char *worst_name = "";
    for (int i = 0; i < nf; i++) {
        ts_tensor *a = TU_FETCH(pb, fetch[i]), *b = TU_FETCH(pf, fetch[i]);
        if (a && b) {
            CHECK(ts_tensor_dtype(a) == TS_F32, "%s is %s", fetch[i], ts_dtype_name(ts_tensor_dtype(a)));
            if (i == 0) {
                double la = tu_f32(a)[0], lb = tu_f32(b)[0];
                printf("    loss: bf16 %.6f, f32 %.6f\n", la, lb);
                CHECK(fabs(la - lb) <= 1e-2 * fabs(lb), "loss: bf16 %g vs f32 %g", la, lb);
            } else if (!strstr(fetch[i], "attention.self.key.bias")) {
                double c = cosine(a, b);
                CHECK(c >= 0.99, "%s: cosine %.5f between the bf16 and f32 gradients", fetch[i], c);
                if (c < worst) worst = c, worst_name = fetch[i];
            }
        }
        ts_tensor_free(a);
        ts_tensor_free(b);
    }
    printf("    %d gradients: lowest cosine bf16 vs f32 %.5f (%s)\n", nf - 1, worst, worst_name);
out:
    ts_program_free(pf);
    ts_program_free(pb);
}

/* A checkpoint of a bare BertModel names its tensors without "bert." and has no cls.*. */
static void test_bare_bertmodel(void) {
    make_tmpdir();
    const char *dir = tmp("bare");
    mkdir(dir, 0700);
    ts_safetensors *st = ts_safetensors_open(fixture("model.safetensors"));
    CHECK(st != NULL, "open fixture model: %s", ts_last_error());
    if (!st) return cleanup();
    int n = ts_safetensors_count(st), k = 0;
    const char **names = calloc((size_t)n, sizeof *names);
    ts_tensor **ts = calloc((size_t)n, sizeof *ts);
    for (int i = 0; i < n; i++) {
        const char *name = ts_safetensors_name(st, i);
        if (strncmp(name, "bert.", 5) != 0) continue;
        names[k] = name + 5;
        CHECK_OK(ts_safetensors_get(st, name, &ts[k]));
        k++;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    save(path, k, names, ts);
    for (int i = 0; i < k; i++) ts_tensor_free(ts[i]);
    free(ts);
    free(names);
    ts_safetensors_close(st);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, "{\"architectures\": [\"BertModel\"], \"vocab_size\": 99, \"hidden_size\": 32,\n"
                     " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 37,\n"
                     " \"max_position_embeddings\": 64, \"type_vocab_size\": 2}\n");
    if (ok_run(RUN_CLI("--model", dir, "--inputs", fixture("inputs.safetensors"), "--outputs", tmp("o.safetensors")),
               "bare BertModel")) {
        for (int i = 0; i < 2; i++) {
            ts_tensor *a = load(tmp("o.safetensors"), PRETRAINING_OUTPUTS[i]);
            ts_tensor *b = load(fixture("expected.safetensors"), PRETRAINING_OUTPUTS[i]);
            double err = a && b && tu_same_shape(a, b)
                             ? tu_max_abs_diff_f(tu_f32(a), tu_f32(b), ts_tensor_numel(a)) / max_abs(b)
                             : INFINITY;
            CHECK(err <= TOL, "%s: relative error %.3e", PRETRAINING_OUTPUTS[i], err);
            ts_tensor_free(a);
            ts_tensor_free(b);
        }
        ts_safetensors *o = ts_safetensors_open(tmp("o.safetensors"));
        CHECK(o && ts_safetensors_count(o) == 2, "BertModel writes last_hidden_state and pooler_output only");
        ts_safetensors_close(o);
    }
    cleanup();
}

/* --init-random: no model.safetensors needed; the same seed gives the same outputs. */
static void test_init_random(void) {
    make_tmpdir();
    const char *dir = tmp("m");
    mkdir(dir, 0700);
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, "{\"architectures\": [\"BertForQuestionAnswering\"], \"vocab_size\": 99, \"hidden_size\": 32,"
                     " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 37,"
                     " \"max_position_embeddings\": 64, \"type_vocab_size\": 2}");
    const char *in = fixture("inputs.safetensors");
    ok_run(RUN_CLI("--model", dir, "--inputs", in, "--outputs", tmp("a.safetensors"), "--init-random", "7"), "seed 7");
    ok_run(RUN_CLI("--model", dir, "--inputs", in, "--outputs", tmp("b.safetensors"), "--init-random", "7",
                   "--repeat", "3"),
           "seed 7 again");
    ok_run(RUN_CLI("--model", dir, "--inputs", in, "--outputs", tmp("c.safetensors"), "--init-random", "8"), "seed 8");
    /* --profile: after the runs (the first, a warm-up, left out), the totals, op and layer tables */
    const cli_result *pr = RUN_CLI("--model", dir, "--inputs", in, "--outputs", tmp("d.safetensors"), "--init-random",
                                   "7", "--repeat", "2", "--profile");
    if (ok_run(pr, "--profile"))
        CHECK(strstr(pr->out, "profile: 1 run, ") && strstr(pr->out, "outside kernels") &&
                  strstr(pr->out, "% kernel") && strstr(pr->out, "\nmatmul ") &&
                  strstr(pr->out, "\nbert.encoder.layer.1 "),
              "--profile report incomplete:\n%s", pr->out);
    static const char *const qa[] = {"last_hidden_state", "start_logits", "end_logits"};
    for (int i = 0; i < 3; i++) check_same(tmp("a.safetensors"), tmp("b.safetensors"), qa[i]);
    ts_tensor *a = load(tmp("a.safetensors"), "start_logits"), *c = load(tmp("c.safetensors"), "start_logits");
    CHECK(a && c && !tu_bitwise_equal(a, c), "seeds 7 and 8 give the same start_logits");
    ts_tensor_free(a);
    ts_tensor_free(c);
    ts_safetensors *o = ts_safetensors_open(tmp("a.safetensors"));
    CHECK(o && ts_safetensors_count(o) == 3, "question answering writes 3 outputs");
    ts_safetensors_close(o);
    cleanup();
}

/* ------------------------------------------------------------------ bad input */

/* r failed cleanly: exit code `code` (or any non-zero one when code < 0), no signal, no
 * sanitizer report, and stderr holds every word given. */
static void expect_failure(const char *what, const cli_result *r, int code, ...) {
    CHECK(!r->signaled, "%s: killed by signal %d (%s); stderr: %s", what, r->sig, strsignal(r->sig), r->err);
    CHECK(r->code != 0 && (code < 0 || r->code == code), "%s: exit code %d, expected %d; stderr: %s", what, r->code,
          code, r->err);
    CHECK(!strstr(r->err, "Sanitizer") && !strstr(r->err, "runtime error"), "%s: sanitizer report: %s", what, r->err);
    if (getenv("TS_TEST_VERBOSE")) printf("    %s -> %d: %s", what, r->code, r->err);
    va_list ap;
    va_start(ap, code);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        CHECK(strstr(r->err, w) != NULL, "%s: \"%s\" is not in stderr: %s", what, w, r->err);
    va_end(ap);
}
#define EXPECT_FAIL(what, r, code, ...) expect_failure(what, r, code, __VA_ARGS__, (const char *)NULL)

static void copy_prefix(const char *from, const char *to, long nbytes) {
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    CHECK(f && g, "copy %s -> %s", from, to);
    if (f && g) {
        char buf[4096];
        size_t n;
        long left = nbytes;
        while (left > 0 && (n = fread(buf, 1, left < 4096 ? (size_t)left : 4096, f)) > 0) {
            fwrite(buf, 1, n, g);
            left -= (long)n;
        }
    }
    if (f) fclose(f);
    if (g) fclose(g);
}

/* `tessera tokenize ARGS < lines` through the shell: its exit code. */
static int tokenize(const char *args, const char *lines) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' tokenize %s < '%s' > '%s' 2> '%s'", TS_CLI_PATH, args, lines,
             tmp("tok.stdout"), tmp("tok.stderr"));
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_tokenize_out(void) {
    make_tmpdir();
    const char *model = fixture_model("model");
    /* ids 0-4 the specials, then words: every id under the fixture's vocabulary of 99 */
    write_text(tmp("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n");
    write_text(tmp("two.txt"), "the cat sat on the mat\tthe cat\ncat\n");
    write_text(tmp("one.txt"), "cat\n");
    char args[1024];
    snprintf(args, sizeof args, "--vocab '%s' --pair --max-len 12 --out '%s'", tmp("vocab.txt"), tmp("two.st"));
    CHECK(tokenize(args, tmp("two.txt")) == 0, "tokenize --out exit code");
    char out[512];
    slurp(tmp("tok.stdout"), out, sizeof out);
    CHECK(strstr(out, "attention_mask [2, 12] i32") != NULL, "tokenize --out says what it wrote: %s", out);
    snprintf(args, sizeof args, "--vocab '%s' --pair --max-len 12 --out '%s'", tmp("vocab.txt"), tmp("one.st"));
    CHECK(tokenize(args, tmp("one.txt")) == 0, "tokenize --out, one line");
    if (!ok_run(RUN_CLI("--model", model, "--inputs", tmp("two.st"), "--outputs", tmp("o2.st")), "run on two lines") ||
        !ok_run(RUN_CLI("--model", model, "--inputs", tmp("one.st"), "--outputs", tmp("o1.st")), "run on one line"))
        return cleanup();
    /* the second row of the batch is the one line run alone: padding and types read as written */
    ts_tensor *two = load(tmp("o2.st"), "seq_relationship_logits"), *one = load(tmp("o1.st"), "seq_relationship_logits");
    if (two && one) {
        const float *a = (const float *)ts_tensor_data(two) + 2, *b = ts_tensor_data(one);
        CHECK(ts_tensor_shape(two)[0] == 2 && fabsf(a[0] - b[0]) < 1e-5f && fabsf(a[1] - b[1]) < 1e-5f,
              "row 1 of the batch %g %g, alone %g %g", a[0], a[1], b[0], b[1]);
    }
    ts_tensor_free(two), ts_tensor_free(one);
    snprintf(args, sizeof args, "--vocab '%s' --tokens --out '%s'", tmp("vocab.txt"), tmp("x.st"));
    CHECK(tokenize(args, tmp("one.txt")) == 2, "--tokens with --out: a usage error");
    slurp(tmp("tok.stderr"), out, sizeof out);
    CHECK(strstr(out, "--tokens") && strstr(out, "--out"), "names both flags: %s", out);
    cleanup();
}

static void test_bad_flags(void) {
    make_tmpdir();
    const char *model = fixture_model("model"), *in = fixture("inputs.safetensors"), *out = tmp("o.safetensors");
    EXPECT_FAIL("no --model", RUN_CLI("--inputs", in, "--outputs", out), 2, "--model");
    EXPECT_FAIL("no --inputs", RUN_CLI("--model", model, "--outputs", out), 2, "--inputs");
    EXPECT_FAIL("no --outputs", RUN_CLI("--model", model, "--inputs", in), 2, "--outputs");
    EXPECT_FAIL("--model without value", RUN_CLI("--inputs", in, "--outputs", out, "--model"), 2, "--model");
    EXPECT_FAIL("unknown device", RUN_CLI("--model", model, "--inputs", in, "--outputs", out, "--device", "tpu"), 2,
                "--device", "tpu");
    EXPECT_FAIL("bad dtype", RUN_CLI("--model", model, "--inputs", in, "--outputs", out, "--dtype", "f16"), 2,
                "--dtype", "f16");
    EXPECT_FAIL("bad threads", RUN_CLI("--model", model, "--inputs", in, "--outputs", out, "--threads", "0"), 2,
                "--threads");
    EXPECT_FAIL("bad seed", RUN_CLI("--model", model, "--inputs", in, "--outputs", out, "--init-random", "x"), 2,
                "--init-random");
    EXPECT_FAIL("unknown flag", RUN_CLI("--model", model, "--inputs", in, "--outputs", out, "--fast"), 2, "--fast");
    EXPECT_FAIL("unwritable output", RUN_CLI("--model", model, "--inputs", in, "--outputs", tmp("no/such/dir/o.st")), 1,
                "no/such/dir");
    CHECK(access(out, F_OK) != 0, "an output was written by a failed run");
    cleanup();
}

static void test_bad_model(void) {
    make_tmpdir();
    const char *in = fixture("inputs.safetensors"), *out = tmp("o.safetensors");
    char p[600];

    EXPECT_FAIL("missing model dir", RUN_CLI("--model", tmp("nothere"), "--inputs", in, "--outputs", out), 2,
                "nothere/config.json");
    const char *empty = tmp("empty");
    mkdir(empty, 0700);
    EXPECT_FAIL("no config.json", RUN_CLI("--model", empty, "--inputs", in, "--outputs", out), 2, "config.json");

    const char *badjson = tmp("badjson");
    mkdir(badjson, 0700);
    snprintf(p, sizeof p, "%s/config.json", badjson);
    write_text(p, "{\"vocab_size\": 99,");
    EXPECT_FAIL("invalid config.json", RUN_CLI("--model", badjson, "--inputs", in, "--outputs", out), 2, "config.json",
                "JSON");

    const char *nofield = tmp("nofield");
    mkdir(nofield, 0700);
    snprintf(p, sizeof p, "%s/config.json", nofield);
    write_text(p, "{\"vocab_size\": 99, \"hidden_size\": 32}");
    EXPECT_FAIL("config.json without a field", RUN_CLI("--model", nofield, "--inputs", in, "--outputs", out), 2,
                "config.json", "num_hidden_layers");

    /* config.json but no model.safetensors */
    const char *noweights = tmp("noweights");
    mkdir(noweights, 0700);
    snprintf(p, sizeof p, "%s/config.json", noweights);
    CHECK(symlink(fixture("config.json"), p) == 0, "symlink");
    EXPECT_FAIL("no model.safetensors", RUN_CLI("--model", noweights, "--inputs", in, "--outputs", out), 2,
                "model.safetensors");

    /* truncated model.safetensors: half the file, then only part of the header */
    const char *trunc = tmp("trunc");
    mkdir(trunc, 0700);
    snprintf(p, sizeof p, "%s/config.json", trunc);
    CHECK(symlink(fixture("config.json"), p) == 0, "symlink");
    snprintf(p, sizeof p, "%s/model.safetensors", trunc);
    struct stat sb;
    CHECK(stat(fixture("model.safetensors"), &sb) == 0, "stat fixture");
    long cuts[] = {(long)sb.st_size / 2, 100, 5, 0};
    for (int i = 0; i < 4; i++) {
        copy_prefix(fixture("model.safetensors"), p, cuts[i]);
        char what[64];
        snprintf(what, sizeof what, "model.safetensors cut to %ld bytes", cuts[i]);
        EXPECT_FAIL(what, RUN_CLI("--model", trunc, "--inputs", in, "--outputs", out), 2, "model.safetensors");
    }

    /* a checkpoint missing one tensor: the error names it */
    const char *partial = tmp("partial");
    mkdir(partial, 0700);
    snprintf(p, sizeof p, "%s/config.json", partial);
    CHECK(symlink(fixture("config.json"), p) == 0, "symlink");
    ts_safetensors *st = ts_safetensors_open(fixture("model.safetensors"));
    if (st) {
        int n = ts_safetensors_count(st), k = 0;
        const char **names = calloc((size_t)n, sizeof *names);
        ts_tensor **ts = calloc((size_t)n, sizeof *ts);
        for (int i = 0; i < n; i++) {
            const char *name = ts_safetensors_name(st, i);
            if (!strcmp(name, "bert.encoder.layer.1.output.dense.weight")) continue;
            names[k] = name;
            CHECK_OK(ts_safetensors_get(st, name, &ts[k]));
            k++;
        }
        snprintf(p, sizeof p, "%s/model.safetensors", partial);
        save(p, k, names, ts);
        for (int i = 0; i < k; i++) ts_tensor_free(ts[i]);
        free(ts);
        free(names);
        ts_safetensors_close(st);
        EXPECT_FAIL("missing tensor", RUN_CLI("--model", partial, "--inputs", in, "--outputs", out), 2,
                    "bert.encoder.layer.1.output.dense.weight");
    }
    CHECK(access(out, F_OK) != 0, "an output was written by a failed run");
    cleanup();
}

static void test_bad_inputs(void) {
    make_tmpdir();
    const char *model = fixture_model("model"), *out = tmp("o.safetensors");
    const char *bad = tmp("bad.safetensors");

    EXPECT_FAIL("missing inputs file", RUN_CLI("--model", model, "--inputs", tmp("none.safetensors"), "--outputs", out),
                2, "none.safetensors");
    write_text(bad, "this is not a safetensors file at all");
    EXPECT_FAIL("corrupt inputs file", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2,
                "bad.safetensors");

    ts_tensor *ids = load(fixture("inputs.safetensors"), "input_ids");
    ts_tensor *mask = load(fixture("inputs.safetensors"), "attention_mask");
    if (!ids || !mask) return cleanup();
    const int64_t *sh = ts_tensor_shape(ids);

    /* no input_ids */
    save(bad, 1, (const char *[]){"attention_mask"}, &mask);
    EXPECT_FAIL("no input_ids", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2, "input_ids",
                "bad.safetensors");

    /* input_ids as f32 */
    ts_tensor *f = ts_tensor_new(TS_F32, 2, sh);
    save(bad, 1, (const char *[]){"input_ids"}, &f);
    EXPECT_FAIL("f32 input_ids", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2, "input_ids", "f32");
    /* attention_mask as f32 */
    save(bad, 2, (const char *[]){"input_ids", "attention_mask"}, (ts_tensor *[]){ids, f});
    EXPECT_FAIL("f32 attention_mask", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2,
                "attention_mask", "f32");
    ts_tensor_free(f);

    /* rank 1 input_ids */
    ts_tensor *flat = ts_tensor_new(TS_I32, 1, (int64_t[]){sh[0] * sh[1]});
    save(bad, 1, (const char *[]){"input_ids"}, &flat);
    EXPECT_FAIL("rank-1 input_ids", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2, "input_ids");
    ts_tensor_free(flat);

    /* token_type_ids of another shape */
    ts_tensor *tt = ts_tensor_new(TS_I32, 2, (int64_t[]){sh[0], sh[1] - 1});
    save(bad, 2, (const char *[]){"input_ids", "token_type_ids"}, (ts_tensor *[]){ids, tt});
    EXPECT_FAIL("token_type_ids shape", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2,
                "token_type_ids");
    ts_tensor_free(tt);

    /* an id outside the vocabulary (99), a token type outside [0, 2), a mask value of 2 */
    ts_tensor *big = ts_tensor_from(TS_I32, 2, sh, ts_tensor_data(ids));
    ((int32_t *)ts_tensor_data(big))[4] = 99;
    save(bad, 1, (const char *[]){"input_ids"}, &big);
    EXPECT_FAIL("id out of range", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2, "input_ids[0, 4]",
                "99");
    ((int32_t *)ts_tensor_data(big))[4] = -1;
    save(bad, 1, (const char *[]){"input_ids"}, &big);
    EXPECT_FAIL("negative id", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2, "input_ids[0, 4]");
    ts_tensor *two = ts_tensor_new(TS_I32, 2, sh);
    ((int32_t *)ts_tensor_data(two))[sh[1] + 2] = 2;
    save(bad, 2, (const char *[]){"input_ids", "token_type_ids"}, (ts_tensor *[]){ids, two});
    EXPECT_FAIL("token type out of range", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2,
                "token_type_ids[1, 2]");
    save(bad, 2, (const char *[]){"input_ids", "attention_mask"}, (ts_tensor *[]){ids, two});
    EXPECT_FAIL("mask value 2", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2, "attention_mask[1, 2]");
    ts_tensor_free(two);
    ts_tensor_free(big);

    /* an i64 id beyond i32 */
    ts_tensor *huge = ts_tensor_new(TS_I64, 2, sh);
    ((int64_t *)ts_tensor_data(huge))[0] = (int64_t)1 << 40;
    save(bad, 1, (const char *[]){"input_ids"}, &huge);
    EXPECT_FAIL("i64 id beyond i32", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2, "input_ids[0, 0]");
    ts_tensor_free(huge);

    /* longer than max_position_embeddings (64) */
    ts_tensor *longer = ts_tensor_new(TS_I32, 2, (int64_t[]){1, 65});
    save(bad, 1, (const char *[]){"input_ids"}, &longer);
    EXPECT_FAIL("seq 65 > 64 positions", RUN_CLI("--model", model, "--inputs", bad, "--outputs", out), 2,
                "max_position_embeddings");
    ts_tensor_free(longer);

    CHECK(access(out, F_OK) != 0, "an output was written by a failed run");
    ts_tensor_free(ids);
    ts_tensor_free(mask);
    cleanup();
}

/* ------------------------------------------------------------------ BERT-Base, random weights */

/* Runs per command: two in a plain build (the second one warm); one under AddressSanitizer,
 * where the casts and elementwise kernels are instrumented (the whole case then took 39 s, 13 s
 * in Release, on 2 cores). */
#if defined(__SANITIZE_ADDRESS__)
#define BASE_REPEAT "1"
#else
#define BASE_REPEAT "2"
#endif

static void test_bert_base(void) {
    make_tmpdir();
    const char *dir = tmp("base");
    mkdir(dir, 0700);
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", dir);
    /* bert-base-uncased's sizes; no "architectures": a BertModel */
    write_text(path, "{\"vocab_size\": 30522, \"hidden_size\": 768, \"num_hidden_layers\": 12,\n"
                     " \"num_attention_heads\": 12, \"intermediate_size\": 3072, \"hidden_act\": \"gelu\",\n"
                     " \"max_position_embeddings\": 512, \"type_vocab_size\": 2, \"layer_norm_eps\": 1e-12,\n"
                     " \"initializer_range\": 0.02}\n");
    enum { B = 8, T = 128 };
    ts_tensor *ids = ts_tensor_new(TS_I64, 2, (int64_t[]){B, T}), *tt = ts_tensor_new(TS_I64, 2, (int64_t[]){B, T});
    ts_tensor *mask = ts_tensor_new(TS_I64, 2, (int64_t[]){B, T});
    tu_rng r = tu_rng_seed(11);
    for (int b = 0; b < B; b++) {
        int len = T - 9 * b; /* rows padded by 0, 9, .. 63 */
        for (int t = 0; t < T; t++) {
            int64_t *id = (int64_t *)ts_tensor_data(ids) + b * T + t;
            *id = t == 0 ? 101 : t == len - 1 ? 102 : t >= len ? 0 : 1000 + tu_randint(&r, 29000);
            ((int64_t *)ts_tensor_data(tt))[b * T + t] = t >= len / 2 && t < len;
            ((int64_t *)ts_tensor_data(mask))[b * T + t] = t < len;
        }
    }
    save(tmp("in.safetensors"), 3, (const char *[]){"input_ids", "token_type_ids", "attention_mask"},
         (ts_tensor *[]){ids, tt, mask});
    ts_tensor_free(ids);
    ts_tensor_free(tt);
    ts_tensor_free(mask);

    double t0 = tu_now();
    int ok = ok_run(RUN_CLI("--model", dir, "--inputs", tmp("in.safetensors"), "--outputs", tmp("f32.safetensors"),
                            "--init-random", "1", "--repeat", BASE_REPEAT),
                    "BERT-Base f32");
    double t1 = tu_now();
    ok &= ok_run(RUN_CLI("--model", dir, "--inputs", tmp("in.safetensors"), "--outputs", tmp("bf16.safetensors"),
                         "--init-random", "1", "--repeat", BASE_REPEAT, "--dtype", "bf16"),
                 "BERT-Base bf16");
    double t2 = tu_now();
    printf("    wall time per command (build, init, %s run(s), write): f32 %.1f s, bf16 %.1f s\n", BASE_REPEAT, t1 - t0,
           t2 - t1);
    if (ok) {
        check_cosine(tmp("bf16.safetensors"), tmp("f32.safetensors"), "last_hidden_state");
        check_cosine(tmp("bf16.safetensors"), tmp("f32.safetensors"), "pooler_output");
    }
    cleanup();
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (access(TS_CLI_PATH, X_OK) != 0) {
        printf("test_cli_run: %s is not built (%s)\n", TS_CLI_PATH, strerror(errno));
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--bert-base")) {
        RUN(test_bert_base);
        return tu_finish("test_cli_run --bert-base");
    }
    RUN(test_fixture_f32);
    RUN(test_fixture_inputs);
    RUN(test_fixture_bf16);
    RUN(test_bf16_gradients);
    RUN(test_bare_bertmodel);
    RUN(test_init_random);
    RUN(test_tokenize_out);
    RUN(test_bad_flags);
    RUN(test_bad_model);
    RUN(test_bad_inputs);
    return tu_finish("test_cli_run");
}
