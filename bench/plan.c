/*
 * bench/plan.c — the planner against measurement on this machine's CPU (issue 26): each row is a
 * BERT run (BERT-Base shapes: hidden 768, 12 heads, FFN 3072, vocab 30522, seq 128, 20 masked
 * positions, AdamW; --layers cuts the depth) estimated by ts_plan_estimate on the measured "cpu"
 * profile with the layout fixed, then built and timed (the median of --steps steps after a
 * warm-up). Rows: training f32 and bf16 at batch 8; inference at batch 8 and 1; a 2- and a 4-stage
 * pipeline (cpu:0 .. cpu:S-1 sharing the cores, as `tessera pretrain --devices` runs it); 2
 * replicas under mpirun; and 3+ layouts of a 4-device pipeline, the planner's order beside the
 * measured one. Each row: predicted s, measured s, their ratio, PASS within 20%.
 *
 * Usage: plan [--layers L (12)] [--steps N (3)] [--profile-seconds S: measure the cpu profile first
 * in S s, else the cached one] [--no-mpi] [--no-calibrate: the profile's eff_mem as measured, else
 * calibrated on the f32 training row (the one row calibrated; every other row predicted)].
 */
#include "tessera_apps.h"

#include "bench_util.h"
#include "plan/cost.h"

#include <math.h>

enum { T = 128, P = 20, MAXROWS = 16 };

typedef struct row {
    char name[80];
    double pred, meas;
} row;

static int g_layers = 12, g_steps = 3;
static ts_device_profile g_prof;

static void die(const char *what) {
    fprintf(stderr, "bench_plan: %s: %s\n", what, ts_last_error());
    exit(1);
}

static void base_config(ts_bert_config *c, ts_dtype dt, int train) {
    ts_bert_config_default(c);
    c->head = train ? TS_BERT_PRETRAINING : TS_BERT_MODEL;
    c->num_hidden_layers = g_layers, c->compute_dtype = dt, c->max_predictions_per_seq = P;
}

/* The L + 2 parts (0 the embeddings, 1 .. L the layers, L + 1 the heads) cut evenly into D
 * contiguous stretches, one per device, as a stage spec. */
static void spec_even(int D, char *spec, size_t cap) {
    int L = g_layers, N = L + 2;
    size_t o = 0;
    for (int d = 0; d < D; d++) {
        int lo = d * N / D, hi = (d + 1) * N / D - 1, a = lo < 1 ? 1 : lo, b = hi > L ? L : hi;
        o += (size_t)snprintf(spec + o, cap - o, "%s%d:%s", d ? " " : "", d, lo == 0 ? "emb" : "");
        if (a <= b) o += (size_t)snprintf(spec + o, cap - o, "%s", lo == 0 ? "," : "");
        if (a < b) o += (size_t)snprintf(spec + o, cap - o, "%d-%d", a - 1, b - 1);
        else if (a == b) o += (size_t)snprintf(spec + o, cap - o, "%d", a - 1);
        if (hi > L) o += (size_t)snprintf(spec + o, cap - o, "%sheads", lo <= L ? "," : "");
    }
}

/* The planner's step time for a fixed layout. */
static double predict(ts_plan_task task, ts_dtype dt, int batch, int D, const char *spec, int R, int M) {
    ts_bert_config c;
    base_config(&c, dt, task != TS_PLAN_INFER);
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = &c, rq.task = task, rq.batch = batch, rq.seq_len = T, rq.max_predictions = P, rq.dtype = dt;
    rq.device = &g_prof, rq.count = D * R, rq.replicas = R, rq.micro_batches = M, rq.recompute = 0;
    rq.shard_state = 0, rq.stages = spec;
    ts_plan_layout l = {.struct_size = sizeof l};
    if (ts_plan_estimate(&rq, &l) != TS_OK) die("ts_plan_estimate");
    if (getenv("TS_BENCH_PLAN_VERBOSE"))
        for (int s = 0; s < l.nstages; s++)
            fprintf(stderr, "  [%s] stage %d: fwd %.3f bwd %.3f update %.3f send %.4f; step %.3f\n", spec, s,
                    l.st[s].fwd_s, l.st[s].bwd_s, l.st[s].update_s, l.st[s].send_s, l.step_s);
    return l.step_s;
}

/* A training (M micro-batches of `batch`) or inference program of the model, fed, over pp's
 * stages (NULL: one device). */
static ts_program *build(int train, ts_dtype dt, int batch, int M, const ts_stage_plan *pp, ts_comm *comm,
                         int threads, int profile) {
    ts_bert_config c;
    base_config(&c, dt, train);
    if (pp) ts_stage_plan_apply(pp, &c);
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &c, .head = c.head, .batch = batch, .seq = T,
                            .seed = 1, .threads = threads, .optimizer = TS_OPTIM_ADAMW, .weight_decay = 0.01f,
                            .max_grad_norm = 1.0f, .accumulation = M, .steps_per_call = 1, .comm = comm,
                            .train_fetches = (const char *[]){"loss"}, .ntrain_fetches = 1,
                            .infer_fetches = (const char *[]){"last_hidden_state"}, .ninfer_fetches = 1,
                            .profile = profile};
    if (pp) o.stage_devices = pp->stage_name, o.nstage_devices = pp->nstages;
    ts_program *p = NULL;
    if (ts_bert_train_programs(&o, train ? &p : NULL, train ? NULL : &p) != TS_OK) die("building the program");
    ts_batch_buf bb;
    if (!ts_batch_buf_init_slices(&bb, batch, T, 2, M, P)) die("out of memory");
    for (int64_t i = 0; i < (int64_t)M * batch * T; i++) {
        ((int32_t *)ts_tensor_data(bb.ids))[i] = (int32_t)(5 + i * 7 % 30000);
        ((int32_t *)ts_tensor_data(bb.mask))[i] = 1;
        ((int32_t *)ts_tensor_data(bb.labels))[i] = i % 7 ? -100 : (int32_t)(i % 30522);
    }
    for (int k = 0; k < M; k++) ts_batch_buf_compact(&bb, k);
    if (ts_batch_buf_feed(&bb, p, train)) die("feeding");
    if (train) {
        ts_tensor *lr = M > 1 ? ts_tensor_new(TS_F32, 1, (int64_t[]){M}) : ts_tensor_new(TS_F32, 0, NULL);
        for (int k = 0; k < M; k++) ((float *)ts_tensor_data(lr))[k] = 1e-4f;
        if (ts_program_feed(p, "lr", lr)) die("feeding lr");
        ts_tensor_free(lr);
    }
    ts_batch_buf_free(&bb);
    return p;
}

/* The median of g_steps runs after a warm-up (comm: every rank's time, the slowest). */
static double time_runs(ts_program *p, ts_comm *comm) {
    double v[32];
    int n = g_steps < 32 ? g_steps : 32;
    if (ts_program_run(p) != TS_OK) die("warm-up run");
    for (int i = 0; i < n; i++) {
        if (comm) ts_comm_barrier(comm);
        double t0 = now();
        if (ts_program_run(p) != TS_OK) die("a run");
        v[i] = now() - t0;
    }
    return median_inplace(v, n);
}

static double measure(int train, ts_dtype dt, int batch, int D, const char *spec, int M) {
    ts_stage_plan pp;
    if (D > 1) {
        char devs[128];
        size_t o = 0;
        for (int d = 0; d < D; d++) o += (size_t)snprintf(devs + o, sizeof devs - o, "%scpu:%d", d ? "," : "", d);
        if (ts_stage_plan_parse(devs, spec, g_layers, &pp) != TS_OK) die("the stage spec");
    }
    ts_program *p = build(train, dt, batch, M, D > 1 ? &pp : NULL, NULL, 0, 0);
    double t = time_runs(p, NULL);
    ts_program_free(p);
    return t;
}

/* ------------------------------------------------------------------ calibration on one row */

/* The calibration row's step split by the profile report (ts_program_profile_report): the
 * products' share of the wall time (the "matmul" op row's kernel time) and the rest (the other
 * kernels and the time outside kernels), applied to the median step. */
typedef struct split {
    double total, gemm, other;
} split;

static void add_text(void *ctx, const char *text, size_t len) {
    char **out = ctx;
    *out = strndup(text, len);
}

static split profiled_split(ts_program *p) {
    if (ts_program_run(p) != TS_OK) die("a warm-up run");
    ts_program_profile_reset(p);
    double step = time_runs(p, NULL);
    char *text = NULL;
    if (ts_program_profile_report(p, add_text, &text) != TS_OK || !text) die("the profile report");
    double runs = 0, wall_ms = 0, gemm_ms = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char op[64];
        double ms;
        int nodes;
        unsigned long long calls;
        if (sscanf(line, "profile: %lf run%*s %lf ms in ts_program_run", &runs, &wall_ms) == 2) continue;
        if (sscanf(line, "%63s %d %llu %lf", op, &nodes, &calls, &ms) == 4 && !strcmp(op, "matmul")) gemm_ms = ms;
    }
    free(text);
    if (runs <= 0 || wall_ms <= 0) die("the profile report has no runs");
    double share = gemm_ms / wall_ms < 1 ? gemm_ms / wall_ms : 1;
    return (split){.total = step, .gemm = step * share, .other = step * (1 - share)};
}

/* The predicted time of the program's products (flops > 0) or of its other kernels, node by node
 * (one device: the step is their sum). */
static double predicted_part(const ts_program *p, int gemm) {
    int n = ts_program_stage_work(p, 0, NULL, 0);
    ts_node_work *w = n > 0 ? malloc(sizeof *w * (size_t)n) : NULL;
    if (n < 0) die("ts_program_stage_work");
    if (n > 0 && !w) die("out of memory");
    n = ts_program_stage_work(p, 0, w, n);
    double t = 0;
    for (int i = 0; i < n; i++)
        if ((w[i].flops > 0) == gemm) t += ts_cost_work(&w[i], &g_prof, -1);
    free(w);
    return t;
}

/* Set eff_mem (gemm 0) or eff_matmul[f32] (gemm 1) of g_prof, bisected in log space over
 * [1/64, 4], such that the predicted part is the measured one; returns it. */
static double bisect(const ts_program *p, int gemm, double measured) {
    double lo = log(1.0 / 64), hi = log(4.0), eff = 1;
    for (int it = 0; it <= 20; it++) {
        eff = exp(0.5 * (lo + hi));
        if (gemm) g_prof.eff_matmul[TS_F32] = eff;
        else g_prof.eff_mem = eff;
        if (it == 20) break;
        if (predicted_part(p, gemm) > measured) lo = log(eff); /* too slow: a higher efficiency */
        else hi = log(eff);
    }
    return eff;
}

/* Two constants from one measured row, the f32 training step at batch 8 compiled with the profile:
 * eff_mem such that the predicted time of the kernels other than products is the measured time
 * outside the products (the other kernels and the framework between them), then eff_matmul[f32]
 * (a factor on the profile's measured f32 GEMM rates) such that the predicted products take the
 * measured products' time. The other dtypes' rates stay as measured: no row calibrates them (the
 * bf16 products of the bf16 row ran at their measured rates, 1.06 x predicted, where f32's ran at
 * 0.87 of theirs: the factor is not the dtype's to share). Returns the row's measured step. */
static double calibrate(void) {
    ts_program *p = build(1, TS_F32, 8, 1, NULL, NULL, 0, 1);
    split sp = profiled_split(p);
    bisect(p, 0, sp.other);
    double g = bisect(p, 1, sp.gemm);
    printf("calibrated on this row (products %.3f s, the rest %.3f s of a %.3f s step): eff_mem %.3f (memory-bound "
           "kernels reach %.1f GB/s of the measured %.1f), eff_matmul[f32] %.3f of the measured f32 GEMM rates\n",
           sp.gemm, sp.other, sp.total, g_prof.eff_mem, g_prof.mem_bw * g_prof.eff_mem / 1e9, g_prof.mem_bw / 1e9, g);
    ts_program_free(p);
    return sp.total;
}

static void print_row(const row *r) {
    double q = r->pred / r->meas;
    printf("%-46s | %9.3f %9.3f | %6.2f  %s\n", r->name, r->pred, r->meas, q, fabs(q - 1) <= 0.2 ? "PASS" : "MISS");
    fflush(stdout);
}

/* ------------------------------------------------------------------ 2 replicas under mpirun */

static int rank_main(int batch, const char *out) {
    ts_comm *c = ts_comm_world();
    if (!c) die("ts_comm_world");
    ts_comm_set_timeout(c, 600);
    int R = ts_comm_size(c);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    ts_program *p = build(1, TS_F32, batch, 1, NULL, c, cores / R > 1 ? (int)(cores / R) : 1, 0);
    double t = time_runs(p, c);
    ts_comm_allreduce_f64(c, &t, 1);
    if (ts_comm_rank(c) == 0) {
        FILE *f = fopen(out, "w");
        if (f) fprintf(f, "%.6f\n", t / R), fclose(f);
    }
    ts_program_free(p);
    ts_comm_finalize();
    return 0;
}

static double measure_replicas(int R, int batch) {
    char self[4096], cmd[8400], out[64];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return 0;
    self[k] = 0;
    snprintf(out, sizeof out, "/tmp/ts_bench_plan_%d.txt", (int)getpid());
    snprintf(cmd, sizeof cmd, "mpirun --oversubscribe --bind-to none -np %d '%s' --rank %d %d %d %s", R, self,
             g_layers, g_steps, batch, out);
    fflush(stdout);
    if (system(cmd) != 0) return 0;
    FILE *f = fopen(out, "r");
    double v = 0;
    if (f && fscanf(f, "%lf", &v) != 1) v = 0;
    if (f) fclose(f);
    unlink(out);
    return v;
}

/* ------------------------------------------------------------------ the layout choice */

static void layout_choice(int batch, int *nrows, row *rows) {
    enum { NL = 4 };
    char specs[NL][128];
    int Ms[NL] = {4, 8, 8, 8};
    spec_even(4, specs[0], sizeof specs[0]);
    snprintf(specs[1], sizeof specs[1], "%s", specs[0]);
    /* the seed system's shape: embeddings and heads on device 0, the layers over the other three */
    size_t o = (size_t)snprintf(specs[2], sizeof specs[2], "0:emb,heads");
    for (int d = 1; d < 4; d++) {
        int lo = (d - 1) * g_layers / 3, hi = d * g_layers / 3 - 1;
        o += (size_t)(lo == hi ? snprintf(specs[2] + o, 128 - o, " %d:%d", d, lo)
                               : snprintf(specs[2] + o, 128 - o, " %d:%d-%d", d, lo, hi));
    }
    /* three devices, all layers but the last on device 0: unbalanced */
    snprintf(specs[3], sizeof specs[3], "0:emb,0-%d 1:%d 2:heads", g_layers - 2, g_layers - 1);
    int nl = g_layers >= 3 ? NL : 3, bestp = 0, bestm = 0;
    double pr[NL], me[NL];
    for (int i = 0; i < nl; i++) {
        int D = i == 3 ? 3 : 4;
        pr[i] = predict(TS_PLAN_PRETRAIN, TS_F32, batch, D, specs[i], 1, Ms[i]) / Ms[i];
        me[i] = measure(1, TS_F32, batch, D, specs[i], Ms[i]) / Ms[i];
        row *r = &rows[(*nrows)++];
        snprintf(r->name, sizeof r->name, "layout %c: \"%s\" M %d (s/micro-batch)", 'A' + i, specs[i], Ms[i]);
        r->pred = pr[i], r->meas = me[i];
        print_row(r);
        bestp = pr[i] < pr[bestp] ? i : bestp, bestm = me[i] < me[bestm] ? i : bestm;
    }
    printf("planner's pick: layout %c (measured %.3f s/micro-batch); measured fastest: layout %c (%.3f): %s\n",
           'A' + bestp, me[bestp], 'A' + bestm, me[bestm], me[bestp] <= 1.05 * me[bestm] ? "PASS (within 5%)" : "MISS");
}

int main(int argc, char **argv) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    double prof_s = 0;
    int mpi = 1, calibrate_on = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rank") && i + 4 < argc) {
            g_layers = atoi(argv[i + 1]), g_steps = atoi(argv[i + 2]);
            return rank_main(atoi(argv[i + 3]), argv[i + 4]);
        }
        if (!strcmp(argv[i], "--layers") && i + 1 < argc) g_layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) g_steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--profile-seconds") && i + 1 < argc) prof_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-mpi")) mpi = 0;
        else if (!strcmp(argv[i], "--no-calibrate")) calibrate_on = 0;
    }
    if (g_layers < 2) g_layers = 2;
    if (g_steps < 1) g_steps = 1;
    if (prof_s > 0) {
        g_prof.struct_size = sizeof g_prof;
        if (ts_device_profile_measure("cpu", prof_s, &g_prof) != TS_OK) die("measuring the cpu profile");
        printf("the cpu profile measured now, in %.0f s\n", prof_s);
    } else if ((g_prof.struct_size = sizeof g_prof, ts_device_profile_load("cpu", &g_prof)) != TS_OK) {
        die("ts_device_profile_load(cpu)");
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("plan: BERT-Base shapes, %d layers, seq %d, %d masked, AdamW, on %ld cores; profile '%s' (%s); the median of "
           "%d steps after a warm-up\n\n", g_layers, T, P, cores, g_prof.name, g_prof.description, g_steps);
    printf("%-46s | %9s %9s | %6s\n", "row", "predicted", "measured", "ratio");
    printf("-------------------------------------------------------------------------------------\n");
    row rows[MAXROWS];
    int n = 0;
    char spec1[64], spec[128];
    snprintf(spec1, sizeof spec1, "0:emb,0-%d,heads", g_layers - 1);
    struct { const char *name; int train; ts_dtype dt; int batch; } one[4] = {
        {"train f32, batch 8 (calibration row)", 1, TS_F32, 8}, {"train bf16, batch 8", 1, TS_BF16, 8},
        {"infer f32, batch 8", 0, TS_F32, 8}, {"infer f32, batch 1", 0, TS_F32, 1}};
    for (int i = 0; i < 4; i++) {
        row *r = &rows[n++];
        snprintf(r->name, sizeof r->name, "%s", one[i].name);
        if (i == 0) {
            double raw = predict(TS_PLAN_PRETRAIN, TS_F32, 8, 1, spec1, 1, 1);
            printf("%-46s | %9.3f %9s |         (eff_mem %.3g, eff_matmul %.3g, as measured)\n",
                   "train f32, batch 8, uncalibrated", raw, "", g_prof.eff_mem, g_prof.eff_matmul[TS_F32]);
            r->meas = calibrate_on ? calibrate() : measure(1, TS_F32, 8, 1, spec1, 1);
        } else {
            r->meas = measure(one[i].train, one[i].dt, one[i].batch, 1, spec1, 1);
        }
        r->pred = predict(one[i].train ? TS_PLAN_PRETRAIN : TS_PLAN_INFER, one[i].dt, one[i].batch, 1, spec1, 1, 1);
        print_row(r);
    }
    const int Ss[2] = {2, 4};
    for (int i = 0; i < 2; i++) {
        int S = Ss[i], M = 2 * S;
        spec_even(S, spec, sizeof spec);
        row *r = &rows[n++];
        snprintf(r->name, sizeof r->name, "pipeline %d stages, M %d x batch 2", S, M);
        r->pred = predict(TS_PLAN_PRETRAIN, TS_F32, 2, S, spec, 1, M);
        r->meas = measure(1, TS_F32, 2, S, spec, M);
        print_row(r);
    }
    if (mpi && strcmp(ts_comm_backend(), "mpi") == 0 && system("mpirun --version >/dev/null 2>&1") == 0) {
        row *r = &rows[n++];
        snprintf(r->name, sizeof r->name, "2 replicas (mpirun), batch 4 each");
        r->pred = predict(TS_PLAN_PRETRAIN, TS_F32, 4, 1, spec1, 2, 1);
        r->meas = measure_replicas(2, 4);
        if (r->meas > 0) print_row(r);
        else printf("%-46s | the mpirun run failed\n", r->name), n--;
    } else {
        printf("2 replicas: skipped (no MPI in this build, mpirun missing, or --no-mpi)\n");
    }
    layout_choice(2, &n, rows);
    int pass = 0;
    for (int i = 0; i < n; i++) pass += fabs(rows[i].pred / rows[i].meas - 1) <= 0.2;
    printf("\n%d of %d rows within 20%% of measured\n", pass, n);
    return 0;
}
