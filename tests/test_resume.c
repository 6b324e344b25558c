/*
 * test_resume.c — checkpoints of the whole training state (ts_program_save_state /
 * ts_program_load_state, apps/train/run_state.c) and exact resume after a crash:
 *  - a small MLP with dropout and AdamW, trained on batches that are a function of (seed, step),
 *    runs 20 steps uninterrupted in one child process;
 *  - another child checkpoints every 5 steps (keeping the last 2) and is killed with SIGKILL
 *    right after step 10's checkpoint; a new child resumes from ts_checkpoint_latest and runs to
 *    step 20: parameters and optimizer state are bit-identical to the uninterrupted run;
 *  - the newest checkpoint truncated on purpose is rejected (the program untouched), latest
 *    falls back to step 5, and resuming from there again gives bit-identical results;
 *  - the crash-recovery rule (DIR.old when DIR is missing), stale DIR.tmp-* ignored and cleaned,
 *    rotation, and corrupt files each named in the error.
 * Every training run happens in a forked child (so no OpenMP state crosses a fork).
 */
#define _GNU_SOURCE /* nftw */
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "tessera_apps.h"
#include "test_util.h"

enum { B = 8, IN = 16, HID = 32, NCLS = 4, NSTEPS = 20, EVERY = 5 };
#define DATA_SEED 1234u

static char root[256];

/* ------------------------------------------------------------------ helpers */

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}
static void rm_rf(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* A whole file into a malloc'd buffer; NULL when unreadable. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
    fclose(f);
    if (b) b[sz] = 0;
    *n = (size_t)sz;
    return b;
}

/* Are the two files byte for byte the same? */
static int same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

static void truncate_half(const char *path) {
    struct stat sb;
    CHECK(stat(path, &sb) == 0, "%s: cannot stat", path);
    CHECK(truncate(path, sb.st_size / 2) == 0, "%s: cannot truncate", path);
}

/* ------------------------------------------------------------------ the model and its data */

/* logits = dropout(gelu(x W1^T + b1), 0.3) W2^T + b2; loss = cross-entropy; AdamW. */
static ts_program *build(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 7);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, IN));
    ts_value y = ts_input(g, "labels", TS_I32, DIMS(B));
    ts_value w1 = ts_param(g, "fc1.weight", TS_F32, DIMS(HID, IN), ts_init_normal(0.3f));
    ts_value b1 = ts_param(g, "fc1.bias", TS_F32, DIMS(HID), ts_init_zeros());
    ts_value w2 = ts_param(g, "fc2.weight", TS_F32, DIMS(NCLS, HID), ts_init_normal(0.3f));
    ts_value b2 = ts_param(g, "fc2.bias", TS_F32, DIMS(NCLS), ts_init_zeros());
    ts_value h = ts_gelu(g, ts_add(g, ts_matmul(g, x, w1, 0, 1), b1), 0);
    h = ts_dropout(g, h, 0.3f);
    ts_value logits = ts_add(g, ts_matmul(g, h, w2, 0, 1), b2);
    ts_value loss = ts_name(g, ts_cross_entropy(g, logits, y, TS_IGNORE_INDEX), "loss");
    ts_program *p = NULL;
    if (ts_backward(g, loss) == TS_OK && ts_adamw(g, ts_scalar(g, 0.01f), 0.9f, 0.999f, 1e-8f, 0.01f) == TS_OK)
        p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss"), .num_threads = 1});
    if (!p) printf("build: %s\n", ts_last_error());
    ts_graph_free(g);
    return p;
}

/* The batch of step t: a function of (DATA_SEED, t) only. */
static ts_status feed_step(ts_program *p, uint64_t t) {
    tu_rng r = tu_rng_seed(DATA_SEED * 1000003ull + t);
    ts_tensor *x = ts_tensor_new(TS_F32, DIMS(B, IN)), *y = ts_tensor_new(TS_I32, DIMS(B));
    float *xd = ts_tensor_data(x);
    int32_t *yd = ts_tensor_data(y);
    for (int i = 0; i < B; i++) {
        yd[i] = (int32_t)tu_randint(&r, NCLS);
        for (int j = 0; j < IN; j++) xd[i * IN + j] = (float)tu_normal(&r) + (j % NCLS == yd[i] ? 1.f : 0.f);
    }
    ts_status s = ts_program_feed(p, "x", x);
    if (!s) s = ts_program_feed(p, "labels", y);
    ts_tensor_free(x);
    ts_tensor_free(y);
    return s;
}

#define FAIL_IF(cond, ...) do { if (cond) { printf(__VA_ARGS__); printf(": %s\n", ts_last_error()); return 1; } } while (0)

/* Train steps [from, NSTEPS). With ckpt_parent: save "ckpt-%06d" every EVERY steps and keep the
 * last 2; after the checkpoint of step notify_at, write a byte to notify_fd, run one more step and
 * wait to be killed. Ends with ts_program_save_state(final_dir). Returns 0 on success. */
static int train(ts_program *p, uint64_t from, const char *ckpt_parent, uint64_t notify_at, int notify_fd,
                 const char *final_dir) {
    char dir[512], json[128];
    for (uint64_t t = from; t < NSTEPS; t++) {
        FAIL_IF(ts_program_step(p) != t, "program step %llu, expected %llu", (unsigned long long)ts_program_step(p),
                (unsigned long long)t);
        FAIL_IF(feed_step(p, t) || ts_program_run(p), "step %llu", (unsigned long long)t);
        uint64_t done = t + 1;
        if (ckpt_parent && done % EVERY == 0) {
            snprintf(dir, sizeof dir, "%s/ckpt-%06llu", ckpt_parent, (unsigned long long)done);
            snprintf(json, sizeof json, "{\"next_step\": %llu, \"data_seed\": %u}", (unsigned long long)done, DATA_SEED);
            FAIL_IF(ts_program_save_state(p, dir, json), "save %s", dir);
            FAIL_IF(ts_checkpoint_rotate(ckpt_parent, "ckpt-", 2), "rotate %s", ckpt_parent);
            if (done == notify_at && notify_fd >= 0) {
                char c = 1;
                FAIL_IF(write(notify_fd, &c, 1) != 1, "notify");
                /* keep going: the state in memory moves past the checkpoint until the kill */
                feed_step(p, done);
                ts_program_run(p);
                for (;;) pause();
            }
        }
    }
    FAIL_IF(ts_program_save_state(p, final_dir, NULL), "final save %s", final_dir);
    return 0;
}

/* Resume from a checkpoint directory and train to the end. */
static int resume(const char *ckpt, uint64_t expect_step, const char *final_dir) {
    ts_program *p = build();
    FAIL_IF(!p, "build");
    char *json = NULL;
    FAIL_IF(ts_program_load_state(p, ckpt, &json), "load %s", ckpt);
    unsigned long long next = 0;
    unsigned seed = 0;
    FAIL_IF(!json || sscanf(json, "{\"next_step\": %llu, \"data_seed\": %u}", &next, &seed) != 2, "trainer.json '%s'",
            json ? json : "(null)");
    FAIL_IF(next != expect_step || seed != DATA_SEED || ts_program_step(p) != expect_step,
            "resumed at step %llu (json %llu), expected %llu", (unsigned long long)ts_program_step(p), next,
            (unsigned long long)expect_step);
    free(json);
    int rc = train(p, next, NULL, 0, -1, final_dir);
    ts_program_free(p);
    return rc;
}

static int fresh(const char *ckpt_parent, uint64_t notify_at, int notify_fd, const char *final_dir) {
    ts_program *p = build();
    FAIL_IF(!p, "build");
    int rc = train(p, 0, ckpt_parent, notify_at, notify_fd, final_dir);
    ts_program_free(p);
    return rc;
}

/* Run fn in a child process; its exit status (or 128 + signal). */
#define IN_CHILD(expr)                                                                             \
    ({                                                                                             \
        fflush(stdout);                                                                            \
        pid_t pid_ = fork();                                                                       \
        if (pid_ == 0) { fflush(stdout); exit((expr)); }                                           \
        int st_ = 0;                                                                               \
        while (waitpid(pid_, &st_, 0) < 0 && errno == EINTR) {}                                    \
        WIFEXITED(st_) ? WEXITSTATUS(st_) : 128 + WTERMSIG(st_);                                   \
    })

/* Final state of run `b` equals run `a`: parameters, optimizer state and step, byte for byte. */
static void check_same_final(const char *a, const char *b) {
    char fa[600], fb[600];
    snprintf(fa, sizeof fa, "%s/model.safetensors", a);
    snprintf(fb, sizeof fb, "%s/model.safetensors", b);
    CHECK(same_file(fa, fb), "parameters of %s differ from %s", b, a);
    snprintf(fa, sizeof fa, "%s/state.safetensors", a);
    snprintf(fb, sizeof fb, "%s/state.safetensors", b);
    CHECK(same_file(fa, fb), "optimizer state of %s differs from %s", b, a);
    /* and through the API: every parameter memcmp-equal */
    snprintf(fa, sizeof fa, "%s/model.safetensors", a);
    snprintf(fb, sizeof fb, "%s/model.safetensors", b);
    ts_safetensors *sa = ts_safetensors_open(fa), *sb = ts_safetensors_open(fb);
    CHECK(sa && sb, "open: %s", ts_last_error());
    if (sa && sb) {
        CHECK(ts_safetensors_count(sa) == 4 && ts_safetensors_count(sb) == 4, "4 parameters");
        for (int i = 0; i < ts_safetensors_count(sa); i++) {
            ts_tensor *x = NULL, *y = NULL;
            const char *n = ts_safetensors_name(sa, i);
            ts_safetensors_get(sa, n, &x);
            ts_safetensors_get(sb, n, &y);
            CHECK(tu_bitwise_equal(x, y), "parameter %s differs", n);
            ts_tensor_free(x);
            ts_tensor_free(y);
        }
    }
    ts_safetensors_close(sa);
    ts_safetensors_close(sb);
}

/* ------------------------------------------------------------------ cases */

static void test_kill_and_resume(void) {
    char dir_a[300], run[300], fin_b[300], fin_c[300], latest[600], path[700];
    snprintf(dir_a, sizeof dir_a, "%s/final_a", root);
    snprintf(run, sizeof run, "%s/run", root);
    snprintf(fin_b, sizeof fin_b, "%s/final_b", root);
    snprintf(fin_c, sizeof fin_c, "%s/final_c", root);
    CHECK(mkdir(run, 0755) == 0, "mkdir %s", run);

    /* (a) uninterrupted */
    CHECK(IN_CHILD(fresh(NULL, 0, -1, dir_a)) == 0, "uninterrupted run failed");

    /* (b) checkpoint every 5 steps, SIGKILL right after step 10's checkpoint */
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        exit(fresh(run, 10, fds[1], fin_b));
    }
    close(fds[1]);
    char c = 0;
    ssize_t got;
    while ((got = read(fds[0], &c, 1)) < 0 && errno == EINTR) {}
    CHECK(got == 1, "the child did not report its step-10 checkpoint");
    kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    close(fds[0]);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child was not killed (status %d)", st);
    snprintf(path, sizeof path, "%s/ckpt-000005", run);
    CHECK(is_dir(path), "%s kept", path);
    snprintf(path, sizeof path, "%s/ckpt-000010", run);
    CHECK(is_dir(path), "%s written", path);
    CHECK_OK(ts_checkpoint_latest(run, "ckpt-", latest, sizeof latest));
    CHECK(strcmp(latest, path) == 0, "latest is %s, expected %s", latest, path);
    CHECK(IN_CHILD(resume(latest, 10, fin_b)) == 0, "resume from step 10 failed");
    check_same_final(dir_a, fin_b);

    /* (c) the newest checkpoint truncated: rejected, latest falls back to step 5 */
    snprintf(path, sizeof path, "%s/ckpt-000010/state.safetensors", run);
    truncate_half(path);
    snprintf(path, sizeof path, "%s/ckpt-000010", run);
    CHECK_STATUS(ts_checkpoint_check(path), TS_ERR_IO);
    CHECK_ERRMSG("ckpt-000010/state.safetensors");
    CHECK_OK(ts_checkpoint_latest(run, "ckpt-", latest, sizeof latest));
    snprintf(path, sizeof path, "%s/ckpt-000005", run);
    CHECK(strcmp(latest, path) == 0, "latest is %s, expected %s", latest, path);
    CHECK(IN_CHILD(resume(latest, 5, fin_c)) == 0, "resume from step 5 failed");
    check_same_final(dir_a, fin_c);

    /* the truncated checkpoint is refused by a load, and the program is left as it was (this
     * process runs no step: compiling and loading only, after its last fork) */
    ts_program *p = build();
    CHECK(p != NULL, "build");
    if (!p) return;
    ts_tensor *before = NULL, *after = NULL;
    CHECK_OK(ts_program_get_param(p, "fc1.weight", &before));
    snprintf(path, sizeof path, "%s/ckpt-000010", run);
    char *json = (char *)"unchanged";
    CHECK_STATUS(ts_program_load_state(p, path, &json), TS_ERR_IO);
    CHECK_ERRMSG("ckpt-000010/state.safetensors");
    CHECK(json == NULL, "extra json is NULL on failure");
    CHECK_OK(ts_program_get_param(p, "fc1.weight", &after));
    CHECK(tu_bitwise_equal(before, after), "a failed load changed a parameter");
    CHECK(ts_program_step(p) == 0, "a failed load changed the step");
    ts_tensor_free(before);
    ts_tensor_free(after);
    ts_program_free(p);
}

/* Recovery rule, stale temp dirs, rotation, corrupt files: no training, one process. */
static void test_atomic_and_errors(void) {
    char par[300], d1[400], old[420], stale[420], path[600], latest[600];
    snprintf(par, sizeof par, "%s/atomic", root);
    CHECK(mkdir(par, 0755) == 0, "mkdir %s", par);
    snprintf(d1, sizeof d1, "%s/ckpt-000001", par);
    snprintf(old, sizeof old, "%s.old", d1);
    ts_program *p = build();
    CHECK(p != NULL, "build");
    if (!p) return;
    ts_tensor *w = NULL, *w2 = NULL;
    CHECK_OK(ts_program_get_param(p, "fc2.bias", &w));
    if (!w) { ts_program_free(p); return; }

    /* save twice: the second replaces the first, no .old or .tmp left */
    ts_program_set_step(p, 7);
    CHECK_OK(ts_program_save_state(p, d1, "{\"v\": 1}"));
    ts_program_set_step(p, 8);
    tu_f32(w)[0] = 3.5f;
    CHECK_OK(ts_program_set_param(p, "fc2.bias", w));
    CHECK_OK(ts_program_save_state(p, d1, "{\"v\": 2}"));
    CHECK(is_dir(d1) && !is_dir(old), "after a replace: DIR, no DIR.old");

    /* a crash between the two renames leaves DIR.old only: loads take it */
    CHECK(rename(d1, old) == 0, "rename");
    ts_program *q = build();
    char *json = NULL;
    CHECK_OK(ts_program_load_state(q, d1, &json));
    CHECK(json && strcmp(json, "{\"v\": 2}") == 0, "trainer.json from DIR.old: %s", json ? json : "(null)");
    free(json);
    CHECK(ts_program_step(q) == 8, "step %llu from DIR.old", (unsigned long long)ts_program_step(q));
    CHECK_OK(ts_program_get_param(q, "fc2.bias", &w2));
    CHECK(w2 && tu_f32(w2)[0] == 3.5f, "parameter restored from DIR.old");
    ts_tensor_free(w2);
    CHECK_OK(ts_checkpoint_latest(par, "ckpt-", latest, sizeof latest));
    CHECK(strcmp(latest, d1) == 0, "latest is %s, expected %s", latest, d1);

    /* a stale temp dir of an interrupted save is never taken, and the next save removes it */
    snprintf(stale, sizeof stale, "%s/ckpt-000002.tmp-AbC123", par);
    CHECK(mkdir(stale, 0755) == 0, "mkdir %s", stale);
    snprintf(path, sizeof path, "%s/model.safetensors", stale);
    FILE *f = fopen(path, "wb");
    if (f) { fputs("garbage", f); fclose(f); }
    CHECK_OK(ts_checkpoint_latest(par, "ckpt-", latest, sizeof latest));
    CHECK(strcmp(latest, d1) == 0, "latest is %s with a stale temp dir, expected %s", latest, d1);
    ts_program_set_step(p, 9);
    CHECK_OK(ts_program_save_state(p, d1, NULL)); /* DIR missing, DIR.old present */
    CHECK(is_dir(d1) && !is_dir(old), "a save over DIR.old leaves DIR only");
    snprintf(path, sizeof path, "%s/ckpt-000002", par);
    CHECK_OK(ts_program_save_state(p, path, NULL));
    CHECK(!is_dir(stale), "the stale temp dir was removed by the save");

    /* rotation keeps the newest N by number and removes stale temp dirs */
    for (int s = 3; s <= 5; s++) {
        snprintf(path, sizeof path, "%s/ckpt-%06d", par, s);
        CHECK_OK(ts_program_save_state(p, path, NULL));
    }
    snprintf(stale, sizeof stale, "%s/ckpt-000005.tmp-zzzzzz", par);
    CHECK(mkdir(stale, 0755) == 0, "mkdir %s", stale);
    char stale2[420], leftover[420];
    snprintf(stale2, sizeof stale2, "%s/ckpt-000007.tmp-yyyyyy", par); /* a save that never finished */
    CHECK(mkdir(stale2, 0755) == 0, "mkdir %s", stale2);
    snprintf(leftover, sizeof leftover, "%s/ckpt-000005.old", par); /* a crash before DIR.old went */
    CHECK(mkdir(leftover, 0755) == 0, "mkdir %s", leftover);
    snprintf(path, sizeof path, "%s/other", par);
    CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
    CHECK_OK(ts_checkpoint_rotate(par, "ckpt-", 2));
    for (int s = 1; s <= 5; s++) {
        snprintf(path, sizeof path, "%s/ckpt-%06d", par, s);
        CHECK(is_dir(path) == (s >= 4), "%s %s after keep 2", path, s >= 4 ? "kept" : "removed");
    }
    CHECK(!is_dir(stale) && !is_dir(stale2), "rotation removed the stale temp dirs");
    CHECK(!is_dir(leftover), "rotation removed a DIR.old next to its complete DIR");
    snprintf(path, sizeof path, "%s/other", par);
    CHECK(is_dir(path), "rotation leaves other entries alone");
    CHECK_STATUS(ts_checkpoint_rotate(par, "ckpt-", 0), TS_ERR_ARG);

    /* corrupt or missing files: each error names the file; the program is untouched */
    ts_tensor *before = NULL, *after = NULL;
    CHECK_OK(ts_program_get_param(q, "fc1.weight", &before));
    uint64_t step_before = ts_program_step(q);
    snprintf(d1, sizeof d1, "%s/ckpt-000005", par);
    snprintf(path, sizeof path, "%s/trainer.json", d1);
    f = fopen(path, "wb");
    if (f) { fputs("{\"next_step\": ", f); fclose(f); }
    CHECK_STATUS(ts_program_load_state(q, d1, NULL), TS_ERR_IO);
    CHECK_ERRMSG("ckpt-000005/trainer.json");
    snprintf(d1, sizeof d1, "%s/ckpt-000004", par);
    snprintf(path, sizeof path, "%s/model.safetensors", d1);
    truncate_half(path);
    CHECK_STATUS(ts_program_load_state(q, d1, NULL), TS_ERR_IO);
    CHECK_ERRMSG("ckpt-000004/model.safetensors");
    CHECK_STATUS(ts_checkpoint_latest(par, "ckpt-", latest, sizeof latest), TS_ERR_NOT_FOUND);
    snprintf(path, sizeof path, "%s/ckpt-000099", par);
    CHECK_STATUS(ts_program_load_state(q, path, NULL), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("ckpt-000099");
    CHECK_OK(ts_program_get_param(q, "fc1.weight", &after));
    CHECK(tu_bitwise_equal(before, after) && ts_program_step(q) == step_before, "failed loads changed the program");
    ts_tensor_free(before);
    ts_tensor_free(after);

    /* a state file of another model (a missing tensor) is refused before anything is copied */
    snprintf(path, sizeof path, "%s/ckpt-000006", par);
    CHECK_OK(ts_program_save_state(p, path, NULL));
    snprintf(path, sizeof path, "%s/ckpt-000006/state.safetensors", par);
    ts_tensor *one = ts_tensor_new(TS_F32, 0, NULL);
    CHECK_OK(ts_safetensors_save(path, 1, (const char *const[]){"x@STEP"}, (const ts_tensor *const[]){one},
                                 "{\"format\": \"tessera-train-state-1\", \"step\": \"3\"}"));
    ts_tensor_free(one);
    snprintf(path, sizeof path, "%s/ckpt-000006", par);
    CHECK_STATUS(ts_program_load_state(q, path, NULL), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("state.safetensors", "@MOMENT");

    /* bad arguments */
    CHECK_STATUS(ts_program_save_state(p, path, "{not json"), TS_ERR_ARG);
    CHECK_STATUS(ts_program_save_state(NULL, path, NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_program_load_state(p, NULL, NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_checkpoint_latest(par, "ckpt-", latest, 4), TS_ERR_ARG);
    CHECK_STATUS(ts_checkpoint_latest(NULL, "ckpt-", latest, sizeof latest), TS_ERR_ARG);

    ts_tensor_free(w);
    ts_program_free(q);
    ts_program_free(p);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    snprintf(root, sizeof root, "/tmp/ts_resume_XXXXXX");
    if (!mkdtemp(root)) { perror("mkdtemp"); return 1; }
    RUN(test_kill_and_resume);
    RUN(test_atomic_and_errors);
    rm_rf(root);
    return tu_finish("test_resume");
}
