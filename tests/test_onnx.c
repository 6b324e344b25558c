/*
 * test_onnx.c — the ONNX importer's API on tessera's own test models (tests/fixtures/onnx_import,
 * onnx_api; written with expected outputs by tools/make_onnx_import_fixtures.py):
 *  - sessions: one program per set of input shapes (a dynamic batch through shapes computed at
 *    import), more shapes than the cache holds, inputs of the wrong dtype or shape refused by name;
 *  - import for training: float initializers become parameters named as in the file (a frozen
 *    list keeps some constants), ts_onnx_load_params fills them, and the unfolded graph
 *    (BatchNormalization in the graph, not folded into the Conv) computes what the folded
 *    inference session does; ts_onnx_save_with_params writes changed parameters that a fresh
 *    load then uses;
 *  - refusals collected over the whole graph: every refused node named once, the nodes after a
 *    refused one not reported;
 *  - graph outputs that are an input or an initializer themselves;
 *  - a file nesting graphs inside attributes 100000 levels deep, refused before parsing;
 *  - the op table's listing; the registry registers each op type once (and its duplicate check
 *    finds one in a constructed list).
 */
#include "test_util.h"

#include "onnx/onnx_testing.h"

#define FIX TS_SOURCE_DIR "/tests/fixtures/onnx_import"
#define API TS_SOURCE_DIR "/tests/fixtures/onnx_api"

static ts_tensor *pb(const char *model, const char *file) {
    char path[512];
    snprintf(path, sizeof path, FIX "/%s/test_data_set_0/%s", model, file);
    ts_tensor *t = ts_onnx_tensor_file(path, NULL, 0);
    CHECK(t != NULL, "%s", ts_last_error());
    return t;
}

static ts_onnx *load(const char *model) {
    char path[512];
    snprintf(path, sizeof path, FIX "/%s/model.onnx", model);
    ts_onnx *m = ts_onnx_load(path);
    CHECK(m != NULL, "%s", ts_last_error());
    return m;
}

/* max |a - b| / (1e-4 + |b|) over the elements; 1e30 for tensors of different sizes */
static double rel_diff(const ts_tensor *a, const ts_tensor *b) {
    if (!a || !b || ts_tensor_numel(a) != ts_tensor_numel(b)) return 1e30;
    const float *x = ts_tensor_data((ts_tensor *)a), *y = ts_tensor_data((ts_tensor *)b);
    double worst = 0;
    for (int64_t i = 0; i < ts_tensor_numel(a); i++) {
        double d = fabs((double)x[i] - y[i]) / (1e-4 + fabs((double)y[i]));
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

static void test_session_shapes(void) {
    ts_onnx *m = load("fold_reshape");
    if (!m) return;
    int64_t sh[TS_MAX_DIMS];
    ts_dtype dt;
    CHECK(ts_onnx_input_shape(m, 0, &dt, sh) == 3 && sh[0] == -1 && sh[1] == 3 && sh[2] == 4 && dt == TS_F32,
          "declared shape [%lld, %lld, %lld]", (long long)sh[0], (long long)sh[1], (long long)sh[2]);
    int et = -1;
    sh[0] = sh[1] = 0;
    CHECK(ts_onnx_output_shape(m, 0, &et, sh) == 2 && sh[0] == -1 && sh[1] == 12 && et == 1,
          "declared output: type %d, [%lld, %lld] (want 1, [-1, 12])", et, (long long)sh[0], (long long)sh[1]);
    CHECK(ts_onnx_output_shape(m, 1, &et, sh) == -1 && et == 0 && ts_onnx_output_shape(NULL, 0, NULL, NULL) == -1,
          "a bad output index");
    ts_onnx_session *s = ts_onnx_session_new(m, &(ts_compile_opts){.num_threads = 1});
    CHECK(s != NULL, "%s", ts_last_error());
    /* batches 1..10 and 1 again: ten shapes through a cache of eight */
    for (int r = 0; r < 11 && s; r++) {
        int64_t N = r < 10 ? r + 1 : 1, xs[3] = {N, 3, 4};
        ts_tensor *x = ts_tensor_new(TS_F32, 3, xs), *y = NULL;
        for (int64_t i = 0; i < ts_tensor_numel(x); i++) ((float *)ts_tensor_data(x))[i] = (float)(i * 3 % 17) - 8.f;
        CHECK_OK(ts_onnx_session_run(s, (const ts_tensor *const *)&x, &y));
        CHECK(y && ts_tensor_ndim(y) == 2 && ts_tensor_shape(y)[0] == N && ts_tensor_shape(y)[1] == 12,
              "batch %lld: output of rank %d", (long long)N, y ? ts_tensor_ndim(y) : -1);
        if (y) CHECK(!memcmp(ts_tensor_data(y), ts_tensor_data(x), ts_tensor_nbytes(x)), "batch %lld: values moved", (long long)N);
        ts_tensor_free(x);
        ts_tensor_free(y);
    }
    /* wrong dtype, wrong static dim: refused before anything is built, naming the input */
    ts_tensor *bad = ts_tensor_new(TS_I32, 3, (int64_t[]){2, 3, 4}), *y = NULL;
    CHECK_STATUS(ts_onnx_session_run(s, (const ts_tensor *const *)&bad, &y), TS_ERR_DTYPE);
    CHECK(strstr(ts_last_error(), "input 'x' is i32; the model declares f32"), "message: %s", ts_last_error());
    ts_tensor_free(bad);
    bad = ts_tensor_new(TS_F32, 3, (int64_t[]){2, 5, 4});
    CHECK_STATUS(ts_onnx_session_run(s, (const ts_tensor *const *)&bad, &y), TS_ERR_SHAPE);
    CHECK(strstr(ts_last_error(), "input 'x' has shape [2, 5, 4]; the model declares [-1, 3, 4]"), "message: %s", ts_last_error());
    ts_tensor_free(bad);
    /* importing without shapes: the dynamic dim is refused, naming the input */
    ts_graph *g = ts_graph_new();
    CHECK_STATUS(ts_onnx_import(m, g, NULL, NULL, NULL, NULL), TS_ERR_SHAPE);
    CHECK(strstr(ts_last_error(), "input 'x' has shape [-1, 3, 4]: dim 0 is dynamic"), "message: %s", ts_last_error());
    ts_graph_free(g);
    ts_onnx_session_free(s);
    ts_onnx_free(m);
}

/* A Reshape whose target shape is a graph input (ONNX's test_reshape_extended_dims): the session
 * builds it with the shape's value known and keys its programs on that value, so a second shape
 * value gets a second program, and the first value its first program again. */
static void test_session_shape_values(void) {
    const char *path = "/usr/share/libonnx-testdata/data/node/test_reshape_extended_dims/model.onnx";
    if (access(path, R_OK) != 0) {
        tu_skip_part("%s is missing (apt-get install libonnx-testdata)", path);
        return;
    }
    ts_onnx *m = ts_onnx_load(path);
    CHECK(m != NULL, "%s", ts_last_error());
    ts_onnx_session *s = m ? ts_onnx_session_new(m, &(ts_compile_opts){.num_threads = 1}) : NULL;
    ts_tensor *x = ts_tensor_new(TS_F32, 3, (int64_t[]){2, 3, 4});
    for (int i = 0; i < 24; i++) ((float *)ts_tensor_data(x))[i] = (float)i;
    static const int64_t targets[3][4] = {{3, 2, 2, 2}, {4, 6, 1, 1}, {3, 2, 2, 2}};
    for (int r = 0; r < 3 && s; r++) {
        ts_tensor *shape = ts_tensor_from(TS_I64, 1, (int64_t[]){4}, targets[r]), *y = NULL;
        const ts_tensor *in[2] = {x, shape};
        CHECK_OK(ts_onnx_session_run(s, in, &y));
        CHECK(y && ts_tensor_ndim(y) == 4 && !memcmp(ts_tensor_shape(y), targets[r], sizeof targets[r]),
              "run %d: output of rank %d", r, y ? ts_tensor_ndim(y) : -1);
        if (y) CHECK(!memcmp(ts_tensor_data(y), ts_tensor_data(x), ts_tensor_nbytes(x)), "run %d: values moved", r);
        ts_tensor_free(shape);
        ts_tensor_free(y);
    }
    ts_tensor_free(x);
    ts_onnx_session_free(s);
    ts_onnx_free(m);
}

/* Every fixture through a session matches its expected output. */
static void test_fixture_sessions(void) {
    static const char *const models[] = {"fold_reshape", "conv_bn", "attention", "opset9_rec", "opset11_det"};
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        ts_onnx *m = load(models[k]);
        ts_tensor *x = pb(models[k], "input_0.pb"), *want = pb(models[k], "output_0.pb"), *y = NULL;
        ts_onnx_session *s = m ? ts_onnx_session_new(m, NULL) : NULL;
        if (s && x) CHECK_OK(ts_onnx_session_run(s, (const ts_tensor *const *)&x, &y));
        CHECK(rel_diff(y, want) < 1e-3, "%s: output differs from numpy's by %g (relative)", models[k], rel_diff(y, want));
        ts_tensor_free(x);
        ts_tensor_free(want);
        ts_tensor_free(y);
        ts_onnx_session_free(s);
        ts_onnx_free(m);
    }
}

static void test_trainable_and_save(void) {
    ts_onnx *m = load("conv_bn");
    ts_tensor *x = pb("conv_bn", "input_0.pb"), *want = pb("conv_bn", "output_0.pb");
    if (!m || !x || !want) goto done;
    /* the statistics stay constants (frozen, one by name and one by prefix); the rest are parameters */
    const char *frozen[] = {"mu", "va*"};
    ts_onnx_import_opts o = {.trainable = 1, .frozen = frozen, .nfrozen = 2};
    ts_graph *g = ts_graph_new();
    ts_value out;
    CHECK_OK(ts_onnx_import(m, g, (int[]){4}, (const int64_t *const[]){ts_tensor_shape(x)}, &o, &out));
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"y"}, .inference = 1});
    ts_graph_free(g);
    CHECK(p != NULL, "%s", ts_last_error());
    if (!p) goto done;
    CHECK(ts_program_num_params(p) == 6, "%d parameters, want w b g be fc fcb", ts_program_num_params(p));
    for (int i = 0; i < ts_program_num_params(p); i++)
        CHECK(strcmp(ts_program_param_name(p, i), "mu") && strcmp(ts_program_param_name(p, i), "var"),
              "frozen initializer %s became a parameter", ts_program_param_name(p, i));
    CHECK_OK(ts_onnx_load_params(m, p));
    ts_tensor *y = NULL;
    CHECK_OK(ts_program_feed(p, "x", x));
    CHECK_OK(ts_program_run(p));
    CHECK_OK(ts_program_fetch(p, "y", &y));
    CHECK(rel_diff(y, want) < 1e-3, "unfolded trainable graph differs from numpy's by %g", rel_diff(y, want));
    ts_tensor_free(y);
    y = NULL;
    /* without a frozen list the statistics stay constants all the same: they are buffers */
    ts_graph *g2 = ts_graph_new();
    CHECK_OK(ts_onnx_import(m, g2, (int[]){4}, (const int64_t *const[]){ts_tensor_shape(x)},
                            &(ts_onnx_import_opts){.trainable = 1}, NULL));
    ts_program *p2 = ts_compile(g2, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"y"}, .inference = 1});
    CHECK(p2 && ts_program_num_params(p2) == 6, "%d parameters without a frozen list, want 6",
          p2 ? ts_program_num_params(p2) : -1);
    ts_program_free(p2);
    ts_graph_free(g2);

    /* change the last bias, save, load the written file: its session computes the new output */
    ts_tensor *fcb = NULL;
    CHECK_OK(ts_program_get_param(p, "fcb", &fcb));
    for (int i = 0; fcb && i < 4; i++) ((float *)ts_tensor_data(fcb))[i] += 10.f;
    if (fcb) CHECK_OK(ts_program_set_param(p, "fcb", fcb));
    CHECK_OK(ts_program_run(p));
    CHECK_OK(ts_program_fetch(p, "y", &y));
    char path[64] = "/tmp/ts_onnx_save_XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    CHECK_OK(ts_onnx_save_with_params(m, p, path));
    ts_onnx *m2 = ts_onnx_load(path);
    CHECK(m2 != NULL, "%s", ts_last_error());
    ts_onnx_session *s = m2 ? ts_onnx_session_new(m2, NULL) : NULL;
    ts_tensor *y2 = NULL;
    if (s) CHECK_OK(ts_onnx_session_run(s, (const ts_tensor *const *)&x, &y2));
    CHECK(rel_diff(y2, y) < 1e-4, "the saved model computes %g away from the program", rel_diff(y2, y));
    CHECK(rel_diff(y2, want) > 1, "the saved model still has the old bias");
    ts_onnx_session_free(s);
    ts_onnx_free(m2);
    unlink(path);
    ts_tensor_free(y);
    ts_tensor_free(y2);
    ts_tensor_free(fcb);
    ts_program_free(p);
done:
    ts_tensor_free(x);
    ts_tensor_free(want);
    ts_onnx_free(m);
}

static void test_refusals(void) {
    ts_onnx *m = ts_onnx_load(API "/refusals.onnx");
    CHECK(m != NULL, "%s", ts_last_error());
    if (!m) return;
    ts_graph *g = ts_graph_new();
    ts_status s = ts_onnx_import(m, g, NULL, NULL, NULL, NULL);
    const char *e = ts_last_error();
    CHECK(s != TS_OK, "imported a model with three bad nodes");
    CHECK(strstr(e, "3 problems importing"), "message: %s", e);
    CHECK(strstr(e, "node 'r1' (Relu): attribute 'foo' is not supported"), "message: %s", e);
    CHECK(strstr(e, "node 'ln' (LayerNormalization): stash_type other than 1"), "message: %s", e);
    CHECK(strstr(e, "node 'tr' (Transpose): perm is not a permutation"), "message: %s", e);
    CHECK(!strstr(e, "after_r1") && !strstr(e, "sum"), "a node after a refused one is reported: %s", e);
    ts_graph_free(g);
    ts_onnx_free(m);
}

/* A Split node with no outputs (found by fuzz/fuzz_onnx: its equal split divided by zero) is an
 * invalid model, said so by name. */
static void test_split_without_outputs(void) {
    ts_onnx *m = ts_onnx_load(API "/split_no_outputs.onnx");
    CHECK(m != NULL, "%s", ts_last_error());
    if (!m) return;
    ts_graph *g = ts_graph_new();
    ts_status s = ts_onnx_import(m, g, NULL, NULL, NULL, NULL);
    CHECK(s != TS_OK && strstr(ts_last_error(), "node 'sp' (Split): no outputs to split into"), "import: %s, %s",
          ts_status_name(s), ts_last_error());
    ts_graph_free(g);
    ts_onnx_free(m);
}

static void test_passthrough_outputs(void) {
    ts_onnx *m = ts_onnx_load(API "/passthrough.onnx");
    CHECK(m != NULL, "%s", ts_last_error());
    if (!m) return;
    CHECK(ts_onnx_num_outputs(m) == 3 && !strcmp(ts_onnx_output_name(m, 1), "x") && !strcmp(ts_onnx_output_name(m, 2), "w"),
          "outputs listed wrongly");
    ts_onnx_session *s = ts_onnx_session_new(m, NULL);
    ts_tensor *x = ts_tensor_from(TS_F32, 2, (int64_t[]){2, 3}, (float[]){-1, 2, -3, 4, -5, 6}), *out[3] = {0};
    CHECK_OK(ts_onnx_session_run(s, (const ts_tensor *const *)&x, out));
    if (out[0] && out[1] && out[2]) {
        const float *y = ts_tensor_data(out[0]), *xx = ts_tensor_data(out[1]), *w = ts_tensor_data(out[2]);
        CHECK(y[0] == 0 && y[1] == 2 && xx[0] == -1 && xx[5] == 6 && ts_tensor_numel(out[2]) == 4 && w[3] == 3,
              "outputs %g %g / %g %g / %g", y[0], y[1], xx[0], xx[5], w[3]);
    }
    for (int j = 0; j < 3; j++) ts_tensor_free(out[j]);
    ts_tensor_free(x);
    ts_onnx_session_free(s);
    ts_onnx_free(m);
}

/* A model whose graph -> node -> attribute -> graph chain nests 100000 levels deep (a few hundred
 * KB): refused with a message before protobuf-c's recursive parser could run out of stack. */
static void test_deep_nesting(void) {
    enum { LEVELS = 100000 };
    /* innermost first: each level wraps the previous bytes as Graph{node: Node{attribute:
     * Attribute{g: <previous>}}}, lengths as varints; built back to front in one buffer */
    size_t cap = (size_t)LEVELS * 16 + 64, at = cap;
    uint8_t *buf = malloc(cap);
    size_t len = 0;
    for (int l = 0; l < LEVELS; l++) {
        static const uint8_t tags[3] = {0x32 /* Attribute.g = 6 */, 0x2a /* Node.attribute = 5 */,
                                        0x0a /* Graph.node = 1 */};
        for (int t = 0; t < 3; t++) {
            uint8_t v[10];
            int nv = 0;
            size_t x = len;
            do v[nv++] = (uint8_t)((x & 0x7f) | (x > 0x7f ? 0x80 : 0)), x >>= 7; while (x);
            at -= (size_t)nv;
            memcpy(buf + at, v, (size_t)nv);
            buf[--at] = tags[t];
            len += (size_t)nv + 1;
        }
    }
    /* Model.graph = 7 around it */
    uint8_t v[10];
    int nv = 0;
    size_t x = len;
    do v[nv++] = (uint8_t)((x & 0x7f) | (x > 0x7f ? 0x80 : 0)), x >>= 7; while (x);
    at -= (size_t)nv;
    memcpy(buf + at, v, (size_t)nv);
    buf[--at] = 0x3a;
    len += (size_t)nv + 1;
    ts_onnx *m = ts_onnx_load_bytes(buf + at, len, "deep.onnx");
    CHECK(m == NULL && ts_last_status() == TS_ERR_IO && strstr(ts_last_error(), "deep.onnx: its graphs, attributes or types nest"),
          "status %s: %s", ts_status_name(ts_last_status()), ts_last_error());
    ts_onnx_free(m);
    free(buf);
}

static void test_op_table(void) {
    int n = ts_onnx_num_ops(), conv = 0, lo = 0, hi = 0;
    CHECK(n > 40, "only %d entries", n);
    for (int i = 0; i < n; i++) {
        const char *op = ts_onnx_op_info(i, &lo, &hi);
        CHECK(op && 9 <= lo && lo <= hi && hi <= 17, "entry %d: %s %d-%d", i, op ? op : "NULL", lo, hi);
        if (op && !strcmp(op, "Conv")) conv = 1;
    }
    CHECK(conv, "no Conv in the table");
    CHECK(ts_onnx_op_info(n, NULL, NULL) == NULL && ts_last_status() == TS_ERR_ARG, "entry past the end");
}

/* Each op type is registered once (a second entry would shadow or be shadowed by the first), and
 * the check that says so finds a duplicate when there is one. */
static void test_op_registry_unique(void) {
    const char *dup = onnx_registry_duplicate();
    CHECK(dup == NULL, "op type %s is registered twice", dup ? dup : "");
    const char *unique[] = {"Relu", "Conv", "Resize", "Gather"};
    CHECK(onnx_op_types_duplicate(unique, 4) == NULL, "a duplicate found in a list without one");
    const char *twice[] = {"Relu", "Conv", "Resize", "Conv", "Gather"};
    const char *d = onnx_op_types_duplicate(twice, 5);
    CHECK(d && !strcmp(d, "Conv"), "the duplicate Conv not found (%s)", d ? d : "NULL");
    CHECK(onnx_op_types_duplicate(twice, 0) == NULL && onnx_op_types_duplicate(twice, 1) == NULL, "short lists");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_session_shapes);
    RUN(test_session_shape_values);
    RUN(test_fixture_sessions);
    RUN(test_trainable_and_save);
    RUN(test_refusals);
    RUN(test_split_without_outputs);
    RUN(test_passthrough_outputs);
    RUN(test_deep_nesting);
    RUN(test_op_table);
    RUN(test_op_registry_unique);
    return tu_finish("test_onnx");
}
