/*
 * test_cli_resume.c — `tessera pretrain --save-every / --resume` through the command: a tiny BERT
 * (2 layers, hidden 32) on a few dozen generated lines is pretrained for 20 steps in one go; the
 * same run stopped after step 10 (--stop-after) and resumed, and the same run killed with SIGKILL
 * after a checkpoint was written and resumed, must end with a model.safetensors identical byte
 * for byte (and tensor for tensor). A newest checkpoint cut short is skipped with a message
 * naming it and the run resumes from the one before, again to the identical result. --keep
 * bounds the checkpoints kept; resuming with other options or a changed corpus is refused.
 * --deterministic: two runs on 2 threads give the same losses and a byte-identical model, and
 * so does a third with --recompute; the flag refuses --max-minutes, and a resume on another
 * thread count is refused. --accumulation 4 run as 4 device iterations per call (and 2 steps of
 * them per call) ends with the same model as one call per micro-batch, also when resumed; --fp16
 * logs its loss scale; bad combinations of these flags are refused, naming them.
 */
#include <fcntl.h>

#include "test_util.h"
#include "cli_util.h"

#define STEPS "20"
static const char *MODEL = "--vocab vocab.txt --corpus corpus.txt --layers 2 --hidden 32 --heads 2 --intermediate 64 "
                           "--max-len 32 --batch 4 --max-steps " STEPS " --eval-every 5 --eval-batches 1 --threads 1";

static void make_data(void) {
    static const char *W[] = {"the", "cat", "dog", "bird", "fish", "runs", "sleeps", "eats", "jumps",
                              "swims", "sings", "quickly", "slowly", "and", "a", "big", "small", "red"};
    static char corpus[16384];
    size_t n = 0;
    uint64_t r = 12345;
    for (int d = 0; d < 12; d++) {
        for (int s = 0; s < 4; s++) {
            int len = 4 + (int)(r % 5);
            for (int k = 0; k < len; k++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                n += (size_t)snprintf(corpus + n, sizeof corpus - n, "%s%s", k ? " " : "", W[(r >> 33) % 18]);
            }
            n += (size_t)snprintf(corpus + n, sizeof corpus - n, ".\n");
        }
        n += (size_t)snprintf(corpus + n, sizeof corpus - n, "\n");
    }
    write_str("corpus.txt", corpus);
}

/* Are DIR_A/model.safetensors and DIR_B/model.safetensors the same, bytes and every tensor? */
static int same_model(const char *a, const char *b) {
    char pa[300], pb[300];
    snprintf(pa, sizeof pa, "%s/%s/model.safetensors", dir, a);
    snprintf(pb, sizeof pb, "%s/%s/model.safetensors", dir, b);
    ts_safetensors *sa = ts_safetensors_open(pa), *sb = ts_safetensors_open(pb);
    int same = sa && sb && ts_safetensors_count(sa) == ts_safetensors_count(sb) && ts_safetensors_count(sa) > 10;
    for (int i = 0; same && i < ts_safetensors_count(sa); i++) {
        ts_tensor *x = NULL, *y = NULL;
        const char *name = ts_safetensors_name(sa, i);
        same = ts_safetensors_get(sa, name, &x) == TS_OK && ts_safetensors_get(sb, name, &y) == TS_OK &&
               ts_tensor_nbytes(x) == ts_tensor_nbytes(y) &&
               memcmp(ts_tensor_data(x), ts_tensor_data(y), ts_tensor_nbytes(x)) == 0;
        ts_tensor_free(x);
        ts_tensor_free(y);
    }
    ts_safetensors_close(sa);
    ts_safetensors_close(sb);
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    int ca = 0, cb = 0;
    while (same && fa && fb && ca != EOF) {
        ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same && fa && fb;
}

/* Number of step-* checkpoints under NAME/checkpoints. */
static int count_ckpts(const char *name) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -d '%s/%s/checkpoints/'step-* 2>/dev/null | grep -vc '\\.' > '%s/count.txt'", dir,
             name, dir);
    if (system(cmd) == -1) return -1;
    char buf[32];
    read_into("count.txt", buf, sizeof buf);
    return atoi(buf);
}

static void test_stop_and_resume(void) {
    int rc = tessera(NULL, "vocab --out vocab.txt --size 100 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain %s --out a", MODEL);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, STEPS " steps in"), "run a: %s", out_text);

    rc = tessera(NULL, "pretrain %s --out b --save-every 5 --stop-after 10", MODEL);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "stopped after step 10"), "run b did not stop at 10: %s", out_text);
    CHECK(exists("b/checkpoints/step-000005/trainer.json") && exists("b/checkpoints/step-000010/state.safetensors"),
          "run b wrote no checkpoints");
    CHECK(!same_model("a", "b"), "run b's model after 10 steps equals run a's after 20");
    rc = tessera(NULL, "pretrain %s --resume b --save-every 5", MODEL); /* --out defaults to b */
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "resuming from b/checkpoints/step-000010 at step 10") && strstr(out_text, "steps 11 to 20"),
          "resume b: %s", out_text);
    CHECK(same_model("a", "b"), "stopped at 10 and resumed: the final parameters differ from the uninterrupted run");
    CHECK(count_ckpts("b") == 3, "--keep 3 (default): %d checkpoints in b", count_ckpts("b"));

    /* the newest checkpoint cut short: skipped with a message naming it, resumed from step 15 */
    char path[300];
    snprintf(path, sizeof path, "%s/b/checkpoints/step-000020/state.safetensors", dir);
    CHECK(truncate(path, 100) == 0, "truncate %s", path);
    rc = tessera(NULL, "pretrain %s --resume b", MODEL);
    CHECK_RAN(rc, 0);
    CHECK(strstr(err_text, "step-000020") && strstr(err_text, "state.safetensors"),
          "the truncated checkpoint was not named: %s", err_text);
    CHECK(strstr(out_text, "at step 15"), "did not fall back to step 15: %s", out_text);
    CHECK(same_model("a", "b"), "resumed from step 15: the final parameters differ");
}

static void test_kill_and_resume(void) {
    char cmdline[8192];
    snprintf(cmdline, sizeof cmdline, "exec '%s' pretrain %s --out c --save-every 2 --keep 2 >c.out 2>c.err", cli,
             MODEL);
    CHECK(mkdir(strcat(strcpy((char[300]){0}, dir), "/c"), 0755) == 0, "mkdir c");
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(127);
        execl("/bin/sh", "sh", "-c", cmdline, (char *)NULL);
        _exit(127);
    }
    /* wait for a checkpoint (each appears whole, by rename), then kill at once */
    char probe[300];
    snprintf(probe, sizeof probe, "%s/c/checkpoints/step-000004/trainer.json", dir);
    int st = 0, waited = 0;
    pid_t done = 0;
    for (; waited < 30000 && access(probe, F_OK) != 0 && !(done = waitpid(pid, &st, WNOHANG)); waited++)
        usleep(1000);
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    CHECK(killed || (WIFEXITED(st) && WEXITSTATUS(st) == 0), "run c failed on its own (status %d)", st);
    printf("  run c %s\n", killed ? "killed with SIGKILL after a checkpoint" : "finished before the kill");
    CHECK(count_ckpts("c") >= 1 && count_ckpts("c") <= 2, "--keep 2: %d checkpoints in c", count_ckpts("c"));
    int rc = tessera(NULL, "pretrain %s --resume c --save-every 2 --keep 2", MODEL);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "resuming from c/checkpoints/step-"), "resume c: %s", out_text);
    CHECK(same_model("a", "c"), "killed and resumed: the final parameters differ from the uninterrupted run");
    CHECK(count_ckpts("c") == 2, "--keep 2: %d checkpoints in c", count_ckpts("c"));
}

/* The "loss" values of DIR/metrics.jsonl, as written, one after the other, into buf. */
static void losses(const char *name, char *buf, size_t n) {
    static char text[1 << 16];
    char path[300];
    snprintf(path, sizeof path, "%s/metrics.jsonl", name);
    read_into(path, text, sizeof text);
    size_t o = 0;
    buf[0] = 0;
    for (const char *p = strstr(text, "\"loss\": "); p && o + 32 < n; p = strstr(p + 1, "\"loss\": "))
        o += (size_t)snprintf(buf + o, n - o, "%.*s ", (int)strcspn(p + 8, ","), p + 8);
}

static void test_deterministic(void) {
    const char *run = "--vocab vocab.txt --corpus corpus.txt --layers 2 --hidden 32 --heads 2 --intermediate 64 "
                      "--max-len 32 --batch 4 --max-steps 12 --eval-every 6 --eval-batches 1 --deterministic";
    int rc = tessera(NULL, "pretrain %s --threads 2 --out d1", run);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "deterministic: 2 threads"), "the pinned thread count is not reported: %s", out_text);
    rc = tessera(NULL, "pretrain %s --threads 2 --out d2", run);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain %s --threads 2 --recompute --out d3 --save-every 6 --stop-after 6", run);
    CHECK_RAN(rc, 0);
    char l1[2048], l2[2048];
    losses("d1", l1, sizeof l1);
    losses("d2", l2, sizeof l2);
    CHECK(strlen(l1) > 40 && strcmp(l1, l2) == 0, "two --deterministic runs logged other losses:\n%s\n%s", l1, l2);
    CHECK(same_model("d1", "d2"), "two --deterministic runs ended with different parameters");
    /* the recomputing run, resumed on the same thread count, ends where the others did */
    rc = tessera(NULL, "pretrain %s --threads 1 --recompute --resume d3", run);
    CHECK_FAILS(rc, "was made with --threads 2, not 1");
    rc = tessera(NULL, "pretrain %s --threads 2 --recompute --resume d3", run);
    CHECK_RAN(rc, 0);
    CHECK(same_model("d1", "d3"), "--recompute (stopped and resumed) changed the parameters");
    rc = tessera(NULL, "pretrain %s --max-minutes 1 --out d4", run);
    CHECK_FAILS(rc, "--max-minutes");
    CHECK(strstr(err_text, "--deterministic"), "the refusal does not name --deterministic: %s", err_text);
}

static void test_accumulation(void) {
    const char *run = "--vocab vocab.txt --corpus corpus.txt --layers 2 --hidden 32 --heads 2 --intermediate 64 "
                      "--max-len 32 --batch 2 --accumulation 4 --max-steps 8 --eval-every 4 --eval-batches 1 "
                      "--threads 1";
    int rc = tessera(NULL, "pretrain %s --out g1", run);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "4 micro-batches of 2 per step (effective batch 8)"), "no accumulation line: %s", out_text);
    rc = tessera(NULL, "pretrain %s --device-iterations 2 --out g2", run);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "2 steps per program call"), "no device-iterations line: %s", out_text);
    CHECK(same_model("g1", "g2"), "2 device iterations per call changed the parameters");
    char l1[2048], l2[2048];
    losses("g1", l1, sizeof l1);
    losses("g2", l2, sizeof l2);
    CHECK(strlen(l1) > 40 && strcmp(l1, l2) == 0, "device iterations logged other losses:\n%s\n%s", l1, l2);
    /* stopped after 4 steps (one call of 2 steps x 4 micro-batches, twice) and resumed */
    rc = tessera(NULL, "pretrain %s --device-iterations 2 --out g3 --save-every 4 --stop-after 4", run);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain %s --accumulation 2 --resume g3", run);
    CHECK_FAILS(rc, "was made with --accumulation 4, not 2");
    rc = tessera(NULL, "pretrain %s --device-iterations 2 --resume g3", run);
    CHECK_RAN(rc, 0);
    CHECK(same_model("g1", "g3"), "accumulation with device iterations, stopped and resumed: other parameters");
    /* fp16 with loss scaling logs the scale and the skipped steps */
    rc = tessera(NULL, "pretrain %s --fp16 --out g4", run);
    CHECK_RAN(rc, 0);
    static char m[1 << 16];
    read_into("g4/metrics.jsonl", m, sizeof m);
    CHECK(strstr(m, "\"loss_scale\": 65536") && strstr(m, "\"skipped_steps\": 0"), "fp16 metrics: %.300s", m);
    CHECK(strstr(out_text, "fp16 compute with loss scaling"), "fp16 not reported: %s", out_text);
    rc = tessera(NULL, "pretrain %s --device-iterations 3 --out g5", run);
    CHECK_FAILS(rc, "multiples of --device-iterations 3");
    rc = tessera(NULL, "pretrain %s --bf16 --fp16 --out g5", run);
    CHECK_FAILS(rc, "--bf16 and --fp16");
    rc = tessera(NULL, "pretrain %s --accumulation 0 --out g5", run);
    CHECK_FAILS(rc, "--accumulation");
}

static void test_bad_resume(void) {
    int rc = tessera(NULL, "pretrain %s --hidden 64 --heads 2 --resume b", MODEL);
    CHECK_FAILS(rc, "was made with --hidden 32, not 64");
    rc = tessera(NULL, "pretrain %s --resume no_such_run", MODEL);
    CHECK_FAILS(rc, "resume: no_such_run");
    rc = tessera(NULL, "pretrain %s --resume a", MODEL);
    CHECK_FAILS(rc, "no valid checkpoint");
    rc = tessera(NULL, "pretrain %s --resume b/checkpoints/step-000015", MODEL);
    CHECK_FAILS(rc, "--out DIR is required");
    write_str("corpus.txt", "the cat runs.\nthe dog sleeps.\n\nthe bird sings.\nthe fish swims.\n");
    rc = tessera(NULL, "pretrain %s --resume b", MODEL);
    CHECK_FAILS(rc, "corpus file corpus.txt has");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_resume");
    if (rc) return rc;
    make_data();
    RUN(test_stop_and_resume);
    RUN(test_kill_and_resume);
    RUN(test_deterministic);
    RUN(test_accumulation);
    RUN(test_bad_resume);
    cli_cleanup("test_cli_resume");
    return tu_finish("test_cli_resume");
}
