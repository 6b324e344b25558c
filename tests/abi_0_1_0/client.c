/*
 * client.c — a program written against tessera 0.1.0's headers (tests/abi_0_1_0/include, frozen:
 * see README), run on today's library (ctest test_abi_0_1_0). It checks the struct_size rule of
 * tessera.h from an old caller's side, with structs as 0.1.0 defined them:
 *  - inputs, with struct_size = sizeof (0.1.0's) and 0: ts_compile_opts (whose tail padding, where
 *    strict_device now lies, is filled with garbage), ts_optim_opts, ts_lr_schedule_opts,
 *    ts_bert_config; a size short of the base layout is refused naming the struct;
 *  - outputs: ts_program_memory and ts_program_stage_info, each with a canary right after the
 *    caller's struct, untouched after the call, and struct_size back no larger than the caller's
 *    (0.1.0's ts_memory is 8 bytes shorter than today's, and ts_stage_info held it by value);
 *  - numbers: a matmul + add run for inference, then one SGD step of its training program.
 * Exit 0 when every check holds.
 */
#include "tessera.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            failures++;                                                                       \
            fprintf(stderr, "client.c:%d: CHECK(%s) failed: ", __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, " (last error: %s)\n", ts_last_error() ? ts_last_error() : "");  \
        }                                                                                     \
    } while (0)

#define CANARY 0xA5
typedef struct {
    ts_memory m;
    unsigned char guard[256];
} guarded_memory;
typedef struct {
    ts_stage_info si;
    unsigned char guard[256];
} guarded_stage_info;

static int guard_intact(const unsigned char *g, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (g[i] != CANARY) return 0;
    return 1;
}

static const float X[2][3] = {{1, 2, 3}, {4, 5, 6}};

/* sizeof(T) of 0.1.0, or 0 (the base layout) when zero is set. */
#define SIZE(T, zero) ((zero) ? (size_t)0 : sizeof(T))

/* y = x @ w + b, loss = sum(y): w [3, 2] of ones, b [2] of zeros. */
static ts_graph *build(int train, int zero) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 2, (const int64_t[]){2, 3});
    ts_value w = ts_param(g, "w", TS_F32, 2, (const int64_t[]){3, 2}, ts_init_ones());
    ts_value b = ts_param(g, "b", TS_F32, 1, (const int64_t[]){2}, ts_init_zeros());
    ts_value y = ts_name(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b), "y");
    ts_value loss = ts_name(g, ts_reduce_sum(g, y, 0, NULL, 0), "loss");
    if (train) {
        CHECK(ts_backward(g, loss) == TS_OK, "backward");
        ts_optim_opts o = ts_optim_defaults(TS_OPTIM_SGD);
        o.struct_size = SIZE(ts_optim_opts, zero);
        ts_lr_schedule_opts lo = {.struct_size = SIZE(ts_lr_schedule_opts, zero), .kind = TS_LR_CONSTANT, .lr = 0.1f};
        CHECK(ts_optimizer(g, ts_lr_schedule(g, &lo), &o) == TS_OK, "optimizer, struct_size %zu", o.struct_size);
    }
    return g;
}

/* Compile with a 0.1.0 ts_compile_opts (struct_size sizeof, or 0), its tail padding garbage. */
static ts_program *compile(const ts_graph *g, int zero, int inference, const char *fetch) {
    size_t size = SIZE(ts_compile_opts, zero);
    ts_compile_opts o;
    memset(&o, CANARY, sizeof o); /* the padding after profile: strict_device's place today */
    const char *fetches[1] = {fetch};
    o.struct_size = size, o.device = "cpu", o.num_threads = 1, o.nfetch = 1, o.fetches = fetches;
    o.inference = inference, o.no_fusion = 0, o.device_iterations = 0, o.memory_limit = 0;
    o.stage_devices = NULL, o.nstage_devices = 0, o.skip_param_init = 0, o.profile = 0;
    ts_program *p = ts_compile(g, &o);
    CHECK(p != NULL, "compile, struct_size %zu", size);
    return p;
}

static void check_outputs(const ts_program *p, int zero) {
    guarded_memory gm;
    memset(&gm, CANARY, sizeof gm);
    gm.m.struct_size = SIZE(ts_memory, zero);
    CHECK(ts_program_memory(p, &gm.m) == TS_OK, "ts_program_memory, struct_size %zu", SIZE(ts_memory, zero));
    CHECK(guard_intact(gm.guard, sizeof gm.guard), "ts_program_memory wrote past the 0.1.0 ts_memory (%zu bytes)",
          sizeof gm.m);
    CHECK(gm.m.struct_size == sizeof gm.m, "ts_memory.struct_size %zu, the caller's %zu", gm.m.struct_size,
          sizeof gm.m);
    CHECK(gm.m.params == (3 * 2 + 2) * sizeof(float), "params %zu bytes", gm.m.params);
    CHECK(gm.m.nodes > 0, "nodes %d", gm.m.nodes);

    guarded_stage_info gs;
    memset(&gs, CANARY, sizeof gs);
    gs.si.struct_size = SIZE(ts_stage_info, zero);
    CHECK(ts_program_num_stages(p) == 1, "stages %d", ts_program_num_stages(p));
    CHECK(ts_program_stage_info(p, 0, &gs.si) == TS_OK, "ts_program_stage_info");
    CHECK(guard_intact(gs.guard, sizeof gs.guard), "ts_program_stage_info wrote past the 0.1.0 ts_stage_info (%zu)",
          sizeof gs.si);
    CHECK(gs.si.struct_size == sizeof gs.si, "ts_stage_info.struct_size %zu, the caller's %zu", gs.si.struct_size,
          sizeof gs.si);
    CHECK(gs.si.device && !strncmp(gs.si.device, "cpu", 3), "device %s", gs.si.device ? gs.si.device : "(null)");
    CHECK(gs.si.threads == 1, "threads %d", gs.si.threads);
    CHECK(gs.si.mem.params == gm.m.params && gs.si.mem.nodes == gm.m.nodes, "the stage's memory %zu / %d",
          gs.si.mem.params, gs.si.mem.nodes);
    CHECK(gs.si.in_flight == 1 && gs.si.busy_s >= 0 && gs.si.busy_s < 1e6, "in_flight %d, busy_s %g (fields after "
          "mem where 0.1.0 has them)", gs.si.in_flight, gs.si.busy_s);

    ts_memory short_one;
    memset(&short_one, CANARY, sizeof short_one);
    short_one.struct_size = 8;
    CHECK(ts_program_memory(p, &short_one) == TS_ERR_ARG && strstr(ts_last_error(), "ts_memory.struct_size"),
          "a ts_memory of 8 bytes accepted");
}

static void run_inference(int zero) {
    ts_graph *g = build(0, zero);
    ts_program *p = compile(g, zero, 1, "y");
    ts_graph_free(g);
    if (!p) return;
    check_outputs(p, zero);
    CHECK(ts_program_feed_data(p, "x", TS_F32, 2, (const int64_t[]){2, 3}, X) == TS_OK, "feed");
    CHECK(ts_program_run(p) == TS_OK, "run");
    ts_tensor *y = NULL;
    if (ts_program_fetch(p, "y", &y) == TS_OK) {
        const float *v = ts_tensor_data(y);
        CHECK(ts_tensor_numel(y) == 4 && v[0] == 6 && v[1] == 6 && v[2] == 15 && v[3] == 15,
              "y = [%g %g; %g %g], want [6 6; 15 15]", v[0], v[1], v[2], v[3]);
    } else {
        CHECK(0, "fetch y");
    }
    ts_tensor_free(y);
    ts_program_free(p);
}

/* One SGD step at lr 0.1 of loss = sum(x @ w + b): w[k][j] -= 0.1 * (x[0][k] + x[1][k]), b -= 0.2. */
static void run_training(int zero) {
    ts_graph *g = build(1, zero);
    ts_program *p = compile(g, zero, 0, "loss");
    ts_graph_free(g);
    if (!p) return;
    check_outputs(p, zero);
    CHECK(ts_program_feed_data(p, "x", TS_F32, 2, (const int64_t[]){2, 3}, X) == TS_OK, "feed");
    CHECK(ts_program_run(p) == TS_OK, "run");
    ts_tensor *loss = NULL, *w = NULL, *b = NULL;
    if (ts_program_fetch(p, "loss", &loss) == TS_OK)
        CHECK(*(const float *)ts_tensor_data(loss) == 42, "loss %g, want 42", *(const float *)ts_tensor_data(loss));
    if (ts_program_get_param(p, "w", &w) == TS_OK && ts_program_get_param(p, "b", &b) == TS_OK) {
        const float *wv = ts_tensor_data(w), *bv = ts_tensor_data(b);
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 2; j++) {
                float want = 1.f - 0.1f * (X[0][k] + X[1][k]);
                CHECK(fabsf(wv[k * 2 + j] - want) < 1e-6f, "w[%d][%d] %g, want %g", k, j, wv[k * 2 + j], want);
            }
        CHECK(fabsf(bv[0] + 0.2f) < 1e-6f && fabsf(bv[1] + 0.2f) < 1e-6f, "b = [%g %g], want -0.2", bv[0], bv[1]);
    } else {
        CHECK(0, "the parameters after the step");
    }
    ts_tensor_free(loss), ts_tensor_free(w), ts_tensor_free(b);
    ts_program_free(p);
}

static void check_bert_config(void) {
    ts_bert_config c;
    memset(&c, CANARY, sizeof c);
    ts_bert_config_default(&c);
    CHECK(c.struct_size == sizeof c && c.hidden_size == 768 && c.num_hidden_layers == 12,
          "ts_bert_config_default: struct_size %zu, hidden %d", c.struct_size, c.hidden_size);
    CHECK(ts_bert_config_check(&c) == TS_OK, "the default config, struct_size sizeof");
    c.struct_size = 0;
    CHECK(ts_bert_config_check(&c) == TS_OK, "the default config, struct_size 0");
    c.hidden_size = 100; /* not divisible by 12 heads: the fields are read */
    CHECK(ts_bert_config_check(&c) == TS_ERR_ARG, "hidden_size 100 of 12 heads accepted");
    c.hidden_size = 768, c.struct_size = 8;
    CHECK(ts_bert_config_check(&c) == TS_ERR_ARG && strstr(ts_last_error(), "ts_bert_config.struct_size"),
          "a ts_bert_config of 8 bytes accepted");
}

int main(void) {
    printf("a 0.1.0 client on tessera %s: sizeof ts_compile_opts %zu, ts_memory %zu, ts_stage_info %zu\n",
           ts_version(), sizeof(ts_compile_opts), sizeof(ts_memory), sizeof(ts_stage_info));
    for (int zero = 0; zero <= 1; zero++) { /* every struct_size sizeof, then every one 0 */
        run_inference(zero);
        run_training(zero);
    }
    ts_graph *g = ts_graph_new();
    ts_input(g, "x", TS_F32, 1, (const int64_t[]){2});
    CHECK(ts_compile(g, &(ts_compile_opts){.struct_size = 3}) == NULL &&
              strstr(ts_last_error(), "ts_compile_opts.struct_size"),
          "a ts_compile_opts of 3 bytes accepted");
    ts_graph_free(g);
    check_bert_config();
    printf("%s: %d failed check%s\n", failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
