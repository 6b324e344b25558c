/*
 * test_prepack.c — prepacked matmul weights (backend/cpu/matmul_dnnl.c): in a program whose
 * weights change only between runs, the CPU backend keeps each weight's copy in oneDNN's blocked
 * layout and remakes it when a weight is written. These cases check that
 *  - a program without optimizer updates gets a frozen-weights plan (ts_abi_plan.param_gen), and a
 *    training program does not;
 *  - the outputs are the product of the weights in the program now: after ts_program_set_param
 *    and after ts_program_load (a stale blocked copy would give the old product);
 *  - prepacked and plain weights (the CPU's option matmul_weights "plain") agree to f32 rounding;
 *  - autocast's bf16 copy of a weight is kept across runs (backend/cpu/cast_kept.c) in a buffer of
 *    its own, and remade after the weight is written;
 *  - a convolution's weights (backend/cpu/conv_dnnl.c) alike: kept reordered, remade after a write.
 */
#include "test_util.h"

#include "backend/cpu/cpu.h"  /* the matmul kernel's state: whether it holds a blocked copy */
#include "runtime/program.h"  /* a compiled program's plans */

enum { B = 2, T = 64, K = 96, N = 128, N2 = 80 };

/* y = (x w1^T + b1) w2: w1 [N, K] as a Linear stores it (trans_b), w2 [N, N2] untransposed. */
static ts_graph *model(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 3);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, T, K));
    ts_value w1 = ts_param(g, "w1", TS_F32, DIMS(N, K), ts_init_normal(0.2f));
    ts_value b1 = ts_param(g, "b1", TS_F32, DIMS(N), ts_init_normal(0.5f));
    ts_value w2 = ts_param(g, "w2", TS_F32, DIMS(N, N2), ts_init_normal(0.2f));
    ts_value h = ts_add(g, ts_matmul(g, x, w1, 0, 1), b1);
    ts_name(g, ts_matmul(g, h, w2, 0, 0), "y");
    return g;
}

/* The product in double from the program's own parameters; max |y - ref| / max(1, |ref|). */
static double err_vs_params(ts_program *p, ts_tensor *xt, ts_tensor *yt) {
    ts_tensor *w1 = NULL, *b1 = NULL, *w2 = NULL;
    CHECK_OK(ts_program_get_param(p, "w1", &w1));
    CHECK_OK(ts_program_get_param(p, "b1", &b1));
    CHECK_OK(ts_program_get_param(p, "w2", &w2));
    double worst = INFINITY;
    if (w1 && b1 && w2) {
        const float *x = ts_tensor_data(xt), *y = ts_tensor_data(yt), *a = ts_tensor_data(w1),
                    *c = ts_tensor_data(b1), *d = ts_tensor_data(w2);
        double *h = malloc(sizeof(double) * N);
        worst = 0;
        for (int r = 0; r < B * T; r++) {
            for (int n = 0; n < N; n++) {
                double s = c[n];
                for (int k = 0; k < K; k++) s += (double)x[r * K + k] * a[n * K + k];
                h[n] = s;
            }
            for (int m = 0; m < N2; m++) {
                double s = 0;
                for (int n = 0; n < N; n++) s += h[n] * d[n * N2 + m];
                double e = fabs(y[r * N2 + m] - s) / (fabs(s) > 1 ? fabs(s) : 1);
                if (!(e <= worst)) worst = e;
            }
        }
        free(h);
    }
    ts_tensor_free(w1), ts_tensor_free(b1), ts_tensor_free(w2);
    return worst;
}

static ts_tensor *run_y(ts_program *p, const ts_tensor *xt) {
    CHECK_OK(ts_program_feed(p, "x", xt));
    CHECK_OK(ts_program_run(p));
    return TU_FETCH(p, "y");
}

/* How many of p's matmul nodes the kernel prepacks (prepare on the CPU backend's view of the
 * program's own plans, as its compile makes it from the public tables, on a device context with
 * option matmul_weights "plain" when plain). */
static int count_prepacked(ts_program *p, int *nmatmul, int plain) {
    ts_cpu_dev dev = {.matmul_plain = plain};
    const ts_cpu_kernel *kk = ts_cpu_kernel_for(TS_OP_MATMUL);
    int packed = 0;
    *nmatmul = 0;
    if (kk && kk->prepare && ts_cpu_dnnl_ready(&dev))
        for (int k = 0; k < p->one->nparts; k++) {
            ts_graph *vg = NULL;
            ts_plan plan;
            CHECK_OK(ts_cpu_view(&p->one->parts[k].abi, &vg, &plan));
            for (int i = 0; vg && i < plan.nsched; i++) {
                const ts_node *n = &vg->nodes[i];
                if (n->op != TS_OP_MATMUL) continue;
                void *state = NULL;
                size_t scratch = 0;
                CHECK_OK(kk->prepare(&dev, &plan, n, &state, &scratch));
                (*nmatmul)++;
                packed += kk->kept_bytes && state && kk->kept_bytes(state) > 0;
                if (state && kk->release) kk->release(state);
            }
            ts_cpu_view_free(vg, &plan);
        }
    ts_cpu_dev_release(&dev);
    return packed;
}

static void test_weights_written_between_runs(void) {
    ts_graph *g = model();
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p) return;
    CHECK(p->one->nparts >= 1 && p->one->parts[0].abi.param_gen != NULL, "an inference program's plan has no param_gen");
    int nmm = 0, packed = count_prepacked(p, &nmm, 0);
    printf("  %d of %d matmuls prepacked (oneDNN may keep a weight's own layout where that is its best)\n", packed,
           nmm);
    CHECK(nmm == 2, "%d matmul nodes, expected 2", nmm);
    ts_memory mem = {.struct_size = sizeof mem};
    CHECK_OK(ts_program_memory(p, &mem));
    size_t pbytes = sizeof(float) * (N * K + N + N * N2);
    CHECK(mem.params == pbytes, "params %zu bytes, expected %zu", mem.params, pbytes);
    /* a blocked copy is at least the weight's size (oneDNN pads blocks) */
    CHECK(packed ? mem.weight_copies >= sizeof(float) * (packed == 2 ? N * K + N * N2 : N * N2) : mem.weight_copies == 0,
          "%d weights prepacked, weight_copies %zu bytes", packed, mem.weight_copies);

    tu_rng r = tu_rng_seed(7);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(B, T, K), -1, 1);
    ts_tensor *y = run_y(p, xt);
    double e0 = y ? err_vs_params(p, xt, y) : INFINITY;
    ts_tensor_free(y);
    y = run_y(p, xt); /* a second run reuses the blocked copies */
    double e1 = y ? err_vs_params(p, xt, y) : INFINITY;
    ts_tensor_free(y);

    /* a new w1 through ts_program_set_param: the next run must multiply by it */
    ts_tensor *w1n = tu_rand_tensor(&r, DIMS(N, K), -0.3, 0.3);
    CHECK_OK(ts_program_set_param(p, "w1", w1n));
    y = run_y(p, xt);
    double e2 = y ? err_vs_params(p, xt, y) : INFINITY;
    ts_tensor_free(y);

    /* save, change w2, load the saved file back: the product of the saved weights again */
    char path[] = "/tmp/ts_prepack_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) close(fd);
    CHECK_OK(ts_program_save(p, path, TS_F32));
    y = run_y(p, xt);
    ts_tensor *w2n = tu_rand_tensor(&r, DIMS(N, N2), -0.3, 0.3);
    CHECK_OK(ts_program_set_param(p, "w2", w2n));
    ts_tensor *y_changed = run_y(p, xt);
    double e3 = y_changed ? err_vs_params(p, xt, y_changed) : INFINITY;
    int nmissing = -1;
    CHECK_OK(ts_program_load(p, path, TS_LOAD_STRICT, &nmissing));
    ts_tensor *y_loaded = run_y(p, xt);
    double e4 = y_loaded ? err_vs_params(p, xt, y_loaded) : INFINITY;
    CHECK(y && y_loaded && tu_bitwise_equal(y, y_loaded), "after ts_program_load of the saved weights the output "
          "differs from the one those weights gave before");
    CHECK(y && y_changed && tu_max_abs_diff_f(tu_f32(y), tu_f32(y_changed), B * T * N2) > 1e-3,
          "a new w2 did not change the output");
    printf("  error vs the parameters' product: first run %.2e, second %.2e, new w1 %.2e, new w2 %.2e, "
           "loaded %.2e\n", e0, e1, e2, e3, e4);
    double worst = fmax(fmax(fmax(e0, e1), fmax(e2, e3)), e4);
    CHECK(worst <= 1e-5, "an output is off the product of the program's current weights by %.3e", worst);
    unlink(path);
    ts_tensor_free(y), ts_tensor_free(y_changed), ts_tensor_free(y_loaded);
    ts_tensor_free(w1n), ts_tensor_free(w2n), ts_tensor_free(xt);
    ts_program_free(p);
}

/* A 3x3 convolution of an inference program keeps its weights reordered for oneDNN across runs
 * (weight_copies > 0); after ts_program_set_param the output is the convolution with the new
 * weights: equal to a fresh program compiled with those weights. */
static ts_tensor *conv_run(ts_program *p, const ts_tensor *x) {
    if (ts_program_feed(p, "x", x) || ts_program_run(p)) return NULL;
    return TU_FETCH(p, "y");
}
static void test_conv_weights_written_between_runs(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 5);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 16, 12, 12));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(32, 16, 3, 3), ts_init_normal(0.2f));
    ts_conv_opts o = {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1};
    ts_name(g, ts_conv2d(g, x, w, TS_NONE, &o), "y");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    ts_program *fresh = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p && fresh, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p || !fresh) {
        ts_program_free(p), ts_program_free(fresh);
        return;
    }
    ts_memory mem = {.struct_size = sizeof mem};
    CHECK_OK(ts_program_memory(p, &mem));
    printf("  conv weight_copies %zu bytes (the weight: %zu)\n", mem.weight_copies, sizeof(float) * 32 * 16 * 9);
    CHECK(mem.weight_copies >= sizeof(float) * 32 * 16 * 9, "the convolution's weights are not kept reordered");
    tu_rng r = tu_rng_seed(8);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(2, 16, 12, 12), -1, 1);
    ts_tensor *y0 = conv_run(p, xt), *y1 = conv_run(p, xt);
    CHECK(y0 && y1 && tu_bitwise_equal(y0, y1), "a second run (the kept copy) differs from the first");
    ts_tensor *wn = tu_rand_tensor(&r, DIMS(32, 16, 3, 3), -0.3, 0.3);
    CHECK_OK(ts_program_set_param(p, "w", wn));
    CHECK_OK(ts_program_set_param(fresh, "w", wn));
    ts_tensor *y2 = conv_run(p, xt), *yf = conv_run(fresh, xt);
    CHECK(y2 && yf && tu_bitwise_equal(y2, yf), "after set_param the output is not the new weights' convolution");
    CHECK(y0 && y2 && tu_max_abs_diff_f(tu_f32(y0), tu_f32(y2), ts_tensor_numel(y0)) > 1e-3,
          "new weights did not change the output");
    ts_tensor_free(y0), ts_tensor_free(y1), ts_tensor_free(y2), ts_tensor_free(yf);
    ts_tensor_free(wn), ts_tensor_free(xt);
    ts_program_free(p), ts_program_free(fresh);
}

/* Same weights, prepacked or read as stored: the same product up to f32 summation order. Plain:
 * on device cpu:1 with its option matmul_weights "plain" (cpu, compiled after, keeps its own). */
static void test_packed_matches_plain(void) {
    ts_program *p[2];
    CHECK_OK(ts_device_set_option("cpu:1", "matmul_weights", "plain"));
    for (int k = 1; k >= 0; k--) {
        ts_graph *g = model();
        p[k] = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1, .device = k ? "cpu:1" : "cpu"});
        CHECK(p[k] != NULL, "compile: %s", ts_last_error());
        ts_graph_free(g);
    }
    int nmm = 0, packed_plain = p[1] ? count_prepacked(p[1], &nmm, 1) : -1, n0 = 0;
    int packed = p[0] ? count_prepacked(p[0], &n0, 0) : -1;
    CHECK(packed_plain == 0, "%d matmuls prepacked under matmul_weights \"plain\"", packed_plain);
    ts_memory m[2] = {{.struct_size = sizeof m[0]}, {.struct_size = sizeof m[1]}};
    for (int k = 0; k < 2; k++)
        if (p[k]) CHECK_OK(ts_program_memory(p[k], &m[k]));
    CHECK(m[1].weight_copies == 0, "cpu:1 (matmul_weights plain) keeps %zu bytes of weight copies", m[1].weight_copies);
    CHECK(packed > 0 ? m[0].weight_copies > 0 : m[0].weight_copies == 0,
          "cpu (matmul_weights packed): %d matmuls prepacked, %zu bytes of weight copies", packed, m[0].weight_copies);
    CHECK_OK(ts_device_set_option("cpu:1", "matmul_weights", "packed"));
    if (p[0] && p[1]) {
        tu_rng r = tu_rng_seed(9);
        ts_tensor *xt = tu_rand_tensor(&r, DIMS(B, T, K), -1, 1);
        ts_tensor *y0 = run_y(p[0], xt), *y1 = run_y(p[1], xt);
        if (y0 && y1) {
            double d = tu_max_abs_diff_f(tu_f32(y0), tu_f32(y1), B * T * N2);
            printf("  prepacked vs plain: max |difference| %.2e\n", d);
            CHECK(d <= 1e-4, "prepacked and plain weights differ by %.3e", d);
        }
        ts_tensor_free(y0), ts_tensor_free(y1), ts_tensor_free(xt);
    }
    ts_program_free(p[0]);
    ts_program_free(p[1]);
}

/* Make g a training program's graph: loss = mean(y^2), its backward, and an SGD update; returns the
 * loss. */
static ts_value add_sgd_training(ts_graph *g, ts_value y) {
    ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, y, y), 0, NULL, 0), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_SGD);
    CHECK_OK(ts_optimizer(g, ts_scalar(g, 0.1f), &o));
    return loss;
}

/* A training program updates its weights inside the run: no frozen plan, nothing prepacked. */
static void test_training_program_reads_weights_as_stored(void) {
    ts_graph *g = model();
    add_sgd_training(g, ts_lookup(g, "y"));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p) return;
    for (int k = 0; k < p->one->nparts; k++)
        CHECK(p->one->parts[k].abi.param_gen == NULL, "part %d of a training program has a frozen-weights plan", k);
    int nmm = 0, packed = count_prepacked(p, &nmm, 0);
    CHECK(nmm >= 2 && packed == 0, "training program: %d of %d matmuls prepacked", packed, nmm);
    ts_memory mem = {.struct_size = sizeof mem};
    CHECK_OK(ts_program_memory(p, &mem));
    CHECK(mem.weight_copies == 0, "a training program keeps %zu bytes of weight copies", mem.weight_copies);
    ts_program_free(p);
}

/* y = x w^T as autocast computes it: both cast to bf16, the product in f32. The cast of w is a
 * kept cast in an inference program (its own buffer, made again only after w is written), not in
 * a training program. */
static void test_kept_bf16_weight_cast(void) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 4);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(B, T, K));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(N, K), ts_init_normal(0.2f));
    ts_value wc = ts_cast(g, w, TS_BF16);
    ts_value y = ts_name(g, ts_cast(g, ts_matmul(g, ts_cast(g, x, TS_BF16), wc, 0, 1), TS_F32), "y");
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    add_sgd_training(g, y);
    ts_program *pt = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    CHECK(pt != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p || !pt) {
        ts_program_free(p), ts_program_free(pt);
        return;
    }
    CHECK(p->one->owned[wc] == 1, "the inference program's bf16 copy of w is not in a buffer of its own");
    ts_memory mi = {.struct_size = sizeof mi}, mt = {.struct_size = sizeof mt};
    CHECK_OK(ts_program_memory(p, &mi));
    CHECK_OK(ts_program_memory(pt, &mt));
    CHECK(mi.params == sizeof(float) * N * K && mt.params == mi.params, "params %zu / %zu bytes, expected %zu",
          mi.params, mt.params, sizeof(float) * N * K);
    CHECK(mi.weight_copies >= 2 * N * K && mt.weight_copies == 0,
          "weight copies: inference %zu bytes (at least the bf16 copy, %d), training %zu (none)", mi.weight_copies,
          2 * N * K, mt.weight_copies);
    CHECK(pt->one->owned[wc] == 0, "the training program keeps its bf16 copy of w (w changes inside every run)");
    int nmm = 0, packed = count_prepacked(p, &nmm, 0);
    printf("  bf16: %d of %d matmuls prepacked\n", packed, nmm);

    tu_rng r = tu_rng_seed(5);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(B, T, K), -1, 1);
    double worst = 0;
    for (int round = 0; round < 3; round++) { /* first run, a run on the kept copy, a run after a new w */
        if (round == 2) {
            ts_tensor *wn = tu_rand_tensor(&r, DIMS(N, K), -0.3, 0.3);
            CHECK_OK(ts_program_set_param(p, "w", wn));
            ts_tensor_free(wn);
        }
        ts_tensor *yt = run_y(p, xt), *wt = NULL;
        CHECK_OK(ts_program_get_param(p, "w", &wt));
        if (yt && wt) {
            const float *xv = tu_f32(xt), *wv = tu_f32(wt), *yv = tu_f32(yt);
            for (int row = 0; row < B * T; row++)
                for (int n = 0; n < N; n++) {
                    double s = 0, sa = 0;
                    for (int k = 0; k < K; k++) {
                        double t = (double)tu_bf16(xv[row * K + k]) * tu_bf16(wv[n * K + k]);
                        s += t, sa += fabs(t);
                    }
                    double e = fabs(yv[row * N + n] - s) / (sa > 1 ? sa : 1);
                    if (!(e <= worst)) worst = e;
                }
        } else {
            worst = INFINITY;
        }
        ts_tensor_free(yt), ts_tensor_free(wt);
    }
    printf("  bf16: largest |y - product of the bf16-rounded operands| / sum |terms|: %.2e\n", worst);
    CHECK(worst <= 1e-5, "bf16 output off the product of the current w by %.3e (a stale bf16 copy?)", worst);
    ts_tensor_free(xt);
    ts_program_free(p), ts_program_free(pt);
}

/* ts_device_set_option's refusals: each TS_ERR_ARG naming what it refuses; an unknown device as
 * a compile finds it. */
static void test_device_option_errors(void) {
    CHECK(ts_device_set_option("cpu", "matmul_weight", "plain") == TS_ERR_ARG &&
              strstr(ts_last_error(), "'matmul_weight'") && strstr(ts_last_error(), "matmul_weights"),
          "an unknown key: %s", ts_last_error());
    CHECK(ts_device_set_option("cpu", "conv_layout", "nhwc") == TS_ERR_ARG && strstr(ts_last_error(), "'nhwc'") &&
              strstr(ts_last_error(), "auto or plain or blocked"),
          "an unknown value: %s", ts_last_error());
    CHECK(ts_device_set_option("cpu", "fallback", "gpu") == TS_ERR_ARG && strstr(ts_last_error(), "cpu or none"),
          "an unknown fallback: %s", ts_last_error());
    CHECK(ts_device_set_option("cpu", NULL, "plain") == TS_ERR_ARG, "a NULL key");
    CHECK(ts_device_set_option("cpu", "conv_layout", NULL) == TS_ERR_ARG, "a NULL value");
    CHECK(ts_device_set_option("nosuchdevice:0", "fallback", "none") == TS_ERR_NOT_FOUND &&
              strstr(ts_last_error(), "ts_device_set_option") && strstr(ts_last_error(), "nosuchdevice"),
          "an unknown device: %s", ts_last_error());
    CHECK_OK(ts_device_set_option(NULL, "conv_algorithm", "auto")); /* NULL: cpu */
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_weights_written_between_runs);
    RUN(test_packed_matches_plain);
    RUN(test_device_option_errors);
    RUN(test_training_program_reads_weights_as_stored);
    RUN(test_kept_bf16_weight_cast);
    RUN(test_conv_weights_written_between_runs);
    return tu_finish("test_prepack");
}
