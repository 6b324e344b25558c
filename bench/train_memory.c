/*
 * bench/train_memory.c — peak resident memory and step time of BERT-Base pre-training steps,
 * tessera against PyTorch measured in the same run.
 *
 * Both run the same model (BERT-Base for pre-training: L=12, H=768, 12 heads, FFN 3072, vocab
 * 30522, MLM tied to the word embeddings + NSP), batch 8 x seq 128, AdamW, f32 weights, dropout
 * 0.1, on random token ids with 15% MLM labels, for a few steps:
 *   tessera: a child process of this program, built with the public API (ts_bert_build,
 *            ts_backward, ts_optimizer, ts_compile, ts_program_run);
 *   PyTorch: tools/torch_bert_train.py under Debian's /usr/bin/python3 with python3-torch 1.13.
 * Each runs in its own process and its peak resident set is read the same way, from wait4()'s
 * ru_maxrss (the process's high-water mark, everything included: weights, gradients, optimizer
 * state, activations, allocator slack, libraries). The target is tessera <= 80% of PyTorch's.
 * The two run one after the other, never together (2 cores).
 *
 * tessera runs twice, as configured and with per-layer recomputation (ts_bert_config.recompute),
 * unless --recompute asks for that alone; the ratio to PyTorch is of the first.
 * --precision MODE trains tessera in a mode of ts_precision_parse: bf16 is --bf16 (bf16 matmuls, f32
 * master weights), bf16-sr keeps weights, gradients and Adam's moments in bf16 (ts_graph_store_params;
 * 8 bytes a parameter against 16), fp16-sr likewise in f16 (without loss scaling here: a few steps).
 * Usage: train_memory [--steps N (3)] [--layers L (12)] [--recompute] [--bf16] [--precision MODE]
 *                     [--tessera-only]
 * Threads: OMP_NUM_THREADS, or every CPU; PyTorch is given the same count (torch.set_num_threads:
 * its own default counts physical cores, 1 on this machine's 2 vCPUs).
 */
#include "tessera_apps.h"

#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif

enum { B = 8, T = 128, V = 30522 };

static double median(double *v, int n) { return median_inplace(v, n); }

#define DIE(...) do { fprintf(stderr, "train_memory: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

/* The tessera side, in a child process: prints "steps_s s1 s2 ..." and the memory report. */
static void tessera_child(int steps, int layers, int recompute, ts_dtype compute, ts_dtype weights) {
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.num_hidden_layers = layers;
    cfg.compute_dtype = compute;
    cfg.recompute = recompute;
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 1);
    ts_bert_outputs out;
    if (ts_bert_build(g, &cfg, TS_BERT_PRETRAINING, B, T, &out) != TS_OK ||
        (weights != TS_F32 && ts_graph_store_params(g, weights) != TS_OK) || ts_backward(g, out.loss) != TS_OK)
        DIE("building the model: %s", ts_last_error());
    float lr = 1e-4f;
    ts_tensor *lrt = ts_tensor_from(TS_F32, 0, NULL, &lr);
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_ADAMW);
    if (ts_optimizer(g, ts_constant(g, lrt), &o) != TS_OK) DIE("optimizer: %s", ts_last_error());
    ts_tensor_free(lrt);
    const char *fetch[] = {"loss"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = fetch});
    if (!p) DIE("compile: %s", ts_last_error());
    ts_graph_free(g);

    int64_t bt[2] = {B, T}, b1[1] = {B};
    ts_tensor *ids = ts_tensor_new(TS_I32, 2, bt), *types = ts_tensor_new(TS_I32, 2, bt);
    ts_tensor *mask = ts_tensor_new(TS_I32, 2, bt), *labels = ts_tensor_new(TS_I32, 2, bt);
    ts_tensor *nsp = ts_tensor_new(TS_I32, 1, b1);
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < B * T; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        int id = (int)(r % V);
        ((int32_t *)ts_tensor_data(ids))[i] = id;
        ((int32_t *)ts_tensor_data(types))[i] = i % T >= T / 2;
        ((int32_t *)ts_tensor_data(mask))[i] = 1;
        ((int32_t *)ts_tensor_data(labels))[i] = (r >> 20) % 100 < 15 ? id : -100;
    }
    for (int i = 0; i < B; i++) ((int32_t *)ts_tensor_data(nsp))[i] = i % 2;
    if (ts_program_feed(p, "input_ids", ids) || ts_program_feed(p, "token_type_ids", types) ||
        ts_program_feed(p, "attention_mask", mask) || ts_program_feed(p, "labels", labels) ||
        ts_program_feed(p, "next_sentence_label", nsp))
        DIE("feed: %s", ts_last_error());
    printf("step_s");
    for (int s = 0; s < steps; s++) {
        double t0 = now();
        if (ts_program_run(p) != TS_OK) DIE("run: %s", ts_last_error());
        printf(" %.4f", now() - t0);
        fflush(stdout);
    }
    ts_tensor *loss = NULL;
    if (ts_program_fetch(p, "loss", &loss) != TS_OK) DIE("fetch: %s", ts_last_error());
    ts_memory m = {.struct_size = sizeof m};
    ts_program_memory(p, &m);
    printf("\nloss %.4f\nmemory params %zu grads %zu state %zu activations %zu workspace %zu\n",
           (double)*(float *)ts_tensor_data(loss), m.params, m.grads, m.optimizer_state, m.activations,
           m.workspace);
    ts_tensor_free(loss);
    ts_tensor_free(ids); ts_tensor_free(types); ts_tensor_free(mask); ts_tensor_free(labels); ts_tensor_free(nsp);
    ts_program_free(p);
}

typedef struct {
    int steps, layers, recompute;
    ts_dtype compute, weights;
} targs;
static void run_tessera(const void *a) {
    const targs *t = a;
    tessera_child(t->steps, t->layers, t->recompute, t->compute, t->weights);
}
static void run_torch(const void *a) {
    const targs *t = a;
    char steps[16], layers[16], threads[16];
    snprintf(steps, sizeof steps, "%d", t->steps);
    snprintf(layers, sizeof layers, "%d", t->layers);
    snprintf(threads, sizeof threads, "%d", omp_get_max_threads()); /* tessera's count */
    execl("/usr/bin/python3", "python3", TS_SOURCE_DIR "/tools/torch_bert_train.py", "--steps", steps,
          "--layers", layers, "--threads", threads, (char *)NULL);
    fprintf(stderr, "train_memory: cannot run /usr/bin/python3: %s\n", strerror(errno));
    _exit(127);
}

int main(int argc, char **argv) {
    targs a = {3, 12, 0, TS_F32, TS_F32};
    int tessera_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) a.steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc) a.layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--recompute")) a.recompute = 1;
        else if (!strcmp(argv[i], "--bf16")) a.compute = TS_BF16;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            if (ts_precision_parse(argv[++i], &a.compute, &a.weights)) DIE("%s", ts_last_error());
        }
        else if (!strcmp(argv[i], "--tessera-only")) tessera_only = 1;
        else DIE("unknown argument '%s' (usage: train_memory [--steps N] [--layers L] [--recompute] "
                 "[--bf16] [--precision MODE] [--tessera-only])", argv[i]);
    }
    if (a.steps < 2 || a.layers < 1) DIE("--steps must be >= 2 and --layers >= 1");
    printf("BERT-Base pre-training, %d layers, batch %d x seq %d, AdamW, %s%s, %d steps "
           "(the first is warm-up)\n", a.layers, B, T, ts_precision_name(a.compute, a.weights),
           a.recompute ? ", recomputation" : "", a.steps);

    static char out_ts[4096], out_pt[4096];
    int st_ts = 0, st_pt = 0;
    double t_ts[64], t_rc[64], t_pt[64];
    long rss_ts = 0;
    int n_ts = 0;
    /* tessera as configured, then (unless --recompute was given) with recomputation too */
    for (int pass = 0; pass < 2 - a.recompute; pass++) {
        targs t = a;
        t.recompute = a.recompute || pass == 1;
        double *times = pass == 0 ? t_ts : t_rc;
        long rss = bench_run_child(run_tessera, &t, out_ts, sizeof out_ts, &st_ts);
        if (rss < 0) DIE("the tessera run failed (status %d)", st_ts);
        int n = bench_numbers(out_ts, "step_s", times, 64);
        const char *mem = strstr(out_ts, "memory");
        printf("  tessera%s: peak RSS %7.1f MiB, step %.3f s (median after warm-up), %.1f seq/s\n",
               t.recompute ? " (recompute)" : "", rss / 1024.0, median(times + 1, n - 1),
               B / median(times + 1, n - 1));
        if (mem) printf("           planned: %s", mem);
        double np = 0, pb = 0, gb = 0, sb = 0; /* bytes a parameter, from the plan */
        if (mem && sscanf(mem, "memory params %lf grads %lf state %lf", &pb, &gb, &sb) == 3)
            np = pb / (a.weights == TS_F32 ? 4 : 2);
        if (np > 0)
            printf("           weights + gradients + optimizer state: %.2f + %.2f + %.2f = %.2f bytes a parameter\n",
                   pb / np, gb / np, sb / np, (pb + gb + sb) / np);
        if (pass == 0) rss_ts = rss, n_ts = n;
    }
    if (tessera_only) return 0;

    long rss_pt = bench_run_child(run_torch, &a, out_pt, sizeof out_pt, &st_pt);
    if (rss_pt < 0) {
        printf("  PyTorch: not measured — /usr/bin/python3 with python3-torch is needed "
               "(bash scripts/install-deps.sh --bench); exit status %d\n", st_pt);
        return 0;
    }
    int n_pt = bench_numbers(out_pt, "\"step_s\":", t_pt, 64);
    printf("  PyTorch: peak RSS %7.1f MiB, step %.3f s (median after warm-up), %.1f seq/s\n",
           rss_pt / 1024.0, median(t_pt + 1, n_pt - 1), B / median(t_pt + 1, n_pt - 1));
    double ratio = (double)rss_ts / (double)rss_pt;
    printf("  peak RSS tessera / PyTorch = %.3f (target <= 0.80): %s\n", ratio, ratio <= 0.80 ? "met" : "NOT met");
    printf("  step time tessera / PyTorch = %.3f\n", median(t_ts + 1, n_ts - 1) / median(t_pt + 1, n_pt - 1));
    return 0;
}
