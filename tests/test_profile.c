/*
 * test_profile.c — ts_compile_opts.profile and ts_program_profile_report: a small graph
 * (matmul, add, softmax) run 3 times lists each op type with 3 calls, sane times and shares,
 * the layer rule (a parameter's "....layer.N" prefix, found through producers for a node that
 * reads no name), the table by op and shapes, reset, and the refusals (no profile, or profile on
 * a pipeline: TS_ERR_UNSUPPORTED; NULL arguments).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "test_util.h"

/* A ts_write_fn keeping a malloc'd copy of the text (ctx: char **); the report comes in one call. */
static void to_string(void *ctx, const char *text, size_t len) {
    char **s = ctx;
    free(*s);
    *s = strndup(text, len);
}

/* The report of p as a string (free it). */
static __attribute__((noinline)) char *report_of(const ts_program *p, ts_status *st) {
    char *buf = NULL;
    *st = ts_program_profile_report(p, to_string, &buf);
    return buf;
}

/* The line of report r that starts with `name` followed by a space, or NULL. */
static const char *row(const char *r, const char *name) {
    size_t n = strlen(name);
    for (const char *l = r; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') return l;
    return NULL;
}

/* y = softmax(x @ w + b), w and b named like a model's layer 2. */
static ts_graph *small_graph(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 8));
    ts_value w = ts_param(g, "enc.layer.2.dense.weight", TS_F32, DIMS(8, 16), ts_init_uniform(-1, 1));
    ts_value b = ts_param(g, "enc.layer.2.dense.bias", TS_F32, DIMS(16), ts_init_uniform(-1, 1));
    ts_name(g, ts_softmax(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b), TS_NONE), "y");
    return g;
}

static void test_report(void) {
    ts_graph *g = small_graph();
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1, .no_fusion = 1, .profile = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!p) return;
    tu_rng r = tu_rng_seed(3);
    ts_tensor *xt = tu_rand_tensor(&r, DIMS(4, 8), -1, 1);
    CHECK_OK(ts_program_feed(p, "x", xt));
    for (int i = 0; i < 3; i++) CHECK_OK(ts_program_run(p));
    ts_status st = TS_ERR_ARG;
    char *rep = report_of(p, &st);
    CHECK(rep && st == TS_OK, "report: %s", ts_last_error());
    if (rep) {
        unsigned long long runs = 0;
        double wall = -1, kern = -1, kpct = -1, out = -1, opct = -1;
        CHECK(sscanf(rep, "profile: %llu runs, %lf ms in ts_program_run, %lf ms in kernels (%lf%%), %lf ms outside "
                     "kernels (%lf%%)", &runs, &wall, &kern, &kpct, &out, &opct) == 6,
              "unexpected first line:\n%s", rep);
        CHECK(runs == 3 && wall >= 0 && kern >= 0 && out >= 0 && kern <= wall + 1e-6, "bad totals:\n%s", rep);
        CHECK(kpct >= 0 && kpct <= 100 && opct >= 0 && opct <= 100, "bad shares:\n%s", rep);
        CHECK(strstr(rep, "total ms") && strstr(rep, "% kernel"), "no table header:\n%s", rep);
        const char *ops[] = {"matmul", "add", "softmax"};
        for (int i = 0; i < 3; i++) {
            const char *l = row(rep, ops[i]);
            int nodes = 0;
            unsigned long long calls = 0;
            double ms = -1, pc = -1;
            CHECK(l && sscanf(l + strlen(ops[i]), "%d %llu %lf %lf", &nodes, &calls, &ms, &pc) == 4,
                  "no row for %s:\n%s", ops[i], rep);
            CHECK(nodes == 1 && calls == 3 && ms >= 0 && pc >= 0 && pc <= 100.05, "row %s: %d nodes, %llu calls, "
                  "%.3f ms, %.1f%%:\n%s", ops[i], nodes, calls, ms, pc, rep);
        }
        /* every node (softmax through its producer) is in layer enc.layer.2 */
        const char *l = row(rep, "enc.layer.2");
        int nodes = 0;
        unsigned long long calls = 0;
        CHECK(l && sscanf(l + strlen("enc.layer.2"), "%d %llu", &nodes, &calls) == 2 && nodes == 3 && calls == 9,
              "layer row:\n%s", rep);
        CHECK(!row(rep, "other"), "no node should be 'other':\n%s", rep);
        /* the shapes table: the matmul as "op first-input -> output", its counts first on the line */
        const char *sig = strstr(rep, "  matmul f32[4, 8] -> f32[4, 16]\n");
        const char *line = sig;
        while (line && line > rep && line[-1] != '\n') line--;
        nodes = 0, calls = 0;
        CHECK(sig && sscanf(line, "%d %llu", &nodes, &calls) == 2 && nodes == 1 && calls == 3,
              "no shapes row for the matmul:\n%s", rep);
        CHECK(strstr(rep, "softmax f32[4, 16] -> f32[4, 16]"), "no shapes row for the softmax:\n%s", rep);
    }
    free(rep);
    /* reset: zero runs, zero calls */
    ts_program_profile_reset(p);
    rep = report_of(p, &st);
    CHECK(rep && st == TS_OK && !strncmp(rep, "profile: 0 runs, 0.000 ms", 25), "after reset:\n%s", rep ? rep : "");
    free(rep);
    CHECK_OK(ts_program_run(p));
    rep = report_of(p, &st);
    CHECK(rep && st == TS_OK && !strncmp(rep, "profile: 1 run,", 15), "one run after reset:\n%s", rep ? rep : "");
    free(rep);
    CHECK(ts_program_profile_report(p, NULL, NULL) == TS_ERR_ARG, "NULL write should be TS_ERR_ARG");
    CHECK(ts_program_profile_report(NULL, ts_write_stdio, stdout) == TS_ERR_ARG, "NULL program should be TS_ERR_ARG");
    ts_program_profile_reset(NULL);
    ts_tensor_free(xt);
    ts_program_free(p);
}

/* Fused (default passes) programs profile too; without profile the report is refused. */
static void test_without_profile(void) {
    ts_graph *g = small_graph();
    ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        CHECK(ts_program_profile_report(p, ts_write_stdio, stdout) == TS_ERR_UNSUPPORTED &&
                  strstr(ts_last_error(), "profile = 1"),
              "report without profile: %s", ts_last_error());
        ts_program_profile_reset(p); /* a no-op */
        ts_program_free(p);
    }
    p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1, .profile = 1});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        tu_rng r = tu_rng_seed(4);
        ts_tensor *xt = tu_rand_tensor(&r, DIMS(4, 8), -1, 1);
        CHECK_OK(ts_program_feed(p, "x", xt));
        CHECK_OK(ts_program_run(p));
        ts_status st = TS_ERR_ARG;
        char *rep = report_of(p, &st);
        CHECK(rep && st == TS_OK && strstr(rep, "profile: 1 run,"), "fused report:\n%s", rep ? rep : "");
        free(rep);
        ts_tensor_free(xt);
        ts_program_free(p);
    }
    /* a pipeline (stage devices) refuses profile */
    static const char *const devs[] = {"cpu:0", "cpu:1"};
    p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .stage_devices = devs, .nstage_devices = 2, .profile = 1});
    CHECK(!p && ts_last_status() == TS_ERR_UNSUPPORTED && strstr(ts_last_error(), "pipelined"),
          "a pipeline with profile: %s", p ? "compiled" : ts_last_error());
    ts_program_free(p);
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_report);
    RUN(test_without_profile);
    return tu_finish("test_profile");
}
