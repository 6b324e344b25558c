/*
 * fuzz_safetensors.c — libFuzzer target for the safetensors reader (src/io/safetensors.c): the
 * input is written to a file and opened with ts_safetensors_open; when it opens, every tensor is
 * described (ts_safetensors_info) and read (ts_safetensors_get), and "__metadata__" is queried.
 * A malformed file must be refused with an error, never crash, leak or read out of bounds.
 */
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("model.safetensors", data, size);
    ts_safetensors *st = ts_safetensors_open(path);
    if (!st) return 0;
    int n = ts_safetensors_count(st);
    for (int i = 0; i < n; i++) {
        const char *name = ts_safetensors_name(st, i);
        if (!name) abort(); /* every index below the count has a name */
        ts_dtype dtype;
        int ndim;
        int64_t shape[TS_MAX_DIMS];
        ts_status s = ts_safetensors_info(st, name, &dtype, &ndim, shape);
        ts_tensor *t = NULL;
        ts_status g = ts_safetensors_get(st, name, &t);
        if (g == TS_OK) {
            /* what get returns is what info described */
            if (s != TS_OK || ts_tensor_dtype(t) != dtype || ts_tensor_ndim(t) != ndim) abort();
            for (int d = 0; d < ndim; d++)
                if (ts_tensor_shape(t)[d] != shape[d]) abort();
            ts_tensor_free(t);
        }
    }
    (void)ts_safetensors_name(st, n);
    (void)ts_safetensors_metadata(st, "format");
    (void)ts_safetensors_metadata(st, "step");
    ts_safetensors_close(st);
    return 0;
}
