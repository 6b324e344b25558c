/*
 * test_api.c — the rules the public header states once in its preamble (tessera.h), each checked:
 * the version, exported initializers, feeding from the caller's memory (ts_program_feed_data),
 * ownership (a graph freed after compile, free functions taking NULL), struct_size, and threads
 * (two programs on two devices run at once give the numbers they give one after the other; the
 * last error is per thread).
 */
#include "tessera_apps.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { B = 8, D = 16, H = 32, C = 4, STEPS = 5 };

/* A two-layer classifier x [B, D] -> [B, C] trained by SGD: loss = CE(relu(x W1) W2, labels). */
static ts_graph *mlp(uint64_t seed) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, seed);
    ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){B, D});
    ts_value y = ts_input(g, "labels", TS_I32, 1, (int64_t[]){B});
    ts_value w1 = ts_param(g, "w1", TS_F32, 2, (int64_t[]){D, H}, ts_init_normal(0.3f));
    ts_value w2 = ts_param(g, "w2", TS_F32, 2, (int64_t[]){H, C}, ts_init_uniform(-0.3f, 0.3f));
    ts_value h = ts_relu(g, ts_matmul(g, x, w1, 0, 0));
    ts_value loss = ts_name(g, ts_cross_entropy(g, ts_matmul(g, h, w2, 0, 0), y, -100), "loss");
    ts_backward(g, loss);
    ts_sgd(g, ts_scalar(g, 0.1f), 0.9f, 0.0f);
    return g;
}

static void batch(int step, float *x, int32_t *labels) {
    for (int i = 0; i < B * D; i++) x[i] = (float)((i * 37 + step * 11) % 17) / 8.0f - 1.0f;
    for (int i = 0; i < B; i++) labels[i] = (i + step) % C;
}

/* What one training run gives: each step's loss and the final w2. */
typedef struct run_result {
    const char *device;
    float loss[STEPS];
    float w2[H * C];
    int ok;
    char error[256];
} run_result;

/* Build, compile on r->device (one OpenMP thread: bitwise reproducible), train STEPS steps. */
static void *train_run(void *arg) {
    run_result *r = arg;
    ts_graph *g = mlp(7);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = r->device, .num_threads = 1, TU_FETCHES("loss")});
    ts_graph_free(g);
    if (!p) {
        snprintf(r->error, sizeof r->error, "compile on %s: %s", r->device, ts_last_error());
        return NULL;
    }
    float x[B * D];
    int32_t labels[B];
    ts_status st = TS_OK;
    for (int s = 0; s < STEPS && !st; s++) {
        batch(s, x, labels);
        ts_tensor *loss = NULL;
        if (!(st = ts_program_feed_data(p, "x", TS_F32, 2, (int64_t[]){B, D}, x)) &&
            !(st = ts_program_feed_data(p, "labels", TS_I32, 1, (int64_t[]){B}, labels)) &&
            !(st = ts_program_run(p)) && !(st = ts_program_fetch(p, "loss", &loss)))
            r->loss[s] = *(float *)ts_tensor_data(loss);
        ts_tensor_free(loss);
    }
    ts_tensor *w2 = NULL;
    if (!st && !(st = ts_program_get_param(p, "w2", &w2))) memcpy(r->w2, ts_tensor_data(w2), sizeof r->w2);
    ts_tensor_free(w2);
    if (st) snprintf(r->error, sizeof r->error, "run on %s: %s", r->device, ts_last_error());
    r->ok = !st;
    ts_program_free(p);
    return NULL;
}

/* Two threads, each building, compiling and training a program on a device of its own, at once:
 * the same numbers, bit for bit, as the two runs one after the other. */
static void test_two_programs_two_threads(void) {
    run_result seq[2] = {{.device = "cpu:1"}, {.device = "cpu:2"}}, par[2] = {{.device = "cpu:1"}, {.device = "cpu:2"}};
    for (int i = 0; i < 2; i++) train_run(&seq[i]);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, train_run, &par[i]) == 0, "pthread_create");
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK(seq[i].ok && par[i].ok, "%s / %s", seq[i].error, par[i].error);
        CHECK(!memcmp(seq[i].loss, par[i].loss, sizeof seq[i].loss), "%s: losses differ when run at once (%g vs %g)",
              seq[i].device, seq[i].loss[STEPS - 1], par[i].loss[STEPS - 1]);
        CHECK(!memcmp(seq[i].w2, par[i].w2, sizeof seq[i].w2), "%s: trained w2 differs when run at once",
              seq[i].device);
        CHECK(seq[i].loss[STEPS - 1] < seq[i].loss[0], "%s: the loss should fall (%g -> %g)", seq[i].device,
              seq[i].loss[0], seq[i].loss[STEPS - 1]);
    }
    /* the two devices ran the same graph and seed: the same numbers */
    CHECK(!memcmp(seq[0].loss, seq[1].loss, sizeof seq[0].loss), "cpu:1 and cpu:2 should agree");
}

/* A thread's failure leaves another thread's last error alone. */
typedef struct err_probe {
    pthread_barrier_t *bar;
    int fail;
    char seen_before[64], seen_after[256];
    ts_status status_after;
} err_probe;

static void *error_thread(void *arg) {
    err_probe *e = arg;
    snprintf(e->seen_before, sizeof e->seen_before, "%s", ts_last_error());
    pthread_barrier_wait(e->bar);
    if (e->fail) ts_program_run(NULL); /* TS_ERR_ARG on this thread */
    pthread_barrier_wait(e->bar);      /* both threads have done their part */
    snprintf(e->seen_after, sizeof e->seen_after, "%s", ts_last_error());
    e->status_after = ts_last_status();
    return NULL;
}

static void test_error_per_thread(void) {
    CHECK_STATUS(ts_program_feed(NULL, "x", NULL), TS_ERR_ARG);
    char mine[256];
    snprintf(mine, sizeof mine, "%s", ts_last_error());
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    err_probe e[2] = {{.bar = &bar, .fail = 1}, {.bar = &bar, .fail = 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, error_thread, &e[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    CHECK(!e[0].seen_before[0] && !e[1].seen_before[0], "a new thread starts with no error");
    CHECK(e[0].status_after == TS_ERR_ARG && strstr(e[0].seen_after, "ts_program_run"), "failing thread: %s",
          e[0].seen_after);
    CHECK(e[1].status_after == TS_OK && !e[1].seen_after[0], "the other thread saw \"%s\"", e[1].seen_after);
    CHECK(!strcmp(ts_last_error(), mine) && ts_last_status() == TS_ERR_ARG, "main thread's error changed: %s",
          ts_last_error());
}

/* ts_program_feed_data gives what ts_tensor_from + ts_program_feed give, and checks the same. */
static void test_feed_data(void) {
    float x[B * D];
    int32_t labels[B];
    batch(3, x, labels);
    float loss[2];
    for (int way = 0; way < 2; way++) {
        ts_graph *g = mlp(3);
        ts_program *p = ts_compile(g, &(ts_compile_opts){.num_threads = 1, .inference = 1, TU_FETCHES("loss")});
        ts_graph_free(g);
        CHECK(p != NULL, "compile: %s", ts_last_error());
        if (!p) return;
        if (way == 0) {
            CHECK_OK(ts_program_feed_data(p, "x", TS_F32, 2, (int64_t[]){B, D}, x));
            CHECK_OK(ts_program_feed_data(p, "labels", TS_I32, 1, (int64_t[]){B}, labels));
        } else {
            ts_tensor *xt = ts_tensor_from(TS_F32, 2, (int64_t[]){B, D}, x);
            ts_tensor *lt = ts_tensor_from(TS_I32, 1, (int64_t[]){B}, labels);
            CHECK_OK(ts_program_feed(p, "x", xt));
            CHECK_OK(ts_program_feed(p, "labels", lt));
            ts_tensor_free(xt), ts_tensor_free(lt);
        }
        CHECK_OK(ts_program_run(p));
        ts_tensor *out = NULL;
        CHECK_OK(ts_program_fetch(p, "loss", &out));
        loss[way] = out ? *(float *)ts_tensor_data(out) : -1;
        ts_tensor_free(out);
        if (way == 0) {
            CHECK_STATUS(ts_program_feed_data(p, "x", TS_F32, 2, (int64_t[]){B, D + 1}, x), TS_ERR_SHAPE);
            CHECK_ERRMSG("'x'", "[8, 16]");
            CHECK_STATUS(ts_program_feed_data(p, "x", TS_I32, 2, (int64_t[]){B, D}, x), TS_ERR_DTYPE);
            CHECK_STATUS(ts_program_feed_data(p, "nope", TS_F32, 2, (int64_t[]){B, D}, x), TS_ERR_NOT_FOUND);
            CHECK_STATUS(ts_program_feed_data(p, "x", TS_F32, 2, (int64_t[]){B, D}, NULL), TS_ERR_ARG);
            CHECK_STATUS(ts_program_feed_data(p, "x", TS_F32, 2, NULL, x), TS_ERR_ARG);
            CHECK_STATUS(ts_program_feed_data(p, "x", TS_F32, TS_MAX_DIMS + 1, (int64_t[TS_MAX_DIMS + 1]){0}, x),
                         TS_ERR_ARG);
            CHECK_STATUS(ts_program_feed_data(NULL, "x", TS_F32, 2, (int64_t[]){B, D}, x), TS_ERR_ARG);
        }
        ts_program_free(p);
    }
    CHECK(loss[0] == loss[1], "feed_data %g vs feed %g", loss[0], loss[1]);
}

/* The version macros, ts_version() and the initializers a binding calls. */
static void test_version_and_init(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TESSERA_VERSION_MAJOR, TESSERA_VERSION_MINOR, TESSERA_VERSION_PATCH);
    CHECK(!strcmp(ts_version(), want), "ts_version() %s, header %s", ts_version(), want);
    CHECK(TESSERA_VERSION_NUMBER == TESSERA_VERSION_MAJOR * 10000 + TESSERA_VERSION_MINOR * 100 + TESSERA_VERSION_PATCH,
          "version number");
    ts_init i = ts_init_uniform(-1, 2);
    CHECK(i.kind == TS_INIT_UNIFORM && i.a == -1 && i.b == 2, "uniform");
    i = ts_init_normal(0.5f);
    CHECK(i.kind == TS_INIT_NORMAL && i.a == 0 && i.b == 0.5f, "normal");
    i = ts_init_const(3);
    CHECK(i.kind == TS_INIT_CONST && i.a == 3, "const");
    CHECK(ts_init_zeros().kind == TS_INIT_ZEROS && ts_init_ones().kind == TS_INIT_ONES, "zeros, ones");
}

/* Ownership: the program does not need the graph; strings live as long as their object; every
 * free function takes NULL. */
static void test_ownership(void) {
    ts_graph *g = mlp(1);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.inference = 1, TU_FETCHES("loss")});
    ts_graph_free(g); /* freed before the program runs */
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (!p) return;
    CHECK(ts_program_num_params(p) == 2, "params");
    const char *name = ts_program_param_name(p, 0);
    CHECK(name && (!strcmp(name, "w1") || !strcmp(name, "w2")), "param name %s", name ? name : "(null)");
    float x[B * D] = {0};
    int32_t labels[B] = {0};
    CHECK_OK(ts_program_feed_data(p, "x", TS_F32, 2, (int64_t[]){B, D}, x));
    CHECK_OK(ts_program_feed_data(p, "labels", TS_I32, 1, (int64_t[]){B}, labels));
    CHECK_OK(ts_program_run(p));
    ts_program_free(p);
    ts_tensor_free(NULL);
    ts_graph_free(NULL);
    ts_program_free(NULL);
    ts_onnx_free(NULL);
    ts_onnx_session_free(NULL);
    ts_ocr_free(NULL);
    ts_ocr_lines_free(NULL, 0);
    ts_image_free(NULL);
    ts_tokenizer_free(NULL);
    ts_safetensors_close(NULL);
    ts_text_dataset_free(NULL);
    ts_squad_free(NULL);
    ts_pretrain_close(NULL);
    ts_model_meta_free(NULL);
    CHECK(1, "every free function took NULL");
}

/* struct_size: 0 and sizeof work, a size short of the first layout is refused naming the struct;
 * what the library fills comes back with struct_size set; defaults set it. */
static void test_struct_size(void) {
    ts_graph *g = mlp(1);
    CHECK(ts_compile(g, &(ts_compile_opts){.struct_size = 3, .inference = 1}) == NULL, "struct_size 3 accepted");
    CHECK(ts_last_status() == TS_ERR_ARG, "status %s", ts_status_name(ts_last_status()));
    CHECK_ERRMSG("ts_compile", "ts_compile_opts.struct_size", "3");
    for (int way = 0; way < 2; way++) {
        ts_compile_opts o = {.struct_size = way ? sizeof o : 0, .inference = 1, TU_FETCHES("loss")};
        ts_program *p = ts_compile(g, &o);
        CHECK(p != NULL, "struct_size %zu: %s", o.struct_size, ts_last_error());
        ts_memory m;
        memset(&m, 0xff, sizeof m);
        if (p) CHECK_OK(ts_program_memory(p, &m));
        CHECK(m.struct_size == sizeof m && m.params == (size_t)(D * H + H * C) * 4, "memory %zu %zu", m.struct_size,
              m.params);
        ts_stage_info si = {0};
        if (p) CHECK_OK(ts_program_stage_info(p, 0, &si));
        CHECK(si.struct_size == sizeof si && si.mem.params == m.params, "stage info");
        ts_program_free(p);
    }
    ts_graph_free(g);
    CHECK(ts_optim_defaults(TS_OPTIM_ADAMW).struct_size == sizeof(ts_optim_opts), "optim defaults");
    CHECK(ts_loss_scale_defaults().struct_size == sizeof(ts_loss_scale_opts), "loss scale defaults");
    CHECK(ts_pretrain_defaults().struct_size == sizeof(ts_pretrain_opts), "pretrain defaults");
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    /* its base layout (a struct not set up yet, tessera.h): max_sequences_per_pack came later */
    CHECK(cfg.struct_size == offsetof(ts_bert_config, max_predictions_per_seq) + sizeof(int), "bert defaults: "
          "struct_size %zu", cfg.struct_size);
    cfg.struct_size = 8;
    CHECK_STATUS(ts_bert_config_check(&cfg), TS_ERR_ARG);
    CHECK_ERRMSG("ts_bert_config.struct_size");
    /* a builder refusing it records the error in the graph, as its other errors */
    g = ts_graph_new();
    ts_value x = ts_param(g, "x", TS_F32, 1, (int64_t[]){4}, ts_init_ones());
    ts_backward(g, ts_reduce_sum(g, x, 0, NULL, 0));
    ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_SGD);
    oo.struct_size = 4;
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &oo), TS_ERR_ARG);
    CHECK(ts_graph_status(g) == TS_ERR_ARG, "the graph should hold the error");
    ts_graph_free(g);
    CHECK(ts_ocr_new(&(ts_ocr_opts){.struct_size = 1}) == NULL && strstr(ts_last_error(), "ts_ocr_opts.struct_size"),
          "ocr: %s", ts_last_error());
}

int main(void) {
    RUN(test_version_and_init);
    RUN(test_feed_data);
    RUN(test_ownership);
    RUN(test_struct_size);
    RUN(test_error_per_thread);
    RUN(test_two_programs_two_threads);
    return tu_finish("test_api");
}
