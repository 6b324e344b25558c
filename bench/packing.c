/*
 * bench/packing.c — what packed sequences buy in training throughput (issue 39's acceptance:
 * "packing pays what the padding allows, and more where texts are short"), measured from outside
 * through the built `tessera` command, each run a child process in a temporary folder.
 *
 * Tasks (the demo's model shape, BERT 2 layers x 128 hidden, 2 heads, FFN 512, its 16,000-token
 * WordPiece vocabulary from Brown, WordNet and the training mails, as scripts/demo.sh makes them;
 * SpamAssassin split by `tessera split --split-seed 42`):
 *   spam     the spam filter's fine-tuning: `finetune --random-init` (the shape from a model
 *            pretrained 1 step) on split/train.tsv, 256 tokens, batch 16, lr 5e-4, head+tail;
 *   demo     the demo's pretraining corpus: `pretrain` on split/train.txt, 128 tokens, batch 32;
 *   short    short texts: `pretrain` on the WordNet glosses at 128 tokens, each gloss a document
 *            of its own (a blank line after each; NSP is then meaningless: throughput only).
 * Each task runs padded (--pack 0: a sequence a row) and packed (--pack 4; 8 for short texts) for
 * the same number of optimizer steps, alternating padded, packed, padded, packed over --rounds
 * rounds so that the drift of a shared 2-core machine falls on both; the medians count.
 *
 * The figures, as the runs print them (checked in the code, apps/train):
 *   seq/s    sequences trained / seconds, sequences and not rows in a packed run: finetune's
 *            "N sequences trained in X s (evaluations excluded)" (finetune_run_pack.c counts each
 *            row's texts; X is the training loop's time less evaluations), pretrain's "(R seq/s)"
 *            (pretrain_run.c counts the pairs of each packed row as its reader served them; the
 *            seconds run from just before the training loop to after the model is written, and
 *            --eval-batches 0 leaves no held-out evaluation inside them).
 *   fill     real tokens / slots: "a row" a sequence a row, and "packed" as trained; for the
 *            padded run both are its "a row" figure.
 *   ideal    the packed run's sequences per row, = its packed fill / its own "a row" fill (the
 *            same tokens over rows and over sequences x T): the factor by which packing raises
 *            sequences per second when a row costs the same packed or not. For fine-tuning it is
 *            the padded run's (the whole file is packed once); a short pretraining run reads part
 *            of a window, whose packed rows come in the order of their first pair, which favours
 *            rows of short pairs, so its sequences can be shorter than the padded run's.
 *   allows   the packed fill / the padded run's "a row" fill: the "slots / real tokens of
 *            the padded run, corrected for the packed run's own fill"; equal to ideal up to that.
 *   factor   median packed seq/s / median padded seq/s; "of ideal" = factor / ideal, PASS at
 *            >= 90 % (and, for short texts, factor >= 2).
 * Benches report: the exit status is 0 whatever the verdicts, 1 when a run fails or prints what
 * this program cannot read, 77 (skipped; with CI=true 1) when data/spam or data/text is missing.
 *
 * Usage: bench/packing [--rounds R (2)] [--threads N (2)] [--task spam|demo|short (all; repeatable)]
 *                      [--steps N (each task's own, chosen for runs of tens of seconds)]
 *                      [--quick: the spam task, 8 steps, one round (a smoke test; no verdicts)]
 */
#include "bench_util.h"

#include <math.h>
#include <stdarg.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif
#ifndef TS_BUILD_DIR
#define TS_BUILD_DIR "build"
#endif
#define TESSERA TS_BUILD_DIR "/tessera"
#define SHAPE "--layers", "2", "--hidden", "128", "--heads", "2", "--intermediate", "512"

typedef struct task {
    const char *id, *label;
    int finetune;      /* 1: tessera finetune (classify); 0: tessera pretrain */
    const char *data;  /* the training file, in the work folder */
    int max_len, batch, steps, pack;
    double min_factor; /* a factor the acceptance asks for besides 90 % of ideal (0: none) */
} task;

/* One run's figures, as printed. */
typedef struct run_fig {
    double fill_row, fill_packed, rate;
} run_fig;

static char g_dir[256]; /* the work folder */

/* ------------------------------------------------------------------ child processes */

typedef struct argv_buf {
    char *v[64];
    char store[4096];
    int n;
    size_t used;
} argv_buf;

static void arg(argv_buf *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(a->store + a->used, sizeof a->store - a->used, fmt, ap);
    va_end(ap);
    if (k < 0 || a->used + (size_t)k + 1 > sizeof a->store || a->n + 2 > (int)(sizeof a->v / sizeof *a->v)) {
        fprintf(stderr, "packing: a command line too long\n");
        exit(1);
    }
    a->v[a->n++] = a->store + a->used, a->v[a->n] = NULL;
    a->used += (size_t)k + 1;
}

static void args(argv_buf *a, const char *const *list) {
    for (; *list; list++) arg(a, "%s", *list);
}

static void exec_child(const void *p) {
    const argv_buf *a = p;
    if (chdir(g_dir)) fprintf(stderr, "packing: %s: %s\n", g_dir, strerror(errno)), _exit(127);
    execv(a->v[0], a->v);
    fprintf(stderr, "packing: cannot run %s: %s\n", a->v[0], strerror(errno));
    _exit(127);
}

/* Run the command in a (from g_dir), its stdout into out (cap bytes); exits 1 when it fails. */
static void run_cmd(const argv_buf *a, char *out, size_t cap) {
    int status = 0;
    if (bench_run_child(exec_child, a, out, cap, &status) >= 0) return;
    fprintf(stderr, "packing: failed (%s %d):", WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    for (int i = 0; i < a->n; i++) fprintf(stderr, " %s", a->v[i]);
    fprintf(stderr, "\n%s\n", out);
    exit(1);
}

static void remove_tree(const char *path) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "packing: could not remove %s\n", path);
}

/* ------------------------------------------------------------------ reading the runs' lines */

/* The number right after the first `key` in s (NaN when absent). */
static double num_after(const char *s, const char *key) {
    const char *at = s ? strstr(s, key) : NULL;
    if (!at) return NAN;
    char *end;
    double v = strtod(at + strlen(key), &end);
    return end == at + strlen(key) ? NAN : v;
}

/* The line of buf holding `key` (from its start), or NULL. */
static const char *line_of(const char *buf, const char *key) {
    const char *at = strstr(buf, key);
    if (!at) return NULL;
    while (at > buf && at[-1] != '\n') at--;
    return at;
}

/* A run's figures from its stdout; 0, or -1 (said on stderr) when a figure is missing. */
static int read_figures(const task *t, int pack, const char *out, run_fig *f) {
    const char *eff = line_of(out, "packing efficiency (real tokens / slots)");
    f->fill_row = num_after(eff, "slots) ");
    f->fill_packed = pack ? num_after(eff, " a row, ") : f->fill_row;
    if (t->finetune) f->rate = num_after(line_of(out, " sequences trained in "), "(evaluations excluded): ");
    else f->rate = num_after(line_of(out, " steps in "), " s (");
    if (isnan(f->fill_row) || isnan(f->fill_packed) || isnan(f->rate) || f->rate <= 0 || f->fill_row <= 0 ||
        f->fill_packed > 100.05) {
        fprintf(stderr, "packing: %s, pack %d: no efficiency or rate in what the run printed:\n%s\n", t->id, pack,
                out);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the runs */

/* One training run of task t, packed (pack > 1) or not; its figures into f. */
static void run_task(const task *t, int pack, int steps, int threads, run_fig *f) {
    argv_buf a = {0};
    static char out[1 << 16];
    char dir[300];
    snprintf(dir, sizeof dir, "%s/out-%s-%d", g_dir, t->id, pack);
    remove_tree(dir);
    arg(&a, "%s", TESSERA);
    if (t->finetune) {
        const char *ft[] = {"finetune", "--model", "shape", "--random-init", "--train", t->data, "--test-split", "0",
                            "--epochs", "1000", "--lr", "5e-4", "--seed", "42", "--truncate", "head+tail", NULL};
        args(&a, ft);
    } else {
        const char *pt[] = {"pretrain", "--vocab", "vocab.txt", "--corpus", t->data, SHAPE, "--untie-embeddings",
                            "--lr", "1e-3", "--eval-batches", "0", NULL};
        args(&a, pt);
        arg(&a, "--eval-every"), arg(&a, "%d", steps);
    }
    arg(&a, "--out"), arg(&a, "%s", dir);
    arg(&a, "--max-len"), arg(&a, "%d", t->max_len);
    arg(&a, "--batch"), arg(&a, "%d", t->batch);
    arg(&a, "--max-steps"), arg(&a, "%d", steps);
    arg(&a, "--threads"), arg(&a, "%d", threads);
    arg(&a, "--pack"), arg(&a, "%d", pack);
    run_cmd(&a, out, sizeof out);
    remove_tree(dir);
    if (read_figures(t, pack, out, f)) exit(1);
}

/* The WordNet glosses, each a document of its own: a blank line after each, into `to`. */
static int gloss_documents(const char *from, const char *to) {
    FILE *in = fopen(from, "r"), *out = in ? fopen(to, "w") : NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (out && (n = getline(&line, &cap, in)) > 0)
        if (n > 1 || line[0] != '\n') fprintf(out, "%s%s\n", line, line[n - 1] == '\n' ? "" : "\n");
    free(line);
    int bad = !out || ferror(in);
    if (in) fclose(in);
    if (out && fclose(out)) bad = 1;
    if (bad) fprintf(stderr, "packing: writing %s from %s: %s\n", to, from, strerror(errno));
    return bad ? -1 : 0;
}

/* The split, the vocabulary, a model of the demo's shape (1 step) and, for the short texts, the
 * glosses as documents: what the tasks read, in g_dir. */
static void prepare(int short_texts) {
    static char out[1 << 14];
    argv_buf a = {0};
    const char *split[] = {TESSERA, "split", "--data", TS_SOURCE_DIR "/data/spam/spam.tsv", "--out", "split",
                           "--split-seed", "42", NULL};
    args(&a, split);
    run_cmd(&a, out, sizeof out);
    a = (argv_buf){0};
    const char *vocab[] = {TESSERA, "vocab", "--out", "vocab.txt", "--size", "16000",
                           TS_SOURCE_DIR "/data/text/brown.txt", TS_SOURCE_DIR "/data/text/wordnet.txt",
                           "split/train.txt", NULL};
    args(&a, vocab);
    run_cmd(&a, out, sizeof out);
    a = (argv_buf){0};
    const char *shape[] = {TESSERA, "pretrain", "--vocab", "vocab.txt", "--corpus", "split/train.txt", "--out", "shape",
                           SHAPE, "--untie-embeddings", "--max-len", "128", "--batch", "4", "--max-steps", "1",
                           "--eval-every", "1", "--eval-batches", "0", "--threads", "1", NULL};
    args(&a, shape);
    run_cmd(&a, out, sizeof out);
    char wn[300];
    snprintf(wn, sizeof wn, "%s/glosses.txt", g_dir);
    if (short_texts && gloss_documents(TS_SOURCE_DIR "/data/text/wordnet.txt", wn)) exit(1);
}

/* ------------------------------------------------------------------ the table */

static double load_average(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    double v = NAN;
    if (f && fscanf(f, "%lf", &v) != 1) v = NAN;
    if (f) fclose(f);
    return v;
}

/* What a task measured. */
typedef struct result {
    double fill_pad, fill_packed, ideal, allows, pad, packed, factor;
} result;

/* Task t measured: rounds x (padded, packed), each run's line as it ends; the medians into *res. */
static void measure(const task *t, int steps, int rounds, int threads, result *res) {
    double rate[2][16];
    run_fig fig[2] = {{0}};
    printf("%s, %s: %d steps of %d x %d tokens, padded and --pack %d\n", t->id, t->label, steps, t->batch, t->max_len,
           t->pack);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            run_fig f;
            double t0 = now();
            run_task(t, k ? t->pack : 0, steps, threads, &f);
            printf("  round %d %-6s %8.2f seq/s; fill %.1f%% a row, %.1f%% as trained; %.0f s\n", r + 1,
                   k ? "packed" : "padded", f.rate, f.fill_row, f.fill_packed, now() - t0);
            fflush(stdout);
            rate[k][r] = f.rate;
            fig[k] = f; /* fills: the last round's (each round reads the same data) */
        }
    res->pad = median_inplace(rate[0], rounds), res->packed = median_inplace(rate[1], rounds);
    res->fill_pad = fig[0].fill_row, res->fill_packed = fig[1].fill_packed;
    res->ideal = fig[1].fill_packed / fig[1].fill_row, res->allows = fig[1].fill_packed / fig[0].fill_row;
    res->factor = res->packed / res->pad;
}

/* The table: a row a task measured (done[k]). */
static void print_table(const task *tasks, const result *res, const int *done, int ntasks, int quick) {
    printf("\n%-6s %9s %9s %6s %6s %10s %10s %7s %8s  %s\n", "task", "fill pad", "packed", "ideal", "allows",
           "seq/s pad", "seq/s pack", "factor", "of ideal", "verdict");
    for (int k = 0; k < ntasks; k++) {
        if (!done[k]) continue;
        const task *t = &tasks[k];
        const result *r = &res[k];
        double of_ideal = r->factor / r->ideal;
        printf("%-6s %8.1f%% %8.1f%% %6.3f %6.3f %10.2f %10.2f %7.3f %7.1f%%  ", t->id, r->fill_pad, r->fill_packed,
               r->ideal, r->allows, r->pad, r->packed, r->factor, 100 * of_ideal);
        if (quick) printf("n/a (--quick: too short to judge)");
        else printf(">= 90%% of ideal: %s", of_ideal >= 0.9 ? "PASS" : "FAIL");
        if (!quick && t->min_factor > 0)
            printf("; >= %.0fx: %s", t->min_factor, r->factor >= t->min_factor ? "PASS" : "FAIL");
        printf("\n");
    }
}

static int usage(void) {
    fprintf(stderr, "usage: bench/packing [--rounds R (2)] [--threads N (2)] [--task spam|demo|short]... "
                    "[--steps N] [--quick]\n");
    return 2;
}

static int have(const char *path) { return access(path, R_OK) == 0; }

int main(int argc, char **argv) {
    task tasks[] = {
        {"spam", "the spam filter's fine-tuning, from random weights", 1, "split/train.tsv", 256, 16, 150, 4, 0},
        {"demo", "pretraining on the demo's corpus, the training mails", 0, "split/train.txt", 128, 32, 100, 4, 0},
        {"short", "pretraining on WordNet glosses, a document each", 0, "glosses.txt", 128, 32, 100, 8, 2},
    };
    int ntasks = (int)(sizeof tasks / sizeof *tasks), chosen[8] = {0}, any = 0;
    int rounds = 2, threads = 2, steps = 0, quick = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            quick = 1;
            continue;
        }
        if (!v) return usage();
        i++;
        if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--steps")) steps = atoi(v);
        else if (!strcmp(a, "--task")) {
            int k = 0;
            while (k < ntasks && strcmp(tasks[k].id, v)) k++;
            if (k == ntasks) return fprintf(stderr, "packing: --task %s: not spam, demo or short\n", v), usage();
            chosen[k] = any = 1;
        } else return usage();
    }
    if (rounds < 1 || rounds > 16 || threads < 1 || steps < 0)
        return fprintf(stderr, "packing: --rounds 1 to 16, --threads >= 1, --steps >= 0 (0: each task's own)\n"), 2;
    if (quick) {
        memset(chosen, 0, sizeof chosen), chosen[0] = any = 1;
        rounds = 1, steps = steps ? steps : 8;
    }
    for (int k = 0; k < ntasks; k++) chosen[k] = any ? chosen[k] : 1;
    const char *need[] = {TS_SOURCE_DIR "/data/spam/spam.tsv", TS_SOURCE_DIR "/data/text/brown.txt",
                          TS_SOURCE_DIR "/data/text/wordnet.txt"};
    for (int k = 0; k < 3; k++)
        if (!have(need[k])) {
            int ci = getenv("CI") && !strcmp(getenv("CI"), "true");
            printf("packing: skipped, %s is missing (run: bash scripts/install-deps.sh)\n", need[k]);
            if (ci) printf("packing: FAIL: CI=true: CI installs the data, so this is a failure\n");
            return ci ? 1 : 77;
        }
    if (access(TESSERA, X_OK)) return fprintf(stderr, "packing: %s is not built (target tessera_cli)\n", TESSERA), 1;
    snprintf(g_dir, sizeof g_dir, "/tmp/bench_packing_XXXXXX");
    if (!mkdtemp(g_dir)) return perror("packing: mkdtemp"), 1;
    double t0 = now(), load0 = load_average();
    prepare(chosen[2]);
    printf("packing: padded (--pack 0) and packed runs alternating over %d round%s, %d thread%s, in %s\n", rounds,
           rounds == 1 ? "" : "s", threads, threads == 1 ? "" : "s", g_dir);
    result res[8];
    for (int k = 0; k < ntasks; k++)
        if (chosen[k]) measure(&tasks[k], steps ? steps : tasks[k].steps, rounds, threads, &res[k]);
    print_table(tasks, res, chosen, ntasks, quick);
    printf("packing: done in %.0f s; load average (1 min) %.2f at the start, %.2f at the end, on %ld CPUs\n",
           now() - t0, load0, load_average(), sysconf(_SC_NPROCESSORS_ONLN));
    remove_tree(g_dir);
    return 0;
}
