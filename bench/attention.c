/*
 * bench/attention.c — the fused attention op (ts_attention, ops/attention_kernel.c) beside its
 * peer, the unfused ops it replaces (two matmuls, scale, softmax with the mask, dropout), in the
 * same run, at BERT-Base's heads (H 12, D 64) and the seed's shapes: batch x sequence 8 x 128
 * (phase 1), 4 x 384 and 4 x 512 (phase 2); f32 and bf16 compute (bf16: autocast's casts around
 * the unfused products); a padding mask (each sequence's last 3 b positions masked).
 *   infer: a forward program (ts_compile_opts.inference), y fetched;
 *   train: forward and backward with attention dropout 0.1, loss = sum(y * r), q, k, v's
 *          gradients fetched.
 * Each program is the attention alone on fed q, k, v [B, T, H, D] (the BTHD layout a linear
 * layer's output has; the unfused ops transpose to [B, H, T, D]). The two forms run interleaved,
 * after a warm-up, for about `seconds` each; the table prints each one's median ms a run, the
 * GFLOP/s of the attention's products at that time (forward 4 B H T^2 D; training adds the
 * backward's four, 8 B H T^2 D, as bench/bert's roofline counts them: the fused backward's
 * recomputed scores are not counted), unfused / fused time, and each program's planned
 * activations (ts_program_memory: the arena of intermediates), with their ratio.
 *
 * Usage: bench_attention [seconds per row, default 1.0] [--only SUBSTRING]. OMP_NUM_THREADS threads.
 */
#include "tessera.h"

#include "bench_util.h"

#include <math.h>

enum { H = 12, D = 64, MAX_RUNS = 400 };

typedef struct shape { int64_t B, T; } shape;

/* The attention of q, k, v [B, T, H, D] and the additive mask m [B, 1, 1, T]: fused, or the ops. */
static ts_value attention(ts_graph *g, int fused, ts_dtype dt, float p, ts_value q, ts_value k, ts_value v,
                          ts_value m) {
    float scale = 1.f / sqrtf((float)D);
    if (fused) return ts_attention(g, q, k, v, m, scale, p, TS_ATTN_BTHD, dt);
    static const int perm[4] = {0, 2, 1, 3};
    q = ts_transpose(g, q, perm), k = ts_transpose(g, k, perm), v = ts_transpose(g, v, perm);
    ts_value s = dt == TS_F32 ? ts_matmul(g, q, k, 0, 1)
                              : ts_cast(g, ts_matmul(g, ts_cast(g, q, dt), ts_cast(g, k, dt), 0, 1), TS_F32);
    ts_value pr = ts_softmax(g, ts_scale(g, s, scale, 0.f), m);
    if (p > 0.f) pr = ts_dropout(g, pr, p);
    ts_value y = dt == TS_F32 ? ts_matmul(g, pr, v, 0, 0)
                              : ts_cast(g, ts_matmul(g, ts_cast(g, pr, dt), ts_cast(g, v, dt), 0, 0), TS_F32);
    return ts_transpose(g, y, perm);
}

typedef struct prog {
    ts_program *p;
    ts_tensor *in[4]; /* q, k, v, r */
    size_t activations;
} prog;

static const char *const IN_NAMES[4] = {"q", "k", "v", "r"};

/* A program of one form; NULL (and a message) on failure. */
static int prog_make(prog *o, shape sh, int fused, ts_dtype dt, int train) {
    memset(o, 0, sizeof *o);
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 11);
    int64_t qs[4] = {sh.B, sh.T, H, D}, ms[4] = {sh.B, 1, 1, sh.T};
    ts_value q, k, v;
    if (train) { /* parameters, so that they have gradients; set from the fed values below */
        q = ts_param(g, "q", TS_F32, 4, qs, ts_init_zeros());
        k = ts_param(g, "k", TS_F32, 4, qs, ts_init_zeros());
        v = ts_param(g, "v", TS_F32, 4, qs, ts_init_zeros());
    } else {
        q = ts_input(g, "q", TS_F32, 4, qs), k = ts_input(g, "k", TS_F32, 4, qs), v = ts_input(g, "v", TS_F32, 4, qs);
    }
    ts_tensor *mt = ts_tensor_new(TS_F32, 4, ms);
    float *mask = ts_tensor_data(mt);
    for (int64_t b = 0; b < sh.B; b++)
        for (int64_t j = 0; j < sh.T; j++) mask[b * sh.T + j] = j < sh.T - 3 * b ? 0.f : -10000.f;
    ts_value y = ts_name(g, attention(g, fused, dt, train ? 0.1f : 0.f, q, k, v, ts_constant(g, mt)), "y");
    ts_tensor_free(mt);
    ts_status st = ts_graph_status(g);
    if (!st && train) {
        ts_value r = ts_input(g, "r", TS_F32, 4, qs);
        st = ts_backward(g, ts_reduce_sum(g, ts_mul(g, y, r), 0, NULL, 0));
    }
    static const char *const train_fetch[3] = {"q@GRAD", "k@GRAD", "v@GRAD"}, *const infer_fetch[1] = {"y"};
    ts_compile_opts co = {.struct_size = sizeof co, .inference = !train, .nfetch = train ? 3 : 1,
                          .fetches = train ? train_fetch : infer_fetch};
    o->p = st ? NULL : ts_compile(g, &co);
    ts_graph_free(g);
    if (!o->p) {
        fprintf(stderr, "bench_attention: building the %s program: %s\n", fused ? "fused" : "unfused", ts_last_error());
        return 0;
    }
    ts_memory mem = {.struct_size = sizeof mem};
    if (!ts_program_memory(o->p, &mem)) o->activations = mem.activations;
    for (int i = 0; i < (train ? 4 : 3); i++) {
        o->in[i] = ts_tensor_new(TS_F32, 4, qs);
        float *x = ts_tensor_data(o->in[i]);
        for (int64_t e = 0; e < sh.B * sh.T * H * D; e++) x[e] = urand();
        st = train && i < 3 ? ts_program_set_param(o->p, IN_NAMES[i], o->in[i]) : TS_OK;
        if (st) {
            fprintf(stderr, "bench_attention: %s\n", ts_last_error());
            return 0;
        }
    }
    return 1;
}

/* One run; seconds. */
static double prog_run(prog *o, int train) {
    for (int i = train ? 3 : 0; i < (train ? 4 : 3); i++) ts_program_feed(o->p, IN_NAMES[i], o->in[i]);
    double t0 = now();
    ts_status st = ts_program_run(o->p);
    double t = now() - t0;
    if (st) {
        fprintf(stderr, "bench_attention: run: %s\n", ts_last_error());
        exit(1);
    }
    return t;
}

static void prog_free(prog *o) {
    ts_program_free(o->p);
    for (int i = 0; i < 4; i++) ts_tensor_free(o->in[i]);
}

static int selected(const char *only, const char *id) { return !only || strstr(id, only); }

int main(int argc, char **argv) {
    double seconds = 1.0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (atof(argv[i]) > 0) seconds = atof(argv[i]);
        else {
            fprintf(stderr, "usage: bench_attention [seconds per row] [--only SUBSTRING]\n");
            return 2;
        }
    }
    static const shape SHAPES[3] = {{8, 128}, {4, 384}, {4, 512}};
    printf("attention, fused (ts_attention) beside the unfused ops, H %d, D %d, padding mask; medians of interleaved "
           "runs\n\n", H, D);
    printf("%-24s | %9s %9s | %8s %8s | %7s | %12s %12s %6s\n", "row", "fused ms", "ops ms", "fused", "ops",
           "ops /", "activations", "MiB", "fused /");
    printf("%-24s | %9s %9s | %8s %8s | %7s | %12s %12s %6s\n", "", "", "", "GFLOP/s", "GFLOP/s", "fused", "fused",
           "ops", "ops");
    for (int si = 0; si < 3; si++)
        for (int train = 0; train < 2; train++)
            for (int bf = 0; bf < 2; bf++) {
                shape sh = SHAPES[si];
                ts_dtype dt = bf ? TS_BF16 : TS_F32;
                char id[64];
                snprintf(id, sizeof id, "%s %s %lldx%lld", train ? "train" : "infer", bf ? "bf16" : "f32",
                         (long long)sh.B, (long long)sh.T);
                if (!selected(only, id)) continue;
                prog f, u;
                if (!prog_make(&f, sh, 1, dt, train) || !prog_make(&u, sh, 0, dt, train)) return 1;
                prog_run(&f, train), prog_run(&u, train); /* warm-up */
                double tf[MAX_RUNS], tu[MAX_RUNS], spent = 0;
                int n = 0;
                while (n < MAX_RUNS && (n < 3 || spent < 2 * seconds)) {
                    tf[n] = prog_run(&f, train);
                    tu[n] = prog_run(&u, train);
                    spent += tf[n] + tu[n];
                    n++;
                }
                double mf = median_inplace(tf, n), mu = median_inplace(tu, n);
                double flop = (train ? 12.0 : 4.0) * (double)(sh.B * H) * (double)(sh.T * sh.T) * D;
                printf("%-24s | %9.2f %9.2f | %8.1f %8.1f | %6.2fx | %12.1f %12.1f %5.2fx\n", id, mf * 1e3, mu * 1e3,
                       flop / mf * 1e-9, flop / mu * 1e-9, mu / mf, (double)f.activations / 1048576.0,
                       (double)u.activations / 1048576.0,
                       u.activations ? (double)f.activations / (double)u.activations : 0.0);
                fflush(stdout);
                prog_free(&f);
                prog_free(&u);
            }
    printf("\nops / fused > 1: the fused op is faster. activations: the planned arena of intermediates "
           "(ts_program_memory).\n");
    return 0;
}
