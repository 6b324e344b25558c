/*
 * test_cli_replicas.c — `mpirun -np R tessera pretrain|finetune`: replicas over Open MPI, end to
 * end (skipped when this build has no MPI or mpirun is not installed). Runs as root with
 * OMPI_ALLOW_RUN_AS_ROOT, and oversubscribed (more ranks and devices than the 2 cores here).
 *  - equivalence: a small BERT (2 layers, dropout 0.1, clipping at 1) pretrained for 20 steps with
 *    the same global batch — one process of 4 micro-batches a step, 2 ranks x 2, 4 ranks x 1,
 *    2 ranks x a pipeline of 2 devices, and 2 and 4 ranks and the pipeline with --shard-optimizer — gives the
 *    losses and final parameters of the one process within 1e-5 relative (parameters: per
 *    tensor, ||a - b|| <= 1e-5 ||a|| + 1e-8; the floor is for the attention key biases, whose
 *    gradient is zero up to rounding, so that they stay near 0 and Adam turns the rounding into
 *    steps of either sign);
 *  - the seed's POD16 layout: 4 ranks, each a pipeline of 4 devices (embeddings and heads on
 *    device 0, encoder layers 4 / 4 / 4 on devices 1 - 3) for a 12-layer BERT, equal to one process;
 *  - fine-tuning a classifier on 2 ranks equals one process;
 *  - faults: rank 1 killed mid-run: the job ends non-zero within the timeout, the message names
 *    rank 1, and a resume from the last checkpoint ends with the parameters of an uninterrupted
 *    run; rank 1 stopped (hung): the others stop after --comm-timeout naming it; a checkpoint
 *    missing one rank's part is skipped by --resume;
 *  - bad flags: --shard-optimizer without replicas, a resume with another number of ranks.
 */
#include "test_util.h"
#include "cli_util.h"

#include <dirent.h>
#include <sys/time.h>

static const char *PRE = "pretrain --vocab vocab.txt --corpus corpus.txt --max-len 32 --batch 2 --threads 1 "
                         "--heads 2 --eval-every 20 --eval-batches 1 --seed 7 --dropout 0.1 --max-grad-norm 1";

/* Run `mpirun --oversubscribe -np np tessera ARGS` in dir (out_text / err_text as tessera()). */
__attribute__((format(printf, 2, 3))) static int mpi(int np, const char *fmt, ...) {
    char args[2048], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && mpirun --oversubscribe -np %d '%s' %s </dev/null >stdout.txt 2>stderr.txt",
             dir, np, cli, args);
    int st = system(cmd);
    read_into("stdout.txt", out_text, sizeof out_text);
    read_into("stderr.txt", err_text, sizeof err_text);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

/* The "loss" of each step in DIR/metrics.jsonl into v (at most cap); returns how many. */
static int losses_of(const char *run, double *v, int cap) {
    char path[300], line[4096];
    snprintf(path, sizeof path, "%s/%s/metrics.jsonl", dir, run);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f) && n < cap) {
        const char *l = strstr(line, "\"loss\": ");
        if (l) v[n++] = atof(l + 8);
    }
    if (f) fclose(f);
    return n;
}

/* Do runs a and b have the same losses and parameters, within 1e-5 relative (see the top)? */
static void check_close(const char *a, const char *b) {
    double la[256], lb[256];
    int na = losses_of(a, la, 256), nb = losses_of(b, lb, 256);
    CHECK(na > 0 && na == nb, "%s has %d losses, %s %d", a, na, b, nb);
    double worst = 0;
    for (int i = 0; i < na && i < nb; i++) {
        double r = fabs(la[i] - lb[i]) / fabs(la[i]);
        if (r > worst) worst = r;
    }
    CHECK(worst <= 1e-5, "%s vs %s: losses differ by %.3g relative", a, b, worst);
    char pa[300], pb[300];
    snprintf(pa, sizeof pa, "%s/%s/model.safetensors", dir, a);
    snprintf(pb, sizeof pb, "%s/%s/model.safetensors", dir, b);
    ts_safetensors *sa = ts_safetensors_open(pa), *sb = ts_safetensors_open(pb);
    CHECK(sa && sb, "%s or %s: %s", pa, pb, ts_last_error());
    int bad = 0, n = sa ? ts_safetensors_count(sa) : 0;
    double wrel = 0;
    const char *wname = "";
    for (int i = 0; sb && i < n; i++) {
        const char *name = ts_safetensors_name(sa, i);
        ts_tensor *x = NULL, *y = NULL;
        if (ts_safetensors_get(sa, name, &x) || ts_safetensors_get(sb, name, &y)) {
            bad++;
            ts_tensor_free(x);
            continue;
        }
        const float *p = ts_tensor_data(x), *q = ts_tensor_data(y);
        double d = 0, s = 0;
        for (int64_t k = 0; k < ts_tensor_numel(x); k++) d += ((double)p[k] - q[k]) * ((double)p[k] - q[k]), s += (double)p[k] * p[k];
        d = sqrt(d), s = sqrt(s);
        if (d > 1e-5 * s + 1e-8) bad++;
        if (s > 0 && d / s > wrel && d > 1e-8) wrel = d / s, wname = name;
        ts_tensor_free(x), ts_tensor_free(y);
    }
    CHECK(n > 0 && !bad, "%s vs %s: %d of %d parameters differ beyond 1e-5 relative (the worst: %s, %.3g)", a, b, bad,
          n, wname, wrel);
    printf("  %s vs %s: %d steps, losses within %.2g, parameters within %.2g relative\n", a, b, na, worst, wrel);
    ts_safetensors_close(sa), ts_safetensors_close(sb);
}

static void test_setup(void) {
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
}

static void test_equivalence(void) {
    const char *m = "--layers 2 --hidden 32 --intermediate 64 --max-steps 20";
    int rc = tessera(NULL, "%s %s --out one --accumulation 4", PRE, m);
    CHECK_RAN(rc, 0);
    rc = mpi(2, "%s %s --out r2 --accumulation 2", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "2 replicas (mpirun ranks)") && strstr(out_text, "effective batch 8"), "r2: %s", out_text);
    check_close("one", "r2");
    rc = mpi(4, "%s %s --out r4", PRE, m);
    CHECK_RAN(rc, 0);
    check_close("one", "r4");
    rc = mpi(2, "%s %s --out r2p --devices cpu:0,cpu:1 --stages \"0:emb,0 1:1,heads\" --micro-batches 2", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "pipeline of 2 stages"), "r2p: %s", out_text);
    check_close("one", "r2p");
    rc = mpi(2, "%s %s --out r2s --accumulation 2 --shard-optimizer", PRE, m);
    CHECK_RAN(rc, 0);
    check_close("one", "r2s");
    /* AdamW's two moments: 1/2 of them per rank, about (whole parameters go to one rank) */
    double full = 0, shard = 0;
    char met[1 << 14];
    static const char *key = "\"optimizer_state_bytes_per_rank\": ";
    read_into("r2/metrics.jsonl", met, sizeof met);
    const char *k = strstr(met, key);
    if (k) full = atof(k + strlen(key));
    read_into("r2s/metrics.jsonl", met, sizeof met);
    k = strstr(met, key);
    if (k) shard = atof(k + strlen(key));
    CHECK(full > 0 && shard > 0.3 * full && shard < 0.7 * full, "optimizer state per rank: %g sharded, %g not", shard,
          full);
    rc = mpi(4, "%s %s --out r4s --shard-optimizer", PRE, m);
    CHECK_RAN(rc, 0);
    check_close("one", "r4s");
    rc = mpi(2, "%s %s --out r2ps --devices cpu:0,cpu:1 --stages \"0:emb,0 1:1,heads\" --micro-batches 2 "
                "--shard-optimizer", PRE, m);
    CHECK_RAN(rc, 0);
    check_close("one", "r2ps");
}

static void test_pod16(void) {
    const char *m = "--layers 12 --hidden 32 --intermediate 64 --max-steps 4";
    int rc = tessera(NULL, "%s %s --out p1 --accumulation 16", PRE, m);
    CHECK_RAN(rc, 0);
    rc = mpi(4, "%s %s --out p16 --devices cpu:0,cpu:1,cpu:2,cpu:3 --stages \"0:emb,heads 1:0-3 2:4-7 3:8-11\" "
                "--micro-batches 4", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "4 replicas") && strstr(out_text, "pipeline of 5 stages on 4 devices") &&
              strstr(out_text, "effective batch 32"), "POD16: %s", out_text);
    check_close("p1", "p16");
}

static void test_finetune(void) {
    int rc = tessera(NULL, "%s --layers 2 --hidden 32 --intermediate 64 --max-steps 2 --out pre", PRE);
    CHECK_RAN(rc, 0);
    const char *ft = "finetune --model pre --train data.tsv --batch 4 --max-len 32 --threads 1 --max-steps 6 "
                     "--max-grad-norm 1";
    rc = tessera(NULL, "%s --out f1 --accumulation 2", ft);
    CHECK_RAN(rc, 0);
    rc = mpi(2, "%s --out f2", ft);
    CHECK_RAN(rc, 0);
    check_close("f1", "f2");
}

/* The pid of rank `rank` of a running `tessera ... --out OUT` job (0: none). */
static pid_t rank_pid(const char *out, int rank) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;
    char want[64], path[300], buf[1 << 15];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    while (d && (e = readdir(d)) && !found) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        for (size_t i = 0; i < n; i++)
            if (!buf[i]) buf[i] = ' ';
        buf[n] = 0;
        if (!strstr(buf, cli) || !strstr(buf, out) || strstr(buf, "mpirun")) continue;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        f = fopen(path, "r");
        n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        for (size_t i = 0; i < n; i++)
            if (!buf[i] && i + 1 < n && !strncmp(buf + i + 1, want, strlen(want)) &&
                (buf[i + 1 + strlen(want)] == 0))
                found = (pid_t)atoi(e->d_name);
    }
    if (d) closedir(d);
    return found;
}

static double now_s(void) {
    struct timeval t;
    gettimeofday(&t, NULL);
    return (double)t.tv_sec + 1e-6 * (double)t.tv_usec;
}

/* Start `mpirun -np np tessera ARGS` in the background; its exit code lands in dir/NAME.rc. */
__attribute__((format(printf, 3, 4))) static void mpi_bg(const char *name, int np, const char *fmt, ...) {
    char args[2048], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f %s.rc && (mpirun --oversubscribe -np %d '%s' %s </dev/null >%s.out "
             "2>%s.err; echo $? > %s.rc) &", dir, name, np, cli, args, name, name, name);
    CHECK(system(cmd) == 0, "could not start %s", cmd);
}

/* Wait (at most limit seconds) for file dir/name to exist; 1 when it does. */
static int wait_for(const char *name, double limit) {
    double t0 = now_s();
    while (now_s() - t0 < limit) {
        if (exists(name)) return 1;
        usleep(50 * 1000);
    }
    return exists(name);
}

static void test_faults(void) {
    const char *m = "--layers 2 --hidden 32 --intermediate 64 --max-steps 400 --save-every 10 --eval-every 400 "
                    "--comm-timeout 10";
    int rc = mpi(2, "%s %s --out whole", PRE, m);
    CHECK_RAN(rc, 0);
    /* killed: mpirun ends the job and names the rank */
    mpi_bg("kill", 2, "%s %s --out killed", PRE, m);
    CHECK(wait_for("killed/checkpoints/step-000020/trainer.json", 120), "no checkpoint at step 20 appeared");
    pid_t p = rank_pid("killed", 1);
    CHECK(p > 0, "rank 1 of the job not found");
    double t0 = now_s();
    if (p > 0) kill(p, SIGKILL);
    CHECK(wait_for("kill.rc", 60), "the job did not end within 60 s of rank 1's death");
    double took = now_s() - t0;
    char rcs[32], errs[1 << 14];
    read_into("kill.rc", rcs, sizeof rcs);
    read_into("kill.err", errs, sizeof errs);
    CHECK(atoi(rcs) != 0 && strstr(errs, "rank 1") && took < 15, "after killing rank 1: exit %s after %.1f s: %s", rcs,
          took, errs);
    printf("  rank 1 killed: the job ended in %.1f s, exit %d\n", took, atoi(rcs));
    /* resumed from its last checkpoint: the uninterrupted run's parameters */
    rc = mpi(2, "%s %s --resume killed", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "resuming from killed/checkpoints/step-"), "resume: %s", out_text);
    CHECK(same_bytes("whole/model.safetensors", "killed/model.safetensors"),
          "killed at a checkpoint and resumed: another model than the uninterrupted run");

    /* hung (stopped): the others stop after --comm-timeout, naming it */
    const char *h = "--layers 2 --hidden 32 --intermediate 64 --max-steps 100000 --save-every 10 --eval-every 100000 "
                    "--comm-timeout 3";
    mpi_bg("hang", 3, "%s %s --out hung", PRE, h);
    CHECK(wait_for("hung/checkpoints/step-000010/trainer.json", 120), "no checkpoint at step 10 appeared");
    p = rank_pid("hung", 1);
    CHECK(p > 0, "rank 1 of the job not found");
    t0 = now_s();
    if (p > 0) kill(p, SIGSTOP);
    CHECK(wait_for("hang.rc", 60), "the job did not end within 60 s of rank 1's stop");
    took = now_s() - t0;
    read_into("hang.rc", rcs, sizeof rcs);
    read_into("hang.err", errs, sizeof errs);
    CHECK(atoi(rcs) != 0 && strstr(errs, "did not complete within 3 s") && strstr(errs, "rank 1 did not answer") &&
              took < 3 + 5 + 5, "after stopping rank 1: exit %s after %.1f s: %s", rcs, took, errs);
    printf("  rank 1 stopped: the job ended in %.1f s, exit %d\n", took, atoi(rcs));
    if (p > 0) kill(p, SIGKILL); /* mpirun ended it; in case not */

    /* a checkpoint without one rank's part is never resumed from */
    char part[300];
    snprintf(part, sizeof part, "%s/killed/checkpoints/step-000400/part-1.safetensors", dir);
    CHECK(unlink(part) == 0, "%s: %s", part, strerror(errno));
    rc = mpi(2, "%s %s --resume killed --max-steps 400", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(strstr(err_text, "step-000400") && strstr(err_text, "the part of rank 1 of 2 is missing") &&
              strstr(out_text, "resuming from killed/checkpoints/step-000390"), "incomplete checkpoint: %s\n%s",
          out_text, err_text);
}

static void test_bad_flags(void) {
    const char *m = "--layers 2 --hidden 32 --intermediate 64 --max-steps 2";
    int rc = tessera(NULL, "%s %s --out b1 --shard-optimizer", PRE, m);
    CHECK_FAILS(rc, "--shard-optimizer shares the optimizer state among replicas");
    rc = mpi(2, "%s %s --out b2 --save-every 2", PRE, m);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s %s --resume b2 --max-steps 4", PRE, m);
    CHECK_FAILS(rc, "made by 2 replicas, not 1");
    rc = mpi(2, "vocab --out v.txt --size 50 corpus.txt");
    CHECK(rc != 0 && strstr(err_text, "tessera vocab runs in one process"), "vocab under mpirun: %d %s", rc, err_text);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (strcmp(ts_comm_backend(), "mpi") != 0) tu_skip("this build has no MPI (TS_WITH_MPI: install libopenmpi-dev)");
    if (system("mpirun --version >/dev/null 2>&1") != 0) tu_skip("mpirun is not installed (openmpi-bin)");
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    int rc = cli_setup("ts_cli_replicas");
    if (rc) return rc;
    RUN(test_setup);
    RUN(test_equivalence);
    RUN(test_pod16);
    RUN(test_finetune);
    RUN(test_faults);
    RUN(test_bad_flags);
    cli_cleanup("test_cli_replicas");
    return tu_finish("test_cli_replicas");
}
