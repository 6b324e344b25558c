/*
 * run.c — `tessera run`: one inference batch through a BERT model directory (Hugging Face
 * layout), every output of the model written by name to a safetensors file; or, when --model
 * names an ONNX file (a file rather than a directory), through the ONNX importer (run_onnx.c).
 *
 *   tessera run --model DIR --inputs IN.safetensors --outputs OUT.safetensors
 *               [--device cpu] [--dtype f32|bf16] [--threads N] [--init-random SEED] [--repeat N]
 *               [--profile]
 *   tessera run --model MODEL.onnx --inputs IN.safetensors --outputs OUT.safetensors
 *               [--device cpu] [--threads N] [--repeat N]
 *
 * DIR holds config.json (its "architectures" picks the head; BertModel when absent) and
 * model.safetensors. The batch shape [B, T] comes from the inputs, so the program is built and
 * compiled for it on each call (dropout off, compiled for inference). --init-random SEED skips
 * model.safetensors and draws the parameters as ts_bert_build initialises them, so a model can
 * be timed without a checkpoint; --repeat N runs the batch N times and reports the best time.
 */
#include <math.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "tessera.h"

static const char *USAGE =
    "usage: tessera run --model DIR --inputs IN.safetensors --outputs OUT.safetensors\n"
    "                   [--device cpu] [--dtype f32|bf16] [--threads N] [--init-random SEED]\n"
    "                   [--repeat N] [--allow-nonfinite] [--device-memory GIB] [--profile]\n"
    "       tessera run --model MODEL.onnx --inputs IN.safetensors --outputs OUT.safetensors\n"
    "                   [--device cpu] [--threads N] [--repeat N] [--device-memory GIB]\n"
    "  Runs a BERT model on one batch and writes every output of its head, by name, as f32.\n"
    "  With an ONNX file (a --model that is a file, not a directory), runs that model instead\n"
    "  (opsets 9-17; `tessera onnx-ops` lists the ops): the inputs are the safetensors tensors\n"
    "  named as the model's inputs, of any shape the model allows (converted to the declared\n"
    "  dtype between float types or between integer types), and every output is written under\n"
    "  its name in its own dtype. --dtype, --init-random, --allow-nonfinite and --profile are\n"
    "  BERT-only.\n"
    "  --model DIR         config.json + model.safetensors (Hugging Face layout; vocab.txt unused).\n"
    "                      The head is config.json's \"architectures\" (BertModel when absent):\n"
    "                      BertModel              last_hidden_state, pooler_output\n"
    "                      BertForPreTraining     + prediction_logits, seq_relationship_logits\n"
    "                      BertForMaskedLM        last_hidden_state, logits\n"
    "                      BertForSequenceClassification  + pooler_output, logits\n"
    "                      BertForQuestionAnswering       last_hidden_state, start_logits, end_logits\n"
    "                      A bare BertModel checkpoint (names without \"bert.\") loads too.\n"
    "  --inputs FILE       input_ids [B, T] (required), token_type_ids (default 0) and\n"
    "                      attention_mask (default 1), i32 or i64; other tensors are ignored.\n"
    "  --outputs FILE      written atomically (safetensors, f32).\n"
    "  --device NAME       a device of this build (default cpu).\n"
    "  --dtype f32|bf16    matmul precision (default f32); bf16 multiplies in bf16 and keeps\n"
    "                      everything else in f32, like PyTorch's autocast.\n"
    "  --threads N         worker threads (default: OpenMP's).\n"
    "  --init-random SEED  do not read model.safetensors: random parameters drawn from SEED (the\n"
    "                      model's own initialisation), to time a model without a checkpoint.\n"
    "  --repeat N          run the batch N times (default 1) and report the best time.\n"
    "  --allow-nonfinite   load weights that hold NaN or inf (refused by default).\n"
    "  --profile           print to stdout, after the runs, where their time went: the share\n"
    "                      outside kernels, then time per op type, per layer and per shape (see\n"
    "                      ts_program_profile_report). With --repeat N > 1 the first run is a\n"
    "                      warm-up and is left out; the report covers the other N - 1.\n"
    "  --device-memory GIB memory the program may take (default: the device's; for the CPU its\n"
    "                      physical memory); a larger one is refused before it allocates.\n"
    "Exit codes: 0 done, 1 failed while running, 2 bad flags or files.\n";

#define CMD "run"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Is `name` ("cpu", "cpu:2") a device of one of the comma-separated backends this build has? */
static int known_device(const char *name) {
    const char *list = ts_devices();
    size_t n = strcspn(name, ":");
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* ------------------------------------------------------------------ inputs */

/* The named [B, T] integer input from `in` as a new i32 tensor; *shape (when it holds a B > 0)
 * must match. NULL with *missing set when absent; NULL and a message otherwise. Values must lie
 * in [lo, hi). */
static ts_tensor *read_ids(ts_safetensors *in, const char *path, const char *name, int64_t shape[2],
                           int64_t lo, int64_t hi, const char *range_what, int *missing) {
    ts_dtype dt;
    int nd;
    int64_t sh[TS_MAX_DIMS];
    *missing = 0;
    ts_status s = ts_safetensors_info(in, name, &dt, &nd, sh);
    if (s == TS_ERR_NOT_FOUND) {
        *missing = 1;
        return NULL;
    }
    if (s != TS_OK) {
        fprintf(stderr, "tessera run: %s\n", ts_last_error());
        return NULL;
    }
    if (dt != TS_I32 && dt != TS_I64) {
        fprintf(stderr, "tessera run: %s: tensor \"%s\" is %s; it must be i32 or i64\n", path, name,
                ts_dtype_name(dt));
        return NULL;
    }
    if (nd != 2 || sh[0] <= 0 || sh[1] <= 0) {
        fprintf(stderr, "tessera run: %s: tensor \"%s\" must be [batch, seq] with both positive, got rank %d",
                path, name, nd);
        for (int i = 0; i < nd; i++) fprintf(stderr, "%s%lld", i ? ", " : " [", (long long)sh[i]);
        fprintf(stderr, "%s\n", nd ? "]" : "");
        return NULL;
    }
    if (shape[0] > 0 && (sh[0] != shape[0] || sh[1] != shape[1])) {
        fprintf(stderr, "tessera run: %s: tensor \"%s\" is [%lld, %lld] but input_ids is [%lld, %lld]\n",
                path, name, (long long)sh[0], (long long)sh[1], (long long)shape[0], (long long)shape[1]);
        return NULL;
    }
    if (sh[0] > INT_MAX || sh[1] > INT_MAX) {
        fprintf(stderr, "tessera run: %s: tensor \"%s\" is too large\n", path, name);
        return NULL;
    }
    ts_tensor *raw = NULL;
    if (ts_safetensors_get(in, name, &raw) != TS_OK) {
        fprintf(stderr, "tessera run: %s\n", ts_last_error());
        return NULL;
    }
    ts_tensor *ids = dt == TS_I32 ? raw : ts_tensor_new(TS_I32, 2, sh);
    if (!ids) {
        fprintf(stderr, "tessera run: %s\n", ts_last_error());
        ts_tensor_free(raw);
        return NULL;
    }
    int32_t *out = ts_tensor_data(ids);
    const void *src = ts_tensor_data(raw);
    for (int64_t i = 0, n = sh[0] * sh[1]; i < n; i++) {
        int64_t v = dt == TS_I32 ? ((const int32_t *)src)[i] : ((const int64_t *)src)[i];
        if (v < lo || v >= hi) {
            fprintf(stderr, "tessera run: %s: %s[%lld, %lld] = %lld is outside [%lld, %lld) (%s)\n", path,
                    name, (long long)(i / sh[1]), (long long)(i % sh[1]), (long long)v, (long long)lo,
                    (long long)hi, range_what);
            if (ids != raw) ts_tensor_free(ids);
            ts_tensor_free(raw);
            return NULL;
        }
        out[i] = (int32_t)v;
    }
    if (ids != raw) ts_tensor_free(raw);
    shape[0] = sh[0];
    shape[1] = sh[1];
    return ids;
}

/* A [B, T] i32 tensor filled with v. */
static ts_tensor *filled_ids(const int64_t shape[2], int32_t v) {
    ts_tensor *t = ts_tensor_new(TS_I32, 2, shape);
    if (t)
        for (int64_t i = 0; i < shape[0] * shape[1]; i++) ((int32_t *)ts_tensor_data(t))[i] = v;
    return t;
}

/* ------------------------------------------------------------------ weights */

/* Copy a stored float tensor (f32 / bf16 / f16) into f32 parameter `pname`. 0 on success. */
static int set_param_from(ts_program *p, ts_safetensors *st, const char *path, const char *pname,
                          const char *sname, int allow_nonfinite) {
    ts_tensor *t = NULL, *cur = NULL;
    if (ts_safetensors_get(st, sname, &t) != TS_OK || ts_program_get_param(p, pname, &cur) != TS_OK) {
        fprintf(stderr, "tessera run: %s\n", ts_last_error());
        ts_tensor_free(t);
        return -1;
    }
    int rc = -1;
    int same = ts_tensor_ndim(t) == ts_tensor_ndim(cur) &&
               !memcmp(ts_tensor_shape(t), ts_tensor_shape(cur), sizeof(int64_t) * (size_t)ts_tensor_ndim(t));
    ts_dtype dt = ts_tensor_dtype(t);
    if (!same) {
        fprintf(stderr, "tessera run: %s: tensor \"%s\" has a shape other than parameter %s's\n", path, sname,
                pname);
    } else if (dt != TS_F32 && dt != TS_BF16 && dt != TS_F16) {
        fprintf(stderr, "tessera run: %s: tensor \"%s\" is %s, not a float type\n", path, sname,
                ts_dtype_name(dt));
    } else {
        float *d = ts_tensor_data(cur);
        size_t n = (size_t)ts_tensor_numel(t);
        if (dt == TS_F32) memcpy(d, ts_tensor_data(t), n * sizeof(float));
        else if (dt == TS_BF16) ts_bf16_to_f32(ts_tensor_data(t), d, n);
        else ts_f16_to_f32(ts_tensor_data(t), d, n);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n && !allow_nonfinite; i++)
            if (!isfinite(d[i]) && !bad++) first = i;
        if (bad)
            fprintf(stderr, "tessera run: %s: tensor \"%s\" holds %zu non-finite value%s of %zu (the first at element "
                    "%zu); a model with NaN or inf weights computes NaN; --allow-nonfinite loads it anyway\n",
                    path, sname, bad, bad == 1 ? "" : "s", n, first);
        else if (ts_program_set_param(p, pname, cur) == TS_OK) rc = 0;
        else fprintf(stderr, "tessera run: %s\n", ts_last_error());
    }
    ts_tensor_free(t);
    ts_tensor_free(cur);
    return rc;
}

/* Load model.safetensors strictly. A checkpoint saved from a bare BertModel names its tensors
 * without the "bert." prefix the heads' state dicts (and so tessera) use: when the strict load
 * finds parameters missing and the file has such names, they are matched with the prefix
 * stripped. Returns 0, or -1 after printing the error. */
static int load_weights(ts_program *p, const char *path, int allow_nonfinite) {
    ts_status s = ts_program_load(p, path, TS_LOAD_STRICT | (allow_nonfinite ? TS_LOAD_ALLOW_NONFINITE : 0), NULL);
    if (s == TS_OK) return 0;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    ts_safetensors *st = s == TS_ERR_NOT_FOUND ? ts_safetensors_open(path) : NULL;
    int bare = st &&
               ts_safetensors_info(st, "embeddings.word_embeddings.weight", NULL, NULL, NULL) == TS_OK &&
               ts_safetensors_info(st, "bert.embeddings.word_embeddings.weight", NULL, NULL, NULL) != TS_OK;
    if (!bare) {
        ts_safetensors_close(st);
        fprintf(stderr, "tessera run: %s\n", msg);
        return -1;
    }
    int np = ts_program_num_params(p), rc = 0;
    for (int i = 0; i < np && rc == 0; i++) { /* everything present before anything is copied */
        const char *pn = ts_program_param_name(p, i);
        const char *sn = strncmp(pn, "bert.", 5) == 0 ? pn + 5 : pn;
        if (ts_safetensors_info(st, sn, NULL, NULL, NULL) != TS_OK) {
            fprintf(stderr, "tessera run: %s: no tensor \"%s\" (parameter %s; read as a bare BertModel "
                    "checkpoint, names without \"bert.\")\n", path, sn, pn);
            rc = -1;
        }
    }
    for (int i = 0; i < np && rc == 0; i++) {
        const char *pn = ts_program_param_name(p, i);
        rc = set_param_from(p, st, path, pn, strncmp(pn, "bert.", 5) == 0 ? pn + 5 : pn, allow_nonfinite);
    }
    ts_safetensors_close(st);
    return rc;
}

/* ------------------------------------------------------------------ the command */

typedef struct run_args {
    const char *model, *inputs, *outputs, *device;
    ts_dtype dtype;
    int threads, repeat, random_init, allow_nonfinite, profile;
    uint64_t seed;
    double memory_gib;
} run_args;

/* Parse argv into *a: 0, 1 for --help (printed), or 2 after a usage message. */
static int parse_args(int argc, char **argv, run_args *a) {
    int bad = 0;
    *a = (run_args){.device = "cpu", .dtype = TS_F32, .repeat = 1};
    for (int i = 1; i < argc && !bad; i++) {
        const char *s = argv[i], *v;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(USAGE, stdout);
            return 1;
        } else if ((v = ts_cli_value(argc, argv, &i, "--model", CMD, &bad))) {
            a->model = v;
        } else if ((v = ts_cli_value(argc, argv, &i, "--inputs", CMD, &bad))) {
            a->inputs = v;
        } else if ((v = ts_cli_value(argc, argv, &i, "--outputs", CMD, &bad))) {
            a->outputs = v;
        } else if ((v = ts_cli_value(argc, argv, &i, "--device", CMD, &bad))) {
            a->device = v;
        } else if ((v = ts_cli_value(argc, argv, &i, "--dtype", CMD, &bad))) {
            if (!strcmp(v, "f32") || !strcmp(v, "float32")) a->dtype = TS_F32;
            else if (!strcmp(v, "bf16") || !strcmp(v, "bfloat16")) a->dtype = TS_BF16;
            else fprintf(stderr, "tessera run: --dtype must be f32 or bf16, not '%s'\n", v), bad = 1;
        } else if ((v = ts_cli_value(argc, argv, &i, "--threads", CMD, &bad))) {
            if ((a->threads = ts_cli_positive(v, "--threads", CMD)) < 0) bad = 1;
            else if (a->threads > ts_max_threads())
                fprintf(stderr, "tessera run: --threads %d: at most %d (4 x the %d online CPUs)\n", a->threads,
                        ts_max_threads(), ts_max_threads() / 4), bad = 1;
        } else if (!strcmp(s, "--allow-nonfinite")) {
            a->allow_nonfinite = 1;
        } else if (!strcmp(s, "--profile")) {
            a->profile = 1;
        } else if ((v = ts_cli_value(argc, argv, &i, "--device-memory", CMD, &bad))) {
            char *end;
            a->memory_gib = strtod(v, &end);
            if (end == v || *end || !(a->memory_gib > 0) || a->memory_gib > 1e9)
                fprintf(stderr, "tessera run: --device-memory wants a positive number of GiB, not '%s'\n", v), bad = 1;
        } else if ((v = ts_cli_value(argc, argv, &i, "--repeat", CMD, &bad))) {
            if ((a->repeat = ts_cli_positive(v, "--repeat", CMD)) < 0) bad = 1;
        } else if ((v = ts_cli_value(argc, argv, &i, "--init-random", CMD, &bad))) {
            char *end;
            errno = 0;
            unsigned long long seed = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') {
                fprintf(stderr, "tessera run: --init-random wants a seed (an integer >= 0), not '%s'\n", v);
                bad = 1;
            }
            a->seed = seed;
            a->random_init = 1;
        } else if (!bad) {
            fprintf(stderr, "tessera run: unknown %s '%s'\n", s[0] == '-' ? "flag" : "argument", s);
            bad = 1;
        }
    }
    if (!bad && !a->model) fprintf(stderr, "tessera run: --model DIR (or MODEL.onnx) is required\n"), bad = 1;
    if (!bad && !a->inputs) fprintf(stderr, "tessera run: --inputs FILE is required\n"), bad = 1;
    if (!bad && !a->outputs) fprintf(stderr, "tessera run: --outputs FILE is required\n"), bad = 1;
    if (!bad && !known_device(a->device))
        fprintf(stderr, "tessera run: --device '%s' is not a device of this build (it has: %s)\n", a->device,
                ts_devices()), bad = 1;
    if (bad) {
        fputs("(tessera run --help shows the usage)\n", stderr);
        return 2;
    }
    return 0;
}

static const char *head_name(ts_bert_head h) {
    static const char *const names[] = {"BertModel", "BertForPreTraining", "BertForMaskedLM",
                                        "BertForSequenceClassification", "BertForQuestionAnswering"};
    return (unsigned)h < sizeof names / sizeof *names ? names[h] : "?";
}

/* Is the model an ONNX file: a path ending in .onnx, or any file that is not a directory. */
static int is_onnx_model(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".onnx")) return 1;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

int ts_cli_run(int argc, char **argv) {
    run_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    if (is_onnx_model(a.model)) {
        const char *bert_only = a.dtype != TS_F32 ? "--dtype" : a.random_init ? "--init-random"
                                : a.allow_nonfinite ? "--allow-nonfinite" : a.profile ? "--profile" : NULL;
        if (bert_only) {
            fprintf(stderr, "tessera run: %s is for BERT model directories, not ONNX models (%s)\n", bert_only, a.model);
            return 2;
        }
        return ts_cli_run_onnx(a.model, a.inputs, a.outputs, a.device, a.threads, a.repeat, a.memory_gib);
    }

    char config_path[4096], weights_path[4096];
    snprintf(config_path, sizeof config_path, "%s/config.json", a.model);
    snprintf(weights_path, sizeof weights_path, "%s/model.safetensors", a.model);

    ts_bert_config cfg;
    if (ts_bert_config_load(config_path, &cfg) != TS_OK) {
        fprintf(stderr, "tessera run: --model: %s\n", ts_last_error());
        return 2;
    }
    /* inference: no dropout nodes at all, and the matmul precision asked for */
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.f;
    cfg.classifier_dropout = 0.f;
    cfg.attention_mask_dtype = TS_I32;
    cfg.compute_dtype = a.dtype;
    if (cfg.architecture[0] && strcmp(cfg.architecture, head_name(cfg.head)) != 0)
        fprintf(stderr, "tessera run: note: %s: architecture \"%s\" is not one tessera builds; running "
                "BertModel\n", config_path, cfg.architecture);

    /* ---- inputs */
    ts_safetensors *in = ts_safetensors_open(a.inputs);
    if (!in) {
        fprintf(stderr, "tessera run: --inputs: %s\n", ts_last_error());
        return 2;
    }
    int64_t shape[2] = {0, 0};
    int missing = 0;
    ts_tensor *feeds[3] = {NULL, NULL, NULL};
    static const char *const feed_names[3] = {"input_ids", "token_type_ids", "attention_mask"};
    feeds[0] = read_ids(in, a.inputs, "input_ids", shape, 0, cfg.vocab_size, "vocab_size", &missing);
    if (!feeds[0] && missing)
        fprintf(stderr, "tessera run: %s: no tensor \"input_ids\" (required; token_type_ids and "
                "attention_mask are optional)\n", a.inputs);
    if (feeds[0]) {
        feeds[1] = read_ids(in, a.inputs, "token_type_ids", shape, 0, cfg.type_vocab_size, "type_vocab_size",
                            &missing);
        if (!feeds[1] && missing) feeds[1] = filled_ids(shape, 0);
    }
    if (feeds[1]) {
        feeds[2] = read_ids(in, a.inputs, "attention_mask", shape, 0, 2, "1 keep, 0 padding", &missing);
        if (!feeds[2] && missing) feeds[2] = filled_ids(shape, 1);
    }
    ts_safetensors_close(in);
    ts_graph *g = NULL;
    ts_program *p = NULL;
    ts_tensor *outs[8] = {NULL};
    rc = 2;
    if (!feeds[2]) goto done;
    int B = (int)shape[0], T = (int)shape[1];

    /* ---- build, compile, load */
    double t0 = now_s();
    g = ts_graph_new();
    if (!g) {
        fprintf(stderr, "tessera run: %s\n", ts_last_error());
        rc = 1;
        goto done;
    }
    ts_graph_set_seed(g, a.seed);
    ts_bert_outputs o;
    if (ts_bert_build(g, &cfg, cfg.head, B, T, &o) != TS_OK) {
        fprintf(stderr, "tessera run: %s (model %s, inputs %s [%d, %d])\n", ts_last_error(), config_path,
                a.inputs, B, T);
        goto done;
    }
    const char *fetch[8];
    int nf = 0;
    const struct {
        ts_value v;
        const char *name;
    } cand[] = {
        {o.last_hidden_state, "last_hidden_state"},
        {o.pooler_output, "pooler_output"},
        {o.prediction_logits, "prediction_logits"},
        {o.seq_relationship_logits, "seq_relationship_logits"},
        {o.logits, "logits"},
        {o.start_logits, "start_logits"},
        {o.end_logits, "end_logits"},
    };
    for (size_t i = 0; i < sizeof cand / sizeof *cand; i++)
        if (cand[i].v != TS_NONE) fetch[nf++] = cand[i].name;
    p = ts_compile(g, &(ts_compile_opts){.device = a.device, .num_threads = a.threads, .nfetch = nf,
                                         .fetches = fetch, .inference = 1,
                                         .skip_param_init = !a.random_init, /* loaded strictly next */
                                         .profile = a.profile,
                                         .memory_limit = (size_t)(a.memory_gib * 1073741824.0)});
    ts_graph_free(g);
    g = NULL;
    if (!p) {
        fprintf(stderr, "tessera run: compiling for --device %s: %s\n", a.device, ts_last_error());
        if (ts_last_status() == TS_ERR_NOMEM)
            fprintf(stderr, "tessera run: the parameters grow with %s's sizes (vocab_size %d, hidden_size %d, "
                    "num_hidden_layers %d, intermediate_size %d), the activations with the batch of %s [%d, %d]%s\n",
                    config_path, cfg.vocab_size, cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size,
                    a.inputs, B, T, a.memory_gib > 0 ? "; the limit is --device-memory" : "");
        rc = 1;
        goto done;
    }
    double t1 = now_s();
    if (!a.random_init && load_weights(p, weights_path, a.allow_nonfinite) != 0) goto done;
    double t2 = now_s();

    /* ---- run */
    rc = 1;
    for (int i = 0; i < 3; i++)
        if (ts_program_feed(p, feed_names[i], feeds[i]) != TS_OK) {
            fprintf(stderr, "tessera run: feeding %s: %s\n", feed_names[i], ts_last_error());
            goto done;
        }
    double best = 0, total = 0;
    for (int r = 0; r < a.repeat; r++) {
        double r0 = now_s();
        if (ts_program_run(p) != TS_OK) {
            fprintf(stderr, "tessera run: %s\n", ts_last_error());
            goto done;
        }
        double dt = now_s() - r0;
        if (r == 0 && a.repeat > 1) ts_program_profile_reset(p); /* the warm-up is left out */
        best = r == 0 || dt < best ? dt : best;
        total += dt;
    }
    for (int i = 0; i < nf; i++)
        if (ts_program_fetch(p, fetch[i], &outs[i]) != TS_OK) {
            fprintf(stderr, "tessera run: %s\n", ts_last_error());
            goto done;
        }
    if (ts_safetensors_save(a.outputs, nf, fetch, (const ts_tensor *const *)outs, "{\"format\": \"pt\"}") !=
        TS_OK) {
        fprintf(stderr, "tessera run: --outputs: %s\n", ts_last_error());
        goto done;
    }

    printf("tessera run: %s (%d layers, hidden %d), batch %d x seq %d, %s on %s: build+compile %.3f s, ",
           head_name(cfg.head), cfg.num_hidden_layers, cfg.hidden_size, B, T, ts_dtype_name(a.dtype),
           a.device, t1 - t0);
    if (a.random_init) printf("random init (seed %llu), ", (unsigned long long)a.seed);
    else printf("load %.3f s, ", t2 - t1);
    if (a.repeat > 1) printf("run %.4f s (best of %d, mean %.4f s)\n", best, a.repeat, total / a.repeat);
    else printf("run %.4f s\n", best);
    printf("tessera run: wrote %s:", a.outputs);
    for (int i = 0; i < nf; i++) {
        printf(" %s [", fetch[i]);
        for (int d = 0; d < ts_tensor_ndim(outs[i]); d++)
            printf("%s%lld", d ? ", " : "", (long long)ts_tensor_shape(outs[i])[d]);
        printf("]");
    }
    printf("\n");
    if (a.profile && ts_program_profile_report(p, ts_write_stdio, stdout) != TS_OK) {
        fprintf(stderr, "tessera run: --profile: %s\n", ts_last_error());
        goto done;
    }
    rc = 0;

done:
    for (int i = 0; i < 8; i++) ts_tensor_free(outs[i]);
    for (int i = 0; i < 3; i++) ts_tensor_free(feeds[i]);
    ts_program_free(p);
    ts_graph_free(g);
    return rc;
}
