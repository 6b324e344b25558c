/*
 * test_plugin_load.c — backends loaded at run time (ts_backend_load, include/tessera_backend.h):
 *  - the CPU backend built as a plugin (backends/cpu, "cpuplugin") loads by path, runs a small
 *    training step and an inference program to the same bits as the built-in CPU, and a second
 *    load of the same file is a no-op;
 *  - found by name: a device "cpuplugin:1" loads it from $TESSERA_PLUGIN_PATH;
 *  - the four ways a load fails, each one clear message naming the file: a missing file, a file
 *    that is not a shared library, a library that is not a tessera plugin (no entry), a plugin
 *    built for another ABI major, a plugin whose table lacks a required entry.
 * Each case runs in a process of its own (RUN forks), so each starts with no plugin loaded.
 */
#include "test_util.h"

#include <libgen.h>
#include <stdio.h>

#include "tessera_backend.h"

/* y = tanh(x @ w + b), loss = mean(y * y): a program with a backward and an AdamW update */
static ts_graph *model(int train) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 5);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(6, 10));
    ts_value w = ts_param(g, "w", TS_F32, DIMS(10, 4), ts_init_normal(0.5f));
    ts_value b = ts_param(g, "b", TS_F32, DIMS(4), ts_init_uniform(-0.5f, 0.5f));
    ts_value y = ts_name(g, ts_tanh(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b)), "y");
    if (train) {
        ts_value loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, y, y), 0, NULL, 0), "loss");
        CHECK_OK(ts_backward(g, loss));
        CHECK_OK(ts_adamw(g, ts_scalar(g, 0.01f), 0.9f, 0.999f, 1e-8f, 0.01f));
    }
    return g;
}

/* Two training steps on device, then the parameter w. */
static ts_tensor *train_on(const char *device) {
    ts_graph *g = model(1);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = device, TU_FETCHES("loss")});
    ts_graph_free(g);
    CHECK(p != NULL, "compile on %s: %s", device, ts_last_error());
    if (!p) return NULL;
    tu_rng r = tu_rng_seed(7);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(6, 10), -1, 1);
    for (int s = 0; s < 2; s++) {
        CHECK_OK(ts_program_feed(p, "x", x));
        CHECK_OK(ts_program_run(p));
    }
    ts_tensor *w = NULL;
    CHECK_OK(ts_program_get_param(p, "w", &w));
    ts_tensor_free(x);
    ts_program_free(p);
    return w;
}

static void test_load_by_path(void) {
    CHECK(ts_backend_find("cpuplugin") == NULL, "cpuplugin registered before its load");
    CHECK_OK(ts_backend_load(TS_CPU_PLUGIN));
    const ts_backend_api *api = ts_backend_find("cpuplugin");
    CHECK(api && api->abi_major == TS_ABI_MAJOR && api != ts_backend_find("cpu"), "the plugin's table");
    int n = ts_backend_count();
    CHECK_OK(ts_backend_load(TS_CPU_PLUGIN)); /* the same file again: nothing happens */
    CHECK(ts_backend_count() == n, "a second load registered again");
    ts_tensor *a = train_on("cpu"), *b = train_on("cpuplugin");
    CHECK(a && b && tu_bitwise_equal(a, b), "two AdamW steps differ between cpu and cpuplugin");
    ts_tensor_free(a), ts_tensor_free(b);
    /* an error inside the plugin reaches the caller's ts_last_error */
    ts_graph *g = model(0);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = "cpuplugin", TU_FETCHES("y"), .memory_limit = 64});
    CHECK(p == NULL, "a program over its memory limit compiled on the plugin");
    CHECK_ERRMSG("cpuplugin", "GiB");
    ts_graph_free(g);
}

static void test_load_by_name(void) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", TS_CPU_PLUGIN);
    setenv("TESSERA_PLUGIN_PATH", dirname(dir), 1);
    ts_tensor *a = train_on("cpu"), *b = train_on("cpuplugin:1");
    CHECK(a && b && tu_bitwise_equal(a, b), "cpu and cpuplugin:1 (found on TESSERA_PLUGIN_PATH) differ");
    ts_tensor_free(a), ts_tensor_free(b);
    setenv("TESSERA_PLUGIN_PATH", "/nonexistent", 1);
    ts_graph *g = model(0);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.device = "nosuch:0", TU_FETCHES("y")});
    CHECK(p == NULL, "an unknown backend compiled");
    CHECK_ERRMSG("unknown device 'nosuch'", "libtessera-nosuch.so", "/nonexistent");
    ts_graph_free(g);
}

static void test_missing_file(void) {
    CHECK_STATUS(ts_backend_load("/nonexistent/libtessera-x.so"), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("'/nonexistent/libtessera-x.so'", "no such file");
    CHECK_STATUS(ts_backend_load(NULL), TS_ERR_ARG);
}

static void test_not_a_library(void) {
    char path[] = "/tmp/ts_not_plugin_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    CHECK(write(fd, "not an ELF file\n", 16) == 16, "write");
    close(fd);
    CHECK_STATUS(ts_backend_load(path), TS_ERR_IO);
    CHECK_ERRMSG(path, "cannot be loaded as a shared library");
    unlink(path);
}

static void test_not_a_plugin(void) {
    CHECK_STATUS(ts_backend_load(TS_BAD_PLUGIN_1), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG(TS_BAD_PLUGIN_1, "is not a tessera plugin", "ts_backend_get_api");
}

static void test_other_major(void) {
    CHECK_STATUS(ts_backend_load(TS_BAD_PLUGIN_2), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG(TS_BAD_PLUGIN_2, "built for device ABI 1.0", "majors must match");
    CHECK(ts_backend_find("oldabi") == NULL, "the refused plugin is registered");
}

static void test_missing_entry(void) {
    CHECK_STATUS(ts_backend_load(TS_BAD_PLUGIN_3), TS_ERR_ARG);
    CHECK_ERRMSG(TS_BAD_PLUGIN_3, "has no 'execute'");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_load_by_path);
    RUN(test_load_by_name);
    RUN(test_missing_file);
    RUN(test_not_a_library);
    RUN(test_not_a_plugin);
    RUN(test_other_major);
    RUN(test_missing_entry);
    return tu_finish("test_plugin_load");
}
