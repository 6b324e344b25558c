/*
 * test_qdq.c — int8 matmuls in ONNX's QDQ form (QuantizeLinear / DequantizeLinear): tessera's export
 * (ts_onnx_export_qdq, src/onnx/export/export_qdq.c) and its import onto the int8 matmul
 * (src/onnx/map/quant_matmul.c). A two-layer graph (x -> Linear [out, in] + bias -> ReLU ->
 * Linear [in, out]) with calibrated activation scales is
 *  - compiled with TS_QUANT_STATIC and those scales (the reference: tessera's int8 program);
 *  - exported in QDQ form: ONNX Runtime (tools/ort_run.js, when onnxruntime-node is installed) runs
 *    its int8 kernels on it and agrees with the int8 program within 1e-4 relative (the same integer
 *    products; only the order of the f32 scaling differs), while the f32 program differs by the
 *    quantization error (so the comparison can tell int8 from f32);
 *  - imported back by tessera: both matmuls become matmul_i8dyn nodes (counted in the imported
 *    graph, not dequantized into f32), and the session's output is the int8 program's;
 *  - exported in ONNX Runtime's dynamic int8 form (ts_onnx_export_dynamic_int8), ONNX Runtime's
 *    output is within the quantization error of f32 and of tessera's dynamic int8 (the activations
 *    are quantized differently: uint8 asymmetric there, int8 symmetric here);
 *  - errors: a scale of 0 or NaN in a QDQ model (patched into the exported file) fails the import
 *    naming the scale; the exporter refuses a scale <= 0 and a weight holding NaN, naming it.
 */
#include "test_util.h"

#include "ort_util.h"

#include "cli_util.h"
#include "graph/ir.h"
#include "graph/opdef.h"

#include <math.h>

#define ORT_RUN TS_SOURCE_DIR "/tools/ort_run.js"
enum { B = 3, T = 5, K = 32, H = 24, N = 8 };

static const char *path_in(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* The graph: h = relu(x W1^T + b1) (W1 [H, K], a Linear's layout), y = h W2 (W2 [H, N]). */
static ts_graph *build(ts_value *y) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 21);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, T, K));
    ts_value w1 = ts_param(g, "w1", TS_F32, DIMS(H, K), ts_init_normal(0.2f));
    ts_value b1 = ts_param(g, "b1", TS_F32, DIMS(H), ts_init_normal(0.3f));
    ts_value w2 = ts_param(g, "w2", TS_F32, DIMS(H, N), ts_init_normal(0.2f));
    ts_value h = ts_name(g, ts_relu(g, ts_add(g, ts_matmul(g, x, w1, 0, 1), b1)), "h");
    *y = ts_name(g, ts_matmul(g, h, w2, 0, 0), "y");
    return g;
}

static ts_program *compile(ts_graph *g, int quantize, const ts_quant_scale *sc, int nsc) {
    const char *f[] = {"h", "y"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 2,
                                                     .fetches = f, .inference = 1, .quantize = quantize,
                                                     .quant_scales = sc, .nquant_scales = nsc});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    return p;
}

static ts_tensor *run(ts_program *p, const ts_tensor *x, const char *what) {
    CHECK_OK(ts_program_feed(p, "x", x));
    CHECK_OK(ts_program_run(p));
    return TU_FETCH(p, what);
}

static double max_rel(const ts_tensor *a, const ts_tensor *b) {
    double worst = 0;
    for (int64_t i = 0; i < ts_tensor_numel(a); i++) {
        double r = fabs(tu_f32((ts_tensor *)a)[i]), d = fabs(tu_f32((ts_tensor *)a)[i] - tu_f32((ts_tensor *)b)[i]);
        d /= r > 1 ? r : 1;
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

static float absmax(const ts_tensor *t) {
    float m = 0;
    for (int64_t i = 0; i < ts_tensor_numel(t); i++) m = fmaxf(m, fabsf(tu_f32((ts_tensor *)t)[i]));
    return m;
}

/* Count the nodes of op `op` in the graph tessera's importer makes of file path. */
static int imported_ops(const char *path, int op) {
    ts_onnx *m = ts_onnx_load(path);
    ts_graph *g = ts_graph_new();
    int count = -1;
    if (m && ts_onnx_import(m, g, NULL, NULL, NULL, NULL) == TS_OK) {
        count = 0;
        for (int i = 0; i < g->nnodes; i++) count += g->nodes[i].op == op;
    }
    CHECK(count >= 0, "importing %s: %s", path, ts_last_error());
    ts_graph_free(g);
    ts_onnx_free(m);
    return count;
}

/* y of the exported file through tessera's importer and a session. */
static ts_tensor *run_imported(const char *path, const ts_tensor *x) {
    ts_onnx *m = ts_onnx_load(path);
    CHECK(m != NULL, "load: %s", ts_last_error());
    ts_onnx_session *s = m ? ts_onnx_session_new(m, NULL) : NULL;
    CHECK(s != NULL, "session: %s", ts_last_error());
    ts_tensor *out[1] = {0};
    if (s) CHECK_OK(ts_onnx_session_run(s, &x, out));
    ts_onnx_session_free(s);
    ts_onnx_free(m);
    return out[0];
}

/* y of the exported file in ONNX Runtime; NULL when it is not installed. */
static ts_tensor *run_ort(const char *path, const ts_tensor *x) {
    if (!tu_ort_available()) return NULL;
    CHECK_OK(ts_safetensors_save(path_in("in.safetensors"), 1, (const char *[]){"x"}, &x, NULL));
    char cmd[4096], log[4096];
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' '%s' >'%s' 2>&1", ORT_RUN, path, path_in("in.safetensors"),
             path_in("ort.safetensors"), path_in("ort.log"));
    int rc = system(cmd);
    read_into("ort.log", log, sizeof log);
    CHECK(rc == 0, "ort_run.js failed (status %d): %s", rc, log);
    ts_safetensors *f = rc == 0 ? ts_safetensors_open(path_in("ort.safetensors")) : NULL;
    ts_tensor *y = NULL;
    if (f) CHECK_OK(ts_safetensors_get(f, "y", &y));
    ts_safetensors_close(f);
    return y;
}

static void test_export_import_ort(void) {
    if (cli_setup("test_qdq")) return;
    ts_value y;
    ts_graph *g = build(&y);
    tu_rng r = tu_rng_seed(3);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(B, T, K), -2, 2);
    ts_program *pf = compile(g, TS_QUANT_NONE, NULL, 0);
    ts_tensor *hf = pf ? run(pf, x, "h") : NULL, *yf = pf ? TU_FETCH(pf, "y") : NULL;
    /* minmax calibration on this batch: no activation saturates, so ONNX's -128 never arises */
    ts_quant_scale sc[2] = {{"w1", absmax(x) / 127.f}, {"w2", hf ? absmax(hf) / 127.f : 1.f}};
    ts_program *pq = compile(g, TS_QUANT_STATIC, sc, 2);
    ts_tensor *yq = pq ? run(pq, x, "y") : NULL;
    if (yf && yq) {
        double q_err = max_rel(yf, yq);
        printf("int8 program vs f32: max rel diff %.3g (the quantization error)\n", q_err);
        CHECK(q_err > 1e-4 && q_err < 0.1, "int8 vs f32 differ by %g", q_err);
    }
    if (pf) CHECK_OK(ts_onnx_export_qdq(g, pf, 1, &y, sc, 2, path_in("qdq.onnx")));
    int n8 = imported_ops(path_in("qdq.onnx"), TS_OP_MATMUL_I8DYN), nf = imported_ops(path_in("qdq.onnx"), TS_OP_MATMUL);
    CHECK(n8 == 2 && nf == 0, "the import made %d int8 and %d f32 matmuls (want 2 and 0)", n8, nf);
    ts_tensor *yi = run_imported(path_in("qdq.onnx"), x);
    if (yi && yq) {
        double d = max_rel(yq, yi);
        printf("imported QDQ vs the int8 program: max rel diff %.3g\n", d);
        CHECK(d < 1e-5, "imported QDQ model vs int8 program: %g", d);
    }
    ts_tensor *yo = run_ort(path_in("qdq.onnx"), x);
    if (!yo) tu_skip_part("ONNX Runtime on the QDQ export: onnxruntime-node is not installed");
    if (yo && yq) {
        double d = max_rel(yq, yo), df = yf ? max_rel(yf, yo) : 0;
        printf("ONNX Runtime on the QDQ export vs the int8 program: max rel diff %.3g (vs f32: %.3g)\n", d, df);
        CHECK(d < 1e-4, "ONNX Runtime vs tessera int8: %g", d);
    }
    ts_tensor *yd = NULL, *yod = NULL;
    ts_program *pd = compile(g, TS_QUANT_DYNAMIC, NULL, 0);
    if (pd) yd = run(pd, x, "y");
    if (pf) CHECK_OK(ts_onnx_export_dynamic_int8(g, pf, 1, &y, path_in("dyn.onnx")));
    if (pf && (yod = run_ort(path_in("dyn.onnx"), x)) && yd && yf) {
        double d = max_rel(yd, yod), df = max_rel(yf, yod);
        printf("ONNX Runtime on the dynamic int8 export vs tessera dynamic int8: max rel diff %.3g (vs f32: %.3g)\n", d,
               df);
        CHECK(d < 0.05 && df < 0.05 && df > 1e-5, "ORT dynamic int8 vs tessera dynamic %g, vs f32 %g", d, df);
    }
    ts_program_free(pd);
    ts_tensor *tensors[] = {x, hf, yf, yq, yi, yo, yd, yod};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ts_tensor_free(tensors[i]);
    ts_program_free(pq);
    ts_program_free(pf);
    ts_graph_free(g);
    cli_cleanup("test_qdq");
}

/* The bytes of file path with every occurrence of f32 `from` replaced by `to`; the count. */
static int patch_f32(const char *src, const char *dst, float from, float to) {
    FILE *f = fopen(src, "rb");
    if (!f) return -1;
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f), hits = 0;
    fclose(f);
    for (size_t i = 0; i + 4 <= n; i++)
        if (!memcmp(buf + i, &from, 4)) memcpy(buf + i, &to, 4), hits++;
    f = fopen(dst, "wb");
    if (!f) return -1;
    fwrite(buf, 1, n, f);
    fclose(f);
    return (int)hits;
}

static void test_errors(void) {
    if (cli_setup("test_qdq")) return;
    ts_value y;
    ts_graph *g = build(&y);
    ts_program *pf = compile(g, TS_QUANT_NONE, NULL, 0);
    ts_tensor *x = ts_tensor_new(TS_F32, DIMS(B, T, K));
    memset(ts_tensor_data(x), 0, sizeof(float) * B * T * K);
    const float odd = 0.0123456789f; /* a scale whose bytes occur nowhere else in the file */
    ts_quant_scale sc[2] = {{"w1", odd}, {"w2", odd}};
    if (pf) CHECK_OK(ts_onnx_export_qdq(g, pf, 1, &y, sc, 2, path_in("qdq.onnx")));
    const float bad[2] = {0.f, NAN};
    for (int i = 0; i < 2 && pf; i++) {
        int hits = patch_f32(path_in("qdq.onnx"), path_in("bad.onnx"), odd, bad[i]);
        CHECK(hits == 1, "the scale occurs %d times in the exported file", hits);
        ts_onnx *m = ts_onnx_load(path_in("bad.onnx"));
        ts_onnx_session *s = m ? ts_onnx_session_new(m, NULL) : NULL; /* it imports on the first run */
        ts_tensor *out[1] = {0};
        CHECK(s && ts_onnx_session_run(s, (const ts_tensor *const[]){x}, out) != TS_OK,
              "a QDQ model with scale %g was accepted", bad[i]);
        CHECK_ERRMSG("QuantizeLinear", "scale", "finite number above 0");
        ts_tensor_free(out[0]);
        ts_onnx_session_free(s);
        ts_onnx_free(m);
    }
    /* the exporter: a bad scale, a NaN weight */
    sc[1].scale = 0.f;
    CHECK(pf && ts_onnx_export_qdq(g, pf, 1, &y, sc, 2, path_in("x.onnx")) == TS_ERR_ARG, "scale 0 accepted");
    CHECK_ERRMSG("w2", "finite number above 0");
    sc[1].scale = odd;
    ts_tensor *w = ts_tensor_new(TS_F32, DIMS(H, N));
    for (int i = 0; i < H * N; i++) tu_f32(w)[i] = i == 5 ? NAN : 0.1f;
    if (pf) CHECK_OK(ts_program_set_param(pf, "w2", w));
    CHECK(pf && ts_onnx_export_qdq(g, pf, 1, &y, sc, 2, path_in("x.onnx")) == TS_ERR_ARG, "a NaN weight accepted");
    CHECK_ERRMSG("w2", "non-finite");
    ts_tensor_free(w);
    ts_tensor_free(x);
    ts_program_free(pf);
    ts_graph_free(g);
    cli_cleanup("test_qdq");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    tu_run("export_import_ort", test_export_import_ort, 300);
    tu_run("errors", test_errors, 120);
    return tu_finish("test_qdq");
}
