/*
 * test_optim_parity.c — tessera's optimizers, gradient clipping and lr schedules against PyTorch:
 * the tiny model of tools/make_optim_fixture.py, built here from the same ops, starts from the
 * fixture's parameters and trains 20 steps; every step's loss and parameters must match
 * PyTorch's (tests/fixtures/optim/<config>.safetensors) within f32 tolerance. Also: the schedule
 * counter, the scheduled lr of each step against the Hugging Face formulas, and bad options
 * returning errors instead of crashing.
 */
#include "test_util.h"

#define FIXDIR TS_SOURCE_DIR "/tests/fixtures/optim/"
#define STEPS 20
#define NPARAM 5

static const char *const PNAMES[NPARAM] = {"dense.weight", "dense.bias", "LayerNorm.weight",
                                           "LayerNorm.bias", "out.weight"};
static const char *const NO_DECAY[] = {"bias", "LayerNorm.weight"};

/* The fixture's model; returns the loss value (named "loss"). Parameters start at zero: the
 * fixture's values are loaded after compiling. */
static ts_value build_model(ts_graph *g) {
    ts_value x = ts_input(g, "x", TS_F32, DIMS(8, 5));
    ts_value labels = ts_input(g, "labels", TS_I32, DIMS(8));
    ts_value w1 = ts_param(g, "dense.weight", TS_F32, DIMS(5, 7), ts_init_zeros());
    ts_value b1 = ts_param(g, "dense.bias", TS_F32, DIMS(7), ts_init_zeros());
    ts_value gam = ts_param(g, "LayerNorm.weight", TS_F32, DIMS(7), ts_init_zeros());
    ts_value bet = ts_param(g, "LayerNorm.bias", TS_F32, DIMS(7), ts_init_zeros());
    ts_value w2 = ts_param(g, "out.weight", TS_F32, DIMS(7, 3), ts_init_zeros());
    ts_value h = ts_tanh(g, ts_add(g, ts_matmul(g, x, w1, 0, 0), b1));
    h = ts_layer_norm(g, h, gam, bet, 1e-5f);
    return ts_name(g, ts_cross_entropy(g, ts_matmul(g, h, w2, 0, 0), labels, -100), "loss");
}

typedef struct config {
    const char *name;
    ts_optim_opts o;
    int sched; /* 0: constant lr 'lr'; else 1 + ts_lr_kind */
    float lr;
} config;

static ts_optim_opts adamw_opts(float wd, int exclude, float max_norm) {
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_ADAMW);
    o.weight_decay = wd;
    if (exclude) o.no_decay = NO_DECAY, o.nno_decay = 2;
    o.max_grad_norm = max_norm;
    return o;
}

/* Hugging Face's lambda for the fixture's schedules (4 warm-up steps, 16 total). */
static double hf_lambda(int kind, int step) {
    const int W = 4, T = 16;
    if (step < W) return (double)step / (W > 1 ? W : 1);
    double prog = (double)(step - W) / (T - W > 1 ? T - W : 1);
    switch (kind) {
    case TS_LR_LINEAR: return fmax(0.0, (double)(T - step) / (T - W > 1 ? T - W : 1));
    case TS_LR_COSINE: return fmax(0.0, 0.5 * (1.0 + cos(M_PI * 0.5 * 2.0 * prog)));
    case TS_LR_POLYNOMIAL: {
        double lr0 = 0.01f, lr_end = 1e-4f;
        if (step > T) return lr_end / lr0;
        return ((lr0 - lr_end) * pow(1.0 - prog, 2.0) + lr_end) / lr0;
    }
    default: return 1.0;
    }
}

static ts_tensor *st_get(ts_safetensors *st, const char *name) {
    ts_tensor *t = NULL;
    ts_status s = st ? ts_safetensors_get(st, name, &t) : TS_ERR_IO;
    CHECK(s == TS_OK, "fixture tensor '%s': %s", name, ts_last_error());
    return t;
}

static double worst_param_rel, worst_loss_rel;

static void run_config(const config *c) {
    ts_graph *g = ts_graph_new();
    ts_value loss = build_model(g);
    CHECK_OK(ts_backward(g, loss));
    ts_value lr;
    if (c->sched) {
        ts_lr_schedule_opts so = {.kind = (ts_lr_kind)(c->sched - 1), .lr = c->lr, .warmup_steps = 4,
                                  .total_steps = 16, .lr_end = 1e-4f, .power = 2.f};
        lr = ts_lr_schedule(g, &so);
    } else {
        lr = ts_scalar(g, c->lr);
    }
    ts_name(g, lr, "lr");
    CHECK_OK(ts_optimizer(g, lr, &c->o));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "lr"), .num_threads = 1});
    CHECK(p != NULL, "%s: compile: %s", c->name, ts_last_error());
    char path[512];
    snprintf(path, sizeof path, FIXDIR "%s.safetensors", c->name);
    ts_safetensors *init = ts_safetensors_open(FIXDIR "init.safetensors");
    ts_safetensors *ref = ts_safetensors_open(path);
    CHECK(init && ref, "%s: fixtures: %s", c->name, ts_last_error());
    if (!p || !init || !ref) goto out;
    CHECK_OK(ts_program_load(p, FIXDIR "init.safetensors", 1, NULL));
    ts_tensor *x = st_get(init, "x"), *labels = st_get(init, "labels");
    if (x && labels) {
        CHECK_OK(ts_program_feed(p, "x", x));
        CHECK_OK(ts_program_feed(p, "labels", labels));
    }
    ts_tensor_free(x);
    ts_tensor_free(labels);
    ts_tensor *ref_loss = st_get(ref, "loss"), *ref_p[NPARAM];
    for (int k = 0; k < NPARAM; k++) ref_p[k] = st_get(ref, PNAMES[k]);
    double prel = 0, lrel = 0, lr_err = 0;
    for (int step = 0; step < STEPS && ref_loss; step++) {
        if (CHECK_OK(ts_program_run(p))) break;
        ts_tensor *l = TU_FETCH(p, "loss"), *lrt = TU_FETCH(p, "lr");
        if (l) {
            double r = tu_f32(ref_loss)[step];
            lrel = fmax(lrel, fabs(tu_f32(l)[0] - r) / fmax(fabs(r), 1e-3));
        }
        if (lrt && c->sched) {
            double want = (double)c->lr * hf_lambda(c->sched - 1, step);
            lr_err = fmax(lr_err, fabs(tu_f32(lrt)[0] - want) / c->lr);
        }
        ts_tensor_free(l);
        ts_tensor_free(lrt);
        for (int k = 0; k < NPARAM; k++) {
            ts_tensor *t = NULL;
            CHECK_OK(ts_program_get_param(p, PNAMES[k], &t));
            if (!t || !ref_p[k]) { ts_tensor_free(t); continue; }
            int64_t n = ts_tensor_numel(t);
            const float *want = tu_f32(ref_p[k]) + step * n;
            /* relative to the tensor's scale: tiny elements are compared to the tensor's max */
            double scale = 0;
            for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
            for (int64_t i = 0; i < n; i++) {
                double d = fabs((double)tu_f32(t)[i] - want[i]) / fmax(fabs(want[i]), 0.1 * scale);
                if (!(d <= prel)) prel = d;
            }
            ts_tensor_free(t);
        }
    }
    printf("  %-16s max rel. error: params %.2e, loss %.2e", c->name, prel, lrel);
    if (c->sched) printf(", lr %.2e", lr_err);
    printf("\n");
    CHECK(prel < 1e-5, "%s: parameters differ from PyTorch's by %.3e (relative)", c->name, prel);
    CHECK(lrel < 1e-5, "%s: losses differ from PyTorch's by %.3e (relative)", c->name, lrel);
    CHECK(lr_err < 1e-6, "%s: scheduled lr differs from the Hugging Face formula by %.3e", c->name, lr_err);
    if (c->sched) {
        ts_tensor *cnt = TU_FETCH(p, "lr_schedule@STEP");
        CHECK(cnt && tu_f32(cnt)[0] == STEPS, "%s: schedule counter is %g after %d runs", c->name,
              cnt ? tu_f32(cnt)[0] : -1.0, STEPS);
        ts_tensor_free(cnt);
    }
    worst_param_rel = fmax(worst_param_rel, prel);
    worst_loss_rel = fmax(worst_loss_rel, lrel);
    ts_tensor_free(ref_loss);
    for (int k = 0; k < NPARAM; k++) ts_tensor_free(ref_p[k]);
out:
    ts_safetensors_close(init);
    ts_safetensors_close(ref);
    ts_program_free(p);
    ts_graph_free(g);
}

static void test_parity(void) {
    ts_optim_opts sgd_m = ts_optim_defaults(TS_OPTIM_SGD);
    sgd_m.momentum = 0.9f;
    sgd_m.dampening = 0.1f;
    ts_optim_opts sgd_n = ts_optim_defaults(TS_OPTIM_SGD);
    sgd_n.momentum = 0.9f;
    sgd_n.nesterov = 1;
    sgd_n.weight_decay = 0.05f;
    sgd_n.no_decay = NO_DECAY;
    sgd_n.nno_decay = 2;
    ts_optim_opts lamb = ts_optim_defaults(TS_OPTIM_LAMB);
    lamb.weight_decay = 0.1f;
    lamb.no_decay = NO_DECAY;
    lamb.nno_decay = 2;
    const config cs[] = {
        {"sgd_momentum", sgd_m, 0, 0.1f},
        {"sgd_nesterov_wd", sgd_n, 0, 0.1f},
        {"adamw_nodecay", adamw_opts(0.1f, 1, 0), 0, 0.01f},
        {"lamb", lamb, 0, 0.01f},
        {"adamw_clip", adamw_opts(0.01f, 0, 0.05f), 0, 0.01f},
        {"sched_linear", adamw_opts(0.01f, 1, 0), 1 + TS_LR_LINEAR, 0.01f},
        {"sched_cosine", adamw_opts(0.01f, 1, 0), 1 + TS_LR_COSINE, 0.01f},
        {"sched_poly", adamw_opts(0.01f, 1, 0), 1 + TS_LR_POLYNOMIAL, 0.01f},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_config(&cs[i]);
    printf("  worst: params %.2e, loss %.2e\n", worst_param_rel, worst_loss_rel);
}

/* A graph with the model and its backward pass, ready for an optimizer. */
static ts_graph *model_graph(void) {
    ts_graph *g = ts_graph_new();
    CHECK_OK(ts_backward(g, build_model(g)));
    return g;
}

static void test_bad_options(void) {
    ts_graph *g = model_graph();
    ts_optim_opts o = ts_optim_defaults((ts_optim_kind)7);
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &o), TS_ERR_ARG);
    CHECK_ERRMSG("unknown optimizer kind");
    ts_graph_free(g);

    g = model_graph();
    o = ts_optim_defaults(TS_OPTIM_ADAMW);
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, -0.1f), &o), TS_ERR_ARG);
    CHECK_ERRMSG("lr", "finite and >= 0");
    ts_graph_free(g);

    g = model_graph();
    CHECK_STATUS(ts_sgd_ex(g, ts_scalar(g, 0.1f), &(ts_sgd_opts){.momentum = 0.f, .nesterov = 1}), TS_ERR_ARG);
    CHECK_ERRMSG("Nesterov");
    ts_graph_free(g);

    g = model_graph();
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), NULL), TS_ERR_ARG);
    ts_graph_free(g);

    g = model_graph();
    o = ts_optim_defaults(TS_OPTIM_LAMB);
    o.beta1 = 1.5f;
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &o), TS_ERR_ARG);
    CHECK_ERRMSG("beta1");
    ts_graph_free(g);

    g = model_graph();
    o = ts_optim_defaults(TS_OPTIM_ADAMW);
    o.nno_decay = 2; /* no_decay NULL */
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &o), TS_ERR_ARG);
    ts_graph_free(g);

    /* no parameter with a gradient */
    g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(3));
    ts_param(g, "unused", TS_F32, DIMS(3), ts_init_zeros());
    CHECK_OK(ts_backward(g, ts_reduce_sum(g, ts_mul(g, x, x), 0, NULL, 0)));
    o = ts_optim_defaults(TS_OPTIM_LAMB);
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &o), TS_ERR_ARG);
    CHECK_ERRMSG("no parameter has a gradient");
    ts_graph_free(g);

    /* schedules */
    g = ts_graph_new();
    CHECK(ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = (ts_lr_kind)9, .lr = 1}) == TS_NONE, "bad kind accepted");
    CHECK_ERRMSG("unknown schedule kind");
    ts_graph_free(g);
    g = ts_graph_new();
    CHECK(ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = TS_LR_LINEAR, .lr = -1}) == TS_NONE, "lr -1 accepted");
    ts_graph_free(g);
    g = ts_graph_new();
    CHECK(ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = TS_LR_POLYNOMIAL, .lr = 1, .lr_end = 2,
                                                   .total_steps = 10}) == TS_NONE, "lr_end > lr accepted");
    ts_graph_free(g);
    g = ts_graph_new();
    CHECK(ts_lr_schedule(g, NULL) == TS_NONE, "NULL options accepted");
    CHECK(ts_lr_schedule(NULL, &(ts_lr_schedule_opts){.lr = 1}) == TS_NONE, "NULL graph accepted");
    ts_graph_free(g);
    g = ts_graph_new();
    CHECK(ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = TS_LR_COSINE, .lr = 1, .total_steps = 5}) != TS_NONE,
          "cosine refused: %s", ts_last_error());
    CHECK(ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = TS_LR_COSINE, .lr = 1, .total_steps = 5}) == TS_NONE,
          "a second schedule accepted");
    CHECK_ERRMSG("one schedule per graph");
    ts_graph_free(g);
}

/* A fed negative lr fails the run before any parameter changes; inference drops the updates. */
static void test_runtime_lr(void) {
    ts_graph *g = model_graph();
    ts_value lr = ts_input(g, "lr", TS_F32, 0, NULL);
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_LAMB);
    o.max_grad_norm = 1.f;
    CHECK_OK(ts_optimizer(g, lr, &o));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss", "optimizer@GRAD_NORM"), .num_threads = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_program *inf = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss"), .inference = 1});
    CHECK(inf != NULL, "inference compile: %s", ts_last_error());
    if (p) {
        CHECK_OK(ts_program_load(p, FIXDIR "init.safetensors", 1, NULL));
        ts_safetensors *init = ts_safetensors_open(FIXDIR "init.safetensors");
        ts_tensor *x = st_get(init, "x"), *labels = st_get(init, "labels");
        float bad = -1.f;
        ts_tensor *lrt = ts_tensor_from(TS_F32, 0, NULL, &bad);
        if (x && labels) {
            CHECK_OK(ts_program_feed(p, "x", x));
            CHECK_OK(ts_program_feed(p, "labels", labels));
        }
        CHECK_OK(ts_program_feed(p, "lr", lrt));
        ts_tensor *before = NULL, *after = NULL;
        CHECK_OK(ts_program_get_param(p, "out.weight", &before));
        CHECK_STATUS(ts_program_run(p), TS_ERR_RUNTIME);
        CHECK_ERRMSG("learning rate");
        CHECK_OK(ts_program_get_param(p, "out.weight", &after));
        CHECK(tu_bitwise_equal(before, after), "a failed step changed a parameter");
        ts_tensor_free(after);
        *tu_f32(lrt) = 0.01f;
        CHECK_OK(ts_program_feed(p, "lr", lrt));
        CHECK_OK(ts_program_run(p));
        CHECK_OK(ts_program_get_param(p, "out.weight", &after));
        CHECK(after && !tu_bitwise_equal(before, after), "LAMB did not move out.weight");
        ts_tensor *gn = TU_FETCH(p, "optimizer@GRAD_NORM");
        CHECK(gn && tu_f32(gn)[0] > 0.f && isfinite(tu_f32(gn)[0]), "gradient norm %g", gn ? tu_f32(gn)[0] : -1.0);
        ts_tensor_free(gn);
        ts_tensor_free(before);
        ts_tensor_free(after);
        ts_tensor_free(x);
        ts_tensor_free(labels);
        ts_tensor_free(lrt);
        ts_safetensors_close(init);
    }
    ts_program_free(inf);
    ts_program_free(p);
    ts_graph_free(g);
}

/* Constant with warm-up, driving plain SGD: the lr of step t is 0.5 min(t / 3, 1). An inference
 * program of the same graph compiles too (it drops the schedule with the updates). */
static void test_constant_warmup(void) {
    ts_graph *g = model_graph();
    ts_value lr = ts_name(g, ts_lr_schedule(g, &(ts_lr_schedule_opts){.kind = TS_LR_CONSTANT, .lr = 0.5f,
                                                                      .warmup_steps = 3}), "lr");
    CHECK_OK(ts_sgd(g, lr, 0.f, 0.f));
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("lr"), .num_threads = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_program *inf = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss"), .inference = 1});
    CHECK(inf != NULL, "inference compile: %s", ts_last_error());
    const float want[6] = {0.f, 0.5f / 3, 1.f / 3, 0.5f, 0.5f, 0.5f};
    for (int t = 0; p && t < 6; t++) {
        CHECK_OK(ts_program_run(p));
        ts_tensor *l = TU_FETCH(p, "lr");
        CHECK(l && fabsf(tu_f32(l)[0] - want[t]) < 1e-7f, "step %d: lr %g, expected %g", t,
              l ? tu_f32(l)[0] : -1.0, want[t]);
        ts_tensor_free(l);
    }
    ts_program_free(inf);
    ts_program_free(p);
    ts_graph_free(g);
}

/* The multi-threaded kernel paths (tensors over 32768 elements): loss = sum(w * c), so the
 * gradient is c; LAMB with clipping and AdamW-style moments, 3 steps, against the host formula. */
static void test_large_lamb_clip(void) {
    enum { R = 300, C = 200, N = R * C };
    const float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-6f, wd = 0.1f, max_norm = 1.f;
    ts_graph *g = ts_graph_new();
    tu_rng rng = tu_rng_seed(5);
    ts_tensor *ct = tu_rand_tensor(&rng, DIMS(R, C), -1, 1);
    ts_value w = ts_param(g, "w", TS_F32, DIMS(R, C), ts_init_uniform(-0.5f, 0.5f));
    ts_value loss = ts_reduce_sum(g, ts_mul(g, w, ts_constant(g, ct)), 0, NULL, 0);
    CHECK_OK(ts_backward(g, loss));
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_LAMB);
    o.weight_decay = wd;
    o.max_grad_norm = max_norm;
    CHECK_OK(ts_optimizer(g, ts_scalar(g, lr), &o));
    ts_program *p = ts_compile(g, &(ts_compile_opts){.num_threads = 2});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_tensor *w0 = NULL;
    if (p) CHECK_OK(ts_program_get_param(p, "w", &w0));
    if (!w0) goto out;
    double *pw = malloc(sizeof(double) * N), *m = calloc(N, sizeof(double)), *v = calloc(N, sizeof(double));
    double gn = 0;
    for (int i = 0; i < N; i++) pw[i] = tu_f32(w0)[i], gn += (double)tu_f32(ct)[i] * tu_f32(ct)[i];
    double coef = fmin(1.0, max_norm / (sqrt(gn) + 1e-6));
    for (int t = 1; t <= 3; t++) {
        CHECK_OK(ts_program_run(p));
        double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t), pp = 0, rr = 0;
        for (int i = 0; i < N; i++) {
            double gr = tu_f32(ct)[i] * coef;
            m[i] = b1 * m[i] + (1 - b1) * gr;
            v[i] = b2 * v[i] + (1 - b2) * gr * gr;
            double r = (m[i] / bc1) / (sqrt(v[i] / bc2) + eps) + wd * pw[i];
            pp += pw[i] * pw[i];
            rr += r * r;
        }
        double trust = pp > 0 && rr > 0 ? sqrt(pp) / sqrt(rr) : 1;
        for (int i = 0; i < N; i++)
            pw[i] -= lr * trust * ((m[i] / bc1) / (sqrt(v[i] / bc2) + eps) + wd * pw[i]);
    }
    ts_tensor *w3 = NULL;
    CHECK_OK(ts_program_get_param(p, "w", &w3));
    double err = 0;
    for (int i = 0; w3 && i < N; i++) err = fmax(err, fabs(tu_f32(w3)[i] - pw[i]) / fmax(fabs(pw[i]), 0.05));
    printf("  large LAMB + clip, 2 threads: max rel. error %.2e\n", err);
    CHECK(w3 && err < 1e-5, "LAMB on %d elements differs from the host formula by %.3e", N, err);
    ts_tensor_free(w3);
    free(pw);
    free(m);
    free(v);
out:
    ts_tensor_free(w0);
    ts_tensor_free(ct);
    ts_program_free(p);
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_parity);
    RUN(test_large_lamb_clip);
    RUN(test_constant_warmup);
    RUN(test_bad_options);
    RUN(test_runtime_lr);
    return tu_finish("test_optim_parity");
}
