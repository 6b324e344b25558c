/*
 * bench/bert.c — BERT-Base throughput: tessera beside PyTorch and ONNX Runtime and beside the
 * oneDNN GEMM roofline of the model's matmuls, all measured in the same run, one table.
 *
 * Rows (BERT-Base: V 30522, C 768, 12 layers, 12 heads, FFN 3072, seq T = 128 (--seq), every
 * sequence full length, random token ids):
 *   train  pre-training steps (MLM tied to the word embeddings + NSP, dropout 0.1), batch 8
 *          (--batch), with the MLM head on P gathered positions per sequence, P = ceil(20 T / 128):
 *          Google's and Graphcore's 20 at T = 128 (phase 1), 60 at 384 and NVIDIA's phase-2 80 at
 *          512 (the id says P: train_f32_adamw_p20 at 128, _p80 at 512), or on all T positions
 *          (15% labelled); AdamW, and LAMB for gathered P; f32, and bf16 matmuls (autocast-style:
 *          f32 master weights).
 *   infer  BertModel's last_hidden_state, batch 8 (throughput) and batch 1 (latency), f32 and
 *          bf16, with the weights loaded from a safetensors file (the compile the user waits for:
 *          build + compile without random init + load); "int8 dynamic" (ts_compile_opts.quantize
 *          = TS_QUANT_DYNAMIC: the weight matmuls int8, the attention products f32) and "int8
 *          calibrated" (TS_QUANT_STATIC with activation scales from ts_calib, minmax, on the batch
 *          of the timed runs), printed below the table beside tessera f32 of the same batch in the
 *          same run. Their roofline column is empty (the int8 GEMM beside oneDNN's own is
 *          bench/matmul.c's int8 row). ONNX Runtime runs the dynamic rows on the same model in its
 *          own dynamic int8 form (ts_onnx_export_dynamic_int8: DynamicQuantizeLinear +
 *          MatMulInteger, which it fuses into its int8 kernel), and the calibrated rows on tessera's
 *          QDQ export of the same model and scales (ts_onnx_export_qdq: QuantizeLinear /
 *          DequantizeLinear around each int8 matmul; ORT's CPU provider runs a QDQ MatMul whose
 *          output is not quantized as DequantizeLinear + f32 MatMul, not on its int8 kernels);
 *          PyTorch's int8 is not run.
 * Each tessera row runs in a child process of this program (public API only: ts_bert_build,
 * ts_backward, ts_optimizer, ts_compile, ts_program_load, ts_program_run); its peak resident set
 * is wait4()'s ru_maxrss. Seconds per run are medians over the timed runs after the warm-up ones.
 *
 * Peers, each in its own process, one after another (never together: 2 cores):
 *   PyTorch   bench/bert_torch.py under /usr/bin/python3 (Debian's python3-torch 1.13 with
 *             OpenBLAS), at its best here: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for that
 *             process, OMP_WAIT_POLICY=passive, torch.set_num_threads(tessera's threads); AdamW
 *             (PyTorch has no LAMB); bf16 through torch.autocast.
 *   ONNX Runtime  bench/bert_ort.js in onnxruntime-node (tools/ort, from install-deps.sh), on the
 *             ONNX file tessera's exporter (ts_onnx_export) writes of the same model and weights;
 *             CPU EP, graph optimisation "all", intra-op threads = tessera's.
 * A peer that is not installed is reported as such, not guessed.
 * Where oneDNN has no bf16 matmul (2.6 on CPUs without AVX-512; only reference kernels) the bf16
 * rows are labelled "bf16 (f32 kernels)": tessera runs them all the same (its backend multiplies
 * the bf16 operands widened to f32 with oneDNN's f32 matmul and rounds the products to bf16), their
 * roofline is the f32 GEMMs', and PyTorch's bf16 rows are skipped (no native bf16 on this CPU).
 *
 * The roofline: the row's matmuls (forward, and for training the two products of each one's
 * backward, dA = G B^T and dB = A^T G, as products of the same sizes), each timed here as one
 * oneDNN matmul primitive on plain row-major operands in the same run; their summed time is what
 * the row would take if everything but the GEMMs were free, so
 *   % of roofline = roofline seconds per run / tessera's seconds per run.
 * FLOPs count 2 M K N per product (22.35 GFLOP per sequence for the BERT-Base forward).
 *
 * Attention: ts_bert_build fuses each layer's attention into one ts_attention op unless
 * ts_bert_config.eager_attention = 1 keeps the separate ops (matmul, softmax, dropout, matmul, which
 * store the [B, H, T, T] scores, probabilities, dropout mask and their gradients). --attention
 * fused (default) runs the fused rows; eager runs every tessera row eager instead, its id ending in
 * "_eager"; both adds after each row its eager twin "<id>_eager" (tessera only: the peers, whose
 * model is the same, are measured once, on the fused row), measured round by round in turn with
 * its fused row, and prints below the table, per pair, fused / eager in speed and in peak RSS.
 * Both share one roofline: the model's FLOPs (the fused backward recomputes the scores from the
 * kept log-sum-exp; those products are not counted).
 * Phase 2 of BERT pre-training, e.g.:
 *   bench/bert --seq 512 --batch 4 --only train_f32_adamw_p,train_bf16_adamw_p --attention both
 * --seq T: 1 to 512 (BERT-Base's max_position_embeddings); the inference rows run at T too, their
 * batch stays 8 and 1 (--batch sets the training rows' batch); PyTorch takes T (bert_torch.py
 * --seq), ONNX Runtime the shapes of the ONNX file exported at T.
 *
 * Output: the table on stdout and the same figures as JSON in <build>/bench/bert.json.
 * Usage: bench/bert [--steps N (3)] [--runs N (5)] [--latency-runs N (15)] [--layers L (12)]
 *                   [--rounds N (2)] [--train-rounds N (1)] [--only SUBSTRING] [--no-peers]
 *                   [--profile] [--json PATH] [--seq T (128)] [--batch B (8)]
 *                   [--attention fused|eager|both (fused)] [--roofline-rounds N (1)]
 *                   [--updates end|backward (end)] [--recompute-gelu] [--recompute-casts]
 * --updates backward: the training rows' optimizer updates run inside the backward pass
 * (ts_optim_opts.updates_in_backward: each gradient's memory is reused once its update read it);
 * end: after it, every gradient kept to the end of the step (the default). --recompute-gelu: the
 * training rows' backward recomputes the FFN's GELU outputs (ts_graph_recompute_gelu).
 * --recompute-casts: ... and the bf16 casts of the weights (ts_graph_recompute_casts).
 * Each row is measured in rounds, tessera then each peer, again (--rounds for inference rows,
 * --train-rounds for training rows), and each side's best median counts: this machine has slow
 * spells (other tenants) of tens of seconds that halve whatever runs in them, and interleaved
 * rounds keep one spell from deciding a ratio. The roofline takes each GEMM's fastest repeat, and
 * with --roofline-rounds N it is measured N times, once before the rows and N - 1 times after them,
 * each row keeping its fastest round (one slow spell over the roofline's seconds would otherwise
 * make tessera look faster than its own GEMMs).
 * --only runs the rows whose id contains SUBSTRING (or one of several, comma-separated); --profile prints tessera's time per op type
 * and per layer for each row (ts_compile_opts.profile). Threads: OMP_NUM_THREADS, else every CPU.
 */
#include "tessera_apps.h"

#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif
#ifndef TS_BUILD_DIR
#define TS_BUILD_DIR "build"
#endif

enum { C = 768, HEADS = 12, FFN = 3072, V = 30522, MAX_SEQ = 512, MAX_RUNS = 64, MAX_ROWS = 32 };

#define DIE(...) do { fprintf(stderr, "bench_bert: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

/* The median of n values, v left as it is. */
static double median(const double *v, int n) {
    double s[MAX_RUNS];
    memcpy(s, v, sizeof(double) * (size_t)(n > 0 ? n : 0));
    return median_inplace(s, n);
}

/* ------------------------------------------------------------------ the rows */

typedef struct row {
    char id[48];          /* e.g. train_f32_adamw_p20, train_f32_adamw_p20_eager */
    char label[96];       /* the table's first column */
    int train;            /* 1: a training step; 0: a forward */
    ts_optim_kind optim;
    int positions;        /* MLM positions per sequence: P = ceil(20 T / 128), or 0 for all T */
    int eager;            /* 1: built with ts_bert_config.eager_attention = 1 */
    int fused_of;         /* an eager twin (--attention both): the index of its fused row; else -1 */
    int bf16;
    int int8;             /* inference with ts_compile_opts.quantize = TS_QUANT_DYNAMIC (1) or
                             TS_QUANT_STATIC with the calibrated scales of scales_path (2) */
    int batch;
    int warmup, runs;     /* runs of each side: warm-up ones, then timed ones */
    /* measured */
    double ts_s, ts_compile_s, ts_loss0, ts_loss1;
    long ts_rss_kib;
    double pt_s, ort_s;
    long pt_rss_kib, ort_rss_kib;
    const char *pt_note, *ort_note; /* why a peer has no figure */
    double gflop;                    /* per run */
    double roof_s;                   /* the roofline's seconds per run */
} row;

typedef struct opts {
    int steps, runs, latency_runs, layers, peers, profile;
    int rounds, train_rounds; /* interleaved rounds of each row (tessera, PyTorch, ORT, again ...) */
    const char *only, *json;
    int threads;
    int seq;       /* T, every row's sequence length (--seq) */
    int batch;     /* the training rows' batch (--batch) */
    int attention; /* --attention: ATTN_FUSED, ATTN_EAGER or ATTN_BOTH */
    int roofline_rounds; /* rounds of the roofline: the first before the rows, the others after */
    int updates_in_backward; /* --updates backward */
    int recompute_gelu;      /* --recompute-gelu */
    int recompute_casts;     /* --recompute-casts */
} opts;

enum { ATTN_FUSED, ATTN_EAGER, ATTN_BOTH };

/* Whether row id is selected by --only (comma-separated substrings; none: every row). */
static int selected(const opts *o, const char *id) {
    if (!o->only) return 1;
    for (const char *s = o->only; *s;) {
        size_t n = strcspn(s, ",");
        for (const char *p = id; *p; p++)
            if (n && !strncmp(p, s, n)) return 1;
        s += n + (s[n] == ',');
    }
    return 0;
}

/* Random inputs of one row, the same for every row of a batch size (xorshift from a fixed seed). */
typedef struct inputs {
    ts_tensor *ids, *types, *mask, *positions, *labels, *nsp;
} inputs;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Inputs of B sequences of T tokens ([B, T] ids, types, mask) with P gathered MLM positions each
 * ([B, P] positions and labels), or with P = 0 labels on 15% of all [B, T] positions. */
static inputs make_inputs(int B, int T, int P) {
    int64_t bt[2] = {B, T}, bp[2] = {B, P > 0 ? P : T}, b1[1] = {B};
    inputs in = {ts_tensor_new(TS_I32, 2, bt), ts_tensor_new(TS_I32, 2, bt), ts_tensor_new(TS_I32, 2, bt),
                 P > 0 ? ts_tensor_new(TS_I32, 2, bp) : NULL, ts_tensor_new(TS_I32, 2, bp),
                 ts_tensor_new(TS_I32, 1, b1)};
    int32_t *ids = ts_tensor_data(in.ids), *types = ts_tensor_data(in.types), *mask = ts_tensor_data(in.mask);
    int32_t *labels = ts_tensor_data(in.labels);
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int32_t)(next_rand() % V);
        types[i] = i % T >= T / 2;
        mask[i] = 1;
        if (P == 0) labels[i] = next_rand() % 100 < 15 ? ids[i] : -100;
    }
    if (P > 0) { /* P distinct positions per sequence, labelled with the token there */
        int32_t *pos = ts_tensor_data(in.positions);
        for (int b = 0; b < B; b++) {
            int perm[MAX_SEQ];
            for (int t = 0; t < T; t++) perm[t] = t;
            for (int k = 0; k < P; k++) {
                int j = k + (int)(next_rand() % (uint32_t)(T - k)), x = perm[k];
                perm[k] = perm[j], perm[j] = x;
                pos[b * P + k] = perm[k];
                labels[b * P + k] = ids[b * T + perm[k]];
            }
        }
    }
    for (int b = 0; b < B; b++) ((int32_t *)ts_tensor_data(in.nsp))[b] = b % 2;
    return in;
}

static void free_inputs(inputs *in) {
    ts_tensor_free(in->ids), ts_tensor_free(in->types), ts_tensor_free(in->mask);
    ts_tensor_free(in->positions), ts_tensor_free(in->labels), ts_tensor_free(in->nsp);
}

/* BERT-Base at o's layers in f32 or bf16, every field of this tessera's ts_bert_config set
 * (ts_bert_config_default fills the base layout only: the fields after it, eager_attention among
 * them, are read only with struct_size = sizeof, and are 0, their defaults, here). */
static void base_config(ts_bert_config *cfg, const opts *o, int bf16) {
    memset(cfg, 0, sizeof *cfg);
    ts_bert_config_default(cfg);
    cfg->struct_size = sizeof *cfg;
    cfg->num_hidden_layers = o->layers;
    cfg->compute_dtype = bf16 ? TS_BF16 : TS_F32;
}

static char weights_path[1024], onnx_path[2][1024]; /* [0] batch 8, [1] batch 1 */
static char qdq_path[2][1024], scales_path[1024];   /* the calibrated int8 model: QDQ files, scales */
static char dyn_path[2][1024];                       /* ONNX Runtime's dynamic int8 form */

enum { MAX_SCALES = 512 };
static ts_quant_scale g_scales[MAX_SCALES];
static char g_scale_names[MAX_SCALES][128];

/* The calibrated scales of scales_path ("name scale" lines, written by export_child); how many. */
static int read_scales(void) {
    FILE *f = fopen(scales_path, "r");
    if (!f) DIE("cannot read %s: %s", scales_path, strerror(errno));
    int n = 0;
    while (n < MAX_SCALES && fscanf(f, "%127s %f", g_scale_names[n], &g_scales[n].scale) == 2) {
        g_scales[n].weight = g_scale_names[n];
        n++;
    }
    fclose(f);
    return n;
}
static char pt_desc[160], ort_desc[64];              /* the peers' versions, as they report them */

/* The string value of "key": "..." in a JSON line into out ("" when absent). */
static void json_string(const char *buf, const char *key, char *out, size_t n) {
    const char *s = strstr(buf, key);
    out[0] = 0;
    if (!s || !(s = strchr(s + strlen(key), '"'))) return;
    size_t k = 0;
    for (s++; *s && *s != '"' && k + 1 < n; s++) out[k++] = *s;
    out[k] = 0;
}

/* The tessera side of one row, in a child process. Prints "compile_s X", "run_s a b ...", the
 * losses of a training row, and with --profile the profile of the timed runs. */
static void tessera_child(const row *r, const opts *o) {
    double t0 = now();
    ts_bert_config cfg;
    base_config(&cfg, o, r->bf16);
    cfg.eager_attention = r->eager;
    int T = o->seq;
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 1);
    ts_bert_outputs out;
    ts_program *p;
    if (r->train) {
        cfg.max_predictions_per_seq = r->positions;
        if (ts_bert_build(g, &cfg, TS_BERT_PRETRAINING, r->batch, T, &out) != TS_OK ||
            (o->recompute_gelu && ts_graph_recompute_gelu(g) != TS_OK) ||
            (o->recompute_casts && ts_graph_recompute_casts(g) != TS_OK) || ts_backward(g, out.loss) != TS_OK)
            DIE("%s: building the model: %s", r->id, ts_last_error());
        float lr = 1e-4f;
        ts_tensor *lrt = ts_tensor_from(TS_F32, 0, NULL, &lr);
        ts_optim_opts oo = ts_optim_defaults(r->optim);
        oo.updates_in_backward = o->updates_in_backward;
        if (ts_optimizer(g, ts_constant(g, lrt), &oo) != TS_OK) DIE("%s: optimizer: %s", r->id, ts_last_error());
        ts_tensor_free(lrt);
        const char *fetch[] = {"loss"};
        p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = fetch, .profile = o->profile});
    } else {
        if (ts_bert_build(g, &cfg, TS_BERT_MODEL, r->batch, T, &out) != TS_OK)
            DIE("%s: building the model: %s", r->id, ts_last_error());
        const char *fetch[] = {"last_hidden_state"};
        int nsc = r->int8 == 2 ? read_scales() : 0;
        p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1, .fetches = fetch,
                                             .inference = 1, .skip_param_init = 1, .profile = o->profile,
                                             .quantize = r->int8 == 2 ? TS_QUANT_STATIC
                                                         : r->int8 ? TS_QUANT_DYNAMIC : TS_QUANT_NONE,
                                             .quant_scales = g_scales, .nquant_scales = nsc});
        int missing = 0;
        if (p && ts_program_load(p, weights_path, TS_LOAD_STRICT, &missing) != TS_OK)
            DIE("%s: loading %s: %s", r->id, weights_path, ts_last_error());
    }
    if (!p) DIE("%s: compile: %s", r->id, ts_last_error());
    ts_graph_free(g);
    printf("compile_s %.4f\n", now() - t0);

    inputs in = make_inputs(r->batch, T, r->train ? r->positions : 0);
    if (ts_program_feed(p, "input_ids", in.ids) || ts_program_feed(p, "token_type_ids", in.types) ||
        ts_program_feed(p, "attention_mask", in.mask))
        DIE("%s: feed: %s", r->id, ts_last_error());
    if (r->train && (ts_program_feed(p, "labels", in.labels) || ts_program_feed(p, "next_sentence_label", in.nsp) ||
                     (in.positions && ts_program_feed(p, "masked_lm_positions", in.positions))))
        DIE("%s: feed: %s", r->id, ts_last_error());
    printf("run_s");
    double loss[2] = {NAN, NAN};
    for (int s = 0; s < r->warmup + r->runs; s++) {
        if (s == r->warmup) ts_program_profile_reset(p);
        double ts = now();
        if (ts_program_run(p) != TS_OK) DIE("%s: run: %s", r->id, ts_last_error());
        printf(" %.5f", now() - ts);
        fflush(stdout);
        if (r->train && (s == 0 || s == r->warmup + r->runs - 1)) {
            ts_tensor *l = NULL;
            if (ts_program_fetch(p, "loss", &l) != TS_OK) DIE("%s: fetch: %s", r->id, ts_last_error());
            loss[s != 0] = *(float *)ts_tensor_data(l);
            ts_tensor_free(l);
        }
    }
    printf("\n");
    if (r->train) printf("loss %.5f %.5f\n", loss[0], loss[1]);
    if (o->profile) {
        printf("profile\n");
        fflush(stdout);
        ts_program_profile_report(p, ts_write_stdio, stdout);
    }
    free_inputs(&in);
    ts_program_free(p);
}

/* The calibrated int8 model: the activation scales of graph g (batch 8 of T tokens, weights of
 * weights_path) by ts_calib (minmax) on the batch the timed runs feed, written to scales_path. */
static void calibrate(const ts_graph *g, int T) {
    const char *fetch[] = {"last_hidden_state"};
    ts_calib *c = ts_calib_new(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                     .fetches = fetch, .inference = 1, .skip_param_init = 1},
                               TS_CALIB_MINMAX);
    if (!c) DIE("calibration: %s", ts_last_error());
    ts_program *p = ts_calib_program(c);
    inputs in = make_inputs(8, T, 0);
    if (ts_program_load(p, weights_path, TS_LOAD_STRICT, NULL) || ts_program_feed(p, "input_ids", in.ids) ||
        ts_program_feed(p, "token_type_ids", in.types) || ts_program_feed(p, "attention_mask", in.mask) ||
        ts_program_run(p) || ts_calib_observe(c))
        DIE("calibration: %s", ts_last_error());
    const ts_quant_scale *sc;
    int n = ts_calib_scales(c, &sc);
    FILE *f = fopen(scales_path, "w");
    if (n <= 0 || n > MAX_SCALES || !f) DIE("calibration: %d scales, %s", n, f ? "" : strerror(errno));
    for (int i = 0; i < n; i++) fprintf(f, "%s %.9g\n", sc[i].weight, sc[i].scale);
    fclose(f);
    free_inputs(&in);
    ts_calib_free(c);
}

/* The accuracy of the calibrated int8 model on a BERT-Base-shaped classifier: the model's pooled
 * output times a [hidden, 2] classifier weight (a parameter drawn from the graph's seed, the same
 * in both programs, its matmul int8 too: dynamic, as calibration did not see it), f32 and int8 on
 * a batch of random tokens that is not the calibration batch. Prints "int8_logits MEAN MAX ABSMAX":
 * the logits' mean and largest absolute difference, and the largest |logit|. */
static void int8_logits(const opts *o) {
    inputs in = make_inputs(8, o->seq, 0); /* the generator has moved on: not the calibration batch */
    int nsc = read_scales();
    ts_tensor *lg[2] = {0};
    for (int q = 0; q < 2; q++) {
        ts_bert_config cfg;
        base_config(&cfg, o, 0);
        ts_graph *g = ts_graph_new();
        ts_graph_set_seed(g, 1);
        ts_bert_outputs out;
        if (ts_bert_build(g, &cfg, TS_BERT_MODEL, 8, o->seq, &out) != TS_OK) DIE("int8 logits: %s", ts_last_error());
        ts_value w = ts_param(g, "classifier.weight", TS_F32, 2, (int64_t[]){cfg.hidden_size, 2}, ts_init_normal(0.02f));
        ts_name(g, ts_matmul(g, out.pooler_output, w, 0, 0), "logits");
        const char *fetch[] = {"logits"};
        ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                         .fetches = fetch, .inference = 1,
                                                         .quantize = q ? TS_QUANT_STATIC : TS_QUANT_NONE,
                                                         .quant_scales = g_scales, .nquant_scales = q ? nsc : 0});
        int missing = -1;
        if (!p || ts_program_load(p, weights_path, 0, &missing) || missing != 1 ||
            ts_program_feed(p, "input_ids", in.ids) || ts_program_feed(p, "token_type_ids", in.types) ||
            ts_program_feed(p, "attention_mask", in.mask) || ts_program_run(p) ||
            ts_program_fetch(p, "logits", &lg[q]))
            DIE("int8 logits: %s (%d parameters missing from the weights)", ts_last_error(), missing);
        ts_program_free(p);
        ts_graph_free(g);
    }
    const float *a = ts_tensor_data(lg[0]), *b = ts_tensor_data(lg[1]);
    double sum = 0, worst = 0, big = 0;
    int64_t n = ts_tensor_numel(lg[0]);
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        sum += d, worst = d > worst ? d : worst, big = fabs(a[i]) > big ? fabs(a[i]) : big;
    }
    printf("int8_logits %.3g %.3g %.3g\n", sum / (double)n, worst, big);
    ts_tensor_free(lg[0]), ts_tensor_free(lg[1]);
    free_inputs(&in);
}

/* Writes the weights file every inference row loads, the calibrated scales and, for ONNX Runtime,
 * the ONNX files of the batch-8 and batch-1 models (same weights), f32 and QDQ, in a child process.
 * The model is built with eager attention: tessera's ONNX exporter has no form for the fused
 * attention op (ONNX Runtime fuses the exported MatMul/Softmax/MatMul itself); the parameters,
 * hence the weights file and the scales (one per weight matmul), are the fused model's. */
static void export_child(const opts *o, int want_onnx) {
    for (int k = 0; k < (want_onnx ? 2 : 1); k++) {
        int B = k ? 1 : 8;
        ts_bert_config cfg;
        base_config(&cfg, o, 0);
        cfg.eager_attention = 1;
        ts_graph *g = ts_graph_new();
        ts_graph_set_seed(g, 1);
        ts_bert_outputs out;
        if (ts_bert_build(g, &cfg, TS_BERT_MODEL, B, o->seq, &out) != TS_OK) DIE("export: %s", ts_last_error());
        const char *fetch[] = {"last_hidden_state"};
        ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = fetch, .inference = 1, .skip_param_init = k > 0});
        if (!p) DIE("export: compile: %s", ts_last_error());
        if (k == 0 && ts_program_save(p, weights_path, TS_F32) != TS_OK) DIE("export: %s", ts_last_error());
        if (k > 0 && ts_program_load(p, weights_path, TS_LOAD_STRICT, NULL) != TS_OK) DIE("export: %s", ts_last_error());
        if (k == 0) calibrate(g, o->seq), int8_logits(o);
        if (want_onnx && ts_onnx_export(g, p, 1, &out.last_hidden_state, onnx_path[k]) != TS_OK)
            DIE("export: %s: %s", onnx_path[k], ts_last_error());
        int nsc = want_onnx ? read_scales() : 0;
        if (want_onnx && ts_onnx_export_qdq(g, p, 1, &out.last_hidden_state, g_scales, nsc, qdq_path[k]) != TS_OK)
            DIE("export: %s: %s", qdq_path[k], ts_last_error());
        if (want_onnx && ts_onnx_export_dynamic_int8(g, p, 1, &out.last_hidden_state, dyn_path[k]) != TS_OK)
            DIE("export: %s: %s", dyn_path[k], ts_last_error());
        ts_program_free(p);
        ts_graph_free(g);
    }
}

/* ------------------------------------------------------------------ child processes */

typedef struct child_out {
    char buf[1 << 16];
    long rss_kib;  /* peak RSS; -1 when the child failed */
    int status;
} child_out;

/* Run fn(arg) in a child process with stdout into c->buf. */
static void run_fork(void (*fn)(const void *), const void *arg, child_out *c) {
    c->rss_kib = bench_run_child(fn, arg, c->buf, sizeof c->buf, &c->status);
}

typedef struct exec_args {
    char *argv[24];
    int torch; /* 1: PyTorch's environment (OpenBLAS settings unset, passive OpenMP wait) */
} exec_args;

static void exec_child(const void *arg) {
    const exec_args *e = arg;
    if (e->torch) {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("OPENBLAS_L2_SIZE");
        setenv("OMP_WAIT_POLICY", "passive", 1);
    }
    execvp(e->argv[0], e->argv);
    fprintf(stderr, "bench_bert: cannot run %s: %s\n", e->argv[0], strerror(errno));
    _exit(127);
}

static double timed_median(const char *buf, const char *key, int warmup) {
    double v[MAX_RUNS];
    int n = bench_numbers(buf, key, v, MAX_RUNS);
    return n > warmup ? median(v + warmup, n - warmup) : NAN;
}

/* The smaller of two figures, NaN standing for none. */
static double best(double a, double b) { return isnan(a) ? b : isnan(b) ? a : a < b ? a : b; }

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* ------------------------------------------------------------------ the roofline */

typedef struct gemm { int64_t m, k, n, batch, count; } gemm;
enum { MAX_GEMMS = 64 };

static int add_gemm(gemm *g, int n, int64_t m, int64_t k, int64_t nn, int64_t batch, int64_t count) {
    for (int i = 0; i < n; i++)
        if (g[i].m == m && g[i].k == k && g[i].n == nn && g[i].batch == batch) {
            g[i].count += count;
            return n;
        }
    if (n == MAX_GEMMS) DIE("too many GEMM shapes");
    g[n] = (gemm){m, k, nn, batch, count};
    return n + 1;
}

/* A forward product [m, k] x [k, n] (batch of them), and in training its backward pair. */
static int add_product(gemm *g, int n, int train, int64_t m, int64_t k, int64_t nn, int64_t batch, int64_t count) {
    n = add_gemm(g, n, m, k, nn, batch, count);
    if (train) {
        n = add_gemm(g, n, m, nn, k, batch, count); /* dA = G B^T */
        n = add_gemm(g, n, k, m, nn, batch, count); /* dB = A^T G */
    }
    return n;
}

/* The matmuls of a row: per layer Q, K, V, the attention output and the FFN's two; attention's
 * scores and weighted sum per (sequence, head); in training the pooler + NSP and the MLM head
 * (transform and the V-wide decoder on P or T positions per sequence). */
static int row_gemms(const row *r, int layers, int T, gemm *g) {
    int n = 0, tr = r->train;
    int64_t M = (int64_t)r->batch * T, D = C / HEADS;
    n = add_product(g, n, tr, M, C, C, 1, 4 * layers);
    n = add_product(g, n, tr, M, C, FFN, 1, layers);
    n = add_product(g, n, tr, M, FFN, C, 1, layers);
    n = add_product(g, n, tr, T, D, T, (int64_t)r->batch * HEADS, layers);
    n = add_product(g, n, tr, T, T, D, (int64_t)r->batch * HEADS, layers);
    if (tr) {
        int64_t Mh = (int64_t)r->batch * (r->positions > 0 ? r->positions : T);
        n = add_product(g, n, tr, r->batch, C, C, 1, 1);
        n = add_product(g, n, tr, r->batch, C, 2, 1, 1);
        n = add_product(g, n, tr, Mh, C, C, 1, 1);
        n = add_product(g, n, tr, Mh, C, V, 1, 1);
    }
    return n;
}

typedef struct shape_time { int64_t m, k, n, batch; int bf16; double s; } shape_time;
static shape_time shape_cache[256];
static int nshape_cache;

#define CHECK_DNNL(x) do { if ((x) != dnnl_success) DIE("%s failed", #x); } while (0)

/* Seconds of one oneDNN matmul [batch, m, k] x [batch, k, n] (plain layouts, user scratchpad,
 * as tessera's backend makes them): median of repeats after a warm-up, about 0.3 s in all.
 * Returns -1 when oneDNN has no matmul of this dtype on this CPU. */
static double dnnl_gemm_seconds(dnnl_engine_t eng, dnnl_stream_t st, int64_t m, int64_t k, int64_t nn, int64_t batch,
                                int bf16) {
    for (int i = 0; i < nshape_cache; i++) {
        shape_time *c = &shape_cache[i];
        if (c->m == m && c->k == k && c->n == nn && c->batch == batch && c->bf16 == bf16) return c->s;
    }
    dnnl_data_type_t dt = bf16 ? dnnl_bf16 : dnnl_f32;
    size_t es = bf16 ? 2 : 4;
    dnnl_memory_desc_t ma, mb, mc;
    CHECK_DNNL(dnnl_memory_desc_init_by_strides(&ma, 3, (dnnl_dims_t){batch, m, k}, dt, (dnnl_dims_t){m * k, k, 1}));
    CHECK_DNNL(dnnl_memory_desc_init_by_strides(&mb, 3, (dnnl_dims_t){batch, k, nn}, dt, (dnnl_dims_t){k * nn, nn, 1}));
    CHECK_DNNL(dnnl_memory_desc_init_by_strides(&mc, 3, (dnnl_dims_t){batch, m, nn}, dnnl_f32,
                                                (dnnl_dims_t){m * nn, nn, 1}));
    if (bf16) mc.data_type = dnnl_bf16;
    dnnl_matmul_desc_t desc;
    CHECK_DNNL(dnnl_matmul_desc_init(&desc, &ma, &mb, NULL, &mc));
    dnnl_primitive_attr_t attr;
    CHECK_DNNL(dnnl_primitive_attr_create(&attr));
    CHECK_DNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    dnnl_primitive_desc_t pd;
    dnnl_status_t made = dnnl_primitive_desc_create(&pd, &desc, attr, eng, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (made == dnnl_unimplemented) return -1;
    CHECK_DNNL(made);
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (bf16 && impl && strstr(impl, "ref")) { /* a reference loop is not a roofline */
        dnnl_primitive_desc_destroy(pd);
        return -1;
    }
    dnnl_primitive_t prim;
    CHECK_DNNL(dnnl_primitive_create(&prim, pd));
    const dnnl_memory_desc_t *ms = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sb = ms ? dnnl_memory_desc_get_size(ms) : 0;
    size_t na = (size_t)(batch * m * k), nb = (size_t)(batch * k * nn), nc = (size_t)(batch * m * nn);
    void *A = aligned_alloc(64, (na * es + 63) / 64 * 64), *B = aligned_alloc(64, (nb * es + 63) / 64 * 64);
    void *Cb = aligned_alloc(64, (nc * es + 63) / 64 * 64), *S = sb ? aligned_alloc(64, (sb + 63) / 64 * 64) : NULL;
    if (!A || !B || !Cb || (sb && !S)) DIE("out of memory");
    for (size_t i = 0; i < na * es / 2; i++) ((uint16_t *)A)[i] = (uint16_t)(0x3c00 + (next_rand() & 0xff));
    for (size_t i = 0; i < nb * es / 2; i++) ((uint16_t *)B)[i] = (uint16_t)(0x3c00 + (next_rand() & 0xff));
    dnnl_memory_t mema, memb, memc, mems = NULL;
    CHECK_DNNL(dnnl_memory_create(&mema, &ma, eng, A));
    CHECK_DNNL(dnnl_memory_create(&memb, &mb, eng, B));
    CHECK_DNNL(dnnl_memory_create(&memc, &mc, eng, Cb));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mema}, {DNNL_ARG_WEIGHTS, memb}, {DNNL_ARG_DST, memc}};
    int nargs = 3;
    if (sb) {
        CHECK_DNNL(dnnl_memory_create(&mems, ms, eng, S));
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mems};
    }
    double times[MAX_RUNS], spent = 0;
    int reps = 0;
    for (int w = 0; w < 2; w++) {
        CHECK_DNNL(dnnl_primitive_execute(prim, st, nargs, args));
        CHECK_DNNL(dnnl_stream_wait(st));
    }
    while (reps < MAX_RUNS && (reps < 3 || spent < 0.3)) {
        double t0 = now();
        CHECK_DNNL(dnnl_primitive_execute(prim, st, nargs, args));
        CHECK_DNNL(dnnl_stream_wait(st));
        times[reps] = now() - t0;
        spent += times[reps++];
    }
    dnnl_memory_destroy(mema), dnnl_memory_destroy(memb), dnnl_memory_destroy(memc);
    if (mems) dnnl_memory_destroy(mems);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    free(A), free(B), free(Cb), free(S);
    /* the fastest repeat: a roofline is what the hardware allows, and this machine's slow spells
     * (other tenants) only ever add time */
    double s = times[0];
    for (int i = 1; i < reps; i++) s = times[i] < s ? times[i] : s;
    if (nshape_cache < 256) shape_cache[nshape_cache++] = (shape_time){m, k, nn, batch, bf16, s};
    return s;
}

/* The row's GFLOP per run and roofline seconds per run (-1: no oneDNN kernel for its dtype).
 * bf16: the bf16 GEMMs where oneDNN has them (have_bf16), else the f32 ones tessera runs. */
static void roofline(row *r, const opts *o, dnnl_engine_t eng, dnnl_stream_t st, int have_bf16) {
    gemm g[MAX_GEMMS];
    int n = row_gemms(r, o->layers, o->seq, g);
    double flop = 0, s = 0;
    for (int i = 0; i < n; i++) {
        flop += 2.0 * (double)g[i].m * (double)g[i].k * (double)g[i].n * (double)g[i].batch * (double)g[i].count;
        double t = r->int8 ? -1 : dnnl_gemm_seconds(eng, st, g[i].m, g[i].k, g[i].n, g[i].batch, r->bf16 && have_bf16);
        if (t < 0) s = -1;
        if (s >= 0) s += t * (double)g[i].count;
    }
    r->gflop = flop * 1e-9;
    r->roof_s = s;
}

/* ------------------------------------------------------------------ main */

static const opts *g_opts;
static const row *g_row;
static void tessera_fn(const void *a) { (void)a; tessera_child(g_row, g_opts); }
static int g_want_onnx;
static void export_fn(const void *a) { (void)a; export_child(g_opts, g_want_onnx); }

static row *g_rows;
static int g_nrows;
static int g_have_bf16, g_have_torch, g_have_ort; /* oneDNN's native bf16 matmul; the peers installed */

/* Prints "bf16 0|1" (oneDNN has a non-reference bf16 matmul here) and "roof I GFLOP SECONDS" for
 * each selected row (seconds -1 when its dtype has no kernel; bf16 rows without bf16: f32's). */
static void roofline_fn(const void *a) {
    (void)a;
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK_DNNL(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK_DNNL(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    int have_bf16 = dnnl_gemm_seconds(eng, st, 64, 64, 64, 1, 1) >= 0;
    printf("bf16 %d\n", have_bf16);
    for (int i = 0; i < g_nrows; i++) {
        row *r = &g_rows[i];
        if (!selected(g_opts, r->id)) continue;
        roofline(r, g_opts, eng, st, have_bf16);
        printf("roof %d %.6f %.6f\n", i, r->gflop, r->roof_s);
    }
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
}

static double seq_per_s(const row *r, double s) { return s > 0 ? r->batch / s : NAN; }

static void fmt(char *b, size_t n, const char *f, double v) {
    if (isnan(v) || v <= 0) snprintf(b, n, "—");
    else snprintf(b, n, f, v);
}

/* ------------------------------------------------------------------ the row table */

/* A row before --seq, --batch and --attention make its id, label, batch and eager twin. */
typedef struct row_spec {
    const char *id, *label; /* training rows: "_p<P>" or "_all", ", MLM on ..." are appended */
    int train;
    ts_optim_kind optim;
    int gathered;           /* training: 1: the MLM head on P gathered positions; 0: on all T */
    int bf16, int8, batch;  /* batch: the inference rows'; training rows take opts.batch */
} row_spec;

static const row_spec row_specs[] = {
    {"train_f32_adamw", "train f32 AdamW", 1, TS_OPTIM_ADAMW, 1, 0, 0, 0},
    {"train_f32_adamw", "train f32 AdamW", 1, TS_OPTIM_ADAMW, 0, 0, 0, 0},
    {"train_f32_lamb", "train f32 LAMB", 1, TS_OPTIM_LAMB, 1, 0, 0, 0},
    {"train_bf16_adamw", "train bf16 AdamW", 1, TS_OPTIM_ADAMW, 1, 1, 0, 0},
    {"train_bf16_adamw", "train bf16 AdamW", 1, TS_OPTIM_ADAMW, 0, 1, 0, 0},
    {"infer_f32_b8", "inference f32, batch 8", 0, 0, 0, 0, 0, 8},
    {"infer_bf16_b8", "inference bf16, batch 8", 0, 0, 0, 1, 0, 8},
    {"latency_f32_b1", "latency f32, batch 1", 0, 0, 0, 0, 0, 1},
    {"latency_bf16_b1", "latency bf16, batch 1", 0, 0, 0, 1, 0, 1},
    {"infer_int8_b8", "inference int8 dynamic, batch 8", 0, 0, 0, 0, 1, 8},
    {"latency_int8_b1", "latency int8 dynamic, batch 1", 0, 0, 0, 0, 1, 1},
    {"infer_int8s_b8", "inference int8 calibrated, batch 8", 0, 0, 0, 0, 2, 8},
    {"latency_int8s_b1", "latency int8 calibrated, batch 1", 0, 0, 0, 0, 2, 1},
};

/* The MLM positions gathered per sequence of T tokens: 20 per 128, rounded up (20 at 128, 60 at
 * 384, 80 at 512: the phase-1 and phase-2 max_predictions_per_seq of Google's and NVIDIA's recipes). */
static int mlm_positions(int T) { return (20 * T + 127) / 128; }

/* Fills rows[] (MAX_ROWS) from row_specs for o's seq, batch and attention; returns how many. An
 * eager twin (--attention both) follows its fused row. */
static int make_rows(const opts *o, row *rows) {
    int n = 0, P = mlm_positions(o->seq);
    for (size_t k = 0; k < sizeof row_specs / sizeof row_specs[0]; k++) {
        const row_spec *sp = &row_specs[k];
        for (int eager = 0; eager < 2; eager++) {
            if ((eager && o->attention == ATTN_FUSED) || (!eager && o->attention == ATTN_EAGER)) continue;
            row *r = &rows[n];
            *r = (row){.train = sp->train, .optim = sp->optim, .bf16 = sp->bf16, .int8 = sp->int8,
                       .batch = sp->train ? o->batch : sp->batch, .eager = eager,
                       .fused_of = eager && o->attention == ATTN_BOTH ? n - 1 : -1};
            r->positions = sp->train && sp->gathered ? P : 0;
            const char *sfx = eager ? "_eager" : "", *lsfx = eager ? ", eager attention" : "";
            if (!sp->train) {
                snprintf(r->id, sizeof r->id, "%s%s", sp->id, sfx);
                snprintf(r->label, sizeof r->label, "%s%s", sp->label, lsfx);
            } else if (r->positions) {
                snprintf(r->id, sizeof r->id, "%s_p%d%s", sp->id, P, sfx);
                snprintf(r->label, sizeof r->label, "%s, MLM on %d positions%s", sp->label, P, lsfx);
            } else {
                snprintf(r->id, sizeof r->id, "%s_all%s", sp->id, sfx);
                snprintf(r->label, sizeof r->label, "%s, MLM on all %d%s", sp->label, o->seq, lsfx);
            }
            r->warmup = r->train ? 1 : r->batch == 1 ? 2 : 1;
            r->runs = r->train ? o->steps : r->batch == 1 ? o->latency_runs : o->runs;
            r->ts_s = r->pt_s = r->ort_s = r->roof_s = r->ts_compile_s = NAN;
            n++;
        }
    }
    return n;
}

/* ------------------------------------------------------------------ the command line */

#define USAGE                                                                                                      \
    "bert [--steps N] [--runs N] [--latency-runs N] [--layers L] [--rounds N] [--train-rounds N]\n"               \
    "            [--only SUBSTRING] [--no-peers] [--profile] [--json PATH] [--seq T] [--batch B]\n"              \
    "            [--attention fused|eager|both] [--roofline-rounds N] [--updates end|backward]\n"    \
    "            [--recompute-gelu] [--recompute-casts]"

/* The integer value s of flag, which must lie in [lo, hi]; else an error naming flag, the range
 * and why (words after the range, "" for none). */
static int int_arg(const char *flag, const char *s, int lo, int hi, const char *why) {
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (e == s || *e || errno || v < lo || v > hi)
        DIE("%s must be an integer in [%d, %d]%s, got '%s'", flag, lo, hi, why, s);
    return (int)v;
}

static void parse_args(int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--steps") && more) o->steps = atoi(argv[++i]);
        else if (!strcmp(a, "--runs") && more) o->runs = atoi(argv[++i]);
        else if (!strcmp(a, "--latency-runs") && more) o->latency_runs = atoi(argv[++i]);
        else if (!strcmp(a, "--layers") && more) o->layers = atoi(argv[++i]);
        else if (!strcmp(a, "--only") && more) o->only = argv[++i];
        else if (!strcmp(a, "--rounds") && more) o->rounds = atoi(argv[++i]);
        else if (!strcmp(a, "--train-rounds") && more) o->train_rounds = atoi(argv[++i]);
        else if (!strcmp(a, "--json") && more) o->json = argv[++i];
        else if (!strcmp(a, "--seq") && more)
            o->seq = int_arg(a, argv[++i], 1, MAX_SEQ, " (BERT-Base has 512 positions)");
        else if (!strcmp(a, "--batch") && more) o->batch = int_arg(a, argv[++i], 1, 512, "");
        else if (!strcmp(a, "--roofline-rounds") && more) o->roofline_rounds = int_arg(a, argv[++i], 1, 8, "");
        else if (!strcmp(a, "--attention") && more) {
            const char *v = argv[++i];
            o->attention = !strcmp(v, "fused") ? ATTN_FUSED : !strcmp(v, "eager") ? ATTN_EAGER
                         : !strcmp(v, "both") ? ATTN_BOTH : -1;
            if (o->attention < 0) DIE("--attention must be fused, eager or both, got '%s'", v);
        }
        else if (!strcmp(a, "--updates") && more) {
            const char *v = argv[++i];
            o->updates_in_backward = !strcmp(v, "backward") ? 1 : !strcmp(v, "end") ? 0 : -1;
            if (o->updates_in_backward < 0) DIE("--updates must be end or backward, got '%s'", v);
        }
        else if (!strcmp(a, "--recompute-gelu")) o->recompute_gelu = 1;
        else if (!strcmp(a, "--recompute-casts")) o->recompute_casts = 1;
        else if (!strcmp(a, "--no-peers")) o->peers = 0;
        else if (!strcmp(a, "--profile")) o->profile = 1;
        else if (!strcmp(a, "--help")) {
            printf("usage: " USAGE "\n"
                   "BERT-Base training and inference, tessera beside PyTorch, ONNX Runtime and the oneDNN GEMM\n"
                   "roofline (see the top of bench/bert.c).\n");
            exit(0);
        }
        else DIE("unknown argument '%s' (usage: " USAGE ")", a);
    }
    if (o->rounds < 1 || o->train_rounds < 1) DIE("--rounds and --train-rounds must be >= 1");
    if (o->steps < 1 || o->runs < 1 || o->latency_runs < 1 || o->layers < 1 || o->steps + 2 > MAX_RUNS ||
        o->runs + 2 > MAX_RUNS || o->latency_runs + 2 > MAX_RUNS)
        DIE("--steps, --runs, --latency-runs must be in [1, %d] and --layers >= 1", MAX_RUNS - 2);
}

/* ------------------------------------------------------------------ measuring a row */

static child_out g_child; /* one child's output at a time (64 KiB: not on the stack) */

/* One tessera round of row r: its best median, compile time, RSS and losses so far. */
static void measure_tessera(row *r, const opts *o) {
    child_out *c = &g_child;
    printf(" tessera ...");
    fflush(stdout);
    g_row = r;
    run_fork(tessera_fn, NULL, c);
    if (c->rss_kib < 0) DIE("%s: the tessera run failed (status %d)", r->id, c->status);
    double v[1];
    r->ts_s = best(r->ts_s, timed_median(c->buf, "run_s", r->warmup));
    r->ts_compile_s = best(r->ts_compile_s, bench_numbers(c->buf, "compile_s", v, 1) ? v[0] : NAN);
    r->ts_rss_kib = c->rss_kib;
    double l[2] = {NAN, NAN};
    bench_numbers(c->buf, "loss", l, 2);
    r->ts_loss0 = l[0], r->ts_loss1 = l[1];
    printf(" %.3f s", r->ts_s);
    if (o->profile) {
        const char *pr = strstr(c->buf, "profile\n");
        if (pr) printf("\n%s", pr + 8);
    }
    fflush(stdout);
}

/* One PyTorch round of row r, or the note saying why it has none. */
static void measure_torch(row *r, const opts *o, int have_torch, int have_bf16) {
    child_out *c = &g_child;
    char threads[16], steps_arg[16], batch_arg[16], pos_arg[16], layers_arg[16], seq_arg[16];
    if (!have_torch) {
        r->pt_note = o->peers ? "not installed" : "not run";
    } else if (r->fused_of >= 0) {
        r->pt_note = "fused row"; /* the same PyTorch model: measured once, on the fused row */
    } else if (r->bf16 && !have_bf16) {
        r->pt_note = "no native bf16 on this CPU";
    } else if (r->int8) {
        r->pt_note = "int8 not run";
    } else if (r->train && r->optim == TS_OPTIM_LAMB) {
        r->pt_note = "no LAMB in PyTorch";
    } else {
        snprintf(threads, sizeof threads, "%d", o->threads);
        snprintf(layers_arg, sizeof layers_arg, "%d", o->layers);
        snprintf(steps_arg, sizeof steps_arg, "%d", r->warmup + r->runs);
        snprintf(batch_arg, sizeof batch_arg, "%d", r->batch);
        snprintf(pos_arg, sizeof pos_arg, "%d", r->positions);
        snprintf(seq_arg, sizeof seq_arg, "%d", o->seq);
        exec_args e = {{"/usr/bin/python3", TS_SOURCE_DIR "/bench/bert_torch.py", "--mode",
                        r->train ? "train" : "infer", "--batch", batch_arg, "--seq", seq_arg, "--positions", pos_arg, "--dtype",
                        r->bf16 ? "bf16" : "f32", "--runs", steps_arg, "--threads", threads, "--layers", layers_arg,
                        NULL},
                       1};
        printf(", PyTorch ...");
        fflush(stdout);
        run_fork(exec_child, &e, c);
        if (c->rss_kib < 0) {
            r->pt_note = "failed";
            fprintf(stderr, "bench_bert: %s: the PyTorch run failed (status %d)\n", r->id, c->status);
        } else {
            r->pt_s = best(r->pt_s, timed_median(c->buf, "\"run_s\":", r->warmup));
            char ver[32], blas[96];
            json_string(c->buf, "\"torch\":", ver, sizeof ver);
            json_string(c->buf, "\"blas\":", blas, sizeof blas);
            snprintf(pt_desc, sizeof pt_desc, "PyTorch %s with %s", ver, blas);
            r->pt_rss_kib = c->rss_kib;
            printf(" %.3f s", r->pt_s);
        }
    }
}

/* One ONNX Runtime round of row r: inference rows in f32 (an ONNX model of f32 weights) and int8
 * (ORT's dynamic form, tessera's QDQ export), or the note saying why it has none. */
static void measure_ort(row *r, const opts *o, int have_ort) {
    child_out *c = &g_child;
    char threads[16], steps_arg[16];
    if (r->train) {
        r->ort_note = "inference only";
    } else if (!have_ort) {
        r->ort_note = o->peers ? "not installed" : "not run";
    } else if (r->fused_of >= 0) {
        r->ort_note = "fused row";
    } else if (r->bf16) {
        r->ort_note = "f32 row";
    } else {
        snprintf(threads, sizeof threads, "%d", o->threads);
        snprintf(steps_arg, sizeof steps_arg, "%d", r->warmup + r->runs);
        exec_args e = {{"node", TS_SOURCE_DIR "/bench/bert_ort.js",
                        (r->int8 == 2 ? qdq_path : r->int8 ? dyn_path : onnx_path)[r->batch == 1],
                        "--runs", steps_arg,
                        "--threads", threads, NULL},
                       0};
        printf(", ONNX Runtime ...");
        fflush(stdout);
        run_fork(exec_child, &e, c);
        if (c->rss_kib < 0) {
            r->ort_note = "failed";
            fprintf(stderr, "bench_bert: %s: the ONNX Runtime run failed (status %d)\n", r->id, c->status);
        } else {
            r->ort_s = best(r->ort_s, timed_median(c->buf, "\"run_s\":", r->warmup));
            char ver[32];
            json_string(c->buf, "\"ort\":", ver, sizeof ver);
            snprintf(ort_desc, sizeof ort_desc, "onnxruntime-node %s", ver);
            r->ort_rss_kib = c->rss_kib;
            printf(" %.3f s", r->ort_s);
        }
    }
}

/* One round of the roofline for the selected rows, in a child process like every measurement
 * (OpenMP, GNU libgomp, cannot be used in a process that forks later, so this one never runs a
 * parallel region itself); a row keeps its fastest round (slow spells only ever add time). */
static void measure_roofline(row *rows, int nrows) {
    child_out *c = &g_child;
    run_fork(roofline_fn, NULL, c);
    if (c->rss_kib < 0) DIE("the roofline measurement failed (status %d)", c->status);
    double v2[2];
    g_have_bf16 = bench_numbers(c->buf, "bf16", v2, 1) == 1 && v2[0] == 1;
    for (int i = 0; i < nrows; i++) {
        char key[32];
        snprintf(key, sizeof key, "roof %d ", i);
        if (bench_numbers(c->buf, key, v2, 2) != 2) continue;
        rows[i].gflop = v2[0];
        rows[i].roof_s = rows[i].roof_s > 0 && v2[1] > 0 ? fmin(rows[i].roof_s, v2[1]) : v2[1];
    }
}

/* ------------------------------------------------------------------ the report */

/* The table: seq/s (latency rows: ms per batch), GFLOP/s achieved, % of roofline, RSS, ratios. */
static void print_table(const row *rows, int nrows, const opts *o, int label_w) {
    printf("\n%-*s | %9s %9s %9s %9s | %7s %6s | %8s %8s %8s | %7s %7s | %8s\n", label_w, "workload", "tessera", "PyTorch",
           "ORT", "roofline", "GFLOP/s", "% roof", "RSS MiB", "PyTorch", "ORT", "vs PT", "vs ORT", "compile");
    printf("%-*s | %9s %9s %9s %9s | %7s %6s | %8s %8s %8s | %7s %7s | %8s\n", label_w, "", "", "", "", "", "tessera", "",
           "tessera", "", "", "speedup", "speedup", "s");
    printf("-----------------------------------------------------------------------------------------------------"
           "-------------------------------------------------%.*s\n", label_w - 38,
           "------------------------------------------------------------------------------------------------");
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        if (!selected(o, r->id)) continue;
        int lat = !r->train && r->batch == 1;
        /* latency rows in ms per forward; the others in sequences per second */
        double ts = lat ? r->ts_s * 1e3 : seq_per_s(r, r->ts_s), pt = lat ? r->pt_s * 1e3 : seq_per_s(r, r->pt_s);
        double ort = lat ? r->ort_s * 1e3 : seq_per_s(r, r->ort_s);
        double roof = r->roof_s > 0 ? (lat ? r->roof_s * 1e3 : seq_per_s(r, r->roof_s)) : NAN;
        char b[12][32];
        const char *f = lat ? "%.1f ms" : "%.2f";
        fmt(b[0], 32, f, ts), fmt(b[1], 32, f, pt), fmt(b[2], 32, f, ort), fmt(b[3], 32, f, roof);
        fmt(b[4], 32, "%.1f", r->ts_s > 0 ? r->gflop / r->ts_s : NAN);
        fmt(b[5], 32, "%.0f%%", r->roof_s > 0 && r->ts_s > 0 ? 100 * r->roof_s / r->ts_s : NAN);
        fmt(b[6], 32, "%.0f", r->ts_rss_kib / 1024.0), fmt(b[7], 32, "%.0f", r->pt_rss_kib / 1024.0);
        fmt(b[8], 32, "%.0f", r->ort_rss_kib / 1024.0);
        fmt(b[9], 32, "%.2fx", r->pt_s / r->ts_s), fmt(b[10], 32, "%.2fx", r->ort_s / r->ts_s);
        fmt(b[11], 32, "%.2f", r->ts_compile_s);
        if (isnan(r->pt_s) && r->pt_note) snprintf(b[1], 32, "(%s)", r->pt_note);
        if (isnan(r->ort_s) && r->ort_note) snprintf(b[2], 32, "(%s)", r->ort_note);
        if (r->bf16 && !g_have_bf16 && isnan(r->pt_s) && g_have_torch && r->fused_of < 0)
            snprintf(b[1], 32, "(no bf16*)");
        printf("%-*s | %9s %9s %9s %9s | %7s %6s | %8s %8s %8s | %7s %7s | %8s\n", label_w, r->label, b[0], b[1], b[2], b[3],
               b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]);
    }
}

/* The notes below the table: units, peers, the bf16 caveat, int8 against f32, fused against eager
 * attention, the training losses. */
static void print_notes(const row *rows, int nrows, const opts *o) {
    printf("\nseq/s: sequences per second (median of timed runs after warm-up); latency rows: ms per batch-1 forward.\n"
           "roofline: the row's matmuls timed one by one as oneDNN primitives in this run (no other work);\n"
           "%% roof = roofline time / tessera time. speedup = peer time / tessera time (> 1: tessera faster).\n"
           "compile: tessera's build + compile (+ weights load for inference rows), seconds.\n"
           "PyTorch: %s; /usr/bin/python3 bench/bert_torch.py, OPENBLAS_CORETYPE/L2_SIZE unset,\n"
           "  OMP_WAIT_POLICY=passive, %d threads. ORT: %s, CPU EP, graph optimisation 'all', %d intra-op\n"
           "  threads, on the ONNX model tessera exported (same weights; int8 dynamic: in ORT's dynamic int8 form,\n"
           "  DynamicQuantizeLinear + MatMulInteger; int8 calibrated: tessera's QDQ export).\n",
           pt_desc[0] ? pt_desc : "not run", o->threads, ort_desc[0] ? ort_desc : "not run", o->threads);
    if (!g_have_bf16)
        printf("bf16 (f32 kernels): no native bf16 matmul on this CPU; tessera multiplies the bf16 operands widened to\n"
               "  f32 with oneDNN's f32 matmul and rounds to bf16; roofline = the f32 GEMMs.%s\n",
               g_have_torch ? " (no bf16*): PyTorch's bf16 rows\n  skipped, no native bf16 on this CPU." : "");
    for (int i = 0; i < nrows; i++) /* int8 dynamic beside tessera f32 of the same batch and attention, this run */
        for (int j = 0; j < nrows && rows[i].int8 && rows[i].ts_s > 0; j++)
            if (!rows[j].train && !rows[j].bf16 && !rows[j].int8 && rows[j].batch == rows[i].batch &&
                rows[j].eager == rows[i].eager && rows[j].ts_s > 0)
                printf("%s: %.2fx tessera f32 (%s)\n", rows[i].label, rows[j].ts_s / rows[i].ts_s, rows[j].id);
    for (int i = 0; i < nrows; i++) { /* --attention both: each fused row against its eager twin */
        const row *e = &rows[i], *f = e->fused_of >= 0 ? &rows[e->fused_of] : NULL;
        if (!f || !(e->ts_s > 0) || !(f->ts_s > 0)) continue;
        printf("attention fused / eager, %s: speed %.2fx (%.3f / %.3f s a run), peak RSS %.2fx (%.0f / %.0f MiB)",
               f->id, e->ts_s / f->ts_s, f->ts_s, e->ts_s, (double)f->ts_rss_kib / (double)e->ts_rss_kib,
               f->ts_rss_kib / 1024.0, e->ts_rss_kib / 1024.0);
        if (f->roof_s > 0) printf(", %% roof %.0f%% / %.0f%%", 100 * f->roof_s / f->ts_s, 100 * f->roof_s / e->ts_s);
        printf("\n");
    }
    for (int i = 0; i < nrows; i++)
        if (rows[i].train && rows[i].ts_s > 0)
            printf("loss of %s: %.4f at the first step, %.4f at the last\n", rows[i].id, rows[i].ts_loss0,
                   rows[i].ts_loss1);
}

/* The figures of the selected rows as JSON in o->json (-1: not measured). */
static void write_json(const row *rows, int nrows, const opts *o) {
    FILE *js = fopen(o->json, "w");
    if (!js) DIE("cannot write %s: %s", o->json, strerror(errno));
    fprintf(js, "{\"threads\": %d, \"layers\": %d, \"seq\": %d, \"train_batch\": %d, \"bf16_matmul\": %s, "
            "\"pytorch\": \"%s\", \"ort\": \"%s\", \"rows\": [\n", o->threads, o->layers, o->seq, o->batch,
            g_have_bf16 ? "true" : "false", pt_desc, ort_desc);
    int first = 1;
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        if (!selected(o, r->id)) continue;
#define JNUM(x) (isnan(x) || (x) <= 0 ? -1.0 : (x))
        fprintf(js,
                "%s  {\"id\": \"%s\", \"batch\": %d, \"gflop_per_run\": %.3f, \"tessera_s\": %.6g, "
                "\"pytorch_s\": %.6g, \"ort_s\": %.6g, \"roofline_s\": %.6g, \"tessera_compile_s\": %.4g, "
                "\"tessera_rss_mib\": %.1f, \"pytorch_rss_mib\": %.1f, \"ort_rss_mib\": %.1f, "
                "\"pytorch_note\": \"%s\", \"ort_note\": \"%s\", \"attention\": \"%s\", \"mlm_positions\": %d}",
                first ? "" : ",\n", r->id, r->batch, r->gflop, JNUM(r->ts_s), JNUM(r->pt_s), JNUM(r->ort_s),
                JNUM(r->roof_s), JNUM(r->ts_compile_s), r->ts_rss_kib / 1024.0, r->pt_rss_kib / 1024.0,
                r->ort_rss_kib / 1024.0, r->pt_note ? r->pt_note : "", r->ort_note ? r->ort_note : "",
                r->eager ? "eager" : "fused", r->train ? r->positions : 0);
        first = 0;
    }
    fprintf(js, "\n]}\n");
    fclose(js);
    printf("written: %s (-1: not measured)\n", o->json);
}

/* ------------------------------------------------------------------ main */

/* The table's labels of bf16 rows without native bf16 ("... bf16 (f32 kernels) ..."); the width of
 * the table's first column for the selected rows. */
static int relabel(row *rows, int nrows, const opts *o) {
    int label_w = 38;
    for (int i = 0; i < nrows; i++) {
        const char *at = strstr(rows[i].label, "bf16");
        if (rows[i].bf16 && !g_have_bf16 && at) {
            char l[sizeof rows[i].label];
            snprintf(l, sizeof l, "%.*sbf16 (f32 kernels)%s", (int)(at - rows[i].label), rows[i].label, at + 4);
            memcpy(rows[i].label, l, sizeof l);
        }
        if (selected(o, rows[i].id) && (int)strlen(rows[i].label) > label_w) label_w = (int)strlen(rows[i].label);
    }
    return label_w;
}

/* Writes the weights, scales and ONNX files the selected inference rows load (none selected: none). */
static void write_model_files(const row *rows, int nrows, const opts *o) {
    mkdir(TS_BUILD_DIR "/bench", 0755);
    snprintf(weights_path, sizeof weights_path, "%s/bench/bert-base-%dl.safetensors", TS_BUILD_DIR, o->layers);
    snprintf(onnx_path[0], sizeof onnx_path[0], "%s/bench/bert-base-%dl-b8.onnx", TS_BUILD_DIR, o->layers);
    snprintf(onnx_path[1], sizeof onnx_path[1], "%s/bench/bert-base-%dl-b1.onnx", TS_BUILD_DIR, o->layers);
    snprintf(qdq_path[0], sizeof qdq_path[0], "%s/bench/bert-base-%dl-b8-qdq.onnx", TS_BUILD_DIR, o->layers);
    snprintf(qdq_path[1], sizeof qdq_path[1], "%s/bench/bert-base-%dl-b1-qdq.onnx", TS_BUILD_DIR, o->layers);
    snprintf(dyn_path[0], sizeof dyn_path[0], "%s/bench/bert-base-%dl-b8-dyn.onnx", TS_BUILD_DIR, o->layers);
    snprintf(dyn_path[1], sizeof dyn_path[1], "%s/bench/bert-base-%dl-b1-dyn.onnx", TS_BUILD_DIR, o->layers);
    snprintf(scales_path, sizeof scales_path, "%s/bench/bert-base-%dl.scales", TS_BUILD_DIR, o->layers);
    int any_infer = 0;
    for (int i = 0; i < nrows; i++)
        any_infer |= !rows[i].train && selected(o, rows[i].id);
    if (!any_infer) return;
    g_want_onnx = g_have_ort;
    double t0 = now();
    run_fork(export_fn, NULL, &g_child);
    if (g_child.rss_kib < 0) DIE("writing the model files failed (status %d)", g_child.status);
    printf("model files (weights%s) written in %.1f s\n", g_have_ort ? ", ONNX for batch 8 and 1" : "", now() - t0);
    double lv[3];
    if (bench_numbers(g_child.buf, "int8_logits", lv, 3) == 3)
        printf("int8 calibrated vs f32, a BERT-Base-shaped classifier (pooled output x a [%d, 2] weight), a batch of 8 "
               "held-out random sequences: logits' mean absolute difference %.3g, largest %.3g (largest |logit| "
               "%.3g)\n", 768, lv[0], lv[1], lv[2]);
}

int main(int argc, char **argv) {
    opts o = {.steps = 3, .runs = 5, .latency_runs = 15, .layers = 12, .peers = 1, .rounds = 2, .train_rounds = 1,
              .threads = omp_get_max_threads(), .seq = 128, .batch = 8, .attention = ATTN_FUSED,
              .roofline_rounds = 1};
    static char json_default[1024];
    snprintf(json_default, sizeof json_default, "%s/bench/bert.json", TS_BUILD_DIR);
    o.json = json_default;
    parse_args(argc, argv, &o);
    g_opts = &o;
    static row rows[MAX_ROWS];
    int nrows = make_rows(&o, rows), nsel = 0;
    for (int i = 0; i < nrows; i++) nsel += selected(&o, rows[i].id);
    if (!nsel) {
        fprintf(stderr, "bench_bert: --only '%s' selects no row; the rows at seq %d:", o.only, o.seq);
        for (int i = 0; i < nrows; i++) fprintf(stderr, " %s", rows[i].id);
        fputc('\n', stderr);
        return 1;
    }

    /* The roofline: one round before the rows, the others (--roofline-rounds) after them */
    g_rows = rows, g_nrows = nrows;
    measure_roofline(rows, nrows);

    const char *ort_pkg = TS_SOURCE_DIR "/tools/ort/node_modules/onnxruntime-node/package.json";
    g_have_ort = o.peers && (getenv("TS_ORT_MODULES") || file_exists(ort_pkg));
    g_have_torch = o.peers && file_exists("/usr/bin/python3") &&
                   system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
    const dnnl_version_t *dv = dnnl_version();
    printf("BERT-Base (%d layers, seq %d) on %d threads, oneDNN %d.%d.%d; bf16 matmuls on this CPU: %s\n", o.layers,
           o.seq, o.threads, dv->major, dv->minor, dv->patch,
           g_have_bf16 ? "yes"
                       : "no (oneDNN has only reference bf16 kernels without AVX-512: tessera's bf16 rows run f32 "
                         "kernels on widened operands, roofline = f32)");
    if (o.seq != 128 || o.batch != 8 || o.attention != ATTN_FUSED)
        printf("training batch %d, MLM on %d gathered positions (20 per 128 tokens); attention: %s\n", o.batch,
               mlm_positions(o.seq), (const char *[]){"fused", "eager", "fused and eager"}[o.attention]);
    int label_w = relabel(rows, nrows, &o);
    fflush(stdout);
    write_model_files(rows, nrows, &o);

    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i], *twin = i + 1 < nrows && rows[i + 1].fused_of == i ? &rows[i + 1] : NULL;
        if (r->fused_of >= 0 && selected(&o, rows[r->fused_of].id)) continue; /* measured with its fused row */
        if (!selected(&o, r->id)) continue;
        if (twin && !selected(&o, twin->id)) twin = NULL;
        int rounds = r->train ? o.train_rounds : o.rounds;
        if (!twin) printf("%s:", r->id);
        for (int round = 0; round < rounds; round++) {
            /* a fused row and its eager twin alternate, round by round: one slow spell of the
             * machine does not decide their ratio */
            for (row *x = r; x; x = x == r ? twin : NULL) {
                if (twin) printf("%s (round %d):", x->id, round + 1);
                measure_tessera(x, &o);
                measure_torch(x, &o, g_have_torch, g_have_bf16);
                measure_ort(x, &o, g_have_ort);
                if (twin) printf("\n");
            }
            if (!twin) printf(round + 1 < rounds ? ";" : "\n");
        }
    }
    for (int k = 1; k < o.roofline_rounds; k++) measure_roofline(rows, nrows);
    print_table(rows, nrows, &o, label_w);
    print_notes(rows, nrows, &o);
    write_json(rows, nrows, &o);
    return 0;
}
