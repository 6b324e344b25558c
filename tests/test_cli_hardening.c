/*
 * test_cli_hardening.c — the `tessera` command on what a hostile or careless user gives it
 * (issue 10), each a regression test run in both builds (the sanitizer build reports undefined
 * behaviour on stderr, which fails CHECK_RAN / CHECK_FAILS):
 *  - weights holding NaN: run, eval and finetune refuse them naming the file and the tensor;
 *    --allow-nonfinite loads them;
 *  - absurd sizes: config.json fields and pretrain flags beyond the bounds, and batches or models
 *    too large for the device's memory, refused in seconds with what is needed and what the device
 *    has; --device-memory sets the limit;
 *  - tokenize on blank text and an empty pair, eval and finetune on a header-only file;
 *  - --threads beyond 4 x the CPUs;
 *  - two runs on one --out: the second refused at start, naming the first's pid;
 *  - --optimizer lamb|sgd on pretrain and finetune, kept in checkpoints;
 *  - finetune --accumulation and --device-iterations: the same model with and without device
 *    iterations, the same as a batch N times larger up to rounding, and resumable.
 */
#define _GNU_SOURCE
#include "test_util.h"
#include "cli_util.h"

#include <signal.h>
#include <sys/types.h>


static const char *PRE = "--layers 1 --hidden 32 --heads 2 --intermediate 64 --max-len 32 --batch 4 --threads 1";

static void make_data(void) {
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    write_str("header.tsv", "label\ttext\n");
}

/* The vocabulary and a pretrained model without dropout ("pre"), which the cases below use. */
static void test_setup(void) {
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre %s --max-steps 2 --dropout 0", PRE);
    CHECK_RAN(rc, 0);
}

/* Copy model directory src to dst with a NaN in one weight. */
static void nan_model(const char *src, const char *dst) {
    char cmd[600], path[300];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -rf %s && cp -r %s %s", dir, dst, src, dst);
    CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, dst);
    ts_safetensors *st = ts_safetensors_open(path);
    CHECK(st != NULL, "%s", ts_last_error());
    if (!st) return;
    int n = ts_safetensors_count(st);
    ts_tensor **t = calloc((size_t)n, sizeof *t);
    const char **names = calloc((size_t)n, sizeof *names);
    for (int i = 0; i < n; i++) {
        names[i] = strdup(ts_safetensors_name(st, i));
        ts_safetensors_get(st, names[i], &t[i]);
        if (!strcmp(names[i], "bert.encoder.layer.0.output.dense.weight")) tu_f32(t[i])[5] = NAN;
    }
    ts_safetensors_close(st);
    CHECK_OK(ts_safetensors_save(path, n, names, (const ts_tensor *const *)t, NULL));
    for (int i = 0; i < n; i++) ts_tensor_free(t[i]), free((void *)names[i]);
    free(t);
    free(names);
}

static void test_nonfinite_weights(void) {
    nan_model("pre", "nanpre");
    int32_t ids[8] = {2, 5, 6, 7, 8, 9, 10, 3};
    ts_tensor *in = ts_tensor_from(TS_I32, 2, (int64_t[]){1, 8}, ids);
    char path[300];
    snprintf(path, sizeof path, "%s/in.safetensors", dir);
    CHECK_OK(ts_safetensors_save(path, 1, (const char *[]){"input_ids"}, (const ts_tensor *const[]){in}, NULL));
    ts_tensor_free(in);
    int rc = tessera(NULL, "run --model nanpre --inputs in.safetensors --outputs out.safetensors --threads 1");
    CHECK_FAILS(rc, "nanpre/model.safetensors: tensor 'bert.encoder.layer.0.output.dense.weight' holds 1 non-finite "
                    "value of 2048 (1 NaN, 0 inf; the first at element 5)");
    CHECK(strstr(err_text, "--allow-nonfinite"), "the message does not name the flag: %s", err_text);
    CHECK(!exists("out.safetensors"), "run wrote outputs from a NaN model");
    rc = tessera(NULL, "run --model nanpre --inputs in.safetensors --outputs out.safetensors --threads 1 "
                       "--allow-nonfinite");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "finetune --model nanpre --train data.tsv --out ftnan --max-steps 1 --threads 1 --max-len 32");
    CHECK_FAILS(rc, "tensor 'bert.encoder.layer.0.output.dense.weight' holds 1 non-finite value");
    CHECK(!strstr(err_text, "try a lower --lr"), "blamed the learning rate: %s", err_text);
    /* a fine-tuned model with a NaN: eval and predict refuse it too */
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft --max-steps 2 --batch 4 --threads 1 --max-len 32");
    CHECK_RAN(rc, 0);
    nan_model("ft", "ftnan2");
    rc = tessera(NULL, "eval --model ftnan2 --data data.tsv --threads 1");
    CHECK_FAILS(rc, "ftnan2/model.safetensors: tensor 'bert.encoder.layer.0.output.dense.weight'");
    rc = tessera(NULL, "predict --model ftnan2 --text \"the cat runs\" --threads 1");
    CHECK_FAILS(rc, "holds 1 non-finite value");
    rc = tessera(NULL, "predict --model ftnan2 --text \"the cat runs\" --threads 1 --allow-nonfinite");
    CHECK_RAN(rc, 0);
}

/* pre's config.json with one field replaced. */
static void config_with(const char *model, const char *field, const char *value) {
    char cfg[8192], out[8400], cmd[600];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -rf %s && cp -r pre %s", dir, model, model);
    CHECK(system(cmd) == 0, "%s", cmd);
    read_into("pre/config.json", cfg, sizeof cfg);
    char key[80];
    snprintf(key, sizeof key, "\"%s\":", field);
    char *at = strstr(cfg, key);
    CHECK(at != NULL, "no %s in config.json", field);
    if (!at) return;
    char *end = strpbrk(at + strlen(key), ",}");
    snprintf(out, sizeof out, "%.*s %s%s", (int)(at - cfg + strlen(key)), cfg, value, end);
    snprintf(cmd, sizeof cmd, "%s/config.json", model);
    write_str(cmd, out);
}

static void test_absurd_sizes(void) {
    static const struct {
        const char *field, *value;
    } cfgs[] = {{"hidden_size", "1000000000"}, {"vocab_size", "2000000000"}, {"intermediate_size", "2000000000"},
                {"max_position_embeddings", "2000000000"}, {"type_vocab_size", "2000000000"},
                {"num_hidden_layers", "1000000"}};
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        config_with("big", cfgs[i].field, cfgs[i].value);
        double t0 = tu_now();
        int rc = tessera(NULL, "finetune --model big --train data.tsv --out ftbig --max-steps 1 --threads 1");
        char want[200];
        snprintf(want, sizeof want, "big/config.json: field \"%s\" is %s, above tessera's bound", cfgs[i].field,
                 cfgs[i].value);
        CHECK_FAILS(rc, want);
        rc = tessera(NULL, "run --model big --inputs in.safetensors --outputs o.safetensors --threads 1");
        CHECK_FAILS(rc, want);
        CHECK(tu_now() - t0 < 20, "refusing %s took %.1f s", cfgs[i].field, tu_now() - t0);
    }
    /* within the bounds, too large for the device: refused before allocating, naming the parts */
    double t0 = tu_now();
    int rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out p1 %s --hidden 1000000000", PRE);
    CHECK_FAILS(rc, "field \"hidden_size\" is 1000000000, above tessera's bound");
    CHECK(strstr(err_text, "--hidden"), "the message does not name the flags: %s", err_text);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out p2 %s --hidden 16384 --heads 16 "
                       "--intermediate 1000000 --layers 64", PRE);
    CHECK_FAILS(rc, "compiling the training program: ts_compile: the program needs");
    CHECK(strstr(err_text, "the device has") && strstr(err_text, "intermediate_size 1000000") &&
          strstr(err_text, "--intermediate"), "memory message: %s", err_text);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out p3 %s --batch 1000000000", PRE);
    CHECK_FAILS(rc, "batch 1000000000 x seq 32 is 32000000000 rows");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out p3 %s --batch 500000 --device-memory 4",
                 PRE);
    CHECK_FAILS(rc, "the program needs");
    CHECK(strstr(err_text, "activations") && strstr(err_text, "--batch 500000 (sequences of 32 tokens") &&
          strstr(err_text, "the device has 4.00 GiB (the limit set)"), "memory message: %s", err_text);
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out f3 --batch 1000000000 --threads 1 --max-len 32");
    CHECK_FAILS(rc, "the program needs");
    rc = tessera(NULL, "eval --model ft --data data.tsv --batch 1000000000 --threads 1");
    CHECK_FAILS(rc, "the program needs");
    rc = tessera(NULL, "predict --model ft --text hello --batch 1000000000 --threads 1");
    CHECK_FAILS(rc, "the program needs");
    CHECK(tu_now() - t0 < 60, "refusing the large programs took %.1f s", tu_now() - t0);
    /* --device-memory: a limit of the user's */
    rc = tessera(NULL, "eval --model ft --data data.tsv --threads 1 --device-memory 0.0001");
    CHECK_FAILS(rc, "(the limit set)");
    CHECK(strstr(err_text, "the limit is --device-memory"), "message: %s", err_text);
    rc = tessera(NULL, "eval --model ft --data data.tsv --threads 1 --device-memory 1");
    CHECK_RAN(rc, 0);
}

static void test_empty_inputs(void) {
    int rc = tessera(" \n", "tokenize --vocab vocab.txt");
    CHECK_RAN(rc, 0);
    CHECK(!strcmp(out_text, "2 3\n"), "a blank line: %s", out_text);
    rc = tessera("a b\t\n", "tokenize --vocab vocab.txt --pair");
    CHECK_RAN(rc, 0);
    size_t len = strlen(out_text); /* [CLS] a b [SEP] [SEP] */
    CHECK(!strncmp(out_text, "2 ", 2) && len > 6 && !strcmp(out_text + len - 5, " 3 3\n") &&
          strchr(out_text, '\n') == out_text + len - 1, "a pair with an empty second text: %s", out_text);
    rc = tessera(NULL, "eval --model ft --data header.tsv --threads 1");
    CHECK_FAILS(rc, "--data header.tsv has no rows to score");
    rc = tessera(NULL, "finetune --model pre --train header.tsv --out fh --threads 1");
    CHECK_FAILS(rc, "header.tsv");
}

static void test_threads(void) {
    int rc = tessera(NULL, "eval --model ft --data data.tsv --threads 100000");
    CHECK_FAILS(rc, "--threads 100000: at most");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out p4 --threads 20000");
    CHECK_FAILS(rc, "--threads 20000: at most");
    rc = tessera(NULL, "run --model pre --inputs in.safetensors --outputs o.safetensors --threads 100000");
    CHECK_FAILS(rc, "--threads 100000: at most");
}

/* A pretraining run that goes on until killed holds --out; a second run there is refused. */
static void test_two_runs(void) {
    char lock[300], text[64] = "";
    snprintf(lock, sizeof lock, "%s/busy/.tessera.lock", dir);
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(dir) != 0 || !freopen("/dev/null", "w", stdout) || !freopen("bg_err.txt", "w", stderr)) _exit(1);
        execl(cli, "tessera", "pretrain", "--vocab", "vocab.txt", "--corpus", "corpus.txt", "--out", "busy", "--layers",
              "1", "--hidden", "32", "--heads", "2", "--intermediate", "64", "--max-len", "32", "--batch", "4",
              "--threads", "1", "--max-steps", "1000000", "--save-every", "1", (char *)NULL);
        _exit(127);
    }
    /* wait until it holds the lock (its pid in the file) and has written a checkpoint */
    char want[32], ck[300];
    snprintf(want, sizeof want, "%ld\n", (long)pid);
    snprintf(ck, sizeof ck, "%s/busy/checkpoints", dir);
    for (int i = 0; i < 600; i++) {
        FILE *f = fopen(lock, "r");
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        text[n] = 0;
        if (f) fclose(f);
        if (!strcmp(text, want) && access(ck, F_OK) == 0) break;
        usleep(100000);
    }
    CHECK(!strcmp(text, want), "the first run did not take the lock: '%s'", text);
    int rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out busy %s --max-steps 2", PRE);
    char msg[200];
    snprintf(msg, sizeof msg, "--out busy is being written by another run (pid %ld)", (long)pid);
    CHECK_FAILS(rc, msg);
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out busy --max-steps 1 --threads 1 --max-len 32");
    CHECK_FAILS(rc, msg);
    CHECK(kill(pid, 0) == 0, "the first run died while the second was refused");
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    /* killed, it holds the directory no longer */
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out busy %s --max-steps 2", PRE);
    CHECK_RAN(rc, 0);
}

static void test_optimizers(void) {
    const char *common = "--vocab vocab.txt --corpus corpus.txt --layers 1 --hidden 32 --heads 2 --intermediate 64 "
                         "--max-len 32 --batch 4 --threads 1 --max-steps 4 --deterministic";
    int rc = tessera(NULL, "pretrain %s --out lamb --optimizer lamb --save-every 2 --stop-after 2", common);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain %s --resume lamb --optimizer adamw", common);
    CHECK_FAILS(rc, "was made with --optimizer lamb, not adamw");
    rc = tessera(NULL, "pretrain %s --resume lamb --optimizer lamb", common);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "lamb, lr"), "the run does not say its optimizer: %s", out_text);
    rc = tessera(NULL, "pretrain %s --out lamb1 --optimizer lamb", common);
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("lamb/model.safetensors", "lamb1/model.safetensors"), "LAMB stopped and resumed: other model");
    rc = tessera(NULL, "pretrain %s --out adamw", common);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain %s --out sgd --optimizer sgd --momentum 0.9 --lr 0.1", common);
    CHECK_RAN(rc, 0);
    CHECK(!same_bytes("lamb/model.safetensors", "adamw/model.safetensors") &&
          !same_bytes("sgd/model.safetensors", "adamw/model.safetensors"), "--optimizer changed nothing");
    rc = tessera(NULL, "pretrain %s --out x --optimizer adam", common);
    CHECK_FAILS(rc, "--optimizer adam: the optimizers are adamw, lamb and sgd");
    rc = tessera(NULL, "pretrain %s --out x --momentum 0.9", common);
    CHECK_FAILS(rc, "--momentum 0.9");
    const char *ft = "finetune --model pre --train data.tsv --batch 4 --max-len 32 --threads 1 --max-steps 4";
    rc = tessera(NULL, "%s --out ft_lamb --optimizer lamb --save-every 2 --stop-after 2", ft);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --resume ft_lamb", ft);
    CHECK_FAILS(rc, "was made with --optimizer \"lamb\", not \"adamw\"");
    rc = tessera(NULL, "%s --resume ft_lamb --optimizer lamb", ft);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --out ft_sgd --optimizer sgd --momentum 0.9 --lr 0.05", ft);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "sgd, lr 0.05"), "finetune does not say its optimizer: %s", out_text);
    rc = tessera(NULL, "%s --out x --optimizer rmsprop", ft);
    CHECK_FAILS(rc, "--optimizer rmsprop");
}

/* The largest relative difference between two models' parameters (files relative to dir). */
static double model_diff(const char *a, const char *b) {
    char pa[300], pb[300];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    ts_safetensors *sa = ts_safetensors_open(pa), *sb = ts_safetensors_open(pb);
    double worst = sa && sb ? 0 : INFINITY;
    for (int i = 0; sa && sb && i < ts_safetensors_count(sa); i++) {
        ts_tensor *x = NULL, *y = NULL;
        const char *name = ts_safetensors_name(sa, i);
        if (ts_safetensors_get(sa, name, &x) || ts_safetensors_get(sb, name, &y)) worst = INFINITY;
        for (int64_t k = 0; x && y && k < ts_tensor_numel(x); k++) {
            double u = tu_f32(x)[k], v = tu_f32(y)[k];
            worst = fmax(worst, fabs(u - v) / fmax(1e-3, fabs(u)));
        }
        ts_tensor_free(x);
        ts_tensor_free(y);
    }
    ts_safetensors_close(sa);
    ts_safetensors_close(sb);
    return worst;
}

static void test_finetune_accumulation(void) {
    const char *ft = "finetune --model pre --train data.tsv --max-len 32 --threads 1 --deterministic --test-split 0.1";
    int rc = tessera(NULL, "%s --out acc2 --batch 4 --accumulation 2 --max-steps 4", ft);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "2 micro-batches of 4 per step (effective batch 8)"), "no accumulation line: %s", out_text);
    rc = tessera(NULL, "%s --out acc2k2 --batch 4 --accumulation 2 --device-iterations 2 --max-steps 4", ft);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "2 steps per program call"), "no device-iterations line: %s", out_text);
    CHECK(same_bytes("acc2/model.safetensors", "acc2k2/model.safetensors"),
          "device iterations changed the model (same micro-batches, same arithmetic)");
    rc = tessera(NULL, "%s --out b8 --batch 8 --max-steps 4", ft);
    CHECK_RAN(rc, 0);
    double d = model_diff("acc2/model.safetensors", "b8/model.safetensors");
    printf("  batch 4 x accumulation 2 against batch 8, 4 steps: max relative parameter difference %.2g\n", d);
    CHECK(d < 1e-4, "accumulation 2 x 4 differs from batch 8 by %g (relative)", d);
    CHECK(!same_bytes("acc2/model.safetensors", "pre/model.safetensors"), "nothing trained");
    rc = tessera(NULL, "%s --out acc2r --batch 4 --accumulation 2 --max-steps 4 --save-every 2 --stop-after 2", ft);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --batch 4 --accumulation 1 --max-steps 4 --resume acc2r", ft);
    CHECK_FAILS(rc, "was made with --accumulation 2, not 1");
    rc = tessera(NULL, "%s --batch 4 --accumulation 2 --max-steps 4 --resume acc2r", ft);
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("acc2/model.safetensors", "acc2r/model.safetensors"), "accumulation stopped and resumed differs");
    rc = tessera(NULL, "%s --out x --batch 4 --device-iterations 3 --max-steps 4", ft);
    CHECK_FAILS(rc, "multiples of --device-iterations 3");
    rc = tessera(NULL, "%s --out x --batch 4 --accumulation 0", ft);
    CHECK_FAILS(rc, "--accumulation");
    /* QA trains through the same loop */
    write_str("qa.json", "{\"data\": [{\"paragraphs\": [{\"context\": \"the cat runs and the dog sleeps\", \"qas\": ["
                         "{\"id\": \"a\", \"question\": \"who runs?\", \"answers\": [{\"text\": \"cat\", "
                         "\"answer_start\": 4}]}, {\"id\": \"b\", \"question\": \"who sleeps?\", \"answers\": [{\"text\": "
                         "\"dog\", \"answer_start\": 21}]}, {\"id\": \"c\", \"question\": \"what does the cat do?\", "
                         "\"answers\": [{\"text\": \"runs\", \"answer_start\": 8}]}, {\"id\": \"d\", \"question\": "
                         "\"what does the dog do?\", \"answers\": [{\"text\": \"sleeps\", \"answer_start\": 25}]}]}]}]}");
    rc = tessera(NULL, "finetune --task qa --model pre --train qa.json --out qa1 --batch 1 --accumulation 2 --max-len 32 "
                       "--max-steps 2 --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "finetune --task qa --model pre --train qa.json --out qa2 --batch 1 --accumulation 2 "
                       "--device-iterations 2 --max-len 32 --max-steps 2 --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("qa1/model.safetensors", "qa2/model.safetensors"), "QA: device iterations changed the model");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_hardening");
    if (rc) return rc;
    make_data();
    RUN(test_setup);
    RUN(test_nonfinite_weights);
    RUN(test_absurd_sizes);
    RUN(test_empty_inputs);
    RUN(test_threads);
    RUN(test_two_runs);
    RUN(test_optimizers);
    RUN(test_finetune_accumulation);
    cli_cleanup("test_cli_hardening");
    return tu_finish("test_cli_hardening");
}
