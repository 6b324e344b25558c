/*
 * test_onnx_export.c — ts_onnx_export and `tessera export` (src/onnx/export.c, cli/export.c):
 * models exported to ONNX compute what tessera computes, in ONNX Runtime and in tessera's own
 * importer.
 *  - the BERT parity fixture (tests/fixtures/bert, BertForPreTraining, PyTorch's weights) written
 *    by `tessera export --batch 3 --max-len 11`: ONNX Runtime (tools/ort_run.js, onnxruntime-node)
 *    on the fixture's inputs gives every output of `tessera run` on them within 1e-4 (max abs);
 *  - two more heads, from model directories made here with every parameter randomised (biases and
 *    LayerNorm weights too): a sequence classifier with the tanh GELU ("gelu_new") and a
 *    question-answering model with ReLU, batch 2 x 5 with padding, the same comparison;
 *  - an "op zoo" graph of every op the exporter maps (broadcasting binaries, every unary, both
 *    GELUs, transposed matmuls, reshape / transpose / slice / concat / expand / gather, the three
 *    reductions, masked softmax, log-softmax, layer norm with and without gamma / beta, where,
 *    cast, dropout; a matmul carrying a fused activation (gelu erf / tanh, relu; built by hand,
 *    as only compile-time fusion makes one); convolutions strided, padded unevenly, dilated, grouped and transposed; max
 *    and average pools; clip, hard sigmoid, hard swish) exported with ts_onnx_export: ONNX Runtime's outputs within 1e-4 of the
 *    compiled program's, and tessera's importer (ts_onnx_load + session) reads the file back to
 *    the same outputs;
 *  - errors: ops without an ONNX form are all named, backward values and bad arguments refused, an
 *    unwritable path names the file; the command's bad flags exit 2 naming the flag.
 * ONNX Runtime runs when onnxruntime-node is installed in tools/ort/node_modules (bash
 * scripts/install-deps.sh; or $TS_ORT_MODULES); without it those comparisons are skipped with a
 * message and the test exits 77 (skipped) once everything else has passed.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "ort_util.h"

#include "cli_util.h"
#include "ops/op.h"

#include <dirent.h>

#define FIXTURE_DIR TS_SOURCE_DIR "/tests/fixtures/bert"
#define ORT_RUN TS_SOURCE_DIR "/tools/ort_run.js"
#define TOL 1e-4

/* ------------------------------------------------------------------ helpers */

static const char *path_in(const char *name) {
    static char buf[8][512]; /* a few may be in use at once */
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* node tools/ort_run.js model inputs outputs; 1 when it ran, 0 when skipped (no ORT). */
static int run_ort(const char *model, const char *inputs, const char *outputs) {
    if (!tu_ort_available()) return 0; /* main says so */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' '%s' >'%s' 2>&1", ORT_RUN, model, inputs, outputs,
             path_in("ort.log"));
    int rc = system(cmd);
    char log[4096];
    read_into("ort.log", log, sizeof log);
    CHECK(rc == 0, "ort_run.js on %s failed (status %d): %s", model, rc, log);
    return rc == 0;
}

/* Every tensor `names` of file b (the reference) is in file a with the same shape, within TOL
 * (max abs). Prints the largest difference. */
static void compare_files(const char *what, const char *a_path, const char *b_path, int n, const char *const *names) {
    ts_safetensors *a = ts_safetensors_open(a_path), *b = ts_safetensors_open(b_path);
    CHECK(a && b, "%s: %s", what, ts_last_error());
    double worst = 0;
    for (int i = 0; a && b && i < n; i++) {
        ts_tensor *ta = NULL, *tb = NULL;
        CHECK_OK(ts_safetensors_get(a, names[i], &ta));
        CHECK_OK(ts_safetensors_get(b, names[i], &tb));
        if (ta && tb) {
            CHECK(tu_same_shape(ta, tb), "%s: %s has another shape or dtype", what, names[i]);
            if (tu_same_shape(ta, tb) && ts_tensor_dtype(ta) == TS_F32) {
                double d = tu_max_abs_diff_f(tu_f32(ta), tu_f32(tb), ts_tensor_numel(ta));
                CHECK(d <= TOL, "%s: %s differs by %g (max abs; tolerance %g)", what, names[i], d, TOL);
                worst = d > worst ? d : worst;
            } else if (tu_same_shape(ta, tb)) {
                CHECK(tu_bitwise_equal(ta, tb), "%s: %s (%s) differs", what, names[i],
                      ts_dtype_name(ts_tensor_dtype(ta)));
            }
        }
        ts_tensor_free(ta);
        ts_tensor_free(tb);
    }
    printf("    %s: %d outputs, max |difference| %.3g\n", what, n, worst);
    ts_safetensors_close(a);
    ts_safetensors_close(b);
}

/* ------------------------------------------------------------------ BERT through the command */

static void test_bert_fixture(void) {
    if (cli_setup("test_onnx_export")) return;
    CHECK_RAN(tessera(NULL, "export --out bert.onnx --model '%s' --batch 3 --max-len 11", FIXTURE_DIR), 0);
    CHECK(strstr(out_text, "prediction_logits [3, 11, 99]") != NULL, "export's summary: %s", out_text);
    CHECK_RAN(tessera(NULL, "run --model '%s' --inputs '%s/inputs.safetensors' --outputs ts.safetensors", FIXTURE_DIR,
                      FIXTURE_DIR), 0);
    static const char *const outs[] = {"last_hidden_state", "pooler_output", "prediction_logits",
                                       "seq_relationship_logits"};
    if (run_ort(path_in("bert.onnx"), FIXTURE_DIR "/inputs.safetensors", path_in("ort.safetensors")))
        compare_files("BertForPreTraining [3, 11]: ORT vs tessera run", path_in("ort.safetensors"),
                      path_in("ts.safetensors"), 4, outs);
    cli_cleanup("test_onnx_export");
}

/* A model directory `sub` in dir: config.json for this head and activation, model.safetensors with
 * every parameter drawn from N(0, 0.2) (LayerNorm weights 1 + that), so that no bias is zero. */
static void make_model_dir(const char *sub, ts_bert_head head, ts_bert_act act, int num_labels) {
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.vocab_size = 40, cfg.hidden_size = 24, cfg.num_hidden_layers = 2, cfg.num_attention_heads = 3;
    cfg.intermediate_size = 29, cfg.max_position_embeddings = 16, cfg.type_vocab_size = 2;
    cfg.hidden_act = act, cfg.num_labels = num_labels, cfg.head = head;
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.f;
    ts_graph *g = ts_graph_new();
    CHECK_OK(ts_bert_build(g, &cfg, head, 1, 4, NULL));
    ts_program *p = ts_compile(g, &(ts_compile_opts){.inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    tu_rng r = tu_rng_seed(7 + (uint64_t)head);
    for (int i = 0; p && i < ts_program_num_params(p); i++) {
        const char *name = ts_program_param_name(p, i);
        ts_tensor *t = NULL;
        CHECK_OK(ts_program_get_param(p, name, &t));
        int ln = strstr(name, "LayerNorm.weight") != NULL;
        for (int64_t k = 0; t && k < ts_tensor_numel(t); k++) tu_f32(t)[k] = (float)(ln + 0.2 * tu_normal(&r));
        CHECK_OK(ts_program_set_param(p, name, t));
        ts_tensor_free(t);
    }
    char d[600], path[700];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    CHECK_OK(ts_make_dirs(d));
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    if (p) CHECK_OK(ts_program_save(p, path, TS_F32));
    snprintf(path, sizeof path, "%s/config.json", d);
    char *labels[3] = {"red", "green", "blue"}; /* config.json keeps num_labels as id2label */
    ts_model_meta meta = {.lowercase = 1, .labels = labels, .nlabels = num_labels};
    CHECK_OK(ts_bert_config_save(path, &cfg, &meta));
    ts_program_free(p);
    ts_graph_free(g);
}

/* inputs.safetensors for a [rows, 5] batch: random ids and token types, the second row padded. */
static void write_bert_inputs_rows(const char *name, int rows) {
    int32_t ids[20], types[20], mask[20];
    tu_rng r = tu_rng_seed(3 + (uint64_t)rows);
    for (int i = 0; i < 5 * rows; i++) {
        ids[i] = (int32_t)tu_randint(&r, 40);
        types[i] = (int32_t)tu_randint(&r, 2);
        mask[i] = i < 5 || i >= 8; /* row 1 keeps 3 tokens */
    }
    const int64_t sh[2] = {rows, 5};
    ts_tensor *t[3] = {ts_tensor_from(TS_I32, 2, sh, ids), ts_tensor_from(TS_I32, 2, sh, types),
                       ts_tensor_from(TS_I32, 2, sh, mask)};
    const char *names[3] = {"input_ids", "token_type_ids", "attention_mask"};
    CHECK_OK(ts_safetensors_save(path_in(name), 3, names, (const ts_tensor *const *)t, NULL));
    for (int i = 0; i < 3; i++) ts_tensor_free(t[i]);
}

static void write_bert_inputs(const char *name) { write_bert_inputs_rows(name, 2); }

static void export_and_compare(const char *sub, int n, const char *const *outs) {
    /* the old spellings of --out and --max-len, kept for a release with a notice */
    CHECK_RAN(tessera(NULL, "export --onnx %s.onnx --model %s --batch 2 --seq-len 5", sub, sub), 0);
    CHECK(strstr(err_text, "--onnx is now --out") && strstr(err_text, "--seq-len is now --max-len"), "notices: %s",
          err_text);
    CHECK_RAN(tessera(NULL, "run --model %s --inputs in.safetensors --outputs %s_ts.safetensors", sub, sub), 0);
    char onnx[64], ort[64], ts[64], what[128];
    snprintf(onnx, sizeof onnx, "%s.onnx", sub);
    snprintf(ort, sizeof ort, "%s_ort.safetensors", sub);
    snprintf(ts, sizeof ts, "%s_ts.safetensors", sub);
    snprintf(what, sizeof what, "%s [2, 5]: ORT vs tessera run", sub);
    if (run_ort(path_in(onnx), path_in("in.safetensors"), path_in(ort)))
        compare_files(what, path_in(ort), path_in(ts), n, outs);
}

static void test_bert_heads(void) {
    if (cli_setup("test_onnx_export")) return;
    write_bert_inputs("in.safetensors");
    make_model_dir("cls", TS_BERT_SEQ_CLASSIFICATION, TS_BERT_GELU_TANH, 3);
    make_model_dir("qa", TS_BERT_QUESTION_ANSWERING, TS_BERT_RELU, 2);
    static const char *const cls_outs[] = {"last_hidden_state", "pooler_output", "logits"};
    static const char *const qa_outs[] = {"last_hidden_state", "start_logits", "end_logits"};
    export_and_compare("cls", 3, cls_outs);
    export_and_compare("qa", 3, qa_outs);
    /* exported at batch 2 with a symbolic batch and int64 inputs (as Hugging Face's exports), run by
     * ORT at batches 1, 2 and 3 beside tessera run at each */
    CHECK_RAN(tessera(NULL, "export --out dyn.onnx --model cls --batch 2 --max-len 5 --dynamic-batch --int64-inputs"),
              0);
    CHECK(strstr(out_text, "int64 [batch, 5]") && strstr(out_text, "logits [batch, 3]"), "export's summary: %s",
          out_text);
    ts_onnx *m = ts_onnx_load(path_in("dyn.onnx"));
    int64_t sh[TS_MAX_DIMS];
    ts_dtype dt = TS_F32;
    int et = 0;
    CHECK(m && ts_onnx_input_shape(m, 0, &dt, sh) == 2 && dt == TS_I64 && sh[0] == -1 && sh[1] == 5,
          "the input declared int64 [batch, 5]: %s", m ? ts_dtype_name(dt) : ts_last_error());
    CHECK(m && ts_onnx_output_shape(m, ts_onnx_num_outputs(m) - 1, &et, sh) == 2 && et == 1 && sh[0] == -1 &&
              sh[1] == 3, "logits declared float [batch, 3]: type %d, [%lld, %lld]", et, (long long)sh[0],
          (long long)sh[1]);
    ts_onnx_free(m);
    for (int rows = 1; rows <= 3; rows++) {
        char in[32], ts[32], ort[32], what[96];
        snprintf(in, sizeof in, "in%d.safetensors", rows);
        snprintf(ts, sizeof ts, "dyn%d_ts.safetensors", rows);
        snprintf(ort, sizeof ort, "dyn%d_ort.safetensors", rows);
        snprintf(what, sizeof what, "cls, batch symbolic, [%d, 5]: ORT vs tessera run", rows);
        write_bert_inputs_rows(in, rows);
        CHECK_RAN(tessera(NULL, "run --model cls --inputs %s --outputs %s", in, ts), 0);
        if (run_ort(path_in("dyn.onnx"), path_in(in), path_in(ort))) compare_files(what, path_in(ort), path_in(ts), 3,
                                                                                 cls_outs);
    }
    cli_cleanup("test_onnx_export");
}

/* ts_onnx_export_with's dynamic batch refuses what would not keep the batch first, naming it. */
static void test_dynamic_batch_refused(void) {
    ts_onnx_export_opts o = {.struct_size = sizeof o, .dynamic_batch = 1};
    for (int k = 0; k < 2; k++) {
        ts_graph *g = ts_graph_new();
        ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){2, 3});
        ts_value y = k == 0 ? ts_reduce_sum(g, x, 1, (int[]){0}, 0) : ts_reshape(g, x, 2, (int64_t[]){3, 2});
        ts_name(g, y, "y");
        const char *fetch[1] = {"y"};
        ts_program *p = ts_compile(g, &(ts_compile_opts){.inference = 1, .nfetch = 1, .fetches = fetch});
        CHECK(p != NULL, "compile: %s", ts_last_error());
        ts_status st = p ? ts_onnx_export_with(g, p, 1, &y, &o, path_in("refused.onnx")) : TS_OK;
        const char *want = k == 0 ? "has no first dim of the batch" : "does not keep the batch first";
        CHECK(p && st != TS_OK && strstr(ts_last_error(), want), "case %d: %d %s (want \"%s\")", k, st, ts_last_error(),
              want);
        ts_program_free(p);
        ts_graph_free(g);
    }
    CHECK(ts_onnx_export_with(NULL, NULL, 0, NULL, NULL, "x.onnx") == TS_ERR_ARG, "NULL opts");
}

/* ------------------------------------------------------------------ every mapped op */

enum { NZOO = 48 };
typedef struct zoo {
    ts_graph *g;
    ts_value outs[NZOO];
    const char *names[NZOO];
    int n;
} zoo;

static void out(zoo *z, const char *name, ts_value v) {
    z->names[z->n] = name;
    z->outs[z->n++] = ts_name(z->g, v, name);
}

/* x [2, 3, 4], y [4], ids i32 [2, 3] in 0..6, cond u8 [2, 3, 4], mask [2, 1, 4], img [2, 3, 9, 8]. */
static void build_zoo(zoo *z) {
    ts_graph *g = z->g = ts_graph_new();
    z->n = 0;
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 3, 4)), y = ts_input(g, "y", TS_F32, DIMS(4));
    ts_value ids = ts_input(g, "ids", TS_I32, DIMS(2, 3)), cond = ts_input(g, "cond", TS_U8, DIMS(2, 3, 4));
    ts_value mask = ts_input(g, "mask", TS_F32, DIMS(2, 1, 4));
    ts_value img = ts_input(g, "img", TS_F32, DIMS(2, 3, 9, 8));
    ts_value wc = ts_param(g, "wc", TS_F32, DIMS(4, 3, 3, 3), ts_init_zeros());
    ts_value bc = ts_param(g, "bc", TS_F32, DIMS(4), ts_init_zeros());
    ts_value wg = ts_param(g, "wg", TS_F32, DIMS(6, 1, 3, 2), ts_init_zeros());
    ts_value wt = ts_param(g, "wt", TS_F32, DIMS(3, 2, 3, 3), ts_init_zeros());
    ts_value bt = ts_param(g, "bt", TS_F32, DIMS(2), ts_init_zeros());
    ts_value w = ts_param(g, "w", TS_F32, DIMS(5, 4), ts_init_zeros());
    ts_value wb = ts_param(g, "wb", TS_F32, DIMS(5), ts_init_zeros());
    ts_value table = ts_param(g, "table", TS_F32, DIMS(7, 4), ts_init_zeros());
    ts_value gamma = ts_param(g, "gamma", TS_F32, DIMS(4), ts_init_zeros());
    ts_value beta = ts_param(g, "beta", TS_F32, DIMS(4), ts_init_zeros());
    ts_tensor *ct = ts_tensor_new(TS_F32, DIMS(1, 1, 4));
    for (int i = 0; i < 4; i++) tu_f32(ct)[i] = 0.25f * (float)i - 0.3f;
    ts_value c = ts_constant(g, ct);
    ts_tensor_free(ct);
    ts_value pos = ts_scale(g, ts_exp(g, ts_scale(g, x, 0.5f, 0.f)), 1.f, 0.5f); /* > 0 */

    out(z, "add", ts_add(g, x, y));
    out(z, "sub", ts_sub(g, x, c));
    out(z, "mul", ts_mul(g, x, y));
    out(z, "div", ts_div(g, x, pos));
    out(z, "pow", ts_pow(g, pos, ts_scalar(g, 1.5f)));
    out(z, "scale", ts_scale(g, x, -1.25f, 0.75f));
    out(z, "scale_mul", ts_scale(g, x, 3.f, 0.f));
    out(z, "sqrt", ts_sqrt(g, pos));
    out(z, "log", ts_log(g, pos));
    out(z, "relu", ts_relu(g, x));
    out(z, "tanh", ts_tanh(g, x));
    out(z, "sigmoid", ts_sigmoid(g, x));
    out(z, "gelu", ts_gelu(g, x, 0));
    out(z, "gelu_tanh", ts_gelu(g, x, 1));
    out(z, "linear", ts_matmul(g, x, w, 0, 1));                          /* [2, 3, 5] */
    out(z, "gram", ts_matmul(g, x, x, 1, 0));                            /* [2, 4, 4] */
    out(z, "outer", ts_matmul(g, x, ts_transpose(g, x, NULL), 0, 0));    /* [2, 3, 3] */
    static const char *const act_names[4] = {NULL, "linear_gelu", "linear_gelu_tanh", "linear_relu"};
    for (int act = 1; act <= 3; act++) { /* act(alpha x w^T + wb), alpha 0.5 for the first (ops/matmul.c) */
        ts_attrs at = {0};
        at.i[1] = 1;
        at.i[2] = act;
        at.ni = 3;
        at.f[0] = act == 1 ? 0.5f : 0.f;
        out(z, act_names[act], ts_node_add(g, TS_OP_MATMUL, 3, (int[]){x, w, wb}, &at, NULL)); /* [2, 3, 5] */
    }
    { /* a bf16 product written out in f32 (i[3] = 1, as fusion rule 5 makes it) with an f32 bias */
        ts_attrs at = {0};
        at.i[1] = 1;
        at.i[3] = 1;
        at.ni = 4;
        int in[3] = {ts_cast(g, x, TS_BF16), ts_cast(g, w, TS_BF16), wb};
        out(z, "linear_bf16_f32", ts_node_add(g, TS_OP_MATMUL, 3, in, &at, NULL)); /* [2, 3, 5] f32 */
    }
    out(z, "reshape", ts_reshape(g, x, 2, (int64_t[]){6, -1}));
    out(z, "transpose", ts_transpose(g, x, (int[]){2, 0, 1}));
    out(z, "concat", ts_concat(g, 2, (ts_value[]){x, ts_slice(g, x, 2, 1, 3)}, 2));
    out(z, "expand", ts_expand(g, y, 3, (int64_t[]){2, 3, 4}));
    out(z, "gather", ts_gather(g, table, ids));
    out(z, "sum", ts_reduce_sum(g, x, 1, (int[]){1}, 0));
    out(z, "mean", ts_reduce_mean(g, x, 2, (int[]){0, 2}, 1));
    out(z, "max", ts_reduce_max(g, x, 0, NULL, 0));
    out(z, "softmax", ts_softmax(g, x, mask));
    out(z, "log_softmax", ts_log_softmax(g, x));
    out(z, "layer_norm", ts_layer_norm(g, x, gamma, beta, 1e-5f));
    out(z, "layer_norm_bare", ts_layer_norm(g, x, TS_NONE, TS_NONE, 1e-5f));
    out(z, "where", ts_where(g, cond, x, ts_scalar(g, -2.f)));
    out(z, "cast", ts_cast(g, ids, TS_F32));
    out(z, "dropout", ts_dropout(g, ts_exp(g, x), 0.5f));
    ts_conv_opts strided = {.stride = {2, 1}, .pad = {1, 0, 2, 1}};
    out(z, "conv", ts_conv2d(g, img, wc, bc, &strided));
    ts_conv_opts grouped = {.pad = {2, 1, 2, 1}, .dilation = {2, 1}, .groups = 3};
    out(z, "conv_grouped", ts_conv2d(g, img, wg, TS_NONE, &grouped));
    ts_conv_opts up = {.stride = {2, 2}, .pad = {1, 1, 1, 1}};
    out(z, "conv_transpose", ts_conv_transpose2d(g, img, wt, bt, &up, (int[]){1, 0}));
    ts_pool_opts mp = {.kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1, 1, 1}};
    out(z, "max_pool", ts_max_pool2d(g, img, &mp));
    ts_pool_opts mpd = {.kernel = {2, 2}, .stride = {1, 2}, .dilation = {2, 1}};
    out(z, "max_pool_dilated", ts_max_pool2d(g, img, &mpd));
    ts_pool_opts ap = {.kernel = {3, 2}, .stride = {2, 2}, .pad = {1, 1, 1, 0}};
    out(z, "avg_pool", ts_avg_pool2d(g, img, &ap));
    ap.count_include_pad = 1;
    out(z, "avg_pool_pad", ts_avg_pool2d(g, img, &ap));
    out(z, "clip", ts_clip(g, x, -0.5f, 0.7f));
    out(z, "clip_above", ts_clip(g, x, -INFINITY, 0.5f));
    out(z, "hard_sigmoid", ts_hard_sigmoid(g, x, 0.3f, 0.4f));
    out(z, "hard_swish", ts_hard_swish(g, ts_scale(g, x, 2.f, 0.f)));
    CHECK_OK(ts_graph_status(g));
}

/* The zoo compiled for inference, its parameters random, fed from inputs file in_path; writes
 * its outputs to out_path. Returns the program. */
static ts_program *run_zoo(zoo *z, const char *in_path, const char *out_path) {
    ts_program *p = ts_compile(z->g, &(ts_compile_opts){.nfetch = z->n, .fetches = z->names, .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) return NULL;
    tu_rng r = tu_rng_seed(11);
    for (int i = 0; i < ts_program_num_params(p); i++) {
        ts_tensor *t = NULL;
        const char *name = ts_program_param_name(p, i);
        CHECK_OK(ts_program_get_param(p, name, &t));
        for (int64_t k = 0; t && k < ts_tensor_numel(t); k++) tu_f32(t)[k] = (float)tu_uniform(&r, -1, 1);
        CHECK_OK(ts_program_set_param(p, name, t));
        ts_tensor_free(t);
    }
    ts_safetensors *in = ts_safetensors_open(in_path);
    static const char *const feeds[] = {"x", "y", "ids", "cond", "mask", "img"};
    for (int i = 0; in && i < 6; i++) {
        ts_tensor *t = NULL;
        CHECK_OK(ts_safetensors_get(in, feeds[i], &t));
        CHECK_OK(ts_program_feed(p, feeds[i], t));
        ts_tensor_free(t);
    }
    ts_safetensors_close(in);
    CHECK_OK(ts_program_run(p));
    ts_tensor *res[NZOO] = {0};
    for (int i = 0; i < z->n; i++) res[i] = TU_FETCH(p, z->names[i]);
    CHECK_OK(ts_safetensors_save(out_path, z->n, z->names, (const ts_tensor *const *)res, NULL));
    for (int i = 0; i < z->n; i++) ts_tensor_free(res[i]);
    return p;
}

static void write_zoo_inputs(const char *path) {
    tu_rng r = tu_rng_seed(5);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(2, 3, 4), -2, 2), *y = tu_rand_tensor(&r, DIMS(4), -1, 1);
    ts_tensor *mask = tu_rand_tensor(&r, DIMS(2, 1, 4), -3, 0), *img = tu_rand_tensor(&r, DIMS(2, 3, 9, 8), -1, 1);
    ts_tensor *ids = ts_tensor_new(TS_I32, DIMS(2, 3)), *cond = ts_tensor_new(TS_U8, DIMS(2, 3, 4));
    for (int i = 0; i < 6; i++) ((int32_t *)ts_tensor_data(ids))[i] = (int32_t)tu_randint(&r, 7);
    for (int i = 0; i < 24; i++) ((uint8_t *)ts_tensor_data(cond))[i] = (uint8_t)tu_randint(&r, 2);
    const char *names[6] = {"x", "y", "ids", "cond", "mask", "img"};
    const ts_tensor *t[6] = {x, y, ids, cond, mask, img};
    CHECK_OK(ts_safetensors_save(path, 6, names, t, NULL));
    for (int i = 0; i < 6; i++) ts_tensor_free((ts_tensor *)t[i]);
}

static void test_op_zoo(void) {
    if (cli_setup("test_onnx_export")) return;
    zoo z;
    build_zoo(&z);
    write_zoo_inputs(path_in("in.safetensors"));
    ts_program *p = run_zoo(&z, path_in("in.safetensors"), path_in("ts.safetensors"));
    if (p) CHECK_OK(ts_onnx_export(z.g, p, z.n, z.outs, path_in("zoo.onnx")));
    if (p && run_ort(path_in("zoo.onnx"), path_in("in.safetensors"), path_in("ort.safetensors")))
        compare_files("op zoo: ORT vs tessera", path_in("ort.safetensors"), path_in("ts.safetensors"), z.n, z.names);

    /* tessera's importer reads the exported file back: same inputs, outputs and values */
    ts_onnx *m = p ? ts_onnx_load(path_in("zoo.onnx")) : NULL;
    CHECK(m != NULL, "ts_onnx_load of the exported file: %s", ts_last_error());
    if (m) {
        CHECK(ts_onnx_opset(m) == 17, "opset %d", ts_onnx_opset(m));
        CHECK(ts_onnx_num_inputs(m) == 6 && ts_onnx_num_outputs(m) == z.n, "%d inputs, %d outputs",
              ts_onnx_num_inputs(m), ts_onnx_num_outputs(m));
        ts_onnx_session *s = ts_onnx_session_new(m, NULL);
        CHECK(s != NULL, "session: %s", ts_last_error());
        ts_safetensors *in = ts_safetensors_open(path_in("in.safetensors"));
        ts_tensor *feeds[6] = {0}, *res[NZOO] = {0};
        for (int i = 0; in && i < ts_onnx_num_inputs(m) && i < 6; i++)
            CHECK_OK(ts_safetensors_get(in, ts_onnx_input_name(m, i), &feeds[i]));
        if (s && in && CHECK_OK(ts_onnx_session_run(s, (const ts_tensor *const *)feeds, res)) == TS_OK) {
            for (int j = 0; j < ts_onnx_num_outputs(m) && j < NZOO; j++)
                CHECK(strcmp(ts_onnx_output_name(m, j), z.names[j]) == 0, "output %d is '%s'", j,
                      ts_onnx_output_name(m, j));
            CHECK_OK(ts_safetensors_save(path_in("imp.safetensors"), z.n, z.names, (const ts_tensor *const *)res, NULL));
            compare_files("op zoo: tessera's importer vs tessera", path_in("imp.safetensors"), path_in("ts.safetensors"),
                          z.n, z.names);
        }
        for (int i = 0; i < 6; i++) ts_tensor_free(feeds[i]);
        for (int j = 0; j < NZOO; j++) ts_tensor_free(res[j]);
        ts_safetensors_close(in);
        ts_onnx_session_free(s);
        ts_onnx_free(m);
    }
    ts_program_free(p);
    ts_graph_free(z.g);
    cli_cleanup("test_onnx_export");
}

/* ------------------------------------------------------------------ errors */

static void test_errors(void) {
    if (cli_setup("test_onnx_export")) return;
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 3));
    ts_value labels = ts_input(g, "labels", TS_I32, DIMS(4));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(3, 3), ts_init_normal(0.5f));
    ts_value h = ts_name(g, ts_matmul(g, x, w, 0, 0), "h");
    ts_value loss = ts_name(g, ts_cross_entropy(g, h, labels, -1), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_value grad = ts_grad(g, w);
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("h", "loss")});
    CHECK(p != NULL, "compile: %s", ts_last_error());

    CHECK_OK(ts_onnx_export(g, p, 1, &h, path_in("h.onnx")));
    CHECK_OK(ts_onnx_export(g, p, 1, &h, path_in("h.onnx"))); /* over an existing file */
    CHECK_STATUS(ts_onnx_export(g, p, 1, &loss, path_in("loss.onnx")), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG("cross_entropy", "'loss'", "ONNX");
    CHECK(access(path_in("loss.onnx"), F_OK) != 0, "a refused export left a file behind");
    CHECK_STATUS(ts_onnx_export(g, p, 1, &grad, path_in("grad.onnx")), TS_ERR_ARG);
    CHECK_ERRMSG("backward");
    CHECK_STATUS(ts_onnx_export(g, p, 2, (ts_value[]){h, h}, path_in("twice.onnx")), TS_ERR_ARG);
    CHECK_ERRMSG("twice");
    CHECK_STATUS(ts_onnx_export(g, p, 1, &w, path_in("w.onnx")), TS_ERR_ARG);
    CHECK_ERRMSG("parameter");
    CHECK_STATUS(ts_onnx_export(g, p, 1, (ts_value[]){12345}, path_in("bad.onnx")), TS_ERR_ARG);
    CHECK_STATUS(ts_onnx_export(NULL, p, 1, &h, path_in("null.onnx")), TS_ERR_ARG);
    CHECK_STATUS(ts_onnx_export(g, NULL, 1, &h, path_in("null.onnx")), TS_ERR_ARG);
    CHECK_STATUS(ts_onnx_export(g, p, 0, &h, path_in("none.onnx")), TS_ERR_ARG);
    CHECK_STATUS(ts_onnx_export(g, p, 1, &h, "/nonexistent-dir/h.onnx"), TS_ERR_IO);
    CHECK_ERRMSG("/nonexistent-dir/h.onnx");

    /* a program lacking a parameter the graph reads (compiled from another graph) */
    ts_graph *g2 = ts_graph_new();
    ts_value x2 = ts_input(g2, "x", TS_F32, DIMS(4, 3));
    ts_value w2 = ts_param(g2, "other", TS_F32, DIMS(3, 3), ts_init_ones());
    ts_value h2 = ts_name(g2, ts_matmul(g2, x2, w2, 0, 0), "h");
    CHECK_STATUS(ts_onnx_export(g2, p, 1, &h2, path_in("other.onnx")), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("other");
    ts_graph_free(g2);
    ts_program_free(p);
    ts_graph_free(g);

    DIR *d = opendir(dir); /* no temporary file left behind by the exports above */
    for (struct dirent *ent; d && (ent = readdir(d));)
        CHECK(!strstr(ent->d_name, ".tmp"), "left behind: %s", ent->d_name);
    if (d) closedir(d);

    CHECK_FAILS(tessera(NULL, "export --model '%s'", FIXTURE_DIR), "--out");
    CHECK_FAILS(tessera(NULL, "export --out a.onnx"), "--model");
    CHECK_FAILS(tessera(NULL, "export --out a.onnx --model '%s' --max-len 65", FIXTURE_DIR), "max_position_embeddings");
    CHECK_FAILS(tessera(NULL, "export --out a.onnx --model '%s' --batch 0", FIXTURE_DIR), "batch");
    CHECK_FAILS(tessera(NULL, "export --out a.onnx --model nowhere"), "nowhere");
    CHECK(access(path_in("a.onnx"), F_OK) != 0, "a failed export wrote a.onnx");
    CHECK_RAN(tessera(NULL, "export --help"), 0);
    CHECK(strstr(out_text, "--max-len") != NULL, "help: %s", out_text);
    cli_cleanup("test_onnx_export");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (access(TS_CLI, X_OK) != 0) tu_skip("%s is not built", TS_CLI);
    if (!tu_ort_available())
        tu_skip_part("the ONNX Runtime comparisons: onnxruntime-node is not installed in tools/ort/node_modules "
                     "(bash scripts/install-deps.sh installs it)");
    RUN(test_bert_fixture);
    RUN(test_bert_heads);
    RUN(test_dynamic_batch_refused);
    RUN(test_op_zoo);
    RUN(test_errors);
    return tu_finish("test_onnx_export"); /* 77 (skipped) when the acceptance check did not run */
}
