/*
 * oot_host.c — a program built against an installed tessera (pkg-config tessera) that loads the
 * out-of-tree plugin given as argv[1] and runs y = relu(x @ w + b) * s on it and on the CPU: the
 * plugin runs add, mul and relu, the CPU (fallback) the matmul. Exit 0 when both agree to 1e-5,
 * printing the placement; 1 with the error otherwise (tests/test_plugin_oot.sh).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "tessera.h"
#include "tessera_backend.h"

static float *run_on(const char *device, const ts_graph *g, char *where, size_t cap) {
    const char *fetch[] = {"y"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .device = device,
                                                     .nfetch = 1, .fetches = fetch, .inference = 1});
    if (!p) return NULL;
    float xv[4 * 8];
    for (int i = 0; i < 32; i++) xv[i] = (float)((i * 7) % 11) / 5.f - 1.f;
    ts_tensor *x = ts_tensor_from(TS_F32, 2, (int64_t[]){4, 8}, xv), *y = NULL;
    float *out = NULL;
    if (ts_program_feed(p, "x", x) == TS_OK && ts_program_run(p) == TS_OK && ts_program_fetch(p, "y", &y) == TS_OK) {
        out = malloc(sizeof(float) * 12);
        memcpy(out, ts_tensor_data(y), sizeof(float) * 12);
    }
    snprintf(where, cap, "%s", ts_program_placement(p));
    ts_tensor_free(x), ts_tensor_free(y);
    ts_program_free(p);
    return out;
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: oot_host PLUGIN.so\n"), 2;
    if (ts_backend_load(argv[1]) != TS_OK) return fprintf(stderr, "oot_host: %s\n", ts_last_error()), 1;
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){4, 8});
    ts_value w = ts_param(g, "w", TS_F32, 2, (int64_t[]){8, 3}, ts_init_normal(0.5f));
    ts_value b = ts_param(g, "b", TS_F32, 1, (int64_t[]){3}, ts_init_uniform(-0.5f, 0.5f));
    ts_value s = ts_param(g, "s", TS_F32, 1, (int64_t[]){3}, ts_init_uniform(0.5f, 1.5f));
    ts_name(g, ts_mul(g, ts_relu(g, ts_add(g, ts_matmul(g, x, w, 0, 0), b)), s), "y");
    char w_cpu[512], w_oot[512];
    float *a = run_on("cpu", g, w_cpu, sizeof w_cpu), *c = run_on("oot", g, w_oot, sizeof w_oot);
    if (!a || !c) return fprintf(stderr, "oot_host: %s\n", ts_last_error()), 1;
    double worst = 0;
    for (int i = 0; i < 12; i++) worst = fmax(worst, fabs((double)a[i] - (double)c[i]));
    printf("oot_host: placement on oot: %s; max |cpu - oot| = %g\n", w_oot, worst);
    ts_graph_free(g);
    free(a), free(c);
    return worst <= 1e-5 ? 0 : 1;
}
