/*
 * fuzz_device_profile.c — libFuzzer target for the device-profile reader (ts_device_profile_load
 * of a file, apps/plan/profile.c): the input is written to a file and loaded. A profile the reader
 * accepts must save (ts_device_profile_save) and load back to the same figures; anything else
 * must be an error, never a crash, leak or undefined behaviour.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

/* The figures of a and b are the same (bitwise for the doubles: a saved number reads back exactly). */
static int same(const ts_device_profile *a, const ts_device_profile *b) {
    if (strcmp(a->name, b->name) || strcmp(a->description, b->description) || strcmp(a->sources, b->sources) ||
        a->measured != b->measured || a->devices_per_host != b->devices_per_host || a->ngemm != b->ngemm)
        return 0;
    const double fa[] = {a->memory_bytes, a->streaming_bytes, a->streaming_bw, a->mem_bw, a->link_bw, a->link_latency,
                         a->host_bw, a->host_latency, a->eff_mem, a->node_overhead};
    const double fb[] = {b->memory_bytes, b->streaming_bytes, b->streaming_bw, b->mem_bw, b->link_bw, b->link_latency,
                         b->host_bw, b->host_latency, b->eff_mem, b->node_overhead};
    for (size_t i = 0; i < sizeof fa / sizeof *fa; i++)
        if (fa[i] != fb[i]) return 0;
    for (int d = 0; d < 3; d++)
        if (a->peak_flops[d] != b->peak_flops[d] || a->eff_matmul[d] != b->eff_matmul[d]) return 0;
    for (int i = 0; i < a->ngemm; i++)
        if (a->gemm[i].m != b->gemm[i].m || a->gemm[i].n != b->gemm[i].n || a->gemm[i].k != b->gemm[i].k ||
            a->gemm[i].dtype != b->gemm[i].dtype || a->gemm[i].flops != b->gemm[i].flops)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("profile.json", data, size);
    static ts_device_profile a, b;
    a.struct_size = b.struct_size = sizeof a;
    if (ts_device_profile_load(path, &a) != TS_OK) return 0;
    const char *again = fuzz_path("saved.json");
    if (ts_device_profile_save(again, &a) != TS_OK || ts_device_profile_load(again, &b) != TS_OK || !same(&a, &b)) {
        fprintf(stderr, "fuzz: a profile the reader accepted does not save and load back the same: %s\n", ts_last_error());
        abort();
    }
    return 0;
}
