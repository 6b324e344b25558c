/*
 * test_onnx_train.c — train what you import: the small CNN PyTorch exported to ONNX
 * (tests/fixtures/onnx/cnn.onnx, made by tools/make_onnx_cnn_fixture.py) is imported with
 * trainable parameters, given a cross-entropy loss, a backward pass and plain SGD (lr 0.1), and
 * trained 10 steps on the fixture's batch, as PyTorch did:
 *  - each step's loss, and every parameter after the 10 steps, match PyTorch's within 1e-4
 *    (max abs difference; the loss relative to its size);
 *  - ts_onnx_save_with_params writes the fine-tuned model; tessera's importer reads it back and
 *    infers the fine-tuned logits (those of an inference program holding the trained parameters)
 *    within 1e-4, and PyTorch's trained logits too; ONNX Runtime (tools/ort_run.js, when
 *    onnxruntime-node is installed in tools/ort/node_modules) gives the same logits within 1e-4;
 *  - frozen by name: with "conv1.*" frozen, conv1's weight and bias are no parameters of the
 *    program, the saved file keeps them bit for bit, and the other parameters match PyTorch's run
 *    with conv1 frozen (requires_grad False) within 1e-4.
 * Without onnxruntime-node the ORT check is skipped with a message and the test exits 77
 * (skipped) once everything else has passed.
 */
#include "test_util.h"

#include "ort_util.h"

#define FIX TS_SOURCE_DIR "/tests/fixtures/onnx/"
#define ORT_RUN TS_SOURCE_DIR "/tools/ort_run.js"
#define STEPS 10
#define TOL 1e-4
#define NPARAM 6

static const char *const PARAMS[NPARAM] = {"conv1.weight", "conv1.bias", "conv2.weight",
                                           "conv2.bias",   "fc.weight",  "fc.bias"};

static char tmpdir[256];

static const char *tmp_path(const char *name) {
    static char buf[8][512]; /* a few may be in use at once */
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_onnx_train_XXXXXX");
    if (!mkdtemp(tmpdir)) perror("mkdtemp"), exit(1);
}

static void remove_tmpdir(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

static ts_tensor *fixture(const char *name) {
    ts_safetensors *st = ts_safetensors_open(FIX "cnn_train.safetensors");
    ts_tensor *t = NULL;
    CHECK(st && ts_safetensors_get(st, name, &t) == TS_OK, "fixture tensor '%s': %s", name, ts_last_error());
    ts_safetensors_close(st);
    return t;
}

static double max_abs(ts_tensor *a, ts_tensor *b) {
    if (!a || !b || !tu_same_shape(a, b)) return INFINITY;
    return tu_max_abs_diff_f(tu_f32(a), tu_f32(b), ts_tensor_numel(a));
}

/* ------------------------------------------------------------------ the imported model, trained */

typedef struct trained {
    ts_onnx *m;
    ts_graph *g;
    ts_program *train, *infer;
    ts_tensor *x;
} trained;

static void trained_free(trained *t) {
    ts_program_free(t->train);
    ts_program_free(t->infer);
    ts_graph_free(t->g);
    ts_onnx_free(t->m);
    ts_tensor_free(t->x);
}

/* Import cnn.onnx with trainable parameters (conv1 frozen when `frozen`), add the loss, backward
 * and SGD, compile, load the file's weights and train STEPS steps on the fixture's batch, checking
 * each step's loss against PyTorch's when `check_loss`. Also compiles an inference program from
 * the same graph and gives it the trained parameters. 0 on success. */
static int train_imported(trained *t, int frozen, int check_loss) {
    memset(t, 0, sizeof *t);
    t->m = ts_onnx_load(FIX "cnn.onnx");
    CHECK(t->m != NULL, "ts_onnx_load: %s", ts_last_error());
    t->x = fixture("x");
    ts_tensor *labels = fixture("labels"), *ref_loss = fixture("loss");
    int rc = 1;
    if (!t->m || !t->x || !labels || !ref_loss) goto out;
    CHECK(ts_onnx_num_inputs(t->m) == 1 && !strcmp(ts_onnx_input_name(t->m, 0), "x"), "inputs of cnn.onnx");
    CHECK(ts_onnx_num_outputs(t->m) == 1 && !strcmp(ts_onnx_output_name(t->m, 0), "logits"), "outputs of cnn.onnx");

    t->g = ts_graph_new();
    const char *const freeze[] = {"conv1.*"};
    ts_onnx_import_opts io = {.trainable = 1, .frozen = frozen ? freeze : NULL, .nfrozen = frozen ? 1 : 0};
    const int ndims[1] = {ts_tensor_ndim(t->x)};
    const int64_t *const shapes[1] = {ts_tensor_shape(t->x)};
    ts_value logits = TS_NONE;
    if (CHECK_OK(ts_onnx_import(t->m, t->g, ndims, shapes, &io, &logits))) goto out;
    ts_value y = ts_input(t->g, "labels", TS_I32, DIMS(8));
    ts_value loss = ts_name(t->g, ts_cross_entropy(t->g, logits, y, -100), "loss");
    if (CHECK_OK(ts_backward(t->g, loss)) || CHECK_OK(ts_sgd_ex(t->g, ts_scalar(t->g, 0.1f), &(ts_sgd_opts){0})))
        goto out;
    t->train = ts_compile(t->g, &(ts_compile_opts){TU_FETCHES("loss")});
    t->infer = ts_compile(t->g, &(ts_compile_opts){TU_FETCHES("logits"), .inference = 1});
    CHECK(t->train && t->infer, "compile: %s", ts_last_error());
    if (!t->train || !t->infer) goto out;
    CHECK(ts_program_num_params(t->train) == (frozen ? NPARAM - 2 : NPARAM), "%d parameters",
          ts_program_num_params(t->train));
    if (CHECK_OK(ts_onnx_load_params(t->m, t->train)) || CHECK_OK(ts_program_feed(t->train, "x", t->x)) ||
        CHECK_OK(ts_program_feed(t->train, "labels", labels)))
        goto out;
    double worst = 0;
    for (int step = 0; step < STEPS; step++) {
        if (CHECK_OK(ts_program_run(t->train))) goto out;
        ts_tensor *l = TU_FETCH(t->train, "loss");
        double want = tu_f32(ref_loss)[step], got = l ? tu_f32(l)[0] : NAN;
        double rel = fabs(got - want) / fmax(fabs(want), 1e-3);
        if (check_loss) CHECK(rel <= TOL, "step %d: loss %.7f, PyTorch's %.7f", step, got, want);
        worst = rel > worst ? rel : worst;
        ts_tensor_free(l);
    }
    if (check_loss) printf("    losses of %d SGD steps: max relative difference from PyTorch's %.3g\n", STEPS, worst);
    CHECK(ts_program_copy_params(t->infer, t->train) == ts_program_num_params(t->train), "copy_params: %s",
          ts_last_error());
    rc = 0;
out:
    ts_tensor_free(labels);
    ts_tensor_free(ref_loss);
    return rc;
}

/* The inference program's logits on the fixture's batch. */
static ts_tensor *infer_logits(trained *t) {
    if (CHECK_OK(ts_program_feed(t->infer, "x", t->x)) || CHECK_OK(ts_program_run(t->infer))) return NULL;
    return TU_FETCH(t->infer, "logits");
}

/* Logits of the ONNX file at path, imported for inference by tessera. */
static ts_tensor *reimported_logits(const char *path, const ts_tensor *x) {
    ts_onnx *m = ts_onnx_load(path);
    CHECK(m != NULL, "ts_onnx_load(%s): %s", path, ts_last_error());
    ts_onnx_session *s = m ? ts_onnx_session_new(m, NULL) : NULL;
    CHECK(!m || s, "session: %s", ts_last_error());
    ts_tensor *out[1] = {NULL};
    if (s) CHECK_OK(ts_onnx_session_run(s, (const ts_tensor *const[]){x}, out));
    ts_onnx_session_free(s);
    ts_onnx_free(m);
    return out[0];
}

/* A parameter's value in a freshly imported and loaded copy of the ONNX file at path. */
static ts_tensor *file_param(const char *path, const char *name) {
    ts_onnx *m = ts_onnx_load(path);
    ts_graph *g = ts_graph_new();
    ts_tensor *t = NULL;
    ts_program *p = NULL;
    if (m && ts_onnx_import(m, g, NULL, NULL, &(ts_onnx_import_opts){.trainable = 1}, NULL) == TS_OK &&
        (p = ts_compile(g, &(ts_compile_opts){.inference = 1})) && ts_onnx_load_params(m, p) == TS_OK)
        ts_program_get_param(p, name, &t);
    CHECK(t != NULL, "%s: parameter %s: %s", path, name, ts_last_error());
    ts_program_free(p);
    ts_graph_free(g);
    ts_onnx_free(m);
    return t;
}

/* ------------------------------------------------------------------ cases */

static void test_train_all(void) {
    trained t;
    make_tmpdir();
    if (train_imported(&t, 0, 1) == 0) {
        double worst = 0;
        for (int k = 0; k < NPARAM; k++) {
            ts_tensor *got = TU_FETCH(t.train, PARAMS[k]), *want = fixture(PARAMS[k]);
            double d = max_abs(got, want);
            CHECK(d <= TOL, "%s after %d steps differs from PyTorch's by %g (max abs)", PARAMS[k], STEPS, d);
            worst = d > worst ? d : worst;
            ts_tensor_free(got);
            ts_tensor_free(want);
        }
        printf("    parameters after %d steps: max |tessera - PyTorch| %.3g\n", STEPS, worst);

        ts_tensor *tuned = infer_logits(&t), *torch_logits = fixture("logits");
        CHECK(max_abs(tuned, torch_logits) <= TOL, "fine-tuned logits differ from PyTorch's by %g",
              max_abs(tuned, torch_logits));
        /* save, read back in tessera, run in ORT */
        char saved[512];
        snprintf(saved, sizeof saved, "%s", tmp_path("tuned.onnx"));
        CHECK_OK(ts_onnx_save_with_params(t.m, t.train, saved));
        ts_tensor *back = reimported_logits(saved, t.x);
        double d_back = max_abs(back, tuned);
        CHECK(d_back <= TOL, "the saved model's logits (tessera's importer) differ by %g", d_back);
        printf("    saved fine-tuned model, reimported: logits max |difference| %.3g\n", d_back);
        ts_tensor *orig = reimported_logits(FIX "cnn.onnx", t.x);
        CHECK(orig && tuned && max_abs(orig, tuned) > 1e-3, "training changed the logits by only %g",
              max_abs(orig, tuned));
        if (tu_ort_available() && tuned) {
            const char *names[1] = {"x"};
            CHECK_OK(ts_safetensors_save(tmp_path("x.safetensors"), 1, names, (const ts_tensor *const *)&t.x, NULL));
            char cmd[2048];
            snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' '%s' > '%s' 2>&1", ORT_RUN, saved,
                     tmp_path("x.safetensors"), tmp_path("ort.safetensors"), tmp_path("ort.log"));
            int rc = system(cmd);
            char log[2048] = "";
            FILE *f = fopen(tmp_path("ort.log"), "r");
            if (f) log[fread(log, 1, sizeof log - 1, f)] = 0, fclose(f);
            CHECK(rc == 0, "ort_run.js failed (status %d): %s", rc, log);
            ts_safetensors *st = rc == 0 ? ts_safetensors_open(tmp_path("ort.safetensors")) : NULL;
            ts_tensor *ort = NULL;
            if (st) CHECK_OK(ts_safetensors_get(st, "logits", &ort));
            double d = max_abs(ort, tuned);
            CHECK(d <= TOL, "ONNX Runtime's logits of the saved model differ from tessera's by %g", d);
            printf("    saved fine-tuned model in ONNX Runtime: logits max |difference| %.3g\n", d);
            ts_tensor_free(ort);
            ts_safetensors_close(st);
        }
        ts_tensor_free(orig);
        ts_tensor_free(back);
        ts_tensor_free(tuned);
        ts_tensor_free(torch_logits);
    }
    trained_free(&t);
    remove_tmpdir();
}

static void test_train_frozen(void) {
    trained t;
    make_tmpdir();
    if (train_imported(&t, 1, 0) == 0) {
        ts_tensor *none = NULL;
        CHECK_STATUS(ts_program_get_param(t.train, "conv1.weight", &none), TS_ERR_NOT_FOUND);
        ts_tensor_free(none);
        double worst = 0;
        for (int k = 2; k < NPARAM; k++) {
            char ref[64];
            snprintf(ref, sizeof ref, "frozen.%s", PARAMS[k]);
            ts_tensor *got = TU_FETCH(t.train, PARAMS[k]), *want = fixture(ref);
            double d = max_abs(got, want);
            CHECK(d <= TOL, "%s (conv1 frozen) differs from PyTorch's by %g (max abs)", PARAMS[k], d);
            worst = d > worst ? d : worst;
            ts_tensor_free(got);
            ts_tensor_free(want);
        }
        printf("    conv1 frozen: the other parameters after %d steps: max |tessera - PyTorch| %.3g\n", STEPS, worst);
        char saved[512];
        snprintf(saved, sizeof saved, "%s", tmp_path("frozen.onnx"));
        CHECK_OK(ts_onnx_save_with_params(t.m, t.train, saved));
        for (int k = 0; k < 4; k++) { /* conv1 kept bit for bit, conv2 trained */
            ts_tensor *before = file_param(FIX "cnn.onnx", PARAMS[k]), *after = file_param(saved, PARAMS[k]);
            if (k < 2) CHECK(tu_bitwise_equal(before, after), "%s changed in the saved file though frozen", PARAMS[k]);
            else CHECK(max_abs(before, after) > 1e-4, "%s did not change in the saved file", PARAMS[k]);
            ts_tensor_free(before);
            ts_tensor_free(after);
        }
    }
    trained_free(&t);
    remove_tmpdir();
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (!tu_ort_available())
        tu_skip_part("the ONNX Runtime check: onnxruntime-node is not installed in tools/ort/node_modules "
                     "(bash scripts/install-deps.sh installs it)");
    RUN(test_train_all);
    RUN(test_train_frozen);
    return tu_finish("test_onnx_train"); /* 77 (skipped) when the ORT check did not run */
}
