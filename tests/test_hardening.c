/*
 * test_hardening.c — what a bad-input sweep broke (issue 10), each case one regression test, run
 * in both builds (the ASan + UBSan one aborts on undefined behaviour):
 *  - the fast exp / tanh / erf / sigmoid kernels on NaN, +-inf and the ends of f32's range, alone
 *    and through the ops that use them (softmax, gelu, tanh, sigmoid, exp); casts of NaN and
 *    out-of-range floats to integers;
 *  - ts_program_load refusing weights that hold NaN or inf (f32, bf16, f16), naming the file and
 *    the tensor, unless TS_LOAD_ALLOW_NONFINITE; the program unchanged after a refusal;
 *  - BERT config sizes beyond the bounds refused when read and when built, naming the field;
 *  - ts_compile comparing the planned memory with the device's (or the limit set) before it
 *    allocates: TS_ERR_NOMEM naming what it needs, part by part, its largest value and what the
 *    device has;
 *  - a 10,000-layer graph (30,000 named values) built in well under a second: names are found
 *    by hash, not by a scan;
 *  - num_threads above ts_max_threads() refused;
 *  - LAMB's no_trust parameters take Adam's step with trust ratio 1;
 *  - checkpoint rotation renames a checkpoint aside before deleting it, and nothing reads or
 *    keeps the aside copies of an interrupted deletion.
 */
#define _GNU_SOURCE
#include "tessera_apps.h"
#include "test_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fastmath.h"

static char tdir[64];

static const char *tpath(char *buf, const char *name) {
    snprintf(buf, 256, "%s/%s", tdir, name);
    return buf;
}

/* ------------------------------------------------------------------ fast math on every input */

static void test_fastmath_specials(void) {
    const float inf = INFINITY, nan = NAN;
    CHECK(isnan(ts_expf(nan)) && isnan(ts_tanhf(nan)) && isnan(ts_erff(nan)) && isnan(ts_sigmoidf(nan)),
          "NaN in must give NaN out: exp %g tanh %g erf %g sigmoid %g", ts_expf(nan), ts_tanhf(nan), ts_erff(nan),
          ts_sigmoidf(nan));
    CHECK(ts_expf(inf) == inf && ts_expf(-inf) == 0.f, "exp(+inf) = %g, exp(-inf) = %g", ts_expf(inf), ts_expf(-inf));
    CHECK(ts_expf(89.f) == inf && ts_expf(-88.f) == 0.f, "exp beyond f32's range: %g, %g", ts_expf(89.f),
          ts_expf(-88.f));
    CHECK(isfinite(ts_expf(88.7f)) && fabs(ts_expf(88.7f) / expf(88.7f) - 1) < 1e-6, "exp(88.7) = %g, libm %g",
          ts_expf(88.7f), expf(88.7f));
    CHECK(fabs(ts_expf(-87.3f) / expf(-87.3f) - 1) < 1e-6, "exp(-87.3) = %g, libm %g", ts_expf(-87.3f), expf(-87.3f));
    CHECK(ts_tanhf(inf) == 1.f && ts_tanhf(-inf) == -1.f, "tanh(+-inf) = %g, %g", ts_tanhf(inf), ts_tanhf(-inf));
    CHECK(ts_erff(inf) == 1.f && ts_erff(-inf) == -1.f, "erf(+-inf) = %g, %g", ts_erff(inf), ts_erff(-inf));
    CHECK(ts_sigmoidf(-inf) == 0.f && ts_sigmoidf(inf) == 1.f, "sigmoid(+-inf) = %g, %g", ts_sigmoidf(-inf),
          ts_sigmoidf(inf));
    double worst = 0;
    for (float x = -87.f; x < 88.f; x += 0.37f) worst = fmax(worst, fabs(ts_expf(x) / expf(x) - 1));
    CHECK(worst < 1e-6, "exp's relative error %g over its range", worst);
}

/* The same inputs through the ops whose kernels use them: nothing undefined (the sanitizer build
 * aborts on it), NaN where the math gives NaN, the right limits elsewhere. */
static void test_ops_nonfinite(void) {
    const float v[8] = {NAN, INFINITY, -INFINITY, 0.f, 1.f, -100.f, 100.f, 3.f};
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 4));
    ts_name(g, ts_exp(g, x), "exp");
    ts_name(g, ts_tanh(g, x), "tanh");
    ts_name(g, ts_sigmoid(g, x), "sigmoid");
    ts_name(g, ts_gelu(g, x, 0), "gelu");
    ts_name(g, ts_gelu(g, x, 1), "gelu_tanh");
    ts_name(g, ts_softmax(g, x, TS_NONE), "softmax");
    ts_name(g, ts_cast(g, x, TS_I32), "i32");
    ts_name(g, ts_cast(g, x, TS_U8), "u8");
    ts_name(g, ts_cast(g, x, TS_I64), "i64");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("exp", "tanh", "sigmoid", "gelu", "gelu_tanh",
                                                                 "softmax", "i32", "u8", "i64"),
                                                     .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) goto out;
    ts_tensor *xt = ts_tensor_from(TS_F32, 2, (int64_t[]){2, 4}, v);
    CHECK_OK(ts_program_feed(p, "x", xt));
    CHECK_OK(ts_program_run(p));
    ts_tensor *e = TU_FETCH(p, "exp"), *th = TU_FETCH(p, "tanh"), *sg = TU_FETCH(p, "sigmoid"), *ge = TU_FETCH(p, "gelu"),
              *gt = TU_FETCH(p, "gelu_tanh"), *sm = TU_FETCH(p, "softmax"), *i32 = TU_FETCH(p, "i32"),
              *u8 = TU_FETCH(p, "u8"), *i64 = TU_FETCH(p, "i64");
    if (e && th && sg && ge && gt && sm && i32 && u8 && i64) {
        const float *E = tu_f32(e), *TH = tu_f32(th), *SG = tu_f32(sg), *GE = tu_f32(ge), *GT = tu_f32(gt);
        CHECK(isnan(E[0]) && E[1] == INFINITY && E[2] == 0.f && E[3] == 1.f && E[5] == 0.f && E[6] == INFINITY,
              "exp: %g %g %g %g %g %g", E[0], E[1], E[2], E[3], E[5], E[6]);
        CHECK(isnan(TH[0]) && TH[1] == 1.f && TH[2] == -1.f && TH[6] == 1.f, "tanh: %g %g %g", TH[0], TH[1], TH[2]);
        CHECK(isnan(SG[0]) && SG[1] == 1.f && SG[2] == 0.f && SG[5] == 0.f, "sigmoid: %g %g %g", SG[0], SG[1], SG[2]);
        CHECK(isnan(GE[0]) && GE[1] == INFINITY && GE[5] == 0.f && GE[6] == 100.f, "gelu: %g %g %g %g", GE[0], GE[1],
              GE[5], GE[6]);
        CHECK(isnan(GT[0]) && GT[6] == 100.f && GT[5] == 0.f, "gelu (tanh): %g %g %g", GT[0], GT[5], GT[6]);
        /* row 0 holds NaN: all NaN; row 1 (0, 1, -100, 100... no: 1.f, -100, 100, 3) is finite */
        const float *SM = tu_f32(sm);
        CHECK(isnan(SM[0]) && isnan(SM[3]), "softmax of a row with NaN: %g %g", SM[0], SM[3]);
        CHECK(isfinite(SM[4]) && fabs(SM[4] + SM[5] + SM[6] + SM[7] - 1) < 1e-6 && SM[6] > 0.99f,
              "softmax of a finite row: %g %g %g %g", SM[4], SM[5], SM[6], SM[7]);
        const int32_t *I = ts_tensor_data(i32);
        const uint8_t *U = ts_tensor_data(u8);
        const int64_t *L = ts_tensor_data(i64);
        CHECK(I[0] == 0 && I[1] == INT32_MAX && I[2] == INT32_MIN && I[5] == -100 && I[7] == 3,
              "float -> i32: NaN %d, +inf %d, -inf %d, -100 %d", I[0], I[1], I[2], I[5]);
        CHECK(U[0] == 0 && U[1] == 255 && U[2] == 0 && U[5] == 0 && U[6] == 100, "float -> u8: %d %d %d %d %d", U[0],
              U[1], U[2], U[5], U[6]);
        CHECK(L[0] == 0 && L[1] == INT64_MAX && L[2] == INT64_MIN && L[5] == -100, "float -> i64: %lld %lld %lld",
              (long long)L[0], (long long)L[1], (long long)L[2]);
    }
    ts_tensor *all[] = {xt, e, th, sg, ge, gt, sm, i32, u8, i64};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ts_tensor_free(all[i]);
out:
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ non-finite weights */

static void test_load_nonfinite(void) {
    char pa[256], pb[256], ph[256], pf[256];
    float w[6] = {1, 2, 3, 4, 5, 6}, bad[6] = {1, 2, NAN, 4, INFINITY, NAN};
    ts_tensor *good = ts_tensor_from(TS_F32, 2, (int64_t[]){2, 3}, w), *nanw = ts_tensor_from(TS_F32, 2, (int64_t[]){2, 3}, bad);
    ts_tensor *bias = ts_tensor_from(TS_F32, 1, (int64_t[]){3}, w);
    uint16_t hb[6], hh[6];
    ts_f32_to_bf16(bad, hb, 6);
    ts_f32_to_f16(bad, hh, 6);
    ts_tensor *nb = ts_tensor_from(TS_BF16, 2, (int64_t[]){2, 3}, hb), *nh = ts_tensor_from(TS_F16, 2, (int64_t[]){2, 3}, hh);
    const char *names[2] = {"lin.bias", "lin.weight"};
    CHECK_OK(ts_safetensors_save(tpath(pa, "nan.safetensors"), 2, names, (const ts_tensor *const[]){bias, nanw}, NULL));
    CHECK_OK(ts_safetensors_save(tpath(pb, "nan_bf16.safetensors"), 2, names, (const ts_tensor *const[]){bias, nb}, NULL));
    CHECK_OK(ts_safetensors_save(tpath(ph, "nan_f16.safetensors"), 2, names, (const ts_tensor *const[]){bias, nh}, NULL));
    CHECK_OK(ts_safetensors_save(tpath(pf, "good.safetensors"), 2, names, (const ts_tensor *const[]){bias, good}, NULL));

    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(1, 3));
    ts_value W = ts_param(g, "lin.weight", TS_F32, DIMS(2, 3), ts_init_const(7.f));
    ts_value b = ts_param(g, "lin.bias", TS_F32, DIMS(3), ts_init_zeros());
    ts_name(g, ts_add(g, ts_matmul(g, x, W, 0, 1), ts_reshape(g, ts_slice(g, b, 0, 0, 2), 1, (int64_t[]){2})), "y");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) goto out;
    const char *files[3] = {pa, pb, ph};
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(ts_program_load(p, files[i], TS_LOAD_STRICT, NULL), TS_ERR_IO);
        CHECK_ERRMSG(files[i], "tensor 'lin.weight'", "holds 3 non-finite values of 6 (2 NaN, 1 inf; the first at "
                     "element 2)", "TS_LOAD_ALLOW_NONFINITE");
    }
    ts_tensor *cur = TU_FETCH(p, "lin.weight"), *cb = TU_FETCH(p, "lin.bias");
    CHECK(cur && tu_f32(cur)[0] == 7.f && tu_f32(cur)[5] == 7.f && cb && tu_f32(cb)[0] == 0.f,
          "a refused load changed the parameters");
    ts_tensor_free(cur);
    ts_tensor_free(cb);
    CHECK_OK(ts_program_load(p, pa, TS_LOAD_STRICT | TS_LOAD_ALLOW_NONFINITE, NULL));
    cur = TU_FETCH(p, "lin.weight");
    CHECK(cur && isnan(tu_f32(cur)[2]) && isinf(tu_f32(cur)[4]) && tu_f32(cur)[0] == 1.f,
          "TS_LOAD_ALLOW_NONFINITE did not load the values as they are");
    ts_tensor_free(cur);
    CHECK_OK(ts_program_load(p, pf, TS_LOAD_STRICT, NULL));
out:
    ts_program_free(p);
    ts_graph_free(g);
    ts_tensor *all[] = {good, nanw, bias, nb, nh};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ts_tensor_free(all[i]);
}

/* ------------------------------------------------------------------ size bounds */

static void write_text(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    if (f) fputs(s, f), fclose(f);
}

static void test_config_bounds(void) {
    static const struct {
        const char *field;
        long long v;
    } cases[] = {
        {"hidden_size", 1000000000},      {"vocab_size", 2000000000},        {"intermediate_size", 2000000000},
        {"max_position_embeddings", 2000000000}, {"type_vocab_size", 2000000000}, {"num_hidden_layers", 1000000},
    };
    char path[256];
    tpath(path, "config.json");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        long long v[7] = {30522, 768, 12, 12, 3072, 512, 2};
        static const char *keys[7] = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                      "intermediate_size", "max_position_embeddings", "type_vocab_size"};
        size_t n = (size_t)snprintf(text, sizeof text, "{");
        for (int k = 0; k < 7; k++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%s\"%s\": %lld", k ? ", " : "", keys[k],
                                  strcmp(keys[k], cases[i].field) ? v[k] : cases[i].v);
        snprintf(text + n, sizeof text - n, "}\n");
        write_text(path, text);
        ts_bert_config c;
        ts_bert_config_default(&c);
        double t0 = tu_now();
        CHECK_STATUS(ts_bert_config_load(path, &c), TS_ERR_ARG);
        CHECK_ERRMSG("config.json", cases[i].field, "above tessera's bound");
        CHECK(c.hidden_size == 768 && c.vocab_size == 30522, "a refused config changed *cfg");
        /* the same sizes through ts_bert_build, and the public check */
        ts_bert_config_default(&c);
        if (!strcmp(cases[i].field, "hidden_size")) c.hidden_size = (int)cases[i].v, c.num_attention_heads = 1;
        if (!strcmp(cases[i].field, "vocab_size")) c.vocab_size = (int)cases[i].v;
        if (!strcmp(cases[i].field, "num_hidden_layers")) c.num_hidden_layers = (int)cases[i].v;
        if (!strcmp(cases[i].field, "intermediate_size")) c.intermediate_size = (int)cases[i].v;
        if (!strcmp(cases[i].field, "max_position_embeddings")) c.max_position_embeddings = (int)cases[i].v;
        if (!strcmp(cases[i].field, "type_vocab_size")) c.type_vocab_size = (int)cases[i].v;
        CHECK_STATUS(ts_bert_config_check(&c), TS_ERR_ARG);
        CHECK_ERRMSG(cases[i].field, "above tessera's bound");
        ts_graph *g = ts_graph_new();
        CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_MODEL, 1, 8, NULL), TS_ERR_ARG);
        CHECK_ERRMSG(cases[i].field);
        ts_graph_free(g);
        CHECK(tu_now() - t0 < 1.0, "refusing %s took %.1f s", cases[i].field, tu_now() - t0);
    }
    /* a shape beyond what any buffer can hold is refused where it is built */
    ts_graph *g = ts_graph_new();
    CHECK(ts_param(g, "huge", TS_F32, 3, (int64_t[]){1 << 20, 1 << 20, 1 << 20}, ts_init_zeros()) == TS_NONE,
          "a 2^60-element parameter was accepted");
    CHECK_ERRMSG("'huge'", "TiB");
    ts_graph_free(g);
    g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(1 << 24, 1)), b = ts_input(g, "b", TS_F32, DIMS(1, 1 << 24));
    CHECK(ts_matmul(g, a, b, 0, 0) == TS_NONE, "a [2^24, 2^24] product (1 PiB) was accepted");
    CHECK_ERRMSG("op matmul", "TiB");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ the device's memory */

static void test_memory_check(void) {
    /* 2^44 floats, 64 TiB: more than any machine this runs on has */
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(1, 1 << 22));
    ts_value w = ts_param(g, "big.weight", TS_F32, DIMS(1 << 22, 1 << 22), ts_init_normal(0.02f));
    ts_name(g, ts_matmul(g, x, w, 0, 0), "y");
    double t0 = tu_now();
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p == NULL && ts_last_status() == TS_ERR_NOMEM, "a 64 TiB program compiled (or failed otherwise: %s)",
          ts_last_error());
    CHECK_ERRMSG("the program needs 65536.0", "GiB on device cpu", "parameters 65536.00", "the largest value: 'big.weight' "
                 "[4194304, 4194304] f32", "the device has", "(its memory)");
    CHECK(tu_now() - t0 < 1.0, "refusing it took %.1f s (nothing should be allocated)", tu_now() - t0);
    ts_program_free(p);
    ts_graph_free(g);
    /* a limit set by the caller: a 4 MiB parameter, a 1 MiB limit */
    g = ts_graph_new();
    x = ts_input(g, "x", TS_F32, DIMS(8, 1024));
    w = ts_param(g, "w", TS_F32, DIMS(1024, 1024), ts_init_normal(0.02f));
    ts_name(g, ts_matmul(g, x, w, 0, 0), "y");
    p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1, .memory_limit = 1 << 20});
    CHECK(p == NULL && ts_last_status() == TS_ERR_NOMEM, "a 4 MiB program fitted a 1 MiB limit");
    CHECK_ERRMSG("parameters 0.00", "the device has 0.00 GiB (the limit set)", "'w' [1024, 1024] f32");
    p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1, .memory_limit = 64 << 20});
    CHECK(p != NULL, "a 4 MiB program did not fit 64 MiB: %s", ts_last_error());
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ names by hash */

/* n layers of matmul + bias + tanh, each with 3 names; the seconds it took in *t. */
static ts_graph *layers_graph(int n, ts_value *last, double *t) {
    double t0 = tu_now();
    ts_graph *g = ts_graph_new();
    ts_value h = ts_input(g, "x", TS_F32, DIMS(2, 4));
    char name[64];
    for (int l = 0; l < n; l++) {
        snprintf(name, sizeof name, "layer.%d.weight", l);
        ts_value w = ts_param(g, name, TS_F32, DIMS(4, 4), ts_init_normal(0.1f));
        snprintf(name, sizeof name, "layer.%d.bias", l);
        ts_value b = ts_param(g, name, TS_F32, DIMS(4), ts_init_zeros());
        snprintf(name, sizeof name, "layer.%d.out", l);
        h = ts_name(g, ts_tanh(g, ts_add(g, ts_matmul(g, h, w, 0, 0), b)), name);
    }
    *last = h;
    *t = tu_now() - t0;
    return g;
}

/* Names are found by hash: 4 x the layers take about 4 x the time (a linear search of the names
 * would take 16 x); compared with a quarter of the graph built just before, not with a clock
 * limit, so a loaded machine does not fail it. */
static void test_many_layers(void) {
    double quarter, built;
    ts_value h;
    ts_graph_free(layers_graph(2500, &h, &quarter));
    ts_graph *g = layers_graph(10000, &h, &built);
    CHECK_OK(ts_graph_status(g));
    CHECK(built < 8 * quarter + 0.05, "building 10,000 layers (30,001 named values) took %.3f s, %.1f x 2,500 layers' "
          "%.3f s (linear: about 4 x)", built, built / quarter, quarter);
    printf("  10,000 layers, 30,001 names: built in %.3f s (2,500 layers: %.3f s)\n", built, quarter);
    CHECK(ts_lookup(g, "layer.9999.out") == h && ts_lookup(g, "layer.0.weight") != TS_NONE &&
          ts_lookup(g, "layer.10000.out") == TS_NONE, "lookups by name");
    CHECK(ts_param(g, "layer.5000.bias", TS_F32, DIMS(4), ts_init_zeros()) == TS_NONE, "a duplicate name accepted");
    CHECK_ERRMSG("'layer.5000.bias' is already used");
    ts_graph_free(g);
    /* renaming: the old name is free again, the new one taken */
    g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, DIMS(2));
    ts_value v = ts_name(g, ts_exp(g, a), "first");
    CHECK(ts_name(g, v, "second") == v && ts_lookup(g, "second") == v && ts_lookup(g, "first") == TS_NONE, "rename");
    ts_value u = ts_name(g, ts_tanh(g, a), "first");
    CHECK(u != TS_NONE && ts_lookup(g, "first") == u, "a name freed by a rename could not be reused: %s",
          ts_last_error());
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ threads */

static void test_threads_bound(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(ts_max_threads() == 4 * (cpus > 0 ? cpus : 1), "ts_max_threads %d for %ld CPUs", ts_max_threads(), cpus);
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4));
    ts_name(g, ts_exp(g, x), "y");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .num_threads = 100000});
    CHECK(p == NULL && ts_last_status() == TS_ERR_ARG, "100000 threads accepted");
    CHECK_ERRMSG("num_threads 100000", "4 x the");
    p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .num_threads = ts_max_threads()});
    CHECK(p != NULL, "ts_max_threads() refused: %s", ts_last_error());
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ LAMB without layer adaptation */

/* One LAMB step on two parameters, one of them in no_trust: that one moves by Adam's step
 * lr * r (trust 1), the other by lr * ||p|| / ||r|| * r. */
static void test_lamb_no_trust(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(1, 4));
    ts_value w = ts_param(g, "fc.weight", TS_F32, DIMS(4, 4), ts_init_const(0.5f));
    ts_value b = ts_param(g, "fc.bias", TS_F32, DIMS(4), ts_init_const(0.25f));
    ts_value y = ts_add(g, ts_matmul(g, x, w, 0, 0), b);
    ts_value loss = ts_name(g, ts_reduce_sum(g, ts_mul(g, y, y), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_LAMB);
    static const char *const excl[] = {"bias"};
    o.weight_decay = 0.f;
    o.no_trust = excl;
    o.nno_trust = 1;
    CHECK_OK(ts_optimizer(g, ts_scalar(g, 0.1f), &o));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "fc.bias@GRAD", "fc.weight@GRAD")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) goto out;
    ts_tensor *xt = ts_tensor_from(TS_F32, 2, (int64_t[]){1, 4}, (float[]){1, -2, 3, 0.5f});
    CHECK_OK(ts_program_feed(p, "x", xt));
    CHECK_OK(ts_program_run(p));
    ts_tensor *gb = TU_FETCH(p, "fc.bias@GRAD"), *gw = TU_FETCH(p, "fc.weight@GRAD");
    ts_tensor *nb = TU_FETCH(p, "fc.bias"), *nw = TU_FETCH(p, "fc.weight");
    if (gb && gw && nb && nw) {
        /* first step: m / (1 - b1) = g, v / (1 - b2) = g^2, r = g / (|g| + eps) */
        double eps = o.eps, rn = 0, pn = 0, worst_b = 0, worst_w = 0;
        for (int i = 0; i < 4; i++) {
            double gi = tu_f32(gb)[i], r = gi / (fabs(gi) + eps);
            worst_b = fmax(worst_b, fabs(tu_f32(nb)[i] - (0.25 - 0.1 * r)));
        }
        for (int i = 0; i < 16; i++) {
            double gi = tu_f32(gw)[i], r = gi / (fabs(gi) + eps);
            rn += r * r, pn += 0.25;
        }
        double trust = sqrt(pn) / sqrt(rn);
        for (int i = 0; i < 16; i++) {
            double gi = tu_f32(gw)[i], r = gi / (fabs(gi) + eps);
            worst_w = fmax(worst_w, fabs(tu_f32(nw)[i] - (0.5 - 0.1 * trust * r)));
        }
        CHECK(worst_b < 1e-6, "the no_trust bias did not take Adam's step: error %g", worst_b);
        CHECK(worst_w < 1e-6 && fabs(trust - 1) > 0.1, "the weight's trust-ratio step: error %g (trust %g)", worst_w,
              trust);
    }
    ts_tensor *all[] = {xt, gb, gw, nb, nw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ts_tensor_free(all[i]);
out:
    ts_program_free(p);
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ checkpoint rotation */

static int count_entries(const char *path, const char *contains) {
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += e->d_name[0] != '.' && strstr(e->d_name, contains) != NULL;
    if (d) closedir(d);
    return n;
}

static void test_rotation_aside(void) {
    ts_graph *g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, DIMS(3), ts_init_const(1.f));
    ts_name(g, ts_exp(g, w), "y");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y")});
    char parent[256], path[1024], found[512];
    tpath(parent, "ckpts");
    mkdir(parent, 0777);
    for (int s = 1; s <= 4; s++) {
        snprintf(path, sizeof path, "%s/step-%06d", parent, s);
        ts_program_set_step(p, (uint64_t)s);
        CHECK_OK(ts_program_save_state(p, path, NULL));
    }
    /* what a kill in the middle of a deletion leaves: a renamed-aside copy of the newest step */
    snprintf(path, sizeof path, "cp -r '%s/step-000004' '%s/step-000009.del-12345'", parent, parent);
    CHECK(system(path) == 0, "cp");
    CHECK_OK(ts_checkpoint_latest(parent, "step-", found, sizeof found));
    CHECK(strstr(found, "step-000004") && !strstr(found, ".del-"), "latest picked %s", found);
    CHECK_OK(ts_checkpoint_rotate(parent, "step-", 2));
    CHECK(count_entries(parent, "step-") == 2 && count_entries(parent, ".del-") == 0,
          "after rotation keep 2: %d entries, %d aside copies left", count_entries(parent, "step-"),
          count_entries(parent, ".del-"));
    snprintf(path, sizeof path, "%s/step-000003", parent);
    CHECK_OK(ts_checkpoint_check(path));
    ts_program_free(p);
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    snprintf(tdir, sizeof tdir, "/tmp/ts_hardening_XXXXXX");
    if (!mkdtemp(tdir)) return 1;
    RUN(test_fastmath_specials);
    RUN(test_ops_nonfinite);
    RUN(test_load_nonfinite);
    RUN(test_config_bounds);
    RUN(test_memory_check);
    RUN(test_many_layers);
    RUN(test_threads_bound);
    RUN(test_lamb_no_trust);
    RUN(test_rotation_aside);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tdir);
    return tu_finish("test_hardening");
}
