/*
 * test_cli_onnx.c — `tessera run --model MODEL.onnx` end to end, and `tessera onnx-ops`.
 *
 *  - models of ONNX's node tests (libonnx-testdata: a strided, padded Conv; Gemm with every
 *    attribute; Gather with int64 indices fed as i32) run from a safetensors file of their
 *    inputs, and each output in the written safetensors file matches the test's output_0.pb;
 *  - refused inputs exit non-zero with a message naming what is wrong: a truncated model, a
 *    garbled one, a model with an op the importer does not have (written here byte by byte: the
 *    message names its node), a missing input tensor, a BERT-only flag; --profile with --int8;
 *  - docs/onnx.md's op table is exactly what `tessera onnx-ops` prints, so it cannot go stale.
 * The node tests' cases skip (with a line saying so) when the test data is not installed.
 */
#include "test_util.h"
#include "cli_util.h"

#include "onnx/onnx_testing.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static int have_testdata(void) { return access(NODE_DIR "/test_conv_with_strides_padding/model.onnx", R_OK) == 0; }

/* Write the inputs of node test `name` (data set 0) to in.safetensors in dir, input k as dtype
 * as[k] (TS_DTYPE_COUNT: as stored). */
static int write_inputs(const char *name, const ts_dtype *as) {
    char path[512];
    snprintf(path, sizeof path, NODE_DIR "/%s/model.onnx", name);
    ts_onnx *m = ts_onnx_load(path);
    CHECK(m != NULL, "%s", ts_last_error());
    if (!m) return -1;
    int n = ts_onnx_num_inputs(m);
    ts_tensor *t[8] = {0};
    const char *names[8];
    for (int i = 0; i < n && i < 8; i++) {
        snprintf(path, sizeof path, NODE_DIR "/%s/test_data_set_0/input_%d.pb", name, i);
        t[i] = ts_onnx_tensor_file(path, NULL, 0);
        CHECK(t[i] != NULL, "%s", ts_last_error());
        names[i] = ts_onnx_input_name(m, i);
        if (t[i] && as && as[i] != TS_DTYPE_COUNT && as[i] != ts_tensor_dtype(t[i])) { /* i64 -> i32 */
            ts_tensor *c = ts_tensor_new(as[i], ts_tensor_ndim(t[i]), ts_tensor_shape(t[i]));
            for (int64_t k = 0; k < ts_tensor_numel(c); k++)
                ((int32_t *)ts_tensor_data(c))[k] = (int32_t)((int64_t *)ts_tensor_data(t[i]))[k];
            ts_tensor_free(t[i]);
            t[i] = c;
        }
    }
    snprintf(path, sizeof path, "%s/in.safetensors", dir);
    CHECK_OK(ts_safetensors_save(path, n, names, (const ts_tensor *const *)t, NULL));
    for (int i = 0; i < 8; i++) ts_tensor_free(t[i]);
    ts_onnx_free(m);
    return 0;
}

/* out.safetensors in dir holds output `out` of node test `name` as output_0.pb says. */
static void check_output(const char *name, const char *out) {
    char path[512];
    snprintf(path, sizeof path, NODE_DIR "/%s/test_data_set_0/output_0.pb", name);
    ts_tensor *want = ts_onnx_tensor_file(path, NULL, 0), *got = NULL;
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    ts_safetensors *st = ts_safetensors_open(path);
    CHECK(want && st, "%s", ts_last_error());
    if (st) CHECK_OK(ts_safetensors_get(st, out, &got));
    if (want && got) {
        CHECK(ts_tensor_dtype(got) == ts_tensor_dtype(want) && ts_tensor_numel(got) == ts_tensor_numel(want),
              "%s: output %s is %s of %lld elements", name, out, ts_dtype_name(ts_tensor_dtype(got)),
              (long long)ts_tensor_numel(got));
        const float *g = ts_tensor_data(got), *w = ts_tensor_data(want);
        int bad = 0;
        for (int64_t i = 0; i < ts_tensor_numel(want) && ts_tensor_numel(got) == ts_tensor_numel(want); i++)
            bad += !(fabsf(g[i] - w[i]) <= 1e-5f + 1e-4f * fabsf(w[i]));
        CHECK(bad == 0, "%s: %d of %lld elements differ from output_0.pb", name, bad, (long long)ts_tensor_numel(want));
    }
    ts_tensor_free(want);
    ts_tensor_free(got);
    ts_safetensors_close(st);
}

static void test_node_models(void) {
    if (!have_testdata()) {
        tu_skip_part("the node-test models: %s is not installed (apt-get install libonnx-testdata)", NODE_DIR);
        return;
    }
    static const struct {
        const char *name, *out;
        ts_dtype as[3];
    } cases[] = {
        {"test_conv_with_strides_padding", "y", {TS_DTYPE_COUNT, TS_DTYPE_COUNT, TS_DTYPE_COUNT}},
        {"test_gemm_all_attributes", "y", {TS_DTYPE_COUNT, TS_DTYPE_COUNT, TS_DTYPE_COUNT}},
        {"test_gather_0", "y", {TS_DTYPE_COUNT, TS_I32, TS_DTYPE_COUNT}}, /* indices i64 in the model, i32 here */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        if (write_inputs(cases[c].name, cases[c].as)) continue;
        int rc = tessera(NULL, "run --model " NODE_DIR "/%s/model.onnx --inputs in.safetensors --outputs out.safetensors "
                         "--threads 1 --repeat 2", cases[c].name);
        CHECK_RAN(rc, 0);
        CHECK(strstr(out_text, "wrote out.safetensors"), "stdout: %s", out_text);
        check_output(cases[c].name, cases[c].out);
    }
    /* --profile on an ONNX model: the report of the runs after the first, then the run's line; with
     * --int8 the convolution stays conv2d (its weight W is an input of the model: not quantized) */
    if (!write_inputs("test_conv_with_strides_padding", cases[0].as)) {
        int rc = tessera(NULL, "run --model " NODE_DIR "/test_conv_with_strides_padding/model.onnx --inputs "
                         "in.safetensors --outputs out.safetensors --repeat 3 --int8 --profile");
        CHECK_RAN(rc, 0);
        const char *line = strstr(out_text, "int8 dynamic on cpu"), *prof = strstr(out_text, "profile: 2 runs");
        CHECK(line && prof && prof < line, "the profile of the 2 runs after the first, then the run's line: %s",
              out_text);
        CHECK(strstr(out_text, "conv2d f32[1, 1, 7, 5] -> f32[1, 1, 4, 3]") && !strstr(out_text, "conv2d_i8"),
              "the profile's convolution: %s", out_text);
    }
    /* the same inputs, but one missing: the message names it and the model's inputs */
    write_inputs("test_gather_0", NULL);
    int rc = tessera(NULL, "run --model " NODE_DIR "/test_conv_with_strides_padding/model.onnx --inputs in.safetensors "
                     "--outputs out.safetensors");
    CHECK_FAILS(rc, "no tensor \"x\"");
    /* a BERT-only flag */
    rc = tessera(NULL, "run --model " NODE_DIR "/test_gather_0/model.onnx --inputs in.safetensors --outputs o.safetensors "
                 "--dtype bf16");
    CHECK_FAILS(rc, "--dtype is for BERT model directories");
}

/* ------------------------------------------------------------------ a model written byte by byte */

typedef struct {
    uint8_t b[4096];
    size_t n;
} buf;

static void varint(buf *o, uint64_t v) {
    do {
        o->b[o->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}
static void field_int(buf *o, int f, uint64_t v) { varint(o, (uint64_t)f << 3), varint(o, v); }
static void field_bytes(buf *o, int f, const void *p, size_t n) {
    varint(o, (uint64_t)f << 3 | 2);
    varint(o, n);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void field_str(buf *o, int f, const char *s) { field_bytes(o, f, s, strlen(s)); }
static void field_msg(buf *o, int f, const buf *m) { field_bytes(o, f, m->b, m->n); }

/* A ModelProto (IR 7, opset 13) of one graph x [2] f32 -> y through two nodes of op `op`. */
static size_t make_model(uint8_t *out, const char *op) {
    buf node1 = {0}, node2 = {0}, dim = {0}, shape = {0}, tensor = {0}, type = {0}, vi_x = {0}, vi_y = {0}, graph = {0},
        opset = {0}, model = {0};
    field_str(&node1, 1, "x"), field_str(&node1, 2, "h"), field_str(&node1, 3, "first_weird"), field_str(&node1, 4, op);
    field_str(&node2, 1, "h"), field_str(&node2, 2, "y"), field_str(&node2, 3, "second_weird"), field_str(&node2, 4, op);
    field_int(&dim, 1, 2);
    field_msg(&shape, 1, &dim);
    field_int(&tensor, 1, 1); /* FLOAT */
    field_msg(&tensor, 2, &shape);
    field_msg(&type, 1, &tensor);
    field_str(&vi_x, 1, "x"), field_msg(&vi_x, 2, &type);
    field_str(&vi_y, 1, "y"), field_msg(&vi_y, 2, &type);
    field_msg(&graph, 1, &node1), field_msg(&graph, 1, &node2), field_str(&graph, 2, "g");
    field_msg(&graph, 11, &vi_x), field_msg(&graph, 12, &vi_y);
    field_str(&opset, 1, ""), field_int(&opset, 2, 13);
    field_int(&model, 1, 7), field_msg(&model, 7, &graph), field_msg(&model, 8, &opset);
    memcpy(out, model.b, model.n);
    return model.n;
}

static void write_bytes(const char *name, const uint8_t *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

static void test_bad_models(void) {
    uint8_t model[4096];
    size_t n = make_model(model, "Relu");
    /* the hand-written model itself is fine: Relu of [1, -2] */
    {
        char path[512];
        snprintf(path, sizeof path, "%s/x.safetensors", dir);
        ts_tensor *x = ts_tensor_from(TS_F32, 1, (int64_t[]){2}, (float[]){1.f, -2.f});
        CHECK_OK(ts_safetensors_save(path, 1, (const char *[]){"x"}, (const ts_tensor *const *)&x, NULL));
        ts_tensor_free(x);
    }
    write_bytes("relu.onnx", model, n);
    int rc = tessera(NULL, "run --model relu.onnx --inputs x.safetensors --outputs y.safetensors");
    CHECK_RAN(rc, 0);

    n = make_model(model, "FooBar");
    write_bytes("foobar.onnx", model, n);
    rc = tessera(NULL, "run --model foobar.onnx --inputs x.safetensors --outputs y.safetensors");
    CHECK_FAILS(rc, "foobar.onnx (opset 13): 2 nodes unsupported: node 'first_weird' (FooBar): op not supported; "
                    "node 'second_weird' (FooBar)");

    n = make_model(model, "Relu");
    write_bytes("truncated.onnx", model, n * 2 / 3);
    rc = tessera(NULL, "run --model truncated.onnx --inputs x.safetensors --outputs y.safetensors");
    CHECK_FAILS(rc, "truncated.onnx: not an ONNX model");

    for (size_t i = 0; i < n; i += 3) model[i] ^= 0xa5; /* garbled */
    write_bytes("garbled.onnx", model, n);
    rc = tessera(NULL, "run --model garbled.onnx --inputs x.safetensors --outputs y.safetensors");
    CHECK_FAILS(rc, "garbled.onnx");

    write_bytes("empty.onnx", model, 0);
    rc = tessera(NULL, "run --model empty.onnx --inputs x.safetensors --outputs y.safetensors");
    CHECK_FAILS(rc, "empty.onnx: empty, not an ONNX model");

    rc = tessera(NULL, "run --model missing.onnx --inputs x.safetensors --outputs y.safetensors");
    CHECK_FAILS(rc, "missing.onnx: cannot open");
}

/* docs/onnx.md's table between the markers is what `tessera onnx-ops` prints. */
static void test_readme_table(void) {
    int rc = tessera(NULL, "onnx-ops");
    CHECK_RAN(rc, 0);
    FILE *f = fopen(TS_SOURCE_DIR "/docs/onnx.md", "r");
    CHECK(f != NULL, "cannot read docs/onnx.md");
    if (!f) return;
    static char readme[1 << 20];
    size_t len = fread(readme, 1, sizeof readme - 1, f);
    readme[len] = 0;
    fclose(f);
    const char *begin_mark = "<!-- onnx-ops: begin (generated by `tessera onnx-ops`) -->\n", *end_mark = "<!-- onnx-ops: end -->";
    char *b = strstr(readme, begin_mark), *e = b ? strstr(b, end_mark) : NULL;
    CHECK(b && e, "docs/onnx.md has no op table between \"%s\" and \"%s\"", begin_mark, end_mark);
    if (!b || !e) return;
    b += strlen(begin_mark);
    *e = 0;
    CHECK(!strcmp(b, out_text), "docs/onnx.md's ONNX op table differs from `tessera onnx-ops`; regenerate it:\n"
          "  bash tools/update_onnx_ops_table.sh build\ndocs/onnx.md:\n%s\ntessera onnx-ops:\n%s", b, out_text);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_onnx");
    if (rc) return rc;
    RUN(test_node_models);
    RUN(test_bad_models);
    RUN(test_readme_table);
    cli_cleanup("test_cli_onnx");
    return tu_finish("test_cli_onnx");
}
