/*
 * bench/replicas.c — data parallelism over Open MPI (tessera.h "Replicas"), measured:
 *  1. all-reduce bandwidth against message size (1 KiB .. 64 MiB of f32), 2 ranks: tessera's
 *     ts_comm_allreduce (posted to a progress thread, waited on) beside MPI_Allreduce called
 *     directly, the peer; algbw = bytes / time, busbw = algbw x 2 (R - 1) / R (NCCL's convention:
 *     what each link carries);
 *  2. a training step of BERT-Base-sized layers (hidden 768, FFN 3072, 12 heads, 2 layers, seq
 *     128, a global batch of 8 sequences in micro-batches of 4): 1 rank x 2 threads (2
 *     micro-batches a step) beside 2 ranks x 1 thread (1 each), and for the ranks the share of
 *     the gradient all-reduce hidden behind the backward pass: 1 - (time the updates waited for
 *     it) / (time the progress threads spent in it);
 *  3. optimizer-state bytes per rank for BERT-Base itself (110 M parameters, AdamW), compiled on
 *     2 and 4 ranks, with and without --shard-optimizer (ZeRO-1).
 * The program starts itself under `mpirun --oversubscribe` for the parts that need ranks; it
 * prints a skip line when this build has no MPI or mpirun is missing. Usage: replicas [steps, 3].
 */
#include "tessera_apps.h"

#if __has_include(<mpi.h>)
#include <mpi.h>
#define HAVE_MPI_H 1
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "bench_replicas: %s: %s\n", what, ts_last_error());
    exit(1);
}

/* ------------------------------------------------------------------ 1. all-reduce bandwidth */

static void part_allreduce(ts_comm *c) {
    int R = ts_comm_size(c), me = ts_comm_rank(c);
    if (me == 0) {
        printf("1. all-reduce of f32 (sum), %d ranks on one machine (shared memory): tessera's ts_comm_allreduce\n"
               "   beside MPI_Allreduce called directly\n\n", R);
        printf("%10s | %10s %9s %9s | %10s %9s | %s\n", "bytes", "tessera", "algbw", "busbw", "MPI", "algbw",
               "tessera / MPI time");
        printf("-------------------------------------------------------------------------------------\n");
    }
    for (size_t bytes = 1024; bytes <= ((size_t)64 << 20); bytes *= 4) {
        int64_t n = (int64_t)(bytes / 4);
        float *buf = malloc(bytes);
        if (!buf) die("out of memory");
        for (int64_t i = 0; i < n; i++) buf[i] = (float)(i % 7) * 1e-3f;
        double t[2] = {0, 0};
        for (int which = 0; which < 2; which++) {
            /* enough repetitions for ~0.2 s, agreed by rank 0 */
            int reps = bytes < (1 << 20) ? 200 : bytes < (16 << 20) ? 20 : 4;
            ts_comm_barrier(c);
            double t0 = now_s();
            for (int k = 0; k < reps; k++) {
                if (which == 0) {
                    if (ts_comm_allreduce(c, buf, n, TS_F32) != TS_OK) die("ts_comm_allreduce");
                } else {
#ifdef HAVE_MPI_H
                    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
                }
            }
            double el = (now_s() - t0) / reps;
            ts_comm_allreduce_f64(c, &el, 1); /* the mean over the ranks */
            t[which] = el / R;
        }
        if (me == 0)
            printf("%10zu | %8.3f ms %6.2f GB/s %6.2f GB/s | %8.3f ms %6.2f GB/s | %.2f\n", bytes, 1e3 * t[0],
                   bytes / t[0] / 1e9, bytes / t[0] / 1e9 * 2 * (R - 1) / R, 1e3 * t[1], bytes / t[1] / 1e9, t[0] / t[1]);
        free(buf);
    }
}

/* ------------------------------------------------------------------ 2. a data-parallel step */

enum { T = 128, MB = 4, GLOBAL = 8, HIDDEN = 768, LAYERS = 2 };

static ts_program *bert_program(ts_comm *c, int R, int threads, int layers, int vocab, int batch, int N, int shard,
                                int compile_only) {
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = vocab, cfg.hidden_size = HIDDEN, cfg.num_hidden_layers = layers, cfg.num_attention_heads = 12;
    cfg.intermediate_size = 4 * HIDDEN, cfg.max_position_embeddings = 512, cfg.max_predictions_per_seq = 20;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &cfg, .head = TS_BERT_PRETRAINING, .batch = batch, .seq = T,
                            .seed = 1, .threads = threads, .optimizer = TS_OPTIM_ADAMW, .weight_decay = 0.01f,
                            .accumulation = N, .steps_per_call = 1, .train_fetches = (const char *[]){"loss"},
                            .ntrain_fetches = 1, .comm = R > 1 ? c : NULL, .shard_state = shard};
    ts_program *p = NULL;
    if (ts_bert_train_programs(&o, &p, NULL) != TS_OK) die("building the program");
    if (compile_only) return p;
    ts_batch_buf bb;
    if (!ts_batch_buf_init_slices(&bb, batch, T, 2, N, 20)) die("out of memory");
    for (int64_t i = 0; i < (int64_t)N * batch * T; i++) {
        ((int32_t *)ts_tensor_data(bb.ids))[i] = (int32_t)(5 + i * 7 % (vocab - 10));
        ((int32_t *)ts_tensor_data(bb.mask))[i] = 1;
        ((int32_t *)ts_tensor_data(bb.labels))[i] = i % 7 ? -100 : (int32_t)(i % vocab);
    }
    for (int k = 0; k < N; k++) ts_batch_buf_compact(&bb, k);
    ts_tensor *lr = N > 1 ? ts_tensor_new(TS_F32, 1, (int64_t[]){N}) : ts_tensor_new(TS_F32, 0, NULL);
    for (int k = 0; k < N; k++) ((float *)ts_tensor_data(lr))[k] = 1e-4f;
    if (ts_batch_buf_feed(&bb, p, 1) || ts_program_feed(p, "lr", lr)) die("feeding");
    ts_batch_buf_free(&bb);
    ts_tensor_free(lr);
    return p;
}

/* The step time of R ranks x threads for the global batch; writes it to `out` (rank 0). */
static void part_step(ts_comm *c, int threads, int steps, const char *out) {
    int R = ts_comm_size(c), me = ts_comm_rank(c), N = GLOBAL / (MB * R);
    ts_program *p = bert_program(c, R, threads, LAYERS, 8000, MB, N, 0, 0);
    if (ts_program_run(p) != TS_OK) die("warm-up step");
    ts_comm_barrier(c);
    ts_comm_reset_stats(c);
    double t0 = now_s();
    for (int i = 0; i < steps; i++)
        if (ts_program_run(p) != TS_OK) die("a step");
    double el = (now_s() - t0) / steps;
    ts_comm_stats st;
    ts_comm_get_stats(c, 1, &st);
    double v[3] = {el, st.busy_s, st.wait_s};
    ts_comm_allreduce_f64(c, v, 3);
    if (me == 0) {
        printf("   %d rank%s x %d thread%s, %d micro-batch%s of %d each: %.3f s a step (%.1f seq/s)", R, R > 1 ? "s" : "",
               threads, threads > 1 ? "s" : "", N, N > 1 ? "es" : "", MB, v[0] / R, GLOBAL / (v[0] / R));
        if (R > 1)
            printf("; all-reduce %.1f MB a step, %.3f s in MPI, %.3f s waited for: %.0f%% hidden behind the backward "
                   "pass", (double)st.bytes / steps / 1e6, v[1] / R / steps, v[2] / R / steps,
                   v[1] > 0 ? 100 * (1 - v[2] / v[1]) : 0);
        printf("\n");
        FILE *f = out ? fopen(out, "w") : NULL;
        if (f) fprintf(f, "%.6f\n", v[0] / R), fclose(f);
    }
    ts_program_free(p);
}

/* ------------------------------------------------------------------ 3. optimizer state per rank */

static void part_memory(ts_comm *c) {
    int R = ts_comm_size(c), me = ts_comm_rank(c);
    for (int shard = 0; shard < 2; shard++) {
        ts_program *p = bert_program(c, R, 1, 12, 30522, 1, 1, shard, 1);
        ts_memory m = {.struct_size = sizeof m};
        ts_program_memory(p, &m);
        int64_t mine[2] = {(int64_t)m.optimizer_state, (int64_t)m.grad_buckets}, all[2 * 16] = {0};
        ts_comm_allgather(c, mine, all, 2, TS_I64);
        if (me == 0) {
            printf("   BERT-Base, %d ranks, %-18s optimizer state per rank:", R, shard ? "--shard-optimizer:" : "replicated:");
            for (int r = 0; r < R; r++) printf(" %7.1f", all[2 * r] / 1048576.0);
            printf(" MiB (params %.1f MiB, gradient buckets %.1f MiB)\n", m.params / 1048576.0, all[1] / 1048576.0);
        }
        ts_program_free(p);
    }
}

/* ------------------------------------------------------------------ the driver */

static int run_ranks(int n, const char *args) {
    char self[4096], cmd[8400];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return -1;
    self[k] = 0;
    snprintf(cmd, sizeof cmd, "mpirun --oversubscribe --bind-to none -np %d '%s' %s", n, self, args);
    fflush(stdout);
    return system(cmd);
}

static double read_num(const char *path) {
    FILE *f = fopen(path, "r");
    double v = 0;
    if (f && fscanf(f, "%lf", &v) != 1) v = 0;
    if (f) fclose(f);
    unlink(path);
    return v;
}

int main(int argc, char **argv) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    if (getenv("OMPI_COMM_WORLD_SIZE")) { /* a rank of one of the parts below */
        ts_comm *c = ts_comm_world();
        if (!c) die("ts_comm_world");
        ts_comm_set_timeout(c, 600);
        if (argc > 1 && !strcmp(argv[1], "--allreduce")) part_allreduce(c);
        if (argc > 4 && !strcmp(argv[1], "--step")) part_step(c, atoi(argv[2]), atoi(argv[3]), argv[4]);
        if (argc > 1 && !strcmp(argv[1], "--memory")) part_memory(c);
        ts_comm_finalize();
        return 0;
    }
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    if (steps < 1) steps = 3;
    if (strcmp(ts_comm_backend(), "mpi") != 0 || system("mpirun --version >/dev/null 2>&1") != 0) {
        printf("replicas: skipped (this build has no MPI, or mpirun is not installed: scripts/install-deps.sh)\n");
        return 0;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("replicas: %ld cores, Open MPI over shared memory, ranks oversubscribed when more than cores\n\n", cores);
    if (run_ranks(2, "--allreduce")) return 1;
    printf("\n2. a training step of BERT-Base-sized layers (%d layers x %d hidden, FFN %d, seq %d), global batch %d, "
           "AdamW; %d timed steps after a warm-up\n\n", LAYERS, HIDDEN, 4 * HIDDEN, T, GLOBAL, steps);
    char a1[64], a2[128];
    snprintf(a1, sizeof a1, "--step 2 %d /tmp/ts_bench_r1.txt", steps);
    if (run_ranks(1, a1)) return 1;
    snprintf(a2, sizeof a2, "--step 1 %d /tmp/ts_bench_r2.txt", steps);
    if (run_ranks(2, a2)) return 1;
    double t1 = read_num("/tmp/ts_bench_r1.txt"), t2 = read_num("/tmp/ts_bench_r2.txt");
    if (t1 > 0 && t2 > 0)
        printf("   2 ranks x 1 thread take %.2f x the step time of 1 rank x 2 threads (below 1: faster)\n", t2 / t1);
    printf("\n3. optimizer state (AdamW's two moments) per rank, BERT-Base (compiled, batch 1 x %d)\n\n", T);
    if (run_ranks(2, "--memory") || run_ranks(4, "--memory")) return 1;
    return 0;
}
